//! Job dependencies on real daemons (`qsub -W depend=`): the after family holds a child
//! with a system hold until its parent starts or ends, releases it or deletes it as
//! OpenPBS does (../shared/reference/openpbs-outputs/depend_*.txt), and keeps doing so
//! across a server restart.

use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

/// Waits for `line` in the server's log (its writer is a thread of its own).
#[track_caller]
fn logged(c: &Cluster, line: &str) {
    wait_until(&format!("`{line}` in the server log"), JOB_TIMEOUT, || c.server_stderr().contains(line));
}

fn attr(c: &Cluster, id: &str, name: &str) -> Option<String> {
    c.job_attr(id, name)
}

#[test]
fn an_afterok_chain_runs_in_order_with_openpbs_holds_and_marks() {
    let c = Cluster::with_moms(1, 4);
    let server = c.server_name().to_string();
    let first = submit(&c, &["-N", "first"], "sleep 2\n");
    let second = submit(&c, &["-N", "second", "-W", &format!("depend=afterok:{first}")], "sleep 1\n");
    // depend_afterok_qstat_f.txt: held by the system, substate 22, the list with @server.
    assert_eq!(attr(&c, &second, "job_state").as_deref(), Some("H"));
    assert_eq!(attr(&c, &second, "Hold_Types").as_deref(), Some("s"));
    assert_eq!(attr(&c, &second, "substate").as_deref(), Some("22"));
    assert_eq!(attr(&c, &second, "depend"), Some(format!("afterok:{first}@{server}")));
    assert_eq!(attr(&c, &second, "etime"), None);
    // depend_afterok_parent_qstat_f.txt: the parent names its child.
    assert_eq!(attr(&c, &first, "depend"), Some(format!("beforeok:{second}@{server}")));
    let third = submit(&c, &["-N", "third", "-W", &format!("depend=afterok:{second}")], "true\n");
    assert_eq!(attr(&c, &second, "depend"), Some(format!("afterok:{first}@{server},beforeok:{third}@{server}")));
    c.wait_job_state(&second, "R", JOB_TIMEOUT);
    assert_eq!(attr(&c, &first, "job_state").as_deref(), Some("F"));
    assert_eq!(attr(&c, &third, "job_state").as_deref(), Some("H"));
    c.wait_job_state(&third, "F", JOB_TIMEOUT);
    // Released: its own wait gone from its list (what it is waited on by stays), no hold,
    // an etime (depend_afterok_child_released_qstat_f.txt).
    assert_eq!(attr(&c, &second, "depend"), Some(format!("beforeok:{third}@{server}")));
    assert_eq!(attr(&c, &third, "depend"), None);
    assert_eq!(attr(&c, &second, "Hold_Types").as_deref(), Some("n"));
    assert!(attr(&c, &second, "etime").is_some());
    let ended = |id: &str| attr(&c, id, "obittime").and_then(|t| t.parse::<i64>().ok()).unwrap_or(i64::MAX);
    let started = |id: &str| attr(&c, id, "stime").and_then(|t| t.parse::<i64>().ok()).unwrap_or(0);
    assert!(started(&second) >= ended(&first), "second started before first ended");
    assert!(started(&third) >= ended(&second), "third started before second ended");
    for id in [&first, &second, &third] {
        assert_eq!(attr(&c, id, "Exit_status").as_deref(), Some("0"), "{id}");
    }
    logged(&c, &format!(";Job;{second};Dependency on job {first} released."));
}

#[test]
fn a_failing_parent_deletes_afterok_children_and_releases_the_others() {
    let c = Cluster::with_moms(1, 4);
    for (parent_script, exit) in [("exit 1\n", "1"), ("true\n", "0")] {
        let parent = submit(&c, &["-h", "-N", "parent"], parent_script);
        let ok = submit(&c, &["-N", "ok", "-W", &format!("depend=afterok:{parent}")], "true\n");
        let notok = submit(&c, &["-N", "notok", "-W", &format!("depend=afternotok:{parent}")], "true\n");
        let any = submit(&c, &["-N", "any", "-W", &format!("depend=afterany:{parent}")], "true\n");
        c.run("qrls", &[&parent]).ok();
        c.wait_job_state(&parent, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, &parent, "Exit_status").as_deref(), Some(exit));
        let (deleted, ran) = if exit == "1" { (ok, notok) } else { (notok, ok) };
        c.wait_job_state(&any, "F", JOB_TIMEOUT);
        c.wait_job_state(&ran, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, &ran, "Exit_status").as_deref(), Some("0"));
        // depend_afterok_parent_failed_qstat_fx.txt: finished without running, its list
        // and system hold as they were.
        c.wait_job_state(&deleted, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, &deleted, "substate").as_deref(), Some("92"));
        assert_eq!(attr(&c, &deleted, "Hold_Types").as_deref(), Some("s"));
        assert_eq!(attr(&c, &deleted, "Exit_status"), None);
        assert!(attr(&c, &deleted, "depend").is_some_and(|d| d.contains(&parent)));
        logged(&c, &format!(";Job;{deleted};Job deleted as result of dependency on job {parent}"));
    }
    // On a parent already finished: met at once, or the job ends as it is created.
    let done = submit(&c, &["-N", "done"], "true\n");
    c.wait_job_state(&done, "F", JOB_TIMEOUT);
    let late = submit(&c, &["-W", &format!("depend=afterok:{done}")], "true\n");
    c.wait_job_state(&late, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &late, "Exit_status").as_deref(), Some("0"));
    let never = submit(&c, &["-W", &format!("depend=afternotok:{done}")], "true\n");
    assert_eq!(attr(&c, &never, "job_state").as_deref(), Some("F"));
    assert_eq!(attr(&c, &never, "substate").as_deref(), Some("92"));
}

#[test]
fn after_waits_for_the_start_and_an_unknown_parent_is_refused() {
    let c = Cluster::with_moms(1, 4);
    let parent = submit(&c, &["-h"], "sleep 30\n");
    let child = submit(&c, &["-W", &format!("depend=after:{parent}")], "true\n");
    assert_eq!(attr(&c, &child, "job_state").as_deref(), Some("H"));
    c.run("qrls", &[&parent]).ok();
    c.wait_job_state(&child, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &parent, "job_state").as_deref(), Some("R"));
    c.run("qdel", &[&parent]).ok();

    // Better than OpenPBS on purpose: no job is created on an unknown parent.
    let unknown = format!("99999.{}", c.server_name());
    let out = c.run_with_stdin("qsub", &["-W", "depend=afterok:99999"], "true\n", false);
    assert_eq!((out.code, out.stderr.as_str()), (153, format!("qsub: Unknown Job Id {unknown}\n").as_str()), "{out:?}");
    // What is not acted on yet is refused, never kept idle.
    let out = c.run_with_stdin("qsub", &["-W", "depend=synccount:2"], "true\n", false);
    assert_eq!(out.stderr, "qsub: dependency type synccount is not supported by this server\n", "{out:?}");
    let out = c.run_with_stdin("qsub", &["-W", "depend=afterok:"], "true\n", false);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.starts_with("qsub: illegal -W value\nusage: qsub"), "{out:?}");
}

#[test]
fn a_dependency_survives_a_server_restart() {
    let mut c = Cluster::with_moms(1, 4);
    let parent = submit(&c, &["-h"], "true\n");
    let child = submit(&c, &["-W", &format!("depend=afterok:{parent}")], "true\n");
    // A `beforeok` entry and the wait it put on the job it names come back too.
    let s = c.server_name().to_string();
    let on = submit(&c, &["-W", "depend=on:1"], "true\n");
    let before = submit(&c, &["-h", "-W", &format!("depend=beforeok:{on}")], "true\n");
    c.terminate();
    c.start_server();
    c.wait_node_state("n1", "free");
    assert_eq!(attr(&c, &child, "job_state").as_deref(), Some("H"));
    assert_eq!(attr(&c, &before, "depend"), Some(format!("beforeok:{on}@{s}")));
    assert_eq!(attr(&c, &on, "depend"), Some(format!("afterok:{before}@{s}")));
    assert_eq!(attr(&c, &on, "job_state").as_deref(), Some("H"));
    c.run("qrls", &[&parent, &before]).ok();
    c.wait_job_state(&child, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &child, "Exit_status").as_deref(), Some("0"));
    wait_until("the parent finished", JOB_TIMEOUT, || attr(&c, &parent, "job_state").as_deref() == Some("F"));
    c.wait_job_state(&on, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &on, "Exit_status").as_deref(), Some("0"));
}

#[test]
fn a_dependency_on_an_array_waits_for_its_last_subjob() {
    let c = Cluster::with_moms(1, 4);
    let server = c.server_name().to_string();
    // Subjob 2 fails and ends last: the array counts as failed, as OpenPBS counts it
    // (depend_array_fail_last_*.txt).
    let array = submit(&c, &["-h", "-J", "1-2"], "if [ \"$PBS_ARRAY_INDEX\" = 2 ]; then sleep 1; exit 3; fi\n");
    assert!(array.ends_with(&format!("[].{server}")), "{array}");
    let ok = submit(&c, &["-W", &format!("depend=afterok:{array}")], "true\n");
    let notok = submit(&c, &["-W", &format!("depend=afternotok:{array}")], "true\n");
    let started = submit(&c, &["-W", &format!("depend=after:{array}")], "true\n");
    // depend_afterok_array_qstat_f.txt and _parent_qstat_f.txt.
    assert_eq!(attr(&c, &ok, "depend"), Some(format!("afterok:{array}@{server}")));
    assert_eq!(attr(&c, &ok, "Hold_Types").as_deref(), Some("s"));
    assert_eq!(
        attr(&c, &array, "depend"),
        Some(format!("beforeok:{ok}@{server},beforenotok:{notok}@{server},before:{started}@{server}"))
    );
    // A subjob or a plain id for an array is not a name of it.
    let plain = array.replace("[]", "");
    let out = c.run_with_stdin("qsub", &["-W", &format!("depend=afterok:{plain}")], "true\n", false);
    assert_eq!((out.code, out.stderr.clone()), (153, format!("qsub: Unknown Job Id {plain}\n")), "{out:?}");
    let subjob = array.replace("[]", "[1]");
    let out = c.run_with_stdin("qsub", &["-W", &format!("depend=afterok:{subjob}")], "true\n", false);
    assert_eq!(out.code, 2, "{out:?}");
    c.run("qrls", &[&array]).ok();
    c.wait_job_state(&started, "F", JOB_TIMEOUT);
    c.wait_job_state(&notok, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &notok, "Exit_status").as_deref(), Some("0"));
    c.wait_job_state(&ok, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &ok, "substate").as_deref(), Some("92"));
    assert_eq!(attr(&c, &array, "Exit_status").as_deref(), Some("1"));
    logged(&c, &format!(";Job;{notok};Dependency on job {array} released."));
    logged(&c, &format!(";Job;{ok};Job deleted as result of dependency on job {array}"));
}

#[test]
fn qalter_adds_or_replaces_a_kind_and_refuses_cycles_and_unknown_jobs() {
    let c = Cluster::with_moms(1, 4);
    let s = c.server_name().to_string();
    let q1 = submit(&c, &["-h", "-N", "dep_q1"], "true\n");
    let q2 = submit(&c, &["-h", "-N", "dep_q2"], "true\n");
    let multi = submit(&c, &["-W", &format!("depend=afterok:{q1}:{q2},afterany:{q1}")], "true\n");
    // depend_qalter_add_type*.txt: a kind not in the list is added at its end.
    c.run("qalter", &["-W", &format!("depend=afternotok:{q2}"), &multi]).ok();
    assert_eq!(
        attr(&c, &multi, "depend"),
        Some(format!("afterok:{q1}@{s}:{q2}@{s},afterany:{q1}@{s},afternotok:{q2}@{s}"))
    );
    assert_eq!(attr(&c, &q2, "depend"), Some(format!("beforeok:{multi}@{s},beforenotok:{multi}@{s}")));
    // depend_qalter_replace_type*.txt: a kind in the list is replaced and moves to the end.
    c.run("qalter", &["-W", &format!("depend=afterok:{q2}"), &multi]).ok();
    assert_eq!(attr(&c, &multi, "depend"), Some(format!("afterany:{q1}@{s},afternotok:{q2}@{s},afterok:{q2}@{s}")));
    // q1 no longer waited on for afterok: its beforeok entry goes (OpenPBS leaves it).
    assert_eq!(attr(&c, &q1, "depend"), Some(format!("beforeany:{multi}@{s}")));
    assert_eq!(attr(&c, &multi, "Hold_Types").as_deref(), Some("s"));
    assert_eq!(attr(&c, &multi, "substate").as_deref(), Some("22"));

    // A cycle, direct or through another job, is refused and changes nothing.
    let q3 = submit(&c, &["-W", &format!("depend=afterok:{q1}")], "true\n");
    for (parent, child) in [(&multi, &q2), (&q3, &q1), (&q1, &q1)] {
        let before = attr(&c, child, "depend");
        let out = c.run("qalter", &["-W", &format!("depend=afterok:{parent}"), child]);
        assert_eq!(out.code, 206, "{out:?}");
        assert!(out.stderr.starts_with("qalter: Invalid Job Dependency (cycle: "), "{out:?}");
        assert_eq!(attr(&c, child, "depend"), before);
    }
    // Unknown: refused as at submission (OpenPBS accepts it, then aborts the job).
    let out = c.run("qalter", &["-W", "depend=afterok:99999", &multi]);
    assert!(out.stderr.starts_with(&format!("qalter: Unknown Job Id 99999.{s}")), "{out:?}");
    assert_eq!(attr(&c, &multi, "job_state").as_deref(), Some("H"));

    // A list that waits on nothing more releases the job; then it runs.
    let done = submit(&c, &[], "true\n");
    c.wait_job_state(&done, "F", JOB_TIMEOUT);
    let out = c.run("qalter", &["-W", &format!("depend=afterok:{done},afternotok:{done}"), &multi]);
    assert_eq!(out.code, 125, "{out:?}");
    assert!(out.stderr.contains("Finished job did not satisfy dependency"), "{out:?}");
    c.run("qalter", &["-W", &format!("depend=afterok:{done}"), &multi]).ok();
    assert_eq!(attr(&c, &multi, "depend"), Some(format!("afterany:{q1}@{s},afternotok:{q2}@{s}")));
    let failed = submit(&c, &[], "exit 2\n");
    c.wait_job_state(&failed, "F", JOB_TIMEOUT);
    c.run("qalter", &["-W", &format!("depend=afterany:{done},afternotok:{failed}"), &multi]).ok();
    c.wait_job_state(&multi, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &multi, "Exit_status").as_deref(), Some("0"));

    // depend_qalter_running_job.txt
    let running = submit(&c, &[], "sleep 30\n");
    c.wait_job_state(&running, "R", JOB_TIMEOUT);
    let out = c.run("qalter", &["-W", &format!("depend=afterok:{q1}"), &running]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (167, format!("qalter: Cannot modify attribute while job running  depend {running}\n").as_str())
    );
    c.run("qdel", &[&running]).ok();
}

#[test]
fn before_kinds_name_a_job_that_waits_with_on() {
    let c = Cluster::with_moms(1, 4);
    let s = c.server_name().to_string();
    // depend_on1_qstat_f.txt: held by the system until one job names it.
    let on = submit(&c, &["-N", "dep_on", "-W", "depend=on:1"], "true\n");
    assert_eq!(attr(&c, &on, "depend").as_deref(), Some("on:1"));
    assert_eq!(attr(&c, &on, "Hold_Types").as_deref(), Some("s"));
    assert_eq!(attr(&c, &on, "substate").as_deref(), Some("22"));
    // depend_beforeok_qstat_f.txt: the job named waits afterok on the one that names it,
    // which runs at once and keeps its beforeok entry.
    let first = submit(&c, &["-h", "-N", "dep_beforeok", "-W", &format!("depend=beforeok:{on}")], "true\n");
    assert_eq!(attr(&c, &first, "depend"), Some(format!("beforeok:{on}@{s}")));
    assert_eq!(attr(&c, &on, "depend"), Some(format!("afterok:{first}@{s}")));
    assert_eq!(attr(&c, &on, "job_state").as_deref(), Some("H"));
    c.run("qrls", &[&first]).ok();
    c.wait_job_state(&on, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &on, "Exit_status").as_deref(), Some("0"));
    logged(&c, &format!(";Job;{on};Dependency on job {first} released."));

    // depend_on2_one_of_two_qstat_f.txt: `before` is met by a start; one more is awaited.
    let on2 = submit(&c, &["-W", "depend=on:2"], "true\n");
    let starter = submit(&c, &["-W", &format!("depend=before:{on2}")], "sleep 30\n");
    c.wait_job_state(&starter, "R", JOB_TIMEOUT);
    wait_until("on:1 left", JOB_TIMEOUT, || attr(&c, &on2, "depend").as_deref() == Some("on:1"));
    assert_eq!(attr(&c, &on2, "job_state").as_deref(), Some("H"));
    // A failing job that named it with beforeok deletes it.
    let failing = submit(&c, &["-W", &format!("depend=beforeok:{on2}")], "exit 1\n");
    c.wait_job_state(&on2, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &on2, "substate").as_deref(), Some("92"));
    logged(&c, &format!(";Job;{on2};Job deleted as result of dependency on job {failing}"));
    c.run("qdel", &[&starter]).ok();

    // Refused at once where OpenPBS creates the job and aborts it: no `on` on the job
    // named (depend_before_no_on_*.txt), another owner's job, a finished job; `on` takes
    // a count.
    let plain = submit(&c, &["-h"], "true\n");
    let out = c.run_with_stdin("qsub", &["-W", &format!("depend=before:{plain}")], "true\n", false);
    assert_eq!((out.code, out.stderr.as_str()), (206, "qsub: Invalid Job Dependency\n"), "{out:?}");
    let theirs = c.run_as_nobody("qsub", &["-W", "depend=on:1", "--", "/bin/true"]).ok().line().to_string();
    let out = c.run_with_stdin("qsub", &["-W", &format!("depend=beforeany:{theirs}")], "true\n", false);
    assert_eq!((out.code, out.stderr.as_str()), (159, "qsub: Unauthorized Request \n"), "{out:?}");
    let out = c.run_with_stdin("qsub", &["-W", &format!("depend=beforeany:{on}")], "true\n", false);
    assert_eq!(out.stderr, "qsub: Finished job did not satisfy dependency\n", "{out:?}");
    let out = c.run_with_stdin("qsub", &["-W", "depend=on:abc"], "true\n", false);
    assert_eq!((out.code, out.stderr.as_str()), (166, "qsub: Illegal attribute or resource value depend\n"));
    // A job naming with beforeok a job it waits on (through another) closes a cycle.
    let on3 = submit(&c, &["-W", "depend=on:1"], "true\n");
    let middle = submit(&c, &["-W", &format!("depend=afterany:{on3}")], "true\n");
    let out = c.run_with_stdin("qsub", &["-W", &format!("depend=afterok:{middle},beforeok:{on3}")], "true\n", false);
    assert!(out.stderr.starts_with("qsub: Invalid Job Dependency (cycle: "), "{out:?}");
    assert_eq!(attr(&c, &on3, "depend"), Some(format!("on:1,beforeany:{middle}@{s}")));
}

/// qalter of the kinds that name other jobs, as at submission: `on:N` holds the job until
/// N name it, `beforeok:` makes the job named wait on this one (its `on` one lower), with
/// the same refusals, and `runone:` joins a group.
#[test]
fn qalter_sets_on_before_kinds_and_runone_as_qsub_does() {
    let c = Cluster::with_moms(1, 4);
    let s = c.server_name().to_string();
    let waiter = submit(&c, &["-h"], "true\n");
    c.run("qalter", &["-W", "depend=on:1", &waiter]).ok();
    assert_eq!(attr(&c, &waiter, "depend").as_deref(), Some("on:1"));
    assert_eq!(attr(&c, &waiter, "Hold_Types").as_deref(), Some("su"));
    let first = submit(&c, &["-h"], "true\n");
    c.run("qalter", &["-W", &format!("depend=beforeok:{waiter}"), &first]).ok();
    assert_eq!(attr(&c, &first, "depend"), Some(format!("beforeok:{waiter}@{s}")));
    assert_eq!(attr(&c, &waiter, "depend"), Some(format!("afterok:{first}@{s}")));
    // Given again, the job named is not counted twice.
    c.run("qalter", &["-W", &format!("depend=beforeok:{waiter}"), &first]).ok();
    assert_eq!(attr(&c, &waiter, "depend"), Some(format!("afterok:{first}@{s}")));
    // Refused as at submission: no `on` left on the job named, a cycle, a count that is
    // not one.
    let other = submit(&c, &["-h"], "true\n");
    let out = c.run("qalter", &["-W", &format!("depend=before:{waiter}"), &other]);
    assert_eq!((out.code, out.stderr.as_str()), (206, format!("qalter: Invalid Job Dependency {other}\n").as_str()));
    let on = submit(&c, &["-h", "-W", "depend=on:1"], "true\n");
    let child = submit(&c, &["-h", "-W", &format!("depend=afterok:{on}")], "true\n");
    let out = c.run("qalter", &["-W", &format!("depend=beforeok:{on}"), &child]);
    assert!(out.stderr.starts_with("qalter: Invalid Job Dependency (cycle: "), "{out:?}");
    let out = c.run("qalter", &["-W", "depend=on:0", &other]);
    assert_eq!(out.code, 166, "{out:?}");
    // The job that names it runs and ends well: the waiter is released and runs.
    c.run("qrls", &[&first, &waiter]).ok();
    c.wait_job_state(&waiter, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &waiter, "Exit_status").as_deref(), Some("0"));
    // runone: altered into a group of two, each names the other.
    let a = submit(&c, &["-h"], "true\n");
    let b = submit(&c, &["-h"], "true\n");
    c.run("qalter", &["-W", &format!("depend=runone:{a}"), &b]).ok();
    assert_eq!(attr(&c, &a, "depend"), Some(format!("runone:{b}@{s}")));
    assert_eq!(attr(&c, &b, "depend"), Some(format!("runone:{a}@{s}")));
    c.run("qdel", &[&a, &b, &other, &on, &child]).ok();
}

#[test]
fn only_one_job_of_a_runone_group_runs() {
    let c = Cluster::with_moms(1, 4);
    let s = c.server_name().to_string();
    let a = submit(&c, &["-h"], "true\n");
    let b = submit(&c, &["-h", "-W", &format!("depend=runone:{a}")], "sleep 30\n");
    // depend_runone_qstat_f.txt: both name each other; a third joins through either.
    assert_eq!(attr(&c, &a, "depend"), Some(format!("runone:{b}@{s}")));
    assert_eq!(attr(&c, &b, "depend"), Some(format!("runone:{a}@{s}")));
    assert_eq!(attr(&c, &b, "substate").as_deref(), Some("20"));
    let third = submit(&c, &["-h", "-W", &format!("depend=runone:{b}")], "true\n");
    assert_eq!(attr(&c, &a, "depend"), Some(format!("runone:{b}@{s}:{third}@{s}")));
    assert_eq!(attr(&c, &third, "depend"), Some(format!("runone:{b}@{s}:{a}@{s}")));
    // A member deleted before it ran leaves the group.
    let gone = submit(&c, &["-h", "-W", &format!("depend=runone:{a}")], "true\n");
    c.run("qdel", &[&gone]).ok();
    assert_eq!(attr(&c, &b, "depend"), Some(format!("runone:{a}@{s}:{third}@{s}")));
    // One runs: the others are held by the system.
    c.run("qrls", &[&b]).ok();
    c.wait_job_state(&b, "R", JOB_TIMEOUT);
    for other in [&a, &third] {
        assert_eq!(attr(&c, other, "Hold_Types").as_deref(), Some("su"), "{other}");
        assert_eq!(attr(&c, other, "substate").as_deref(), Some("20"), "{other}");
    }
    // Requeued: they lose that hold (their own stays); run again: held again.
    c.qmgr("set server scheduling = false");
    c.run("qrerun", &[&b]).ok();
    c.wait_job_state(&b, "Q", JOB_TIMEOUT);
    assert_eq!(attr(&c, &a, "Hold_Types").as_deref(), Some("u"));
    c.qmgr("set server scheduling = true");
    c.wait_job_state(&b, "R", JOB_TIMEOUT);
    wait_until("held again", JOB_TIMEOUT, || attr(&c, &third, "Hold_Types").as_deref() == Some("su"));
    // It ends once its mom has started it (a delete that beats the start to the mom ends a
    // run that never was, and releases the others instead): the others are deleted.
    wait_until("the second run started", JOB_TIMEOUT, || attr(&c, &b, "session_id").is_some());
    c.run("qdel", &[&b]).ok();
    for other in [&a, &third] {
        c.wait_job_state(other, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, other, "substate").as_deref(), Some("92"), "{other}");
        logged(&c, &format!(";Job;{other};Job deleted as result of dependency on job {b}"));
    }
    // A new member of a group whose member runs waits; another owner's job is refused.
    let running = submit(&c, &[], "sleep 30\n");
    c.wait_job_state(&running, "R", JOB_TIMEOUT);
    let waiter = submit(&c, &["-W", &format!("depend=runone:{running}")], "true\n");
    assert_eq!(attr(&c, &waiter, "job_state").as_deref(), Some("H"));
    assert_eq!(attr(&c, &waiter, "Hold_Types").as_deref(), Some("s"));
    let out = c.run_as_nobody("qsub", &["-W", &format!("depend=runone:{running}"), "--", "/bin/true"]);
    assert_eq!(out.code, 159, "{out:?}");
    c.run("qdel", &[&running]).ok();
    c.wait_job_state(&waiter, "F", JOB_TIMEOUT);
}

#[test]
fn a_deleted_parent_leaves_queued_children_waiting_and_a_killed_one_ends_them_by_kind() {
    let c = Cluster::with_moms(1, 4);
    // depend_qdel_parent_*.txt: deleted before it ran, its children wait on.
    let queued = submit(&c, &["-h"], "true\n");
    let waiting = submit(&c, &["-W", &format!("depend=afterok:{queued}")], "true\n");
    c.run("qdel", &[&queued]).ok();
    c.wait_job_state(&queued, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &waiting, "job_state").as_deref(), Some("H"));
    // depend_qdel_running_parent_*.txt: killed while running (Exit_status 271), afterok
    // children are deleted, afterany and afternotok ones run.
    let running = submit(&c, &[], "sleep 30\n");
    c.wait_job_state(&running, "R", JOB_TIMEOUT);
    let ok = submit(&c, &["-W", &format!("depend=afterok:{running}")], "true\n");
    let any = submit(&c, &["-W", &format!("depend=afterany:{running}")], "true\n");
    let notok = submit(&c, &["-W", &format!("depend=afternotok:{running}")], "true\n");
    c.run("qdel", &[&running]).ok();
    for id in [&any, &notok] {
        c.wait_job_state(id, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, id, "Exit_status").as_deref(), Some("0"), "{id}");
    }
    c.wait_job_state(&ok, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &ok, "substate").as_deref(), Some("92"));
    logged(&c, &format!(";Job;{ok};Job deleted as result of dependency on job {running}"));
}

/// A parent deleted while it ran ends its children as OpenPBS's `depend_on_term` ends a
/// terminated job's, whatever its exit status: with `-W force` (no exit status at all) and
/// when the job traps the kill and exits 0, afterok children are deleted and afterany ones
/// run.
#[test]
fn a_parent_deleted_while_it_ran_ends_its_children_as_terminated_whatever_its_exit() {
    let c = Cluster::with_moms(1, 4);
    let forced = submit(&c, &[], "sleep 30\n");
    let trapping = submit(&c, &[], "trap 'exit 0' TERM\nsleep 30 &\nwait\n");
    for parent in [&forced, &trapping] {
        wait_until("the parent started", JOB_TIMEOUT, || attr(&c, parent, "session_id").is_some());
    }
    let mut children = Vec::new();
    for parent in [&forced, &trapping] {
        let ok = submit(&c, &["-W", &format!("depend=afterok:{parent}")], "true\n");
        let any = submit(&c, &["-W", &format!("depend=afterany:{parent}")], "true\n");
        children.push((parent.clone(), ok, any));
    }
    c.run("qdel", &["-W", "force", &forced]).ok();
    c.run("qdel", &[&trapping]).ok();
    c.wait_job_state(&trapping, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &trapping, "Exit_status").as_deref(), Some("0"));
    for (parent, ok, any) in children {
        c.wait_job_state(&any, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, &any, "Exit_status").as_deref(), Some("0"), "{any} after {parent}");
        c.wait_job_state(&ok, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, &ok, "substate").as_deref(), Some("92"), "{ok} after {parent}");
        logged(&c, &format!(";Job;{ok};Job deleted as result of dependency on job {parent}"));
    }
}
