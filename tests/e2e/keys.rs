//! Daemon keys on disk: a key file others may read or write is refused by every daemon with
//! the reason, and a mom on the server host needs no key file of its own.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, bin_dir, wait_until};

/// Runs `command` for at most 10 s: its exit status (`None` if it was still running and
/// had to be killed) and what it wrote to stderr.
fn run_briefly(command: &mut Command) -> (Option<ExitStatus>, String) {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    (status, stderr)
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Asserts that a daemon stopped at once, naming the key file and what is wrong with it.
fn assert_refused(what: &str, (status, stderr): (Option<ExitStatus>, String), key: &Path, says: &str) {
    assert!(status.is_some_and(|s| !s.success()), "{what} ran with a key file that is {says}: {status:?} {stderr}");
    assert!(
        stderr.contains(&key.display().to_string()) && stderr.contains(says),
        "{what} did not say which key file is wrong and why: {stderr}"
    );
}

#[test]
fn key_files_others_may_read_or_write_are_refused_with_the_reason() {
    let mut cluster = Cluster::start();

    // A mom's key made readable by all.
    let key = cluster.mom_key_path("n1");
    cluster.write_mom_key("n1", &key).expect("the node's key");
    chmod(&key, 0o644);
    let conf = cluster.dir().join("mom-n1.conf");
    std::fs::write(
        &conf,
        format!(
            "PBS_HOME={}\nPBS_MOM_NODE_NAME=n1\nPBS_CLUSTER_KEY_FILE={}\n",
            cluster.dir().join("mom-n1").display(),
            key.display()
        ),
    )
    .expect("mom conf");
    let mom = run_briefly(
        Command::new(bin_dir().join("pbs_mom")).env("PBS_CONF_FILE", &conf).args(["--listen", "127.0.0.1:0"]),
    );
    assert_refused("pbs_mom", mom, &key, "readable by group or others");

    // A remote scheduler's key that its group may write.
    let sched_key = cluster.dir().join("sched.key");
    cluster.write_sched_key(&sched_key).expect("pbs_server --sched-key");
    chmod(&sched_key, 0o620);
    let sched_conf = cluster.dir().join("sched.conf");
    std::fs::write(
        &sched_conf,
        format!(
            "PBS_HOME={}\nPBS_CLUSTER_KEY_FILE={}\n",
            cluster.dir().join("sched-home").display(),
            sched_key.display()
        ),
    )
    .expect("sched conf");
    let sched = run_briefly(
        Command::new(bin_dir().join("pbs_sched"))
            .env("PBS_CONF_FILE", &sched_conf)
            .args(["--server", &format!("127.0.0.1:{}", cluster.port())]),
    );
    assert_refused("pbs_sched", sched, &sched_key, "writable by group or others");

    // The master: the server stops rather than serve with it, and derives no node key from it.
    cluster.terminate();
    let master = cluster.home().join("server_priv").join("cluster_key");
    chmod(&master, 0o644);
    let server = run_briefly(
        Command::new(bin_dir().join("pbs_server"))
            .env("PBS_CONF_FILE", cluster.conf_path())
            .args(["--listen", &format!("127.0.0.1:{}", cluster.port())]),
    );
    assert_refused("pbs_server", server, &master, "readable by group or others");
    let n2_key = cluster.mom_key_path("n2");
    let refused = cluster.write_mom_key("n2", &n2_key).expect_err("a node key from a public master");
    assert!(refused.contains("readable by group or others"), "{refused}");
    assert!(!n2_key.exists());
}

/// Kills a mom started by a test when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The one-host cluster (`pbsctl start`, the demo): the mom shares the server's PBS_HOME,
/// has no key file of its own, and derives its node's key from the master it can read.
#[test]
fn a_mom_on_the_server_host_derives_its_key_from_the_master() {
    let cluster = Cluster::start();
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let conf = cluster.dir().join("local-mom.conf");
    std::fs::write(
        &conf,
        format!("PBS_HOME={}\nPBS_MOM_NODE_NAME=local\nPBS_MOM_SAMPLE_SECS=1\n", cluster.home().display()),
    )
    .expect("mom conf");
    let log = std::fs::File::create(cluster.dir().join("local-mom.stderr")).expect("log");
    let _mom = Running(
        Command::new(bin_dir().join("pbs_mom"))
            .env("PBS_CONF_FILE", &conf)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pbs_mom"),
    );
    let mom_log = || std::fs::read_to_string(cluster.dir().join("local-mom.stderr")).unwrap_or_default();
    wait_until("the mom listens", Duration::from_secs(15), || mom_log().contains("pbs_mom ready"));
    cluster.qmgr(&format!("create node local Mom=127.0.0.1,Port={port}"));
    wait_until("the node is up", Duration::from_secs(15), || {
        cluster.node_attr("local", "state").as_deref() == Some("free")
    });
}
