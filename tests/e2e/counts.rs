//! Counts and repeats a user writes never size the server's or the scheduler's work: a
//! count inside a job's request is held to what the nodes have, a sum or a counter never
//! wraps, a request naming one job many times does the work once, a request may name only
//! so many jobs, many qselect criteria never hold the state for long, and a malformed frame
//! is never built into a tree. Each attack is made as an ordinary user would make it.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, wait_until};
use pbs_proto::Reply;
use pbs_proto::ReplyBody;
use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// The server's peak resident memory so far (`VmHWM`), in KiB.
fn peak_kib(c: &Cluster) -> u64 {
    let pid = c.server_pid().expect("server pid");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("server status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

fn connect(c: &Cluster, as_nobody: bool) -> UnixStream {
    c.raw_connection(as_nobody)
}

fn request(stream: &mut UnixStream, frame: &serde_json::Value) -> Reply {
    let payload = serde_json::to_vec(frame).expect("json");
    send_raw(stream, &payload);
    read_reply(stream)
}

fn send_raw(stream: &mut UnixStream, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("len");
    stream.write_all(&len.to_be_bytes()).expect("write len");
    stream.write_all(payload).expect("write payload");
}

/// A reply, its parts gathered.
fn read_reply(stream: &mut UnixStream) -> Reply {
    let mut reply: Reply = read_frame(stream, MAX_REPLY_FRAME_LEN).expect("read reply").expect("a reply");
    while reply.more {
        let part: Reply = read_frame(stream, MAX_REPLY_FRAME_LEN).expect("read part").expect("a part");
        if let (ReplyBody::Ids(ids), ReplyBody::Ids(more)) = (&mut reply.body, part.body) {
            ids.extend(more);
        }
        reply.more = part.more;
    }
    reply
}

fn wait_comment(c: &Cluster, id: &str, expected: &str) {
    wait_until(&format!("{id}'s comment {expected:?}"), JOB_TIMEOUT, || {
        c.job_attr(id, "comment").as_deref() == Some(expected)
    });
}

/// `mpiprocs=2000000000` once made the server build two billion node-file lines under its
/// lock at the run (and crash-loop, since the run was never committed); four billion
/// chunks of `ncpus=0` made the scheduler allocate 128 GB at every cycle. Now both can
/// never run, the scheduler says why, a qrun of either is refused at once, and everyone
/// else's jobs run.
#[test]
fn counts_inside_a_request_are_held_to_what_the_nodes_have() {
    let c = Cluster::with_moms(1, 2);
    let procs = c.run_as_nobody("qsub", &["-l", "select=1:ncpus=1:mpiprocs=2000000000", "--", "/bin/true"]);
    let procs = procs.ok().line().to_string();
    let chunks =
        c.run_as_nobody("qsub", &["-l", "select=4000000000:ncpus=0", "--", "/bin/true"]).ok().line().to_string();
    // Two cpus and one vnode: three slots.
    wait_comment(&c, &procs, "Can Never Run: Insufficient amount of resource: mpiprocs (R: 2000000000 A: 3 T: 3)");
    wait_comment(&c, &chunks, "Can Never Run: Not enough total nodes available");
    assert_eq!(c.job_attr(&chunks, "Resource_List.nodect").as_deref(), Some("4000000000"));
    for id in [&procs, &chunks] {
        let started = Instant::now();
        let out = c.run("qrun", &["-H", "n1", id]);
        assert_eq!(
            (out.stderr.as_str(), out.code),
            (format!("qrun: Resource temporarily unavailable {id}\n").as_str(), 2)
        );
        assert!(started.elapsed() < Duration::from_secs(5), "qrun took {:?}", started.elapsed());
        assert_eq!(c.job_attr(id, "job_state").as_deref(), Some("Q"));
    }
    // A job within what the node has still gets a node file of one line per process.
    let fine = c
        .run_with_stdin(
            "qsub",
            &["-l", "select=1:ncpus=1:mpiprocs=3", "-o", "/dev/null", "-e", "/dev/null"],
            "test $(wc -l < $PBS_NODEFILE) = 3\n",
            false,
        )
        .ok()
        .line()
        .to_string();
    c.wait_job_state(&fine, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&fine, "Exit_status").as_deref(), Some("0"), "{}", c.logs());
    c.run("qdel", &[&procs, &chunks]).ok();
}

/// A summed `mem` that would wrap once passed a queue's `resources_max.mem` as `0b`, and a
/// run_count at the top of its range overflowed at the next start (a panic under the lock
/// in a debug build).
#[test]
fn sums_and_counters_a_user_writes_never_wrap() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("set queue workq resources_max.mem = 1gb");
    // Each chunk's 8192pb is 2^63 bytes: two of them wrap a 64-bit sum to 0.
    let out = c.run_as_nobody("qsub", &["-l", "select=2:mem=8192pb", "--", "/bin/true"]);
    assert_eq!(out.stderr, "qsub: Illegal attribute or resource value Resource_List.select\n", "{out:?}");
    assert_ne!(out.code, 0);
    let held = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    let out = c.run_as_nobody("qalter", &["-l", "select=2:mem=8192pb", &held]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("Illegal attribute or resource value"), "{out:?}");
    assert_eq!(c.job_attr(&held, "Resource_List.select").as_deref(), Some("1:ncpus=1"));
    let id = c.qsub(&["-W", "run_count=4294967295", "--", "/bin/true"]);
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "run_count").as_deref(), Some("4294967295"));
    // The server is still the one that started.
    assert_eq!(c.run("qstat", &["-B"]).code, 0);
}

/// One job named four thousand times in one HoldJob, under three spellings: once each
/// repetition kept a copy of the job's record (here 1 MiB of environment) until the commit.
#[test]
fn a_request_naming_one_job_many_times_does_the_work_once() {
    let c = Cluster::start();
    let mut nobody = connect(&c, true);
    let env = format!("BIG={}", "x".repeat(1 << 20));
    let submit = serde_json::json!({"id": 1, "request": {"kind": "QueueJob",
        "attrs": [["Hold_Types", "u"], ["Variable_List", env]], "script": "true\n", "destination": null}});
    let r = request(&mut nobody, &submit);
    let ReplyBody::JobId(id) = r.body else { panic!("no job id: {r:?}") };
    let short = id.split('.').next().expect("seq").to_string();
    let spellings = [id.clone(), short.clone(), format!("{short}[]")];
    let ids: Vec<&String> = spellings.iter().cycle().take(pbs_proto::MAX_REQUEST_IDS).collect();
    let before = peak_kib(&c);
    let started = Instant::now();
    let hold = serde_json::json!({"id": 2, "request": {"kind": "HoldJob", "ids": ids, "hold_types": "u"}});
    let r = request(&mut nobody, &hold);
    assert_eq!(r.code, 0, "{r:?}");
    let grown = peak_kib(&c).saturating_sub(before);
    assert!(grown < 256 * 1024, "the server grew by {grown} KiB for one job named {} times", ids.len());
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    // Unknown ids repeated: an answer for each, in order.
    let unknown = ["99999", "99998", "99999"];
    let del = serde_json::json!({"id": 3, "request": {"kind": "DeleteJob", "ids": unknown,
        "force": false, "purge_history": false}});
    let r = request(&mut nobody, &del);
    let ReplyBody::PerId(errors) = r.body else { panic!("per-id reply expected: {r:?}") };
    let answered: Vec<(&str, u32)> = errors.iter().map(|e| (e.id.as_str(), e.code)).collect();
    assert_eq!(answered, vec![("99999", 15001), ("99998", 15001), ("99999", 15001)]);
}

/// A request may name at most `MAX_REQUEST_IDS` jobs: more is refused before any is looked
/// at, and the commands send a longer list in several requests.
#[test]
fn a_request_names_a_bounded_number_of_jobs_and_the_commands_split_longer_lists() {
    let c = Cluster::start();
    let id = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    let mut nobody = connect(&c, true);
    let too_many: Vec<String> = (0..=pbs_proto::MAX_REQUEST_IDS).map(|i| format!("{}", 500_000 + i)).collect();
    let frame = serde_json::json!({"id": 1, "request": {"kind": "DeleteJob", "ids": too_many,
        "force": false, "purge_history": false}});
    let r = request(&mut nobody, &frame);
    assert_eq!((r.code, r.message.as_str()), (15004, "Invalid request"));
    // qrls of 5000 ids, the last one real: every unknown one is reported, the real one
    // released.
    let server = c.server_name();
    let mut args: Vec<String> = (0..4999).map(|i| format!("{}", 500_000 + i)).collect();
    args.push(id.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = c.run_as_nobody("qrls", &args);
    assert_eq!(out.stderr.lines().count(), 4999, "{}", &out.stderr[..out.stderr.len().min(500)]);
    assert_eq!(out.stderr.lines().last(), Some(format!("qrls: Unknown Job Id 504998.{server}").as_str()));
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
}

/// 4096 qselect criteria over a few thousand jobs once held the state lock for seconds.
/// The jobs are now walked a few at a time: other requests are answered meanwhile.
#[test]
fn many_qselect_criteria_never_hold_the_state_for_long() {
    let c = Cluster::start();
    let mut submitter = connect(&c, true);
    for i in 0..1500 {
        let submit = serde_json::json!({"id": i, "request": {"kind": "QueueJob",
            "attrs": [["Hold_Types", "u"]], "script": "true\n", "destination": null}});
        assert_eq!(request(&mut submitter, &submit).code, 0);
    }
    let mut root = connect(&c, false);
    // The most criteria a request may carry (4096).
    let mut criteria: Vec<serde_json::Value> =
        (1..4096).map(|i| serde_json::json!({"attr": "Priority", "op": "ne", "value": i.to_string()})).collect();
    criteria.push(serde_json::json!({"attr": "Job_Name", "op": "eq", "value": "no such name"}));
    let select = serde_json::json!({"id": 1, "request": {"kind": "SelectJobs", "criteria": criteria,
        "history": false, "subjobs": false, "arrays_only": false}});
    let mut nobody = connect(&c, true);
    let selecting = std::thread::spawn(move || {
        let started = Instant::now();
        let r = request(&mut nobody, &select);
        (r, started.elapsed())
    });
    let status = serde_json::json!({"id": 2, "request": {"kind": "StatusServer", "attrs": []}});
    let mut slowest = Duration::ZERO;
    let mut asked = 0;
    while !selecting.is_finished() {
        let started = Instant::now();
        assert_eq!(request(&mut root, &status).code, 0);
        slowest = slowest.max(started.elapsed());
        asked += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let (r, took) = selecting.join().expect("selecting thread");
    assert_eq!(r.code, 0, "{r:?}");
    assert!(matches!(&r.body, ReplyBody::Ids(ids) if ids.is_empty()), "{r:?}");
    // The attack itself takes a while: about six million criterion tests.
    assert!(took > Duration::from_millis(300), "the selection took {took:?}: too quick to tell");
    assert!(slowest < took / 4, "a status waited {slowest:?} while the selection took {took:?}");
    assert!(asked > 3, "{asked} status requests answered while the selection took {took:?}");
}

/// A malformed frame of 15 MiB of tiny values was read into a tree of JSON values twice
/// (about 30 times its size each), once as a request and once to find its id: a frame of
/// more values than any request holds is now refused unread, and the id found without a
/// tree.
#[test]
fn a_malformed_frame_is_answered_without_building_it_into_a_tree() {
    let c = Cluster::start();
    let mut nobody = connect(&c, true);
    let mut payload = br#"{"id":5,"request":{"kind":"QueueJob","attrs":["#.to_vec();
    while payload.len() < 15 << 20 {
        payload.extend_from_slice(b"[0,0],");
    }
    payload.extend_from_slice(b"[0,0]],\"script\":\"\",\"destination\":null}}");
    let before = peak_kib(&c);
    send_raw(&mut nobody, &payload);
    let r = read_reply(&mut nobody);
    assert_eq!((r.id, r.code), (5, 15031), "{r:?}");
    let grown = peak_kib(&c).saturating_sub(before);
    assert!(grown < 128 * 1024, "the server grew by {grown} KiB for a 15 MiB frame");
}

/// One user's connections may have four of the largest frames in flight between them:
/// once a user could make the server hold 16 MiB on each of 256 connections.
#[test]
fn one_users_frames_in_flight_are_held_to_a_budget() {
    let c = Cluster::start();
    let frame_len = u32::try_from(pbs_proto::MAX_REQUEST_FRAME_LEN).expect("len");
    let start_frame = |stream: &mut UnixStream| {
        stream.write_all(&frame_len.to_be_bytes()).expect("write len");
        // A refused frame's connection may be closed before its body is written.
        let _ = stream.write_all(&vec![b' '; 1 << 20]);
    };
    // Four half-sent frames of 16 MiB take the budget...
    let mut held: Vec<UnixStream> = (0..4).map(|_| connect(&c, true)).collect();
    for stream in &mut held {
        start_frame(stream);
    }
    // ...so a fifth is refused at its header, with a reply, and its connection closed.
    let mut fifth = connect(&c, true);
    start_frame(&mut fifth);
    let r: Reply = read_frame(&mut fifth, MAX_REPLY_FRAME_LEN).expect("read").expect("a reply");
    assert_eq!(r.code, 15031, "{r:?}");
    assert!(r.message.contains("in flight"), "{r:?}");
    // Root is not held to it, and the budget comes back when the frames go.
    let mut root = connect(&c, false);
    let status = serde_json::json!({"id": 2, "request": {"kind": "StatusServer", "attrs": []}});
    assert_eq!(request(&mut root, &status).code, 0);
    drop(held);
    wait_until("the budget is given back", Duration::from_secs(10), || {
        let mut again = connect(&c, true);
        request(&mut again, &status).code == 0
    });
}

/// Answers too big for one frame: a job status comes in parts of bounded size (five jobs
/// of 4 MiB each once made one part no connection could carry, and the connection was
/// closed with no answer), and any other answer too large for a frame is an error reply.
#[test]
fn large_answers_come_in_parts_or_as_an_error() {
    let c = Cluster::start();
    let mut nobody = connect(&c, true);
    let env = format!("BIG={}", "x".repeat((4 << 20) - 16));
    for i in 0..5 {
        let submit = serde_json::json!({"id": i, "request": {"kind": "QueueJob",
            "attrs": [["Hold_Types", "u"], ["Variable_List", env]], "script": "true\n", "destination": null}});
        assert_eq!(request(&mut nobody, &submit).code, 0);
    }
    let out = c.run("qstat", &["-f"]).ok();
    assert_eq!(out.stdout.matches("Job Id: ").count(), 5);
    // Per-id errors that echo 16 MiB of ids, plus their messages, pass what a frame holds.
    let ids: Vec<String> = (0..pbs_proto::MAX_REQUEST_IDS).map(|i| format!("{i:04}{}", "z".repeat(4086))).collect();
    let frame = serde_json::json!({"id": 9, "request": {"kind": "ReleaseJob", "ids": ids, "hold_types": "u"}});
    let r = request(&mut nobody, &frame);
    assert_eq!((r.id, r.code), (9, 15010), "{}", r.message);
    assert!(r.message.starts_with("System error: the answer"), "{}", r.message);
    // The connection goes on.
    let status = serde_json::json!({"id": 10, "request": {"kind": "StatusServer", "attrs": []}});
    assert_eq!(request(&mut nobody, &status).code, 0);
}
