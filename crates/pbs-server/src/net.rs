//! Connections: the Unix socket for local commands (identity from SO_PEERCRED) and TCP for
//! the scheduler (an authenticated link, `pbs_proto::link`), the handshake, framing, and
//! request dispatch.
//!
//! A malformed frame gets an error reply and the connection goes on; an oversized or torn
//! frame closes the connection. Nothing a peer sends can panic the server.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use pbs_core::Pbse;
use pbs_proto::link::{LinkCodec, LinkConn};
use pbs_proto::{
    Hello, HelloReply, MAX_REQUEST_FRAME_LEN, PROTOCOL_VERSION, Reply, ReplyBody, Request, RequestFrame, Role,
};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Framed;

use crate::Server;
use crate::identity::Identity;

const HANDSHAKE_TIMEOUT: Duration = pbs_proto::link::HANDSHAKE_TIMEOUT;

/// How the peer reached us.
pub enum Peer {
    /// Local socket, with the kernel's credentials.
    Unix {
        /// Peer uid.
        uid: u32,
        /// Peer gid.
        gid: u32,
    },
    /// TCP, address for logs.
    Tcp(String),
}

type Conn<S> = LinkConn<S>;

async fn send<S, T>(conn: &mut Conn<S>, message: &T) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: Serialize,
{
    feed(conn, message).await && SinkExt::<bytes::Bytes>::flush(conn).await.is_ok()
}

/// Queues a message without flushing: it leaves with the next [`send`].
async fn feed<S, T>(conn: &mut Conn<S>, message: &T) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: Serialize,
{
    match serde_json::to_vec(message) {
        Ok(bytes) => conn.feed(bytes::Bytes::from(bytes)).await.is_ok(),
        Err(_) => false,
    }
}

/// Whether `buf` already holds one whole frame (4-byte big-endian length, then the body),
/// so reading it needs nothing more from the peer.
fn frame_buffered(buf: &[u8]) -> bool {
    match buf.first_chunk::<4>() {
        Some(len) => buf.len() - 4 >= u32::from_be_bytes(*len) as usize,
        None => false,
    }
}

async fn recv_json<S, T>(conn: &mut Conn<S>) -> Option<T>
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: serde::de::DeserializeOwned,
{
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, conn.next()).await {
        Ok(Some(Ok(bytes))) => serde_json::from_slice(&bytes).ok(),
        _ => None,
    }
}

/// Serves one connection until the peer closes it or breaks the protocol.
pub async fn serve<S>(server: Arc<Server>, stream: S, peer: Peer)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Before its handshake a TCP peer is nobody: it may send a few KiB, no more.
    let codec = match peer {
        Peer::Unix { .. } => LinkCodec::plain(MAX_REQUEST_FRAME_LEN),
        Peer::Tcp(_) => LinkCodec::unauthenticated(),
    };
    let mut conn = Framed::new(stream, codec);
    let Some(hello) = recv_json::<S, Hello>(&mut conn).await else {
        if let Peer::Tcp(addr) = &peer {
            tracing::warn!(object_type = "Server", "Refused TCP peer {addr}: no valid Hello");
        }
        let _ =
            send(&mut conn, &HelloReply::Refused { code: Pbse::PROTOCOL.0, message: Pbse::PROTOCOL.to_string() }).await;
        return;
    };
    if hello.version != PROTOCOL_VERSION {
        let message = format!("protocol version {} is not supported (server speaks {PROTOCOL_VERSION})", hello.version);
        let _ = send(&mut conn, &HelloReply::Refused { code: Pbse::PROTOCOL.0, message }).await;
        return;
    }
    let (who, peer_name) = match peer {
        Peer::Unix { uid, gid } => (Identity::from_uid_cached(uid, gid, &server.config.host), format!("uid {uid}")),
        Peer::Tcp(addr) => match authenticate_daemon(&server, &mut conn, &hello).await {
            Ok(()) => (Identity::daemon(&server.config.host), addr),
            Err((code, why)) => {
                tracing::warn!(object_type = "Server", "Refused TCP peer {addr}: {why}");
                let _ = send(&mut conn, &HelloReply::Refused { code: code.0, message: code.to_string() }).await;
                return;
            }
        },
    };
    if !matches!(hello.role, Role::Client) && !who.daemon && who.uid != 0 {
        let _ = send(&mut conn, &HelloReply::Refused { code: Pbse::PERM.0, message: Pbse::PERM.to_string() }).await;
        return;
    }
    let welcome = HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: server.config.server_name.clone() };
    // A command that sent its first request right behind the Hello gets the Welcome in the
    // same write as that request's reply (every reply is flushed): one wakeup of the
    // command instead of two. Anyone else gets the Welcome now, since it may be waiting
    // for it before sending anything.
    let pipelined = matches!(hello.role, Role::Client) && frame_buffered(conn.read_buffer());
    let sent = if pipelined { feed(&mut conn, &welcome).await } else { send(&mut conn, &welcome).await };
    if !sent {
        return;
    }
    if matches!(hello.role, Role::Scheduler) {
        crate::schedlink::serve(server, conn, &peer_name).await;
        return;
    }
    loop {
        let bytes = match conn.next().await {
            None => return,
            Some(Ok(bytes)) => bytes,
            Some(Err(e)) => {
                // An oversized, torn or forged frame leaves the stream out of step (or
                // untrusted): say why, then close.
                if who.daemon {
                    tracing::warn!(object_type = "Server", "Closed the link from {peer_name}: {e}");
                }
                let _ = send(&mut conn, &Reply::error(0, Pbse::PROTOCOL.0, format!("{} ({e})", Pbse::PROTOCOL))).await;
                return;
            }
        };
        let frame = match serde_json::from_slice::<RequestFrame>(&bytes) {
            Ok(frame) => frame,
            Err(_) => {
                let reply = malformed_reply(&bytes);
                if !send(&mut conn, &reply).await {
                    return;
                }
                continue;
            }
        };
        tracing::debug!(
            object_type = "Req",
            object_name = "",
            "Type {} request received from {}, sock=0",
            frame.request.type_number(),
            who.user_at_host()
        );
        if !dispatch(&server, &who, frame, &mut conn).await {
            return;
        }
    }
}

/// The TCP handshake: only the scheduler connects to the server over TCP (the server
/// connects to its moms, never the other way), and it must prove the cluster key for a
/// link from a scheduler to this server.
async fn authenticate_daemon<S>(server: &Server, conn: &mut Conn<S>, hello: &Hello) -> Result<(), (Pbse, String)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if !matches!(hello.role, Role::Scheduler) {
        return Err((Pbse::PERM, format!("the role {:?} is not accepted over TCP", hello.role)));
    }
    let Some(key) = &server.config.cluster_key else {
        return Err((Pbse::BADCRED, "the server has no cluster key".into()));
    };
    pbs_proto::link::accept(conn, key, &Role::Server, hello, MAX_REQUEST_FRAME_LEN)
        .await
        .map_err(|e| (Pbse::BADCRED, e.to_string()))
}

/// The reply to a frame that is not a valid request: `Unknown request` when it names a kind
/// we do not have, `Batch protocol error` for anything else; the id is echoed if readable.
fn malformed_reply(bytes: &[u8]) -> Reply {
    let value: Option<serde_json::Value> = serde_json::from_slice(bytes).ok();
    let id = value.as_ref().and_then(|v| v.get("id")).and_then(|v| v.as_u64()).unwrap_or(0);
    let kind = value.as_ref().and_then(|v| v.get("request")).and_then(|r| r.get("kind")).and_then(|k| k.as_str());
    let known = kind.is_some_and(|k| {
        serde_json::from_value::<Request>(serde_json::json!({ "kind": k })).is_ok() || KNOWN_KINDS.contains(&k)
    });
    match kind {
        Some(_) if !known => Reply::error(id, Pbse::UNKREQ.0, Pbse::UNKREQ.to_string()),
        _ => Reply::error(id, Pbse::PROTOCOL.0, Pbse::PROTOCOL.to_string()),
    }
}

const KNOWN_KINDS: &[&str] = &[
    "QueueJob",
    "StatusJob",
    "SelectJobs",
    "ModifyJob",
    "DeleteJob",
    "HoldJob",
    "ReleaseJob",
    "StatusServer",
    "StatusQueue",
    "StatusNode",
    "StatusSched",
    "StatusResource",
    "StatusHook",
    "Manager",
    "RunJob",
    "SignalJob",
    "RerunJob",
];

/// Jobs per status reply frame: keeps the state lock short and frames small.
const STATUS_CHUNK: usize = 2000;

async fn dispatch<S>(server: &Arc<Server>, who: &Identity, frame: RequestFrame, conn: &mut Conn<S>) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let id = frame.id;
    if let Err(e) = crate::size_limits::check_request(&frame.request) {
        return send(conn, &Reply::error(id, e.code.0, e.message)).await;
    }
    if let Request::StatusJob { ids, queues, attrs, history, subjobs } = &frame.request {
        return stream_job_status(server, who, id, ids, queues, attrs, (*history, *subjobs), conn).await;
    }
    if let Request::RunJob { id: job_id, exec_vnode } = frame.request {
        let reply = match run_job(server, who, &job_id, exec_vnode).await {
            Ok(()) => Reply::ok(id, ReplyBody::None),
            Err(e) => Reply::error(id, e.code.0, e.message),
        };
        return send(conn, &reply).await;
    }
    let nodes_changed = matches!(frame.request, Request::Manager { object: pbs_proto::MgrObject::Node, .. });
    let (reply, ack) = server.handle(who, id, frame.request);
    if nodes_changed {
        crate::momlink::sync(server);
    }
    let reply = match ack {
        None => reply,
        Some(ack) => match ack.await {
            Ok(Ok(())) => reply,
            Ok(Err(e)) => Reply::error(id, Pbse::SYSTEM.0, format!("{}{e}", Pbse::SYSTEM)),
            Err(_) => Reply::error(id, Pbse::SYSTEM.0, format!("{}store unavailable", Pbse::SYSTEM)),
        },
    };
    send(conn, &reply).await
}

/// How long `qrun` waits for the scheduler to place a job.
const QRUN_TIMEOUT: Duration = Duration::from_secs(60);

/// RunJob (qrun): operators and managers only. With `-H` the server runs the job there;
/// without, the scheduler places it. Answered once the run is committed.
async fn run_job(
    server: &Arc<Server>,
    who: &Identity,
    job_id: &str,
    exec_vnode: Option<String>,
) -> Result<(), crate::error::ReqError> {
    use crate::error::ReqError;
    enum Next {
        Committing(tokio::sync::oneshot::Receiver<Result<(), String>>, Vec<crate::exec::Launch>),
        Waiting(tokio::sync::oneshot::Receiver<Result<(), ReqError>>),
    }
    let next = {
        let mut state = crate::faults::lock(&server.state);
        let ctx = server.ctx(&state, who);
        if ctx.privilege < pbs_core::Privilege::Operator {
            return Err(ReqError::new(Pbse::PERM));
        }
        // A subjob (`12[3]`) runs from its array's queue; anything else must be queued.
        let key = crate::arrays::run_key(&state, job_id)?;
        let queued = match (key.index, state.job(key)) {
            (_, Some(job)) => job.state == pbs_core::JobState::Queued && !job.array,
            (Some(index), None) => state.jobs.get(&key.seq).is_some_and(|parent| {
                matches!(parent.state, pbs_core::JobState::Queued | pbs_core::JobState::Begun)
                    && crate::arrays::indices(parent, "array_indices_remaining").contains(index)
            }),
            (None, None) => false,
        };
        if !queued {
            return Err(ReqError::new(Pbse::BADSTATE));
        }
        let full_id = match key.index {
            Some(index) => pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string(),
            None => state.job(key).map(|j| j.id(&state.server_name)).unwrap_or_default(),
        };
        match exec_vnode {
            Some(exec_vnode) => {
                let (mut ops, launches) = crate::exec::run_job(&mut state, key, &exec_vnode, ctx.now)?;
                ops.extend(crate::arrays::settle(&mut state, ctx.now));
                crate::exec::flush(&mut state);
                Next::Committing(server.store.commit(ops), launches)
            }
            None => {
                if state.links.sched.is_none() {
                    return Err(ReqError::new(Pbse::NOSCHEDULER));
                }
                state.links.next_qrun += 1;
                let number = state.links.next_qrun;
                let (tx, rx) = tokio::sync::oneshot::channel();
                state.links.qruns.insert(number, tx);
                if let Some(sched) = state.links.sched.as_mut() {
                    let _ = sched.send(pbs_proto::sched::ToSched::RunNow { qrun: number, job_id: full_id });
                }
                Next::Waiting(rx)
            }
        }
    };
    let waiter = match next {
        Next::Committing(ack, launches) => {
            return match ack.await {
                Ok(Ok(())) => {
                    crate::schedlink::launch_after_commit(server.clone(), None, launches, None);
                    Ok(())
                }
                _ => Err(ReqError::new(Pbse::SYSTEM)),
            };
        }
        Next::Waiting(rx) => rx,
    };
    match tokio::time::timeout(QRUN_TIMEOUT, waiter).await {
        Ok(Ok(result)) => result,
        _ => Err(ReqError::new(Pbse::NOSCHEDULER)),
    }
}

#[allow(clippy::too_many_arguments)] // the fields of one request, passed through
async fn stream_job_status<S>(
    server: &Arc<Server>,
    who: &Identity,
    id: u64,
    ids: &[String],
    queues: &[String],
    attrs: &[String],
    (history, subjobs): (bool, bool),
    conn: &mut Conn<S>,
) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let planned = {
        let Ok(state) = server.state.lock() else { return false };
        let ctx = server.ctx(&state, who);
        crate::acl::check_request(&state, who, ctx.privilege).map(|()| {
            let (plan, errors) = crate::jobs::status_plan(&state, &ctx, ids, queues, history, subjobs);
            (plan, errors, ctx.privilege)
        })
    };
    let (plan, errors, privilege) = match planned {
        Ok(planned) => planned,
        Err(e) => return send(conn, &Reply::error(id, e.code.0, e.message)).await,
    };
    let code = errors.last().map(|e| e.code).unwrap_or(0);
    let message = errors.last().map(|e| e.message.clone()).unwrap_or_default();
    let filter = crate::jobs::StatusFilter::new(attrs, privilege);
    let mut arrays = None;
    let mut errors = Some(errors);
    if plan.is_empty() {
        let body = ReplyBody::Status { objects: Vec::new(), errors: errors.take().unwrap_or_default() };
        return send(conn, &Reply { id, code, message, body, more: false }).await;
    }
    // Subjobs are made from the plan's index runs as each part is taken.
    let mut keys = plan.into_keys().peekable();
    while keys.peek().is_some() {
        let chunk: Vec<crate::state::JobKey> = keys.by_ref().take(STATUS_CHUNK).collect();
        let objects = {
            let Ok(state) = server.state.lock() else { return false };
            chunk.iter().filter_map(|key| crate::jobs::key_status(&state, *key, &filter, &mut arrays)).collect()
        };
        let last = keys.peek().is_none();
        let body =
            ReplyBody::Status { objects, errors: if last { errors.take().unwrap_or_default() } else { Vec::new() } };
        let reply = Reply { id, code, message: message.clone(), body, more: !last };
        if !send(conn, &reply).await {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_frames_are_recognised() {
        assert!(!frame_buffered(b""));
        assert!(!frame_buffered(b"\0\0\0"));
        assert!(frame_buffered(b"\0\0\0\0"));
        assert!(!frame_buffered(b"\0\0\0\x02{"));
        assert!(frame_buffered(b"\0\0\0\x02{}"));
        assert!(frame_buffered(b"\0\0\0\x02{}\0\0"));
        assert!(!frame_buffered(b"\xff\xff\xff\xff{}"));
    }
}
