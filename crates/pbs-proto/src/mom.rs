//! The link between pbs_server and a pbs_mom: what the server asks a mom to do and what the
//! mom reports back.
//!
//! The **server connects to the mom** at the node's `Mom` host and `Port` (as OpenPBS's
//! server contacts its moms) and runs the authenticated handshake of [`crate::link`] as
//! [`crate::Role::Server`] towards `mom:<node>`; both sides prove the cluster key, and the
//! sealed [`crate::HelloReply::Welcome`] carries the mom's node name in `server_name`. From
//! then on the server writes [`ToMom`] frames and the mom writes [`FromMom`] frames, sealed, in
//! any order, on the same connection, until either side closes it. A peer that cannot prove
//! the key gets `Refused` and can make the mom do nothing.
//!
//! The mom's first frame after the Welcome is [`FromMom::NodeStatus`]: its resources and
//! every job it still holds (running, or ended but not yet forgotten). A mom keeps an ended
//! job's result until the server answers [`ToMom::ForgetJob`], so a job that ends while the
//! server is down or unreachable is reported when the link comes back.

use serde::{Deserialize, Serialize};

/// A frame from the server to a mom.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum ToMom {
    /// Start a job here (mother superior) or hold its resources (sister). The mom answers
    /// [`FromMom::JobStarted`] or, if it could not start it, [`FromMom::JobEnded`] with a
    /// negative `JOB_EXEC_*` exit status.
    RunJob {
        /// What to run.
        launch: Box<JobLaunch>,
    },
    /// Sends a signal to every process of the job's session. `signal` is a name with or
    /// without `SIG` (`TERM`, `SIGKILL`), a number, or `suspend` / `resume` (SIGSTOP /
    /// SIGCONT on the whole session, as OpenPBS does). The mom answers
    /// [`FromMom::SignalResult`].
    SignalJob {
        /// Full job id.
        job_id: String,
        /// The signal.
        signal: String,
        /// The server's number for the request waiting on the answer (0: nobody waits),
        /// echoed in [`FromMom::SignalResult`].
        #[serde(default)]
        ask: u64,
    },
    /// One signal to several jobs of this mom, each answered as its own
    /// [`ToMom::SignalJob`] would be ([`FromMom::SignalResult`] per job, in this order, all
    /// carrying `ask`). What a request that signals many jobs at once (qsig of a list,
    /// PreemptJobs, the scheduler's resumes) sends each mom: the mom finds the processes of
    /// all these jobs' sessions in one pass over `/proc`, not one pass per job.
    SignalJobs {
        /// Full job ids.
        job_ids: Vec<String>,
        /// The signal, as in [`ToMom::SignalJob`].
        signal: String,
        /// The server's number for the request waiting on the answers (0: nobody waits).
        #[serde(default)]
        ask: u64,
    },
    /// Ends a running job (qdel, qrerun, node failure handling): SIGTERM to the session,
    /// then SIGKILL after `kill_delay` seconds if anything is left. The mom then reports
    /// [`FromMom::JobEnded`] as for any end.
    KillJob {
        /// Full job id.
        job_id: String,
        /// Seconds between SIGTERM and SIGKILL.
        kill_delay: u32,
    },
    /// The server has recorded the job's end (or no longer wants it here): the mom kills
    /// whatever is left of it without reporting, frees its resources and removes its files.
    /// Also sent to sister moms when a job ends.
    ForgetJob {
        /// Full job id.
        job_id: String,
    },
    /// qalter changed a running job's limits: the mom enforces these from now on (the
    /// shepherd reads the new walltime). Each is the job's whole new value, `None` for no
    /// limit. Sent to the mother superior only; no answer.
    ModifyJob {
        /// Full job id.
        job_id: String,
        /// Hard walltime limit, seconds.
        walltime: Option<u64>,
        /// cput limit, seconds.
        cput: Option<u64>,
        /// mem limit, bytes.
        mem: Option<u64>,
        /// The run these limits are for (`JobLaunch::run_count`).
        run_count: u32,
    },
    /// Liveness probe; the mom answers [`FromMom::Pong`].
    Ping,
    /// The execution hooks every mom runs (enabled hooks with a mom event and a body),
    /// whole: the mom replaces the set it had (on disk and in memory) with this one. Sent
    /// to every mom whose link is up when a hook changes, and to a mom when its link comes
    /// up. No answer.
    Hooks {
        /// The hooks, by name.
        hooks: Vec<MomHook>,
    },
    /// Append `text` and a newline to the running job's stderr and/or stdout files (qmsg),
    /// as the job's owner. The mom answers [`FromMom::MessageResult`].
    MessageJob {
        /// Full job id.
        job_id: String,
        /// The line.
        text: String,
        /// To the job's stdout.
        stdout: bool,
        /// To the job's stderr.
        stderr: bool,
        /// The server's number for the request waiting on the answer.
        ask: u64,
    },
    /// `qterm -m`: the mom stops; its jobs go on under their shepherds and are adopted by
    /// the next mom. No answer: the link closes.
    Shutdown,
}

/// One execution hook as a mom runs it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MomHook {
    /// Its name.
    pub name: String,
    /// The mom events it runs at (`execjob_begin`, `execjob_prologue`...).
    pub events: Vec<String>,
    /// `order`: hooks of one event run in this order, then by name.
    pub order: i64,
    /// `alarm`: seconds it may run.
    pub alarm: u64,
    /// `fail_action` as qmgr shows it (`none`, `offline_vnodes`...).
    pub fail_action: String,
    /// `debug`.
    pub debug: bool,
    /// `user`: `pbsadmin` (root) or `pbsuser` (the job's owner).
    pub user: String,
    /// Its body.
    pub script: String,
}

/// Everything a mom needs to run one job, decided by the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobLaunch {
    /// Full id, `12.server` or `12[3].server`.
    pub job_id: String,
    /// `Job_Name`.
    pub job_name: String,
    /// The owner (`euser`): the job runs as this user, looked up on the mom's host.
    pub user: String,
    /// The uid the server resolved for `user`. The mom looks `user` up itself and refuses
    /// the job (`JOB_EXEC_FAILUID`) unless it finds that same uid; without it, it refuses.
    #[serde(default)]
    pub uid: Option<u32>,
    /// Set by the server only when `acl_roots` allows the owner: without it the mom never
    /// starts the job as uid 0.
    #[serde(default)]
    pub root_allowed: bool,
    /// `egroup`: the primary group to run as, if it exists on the mom's host.
    pub group: String,
    /// The queue (`PBS_QUEUE`).
    pub queue: String,
    /// True on sister moms of a multi-node job: nothing runs, the mom only accounts for the
    /// job until [`ToMom::ForgetJob`].
    pub sister: bool,
    /// The job script; run by the shell. Empty when `executable` is set.
    pub script: String,
    /// `qsub -- program args`: the program to run instead of a script.
    pub executable: Option<String>,
    /// Its arguments.
    pub arguments: Vec<String>,
    /// The shell from `Shell_Path_List` for this host (`-S`), else the user's login shell.
    pub shell: Option<String>,
    /// `Variable_List`, decoded: `PBS_O_*` and the `-v` / `-V` variables, in order.
    pub variables: Vec<(String, String)>,
    /// `Output_Path` (`host:/path`); the mom uses the path part.
    pub output_path: String,
    /// `Error_Path` (`host:/path`).
    pub error_path: String,
    /// `Join_Path`: `n`, `oe` or `eo`.
    pub join_path: String,
    /// `Keep_Files`: `n`, `o`, `e`, `oe`, `d`...
    pub keep_files: String,
    /// `umask`, octal digits as the user gave them.
    pub umask: Option<String>,
    /// The lines of `PBS_NODEFILE`: one host name per mpiprocs of each chunk.
    pub nodefile: Vec<String>,
    /// ncpus assigned on this host (the job's `NCPUS`).
    pub ncpus: u32,
    /// `OMP_NUM_THREADS` (ompthreads of the first chunk, else its ncpus).
    pub ompthreads: u32,
    /// Hard walltime limit, seconds.
    pub walltime: Option<u64>,
    /// cput limit, seconds.
    pub cput: Option<u64>,
    /// mem limit, bytes.
    pub mem: Option<u64>,
    /// `PBS_ARRAY_INDEX` of a subjob.
    pub array_index: Option<String>,
    /// `PBS_ARRAY_ID` of a subjob (the parent id, `12[].server`).
    pub array_id: Option<String>,
    /// `Account_Name` (`PBS_ACCOUNT`).
    pub account: Option<String>,
    /// `run_count` including this run.
    pub run_count: u32,
    /// `stagein`: files the mom copies, as the owner, before the job's shell starts.
    #[serde(default)]
    pub stagein: Option<String>,
    /// `stageout`: files it copies after the job ends.
    #[serde(default)]
    pub stageout: Option<String>,
}

/// Resource usage a mom samples from /proc (`resources_used.*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// CPU time of the whole session, seconds.
    pub cput: u64,
    /// Seconds since the job started.
    pub walltime: u64,
    /// Resident memory of the session (peak of samples), kilobytes.
    pub mem_kb: u64,
    /// Virtual memory of the session (peak of samples), kilobytes.
    pub vmem_kb: u64,
    /// ncpus the job holds here.
    pub ncpus: u32,
    /// CPU use over the last sample, percent of one CPU.
    pub cpupercent: u32,
}

/// Which way files were staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageDirection {
    /// `stagein`, before the job's shell starts.
    In,
    /// `stageout`, after the job ended.
    Out,
}

/// The longest text of a [`FromMom::StageFailed`].
pub const MAX_STAGE_MESSAGE: usize = 4096;

/// A job a mom holds, as listed in [`FromMom::NodeStatus`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MomJob {
    /// Full job id.
    pub job_id: String,
    /// True on a sister.
    pub sister: bool,
    /// Session id of the running job (0 on a sister or before it started).
    pub session_id: i64,
    /// Set once the job has ended: its exit status.
    pub exit_status: Option<i32>,
    /// Latest usage.
    pub usage: Usage,
}

/// A frame from a mom to the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum FromMom {
    /// First frame on every link, and again when the host's resources change.
    NodeStatus {
        /// CPUs of the host (`resources_available.ncpus`, `pcpus`).
        ncpus: u32,
        /// Physical memory, kilobytes (`resources_available.mem`).
        mem_kb: u64,
        /// `resources_available.arch`, `linux` as OpenPBS says.
        arch: String,
        /// The host's name (`resources_available.host`).
        host: String,
        /// The mom's version (`pbs_version`).
        version: String,
        /// Every job the mom holds, running or ended and not yet forgotten.
        jobs: Vec<MomJob>,
    },
    /// The job's shell is running.
    JobStarted {
        /// Full job id.
        job_id: String,
        /// Its session id (`session_id`).
        session_id: i64,
    },
    /// A usage sample of a running job.
    JobUsage {
        /// Full job id.
        job_id: String,
        /// The sample.
        usage: Usage,
    },
    /// The job has ended (or could not start). The mom keeps this until
    /// [`ToMom::ForgetJob`].
    JobEnded {
        /// Full job id.
        job_id: String,
        /// As OpenPBS: the shell's exit code, 256 + signal when the shell was killed by a
        /// signal, or a negative `JOB_EXEC_*` code (-29 walltime, -28 cput, -27 mem, -1 / -10
        /// launch failures...).
        exit_status: i32,
        /// Final usage.
        usage: Usage,
    },
    /// A [`ToMom::KillJob`] named a job this mom does not hold (OpenPBS's mom answers
    /// PBSE_UNKJOBID): the server purges the job it was ending, so an end that will never
    /// be reported is not waited for.
    UnknownJob {
        /// Full job id.
        job_id: String,
    },
    /// The outcome of a [`ToMom::SignalJob`], or of one job of a [`ToMom::SignalJobs`].
    SignalResult {
        /// Full job id.
        job_id: String,
        /// The signal as asked.
        signal: String,
        /// PBSE code, 0 on success (15001 unknown job, 15013 bad signal...).
        code: u32,
        /// The `ask` of the [`ToMom::SignalJob`] answered.
        #[serde(default)]
        ask: u64,
    },
    /// The outcome of a [`ToMom::MessageJob`].
    MessageResult {
        /// Full job id.
        job_id: String,
        /// PBSE code, 0 once written (15001 unknown job, 15016 not running, 15010 no
        /// file the owner may append to).
        code: u32,
        /// The `ask` of the request answered.
        ask: u64,
    },
    /// Answer to [`ToMom::Ping`].
    Pong,
    /// A job's files stage in (its shell has not started) or out (it has ended): the
    /// server shows substate 15 (`R`) or 51 (`E`), as OpenPBS does while it stages.
    Staging {
        /// Full job id.
        job_id: String,
        /// Which way.
        direction: StageDirection,
    },
    /// Staging a job's files failed here (`message`: what failed, one line a file, at most
    /// [`MAX_STAGE_MESSAGE`] bytes); sent before the job's [`FromMom::JobEnded`].
    StageFailed {
        /// Full job id.
        job_id: String,
        /// Which way.
        direction: StageDirection,
        /// What the copies said.
        message: String,
    },
    /// A hook whose `fail_action` includes `offline_vnodes` raised or ran past its alarm
    /// at an execjob_begin, execjob_prologue or exechost_startup event here: the server
    /// marks this node offline by its mom, as OpenPBS does.
    OfflineByHook {
        /// The hook's name.
        hook: String,
    },
    /// This mom's exechost_startup hooks ran without an error, and one of those that ran
    /// has `fail_action=clear_vnodes_upon_recovery`: the server clears the offline an
    /// earlier hook failure set on this node (OpenPBS's `offline_vnodes=0`).
    OfflineByHookCleared,
    /// A hook asked for a new scheduling cycle: it called
    /// `pbs.server().scheduler_restart_cycle()`, or (`failed`) its `fail_action` includes
    /// `scheduler_restart_cycle` and it raised or ran past its alarm at an execjob_begin or
    /// execjob_prologue event here. The server asks the scheduler, as OpenPBS does.
    RestartCycleByHook {
        /// The hook's name.
        hook: String,
        /// Asked by the hook's `fail_action`, not by the hook.
        #[serde(default)]
        failed: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_reject_unknown_kinds() {
        let frame = ToMom::KillJob { job_id: "1.s".into(), kill_delay: 10 };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(text, r#"{"kind":"KillJob","job_id":"1.s","kill_delay":10}"#);
        assert_eq!(serde_json::from_str::<ToMom>(&text).unwrap(), frame);
        assert!(serde_json::from_str::<FromMom>(r#"{"kind":"Nope"}"#).is_err());
        let hooks = ToMom::Hooks {
            hooks: vec![MomHook {
                name: "begin".into(),
                events: vec!["execjob_begin".into()],
                order: 1,
                alarm: 30,
                fail_action: "offline_vnodes".into(),
                debug: false,
                user: "pbsadmin".into(),
                script: "import pbs\n".into(),
            }],
        };
        let text = serde_json::to_string(&hooks).unwrap();
        assert_eq!(serde_json::from_str::<ToMom>(&text).unwrap(), hooks);
    }
}
