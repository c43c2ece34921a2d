//! `pbsctl start|stop|status`: runs the daemons pbs.conf enables (`PBS_START_SERVER`,
//! `PBS_START_MOM`, `PBS_START_SCHED`) on a one-host cluster, as OpenPBS's `pbs` init
//! script does. Not an OpenPBS command.
//!
//! The daemons run in the foreground by design (systemd starts them that way), so `start`
//! detaches them itself: each gets its own session, its output in
//! `PBS_HOME/<daemon>.stderr`, and its pid in `PBS_HOME/<daemon>.pid`. The server comes
//! first and must answer on its socket before the mom starts; on a first start (the server
//! has no node) the local node is created for the mom; the scheduler comes last. `stop`
//! sends SIGTERM in the reverse order and waits for each daemon to exit.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;
use pbs_client::{Client, ClientError};
use pbs_core::Pbse;
use pbs_core::conf::{DEFAULT_CONF_FILE, PbsConf};
use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp, Request};

/// How long the server and the mom may take to answer after they are started.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a daemon may take to exit after SIGTERM (the server commits what it has
/// acknowledged first), as `TimeoutStopSec` in the systemd units.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// The scheduler has nothing to connect to: it counts as started if it is still running
/// this long after it was spawned (a bad configuration makes a daemon exit at once).
const STARTUP_GRACE: Duration = Duration::from_millis(500);
/// Between two looks at a starting or stopping daemon.
const POLL: Duration = Duration::from_millis(50);

/// Starts, stops or reports the daemons of this host.
#[derive(Parser, Debug)]
#[command(name = "pbsctl", disable_version_flag = true)]
struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Start the daemons pbs.conf enables (server, mom, scheduler, in that order).
    Start,
    /// Stop the daemons pbsctl started, in the reverse order.
    Stop,
    /// Print whether each daemon runs.
    Status,
}

/// One of the daemons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Daemon {
    Server,
    Mom,
    Sched,
}

/// The order of `start`; `stop` goes backwards.
const DAEMONS: [Daemon; 3] = [Daemon::Server, Daemon::Mom, Daemon::Sched];

impl Daemon {
    fn name(self) -> &'static str {
        match self {
            Daemon::Server => "pbs_server",
            Daemon::Mom => "pbs_mom",
            Daemon::Sched => "pbs_sched",
        }
    }

    fn enabled(self, conf: &PbsConf) -> bool {
        match self {
            Daemon::Server => conf.start_server,
            Daemon::Mom => conf.start_mom,
            Daemon::Sched => conf.start_sched,
        }
    }

    fn pid_file(self, conf: &PbsConf) -> PathBuf {
        conf.home.join(format!("{}.pid", self.name()))
    }

    fn stderr_file(self, conf: &PbsConf) -> PathBuf {
        conf.home.join(format!("{}.stderr", self.name()))
    }
}

/// A failure to report on stderr (after `pbsctl: `), making the exit status 1.
type Failure = String;

/// The places a daemon's binary is looked for, in order: beside this program (an
/// installation or a build directory), `PBS_EXEC/sbin` and `PBS_EXEC/bin` (OpenPBS's
/// layout), then each `PATH` directory.
fn candidates(name: &str, own_dir: Option<&Path>, exec: Option<&Path>, path: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = own_dir {
        out.push(dir.join(name));
    }
    if let Some(exec) = exec {
        out.push(exec.join("sbin").join(name));
        out.push(exec.join("bin").join(name));
    }
    for dir in path.unwrap_or_default().split(':').filter(|d| !d.is_empty()) {
        out.push(Path::new(dir).join(name));
    }
    out
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the binary of `daemon` is.
fn find_binary(daemon: Daemon, conf: &PbsConf) -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe().ok();
    let path = std::env::var("PATH").ok();
    locate(daemon.name(), exe.as_deref().and_then(Path::parent), conf.exec.as_deref(), path.as_deref())
}

/// The first executable of [`candidates`], or a message naming where it was looked for.
fn locate(name: &str, own_dir: Option<&Path>, exec: Option<&Path>, path: Option<&str>) -> Result<PathBuf, Failure> {
    candidates(name, own_dir, exec, path).into_iter().find(|p| is_executable(p)).ok_or_else(|| {
        let own = own_dir.map(|d| format!("in {}", d.display())).unwrap_or_else(|| "beside pbsctl".into());
        let exec = exec.map(|e| format!(", in {}/sbin, {}/bin", e.display(), e.display())).unwrap_or_default();
        format!("cannot find {name} (looked {own}{exec}, and in PATH)")
    })
}

/// The pid recorded in a pid file, if the file holds one.
fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok().filter(|pid| *pid > 0)
}

/// Whether process `pid` is a live (not zombie) process named `name`: a pid file can
/// outlive its daemon and the pid be reused by something else.
fn is_daemon(pid: i32, name: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // `pid (comm) S ...`: the state follows the last `)`.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    if matches!(state, Some('Z' | 'X') | None) {
        return false;
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim_end() == name)
}

/// The pid of `daemon` if it runs as its pid file says.
fn running(daemon: Daemon, conf: &PbsConf) -> Option<i32> {
    read_pid(&daemon.pid_file(conf)).filter(|pid| is_daemon(*pid, daemon.name()))
}

/// Whether a server answers on the socket of pbs.conf.
fn server_answers(conf: &PbsConf) -> bool {
    Client::connect(conf)
        .and_then(|mut client| client.status(Request::StatusServer { attrs: vec!["server_state".into()] }))
        .is_ok()
}

/// Whether something accepts connections on this host's `port` (the mom's).
fn port_answers(port: u16) -> bool {
    let mut addrs: Vec<std::net::SocketAddr> = vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))];
    if let Ok(resolved) = (pbs_cli::local_host_name().as_str(), port).to_socket_addrs() {
        addrs.extend(resolved);
    }
    addrs.iter().any(|addr| TcpStream::connect_timeout(addr, Duration::from_millis(200)).is_ok())
}

/// The last lines a daemon wrote, to show why it stopped.
fn tail(path: &Path, lines: usize) -> String {
    let Ok(file) = File::open(path) else { return String::new() };
    let all: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
    let start = all.len().saturating_sub(lines);
    all[start..].iter().map(|l| format!("  {l}\n")).collect()
}

/// Spawns `binary` detached: its own session (no terminal signals reach it), stdin from
/// /dev/null, stdout and stderr appended to its `.stderr` file.
fn spawn(daemon: Daemon, binary: &Path, conf: &PbsConf, conf_path: &str) -> Result<Child, Failure> {
    let log_path = daemon.stderr_file(conf);
    let open_log = || {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))
    };
    let mut command = Command::new(binary);
    command
        .env("PBS_CONF_FILE", conf_path)
        .current_dir(&conf.home)
        .stdin(Stdio::null())
        .stdout(open_log()?)
        .stderr(open_log()?);
    // SAFETY: between fork and exec the child only calls setsid(2), which is
    // async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
    let child = command.spawn().map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let pid_file = daemon.pid_file(conf);
    std::fs::write(&pid_file, format!("{}\n", child.id())).map_err(|e| {
        format!("{} started (pid {}) but {} cannot be written: {e}", daemon.name(), child.id(), pid_file.display())
    })?;
    Ok(child)
}

/// What a started daemon turned out to be.
enum Outcome {
    Ready,
    /// Still running but not answering by the deadline.
    Silent,
}

/// Polls until `ready` holds, the daemon exits (a failure, with the end of its output), or
/// `deadline` passes.
fn wait_started(
    daemon: Daemon,
    child: &mut Child,
    conf: &PbsConf,
    deadline: Instant,
    ready: impl Fn() -> bool,
) -> Result<Outcome, Failure> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let _ = std::fs::remove_file(daemon.pid_file(conf));
            let log = daemon.stderr_file(conf);
            return Err(format!(
                "{} exited at once ({status}); the end of {}:\n{}",
                daemon.name(),
                log.display(),
                tail(&log, 10).trim_end()
            ));
        }
        if ready() {
            return Ok(Outcome::Ready);
        }
        if Instant::now() >= deadline {
            return Ok(Outcome::Silent);
        }
        std::thread::sleep(POLL);
    }
}

/// The name of the local node: `PBS_MOM_NODE_NAME`, else the short host name.
fn node_name(conf: &PbsConf, host: &str) -> String {
    conf.mom_node_name.clone().unwrap_or_else(|| host.split('.').next().unwrap_or(host).to_string())
}

/// On a first start (the server has no node), creates the node of the local mom.
fn create_local_node(conf: &PbsConf) -> Result<Option<String>, Failure> {
    let mut client = Client::connect(conf).map_err(|e| format!("cannot create the local node: {e}"))?;
    let nodes = match client.status_nodes(Vec::new()) {
        Ok(reply) => reply.objects.len(),
        // OpenPBS answers a status of an empty node list with this code.
        Err(ClientError::Server { code, .. }) if code == Pbse::NONODES => 0,
        Err(e) => return Err(format!("cannot list the nodes: {e}")),
    };
    if nodes > 0 {
        return Ok(None);
    }
    let host = pbs_cli::local_host_name();
    let name = node_name(conf, &host);
    let attrs = vec![
        MgrAttr { name: "Mom".into(), op: MgrOp::Set, value: host },
        MgrAttr { name: "Port".into(), op: MgrOp::Set, value: conf.mom_port.to_string() },
    ];
    client
        .manager(MgrCommand::Create, MgrObject::Node, vec![name.clone()], attrs)
        .map_err(|e| format!("cannot create node {name}: {e}"))?;
    Ok(Some(name))
}

fn start(conf: &PbsConf, conf_path: &str) -> Result<(), Failure> {
    let enabled: Vec<Daemon> = DAEMONS.into_iter().filter(|d| d.enabled(conf)).collect();
    if enabled.is_empty() {
        return Err(format!(
            "{conf_path} starts no daemon (set PBS_START_SERVER, PBS_START_MOM or PBS_START_SCHED to 1)"
        ));
    }
    // Every binary is found before anything starts, so a missing one leaves nothing half up.
    let mut binaries = Vec::new();
    for daemon in &enabled {
        binaries.push((*daemon, find_binary(*daemon, conf)?));
    }
    std::fs::create_dir_all(&conf.home).map_err(|e| format!("cannot create {}: {e}", conf.home.display()))?;
    for (daemon, binary) in binaries {
        let name = daemon.name();
        if let Some(pid) = running(daemon, conf) {
            println!("{name} is already running (pid {pid})");
        } else if daemon == Daemon::Server && server_answers(conf) {
            println!("{name} is already running (not started by pbsctl)");
        } else {
            // Else the readiness probe below would mistake another process for this mom.
            if daemon == Daemon::Mom && port_answers(conf.mom_port) {
                return Err(format!(
                    "port {} (PBS_MOM_SERVICE_PORT) is already in use: is another pbs_mom running?",
                    conf.mom_port
                ));
            }
            let mut child = spawn(daemon, &binary, conf, conf_path)?;
            let pid = child.id();
            match daemon {
                Daemon::Server => {
                    let deadline = Instant::now() + READY_TIMEOUT;
                    if let Outcome::Silent = wait_started(daemon, &mut child, conf, deadline, || server_answers(conf))?
                    {
                        return Err(format!(
                            "{name} (pid {pid}) does not answer on {} after {} s; see {}",
                            conf.server_socket().display(),
                            READY_TIMEOUT.as_secs(),
                            daemon.stderr_file(conf).display()
                        ));
                    }
                }
                Daemon::Mom => {
                    let deadline = Instant::now() + READY_TIMEOUT;
                    let port = conf.mom_port;
                    if let Outcome::Silent = wait_started(daemon, &mut child, conf, deadline, || port_answers(port))? {
                        eprintln!("pbsctl: warning: {name} (pid {pid}) runs but does not answer on port {port} yet");
                    }
                }
                Daemon::Sched => {
                    wait_started(daemon, &mut child, conf, Instant::now() + STARTUP_GRACE, || false)?;
                }
            }
            println!("{name} started (pid {pid})");
        }
        if daemon == Daemon::Mom {
            if let Some(node) = create_local_node(conf)? {
                println!("created node {node}");
            }
        }
    }
    Ok(())
}

/// Sends SIGTERM and waits for the process to go.
fn terminate(daemon: Daemon, pid: i32) -> Result<(), Failure> {
    let name = daemon.name();
    match signal::kill(Pid::from_raw(pid), Signal::SIGTERM) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(e) => return Err(format!("cannot signal {name} (pid {pid}): {e}")),
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    while is_daemon(pid, name) {
        if Instant::now() >= deadline {
            return Err(format!("{name} (pid {pid}) did not stop within {} s", STOP_TIMEOUT.as_secs()));
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

fn stop(conf: &PbsConf) -> Result<(), Failure> {
    let mut failures = Vec::new();
    for daemon in DAEMONS.into_iter().rev() {
        let name = daemon.name();
        let pid_file = daemon.pid_file(conf);
        match running(daemon, conf) {
            Some(pid) => match terminate(daemon, pid) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&pid_file);
                    println!("{name} stopped (pid {pid})");
                }
                Err(e) => failures.push(e),
            },
            None => {
                // A pid file whose process is gone is stale.
                let _ = std::fs::remove_file(&pid_file);
                if daemon == Daemon::Server && server_answers(conf) {
                    failures.push(format!(
                        "{name} answers on {} but was not started by pbsctl; stop it the way it was started",
                        conf.server_socket().display()
                    ));
                } else if daemon.enabled(conf) {
                    println!("{name} is not running");
                }
            }
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\npbsctl: ")) }
}

/// One line per daemon, as OpenPBS's `pbs status`; `false` if an enabled one is down.
fn status(conf: &PbsConf) -> bool {
    let mut all_up = true;
    for daemon in DAEMONS {
        let name = daemon.name();
        match running(daemon, conf) {
            Some(pid) => println!("{name} is pid {pid}"),
            None if daemon.enabled(conf) => {
                all_up = false;
                if daemon == Daemon::Server && server_answers(conf) {
                    println!("{name} is running (not started by pbsctl)");
                    all_up = true;
                } else {
                    println!("{name} is not running");
                }
            }
            None => {}
        }
    }
    all_up
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let argv = pbs_cli::argv();
    if pbs_cli::version_only(&argv) {
        pbs_cli::print_version();
        return ExitCode::SUCCESS;
    }
    let args = Args::parse_from(argv);
    let conf_path = std::env::var("PBS_CONF_FILE").unwrap_or_else(|_| DEFAULT_CONF_FILE.to_string());
    let conf = match pbs_cli::load_conf() {
        Ok(conf) => conf,
        Err(e) => {
            eprintln!("pbsctl: {e:#}");
            return ExitCode::from(1);
        }
    };
    let result = match args.action {
        Action::Start => start(&conf, &conf_path),
        Action::Stop => stop(&conf),
        Action::Status => {
            return if status(&conf) { ExitCode::SUCCESS } else { ExitCode::from(1) };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pbsctl: {message}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(text: &str) -> PbsConf {
        PbsConf::parse(text, &[]).unwrap()
    }

    #[test]
    fn binaries_are_looked_for_beside_pbsctl_then_in_pbs_exec_then_in_path() {
        let found =
            candidates("pbs_mom", Some(Path::new("/opt/x/bin")), Some(Path::new("/opt/pbs")), Some("/usr/bin::/bin"));
        let found: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            found,
            ["/opt/x/bin/pbs_mom", "/opt/pbs/sbin/pbs_mom", "/opt/pbs/bin/pbs_mom", "/usr/bin/pbs_mom", "/bin/pbs_mom"]
        );
        assert_eq!(candidates("pbs_mom", None, None, None), Vec::<PathBuf>::new());
    }

    #[test]
    fn a_missing_binary_is_named_and_a_present_one_found() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let exec = Path::new("/nonexistent/pbs");
        let err = locate("pbs_mom", Some(dir.path()), Some(exec), Some("")).unwrap_err();
        assert_eq!(
            err,
            format!(
                "cannot find pbs_mom (looked in {}, in /nonexistent/pbs/sbin, /nonexistent/pbs/bin, and in PATH)",
                dir.path().display()
            )
        );
        let binary = dir.path().join("pbs_mom");
        std::fs::write(&binary, "#!/bin/sh\n").unwrap();
        assert!(locate("pbs_mom", Some(dir.path()), None, None).is_err(), "not executable");
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate("pbs_mom", Some(dir.path()), Some(exec), None).unwrap(), binary);
    }

    #[test]
    fn files_live_in_pbs_home() {
        let c = conf("PBS_HOME=/var/spool/x\n");
        assert_eq!(Daemon::Server.pid_file(&c), PathBuf::from("/var/spool/x/pbs_server.pid"));
        assert_eq!(Daemon::Sched.stderr_file(&c), PathBuf::from("/var/spool/x/pbs_sched.stderr"));
    }

    #[test]
    fn enabled_daemons_follow_pbs_conf() {
        let c = conf("PBS_START_SERVER=1\nPBS_START_MOM=0\nPBS_START_SCHED=1\n");
        let enabled: Vec<Daemon> = DAEMONS.into_iter().filter(|d| d.enabled(&c)).collect();
        assert_eq!(enabled, [Daemon::Server, Daemon::Sched]);
    }

    #[test]
    fn node_names() {
        assert_eq!(node_name(&conf(""), "host1.example.com"), "host1");
        assert_eq!(node_name(&conf("PBS_MOM_NODE_NAME=n7\n"), "host1.example.com"), "n7");
    }

    #[test]
    fn pid_files_and_processes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.pid");
        assert_eq!(read_pid(&file), None);
        std::fs::write(&file, "1234\n").unwrap();
        assert_eq!(read_pid(&file), Some(1234));
        std::fs::write(&file, "garbage").unwrap();
        assert_eq!(read_pid(&file), None);
        let me = i32::try_from(std::process::id()).unwrap();
        let my_name = std::fs::read_to_string("/proc/self/comm").unwrap();
        assert!(is_daemon(me, my_name.trim_end()));
        assert!(!is_daemon(me, "pbs_server"));
    }

    #[test]
    fn actions_parse() {
        assert_eq!(Args::try_parse_from(["pbsctl", "start"]).unwrap().action, Action::Start);
        assert_eq!(Args::try_parse_from(["pbsctl", "status"]).unwrap().action, Action::Status);
        assert!(Args::try_parse_from(["pbsctl", "restart"]).is_err());
        assert!(Args::try_parse_from(["pbsctl"]).is_err());
    }
}
