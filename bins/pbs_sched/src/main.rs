//! `pbs_sched`: reads pbs.conf and sched_config, sets up logging, and runs the scheduler
//! in the foreground until SIGTERM or SIGINT.

use std::path::PathBuf;
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
    let sched_config = SchedConfig::parse(&pbs_sched::logging::daemon::read_optional(&sched_config_path)?);
    if args.daemon.check_config {
        println!("pbs_sched: configuration OK (PBS_HOME={})", conf.home.display());
        return Ok(());
    }
    // Block the stop signals before any thread starts, so that every thread inherits the
    // mask and only the waiting thread below receives them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals.thread_block().context("blocking signals")?;

    args.daemon.init_log(conf.home.join("sched_logs"), "Svr", "pbs_sched");
    let target = match &args.server {
        Some(addr) => Target::Tcp(addr.clone()),
        None => Target::Unix(conf.server_socket()),
    };
    let daemon = Daemon::new(DaemonConfig::new(target, Some(conf.cluster_key_file()), sched_config));
    let stopper = daemon.stopper();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Ok(signal) = signals.wait() {
                pbs_sched::logging::daemon::log_stop(signal.as_str(), "");
            }
            stopper.stop();
        })
        .context("starting the signal thread")?;
    tracing::info!("pbs_sched started");
    daemon.run()?;
    tracing::info!("pbs_sched stopped");
    Ok(())
}
