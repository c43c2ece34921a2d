//! The server's link to this mom: the TCP listener, the authenticated handshake (each side
//! proves the cluster key for a link from the server to this node's mom,
//! `pbs_proto::link`; every frame after it is sealed), and the frame loop that carries
//! `ToMom` requests in and `FromMom` reports out.
//!
//! One link at a time: a newly authenticated link replaces the current one, which is
//! closed. Connections in their handshake take places at a `pbs_proto::admission::Gate`,
//! where a new one evicts an older one when all are taken, so peers that never prove the
//! key cannot keep the server out. Anything malformed (a bad handshake, an oversized or
//! torn frame, a frame that is not a `ToMom`) closes the connection; nothing a peer sends
//! can panic the mom.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use pbs_core::Pbse;
use pbs_proto::admission::{Entry, Gate};
use pbs_proto::link::{LinkCodec, LinkConn};
use pbs_proto::mom::{FromMom, ToMom};
use pbs_proto::{Hello, HelloReply, MAX_REPLY_FRAME_LEN, PROTOCOL_VERSION, Role};
use serde::Serialize;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::Framed;

use crate::mom::Mom;

/// Limit on each step of the handshake.
const HANDSHAKE_TIMEOUT: Duration = pbs_proto::link::HANDSHAKE_TIMEOUT;
/// Connections in their handshake at once: peers that connect and say nothing cannot take
/// the mom's descriptors. Past this each new connection evicts an older one (the oldest of
/// the address holding the most), so the server's always gets through.
const MAX_HANDSHAKING: usize = 64;
/// Authenticated connections at once: only the server gets there, one link at a time, plus
/// a newer link while it replaces the current one.
const MAX_AUTHENTICATED: usize = 8;

type Conn = LinkConn<TcpStream>;

/// Runs the mom: shepherd notes, usage samples and server links, until `shutdown`.
/// Jobs keep running after it returns: their shepherds do not depend on the mom.
pub async fn run(
    mom: Arc<Mom>,
    listener: TcpListener,
    notes: tokio::net::UnixDatagram,
    shutdown: impl Future<Output = ()>,
) {
    let notes_task = tokio::spawn(mom.clone().serve_notes(notes));
    let sampler = tokio::spawn(mom.clone().sample_loop());
    let signaller = tokio::spawn(mom.session_signals.clone().run());
    tokio::pin!(shutdown);
    let gate = Gate::new(MAX_HANDSHAKING, MAX_AUTHENTICATED, MAX_AUTHENTICATED);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            () = mom.stop.notified() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let entry = gate.enter(peer.ip());
                    let _ = stream.set_nodelay(true);
                    let mom = mom.clone();
                    tokio::spawn(serve(mom, stream, peer, entry));
                }
                Err(e) => {
                    // Out of descriptors, usually: let some close before trying again.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    notes_task.abort();
    sampler.abort();
    signaller.abort();
    mom.session_signals.flush();
}

async fn send<T: Serialize>(conn: &mut Conn, message: &T) -> bool {
    match serde_json::to_vec(message) {
        Ok(bytes) => conn.send(bytes::Bytes::from(bytes)).await.is_ok(),
        Err(_) => false,
    }
}

async fn feed(conn: &mut Conn, message: &FromMom) -> bool {
    match serde_json::to_vec(message) {
        Ok(bytes) => conn.feed(bytes::Bytes::from(bytes)).await.is_ok(),
        Err(_) => false,
    }
}

async fn recv<T: serde::de::DeserializeOwned>(conn: &mut Conn) -> Option<T> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, conn.next()).await {
        Ok(Some(Ok(bytes))) => serde_json::from_slice(&bytes).ok(),
        _ => None,
    }
}

/// The handshake, mom side, up to the Welcome: true once the peer has proved the key.
async fn handshake(mom: &Mom, conn: &mut Conn, peer: SocketAddr) -> bool {
    let Some(hello) = recv::<Hello>(conn).await else {
        tracing::debug!("closed connection from {peer}: no valid Hello");
        return false;
    };
    if hello.version != PROTOCOL_VERSION || hello.role != Role::Server {
        let message = format!(
            "pbs_mom accepts only the server, protocol {PROTOCOL_VERSION} (got {:?}, version {})",
            hello.role, hello.version
        );
        tracing::warn!("refused {peer}: {message}");
        let _ = send(conn, &HelloReply::Refused { code: Pbse::PROTOCOL.0, message }).await;
        return false;
    }
    let me = Role::Mom { node: mom.config().node_name.clone() };
    let key = match pbs_proto::keys::load(&mom.config().key, &me) {
        Ok(key) => key,
        Err(e) => {
            tracing::error!("{e}");
            let refused = HelloReply::Refused { code: Pbse::SYSTEM.0, message: "pbs_mom has no usable key".into() };
            let _ = send(conn, &refused).await;
            return false;
        }
    };
    // Once the server has proved itself, its frames may be as large as what it accepted: a
    // launch carries a script of up to 16 MiB and the job's attributes besides.
    match pbs_proto::link::accept(conn, &key, &me, &hello, MAX_REPLY_FRAME_LEN).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!("refused {peer}: {e} (this mom serves node {})", mom.config().node_name);
            let refused = HelloReply::Refused { code: Pbse::BADCRED.0, message: Pbse::BADCRED.to_string() };
            let _ = send(conn, &refused).await;
            false
        }
    }
}

/// Serves one connection: handshake, then the link until either side ends it.
async fn serve(mom: Arc<Mom>, stream: TcpStream, peer: SocketAddr, mut entry: Entry<IpAddr>) {
    // Before its handshake the peer is nobody: a few KiB per frame at most.
    let mut conn = Framed::new(stream, LinkCodec::unauthenticated());
    match entry.unless_evicted(handshake(&mom, &mut conn, peer)).await {
        Some(true) => {}
        Some(false) => return,
        None => {
            tracing::debug!("closed connection from {peer}: evicted in its handshake");
            return;
        }
    }
    let _slot = match entry.authenticated() {
        Ok(slot) => slot,
        Err(why) => {
            tracing::warn!("refused {peer}: {why}");
            let refused = HelloReply::Refused { code: Pbse::NOCONNECTS.0, message: Pbse::NOCONNECTS.to_string() };
            let _ = send(&mut conn, &refused).await;
            return;
        }
    };
    // Bounded: see `LINK_QUEUE` for what happens when the server does not keep up.
    let (tx, mut rx) = mpsc::channel(crate::mom::LINK_QUEUE);
    let (close_tx, mut close_rx) = oneshot::channel::<()>();
    // Installed before the Welcome goes out: the link a server was welcomed on last is
    // always the current one, however the handshakes of two connections interleave.
    let (id, overflow) = mom.install_link(tx, close_tx);
    let welcome = HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: mom.config().node_name.clone() };
    if !send(&mut conn, &welcome).await {
        mom.drop_link(id);
        return;
    }
    tracing::info!("server link from {peer} established");
    let why = loop {
        tokio::select! {
            _ = &mut close_rx => break "replaced by a newer link".to_string(),
            () = overflow.notified() => break "the server did not read its reports".to_string(),
            out = rx.recv() => {
                let Some(first) = out else { break "link dropped".to_string() };
                // Write everything queued, then flush once.
                let mut ok = feed(&mut conn, &first).await;
                while ok && let Ok(more) = rx.try_recv() {
                    ok = feed(&mut conn, &more).await;
                }
                if !ok || SinkExt::<bytes::Bytes>::flush(&mut conn).await.is_err() {
                    break "write failed".to_string();
                }
            }
            frame = conn.next() => {
                let bytes = match frame {
                    None => break "closed by the server".to_string(),
                    Some(Err(e)) => {
                        // Forged, replayed or oversized: the link is no longer trusted.
                        tracing::warn!("server link from {peer}: bad frame: {e}");
                        break format!("bad frame: {e}");
                    }
                    Some(Ok(bytes)) => bytes,
                };
                let request = match serde_json::from_slice::<ToMom>(&bytes) {
                    Ok(request) => request,
                    Err(e) => break format!("malformed request: {e}"),
                };
                // A SignalJobs has one reply per job: written together, flushed once.
                let mut ok = true;
                for reply in mom.handle(request) {
                    ok = ok && feed(&mut conn, &reply).await;
                }
                if !ok || SinkExt::<bytes::Bytes>::flush(&mut conn).await.is_err() {
                    break "write failed".to_string();
                }
            }
        }
    };
    mom.drop_link(id);
    tracing::info!("server link from {peer} closed: {why}");
}
