//! The daemon against a fake server on a Unix socket that speaks the protocol: handshake,
//! snapshot, a cycle, changes with `cycle: true`, `DecisionsApplied`, a `qrun`, and a
//! reconnection that answers the cluster-key challenge.

// The fake server's helpers are test code: a failure is a test failure.
#![allow(clippy::unwrap_used)]

use std::io::BufReader;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use pbs_proto::sched::{FromSched, SchedChange, SchedJob, SchedNode, SchedQueue, Snapshot, ToSched};
use pbs_proto::{
    Attr, AuthProof, Hello, HelloReply, MAX_REPLY_FRAME_LEN, PROTOCOL_VERSION, Role, read_frame, write_frame,
};
use pbs_sched::SchedConfig;
use pbs_sched::daemon::{Daemon, DaemonConfig, Target};

fn job(seq: u64, ncpus: u32, state: char) -> SchedJob {
    SchedJob {
        id: format!("{seq}.svr"),
        seq,
        queue: "workq".into(),
        state,
        owner: "alice".into(),
        group: "users".into(),
        resources: vec![("ncpus".into(), ncpus.to_string())],
        select: format!("1:ncpus={ncpus}"),
        place: "pack".into(),
        ..SchedJob::default()
    }
}

fn node(assigned: u32) -> SchedNode {
    SchedNode {
        name: "n1".into(),
        state: "free".into(),
        resources_available: vec![("ncpus".into(), "2".into()), ("mem".into(), "4gb".into())],
        resources_assigned: vec![("ncpus".into(), assigned.to_string())],
        sharing: "default_shared".into(),
        ..SchedNode::default()
    }
}

fn snapshot() -> Snapshot {
    Snapshot {
        server_name: "svr".into(),
        server: vec![Attr::new("scheduling", "True")],
        sched: vec![Attr::new("scheduling", "True")],
        queues: vec![SchedQueue {
            name: "workq".into(),
            attrs: vec![
                Attr::new("queue_type", "Execution"),
                Attr::new("enabled", "True"),
                Attr::new("started", "True"),
            ],
        }],
        nodes: vec![node(0)],
        jobs: vec![job(1, 1, 'Q'), job(2, 4, 'Q')],
    }
}

/// A Decisions frame as the test compares it: runs and comments as (id, text) pairs.
struct Seen {
    cycle: u64,
    qrun: Option<u64>,
    run: Vec<(String, String)>,
    updates: Vec<(String, String)>,
}

struct Peer {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Peer {
    fn accept(listener: &UnixListener) -> Peer {
        let (stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Peer { reader: BufReader::new(stream.try_clone().unwrap()), writer: stream }
    }

    fn send<T: serde::Serialize>(&mut self, message: &T) {
        write_frame(&mut self.writer, message).unwrap();
    }

    fn recv<T: serde::de::DeserializeOwned>(&mut self) -> T {
        read_frame(&mut self.reader, MAX_REPLY_FRAME_LEN).unwrap().unwrap()
    }

    fn decisions(&mut self) -> Seen {
        let FromSched::Decisions { cycle, qrun, run, updates } = self.recv();
        let run = run.into_iter().map(|r| (r.job_id, r.exec_vnode)).collect();
        let updates = updates.into_iter().map(|u| (u.job_id, u.attrs[0].value().to_string())).collect();
        Seen { cycle, qrun, run, updates }
    }
}

#[test]
fn daemon_cycles_answers_qrun_and_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("server_sock");
    let key_file = dir.path().join("cluster_key");
    std::fs::write(&key_file, b"secret").unwrap();
    let listener = UnixListener::bind(&socket).unwrap();
    let mut config = DaemonConfig::new(Target::Unix(socket.clone()), Some(key_file), SchedConfig::default());
    config.min_backoff = Duration::from_millis(20);
    config.max_backoff = Duration::from_millis(100);
    let daemon = Daemon::new(config);
    let stopper = daemon.stopper();
    let running = std::thread::spawn(move || daemon.run());

    let mut peer = Peer::accept(&listener);
    let hello: Hello = peer.recv();
    assert_eq!(hello, Hello { version: PROTOCOL_VERSION, role: Role::Scheduler });
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    peer.send(&ToSched::Snapshot { snapshot: Box::new(snapshot()) });

    // The first cycle comes right after the snapshot.
    let Seen { cycle: first, qrun, run, updates } = peer.decisions();
    assert_eq!(qrun, None);
    assert_eq!(run, vec![("1.svr".to_string(), "(n1:ncpus=1)".to_string())]);
    assert_eq!(
        updates,
        vec![(
            "2.svr".to_string(),
            "Can Never Run: Insufficient amount of resource: ncpus (R: 4 A: 2 T: 2)".to_string()
        )]
    );
    // The server applies the run, then confirms.
    peer.send(&ToSched::Changes {
        changes: vec![
            SchedChange::Job { job: Box::new(job(1, 1, 'R')) },
            SchedChange::Node { node: Box::new(node(1)) },
        ],
        cycle: false,
    });
    peer.send(&ToSched::DecisionsApplied { cycle: first, errors: vec![] });

    // A new job asks for a cycle; job 2's comment is not sent again.
    peer.send(&ToSched::Changes { changes: vec![SchedChange::Job { job: Box::new(job(3, 1, 'Q')) }], cycle: true });
    let Seen { cycle: second, qrun, run, updates } = peer.decisions();
    assert!(second > first);
    assert_eq!(qrun, None);
    assert_eq!(run, vec![("3.svr".to_string(), "(n1:ncpus=1)".to_string())]);
    assert!(updates.is_empty());
    peer.send(&ToSched::DecisionsApplied { cycle: second, errors: vec![] });

    // qrun of a job that cannot fit: answered with the reason.
    peer.send(&ToSched::RunNow { qrun: 7, job_id: "2.svr".into() });
    let Seen { cycle: third, qrun, run, updates } = peer.decisions();
    assert_eq!(qrun, Some(7));
    assert!(run.is_empty());
    assert_eq!(updates.len(), 1);
    peer.send(&ToSched::DecisionsApplied { cycle: third, errors: vec![] });

    // The server goes away; the daemon comes back and proves the key this time.
    drop(peer);
    let mut peer = Peer::accept(&listener);
    let _hello: Hello = peer.recv();
    peer.send(&HelloReply::Challenge { nonce: "n0nce".into() });
    let proof: AuthProof = peer.recv();
    assert!(pbs_proto::auth::verify(b"secret", "n0nce", &proof.proof));
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    peer.send(&ToSched::Snapshot { snapshot: Box::new(snapshot()) });
    let Seen { run, .. } = peer.decisions();
    assert_eq!(run.len(), 1);

    stopper.stop();
    running.join().unwrap().unwrap();
}
