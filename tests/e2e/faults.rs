//! Faults under the server: a mom lost at the moment of a launch, a mom or server restart
//! under a suspended job, a job script the store cannot give back, a panic under the state
//! lock, a commit the database refuses, and user strings that try to forge log lines.

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pbs_e2e::{Cluster, wait_until};
use pbs_proto::Attr;

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

fn seq(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// The pid of the pbs_mom listening on `port` (found by its command line).
fn mom_pid(port: &str) -> Option<i32> {
    let listen = format!("127.0.0.1:{port}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid = entry.file_name().to_string_lossy().parse::<i32>().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let is_mom = args.first().is_some_and(|a| a.ends_with("pbs_mom"));
        (is_mom && args.contains(&listen) && !args.iter().any(|a| a == "--shepherd")).then_some(pid)
    })
}

/// Bytes waiting unread in the receive queues of the established TCP connections whose
/// local port is `port` (what the server sent a stopped mom).
fn unread_bytes(port: u16) -> u64 {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = u16::from_str_radix(fields.get(1)?.rsplit(':').next()?, 16).ok()?;
            let established = *fields.get(3)? == "01";
            let rx = u64::from_str_radix(fields.get(4)?.split(':').nth(1)?, 16).ok()?;
            (local_port == port && established).then_some(rx)
        })
        .sum()
}

fn proc_state(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim_start().chars().next()
}

#[test]
fn a_run_job_lost_with_its_mom_is_requeued_never_stuck_in_prerun() {
    let mut c = Cluster::with_moms(1, 1);
    let port = c.node_attr("n1", "Port").expect("the node's mom port");
    let pid = mom_pid(&port).expect("the mom's pid");
    // A stopped mom leaves what the server sends in its socket: the launch is on its way,
    // and is lost when the mom is killed before reading it.
    kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
    let padding = format!("# {}\n", "x".repeat(16 * 1024));
    let id = submit(&c, &[], &format!("{padding}sleep 60\n"));
    let port_number: u16 = port.parse().unwrap();
    wait_until("the launch in the stopped mom's socket", JOB_TIMEOUT, || unread_bytes(port_number) > 16 * 1024);
    assert_eq!(c.job_attr(&id, "substate").as_deref(), Some("41"));
    c.kill_mom("n1");
    c.start_mom("n1");
    // The mom comes back without the job: the server must requeue (and the scheduler run
    // it again) rather than wait for a start that will never come.
    wait_until("the job started again", JOB_TIMEOUT, || {
        c.job_attr(&id, "substate").as_deref() == Some("42") && c.job_attr(&id, "run_count").as_deref() == Some("2")
    });
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"), "{}", c.logs());
    c.wait_logged(&format!(";Job;{id};launch lost with its mom, job requeued"));
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
}

#[test]
fn a_suspended_job_survives_a_mom_restart_and_a_server_restart() {
    let mut c = Cluster::with_moms(1, 1);
    let id = submit(&c, &[], "sleep 300\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    let sid = c.job_attr(&id, "session_id").unwrap();
    let suspend = |c: &Cluster| {
        c.run("qsig", &["-s", "suspend", &id]).ok();
        c.wait_job_state(&id, "S", JOB_TIMEOUT);
        wait_until("job stopped", JOB_TIMEOUT, || proc_state(&sid) == Some('T'));
    };
    // The resume goes out after whatever the reconnection sent the mom: had that killed or
    // forgotten the job, the session would not continue.
    let resume = |c: &Cluster| {
        c.run("qsig", &["-s", "resume", &id]).ok();
        c.wait_job_state(&id, "R", JOB_TIMEOUT);
        wait_until("job continued", JOB_TIMEOUT, || proc_state(&sid).is_some_and(|s| s != 'T'));
    };

    suspend(&c);
    c.kill_mom("n1");
    c.wait_node_state("n1", "down");
    c.start_mom("n1");
    c.wait_node_state("n1", "free");
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("S"), "{}", c.logs());
    resume(&c);

    suspend(&c);
    c.kill9();
    c.start_server();
    c.wait_node_state("n1", "free");
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("S"), "{}", c.logs());
    // Still what a suspended job holds: nothing.
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("0"));
    resume(&c);
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("1"));
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert!(proc_state(&sid).is_none_or(|s| s == 'Z'), "the job outlived its deletion");
}

/// Takes the job's script out of the server's store, as a damaged database would.
fn drop_script(c: &Cluster, id: &str) {
    let db = rusqlite::Connection::open(pbs_core::conf::server_store_file(&c.home())).unwrap();
    db.busy_timeout(Duration::from_secs(10)).unwrap();
    let changed =
        db.execute("UPDATE jobs SET script = NULL WHERE seq = ?1", [seq(id).parse::<i64>().unwrap()]).unwrap();
    assert_eq!(changed, 1);
}

#[test]
fn a_node_holding_only_a_suspended_job_cannot_be_deleted() {
    let c = Cluster::with_moms(2, 1);
    let id = submit(&c, &["-l", "select=2:ncpus=1", "-l", "place=scatter"], "sleep 300\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.run("qsig", &["-s", "suspend", &id]).ok();
    c.wait_job_state(&id, "S", JOB_TIMEOUT);
    for node in ["n1", "n2"] {
        let refused = c.run("qmgr", &["-c", &format!("delete node {node}")]);
        assert_ne!(refused.code, 0, "{node} deleted under a suspended job");
        assert!(c.node_attr(node, "state").is_some(), "{node} is gone");
    }
    c.run("qsig", &["-s", "resume", &id]).ok();
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
}

#[test]
fn a_job_whose_script_cannot_be_read_goes_back_to_the_queue_unrun() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("set server scheduling = False");
    let marker = c.dir().join("ran");
    let id = submit(&c, &["-N", "noscript"], &format!("touch {}\n", marker.display()));
    drop_script(&c, &id);
    c.run("qrun", &["-H", "n1", &id]).ok();
    let expected = "Not Running: PBS Error: System error: cannot read the job script";
    wait_until("the job back in the queue", JOB_TIMEOUT, || {
        c.job_attr(&id, "job_state").as_deref() == Some("Q") && c.job_attr(&id, "comment").as_deref() == Some(expected)
    });
    assert!(!marker.exists());
    assert!(!c.dir().join(format!("noscript.o{}", seq(&id))).exists(), "the job ran: {}", c.logs());
    assert_eq!(c.job_attr(&id, "exec_vnode"), None);
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("0"));
    assert_eq!(c.node_attr("n1", "state").as_deref(), Some("free"));
}

#[test]
fn a_job_whose_script_stays_unreadable_is_held_after_twenty_attempts() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("set server scheduling = False");
    let id = submit(&c, &[], "true\n");
    drop_script(&c, &id);
    // Each cycle would start it again, forever: OpenPBS holds it after 20 failed runs.
    c.qmgr("set server scheduling = True");
    c.wait_job_state(&id, "H", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Hold_Types").as_deref(), Some("s"));
    assert_eq!(c.job_attr(&id, "run_count").as_deref(), Some("21"));
    assert_eq!(c.job_attr(&id, "comment").as_deref(), Some("job held, too many failed attempts to run"));
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("0"));
}

#[test]
fn a_panic_under_the_state_lock_ends_the_server_and_a_restart_recovers() {
    let mut c = Cluster::start();
    c.allow_root_jobs();
    let kept = c.client().submit(vec![Attr::new("Job_Name", "kept")], "true\n".into(), None).unwrap();
    let pid = c.server_pid().unwrap();
    // Debug builds only: see `pbs_server::dispatch::test_panic`.
    let trigger = vec![Attr::new("Job_Name", "PBS_TEST_PANIC_UNDER_STATE_LOCK")];
    let answer = c.client().submit(trigger, "true\n".into(), None);
    assert!(answer.is_err(), "the server answered {answer:?}");
    wait_until("the server gone", JOB_TIMEOUT, || proc_state(&pid.to_string()).is_none_or(|s| s == 'Z'));
    let stderr = c.server_stderr();
    assert!(
        stderr.lines().any(|l| l.contains(";Server;") && l.contains("PBS_TEST_PANIC_UNDER_STATE_LOCK")),
        "no log line for the panic: {stderr}"
    );
    c.kill9();
    c.start_server();
    assert_eq!(c.job_attr(&kept, "Job_Name").as_deref(), Some("kept"));
    assert_eq!(c.job_attr(&kept, "job_state").as_deref(), Some("Q"));
}

/// The store's commit fails for real: another process holds the database's write lock
/// (the server sets no busy timeout, so its writer is refused at once, `database is
/// locked`). The server must stop rather than serve changes its disk does not hold, and a
/// restart must show what was acknowledged and nothing that was not.
#[test]
fn a_failed_commit_stops_the_server_and_a_restart_shows_only_what_was_acknowledged() {
    let mut c = Cluster::start();
    c.allow_root_jobs();
    let kept = c.client().submit(vec![Attr::new("Job_Name", "kept")], "true\n".into(), None).unwrap();
    let db = rusqlite::Connection::open(pbs_core::conf::server_store_file(&c.home())).unwrap();
    db.busy_timeout(Duration::from_secs(10)).unwrap();
    db.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let refused = c.run_with_stdin("qsub", &["-N", "refused"], "true\n", false);
    assert_ne!(refused.code, 0, "qsub succeeded while the store could not commit: {refused:?}");
    assert_eq!(c.wait_server_exit(JOB_TIMEOUT), Some(1), "the server's exit status");
    let stderr = c.server_stderr();
    assert!(
        stderr.lines().any(|l| l.contains("Store commit failed; stopping the server")),
        "no log line for the failed commit: {stderr}"
    );
    db.execute_batch("ROLLBACK").unwrap();
    drop(db);
    c.start_server();
    assert_eq!(c.job_attr(&kept, "Job_Name").as_deref(), Some("kept"));
    let all = c.run("qstat", &["-f"]).ok();
    assert!(!all.stdout.contains("refused"), "a job whose commit failed came back: {}", all.stdout);
}

#[test]
fn a_newline_in_a_job_name_forges_no_log_line() {
    let c = Cluster::start();
    c.allow_root_jobs();
    let forged = "01/01/1970 00:00:00;0008;Server@forged;Job;1.forged;Job deleted at request of root@forged";
    let attrs = vec![Attr::new("Job_Name", format!("evil\n{forged}"))];
    let id = c.client().submit(attrs, "true\n".into(), None).unwrap();
    let queued = format!(";Job;{id};Job Queued at request of ");
    wait_until("the job's log line", JOB_TIMEOUT, || c.server_stderr().contains(&queued));
    let log = c.server_stderr();
    assert!(!log.lines().any(|l| l.starts_with("01/01/1970 00:00:00")), "a forged line: {log}");
    let line = log.lines().find(|l| l.contains(&queued)).unwrap();
    assert!(line.contains(&format!("job name = evil\\n{forged}, queue = workq")), "{line}");
}
