//! The on-disk state of a mom: `PBS_HOME/mom_priv/jobs/<jobid>/` per job, the records the
//! mom and the shepherd leave there, and the paths derived from `PBS_HOME`.
//!
//! Everything a restarted mom needs is in these files: the launch ([`Spec`]), the shepherd's
//! start ([`Started`]) and end ([`Status`]) records, the result reported to the server
//! ([`JobResult`]), the suspension clock ([`SuspendClock`]) and a limit kill decided by the
//! mom ([`KillReason`]). Records are written to a temporary name and renamed, so a reader
//! never sees half a record.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use pbs_proto::mom::{JobLaunch, Usage};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The launch description (written by the mom, read by the shepherd).
pub const SPEC_FILE: &str = "launch.json";
/// Written by the shepherd once the job's shell runs.
pub const STARTED_FILE: &str = "started.json";
/// Written by the shepherd when the job has ended.
pub const STATUS_FILE: &str = "status.json";
/// Written by the mom once it has reported the end.
pub const RESULT_FILE: &str = "result.json";
/// Latest usage sample, so a restarted mom reports more than zeros.
pub const USAGE_FILE: &str = "usage.json";
/// Suspension accounting, read by the shepherd's walltime clock.
pub const SUSPEND_FILE: &str = "suspend.json";
/// A cput or mem kill decided by the mom.
pub const KILL_FILE: &str = "kill_reason.json";
/// Present once the server sent ForgetJob for a job still dying.
pub const FORGOTTEN_FILE: &str = "forgotten";
/// The script of a script job, owned by the job's user.
pub const SCRIPT_FILE: &str = "script";
/// The shepherd's own stderr (panics, messages from before the job's files exist).
pub const SHEPHERD_ERR_FILE: &str = "shepherd.err";

/// Mode of `mom_priv` and `mom_priv/jobs`: root-only listing, but a job's user must be able
/// to reach its script by name.
const PRIV_DIR_MODE: u32 = 0o711;

/// Everything the shepherd needs: the launch plus the mom's settings that shape the job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spec {
    /// The server's launch description.
    pub launch: JobLaunch,
    /// `PBS_HOME` (for `aux/<jobid>`).
    pub home: PathBuf,
    /// Base directory of per-job `TMPDIR`s (`PBS_TMPDIR`, default `/var/tmp`).
    pub tmpdir_base: PathBuf,
    /// `PBS_MOMPORT` given to the job.
    pub mom_port: u16,
    /// Where the shepherd sends its notes to the mom.
    pub notify_socket: PathBuf,
}

/// The shepherd's record of a started job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    /// The shepherd's pid.
    pub shepherd_pid: i32,
    /// The job's session id (pid of its shell).
    pub session_id: i64,
    /// Start time, milliseconds since the epoch.
    pub start_ms: u64,
}

/// The shepherd's record of an ended job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The shepherd that wrote it (0 when the mom made it up for a lost shepherd): a late
    /// report of an earlier run of the same job id must not end the current one.
    pub shepherd_pid: i32,
    /// Exit status as OpenPBS reports it (code, 256 + signal, or negative JOB_EXEC_*).
    pub exit_status: i32,
    /// Session id, 0 if the job never started.
    pub session_id: i64,
    /// Start time (ms since the epoch), 0 if it never started.
    pub start_ms: u64,
    /// End time (ms since the epoch).
    pub end_ms: u64,
    /// CPU time of the shell and every descendant it waited for, milliseconds.
    pub cput_ms: u64,
    /// Largest resident size of one of those processes, kilobytes.
    pub maxrss_kb: u64,
    /// Why PBS ended it, for the mom's log (empty for a normal end).
    pub message: String,
}

impl Status {
    /// The status of a job that ended before it started (or whose shepherd vanished).
    pub fn failed(exit_status: i32, message: String) -> Status {
        Status {
            shepherd_pid: 0,
            exit_status,
            session_id: 0,
            start_ms: 0,
            end_ms: now_ms(),
            cput_ms: 0,
            maxrss_kb: 0,
            message,
        }
    }
}

/// What the mom reported (or will report) to the server for an ended job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    /// The exit status.
    pub exit_status: i32,
    /// Final usage.
    pub usage: Usage,
}

/// A datagram from a shepherd to the mom on `mom_sock`. The same facts are on disk first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Note {
    /// The job's shell runs.
    Started {
        /// Full job id.
        job_id: String,
        /// The start record.
        started: Started,
    },
    /// The job has ended (or could not start).
    Ended {
        /// Full job id.
        job_id: String,
        /// The end record.
        status: Status,
    },
}

/// Time a job spent suspended, so walltime does not advance while it is stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuspendClock {
    /// Milliseconds suspended, not counting a suspension in progress.
    pub total_ms: u64,
    /// Start (ms since the epoch) of the suspension in progress.
    pub since_ms: Option<u64>,
}

impl SuspendClock {
    /// Milliseconds suspended up to `now_ms`.
    pub fn suspended_ms(&self, now_ms: u64) -> u64 {
        self.total_ms + self.since_ms.map(|s| now_ms.saturating_sub(s)).unwrap_or(0)
    }

    /// Walltime in milliseconds of a job started at `start_ms`, at `now_ms`.
    pub fn walltime_ms(&self, start_ms: u64, now_ms: u64) -> u64 {
        now_ms.saturating_sub(start_ms).saturating_sub(self.suspended_ms(now_ms))
    }
}

/// A limit kill decided by the mom's sampler (cput, mem).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillReason {
    /// The JOB_EXEC_* status to report.
    pub exit_status: i32,
    /// `cput 12 exceeded limit 10`.
    pub message: String,
}

/// Paths of one mom's `PBS_HOME`.
#[derive(Clone, Debug)]
pub struct Layout {
    home: PathBuf,
}

impl Layout {
    /// The layout under `home`.
    pub fn new(home: &Path) -> Layout {
        Layout { home: home.to_path_buf() }
    }

    /// `PBS_HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `PBS_HOME/mom_priv`.
    pub fn priv_dir(&self) -> PathBuf {
        self.home.join("mom_priv")
    }

    /// `PBS_HOME/mom_priv/jobs`.
    pub fn jobs_dir(&self) -> PathBuf {
        self.priv_dir().join("jobs")
    }

    /// One job's directory.
    pub fn job_dir(&self, job_id: &str) -> PathBuf {
        self.jobs_dir().join(job_id)
    }

    /// The datagram socket shepherds notify the mom on.
    pub fn notify_socket(&self) -> PathBuf {
        self.priv_dir().join("mom_sock")
    }

    /// `PBS_HOME/mom_logs`.
    pub fn log_dir(&self) -> PathBuf {
        self.home.join("mom_logs")
    }

    /// `PBS_HOME/aux`, the node files.
    pub fn aux_dir(&self) -> PathBuf {
        self.home.join("aux")
    }

    /// Creates the directories a mom needs, with the modes jobs rely on.
    pub fn create_dirs(&self) -> io::Result<()> {
        for dir in [self.priv_dir(), self.jobs_dir()] {
            std::fs::DirBuilder::new().recursive(true).mode(PRIV_DIR_MODE).create(&dir)?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(PRIV_DIR_MODE))?;
        }
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(self.aux_dir())?;
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(self.log_dir())?;
        Ok(())
    }
}

/// `PBS_HOME/aux/<jobid>`.
pub fn nodefile_path(home: &Path, job_id: &str) -> PathBuf {
    home.join("aux").join(job_id)
}

/// `<base>/pbs.<jobid>`.
pub fn tmpdir_path(base: &Path, job_id: &str) -> PathBuf {
    base.join(format!("pbs.{job_id}"))
}

/// Whether `job_id` can name a directory and files safely: it comes from the network.
pub fn valid_job_id(job_id: &str) -> bool {
    !job_id.is_empty()
        && job_id.len() <= 200
        && job_id != "."
        && job_id != ".."
        && !job_id.contains(['/', '\0'])
        && !job_id.starts_with('.')
        && !job_id.chars().any(char::is_control)
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Writes `value` as JSON to `dir/name` atomically (temporary file, then rename), mode 0600.
pub fn write_record<T: Serialize>(dir: &Path, name: &str, value: &T) -> io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    {
        let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        file.write_all(&bytes)?;
    }
    std::fs::rename(&tmp, dir.join(name))
}

/// Reads a JSON record; `None` if it is missing or unreadable.
pub fn read_record<T: DeserializeOwned>(dir: &Path, name: &str) -> Option<T> {
    let bytes = std::fs::read(dir.join(name)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_that_could_escape_the_jobs_dir_are_refused() {
        assert!(valid_job_id("12.server"));
        assert!(valid_job_id("12[3].server"));
        for bad in ["", ".", "..", "../x", "a/b", ".hidden", "a\nb", "a\0b"] {
            assert!(!valid_job_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn records_round_trip_and_missing_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let clock = SuspendClock { total_ms: 5, since_ms: Some(10) };
        write_record(dir.path(), SUSPEND_FILE, &clock).unwrap();
        assert_eq!(read_record::<SuspendClock>(dir.path(), SUSPEND_FILE), Some(clock));
        assert_eq!(read_record::<SuspendClock>(dir.path(), "nope"), None);
    }

    #[test]
    fn suspended_time_does_not_count_as_walltime() {
        let clock = SuspendClock { total_ms: 1000, since_ms: Some(8000) };
        // Started at 0, now 10 s: 1 s suspended earlier and 2 s in the current suspension.
        assert_eq!(clock.walltime_ms(0, 10_000), 7000);
        assert_eq!(SuspendClock::default().walltime_ms(500, 2500), 2000);
    }
}
