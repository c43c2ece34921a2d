//! Who gets a connection: separate pools for local (Unix socket) and remote (TCP) peers, a
//! cap per local uid so one user cannot take every slot, a reserve for root, and the
//! deadline a request has once its first byte arrived. A TCP peer passes the
//! `pbs_proto::admission::Gate`: places for connections in their handshake, where the
//! newest evicts an older one, and a pool only peers that proved their key reach, so
//! connections that will never authenticate cannot keep out the scheduler.
//!
//! A local peer over its limit, or an authenticated one when its pool is full, is answered
//! `No free connections` (PBSE_NOCONNECTS) and closed, instead of waiting in the listen
//! backlog where it would queue everyone behind it.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use pbs_core::Pbse;
use pbs_proto::HelloReply;
use pbs_proto::admission::{FrameDeadline, Gate, Limiter, Permit, Refusal};
use pbs_proto::codec::encode_frame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::Semaphore;

use crate::net;
use crate::server::Server;

/// Local connections served at once.
pub const MAX_LOCAL: usize = 4096;
/// Local connections one uid other than root may hold: far above what one user's
/// commands need at once, far below [`MAX_LOCAL`].
pub const MAX_PER_UID: usize = 256;
/// Extra local connections only root may use once the local pool is full, so an
/// administrator can always look and act.
pub const ROOT_RESERVE: usize = 64;
/// Authenticated TCP connections served at once: only daemons (the scheduler, tools with
/// its key) get past the handshake, so this is small.
pub const MAX_REMOTE: usize = 512;
/// Authenticated TCP connections one address may hold.
pub const MAX_PER_ADDR: usize = 64;
/// TCP connections in their handshake at once; past this each new one evicts an older one
/// (the oldest of the address holding the most). A scheduler's handshake is one round
/// trip, so it is through long before 64 later connections push it out.
pub const MAX_HANDSHAKING: usize = 64;
/// How long a request (or a handshake message) may take to arrive once its first byte
/// has: a peer that sends half a frame and stalls is dropped after this.
pub const FRAME_DEADLINE: Duration = Duration::from_secs(10);
/// Refusals being written at once; past this a refused peer is just closed.
const MAX_REFUSING: usize = 64;
/// How long a refused peer has to send its Hello before it is closed without an answer.
const REFUSAL_WAIT: Duration = Duration::from_secs(2);
/// Largest Hello read from a refused peer.
const REFUSAL_HELLO_MAX: usize = 4096;

/// The server's connection pools.
pub struct Admission {
    local: Arc<Limiter<u32>>,
    root: Arc<Limiter<u32>>,
    remote: Arc<Gate<IpAddr>>,
    refusing: Arc<Semaphore>,
}

/// A connection's place in a pool, given back when the connection ends.
pub enum Slot {
    /// From the local pool or root's reserve.
    Local(Permit<u32>),
}

impl Default for Admission {
    fn default() -> Self {
        Admission::new()
    }
}

impl Admission {
    /// Pools of the documented sizes.
    pub fn new() -> Admission {
        Admission {
            local: Limiter::new(MAX_LOCAL, MAX_PER_UID),
            root: Limiter::new(ROOT_RESERVE, ROOT_RESERVE),
            remote: Gate::new(MAX_HANDSHAKING, MAX_REMOTE, MAX_PER_ADDR),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
        }
    }

    /// A slot for a local peer with this uid. Root is not capped per uid and has a
    /// reserve of its own.
    pub fn admit_local(&self, uid: u32) -> Result<Slot, Refusal> {
        if uid == 0 {
            return self.local.admit(None).or_else(|_| self.root.admit(None)).map(Slot::Local);
        }
        self.local.admit(Some(&uid)).map(Slot::Local)
    }

    /// Waits (up to `timeout`) for every connection to end.
    pub async fn drain(&self, timeout: Duration) {
        let until = tokio::time::Instant::now() + timeout;
        self.local.drain(timeout).await;
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        self.root.drain(left).await;
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        self.remote.authenticated().drain(left).await;
    }

    /// Serves an accepted local connection, or refuses it.
    pub fn accept_unix(self: &Arc<Self>, server: &Arc<Server>, stream: UnixStream) {
        let Ok(cred) = stream.peer_cred() else { return };
        let (uid, gid) = (cred.uid(), cred.gid());
        match self.admit_local(uid) {
            Ok(slot) => {
                let server = server.clone();
                tokio::spawn(async move {
                    let stream = FrameDeadline::new(stream, FRAME_DEADLINE);
                    net::serve(server, stream, net::Peer::Unix { uid, gid }).await;
                    drop(slot);
                });
            }
            Err(why) => self.refuse(stream, format!("uid {uid}"), why),
        }
    }

    /// Serves an accepted TCP connection: it takes a place among those in their handshake
    /// (perhaps evicting an older one) and gets a slot once its peer has proved its key
    /// (`net::serve`).
    pub fn accept_tcp(self: &Arc<Self>, server: &Arc<Server>, stream: TcpStream, addr: std::net::SocketAddr) {
        let entry = self.remote.enter(addr.ip());
        let _ = stream.set_nodelay(true);
        let server = server.clone();
        tokio::spawn(async move {
            let stream = FrameDeadline::new(stream, FRAME_DEADLINE);
            net::serve(server, stream, net::Peer::Tcp { addr: addr.to_string(), entry }).await;
        });
    }

    /// Answers the peer's Hello with `No free connections` and closes, within a bounded
    /// number of refusals at once (past that the peer is closed without a word).
    fn refuse<S>(&self, mut stream: S, peer: String, why: Refusal)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        tracing::debug!(object_type = "Server", "refused a connection from {peer}: {why}");
        let Ok(permit) = self.refusing.clone().try_acquire_owned() else { return };
        tokio::spawn(async move {
            // The client writes its Hello before reading: answer after it, or the client
            // may see its write fail instead of the reason.
            let _ = tokio::time::timeout(REFUSAL_WAIT, read_one_frame(&mut stream)).await;
            let refused = HelloReply::Refused { code: Pbse::NOCONNECTS.0, message: Pbse::NOCONNECTS.to_string() };
            if let Ok(bytes) = encode_frame(&refused) {
                let _ = tokio::time::timeout(REFUSAL_WAIT, stream.write_all(&bytes)).await;
            }
            drop(permit);
        });
    }
}

/// Reads and discards one small frame.
async fn read_one_frame<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<()> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > REFUSAL_HELLO_MAX {
        return Ok(());
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await.map(|_| ())
}

/// Raises the soft limit on open files to the hard limit, since every connection is a
/// descriptor: a server that ran out would stop accepting anyone, root included.
pub fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_err() {
        tracing::warn!(object_type = "Server", "cannot raise the open files limit from {soft} to {hard}");
    }
    let needed = (MAX_LOCAL + ROOT_RESERVE + MAX_REMOTE + MAX_HANDSHAKING) as u64;
    let have = getrlimit(Resource::RLIMIT_NOFILE).map(|(soft, _)| soft).unwrap_or(soft);
    if have < needed + 1024 {
        tracing::warn!(
            object_type = "Server",
            "the open files limit ({have}) is below the {needed} connections served at once plus room for nodes \
             and files: raise it (LimitNOFILE)"
        );
    }
}
