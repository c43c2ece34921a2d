//! The running server: its configuration, state and store, and [`Server::apply_effects`],
//! the one place where what a handler decided reaches the store, the scheduler and the
//! moms, always in that order.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::effects::{Delivery, Effects, Launch, Outbox};
use crate::identity::Identity;
use crate::request::Ctx;
use crate::state::State;
use crate::state::links::Links;
use crate::store::{CommitAck, CommitError, Store};

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
    /// The master key, from which each TCP peer's key is derived (`pbs_proto::keys`); TCP is
    /// refused to everyone without it.
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
    Store(#[from] crate::store::StoreError),
    /// The master key file may not be trusted (its mode or owner), or is unreadable.
    #[error("{0}")]
    Key(#[from] pbs_proto::keys::KeyError),
    /// The first-start set-up could not be committed.
    #[error("cannot commit the initial set-up: {0}")]
    Init(#[from] CommitError),
}

/// An [`io::Error`] with what was being done.
pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> ServerError {
    let context = context.into();
    move |source| ServerError::Io { context, source }
}

/// A running server's shared parts.
pub struct Server {
    /// Configuration.
    pub config: ServerConfig,
    /// The state and its links; locked only for short, I/O-free sections.
    pub state: Mutex<Shared>,
    /// The store writer.
    pub store: Store,
    /// One link task per node's mom.
    pub mom_tasks: Mutex<HashMap<String, MomLinkTask>>,
    /// The bytes each local user's frames may have in flight at once.
    pub frame_budget: std::sync::Arc<pbs_proto::budget::ByteBudget>,
}

/// What one local user other than root may have in flight in request frames at once,
/// across all their connections: four of the largest frames.
pub const MAX_BYTES_IN_FLIGHT_PER_UID: usize = 4 * pbs_proto::MAX_REQUEST_FRAME_LEN;

/// What the state lock guards: the state, and beside it the live links and the outbox,
/// which must change in the same order as the state. Handlers get the state alone, so
/// they cannot reach a link; [`Server::apply_effects`] gets all three.
pub struct Shared {
    /// The state.
    pub state: State,
    /// Live links to the scheduler and the moms.
    pub links: Links,
    /// Frames for moms waiting for their commits, to go out in commit order.
    pub outbox: Outbox,
}

impl std::ops::Deref for Shared {
    type Target = State;

    fn deref(&self) -> &State {
        &self.state
    }
}

impl std::ops::DerefMut for Shared {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.state
    }
}

/// A node's mom link task (see `momlink`) and the address it serves.
pub struct MomLinkTask {
    /// The mom's host.
    pub host: String,
    /// The mom's port.
    pub port: u16,
    /// The task.
    pub task: tokio::task::JoinHandle<()>,
}

/// Effects being carried out: resolves once their writes are committed and their frames
/// handed to the moms' links.
pub enum Applied {
    /// Nothing left to wait for.
    Done,
    /// Waiting for the commit only.
    Commit(CommitAck),
    /// Waiting for the commit and the frames behind it.
    Delivery(oneshot::Receiver<Result<(), CommitError>>),
}

impl Applied {
    /// Waits until the effects are carried out.
    pub async fn done(self) -> Result<(), CommitError> {
        match self {
            Applied::Done => Ok(()),
            Applied::Commit(ack) | Applied::Delivery(ack) => ack.await.unwrap_or(Err(CommitError::WriterGone)),
        }
    }
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
        ops.extend(crate::job::nodefail::recover(&mut state, chrono::Utc::now().timestamp()));
        if !ops.is_empty() {
            store.commit(ops).await.unwrap_or(Err(CommitError::WriterGone))?;
        }
        if created {
            tracing::info!("Created the default set-up: queue workq, default scheduler");
        }
        tracing::info!(n_jobs, "Server state recovered");
        let shared = Shared { state, links: Links::default(), outbox: Outbox::default() };
        Ok(Server {
            config,
            state: Mutex::new(shared),
            store,
            mom_tasks: Mutex::new(Default::default()),
            frame_budget: pbs_proto::budget::ByteBudget::new(MAX_BYTES_IN_FLIGHT_PER_UID),
        })
    }

    /// The database file (for reading job scripts).
    pub fn db_path(&self) -> PathBuf {
        self.config.home.join("server_priv").join("serverdb.sqlite")
    }

    /// The request context of `who` against the current state.
    pub fn ctx<'a>(&self, state: &State, who: &'a Identity) -> Ctx<'a> {
        let privilege = who.privilege(state.server_attr("managers", None), state.server_attr("operators", None));
        Ctx { who, privilege, now: chrono::Utc::now().timestamp(), groups: &[] }
    }

    /// Carries out `effects` of a change just made to `state` (whose lock the caller
    /// holds): queues the writes, tells the scheduler what changed, and once the writes
    /// are committed hands the frames and starts to the moms' links, after those of every
    /// earlier commit. The caller replies once the returned value is done.
    ///
    /// The scheduler hears of a change before it is on disk: whatever it decides comes back
    /// as a request whose writes queue behind this one's, so no decision can outlive a
    /// change a crash lost. A mom hears of nothing until it is on disk.
    pub fn apply_effects(self: &Arc<Self>, shared: &mut Shared, effects: Effects) -> Applied {
        let Effects { ops, to_moms, launches } = effects;
        let ack = (!ops.is_empty()).then(|| self.store.commit(ops));
        crate::sched_view::flush(&mut shared.state, &mut shared.links);
        if to_moms.is_empty() && launches.is_empty() {
            return ack.map_or(Applied::Done, Applied::Commit);
        }
        let ticket = shared.outbox.ticket();
        if ack.is_none() && launches.is_empty() && shared.outbox.is_next(ticket) {
            // Nothing to wait for and nothing ahead of it: out now.
            let due = shared.outbox.complete(ticket, Delivery { frames: to_moms, ..Delivery::default() });
            self.deliver(shared, due);
            return Applied::Done;
        }
        let (done, waiter) = oneshot::channel();
        let server = self.clone();
        tokio::spawn(async move {
            let committed = match ack {
                Some(ack) => ack.await.unwrap_or(Err(CommitError::WriterGone)),
                None => Ok(()),
            };
            // A failed commit still takes its turn, empty, so later deliveries go out.
            let delivery = match &committed {
                Ok(()) => server.with_scripts(to_moms, launches).await,
                Err(_) => Delivery::default(),
            };
            let mut shared = server.lock();
            let due = shared.outbox.complete(ticket, delivery);
            server.deliver(&mut shared, due);
            drop(shared);
            let _ = done.send(committed);
        });
        Applied::Delivery(waiter)
    }

    /// Reads the scripts the starts among `launches` need, and looks up their owners'
    /// uids, on a blocking thread outside the state lock.
    async fn with_scripts(&self, frames: crate::effects::MomFrames, mut launches: Vec<Launch>) -> Delivery {
        // Owners seen in the last seconds need no thread that may block, nor do starts of
        // a program (`qsub --`), which have no script to read.
        let mut unresolved = false;
        for launch in &mut launches {
            unresolved |= !crate::launch_owner::resolve_cached(&mut launch.launch);
        }
        let scripts_wanted = launches.iter().any(|l| !l.launch.sister && l.launch.executable.is_none());
        if !unresolved && !scripts_wanted {
            return Delivery { frames, launches, unreadable: Default::default() };
        }
        let path = self.db_path();
        let prepared = tokio::task::spawn_blocking(move || {
            let mut launches = launches;
            for launch in launches.iter_mut().filter(|l| l.launch.uid.is_none()) {
                crate::launch_owner::resolve(&mut launch.launch);
            }
            let wanted: Vec<u64> = launches
                .iter()
                .filter(|l| !l.launch.sister && l.launch.executable.is_none())
                .map(|l| l.key.seq)
                .collect();
            let mut unreadable = Default::default();
            if !wanted.is_empty() {
                let scripts = Store::read_scripts(&path, &wanted).map_err(|e| e.to_string());
                unreadable = crate::job::faults::fill_scripts(&mut launches, scripts);
            }
            (launches, unreadable)
        })
        .await;
        match prepared {
            Ok((launches, unreadable)) => Delivery { frames, launches, unreadable },
            // The blocking task panicked: nothing starts, and the panic hook ends the server.
            Err(e) => {
                tracing::error!(object_type = "Server", "preparing job starts failed: {e}");
                Delivery { frames, launches: Vec::new(), unreadable: Default::default() }
            }
        }
    }

    /// Hands committed deliveries to the moms' links (see [`crate::job::launch::committed_delivery`]);
    /// what they change in turn is applied as new effects.
    fn deliver(self: &Arc<Self>, shared: &mut Shared, due: Vec<Delivery>) {
        let now = chrono::Utc::now().timestamp();
        let mut more = Effects::default();
        for delivery in due {
            let (frames, follow) = crate::job::launch::committed_delivery(&mut shared.state, delivery, now);
            crate::state::links::send_frames(&mut shared.links, frames);
            more.merge(follow);
        }
        if !more.is_empty() {
            // Nobody waits for these: they follow from deliveries, not from a request.
            let _ = self.apply_effects(shared, more);
        }
    }
}

impl Server {
    /// Locks the state and its links (see [`lock`]).
    pub fn lock(&self) -> MutexGuard<'_, Shared> {
        lock(&self.state)
    }
}

/// Locks the state. A poisoned lock means a panic interrupted a change to it (which
/// `pbs_log::daemon::exit_on_panic` normally turns into the end of the process first):
/// the process ends too, rather than answering every request with an internal error.
fn lock(state: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    match state.lock() {
        Ok(guard) => guard,
        Err(_) => {
            tracing::error!("the state lock is poisoned by a panic; exiting so that a restart recovers from the store");
            pbs_log::flush();
            std::process::abort();
        }
    }
}
