//! The mom's state and behaviour: the jobs it holds, the current server link, and what
//! happens on each server request, each shepherd note, each usage sample, and at start-up
//! (re-adopting the jobs of a previous run).
//!
//! What happens to a job is appended to its records file (see [`crate::records`]) before or
//! as it is reported, so a restarted mom can rebuild the job table from `mom_priv/jobs/`.
//!
//! All state is behind one `std::sync::Mutex`, never held across an await or a system call
//! that can block for long; frames for the server are queued on the link's channel under
//! that lock, so the server sees events in the order they happened here, and the
//! `NodeStatus` a new link starts with is consistent with everything queued after it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use pbs_core::Pbse;
use pbs_core::hookattr::HookEvent;
use pbs_proto::mom::{FromMom, JobLaunch, MomJob, ToMom, Usage};
use tokio::sync::{mpsc, oneshot};

use crate::config::MomConfig;
use crate::error::MomError;
use crate::exit_codes::{
    JOB_EXEC_FAIL1, JOB_EXEC_FAILHOOK_RERUN, JOB_EXEC_HOOKERROR, JOB_EXEC_INITABT, JOB_EXEC_KILL_CPUT,
    JOB_EXEC_KILL_MEM, JOB_EXEC_RETRY,
};
use crate::hooks::{MomHooks, Verdict};
use crate::layout::{
    self, Forgotten, JobResult, KillReason, Layout, Limits, Note, RECORDS_SUFFIX, SCRIPT_SUFFIX, Spec, Started, Status,
    SuspendClock, now_ms,
};
use crate::prologue::Which;
use crate::session_signals::SessionSignals;
use crate::signals::{self, JobSignal};
use crate::{adopt, checkpoint, hooks, procfs, prologue, records, shepherd};

/// Growth of a records file (usage samples, mostly) past its size after the last
/// compaction that triggers the next one: about 500 samples, so compaction (which creates
/// an inode) is rare, while a restarted mom never reads much more than the launch.
const COMPACT_AFTER: u64 = 64 * 1024;

/// At start-up a shared stderr larger than this is moved to `shepherd.err.old`.
const SHEPHERD_ERR_ROTATE: u64 = 1024 * 1024;

/// How much of the end of the shared stderr is searched for a lost shepherd's last words.
const SHEPHERD_ERR_TAIL: u64 = 64 * 1024;

/// Where a job is in its life on this mom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The shepherd is preparing it; no session yet.
    Starting,
    /// Its shell runs in session `Job::session_id`.
    Running,
    /// Ended; kept until the server forgets it.
    Ended(JobResult),
    /// A sister's record: nothing runs here.
    Sister,
}

struct Job {
    /// The records file.
    records: PathBuf,
    /// Tells this run from a later run of the same job id (see [`Mom::compact_records`]).
    run: u64,
    /// Size of the records file after the first usage sample, the last compaction or
    /// re-adoption: compaction is due once the file has grown well past it.
    records_base: u64,
    ncpus: u32,
    cput_limit: Option<u64>,
    mem_limit: Option<u64>,
    phase: Phase,
    session_id: i64,
    start_ms: u64,
    /// The shepherd of the current run, once known: reports from any other are stale.
    shepherd_pid: Option<i32>,
    /// The shepherd was adopted from a previous run of the mom: it is not our child, so the
    /// sampler checks that it is alive and still proves itself ([`crate::adopt`]).
    adopted: bool,
    /// The secret this run's shepherd holds.
    shepherd_secret: String,
    usage: Usage,
    clock: SuspendClock,
    /// (time in ms, CPU ticks) of the previous sample, for cpupercent.
    last_cpu: Option<(u64, u64)>,
    kill_reason: Option<KillReason>,
    /// A KillJob that came before the job's session existed: its kill_delay.
    pending_kill: Option<u32>,
    /// ForgetJob came while it still ran: it ends without a report.
    forgotten: bool,
    /// Ended, and its execjob_epilogue and execjob_end hooks (or epilogue) still run: its
    /// end is reported once they are done.
    ending: bool,
    /// The launch without its script: what hooks and the epilogue see of the job.
    launch: Arc<JobLaunch>,
}

impl Job {
    fn new(launch: &JobLaunch, records: PathBuf, run: u64) -> Job {
        Job {
            ending: false,
            launch: Arc::new(JobLaunch { script: String::new(), ..launch.clone() }),
            records,
            run,
            records_base: 0,
            ncpus: launch.ncpus,
            cput_limit: launch.cput,
            mem_limit: launch.mem,
            phase: if launch.sister { Phase::Sister } else { Phase::Starting },
            session_id: 0,
            start_ms: 0,
            shepherd_pid: None,
            adopted: false,
            shepherd_secret: String::new(),
            usage: Usage { ncpus: launch.ncpus, ..Usage::default() },
            clock: SuspendClock::default(),
            last_cpu: None,
            kill_reason: None,
            pending_kill: None,
            forgotten: false,
        }
    }

    fn report(&self, job_id: &str) -> MomJob {
        let (exit_status, usage) = match self.phase {
            Phase::Ended(result) if !self.ending => (Some(result.exit_status), result.usage),
            _ => (None, self.usage),
        };
        MomJob {
            job_id: job_id.to_string(),
            sister: self.phase == Phase::Sister,
            session_id: if matches!(self.phase, Phase::Running | Phase::Ended(_)) { self.session_id } else { 0 },
            exit_status,
            usage,
        }
    }
}

/// The server's link: frames queued for it, and the means to close it when a newer link
/// replaces it (dropping `_close` wakes the old link's task).
struct Link {
    id: u64,
    tx: mpsc::Sender<FromMom>,
    /// Woken when `tx` is full: the link is then dropped (see [`LINK_QUEUE`]).
    overflow: Arc<tokio::sync::Notify>,
    _close: oneshot::Sender<()>,
}

/// Frames queued for the server at most. Frames are queued under the state lock, where
/// nothing may wait, so a server that stops reading (a stalled link) cannot make the
/// mom wait either: when the queue is full the link is dropped instead, and the server's
/// next link starts with a `NodeStatus` that carries every fact the lost frames did.
pub const LINK_QUEUE: usize = 16384;

#[derive(Default)]
struct State {
    jobs: HashMap<String, Job>,
    link: Option<Link>,
    next_link: u64,
    next_run: u64,
    /// Limits that came before their job's RunJob: the server sends a launch once its run
    /// is committed, so a qalter right after the run decision can overtake it. Applied
    /// when the launch arrives; at most [`EARLY_LIMITS_MAX`] kept.
    early_limits: HashMap<String, (u32, Limits)>,
    /// What the exechost_startup hooks' outcome means for the node, for the next link.
    startup_report: Option<FromMom>,
}

/// Most limits kept for jobs not (yet) here.
const EARLY_LIMITS_MAX: usize = 1024;

impl State {
    fn new_run(&mut self) -> u64 {
        self.next_run += 1;
        self.next_run
    }

    fn emit(&self, frame: FromMom) {
        // Without a link the frame is dropped: NodeStatus carries the same facts later.
        if let Some(link) = &self.link
            && let Err(mpsc::error::TrySendError::Full(_)) = link.tx.try_send(frame)
        {
            link.overflow.notify_one();
        }
    }
}

/// One execution daemon.
pub struct Mom {
    /// The settings; SIGHUP replaces those that may change while the mom runs.
    cfg: RwLock<Arc<MomConfig>>,
    layout: Layout,
    state: Mutex<State>,
    /// The shepherds' shared stderr, open for appending.
    shepherd_err: File,
    /// The execution hooks the server sent, and their interpreters.
    hooks: MomHooks,
    host_ncpus: u32,
    host_mem_kb: u64,
    ticks_per_sec: u64,
    page_kb: u64,
    /// Woken by the server's `Shutdown` (qterm -m): `link::run` returns.
    pub stop: tokio::sync::Notify,
    /// Signals to sessions that nobody waits on, sent in batches by the task `link::run`
    /// starts.
    pub session_signals: Arc<SessionSignals>,
}

/// A job a signal is for: its session, and the walltime clock record (written to the
/// records file before the signal) when a suspend or resume changed it.
struct ToSignal {
    sid: i64,
    clock: Option<(PathBuf, SuspendClock)>,
}

fn log_job(job_id: &str, message: std::fmt::Arguments<'_>) {
    tracing::info!(object_type = "Job", object_name = job_id, "{message}");
}

fn warn_job(job_id: &str, message: std::fmt::Arguments<'_>) {
    tracing::warn!(object_type = "Job", object_name = job_id, "{message}");
}

impl Mom {
    /// A mom for `cfg`, with its directories created.
    pub fn new(cfg: MomConfig) -> Result<Arc<Mom>, MomError> {
        let layout = Layout::new(&cfg.home);
        layout.create_dirs().map_err(|e| MomError::io(format!("creating {}", layout.priv_dir().display()), e))?;
        let err_path = layout.shepherd_err();
        if std::fs::metadata(&err_path).is_ok_and(|m| m.len() > SHEPHERD_ERR_ROTATE) {
            let _ = std::fs::rename(&err_path, err_path.with_extension("err.old"));
        }
        let shepherd_err = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&err_path)
            .map_err(|e| MomError::io(format!("opening {}", err_path.display()), e))?;
        let hooks =
            MomHooks::open(&layout.priv_dir(), cfg.python.clone(), &cfg.server_name, &cfg.node_name, &cfg.host)?;
        Ok(Arc::new(Mom {
            layout,
            shepherd_err,
            hooks,
            cfg: RwLock::new(Arc::new(cfg)),
            state: Mutex::new(State::default()),
            host_ncpus: procfs::host_ncpus(),
            host_mem_kb: procfs::host_mem_kb(),
            ticks_per_sec: procfs::clock_ticks(),
            page_kb: (procfs::page_size() / 1024).max(1),
            stop: tokio::sync::Notify::new(),
            session_signals: Arc::default(),
        }))
    }

    /// The settings.
    pub fn config(&self) -> Arc<MomConfig> {
        self.cfg.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Takes the settings pbs.conf gives now (SIGHUP): the usage sample period, the base of
    /// new jobs' TMPDIRs, the port jobs are told and the key file. What the running mom is
    /// built on (its PBS_HOME, node and host names, listening address, hooks' Python and
    /// server name) stays until it restarts, with a warning when it changed.
    pub fn reload(&self, new: MomConfig) {
        let old = self.config();
        let fixed = [
            ("PBS_HOME", old.home == new.home),
            ("PBS_MOM_NODE_NAME", old.node_name == new.node_name),
            ("PBS_MOM_SERVICE_PORT", old.listen == new.listen),
            ("PBS_PYTHON", old.python == new.python),
            ("PBS_SERVER", old.server_name == new.server_name),
        ];
        for (name, same) in fixed {
            if !same {
                tracing::warn!("{name} changed in pbs.conf: it takes effect when pbs_mom restarts");
            }
        }
        let kept = MomConfig {
            home: old.home.clone(),
            node_name: old.node_name.clone(),
            host: old.host.clone(),
            listen: old.listen,
            shepherd_exe: old.shepherd_exe.clone(),
            python: old.python.clone(),
            server_name: old.server_name.clone(),
            ..new
        };
        *self.cfg.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(kept);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not stop the mom from reporting and cleaning up.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Binds the socket shepherds notify on (before [`Mom::recover`], so no note from a
    /// shepherd that ends meanwhile is lost). Needs a tokio runtime.
    pub fn bind_notes(&self) -> Result<tokio::net::UnixDatagram, MomError> {
        let path = self.layout.notify_socket();
        if path.as_os_str().len() >= 108 {
            return Err(MomError::Config(format!("{}: path too long for a Unix socket", path.display())));
        }
        let _ = std::fs::remove_file(&path);
        let sock = tokio::net::UnixDatagram::bind(&path)
            .map_err(|e| MomError::io(format!("binding {}", path.display()), e))?;
        // Only root (the shepherds) may send notes.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| MomError::io(format!("chmod {}", path.display()), e))?;
        Ok(sock)
    }

    /// Rebuilds the job table from `mom_priv/jobs/`: ended jobs are kept for the server,
    /// running ones whose shepherd lives are adopted, and those whose shepherd is gone are
    /// ended with what their records say. Leftovers of a crash (temporary files, scripts
    /// without records) are removed; job directories of the older layout (one directory
    /// per job) are not adopted, only reported.
    pub fn recover(self: &Arc<Self>) {
        let Ok(entries) = std::fs::read_dir(self.layout.jobs_dir()) else { return };
        let shepherds = procfs::shepherds();
        let mut to_check = Vec::new();
        let mut scripts = Vec::new();
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
            let Ok(file_type) = entry.file_type() else { continue };
            if file_type.is_dir() {
                if layout::valid_job_id(&name) {
                    warn_job(&name, format_args!("{}: left by an older pbs_mom, not adopted", entry.path().display()));
                }
                continue;
            }
            if !file_type.is_file() {
                continue;
            }
            if name.starts_with('.') && name.ends_with(".tmp") {
                // A creation or compaction cut short: the records file itself is whole.
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            if let Some(job_id) = name.strip_suffix(SCRIPT_SUFFIX) {
                scripts.push(job_id.to_string());
                continue;
            }
            let Some(job_id) = name.strip_suffix(RECORDS_SUFFIX).filter(|id| layout::valid_job_id(id)) else {
                continue;
            };
            let job_id = job_id.to_string();
            let path = self.layout.records_path(&job_id);
            let recs = records::read(&path);
            let Some(spec) = recs.get::<Spec>() else {
                // Creation is atomic, so only damage leaves a file without its launch.
                warn_job(&job_id, format_args!("removing {}: no launch description", path.display()));
                let _ = std::fs::remove_file(&path);
                continue;
            };
            let shepherd = path
                .to_str()
                .and_then(|p| shepherds.get(p))
                .and_then(|pids| adopt::proven(&job_id, pids, &spec.shepherd_secret));
            let forgotten = recs.has::<Forgotten>();
            if forgotten && shepherd.is_none() {
                self.remove_job_files(&job_id, &path);
                continue;
            }
            let run = self.lock().new_run();
            let mut job = Job::new(&spec.launch, path.clone(), run);
            job.records_base = recs.size();
            job.forgotten = forgotten;
            job.shepherd_secret = spec.shepherd_secret.clone();
            job.usage = recs.get().unwrap_or(job.usage);
            job.clock = recs.get().unwrap_or_default();
            job.kill_reason = recs.get();
            if let Some(limits) = recs.get::<Limits>() {
                job.cput_limit = limits.cput;
                job.mem_limit = limits.mem;
            }
            // A live shepherd's own start: an earlier run's shepherd may have appended late.
            let started: Option<Started> = recs.find(|s: &Started| shepherd.is_none_or(|p| s.shepherd_pid == p));
            if let Some(started) = started {
                job.session_id = started.session_id;
                job.start_ms = started.start_ms;
            }
            if job.phase != Phase::Sister {
                if let Some(result) = recs.get::<JobResult>() {
                    job.phase = Phase::Ended(result);
                } else {
                    job.phase = if started.is_some() { Phase::Running } else { Phase::Starting };
                    match shepherd {
                        Some(pid) => {
                            job.shepherd_pid = Some(pid);
                            job.adopted = true;
                            log_job(&job_id, format_args!("adopted, shepherd pid {pid}, session {}", job.session_id));
                        }
                        None => to_check.push(job_id.clone()),
                    }
                }
            }
            if forgotten && job.session_id > 0 {
                self.session_signals.send(job.session_id, &[libc::SIGKILL]);
            }
            self.lock().jobs.insert(job_id, job);
        }
        let orphans: Vec<String> = {
            let state = self.lock();
            scripts.into_iter().filter(|id| !state.jobs.contains_key(id)).collect()
        };
        for job_id in orphans {
            // The mom died between removing a job's records and its script.
            let _ = std::fs::remove_file(self.layout.script_path(&job_id));
        }
        for job_id in to_check {
            self.shepherd_exited(&job_id, None);
        }
    }

    /// The frame a link starts with.
    fn node_status(&self, state: &State) -> FromMom {
        let mut jobs: Vec<MomJob> =
            state.jobs.iter().filter(|(_, j)| !j.forgotten).map(|(id, j)| j.report(id)).collect();
        jobs.sort_by(|a, b| a.job_id.cmp(&b.job_id));
        FromMom::NodeStatus {
            ncpus: self.host_ncpus,
            mem_kb: self.host_mem_kb,
            arch: "linux".to_string(),
            host: self.config().host.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            jobs,
        }
    }

    /// Makes `tx` the server link (closing any older one) and queues its first frame,
    /// the node status. Returns the link's id for [`Mom::drop_link`], and what wakes when
    /// the link's queue overflowed (the link must then end).
    pub fn install_link(
        &self,
        tx: mpsc::Sender<FromMom>,
        close: oneshot::Sender<()>,
    ) -> (u64, Arc<tokio::sync::Notify>) {
        let mut state = self.lock();
        state.next_link += 1;
        let id = state.next_link;
        let _ = tx.try_send(self.node_status(&state));
        if let Some(report) = state.startup_report.take() {
            let _ = tx.try_send(report);
        }
        let overflow = Arc::new(tokio::sync::Notify::new());
        state.link = Some(Link { id, tx, overflow: overflow.clone(), _close: close });
        (id, overflow)
    }

    /// Forgets link `id` if it is still the current one.
    pub fn drop_link(&self, id: u64) {
        let mut state = self.lock();
        if state.link.as_ref().is_some_and(|l| l.id == id) {
            state.link = None;
        }
    }

    /// Serves one request from the server; its replies (none for most requests, one per job
    /// for a SignalJobs).
    pub fn handle(self: &Arc<Self>, request: ToMom) -> Vec<FromMom> {
        match request {
            ToMom::RunJob { launch } => {
                self.run_job(*launch);
                Vec::new()
            }
            ToMom::SignalJob { job_id, signal, ask } => {
                self.handle(ToMom::SignalJobs { job_ids: vec![job_id], signal, ask })
            }
            // Not a signal: OpenPBS's hold request to the mom, checkpoint and end the job.
            ToMom::SignalJobs { job_ids, signal, ask } if signal == "checkpoint_abort" => {
                for job_id in job_ids {
                    self.checkpoint_abort(job_id, ask);
                }
                Vec::new()
            }
            ToMom::SignalJobs { job_ids, signal, ask } => {
                let codes = self.signal_jobs(&job_ids, &signal);
                job_ids
                    .into_iter()
                    .zip(codes)
                    .map(|(job_id, code)| FromMom::SignalResult { job_id, signal: signal.clone(), code, ask })
                    .collect()
            }
            ToMom::KillJob { job_id, kill_delay } => self.kill_request(&job_id, kill_delay).into_iter().collect(),
            ToMom::ForgetJob { job_id } => {
                self.forget_job(&job_id);
                Vec::new()
            }
            ToMom::ModifyJob { job_id, walltime, cput, mem, run_count } => {
                self.modify_job(&job_id, Limits { walltime, cput, mem }, run_count);
                Vec::new()
            }
            ToMom::Ping => vec![FromMom::Pong],
            ToMom::Hooks { hooks } => {
                self.hooks.replace(hooks);
                Vec::new()
            }
            ToMom::MessageJob { job_id, text, stdout, stderr, ask } => {
                let code = self.message_job(&job_id, &text, stdout, stderr);
                vec![FromMom::MessageResult { job_id, code, ask }]
            }
            ToMom::Shutdown => {
                tracing::info!("Shutting down at the server's request (jobs keep running)");
                self.stop.notify_one();
                Vec::new()
            }
        }
    }

    fn pelog_path(&self, which: Which) -> PathBuf {
        self.layout.priv_dir().join(which.file_name())
    }

    fn run_job(self: &Arc<Self>, mut launch: JobLaunch) {
        let job_id = launch.job_id.clone();
        if !layout::valid_job_id(&job_id) {
            tracing::warn!("RunJob for an unusable job id {job_id:?}");
            self.lock().emit(FromMom::JobEnded { job_id, exit_status: JOB_EXEC_FAIL1, usage: Usage::default() });
            return;
        }
        let path = self.layout.records_path(&job_id);
        {
            let mut state = self.lock();
            if let Some(job) = state.jobs.get(&job_id) {
                // The server asks again (it lost our answer): repeat what we know.
                let again = match job.phase {
                    _ if job.forgotten => Some(FromMom::JobEnded {
                        job_id: job_id.clone(),
                        exit_status: JOB_EXEC_RETRY,
                        usage: Usage::default(),
                    }),
                    Phase::Starting => None,
                    Phase::Running => Some(FromMom::JobStarted { job_id: job_id.clone(), session_id: job.session_id }),
                    Phase::Sister => Some(FromMom::JobStarted { job_id: job_id.clone(), session_id: 0 }),
                    // Its epilogue runs: the end comes when it is done.
                    Phase::Ended(_) if job.ending => None,
                    Phase::Ended(r) => {
                        Some(FromMom::JobEnded { job_id: job_id.clone(), exit_status: r.exit_status, usage: r.usage })
                    }
                };
                if let Some(frame) = again {
                    state.emit(frame);
                }
                return;
            }
            if let Some((_, limits)) = state.early_limits.remove(&job_id).filter(|(run, _)| *run == launch.run_count) {
                (launch.walltime, launch.cput, launch.mem) = (limits.walltime, limits.cput, limits.mem);
            }
            let run = state.new_run();
            // The job keeps its launch without the script (which may be large).
            let script = std::mem::take(&mut launch.script);
            state.jobs.insert(job_id.clone(), Job::new(&launch, path.clone(), run));
            launch.script = script;
        }
        let sister = launch.sister;
        let secret = match adopt::new_secret() {
            Ok(secret) => secret,
            Err(e) => {
                self.start_failed(&job_id, format!("cannot make the shepherd's secret: {e}"));
                return;
            }
        };
        if let Some(job) = self.lock().jobs.get_mut(&job_id) {
            job.shepherd_secret = secret.clone();
        }
        let cfg = self.config();
        let spec = Spec {
            launch,
            home: cfg.home.clone(),
            tmpdir_base: cfg.tmpdir_base.clone(),
            mom_port: cfg.job_mom_port,
            notify_socket: self.layout.notify_socket(),
            shepherd_secret: secret,
            own_hosts: vec![cfg.host.clone(), cfg.node_name.clone()],
            scp: Some(cfg.scp.clone()),
        };
        // A leftover of an earlier run of this id is replaced.
        if let Err(e) = records::create(&path, &spec) {
            self.start_failed(&job_id, format!("cannot write {}: {e}", path.display()));
            return;
        }
        let begin = self.hooks.any(HookEvent::ExecjobBegin);
        let prologue = !sister
            && (self.hooks.any(HookEvent::ExecjobPrologue) || prologue::exists(&self.pelog_path(Which::Prologue)));
        if begin || prologue {
            // The start waits for them, in a task of its own: the link goes on meanwhile.
            let mom = self.clone();
            tokio::spawn(async move { mom.start_after_hooks(job_id, path, spec).await });
            return;
        }
        self.launch(job_id, path, &spec);
    }

    /// Runs the hooks of `event` for `job_id` and tells the server of those that asked for
    /// a new scheduling cycle; gives their verdict.
    async fn run_hooks(&self, event: HookEvent, job_id: &str, job: hooks::HookJob) -> Verdict {
        let outcome = self.hooks.run(event, job_id, job).await;
        for hook in outcome.restart_cycle {
            self.lock().emit(FromMom::RestartCycleByHook { hook, failed: false });
        }
        outcome.verdict
    }

    /// Runs the exechost_startup hooks (at start and at SIGHUP, as OpenPBS's mom) and
    /// tells the server what their outcome means for this node: offline by its mom when
    /// one with `fail_action=offline_vnodes` failed, that offline cleared when none failed
    /// and one that ran has `clear_vnodes_upon_recovery`. Without a link the word waits for
    /// the next one, which takes it once: a later link (a restarted server) does not undo a
    /// manager's `pbsnodes -r`.
    pub async fn exechost_startup(&self) {
        if !self.hooks.any(HookEvent::ExechostStartup) {
            return;
        }
        let outcome = self.hooks.run_startup().await;
        let report = match outcome.verdict {
            Verdict::Error { hook, offline: true, .. } => Some(FromMom::OfflineByHook { hook }),
            Verdict::Error { .. } => None,
            Verdict::Accept | Verdict::Reject => outcome.clear_vnodes.then_some(FromMom::OfflineByHookCleared),
        };
        let mut state = self.lock();
        if let Some(report) = report {
            if state.link.is_some() {
                state.emit(report);
            } else {
                state.startup_report = Some(report);
            }
        }
    }

    /// Runs the job's execjob_begin hooks, and on the mother superior its
    /// execjob_prologue hooks (or, when there are none, the prologue), then starts it; a
    /// refusal or failure ends it with OpenPBS's `JOB_EXEC_*` status instead.
    async fn start_after_hooks(self: Arc<Self>, job_id: String, path: PathBuf, spec: Spec) {
        let launch = &spec.launch;
        let mut failure = None;
        for event in [HookEvent::ExecjobBegin, HookEvent::ExecjobPrologue] {
            if failure.is_some() || (event == HookEvent::ExecjobPrologue && launch.sister) || !self.hooks.any(event) {
                continue;
            }
            match self.run_hooks(event, &job_id, hooks::job_data(launch, 0, None)).await {
                Verdict::Accept => {}
                Verdict::Reject => failure = Some((JOB_EXEC_FAILHOOK_RERUN, format!("{event} hook rejected the job"))),
                Verdict::Error { hook, offline, restart_cycle } => {
                    // The node goes offline before the scheduler is asked to look again.
                    if offline {
                        self.lock().emit(FromMom::OfflineByHook { hook: hook.clone() });
                    }
                    if restart_cycle {
                        self.lock().emit(FromMom::RestartCycleByHook { hook, failed: true });
                    }
                    failure = Some((JOB_EXEC_HOOKERROR, format!("{event} hook failed")));
                }
            }
        }
        if failure.is_none() && !launch.sister && !self.hooks.any(HookEvent::ExecjobPrologue) {
            // As OpenPBS: the prologue runs only where no prologue hook does.
            let path = self.pelog_path(Which::Prologue);
            let exit = prologue::run(Which::Prologue, &path, &job_id, &launch.user, &launch.group, &[]).await;
            failure = prologue::prologue_failure(exit).map(|status| (status, format!("prologue exited {exit}")));
        }
        match failure {
            Some((status, message)) if !launch.sister => {
                self.finish(&job_id, Status::failed(status, message));
            }
            Some((_, message)) => {
                // Nothing here can stop a job its mother superior runs: logged only.
                warn_job(&job_id, format_args!("{message} on this sister node; the job goes on"));
                self.launch(job_id, path, &spec);
            }
            None => self.launch(job_id, path, &spec),
        }
    }

    /// Starts the job whose records are written: its shepherd, or nothing on a sister.
    fn launch(self: &Arc<Self>, job_id: String, path: PathBuf, spec: &Spec) {
        let sister = spec.launch.sister;
        {
            let mut state = self.lock();
            match state.jobs.get(&job_id) {
                // Forgotten while its hooks ran: it never starts.
                Some(job) if job.forgotten && job.phase != Phase::Running => {
                    let records = job.records.clone();
                    state.jobs.remove(&job_id);
                    drop(state);
                    self.remove_job_files(&job_id, &records);
                    return;
                }
                Some(job) if job.phase == Phase::Starting || job.phase == Phase::Sister => {}
                _ => return,
            }
        }
        if sister {
            self.lock().emit(FromMom::JobStarted { job_id: job_id.clone(), session_id: 0 });
            log_job(&job_id, format_args!("sister job, nothing to run here"));
            return;
        }
        match self.spawn_shepherd(&path, &spec.shepherd_secret) {
            Ok(mut child) => {
                let pid = child.id().and_then(|p| i32::try_from(p).ok());
                if let Some(job) = self.lock().jobs.get_mut(&job_id)
                    && job.shepherd_pid.is_none()
                {
                    job.shepherd_pid = pid;
                }
                let mom = self.clone();
                tokio::spawn(async move {
                    let _ = child.wait().await;
                    mom.shepherd_exited(&job_id, pid);
                });
            }
            Err(e) => self.start_failed(&job_id, format!("cannot start the shepherd: {e}")),
        }
    }

    fn spawn_shepherd(&self, records: &Path, secret: &str) -> std::io::Result<tokio::process::Child> {
        let err = self.shepherd_err.try_clone()?;
        let mut command = std::process::Command::new(&self.config().shepherd_exe);
        command
            .arg0("pbs_mom")
            .args(shepherd::shepherd_args(records))
            .env_clear()
            // Its only variable, the proof a restarted mom asks for (see crate::adopt).
            .env(adopt::SECRET_ENV, secret)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err));
        tokio::process::Command::from(command).spawn()
    }

    fn start_failed(self: &Arc<Self>, job_id: &str, message: String) {
        warn_job(job_id, format_args!("{message}"));
        self.finish(job_id, Status::failed(JOB_EXEC_FAIL1, message));
    }

    /// A shepherd exited (ours: `pid`) or is gone (adopted, or unknown at start-up): its
    /// status record says how the job ended; without one the job is lost.
    fn shepherd_exited(self: &Arc<Self>, job_id: &str, pid: Option<i32>) {
        let (path, shepherd_pid) = {
            let state = self.lock();
            match state.jobs.get(job_id) {
                Some(job) if pid.is_some() && job.shepherd_pid.is_some() && job.shepherd_pid != pid => return,
                Some(job) if matches!(job.phase, Phase::Starting | Phase::Running) => {
                    (job.records.clone(), pid.or(job.shepherd_pid))
                }
                _ => return,
            }
        };
        let recs = records::read(&path);
        let status = match status_of(&recs, shepherd_pid) {
            Some(status) => status,
            None => {
                let started = recs.has::<Started>();
                let why = self.shepherd_last_words(job_id, shepherd_pid);
                let message = format!("shepherd ended without a status: {}", why.trim());
                Status::failed(if started { JOB_EXEC_INITABT } else { JOB_EXEC_FAIL1 }, message)
            }
        };
        self.finish(job_id, status);
    }

    /// What the shepherd `pid` (any shepherd of the job, if unknown) wrote to the shared
    /// stderr, from its end.
    fn shepherd_last_words(&self, job_id: &str, pid: Option<i32>) -> String {
        let Ok(mut file) = File::open(self.layout.shepherd_err()) else { return String::new() };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if file.seek(SeekFrom::Start(len.saturating_sub(SHEPHERD_ERR_TAIL))).is_err() {
            return String::new();
        }
        let mut tail = Vec::new();
        let _ = file.take(SHEPHERD_ERR_TAIL).read_to_end(&mut tail);
        let text = String::from_utf8_lossy(&tail);
        let lines: Vec<&str> = text
            .lines()
            .filter_map(|line| shepherd::parse_err_line(line, job_id))
            .filter(|(line_pid, _)| pid.is_none_or(|p| p == *line_pid))
            .map(|(_, message)| message)
            .collect();
        lines.join("; ")
    }

    /// Ends a job once: computes the result, records it, and reports it, or, when the job
    /// ran and its execjob_epilogue or execjob_end hooks (or the epilogue) are to run, has
    /// them run first (see [`Mom::after_end`]).
    fn finish(self: &Arc<Self>, job_id: &str, status: Status) {
        let epilogue = self.hooks.any(HookEvent::ExecjobEpilogue)
            || self.hooks.any(HookEvent::ExecjobEnd)
            || prologue::exists(&self.pelog_path(Which::Epilogue));
        let mut after = None;
        let (result, recorded) = {
            let mut state = self.lock();
            let Some(job) = state.jobs.get_mut(job_id) else { return };
            if !matches!(job.phase, Phase::Starting | Phase::Running) {
                return;
            }
            if status.shepherd_pid != 0 && job.shepherd_pid.is_some_and(|mine| mine != status.shepherd_pid) {
                tracing::debug!(object_type = "Job", object_name = job_id, "ignored the end of an earlier run");
                return;
            }
            if job.forgotten {
                let path = job.records.clone();
                state.jobs.remove(job_id);
                drop(state);
                self.remove_job_files(job_id, &path);
                return;
            }
            // A kill decided by an earlier mom was read back at start-up.
            let exit_status = match job.kill_reason.clone() {
                Some(k) if status.exit_status >= 0 => k.exit_status,
                _ => status.exit_status,
            };
            if job.start_ms == 0 {
                job.start_ms = status.start_ms;
            }
            let mut usage = job.usage;
            usage.ncpus = job.ncpus;
            if job.start_ms > 0 {
                usage.walltime = job.clock.walltime_ms(job.start_ms, status.end_ms.max(job.start_ms)) / 1000;
            }
            usage.cput = usage.cput.max(status.cput_ms / 1000);
            usage.mem_kb = usage.mem_kb.max(status.maxrss_kb);
            let announce = job.phase == Phase::Starting && status.session_id > 0;
            if status.session_id > 0 {
                job.session_id = status.session_id;
            }
            let result = JobResult { exit_status, usage };
            job.phase = Phase::Ended(result);
            let session_id = job.session_id;
            // Recorded before it is reported, and under the lock so a new link's
            // What staging said goes first, so the server has it when it hears the end.
            // NodeStatus never runs ahead of the JobEnded queued here: once the server
            // has the end it may forget the job and run the same id again, and this
            // record must not land in that run's file. One short append to a local file.
            let recorded = records::append(&job.records, &result);
            let deferred = epilogue && session_id > 0;
            if deferred {
                job.ending = true;
                after = Some(announce);
            }
            if let Some((direction, message)) = status.stage_failed.clone() {
                state.emit(FromMom::StageFailed { job_id: job_id.to_string(), direction, message });
            }
            if !deferred {
                if announce {
                    state.emit(FromMom::JobStarted { job_id: job_id.to_string(), session_id });
                }
                state.emit(FromMom::JobEnded { job_id: job_id.to_string(), exit_status, usage });
            }
            (result, recorded)
        };
        if let Some(announce) = after {
            let mom = self.clone();
            let job_id = job_id.to_string();
            tokio::spawn(async move { mom.after_end(job_id, result, announce).await });
        }
        if let Err(e) = recorded {
            warn_job(job_id, format_args!("cannot record the result: {e}"));
        }
        if !status.message.is_empty() {
            log_job(job_id, format_args!("{}", status.message));
        }
        log_job(
            job_id,
            format_args!(
                "Terminated, exit status {}, cput {} s, walltime {} s, mem {} kb",
                result.exit_status, result.usage.cput, result.usage.walltime, result.usage.mem_kb
            ),
        );
    }

    /// Runs an ended job's execjob_epilogue hooks (or, when there are none, the epilogue)
    /// and its execjob_end hooks, then reports its end. Their verdicts change nothing but
    /// the log: the job has ended.
    async fn after_end(self: Arc<Self>, job_id: String, result: JobResult, announce: bool) {
        let Some((launch, session_id)) = self.lock().jobs.get(&job_id).map(|j| (j.launch.clone(), j.session_id)) else {
            return;
        };
        let data = hooks::job_data(&launch, session_id, Some((result.exit_status, &result.usage)));
        if self.hooks.any(HookEvent::ExecjobEpilogue) {
            self.run_hooks(HookEvent::ExecjobEpilogue, &job_id, data.clone()).await;
        } else {
            let list = |pairs: Vec<(String, String)>| {
                pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
            };
            let mut limits = vec![("ncpus".to_string(), launch.ncpus.to_string())];
            if let Some(cput) = launch.cput {
                limits.push(("cput".to_string(), pbs_core::Duration::from_secs(cput).to_string()));
            }
            if let Some(mem) = launch.mem {
                limits.push(("mem".to_string(), format!("{}kb", mem / 1024)));
            }
            if let Some(walltime) = launch.walltime {
                limits.push(("walltime".to_string(), pbs_core::Duration::from_secs(walltime).to_string()));
            }
            limits.sort();
            let args = [
                launch.job_name.clone(),
                session_id.to_string(),
                list(limits),
                list(hooks::usage_text(&result.usage)),
                launch.queue.clone(),
                launch.account.clone().filter(|a| !a.is_empty()).unwrap_or_else(|| "null".to_string()),
                result.exit_status.to_string(),
            ];
            let path = self.pelog_path(Which::Epilogue);
            prologue::run(Which::Epilogue, &path, &job_id, &launch.user, &launch.group, &args).await;
        }
        if self.hooks.any(HookEvent::ExecjobEnd) {
            self.run_hooks(HookEvent::ExecjobEnd, &job_id, data).await;
        }
        let mut state = self.lock();
        // Forgotten meanwhile (a forced delete): nobody waits for the end.
        let Some(job) = state.jobs.get_mut(&job_id).filter(|j| j.ending) else { return };
        job.ending = false;
        let session_id = job.session_id;
        if announce {
            state.emit(FromMom::JobStarted { job_id: job_id.clone(), session_id });
        }
        state.emit(FromMom::JobEnded { job_id, exit_status: result.exit_status, usage: result.usage });
    }

    /// A datagram from a shepherd.
    pub fn on_note(self: &Arc<Self>, note: Note) {
        match note {
            Note::Started { job_id, started } => self.started(&job_id, started),
            Note::Staging { job_id, direction } => self.staging(job_id, direction),
            Note::Ended { job_id, status } => self.finish(&job_id, status),
        }
    }

    /// A shepherd stages the job's files: the server shows it (a note lost while the mom
    /// was down only costs that).
    fn staging(&self, job_id: String, direction: pbs_proto::mom::StageDirection) {
        let state = self.lock();
        let live = state
            .jobs
            .get(&job_id)
            .is_some_and(|j| !j.forgotten && matches!(j.phase, Phase::Starting | Phase::Running));
        if live {
            state.emit(FromMom::Staging { job_id, direction });
        }
    }

    fn started(self: &Arc<Self>, job_id: &str, started: Started) {
        let (forgotten, pending_kill) = {
            let mut state = self.lock();
            let Some(job) = state.jobs.get_mut(job_id) else { return };
            if job.phase != Phase::Starting || job.shepherd_pid.is_some_and(|mine| mine != started.shepherd_pid) {
                return;
            }
            job.shepherd_pid = Some(started.shepherd_pid);
            job.phase = Phase::Running;
            job.session_id = started.session_id;
            job.start_ms = started.start_ms;
            let (forgotten, pending) = (job.forgotten, job.pending_kill);
            if !forgotten {
                state.emit(FromMom::JobStarted { job_id: job_id.to_string(), session_id: started.session_id });
            }
            (forgotten, pending)
        };
        log_job(job_id, format_args!("Started, pid = {}", started.session_id));
        if forgotten {
            self.session_signals.send(started.session_id, &[libc::SIGKILL]);
        } else if let Some(delay) = pending_kill {
            self.terminate(job_id, started.session_id, delay);
        }
    }

    /// SIGTERM (and SIGCONT, so a stopped job receives it) now, SIGKILL after `delay`
    /// seconds if the job still runs. Both go through [`SessionSignals`]: jobs killed
    /// together (a qdel of many, a requeue) have their SIGKILLs fall due together too, and
    /// one pass over `/proc` sends them all.
    fn terminate(self: &Arc<Self>, job_id: &str, sid: i64, delay: u32) {
        self.session_signals.send(sid, &[libc::SIGTERM, libc::SIGCONT]);
        let mom = self.clone();
        let job_id = job_id.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(u64::from(delay))).await;
            if mom.running_session(&job_id) == Some(sid) {
                mom.session_signals.send(sid, &[libc::SIGKILL]);
            }
        });
    }

    fn running_session(&self, job_id: &str) -> Option<i64> {
        let state = self.lock();
        state.jobs.get(job_id).filter(|j| j.phase == Phase::Running).map(|j| j.session_id)
    }

    /// Ends a job the server asked to kill; for a job this mom does not hold, the answer
    /// that says so (the server purges the job: its end will never come from here).
    fn kill_request(self: &Arc<Self>, job_id: &str, kill_delay: u32) -> Option<FromMom> {
        let sid = {
            let mut state = self.lock();
            let Some(job) = state.jobs.get_mut(job_id) else {
                tracing::warn!(object_type = "Job", object_name = job_id, "KillJob for an unknown job");
                return Some(FromMom::UnknownJob { job_id: job_id.to_string() });
            };
            match job.phase {
                Phase::Starting => {
                    job.pending_kill = Some(kill_delay);
                    None
                }
                Phase::Running => Some(job.session_id),
                Phase::Sister => {
                    // Nothing runs here; end the record so the server gets its answer.
                    let usage = Usage { ncpus: job.ncpus, ..Usage::default() };
                    let result = JobResult { exit_status: 256 + libc::SIGTERM, usage };
                    job.phase = Phase::Ended(result);
                    let path = job.records.clone();
                    state.emit(FromMom::JobEnded {
                        job_id: job_id.to_string(),
                        exit_status: result.exit_status,
                        usage,
                    });
                    drop(state);
                    let _ = records::append(&path, &result);
                    return None;
                }
                Phase::Ended(_) if job.ending => None,
                Phase::Ended(r) => {
                    state.emit(FromMom::JobEnded {
                        job_id: job_id.to_string(),
                        exit_status: r.exit_status,
                        usage: r.usage,
                    });
                    None
                }
            }
        };
        if let Some(sid) = sid {
            log_job(job_id, format_args!("kill requested, SIGKILL after {kill_delay} s"));
            self.terminate(job_id, sid, kill_delay);
        }
        None
    }

    /// New limits from qalter: the sampler enforces cput and mem from its next sample, and
    /// the record tells the shepherd the walltime (and a restarted mom all three).
    fn modify_job(&self, job_id: &str, limits: Limits, run_count: u32) {
        let path = {
            let mut state = self.lock();
            let Some(job) = state.jobs.get_mut(job_id) else {
                if state.early_limits.len() >= EARLY_LIMITS_MAX {
                    state.early_limits.clear();
                }
                state.early_limits.insert(job_id.to_string(), (run_count, limits));
                log_job(job_id, format_args!("limits changed before the job's launch came"));
                return;
            };
            if matches!(job.phase, Phase::Sister | Phase::Ended(_)) || job.forgotten {
                return;
            }
            job.cput_limit = limits.cput;
            job.mem_limit = limits.mem;
            job.records.clone()
        };
        if let Err(e) = records::append(&path, &limits) {
            warn_job(job_id, format_args!("cannot record new limits: {e}"));
            return;
        }
        log_job(
            job_id,
            format_args!(
                "limits changed: walltime {:?}, cput {:?}, mem {:?}",
                limits.walltime, limits.cput, limits.mem
            ),
        );
    }

    fn forget_job(self: &Arc<Self>, job_id: &str) {
        let (path, sid) = {
            let mut state = self.lock();
            let Some(job) = state.jobs.get_mut(job_id) else { return };
            match job.phase {
                Phase::Starting | Phase::Running => {
                    job.forgotten = true;
                    (job.records.clone(), Some(job.session_id).filter(|s| *s > 0 && job.phase == Phase::Running))
                }
                Phase::Sister if self.hooks.any(HookEvent::ExecjobEnd) => {
                    // The job has ended on this node: its files go now (a later run of
                    // the same id makes its own), and its execjob_end hooks run.
                    let (path, launch) = (job.records.clone(), job.launch.clone());
                    state.jobs.remove(job_id);
                    drop(state);
                    self.remove_job_files(job_id, &path);
                    let mom = self.clone();
                    let job_id = job_id.to_string();
                    tokio::spawn(async move {
                        let data = hooks::job_data(&launch, 0, None);
                        mom.run_hooks(HookEvent::ExecjobEnd, &job_id, data).await;
                    });
                    return;
                }
                Phase::Ended(_) | Phase::Sister => {
                    let path = job.records.clone();
                    state.jobs.remove(job_id);
                    drop(state);
                    self.remove_job_files(job_id, &path);
                    return;
                }
            }
        };
        // Still running: it dies now and its shepherd's report removes the files.
        let _ = records::append(&path, &Forgotten);
        if let Some(sid) = sid {
            self.session_signals.send(sid, &[libc::SIGKILL]);
        }
        log_job(job_id, format_args!("forgotten while running: killed"));
    }

    fn remove_job_files(&self, job_id: &str, records: &Path) {
        let cfg = self.config();
        // The job's TMPDIR is under the base of its start, which a SIGHUP may have changed since.
        let tmpdir_base =
            records::read(records).get::<Spec>().map_or_else(|| cfg.tmpdir_base.clone(), |s| s.tmpdir_base);
        let _ = std::fs::remove_file(records);
        let _ = std::fs::remove_file(self.layout.script_path(job_id));
        let _ = std::fs::remove_file(layout::nodefile_path(&cfg.home, job_id));
        let _ = std::fs::remove_dir_all(layout::tmpdir_path(&tmpdir_base, job_id));
        tracing::debug!(object_type = "Job", object_name = job_id, "job files removed");
    }

    /// Checkpoints a running job with the site's `checkpoint_abort` script (on a thread of
    /// its own: the script may take its whole time limit) and, once it says the job is
    /// checkpointed, kills the job; answers the server's `ask` then. Without a script the
    /// answer is PBSE_NOSUP, as OpenPBS's mom without checkpoint support answers.
    fn checkpoint_abort(self: &Arc<Self>, job_id: String, ask: u64) {
        let cfg = self.config();
        let priv_dir = self.layout.priv_dir();
        let answer = move |mom: &Mom, job_id: String, code: Pbse| {
            let signal = "checkpoint_abort".to_string();
            mom.lock().emit(FromMom::SignalResult { job_id, signal, code: code.0, ask });
        };
        let facts = {
            let state = self.lock();
            state.jobs.get(&job_id).filter(|j| j.phase == Phase::Running && !j.forgotten).map(|j| {
                checkpoint::JobFacts {
                    job_id: job_id.clone(),
                    session_id: j.session_id,
                    uid: j.launch.uid,
                    gid: None,
                    login: j.launch.user.clone(),
                    owner: j.launch.user.clone(),
                    job_name: j.launch.job_name.clone(),
                    queue: j.launch.queue.clone(),
                }
            })
        };
        let Some(facts) = facts else {
            answer(self, job_id, Pbse::BADSTATE);
            return;
        };
        let config = std::fs::read_to_string(priv_dir.join("config")).unwrap_or_default();
        let Some(action) = checkpoint::configured(&config, &priv_dir) else {
            answer(self, job_id, Pbse::NOSUP);
            return;
        };
        log_job(&job_id, format_args!("req_holdjob: Checkpoint initiated."));
        let mom = self.clone();
        let dir = cfg.home.join("checkpoint").join(format!("{job_id}.CK"));
        tokio::task::spawn_blocking(move || match checkpoint::run(&action, &facts, &dir) {
            Ok(lines) => {
                for line in lines {
                    log_job(&job_id, format_args!("{line}"));
                }
                if mom.running_session(&job_id) == Some(facts.session_id) {
                    mom.session_signals.send(facts.session_id, &[libc::SIGKILL]);
                }
                answer(&mom, job_id, Pbse(0));
            }
            Err(failed) => {
                log_job(&job_id, format_args!("{}", failed.message));
                answer(&mom, job_id, failed.code);
            }
        });
    }

    /// qmsg: appends a line to the running job's stderr and/or stdout as its owner.
    fn message_job(&self, job_id: &str, text: &str, stdout: bool, stderr: bool) -> u32 {
        let records = {
            let state = self.lock();
            let Some(job) = state.jobs.get(job_id).filter(|j| !j.forgotten) else { return Pbse::UNKJOBID.0 };
            if !matches!(job.phase, Phase::Running) {
                return Pbse::BADSTATE.0;
            }
            job.records.clone()
        };
        let Some(spec) = records::read(&records).get::<Spec>() else { return Pbse::SYSTEM.0 };
        let code = crate::message::append(&spec.launch, stdout, stderr, text);
        if code != 0 {
            warn_job(job_id, format_args!("qmsg could not be written ({code})"));
        }
        code
    }

    /// SignalJob and SignalJobs: the PBSE code of each job's answer, in order. Every job's
    /// processes are found in one pass over `/proc`.
    fn signal_jobs(&self, job_ids: &[String], text: &str) -> Vec<u32> {
        let Some(signal) = signals::parse(text) else {
            // OpenPBS's mom answers PBSE_UNKSIG here, as the server does for a bad name.
            return vec![Pbse::UNKSIG.0; job_ids.len()];
        };
        if signal == JobSignal::Suspend && self.config().refuse_suspend {
            for job_id in job_ids {
                log_job(job_id, format_args!("suspend failed: refused by PBS_MOM_TEST_REFUSE_SUSPEND"));
            }
            return vec![Pbse::BADSTATE.0; job_ids.len()];
        }
        let now = now_ms();
        let prepared: Vec<Result<Option<ToSignal>, u32>> = {
            let mut state = self.lock();
            job_ids.iter().map(|job_id| Self::prepare_signal(&mut state, job_id, signal, now)).collect()
        };
        let mut sids = Vec::new();
        for to_signal in prepared.iter().flatten().flatten() {
            if let Some((path, clock)) = &to_signal.clock {
                // Before the signal: the shepherd's walltime watch reads it.
                let _ = records::append(path, clock);
            }
            sids.push(to_signal.sid);
        }
        procfs::signal_sessions(&sids, signals::number(signal));
        job_ids
            .iter()
            .zip(prepared)
            .map(|(job_id, prepared)| match prepared {
                Ok(Some(ToSignal { sid, .. })) => {
                    log_job(job_id, format_args!("signal {text} sent to session {sid}"));
                    0
                }
                Ok(None) => 0,
                Err(code) => code,
            })
            .collect()
    }

    /// A signal's bookkeeping for one job, under the state lock: `Err` with the answer when
    /// it cannot be signalled, `Ok(None)` for a sister (nothing of the job runs here),
    /// else the session to signal and the walltime clock record a suspend or resume
    /// changed.
    fn prepare_signal(state: &mut State, job_id: &str, signal: JobSignal, now: u64) -> Result<Option<ToSignal>, u32> {
        let Some(job) = state.jobs.get_mut(job_id) else { return Err(Pbse::UNKJOBID.0) };
        match job.phase {
            Phase::Sister => return Ok(None),
            Phase::Starting | Phase::Ended(_) => return Err(Pbse::BADSTATE.0),
            Phase::Running => {}
        }
        if job.forgotten {
            return Err(Pbse::UNKJOBID.0);
        }
        let clock = match signal {
            JobSignal::Suspend if job.clock.since_ms.is_none() => {
                job.clock.since_ms = Some(now);
                Some(job.clock)
            }
            JobSignal::Resume => job.clock.since_ms.take().map(|since| {
                job.clock.total_ms += now.saturating_sub(since);
                job.clock
            }),
            _ => None,
        };
        Ok(Some(ToSignal { sid: job.session_id, clock: clock.map(|c| (job.records.clone(), c)) }))
    }

    /// One usage sample of every running job: reports usage, enforces cput and mem, and
    /// notices adopted shepherds that ended without a note reaching us.
    pub fn sample(self: &Arc<Self>) {
        struct Target {
            job_id: String,
            run: u64,
            records: PathBuf,
            sid: i64,
            running: bool,
            adopted: Option<(i32, String)>,
            shepherd_pid: Option<i32>,
        }
        let targets: Vec<Target> = {
            let state = self.lock();
            state
                .jobs
                .iter()
                .filter(|(_, j)| matches!(j.phase, Phase::Starting | Phase::Running))
                .map(|(id, j)| Target {
                    job_id: id.clone(),
                    run: j.run,
                    records: j.records.clone(),
                    sid: j.session_id,
                    running: j.phase == Phase::Running && !j.forgotten,
                    adopted: j.shepherd_pid.filter(|_| j.adopted).map(|pid| (pid, j.shepherd_secret.clone())),
                    shepherd_pid: j.shepherd_pid,
                })
                .collect()
        };
        if targets.is_empty() {
            return;
        }
        let sids: Vec<i64> = targets.iter().filter(|t| t.running).map(|t| t.sid).collect();
        let procs = procfs::sessions(&sids);
        let gone: Vec<(String, Option<i32>)> = targets
            .iter()
            .filter(|t| {
                // A pid reused by another process is not the shepherd either.
                t.adopted.as_ref().is_some_and(|(pid, secret)| !adopt::holds_secret(*pid, secret))
                    || status_of(&records::read(&t.records), t.shepherd_pid).is_some()
            })
            .map(|t| (t.job_id.clone(), t.adopted.as_ref().map(|(pid, _)| *pid)))
            .collect();
        let now = now_ms();
        let mut kills = Vec::new();
        let mut samples = Vec::new();
        {
            let mut state = self.lock();
            for target in targets.iter().filter(|t| t.running) {
                let Some(job) = state.jobs.get_mut(&target.job_id) else { continue };
                if job.phase != Phase::Running || job.session_id != target.sid {
                    continue;
                }
                let list = procs.get(&target.sid).map(Vec::as_slice).unwrap_or_default();
                let ticks: u64 = list.iter().map(|p| p.cpu_ticks).sum::<u64>()
                    + list.iter().filter(|p| i64::from(p.pid) == target.sid).map(|p| p.child_ticks).sum::<u64>();
                let mem_kb: u64 = list.iter().map(|p| p.rss_pages * self.page_kb).sum();
                let vmem_kb: u64 = list.iter().map(|p| p.vsize / 1024).sum();
                let usage = &mut job.usage;
                usage.cput = usage.cput.max(ticks / self.ticks_per_sec);
                usage.mem_kb = usage.mem_kb.max(mem_kb);
                usage.vmem_kb = usage.vmem_kb.max(vmem_kb);
                usage.ncpus = job.ncpus;
                usage.walltime = job.clock.walltime_ms(job.start_ms, now) / 1000;
                if let Some((then, then_ticks)) = job.last_cpu
                    && now > then
                {
                    let cpu_ms = ticks.saturating_sub(then_ticks) * 1000 / self.ticks_per_sec;
                    usage.cpupercent = u32::try_from(cpu_ms * 100 / (now - then)).unwrap_or(u32::MAX);
                }
                job.last_cpu = Some((now, ticks));
                if job.kill_reason.is_none() {
                    let reason = match (job.cput_limit, job.mem_limit) {
                        (Some(limit), _) if usage.cput > limit => Some(KillReason {
                            exit_status: JOB_EXEC_KILL_CPUT,
                            message: format!("cput {} exceeded limit {limit}", usage.cput),
                        }),
                        (_, Some(limit)) if mem_kb.saturating_mul(1024) > limit => Some(KillReason {
                            exit_status: JOB_EXEC_KILL_MEM,
                            message: format!("mem {mem_kb}kb exceeded limit {}kb", limit / 1024),
                        }),
                        _ => None,
                    };
                    if let Some(reason) = reason {
                        job.kill_reason = Some(reason.clone());
                        kills.push((target.job_id.clone(), job.records.clone(), target.sid, reason));
                    }
                }
                let usage = job.usage;
                samples.push((target.job_id.clone(), target.run, job.records.clone(), usage));
                state.emit(FromMom::JobUsage { job_id: target.job_id.clone(), usage });
            }
        }
        let mut sizes = Vec::new();
        for (job_id, run, path, usage) in samples {
            if let Ok(size) = records::append(&path, &usage) {
                sizes.push((job_id, run, size));
            }
        }
        self.compact_records(sizes);
        for (job_id, path, sid, reason) in kills {
            // Before the SIGTERM: the shepherd writes the message to the job's stderr from
            // this record once the job is gone.
            let _ = records::append(&path, &reason);
            log_job(&job_id, format_args!("{}", reason.message));
            let grace = u32::try_from(shepherd::LIMIT_KILL_GRACE.as_secs()).unwrap_or(2);
            self.terminate(&job_id, sid, grace);
        }
        for (job_id, pid) in gone {
            self.shepherd_exited(&job_id, pid);
        }
    }

    /// Compacts the records files that grew by [`COMPACT_AFTER`] since their last
    /// compaction; `sizes` are (job id, run, size after the latest append).
    fn compact_records(&self, sizes: Vec<(String, u64, u64)>) {
        if sizes.is_empty() {
            return;
        }
        // Under the state lock: a forgotten job's file may be removed, or a new run of the
        // same id create its own, once the lock is free, and compaction renames a copy of
        // the old contents over the path. It is rare (one per job per ~500 samples) and
        // reads a small file; only a shepherd's single append can make it wait.
        let mut state = self.lock();
        for (job_id, run, size) in sizes {
            let Some(job) = state.jobs.get_mut(&job_id).filter(|j| j.run == run) else { continue };
            if job.records_base == 0 {
                job.records_base = size;
            } else if size > job.records_base.saturating_add(COMPACT_AFTER) {
                match records::compact(&job.records) {
                    Ok(size) => job.records_base = size,
                    Err(e) => warn_job(&job_id, format_args!("cannot compact {}: {e}", job.records.display())),
                }
            }
        }
    }

    /// Receives shepherd notes until the socket fails.
    pub async fn serve_notes(self: Arc<Self>, sock: tokio::net::UnixDatagram) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match sock.recv(&mut buf).await {
                Ok(n) => match serde_json::from_slice::<Note>(buf.get(..n).unwrap_or_default()) {
                    Ok(note) => self.on_note(note),
                    Err(e) => tracing::debug!("ignored a malformed shepherd note: {e}"),
                },
                Err(e) => {
                    tracing::error!("shepherd socket failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// Samples usage every `sample_period`.
    pub async fn sample_loop(self: Arc<Self>) {
        let mut period = self.config().sample_period;
        let mut interval = tokio::time::interval(period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            // A SIGHUP may have given a new period.
            let now = self.config().sample_period;
            if now != period {
                period = now;
                interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
                interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            }
            let mom = self.clone();
            let _ = tokio::task::spawn_blocking(move || mom.sample()).await;
        }
    }
}

/// The end record of the shepherd `pid` (of any shepherd, if unknown): one of an earlier
/// run of the same job id, appended late, must not end this run.
fn status_of(recs: &records::Records, pid: Option<i32>) -> Option<Status> {
    recs.find(|s: &Status| pid.is_none_or(|p| s.shepherd_pid == p))
}
