//! soft_walltime on real daemons: the estimate grows while the job runs, never past the
//! hard walltime, the job is never killed for it, and the calendar lets a filler run only
//! when its soft_walltime ends before the top job's start.

use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

#[test]
fn estimate_grows_by_the_original_soft_walltime_and_stops_at_walltime() {
    let c = Cluster::with_moms(1, 2);
    c.qmgr("set server scheduler_iteration = 1");
    let open = submit(&c, &["-l", "walltime=00:01:00"], "sleep 30\n");
    let capped = submit(&c, &["-l", "walltime=00:00:07"], "sleep 30\n");
    // Only a manager may set it; root's qalter does.
    c.run("qalter", &["-l", "soft_walltime=2", &open]).ok();
    c.run("qalter", &["-l", "soft_walltime=3", &capped]).ok();
    assert_eq!(c.job_attr(&open, "Resource_List.soft_walltime").as_deref(), Some("00:00:02"));
    c.wait_job_state(&open, "R", JOB_TIMEOUT);
    for expected in ["00:00:04", "00:00:06", "00:00:08"] {
        wait_until(&format!("estimated.soft_walltime {expected}"), JOB_TIMEOUT, || {
            c.job_attr(&open, "estimated.soft_walltime").as_deref() == Some(expected)
        });
    }
    // The original request does not change.
    assert_eq!(c.job_attr(&open, "Resource_List.soft_walltime").as_deref(), Some("00:00:02"));
    wait_until("capped at the hard walltime", JOB_TIMEOUT, || {
        c.job_attr(&capped, "estimated.soft_walltime").as_deref() == Some("00:00:07")
    });
    // The hard walltime still kills it.
    c.wait_job_state(&capped, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&capped, "Exit_status").as_deref(), Some("-29"));
    c.run("qdel", &[&open]).ok();
}

#[test]
fn a_job_is_never_killed_past_its_soft_walltime() {
    let c = Cluster::with_moms(1, 1);
    let id = submit(&c, &["-h"], "sleep 3\nexit 0\n");
    c.run("qalter", &["-l", "soft_walltime=1", &id]).ok();
    c.run("qrls", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("0"), "{}", c.logs());
}

#[test]
fn a_filler_runs_only_if_its_soft_walltime_ends_before_the_top_job() {
    let c = Cluster::with_moms_and_sched_config(1, 2, Some("strict_ordering: true ALL\nbackfill: true ALL\n"));
    // One cpu busy for about 20 s (its soft_walltime), the other free.
    let running = submit(&c, &["-h", "-l", "select=1:ncpus=1", "-l", "walltime=00:05:00"], "sleep 60\n");
    c.run("qalter", &["-l", "soft_walltime=20", &running]).ok();
    c.run("qrls", &[&running]).ok();
    c.wait_job_state(&running, "R", JOB_TIMEOUT);
    // The top job needs both cpus: it can start once `running` is expected to end.
    let top = submit(&c, &["-l", "select=1:ncpus=2", "-l", "walltime=00:05:00"], "true\n");
    wait_until("the top job's estimated start", JOB_TIMEOUT, || c.job_attr(&top, "estimated.start_time").is_some());
    // It starts when `running` is expected to end: its start plus its soft_walltime.
    let stime: i64 = c.job_attr(&running, "stime").and_then(|t| t.parse().ok()).unwrap_or(0);
    let start: i64 = c.job_attr(&top, "estimated.start_time").and_then(|t| t.parse().ok()).unwrap_or(0);
    assert_eq!(start, stime + 20, "{}", c.logs());
    assert_eq!(c.job_attr(&top, "estimated.exec_vnode").as_deref(), Some("(n1:ncpus=2)"));
    // A filler whose hard walltime would run past that start waits; one whose
    // soft_walltime ends before it runs now.
    let long = submit(&c, &["-h", "-l", "select=1:ncpus=1", "-l", "walltime=00:05:00"], "sleep 1\n");
    let short = submit(&c, &["-h", "-l", "select=1:ncpus=1", "-l", "walltime=00:05:00"], "sleep 1\n");
    c.run("qalter", &["-l", "soft_walltime=2", &short]).ok();
    c.run("qrls", &[&long, &short]).ok();
    c.wait_job_state(&short, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&long, "job_state").as_deref(), Some("Q"), "{}", c.logs());
    wait_until("the top-job conflict comment", JOB_TIMEOUT, || {
        c.job_attr(&long, "comment").as_deref() == Some("Not Running: Job would conflict with reservation or top job")
    });
    c.run("qdel", &[&running, &top, &long]).ok();
}

#[test]
fn soft_walltime_errors_and_permissions() {
    let c = Cluster::start();
    let id = c.run_with_stdin("qsub", &["-h", "-l", "walltime=01:00:00"], "true\n", true).ok().line().to_string();
    // A user cannot set it; a manager can, up to the hard walltime.
    let user = c.run_as_nobody("qalter", &["-l", "soft_walltime=10", &id]);
    assert_eq!(
        (user.stderr.as_str(), user.code),
        (
            format!(
                "qalter: Cannot set attribute, read only or insufficient permission  Resource_List.soft_walltime {id}\n"
            )
            .as_str(),
            155
        )
    );
    c.run("qalter", &["-l", "soft_walltime=00:30:00", &id]).ok();
    let above = c.run("qalter", &["-l", "soft_walltime=02:00:00", &id]);
    assert_eq!(
        (above.stderr.as_str(), above.code),
        (format!("qalter: Illegal attribute or resource value {id}\n").as_str(), 166)
    );
    // Shrink-to-fit and soft_walltime do not go together, whichever comes second.
    let stf = c.run("qalter", &["-l", "min_walltime=00:05:00", &id]);
    assert_eq!(
        (stf.stderr.as_str(), stf.code),
        (format!("qalter: soft_walltime is not supported with Shrink to Fit jobs {id}\n").as_str(), 76)
    );
    assert_eq!(c.job_attr(&id, "Resource_List.min_walltime"), None);
    // estimated.* is the scheduler's: not even a manager sets it.
    let estimated = c.run("qalter", &["-W", "estimated.soft_walltime=10", &id]);
    assert_ne!(estimated.code, 0, "{estimated:?}");
}
