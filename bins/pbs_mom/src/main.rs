//! `pbs_mom`: reads pbs.conf, sets up logging, re-adopts the jobs of a previous run, and
//! serves the server's link in the foreground until SIGTERM or SIGINT (running jobs go on:
//! their shepherds do not need the mom). With `--shepherd <jobdir>` it is instead the
//! per-job shepherd the mom starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use pbs_core::conf::{DEFAULT_CONF_FILE, PbsConf};
use pbs_mom::layout::Layout;
use pbs_mom::{Mom, MomConfig};

/// The PBS execution daemon.
#[derive(Parser, Debug)]
#[command(name = "pbs_mom", version)]
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
    /// Address to listen on for the server (default 0.0.0.0:PBS_MOM_SERVICE_PORT).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Internal: run as the shepherd of the job whose directory this is.
    #[arg(long, hide = true, value_name = "JOBDIR")]
    shepherd: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Before anything starts a thread: the shepherd forks the job and must be
    // single-threaded when it does.
    if let Some(job_dir) = &args.shepherd {
        return ExitCode::from(u8::try_from(pbs_mom::shepherd::run(job_dir)).unwrap_or(1));
    }
    let result = run(args);
    pbs_mom::logging::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pbs_mom: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let text = match std::fs::read_to_string(&args.conf) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", args.conf.display())),
    };
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("PBS_")).collect();
    let conf = PbsConf::parse(&text, &env).context("parsing pbs.conf")?;
    let config = MomConfig::from_conf(&conf, args.listen)?;
    if args.check_config {
        println!("pbs_mom: configuration OK (PBS_HOME={}, node {})", config.home.display(), config.node_name);
        return Ok(());
    }
    let filter = if args.debug { "debug" } else { "info" };
    pbs_mom::logging::init(Layout::new(&config.home).log_dir(), "Svr", "pbs_mom", filter);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async move {
        let mom = Mom::new(config.clone())?;
        let notes = mom.bind_notes()?;
        mom.recover();
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        tracing::info!(
            "pbs_mom ready: node {}, listening on {}, PBS_HOME {}",
            config.node_name,
            config.listen,
            config.home.display()
        );
        pbs_mom::link::run(mom, listener, notes, shutdown_signal()).await;
        Ok::<(), anyhow::Error>(())
    })?;
    // Blocking tasks (a sample in progress) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("Received SIGTERM, shutting down (jobs keep running)"),
        _ = int.recv() => tracing::info!("Received SIGINT, shutting down (jobs keep running)"),
    }
}
