//! Run limits on real daemons (`max_run`, `max_run_res.RES`, `max_run_soft`,
//! `max_run_res_soft.RES`): set, listed, printed and unset with qmgr, malformed values
//! refused, jobs held back by a hard limit with OpenPBS's comments and scheduler log lines,
//! and jobs over a soft limit run and marked in the scheduler's view
//! (../shared/reference/openpbs-outputs/runlimit_*.txt).

use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn sleeper(c: &Cluster, name: &str) -> String {
    c.qsub(&["-N", name, "--", "/bin/sleep", "30"])
}

/// Waits until the job's comment is `comment` (the scheduler writes it after a cycle).
#[track_caller]
fn commented(c: &Cluster, id: &str, comment: &str) {
    wait_until(&format!("{id} commented `{comment}`"), JOB_TIMEOUT, || {
        c.job_attr(id, "comment").as_deref() == Some(comment)
    });
    assert_eq!(c.job_attr(id, "job_state").as_deref(), Some("Q"));
}

/// Waits for `line` in the scheduler's log (its writer is a thread of its own).
#[track_caller]
fn sched_logged(c: &Cluster, line: &str) {
    wait_until(&format!("`{line}` in the scheduler log"), JOB_TIMEOUT, || c.sched_stderr().contains(line));
}

/// The lines of `text` that name `what`.
fn lines_with(text: &str, what: &str) -> String {
    text.lines().filter(|l| l.contains(what)).map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_per_user_ncpus_limit_holds_the_second_job_with_openpbs_comment_and_log_line() {
    let c = Cluster::with_moms(1, 4);
    // runlimit_set_max_run_res.txt
    let set = c.run("qmgr", &["-c", "set server max_run_res.ncpus=[u:PBS_GENERIC=1]"]).ok();
    assert_eq!((set.stdout.as_str(), set.stderr.as_str()), ("", ""));
    let first = sleeper(&c, "mrr1");
    c.wait_job_state(&first, "R", JOB_TIMEOUT);
    let second = sleeper(&c, "mrr2");
    commented(&c, &second, "Not Running: Server per-user limit reached on resource ncpus");
    // runlimit_max_run_res_qstat_s.txt: the comment under the job.
    let shown = c.run("qstat", &["-s", &first, &second]).ok().stdout;
    assert!(shown.contains("\n   Not Running: Server per-user limit reached on resource ncpus\n"), "{shown}");
    // runlimit_max_run_res_sched_log.txt
    sched_logged(&c, &format!(";0080;pbs_sched;Job;{second};Considering job to run\n"));
    sched_logged(&c, &format!(";0040;pbs_sched;Job;{second};Server per-user limit reached on resource ncpus\n"));
    sched_logged(&c, &format!(";0040;pbs_sched;Job;{first};Job run\n"));

    // Every other variant in the reference, each set in place of the last (a qmgr change
    // starts a cycle, and an unset limit would let the job run).
    for (command, comment) in [
        // runlimit_max_run_res_named_user_comment.txt
        (
            "set server max_run_res.ncpus=[u:root=1]",
            "Not Running: would exceed user root's limit on resource ncpus in complex",
        ),
        // runlimit_max_run_res_group_comment.txt
        (
            "set server max_run_res.ncpus=[g:PBS_GENERIC=1]",
            "Not Running: Server per-group limit reached on resource ncpus",
        ),
        // runlimit_max_run_res_overall_comment.txt
        (
            "set server max_run_res.ncpus=[o:PBS_ALL=1]",
            "Not Running: would exceed overall limit on resource ncpus in complex",
        ),
        // runlimit_queue_max_run_res_comment.txt: the queue's limit is checked first.
        (
            "set queue workq max_run_res.ncpus=[u:PBS_GENERIC=1]",
            "Not Running: Queue workq per-user limit reached on resource ncpus",
        ),
        // Count limits come before resource limits: runlimit_max_run_overall_comment.txt
        ("set server max_run=[o:PBS_ALL=1]", "Not Running: Server job limit has been reached."),
        // runlimit_max_run_user_comment.txt
        ("set server max_run=[u:PBS_GENERIC=1]", "Not Running: User has reached server running job limit."),
    ] {
        c.qmgr(command);
        commented(&c, &second, comment);
    }
    // qstat -f folds the long comment as OpenPBS does (runlimit_queue_max_run_res_comment.txt
    // shows the same fold for the queue's text).
    c.qmgr("set server max_run=[u:PBS_GENERIC=5]");
    c.qmgr("unset server max_run_res.ncpus");
    commented(&c, &second, "Not Running: Queue workq per-user limit reached on resource ncpus");
    let full = c.run("qstat", &["-f", &second]).ok().stdout;
    assert!(
        full.contains("    comment = Not Running: Queue workq per-user limit reached on resource ncpus\n\t\n"),
        "{full}"
    );

    // Lifting the last limit lets it run.
    c.qmgr("unset queue workq max_run_res.ncpus");
    c.wait_job_state(&second, "R", JOB_TIMEOUT);
}

#[test]
fn a_job_over_a_soft_limit_runs_and_the_scheduler_marks_it() {
    let c = Cluster::with_moms(1, 4);
    // runlimit_set_max_run_soft.txt
    let set = c.run("qmgr", &["-c", "set server max_run_soft=[u:PBS_GENERIC=1]"]).ok();
    assert_eq!((set.stdout.as_str(), set.stderr.as_str()), ("", ""));
    let first = sleeper(&c, "mrs1");
    c.wait_job_state(&first, "R", JOB_TIMEOUT);
    let second = sleeper(&c, "mrs2");
    c.wait_job_state(&second, "R", JOB_TIMEOUT);
    // runlimit_max_run_soft_second_qstat_f.txt: the usual comment.
    let comment = c.job_attr(&second, "comment").unwrap_or_default();
    assert!(comment.starts_with("Job run at "), "{comment}");
    // runlimit_max_run_soft_sched_log.txt, and the scheduler's view: the second start put
    // the user over the server's soft limit, preemption's `server_softlimits` class.
    sched_logged(&c, &format!(";0040;pbs_sched;Job;{second};Job run\n"));
    sched_logged(
        &c,
        &format!(";0400;pbs_sched;Job;{second};Over soft limits: preempt priority class server_softlimits\n"),
    );
    assert!(!c.sched_stderr().contains(&format!(";Job;{first};Over soft limits")), "{}", c.sched_stderr());

    // The resource form (runlimit_max_run_res_soft_qstat.txt): both run as well.
    c.qmgr("unset server max_run_soft");
    c.qmgr("set server max_run_res_soft.ncpus=[u:PBS_GENERIC=1]");
    let printed = c.run("qmgr", &["-c", "p s"]).ok().stdout;
    // runlimit_max_run_res_soft_p_s.txt
    assert_eq!(lines_with(&printed, "max_run"), "set server max_run_res_soft.ncpus = [u:PBS_GENERIC=1]\n");
    let third = sleeper(&c, "mrrs3");
    c.wait_job_state(&third, "R", JOB_TIMEOUT);
    sched_logged(
        &c,
        &format!(";0400;pbs_sched;Job;{third};Over soft limits: preempt priority class server_softlimits\n"),
    );
}

#[test]
fn qmgr_sets_lists_prints_and_unsets_run_limits_and_refuses_bad_ones() {
    let c = Cluster::start();
    c.qmgr("set server max_run_res.ncpus=[u:PBS_GENERIC=1]");
    c.qmgr("set server max_run_soft=[u:PBS_GENERIC=1]");
    c.qmgr("set queue workq max_run_res.ncpus=[u:PBS_GENERIC=1]");
    // runlimit_p_s.txt, runlimit_list_server.txt, runlimit_queue_p_q.txt (`p s` prints
    // the queues first, then the server).
    let printed = c.run("qmgr", &["-c", "p s"]).ok().stdout;
    assert_eq!(
        lines_with(&printed, "max_run"),
        "set queue workq max_run_res.ncpus = [u:PBS_GENERIC=1]\nset server max_run_res.ncpus = [u:PBS_GENERIC=1]\nset server max_run_soft = [u:PBS_GENERIC=1]\n"
    );
    let listed = c.run("qmgr", &["-c", "list server"]).ok().stdout;
    assert_eq!(
        lines_with(&listed, "max_run"),
        "    max_run_res.ncpus = [u:PBS_GENERIC=1]\n    max_run_soft = [u:PBS_GENERIC=1]\n"
    );
    let queue = c.run("qmgr", &["-c", "p q workq"]).ok().stdout;
    assert_eq!(lines_with(&queue, "max_run"), "set queue workq max_run_res.ncpus = [u:PBS_GENERIC=1]\n");
    // runlimit_qstat_Bf.txt: in OpenPBS's attribute order, before total_jobs.
    let status = c.run("qstat", &["-Bf"]).ok().stdout;
    let at = status.find("    max_run_res.ncpus").expect("max_run_res.ncpus in qstat -Bf");
    assert!(
        status[at..].starts_with(
            "    max_run_res.ncpus = [u:PBS_GENERIC=1]\n    max_run_soft = [u:PBS_GENERIC=1]\n    total_jobs = "
        ),
        "{status}"
    );
    // Several entities, added and removed one at a time.
    c.qmgr("set server max_run = '[u:PBS_GENERIC=3], [g:staff=2]'");
    c.qmgr("set server max_run += [p:PBS_GENERIC=4]");
    c.qmgr("set server max_run -= [g:staff=2]");
    assert_eq!(c.server_attr("max_run").as_deref(), Some("[u:PBS_GENERIC=3],[p:PBS_GENERIC=4]"));

    // runlimit_bad_syntax.txt: the caret under the bad entity letter, nothing sent.
    let bad = c.run("qmgr", &["-c", "set server max_run_res.ncpus=[x:PBS_GENERIC=1]"]);
    assert_eq!(bad.code, 4, "{bad:?}");
    assert_eq!(bad.stdout, "");
    assert_eq!(
        bad.stderr,
        "qmgr: Syntax error\nset server max_run_res.ncpus=[x:PBS_GENERIC=1]\n                              ^\n"
    );
    // runlimit_bad_syntax2.txt: well formed, but not a number: the server refuses it.
    let bad = c.run("qmgr", &["-c", "set server max_run=[u:PBS_GENERIC=abc]"]);
    assert_eq!(bad.code, 166, "{bad:?}");
    assert_eq!(
        bad.stderr,
        "qmgr obj= svr=default: Illegal attribute or resource value max_run\nqmgr: Error (15014) returned from server\n"
    );
    let bad = c.run("qmgr", &["-c", "set server max_run_res_soft.mem=[u:PBS_GENERIC=lots]"]);
    assert_eq!(bad.code, 166, "{bad:?}");

    // runlimit_unset_max_run_res.txt, runlimit_unset_p_s.txt
    for attr in ["max_run_res.ncpus", "max_run_soft", "max_run"] {
        let unset = c.run("qmgr", &["-c", &format!("unset server {attr}")]).ok();
        assert_eq!((unset.stdout.as_str(), unset.stderr.as_str()), ("", ""));
    }
    c.qmgr("unset queue workq max_run_res.ncpus");
    let printed = c.run("qmgr", &["-c", "p s"]).ok().stdout;
    assert_eq!(lines_with(&printed, "max_run"), "");
}
