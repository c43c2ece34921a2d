//! Requests that wait for moms' answers: qsig answers with what the mom did, a job is
//! suspended only once its mom stopped it, and a mom that does not answer in time fails
//! its own job's request, leaving the job as it was; a mom that does not know a job the
//! server is ending says so, and the server purges the job.

use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, wait_until};
use pbs_proto::mom::{FromMom, ToMom};
use pbs_proto::{HelloReply, MAX_REPLY_FRAME_LEN, Role, link};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

fn signal_mom(c: &Cluster, node: &str, signal: nix::sys::signal::Signal) {
    let pid = c.mom_pid(node).expect("the mom runs");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid"));
    nix::sys::signal::kill(pid, signal).expect("signal the mom");
}

#[test]
fn qsig_answers_with_the_moms_outcome_and_a_silent_mom_changes_nothing() {
    let c = Cluster::with_moms(1, 1);
    let id = c.qsub(&["--", "/bin/sleep", "300"]);
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the job's session has started", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    // Answered by the mom: done, and the job's state follows.
    c.run("qsig", &["-s", "suspend", &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("S"));
    c.run("qsig", &["-s", "resume", &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    // A signal whose default is to be ignored: the job runs on.
    c.run("qsig", &["-s", "WINCH", &id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));

    // A mom that does not answer: the request fails for that job once its time is up,
    // and the job is not marked suspended.
    signal_mom(&c, "n1", nix::sys::signal::Signal::SIGSTOP);
    let started = Instant::now();
    let out = c.run("qsig", &["-s", "suspend", &id]);
    signal_mom(&c, "n1", nix::sys::signal::Signal::SIGCONT);
    assert_eq!(out.stderr, format!("qsig: Server could not connect to MOM {id}\n"), "{out:?}");
    assert_ne!(out.code, 0);
    assert!(started.elapsed() >= Duration::from_secs(9), "answered after {:?}", started.elapsed());
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    // The mom, running again, carries out the suspend it was sent and answers late: the
    // request has failed, so the server has it undone and the job's session runs on.
    let sid: i32 = c.job_attr(&id, "session_id").and_then(|s| s.parse().ok()).expect("session id");
    pbs_e2e::wait_until("the late answer", JOB_TIMEOUT, || {
        c.logs().contains("answered suspend after its request had failed")
    });
    pbs_e2e::wait_until("the session runs again", JOB_TIMEOUT, || process_state(sid).is_some_and(|s| s != 'T'));
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("R"));
    c.run("qdel", &[&id]).ok();
}

/// The state letter of process `pid` (`T` when stopped).
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// A mom of the test's own, on a real authenticated link the server opened to it: it says
/// what it is told to, and answers pings.
struct FakeMom {
    stream: std::net::TcpStream,
    sealer: link::Sealer,
    opener: link::Opener,
}

impl FakeMom {
    /// Creates node `node` with its mom at a port the test listens on, and takes the link
    /// the server opens to it with the node's key.
    fn linked(c: &Cluster, node: &str) -> FakeMom {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        c.qmgr(&format!("create node {node} Mom=127.0.0.1,Port={port}"));
        let (mut stream, _) = listener.accept().expect("the server connects to its mom");
        stream.set_read_timeout(Some(JOB_TIMEOUT)).expect("timeout");
        let master = std::fs::read(c.home().join("server_priv").join("cluster_key")).expect("cluster key");
        let me = Role::Mom { node: node.into() };
        let key = pbs_proto::keys::derive(&master, &me);
        let hello: pbs_proto::Hello =
            pbs_proto::read_frame(&mut stream, MAX_REPLY_FRAME_LEN).expect("read").expect("hello");
        let (mut sealer, opener) = link::accept_blocking(&mut stream, &key, &me, &hello).expect("the server's proof");
        let welcome = HelloReply::Welcome { version: pbs_proto::PROTOCOL_VERSION, server_name: node.into() };
        link::write_sealed(&mut stream, &mut sealer, &welcome).expect("welcome");
        let mut mom = FakeMom { stream, sealer, opener };
        mom.send(&FromMom::NodeStatus {
            ncpus: 1,
            mem_kb: 1 << 20,
            arch: "linux".into(),
            host: node.into(),
            version: "fake".into(),
            jobs: Vec::new(),
        });
        mom
    }

    fn send(&mut self, frame: &FromMom) {
        link::write_sealed(&mut self.stream, &mut self.sealer, frame).expect("send to the server");
    }

    /// The next frame from the server that is not a ping (answered) or the hooks' set.
    fn next(&mut self) -> ToMom {
        let deadline = Instant::now() + JOB_TIMEOUT;
        loop {
            assert!(Instant::now() < deadline, "no frame but pings from the server in {JOB_TIMEOUT:?}");
            let frame: ToMom = link::read_sealed(&mut self.stream, &mut self.opener, MAX_REPLY_FRAME_LEN)
                .expect("read from the server")
                .expect("the server closed its link");
            match frame {
                ToMom::Ping => self.send(&FromMom::Pong),
                ToMom::Hooks { .. } => {}
                other => return other,
            }
        }
    }
}

/// A job the server is deleting, whose mom answers the kill with "unknown job" (a mom
/// that lost it), is purged as OpenPBS's server purges it on PBSE_UNKJOBID: finished with
/// its `E` after qdel's `D`, not left exiting for an end that will never come.
#[test]
fn a_job_its_mom_does_not_know_is_purged_when_deleted() {
    let mut c = Cluster::start();
    c.allow_root_jobs();
    c.qmgr("set server job_history_enable = True");
    let mut mom = FakeMom::linked(&c, "lost");
    c.wait_node_state("lost", "free");
    c.start_sched();
    let id = c.qsub(&["--", "/bin/sleep", "300"]);
    match mom.next() {
        ToMom::RunJob { launch } => assert_eq!(launch.job_id, id),
        other => panic!("expected the job's launch, got {other:?}"),
    }
    mom.send(&FromMom::JobStarted { job_id: id.clone(), session_id: 4242 });
    wait_until("the start confirmed", JOB_TIMEOUT, || c.job_attr(&id, "session_id").as_deref() == Some("4242"));
    c.run("qdel", &[&id]).ok();
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("E"), "its mom is asked to end it");
    match mom.next() {
        ToMom::KillJob { job_id, .. } => assert_eq!(job_id, id),
        other => panic!("expected the kill, got {other:?}"),
    }
    mom.send(&FromMom::UnknownJob { job_id: id.clone() });
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "substate").as_deref(), Some("91"), "terminated");
    wait_until("the purge logged", JOB_TIMEOUT, || c.server_stderr().contains("MOM claims no knowledge of the job"));
    // The file is written once the commit that made the records is done.
    wait_until("its records written", JOB_TIMEOUT, || c.accounting_kinds(&id) == "QSDE");
    // The node is free again: nothing waits for the lost run.
    c.wait_node_state("lost", "free");
}

/// A real mom asked to kill a job it does not hold says so, and the server, which is not
/// ending any such job, changes nothing.
#[test]
fn a_real_mom_answers_a_kill_for_a_job_it_does_not_hold() {
    let c = Cluster::with_moms(1, 1);
    let port: u16 = c.node_attr("n1", "Port").expect("n1's port").parse().expect("port");
    let master = std::fs::read(c.home().join("server_priv").join("cluster_key")).expect("cluster key");
    let n1 = Role::Mom { node: "n1".into() };
    let key = pbs_proto::keys::derive(&master, &n1);
    let mut writer = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    writer.set_read_timeout(Some(JOB_TIMEOUT)).expect("timeout");
    let mut reader = writer.try_clone().expect("clone");
    let (_, mut sealer, mut opener) =
        link::connect_blocking(&mut reader, &mut writer, &key, &Role::Server, &n1).expect("the mom takes the key");
    let kill = ToMom::KillJob { job_id: "999.nowhere".into(), kill_delay: 1 };
    link::write_sealed(&mut writer, &mut sealer, &kill).expect("send");
    let answer = loop {
        let frame: FromMom =
            link::read_sealed(&mut reader, &mut opener, MAX_REPLY_FRAME_LEN).expect("read").expect("an answer");
        if !matches!(frame, FromMom::NodeStatus { .. } | FromMom::Pong) {
            break frame;
        }
    };
    assert_eq!(answer, FromMom::UnknownJob { job_id: "999.nowhere".into() });
}
