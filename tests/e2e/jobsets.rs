//! Job sets on real daemons (`qsub -L`, `-W job_set`, docs/job-sets.md): the design's
//! examples and their output, the 64/32/16-cpu use case (the one that fits runs, the
//! others held with substate 95 and the design's comment), a requeue releasing the set,
//! membership and holds across a server restart, a set whose leader is deleted, who may
//! join a set, and every error message.

use std::time::Duration;

use pbs_e2e::{Cluster, Out, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);
/// PBSE_NO_JOBSET (15233) and PBSE_MOVE_JOBSET (15232) as exit statuses (the low byte).
const EXIT_NO_JOBSET: i32 = 15233 & 0xff;
const EXIT_MOVE_JOBSET: i32 = 15232 & 0xff;
const NO_JOBSET: &str = "a nonexistent job_set specified";

fn qsub(c: &Cluster, args: &[&str], script: &str) -> Out {
    c.run_with_stdin("qsub", args, script, false)
}

fn ids(out: &Out) -> Vec<String> {
    out.stdout.lines().map(str::to_string).collect()
}

fn attr(c: &Cluster, id: &str, name: &str) -> Option<String> {
    c.job_attr(id, name)
}

#[track_caller]
fn refused(out: &Out, text: &str, code: i32) {
    assert_eq!((out.stderr.as_str(), out.code), (format!("{text}\n").as_str(), code), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
}

fn select(c: &Cluster, leader: &str) -> Vec<String> {
    let mut ids = ids(&c.run("qselect", &[&format!("--job_set={leader}")]).ok());
    ids.sort();
    ids
}

#[track_caller]
fn held_for(c: &Cluster, id: &str, running: &str) {
    assert_eq!(attr(c, id, "job_state").as_deref(), Some("H"), "{id}");
    assert_eq!(attr(c, id, "substate").as_deref(), Some("95"), "{id}");
    assert_eq!(attr(c, id, "comment"), Some(format!("Job held, job {running} running from this job_set")), "{id}");
}

#[test]
fn the_sixteen_cpu_request_runs_the_others_wait_held_and_a_requeue_releases_them() {
    let mut c = Cluster::with_moms(1, 16);
    let out =
        qsub(&c, &["-L", "select=1:ncpus=64", "-L", "select=1:ncpus=32", "-L", "select=1:ncpus=16"], "sleep 300\n")
            .ok();
    let jobs = ids(&out);
    assert_eq!(jobs.len(), 3, "{out:?}");
    let (big, mid, small) = (&jobs[0], &jobs[1], &jobs[2]);
    for id in &jobs {
        assert_eq!(attr(&c, id, "job_set").as_deref(), Some(big.as_str()), "{id}");
    }
    c.wait_job_state(small, "R", TIMEOUT);
    wait_until("the set held", TIMEOUT, || attr(&c, mid, "substate").as_deref() == Some("95"));
    held_for(&c, big, small);
    held_for(&c, mid, small);
    assert_eq!(select(&c, big), {
        let mut all = jobs.clone();
        all.sort();
        all
    });
    // A bare id is completed with the server's name, as depend ids are.
    let bare = big.split('.').next().unwrap_or_default();
    assert_eq!(c.run("qselect", &["--job_set", bare]).ok().stdout.lines().count(), 3);
    // Membership and holds survive a restart.
    c.terminate();
    c.start_server();
    held_for(&c, big, small);
    held_for(&c, mid, small);
    assert_eq!(select(&c, big).len(), 3);
    // A requeue releases the others: queued again, comments cleared.
    c.qmgr("set server scheduling = False");
    c.run("qrerun", &[small]).ok();
    c.wait_job_state(small, "Q", TIMEOUT);
    for id in [big, mid] {
        assert_eq!(attr(&c, id, "job_state").as_deref(), Some("Q"), "{id}");
        assert_eq!(attr(&c, id, "substate").as_deref(), Some("10"), "{id}");
        assert_eq!(attr(&c, id, "Hold_Types").as_deref(), Some("n"), "{id}");
        assert_eq!(attr(&c, id, "comment"), None, "{id}");
    }
    // Scheduled again, the 16-cpu request runs again and the set is held again.
    c.qmgr("set server scheduling = True");
    c.wait_job_state(small, "R", TIMEOUT);
    wait_until("the set held again", TIMEOUT, || attr(&c, mid, "substate").as_deref() == Some("95"));
    held_for(&c, big, small);
    // The run has reached its mom (a qdel before that ends a run that never was, which
    // releases the others: handler test `a_job_set_start_deleted_before_it_ran_releases_the_others`).
    wait_until("the second run started on its mom", TIMEOUT, || attr(&c, small, "substate").as_deref() == Some("42"));
    // The run's end deletes the members it held: the set has done its work.
    c.run("qdel", &[small]).ok();
    for id in [big, mid] {
        c.wait_job_state(id, "F", TIMEOUT);
        assert_eq!(attr(&c, id, "comment"), Some(format!("Job deleted, job {small} from this job_set ran")));
    }
    let out = c.run("qselect", &[&format!("--job_set={big}")]);
    refused(&out, &format!("qselect: {NO_JOBSET}"), EXIT_NO_JOBSET);
}

#[test]
fn a_set_none_of_whose_requests_fits_says_so_and_runs_nothing() {
    let c = Cluster::with_moms(1, 2);
    let jobs = ids(&qsub(&c, &["-L", "select=1:ncpus=8", "-L", "select=1:ncpus=4"], "true\n").ok());
    let line = format!(";Job;{};None of the select specification could be satisfied", jobs[0]);
    wait_until("the scheduler's line", TIMEOUT, || c.sched_stderr().contains(&line) || c.logs().contains(&line));
    for id in &jobs {
        assert_eq!(attr(&c, id, "job_state").as_deref(), Some("Q"), "{id}");
    }
}

#[test]
fn the_designs_examples_limits_errors_leaders_and_owners() {
    let c = Cluster::start();
    c.allow_root_jobs();
    // The design's queued limit: of three requests, the one over the limit is dropped
    // (its error printed) and the others submitted; the first taken leads.
    c.qmgr("set server max_queued_res.ncpus = [u:PBS_GENERIC=10]");
    let out = qsub(
        &c,
        &["-Lselect=3:ncpus=2:mem=18gb", "-Lselect=4:ncpus=3:mem=12gb", "-Lselect=2:ncpus=2:mem=24gb"],
        "true\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let jobs = ids(&out);
    assert_eq!(jobs.len(), 2, "{out:?}");
    assert_eq!(out.stderr, "qsub: would exceed per-user limit on resource ncpus in complex\n");
    assert_eq!(attr(&c, &jobs[0], "Resource_List.select").as_deref(), Some("3:ncpus=2:mem=18gb"));
    assert_eq!(attr(&c, &jobs[1], "Resource_List.select").as_deref(), Some("2:ncpus=2:mem=24gb"));
    assert_eq!(attr(&c, &jobs[1], "job_set"), Some(jobs[0].clone()));
    c.run("qdel", &[&jobs[0], &jobs[1]]).ok();
    c.qmgr("unset server max_queued_res.ncpus");

    // The design's command lines, as given (nfilter passed through as a resource).
    let _ = c.run("qmgr", &["-c", "create resource nfilter type=string"]);
    c.qmgr("create queue workq2 queue_type=execution,enabled=true,started=true");
    let out = qsub(
        &c,
        &[
            "-qworkq2",
            "-L",
            "select=2:ncpus=4:mem=20gb,walltime=10000,place=free",
            "-L",
            "select=4:ncpus=2,mem=20gb,walltime=8000,place=scatter",
        ],
        "true\n",
    )
    .ok();
    let jobs = ids(&out);
    assert_eq!(jobs.len(), 2);
    assert_eq!(attr(&c, &jobs[0], "queue").as_deref(), Some("workq2"));
    assert_eq!(attr(&c, &jobs[1], "Resource_List.place").as_deref(), Some("scatter"));
    assert_eq!(attr(&c, &jobs[1], "Resource_List.walltime").as_deref(), Some("02:13:20"));
    let blue = "nfilter=\"resources_available['os_ver']>=rhel6 and resources_available['color']=='blue' \"";
    let black = "nfilter=\"resources_available['os_ver']!=rhel7 and resources_available['color']!='black' \"";
    let first = format!("select=1:ncpus=16:mem=2gb,{blue},walltime=02:00:00");
    let second = format!("select=2:ncpus=8:mem=2gb,{black},walltime=01:45:00");
    let line = qsub(&c, &["-A", "abcd", "-L", &first, "-L", &second], "true\n").ok();
    let script = format!("#PBS -A \"abcd\"\n#PBS -L '{first}'\n#PBS -L '{second}'\ntrue\n");
    let directives = qsub(&c, &[], &script).ok();
    for out in [line, directives] {
        let jobs = ids(&out);
        assert_eq!(jobs.len(), 2, "{out:?}");
        for (id, walltime) in jobs.iter().zip(["02:00:00", "01:45:00"]) {
            assert_eq!(attr(&c, id, "Account_Name").as_deref(), Some("abcd"));
            assert_eq!(attr(&c, id, "Resource_List.walltime").as_deref(), Some(walltime));
            assert_eq!(attr(&c, id, "job_set"), Some(jobs[0].clone()));
        }
        // Passed through as `-l` passes a quoted value (its quotes are the list's).
        let nfilter = attr(&c, &jobs[0], "Resource_List.nfilter");
        assert!(nfilter.as_deref().is_some_and(|f| f.contains(">=rhel6 and ") && f.contains("blue")), "{nfilter:?}");
    }

    // Errors: no such set, a job that leads none, an array, a subjob; -L with job_set.
    let leader = ids(&qsub(&c, &["-h", "-L", "select=1:ncpus=1", "-L", "select=1:ncpus=2"], "true\n").ok());
    let plain = qsub(&c, &["-h"], "true\n").ok().line().to_string();
    let array = qsub(&c, &["-J", "1-3", "-h"], "true\n").ok().line().to_string();
    let subjob = array.replace("[]", "[1]");
    for named in ["99999", plain.as_str(), array.as_str(), subjob.as_str(), "abc"] {
        let out = qsub(&c, &["-W", &format!("job_set={named}")], "true\n");
        refused(&out, &format!("qsub: {NO_JOBSET}"), EXIT_NO_JOBSET);
    }
    let out = qsub(&c, &["-L", "select=1:ncpus=1", "-W", &format!("job_set={}", leader[0])], "true\n");
    refused(&out, "qsub: -Wjob_set option can not be used with -L option", 2);
    refused(&c.run("qselect", &["--job_set=99999"]), &format!("qselect: {NO_JOBSET}"), EXIT_NO_JOBSET);
    // Another user's set: refused as OpenPBS refuses acting on another's job.
    let out = c.run_as_nobody("qsub", &["-W", &format!("job_set={}", leader[0]), "--", "/bin/true"]);
    refused(&out, "qsub: Unauthorized Request ", 159);

    // qalter moves a queued job to another set; qmove keeps a member on this server.
    let joined = qsub(&c, &["-h", "-W", &format!("job_set={}", leader[0])], "true\n").ok().line().to_string();
    assert_eq!(select(&c, &leader[0]).len(), 3);
    let other = ids(&qsub(&c, &["-h", "-L", "select=1:ncpus=1"], "true\n").ok());
    c.run("qalter", &["-W", &format!("job_set={}", other[0]), &joined]).ok();
    assert_eq!(attr(&c, &joined, "job_set"), Some(other[0].clone()));
    assert_eq!(select(&c, &other[0]).len(), 2);
    assert_eq!(select(&c, &leader[0]).len(), 2);
    let out = c.run("qalter", &["-W", "job_set=99999", &joined]);
    assert_eq!(out.code, EXIT_NO_JOBSET, "{out:?}");
    let out = c.run("qmove", &["workq2@elsewhere", &joined]);
    assert_eq!(out.code, EXIT_MOVE_JOBSET, "{out:?}");
    assert!(out.stderr.contains("Job of a job_set can not be moved to another complex"), "{out:?}");
    c.run("qmove", &["workq2", &joined]).ok();
    assert_eq!(attr(&c, &joined, "queue").as_deref(), Some("workq2"));

    // The leader deleted: the set keeps its name, its members and new ones.
    c.run("qdel", &[&leader[0]]).ok();
    assert_eq!(select(&c, &leader[0]), vec![leader[1].clone()]);
    let late = qsub(&c, &["-h", "-W", &format!("job_set={}", leader[0])], "true\n").ok().line().to_string();
    assert_eq!(attr(&c, &late, "job_set"), Some(leader[0].clone()));
    assert_eq!(select(&c, &leader[0]).len(), 2);
    // Once no member is left, the set is gone.
    c.run("qdel", &[&leader[1], &late]).ok();
    let out = qsub(&c, &["-W", &format!("job_set={}", leader[0])], "true\n");
    refused(&out, &format!("qsub: {NO_JOBSET}"), EXIT_NO_JOBSET);
}

#[test]
fn a_thousand_specs_in_one_qsub_make_one_set_quickly() {
    let c = Cluster::with_moms(1, 1);
    let mut args = Vec::new();
    for _ in 0..1000 {
        args.extend(["-L", "select=1:ncpus=1"]);
    }
    let started = std::time::Instant::now();
    let out = qsub(&c, &args, "sleep 300\n").ok();
    let took = started.elapsed();
    let jobs = ids(&out);
    assert_eq!(jobs.len(), 1000, "{}", out.stderr);
    // Each spec costs one submission on the same connection: far under a second each.
    assert!(took < Duration::from_secs(30), "1,000 specs took {took:?}");
    let leader = &jobs[0];
    for id in [&jobs[1], &jobs[500], &jobs[999]] {
        assert_eq!(attr(&c, id, "job_set").as_deref(), Some(leader.as_str()), "{id}");
    }
    let mut all = jobs.clone();
    all.sort();
    assert_eq!(select(&c, leader), all);
    // One of them runs (the first, which fits), and every other is held for it.
    c.wait_job_state(leader, "R", TIMEOUT);
    wait_until("the other 999 held", TIMEOUT, || {
        let held = c.run("qselect", &["-s", "H", &format!("--job_set={leader}")]).ok().stdout;
        held.lines().count() == 999
    });
    held_for(&c, &jobs[999], leader);
}

#[test]
fn with_job_set_finish_others_a_start_finishes_the_other_members() {
    let c = Cluster::with_moms(1, 16);
    c.qmgr("set server job_history_enable = True");
    c.qmgr("set server job_set_finish_others = True");
    // The one that fits comes last, so every member is there when it starts (one that
    // joins a set while a member runs is held, not finished).
    let out =
        qsub(&c, &["-L", "select=1:ncpus=64", "-L", "select=1:ncpus=32", "-L", "select=1:ncpus=16"], "sleep 300\n")
            .ok();
    let jobs = ids(&out);
    assert_eq!(jobs.len(), 3, "{out:?}");
    let (big, mid, fits) = (&jobs[0], &jobs[1], &jobs[2]);
    c.wait_job_state(fits, "R", TIMEOUT);
    for id in [big, mid] {
        c.wait_job_state(id, "F", TIMEOUT);
        assert_eq!(attr(&c, id, "substate").as_deref(), Some("91"), "{id}");
        assert_eq!(attr(&c, id, "comment"), Some(format!("Job finished, job {fits} running from this job_set")));
    }
    // What a user sees: the finished members in the history, the one that runs.
    let history = c.run_as_nobody("qstat", &["-x", big, fits, mid]).ok().stdout;
    let state_of = |id: &str| {
        let short = id.split('.').next().unwrap_or_default();
        history.lines().find(|l| l.starts_with(short)).and_then(|l| l.split_whitespace().nth(4)).map(str::to_string)
    };
    assert_eq!([state_of(big), state_of(mid), state_of(fits)], [Some("F".into()), Some("F".into()), Some("R".into())]);
    let full = c.run("qstat", &["-x", "-f", mid]).ok().stdout;
    assert!(full.contains(&format!("    comment = Job finished, job {fits} running from this job_set\n")), "{full}");
    assert!(full.contains(&format!("    job_set = {big}\n")), "{full}");
}
