//! Real jobs on real moms placed by the real scheduler: output, identity, placement,
//! limits, deletion, signals, requeue, and moms that die.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use pbs_e2e::{Cluster, NOBODY, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

fn seq(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

#[test]
fn job_output_exit_status_and_environment() {
    let c = Cluster::with_moms(1, 2);
    let script = "#!/bin/sh\necho err-line >&2\necho \"env $PBS_JOBID $PBS_JOBNAME $PBS_QUEUE $PBS_ENVIRONMENT $NCPUS $OMP_NUM_THREADS $PBS_TASKNUM\"\necho \"dirs $PBS_O_WORKDIR $(pwd)\"\necho \"nodes $(cat $PBS_NODEFILE)\"\ntest -d \"$TMPDIR\" && echo tmpdir-ok\nexit 3\n";
    let id = submit(&c, &["-N", "envjob", "-l", "select=1:ncpus=2"], script);
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("3"), "{}", c.logs());
    let out = std::fs::read_to_string(c.dir().join(format!("envjob.o{}", seq(&id)))).unwrap();
    let dir = c.dir().display().to_string();
    assert_eq!(
        out,
        format!("env {id} envjob workq PBS_BATCH 2 2 1\ndirs {dir} {dir}\nnodes n1\ntmpdir-ok\n"),
        "{}",
        c.logs()
    );
    let err = std::fs::read_to_string(c.dir().join(format!("envjob.e{}", seq(&id)))).unwrap();
    assert_eq!(err, "err-line\n");
    let comment = c.job_attr(&id, "comment").unwrap_or_default();
    assert!(comment.starts_with("Job run at ") && comment.ends_with(" on (n1:ncpus=2) and failed"), "{comment}");
    assert_eq!(c.job_attr(&id, "exec_host").as_deref(), Some("n1/0*2"));
    assert_eq!(c.job_attr(&id, "run_count").as_deref(), Some("1"));
    // The node is free again once the job is done.
    c.wait_node_state("n1", "free");
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("0"));
}

#[test]
fn job_of_nobody_runs_as_nobody_and_owns_its_files() {
    let c = Cluster::with_moms(1, 1);
    let shared = c.shared_dir();
    let out = shared.join("out.txt");
    let err = shared.join("err.txt");
    // nobody's login shell is nologin: ask for a real one, as its user would have to.
    let args = ["-S", "/bin/sh", "-o", out.to_str().unwrap(), "-e", err.to_str().unwrap()];
    let id = c.run_with_stdin("qsub", &args, "id -u\nid -un\n", true).ok().line().to_string();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let errors = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("0"), "stderr {errors:?}\n{}", c.logs());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{NOBODY}\nnobody\n"));
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), NOBODY);
    assert_eq!(std::fs::metadata(&err).unwrap().uid(), NOBODY);
    // Private by default, as OpenPBS's umask 077 makes them (job_output_files.txt), and
    // what the job itself writes too; `-W umask` says otherwise.
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().mode() & 0o777;
    assert_eq!((mode(&out), mode(&err)), (0o600, 0o600));
    let made = shared.join("made.txt");
    let script = format!("touch {}\n", made.display());
    let id = c.run_with_stdin("qsub", &args, &script, true).ok().line().to_string();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(mode(&made), 0o600);
    let opened = ["-S", "/bin/sh", "-W", "umask=022", "-o", out.to_str().unwrap(), "-e", err.to_str().unwrap()];
    std::fs::remove_file(&out).unwrap();
    let id = c.run_with_stdin("qsub", &opened, "true\n", true).ok().line().to_string();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(mode(&out), 0o644);
}

#[test]
fn three_node_job_and_its_nodefile() {
    let c = Cluster::with_moms(3, 1);
    let id = submit(&c, &["-N", "mpi", "-l", "select=3:ncpus=1"], "cat $PBS_NODEFILE\n");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let out = std::fs::read_to_string(c.dir().join(format!("mpi.o{}", seq(&id)))).unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["n1", "n2", "n3"], "{}", c.logs());
    let exec = c.job_attr(&id, "exec_vnode").unwrap();
    assert_eq!(exec.matches("ncpus=1").count(), 3, "{exec}");
}

fn vnodes_of(exec_vnode: &str) -> Vec<String> {
    exec_vnode
        .split('+')
        .map(|part| part.trim_matches(|c| c == '(' || c == ')').split(':').next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn placement_pack_scatter_excl_on_four_moms() {
    let c = Cluster::with_moms(4, 2);
    let sleep = "sleep 30\n";
    let pack = submit(&c, &["-l", "select=2:ncpus=1", "-l", "place=pack"], sleep);
    c.wait_job_state(&pack, "R", JOB_TIMEOUT);
    let nodes = vnodes_of(&c.job_attr(&pack, "exec_vnode").unwrap());
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0], nodes[1], "pack puts both chunks on one host: {nodes:?}");
    c.run("qdel", &[&pack]).ok();
    c.wait_job_state(&pack, "F", JOB_TIMEOUT);

    let scatter = submit(&c, &["-l", "select=3:ncpus=1", "-l", "place=scatter"], sleep);
    c.wait_job_state(&scatter, "R", JOB_TIMEOUT);
    let mut nodes = vnodes_of(&c.job_attr(&scatter, "exec_vnode").unwrap());
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3, "scatter uses three hosts: {nodes:?}");
    c.run("qdel", &[&scatter]).ok();
    c.wait_job_state(&scatter, "F", JOB_TIMEOUT);

    let excl = submit(&c, &["-l", "select=1:ncpus=1", "-l", "place=excl"], sleep);
    c.wait_job_state(&excl, "R", JOB_TIMEOUT);
    let excl_node = vnodes_of(&c.job_attr(&excl, "exec_vnode").unwrap())[0].clone();
    c.wait_node_state(&excl_node, "job-exclusive");
    // Three more one-cpu jobs all land beside it, never on the exclusive node.
    let others: Vec<String> = (0..3).map(|_| submit(&c, &["-l", "select=1:ncpus=1"], sleep)).collect();
    for other in &others {
        c.wait_job_state(other, "R", JOB_TIMEOUT);
        let node = vnodes_of(&c.job_attr(other, "exec_vnode").unwrap())[0].clone();
        assert_ne!(node, excl_node);
    }
    let mut all = others.clone();
    all.push(excl);
    let ids: Vec<&str> = all.iter().map(String::as_str).collect();
    c.run("qdel", &ids).ok();
}

#[test]
fn walltime_kill_writes_openpbs_message() {
    let c = Cluster::with_moms(1, 1);
    let id = submit(&c, &["-N", "wt", "-l", "walltime=00:00:02"], "sleep 60\n");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("-29"), "{}", c.logs());
    let err = std::fs::read_to_string(c.dir().join(format!("wt.e{}", seq(&id)))).unwrap();
    assert!(err.contains("=>> PBS: job killed: walltime "), "{err:?}");
    assert!(err.contains("exceeded limit 2"), "{err:?}");
    let comment = c.job_attr(&id, "comment").unwrap_or_default();
    assert!(comment.ends_with(" and exceeded resource walltime"), "{comment}");
}

#[test]
fn qdel_of_a_running_job_ends_it() {
    let c = Cluster::with_moms(1, 1);
    let id = submit(&c, &[], "sleep 60\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    // The shell died of SIGTERM: 256 + 15, as OpenPBS records it.
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("271"), "{}", c.logs());
    c.wait_node_state("n1", "free");
}

/// Jobs that ignore SIGTERM are killed `kill_delay` seconds after a qdel, all of them
/// by the SIGKILL that falls due for each (the mom sends them in one pass).
#[test]
fn qdel_of_jobs_ignoring_sigterm_kills_them_after_kill_delay() {
    let c = Cluster::with_moms(1, 3);
    c.qmgr("set server kill_delay = 1");
    let ids: Vec<String> = (0..3).map(|_| submit(&c, &[], "trap '' TERM\nsleep 300\n")).collect();
    for id in &ids {
        c.wait_job_state(id, "R", JOB_TIMEOUT);
        wait_until("session id", JOB_TIMEOUT, || c.job_attr(id, "session_id").is_some());
    }
    let args: Vec<&str> = ids.iter().map(String::as_str).collect();
    c.run("qdel", &args).ok();
    for id in &ids {
        c.wait_job_state(id, "F", JOB_TIMEOUT);
        // The shell died of SIGKILL: 256 + 9.
        assert_eq!(c.job_attr(id, "Exit_status").as_deref(), Some("265"), "{id}");
    }
}

fn proc_state(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim_start().chars().next()
}

/// The server's and workq's `resources_assigned` of `resource`, which must agree.
fn assigned(c: &Cluster, resource: &str) -> Option<String> {
    let name = format!("resources_assigned.{resource}");
    let server = c.server_attr(&name);
    assert_eq!(server, c.queue_attr("workq", &name), "server and workq differ on {name}");
    server
}

#[test]
fn suspend_and_resume_stop_the_job_and_release_its_cpus() {
    let c = Cluster::with_moms(1, 1);
    assert_eq!(assigned(&c, "ncpus"), None, "nothing has run yet");
    let id = submit(&c, &["-l", "mem=3mb"], "sleep 60\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    let sid = c.job_attr(&id, "session_id").unwrap();
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("1"));
    assert_eq!(assigned(&c, "ncpus").as_deref(), Some("1"));
    assert_eq!(assigned(&c, "nodect").as_deref(), Some("1"));
    assert_eq!(assigned(&c, "mem").as_deref(), Some("3mb"));
    let qstat = c.run("qstat", &["-Bf"]).ok().stdout.clone();
    assert!(qstat.contains("    resources_assigned.ncpus = 1\n    resources_assigned.nodect = 1\n"), "{qstat}");
    // A running job's time limits may change, not what it holds (OpenPBS's ALTRUN).
    let refused = c.run("qalter", &["-l", "ncpus=2", &id]);
    assert_eq!(
        refused.stderr,
        format!("qalter: Cannot modify attribute while job running  Resource_List.ncpus {id}\n")
    );
    assert_eq!(refused.code, 167);
    c.run("qalter", &["-l", "walltime=01:00:00", &id]).ok();
    assert_eq!(c.job_attr(&id, "Resource_List.ncpus").as_deref(), Some("1"));

    // Only operators and managers may suspend.
    let denied = c.run_as_nobody("qsig", &["-s", "suspend", &id]);
    assert_ne!(denied.code, 0);

    c.run("qsig", &["-s", "suspend", &id]).ok();
    c.wait_job_state(&id, "S", JOB_TIMEOUT);
    wait_until("job stopped", JOB_TIMEOUT, || proc_state(&sid) == Some('T'));
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("0"));
    assert_eq!(assigned(&c, "ncpus").as_deref(), Some("0"));

    c.run("qsig", &["-s", "resume", &id]).ok();
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("job continued", JOB_TIMEOUT, || proc_state(&sid).is_some_and(|s| s != 'T'));
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("1"));
    assert_eq!(assigned(&c, "ncpus").as_deref(), Some("1"));
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    // As OpenPBS shows them once used: at zero.
    assert_eq!(assigned(&c, "ncpus").as_deref(), Some("0"));
    assert_eq!(assigned(&c, "nodect").as_deref(), Some("0"));
    assert_eq!(assigned(&c, "mem").as_deref(), Some("0mb"));
}

#[test]
fn qrerun_requeues_and_the_job_runs_again() {
    let c = Cluster::with_moms(1, 1);
    let id = submit(&c, &[], "sleep 60\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.run("qrerun", &[&id]).ok();
    wait_until("second run", JOB_TIMEOUT, || {
        c.job_attr(&id, "run_count").as_deref() == Some("2") && c.job_attr(&id, "job_state").as_deref() == Some("R")
    });
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
}

#[test]
fn a_job_held_while_running_comes_back_held_from_a_requeue() {
    let c = Cluster::with_moms(1, 1);
    let id = submit(&c, &[], "sleep 60\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.run("qhold", &[&id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"), "the hold waits for the run to end");
    c.run("qrerun", &[&id]).ok();
    c.wait_job_state(&id, "H", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Hold_Types").as_deref(), Some("u"));
    assert_eq!(c.job_attr(&id, "substate").as_deref(), Some("20"));
    // Released, it runs again.
    c.run("qrls", &[&id]).ok();
    wait_until("second run", JOB_TIMEOUT, || {
        c.job_attr(&id, "run_count").as_deref() == Some("2") && c.job_attr(&id, "job_state").as_deref() == Some("R")
    });
    c.run("qdel", &[&id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
}

#[test]
fn job_survives_a_mom_restart_and_its_exit_status_is_recorded() {
    let mut c = Cluster::with_moms(1, 1);
    let id = submit(&c, &[], "sleep 3\nexit 7\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.kill_mom("n1");
    c.wait_node_state("n1", "down");
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    c.start_mom("n1");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("7"), "{}", c.logs());
}

#[test]
fn a_dead_mom_marks_its_node_down_and_its_job_is_requeued() {
    let mut c = Cluster::with_moms(2, 1);
    c.qmgr("set server node_fail_requeue = 2");
    let id = submit(&c, &[], "sleep 60\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    let first = vnodes_of(&c.job_attr(&id, "exec_vnode").unwrap())[0].clone();
    c.kill_mom(&first);
    c.wait_node_state(&first, "down");
    wait_until("the job runs on the other node", JOB_TIMEOUT, || {
        c.job_attr(&id, "exec_vnode").is_some_and(|e| vnodes_of(&e)[0] != first)
            && c.job_attr(&id, "job_state").as_deref() == Some("R")
    });
    assert_eq!(c.job_attr(&id, "run_count").as_deref(), Some("2"));
    c.run("qdel", &[&id]).ok();
}

/// A job deleted while its mom is down ends when the node is given up for lost
/// (`node_fail_requeue`): deleted as asked, not requeued to run again.
#[test]
fn a_job_deleted_while_its_mom_is_down_is_not_requeued_when_the_node_fails() {
    let mut c = Cluster::with_moms(1, 1);
    c.qmgr("set server node_fail_requeue = 2");
    let id = submit(&c, &[], "sleep 60\n");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.kill_mom("n1");
    c.wait_node_state("n1", "down");
    let out = c.run("qdel", &[&id]);
    assert_eq!(out.code, 0, "{out:?}");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "run_count").as_deref(), Some("1"));
    assert_eq!(c.job_attr(&id, "substate").as_deref(), Some("91"), "{}", c.logs());
}

#[test]
fn jobs_that_cannot_run_get_openpbs_comments() {
    let c = Cluster::with_moms(1, 2);
    let wait_comment = |id: &str, expected: &str| {
        let deadline = std::time::Instant::now() + JOB_TIMEOUT;
        loop {
            let comment = c.job_attr(id, "comment");
            if comment.as_deref() == Some(expected) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "comment {comment:?}, expected {expected:?}\n{}", c.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let never = submit(&c, &["-l", "select=1:ncpus=8"], "true\n");
    wait_comment(&never, "Can Never Run: Insufficient amount of resource: ncpus (R: 8 A: 2 T: 2)");
    let half = submit(&c, &["-l", "select=1:ncpus=1"], "sleep 60\n");
    c.wait_job_state(&half, "R", JOB_TIMEOUT);
    let two = submit(&c, &["-l", "select=1:ncpus=2"], "true\n");
    wait_comment(&two, "Not Running: Insufficient amount of resource: ncpus (R: 2 A: 1 T: 2)");
    let other = submit(&c, &["-l", "select=1:ncpus=1"], "sleep 60\n");
    c.wait_job_state(&other, "R", JOB_TIMEOUT);
    c.wait_node_state("n1", "job-busy");
    // A node whose cpus are all taken is not free, as in OpenPBS's test_free_nodes.
    let one = submit(&c, &["-l", "select=1:ncpus=1"], "true\n");
    wait_comment(&one, "Not Running: Not enough free nodes available");
    assert_eq!(c.job_attr(&one, "job_state").as_deref(), Some("Q"));
    c.run("qdel", &[&half, &other, &never]).ok();
    c.wait_job_state(&one, "F", JOB_TIMEOUT);
    c.wait_job_state(&two, "F", JOB_TIMEOUT);
}

#[test]
fn qrun_runs_a_job_where_and_when_asked() {
    let c = Cluster::with_moms(2, 1);
    c.qmgr("set server scheduling = False");
    let id = submit(&c, &[], "sleep 60\n");
    let other = submit(&c, &[], "sleep 60\n");
    let denied = c.run_as_nobody("qrun", &["-H", "n2", &id]);
    assert_ne!(denied.code, 0);
    c.run("qrun", &["-H", "n2", &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    assert_eq!(c.job_attr(&id, "exec_vnode").as_deref(), Some("(n2:ncpus=1)"));
    // Without -H the scheduler places it, even with scheduling off.
    c.run("qrun", &[&other]).ok();
    assert_eq!(c.job_attr(&other, "exec_vnode").as_deref(), Some("(n1:ncpus=1)"), "{}", c.logs());
    // One the scheduler cannot place hears why, and stays queued.
    let big = submit(&c, &["-l", "select=1:ncpus=2"], "sleep 60\n");
    let refused = c.run("qrun", &[&big]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert_eq!(refused.stderr, format!("qrun: Resource temporarily unavailable {big}\n"));
    assert_eq!(c.job_attr(&big, "job_state").as_deref(), Some("Q"));
    let comment = c.job_attr(&big, "comment").unwrap_or_default();
    assert!(comment.starts_with("Not Running: "), "{comment}");
    c.run("qdel", &[&id, &other, &big]).ok();
}
