//! Connections: the Unix socket for local commands (identity from SO_PEERCRED) and TCP for
//! the scheduler (an authenticated link, `pbs_proto::link`), the handshake and framing;
//! requests go to `dispatch`.
//!
//! A malformed frame gets an error reply and the connection goes on; an oversized or torn
//! frame closes the connection. Nothing a peer sends can panic the server.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use pbs_core::Pbse;
use pbs_proto::admission::Entry;
use pbs_proto::link::{LinkCodec, LinkConn};
use pbs_proto::{Hello, HelloReply, MAX_REQUEST_FRAME_LEN, PROTOCOL_VERSION, Reply, Request, RequestFrame, Role};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Framed;

use crate::dispatch::Response;
use crate::identity::Identity;
use crate::server::Server;

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
    /// TCP: the address for logs, and the connection's place among those in their
    /// handshake.
    Tcp {
        /// The peer's address.
        addr: String,
        /// Its place at the gate until it proves its key.
        entry: Entry<IpAddr>,
    },
}

type Conn<S> = LinkConn<S>;

async fn send<S, T>(conn: &mut Conn<S>, message: &T) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: Serialize,
{
    feed(conn, message).await && SinkExt::<bytes::Bytes>::flush(conn).await.is_ok()
}

/// Sends a reply; one too large for a frame is answered with an error saying so, not by
/// closing the connection with no answer.
async fn send_reply<S>(conn: &mut Conn<S>, reply: &Reply) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Ok(bytes) = serde_json::to_vec(reply) else { return false };
    if bytes.len() <= MAX_REQUEST_FRAME_LEN {
        return conn.feed(bytes::Bytes::from(bytes)).await.is_ok()
            && SinkExt::<bytes::Bytes>::flush(conn).await.is_ok();
    }
    tracing::warn!(object_type = "Server", "A reply of {} bytes is too large to send", bytes.len());
    let message = format!("{}the answer ({} bytes) is larger than a reply may be", Pbse::SYSTEM, bytes.len());
    send(conn, &Reply::error(reply.id, Pbse::SYSTEM.0, message)).await
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
    let (mut conn, hello, who, peer_name, _slot) = match peer {
        Peer::Unix { uid, gid } => {
            let codec = match uid {
                // Root is the administrator: only other users' frames count against a budget.
                0 => LinkCodec::plain(MAX_REQUEST_FRAME_LEN),
                _ => LinkCodec::plain(MAX_REQUEST_FRAME_LEN)
                    .with_budget(pbs_proto::budget::FrameBudget { budget: server.frame_budget.clone(), holder: uid }),
            };
            let mut conn = Framed::new(stream, codec);
            let Some(hello) = read_hello(&mut conn, None).await else { return };
            let who = Identity::from_uid_cached(uid, gid, &server.config.host);
            (conn, hello, who, format!("uid {uid}"), None)
        }
        Peer::Tcp { addr, mut entry } => {
            // Before its handshake a TCP peer is nobody: it may send a few KiB, no more.
            let mut conn = Framed::new(stream, LinkCodec::unauthenticated());
            let handshake = async {
                let hello = read_hello(&mut conn, Some(&addr)).await?;
                let who = match hello.auth {
                    Some(_) => crate::remote::authenticate(&server, &mut conn, &hello, &addr).await,
                    None => authenticate_daemon(&server, &mut conn, &hello)
                        .await
                        .map(|()| Identity::daemon(&server.config.host)),
                };
                match who {
                    Ok(who) => Some((hello, who)),
                    Err((code, why)) => {
                        tracing::warn!(object_type = "Server", "Refused TCP peer {addr}: {why}");
                        let _ = send(&mut conn, &HelloReply::Refused { code: code.0, message: code.to_string() }).await;
                        None
                    }
                }
            };
            let (hello, who) = match entry.unless_evicted(handshake).await {
                Some(Some(welcomed)) => welcomed,
                Some(None) => return,
                None => {
                    tracing::debug!(object_type = "Server", "Closed TCP peer {addr}: evicted in its handshake");
                    return;
                }
            };
            let slot = match entry.authenticated() {
                Ok(slot) => slot,
                Err(why) => {
                    tracing::warn!(object_type = "Server", "Refused TCP peer {addr}: {why}");
                    let refused =
                        HelloReply::Refused { code: Pbse::NOCONNECTS.0, message: Pbse::NOCONNECTS.to_string() };
                    let _ = send(&mut conn, &refused).await;
                    return;
                }
            };
            (conn, hello, who, addr, Some(slot))
        }
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
        // A frame of more values than any request holds is not read into them at all.
        let countable = !pbs_proto::codec::has_more_values_than(&bytes, pbs_proto::codec::MAX_FRAME_VALUES);
        let parsed = if countable { serde_json::from_slice::<RequestFrame>(&bytes).ok() } else { None };
        let frame = match parsed {
            Some(frame) => frame,
            None => {
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

/// Reads the Hello that opens every connection and checks its protocol version; on
/// failure answers the refusal (and logs it for a TCP peer at `tcp_addr`).
async fn read_hello<S>(conn: &mut Conn<S>, tcp_addr: Option<&str>) -> Option<Hello>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Some(hello) = recv_json::<S, Hello>(conn).await else {
        if let Some(addr) = tcp_addr {
            tracing::warn!(object_type = "Server", "Refused TCP peer {addr}: no valid Hello");
        }
        let _ = send(conn, &HelloReply::Refused { code: Pbse::PROTOCOL.0, message: Pbse::PROTOCOL.to_string() }).await;
        return None;
    };
    if hello.version != PROTOCOL_VERSION {
        let message = format!("protocol version {} is not supported (server speaks {PROTOCOL_VERSION})", hello.version);
        let _ = send(conn, &HelloReply::Refused { code: Pbse::PROTOCOL.0, message }).await;
        return None;
    }
    Some(hello)
}

/// The TCP handshake: only the scheduler connects to the server over TCP (the server
/// connects to its moms, never the other way), and it must prove the scheduler's key
/// (derived from the master, `pbs_proto::keys`) for a link from a scheduler to this
/// server: a mom's key, which root on a compute node can read, does not do.
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
    let key = pbs_proto::keys::derive(key, &Role::Scheduler);
    pbs_proto::link::accept(conn, &key, &Role::Server, hello, MAX_REQUEST_FRAME_LEN)
        .await
        .map_err(|e| (Pbse::BADCRED, e.to_string()))
}

/// The reply to a frame that is not a valid request: `Unknown request` when it names a kind
/// we do not have, `Batch protocol error` for anything else; the id is echoed if readable.
fn malformed_reply(bytes: &[u8]) -> Reply {
    // Only the id and the kind are read, every other value skipped as it is met: a
    // malformed 16 MiB frame is never built into a tree of JSON values.
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Peek {
        id: Option<u64>,
        request: Option<Kind>,
    }
    let peek: Option<Peek> = serde_json::from_slice(bytes).ok();
    let id = peek.as_ref().and_then(|p| p.id).unwrap_or(0);
    let kind = peek.as_ref().and_then(|p| p.request.as_ref()).and_then(|r| r.kind.as_deref());
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
    "MoveJob",
    "OrderJob",
    "Shutdown",
    "MessageJob",
    "WaitJob",
];

async fn dispatch<S>(server: &Arc<Server>, who: &Identity, frame: RequestFrame, conn: &mut Conn<S>) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // A node created, deleted or moved to another mom host or port: its link follows
    // before the reply, so the next command sees the node's link state.
    let nodes_changed = matches!(frame.request, Request::Manager { object: pbs_proto::MgrObject::Node, .. });
    match crate::dispatch::dispatch(server, who, frame.id, frame.request).await {
        Response::Reply(reply) => {
            if nodes_changed {
                crate::momlink::sync(server);
            }
            send_reply(conn, &reply).await
        }
        Response::Parts(mut parts) => {
            while let Some(reply) = parts.next_part(server).await {
                if !send_reply(conn, &reply).await {
                    return false;
                }
                server.give_way().await;
            }
            true
        }
    }
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
