//! The running server: its configuration, state and store, and [`Server::apply_effects`],
//! the one place where what a handler decided reaches the store, the scheduler and the
//! moms, always in that order.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::effects::{Delivery, Effects, Launch, Notify, Outbox};
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
    /// The Python that runs hooks (`PBS_PYTHON`); `python3` from `PATH` when unset.
    pub python: Option<PathBuf>,
    /// Whether the accounting log is written (`server_priv/accounting`).
    pub accounting: bool,
    /// pbs.conf's `PBS_MAIL_HOST_NAME`: the host of mail addresses that name none.
    pub mail_host: Option<String>,
    /// How commands on other hosts may prove who they are (`PBS_SUPPORTED_AUTH_METHODS`,
    /// lowercased; `munge` only is known).
    pub auth_methods: Vec<String>,
    /// The socket of this host's munged (`PBS_MUNGE_SOCKET`, else munge's own default).
    pub munge_socket: std::path::PathBuf,
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
    /// The state and its links; locked only for short, I/O-free sections, through
    /// [`Server::lock`].
    pub state: Mutex<Shared>,
    /// Threads blocked in [`Server::lock`] (see [`Server::give_way`]).
    lock_waiters: AtomicUsize,
    /// The store writer.
    pub store: Store,
    /// One link task per node's mom.
    pub mom_tasks: Mutex<HashMap<String, MomLinkTask>>,
    /// The bytes each local user's frames may have in flight at once.
    pub frame_budget: std::sync::Arc<pbs_proto::budget::ByteBudget>,
    /// The warm interpreters server hooks run in.
    pub hooks: pbs_hooks::Pool,
    /// Woken when qterm has marked the state stopping (`State::stopping`): `run` stops.
    pub stop: tokio::sync::Notify,
    /// Where committed mails go (`crate::mailer`).
    pub mailer: crate::mailer::Mailer,
}

/// How many hook interpreters the server keeps: events beyond this wait for one.
pub const HOOK_INTERPRETERS: usize = 4;

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
        let db_path = pbs_core::conf::server_store_file(home);
        let accounting = config.accounting.then(|| crate::acctlog::dir_of(home));
        let (store, loaded) = Store::open(&db_path, accounting.as_deref())?;
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
        // The `pbs` module and the runner, rewritten from this binary at each start so they
        // match it; root-owned and not writable by anyone else.
        let hook_lib = home.join("server_priv").join("hooks").join("lib");
        pbs_hooks::install(&hook_lib).map_err(io_err(format!("installing {}", hook_lib.display())))?;
        let hooks = pbs_hooks::Pool::new(
            pbs_hooks::pool::runner_in(&hook_lib),
            config.python.clone(),
            HOOK_INTERPRETERS,
            "Server",
        );
        if crate::hooks::event::any_server_hook(&state) {
            hooks.warm();
        }
        let shared = Shared { state, links: Links::default(), outbox: Outbox::default() };
        let config_mail_host = config.mail_host.clone();
        Ok(Server {
            config,
            state: Mutex::new(shared),
            lock_waiters: AtomicUsize::new(0),
            store,
            mom_tasks: Mutex::new(Default::default()),
            frame_budget: pbs_proto::budget::ByteBudget::new(MAX_BYTES_IN_FLIGHT_PER_UID),
            stop: tokio::sync::Notify::new(),
            hooks,
            mailer: crate::mailer::Mailer::start(config_mail_host, crate::mailer::Limits::default()),
        })
    }

    /// The database file (for reading job scripts).
    pub fn db_path(&self) -> PathBuf {
        pbs_core::conf::server_store_file(&self.config.home)
    }

    /// The request context of `who` against the current state.
    pub fn ctx<'a>(&self, state: &State, who: &'a Identity) -> Ctx<'a> {
        let privilege = who.privilege(state.server_attr("managers", None), state.server_attr("operators", None));
        Ctx { who, privilege, now: chrono::Utc::now().timestamp(), groups: &[], hook_attrs: &[] }
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
        // The scheduler is the steps' follower: it hears of the runs they end.
        crate::sched_view::note(&mut shared.state, &effects);
        let Effects { ops, to_moms, launches, periodic_hooks, steps: _, mails, waits_done } = effects;
        let ack = (!ops.is_empty()).then(|| self.store.commit(ops));
        let ack = self.once_committed(shared, ack, mails, waits_done);
        crate::sched_view::flush(&mut shared.state, &mut shared.links);
        for run in periodic_hooks {
            self.run_periodic_hook(run);
        }
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
            let mut delivery = match &committed {
                Ok(()) => server.with_scripts(to_moms, launches).await,
                Err(_) => Delivery::default(),
            };
            delivery.notify = Some(Notify { waiter: done, committed });
            let mut shared = server.lock();
            let due = shared.outbox.complete(ticket, delivery);
            server.deliver(&mut shared, due);
        });
        Applied::Delivery(waiter)
    }

    /// Hands `mails` to the mailer and answers the connections waiting for the jobs of
    /// `waits_done` once the commit `ack` waits for is done (at once when there is none),
    /// so no mail or answer tells of a change that was not kept; gives the ack to wait on
    /// in its place.
    fn once_committed(
        self: &Arc<Self>,
        shared: &mut Shared,
        ack: Option<CommitAck>,
        mails: Vec<crate::effects::Mail>,
        waits_done: Vec<crate::effects::WaitDone>,
    ) -> Option<CommitAck> {
        if mails.is_empty() && waits_done.is_empty() {
            return ack;
        }
        let Some(ack) = ack else {
            self.mailer.send(mails);
            crate::job::block::answer(&mut shared.state, waits_done);
            return None;
        };
        let (tx, rx) = oneshot::channel();
        let server = self.clone();
        tokio::spawn(async move {
            let committed = ack.await.unwrap_or(Err(CommitError::WriterGone));
            if committed.is_ok() {
                server.mailer.send(mails);
                if !waits_done.is_empty() {
                    crate::job::block::answer(&mut server.lock().state, waits_done);
                }
            }
            let _ = tx.send(committed);
        });
        Some(rx)
    }

    /// Brings the hook interpreters' attribute and resource types up to date with the
    /// state's (they change when a resource is created or deleted).
    pub fn sync_hook_defs(&self, state: &State) {
        if self.hooks.defs_generation() != Some(state.resources.generation()) {
            let (generation, defs) = crate::hooks::event::defs(state);
            self.hooks.set_defs(generation, &defs);
        }
    }

    /// Runs a periodic hook in the hook interpreters, outside the state lock: the jobs it
    /// reads are answered page by page, each under a short lock; its changes are then
    /// applied under the lock (`hooks::periodic::answered`) like any event's.
    fn run_periodic_hook(self: &Arc<Self>, run: crate::effects::HookRun) {
        let server = self.clone();
        tokio::spawn(async move {
            server.sync_hook_defs(&server.lock().state);
            let event = crate::hooks::periodic::event(&run, &server.config.host);
            let reader = server.clone();
            let queries: pbs_hooks::Queries = Arc::new(move |query: &pbs_hooks::Query| {
                let shared = reader.lock();
                let mut reply = crate::hooks::periodic::answer_query(&shared.state, query);
                reply.object = crate::objects::for_hook(&shared.state, query);
                reply
            });
            let result = server.hooks.run_with_queries(event, queries).await;
            let mut guard = server.lock();
            let shared = &mut *guard;
            let now = chrono::Utc::now().timestamp();
            let origin = format!("Server@{}", server.config.host);
            let effects = crate::hooks::periodic::answered(&mut shared.state, &run.name, &origin, result, now);
            let _ = server.apply_effects(shared, effects);
        });
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
            return Delivery { frames, launches, ..Delivery::default() };
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
            Ok((launches, unreadable)) => Delivery { frames, launches, unreadable, notify: None },
            // The blocking task panicked: nothing starts, and the panic hook ends the server.
            Err(e) => {
                tracing::error!(object_type = "Server", "preparing job starts failed: {e}");
                Delivery { frames, ..Delivery::default() }
            }
        }
    }

    /// Hands committed deliveries to the moms' links (see [`crate::job::launch::committed_delivery`]);
    /// what they change in turn is applied as new effects.
    fn deliver(self: &Arc<Self>, shared: &mut Shared, due: Vec<Delivery>) {
        let now = chrono::Utc::now().timestamp();
        let mut more = Effects::default();
        for mut delivery in due {
            let notify = delivery.notify.take();
            let (frames, follow) = crate::job::launch::committed_delivery(&mut shared.state, delivery, now);
            crate::state::links::send_frames(&mut shared.links, frames);
            if let Some(notify) = notify {
                notify.send();
            }
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
        if let Ok(guard) = self.state.try_lock() {
            return guard;
        }
        self.lock_waiters.fetch_add(1, Ordering::SeqCst);
        let guard = lock(&self.state);
        self.lock_waiters.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Lets the requests waiting for the state lock have it before a task that takes it
    /// part after part (a qselect's walk, a qstat's parts) takes it again. A released
    /// mutex goes to whichever thread asks first, and the task that just released it asks
    /// at once while a waiting thread is still being woken: without this, a request could
    /// wait for the whole walk. Waits at most [`GIVE_WAY_MAX`].
    pub async fn give_way(&self) {
        tokio::task::yield_now().await;
        let deadline = std::time::Instant::now() + GIVE_WAY_MAX;
        while self.lock_waiters.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            // The waiter may be on this CPU: let it run, then this worker's other tasks.
            std::thread::yield_now();
            tokio::task::yield_now().await;
        }
    }
}

/// The longest [`Server::give_way`] waits for the requests it lets go first to take the
/// lock (a woken thread normally has it within tens of microseconds).
const GIVE_WAY_MAX: std::time::Duration = std::time::Duration::from_millis(5);

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

#[cfg(test)]
mod tests {
    //! `apply_effects` with a recording store and recording links, as HyperQueue tests its
    //! reactor through a recording `Comm`: no socket, no SQLite, and every step's order seen.

    use std::sync::mpsc::Receiver;

    use pbs_proto::mom::ToMom;
    use pbs_proto::sched::ToSched;
    use tokio::sync::mpsc;

    use super::*;
    use crate::store::{Ack, StoreOp};

    struct Recording {
        server: Arc<Server>,
        commits: Receiver<(Vec<StoreOp>, Ack)>,
        sched: mpsc::Receiver<ToSched>,
        mom: mpsc::Receiver<ToMom>,
        mails: mpsc::Receiver<crate::effects::Mail>,
    }

    fn recording() -> Recording {
        let (store, commits) = Store::recording();
        let (state, _) = State::from_loaded(Default::default(), "svr", "host", "/nonexistent");
        let mut links = Links::default();
        let (sched_tx, sched, _) = crate::state::sched_queue::SchedSender::new();
        links.sched = Some(sched_tx);
        let (mom_tx, mom) = mpsc::channel(16);
        links.moms.insert("n1".into(), mom_tx);
        let (mailer, mails) = crate::mailer::Mailer::recording(16);
        let config = ServerConfig {
            server_name: "svr".into(),
            host: "host".into(),
            home: "/nonexistent".into(),
            socket_path: "/nonexistent/socket".into(),
            cluster_key: None,
            python: None,
            accounting: false,
            mail_host: None,
            auth_methods: vec!["munge".into()],
            munge_socket: pbs_munge::DEFAULT_SOCKET.into(),
        };
        let server = Server {
            config,
            state: Mutex::new(Shared { state, links, outbox: Outbox::default() }),
            lock_waiters: AtomicUsize::new(0),
            store,
            mom_tasks: Mutex::new(HashMap::new()),
            frame_budget: pbs_proto::budget::ByteBudget::new(MAX_BYTES_IN_FLIGHT_PER_UID),
            stop: tokio::sync::Notify::new(),
            hooks: pbs_hooks::Pool::new("/nonexistent/runner.py".into(), None, 1, "test"),
            mailer,
        };
        Recording { server: Arc::new(server), commits, sched, mom, mails }
    }

    /// A change to job `seq`: its write, its mom's frame, and a mark for the scheduler.
    fn change(server: &Arc<Server>, seq: u64) -> Applied {
        let mut shared = server.lock();
        shared.state.changes.cycle = true;
        let mut effects = Effects::ops(vec![StoreOp::DeleteJob { seq }]);
        effects.to_moms.push(("n1".into(), ToMom::ForgetJob { job_id: format!("{seq}.svr") }));
        server.apply_effects(&mut shared, effects)
    }

    /// Lets every other task of this single-threaded runtime run until it waits.
    async fn settle() {
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    }

    /// Two changes applied one after the other, each waiting for its commit: their
    /// replies' tasks and their commits' acknowledgements, in order.
    #[allow(clippy::type_complexity)]
    fn two_changes() -> (Recording, [(tokio::task::JoinHandle<Result<(), CommitError>>, Ack); 2]) {
        let recording = recording();
        let first = tokio::spawn(change(&recording.server, 1).done());
        let second = tokio::spawn(change(&recording.server, 2).done());
        let (_, first_ack) = recording.commits.try_recv().expect("first commit");
        let (_, second_ack) = recording.commits.try_recv().expect("second commit");
        (recording, [(first, first_ack), (second, second_ack)])
    }

    fn forgotten(mom: &mut mpsc::Receiver<ToMom>) -> Vec<String> {
        std::iter::from_fn(|| mom.try_recv().ok())
            .map(|frame| match frame {
                ToMom::ForgetJob { job_id } => job_id,
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn the_commit_is_queued_and_the_scheduler_told_before_any_mom_hears_and_the_reply_waits_for_both() {
        let Recording { server, commits, mut sched, mut mom, .. } = recording();
        let applied = tokio::spawn(change(&server, 7).done());

        // Under the lock already: the writes are queued and the scheduler has its changes.
        let (ops, ack) = commits.try_recv().expect("the writes are queued at once");
        assert_eq!(ops, vec![StoreOp::DeleteJob { seq: 7 }]);
        assert!(matches!(sched.try_recv(), Ok(ToSched::Changes { cycle: true, .. })), "the scheduler is told at once");

        // Nothing reaches the mom, and no reply may go, until the commit is acknowledged.
        settle().await;
        assert!(forgotten(&mut mom).is_empty(), "a mom heard of a change that is not on disk");
        assert!(!applied.is_finished(), "the reply would precede the commit");

        ack.send(Ok(())).expect("the test holds the waiter");
        applied.await.expect("no panic").expect("committed");
        assert_eq!(forgotten(&mut mom), ["7.svr"], "the reply went out before its frames");
    }

    fn mail(seq: u64) -> crate::effects::Mail {
        crate::effects::Mail {
            job_id: format!("{seq}.svr"),
            user: "alice".into(),
            owner: "alice@host".into(),
            mail_users: None,
            mailer: "/bin/true".into(),
            from: "adm".into(),
            subject: format!("PBS JOB {seq}.svr"),
            body: String::new(),
        }
    }

    #[tokio::test]
    async fn a_mail_goes_to_the_mailer_only_once_its_change_is_committed() {
        let Recording { server, commits, mut mails, .. } = recording();
        let apply = |seq: u64| {
            let mut shared = server.lock();
            let mut effects = Effects::ops(vec![StoreOp::DeleteJob { seq }]);
            effects.mails.push(mail(seq));
            tokio::spawn(server.apply_effects(&mut shared, effects).done())
        };
        let kept = apply(1);
        let (_, ack) = commits.try_recv().expect("queued");
        settle().await;
        assert!(mails.try_recv().is_err(), "a mail told of a change not yet on disk");
        assert!(!kept.is_finished());
        ack.send(Ok(())).expect("waiter");
        kept.await.expect("no panic").expect("committed");
        assert_eq!(mails.try_recv().map(|m| m.job_id).as_deref(), Ok("1.svr"));

        let lost = apply(2);
        let (_, ack) = commits.try_recv().expect("queued");
        ack.send(Err(CommitError::Database("disk full".into()))).expect("waiter");
        assert!(lost.await.expect("no panic").is_err());
        settle().await;
        assert!(mails.try_recv().is_err(), "a mail told of a change that was not kept");
    }

    #[tokio::test]
    async fn frames_follow_commit_order_and_a_reply_waits_for_its_own_frames() {
        let (Recording { sched: _sched, mut mom, .. }, [(first, first_ack), (second, second_ack)]) = two_changes();

        // The second commit is seen first: its frames wait for the first's, and so does
        // its reply.
        second_ack.send(Ok(())).expect("waiter");
        settle().await;
        assert!(forgotten(&mut mom).is_empty(), "a later change reached the mom before an earlier one");
        assert!(!second.is_finished(), "a reply went out before its frames were handed on");

        first_ack.send(Ok(())).expect("waiter");
        first.await.expect("no panic").expect("committed");
        second.await.expect("no panic").expect("committed");
        assert_eq!(forgotten(&mut mom), ["1.svr", "2.svr"]);
    }

    #[tokio::test]
    async fn the_scheduler_hears_of_every_job_a_commit_writes_without_a_mark() {
        let Recording { server, commits: _commits, mut sched, mom: _mom, .. } = recording();
        let applied = {
            let mut shared = server.lock();
            let who = crate::identity::Identity::daemon("host");
            let ctx =
                Ctx { who: &who, privilege: pbs_core::Privilege::Manager, now: 1000, groups: &[], hook_attrs: &[] };
            let submit = pbs_proto::Request::QueueJob {
                attrs: vec![pbs_proto::Attr::new("Hold_Types", "u")],
                script: "true\n".into(),
                destination: None,
            };
            let crate::dispatch::Handled::Apply(_, effects) =
                crate::dispatch::handle(&mut shared.state, &ctx, 1, submit)
            else {
                panic!("a submission is answered with effects");
            };
            // Nothing marked by hand: the write alone must tell the scheduler.
            shared.state.changes = Default::default();
            server.apply_effects(&mut shared, effects)
        };
        drop(applied);
        let Ok(ToSched::Changes { changes, .. }) = sched.try_recv() else { panic!("the scheduler heard nothing") };
        assert!(
            changes.iter().any(|c| matches!(c, pbs_proto::sched::SchedChange::Job { job } if job.id == "0.svr")),
            "{changes:?}"
        );
    }

    #[tokio::test]
    async fn a_failed_commit_sends_nothing_and_fails_its_reply_but_does_not_hold_later_frames() {
        let (Recording { sched: _sched, mut mom, .. }, [(first, first_ack), (second, second_ack)]) = two_changes();
        first_ack.send(Err(CommitError::Database("disk full".into()))).expect("waiter");
        second_ack.send(Ok(())).expect("waiter");
        assert!(first.await.expect("no panic").is_err());
        second.await.expect("no panic").expect("committed");
        assert_eq!(forgotten(&mut mom), ["2.svr"]);
    }
}
