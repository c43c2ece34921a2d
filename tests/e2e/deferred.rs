//! Deferred start (`qsub -a`, `qalter -a`): a job waits in W until its execution time,
//! then the server makes it eligible at that time, scheduling on or off, across a restart
//! too; it runs once the scheduler schedules.

use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// `-a` text for `seconds` from now, as qsub reads it (`CCYYMMDDhhmm.SS`, local time), and
/// that time in seconds since the epoch.
fn seconds_ahead(seconds: i64) -> (String, i64) {
    let at = chrono::Local::now() + chrono::Duration::seconds(seconds);
    (at.format("%Y%m%d%H%M.%S").to_string(), at.timestamp())
}

fn qstat_f(c: &Cluster, id: &str) -> String {
    c.run("qstat", &["-f", id]).ok().stdout
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l.trim() == line)
}

#[test]
fn a_deferred_job_becomes_eligible_at_its_time_with_scheduling_off_and_runs_once_it_is_on() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("set server scheduling = False");
    let (at, epoch) = seconds_ahead(3);
    let id = c.qsub(&["-N", "deferred", "-a", &at, "--", "/bin/true"]);
    let status = qstat_f(&c, &id);
    assert!(has_line(&status, "job_state = W") && has_line(&status, "substate = 30"), "{status}");
    let shown = chrono::DateTime::from_timestamp(epoch, 0).expect("time").with_timezone(&chrono::Local);
    let expected = format!("Execution_Time = {}", shown.format("%a %b %e %H:%M:%S %Y"));
    assert!(has_line(&status, &expected), "{expected:?} in\n{status}");
    wait_until("the job is eligible", JOB_TIMEOUT, || c.job_attr(&id, "job_state").as_deref() == Some("Q"));
    assert!(chrono::Utc::now().timestamp() >= epoch, "eligible before its time");
    let status = qstat_f(&c, &id);
    assert!(has_line(&status, "substate = 10"), "{status}");
    assert!(!status.contains("Execution_Time"), "{status}");
    assert!(status.contains("etime = "), "{status}");
    // Nothing runs while scheduling is off; once on, the job runs and finishes.
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
    c.qmgr("set server scheduling = True");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
}

#[test]
fn a_time_that_passed_while_the_server_was_down_falls_due_at_its_start() {
    let mut c = Cluster::start();
    let (at, epoch) = seconds_ahead(2);
    let id = c.run_as_nobody("qsub", &["-a", &at, "--", "/bin/true"]).ok().line().to_string();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("W"));
    assert_eq!(c.terminate(), Some(0));
    wait_until("the execution time passes", JOB_TIMEOUT, || chrono::Utc::now().timestamp() > epoch);
    c.start_server();
    wait_until("the job is eligible after the restart", Duration::from_secs(5), || {
        c.job_attr(&id, "job_state").as_deref() == Some("Q")
    });
    // A job still ahead keeps its entry across a restart.
    let (later, _) = seconds_ahead(3600);
    let waiting = c.run_as_nobody("qsub", &["-a", &later, "--", "/bin/true"]).ok().line().to_string();
    c.kill9();
    c.start_server();
    assert_eq!(c.job_attr(&waiting, "job_state").as_deref(), Some("W"));
}

#[test]
fn qalter_a_moves_a_jobs_time_either_way() {
    let c = Cluster::start();
    let (far, _) = seconds_ahead(3600);
    let id = c.run_as_nobody("qsub", &["-a", &far, "--", "/bin/true"]).ok().line().to_string();
    let (soon, epoch) = seconds_ahead(2);
    c.run_as_nobody("qalter", &["-a", &soon, &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("W"));
    wait_until("the job is eligible at its new time", JOB_TIMEOUT, || {
        c.job_attr(&id, "job_state").as_deref() == Some("Q")
    });
    assert!(chrono::Utc::now().timestamp() >= epoch, "eligible before its time");
    // Put off again: it waits.
    c.run_as_nobody("qalter", &["-a", &far, &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("W"));
    // Held, its time does not make it eligible; released after it, it is.
    let (soon, epoch) = seconds_ahead(1);
    c.run_as_nobody("qalter", &["-a", &soon, &id]).ok();
    c.run_as_nobody("qhold", &[&id]).ok();
    wait_until("the time passes", JOB_TIMEOUT, || chrono::Utc::now().timestamp() > epoch + 1);
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("H"));
    c.run_as_nobody("qrls", &[&id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
}
