//! Requests that wait for moms' answers: qsig answers with what the mom did, a job is
//! suspended only once its mom stopped it, and a mom that does not answer in time fails
//! its own job's request, leaving the job as it was.

use std::time::{Duration, Instant};

use pbs_e2e::Cluster;

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

fn signal_mom(c: &Cluster, node: &str, signal: nix::sys::signal::Signal) {
    let pid = c.mom_pid(node).expect("the mom runs");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid"));
    nix::sys::signal::kill(pid, signal).expect("signal the mom");
}

#[test]
fn qsig_answers_with_the_moms_outcome_and_a_silent_mom_changes_nothing() {
    let c = Cluster::with_moms(1, 1);
    let id = c.qsub(&["--", "/bin/sleep", "300"]);
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the job's session has started", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    // Answered by the mom: done, and the job's state follows.
    c.run("qsig", &["-s", "suspend", &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("S"));
    c.run("qsig", &["-s", "resume", &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    // A signal whose default is to be ignored: the job runs on.
    c.run("qsig", &["-s", "WINCH", &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));

    // A mom that does not answer: the request fails for that job once its time is up,
    // and the job is not marked suspended.
    signal_mom(&c, "n1", nix::sys::signal::Signal::SIGSTOP);
    let started = Instant::now();
    let out = c.run("qsig", &["-s", "suspend", &id]);
    signal_mom(&c, "n1", nix::sys::signal::Signal::SIGCONT);
    assert_eq!(out.stderr, format!("qsig: Server could not connect to MOM {id}\n"), "{out:?}");
    assert_ne!(out.code, 0);
    assert!(started.elapsed() >= Duration::from_secs(9), "answered after {:?}", started.elapsed());
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    // The mom, running again, carries out the suspend it was sent and answers late: the
    // request has failed, so the server has it undone and the job's session runs on.
    let sid: i32 = c.job_attr(&id, "session_id").and_then(|s| s.parse().ok()).expect("session id");
    pbs_e2e::wait_until("the late answer", JOB_TIMEOUT, || {
        c.logs().contains("answered suspend after its request had failed")
    });
    pbs_e2e::wait_until("the session runs again", JOB_TIMEOUT, || process_state(sid).is_some_and(|s| s != 'T'));
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    c.run("qdel", &[&id]).ok();
}

/// The state letter of process `pid` (`T` when stopped).
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}
