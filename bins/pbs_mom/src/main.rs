//! `pbs_mom`: reads pbs.conf, sets up logging, re-adopts the jobs of a previous run, and
//! serves the server's link in the foreground until SIGTERM or SIGINT (running jobs go on:
//! their shepherds do not need the mom); SIGHUP reopens its log and reads pbs.conf again,
//! jobs and link untouched. With `--shepherd <records file>` it is instead the
//! per-job shepherd the mom starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use nix::sys::signal::Signal;
use pbs_mom::layout::Layout;
use pbs_mom::logging::daemon::{self, DaemonArgs};
use pbs_mom::{Mom, MomConfig};

/// The PBS execution daemon.
#[derive(Parser, Debug)]
#[command(name = "pbs_mom", version)]
struct Args {
    /// `--conf`, `--debug`, `--check-config`.
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Address to listen on for the server (default 0.0.0.0:PBS_MOM_SERVICE_PORT).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Internal: run as the shepherd of the job whose records file this is.
    #[arg(long, hide = true, value_name = "RECORDS")]
    shepherd: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Before anything starts a thread: the shepherd forks the job and must be
    // single-threaded when it does.
    if let Some(records) = &args.shepherd {
        return ExitCode::from(u8::try_from(pbs_mom::shepherd::run(records)).unwrap_or(1));
    }
    daemon::finish("pbs_mom", run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let conf = args.daemon.load_conf()?;
    let config = MomConfig::from_conf(&conf, args.listen)?;
    // A key file others may read or write is refused now, not at the server's first link;
    // a missing one may still be installed while the mom runs.
    let missing_key = match pbs_proto::keys::load(&config.key, &pbs_proto::Role::Mom { node: config.node_name.clone() })
    {
        Ok(_) => None,
        Err(e) if e.is_missing() => Some(e),
        Err(e) => return Err(e.into()),
    };
    if args.daemon.check_config {
        println!("pbs_mom: configuration OK (PBS_HOME={}, node {})", config.home.display(), config.node_name);
        return Ok(());
    }
    args.daemon.init_log(Layout::new(&config.home).log_dir(), "Svr", "pbs_mom");
    if let Some(e) = missing_key {
        tracing::warn!("{e}: the server's links are refused until it is installed");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    let conf_path = args.daemon.conf.clone();
    let listen = args.listen;
    runtime.block_on(async move {
        let mom = Mom::new(config.clone())?;
        let reloaded = mom.clone();
        let hung_up = mom.clone();
        daemon::on_hangup(move || {
            // As OpenPBS's mom: the signal caught, a reset, the log reopened, the settings read again.
            tracing::info!(object_type = "n/a", object_name = "catch_hup", "caught signal {}", Signal::SIGHUP as i32);
            tracing::info!(object_type = "n/a", object_name = "process_hup", "reset");
            pbs_mom::logging::reopen();
            let read = daemon::load_conf(&conf_path)
                .and_then(|conf| MomConfig::from_conf(&conf, listen).map_err(anyhow::Error::from));
            match read {
                Ok(config) => {
                    reloaded.reload(config);
                    tracing::info!("pbs.conf read again from {}", conf_path.display());
                }
                Err(e) => tracing::warn!("SIGHUP: keeping the current settings: {e:#}"),
            }
            let mom = hung_up.clone();
            tokio::spawn(async move { mom.exechost_startup().await });
        })?;
        let notes = mom.bind_notes()?;
        mom.recover();
        // Before the server's first link, which then hears their outcome.
        mom.exechost_startup().await;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        tracing::info!(
            "pbs_mom ready: node {}, listening on {}, PBS_HOME {}",
            config.node_name,
            config.listen,
            config.home.display()
        );
        pbs_mom::link::run(mom, listener, notes, daemon::shutdown_signal(" (jobs keep running)")).await;
        Ok::<(), anyhow::Error>(())
    })?;
    // Blocking tasks (a sample in progress) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    Ok(())
}
