//! `pbs_server`: reads pbs.conf, sets up logging, and runs the server in the foreground
//! until SIGTERM or SIGINT.

/// mimalloc: the server allocates many small, short-lived buffers from several threads,
/// where it is markedly cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use pbs_core::conf::{DEFAULT_CONF_FILE, PbsConf};
use pbs_server::{Server, ServerConfig};

/// The PBS batch server.
#[derive(Parser, Debug)]
#[command(name = "pbs_server", version)]
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
    /// Address to listen on for daemons (default 0.0.0.0:PBS_BATCH_SERVICE_PORT).
    #[arg(long)]
    listen: Option<SocketAddr>,
}

fn host_name() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".to_string())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = run(args);
    pbs_server::logging::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pbs_server: {e:#}");
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
    if args.check_config {
        println!("pbs_server: configuration OK (PBS_HOME={})", conf.home.display());
        return Ok(());
    }
    let host = host_name();
    let server_name = conf.server.clone().unwrap_or_else(|| host.clone());
    let filter = if args.debug { "debug" } else { "info" };
    pbs_server::logging::init(conf.home.join("server_logs"), "Server", &format!("Server@{host}"), filter);
    let cluster_key = pbs_server::load_or_create_cluster_key(&conf.cluster_key_file())?;
    let config = ServerConfig {
        server_name,
        host,
        home: conf.home.clone(),
        socket_path: conf.server_socket(),
        cluster_key: Some(cluster_key),
    };
    let tcp_addr = args.listen.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], conf.batch_port)));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async move {
        let server = Arc::new(Server::open(config.clone()).await?);
        let listeners = pbs_server::bind(&config, Some(tcp_addr)).await?;
        tracing::info!(socket = %config.socket_path.display(), tcp = %tcp_addr, "Server ready");
        pbs_server::run(server, listeners, shutdown_signal()).await;
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("Received SIGTERM, shutting down"),
        _ = int.recv() => tracing::info!("Received SIGINT, shutting down"),
    }
}
