//! Eligible time on real daemons (`eligible_time_enable`, seed 004): a job accrues while it
//! could run but for resources, not while held; the time is exact between updates and
//! survives a server restart; a job a run limit holds back is made ineligible at once, with
//! its comment, inside `attr_update_period`; who may set `eligible_time`, and when.

use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);

/// `HH:MM:SS` in seconds.
fn secs(text: &str) -> u64 {
    text.parse::<pbs_core::Duration>().map(|d| d.as_secs()).unwrap_or(0)
}

fn eligible(c: &Cluster, id: &str) -> u64 {
    c.job_attr(id, "eligible_time").map(|t| secs(&t)).unwrap_or(0)
}

#[test]
fn eligible_time_grows_only_while_eligible_and_survives_a_restart() {
    let mut c = Cluster::with_moms(1, 1);
    c.qmgr("set server eligible_time_enable = True");
    let busy = c.qsub(&["--", "/bin/sleep", "60"]);
    c.wait_job_state(&busy, "R", TIMEOUT);
    wait_until("the running job accrues run time", TIMEOUT, || {
        c.job_attr(&busy, "accrue_type").as_deref() == Some("3")
    });
    let waiting = c.qsub(&["--", "/bin/true"]);
    let held = c.qsub(&["-h", "--", "/bin/true"]);
    assert_eq!(c.job_attr(&held, "accrue_type").as_deref(), Some("1"), "held: ineligible");
    wait_until("the waiting job commented", TIMEOUT, || c.job_attr(&waiting, "comment").is_some());
    assert_eq!(c.job_attr(&waiting, "accrue_type").as_deref(), Some("2"), "waits for resources: eligible");
    // Nothing is sent between cycles, yet the time shown grows.
    wait_until("eligible time accrued", TIMEOUT, || eligible(&c, &waiting) >= 2);
    assert_eq!(c.job_attr(&held, "eligible_time").as_deref(), Some("00:00:00"), "a held job does not accrue");
    let full = c.run("qstat", &["-f", &waiting]).ok().stdout;
    assert!(full.contains("    accrue_type = 2\n") && full.contains("    eligible_time = 00:00:"), "{full}");
    let before = eligible(&c, &waiting);
    c.terminate();
    c.start_server();
    let after = eligible(&c, &waiting);
    assert!(after >= before, "eligible time lost at a restart: {before} s, then {after} s");
    assert_eq!(c.job_attr(&held, "eligible_time").as_deref(), Some("00:00:00"));
    // Released: accrues again once the scheduler says why it waits.
    c.run("qrls", &[&held]).ok();
    wait_until("the released job eligible", TIMEOUT, || c.job_attr(&held, "accrue_type").as_deref() == Some("2"));
    wait_until("the released job accrues", TIMEOUT, || eligible(&c, &held) >= 1);
    c.run("qdel", &[&busy]).ok();
}

#[test]
fn a_run_limit_makes_a_job_ineligible_at_once_inside_the_period() {
    let c = Cluster::with_moms(1, 2);
    c.qmgr("set server eligible_time_enable = True");
    c.qmgr("set server max_run = \"[u:PBS_GENERIC=1]\"");
    let sent = c.sched_stderr().matches("Sending job can't run updates").count();
    c.qmgr("set sched attr_update_period = 600");
    wait_until("a cycle that sent", TIMEOUT, || {
        c.sched_stderr().matches("Sending job can't run updates").count() > sent
    });
    let first = c.qsub(&["--", "/bin/sleep", "60"]);
    c.wait_job_state(&first, "R", TIMEOUT);
    // Inside the period: the second job of the same user is held back by the limit, which
    // changes what it accrues, so its comment and accrue_type go out now.
    let second = c.qsub(&["--", "/bin/true"]);
    wait_until("the limited job ineligible", TIMEOUT, || c.job_attr(&second, "accrue_type").as_deref() == Some("1"));
    assert_eq!(
        c.job_attr(&second, "comment").as_deref(),
        Some("Not Running: User has reached server running job limit.")
    );
    // Another user's job waiting for resources stays eligible: its comment waits.
    let held = c.sched_stderr().matches("Holding back").count();
    let other = c.run_as_nobody("qsub", &["-l", "select=1:ncpus=2", "--", "/bin/true"]).ok().line().to_string();
    wait_until("a cycle that held updates back", TIMEOUT, || c.sched_stderr().matches("Holding back").count() > held);
    assert_eq!(c.job_attr(&other, "accrue_type").as_deref(), Some("2"));
    assert_eq!(c.job_attr(&other, "comment"), None, "commented inside the period");
    c.run("qdel", &[&first]).ok();
}

#[test]
fn eligible_time_is_a_managers_to_set_and_only_while_enabled() {
    let c = Cluster::start();
    c.allow_root_jobs();
    let id = c.qsub(&["-h", "--", "/bin/true"]);
    // Off: not shown, and not settable, with OpenPBS's message and status.
    let out = c.run("qalter", &["-W", "eligible_time=00:10:00", &id]);
    assert_eq!(out.code, 15138 & 0xff, "{out:?}");
    assert_eq!(out.stderr, format!("qalter: Cannot set attribute when eligible_time_enable is OFF {id}\n"));
    let full = c.run("qstat", &["-f", &id]).ok().stdout;
    assert!(!full.contains("eligible_time") && !full.contains("accrue_type"), "{full}");
    c.qmgr("set server eligible_time_enable = True");
    let out = c.run_as_nobody("qalter", &["-W", "eligible_time=00:10:00", &id]);
    assert_ne!(out.code, 0, "{out:?}");
    c.run("qalter", &["-W", "eligible_time=00:10:00", &id]).ok();
    assert_eq!(c.job_attr(&id, "eligible_time").as_deref(), Some("00:10:00"), "held: it does not grow");
    // Everyone reads eligible_time; accrue_type is a manager's.
    let seen = c.run_as_nobody("qstat", &["-f", &id]).ok().stdout;
    assert!(seen.contains("    eligible_time = 00:10:00\n") && !seen.contains("accrue_type"), "{seen}");
}

/// Hooks see a job's `accrue_type` (a number) and `eligible_time` (a duration) while the
/// server keeps eligible time: a modifyjob hook writes them into the job's comment.
#[test]
fn hooks_see_accrue_type_and_eligible_time() {
    let c = Cluster::start();
    c.qmgr("set server eligible_time_enable = True");
    let body = "import pbs\ne = pbs.event()\nj = e.job_o\n\
                e.job.comment = \"%d %s %d\" % (j.accrue_type, j.eligible_time, int(j.eligible_time))\n";
    let file = c.dir().join("seen.py");
    std::fs::write(&file, body).expect("write hook");
    c.qmgr("create hook seen event=modifyjob");
    c.qmgr(&format!("import hook seen application/x-python default {}", file.display()));
    // Held by its owner: ineligible (1), nothing accrued yet.
    let held = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    c.run_as_nobody("qalter", &["-N", "renamed", &held]).ok();
    assert_eq!(c.job_attr(&held, "comment").as_deref(), Some("1 00:00:00 0"));
}
