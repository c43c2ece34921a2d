//! Least privilege on a real pbs_mom: the job's owner must be the uid the server named and
//! root only when the server allowed it, a restarted mom adopts only shepherds that prove
//! they are its own, and a limit's kill message never goes through a descriptor the job
//! chose.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{NOBODY, TestMom, eventually, session_states};
use pbs_mom::layout::Started;
use pbs_proto::mom::{FromMom, ToMom};

/// `JOB_EXEC_FAILUID`: the owner is not who the server said, or root was not allowed.
const FAILUID: i32 = -10;
/// `JOB_EXEC_INITABT`: the mom lost the job's shepherd.
const INITABT: i32 = -4;

#[test]
fn root_runs_a_job_only_when_the_server_allowed_it() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let as_root = |job_id: &str, allowed: bool| {
        let mut launch = mom.launch(job_id, "id -u\n");
        launch.user = "root".into();
        launch.uid = Some(0);
        launch.root_allowed = allowed;
        launch
    };
    link.run(as_root("1.s", false));
    assert_eq!(link.ended("1.s").0, FAILUID);
    assert!(!mom.out_file("1.s").exists(), "the refused job ran");
    eventually("the reason in the log", || mom.log().contains("acl_roots"));

    link.run(as_root("2.s", true));
    assert_eq!(link.ended("2.s").0, 0);
    assert_eq!(std::fs::read_to_string(mom.out_file("2.s")).unwrap(), "0\n");
}

#[test]
fn the_owner_must_have_the_uid_the_server_named() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let mut other = mom.launch("3.s", "id -u\n");
    other.uid = Some(NOBODY - 1);
    link.run(other);
    assert_eq!(link.ended("3.s").0, FAILUID);
    assert!(!mom.out_file("3.s").exists(), "the refused job ran");
    eventually("the reason in the log", || mom.log().contains(&format!("the server named uid {}", NOBODY - 1)));

    // A launch without a uid is refused too: nothing to check the owner against.
    let mut unnamed = mom.launch("4.s", "id -u\n");
    unnamed.uid = None;
    link.run(unnamed);
    assert_eq!(link.ended("4.s").0, FAILUID);

    // A user whose uid is 0 on this host is root, whatever its name: the server must
    // have allowed root for it.
    let mut zero = mom.launch("5.s", "id -u\n");
    zero.uid = Some(NOBODY);
    zero.user = "root".into();
    link.run(zero);
    assert_eq!(link.ended("5.s").0, FAILUID);

    link.run(mom.launch("6.s", "id -u\n"));
    assert_eq!(link.ended("6.s").0, 0);
    assert_eq!(std::fs::read_to_string(mom.out_file("6.s")).unwrap(), format!("{NOBODY}\n"));
}

/// A process of `nobody` whose command line is a shepherd's, `pbs_mom --shepherd <records>`
/// (it rewrites its argv, as any user's process can); killed when dropped.
struct FakeShepherd(Child);

impl FakeShepherd {
    fn start(records: &Path) -> FakeShepherd {
        let script = r#"$0 = "pbs_mom\0--shepherd\0$ARGV[0]\0" . ("\0" x 4096); sleep 120;"#;
        let child = Command::new("perl")
            .arg("-e")
            .arg(script)
            .arg(records)
            .uid(NOBODY)
            .gid(NOBODY)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("perl");
        let fake = FakeShepherd(child);
        let want = format!("pbs_mom\0--shepherd\0{}\0", records.display());
        eventually("the fake's command line", || {
            std::fs::read(format!("/proc/{}/cmdline", fake.pid())).is_ok_and(|c| c.starts_with(want.as_bytes()))
        });
        fake
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for FakeShepherd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_process_that_only_looks_like_a_shepherd_is_not_adopted() {
    let mut mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("70.s", "sleep 60\n"));
    let lost_sid = link.started("70.s");
    link.run(mom.launch("71.s", "sleep 60\n"));
    let kept_sid = link.started("71.s");
    let lost = mom.records("70.s").get::<Started>().unwrap();
    let kept = mom.records("71.s").get::<Started>().unwrap();
    mom.kill9();
    // 70.s loses its shepherd (and job) while the mom is down...
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(lost.shepherd_pid, libc::SIGKILL);
        libc::kill(-(lost_sid as i32), libc::SIGKILL);
    }
    eventually("the lost shepherd to be gone", || {
        !Path::new(&format!("/proc/{}", lost.shepherd_pid)).exists() && session_states(lost_sid).is_empty()
    });
    // ...and a user's process takes its place: its command line names 70.s's records, and
    // the records name its pid, as when the shepherd's pid is reused.
    let records = mom.records_file("70.s");
    let fake = FakeShepherd::start(&records);
    pbs_mom::records::append(&records, &Started { shepherd_pid: fake.pid(), ..lost }).unwrap();

    mom.spawn();
    let mut link = mom.connect();
    // Found lost at start-up (in the NodeStatus) or soon after (JobEnded).
    let status = match link.node_status() {
        FromMom::NodeStatus { jobs, .. } => jobs.iter().find(|j| j.job_id == "70.s").and_then(|j| j.exit_status),
        _ => unreachable!(),
    };
    assert_eq!(status.unwrap_or_else(|| link.ended("70.s").0), INITABT);
    assert!(!mom.log().contains(&format!("adopted, shepherd pid {}", fake.pid())), "{}", mom.log());
    eventually("the refusal in the log", || mom.log().contains(&format!("process {} is not", fake.pid())));
    // The real shepherd of 71.s proves itself and is adopted.
    eventually("71.s adopted", || mom.log().contains(&format!("adopted, shepherd pid {}", kept.shepherd_pid)));
    link.send(&ToMom::KillJob { job_id: "71.s".into(), kill_delay: 2 });
    assert_eq!(link.ended("71.s").0, 256 + libc::SIGTERM);
    eventually("71.s's session to be gone", || session_states(kept_sid).is_empty());
}

/// A file only root may write, which `nobody` may open for reading.
fn root_owned_file(mom: &TestMom) -> std::path::PathBuf {
    let path = mom.work().join("root-owned");
    std::fs::write(&path, "precious\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

#[test]
fn a_kill_message_never_lands_in_a_file_the_job_pointed_its_stderr_at() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let precious = root_owned_file(&mom);
    // The job's fd 2 becomes a read-only descriptor of a root-owned file: reopening
    // /proc/<pid>/fd/2 as root would give a writable one.
    let mut busy = mom.launch("80.s", &format!("exec 2<{}\nwhile :; do :; done\n", precious.display()));
    busy.cput = Some(1);
    link.run(busy);
    let mut slow = mom.launch("81.s", &format!("exec 2<{}\nsleep 60\n", precious.display()));
    slow.walltime = Some(1);
    link.run(slow);
    assert_eq!(link.ended("81.s").0, -29);
    assert_eq!(link.ended("80.s").0, -28);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    // The messages go to the stderr file the job was given, opened as its owner.
    let err = std::fs::read_to_string(mom.err_file("80.s")).unwrap();
    assert!(err.starts_with("=>> PBS: job killed: cput ") && err.ends_with(" exceeded limit 1\n"), "{err:?}");
    let err = std::fs::read_to_string(mom.err_file("81.s")).unwrap();
    assert_eq!(err, "=>> PBS: job killed: walltime 2 exceeded limit 1\n");
}

#[test]
fn the_job_runs_only_in_a_group_of_its_owner() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    // nobody is no member of root's group: the job must not get gid 0.
    let mut foreign = mom.launch("90.s", "id -g\n");
    foreign.group = "root".into();
    link.run(foreign);
    assert_eq!(link.ended("90.s").0, FAILUID);
    assert!(!mom.out_file("90.s").exists(), "the refused job ran");
    eventually("the reason in the log", || mom.log().contains("nobody is not a member of group root"));

    // Its own primary group is always fine.
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    let own = nix::unistd::Group::from_gid(nobody.gid).unwrap().unwrap();
    let mut primary = mom.launch("91.s", "id -g\n");
    primary.group = own.name;
    link.run(primary);
    assert_eq!(link.ended("91.s").0, 0);
    assert_eq!(std::fs::read_to_string(mom.out_file("91.s")).unwrap(), format!("{}\n", nobody.gid));
}
