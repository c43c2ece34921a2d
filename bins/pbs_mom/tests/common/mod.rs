//! Test harness: a real `pbs_mom` in a temporary PBS_HOME on a free loopback port, and a
//! fake server that speaks the mom link with the proto types.
// A harness failure is a test failure: panicking with a message is the right report.
#![allow(clippy::expect_used, clippy::unwrap_used, dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pbs_mom::layout::{JobResult, Started, Status};
use pbs_proto::link::{LinkError, Opener, Sealer};
use pbs_proto::mom::{FromMom, JobLaunch, ToMom, Usage};
use pbs_proto::{MAX_REPLY_FRAME_LEN, Role};

/// uid of `nobody`.
pub const NOBODY: u32 = 65534;
/// How long any expected frame may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// The master key of the server these tests play: each mom holds only its node's key,
/// derived from it.
pub const MASTER: &[u8] = b"test-cluster-key-0123456789";

/// The key of `node`'s mom, as the server derives it.
pub fn node_key(node: &str) -> Vec<u8> {
    pbs_proto::keys::derive(MASTER, &Role::Mom { node: node.to_string() })
}

/// A free TCP port on loopback (the kernel picks it; released at once).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

/// A running pbs_mom in its own PBS_HOME, SIGKILLed when dropped.
pub struct TestMom {
    dir: tempfile::TempDir,
    child: Option<Child>,
    pub port: u16,
    pub node: String,
}

impl TestMom {
    /// A mom sampling usage every second.
    pub fn start() -> TestMom {
        TestMom::start_with("PBS_MOM_SAMPLE_SECS=1\n")
    }

    /// A mom with extra pbs.conf lines.
    pub fn start_with(extra_conf: &str) -> TestMom {
        let dir = tempfile::Builder::new().prefix("pbs-mom-").tempdir().expect("temp dir");
        // The job's user must reach its script under PBS_HOME, and write into work/.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let work = dir.path().join("work");
        std::fs::create_dir(&work).expect("work dir");
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o1777)).expect("chmod work");
        // Unique, so that a mom of another test answering on our port is told apart.
        static MOMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let node = format!("node{}-{}", std::process::id(), MOMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let key = dir.path().join("mom.key");
        pbs_proto::keys::write_key_file(&key, &node_key(&node)).expect("key");
        let mut mom = TestMom { dir, child: None, port: 0, node };
        // A free port is released before the mom binds it, so a parallel test may take it
        // first: then our mom cannot listen and we try another port.
        for _ in 0..5 {
            mom.port = free_port();
            let conf = format!(
                "PBS_HOME={}\nPBS_MOM_SERVICE_PORT={}\nPBS_MOM_NODE_NAME={}\nPBS_CLUSTER_KEY_FILE={}\n\
                 PBS_TMPDIR={}\n{extra_conf}",
                mom.dir.path().join("home").display(),
                mom.port,
                mom.node,
                key.display(),
                work.display(),
            );
            std::fs::write(mom.dir.path().join("pbs.conf"), conf).expect("pbs.conf");
            if mom.try_spawn() {
                return mom;
            }
            mom.kill9();
        }
        panic!("pbs_mom found no free port: {}", mom.log());
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A world-writable directory for job output.
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The job's records file.
    pub fn records_file(&self, job_id: &str) -> PathBuf {
        pbs_mom::layout::Layout::new(&self.home()).records_path(job_id)
    }

    /// The records in the job's file.
    pub fn records(&self, job_id: &str) -> pbs_mom::records::Records {
        pbs_mom::records::read(&self.records_file(job_id))
    }

    /// Names in `mom_priv/jobs`.
    pub fn job_files(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.home().join("mom_priv").join("jobs")) else { return Vec::new() };
        let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// What the mom printed on stderr (its log lines).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mom.stderr")).unwrap_or_default()
    }

    /// Starts the daemon and waits until it accepts connections.
    pub fn spawn(&mut self) {
        assert!(self.try_spawn(), "another process holds port {}: {}", self.port, self.log());
    }

    /// Starts the daemon and waits until it answers as this node; false if it cannot,
    /// because something else holds the port.
    fn try_spawn(&mut self) -> bool {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("mom.stderr"))
            .expect("mom log");
        let child = Command::new(env!("CARGO_BIN_EXE_pbs_mom"))
            .env("PBS_CONF_FILE", self.dir.path().join("pbs.conf"))
            // Must not reach any job.
            .env("MOM_LEAK_CHECK", "leaked")
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start pbs_mom");
        self.child = Some(child);
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                let log = self.log();
                assert!(log.contains("Address already in use"), "pbs_mom exited with {status}: {log}");
                return false;
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                // Another test's mom on this port refuses a link meant for our node: ours
                // will fail to bind, which the check above sees.
                if self.connect_with_key(&node_key(&self.node)).is_ok() {
                    return true;
                }
            }
            assert!(Instant::now() < deadline, "pbs_mom did not start listening: {}", self.log());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// kill -9, as a crash would.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Pid of the daemon.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Connects as the server with the right key; the Welcome has been read.
    pub fn connect(&self) -> Link {
        match self.connect_with_key(&node_key(&self.node)) {
            Ok(link) => link,
            Err(reply) => panic!("handshake refused: {reply:?}\n{}", self.log()),
        }
    }

    /// Connects as the server with `key`: the link, or the mom's refusal.
    pub fn connect_with_key(&self, key: &[u8]) -> Result<Link, LinkError> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        // As the real server does: without it a RunJob right after another frame waits
        // for the mom's delayed ACK.
        stream.set_nodelay(true).expect("nodelay");
        stream.set_read_timeout(Some(WAIT)).expect("timeout");
        let mut reader = stream.try_clone().expect("clone");
        let me = Role::Server;
        let mom = Role::Mom { node: self.node.clone() };
        let (_, sealer, opener) = pbs_proto::link::connect_blocking(&mut reader, &mut stream, key, &me, &mom)?;
        Ok(Link { stream, sealer, opener, seen: VecDeque::new() })
    }

    /// A script job for `nobody` writing into [`TestMom::work`].
    pub fn launch(&self, job_id: &str, script: &str) -> JobLaunch {
        let work = self.work().display().to_string();
        JobLaunch {
            job_id: job_id.to_string(),
            job_name: "testjob".to_string(),
            user: "nobody".to_string(),
            // As the server resolved it: the mom refuses a launch whose uid differs.
            uid: Some(NOBODY),
            group: String::new(),
            queue: "workq".to_string(),
            script: script.to_string(),
            // nobody's login shell is nologin.
            shell: Some("/bin/sh".to_string()),
            variables: vec![
                ("PBS_O_WORKDIR".to_string(), work.clone()),
                ("PBS_O_PATH".to_string(), "/usr/bin:/bin".to_string()),
                ("PBS_O_QUEUE".to_string(), "workq".to_string()),
            ],
            output_path: format!("testhost:{work}/{job_id}.OU"),
            error_path: format!("testhost:{work}/{job_id}.ER"),
            join_path: "n".to_string(),
            keep_files: "n".to_string(),
            nodefile: vec![self.node.clone(), self.node.clone()],
            ncpus: 2,
            ompthreads: 2,
            run_count: 1,
            ..JobLaunch::default()
        }
    }

    pub fn out_file(&self, job_id: &str) -> PathBuf {
        self.work().join(format!("{job_id}.OU"))
    }

    pub fn err_file(&self, job_id: &str) -> PathBuf {
        self.work().join(format!("{job_id}.ER"))
    }
}

impl Drop for TestMom {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- pbs_mom log ---\n{}", self.log());
        }
        self.kill9();
        // Jobs outlive their mom by design; a test that failed half-way must not leave
        // them (a busy loop, say) running.
        let Ok(entries) = std::fs::read_dir(self.home().join("mom_priv").join("jobs")) else { return };
        for entry in entries.flatten() {
            if pbs_mom::layout::job_id_of(&entry.path()).is_none() {
                continue;
            }
            let records = pbs_mom::records::read(&entry.path());
            // An ended job's pids may belong to someone else by now.
            if records.has::<Status>() || records.has::<JobResult>() {
                continue;
            }
            let Some(started) = records.get::<Started>() else { continue };
            for pid in [i64::from(started.shepherd_pid), started.session_id] {
                if pid <= 1 {
                    continue;
                }
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe {
                    libc::kill(-(pid as i32), libc::SIGKILL);
                    libc::kill(pid as i32, libc::SIGKILL);
                }
            }
        }
    }
}

/// The fake server's end of a link.
pub struct Link {
    stream: TcpStream,
    sealer: Sealer,
    opener: Opener,
    /// Frames read but not yet asked for.
    pub seen: VecDeque<FromMom>,
}

impl Link {
    pub fn send(&mut self, frame: &ToMom) {
        pbs_proto::link::write_sealed(&mut self.stream, &mut self.sealer, frame).expect("send to mom");
    }

    /// Raw bytes, for garbage tests.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        use std::io::Write;
        let _ = self.stream.write_all(bytes);
    }

    /// The next frame within `timeout`; `None` on timeout or a closed link.
    fn read(&mut self, timeout: Duration) -> Option<FromMom> {
        self.stream.set_read_timeout(Some(timeout.max(Duration::from_millis(1)))).ok()?;
        pbs_proto::link::read_sealed(&mut self.stream, &mut self.opener, MAX_REPLY_FRAME_LEN).ok().flatten()
    }

    /// True once the mom has closed the connection.
    pub fn closed(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            self.stream.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
            match pbs_proto::link::read_sealed::<FromMom>(&mut self.stream, &mut self.opener, MAX_REPLY_FRAME_LEN) {
                Ok(None) => return true,
                Ok(Some(frame)) => self.seen.push_back(frame),
                Err(LinkError::Frame(pbs_proto::FrameError::Io(e)))
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return true,
            }
        }
        false
    }

    /// The first frame (already seen or still to come) matching `pred`, removed from the
    /// queue; panics after [`WAIT`].
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&FromMom) -> bool) -> FromMom {
        if let Some(pos) = self.seen.iter().position(&pred) {
            return self.seen.remove(pos).expect("position");
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}; frames seen: {:?}", self.seen);
            match self.read(left) {
                Some(frame) if pred(&frame) => return frame,
                Some(frame) => self.seen.push_back(frame),
                None => {
                    assert!(Instant::now() < deadline, "timed out waiting for {what}; frames seen: {:?}", self.seen)
                }
            }
        }
    }

    /// True if no frame matching `pred` arrives for `period` (others are kept).
    pub fn quiet_for(&mut self, period: Duration, pred: impl Fn(&FromMom) -> bool) -> bool {
        let deadline = Instant::now() + period;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return !self.seen.iter().any(&pred);
            }
            if let Some(frame) = self.read(left) {
                self.seen.push_back(frame);
            }
        }
    }

    pub fn node_status(&mut self) -> FromMom {
        self.wait_for("NodeStatus", |f| matches!(f, FromMom::NodeStatus { .. }))
    }

    /// Session id from the job's JobStarted.
    pub fn started(&mut self, job_id: &str) -> i64 {
        match self.wait_for(
            &format!("JobStarted {job_id}"),
            |f| matches!(f, FromMom::JobStarted { job_id: j, .. } if j == job_id),
        ) {
            FromMom::JobStarted { session_id, .. } => session_id,
            _ => unreachable!(),
        }
    }

    /// Exit status and usage from the job's JobEnded.
    pub fn ended(&mut self, job_id: &str) -> (i32, Usage) {
        match self.wait_for(
            &format!("JobEnded {job_id}"),
            |f| matches!(f, FromMom::JobEnded { job_id: j, .. } if j == job_id),
        ) {
            FromMom::JobEnded { exit_status, usage, .. } => (exit_status, usage),
            _ => unreachable!(),
        }
    }

    /// The code of the SignalResult for `job_id`.
    pub fn signal(&mut self, job_id: &str, signal: &str) -> u32 {
        self.send(&ToMom::SignalJob { job_id: job_id.to_string(), signal: signal.to_string(), ask: 7 });
        match self.wait_for(
            &format!("SignalResult {job_id} {signal}"),
            |f| matches!(f, FromMom::SignalResult { job_id: j, signal: s, .. } if j == job_id && s == signal),
        ) {
            FromMom::SignalResult { code, ask, .. } => {
                assert_eq!(ask, 7, "the mom echoes the request's number");
                code
            }
            _ => unreachable!(),
        }
    }

    pub fn run(&mut self, launch: JobLaunch) {
        self.send(&ToMom::RunJob { launch: Box::new(launch) });
    }
}

/// State letters of the live processes of session `sid`.
pub fn session_states(sid: i64) -> Vec<char> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, tail)) = text.rsplit_once(')') else { continue };
        let fields: Vec<&str> = tail.split_whitespace().collect();
        if fields.get(3).and_then(|s| s.parse::<i64>().ok()) == Some(sid) {
            out.push(fields[0].chars().next().unwrap_or('?'));
        }
    }
    out
}

/// Waits until `cond` holds, checking every 10 ms; panics after [`WAIT`].
pub fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The owner uid of `path`.
pub fn owner(path: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("metadata").uid()
}
