//! Preemption by list (seed 002): the scheduler object's preempt_* settings as OpenPBS
//! checks and prints them, the PreemptJobs request (managers and the scheduler only, one
//! answer per id, bounded), each method (suspend, the mom's checkpoint script, requeue) by
//! the band of walltime or soft_walltime used, and the scheduler preempting running jobs
//! for an express queue's job (within its `preempt_targets`, unless `preemptive_sched` is
//! off) and resuming them when room returns.

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
    // Two moms, one job each: the silent mom fails her own job's suspension only.
    let c = Cluster::with_moms(2, 1);
    c.qmgr("set sched preempt_order=SR");
    let id = running(&c, &["--", "/bin/sleep", "300"]);
    let other = running(&c, &["--", "/bin/sleep", "300"]);
    c.qmgr("set server scheduling = False");
    let host = c.job_attr(&id, "exec_host").unwrap_or_default();
    let node = host.split('/').next().unwrap_or_default().to_string();
    assert_ne!(c.job_attr(&other, "exec_host"), Some(host.clone()));
    // A mom that says nothing for the suspension's round: its deadline fails it, the
    // requeue is tried next and answered by the job's end once the mom runs again.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(c.mom_pid(&node).expect("mom")).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("stop the mom");
    let client = std::thread::spawn({
        let mut client = c.client();
        let ids = vec![id.clone(), other.clone()];
        move || client.preempt_jobs(&ids).expect("preempt_jobs")
    });
    // The answering mom's job is suspended within the round, long before its deadline.
    c.wait_job_state(&other, "S", JOB_TIMEOUT);
    pbs_e2e::wait_until("the suspension's deadline", JOB_TIMEOUT, || {
        c.logs().contains(&format!("{id};preemption method suspend failed for job (15070)"))
    });
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).expect("continue the mom");
    let answer = client.join().expect("client");
    assert_eq!(answer, vec![(id.clone(), 'R'), (other.clone(), 'S')]);
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
    assert!(!c.logs().contains(&format!("{other};preemption method suspend failed")));
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
    c.wait_logged(&format!("{express};Employing preemption to try and run high priority job."));
    c.wait_logged(&format!("{normal};Job preempted by suspension"));
    // A suspension leaves the run's comment; the accounting says `z` with the usage.
    let comment = c.job_attr(&normal, "comment").unwrap_or_default();
    assert!(comment.starts_with("Job run at ") && comment.ends_with(" on (n1:ncpus=1)"), "{comment}");
    // The express job ends: the suspended job takes its cpu back, with a new run comment
    // and an `r` record, as OpenPBS's resume writes them.
    c.wait_job_state(&express, "F", JOB_TIMEOUT);
    c.wait_job_state(&normal, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the z and r records", JOB_TIMEOUT, || c.accounting_kinds(&normal).contains('r'));
    let records = c.accounting_records(&normal);
    let (_, z_text) = records.iter().find(|(kind, _)| *kind == 'z').expect("a z record");
    assert!(z_text.starts_with("resources_used.") && z_text.contains(" resources_used.walltime="), "{z_text}");
    assert!(records.contains(&('r', String::new())), "{records:?}");
    let comment = c.job_attr(&normal, "comment").unwrap_or_default();
    assert!(comment.starts_with("Job run at ") && comment.ends_with(" on (n1:ncpus=1)"), "{comment}");
    c.run("qdel", &[&normal]).ok();
}

/// OpenPBS's test_max_run_subjobs_qrun: a qrun of a subjob over its array's
/// `max_run_subjobs` on a full node suspends the running normal job (not the array's
/// other subjobs, started later) and runs the subjob; the qrun answers once it runs.
#[test]
fn qrun_of_a_subjob_over_its_limit_on_a_full_node_suspends_the_normal_job() {
    let c = Cluster::with_moms(1, 8);
    let normal = running(&c, &["-l", "select=ncpus=2", "--", "/bin/sleep", "300"]);
    let array = c.qsub(&["-J", "1-20%3", "-l", "select=ncpus=2", "--", "/bin/sleep", "300"]);
    let seq = array.split('[').next().unwrap_or_default().to_string();
    let sub = |i: u32| format!("{seq}[{i}].{}", c.server_name());
    for i in 1..=3 {
        c.wait_job_state(&sub(i), "R", JOB_TIMEOUT);
        pbs_e2e::wait_until("the subjob's session", JOB_TIMEOUT, || c.job_attr(&sub(i), "session_id").is_some());
    }
    assert_eq!(c.job_attr(&sub(4), "job_state").as_deref(), Some("Q"));
    // Without preemption a qrun here answered that resources are unavailable.
    let out = c.run("qrun", &[&sub(4)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(c.job_attr(&sub(4), "job_state").as_deref(), Some("R"));
    assert_eq!(c.job_attr(&normal, "job_state").as_deref(), Some("S"));
    for i in 1..=3 {
        assert_eq!(c.job_attr(&sub(i), "job_state").as_deref(), Some("R"), "subjob {i}");
    }
    c.wait_logged(&format!("{};Employing preemption to try and run high priority job.", sub(4)));
    c.wait_logged(&format!("{normal};Job preempted by suspension"));
    c.run("qdel", &[&array, &normal]).ok();
}

/// A server-wide `ncpus` cap: the express job is short of the server's cpus, not of the
/// node's, and preempts the normal job holding them.
#[test]
fn an_express_job_short_of_the_servers_ncpus_preempts() {
    let c = Cluster::with_moms(1, 8);
    c.qmgr("set server resources_available.ncpus = 2");
    c.qmgr("create queue express queue_type=execution,Priority=200,enabled=True,started=True");
    let normal = running(&c, &["-l", "select=ncpus=2", "--", "/bin/sleep", "300"]);
    let express = c.qsub(&["-q", "express", "-l", "select=ncpus=2", "--", "/bin/sleep", "300"]);
    c.wait_job_state(&express, "R", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&normal, "job_state").as_deref(), Some("S"), "{}", c.logs());
    c.wait_logged(&format!("{express};Employing preemption to try and run high priority job."));
    c.run("qdel", &[&express, &normal]).ok();
}

/// `preempt_prio` naming `queue_softlimits`: root's two jobs are over workq's
/// `max_run_soft` and become preemptable by a normal job of another queue; nobody's
/// jobs, within the limit, are not. One of root's is enough (the later started), and
/// root, back under the limit, ranks as normal again (not above the job preempting).
#[test]
fn a_normal_job_preempts_the_jobs_over_a_queues_soft_limit_and_not_the_others() {
    let c = Cluster::with_moms(1, 4);
    c.qmgr("set queue workq max_run_soft = \"[u:PBS_GENERIC=1]\"");
    c.qmgr("create queue workq2 queue_type=execution,enabled=True,started=True");
    c.qmgr("set sched preempt_prio = \"express_queue, normal_jobs, queue_softlimits\"");
    let sleep = ["--", "/bin/sleep", "300"];
    let by_nobody = |queue: &str| {
        let args: Vec<&str> = ["-q", queue].into_iter().chain(sleep).collect();
        let id = c.run_as_nobody("qsub", &args).ok().line().to_string();
        c.wait_job_state(&id, "R", JOB_TIMEOUT);
        pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
        id
    };
    let first = running(&c, &sleep);
    let second = running(&c, &sleep);
    let within = by_nobody("workq");
    let other_queue = by_nobody("workq2");
    c.wait_logged(&format!("{second};Over soft limits: preempt priority class queue_softlimits"));
    let args: Vec<&str> = ["-q", "workq2"].into_iter().chain(sleep).collect();
    let normal = c.run_as_nobody("qsub", &args).ok().line().to_string();
    c.wait_job_state(&normal, "R", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&second, "job_state").as_deref(), Some("S"));
    for id in [&first, &within, &other_queue] {
        assert_eq!(c.job_attr(id, "job_state").as_deref(), Some("R"), "{id}");
    }
    c.wait_logged(&format!("{second};Job preempted by suspension"));
    c.run("qdel", &[&first, &second, &within, &other_queue, &normal]).ok();
}

/// pbs_release_limited_res_suspend.py and pbs_suspend_resume_accounting.py: with
/// `restrict_res_to_release_on_suspend = ncpus` a job suspended for an express job gives
/// back its cpus and keeps its memory (the express job fits in what is left), the job and
/// its `z` record say what it released, and a resumption takes just that back.
#[test]
fn a_suspension_releases_only_the_resources_the_server_names() {
    let c = Cluster::with_moms(1, 4);
    c.qmgr("set node n1 resources_available.mem = 2gb");
    eprintln!("MEM {:?}", c.node_attr("n1", "resources_available.mem"));
    c.qmgr("create queue express queue_type=execution,Priority=200,enabled=True,started=True");
    // Names must be resources; one named cannot be deleted.
    let out = c.run("qmgr", &["-c", "set server restrict_res_to_release_on_suspend = \"ncpus,abc\""]);
    assert_eq!(out.code, 187, "{out:?}");
    assert!(out.stderr.contains("Unknown resource"), "{out:?}");
    c.qmgr("create resource foo type=long");
    c.qmgr("set server restrict_res_to_release_on_suspend = \"ncpus,foo\"");
    let out = c.run("qmgr", &["-c", "delete resource foo"]);
    assert!(out.stderr.contains("Resource busy on server"), "{out:?}");
    c.qmgr("set server restrict_res_to_release_on_suspend = ncpus");

    let low = running(&c, &["-l", "select=1:ncpus=4:mem=512mb", "--", "/bin/sleep", "300"]);
    // As OpenPBS's, a busy node's total counts only what it holds: the express job asks
    // no more memory than that.
    let high = c.qsub(&["-q", "express", "-l", "select=1:ncpus=2:mem=512mb", "--", "/bin/sleep", "300"]);
    c.wait_job_state(&high, "R", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&low, "job_state").as_deref(), Some("S"));
    assert_eq!(c.job_attr(&low, "substate").as_deref(), Some("45"));
    assert_eq!(c.job_attr(&low, "resources_released").as_deref(), Some("(n1:ncpus=4)"));
    assert_eq!(c.job_attr(&low, "resource_released_list.ncpus").as_deref(), Some("4"));
    assert_eq!(c.job_attr(&low, "resource_released_list.mem"), None);
    // The node holds the suspended job's memory and the express job's cpus and memory.
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("2"));
    assert_eq!(c.node_attr("n1", "resources_assigned.mem").as_deref(), Some("1048576kb"));
    assert_eq!(c.server_attr("resources_assigned.ncpus").as_deref(), Some("2"));
    pbs_e2e::wait_until("the z record", JOB_TIMEOUT, || c.accounting_kinds(&low).contains('z'));
    let records = c.accounting_records(&low);
    let (_, z) = records.iter().find(|(kind, _)| *kind == 'z').expect("a z record");
    assert!(z.starts_with("resources_used.") && z.ends_with(" resources_released=(n1:ncpus=4)"), "{z}");
    // The express job goes: the suspended job takes its cpus back and releases nothing.
    c.run("qdel", &[&high]).ok();
    c.wait_job_state(&low, "R", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&low, "resources_released"), None);
    assert_eq!(c.job_attr(&low, "resource_released_list.ncpus"), None);
    pbs_e2e::wait_until("the node's counts back", JOB_TIMEOUT, || {
        c.node_attr("n1", "resources_assigned.ncpus").as_deref() == Some("4")
            && c.node_attr("n1", "resources_assigned.mem").as_deref() == Some("524288kb")
    });
    c.run("qdel", &[&low]).ok();
    c.wait_job_state(&low, "F", JOB_TIMEOUT);
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("0"));
}

#[test]
fn preemptive_sched_off_in_sched_config_preempts_nothing() {
    let c = Cluster::with_moms_and_sched_config(1, 1, Some("preemptive_sched: false ALL\n"));
    c.qmgr("create queue express queue_type=execution,Priority=200,enabled=True,started=True");
    let normal = running(&c, &["--", "/bin/sleep", "300"]);
    let express = c.qsub(&["-q", "express", "--", "/bin/sleep", "300"]);
    // The scheduler has looked at the express job once it says why it does not run.
    pbs_e2e::wait_until("the express job's comment", JOB_TIMEOUT, || {
        c.job_attr(&express, "comment").is_some_and(|m| m.starts_with("Not Running"))
    });
    assert_eq!(c.job_attr(&normal, "job_state").as_deref(), Some("R"));
    assert_eq!(c.job_attr(&express, "job_state").as_deref(), Some("Q"));
    assert!(!c.logs().contains("Employing preemption"));
}

/// Every process of session `sid`: its pid, process group and state letter.
fn session_processes(sid: i64) -> Vec<(i32, i64, char)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, tail)) = stat.rsplit_once(')') else { continue };
        // state, ppid, pgrp, session
        let fields: Vec<&str> = tail.split_whitespace().take(4).collect();
        let (Some(state), Some(pgrp), Some(session)) = (
            fields.first().and_then(|s| s.chars().next()),
            fields.get(2).and_then(|s| s.parse().ok()),
            fields.get(3).and_then(|s| s.parse::<i64>().ok()),
        ) else {
            continue;
        };
        if session == sid {
            out.push((pid, pgrp, state));
        }
    }
    out
}

#[test]
fn twenty_jobs_on_four_moms_are_preempted_by_one_request() {
    let c = Cluster::with_moms(4, 5);
    c.qmgr("create queue express queue_type=execution,Priority=200,enabled=True,started=True");
    let mut normal = Vec::new();
    for i in 0..20 {
        // Some jobs run a command in a process group of its own inside the job's session
        // (`timeout` makes one): a suspension stops the whole session, as OpenPBS's.
        let job = if i % 4 == 0 { "timeout 300 sleep 300; true" } else { "exec sleep 300" };
        normal.push(c.qsub(&["--", "/bin/sh", "-c", job]));
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
    // Each mom stopped every process of each of its jobs, not only its first job's, nor
    // only the session's first process group.
    let sessions: Vec<i64> =
        normal.iter().filter_map(|id| c.job_attr(id, "session_id").and_then(|s| s.parse().ok())).collect();
    assert_eq!(sessions.len(), normal.len());
    pbs_e2e::wait_until("every process of the preempted jobs stopped", JOB_TIMEOUT, || {
        sessions.iter().all(|sid| {
            let procs = session_processes(*sid);
            !procs.is_empty() && procs.iter().all(|(_, _, state)| *state == 'T')
        })
    });
    let other_groups = sessions.iter().filter(|sid| session_processes(**sid).iter().any(|(_, pgrp, _)| pgrp != *sid));
    assert_eq!(other_groups.count(), 5, "a timeout job's command runs in a process group of its own");
}

#[test]
fn preemption_settings_in_sched_config_are_logged_and_ignored() {
    let c = Cluster::with_moms_and_sched_config(1, 1, Some("preempt_order: \"R\"\n"));
    pbs_e2e::wait_until("the warning", JOB_TIMEOUT, || {
        c.logs().contains("Obsolete config name preempt_order, instead use nothing - set via qmgr")
    });
}

/// Restarts `node`'s mom with `line` added to its pbs.conf.
fn restart_mom_with(c: &mut Cluster, node: &str, line: &str) {
    let path = c.mom_conf_path(node);
    let conf = std::fs::read_to_string(&path).expect("mom conf");
    std::fs::write(&path, format!("{conf}{line}\n")).expect("mom conf");
    c.kill_mom(node);
    c.start_mom(node);
    c.wait_node_state(node, "free");
}

fn running(c: &Cluster, args: &[&str]) -> String {
    let id = c.qsub(args);
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    id
}

/// `resources_used.walltime` of job `id` in seconds, as its mom last reported it.
fn used_secs(c: &Cluster, id: &str) -> u64 {
    let used = c.job_attr(id, "resources_used.walltime").unwrap_or_default();
    used.parse::<pbs_core::Duration>().map_or(0, |d| d.as_secs())
}

#[test]
fn the_band_follows_the_share_of_walltime_or_of_the_original_soft_walltime_used() {
    // A mom that refuses every suspension, and no checkpoint script: a job in the band
    // "SCR" is requeued (suspend and checkpoint fail first), one in "SC" or "S" is not
    // preempted, and the log says which methods were tried.
    let mut c = Cluster::with_moms(1, 8);
    restart_mom_with(&mut c, "n1", "PBS_MOM_TEST_REFUSE_SUSPEND=1");
    c.qmgr("set sched preempt_order=\"SCR 80 SC 50 S\"");
    let fresh = running(&c, &["-l", "walltime=1000", "--", "/bin/sleep", "300"]);
    let third = running(&c, &["-l", "walltime=15", "--", "/bin/sleep", "300"]);
    let most = running(&c, &["-l", "walltime=8", "--", "/bin/sleep", "300"]);
    // soft_walltime is the managers': set on held jobs, which then run. Past its original
    // soft_walltime a job has done 100%, whatever its walltime; short of it, the share is
    // of the soft_walltime.
    let past_soft = c.qsub(&["-h", "-l", "walltime=1000", "--", "/bin/sleep", "300"]);
    let short_of_soft = c.qsub(&["-h", "-l", "walltime=1000", "--", "/bin/sleep", "300"]);
    c.run("qalter", &["-l", "soft_walltime=2", &past_soft]).ok();
    c.run("qalter", &["-l", "soft_walltime=500", &short_of_soft]).ok();
    c.run("qrls", &[&past_soft, &short_of_soft]).ok();
    for id in [&past_soft, &short_of_soft] {
        c.wait_job_state(id, "R", JOB_TIMEOUT);
        pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(id, "session_id").is_some());
    }
    c.qmgr("set server scheduling = False");
    // The usage the server goes by: `most` has used 4 s or more of 8 (50%, the "S" band;
    // `third`, started before it, 26-46% of 15 s (the "SC" band), and `past_soft` is past
    // its 2 s.
    pbs_e2e::wait_until("4 s of walltime used", JOB_TIMEOUT, || {
        [&third, &most, &past_soft].iter().all(|id| used_secs(&c, id) >= 4)
    });
    let ids = vec![fresh.clone(), third.clone(), most.clone(), past_soft.clone(), short_of_soft.clone()];
    let answer = c.client().preempt_jobs(&ids).expect("preempt_jobs");
    let methods: String = answer.iter().map(|(_, m)| *m).collect();
    assert_eq!(methods, "R000R", "{answer:?}\n{}", c.logs());
    pbs_e2e::wait_until("the last log line", JOB_TIMEOUT, || {
        c.server_stderr().contains(&format!("{short_of_soft};Job preempted by requeuing"))
    });
    let logs = c.server_stderr();
    let tried = |id: &str| -> Vec<&str> {
        logs.lines()
            .filter(|l| l.contains(&format!("{id};preemption method")))
            .filter_map(|l| l.split("preemption method ").nth(1)?.split(' ').next())
            .collect()
    };
    assert_eq!(tried(&fresh), ["suspend", "checkpoint"], "{logs}");
    assert_eq!(tried(&third), ["suspend", "checkpoint"], "{logs}");
    assert_eq!(tried(&most), ["suspend"], "{logs}");
    assert_eq!(tried(&past_soft), ["suspend"], "{logs}");
    assert_eq!(tried(&short_of_soft), ["suspend", "checkpoint"], "{logs}");
    // The refusals are the mom's (PBSE_BADSTATE), the checkpoint's PBSE_NOSUP (no script).
    assert!(logs.contains(&format!("{fresh};preemption method suspend failed for job (15016)")), "{logs}");
    assert!(logs.contains(&format!("{fresh};preemption method checkpoint failed for job (15029)")), "{logs}");
    for id in [&fresh, &short_of_soft] {
        assert_eq!(c.job_attr(id, "job_state").as_deref(), Some("Q"), "{id}");
    }
    for id in [&third, &most, &past_soft] {
        assert_eq!(c.job_attr(id, "job_state").as_deref(), Some("R"), "{id}");
    }
}

/// Writes `body` as the checkpoint script of `node`'s mom and names it in mom_priv/config
/// with OpenPBS's arguments.
fn checkpoint_script(c: &Cluster, node: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let priv_dir = c.dir().join(format!("mom-{node}/mom_priv"));
    let script = priv_dir.join("checkpoint_abort.sh");
    std::fs::write(&script, body).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("mode");
    let line = "$action checkpoint_abort 10 !checkpoint_abort.sh %jobid %sid %path\n";
    std::fs::write(priv_dir.join("config"), line).expect("mom config");
    script
}

#[test]
fn checkpointing_runs_the_moms_script_and_requeues_the_job_or_falls_through() {
    let c = Cluster::with_moms(1, 2);
    c.qmgr("set sched preempt_order=CR");
    c.qmgr("set server job_history_enable = True");
    let args_file = c.dir().join("checkpoint-args");
    // The script checkpoints (here: says so) and ends the job, as a site's script does.
    checkpoint_script(&c, "n1", &format!("#!/bin/sh\necho \"$@\" >> {}\nkill -9 -$2\nexit 0\n", args_file.display()));
    let id = running(&c, &["--", "/bin/sleep", "300"]);
    let no_checkpoint = running(&c, &["-c", "n", "--", "/bin/sleep", "300"]);
    let sid = c.job_attr(&id, "session_id").expect("session");
    c.qmgr("set server scheduling = False");
    let answer = c.client().preempt_jobs(&[id.clone(), no_checkpoint.clone()]).expect("preempt_jobs");
    assert_eq!(answer, vec![(id.clone(), 'C'), (no_checkpoint.clone(), 'R')], "{}", c.logs());
    // Queued again with its run counted, no comment, and no `R` record (OpenPBS writes
    // none for a checkpointed job).
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
    assert_eq!(c.job_attr(&id, "run_count").as_deref(), Some("1"));
    assert_eq!(c.job_attr(&id, "comment"), None);
    let args = std::fs::read_to_string(&args_file).expect("the script ran");
    let ck_dir = c.dir().join(format!("mom-n1/checkpoint/{id}.CK"));
    assert_eq!(args, format!("{id} {sid} {}/00000001\n", ck_dir.display()));
    assert!(ck_dir.is_dir());
    pbs_e2e::wait_until("the mom's log lines", JOB_TIMEOUT, || c.logs().contains(&format!("{id};checkpointed to ")));
    c.wait_logged(&format!(
        "{id};checkpoint_abort script {}",
        c.dir().join("mom-n1/mom_priv/checkpoint_abort.sh").display()
    ));
    c.wait_logged(&format!("{no_checkpoint};preemption method checkpoint failed for job (15029)"));
    pbs_e2e::wait_until("the requeued job's R record", JOB_TIMEOUT, || {
        c.accounting_kinds(&no_checkpoint).contains('R')
    });
    assert!(!c.accounting_kinds(&id).contains('R'), "{}", c.accounting_log());

    // A script that fails leaves the job running, and the next method is tried.
    c.run("qdel", &[&id, &no_checkpoint]).ok();
    checkpoint_script(&c, "n1", "#!/bin/sh\nexit 3\n");
    c.qmgr("set server scheduling = True");
    let failing = running(&c, &["--", "/bin/sleep", "300"]);
    c.qmgr("set server scheduling = False");
    c.qmgr("set sched preempt_order=C");
    let answer = c.client().preempt_jobs(std::slice::from_ref(&failing)).expect("preempt_jobs");
    assert_eq!(answer, vec![(failing.clone(), '0')]);
    assert_eq!(c.job_attr(&failing, "job_state").as_deref(), Some("R"));
    pbs_e2e::wait_until("the failed checkpoint's log line", JOB_TIMEOUT, || {
        c.logs().contains(&format!("{failing};preemption method checkpoint failed for job (15061)"))
    });
}

#[test]
fn preempt_targets_limit_what_a_job_preempts_and_none_preempts_nothing() {
    let c = Cluster::with_moms(1, 2);
    c.qmgr("create queue express queue_type=execution,Priority=200,enabled=True,started=True");
    c.qmgr("create queue other queue_type=execution,enabled=True,started=True");
    // Values as OpenPBS's server checks them.
    for (value, message) in [
        ("queue=nosuch", "Unknown queue"),
        ("Resource_List.nosuch=1", "Unknown resource"),
        ("abc", "Illegal attribute or resource value"),
        ("NONE,queue=other", "Illegal attribute or resource value"),
    ] {
        let out = c.run("qsub", &["-l", &format!("preempt_targets={value}"), "--", "/bin/true"]);
        assert_ne!(out.code, 0, "{value}");
        assert!(out.stderr.contains(message), "{value}: {}", out.stderr);
    }
    // `other`'s job started first; without targets the most recently started (workq's)
    // would be preempted.
    let in_other = running(&c, &["-q", "other", "--", "/bin/sleep", "300"]);
    let in_workq = running(&c, &["--", "/bin/sleep", "300"]);
    let none = c.qsub(&["-q", "express", "-l", "preempt_targets=NONE", "--", "/bin/sleep", "300"]);
    pbs_e2e::wait_until("the NONE job's cycle", JOB_TIMEOUT, || {
        c.logs().contains(&format!("{none};No preemption set specified for the job: Job will not preempt"))
    });
    assert_eq!(c.job_attr(&none, "job_state").as_deref(), Some("Q"));
    c.run("qdel", &[&none]).ok();
    let targeted = c.qsub(&["-q", "express", "-l", "preempt_targets=queue=other", "--", "/bin/sleep", "300"]);
    c.wait_job_state(&targeted, "R", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&in_other, "job_state").as_deref(), Some("S"));
    assert_eq!(c.job_attr(&in_workq, "job_state").as_deref(), Some("R"));
}
