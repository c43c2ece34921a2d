//! `pbs.conf`: the KEY=VALUE file that tells every daemon and command where things are.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Default path of the configuration file when `PBS_CONF_FILE` is not set.
pub const DEFAULT_CONF_FILE: &str = "/etc/pbs.conf";
/// Default TCP port of pbs_server (`PBS_BATCH_SERVICE_PORT`).
pub const DEFAULT_BATCH_PORT: u16 = 15001;
/// Default TCP port of pbs_mom (`PBS_MOM_SERVICE_PORT`).
pub const DEFAULT_MOM_PORT: u16 = 15002;
/// Default TCP port of pbs_mom's manager service (`PBS_MANAGER_SERVICE_PORT`).
pub const DEFAULT_MANAGER_PORT: u16 = 15003;
/// Default `PBS_HOME`.
pub const DEFAULT_PBS_HOME: &str = "/var/spool/pbs";

/// The server's store under `home` (its `PBS_HOME`): what pbs_server keeps its state in,
/// and what printjob reads on the server's host.
pub fn server_store_file(home: &std::path::Path) -> PathBuf {
    home.join("server_priv").join("serverdb.sqlite")
}

/// Errors reading a pbs.conf text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfError {
    /// A port key whose value is not a port number.
    #[error("{key}: invalid port number {value:?}")]
    BadPort {
        /// The key.
        key: String,
        /// The value found.
        value: String,
    },
}

/// The parsed pbs.conf. Unknown keys are kept so tools can read site additions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PbsConf {
    /// `PBS_SERVER`: the server's host name, also the suffix of job ids.
    pub server: Option<String>,
    /// `PBS_HOME`.
    pub home: PathBuf,
    /// `PBS_EXEC`: where the suite is installed.
    pub exec: Option<PathBuf>,
    /// `PBS_BATCH_SERVICE_PORT`.
    pub batch_port: u16,
    /// `PBS_MOM_SERVICE_PORT`.
    pub mom_port: u16,
    /// `PBS_MANAGER_SERVICE_PORT`.
    pub manager_port: u16,
    /// `PBS_START_SERVER`.
    pub start_server: bool,
    /// `PBS_START_SCHED`.
    pub start_sched: bool,
    /// `PBS_START_MOM`.
    pub start_mom: bool,
    /// `PBS_MOM_NODE_NAME`.
    pub mom_node_name: Option<String>,
    /// Every key as written, including the ones above.
    pub raw: BTreeMap<String, String>,
}

impl PbsConf {
    /// Parses pbs.conf text: `KEY=VALUE` lines, `#` comments, blank lines ignored.
    ///
    /// As in OpenPBS, environment variables of the same name override the file; the caller
    /// passes them in `env` so this stays free of I/O.
    pub fn parse(text: &str, env: &[(String, String)]) -> Result<PbsConf, ConfError> {
        let mut raw = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some((key, value)) = line.split_once('=') {
                raw.insert(key.trim().to_string(), value.trim().to_string());
            }
        }
        for (key, value) in env {
            if key.starts_with("PBS_") && key != "PBS_CONF_FILE" {
                raw.insert(key.clone(), value.clone());
            }
        }
        let port = |key: &str, default: u16| -> Result<u16, ConfError> {
            match raw.get(key) {
                None => Ok(default),
                Some(value) => {
                    value.parse().map_err(|_| ConfError::BadPort { key: key.to_string(), value: value.clone() })
                }
            }
        };
        let flag = |key: &str| raw.get(key).is_some_and(|v| v.trim() == "1");
        let text_value = |key: &str| raw.get(key).filter(|v| !v.is_empty()).cloned();
        Ok(PbsConf {
            server: text_value("PBS_SERVER"),
            home: text_value("PBS_HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_PBS_HOME)),
            exec: text_value("PBS_EXEC").map(PathBuf::from),
            batch_port: port("PBS_BATCH_SERVICE_PORT", DEFAULT_BATCH_PORT)?,
            mom_port: port("PBS_MOM_SERVICE_PORT", DEFAULT_MOM_PORT)?,
            manager_port: port("PBS_MANAGER_SERVICE_PORT", DEFAULT_MANAGER_PORT)?,
            start_server: flag("PBS_START_SERVER"),
            start_sched: flag("PBS_START_SCHED"),
            start_mom: flag("PBS_START_MOM"),
            mom_node_name: text_value("PBS_MOM_NODE_NAME"),
            raw,
        })
    }

    /// The Unix socket local clients use to reach the server.
    pub fn server_socket(&self) -> PathBuf {
        self.home.join("server_sock")
    }

    /// The server's store, `PBS_HOME/server_priv/serverdb.sqlite` ([`server_store_file`]).
    pub fn server_store_file(&self) -> PathBuf {
        server_store_file(&self.home)
    }

    /// The server's master key, `PBS_HOME/server_priv/cluster_key`: it never leaves the
    /// server host, and every other daemon's key is derived from it. `PBS_CLUSTER_KEY_FILE`
    /// does not move it: on a host running the server and a mom from one pbs.conf, that
    /// setting names the mom's key.
    pub fn master_key_file(&self) -> PathBuf {
        self.home.join("server_priv").join("cluster_key")
    }

    /// Where a mom or a scheduler over TCP finds its key: `PBS_CLUSTER_KEY_FILE`, its own
    /// key as written by `pbs_server --mom-key`/`--sched-key`; without it, the master key
    /// under this `PBS_HOME`, from which a daemon on the server host derives its own.
    pub fn daemon_key(&self) -> DaemonKey {
        match self.raw.get("PBS_CLUSTER_KEY_FILE") {
            Some(path) if !path.is_empty() => DaemonKey::Own(PathBuf::from(path)),
            _ => DaemonKey::FromMaster(self.master_key_file()),
        }
    }
}

/// Where a daemon other than the server gets the key of its links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DaemonKey {
    /// A file holding this daemon's own (derived) key.
    Own(PathBuf),
    /// The server's master key, readable here because the daemon runs on the server host.
    FromMaster(PathBuf),
}

impl DaemonKey {
    /// The file read.
    pub fn path(&self) -> &std::path::Path {
        match self {
            DaemonKey::Own(path) | DaemonKey::FromMaster(path) => path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys_defaults_and_env_override() {
        let text = "# comment\nPBS_SERVER=head\nPBS_HOME=/tmp/h\nPBS_START_MOM=1\n\nPBS_BATCH_SERVICE_PORT=16001\n";
        let env = vec![("PBS_SERVER".to_string(), "other".to_string())];
        let conf = PbsConf::parse(text, &env).unwrap();
        assert_eq!(conf.server.as_deref(), Some("other"));
        assert_eq!(conf.home, PathBuf::from("/tmp/h"));
        assert_eq!(conf.batch_port, 16001);
        assert_eq!(conf.mom_port, DEFAULT_MOM_PORT);
        assert!(conf.start_mom);
        assert!(!conf.start_server);
        assert_eq!(conf.server_socket(), PathBuf::from("/tmp/h/server_sock"));
    }

    #[test]
    fn a_daemon_key_file_is_its_own_and_never_moves_the_master() {
        let master = PathBuf::from("/tmp/h/server_priv/cluster_key");
        let conf = PbsConf::parse("PBS_HOME=/tmp/h\n", &[]).unwrap();
        assert_eq!(conf.daemon_key(), DaemonKey::FromMaster(master.clone()));
        let conf = PbsConf::parse("PBS_HOME=/tmp/h\nPBS_CLUSTER_KEY_FILE=/etc/pbs/n1.key\n", &[]).unwrap();
        assert_eq!(conf.daemon_key(), DaemonKey::Own(PathBuf::from("/etc/pbs/n1.key")));
        assert_eq!(conf.master_key_file(), master);
    }

    #[test]
    fn bad_port_is_an_error() {
        let err = PbsConf::parse("PBS_BATCH_SERVICE_PORT=abc", &[]).unwrap_err();
        assert!(matches!(err, ConfError::BadPort { .. }));
    }
}
