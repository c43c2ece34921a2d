//! A one-host test cluster: a real `pbs_server` in a temporary PBS_HOME, and the real
//! command binaries run against it, as root or as the unprivileged user `nobody`.
// A harness failure is a test failure: panicking with a message is the right report.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pbs_client::Client;

/// uid and gid of `nobody`, the unprivileged user of permission tests.
pub const NOBODY: u32 = 65534;

/// How long a daemon may take to become ready before a test fails.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// What a command printed and how it exited.
#[derive(Debug, Clone)]
pub struct Out {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Out {
    fn from_output(output: Output) -> Out {
        Out {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            code: output.status.code().unwrap_or(-1),
        }
    }

    /// Panics with everything the command printed unless it exited 0.
    #[track_caller]
    pub fn ok(self) -> Out {
        assert_eq!(self.code, 0, "command failed: {self:?}");
        self
    }

    /// stdout without its trailing newline.
    pub fn line(&self) -> &str {
        self.stdout.trim_end_matches('\n')
    }
}

/// Directory holding the built binaries (`target/debug`), found from the test executable.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/debug/deps/e2e-<hash> -> target/debug
    let dir = exe.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    assert!(
        dir.join("pbs_server").exists() && dir.join("qsub").exists(),
        "binaries not found in {}: run `cargo build --workspace` before the tests",
        dir.display()
    );
    dir
}

/// Directory holding the q-commands the tests run: `PBS_TEST_COMMAND_DIR` when set (CI sets
/// it to the static musl build of the commands, to run the suite against those too), else
/// [`bin_dir`]. The daemons always come from [`bin_dir`].
pub fn command_dir() -> PathBuf {
    match std::env::var_os("PBS_TEST_COMMAND_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(
                dir.is_absolute() && dir.join("qsub").exists(),
                "PBS_TEST_COMMAND_DIR={} must be an absolute path holding qsub (tests run in their crate's directory)",
                dir.display()
            );
            dir
        }
        None => bin_dir(),
    }
}

/// A free TCP port on loopback (the kernel picks it; we release it right away). Never 0:
/// a daemon told to listen on port 0 listens on some other port than the one its peers
/// are told, and they are refused.
fn free_port() -> u16 {
    let mut last_error = None;
    for _ in 0..50 {
        match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(addr) if addr.port() != 0 => return addr.port(),
            Ok(addr) => last_error = Some(format!("the kernel gave {addr}")),
            Err(e) => last_error = Some(e.to_string()),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no free TCP port on loopback: {last_error:?}");
}

/// A running server in its own PBS_HOME, with moms and a scheduler once started. Every
/// daemon is stopped (SIGKILL) when dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    bins: PathBuf,
    /// Where the q-commands are ([`command_dir`]).
    commands: PathBuf,
    server: Option<Child>,
    pub port: u16,
    pub host: String,
    /// Moms by node name: (port, process while running).
    moms: Vec<Mom>,
    sched: Option<Child>,
}

/// One pbs_mom serving one node, with its own PBS_HOME and pbs.conf.
struct Mom {
    node: String,
    port: u16,
    child: Option<Child>,
}

impl Cluster {
    /// Starts a fresh server and waits until it answers.
    pub fn start() -> Cluster {
        let dir = tempfile::Builder::new().prefix("pbs-e2e-").tempdir().expect("temp dir");
        // nobody must reach pbs.conf and the socket inside.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default();
        let mut cluster = Cluster {
            dir,
            bins: bin_dir(),
            commands: command_dir(),
            server: None,
            port: 0,
            host,
            moms: Vec::new(),
            sched: None,
        };
        // A free port is released before the server binds it, so a parallel test may take
        // it first: then this server cannot listen and gets another port.
        for _ in 0..5 {
            cluster.port = free_port();
            let conf = format!(
                "PBS_SERVER={}\nPBS_HOME={}\nPBS_BATCH_SERVICE_PORT={}\n",
                cluster.host,
                cluster.home().display(),
                cluster.port
            );
            std::fs::write(cluster.conf_path(), conf).expect("write pbs.conf");
            if cluster.launch_server() {
                return cluster;
            }
        }
        panic!("pbs_server found no free port: {}", cluster.server_stderr());
    }

    pub fn conf_path(&self) -> PathBuf {
        self.dir.path().join("pbs.conf")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The job id suffix.
    pub fn server_name(&self) -> &str {
        &self.host
    }

    /// Starts pbs_server and waits until a client can connect to it.
    pub fn start_server(&mut self) {
        assert!(self.launch_server(), "another process holds the server's port: {}", self.server_stderr());
    }

    /// Starts pbs_server: true once it serves, false if it could not bind its TCP port.
    fn launch_server(&mut self) -> bool {
        let log = std::fs::File::create(self.dir.path().join("server.stderr")).expect("server log");
        let child = Command::new(self.bins.join("pbs_server"))
            .env("PBS_CONF_FILE", self.conf_path())
            // Arms the debug build's test-only panic (see `faults::test_panic`).
            .env("PBS_TEST_PANIC_TRIGGER", "1")
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pbs_server");
        self.server = Some(child);
        self.wait_ready()
    }

    /// Waits until the server serves (true) or exits because its TCP port is taken (false).
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if self.try_client().is_ok() {
                return true;
            }
            if let Some(child) = self.server.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.server = None;
                    let stderr = self.server_stderr();
                    if stderr.contains(&format!("binding 127.0.0.1:{}", self.port)) {
                        return false;
                    }
                    panic!("pbs_server exited with {status}: {stderr}");
                }
            }
            assert!(Instant::now() < deadline, "pbs_server not ready: {}", self.server_stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the server wrote to stderr so far.
    pub fn server_stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.stderr")).unwrap_or_default()
    }

    /// Kills the server with SIGKILL, as a crash would.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server with SIGTERM and returns its exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let mut child = self.server.take()?;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).ok()?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).ok()?;
        child.wait().ok()?.code()
    }

    /// Waits up to `timeout` for the server to exit by itself (qterm); its exit code, or
    /// `None` if it still runs (or was not running).
    pub fn wait_server_exit(&mut self, timeout: Duration) -> Option<i32> {
        let code = wait_child_exit(self.server.as_mut()?, timeout)?;
        self.server = None;
        Some(code)
    }

    /// [`Cluster::wait_server_exit`] for the scheduler.
    pub fn wait_sched_exit(&mut self, timeout: Duration) -> Option<i32> {
        let code = wait_child_exit(self.sched.as_mut()?, timeout)?;
        self.sched = None;
        Some(code)
    }

    /// [`Cluster::wait_server_exit`] for `node`'s mom.
    pub fn wait_mom_exit(&mut self, node: &str, timeout: Duration) -> Option<i32> {
        let mom = self.moms.iter_mut().find(|m| m.node == node)?;
        let code = wait_child_exit(mom.child.as_mut()?, timeout)?;
        mom.child = None;
        Some(code)
    }

    pub fn server_pid(&self) -> Option<u32> {
        self.server.as_ref().map(Child::id)
    }

    /// A raw connection to the server's socket, as root or as `nobody`, welcomed: for
    /// frames past the commands' own checks.
    pub fn raw_connection(&self, as_nobody: bool) -> std::os::unix::net::UnixStream {
        use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame, write_frame};
        let path = self.home().join("server_sock");
        let mut stream = if as_nobody {
            // The identity comes from SO_PEERCRED: connect from a thread running as nobody.
            std::thread::spawn(move || {
                // The raw system call changes only this thread's credentials (glibc's
                // wrapper would change every thread's); the thread ends once connected.
                // SAFETY: no memory is passed; the call only changes this thread's uids.
                let rc = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
                assert_eq!(rc, 0, "setresuid nobody");
                std::os::unix::net::UnixStream::connect(path).expect("connect")
            })
            .join()
            .expect("connecting thread")
        } else {
            std::os::unix::net::UnixStream::connect(path).expect("connect")
        };
        stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        write_frame(&mut stream, &pbs_proto::Hello::local(pbs_proto::Role::Client)).expect("hello");
        let welcome: pbs_proto::HelloReply =
            read_frame(&mut stream, MAX_REPLY_FRAME_LEN).expect("read").expect("welcome");
        assert!(matches!(welcome, pbs_proto::HelloReply::Welcome { .. }), "{welcome:?}");
        stream
    }

    pub fn try_client(&self) -> pbs_client::Result<Client> {
        Client::connect_unix(&self.home().join("server_sock"), &self.host)
    }

    /// Lets root own jobs (`acl_roots = root`): OpenPBS refuses root's jobs by default, and
    /// tests that submit through the in-process client run as root.
    pub fn allow_root_jobs(&self) {
        use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp};
        let attr = MgrAttr { name: "acl_roots".into(), op: MgrOp::Set, value: "root".into() };
        self.client().manager(MgrCommand::Set, MgrObject::Server, vec![], vec![attr]).expect("set acl_roots");
    }

    /// A client connected over the Unix socket as the test's own user (root).
    pub fn client(&self) -> Client {
        self.try_client().expect("connect to the server")
    }

    fn command(&self, name: &str, args: &[&str], as_nobody: bool) -> Command {
        let mut command = if as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(self.commands.join(name));
            c
        } else {
            Command::new(self.commands.join(name))
        };
        command.args(args).env("PBS_CONF_FILE", self.conf_path()).current_dir(self.dir.path());
        command
    }

    /// Starts a command as root with its output piped, for a test that watches it run.
    pub fn spawn(&self, name: &str, args: &[&str]) -> std::process::Child {
        self.command(name, args, false)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn command")
    }

    /// Runs a command as root.
    pub fn run(&self, name: &str, args: &[&str]) -> Out {
        self.run_with_stdin(name, args, "", false)
    }

    /// Runs a command as `nobody`.
    pub fn run_as_nobody(&self, name: &str, args: &[&str]) -> Out {
        self.run_with_stdin(name, args, "", true)
    }

    /// Runs a command with `input` on its stdin.
    pub fn run_with_stdin(&self, name: &str, args: &[&str], input: &str, as_nobody: bool) -> Out {
        let mut child = self
            .command(name, args, as_nobody)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn command");
        if let Some(mut stdin) = child.stdin.take() {
            // A command may exit without reading its input; that is not a test failure.
            let _ = stdin.write_all(input.as_bytes());
        }
        Out::from_output(child.wait_with_output().expect("wait for command"))
    }

    /// Submits `qsub -- /bin/true`-style jobs as root and returns the printed id.
    pub fn qsub(&self, args: &[&str]) -> String {
        self.run("qsub", args).ok().line().to_string()
    }
}

/// Polls `condition` every 20 ms until it holds; panics with `what` after `timeout`.
#[track_caller]
pub fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Cluster {
    /// A server with `n` moms (nodes `n1`..`nN`, each with `ncpus` cpus), and the
    /// scheduler; returns once every node is `free`. Job history is on so finished jobs
    /// can be inspected; root's jobs are allowed.
    pub fn with_moms(n: usize, ncpus: u32) -> Cluster {
        Cluster::with_moms_and_sched_config(n, ncpus, None)
    }

    /// As [`Cluster::with_moms`], with `sched_config` written to
    /// `PBS_HOME/sched_priv/sched_config` before the scheduler starts.
    pub fn with_moms_and_sched_config(n: usize, ncpus: u32, sched_config: Option<&str>) -> Cluster {
        let mut cluster = Cluster::start();
        if let Some(text) = sched_config {
            let dir = cluster.home().join("sched_priv");
            std::fs::create_dir_all(&dir).expect("sched_priv");
            std::fs::write(dir.join("sched_config"), text).expect("write sched_config");
        }
        cluster.allow_root_jobs();
        cluster.qmgr("set server job_history_enable = True");
        for i in 1..=n {
            let name = format!("n{i}");
            cluster.add_mom(&name);
            cluster.qmgr(&format!("set node {name} resources_available.ncpus = {ncpus}"));
        }
        cluster.start_sched();
        for i in 1..=n {
            cluster.wait_node_state(&format!("n{i}"), "free");
        }
        cluster
    }

    /// A directory every user may write to, inside the cluster's directory.
    pub fn shared_dir(&self) -> PathBuf {
        let dir = self.dir.path().join("shared");
        std::fs::create_dir_all(&dir).expect("shared dir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).expect("mode 1777");
        dir
    }

    /// Runs `qmgr -c <command>` as root and panics unless it succeeds.
    #[track_caller]
    pub fn qmgr(&self, command: &str) {
        self.run("qmgr", &["-c", command]).ok();
    }

    /// The pbs.conf of `node`'s mom.
    pub fn mom_conf_path(&self, node: &str) -> PathBuf {
        self.dir.path().join(format!("mom-{node}.conf"))
    }

    /// The key file of `node`'s mom.
    pub fn mom_key_path(&self, node: &str) -> PathBuf {
        self.dir.path().join(format!("mom-{node}.key"))
    }

    /// Has the server write the key of `node`'s mom to `file`, as an admin does
    /// (`pbs_server --mom-key`): what `pbs_server` printed to stderr, if it failed.
    pub fn write_mom_key(&self, node: &str, file: &Path) -> Result<(), String> {
        self.write_key(&["--mom-key", node], file)
    }

    /// Has the server write a remote scheduler's key to `file` (`pbs_server --sched-key`).
    pub fn write_sched_key(&self, file: &Path) -> Result<(), String> {
        self.write_key(&["--sched-key"], file)
    }

    fn write_key(&self, args: &[&str], file: &Path) -> Result<(), String> {
        let out = Command::new(self.bins.join("pbs_server"))
            .env("PBS_CONF_FILE", self.conf_path())
            .args(args)
            .arg(file)
            .output()
            .expect("run pbs_server to write a key");
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    }

    /// Creates node `node` and starts a mom for it on a free port, holding only its own
    /// key.
    pub fn add_mom(&mut self, node: &str) {
        let home = self.dir.path().join(format!("mom-{node}"));
        std::fs::create_dir_all(&home).expect("mom home");
        // Each cluster's jobs get their TMPDIR under its own directory: clusters run in
        // parallel and all number their first job 0, so a shared /var/tmp/pbs.0.vm would be
        // removed by one cluster's job end while another's job uses it.
        let tmpdir = home.join("tmp");
        std::fs::create_dir_all(&tmpdir).expect("mom tmpdir");
        std::fs::set_permissions(&tmpdir, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).expect("tmpdir mode");
        let key = self.mom_key_path(node);
        if !key.exists() {
            self.write_mom_key(node, &key).expect("the node's key");
        }
        self.moms.push(Mom { node: node.to_string(), port: 0, child: None });
        // A free port is released before the mom binds it, so a parallel test may take it
        // first: then this mom cannot listen and gets another port.
        for _ in 0..5 {
            let port = free_port();
            let conf = format!(
                "PBS_SERVER={}\nPBS_HOME={}\nPBS_BATCH_SERVICE_PORT={}\nPBS_MOM_SERVICE_PORT={port}\nPBS_MOM_NODE_NAME={node}\nPBS_CLUSTER_KEY_FILE={}\nPBS_MOM_SAMPLE_SECS=1\nPBS_TMPDIR={}\n",
                self.host,
                home.display(),
                self.port,
                key.display(),
                tmpdir.display()
            );
            std::fs::write(self.mom_conf_path(node), conf).expect("write mom conf");
            if let Some(mom) = self.moms.iter_mut().find(|m| m.node == node) {
                mom.port = port;
            }
            if self.launch_mom(node) {
                self.qmgr(&format!("create node {node} Mom=127.0.0.1,Port={port}"));
                return;
            }
        }
        panic!("the mom of {node} found no free port: {}", self.mom_stderr(node));
    }

    /// Starts (or restarts) the mom of `node` and waits until it listens.
    pub fn start_mom(&mut self, node: &str) {
        assert!(self.launch_mom(node), "another process holds the port of {node}'s mom: {}", self.mom_stderr(node));
    }

    /// Starts the mom of `node`: true once it listens, false if it could not bind its port.
    fn launch_mom(&mut self, node: &str) -> bool {
        let conf = self.mom_conf_path(node);
        let log = std::fs::File::create(self.dir.path().join(format!("mom-{node}.stderr"))).expect("mom log");
        let bins = self.bins.clone();
        let mom = self.moms.iter_mut().find(|m| m.node == node).expect("known mom");
        let child = Command::new(bins.join("pbs_mom"))
            .env("PBS_CONF_FILE", &conf)
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", mom.port))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pbs_mom");
        mom.child = Some(child);
        let ready = format!("pbs_mom ready: node {node}, listening on 127.0.0.1:{}", mom.port);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let log = self.mom_stderr(node);
            if log.contains(&ready) {
                return true;
            }
            let mom = self.moms.iter_mut().find(|m| m.node == node).expect("known mom");
            if let Some(Ok(Some(status))) = mom.child.as_mut().map(Child::try_wait) {
                mom.child = None;
                assert!(log.contains("Address already in use"), "pbs_mom of {node} exited with {status}: {log}");
                return false;
            }
            assert!(Instant::now() < deadline, "pbs_mom of {node} not ready: {log}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the mom of `node` with SIGKILL; its jobs' shepherds live on.
    /// The pid of `node`'s mom, while it runs.
    pub fn mom_pid(&self, node: &str) -> Option<u32> {
        self.moms.iter().find(|m| m.node == node).and_then(|m| m.child.as_ref()).map(Child::id)
    }

    pub fn kill_mom(&mut self, node: &str) {
        if let Some(mom) = self.moms.iter_mut().find(|m| m.node == node) {
            if let Some(mut child) = mom.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// What the mom of `node` wrote to stderr.
    pub fn mom_stderr(&self, node: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("mom-{node}.stderr"))).unwrap_or_default()
    }

    /// Starts pbs_sched against this server.
    pub fn start_sched(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("sched.stderr")).expect("sched log");
        let child = Command::new(self.bins.join("pbs_sched"))
            .env("PBS_CONF_FILE", self.conf_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pbs_sched");
        self.sched = Some(child);
    }

    /// The scheduler's pid, while it runs.
    pub fn sched_pid(&self) -> Option<u32> {
        self.sched.as_ref().map(Child::id)
    }

    /// What the scheduler wrote to stderr.
    pub fn sched_stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sched.stderr")).unwrap_or_default()
    }

    /// Attribute `name` of the first object a status request returns.
    fn status_attr(&self, request: pbs_proto::Request, name: &str) -> Option<String> {
        let reply = self.client().status(request).ok()?;
        reply.objects.first()?.get(name).map(str::to_string)
    }

    /// A node attribute as the server reports it.
    pub fn node_attr(&self, node: &str, name: &str) -> Option<String> {
        self.status_attr(pbs_proto::Request::StatusNode { names: vec![node.to_string()] }, name)
    }

    /// Waits until the node's state is exactly `state`.
    #[track_caller]
    pub fn wait_node_state(&self, node: &str, state: &str) {
        wait_until(&format!("node {node} {state}"), READY_TIMEOUT, || {
            self.node_attr(node, "state").as_deref() == Some(state)
        });
    }

    /// A server attribute as the server reports it.
    pub fn server_attr(&self, name: &str) -> Option<String> {
        self.status_attr(pbs_proto::Request::StatusServer { attrs: vec![] }, name)
    }

    /// A queue attribute as the server reports it.
    pub fn queue_attr(&self, queue: &str, name: &str) -> Option<String> {
        self.status_attr(pbs_proto::Request::StatusQueue { names: vec![queue.to_string()], attrs: vec![] }, name)
    }

    /// A job attribute (history included), `None` if unset or the job is unknown.
    pub fn job_attr(&self, id: &str, name: &str) -> Option<String> {
        let reply = self.client().status_jobs(vec![id.to_string()], vec![], vec![], true, false).ok()?;
        reply.objects.first()?.get(name).map(str::to_string)
    }

    /// Waits until the job's `job_state` is `state`.
    #[track_caller]
    pub fn wait_job_state(&self, id: &str, state: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.job_attr(id, "job_state").as_deref() != Some(state) {
            // Timed out: what every daemon said is what a reader needs to know why.
            assert!(Instant::now() < deadline, "timed out waiting for job {id} in state {state}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until some daemon's log holds `needle`. Each daemon writes its log from a
    /// thread of its own, which may lag behind what qstat already shows: a line about a
    /// change qstat shows is waited for, never read at once.
    #[track_caller]
    pub fn wait_logged(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.logs().contains(needle) {
            assert!(Instant::now() < deadline, "timed out waiting for the log line {needle:?}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Today's accounting log (`server_priv/accounting/YYYYMMDD`), empty before it
    /// exists. Records are written once the commit that made them is done: wait for them.
    pub fn accounting_log(&self) -> String {
        let day = chrono::Local::now().format("%Y%m%d").to_string();
        std::fs::read_to_string(self.home().join("server_priv/accounting").join(day)).unwrap_or_default()
    }

    /// Every record about `id` in today's accounting log as `(type, text)`, in file order.
    pub fn accounting_records(&self, id: &str) -> Vec<(char, String)> {
        self.accounting_log()
            .lines()
            .filter_map(|line| {
                let mut fields = line.splitn(4, ';');
                let (_, kind, name, rest) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
                (name == id).then(|| (kind.chars().next().unwrap_or('?'), rest.to_string()))
            })
            .collect()
    }

    /// The types of the records about `id`, in order (`QSE`).
    pub fn accounting_kinds(&self, id: &str) -> String {
        self.accounting_records(id).iter().map(|(kind, _)| *kind).collect()
    }

    /// Debug text of every daemon's stderr, for assertion messages.
    pub fn logs(&self) -> String {
        let mut out = format!("--- server\n{}\n--- sched\n{}\n", self.server_stderr(), self.sched_stderr());
        for mom in &self.moms {
            out.push_str(&format!("--- mom {}\n{}\n", mom.node, self.mom_stderr(&mom.node)));
        }
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut child) = self.sched.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let nodes: Vec<String> = self.moms.iter().map(|m| m.node.clone()).collect();
        for node in nodes {
            self.kill_mom(&node);
        }
        kill_shepherds(self.dir.path());
        self.kill9();
    }
}

/// Waits up to `timeout` for `child` to exit: its exit code (-1 for a signal).
fn wait_child_exit(child: &mut Child, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status.code().unwrap_or(-1));
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` runs: it exists and has not ended (a child that ended is a zombie
/// until it is waited for).
pub fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name, which is in parentheses and may hold anything.
    stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()).is_some_and(|state| !matches!(state, 'Z' | 'X'))
}

/// Kills what is left of jobs started under `dir`: job shepherds outlive their mom by
/// design, so a test's jobs would otherwise outlive the test.
fn kill_shepherds(dir: &Path) {
    let needle = dir.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    let mut shepherds = Vec::new();
    let mut parents = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains("--shepherd") && text.contains(&needle) {
            shepherds.push(pid);
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        if let (Some(ppid), Some(sid)) = (fields.get(1), fields.get(3)) {
            if let (Ok(ppid), Ok(sid)) = (ppid.parse::<i32>(), sid.parse::<i32>()) {
                parents.push((pid, ppid, sid));
            }
        }
    }
    for shepherd in shepherds {
        for (_, _, sid) in parents.iter().filter(|(_, ppid, _)| *ppid == shepherd) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(-sid), nix::sys::signal::Signal::SIGKILL);
        }
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(shepherd), nix::sys::signal::Signal::SIGKILL);
    }
}
