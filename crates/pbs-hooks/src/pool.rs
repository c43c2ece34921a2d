//! A pool of warm Python interpreters, each running the runner and one event at a time.
//!
//! An event takes an idle interpreter (or starts one, up to the pool's size), writes one
//! line and reads one answer. An interpreter that does not answer in its alarm and a
//! grace period, that dies, or that writes something that is not an answer, is killed and
//! dropped: the next event starts a new one, so one bad hook never takes the pool down.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{OnceCell, Semaphore};

use crate::protocol::{Answer, Defs, Event, Query, QueryReply};

/// How long past its alarm an interpreter may take to answer before it is killed: the
/// runner stops a hook at its alarm itself, so this covers only a runner that cannot.
pub const ALARM_GRACE: Duration = Duration::from_secs(2);

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

struct Interpreter {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The definitions generation it was last sent.
    defs_sent: Option<u64>,
}

struct Inner {
    runner: PathBuf,
    python: Option<PathBuf>,
    /// The interpreter's real executable, found once (a shim such as pyenv's costs a
    /// shell per start).
    resolved: OnceCell<Result<PathBuf, String>>,
    idle: Mutex<Vec<Interpreter>>,
    slots: Semaphore,
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
    /// [`crate::install`]) with `python` (`python3` from `PATH` when `None`). `label` names
    /// the daemon in the log.
    pub fn new(runner: PathBuf, python: Option<PathBuf>, size: usize, label: &'static str) -> Pool {
        Pool {
            inner: Arc::new(Inner {
                runner,
                python,
                resolved: OnceCell::new(),
                idle: Mutex::new(Vec::new()),
                slots: Semaphore::new(size.max(1)),
                defs: Mutex::new(None),
                next_id: AtomicU64::new(1),
                label,
            }),
        }
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
    pub fn warm(&self) {
        if let Some(interpreter) = self.take_idle() {
            lock(&self.inner.idle).push(interpreter);
            return;
        }
        let pool = self.clone();
        tokio::spawn(async move {
            let Ok(_slot) = pool.inner.slots.acquire().await else { return };
            match pool.spawn().await {
                Ok(interpreter) => lock(&pool.inner.idle).push(interpreter),
                Err(e) => tracing::warn!(error = %e, "hook interpreter could not be started"),
            }
        });
    }

    /// Runs one event and gives the hook's answer.
    pub async fn run(&self, event: Event) -> Result<Answer, RunError> {
        self.run_with_queries(event, &|_: &Query| QueryReply::default()).await
    }

    /// Runs one event whose hook may ask for jobs while it runs (a periodic hook's
    /// `pbs.server().jobs()`): `queries` answers each question.
    pub async fn run_with_queries(
        &self,
        mut event: Event,
        queries: &(dyn Fn(&Query) -> QueryReply + Sync),
    ) -> Result<Answer, RunError> {
        let _slot = self.inner.slots.acquire().await.map_err(|_| RunError::Unavailable("pool closed".into()))?;
        let mut interpreter = match self.take_idle() {
            Some(interpreter) => interpreter,
            None => self.spawn().await?,
        };
        event.id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let deadline = Duration::from_secs(event.alarm.max(1)) + ALARM_GRACE;
        let outcome = tokio::time::timeout(deadline, self.exchange(&mut interpreter, &event, queries)).await;
        match outcome {
            Ok(Ok(answer)) => {
                lock(&self.inner.idle).push(interpreter);
                Ok(answer)
            }
            Ok(Err(e)) => {
                let _ = interpreter.child.start_kill();
                Err(e)
            }
            Err(_) => {
                tracing::warn!(hook = %event.hook, "hook interpreter did not answer in time: killed");
                let _ = interpreter.child.start_kill();
                Err(RunError::Alarm)
            }
        }
    }

    /// An idle interpreter that is still alive: one that died while idle (killed, out of
    /// memory) is dropped here, so its death never fails an event it never saw.
    fn take_idle(&self) -> Option<Interpreter> {
        let mut idle = lock(&self.inner.idle);
        while let Some(mut interpreter) = idle.pop() {
            if matches!(interpreter.child.try_wait(), Ok(None)) {
                return Some(interpreter);
            }
            tracing::warn!(object_type = "Hook", object_name = self.inner.label, "an idle hook interpreter had died");
        }
        None
    }

    async fn exchange(
        &self,
        interpreter: &mut Interpreter,
        event: &Event,
        queries: &(dyn Fn(&Query) -> QueryReply + Sync),
    ) -> Result<Answer, RunError> {
        let defs = lock(&self.inner.defs).clone();
        let mut out = Vec::new();
        if let Some((generation, line)) = defs {
            if interpreter.defs_sent != Some(generation) {
                out.extend_from_slice(line.as_bytes());
                interpreter.defs_sent = Some(generation);
            }
        }
        let line = serde_json::to_vec(&EventLine { op: "event", event })
            .map_err(|e| RunError::Crashed(format!("event not written: {e}")))?;
        out.extend_from_slice(&line);
        out.push(b'\n');
        let broken = |e: std::io::Error| RunError::Crashed(e.to_string());
        interpreter.stdin.write_all(&out).await.map_err(broken)?;
        interpreter.stdin.flush().await.map_err(broken)?;
        let answer = loop {
            let mut line = String::new();
            let read = interpreter.stdout.read_line(&mut line).await.map_err(broken)?;
            if read == 0 {
                return Err(RunError::Crashed("the interpreter exited".into()));
            }
            let value: serde_json::Value = serde_json::from_str(&line)
                .map_err(|e| RunError::Crashed(format!("unreadable answer ({e}): {}", line.trim_end())))?;
            if value.get("op").and_then(serde_json::Value::as_str) != Some("query") {
                break serde_json::from_value::<Answer>(value)
                    .map_err(|e| RunError::Crashed(format!("unreadable answer ({e}): {}", line.trim_end())))?;
            }
            let query: Query =
                serde_json::from_value(value).map_err(|e| RunError::Crashed(format!("bad query: {e}")))?;
            let reply = queries(&query);
            let mut out = serde_json::to_vec(&ReplyLine { op: "reply", reply: &reply })
                .map_err(|e| RunError::Crashed(format!("reply not written: {e}")))?;
            out.push(b'\n');
            interpreter.stdin.write_all(&out).await.map_err(broken)?;
            interpreter.stdin.flush().await.map_err(broken)?;
        };
        if answer.id != Some(event.id) {
            return Err(RunError::Crashed(format!("answer to event {:?}, not {}", answer.id, event.id)));
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

    async fn spawn(&self) -> Result<Interpreter, RunError> {
        let python = self.python().await?;
        let mut child = Command::new(&python)
            .arg("-I")
            .arg("-u")
            .arg(&self.inner.runner)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| RunError::Unavailable(format!("{}: {e}", python.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(RunError::Unavailable("no pipes to the interpreter".into()));
        };
        let label = self.inner.label;
        let pid = child.id().unwrap_or(0);
        // What hooks print (and tracebacks) goes to the daemon's log, line by line.
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(event = "0100", object_type = "Hook", object_name = label, "[pid {pid}] {line}");
            }
        });
        Ok(Interpreter { child, stdin, stdout: BufReader::new(stdout), defs_sent: None })
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

#[derive(serde::Serialize)]
struct EventLine<'a> {
    op: &'static str,
    #[serde(flatten)]
    event: &'a Event,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The runner's path in a directory [`crate::install`] wrote.
pub fn runner_in(dir: &Path) -> PathBuf {
    dir.join(crate::RUNNER_FILE)
}
