//! Bounded work per request: subjob ranges are resolved against the indices an array has,
//! never by walking the range asked for; index sets stay runs; attribute values and
//! requests have size limits with a PBSE reply.

use std::io::Read;
use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, Out};

/// Longer than any of these requests takes on a loaded machine, far shorter than walking
/// ten billion indices.
const DEADLINE: Duration = Duration::from_secs(10);

fn seq(id: &str) -> &str {
    id.split('[').next().unwrap_or(id)
}

/// Runs a command as root and fails the test if it has not exited within `DEADLINE`.
fn run_within(c: &Cluster, name: &str, args: &[&str]) -> Out {
    let mut child = c.spawn(name, args);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for command") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} {args:?} took more than {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.take().expect("stdout").read_to_string(&mut stdout).expect("read stdout");
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("read stderr");
    Out { stdout, stderr, code: status.code().unwrap_or(-1) }
}

#[test]
fn huge_subjob_ranges_answer_at_once() {
    let c = Cluster::start();
    let id = c.run_as_nobody("qsub", &["-h", "-J", "0-9", "--", "/bin/true"]).ok().line().to_string();
    let n = seq(&id);
    let server = c.server_name();
    let huge = format!("{n}[0-9999999999]");

    // qstat: OpenPBS stops at the first index the array does not have.
    let out = run_within(&c, "qstat", &[&huge]);
    assert_eq!((out.stderr.as_str(), out.code), (format!("qstat: Unknown Job Id {huge}.{server}\n").as_str(), 153));
    assert_eq!(out.stdout, "");
    let out = run_within(&c, "qstat", &["-f", &format!("{n}[2-9999999999:3]")]);
    assert_eq!(out.code, 153, "{out:?}");
    // A range inside the array lists its subjobs.
    let out = run_within(&c, "qstat", &[&format!("{n}[7-9]")]).ok();
    let listed: Vec<&str> = out.stdout.lines().skip(2).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(listed, vec![format!("{n}[7].{server}"), format!("{n}[8].{server}"), format!("{n}[9].{server}")]);

    // qsig and qrerun act on the range's running subjobs: there are none.
    for (cmd, args) in [("qsig", vec!["-s", "USR1"]), ("qrerun", vec![])] {
        let mut args = args;
        args.push(&huge);
        let out = run_within(&c, cmd, &args);
        assert_eq!(
            (out.stderr.as_str(), out.code),
            (format!("{cmd}: Request invalid for state of job {huge}.{server}\n").as_str(), 168),
            "{cmd}"
        );
    }

    // qdel: a range starting past the array's last index names nothing.
    let past = format!("{n}[10-9999999999]");
    let out = run_within(&c, "qdel", &[&past]);
    assert_eq!((out.stderr.as_str(), out.code), (format!("qdel: Unknown Job Id {past}.{server}\n").as_str(), 153));
    // One starting inside it deletes what the array has from there on.
    run_within(&c, "qdel", &[&format!("{n}[4-9999999999:2]")]).ok();
    assert_eq!(c.job_attr(&id, "array_indices_remaining").as_deref(), Some("0-3,5-9:2"));
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some("Queued:7 Running:0 Exiting:0 Expired:3"));
    run_within(&c, "qdel", &[&huge]).ok();
    let out = run_within(&c, "qstat", &[&id]);
    assert_eq!(out.code, 153, "the array is gone once every subjob is deleted: {out:?}");
}

#[test]
fn array_indices_submitted_cannot_be_altered() {
    let c = Cluster::start();
    let id = c.run_as_nobody("qsub", &["-h", "-J", "1-3", "--", "/bin/true"]).ok().line().to_string();
    for (who, out) in [
        ("owner", c.run_as_nobody("qalter", &["-W", "array_indices_submitted=0-9999999999", &id])),
        ("manager", c.run("qalter", &["-W", "array_indices_submitted=1-5", &id])),
    ] {
        assert_eq!(
            (out.stderr.as_str(), out.code),
            (
                format!(
                    "qalter: Cannot set attribute, read only or insufficient permission  array_indices_submitted {id}\n"
                )
                .as_str(),
                155
            ),
            "{who}"
        );
    }
    assert_eq!(c.job_attr(&id, "array_indices_submitted").as_deref(), Some("1-3"));
    let out = run_within(&c, "qstat", &["-t", &id]).ok();
    assert_eq!(out.stdout.lines().count(), 2 + 4, "{}", out.stdout);
}

mod raw {
    //! Raw frames on the Unix socket, past the commands' own checks.

    use std::io::Write;
    use std::os::unix::net::UnixStream;

    use pbs_proto::Reply;
    use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame};

    pub(super) fn request(stream: &mut UnixStream, payload: &[u8]) -> Reply {
        let len = u32::try_from(payload.len()).expect("len");
        stream.write_all(&len.to_be_bytes()).expect("write len");
        stream.write_all(payload).expect("write payload");
        read_frame(stream, MAX_REPLY_FRAME_LEN).expect("read reply").expect("a reply, not EOF")
    }
}

fn queue_job_frame(id: u64, attrs: &[(&str, String)]) -> Vec<u8> {
    let attrs: Vec<serde_json::Value> = attrs.iter().map(|(n, v)| serde_json::json!([n, v])).collect();
    serde_json::to_vec(&serde_json::json!({
        "id": id,
        "request": {"kind": "QueueJob", "attrs": attrs, "script": "#!/bin/sh\ntrue\n", "destination": null}
    }))
    .expect("json")
}

#[test]
fn oversized_values_are_refused_with_badatval() {
    let c = Cluster::start();
    let mut stream = c.raw_connection(true);
    let held = ("Hold_Types", "u".to_string());

    // 8 MiB of environment in one value, sent as qsub -v would send it.
    let env = format!("BIG={}", "x".repeat(8 << 20));
    let r = raw::request(&mut stream, &queue_job_frame(1, &[held.clone(), ("Variable_List", env)]));
    assert_eq!((r.id, r.code, r.message.as_str()), (1, 15014, "Illegal attribute or resource value Variable_List"));
    // 2 MiB in an attribute no job fills that much.
    let r = raw::request(&mut stream, &queue_job_frame(2, &[held.clone(), ("Account_Name", "a".repeat(2 << 20))]));
    assert_eq!((r.id, r.code, r.message.as_str()), (2, 15014, "Illegal attribute or resource value Account_Name"));
    // OpenPBS's own limit on a job name.
    let r = raw::request(&mut stream, &queue_job_frame(3, &[held.clone(), ("Job_Name", "n".repeat(231))]));
    assert_eq!((r.id, r.code, r.message.as_str()), (3, 15014, "Illegal attribute or resource value Job_Name"));
    // Values each within their limit, together more than a job may hold.
    let many: Vec<(&str, String)> =
        ["Account_Name", "Mail_Users", "project", "depend", "stagein", "stageout", "sandbox"]
            .iter()
            .map(|name| (*name, "v".repeat(1 << 20)))
            .chain([("Variable_List", format!("A={}", "x".repeat(3 << 20)))])
            .collect();
    let r = raw::request(&mut stream, &queue_job_frame(4, &many));
    assert_eq!(r.code, 15014, "{}", r.message);
    // More attributes in one request than any command sends.
    let names: Vec<(&str, String)> = (0..5000).map(|_| ("Priority", "1".to_string())).collect();
    let r = raw::request(&mut stream, &queue_job_frame(5, &names));
    assert_eq!((r.id, r.code, r.message.as_str()), (5, 15004, "Invalid request"));

    // Nothing was queued; a job within the limits still is, and cannot be grown past them.
    assert_eq!(c.run("qselect", &[]).ok().stdout, "");
    let env = format!("BIG={}", "x".repeat(1 << 20));
    let r = raw::request(&mut stream, &queue_job_frame(6, &[held, ("Variable_List", env)]));
    assert_eq!(r.code, 0, "{r:?}");
    let id = c.run("qselect", &[]).ok().line().to_string();
    let alter = serde_json::json!({"id": 7, "request": {"kind": "ModifyJob", "ids": [id],
        "attrs": [["Account_Name", "a".repeat(2 << 20)]]}});
    let r = raw::request(&mut stream, &serde_json::to_vec(&alter).expect("json"));
    assert_eq!((r.code, r.message.as_str()), (15014, "Illegal attribute or resource value Account_Name"));
    assert_eq!(c.job_attr(&id, "Account_Name"), None);

    // qmgr (reading its command from stdin: one argument may not be that long) too.
    let command = format!("set server comment = {}\n", "c".repeat(1 << 20 | 1));
    let out = c.run_with_stdin("qmgr", &[], &command, false);
    assert!(out.stderr.contains("Illegal attribute or resource value comment"), "{out:?}");
    assert_eq!(c.server_attr("comment"), None);
    let out = c.run("qmgr", &["-c", "create queue sixteen_letters_"]);
    assert!(out.stderr.ends_with("qmgr: Error (15028) returned from server\n"), "{out:?}");
}

/// One frame naming a big array's whole range as many times as a request may name jobs:
/// the repeats are one id, and what it costs is what the array runs in that range, not the
/// range's ten thousand indices; a frame naming it more often is refused before any is
/// looked at.
#[test]
fn a_frame_repeating_a_range_costs_its_answer() {
    let c = Cluster::start();
    let id = c.run_as_nobody("qsub", &["-h", "-J", "0-9999", "--", "/bin/true"]).ok().line().to_string();
    let range = format!("{}[0-9999]", seq(&id));
    let ids = vec![range.as_str(); pbs_proto::MAX_REQUEST_IDS];
    let mut stream = c.raw_connection(false);
    let started = Instant::now();
    let frame = serde_json::json!({"id": 9, "request": {"kind": "SignalJob", "ids": ids, "signal": "USR1"}});
    let r = raw::request(&mut stream, &serde_json::to_vec(&frame).expect("json"));
    assert!(started.elapsed() < DEADLINE, "took {:?}", started.elapsed());
    assert_eq!((r.id, r.code), (9, 15016), "{}", r.message);
    let pbs_proto::ReplyBody::PerId(errors) = r.body else { panic!("per-id reply expected: {:?}", r.body) };
    assert_eq!(errors.len(), pbs_proto::MAX_REQUEST_IDS);
    let ids = vec![range.as_str(); 100_000];
    let frame = serde_json::json!({"id": 10, "request": {"kind": "SignalJob", "ids": ids, "signal": "USR1"}});
    let r = raw::request(&mut stream, &serde_json::to_vec(&frame).expect("json"));
    assert_eq!((r.id, r.code), (10, 15004), "{}", r.message);
    // The server is free for everyone else at once.
    assert_eq!(run_within(&c, "qstat", &[&id]).ok().stdout.lines().count(), 3);
}

#[test]
fn max_array_size_is_enforced_at_submission_and_set_by_qmgr() {
    let c = Cluster::start();
    let refused = "qsub: Array job exceeds server or queue size limit\n";
    let qsub = |range: &str| c.run_as_nobody("qsub", &["-h", "-J", range, "--", "/bin/true"]);
    let out = qsub("0-10000");
    assert_eq!((out.stderr.as_str(), out.code), (refused, 3), "the default is 10000");
    qsub("0-9999").ok();
    c.qmgr("set server max_array_size = 5");
    let out = qsub("0-5");
    assert_eq!((out.stderr.as_str(), out.code), (refused, 3));
    qsub("0-4").ok();
    c.qmgr("unset server max_array_size");
    c.qmgr("set queue workq max_array_size = 3");
    let out = qsub("1-4");
    assert_eq!((out.stderr.as_str(), out.code), (refused, 3));
    qsub("1-3").ok();
}

/// A manager may allow ten billion subjobs: submitting, listing, deleting some and
/// restarting cost the array's runs and the answer, never its ten billion indices.
#[test]
fn a_ten_billion_subjob_array_survives_a_restart_without_expanding() {
    let mut c = Cluster::start();
    c.qmgr("set server max_array_size = 10000000000");
    let id = c.run_as_nobody("qsub", &["-h", "-J", "0-9999999999", "--", "/bin/true"]).ok().line().to_string();
    let n = seq(&id).to_string();
    // Deleting costs the subjobs deleted: here 47 of them, in the middle of one run.
    run_within(&c, "qdel", &[&format!("{n}[5-97:2]")]).ok();
    let remaining = "0-4,6-98:2,99-9999999999";
    let counts = "Queued:9999999953 Running:0 Exiting:0 Expired:47";
    assert_eq!(c.job_attr(&id, "array_indices_remaining").as_deref(), Some(remaining));
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some(counts));
    c.kill9();
    let started = Instant::now();
    c.start_server();
    assert!(started.elapsed() < DEADLINE, "recovery took {:?}", started.elapsed());
    assert_eq!(c.job_attr(&id, "array_indices_remaining").as_deref(), Some(remaining));
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some(counts));
    let out = run_within(&c, "qstat", &[&format!("{n}[9999999990-9999999998:4]")]).ok();
    assert_eq!(out.stdout.lines().count(), 2 + 3, "{}", out.stdout);
    assert!(out.stdout.lines().all(|l| !l.contains(" X ")), "{}", out.stdout);
    // qselect -T looks at the subjobs that could match: here none runs, and the queued
    // ones share their array's name.
    assert_eq!(run_within(&c, "qselect", &["-T", "-s", "R"]).ok().stdout, "");
    assert_eq!(run_within(&c, "qselect", &["-T", "-N", "other"]).ok().stdout, "");
    // qrun names one subjob: a range meeting the array in more is an invalid request
    // (qrun exits 2 on any server error, as OpenPBS's does).
    let huge = format!("{n}[0-9999999999]");
    let out = run_within(&c, "qrun", &[&huge]);
    assert_eq!(
        (out.stderr.as_str(), out.code),
        (format!("qrun: Invalid request {huge}.{}\n", c.server_name()).as_str(), 2)
    );
    // Deleted subjobs are listed as expired.
    let out = run_within(&c, "qstat", &[&format!("{n}[5-9]")]).ok();
    let states: Vec<&str> = out.stdout.lines().skip(2).filter_map(|l| l.split_whitespace().nth(4)).collect();
    assert_eq!(states, vec!["X", "Q", "X", "Q", "X"], "{}", out.stdout);
}
