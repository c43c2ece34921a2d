//! OR-ed resource requests (`select="A||B"`, `job_wide`): the seed's `max_resc_req` and
//! `min_resc_req`, every error it names from qsub and from a raw client, who may read the
//! new attributes, limits held to the largest and smallest alternative, and the scheduler
//! running the first alternative that fits, then all of them again after a requeue.

use std::time::Duration;

use pbs_e2e::{Cluster, Out, wait_until};
use pbs_proto::Attr;

const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn qsub(c: &Cluster, nobody: bool, args: &[&str]) -> Out {
    let mut all = args.to_vec();
    all.extend(["--", "/bin/sleep", "300"]);
    if nobody { c.run_as_nobody("qsub", &all) } else { c.run("qsub", &all) }
}

/// The lines of `qstat -f` (as root, or as nobody) that start with `prefix`, trimmed.
fn qstat_lines(c: &Cluster, nobody: bool, id: &str, prefix: &str) -> Vec<String> {
    let out = if nobody { c.run_as_nobody("qstat", &["-f", id]) } else { c.run("qstat", &["-f", id]) };
    out.ok().stdout.lines().map(str::trim).filter(|l| l.starts_with(prefix)).map(str::to_string).collect()
}

#[track_caller]
fn refused(out: &Out, message: &str) {
    assert_ne!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr.trim_end(), message, "{out:?}");
}

#[test]
fn the_seeds_examples_print_max_and_min_resc_req_to_managers_only() {
    let c = Cluster::start();
    // The seed's max example (job_wide walltimes 12 and 8 minutes).
    let id = qsub(
        &c,
        true,
        &[
            "-l",
            "select=1:ncpus=23:mem=2gb||2:ncpus=4:mem=100mb",
            "-l",
            "job_wide=walltime=00:12:00||walltime=00:08:00",
        ],
    )
    .ok()
    .line()
    .to_string();
    // The seed printed nodect = 1 and walltime = 00:08:00, against its own rule (the
    // largest amount of each resource): see docs/job-sets.md.
    assert_eq!(
        qstat_lines(&c, false, &id, "max_resc_req"),
        [
            "max_resc_req.mem = 2gb",
            "max_resc_req.ncpus = 23",
            "max_resc_req.nodect = 2",
            "max_resc_req.walltime = 00:12:00"
        ]
    );
    assert_eq!(
        qstat_lines(&c, false, &id, "min_resc_req"),
        [
            "min_resc_req.mem = 200mb",
            "min_resc_req.ncpus = 8",
            "min_resc_req.nodect = 1",
            "min_resc_req.walltime = 00:08:00"
        ]
    );
    assert_eq!(
        qstat_lines(&c, false, &id, "sched_job_wide"),
        ["sched_job_wide = walltime=00:12:00||walltime=00:08:00"]
    );
    assert_eq!(
        qstat_lines(&c, false, &id, "Resource_List.select"),
        ["Resource_List.select = 1:ncpus=23:mem=2gb||2:ncpus=4:mem=100mb"]
    );
    // The owner sees the request it gave, not what only operators and managers read.
    assert_eq!(
        qstat_lines(&c, true, &id, "Resource_List.job_wide"),
        ["Resource_List.job_wide = walltime=00:12:00||walltime=00:08:00"]
    );
    for hidden in ["max_resc_req", "min_resc_req", "sched_job_wide", "ORed_Resource_List"] {
        assert!(qstat_lines(&c, true, &id, hidden).is_empty(), "{hidden} shown to its owner");
    }
    // The seed's min example, and queue defaults merged into sched_job_wide, the job's
    // own values winning.
    c.qmgr("set queue workq resources_default.walltime = 01:00:00");
    c.qmgr("set queue workq resources_default.cput = 00:10:00");
    let id = qsub(&c, true, &["-l", "select=1:ncpus=23:mem=2gb||2:ncpus=4:mem=100mb"]).ok().line().to_string();
    assert_eq!(
        qstat_lines(&c, false, &id, "min_resc_req"),
        [
            "min_resc_req.cput = 00:10:00",
            "min_resc_req.mem = 200mb",
            "min_resc_req.ncpus = 8",
            "min_resc_req.nodect = 1",
            "min_resc_req.walltime = 01:00:00"
        ]
    );
    assert!(qstat_lines(&c, false, &id, "sched_job_wide").is_empty(), "no job_wide, no sched_job_wide");
    let id = qsub(&c, true, &["-l", "select=1:ncpus=1||1:ncpus=2", "-l", "job_wide=walltime=60||place=scatter"])
        .ok()
        .line()
        .to_string();
    assert_eq!(
        c.job_attr(&id, "sched_job_wide").as_deref(),
        Some("walltime=00:01:00+cput=00:10:00||place=scatter+cput=00:10:00+walltime=01:00:00")
    );
}

#[test]
fn every_error_the_design_names_from_qsub_and_a_raw_client() {
    let c = Cluster::start();
    c.allow_root_jobs();
    let cases: [(&[&str], &str); 5] = [
        (
            &["-l", "select=1:ncpus=1", "-l", "job_wide=walltime=1||walltime=2"],
            "qsub: multiple job_wide resource can only be used when multiple select specifications are specified",
        ),
        (
            &["-l", "select=1:ncpus=1||1:ncpus=2", "-l", "job_wide=walltime=1||walltime=2||walltime=3"],
            "qsub: job_wide resources and select specifications do not match",
        ),
        (
            &["-l", "select=1:ncpus=1||1:ncpus=2", "-l", "job_wide=walltime=1||mem=1gb"],
            "qsub: Resource invalid in \"job_wide\" specification: mem",
        ),
        (&["-l", "select=1:ncpus=1||1:ncpus"], "qsub: Illegal attribute or resource value Resource_List.select"),
        (
            &["-l", "select=1:ncpus=1||1:ncpus=2", "-l", "job_wide=walltime||walltime=2"],
            "qsub: illegal job_wide specification",
        ),
    ];
    for (args, message) in cases {
        refused(&qsub(&c, true, args), message);
    }
    wait_until("the parse failure in the server log", JOB_TIMEOUT, || {
        c.server_stderr().contains("failed to parse ORed select spec: 1:ncpus=1||1:ncpus")
    });
    // 1,000 alternatives: refused at once with the limit, the server well.
    let many = format!("select={}", vec!["1:ncpus=1"; 1000].join("||"));
    refused(&qsub(&c, true, &["-l", &many]), "qsub: too many OR-ed select specifications, at most 32");
    let many_wide = format!("job_wide={}", vec!["walltime=1"; 1000].join("||"));
    refused(
        &qsub(&c, true, &["-l", "select=1:ncpus=1||1:ncpus=2", "-l", &many_wide]),
        "qsub: too many OR-ed select specifications, at most 32",
    );
    // The server says the same to a client that is not qsub.
    let raw = c.client().submit(
        vec![
            Attr::new("Resource_List.select", "1:ncpus=1||1:ncpus=2"),
            Attr::new("Resource_List.job_wide", "walltime=1"),
        ],
        "#!/bin/sh\n".into(),
        None,
    );
    let err = raw.expect_err("refused");
    assert_eq!(err.to_string(), "job_wide resources and select specifications do not match");
    // Limits: resources_max against the largest alternative, resources_min against the
    // smallest; the plain select's totals alone would have passed both.
    let ored = ["-l", "select=1:ncpus=2||1:ncpus=12"];
    c.qmgr("set queue workq resources_max.ncpus = 10");
    refused(&qsub(&c, true, &ored), "qsub: Job violates queue and/or server resource limits");
    c.qmgr("unset queue workq resources_max.ncpus");
    c.qmgr("set queue workq resources_min.ncpus = 4");
    refused(
        &qsub(&c, true, &["-l", "select=1:ncpus=8||1:ncpus=2"]),
        "qsub: Job violates queue and/or server resource limits",
    );
    c.qmgr("unset queue workq resources_min.ncpus");
    c.qmgr("set server max_queued_res.ncpus = [u:PBS_GENERIC=10]");
    refused(&qsub(&c, true, &ored), "qsub: would exceed per-user limit on resource ncpus in complex");
    qsub(&c, true, &["-l", "select=1:ncpus=2||1:ncpus=4"]).ok();
}

#[test]
fn the_first_spec_that_fits_runs_and_a_requeue_tries_them_all_again() {
    let c = Cluster::with_moms(1, 4);
    let id = qsub(
        &c,
        false,
        &[
            "-l",
            "select=1:ncpus=8||1:ncpus=2",
            "-l",
            "job_wide=walltime=00:12:00+place=scatter||walltime=00:08:00+place=pack",
        ],
    )
    .ok()
    .line()
    .to_string();
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    let rl = |name: &str| c.job_attr(&id, &format!("Resource_List.{name}"));
    assert_eq!(c.job_attr(&id, "exec_vnode").as_deref(), Some("(n1:ncpus=2)"));
    assert_eq!(
        [rl("select"), rl("walltime"), rl("place"), rl("ncpus"), rl("nodect")],
        [Some("1:ncpus=2".into()), Some("00:08:00".into()), Some("pack".into()), Some("2".into()), Some("1".into())]
    );
    // Room for the first spec, then a requeue: every spec is tried again.
    c.qmgr("set node n1 resources_available.ncpus = 8");
    c.run("qrerun", &[&id]).ok();
    wait_until("the job run again on its first spec", JOB_TIMEOUT, || {
        c.job_attr(&id, "job_state").as_deref() == Some("R") && rl("select").as_deref() == Some("1:ncpus=8")
    });
    assert_eq!(c.job_attr(&id, "exec_vnode").as_deref(), Some("(n1:ncpus=8)"));
    assert_eq!(
        [rl("walltime"), rl("place"), rl("ncpus")],
        [Some("00:12:00".into()), Some("scatter".into()), Some("8".into())]
    );
    // A job none of whose specs fits now: the scheduler says so.
    let waiting = qsub(&c, false, &["-l", "select=1:ncpus=16||1:ncpus=6"]).ok().line().to_string();
    wait_until("the scheduler's line", JOB_TIMEOUT, || {
        c.sched_stderr().contains(&format!("{waiting};None of the select specification could be satisfied"))
    });
    assert_eq!(c.job_attr(&waiting, "job_state").as_deref(), Some("Q"));
    assert_eq!(c.job_attr(&waiting, "Resource_List.select").as_deref(), Some("1:ncpus=16||1:ncpus=6"));
}

#[test]
fn an_arrays_subjobs_try_the_alternatives_each_keeping_its_own_and_a_requeue_restores() {
    let c = Cluster::with_moms(1, 4);
    let array = qsub(&c, false, &["-J", "0-1", "-l", "select=1:ncpus=8||1:ncpus=2"]).ok().line().to_string();
    let sub = |i: u32| array.replace("[]", &format!("[{i}]"));
    let (first, second) = (sub(0), sub(1));
    for id in [&first, &second] {
        c.wait_job_state(id, "R", JOB_TIMEOUT);
        // The 8-cpu alternative does not fit: each subjob runs the second, as a plain job.
        assert_eq!(c.job_attr(id, "exec_vnode").as_deref(), Some("(n1:ncpus=2)"), "{id}");
        assert_eq!(c.job_attr(id, "Resource_List.select").as_deref(), Some("1:ncpus=2"), "{id}");
        assert_eq!(c.job_attr(id, "Resource_List.ncpus").as_deref(), Some("2"), "{id}");
        assert_eq!(c.job_attr(id, "ORed_Resource_List.select").as_deref(), Some("1:ncpus=8||1:ncpus=2"), "{id}");
    }
    // The array keeps every alternative for the subjobs still to start.
    assert_eq!(c.job_attr(&array, "Resource_List.select").as_deref(), Some("1:ncpus=8||1:ncpus=2"));
    // Room for the first alternative, then a requeue: the subjob tries them all again.
    c.qmgr("set node n1 resources_available.ncpus = 10");
    c.run("qrerun", &[&first]).ok();
    wait_until("the subjob run again on its first alternative", JOB_TIMEOUT, || {
        c.job_attr(&first, "job_state").as_deref() == Some("R")
            && c.job_attr(&first, "Resource_List.select").as_deref() == Some("1:ncpus=8")
    });
    assert_eq!(c.job_attr(&first, "exec_vnode").as_deref(), Some("(n1:ncpus=8)"));
    assert_eq!(c.job_attr(&second, "Resource_List.select").as_deref(), Some("1:ncpus=2"));
}
