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

/// A free TCP port on loopback (the kernel picks it; we release it right away).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

/// A running server in its own PBS_HOME. Stopped (SIGKILL) when dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    bins: PathBuf,
    server: Option<Child>,
    pub port: u16,
    pub host: String,
}

impl Cluster {
    /// Starts a fresh server and waits until it answers.
    pub fn start() -> Cluster {
        let dir = tempfile::Builder::new().prefix("pbs-e2e-").tempdir().expect("temp dir");
        // nobody must reach pbs.conf and the socket inside.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default();
        let port = free_port();
        let conf = format!(
            "PBS_SERVER={host}\nPBS_HOME={}\nPBS_BATCH_SERVICE_PORT={port}\n",
            dir.path().join("home").display()
        );
        std::fs::write(dir.path().join("pbs.conf"), conf).expect("write pbs.conf");
        let mut cluster = Cluster { dir, bins: bin_dir(), server: None, port, host };
        cluster.start_server();
        cluster
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

    /// The job id suffix.
    pub fn server_name(&self) -> &str {
        &self.host
    }

    /// Starts pbs_server and waits until a client can connect to it.
    pub fn start_server(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("server.stderr")).expect("server log");
        let child = Command::new(self.bins.join("pbs_server"))
            .env("PBS_CONF_FILE", self.conf_path())
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pbs_server");
        self.server = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if self.try_client().is_ok() {
                return;
            }
            if let Some(child) = self.server.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("pbs_server exited with {status}: {}", self.server_stderr());
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

    pub fn server_pid(&self) -> Option<u32> {
        self.server.as_ref().map(Child::id)
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
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(self.bins.join(name));
            c
        } else {
            Command::new(self.bins.join(name))
        };
        command.args(args).env("PBS_CONF_FILE", self.conf_path()).current_dir(self.dir.path());
        command
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

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill9();
    }
}
