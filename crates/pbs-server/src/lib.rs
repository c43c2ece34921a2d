//! pbs_server as a library: the in-memory state, request handlers with their permission
//! checks, the SQLite store, and the socket front end. `bins/pbs_server` is a thin main.
//!
//! Entry points: [`Server::open`] rebuilds the state from disk, [`bind`] opens the sockets,
//! [`run`] serves until the shutdown future completes.

/// The table index of a job attribute named by a literal, found at compile time: a
/// misspelt name does not build.
macro_rules! job_idx {
    ($name:literal) => {
        const { pbs_core::attr::ObjectKind::Job.index_of($name) }
    };
}

pub mod acl;
pub mod admission;
pub mod altrun;
pub mod arrays;
pub mod assigned;
pub mod attrlist;
pub mod criteria;
pub mod entity_limits;
pub mod error;
pub mod exec;
pub mod faults;
pub mod holds;
pub mod identity;
pub mod jobs;
pub mod launch_owner;
pub use pbs_log as logging;
pub mod manager;
pub mod momlink;
pub mod net;
pub mod nodes;
pub mod privilege;
pub mod schedlink;
pub mod schedqueue;
pub mod size_limits;
pub mod state;
pub mod store;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pbs_core::Pbse;
use pbs_core::attr::ObjectKind;
use pbs_proto::{Reply, ReplyBody, Request};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::oneshot;

use crate::error::ReqError;
use crate::identity::Identity;
use crate::jobs::Ctx;
use crate::state::State;
use crate::store::Store;

/// How this server runs (from pbs.conf and flags, not from qmgr).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Suffix of job ids (`PBS_SERVER`, default the host name).
    pub server_name: String,
    /// This host's name: the `@host` of local users and `server_host`.
    pub host: String,
    /// `PBS_HOME`.
    pub home: PathBuf,
    /// The Unix socket local commands connect to.
    pub socket_path: PathBuf,
    /// The cluster key daemons must prove over TCP; TCP is refused to everyone without it.
    pub cluster_key: Option<Vec<u8>>,
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A directory, socket or key file could not be set up.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        source: io::Error,
    },
    /// The database could not be opened or read.
    #[error("{0}")]
    Store(#[from] store::StoreError),
    /// The first-start set-up could not be committed.
    #[error("cannot commit the initial set-up: {0}")]
    Init(String),
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> ServerError {
    let context = context.into();
    move |source| ServerError::Io { context, source }
}

/// A running server's shared parts.
pub struct Server {
    /// Configuration.
    pub config: ServerConfig,
    /// The state; locked only for short, I/O-free sections.
    pub state: Mutex<State>,
    /// The store writer.
    pub store: Store,
    /// One link task per node's mom.
    pub mom_tasks: Mutex<std::collections::HashMap<String, momlink::LinkTask>>,
}

impl Server {
    /// Creates `PBS_HOME`'s server directories, opens the database and rebuilds the state,
    /// creating OpenPBS's default set-up on first start.
    pub async fn open(config: ServerConfig) -> Result<Server, ServerError> {
        let home = &config.home;
        for (dir, mode) in [("", 0o755), ("server_priv", 0o750), ("server_logs", 0o755), ("spool", 0o1777)] {
            let path = home.join(dir);
            std::fs::create_dir_all(&path).map_err(io_err(format!("creating {}", path.display())))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(io_err(format!("setting permissions of {}", path.display())))?;
        }
        let db_path = home.join("server_priv").join("serverdb.sqlite");
        let (store, loaded) = Store::open(&db_path)?;
        let n_jobs = loaded.jobs.len();
        let (mut state, setup) =
            State::from_loaded(loaded, &config.server_name, &config.host, &home.display().to_string());
        let created = !setup.is_empty();
        let mut ops = setup;
        ops.extend(exec::recover(&mut state, chrono::Utc::now().timestamp()));
        if !ops.is_empty() {
            store.commit(ops).await.map_err(|e| ServerError::Init(e.to_string()))?.map_err(ServerError::Init)?;
        }
        if created {
            tracing::info!("Created the default set-up: queue workq, default scheduler");
        }
        tracing::info!(n_jobs, "Server state recovered");
        Ok(Server { config, state: Mutex::new(state), store, mom_tasks: Mutex::new(Default::default()) })
    }

    /// The database file (for reading job scripts).
    pub fn db_path(&self) -> PathBuf {
        self.config.home.join("server_priv").join("serverdb.sqlite")
    }

    /// The request context of `who` against the current state.
    pub fn ctx<'a>(&self, state: &State, who: &'a Identity) -> Ctx<'a> {
        let privilege = who.privilege(state.server_attr("managers", None), state.server_attr("operators", None));
        Ctx { who, privilege, now: chrono::Utc::now().timestamp() }
    }

    /// Handles every request but StatusJob (which is streamed): returns the reply and, for
    /// changes, the commit to wait for before sending it.
    pub fn handle(
        &self,
        who: &Identity,
        id: u64,
        request: Request,
    ) -> (Reply, Option<oneshot::Receiver<Result<(), String>>>) {
        let mut state = faults::lock(&self.state);
        #[cfg(debug_assertions)]
        faults::test_panic(&request);
        let ctx = self.ctx(&state, who);
        if let Err(e) = acl::check_request(&state, who, ctx.privilege) {
            return (acl::refusal(id, &request, e), None);
        }
        let state = &mut *state;
        let touched = touched_jobs(state, &request);
        let (reply, ack) = self.handle_locked(state, &ctx, who, id, request);
        for (key, job_id) in touched {
            state.changes.jobs.insert(key, job_id);
            state.changes.cycle = true;
        }
        if let ReplyBody::JobId(job_id) = &reply.body {
            if let Some(key) = exec::key_of(job_id) {
                state.changes.jobs.insert(key, job_id.clone());
                state.changes.cycle = true;
            }
        }
        exec::flush(state);
        (reply, ack)
    }

    fn handle_locked(
        &self,
        state: &mut State,
        ctx: &Ctx<'_>,
        who: &Identity,
        id: u64,
        request: Request,
    ) -> (Reply, Option<oneshot::Receiver<Result<(), String>>>) {
        let ctx = ctx.clone();
        let fail = |e: ReqError| (Reply::error(id, e.code.0, e.message), None);
        let per_id = |(errors, ops): (Vec<pbs_proto::IdError>, Vec<store::StoreOp>)| {
            let code = errors.last().map(|e| e.code).unwrap_or(0);
            let message = errors.last().map(|e| e.message.clone()).unwrap_or_default();
            let reply = Reply { id, code, message, body: ReplyBody::PerId(errors), more: false };
            (reply, Some(self.store.commit(ops)))
        };
        match request {
            Request::QueueJob { attrs, script, destination } => {
                match jobs::queue_job(state, &ctx, &attrs, script, destination.as_deref()) {
                    Ok((job_id, ops)) => {
                        let job =
                            job_id.parse::<pbs_core::JobId>().ok().and_then(|parsed| state.jobs.get(&parsed.seq()));
                        tracing::info!(
                            object_type = "Job",
                            object_name = job_id.as_str(),
                            "Job Queued at request of {}, owner = {}, job name = {}, queue = {}",
                            who.user_at_host(),
                            who.user_at_host(),
                            job.and_then(|j| j.get("Job_Name", None)).unwrap_or(""),
                            job.map(|j| j.queue.to_string()).unwrap_or_default()
                        );
                        (Reply::ok(id, ReplyBody::JobId(job_id)), Some(self.store.commit(ops)))
                    }
                    Err(e) => fail(e),
                }
            }
            Request::ModifyJob { ids, attrs } => per_id(jobs::modify_jobs(state, &ctx, &ids, &attrs)),
            Request::DeleteJob { ids, force, purge_history } => {
                per_id(jobs::delete_jobs(state, &ctx, &ids, force, purge_history))
            }
            Request::SignalJob { ids, signal } => per_id(exec::signal_jobs(state, &ctx, &ids, &signal)),
            Request::RerunJob { ids, force } => per_id(exec::rerun_jobs(state, &ctx, &ids, force)),
            Request::HoldJob { ids, hold_types } => per_id(jobs::hold_jobs(state, &ctx, &ids, &hold_types, true)),
            Request::ReleaseJob { ids, hold_types } => per_id(jobs::hold_jobs(state, &ctx, &ids, &hold_types, false)),
            Request::SelectJobs { criteria, history, subjobs, arrays_only } => {
                if let Err(e) = privilege::check_criteria(state, ctx.privilege, &criteria) {
                    return fail(e);
                }
                let ids = jobs::select_jobs(state, &ctx, &criteria, history, subjobs, arrays_only);
                (Reply::ok(id, ReplyBody::Ids(ids)), None)
            }
            Request::StatusJob { ids, queues, attrs, history, subjobs } => {
                let (keys, errors) = jobs::status_plan(state, &ctx, &ids, &queues, history, subjobs);
                let filter = jobs::StatusFilter::new(&attrs, ctx.privilege);
                let mut arrays = None;
                let objects =
                    keys.into_keys().filter_map(|k| jobs::key_status(state, k, &filter, &mut arrays)).collect();
                (Reply::ok(id, ReplyBody::Status { objects, errors }), None)
            }
            Request::StatusServer { attrs } => {
                let object = manager::server_status(state, ctx.privilege, &attrs);
                (Reply::ok(id, ReplyBody::Status { objects: vec![object], errors: Vec::new() }), None)
            }
            Request::StatusQueue { names, attrs } => {
                status_reply(id, manager::named_status(state, ObjectKind::Queue, &names, ctx.privilege, &attrs))
            }
            Request::StatusNode { names } => status_reply(id, nodes::node_status(state, &names, ctx.privilege)),
            Request::StatusSched { names } => {
                status_reply(id, manager::named_status(state, ObjectKind::Sched, &names, ctx.privilege, &[]))
            }
            Request::StatusHook { names } => {
                if ctx.privilege < pbs_core::Privilege::Manager {
                    return fail(ReqError::new(Pbse::PERM));
                }
                status_reply(id, manager::named_status(state, ObjectKind::Hook, &names, ctx.privilege, &[]))
            }
            Request::StatusResource { names } => status_reply(id, manager::resource_status(state, &names)),
            // Answered asynchronously by `net` (it may wait for the scheduler).
            Request::RunJob { .. } => fail(ReqError::new(Pbse::INTERNAL)),
            Request::Manager { command, object, names, attrs } => {
                match manager::manager(state, &ctx, command, object, &names, &attrs) {
                    Ok(ops) => {
                        tracing::info!(
                            object_type = "Server",
                            "{:?} {:?} {} by {}",
                            command,
                            object,
                            names.join(","),
                            who.user_at_host()
                        );
                        (Reply::ok(id, ReplyBody::None), Some(self.store.commit(ops)))
                    }
                    Err(e) => fail(e),
                }
            }
        }
    }
}

/// The jobs a request names, with their full ids, so the scheduler hears of their changes.
fn touched_jobs(state: &State, request: &Request) -> Vec<(state::JobKey, String)> {
    let Some(ids) = request.per_job_ids() else { return Vec::new() };
    ids.iter()
        .flat_map(|id| arrays::touched_by(state, id))
        .filter_map(|key| {
            let job = state.job(key).or_else(|| state.jobs.get(&key.seq))?;
            let id = match key.index {
                Some(index) => pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string(),
                None => job.id(&state.server_name),
            };
            Some((key, id))
        })
        .collect()
}

fn status_reply(
    id: u64,
    result: Result<Vec<pbs_proto::StatusObject>, ReqError>,
) -> (Reply, Option<oneshot::Receiver<Result<(), String>>>) {
    match result {
        Ok(objects) => (Reply::ok(id, ReplyBody::Status { objects, errors: Vec::new() }), None),
        Err(e) => (Reply::error(id, e.code.0, e.message), None),
    }
}

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
    admission::raise_fd_limit();
    let admission = Arc::new(admission::Admission::new());
    let housekeeping = tokio::spawn(housekeeping(server.clone()));
    let node_watch = tokio::spawn(node_watch(server.clone()));
    momlink::sync(&server);
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
    housekeeping.abort();
    node_watch.abort();
    momlink::stop_all(&server);
    // Let connections that are mid-request get their reply out.
    admission.drain(Duration::from_secs(2)).await;
    let exact = server.state.lock().map(|mut state| state.exact_seq_op());
    if let Ok(op) = exact {
        let _ = server.store.commit(vec![op]).await;
    }
    tracing::info!("Server shut down");
}

/// Periodic work: purging job history past `job_history_duration`.
async fn housekeeping(server: Arc<Server>) {
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        tick.tick().await;
        let Ok(mut state) = server.state.lock() else { return };
        let ops = jobs::purge_history(&mut state, chrono::Utc::now().timestamp());
        if !ops.is_empty() {
            tracing::info!(n_jobs = ops.len(), "Purged expired job history");
            server.store.commit_detached(ops);
        }
    }
}

/// Every second: jobs on nodes that have been down longer than `node_fail_requeue`
/// seconds are requeued (or finished if not rerunnable), as OpenPBS does; 0 disables it.
async fn node_watch(server: Arc<Server>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Ok(mut state) = server.state.lock() else { return };
        let now = chrono::Utc::now().timestamp();
        let limit = state.server_attr("node_fail_requeue", None).and_then(|v| v.parse::<i64>().ok()).unwrap_or(310);
        if limit <= 0 {
            continue;
        }
        let failed: Vec<String> = state
            .node_rt
            .iter()
            .filter(|(_, rt)| !rt.up && rt.down_since.is_some_and(|t| now - t >= limit))
            .map(|(name, _)| name.clone())
            // Suspended jobs hold nothing on the node, but are lost with it too.
            .filter(|name| !exec::jobs_on(&state, name).is_empty())
            .collect();
        let mut ops = Vec::new();
        let mut frames = Vec::new();
        for node in failed {
            for key in exec::jobs_on(&state, &node) {
                let id = state.job(key).map(|j| j.id(&state.server_name)).unwrap_or_default();
                tracing::info!(object_type = "Job", object_name = id.as_str(), "requeued: node {node} failed");
                let (more, f) = faults::requeue_lost(&mut state, key, now);
                ops.extend(more);
                frames.extend(f);
            }
        }
        exec::send_frames(&mut state, frames);
        exec::flush(&mut state);
        server.store.commit_detached(ops);
    }
}

/// Reads the cluster key, creating a random one readable only by root on first start.
///
/// The file is created with mode 0600 by `open(2)` itself and never exists with a looser
/// mode, and `O_EXCL` refuses whatever already sits at the path (a file another process
/// created meanwhile, or a symbolic link planted to have the key written elsewhere).
pub fn load_or_create_cluster_key(path: &std::path::Path) -> Result<Vec<u8>, ServerError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::read(path) {
        Ok(key) if !key.is_empty() => return Ok(key),
        // What a crash between creating the file and writing the key leaves behind.
        Ok(_) => std::fs::remove_file(path).map_err(io_err(format!("removing the empty {}", path.display())))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        // Never replace a key that exists but cannot be read: the nodes hold it.
        Err(e) => return Err(ServerError::Io { context: format!("reading {}", path.display()), source: e }),
    }
    let key = pbs_proto::auth::new_secret()
        .map_err(|e| ServerError::Io {
            context: "generating the cluster key".into(),
            source: io::Error::other(e.to_string()),
        })?
        .into_bytes();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err("creating the key directory"))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err(format!("creating {}", path.display())))?;
    file.write_all(&key).and_then(|()| file.sync_all()).map_err(io_err(format!("writing {}", path.display())))?;
    Ok(key)
}

#[cfg(test)]
mod cluster_key_tests {
    use super::*;

    #[test]
    fn a_new_cluster_key_is_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server_priv").join("cluster_key");
        let key = load_or_create_cluster_key(&path).unwrap();
        assert!(!key.is_empty());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load_or_create_cluster_key(&path).unwrap(), key);
        // An empty file (a crash before the write) gets a fresh key, private too.
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let fresh = load_or_create_cluster_key(&path).unwrap();
        assert!(!fresh.is_empty() && fresh != key);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn the_cluster_key_is_never_written_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster_key");
        let elsewhere = dir.path().join("readable_by_all");
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(load_or_create_cluster_key(&path).is_err());
        assert!(!elsewhere.exists(), "the key was written through the link");
    }
}
