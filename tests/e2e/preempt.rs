//! Preemption by list (seed 002): the scheduler object's preempt_* settings as OpenPBS
//! checks and prints them, the PreemptJobs request (managers and the scheduler only, one
//! answer per id, bounded), and the scheduler preempting running jobs for an express
//! queue's job and resuming them when room returns.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use pbs_e2e::Cluster;
use pbs_proto::Reply;
use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

fn lines_with(text: &str, word: &str) -> String {
    text.lines().filter(|l| l.contains(word)).map(|l| format!("{l}\n")).collect()
}

#[test]
fn preemption_settings_have_openpbs_defaults_checks_permissions_and_output() {
    let c = Cluster::start();
    // qmgr_p_sched.txt: unset or never set, the defaults are shown.
    let printed = c.run("qmgr", &["-c", "p sched"]).ok().stdout;
    assert_eq!(
        lines_with(&printed, "preempt_"),
        "set sched preempt_queue_prio = 150\n\
         set sched preempt_prio = \"express_queue, normal_jobs\"\n\
         set sched preempt_order = SCR\n\
         set sched preempt_sort = min_time_since_start\n"
    );
    // qmgr_set_preempt.txt.
    c.qmgr("set sched preempt_order=\"SCR 80 SC 50 S\"");
    let listed = c.run("qmgr", &["-c", "list sched"]).ok().stdout;
    assert!(listed.contains("    preempt_order = SCR 80 SC 50 S\n"), "{listed}");
    c.qmgr("unset sched preempt_order");
    let listed = c.run("qmgr", &["-c", "list sched"]).ok().stdout;
    assert!(listed.contains("    preempt_order = SCR\n"), "{listed}");

    // pbs_preempt_params.py: each refused value, with OpenPBS's message and status.
    let refused = [
        ("preempt_queue_prio", "abc"),
        ("preempt_queue_prio", "123abc"),
        ("preempt_prio", "abc"),
        ("preempt_prio", "\"express_queue, nrmal_jobs, server_softlimits, queue_softlimits\""),
        ("preempt_order", "abc"),
        ("preempt_order", "\"SCR 80 PQR\""),
        ("preempt_order", "\"SCR SC\""),
        ("preempt_order", "\"80 SC\""),
        ("preempt_order", "\"SCR 80 70\""),
        ("preempt_order", "\"SCR 50 SC 80 S\""),
        ("preempt_sort", "min_time_sincestart"),
        ("preempt_sort", "123"),
    ];
    for (name, value) in refused {
        let out = c.run("qmgr", &["-c", &format!("set sched {name}={value}")]);
        assert_eq!(out.code, 166, "{name}={value}: {out:?}");
        assert_eq!(
            out.stderr,
            format!(
                "qmgr obj= svr=default: Illegal attribute or resource value {name}\n\
                 qmgr: Error (15014) returned from server\n"
            ),
            "{name}={value}"
        );
    }
    for (name, value) in [
        ("preempt_queue_prio", "120"),
        ("preempt_prio", "\"express_queue, normal_jobs, express_queue+fairshare, fairshare\""),
        ("preempt_order", "\"R 10 S\""),
        ("preempt_sort", "min_time_since_start"),
    ] {
        c.qmgr(&format!("set sched {name}={value}"));
        // Users read them and may not write them.
        let out = c.run_as_nobody("qmgr", &["-c", &format!("set sched {name}={value}")]);
        assert_eq!(
            out.stderr,
            "qmgr obj= svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n"
        );
        let listed = c.run_as_nobody("qmgr", &["-c", "list sched"]).ok().stdout;
        assert!(listed.contains(&format!("    {name} = ")), "{listed}");
    }
    let listed = c.run("qmgr", &["-c", "list sched"]).ok().stdout;
    assert!(listed.contains("    preempt_prio = express_queue, normal_jobs, express_queue+fairshare, fairshare\n"));
    for name in ["preempt_queue_prio", "preempt_prio", "preempt_order", "preempt_sort"] {
        c.qmgr(&format!("unset sched {name}"));
    }
    let printed = c.run("qmgr", &["-c", "p sched"]).ok().stdout;
    assert!(printed.contains("set sched preempt_queue_prio = 150\n"), "{printed}");
    assert!(printed.contains("set sched preempt_prio = \"express_queue, normal_jobs\"\n"), "{printed}");
}

fn raw_request(stream: &mut UnixStream, frame: &serde_json::Value) -> Reply {
    let payload = serde_json::to_vec(frame).expect("json");
    let len = u32::try_from(payload.len()).expect("len");
    stream.write_all(&len.to_be_bytes()).expect("write len");
    stream.write_all(&payload).expect("write payload");
    read_frame(stream, MAX_REPLY_FRAME_LEN).expect("read reply").expect("a reply")
}

#[test]
fn preempt_jobs_is_for_managers_and_answers_every_id_of_any_list() {
    let c = Cluster::with_moms(1, 2);
    let running = c.qsub(&["--", "/bin/sleep", "300"]);
    c.wait_job_state(&running, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(&running, "session_id").is_some());
    let queued = c.qsub(&["-h", "--", "/bin/true"]);
    // The scheduler would resume the suspended job at once, its room being free.
    c.qmgr("set server scheduling = False");

    // An ordinary user: OpenPBS's Unauthorized Request, nothing preempted.
    let mut nobody = c.raw_connection(true);
    let frame = serde_json::json!({"id": 1, "request": {"kind": "PreemptJobs", "ids": [running.clone()]}});
    let reply = raw_request(&mut nobody, &frame);
    assert_eq!((reply.code, reply.message.as_str()), (15007, "Unauthorized Request "));
    assert_eq!(c.job_attr(&running, "job_state").as_deref(), Some("R"));

    // A manager: unknown, queued, repeated, ranges and 100,000 ids each answered `0`, and
    // the running job suspended by the default order's first method, once.
    let mut ids = vec![
        "99999.nowhere".to_string(),
        queued.clone(),
        "1[1-5]".to_string(),
        "not an id".to_string(),
        running.clone(),
        running.clone(),
    ];
    ids.extend((0..100_000).map(|i| format!("{}", 500_000 + i)));
    let started = std::time::Instant::now();
    let answer = c.client().preempt_jobs(&ids).expect("preempt_jobs");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(answer.len(), ids.len());
    assert!(answer.iter().zip(&ids).all(|((got, _), asked)| got == asked));
    let methods: String = answer.iter().take(6).map(|(_, m)| *m).collect();
    assert_eq!(methods, "0000S0");
    assert!(answer.iter().skip(6).all(|(_, m)| *m == '0'));
    assert_eq!(c.job_attr(&running, "job_state").as_deref(), Some("S"));
    assert_eq!(c.job_attr(&running, "substate").as_deref(), Some("45"));
}

#[test]
fn a_job_that_cannot_be_suspended_is_requeued_and_one_not_rerunnable_is_not() {
    let c = Cluster::with_moms(1, 2);
    c.qmgr("set sched preempt_order=R");
    let rerunnable = c.qsub(&["--", "/bin/sleep", "300"]);
    let not_rerunnable = c.qsub(&["-r", "n", "--", "/bin/sleep", "300"]);
    for id in [&rerunnable, &not_rerunnable] {
        c.wait_job_state(id, "R", JOB_TIMEOUT);
        pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(id, "session_id").is_some());
    }
    // Scheduling off, so the requeued job stays queued to be looked at.
    c.qmgr("set server scheduling = False");
    let answer = c.client().preempt_jobs(&[rerunnable.clone(), not_rerunnable.clone()]).expect("preempt_jobs");
    assert_eq!(answer, vec![(rerunnable.clone(), 'R'), (not_rerunnable.clone(), '0')]);
    assert_eq!(c.job_attr(&rerunnable, "job_state").as_deref(), Some("Q"));
    assert_eq!(c.job_attr(&not_rerunnable, "job_state").as_deref(), Some("R"));
    pbs_e2e::wait_until("the failed requeue's log line", JOB_TIMEOUT, || {
        c.logs().contains(&format!("{not_rerunnable};preemption method requeue failed for job (15038)"))
    });
}

#[test]
fn a_suspension_the_mom_does_not_answer_falls_through_to_requeue() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("set sched preempt_order=SR");
    let id = c.qsub(&["--", "/bin/sleep", "300"]);
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.qmgr("set server scheduling = False");
    // A mom that says nothing for the suspension's round: its deadline fails it, the
    // requeue is tried next and answered by the job's end once the mom runs again.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(c.mom_pid("n1").expect("mom")).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("stop the mom");
    let client = std::thread::spawn({
        let mut client = c.client();
        let ids = vec![id.clone()];
        move || client.preempt_jobs(&ids).expect("preempt_jobs")
    });
    pbs_e2e::wait_until("the suspension's deadline", JOB_TIMEOUT, || {
        c.logs().contains("preemption method suspend failed for job (15070)")
    });
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).expect("continue the mom");
    let answer = client.join().expect("client");
    assert_eq!(answer, vec![(id.clone(), 'R')]);
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
}

#[test]
fn an_express_job_preempts_a_normal_job_by_suspension_which_resumes_after() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("create queue express queue_type=execution,Priority=200,enabled=True,started=True");
    let normal = c.qsub(&["--", "/bin/sleep", "300"]);
    c.wait_job_state(&normal, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(&normal, "session_id").is_some());
    let express = c.qsub(&["-q", "express", "--", "/bin/sleep", "2"]);
    c.wait_job_state(&express, "R", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&normal, "job_state").as_deref(), Some("S"));
    let logs = c.logs();
    assert!(logs.contains(&format!("{express};Employing preemption to try and run high priority job.")), "{logs}");
    assert!(logs.contains(&format!("{normal};Job preempted by suspension")));
    // The express job ends: the suspended job takes its cpu back.
    c.wait_job_state(&express, "F", JOB_TIMEOUT);
    c.wait_job_state(&normal, "R", JOB_TIMEOUT);
    c.run("qdel", &[&normal]).ok();
}

#[test]
fn twenty_jobs_on_four_moms_are_preempted_by_one_request() {
    let c = Cluster::with_moms(4, 5);
    c.qmgr("create queue express queue_type=execution,Priority=200,enabled=True,started=True");
    let mut normal = Vec::new();
    for _ in 0..20 {
        normal.push(c.qsub(&["--", "/bin/sleep", "300"]));
    }
    for id in &normal {
        c.wait_job_state(id, "R", JOB_TIMEOUT);
        pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(id, "session_id").is_some());
    }
    let big = c.qsub(&["-q", "express", "-l", "select=4:ncpus=5", "--", "/bin/sleep", "300"]);
    c.wait_job_state(&big, "R", JOB_TIMEOUT);
    for id in &normal {
        assert_eq!(c.job_attr(id, "job_state").as_deref(), Some("S"), "{id}");
    }
    assert_eq!(c.logs().matches("Sending one PreemptJobs request").count(), 1);
}

#[test]
fn preemption_settings_in_sched_config_are_logged_and_ignored() {
    let c = Cluster::with_moms_and_sched_config(1, 1, Some("preempt_order: \"R\"\n"));
    pbs_e2e::wait_until("the warning", JOB_TIMEOUT, || {
        c.logs().contains("Obsolete config name preempt_order, instead use nothing - set via qmgr")
    });
}
