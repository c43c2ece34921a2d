//! The server's links to its moms: one task per node connects to the node's `Mom` host and
//! `Port`, runs the authenticated handshake for a link from the server to that node's mom
//! (`pbs_proto::link`), and then carries [`ToMom`] frames out and [`FromMom`]
//! reports in, reconnecting with backoff while the mom is away.
//!
//! A link that closes marks its node `down` at once; a mom that stops answering pings is
//! dropped after [`SILENCE_LIMIT`]. Frames for a node whose link is down wait in its channel
//! and go out when the link is back, after the mom's first [`FromMom::NodeStatus`] has been
//! reconciled with what the server believes runs there.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pbs_proto::link::{LinkCodec, LinkConn};
use pbs_proto::mom::{FromMom, ToMom};
use pbs_proto::{MAX_REPLY_FRAME_LEN, Role};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

use crate::effects::Effects;
use crate::server::{MomLinkTask, Server};
use crate::state::links::Asked;

/// How often an idle link is probed.
const PING_INTERVAL: Duration = Duration::from_secs(5);
/// A mom silent for this long is taken for dead.
const SILENCE_LIMIT: Duration = Duration::from_secs(15);
/// Longest wait between connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Limit on connecting and on the handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

type Conn = LinkConn<TcpStream>;

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Starts link tasks for new nodes, restarts those whose `Mom`/`Port` changed, and stops
/// those of deleted nodes.
pub fn sync(server: &Arc<Server>) {
    let wanted: Vec<(String, String, u16)> = server
        .lock()
        .nodes
        .iter()
        .map(|n| {
            let get = |name: &str| n.attrs.get_named(pbs_core::ObjectKind::Node, name, None);
            let host = get("Mom").unwrap_or(&n.name).to_string();
            let port = get("Port").and_then(|p| p.parse().ok()).unwrap_or(pbs_core::conf::DEFAULT_MOM_PORT);
            (n.name.clone(), host, port)
        })
        .collect();
    let Ok(mut tasks) = server.mom_tasks.lock() else { return };
    let stale: Vec<String> = tasks
        .iter()
        .filter(|(name, t)| !wanted.iter().any(|(n, h, p)| n == *name && *h == t.host && *p == t.port))
        .map(|(name, _)| name.clone())
        .collect();
    for name in stale {
        if let Some(old) = tasks.remove(&name) {
            old.task.abort();
        }
        let mut state = server.lock();
        state.links.moms.remove(&name);
        crate::mom_report::link_replaced(&mut state, &name, now());
        let _ = server.apply_effects(&mut state, Effects::default());
    }
    for (name, host, port) in wanted {
        if tasks.contains_key(&name) {
            continue;
        }
        let (tx, rx) = mpsc::channel(crate::state::links::MOM_QUEUE);
        {
            let mut state = server.lock();
            state.links.moms.insert(name.clone(), tx);
            state.node_rt.entry(name.clone()).or_default();
        }
        let task = tokio::spawn(link_loop(server.clone(), name.clone(), host.clone(), port, rx));
        tasks.insert(name, MomLinkTask { host, port, task });
    }
}

/// Stops every link (server shutdown).
pub fn stop_all(server: &Server) {
    if let Ok(mut tasks) = server.mom_tasks.lock() {
        for (_, t) in tasks.drain() {
            t.task.abort();
        }
    }
}

async fn link_loop(server: Arc<Server>, node: String, host: String, port: u16, mut rx: mpsc::Receiver<ToMom>) {
    let mut backoff = Duration::from_millis(50);
    // A refused handshake is worth a warning, once per distinct reason: the link retries
    // every few seconds.
    let mut last_refusal = String::new();
    loop {
        match connect(&server, &node, &host, port).await {
            Ok(conn) => {
                last_refusal.clear();
                backoff = Duration::from_millis(50);
                serve(&server, &node, conn, &mut rx).await;
                let mut state = server.lock();
                crate::mom_report::link_down(&mut state, &node, now());
                let _ = server.apply_effects(&mut state, Effects::default());
            }
            Err(ConnectError::Unreachable(why)) => {
                tracing::debug!(object_type = "Node", object_name = node.as_str(), "cannot reach mom: {why}")
            }
            Err(ConnectError::Refused(why)) => {
                if why != last_refusal {
                    tracing::warn!(object_type = "Node", object_name = node.as_str(), "Refused the mom link: {why}");
                    last_refusal = why;
                }
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Why a link could not be made.
enum ConnectError {
    /// Nobody answered, or the connection broke: the mom is down.
    Unreachable(String),
    /// Whoever answered did not prove this node's key, or refused ours.
    Refused(String),
}

async fn connect(server: &Server, node: &str, host: &str, port: u16) -> Result<Conn, ConnectError> {
    use pbs_proto::link::LinkError;
    let master = server.config.cluster_key.as_deref().ok_or_else(|| ConnectError::Refused("no cluster key".into()))?;
    let mom = Role::Mom { node: node.to_string() };
    // This node's own key: a mom holding another node's key cannot answer for this one.
    let key = pbs_proto::keys::derive(master, &mom);
    let attempt = async {
        let stream = TcpStream::connect((host, port)).await.map_err(|e| ConnectError::Unreachable(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let mut conn = Framed::new(stream, LinkCodec::unauthenticated());
        // The mom's proof must be for this node: a mom of another node, or anyone who
        // merely listens on this port, fails here.
        match pbs_proto::link::connect(&mut conn, &key, &Role::Server, &mom, MAX_REPLY_FRAME_LEN).await {
            Ok(_) => Ok(conn),
            Err(e @ (LinkError::Io(_) | LinkError::Frame(pbs_proto::FrameError::Io(_)))) => {
                Err(ConnectError::Unreachable(e.to_string()))
            }
            Err(e) => Err(ConnectError::Refused(format!("peer {host}:{port}: {e}"))),
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, attempt)
        .await
        .map_err(|_| ConnectError::Unreachable("timed out".to_string()))?
}

async fn serve(server: &Arc<Server>, node: &str, mut conn: Conn, rx: &mut mpsc::Receiver<ToMom>) {
    let mut ping = tokio::time::interval(PING_INTERVAL);
    let mut last_heard = Instant::now();
    // Queued frames wait until the mom's first status has been reconciled.
    let mut reconciled = false;
    loop {
        tokio::select! {
            frame = conn.next() => {
                let bytes = match frame {
                    Some(Ok(bytes)) => bytes,
                    _ => return,
                };
                last_heard = Instant::now();
                match serde_json::from_slice::<FromMom>(&bytes) {
                    Ok(report) => {
                        reconciled |= matches!(report, FromMom::NodeStatus { .. });
                        handle(server, node, report);
                    }
                    Err(e) => {
                        tracing::warn!(object_type = "Node", object_name = node, "bad frame from mom: {e}");
                        return;
                    }
                }
            }
            frame = rx.recv(), if reconciled => {
                let Some(frame) = frame else { return };
                if !crate::job::faults::leaving(&mut server.lock(), node, &frame) {
                    continue;
                }
                if pbs_proto::link::send(&mut conn, &frame).await.is_err() {
                    return;
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > SILENCE_LIMIT {
                    tracing::warn!(object_type = "Node", object_name = node, "mom silent, dropping the link");
                    return;
                }
                if pbs_proto::link::send(&mut conn, &ToMom::Ping).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Applies one report from a node's mom (see `mom_report`); nobody waits for its effects.
fn handle(server: &Arc<Server>, node: &str, report: FromMom) {
    let mut shared = server.lock();
    // An answer a request waits for goes to it; the report is then applied as any other.
    // One that came after its request gave up is undone, since that request failed.
    let mut undo = Effects::default();
    if let FromMom::SignalResult { job_id, signal, code, ask } = &report
        && *ask != 0
        && !crate::state::links::answer(
            &mut shared.links,
            *ask,
            &Asked::Mom { node: node.to_string(), job_id: job_id.clone() },
            crate::state::links::mom_outcome(*code),
        )
        && *code == 0
    {
        undo = crate::mom_report::late_signal(node, job_id, signal);
    }
    if let FromMom::MessageResult { job_id, code, ask } = &report {
        let asked = Asked::Mom { node: node.to_string(), job_id: job_id.clone() };
        crate::state::links::answer(&mut shared.links, *ask, &asked, crate::state::links::mom_outcome(*code));
    }
    if let FromMom::JobEnded { job_id, .. } | FromMom::UnknownJob { job_id } = &report {
        crate::state::links::job_ended(&mut shared.links, node, job_id);
    }
    let mut effects = crate::mom_report::apply(&mut shared, node, report, chrono::Utc::now().timestamp());
    effects.merge(undo);
    let _ = server.apply_effects(&mut shared, effects);
}
