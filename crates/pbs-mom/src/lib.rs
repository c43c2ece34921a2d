//! pbs_mom, the execution daemon: it listens for the server's link ([`link`]), runs each job
//! under a per-job shepherd process that survives mom restarts ([`shepherd`], [`exec`]),
//! samples usage from /proc and enforces limits ([`mom`], [`procfs`]), and keeps every
//! job's state in one records file under `PBS_HOME/mom_priv/jobs/` ([`layout`],
//! [`records`]) until the server forgets it.
//!
//! How the pieces talk: the mom creates `jobs/<jobid>.JB` with the launch record and starts
//! `pbs_mom --shepherd <records file>`; the shepherd appends its `started` and `status`
//! records and sends the same facts as a datagram on `PBS_HOME/mom_priv/mom_sock`. The mom
//! reacts to the datagram at once (no polling on a job's path); it also notices its own
//! shepherds exiting, and checks the records of adopted shepherds at every usage sample, so
//! a lost datagram delays a report but never loses it.
//!
//! Execution hooks ([`hooks`]) and the classic prologue and epilogue scripts
//! ([`prologue`]) run in the mom's tasks around a job: a start waits for its execjob_begin
//! and execjob_prologue hooks (or the prologue), an end report for its execjob_epilogue
//! and execjob_end hooks (or the epilogue).

pub mod adopt;
pub mod checkpoint;
pub mod env;
pub mod error;
pub mod exec;
pub mod hooks;
pub mod layout;
pub mod link;
pub mod message;
pub use pbs_log as logging;
pub mod mom;
pub mod owner;
pub mod printjob;
pub mod procfs;
pub mod prologue;
pub mod records;
pub mod session_signals;
pub mod shepherd;
pub mod signals;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use error::MomError;
pub use mom::Mom;

/// Exec failed before the job's files were set up (`JOB_EXEC_FAIL1`).
pub const JOB_EXEC_FAIL1: i32 = -1;
/// Exec failed after the job's files were set up, no retry (`JOB_EXEC_FAIL2`): a prologue
/// that exited 1.
pub const JOB_EXEC_FAIL2: i32 = -2;
/// An execjob_begin or execjob_prologue hook rejected the job: it is requeued
/// (`JOB_EXEC_FAILHOOK_RERUN`).
pub const JOB_EXEC_FAILHOOK_RERUN: i32 = -16;
/// Such a hook raised or ran past its alarm: the job is requeued (`JOB_EXEC_HOOKERROR`).
pub const JOB_EXEC_HOOKERROR: i32 = -22;
/// The mom lost the job: its shepherd vanished without a status (`JOB_EXEC_INITABT`).
pub const JOB_EXEC_INITABT: i32 = -4;
/// Retry later: the job id is still held by a run being torn down (`JOB_EXEC_RETRY`).
pub const JOB_EXEC_RETRY: i32 = -3;
/// The owner does not exist here or privileges could not be dropped (`JOB_EXEC_FAILUID`).
pub const JOB_EXEC_FAILUID: i32 = -10;
/// Killed for exceeding mem (`JOB_EXEC_KILL_MEM`).
pub const JOB_EXEC_KILL_MEM: i32 = -27;
/// Killed for exceeding cput (`JOB_EXEC_KILL_CPUT`).
pub const JOB_EXEC_KILL_CPUT: i32 = -28;
/// Killed for exceeding walltime (`JOB_EXEC_KILL_WALLTIME`).
pub const JOB_EXEC_KILL_WALLTIME: i32 = -29;

/// Default period of usage samples (`PBS_MOM_SAMPLE_SECS`).
pub const DEFAULT_SAMPLE_PERIOD: Duration = Duration::from_secs(10);

/// A mom's settings, from pbs.conf and the command line.
#[derive(Clone, Debug)]
pub struct MomConfig {
    /// `PBS_HOME`, canonical (shepherds are recognised by their records file's path).
    pub home: PathBuf,
    /// The node this mom serves (`PBS_MOM_NODE_NAME`, else the host name).
    pub node_name: String,
    /// The host name (`resources_available.host`).
    pub host: String,
    /// Where the server's link is accepted.
    pub listen: SocketAddr,
    /// This mom's key: its own file, or the master on the server host, from which it
    /// derives its node's key. Read at each handshake so a key written later is picked up.
    pub key: pbs_core::conf::DaemonKey,
    /// Period of usage samples and limit checks.
    pub sample_period: Duration,
    /// Base of per-job TMPDIRs (`PBS_TMPDIR`).
    pub tmpdir_base: PathBuf,
    /// `PBS_MOMPORT` given to jobs (`PBS_MANAGER_SERVICE_PORT`, 15003, as OpenPBS).
    pub job_mom_port: u16,
    /// The program started as `--shepherd` (this binary: `/proc/self/exe`).
    pub shepherd_exe: PathBuf,
    /// The Python that runs hooks (`PBS_PYTHON`); `python3` from `PATH` when unset.
    pub python: Option<PathBuf>,
    /// The server's name (`PBS_SERVER`), as hooks see it (`pbs.server().name`).
    pub server_name: String,
    /// `PBS_MOM_TEST_REFUSE_SUSPEND=1` in pbs.conf: every suspension is refused
    /// (PBSE_BADSTATE), as a mom whose job cannot be stopped refuses it. For tests of
    /// what a refused suspension leads to; no site sets it.
    pub refuse_suspend: bool,
}

impl MomConfig {
    /// Settings from a parsed pbs.conf; `listen` overrides `PBS_MOM_SERVICE_PORT`.
    pub fn from_conf(conf: &pbs_core::conf::PbsConf, listen: Option<SocketAddr>) -> Result<MomConfig, MomError> {
        let host = host_name();
        std::fs::create_dir_all(&conf.home)
            .map_err(|e| MomError::io(format!("creating {}", conf.home.display()), e))?;
        let home = std::fs::canonicalize(&conf.home)
            .map_err(|e| MomError::io(format!("resolving {}", conf.home.display()), e))?;
        let sample_period = match conf.raw.get("PBS_MOM_SAMPLE_SECS") {
            None => DEFAULT_SAMPLE_PERIOD,
            Some(text) => match text.trim().parse::<f64>().ok().and_then(|s| Duration::try_from_secs_f64(s).ok()) {
                // A zero period would make the sampler spin.
                Some(period) if period >= Duration::from_millis(50) => period,
                _ => return Err(MomError::Config(format!("PBS_MOM_SAMPLE_SECS: invalid value {text:?}"))),
            },
        };
        let tmpdir_base = conf
            .raw
            .get("PBS_TMPDIR")
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/var/tmp"));
        Ok(MomConfig {
            node_name: conf.mom_node_name.clone().unwrap_or_else(|| host.clone()),
            host,
            listen: listen.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], conf.mom_port))),
            key: conf.daemon_key(),
            sample_period,
            tmpdir_base,
            job_mom_port: conf.manager_port,
            shepherd_exe: PathBuf::from("/proc/self/exe"),
            python: conf.raw.get("PBS_PYTHON").filter(|v| !v.trim().is_empty()).map(PathBuf::from),
            server_name: conf.server.clone().unwrap_or_default(),
            refuse_suspend: conf.raw.get("PBS_MOM_TEST_REFUSE_SUSPEND").is_some_and(|v| v.trim() == "1"),
            home,
        })
    }
}

/// This host's name.
pub fn host_name() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".to_string())
}
