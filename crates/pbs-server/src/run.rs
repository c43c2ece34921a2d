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
    tokio::pin!(shutdown);
    let requested = tokio::select! {
        ended = &mut unix_loop => {
            resume_if_panicked(ended);
            false
        }
        ended = &mut tcp_loop => {
            resume_if_panicked(ended);
            false
        }
        _ = &mut shutdown => false,
        _ = server.stop.notified() => true,
    };
    if requested {
        // Still serving meanwhile: commands see the jobs end, the moms report them.
        tokio::select! {
            _ = stop_as_asked(&server) => {}
            _ = &mut shutdown => {}
        }
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

/// What qterm asked for before the server stops (`shutdown`): waits for the running jobs an
/// immediate or delayed stop ends or lets end, then tells the scheduler (`-s`) and the moms
/// (`-m`) to stop and waits, a few seconds at most, for their links to close.
async fn stop_as_asked(server: &Arc<Server>) {
    let Some(stopping) = server.lock().state.stopping else { return };
    // An immediate stop waits for the moms to report the jobs it requeued or killed (each
    // within its kill_delay), a delayed one for as long as its jobs run.
    let deadline = match stopping.manner {
        crate::state::StopManner::Immediate => Some(tokio::time::Instant::now() + Duration::from_secs(120)),
        _ => None,
    };
    while !crate::shutdown::may_stop(&server.lock().state) {
        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            tracing::warn!("Jobs still running after 120 s: stopping without their ends");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (moms_up, applied) = {
        let mut shared = server.lock();
        if stopping.scheduler
            && let Some(sched) = shared.links.sched.as_mut()
        {
            let _ = sched.send(pbs_proto::sched::ToSched::Quit);
        }
        let moms_up: Vec<String> = if stopping.moms {
            shared.state.node_rt.iter().filter(|(_, rt)| rt.up).map(|(node, _)| node.clone()).collect()
        } else {
            Vec::new()
        };
        let frames = moms_up.iter().map(|node| (node.clone(), pbs_proto::mom::ToMom::Shutdown)).collect();
        (moms_up, server.apply_effects(&mut shared, Effects { to_moms: frames, ..Effects::default() }))
    };
    let _ = applied.done().await;
    // The links close as their peers exit; whoever has not gone in 5 s is left to go.
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    let gone = || {
        let shared = server.lock();
        let sched_gone = !stopping.scheduler || shared.links.sched.is_none();
        sched_gone && moms_up.iter().all(|node| shared.state.node_rt.get(node).is_none_or(|rt| !rt.up))
    };
    while tokio::time::Instant::now() < until && !gone() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
