//! A mom's settings, read once from pbs.conf and the command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::MomError;

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
    /// The remote copy program of file staging (`PBS_SCP`, else `PBS_RCP`, else
    /// `/usr/bin/scp`).
    pub scp: PathBuf,
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
            scp: crate::stage::remote_copy(&conf.raw),
            home,
        })
    }
}

/// This host's name.
pub fn host_name() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".to_string())
}
