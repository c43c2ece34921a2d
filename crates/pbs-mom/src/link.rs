//! The server's link to this mom: the TCP listener, the authenticated handshake (each side
//! proves the cluster key for a link from the server to this node's mom,
//! `pbs_proto::link`; every frame after it is sealed), and the frame loop that carries
//! `ToMom` requests in and `FromMom` reports out.
//!
//! One link at a time: a newly authenticated link replaces the current one, which is
//! closed. Anything malformed (a bad handshake, an oversized or torn frame, a frame that is
//! not a `ToMom`) closes the connection; nothing a peer sends can panic the mom.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use pbs_core::Pbse;
use pbs_proto::link::{LinkCodec, LinkConn};
use pbs_proto::mom::{FromMom, ToMom};
use pbs_proto::{Hello, HelloReply, MAX_REPLY_FRAME_LEN, PROTOCOL_VERSION, Role};
use serde::Serialize;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::Framed;

use crate::Mom;

/// Limit on each step of the handshake.
const HANDSHAKE_TIMEOUT: Duration = pbs_proto::link::HANDSHAKE_TIMEOUT;
/// Connections served at once. Only the server stays past the handshake, and only one
/// link at a time, so this is about peers that connect and say nothing: they cannot
/// take the mom's descriptors, and one address cannot take every slot.
const MAX_CONNECTIONS: usize = 64;
/// Connections one address may hold.
const MAX_PER_ADDR: usize = 16;

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
    tokio::pin!(shutdown);
    let limiter = pbs_proto::admission::Limiter::new(MAX_CONNECTIONS, MAX_PER_ADDR);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => match limiter.admit(Some(&peer.ip())) {
                    Ok(slot) => {
                        let _ = stream.set_nodelay(true);
                        let mom = mom.clone();
                        tokio::spawn(async move {
                            serve(mom, stream, peer).await;
                            drop(slot);
                        });
                    }
                    Err(why) => tracing::debug!("refused a connection from {peer}: {why}"),
                },
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
    let key_file = &mom.config().key_file;
    let key = match std::fs::read(key_file) {
        Ok(key) if !key.is_empty() => key,
        Ok(_) | Err(_) => {
            tracing::error!("cannot read the cluster key {}", key_file.display());
            let refused = HelloReply::Refused { code: Pbse::SYSTEM.0, message: "pbs_mom has no cluster key".into() };
            let _ = send(conn, &refused).await;
            return false;
        }
    };
    let me = Role::Mom { node: mom.config().node_name.clone() };
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
async fn serve(mom: Arc<Mom>, stream: TcpStream, peer: SocketAddr) {
    // Before its handshake the peer is nobody: a few KiB per frame at most.
    let mut conn = Framed::new(stream, LinkCodec::unauthenticated());
    if !handshake(&mom, &mut conn, peer).await {
        return;
    }
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
                if let Some(reply) = mom.handle(request)
                    && !send(&mut conn, &reply).await
                {
                    break "write failed".to_string();
                }
            }
        }
    };
    mom.drop_link(id);
    tracing::info!("server link from {peer} closed: {why}");
}
