//! A pool of warm Python interpreters, each running the runner and one event at a time, as
//! root or as one job owner (`user=pbsuser`).
//!
//! Events wait in one queue, in order. At most `size` drivers run at once, each with one
//! interpreter: a driver takes the first waiting event and the others of the same owner
//! that wait behind it (up to a bound of events and bytes) and writes them to its
//! interpreter in one write, then reads their answers in order, so events that arrive
//! together cost the interpreter one wakeup, not one each. Idle interpreters are kept per
//! owner (root is one): an interpreter only ever runs events of the identity it was
//! started as, never a user's event in root's interpreter nor one user's in another's.
//! One started as a job's owner runs one event and is then killed with every process of
//! its group: its owner may signal, trace or change a process of their own, so it is
//! never kept idle, never given another job's event, and never outlives the event it ran.
//! At most `size` root interpreters are kept idle; past that the least recently used go.
//! An interpreter is sent a hook's body once; later events of the same body name the hook
//! alone. An interpreter that does not answer an
//! event in its alarm and a grace period, that dies, or that writes something that is not
//! an answer, is killed and dropped, that event fails, and the events written behind it
//! wait again for the next interpreter: one bad hook never fails another's event nor
//! takes the pool down. What an interpreter writes is read in bounded lines
//! ([`MAX_ANSWER_LINE`], [`MAX_LOG_LINE`]): one running as a job's owner cannot make the
//! daemon hold an endless line.
//!
//! A pool grows on sustained demand, not on a burst: an event that finds its owner's
//! interpreters all busy waits up to [`GROW_AFTER`] for one of them before another is
//! started, and one whose owner has an interpreter starting waits for that one. Starting
//! Python costs tens of milliseconds of CPU, hundreds of times what a short hook's event
//! costs a warm interpreter, so a burst of events served by the interpreters already
//! running is both sooner answered and cheaper. An interpreter counts as started once it
//! has answered the runner's `ready` request.

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Notify, OnceCell, oneshot};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use crate::protocol::{Answer, Defs, Event, Query, QueryReply};

/// How long past its alarm an interpreter may take to answer before it is killed: the
/// runner stops a hook at its alarm itself, so this covers only a runner that cannot.
pub const ALARM_GRACE: Duration = Duration::from_secs(2);

/// How long an event whose owner's interpreters are all busy waits for one of them
/// before another interpreter is started for it.
pub const GROW_AFTER: Duration = Duration::from_millis(20);

/// How long an interpreter may take to start and answer `ready`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest line an interpreter may write on its stdout (an answer or a query): as much as
/// a client's request frame may carry (16 MiB), since an answer changes no more than a
/// request could (a periodic hook's changes to many jobs included). A longer one is a
/// broken interpreter's, which is killed.
pub const MAX_ANSWER_LINE: usize = 16 << 20;

/// Longest line of what hooks print (stderr) that reaches the daemon's log; the rest of a
/// longer line is dropped, and the log says so.
pub const MAX_LOG_LINE: usize = 16 * 1024;

/// Most events one write to an interpreter carries.
const MAX_BATCH: usize = 32;

/// Most bytes of events one write carries past its first event: well under a pipe's
/// capacity (64 KiB), so the write never waits for the interpreter, which may be writing
/// the first answers meanwhile.
const MAX_BATCH_BYTES: usize = 32 * 1024;

/// Answers a running hook's questions (`pbs.server().jobs()`, `.queue(name)`).
pub type Queries = Arc<dyn Fn(&Query) -> QueryReply + Send + Sync>;

/// Whom an interpreter runs as when not root: a job's owner as the caller resolved and
/// checked it. Its supplementary groups are the owner's (`getgrouplist` of `name` and
/// `gid`), looked up when an interpreter is started.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The uid it runs with (real, effective and saved).
    pub uid: u32,
    /// The gid it runs with (the job's group).
    pub gid: u32,
    /// The user name: `USER`, `LOGNAME` and the supplementary groups.
    pub name: String,
    /// The home directory: `HOME`, and the working directory when it can enter it (else `/`).
    pub home: PathBuf,
}

/// Why an event got no answer from its hook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The interpreter did not answer in the hook's alarm and the grace period.
    #[error("alarm")]
    Alarm,
    /// The interpreter died or answered something else.
    #[error("interpreter failed: {0}")]
    Crashed(String),
    /// No interpreter could be started.
    #[error("no Python interpreter: {0}")]
    Unavailable(String),
}

/// An event waiting for an interpreter, and where its answer goes.
struct Waiting {
    owner: Option<Owner>,
    event: Event,
    queries: Option<Queries>,
    answer: oneshot::Sender<Result<Answer, RunError>>,
}

/// A batch's last answer and where it goes: sent only once its interpreter is idle again,
/// so the caller's next event finds that interpreter warm instead of starting another.
type Answered = (oneshot::Sender<Result<Answer, RunError>>, Answer);

/// The events waiting, in order, and how many drivers run.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    drivers: usize,
}

impl Queue {
    /// The first waiting event and those of the same owner behind it, in order, at most
    /// `MAX_BATCH`; an event of a job's owner alone, since its interpreter runs only it.
    fn take_batch(&mut self) -> Vec<Waiting> {
        let Some(first) = self.waiting.pop_front() else { return Vec::new() };
        if first.owner.is_some() {
            return vec![first];
        }
        let mut batch = vec![first];
        let mut index = 0;
        while index < self.waiting.len() && batch.len() < MAX_BATCH {
            if self.waiting[index].owner == batch[0].owner {
                if let Some(next) = self.waiting.remove(index) {
                    batch.push(next);
                }
            } else {
                index += 1;
            }
        }
        batch
    }

    /// Puts `events` back at the front, in their order.
    fn put_back(&mut self, events: impl DoubleEndedIterator<Item = Waiting>) {
        for event in events.rev() {
            self.waiting.push_front(event);
        }
    }
}

struct Interpreter {
    /// Whom it runs as (`None`: root, the daemon itself).
    owner: Option<Owner>,
    child: Child,
    stdin: ChildStdin,
    /// Its answers and queries, one a line.
    stdout: FramedRead<ChildStdout, LinesCodec>,
    /// The definitions generation it was last sent.
    defs_sent: Option<u64>,
    /// The body it was last sent of each hook: the runner keeps it, so an event of the same
    /// body does not carry it again.
    scripts: HashMap<String, Arc<str>>,
}

struct Inner {
    runner: PathBuf,
    python: Option<PathBuf>,
    /// The interpreter's real executable, found once (a shim such as pyenv's costs a
    /// shell per start).
    resolved: OnceCell<Result<PathBuf, String>>,
    idle: Mutex<Idle>,
    /// Told whenever an interpreter is put back idle or the counts of those starting or
    /// busy change.
    idle_again: Notify,
    /// The pool's size: interpreters running at once, and kept idle.
    size: usize,
    queue: Mutex<Queue>,
    /// The generation and line of the current definitions.
    defs: Mutex<Option<(u64, Arc<str>)>>,
    next_id: AtomicU64,
    label: &'static str,
}

/// A pool of hook interpreters (cheap to clone).
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    /// A pool of at most `size` interpreters running `runner` (installed by
    /// [`crate::files::install`]) with `python` (`python3` from `PATH` when `None`). `label` names
    /// the daemon in the log.
    pub fn new(runner: PathBuf, python: Option<PathBuf>, size: usize, label: &'static str) -> Pool {
        Pool {
            inner: Arc::new(Inner {
                runner,
                python,
                resolved: OnceCell::new(),
                idle: Mutex::new(Idle::default()),
                idle_again: Notify::new(),
                size: size.max(1),
                queue: Mutex::new(Queue::default()),
                defs: Mutex::new(None),
                next_id: AtomicU64::new(1),
                label,
            }),
        }
    }

    /// How many idle interpreters are kept, and of how many distinct users (none: an
    /// owner's interpreter is never kept).
    pub fn idle_counts(&self) -> (usize, usize) {
        let idle = lock(&self.inner.idle);
        (idle.total(), idle.groups.iter().filter(|g| g.owner.is_some()).count())
    }

    /// Sets the definitions interpreters need, as of `generation`; each interpreter gets
    /// them before its next event if it has older ones.
    pub fn set_defs(&self, generation: u64, defs: &Defs) {
        let mut line = match serde_json::to_string(&DefsLine { op: "defs", defs }) {
            Ok(line) => line,
            Err(e) => {
                tracing::error!(error = %e, "hook definitions could not be written");
                return;
            }
        };
        line.push('\n');
        *lock(&self.inner.defs) = Some((generation, line.into()));
    }

    /// The generation of the definitions the pool has, if any.
    pub fn defs_generation(&self) -> Option<u64> {
        lock(&self.inner.defs).as_ref().map(|(generation, _)| *generation)
    }

    /// Starts one interpreter in the background if none is idle, so the first event after
    /// a hook is set up does not wait for Python to start.
    /// Only root's interpreters are warmed: a user's starts with that user's first event.
    pub fn warm(&self) {
        {
            let mut idle = lock(&self.inner.idle);
            if idle.idle_or_busy(None) + idle.starting(None) > 0 {
                return;
            }
            let mut queue = lock(&self.inner.queue);
            if queue.drivers >= self.inner.size {
                return;
            }
            queue.drivers += 1;
            idle.start(None);
        }
        let pool = self.clone();
        tokio::spawn(async move {
            match pool.spawn(None).await {
                Ok(interpreter) => {
                    lock(&pool.inner.idle).started(None);
                    pool.put_idle(interpreter);
                }
                Err(e) => {
                    pool.counted(|idle| idle.not_started(None));
                    tracing::warn!(error = %e, "hook interpreter could not be started");
                }
            }
            // Events that came meanwhile are this driver's.
            pool.drive().await;
        });
    }

    /// Runs one event as root and gives the hook's answer.
    pub async fn run(&self, event: Event) -> Result<Answer, RunError> {
        self.submit(None, event, None).await
    }

    /// Runs one event as `owner` (root when `None`) and gives the hook's answer. The
    /// event goes only to an interpreter started as exactly that owner.
    pub async fn run_as(&self, owner: Option<&Owner>, event: Event) -> Result<Answer, RunError> {
        self.submit(owner.cloned(), event, None).await
    }

    /// Runs one event (as root) whose hook may ask the daemon questions while it runs (a
    /// periodic hook's `pbs.server().jobs()`, any hook's `pbs.server().queue()`):
    /// `queries` answers each.
    pub async fn run_with_queries(&self, event: Event, queries: Queries) -> Result<Answer, RunError> {
        self.submit(None, event, Some(queries)).await
    }

    /// Queues the event and, when fewer than `size` drivers run, starts one; waits for the
    /// answer. The driver is a task of its own, so an event written to an interpreter is
    /// answered even if the caller that brought it stops waiting.
    async fn submit(&self, owner: Option<Owner>, event: Event, queries: Option<Queries>) -> Result<Answer, RunError> {
        let (answer, answered) = oneshot::channel();
        let start_driver = {
            let mut queue = lock(&self.inner.queue);
            queue.waiting.push_back(Waiting { owner, event, queries, answer });
            let start = queue.drivers < self.inner.size;
            if start {
                queue.drivers += 1;
            }
            start
        };
        if start_driver {
            let pool = self.clone();
            tokio::spawn(async move { pool.drive().await });
        }
        answered.await.unwrap_or_else(|_| Err(RunError::Crashed("the hook pool stopped".into())))
    }

    /// One driver: takes batches of waiting events until none wait, each to an idle
    /// interpreter of its owner, or to a new one when its owner has none or all of its
    /// owner's have been busy for [`GROW_AFTER`].
    async fn drive(self) {
        // Since when the events of this owner have found its interpreters all busy.
        let mut all_busy_since: Option<(Option<Owner>, Instant)> = None;
        loop {
            // Armed before the idle interpreters are looked at, so one put back between
            // that look and the wait below is not missed.
            let idle_again = self.inner.idle_again.notified();
            tokio::pin!(idle_again);
            idle_again.as_mut().enable();
            let mut batch = {
                let mut queue = lock(&self.inner.queue);
                let batch = queue.take_batch();
                if batch.is_empty() {
                    queue.drivers -= 1;
                    return;
                }
                batch
            };
            let owner = batch[0].owner.clone();
            if owner.is_some() {
                self.run_once_as_owner(batch).await;
                continue;
            }
            let mut interpreter = match self.take_idle(owner.as_ref()) {
                Some(interpreter) => interpreter,
                None => {
                    let since = match &all_busy_since {
                        Some((busy_owner, since)) if *busy_owner == owner => *since,
                        _ => Instant::now(),
                    };
                    let left = GROW_AFTER.saturating_sub(since.elapsed());
                    let wait = {
                        let mut idle = lock(&self.inner.idle);
                        if idle.starting(owner.as_ref()) > 0 {
                            // Another start would take as long as the one under way.
                            Some((None, START_TIMEOUT))
                        } else if idle.idle_or_busy(owner.as_ref()) > 0 && !left.is_zero() {
                            Some((Some((owner.clone(), since)), left))
                        } else {
                            idle.start(owner.as_ref());
                            None
                        }
                    };
                    if let Some((busy_since, wait)) = wait {
                        // The events wait again, first in line: the busy interpreter's
                        // driver takes them when it is done, or this one when woken.
                        all_busy_since = busy_since;
                        lock(&self.inner.queue).put_back(batch.into_iter());
                        let _ = tokio::time::timeout(wait, idle_again).await;
                        continue;
                    }
                    match self.start_for(owner.clone(), batch).await {
                        Some((interpreter, waiting)) => {
                            batch = waiting;
                            interpreter
                        }
                        None => continue,
                    }
                }
            };
            all_busy_since = None;
            match self.run_batch(&mut interpreter, batch).await {
                Ok(last) => {
                    self.put_idle(interpreter);
                    if let Some((answer, result)) = last {
                        let _ = answer.send(Ok(result));
                    }
                }
                Err(unrun) => {
                    let _ = interpreter.child.start_kill();
                    self.counted(|idle| idle.gone(owner.as_ref()));
                    lock(&self.inner.queue).put_back(unrun.into_iter());
                }
            }
        }
    }

    /// Runs one event of a job's owner in an interpreter started for it alone, then kills
    /// that interpreter's process group, whatever the event's outcome: nothing the owner did
    /// to it can reach another event, and nothing it started goes on after it.
    async fn run_once_as_owner(&self, batch: Vec<Waiting>) {
        let owner = batch.first().and_then(|w| w.owner.clone());
        lock(&self.inner.idle).start(owner.as_ref());
        let Some((mut interpreter, batch)) = self.start_for(owner.clone(), batch).await else { return };
        let outcome = self.run_batch(&mut interpreter, batch).await;
        kill_group(&mut interpreter.child);
        let _ = interpreter.child.wait().await;
        self.counted(|idle| idle.gone(owner.as_ref()));
        match outcome {
            Ok(Some((answer, result))) => {
                let _ = answer.send(Ok(result));
            }
            Ok(None) => {}
            // One event, so none was left unrun; any that were wait again.
            Err(unrun) => lock(&self.inner.queue).put_back(unrun.into_iter()),
        }
    }

    /// Starts an interpreter of `owner` for `batch`, counted as starting by the caller:
    /// it and the batch, or, when none could be started, every event of the batch told why.
    async fn start_for(&self, owner: Option<Owner>, batch: Vec<Waiting>) -> Option<(Interpreter, Vec<Waiting>)> {
        match self.spawn(owner.clone()).await {
            Ok(interpreter) => {
                lock(&self.inner.idle).started(owner.as_ref());
                Some((interpreter, batch))
            }
            Err(e) => {
                self.counted(|idle| idle.not_started(owner.as_ref()));
                for waiting in batch {
                    let _ = waiting.answer.send(Err(e.clone()));
                }
                None
            }
        }
    }

    /// Changes the interpreters' counts and wakes the drivers waiting on them.
    fn counted(&self, change: impl FnOnce(&mut Idle)) {
        change(&mut lock(&self.inner.idle));
        self.inner.idle_again.notify_waiters();
    }

    /// An idle interpreter of exactly `owner` that is still alive: one that died while
    /// idle (killed, out of memory) is dropped here, so its death never fails an event it
    /// never saw.
    fn take_idle(&self, owner: Option<&Owner>) -> Option<Interpreter> {
        let mut idle = lock(&self.inner.idle);
        while let Some(mut interpreter) = idle.take(owner) {
            if matches!(interpreter.child.try_wait(), Ok(None)) {
                return Some(interpreter);
            }
            idle.gone(owner);
            tracing::warn!(object_type = "Hook", object_name = self.inner.label, "an idle hook interpreter had died");
        }
        None
    }

    /// Keeps `interpreter` idle under its owner, and lets go of the least recently used
    /// beyond the pool's bounds (killed when dropped, outside the lock).
    fn put_idle(&self, interpreter: Interpreter) {
        let evicted = {
            let mut idle = lock(&self.inner.idle);
            idle.put(interpreter);
            idle.trim(self.inner.size)
        };
        self.inner.idle_again.notify_waiters();
        drop(evicted);
    }

    /// Writes `batch` to `interpreter` in one write (what fits; the rest waits again) and
    /// hands each answer to its event as it comes. On a failure the failing event gets
    /// it, and the events written behind it, which never ran, are given back to wait
    /// again: the interpreter is then to be killed.
    async fn run_batch(
        &self,
        interpreter: &mut Interpreter,
        batch: Vec<Waiting>,
    ) -> Result<Option<Answered>, Vec<Waiting>> {
        let defs = lock(&self.inner.defs).clone();
        let mut out = Vec::new();
        if let Some((generation, line)) = defs {
            if interpreter.defs_sent != Some(generation) {
                out.extend_from_slice(line.as_bytes());
                interpreter.defs_sent = Some(generation);
            }
        }
        let first_at = out.len();
        let mut written = VecDeque::with_capacity(batch.len());
        let mut batch = batch.into_iter();
        while let Some(mut waiting) = batch.next() {
            waiting.event.id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
            let known = interpreter.scripts.get(&waiting.event.hook).is_some_and(|s| *s == waiting.event.script);
            let line =
                EventLine { op: "event", event: &waiting.event, script: (!known).then_some(&*waiting.event.script) };
            let before = out.len();
            if let Err(e) = serde_json::to_writer(&mut out, &line) {
                out.truncate(before);
                let _ = waiting.answer.send(Err(RunError::Crashed(format!("event not written: {e}"))));
                continue;
            }
            out.push(b'\n');
            if !written.is_empty() && out.len() - first_at > MAX_BATCH_BYTES {
                // Past the bound: it and the rest wait for the next write.
                out.truncate(before);
                let mut rest = vec![waiting];
                rest.extend(batch);
                lock(&self.inner.queue).put_back(rest.into_iter());
                break;
            }
            if !known {
                interpreter.scripts.insert(waiting.event.hook.clone(), waiting.event.script.clone());
            }
            written.push_back(waiting);
        }
        let Some(first) = written.front() else { return Ok(None) };
        let broken = |e: std::io::Error| RunError::Crashed(e.to_string());
        let deadline = Duration::from_secs(first.event.alarm.max(1)) + ALARM_GRACE;
        let wrote = async {
            interpreter.stdin.write_all(&out).await.map_err(broken)?;
            interpreter.stdin.flush().await.map_err(broken)
        };
        match tokio::time::timeout(deadline, wrote).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(fail_first(written, e)),
            Err(_) => return Err(fail_first(written, RunError::Alarm)),
        }
        // The runner takes them in order: each one's alarm runs from the answer before it.
        while let Some(waiting) = written.pop_front() {
            let deadline = Duration::from_secs(waiting.event.alarm.max(1)) + ALARM_GRACE;
            let answered = tokio::time::timeout(deadline, Self::answer(interpreter, &waiting)).await;
            let result = match answered {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(e)) => Err(e),
                Err(_) => {
                    tracing::warn!(hook = %waiting.event.hook, "hook interpreter did not answer in time: killed");
                    Err(RunError::Alarm)
                }
            };
            match result {
                // The last answer waits until the interpreter is idle again (see `Answered`).
                Ok(answer) if written.is_empty() => return Ok(Some((waiting.answer, answer))),
                Ok(answer) => {
                    let _ = waiting.answer.send(Ok(answer));
                }
                Err(e) => {
                    let _ = waiting.answer.send(Err(e));
                    return Err(written.into());
                }
            }
        }
        Ok(None)
    }

    /// Reads the answer to `waiting`'s event, answering the hook's questions meanwhile.
    async fn answer(interpreter: &mut Interpreter, waiting: &Waiting) -> Result<Answer, RunError> {
        let broken = |e: std::io::Error| RunError::Crashed(e.to_string());
        let answer = loop {
            let line = Self::next_line(interpreter).await.map_err(RunError::Crashed)?;
            let value: serde_json::Value = serde_json::from_str(&line)
                .map_err(|e| RunError::Crashed(format!("unreadable answer ({e}): {}", excerpt(&line))))?;
            if value.get("op").and_then(serde_json::Value::as_str) != Some("query") {
                break serde_json::from_value::<Answer>(value)
                    .map_err(|e| RunError::Crashed(format!("unreadable answer ({e}): {}", excerpt(&line))))?;
            }
            let query: Query =
                serde_json::from_value(value).map_err(|e| RunError::Crashed(format!("bad query: {e}")))?;
            let reply = waiting.queries.as_ref().map(|queries| queries(&query)).unwrap_or_default();
            let mut out = serde_json::to_vec(&ReplyLine { op: "reply", reply: &reply })
                .map_err(|e| RunError::Crashed(format!("reply not written: {e}")))?;
            out.push(b'\n');
            interpreter.stdin.write_all(&out).await.map_err(broken)?;
            interpreter.stdin.flush().await.map_err(broken)?;
        };
        if answer.id != Some(waiting.event.id) {
            return Err(RunError::Crashed(format!("answer to event {:?}, not {}", answer.id, waiting.event.id)));
        }
        Ok(answer)
    }

    async fn python(&self) -> Result<PathBuf, RunError> {
        let resolved = self
            .inner
            .resolved
            .get_or_init(|| async {
                let python = self.inner.python.clone().unwrap_or_else(|| PathBuf::from("python3"));
                let output = Command::new(&python)
                    .args(["-I", "-c", "import sys; print(sys.executable)"])
                    .stdin(Stdio::null())
                    .output()
                    .await
                    .map_err(|e| format!("{}: {e}", python.display()))?;
                let executable = String::from_utf8_lossy(&output.stdout).trim().to_string();
                if !output.status.success() || executable.is_empty() {
                    return Err(format!("{} does not run", python.display()));
                }
                Ok(PathBuf::from(executable))
            })
            .await;
        resolved.clone().map_err(RunError::Unavailable)
    }

    async fn spawn(&self, owner: Option<Owner>) -> Result<Interpreter, RunError> {
        let python = self.python().await?;
        let mut command = Command::new(&python);
        command
            .arg("-I")
            .arg("-u")
            .arg(&self.inner.runner)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(owner) = &owner {
            become_owner(&mut command, owner).await?;
            // A group of its own, which `kill_group` ends whole after its one event.
            command.process_group(0);
        }
        let mut child = command.spawn().map_err(|e| match &owner {
            Some(owner) if e.kind() == std::io::ErrorKind::PermissionDenied => RunError::Unavailable(format!(
                "{}: {e}: user {} cannot run it (PBS_PYTHON must be a Python every job owner can run)",
                python.display(),
                owner.name
            )),
            _ => RunError::Unavailable(format!("{}: {e}", python.display())),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(RunError::Unavailable("no pipes to the interpreter".into()));
        };
        let label = self.inner.label;
        let pid = child.id().unwrap_or(0);
        let who = owner.as_ref().map_or_else(String::new, |o| format!(" as {}", o.name));
        // What hooks print (and tracebacks) goes to the daemon's log, line by line.
        tokio::spawn(async move {
            log_lines(stderr, |line| {
                tracing::info!(event = "0100", object_type = "Hook", object_name = label, "[pid {pid}{who}] {line}");
            })
            .await;
        });
        let mut interpreter = Interpreter {
            owner,
            child,
            stdin,
            stdout: FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_ANSWER_LINE)),
            defs_sent: None,
            scripts: HashMap::new(),
        };
        match tokio::time::timeout(START_TIMEOUT, Self::ready(&mut interpreter)).await {
            Ok(Ok(())) => Ok(interpreter),
            Ok(Err(e)) => Err(RunError::Unavailable(format!("{}: {e}", python.display()))),
            Err(_) => Err(RunError::Unavailable(format!("{}: not ready in {START_TIMEOUT:?}", python.display()))),
        }
    }

    /// Asks a new interpreter whether it is ready and waits for its answer: until then
    /// Python is still starting (see the module's documentation).
    async fn ready(interpreter: &mut Interpreter) -> Result<(), String> {
        interpreter.stdin.write_all(b"{\"op\":\"ready\",\"id\":0}\n").await.map_err(|e| e.to_string())?;
        interpreter.stdin.flush().await.map_err(|e| e.to_string())?;
        let line = Self::next_line(interpreter).await?;
        match serde_json::from_str::<Answer>(&line) {
            Ok(answer) if answer.id == Some(0) && answer.accepted => Ok(()),
            _ => Err(format!("unexpected answer to ready: {}", excerpt(&line))),
        }
    }

    /// The next line the interpreter wrote, without its newline; an error once it exited,
    /// broke its pipe, or wrote a line longer than [`MAX_ANSWER_LINE`].
    async fn next_line(interpreter: &mut Interpreter) -> Result<String, String> {
        match interpreter.stdout.next().await {
            Some(Ok(line)) => Ok(line),
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                Err(format!("wrote a line longer than {MAX_ANSWER_LINE} bytes"))
            }
            Some(Err(LinesCodecError::Io(e))) => Err(e.to_string()),
            None => Err("the interpreter exited".into()),
        }
    }
}

/// The start of a line an interpreter wrote, for an error message: a log line, not the
/// megabytes a broken interpreter may have written.
fn excerpt(line: &str) -> String {
    const SHOWN: usize = 200;
    match line.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}... ({} bytes)", &line[..end], line.len()),
        None => line.trim_end().to_string(),
    }
}

/// Hands each line `from` writes to `log` (bytes that are not UTF-8 replaced), a line
/// longer than [`MAX_LOG_LINE`] as a note that it was not logged, until `from` ends.
/// Unlike a `FramedRead`, which ends at its first error, this goes on after a long line:
/// the interpreter must never find its stderr closed.
async fn log_lines(mut from: impl tokio::io::AsyncRead + Unpin, mut log: impl FnMut(&str)) {
    use tokio::io::AsyncReadExt;
    use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};
    let mut codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), MAX_LOG_LINE);
    let mut buf = bytes::BytesMut::with_capacity(4096);
    let mut log_bytes = |line: &[u8]| log(String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).as_ref());
    loop {
        match codec.decode(&mut buf) {
            Ok(Some(line)) => log_bytes(&line),
            // The codec drops the rest of that line and goes on with the next.
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                log_bytes(format!("(a line longer than {MAX_LOG_LINE} bytes, not logged)").as_bytes());
            }
            Err(AnyDelimiterCodecError::Io(_)) => return,
            Ok(None) => match from.read_buf(&mut buf).await {
                Ok(0) | Err(_) => {
                    if let Ok(Some(line)) = codec.decode_eof(&mut buf) {
                        log_bytes(&line);
                    }
                    return;
                }
                Ok(_) => {}
            },
        }
    }
}

/// Kills an owner's interpreter and every process still in its group (what its hook
/// started and left running).
fn kill_group(child: &mut Child) {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        // SAFETY: a plain system call; the group is the interpreter's own (`spawn`).
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.start_kill();
}

/// Makes `command` run as `owner`: its supplementary groups (`getgrouplist`, as
/// `initgroups` would set them, with `gid` among them), then `gid`, then `uid`, all set
/// in the child before it execs, which then enters the owner's home (or `/`). Its
/// environment names the owner (`HOME`, `USER`, `LOGNAME`).
async fn become_owner(command: &mut Command, owner: &Owner) -> Result<(), RunError> {
    let name = CString::new(owner.name.as_bytes())
        .map_err(|_| RunError::Unavailable(format!("user name {:?} holds a NUL", owner.name)))?;
    let gid = owner.gid;
    let lookup = tokio::task::spawn_blocking(move || nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(gid)));
    let mut groups: Vec<libc::gid_t> = match lookup.await {
        Ok(Ok(groups)) => groups.into_iter().map(|g| g.as_raw()).collect(),
        Ok(Err(e)) => {
            return Err(RunError::Unavailable(format!("the groups of user {} cannot be read: {e}", owner.name)));
        }
        Err(e) => return Err(RunError::Unavailable(format!("the groups of user {}: {e}", owner.name))),
    };
    if !groups.contains(&gid) {
        groups.push(gid);
    }
    let home = CString::new(owner.home.as_os_str().as_bytes()).ok();
    let uid = owner.uid;
    command.env("HOME", &owner.home).env("USER", &owner.name).env("LOGNAME", &owner.name);
    // Runs in the child between fork and exec: only system calls on memory prepared
    // before the fork (no allocation, no lock).
    let setup = move || -> std::io::Result<()> {
        // SAFETY: `groups` is a live vector of `groups.len()` gids.
        if unsafe { libc::setgroups(groups.len(), groups.as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: plain system calls with integer arguments.
        if unsafe { libc::setgid(gid) } != 0 || unsafe { libc::setuid(uid) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: as above; a user must not be able to get root back.
        if uid != 0 && (unsafe { libc::geteuid() } != uid || unsafe { libc::setuid(0) } == 0) {
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        }
        // SAFETY: `home` is a live NUL-terminated string, and so is "/".
        let entered = home.as_ref().is_some_and(|h| unsafe { libc::chdir(h.as_ptr()) } == 0);
        // SAFETY: as above.
        if !entered && unsafe { libc::chdir(c"/".as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: `setup` is safe to run between fork and exec (see above).
    unsafe {
        command.pre_exec(setup);
    }
    Ok(())
}

/// The idle interpreters, by owner (root is the `None` owner), each group with when it
/// was last used.
#[derive(Default)]
struct Idle {
    groups: Vec<IdleGroup>,
    clock: u64,
    /// How many interpreters of each owner are being started (until they answer `ready`).
    starting: HashMap<Option<Owner>, usize>,
    /// How many interpreters of each owner are running events, out of the idle groups.
    busy: HashMap<Option<Owner>, usize>,
}

struct IdleGroup {
    owner: Option<Owner>,
    interpreters: Vec<Interpreter>,
    used: u64,
}

impl Idle {
    fn total(&self) -> usize {
        self.groups.iter().map(|g| g.interpreters.len()).sum()
    }

    /// Interpreters of exactly `owner` being started.
    fn starting(&self, owner: Option<&Owner>) -> usize {
        self.starting.get(&owner.cloned()).copied().unwrap_or(0)
    }

    /// Started interpreters of exactly `owner`, idle or busy.
    fn idle_or_busy(&self, owner: Option<&Owner>) -> usize {
        let idle = self.groups.iter().find(|g| g.owner.as_ref() == owner).map_or(0, |g| g.interpreters.len());
        idle + self.busy.get(&owner.cloned()).copied().unwrap_or(0)
    }

    /// An interpreter of `owner` is being started.
    fn start(&mut self, owner: Option<&Owner>) {
        *self.starting.entry(owner.cloned()).or_default() += 1;
    }

    /// An interpreter of `owner` being started is up, and busy until it is put idle.
    fn started(&mut self, owner: Option<&Owner>) {
        decrement(&mut self.starting, owner);
        *self.busy.entry(owner.cloned()).or_default() += 1;
    }

    /// An interpreter of `owner` being started did not start.
    fn not_started(&mut self, owner: Option<&Owner>) {
        decrement(&mut self.starting, owner);
    }

    /// A busy interpreter of `owner` is gone (killed, or found dead).
    fn gone(&mut self, owner: Option<&Owner>) {
        decrement(&mut self.busy, owner);
    }

    /// One idle interpreter started as exactly `owner`, busy from now on.
    fn take(&mut self, owner: Option<&Owner>) -> Option<Interpreter> {
        let index = self.groups.iter().position(|g| g.owner.as_ref() == owner)?;
        self.clock += 1;
        let group = &mut self.groups[index];
        group.used = self.clock;
        let interpreter = group.interpreters.pop();
        if group.interpreters.is_empty() {
            self.groups.swap_remove(index);
        }
        if interpreter.is_some() {
            *self.busy.entry(owner.cloned()).or_default() += 1;
        }
        interpreter
    }

    /// `interpreter`, busy until now, is idle.
    fn put(&mut self, interpreter: Interpreter) {
        self.gone(interpreter.owner.as_ref());
        self.clock += 1;
        let clock = self.clock;
        match self.groups.iter_mut().find(|g| g.owner == interpreter.owner) {
            Some(group) => {
                group.used = clock;
                group.interpreters.push(interpreter);
            }
            None => self.groups.push(IdleGroup {
                owner: interpreter.owner.clone(),
                interpreters: vec![interpreter],
                used: clock,
            }),
        }
    }

    /// Takes out what is past `size` interpreters, least recently used first.
    fn trim(&mut self, size: usize) -> Vec<Interpreter> {
        let mut evicted = Vec::new();
        while self.total() > size {
            let oldest = self.groups.iter().enumerate().min_by_key(|(_, g)| g.used).map(|(i, _)| i);
            let Some(index) = oldest else { return evicted };
            let group = &mut self.groups[index];
            if !group.interpreters.is_empty() {
                evicted.push(group.interpreters.remove(0));
            }
            if group.interpreters.is_empty() {
                self.groups.swap_remove(index);
            }
        }
        evicted
    }
}

#[derive(serde::Serialize)]
struct DefsLine<'a> {
    op: &'static str,
    #[serde(flatten)]
    defs: &'a Defs,
}

#[derive(serde::Serialize)]
struct ReplyLine<'a> {
    op: &'static str,
    #[serde(flatten)]
    reply: &'a QueryReply,
}

/// An event as written: its body only when the interpreter does not have it yet.
#[derive(serde::Serialize)]
struct EventLine<'a> {
    op: &'static str,
    #[serde(flatten)]
    event: &'a Event,
    #[serde(skip_serializing_if = "Option::is_none")]
    script: Option<&'a str>,
}

/// The first of `written` fails with `error`; the rest, never run, wait again.
fn fail_first(mut written: VecDeque<Waiting>, error: RunError) -> Vec<Waiting> {
    if let Some(first) = written.pop_front() {
        let _ = first.answer.send(Err(error));
    }
    written.into()
}

fn decrement(counts: &mut HashMap<Option<Owner>, usize>, owner: Option<&Owner>) {
    let key = owner.cloned();
    if let Some(count) = counts.get_mut(&key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(&key);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The runner's path in a directory [`crate::files::install`] wrote.
pub fn runner_in(dir: &Path) -> PathBuf {
    dir.join(crate::files::RUNNER_FILE)
}
