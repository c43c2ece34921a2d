//! Job arrays on real daemons: subjobs, their environment and files, `max_run_subjobs`,
//! and the array views and operations of the commands.

use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn seq(id: &str) -> &str {
    id.split('[').next().unwrap_or(id)
}

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

/// `(index, state letter)` of every subjob, from `qstat -t` through the client.
fn subjob_states(c: &Cluster, array: &str) -> Vec<(u64, String)> {
    let Ok(reply) = c.client().status_jobs(vec![array.to_string()], vec![], vec!["job_state".into()], true, true)
    else {
        return Vec::new();
    };
    reply
        .objects
        .iter()
        .filter_map(|o| {
            let inside = o.name.split('[').nth(1)?.split(']').next()?;
            let index = inside.parse().ok()?;
            Some((index, o.get("job_state")?.to_string()))
        })
        .collect()
}

fn running(c: &Cluster, array: &str) -> usize {
    subjob_states(c, array).iter().filter(|(_, s)| s == "R").count()
}

#[test]
fn limit_holds_at_every_sample_and_every_subjob_runs_with_its_index() {
    let c = Cluster::with_moms(1, 8);
    let id = submit(&c, &["-N", "arr", "-J", "1-20%3"], "echo \"$PBS_ARRAY_INDEX $PBS_ARRAY_ID\"\nsleep 1\n");
    assert!(id.ends_with(&format!("[].{}", c.server_name())), "{id}");
    assert_eq!(c.job_attr(&id, "max_run_subjobs").as_deref(), Some("3"));
    assert_eq!(c.job_attr(&id, "array_indices_submitted").as_deref(), Some("1-20"));
    let deadline = Instant::now() + JOB_TIMEOUT;
    let mut most = 0;
    let mut samples = 0;
    while c.job_attr(&id, "job_state").as_deref() != Some("F") {
        let now = running(&c, &id);
        assert!(now <= 3, "{now} subjobs running at once\n{}", c.logs());
        most = most.max(now);
        samples += 1;
        assert!(Instant::now() < deadline, "array did not finish\n{}", c.logs());
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(samples > 20, "only {samples} samples");
    assert_eq!(most, 3, "the limit was never reached");
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some("Queued:0 Running:0 Exiting:0 Expired:20"));
    for index in [1, 7, 20] {
        let out = std::fs::read_to_string(c.dir().join(format!("arr.o{}.{index}", seq(&id)))).unwrap_or_default();
        assert_eq!(out, format!("{index} {id}\n"));
    }
    let states = subjob_states(&c, &id);
    assert_eq!(states.len(), 20);
    assert!(states.iter().all(|(_, s)| s == "X"), "{states:?}");
}

#[test]
fn qalter_raises_the_limit_mid_run() {
    let c = Cluster::with_moms(1, 8);
    let id = submit(&c, &["-J", "1-8%1"], "sleep 30\n");
    wait_until("one subjob running", JOB_TIMEOUT, || running(&c, &id) == 1);
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("B"));
    c.run("qalter", &["-W", "max_run_subjobs=4", &id]).ok();
    wait_until("four subjobs running", JOB_TIMEOUT, || running(&c, &id) == 4);
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
}

#[test]
fn suspended_subjobs_do_not_count_and_qrun_passes_the_limit() {
    let c = Cluster::with_moms(1, 8);
    let id = submit(&c, &["-J", "1-6%1"], "sleep 30\n");
    wait_until("one subjob running", JOB_TIMEOUT, || running(&c, &id) == 1);
    let first = subjob_states(&c, &id).into_iter().find(|(_, s)| s == "R").map(|(i, _)| i).unwrap();
    let first_id = format!("{}[{first}].{}", seq(&id), c.server_name());
    wait_until("the subjob's session", JOB_TIMEOUT, || c.job_attr(&first_id, "session_id").is_some());
    c.run("qsig", &["-s", "suspend", &first_id]).ok();
    c.wait_job_state(&first_id, "S", JOB_TIMEOUT);
    // The suspended subjob no longer counts: another one starts.
    wait_until("another subjob running", JOB_TIMEOUT, || running(&c, &id) == 1);
    // qrun runs a subjob even at the limit.
    let queued = subjob_states(&c, &id).into_iter().find(|(_, s)| s == "Q").map(|(i, _)| i).unwrap();
    let queued_id = format!("{}[{queued}].{}", seq(&id), c.server_name());
    c.run("qrun", &[&queued_id]).ok();
    assert_eq!(c.job_attr(&queued_id, "job_state").as_deref(), Some("R"), "{}", c.logs());
    assert_eq!(running(&c, &id), 2);
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
}

#[test]
fn array_views_and_subjob_operations() {
    let c = Cluster::with_moms(1, 2);
    c.qmgr("set server scheduling = False");
    let id = submit(&c, &["-N", "arrjob", "-J", "0-9"], "sleep 30\n");
    let short = id.split('.').next().unwrap().to_string();
    let plain = submit(&c, &[], "true\n");

    let listing = c.run("qstat", &["-t"]).ok().stdout;
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 2 + 1 + 10 + 1, "{listing}");
    assert!(lines[2].starts_with(&format!("{short}.")) && lines[2].contains(" arrjob "), "{listing}");
    assert!(lines[2].contains(" Q workq"), "{listing}");
    assert!(lines[3].starts_with(&format!("{}[0].", seq(&id))), "{listing}");

    let arrays = c.run("qstat", &["-J"]).ok().stdout;
    assert!(arrays.contains(&short) && !arrays.contains(plain.split('.').next().unwrap()), "{arrays}");

    let selected = c.run("qselect", &["-J"]).ok().stdout;
    assert_eq!(selected, format!("{id}\n"));
    let selected = c.run("qselect", &["-T"]).ok().stdout;
    let mut expected: Vec<String> = (0..10).map(|i| format!("{}[{i}].{}", seq(&id), c.server_name())).collect();
    expected.push(plain.clone());
    assert_eq!(selected.lines().collect::<Vec<_>>(), expected);

    let one = c.run("qstat", &["-f", &format!("{}[3]", seq(&id))]).ok().stdout;
    assert!(one.starts_with(&format!("Job Id: {}[3].", seq(&id))), "{one}");
    assert!(one.contains("    job_state = Q\n") && !one.contains("array_indices"), "{one}");

    // Run subjob 3, delete queued subjobs 5 to 7, and rerun subjob 3.
    c.run("qrun", &[&format!("{}[3]", seq(&id))]).ok();
    c.run("qdel", &[&format!("{}[5-7]", seq(&id))]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("B"));
    assert_eq!(c.job_attr(&id, "array_indices_remaining").as_deref(), Some("0-2,4,8-9"));
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some("Queued:6 Running:1 Exiting:0 Expired:3"));
    let sub3 = format!("{}[3].{}", seq(&id), c.server_name());
    wait_until("subjob 3 started", JOB_TIMEOUT, || c.job_attr(&sub3, "session_id").is_some());
    c.run("qrerun", &[&sub3]).ok();
    wait_until("subjob 3 back in the queue", JOB_TIMEOUT, || {
        c.job_attr(&id, "array_indices_remaining").as_deref() == Some("0-4,8-9")
    });
    assert_eq!(c.job_attr(&sub3, "job_state").as_deref(), Some("Q"));

    // Deleting the array ends it; its subjobs stay visible with -x.
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let history = c.run("qstat", &["-x", "-t", &id]).ok().stdout;
    assert!(history.lines().any(|l| l.starts_with(&format!("{}[3].", seq(&id))) && l.contains(" X ")), "{history}");
}

#[test]
fn max_run_subjobs_errors_match_openpbs() {
    let c = Cluster::start();
    let usage_head = "qsub: multiple max_run_subjobs values found\nusage: qsub [-a date_time]";
    let both = c.run_as_nobody("qsub", &["-h", "-J", "0-9%2", "-W", "max_run_subjobs=3", "--", "/bin/true"]);
    assert!(both.stderr.starts_with(usage_head), "{both:?}");
    assert_eq!(both.code, 2);
    let bad = c.run_as_nobody("qsub", &["-h", "-J", "0-9", "-W", "max_run_subjobs=abc", "--", "/bin/true"]);
    assert_eq!((bad.stderr.as_str(), bad.code), ("qsub: Attribute has to be set on an array job\n", 166));
    let big = c.run_as_nobody("qsub", &["-h", "-J", "0-20000", "--", "/bin/true"]);
    assert_eq!((big.stderr.as_str(), big.code), ("qsub: Array job exceeds server or queue size limit\n", 3));
    let array = c.run_as_nobody("qsub", &["-h", "-J", "0-9%2", "--", "/bin/true"]).ok().line().to_string();
    assert_eq!(c.job_attr(&array, "max_run_subjobs").as_deref(), Some("2"));
    assert_eq!(c.job_attr(&array, "array_indices_submitted").as_deref(), Some("0-9"));
    c.run_as_nobody("qalter", &["-W", "max_run_subjobs=5", &array]).ok();
    assert_eq!(c.job_attr(&array, "max_run_subjobs").as_deref(), Some("5"));
    let plain = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    let refused = c.run_as_nobody("qalter", &["-W", "max_run_subjobs=5", &plain]);
    assert_eq!(refused.stderr, format!("qalter: Attribute has to be set on an array job {plain}\n"));
    assert_eq!(refused.code, 127);
}

#[test]
fn a_running_array_survives_a_server_crash() {
    let mut c = Cluster::with_moms(1, 4);
    let id = submit(&c, &["-J", "1-6%2"], "sleep 1\n");
    wait_until("two subjobs running", JOB_TIMEOUT, || running(&c, &id) == 2);
    c.kill9();
    c.start_server();
    // The moms and the scheduler find the new server; the array carries on and ends.
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some("Queued:0 Running:0 Exiting:0 Expired:6"));
    let states = subjob_states(&c, &id);
    assert_eq!(states.len(), 6);
    assert!(states.iter().all(|(_, s)| s == "X"), "{states:?}\n{}", c.logs());
    // Recounted from the running subjobs at the restart, released as they ended.
    assert_eq!(c.server_attr("resources_assigned.ncpus").as_deref(), Some("0"));
}

#[test]
fn holding_a_begun_array_stops_new_subjobs_until_released() {
    let c = Cluster::with_moms(1, 4);
    let id = submit(&c, &["-J", "1-6%2"], "sleep 1\n");
    wait_until("two subjobs running", JOB_TIMEOUT, || running(&c, &id) == 2);
    // Subjobs count on the server and queue as jobs do.
    wait_until("two subjobs' cpus assigned", JOB_TIMEOUT, || {
        c.server_attr("resources_assigned.ncpus").as_deref() == Some("2")
            && c.queue_attr("workq", "resources_assigned.ncpus").as_deref() == Some("2")
    });
    c.run("qhold", &[&id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("H"));
    // The running ones finish; no queued one starts while the array is held.
    wait_until("running subjobs done", JOB_TIMEOUT, || running(&c, &id) == 0);
    let queued = subjob_states(&c, &id).iter().filter(|(_, s)| s == "Q").count();
    assert_eq!(queued, 4, "{:?}", subjob_states(&c, &id));
    c.run("qrls", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some("Queued:0 Running:0 Exiting:0 Expired:6"));
    assert_eq!(c.server_attr("resources_assigned.ncpus").as_deref(), Some("0"));
}
