//! `pbs_server`: reads pbs.conf, sets up logging, and runs the server in the foreground
//! until SIGTERM or SIGINT; SIGHUP reopens its log.

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
use pbs_server::logging::daemon::{self, DaemonArgs};
use pbs_server::{Server, ServerConfig};

/// The PBS batch server.
#[derive(Parser, Debug)]
#[command(name = "pbs_server", version)]
struct Args {
    /// `--conf`, `--debug`, `--check-config`.
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Address to listen on for daemons (default 0.0.0.0:PBS_BATCH_SERVICE_PORT).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Write the key of node NODE's mom, derived from the master key, to the new file FILE
    /// (mode 0600), then exit. Install it on the node and name it in the node's pbs.conf as
    /// `PBS_CLUSTER_KEY_FILE`.
    #[arg(long, num_args = 2, value_names = ["NODE", "FILE"], conflicts_with = "sched_key")]
    mom_key: Option<Vec<String>>,
    /// Write the key of a scheduler connecting over TCP to the new file FILE (mode 0600),
    /// then exit.
    #[arg(long, value_name = "FILE")]
    sched_key: Option<PathBuf>,
    /// Write no accounting log (OpenPBS's `-A ""`), as when measuring what it costs.
    #[arg(long)]
    no_accounting: bool,
}

fn host_name() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".to_string())
}

fn main() -> ExitCode {
    keep_resident_memory_to_what_is_held();
    let args = Args::parse();
    daemon::finish("pbs_server", run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let conf = args.daemon.load_conf()?;
    if args.daemon.check_config {
        println!("pbs_server: configuration OK (PBS_HOME={})", conf.home.display());
        return Ok(());
    }
    if let Some([node, file]) = args.mom_key.as_deref() {
        let peer = pbs_proto::Role::Mom { node: node.clone() };
        pbs_server::write_peer_key(&conf.master_key_file(), &peer, file.as_ref())?;
        println!("pbs_server: wrote the key of node {node}'s mom to {file}");
        return Ok(());
    }
    if let Some(file) = &args.sched_key {
        pbs_server::write_peer_key(&conf.master_key_file(), &pbs_proto::Role::Scheduler, file)?;
        println!("pbs_server: wrote the scheduler's key to {}", file.display());
        return Ok(());
    }
    let host = host_name();
    let server_name = conf.server.clone().unwrap_or_else(|| host.clone());
    args.daemon.init_log(conf.home.join("server_logs"), "Server", &format!("Server@{host}"));
    daemon::exit_on_panic();
    pbs_server::store::on_writer_idle(collect_thread_heap);
    let cluster_key = pbs_server::load_or_create_cluster_key(&conf.master_key_file())?;
    let config = ServerConfig {
        server_name,
        host,
        home: conf.home.clone(),
        socket_path: conf.server_socket(),
        cluster_key: Some(cluster_key),
        python: conf.raw.get("PBS_PYTHON").map(PathBuf::from),
        accounting: !args.no_accounting,
        mail_host: conf.raw.get("PBS_MAIL_HOST_NAME").filter(|h| !h.is_empty()).cloned(),
        auth_methods: conf.raw.get("PBS_SUPPORTED_AUTH_METHODS").map_or_else(
            || vec!["munge".to_string()],
            |list| list.split(',').map(|m| m.trim().to_ascii_lowercase()).filter(|m| !m.is_empty()).collect(),
        ),
        munge_socket: conf.raw.get("PBS_MUNGE_SOCKET").map_or_else(|| pbs_munge::DEFAULT_SOCKET.into(), Into::into),
    };
    let tcp_addr = args.listen.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], conf.batch_port)));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async move {
        // OpenPBS's server reopens its log at SIGHUP (`change_logs`) and reads nothing again.
        daemon::on_hangup(pbs_server::logging::reopen)?;
        let server = Arc::new(Server::open(config.clone()).await?);
        let listeners = pbs_server::bind(&config, Some(tcp_addr)).await?;
        tracing::info!(socket = %config.socket_path.display(), tcp = %tcp_addr, "Server ready");
        pbs_server::run(server, listeners, daemon::shutdown_signal("")).await;
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(())
}

/// Makes the server's resident memory follow what it holds, so that a burst of large
/// requests does not leave it tens of MiB larger for good (the wire fuzzer measured, after
/// its run, 0.2 MiB of live Rust heap in an RSS of 50-75 MiB).
fn keep_resident_memory_to_what_is_held() {
    // mimalloc maps its arenas as large regions that the kernel backs with 2 MiB
    // transparent huge pages, so a few live objects pin a whole huge page and the heap's
    // RSS moves in 2 MiB steps. The server's heap is small objects; it gains nothing from
    // them. Failing only leaves the kernel's default.
    let _ = nix::sys::prctl::set_thp_disable(true);
    // SQLite allocates from glibc malloc, not mimalloc. Left dynamic, freeing one large
    // mapped block (a 16 MiB script's row) raises glibc's mmap threshold to its size and
    // its trim threshold to twice that; SQLite's next large buffers then come from a
    // thread arena whose freed top is never given back (34 MiB held in the store
    // writer's arena with 2 MiB in use, which `malloc_trim` does not release either).
    // A fixed threshold maps large blocks on their own and trims a freed top.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only sets allocator parameters; this runs
    // first in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Gives back the calling thread's freed pages (the store writer's, before it waits).
fn collect_thread_heap() {
    // SAFETY: mi_collect only walks the calling thread's own heap; it takes no pointer.
    unsafe { libmimalloc_sys::mi_collect(false) }
}
