//! The scheduler's settings on real daemons: `attr_update_period` (seed 004: inside the
//! period the scheduler sends no "job can't run" update, a new queued job gets no comment,
//! and the first cycle after the period sends what it held back; the value's checks and
//! permissions), and the default sched_config a first start installs.

use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);

fn sched_log_count(c: &Cluster, line: &str) -> usize {
    c.sched_stderr().matches(line).count()
}

#[test]
fn can_t_run_comments_wait_for_the_period_and_then_go_out() {
    let c = Cluster::with_moms(1, 1);
    let busy = c.qsub(&["--", "/bin/sleep", "60"]);
    c.wait_job_state(&busy, "R", TIMEOUT);
    let first = c.qsub(&["--", "/bin/true"]);
    wait_until("the first waiting job commented", TIMEOUT, || c.job_attr(&first, "comment").is_some());
    // Setting the period makes the next cycle send (the one the change itself starts);
    // inside the period, a cycle runs for a new job and holds its comment back.
    let sent = sched_log_count(&c, "Sending job can't run updates");
    c.qmgr("set sched attr_update_period = 5");
    wait_until("a cycle that sent", TIMEOUT, || sched_log_count(&c, "Sending job can't run updates") > sent);
    let held = sched_log_count(&c, "Holding back");
    let second = c.qsub(&["--", "/bin/true"]);
    wait_until("a cycle that held updates back", TIMEOUT, || sched_log_count(&c, "Holding back") > held);
    assert_eq!(c.job_attr(&second, "comment"), None, "commented inside the period");
    // Cycles every second: the first one past the period sends it.
    c.qmgr("set sched scheduler_iteration = 1");
    wait_until("the held comment sent", TIMEOUT, || c.job_attr(&second, "comment").is_some());
    assert_eq!(c.job_attr(&second, "comment"), c.job_attr(&first, "comment"));
    assert!(c.sched_stderr().contains("Sending job can't run updates (attr_update_period 5 s)"));
    c.run("qdel", &[&busy]).ok();
}

#[test]
fn the_period_is_a_managers_non_negative_number_everyone_reads() {
    let c = Cluster::start();
    let out = c.run("qmgr", &["-c", "set sched attr_update_period = -1"]);
    assert_eq!(out.code, 166, "{out:?}");
    assert!(out.stderr.contains("Illegal attribute or resource value attr_update_period"), "{out:?}");
    c.qmgr("set sched attr_update_period = 45");
    let listed = c.run("qmgr", &["-c", "list sched"]).ok().stdout;
    assert!(listed.contains("    attr_update_period = 45\n"), "{listed}");
    let printed = c.run("qmgr", &["-c", "p sched"]).ok().stdout;
    assert!(printed.contains("set sched attr_update_period = 45\n"), "{printed}");
    let out = c.run_as_nobody("qmgr", &["-c", "set sched attr_update_period = 5"]);
    assert_ne!(out.code, 0, "{out:?}");
    let seen = c.run_as_nobody("qmgr", &["-c", "list sched"]).ok().stdout;
    assert!(seen.contains("    attr_update_period = 45\n"), "{seen}");
    c.qmgr("unset sched default attr_update_period");
    assert!(!c.run("qmgr", &["-c", "list sched"]).ok().stdout.contains("attr_update_period"));
}

#[test]
fn a_first_start_installs_the_default_sched_config_and_never_overwrites_one() {
    use std::os::unix::fs::PermissionsExt;
    let c = Cluster::with_moms(1, 1);
    let file = c.home().join("sched_priv").join("sched_config");
    wait_until("the scheduler's log line", TIMEOUT, || c.sched_stderr().contains("Installed the default sched_config"));
    let text = std::fs::read_to_string(&file).expect("installed");
    assert!(text.contains("\nstrict_ordering: false\tALL\n") && text.contains("\nmax_starve: 24:00:00\n"), "{text}");
    assert_eq!(std::fs::metadata(&file).expect("file").permissions().mode() & 0o777, 0o644);
    // A site's own file is read, not replaced.
    let site = "strict_ordering: true ALL\n";
    let c = Cluster::with_moms_and_sched_config(1, 1, Some(site));
    let file = c.home().join("sched_priv").join("sched_config");
    let busy = c.qsub(&["--", "/bin/true"]);
    c.wait_job_state(&busy, "F", TIMEOUT);
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), site);
    assert!(!c.sched_stderr().contains("Installed the default sched_config"));
}
