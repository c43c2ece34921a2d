//! `pbs_sched`: reads pbs.conf, sched_config, dedicated_time and holidays, sets up
//! logging, and runs the scheduler in the foreground until SIGTERM or SIGINT; SIGHUP
//! re-reads sched_config, dedicated_time and holidays.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use nix::sys::signal::{SigSet, Signal};
use pbs_sched::SchedConfig;
use pbs_sched::daemon::{Daemon, DaemonConfig, Target};
use pbs_sched::logging::daemon::DaemonArgs;

/// The PBS scheduler.
#[derive(Parser, Debug)]
#[command(name = "pbs_sched", version)]
struct Args {
    /// `--conf`, `--debug`, `--check-config`.
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Reach the server over TCP at HOST:PORT (proving the cluster key) instead of its
    /// local Unix socket.
    #[arg(long, value_name = "HOST:PORT")]
    server: Option<String>,
    /// sched_config to read (default PBS_HOME/sched_priv/sched_config).
    #[arg(long)]
    sched_config: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    pbs_sched::logging::daemon::finish("pbs_sched", run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let conf = args.daemon.load_conf()?;
    let sched_config_path =
        args.sched_config.clone().unwrap_or_else(|| conf.home.join("sched_priv").join("sched_config"));
    let sched_priv = conf.home.join("sched_priv");
    let installed = if args.sched_config.is_none() { install_default_config(&sched_config_path) } else { Ok(false) };
    let (sched_config, problems) = read_settings(&sched_config_path, &sched_priv)?;
    if args.daemon.check_config {
        println!("pbs_sched: configuration OK (PBS_HOME={})", conf.home.display());
        return Ok(());
    }
    // Block the stop signals before any thread starts, so that every thread inherits the
    // mask and only the waiting thread below receives them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGHUP);
    signals.thread_block().context("blocking signals")?;

    args.daemon.init_log(conf.home.join("sched_logs"), "Svr", "pbs_sched");
    // A panicked reader or cycle would leave a scheduler that never decides again; a
    // restart rebuilds its mirror from the server's snapshot.
    pbs_sched::logging::daemon::exit_on_panic();
    match installed {
        Ok(true) => tracing::info!(file = %sched_config_path.display(), "Installed the default sched_config"),
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(file = %sched_config_path.display(), error = %e, "Cannot install the default sched_config")
        }
    }
    for problem in problems {
        tracing::warn!("{problem}");
    }
    let target = match &args.server {
        Some(addr) => Target::Tcp(addr.clone()),
        None => Target::Unix(conf.server_socket()),
    };
    let key = conf.daemon_key();
    if matches!(target, Target::Tcp(_)) {
        // A key file others may read or write is refused now rather than at each retry.
        if let Err(e) = pbs_proto::keys::load(&key, &pbs_proto::Role::Scheduler)
            && !e.is_missing()
        {
            return Err(e.into());
        }
    }
    let daemon = Daemon::new(DaemonConfig::new(target, Some(key), sched_config));
    let stopper = daemon.stopper();
    let reloader = daemon.reloader();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            loop {
                match signals.wait() {
                    Ok(Signal::SIGHUP) => {
                        // As OpenPBS's scheduler (`restart`): the log reopened, the restart noted.
                        pbs_sched::logging::reopen();
                        tracing::info!(object_name = "restart", "restart on signal {}", Signal::SIGHUP as i32);
                        match read_settings(&sched_config_path, &sched_priv) {
                            Ok((config, problems)) => {
                                for problem in problems {
                                    tracing::warn!("{problem}");
                                }
                                reloader.reload(config);
                            }
                            Err(e) => tracing::warn!("SIGHUP: keeping the current settings: {e:#}"),
                        }
                    }
                    Ok(signal) => {
                        pbs_sched::logging::daemon::log_stop(signal.as_str(), "");
                        break;
                    }
                    Err(_) => break,
                }
            }
            stopper.stop();
        })
        .context("starting the signal thread")?;
    tracing::info!("pbs_sched started");
    daemon.run()?;
    tracing::info!("pbs_sched stopped");
    Ok(())
}

/// sched_config plus the `dedicated_time` windows and the `holidays` non-prime intervals
/// of `sched_priv` (a missing file is empty), with one message per malformed line of any
/// of them (skipped).
/// Writes the default sched_config where none is (a first start), never over a file an
/// admin has: `Ok(true)` when it was written.
fn install_default_config(path: &Path) -> std::io::Result<bool> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o750).create(dir)?;
    }
    let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    };
    file.write_all(pbs_sched::DEFAULT_SCHED_CONFIG.as_bytes())?;
    Ok(true)
}

fn read_settings(sched_config: &Path, sched_priv: &Path) -> anyhow::Result<(SchedConfig, Vec<String>)> {
    let read = pbs_sched::logging::daemon::read_optional;
    let (mut config, mut problems) = SchedConfig::parse_checked(&read(sched_config)?);
    let (windows, more) =
        pbs_sched::parse_dedicated_time(&read(&sched_priv.join("dedicated_time"))?, pbs_sched::local_epoch);
    config.dedicated = windows;
    problems.extend(more);
    let (nonprime, more) =
        pbs_sched::prime::parse_holidays(&read(&sched_priv.join("holidays"))?, pbs_sched::local_epoch);
    config.nonprime = nonprime;
    problems.extend(more);
    Ok((config, problems))
}
