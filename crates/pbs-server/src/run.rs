//! Serving: binding the sockets, the accept loops, the one timer that hands what falls due
//! to `due::due` (execution times, history purges, requeuing the jobs of failed nodes),
//! and the orderly stop.

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};

use crate::effects::Effects;
use crate::server::{Server, ServerConfig, ServerError, io_err};

/// The server's listening sockets.
pub struct Listeners {
    /// Local commands.
    pub unix: UnixListener,
    /// Daemons (and nothing else without the cluster key).
    pub tcp: Option<TcpListener>,
}

/// Binds the Unix socket (world-connectable: the kernel tells us who connects) and the TCP
/// port. A stale socket file from a previous run is replaced.
pub async fn bind(config: &ServerConfig, tcp_addr: Option<SocketAddr>) -> Result<Listeners, ServerError> {
    let _ = std::fs::remove_file(&config.socket_path);
    let unix =
        UnixListener::bind(&config.socket_path).map_err(io_err(format!("binding {}", config.socket_path.display())))?;
    std::fs::set_permissions(&config.socket_path, std::fs::Permissions::from_mode(0o666))
        .map_err(io_err("setting socket permissions"))?;
    let tcp = match tcp_addr {
        Some(addr) => Some(TcpListener::bind(addr).await.map_err(io_err(format!("binding {addr}")))?),
        None => None,
    };
    Ok(Listeners { unix, tcp })
}

/// A panicked accept loop takes the server down as a panic, as it did when the loops ran
/// on the thread that called [`run`], so a supervisor sees a failure, not a clean stop.
fn resume_if_panicked(ended: Result<(), tokio::task::JoinError>) {
    if let Err(e) = ended
        && e.is_panic()
    {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Serves until `shutdown` completes, then stops accepting and gives open connections a
/// moment to finish their current request.
pub async fn run(server: Arc<Server>, listeners: Listeners, shutdown: impl Future<Output = ()>) {
    crate::admission::raise_fd_limit();
    let admission = Arc::new(crate::admission::Admission::new());
    crate::due::start(&mut server.lock(), chrono::Utc::now().timestamp());
    let timer = tokio::spawn(timer(server.clone()));
    crate::momlink::sync(&server);
    // The accept loops run as tasks on the worker threads, not on the thread that called
    // `run` (`block_on`): a connection's task then starts on the worker that accepted it,
    // instead of each connection waking that thread and then a worker. They accept
    // whatever comes and let `admission` serve or refuse it, so a full pool never leaves
    // root waiting in the backlog behind another user's connections.
    let unix_loop = {
        let server = server.clone();
        let admission = admission.clone();
        tokio::spawn(async move {
            loop {
                match listeners.unix.accept().await {
                    Ok((stream, _)) => admission.accept_unix(&server, stream),
                    Err(e) => {
                        tracing::warn!(error = %e, "Accept failed on the local socket");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        })
    };
    let tcp_loop = {
        let server = server.clone();
        let admission = admission.clone();
        let tcp = listeners.tcp;
        tokio::spawn(async move {
            let Some(tcp) = tcp else {
                std::future::pending::<()>().await;
                return;
            };
            loop {
                match tcp.accept().await {
                    Ok((stream, addr)) => admission.accept_tcp(&server, stream, addr),
                    Err(e) => {
                        tracing::warn!(error = %e, "Accept failed on the TCP port");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        })
    };
    let (mut unix_loop, mut tcp_loop) = (unix_loop, tcp_loop);
    tokio::select! {
        ended = &mut unix_loop => resume_if_panicked(ended),
        ended = &mut tcp_loop => resume_if_panicked(ended),
        _ = shutdown => {}
    }
    // Stop accepting: once a loop's task is gone its listener is closed.
    unix_loop.abort();
    tcp_loop.abort();
    let _ = unix_loop.await;
    let _ = tcp_loop.await;
    timer.abort();
    crate::momlink::stop_all(&server);
    // Let connections that are mid-request get their reply out.
    admission.drain(Duration::from_secs(2)).await;
    let applied = {
        let mut state = server.lock();
        let exact = state.exact_seq_op();
        server.apply_effects(&mut state, Effects::ops(vec![exact]))
    };
    let _ = applied.done().await;
    tracing::info!("Server shut down");
}

/// The server's one timer: sleeps until the state's earliest timed entry (at most a
/// second, so an entry set meanwhile waits no longer than that), then hands every entry
/// that has fallen due to `due::due` and carries out its effects like a request's.
async fn timer(server: Arc<Server>) {
    loop {
        let next = server.lock().timers.next();
        let now_ms = chrono::Utc::now().timestamp_millis();
        let wait_ms = next.map_or(1000, |t| t.saturating_mul(1000).saturating_sub(now_ms).clamp(0, 1000));
        tokio::time::sleep(Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0))).await;
        let mut state = server.lock();
        let started = std::time::Instant::now();
        let effects = crate::due::due(&mut state, chrono::Utc::now().timestamp());
        if !effects.is_empty() {
            let writes = effects.ops.len();
            let hooks_only = writes == 0 && !effects.has_mom_work();
            // Nobody waits for these: the moms hear once the changes are on disk.
            let _ = server.apply_effects(&mut state, effects);
            drop(state);
            if hooks_only {
                continue;
            }
            tracing::info!(
                object_type = "Server",
                "Timer event: {writes} writes, {} us under the lock",
                started.elapsed().as_micros()
            );
        }
    }
}
