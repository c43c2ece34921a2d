//! What pbs_server, pbs_sched and pbs_mom share around their own work: the options every
//! daemon takes (`--conf`, `--debug`, `--check-config`), reading pbs.conf, setting up the
//! log, the exit status, waiting for SIGTERM or SIGINT, and handling SIGHUP.
//!
//! pbs.conf is read here rather than in `pbs_core::conf`, which stays free of I/O: this
//! module reads the file and the `PBS_*` environment, [`PbsConf::parse`] does the rest.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use pbs_core::conf::{DEFAULT_CONF_FILE, PbsConf};

/// The options of every daemon; each flattens them into its own clap `Args`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct DaemonArgs {
    /// pbs.conf to read.
    #[arg(long, env = "PBS_CONF_FILE", default_value = DEFAULT_CONF_FILE)]
    pub conf: PathBuf,
    /// Log at debug level (RUST_LOG overrides).
    #[arg(long)]
    pub debug: bool,
    /// Check the configuration and exit (for systemd's ExecStartPre).
    #[arg(long)]
    pub check_config: bool,
}

impl DaemonArgs {
    /// Reads the pbs.conf of `--conf` (see [`load_conf`]).
    pub fn load_conf(&self) -> anyhow::Result<PbsConf> {
        load_conf(&self.conf)
    }

    /// Installs the PBS log layer (see [`crate::layer::init`]) at `info`, or `debug` with `--debug`.
    pub fn init_log(&self, dir: PathBuf, daemon: &str, default_object: &str) {
        crate::layer::init(dir, daemon, default_object, if self.debug { "debug" } else { "info" });
    }
}

/// The text of a file a daemon can do without: empty if there is none.
pub fn read_optional(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Reads pbs.conf from `path` with the process's `PBS_*` environment variables overriding
/// it, as OpenPBS does; a missing file means all defaults. The daemons' one way to load it.
pub fn load_conf(path: &Path) -> anyhow::Result<PbsConf> {
    let text = read_optional(path)?;
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("PBS_")).collect();
    PbsConf::parse(&text, &env).context("parsing pbs.conf")
}

/// Ends a daemon's `main`: writes out the log, then turns `result` into the exit status,
/// printing an error on stderr as `<name>: <error>: <cause>...` and exiting 1.
pub fn finish(name: &str, result: anyhow::Result<()>) -> ExitCode {
    crate::layer::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Makes a panic on any thread end the process, after logging it and writing out the log.
///
/// A daemon keeps its state behind locks in memory: a panic in the middle of a change
/// leaves that state half-changed, and a process that carried on (a task's panic caught by
/// the runtime, a poisoned lock answered with an error) would serve it, or refuse every
/// request, until someone restarted it by hand. Ending the process instead lets its
/// supervisor (systemd `Restart=on-failure`) start it again from what is on disk. The hook
/// runs before the panicking thread unwinds, so no other thread sees a poisoned lock.
pub fn exit_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        let backtrace = std::backtrace::Backtrace::capture();
        tracing::error!("{info}; the daemon exits so that a restart recovers its state from disk");
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            tracing::error!("backtrace: {backtrace}");
        }
        crate::layer::flush();
        std::process::abort();
    }));
}

/// Logs that `signal` (`SIGTERM`) stops the daemon; `note` follows `shutting down`.
pub fn log_stop(signal: &str, note: &str) {
    tracing::info!("Received {signal}, shutting down{note}");
}

/// Handles SIGHUP from now on: each one calls `on_hangup` on the runtime (the handler is
/// in place when this returns, so a SIGHUP no longer ends the process). Needs a tokio
/// runtime with its I/O driver.
pub fn on_hangup(mut on_hangup: impl FnMut() + Send + 'static) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = signal(SignalKind::hangup()).context("handling SIGHUP")?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            on_hangup();
        }
    });
    Ok(())
}

/// Resolves at the first SIGTERM or SIGINT, after logging it (see [`log_stop`]); never if
/// the handlers cannot be installed. Needs a tokio runtime with its I/O driver.
pub async fn shutdown_signal(note: &'static str) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => log_stop("SIGTERM", note),
        _ = int.recv() => log_stop("SIGINT", note),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Args {
        #[command(flatten)]
        daemon: DaemonArgs,
    }

    #[test]
    fn options() {
        let args = Args::try_parse_from(["d", "--conf", "/x/pbs.conf", "--debug"]).map(|a| a.daemon);
        let expected = DaemonArgs { conf: PathBuf::from("/x/pbs.conf"), debug: true, check_config: false };
        assert_eq!(args.ok(), Some(expected));
    }

    #[test]
    fn a_missing_file_is_empty_and_a_directory_an_error() {
        let dir = std::env::temp_dir();
        assert_eq!(read_optional(&dir.join("pbs-log-no-such-file.conf")).ok().as_deref(), Some(""));
        let error = read_optional(&dir).err().map(|e| format!("{e:#}"));
        assert!(error.is_some_and(|e| e.starts_with(&format!("reading {}: ", dir.display()))));
    }
}
