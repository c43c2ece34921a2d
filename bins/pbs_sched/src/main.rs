//! `pbs_sched`: reads pbs.conf and sched_config, sets up logging, and runs the scheduler
//! in the foreground until SIGTERM or SIGINT.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use nix::sys::signal::{SigSet, Signal};
use pbs_core::conf::{DEFAULT_CONF_FILE, PbsConf};
use pbs_sched::SchedConfig;
use pbs_sched::daemon::{Daemon, DaemonConfig, Target};

/// The PBS scheduler.
#[derive(Parser, Debug)]
#[command(name = "pbs_sched", version)]
struct Args {
    /// pbs.conf to read.
    #[arg(long, env = "PBS_CONF_FILE", default_value = DEFAULT_CONF_FILE)]
    conf: PathBuf,
    /// Log at debug level (RUST_LOG overrides).
    #[arg(long)]
    debug: bool,
    /// Check the configuration and exit (for systemd's ExecStartPre).
    #[arg(long)]
    check_config: bool,
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
    let result = run(args);
    pbs_sched::logging::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pbs_sched: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn read_optional(path: &std::path::Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let text = read_optional(&args.conf)?;
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("PBS_")).collect();
    let conf = PbsConf::parse(&text, &env).context("parsing pbs.conf")?;
    let sched_config_path =
        args.sched_config.clone().unwrap_or_else(|| conf.home.join("sched_priv").join("sched_config"));
    let sched_config = SchedConfig::parse(&read_optional(&sched_config_path)?);
    if args.check_config {
        println!("pbs_sched: configuration OK (PBS_HOME={})", conf.home.display());
        return Ok(());
    }
    // Block the stop signals before any thread starts, so that every thread inherits the
    // mask and only the waiting thread below receives them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals.thread_block().context("blocking signals")?;

    let filter = if args.debug { "debug" } else { "info" };
    pbs_sched::logging::init(conf.home.join("sched_logs"), "Svr", "pbs_sched", filter);
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
                tracing::info!("Received {signal}, shutting down");
            }
            stopper.stop();
        })
        .context("starting the signal thread")?;
    tracing::info!("pbs_sched started");
    daemon.run()?;
    tracing::info!("pbs_sched stopped");
    Ok(())
}
