//! Queued-job entity limits (`max_queued`, `queued_jobs_threshold` and their `_res` forms,
//! per user, group, project and overall) at qsub and qalter, with OpenPBS's messages and
//! exit statuses; and the scheduler's least privilege over job attributes.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use pbs_e2e::{Cluster, Out, wait_until};
use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame, write_frame};
use pbs_proto::sched::{Action, FromSched, JobUpdate, ToSched};
use pbs_proto::{Attr, Hello, HelloReply, Role};

/// PBSE_ENTLIMCT (15142) and PBSE_ENTLIMRESC (15143), as a command's exit status.
const EXIT_ENTLIMCT: i32 = 15142 & 0xff;
const EXIT_ENTLIMRESC: i32 = 15143 & 0xff;

fn qsub_nobody(cluster: &Cluster, args: &[&str]) -> Out {
    let mut all = args.to_vec();
    all.extend(["--", "/bin/true"]);
    cluster.run_as_nobody("qsub", &all)
}

fn submitted(cluster: &Cluster, args: &[&str]) -> String {
    qsub_nobody(cluster, args).ok().line().to_string()
}

#[track_caller]
fn refused(out: &Out, code: i32, message: &str) {
    assert_eq!(out.code, code, "{out:?}");
    assert_eq!(out.stderr.trim_end(), message, "{out:?}");
}

#[test]
fn server_max_queued_per_user_generic_and_named() {
    let cluster = Cluster::start();
    cluster.allow_root_jobs();
    cluster.qmgr("set server max_queued = [u:PBS_GENERIC=2]");
    submitted(&cluster, &[]);
    submitted(&cluster, &["-h"]);
    refused(&qsub_nobody(&cluster, &[]), EXIT_ENTLIMCT, "qsub: would exceed complex's per-user limit");
    // Another user has a count of their own.
    cluster.qsub(&["--", "/bin/true"]);
    // A named limit replaces the generic one for that user.
    cluster.qmgr("set server max_queued += [u:nobody=3]");
    submitted(&cluster, &[]);
    refused(
        &qsub_nobody(&cluster, &[]),
        EXIT_ENTLIMCT,
        "qsub: Maximum number of jobs for user nobody already in complex",
    );
    let listed = |c: &Cluster| c.run("qmgr", &["-c", "list server"]).ok().stdout;
    assert!(listed(&cluster).contains("    max_queued = [u:PBS_GENERIC=2],[u:nobody=3]\n"), "{}", listed(&cluster));
    cluster.qmgr("set server max_queued -= [u:nobody=3]");
    assert!(listed(&cluster).contains("    max_queued = [u:PBS_GENERIC=2]\n"), "{}", listed(&cluster));
}

#[test]
fn queue_limits_name_the_queue_and_overall_counts_everyone() {
    let cluster = Cluster::start();
    cluster.allow_root_jobs();
    cluster.qmgr("set queue workq max_queued = [o:PBS_ALL=2]");
    submitted(&cluster, &[]);
    cluster.qsub(&["--", "/bin/true"]);
    refused(&qsub_nobody(&cluster, &[]), EXIT_ENTLIMCT, "qsub: Maximum number of jobs already in queue workq");
    cluster.qmgr("unset queue workq max_queued");
    // OpenPBS's own text for a queue's generic user limit names the queue "generic".
    cluster.qmgr("set queue workq queued_jobs_threshold = [u:PBS_GENERIC=2]");
    submitted(&cluster, &[]);
    refused(
        &qsub_nobody(&cluster, &[]),
        EXIT_ENTLIMCT,
        "qsub: would exceed queue generic's per-user limit of jobs in 'Q' state",
    );
    // nobody has two jobs in workq now, root one, each in a group of its own.
    cluster.qmgr("set queue workq queued_jobs_threshold = [g:PBS_GENERIC=3]");
    submitted(&cluster, &[]);
    cluster.qsub(&["--", "/bin/true"]);
    refused(
        &qsub_nobody(&cluster, &[]),
        EXIT_ENTLIMCT,
        "qsub: would exceed queue workq's per-group limit of jobs in 'Q' state",
    );
}

#[test]
fn arrays_count_each_subjob_and_deleting_frees_the_count() {
    let cluster = Cluster::start();
    cluster.qmgr("set server queued_jobs_threshold = [u:PBS_GENERIC=5]");
    let message = "qsub: would exceed complex's per-user limit of jobs in 'Q' state";
    refused(&qsub_nobody(&cluster, &["-J", "1-6"]), EXIT_ENTLIMCT, message);
    let array = submitted(&cluster, &["-J", "1-5"]);
    refused(&qsub_nobody(&cluster, &[]), EXIT_ENTLIMCT, message);
    // Two subjobs deleted: two single jobs fit again, a third does not.
    cluster.run_as_nobody("qdel", &[&array.replace("[]", "[1-2]")]).ok();
    submitted(&cluster, &[]);
    submitted(&cluster, &[]);
    refused(&qsub_nobody(&cluster, &[]), EXIT_ENTLIMCT, message);
    cluster.run_as_nobody("qdel", &[&array]).ok();
    submitted(&cluster, &[]);
}

#[test]
fn project_limits_apply_at_qsub_and_qalter() {
    let cluster = Cluster::start();
    cluster.qmgr("set server queued_jobs_threshold = [p:p1=1]");
    submitted(&cluster, &["-P", "p1"]);
    refused(
        &qsub_nobody(&cluster, &["-P", "p1"]),
        EXIT_ENTLIMCT,
        "qsub: Maximum number of jobs in 'Q' state for project p1 already in complex",
    );
    let other = submitted(&cluster, &[]);
    let out = cluster.run_as_nobody("qalter", &["-P", "p1", &other]);
    refused(
        &out,
        EXIT_ENTLIMCT,
        &format!("qalter: Maximum number of jobs in 'Q' state for project p1 already in complex {other}"),
    );
    assert_eq!(cluster.job_attr(&other, "project").as_deref(), Some("_pbs_project_default"));
}

#[test]
fn resource_limits_and_qalter_never_count_the_job_itself() {
    let cluster = Cluster::start();
    cluster.qmgr("set server max_queued_res.ncpus = [u:PBS_GENERIC=4]");
    assert!(
        cluster
            .run("qmgr", &["-c", "list server"])
            .ok()
            .stdout
            .contains("    max_queued_res.ncpus = [u:PBS_GENERIC=4]\n")
    );
    let first = submitted(&cluster, &["-l", "ncpus=2"]);
    submitted(&cluster, &["-l", "ncpus=2"]);
    refused(
        &qsub_nobody(&cluster, &["-l", "ncpus=1"]),
        EXIT_ENTLIMRESC,
        "qsub: would exceed per-user limit on resource ncpus in complex",
    );
    // At the limit, altering something else, or the same amount, is no excess.
    cluster.run_as_nobody("qalter", &["-N", "renamed", &first]).ok();
    cluster.run_as_nobody("qalter", &["-l", "ncpus=2", &first]).ok();
    let out = cluster.run_as_nobody("qalter", &["-l", "ncpus=3", &first]);
    refused(
        &out,
        EXIT_ENTLIMRESC,
        &format!("qalter: would exceed per-user limit on resource ncpus in complex {first}"),
    );
    assert_eq!(cluster.job_attr(&first, "Resource_List.ncpus").as_deref(), Some("2"));
    // Lowering frees room for another job.
    cluster.run_as_nobody("qalter", &["-l", "ncpus=1", &first]).ok();
    submitted(&cluster, &["-l", "ncpus=1"]);
}

#[test]
fn a_queue_at_its_max_queued_still_lets_its_jobs_be_altered() {
    let cluster = Cluster::start();
    cluster.qmgr("set queue workq max_queued = [o:PBS_ALL=1]");
    let only = submitted(&cluster, &[]);
    cluster.run_as_nobody("qalter", &["-N", "still_mine", &only]).ok();
    assert_eq!(cluster.job_attr(&only, "Job_Name").as_deref(), Some("still_mine"));
}

#[test]
fn limits_hold_after_a_restart_and_bad_values_are_refused() {
    let mut cluster = Cluster::start();
    cluster.qmgr("set server max_queued = [u:PBS_GENERIC=1]");
    submitted(&cluster, &[]);
    cluster.kill9();
    cluster.start_server();
    refused(&qsub_nobody(&cluster, &[]), EXIT_ENTLIMCT, "qsub: would exceed complex's per-user limit");
    let out = cluster.run("qmgr", &["-c", "set server max_queued = [u:PBS_GENERIC=abc]"]);
    assert_eq!(out.code, 15014 & 0xff, "{out:?}");
    assert!(out.stderr.contains("Illegal attribute or resource value max_queued"), "{out:?}");
    let out = cluster.run("qmgr", &["-c", "set server queued_jobs_threshold_res.mem = [o:PBS_ALL=lots]"]);
    assert_eq!(out.code, 15014 & 0xff, "{out:?}");
    // The scheduler's max_run is read by the same parser and refused the same way.
    let out = cluster.run("qmgr", &["-c", "set server max_run = [u:PBS_GENERIC=abc]"]);
    assert_eq!(out.code, 15014 & 0xff, "{out:?}");
    assert!(out.stderr.contains("Illegal attribute or resource value max_run"), "{out:?}");
}

/// Connects to the server's Unix socket as root in the scheduler's role and reads the
/// snapshot and the first Changes frame.
fn fake_scheduler(cluster: &Cluster) -> UnixStream {
    let mut stream = UnixStream::connect(cluster.home().join("server_sock")).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
    write_frame(&mut stream, &Hello::local(Role::Scheduler)).expect("hello");
    let welcome: HelloReply = read_frame(&mut stream, MAX_REPLY_FRAME_LEN).expect("read").expect("welcome");
    assert!(matches!(welcome, HelloReply::Welcome { .. }), "{welcome:?}");
    let first: ToSched = read_frame(&mut stream, 64 << 20).expect("read").expect("snapshot");
    assert!(matches!(first, ToSched::Snapshot { .. }), "{first:?}");
    stream
}

/// Sends one Decisions frame of updates and returns the errors of its DecisionsApplied.
fn decide(stream: &mut UnixStream, cycle: u64, updates: Vec<JobUpdate>) -> Vec<pbs_proto::IdError> {
    let frame = FromSched::Decisions { cycle, qrun: None, actions: updates.into_iter().map(Action::Update).collect() };
    write_frame(stream, &frame).expect("decisions");
    stream.flush().expect("flush");
    loop {
        let answer: ToSched = read_frame(stream, 64 << 20).expect("read").expect("an answer");
        if let ToSched::DecisionsApplied { cycle: c, errors } = answer {
            assert_eq!(c, cycle);
            return errors;
        }
    }
}

#[test]
fn the_scheduler_may_change_only_what_it_owns() {
    let cluster = Cluster::start();
    let job = submitted(&cluster, &["-l", "ncpus=1"]);
    let stf = submitted(&cluster, &["-l", "min_walltime=00:10:00,max_walltime=01:00:00"]);
    let mut sched = fake_scheduler(&cluster);
    let update =
        |id: &str, name: &str, value: &str| JobUpdate { job_id: id.to_string(), attrs: vec![Attr::new(name, value)] };
    for (name, value) in [
        ("euser", "root"),
        ("Job_Owner", "root@elsewhere"),
        ("Resource_List.ncpus", "64"),
        ("Resource_List.walltime", "10:00:00"),
        ("Hold_Types", "n"),
    ] {
        let errors = decide(&mut sched, 1, vec![update(&job, name, value)]);
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        assert_eq!((errors[0].id.as_str(), errors[0].code), (job.as_str(), 15007), "{name}: {errors:?}");
    }
    // A forbidden attribute refuses the whole update, comment included.
    let mixed =
        JobUpdate { job_id: job.clone(), attrs: vec![Attr::new("comment", "sneaky"), Attr::new("euser", "root")] };
    assert_eq!(decide(&mut sched, 2, vec![mixed]).len(), 1);
    assert_eq!(cluster.job_attr(&job, "euser").as_deref(), Some("nobody"));
    assert_eq!(cluster.job_attr(&job, "Job_Owner").map(|o| o.starts_with("nobody@")), Some(true));
    assert_eq!(cluster.job_attr(&job, "Resource_List.ncpus").as_deref(), Some("1"));
    assert_eq!(cluster.job_attr(&job, "Resource_List.walltime"), None);
    assert_eq!(cluster.job_attr(&job, "comment"), None);
    // Shrink-to-fit: a walltime outside the job's range is refused, one inside is taken.
    assert_eq!(decide(&mut sched, 3, vec![update(&stf, "Resource_List.walltime", "02:00:00")]).len(), 1);
    assert_eq!(decide(&mut sched, 4, vec![update(&stf, "Resource_List.walltime", "00:30:00")]), vec![]);
    assert_eq!(cluster.job_attr(&stf, "Resource_List.walltime").as_deref(), Some("00:30:00"));
    // What a scheduler owns it may set.
    let own = JobUpdate {
        job_id: job.clone(),
        attrs: vec![Attr::new("comment", "Not Running: testing"), Attr::new("estimated.start_time", "1800000000")],
    };
    assert_eq!(decide(&mut sched, 5, vec![own]), vec![]);
    assert_eq!(cluster.job_attr(&job, "comment").as_deref(), Some("Not Running: testing"));
    wait_until("the refusal in the server log", Duration::from_secs(10), || {
        cluster.server_stderr().contains("Scheduler update refused: a scheduler may not set \"euser\"")
    });
}

fn qsub_root(cluster: &Cluster, script: &str) -> Out {
    cluster.run_with_stdin("qsub", &[], script, false)
}

#[test]
fn running_jobs_leave_the_queued_count_and_finished_ones_the_max_count() {
    let c = Cluster::with_moms(1, 1);
    let timeout = Duration::from_secs(60);
    c.qmgr("set server max_queued = [u:PBS_GENERIC=2]");
    c.qmgr("set server queued_jobs_threshold = [u:PBS_GENERIC=1]");
    let a = qsub_root(&c, "sleep 300\n").ok().line().to_string();
    c.wait_job_state(&a, "R", timeout);
    // Running, `a` counts for max_queued but not for queued_jobs_threshold.
    let b = qsub_root(&c, "sleep 300\n").ok().line().to_string();
    refused(&qsub_root(&c, "sleep 300\n"), EXIT_ENTLIMCT, "qsub: would exceed complex's per-user limit");
    // Once `a` has finished, it counts for nothing; `b` runs and leaves the queued count.
    c.run("qdel", &[&a]).ok();
    c.wait_job_state(&a, "F", timeout);
    c.wait_job_state(&b, "R", timeout);
    qsub_root(&c, "sleep 300\n").ok();
    refused(&qsub_root(&c, "sleep 300\n"), EXIT_ENTLIMCT, "qsub: would exceed complex's per-user limit");
}

#[test]
fn the_real_scheduler_still_sets_a_shrink_to_fit_walltime_and_comments() {
    let c = Cluster::with_moms(1, 1);
    let timeout = Duration::from_secs(60);
    let stf = c
        .run_with_stdin("qsub", &["-l", "min_walltime=00:01:00,max_walltime=00:30:00"], "sleep 300\n", false)
        .ok()
        .line()
        .to_string();
    c.wait_job_state(&stf, "R", timeout);
    assert_eq!(c.job_attr(&stf, "Resource_List.walltime").as_deref(), Some("00:30:00"), "{}", c.logs());
    let waiting = qsub_root(&c, "sleep 300\n").ok().line().to_string();
    wait_until("a Not Running comment", timeout, || {
        c.job_attr(&waiting, "comment").is_some_and(|m| m.starts_with("Not Running"))
    });
    assert!(!c.server_stderr().contains("Scheduler update refused"), "{}", c.server_stderr());
}
