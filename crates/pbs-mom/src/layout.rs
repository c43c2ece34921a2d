//! The on-disk state of a mom: the records each job leaves in
//! `PBS_HOME/mom_priv/jobs/<jobid>.JB`, the paths derived from `PBS_HOME`, and the record
//! types.
//!
//! Everything a restarted mom needs is in a job's records file ([`crate::records`]): the
//! launch ([`Spec`]), the shepherd's start ([`Started`]) and end ([`Status`]) records, the
//! result reported to the server ([`JobResult`]), the latest usage sample, the suspension
//! clock ([`SuspendClock`]), a limit kill decided by the mom ([`KillReason`]) and the
//! [`Forgotten`] mark. Beside it a script job has `<jobid>.SC`, its script, owned by the
//! job's user (the names OpenPBS uses). There is no directory per job: each one would be
//! another inode to create and delete per job. Job ids cannot start with a dot, so the
//! temporary files of [`crate::records`] (`.<name>...tmp`) never clash with a job's.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use pbs_proto::mom::{JobLaunch, Usage};
use serde::{Deserialize, Serialize};

use crate::records::Record;

/// Suffix of a job's records file in `mom_priv/jobs`.
pub const RECORDS_SUFFIX: &str = ".JB";
/// Suffix of a script job's script in `mom_priv/jobs`.
pub const SCRIPT_SUFFIX: &str = ".SC";
/// The shepherds' shared stderr (panics, messages from before a job's files exist), in
/// `mom_priv`.
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
    /// The secret of this run's shepherd, by which a restarted mom knows it
    /// ([`crate::adopt`]); empty in records of older moms.
    #[serde(default)]
    pub shepherd_secret: String,
    /// The names of this host, for staging: a file on one of them is copied with `cp`.
    #[serde(default)]
    pub own_hosts: Vec<String>,
    /// The remote copy program of staging (`PBS_SCP`, else `PBS_RCP`).
    #[serde(default)]
    pub scp: Option<PathBuf>,
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
    /// A stage-in or stage-out that failed, and what the copies said.
    #[serde(default)]
    pub stage_failed: Option<(pbs_proto::mom::StageDirection, String)>,
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
            stage_failed: None,
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
    /// The job's files stage in (before its shell) or out (after it).
    Staging {
        /// Full job id.
        job_id: String,
        /// Which way.
        direction: pbs_proto::mom::StageDirection,
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

/// Limits the server changed while the job ran (qalter): they replace the launch's. The
/// shepherd's walltime watch reads the latest one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Hard walltime limit, seconds.
    pub walltime: Option<u64>,
    /// cput limit, seconds.
    pub cput: Option<u64>,
    /// mem limit, bytes.
    pub mem: Option<u64>,
}

/// The server sent ForgetJob while the job still ran: it dies and ends without a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forgotten;

impl Record for Spec {
    const KIND: &'static str = "launch";
}
impl Record for Started {
    const KIND: &'static str = "started";
}
impl Record for Status {
    const KIND: &'static str = "status";
}
impl Record for JobResult {
    const KIND: &'static str = "result";
}
/// The latest sample, so a restarted mom reports more than zeros.
impl Record for Usage {
    const KIND: &'static str = "usage";
}
/// Read by the shepherd's walltime clock.
impl Record for SuspendClock {
    const KIND: &'static str = "suspend";
}
impl Record for KillReason {
    const KIND: &'static str = "kill_reason";
}
impl Record for Limits {
    const KIND: &'static str = "limits";
}
impl Record for Forgotten {
    const KIND: &'static str = "forgotten";
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

    /// One job's records file (`jobs/<jobid>.JB`).
    pub fn records_path(&self, job_id: &str) -> PathBuf {
        self.jobs_dir().join(format!("{job_id}{RECORDS_SUFFIX}"))
    }

    /// A script job's script (`jobs/<jobid>.SC`).
    pub fn script_path(&self, job_id: &str) -> PathBuf {
        self.jobs_dir().join(format!("{job_id}{SCRIPT_SUFFIX}"))
    }

    /// The shepherds' shared stderr.
    pub fn shepherd_err(&self) -> PathBuf {
        self.priv_dir().join(SHEPHERD_ERR_FILE)
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

    /// `PBS_HOME/undelivered`: where a stage-out that failed leaves its files.
    pub fn undelivered_dir(&self) -> PathBuf {
        undelivered_dir(&self.home)
    }

    /// Creates the directories a mom needs, with the modes jobs rely on.
    pub fn create_dirs(&self) -> io::Result<()> {
        for dir in [self.priv_dir(), self.jobs_dir()] {
            std::fs::DirBuilder::new().recursive(true).mode(PRIV_DIR_MODE).create(&dir)?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(PRIV_DIR_MODE))?;
        }
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(self.aux_dir())?;
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(self.log_dir())?;
        // As OpenPBS's: every owner moves their own files in, none can touch another's.
        let undelivered = self.undelivered_dir();
        std::fs::DirBuilder::new().recursive(true).mode(UNDELIVERED_MODE).create(&undelivered)?;
        std::fs::set_permissions(&undelivered, std::fs::Permissions::from_mode(UNDELIVERED_MODE))?;
        Ok(())
    }
}

/// The mode of `undelivered`: world-writable and sticky, as `/tmp`.
pub const UNDELIVERED_MODE: u32 = 0o1777;

/// `PBS_HOME/undelivered`.
pub fn undelivered_dir(home: &Path) -> PathBuf {
    home.join("undelivered")
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

/// The script beside a records file (`<jobid>.JB` -> `<jobid>.SC`).
pub fn script_path_of(records: &Path) -> PathBuf {
    let name = records.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let job_id = name.strip_suffix(RECORDS_SUFFIX).unwrap_or(&name);
    records.with_file_name(format!("{job_id}{SCRIPT_SUFFIX}"))
}

/// The job id a records file is named after, if it is one.
pub fn job_id_of(records: &Path) -> Option<&str> {
    records.file_name()?.to_str()?.strip_suffix(RECORDS_SUFFIX).filter(|id| valid_job_id(id))
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
    fn job_files_are_named_after_the_job() {
        let layout = Layout::new(Path::new("/h"));
        let records = layout.records_path("12[3].srv.example");
        assert_eq!(records, Path::new("/h/mom_priv/jobs/12[3].srv.example.JB"));
        assert_eq!(job_id_of(&records), Some("12[3].srv.example"));
        assert_eq!(script_path_of(&records), layout.script_path("12[3].srv.example"));
        assert_eq!(job_id_of(Path::new("/h/mom_priv/jobs/12.srv.SC")), None);
        assert_eq!(job_id_of(Path::new("/h/mom_priv/jobs/..JB")), None);
        assert_eq!(job_id_of(Path::new("/h/mom_priv/jobs/.12.srv.JB.new.tmp")), None);
    }

    #[test]
    fn every_record_type_round_trips_under_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.s.JB");
        let clock = SuspendClock { total_ms: 5, since_ms: Some(10) };
        crate::records::create(&path, &clock).unwrap();
        crate::records::append(&path, &Forgotten).unwrap();
        crate::records::append(&path, &KillReason { exit_status: -28, message: "cput".into() }).unwrap();
        let records = crate::records::read(&path);
        assert_eq!(records.get::<SuspendClock>(), Some(clock));
        assert!(records.has::<Forgotten>());
        assert_eq!(records.get::<KillReason>().map(|k| k.exit_status), Some(-28));
        assert!(!records.has::<Status>());
    }

    #[test]
    fn suspended_time_does_not_count_as_walltime() {
        let clock = SuspendClock { total_ms: 1000, since_ms: Some(8000) };
        // Started at 0, now 10 s: 1 s suspended earlier and 2 s in the current suspension.
        assert_eq!(clock.walltime_ms(0, 10_000), 7000);
        assert_eq!(SuspendClock::default().walltime_ms(500, 2500), 2000);
    }
}
