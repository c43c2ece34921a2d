//! The daemon against a fake server that speaks the protocol: handshake, snapshot, a cycle,
//! changes with `cycle: true`, `DecisionsApplied`, a `qrun`, a reconnection, and over TCP
//! the authenticated link with every frame sealed.

// The fake server's helpers are test code: a failure is a test failure.
#![allow(clippy::unwrap_used)]

use std::io::{BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::time::Duration;

use pbs_core::conf::DaemonKey;
use pbs_proto::sched::{Action, FromSched, SchedChange, SchedJob, SchedNode, SchedQueue, Snapshot, ToSched};
use pbs_proto::{Attr, Hello, HelloReply, MAX_REPLY_FRAME_LEN, PROTOCOL_VERSION, Role, read_frame, write_frame};
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
        resources: vec![],
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
    reader: BufReader<Box<dyn Read>>,
    writer: Box<dyn Write>,
    /// Set once a TCP link's handshake is done: every frame is sealed.
    sealed: Option<(pbs_proto::link::Sealer, pbs_proto::link::Opener)>,
}

impl Peer {
    fn accept(listener: &UnixListener) -> Peer {
        let (stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Peer { reader: BufReader::new(Box::new(stream.try_clone().unwrap())), writer: Box::new(stream), sealed: None }
    }

    /// Accepts the daemon over TCP and runs the accepting side of the handshake with `key`.
    fn accept_tcp(listener: &TcpListener, key: &[u8]) -> Result<Peer, pbs_proto::link::LinkError> {
        let (stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut peer = Peer {
            reader: BufReader::new(Box::new(stream.try_clone().unwrap())),
            writer: Box::new(stream),
            sealed: None,
        };
        let hello: Hello = peer.recv();
        assert_eq!(hello.role, Role::Scheduler);
        peer.sealed = Some(pbs_proto::link::accept_blocking(&mut peer.writer, key, &Role::Server, &hello)?);
        Ok(peer)
    }

    fn send<T: serde::Serialize>(&mut self, message: &T) {
        match &mut self.sealed {
            None => write_frame(&mut self.writer, message).unwrap(),
            Some((sealer, _)) => pbs_proto::link::write_sealed(&mut self.writer, sealer, message).unwrap(),
        }
    }

    fn recv<T: serde::de::DeserializeOwned>(&mut self) -> T {
        match &mut self.sealed {
            None => read_frame(&mut self.reader, MAX_REPLY_FRAME_LEN).unwrap().unwrap(),
            Some((_, opener)) => {
                pbs_proto::link::read_sealed(&mut self.reader, opener, MAX_REPLY_FRAME_LEN).unwrap().unwrap()
            }
        }
    }

    fn decisions(&mut self) -> Seen {
        let FromSched::Decisions { cycle, qrun, actions } = self.recv() else { panic!("a Decisions frame") };
        let (mut run, mut updates) = (Vec::new(), Vec::new());
        for action in actions {
            match action {
                Action::Run(r) => run.push((r.job_id, r.exec_vnode)),
                Action::Resume { .. } => panic!("no job was preempted"),
                Action::Update(u) => {
                    assert!(run.is_empty(), "an update after a run");
                    updates.push((u.job_id, u.attrs[0].value().to_string()));
                }
            }
        }
        Seen { cycle, qrun, run, updates }
    }
}

#[test]
fn daemon_cycles_answers_qrun_and_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("server_sock");
    let key_file = dir.path().join("sched.key");
    pbs_proto::keys::write_key_file(&key_file, b"secret").unwrap();
    let listener = UnixListener::bind(&socket).unwrap();
    let mut config =
        DaemonConfig::new(Target::Unix(socket.clone()), Some(DaemonKey::Own(key_file)), SchedConfig::default());
    config.min_backoff = Duration::from_millis(20);
    config.max_backoff = Duration::from_millis(100);
    let daemon = Daemon::new(config);
    let stopper = daemon.stopper();
    let running = std::thread::spawn(move || daemon.run());

    let mut peer = Peer::accept(&listener);
    let hello: Hello = peer.recv();
    assert_eq!(hello, Hello::local(Role::Scheduler));
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    peer.send(&ToSched::Snapshot { snapshot: Box::new(snapshot()), more: false });

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

    // The server goes away; the daemon comes back.
    drop(peer);
    let mut peer = Peer::accept(&listener);
    let _hello: Hello = peer.recv();
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    peer.send(&ToSched::Snapshot { snapshot: Box::new(snapshot()), more: false });
    let Seen { run, .. } = peer.decisions();
    assert_eq!(run.len(), 1);

    stopper.stop();
    running.join().unwrap().unwrap();
}

#[test]
fn over_tcp_the_daemon_proves_the_key_for_its_role_and_seals_every_frame() {
    let dir = tempfile::tempdir().unwrap();
    // The scheduler holds its own key, derived from a master only the server has.
    let master = b"the master key";
    let sched_key = pbs_proto::keys::derive(master, &Role::Scheduler);
    let key_file = dir.path().join("sched.key");
    pbs_proto::keys::write_key_file(&key_file, &sched_key).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut config = DaemonConfig::new(Target::Tcp(addr), Some(DaemonKey::Own(key_file)), SchedConfig::default());
    config.min_backoff = Duration::from_millis(20);
    config.max_backoff = Duration::from_millis(100);
    let daemon = Daemon::new(config);
    let stopper = daemon.stopper();
    let running = std::thread::spawn(move || daemon.run());

    // A server with another key cannot complete the handshake: the daemon's proof fails;
    // nor can one holding a mom's key or the master itself instead of the scheduler's.
    for wrong in
        [b"another key".to_vec(), pbs_proto::keys::derive(master, &Role::Mom { node: "n1".into() }), master.to_vec()]
    {
        let refused = Peer::accept_tcp(&listener, &wrong);
        assert!(
            matches!(refused, Err(pbs_proto::link::LinkError::Proof(_))),
            "a proof under the wrong key was accepted"
        );
    }
    // The daemon retries; with the right key, everything after the handshake is sealed.
    let mut peer = Peer::accept_tcp(&listener, &sched_key).unwrap();
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    peer.send(&ToSched::Snapshot { snapshot: Box::new(snapshot()), more: false });
    let Seen { run, .. } = peer.decisions();
    assert_eq!(run, vec![("1.svr".to_string(), "(n1:ncpus=1)".to_string())]);

    stopper.stop();
    running.join().unwrap().unwrap();
}

#[test]
fn a_snapshot_in_parts_is_used_only_once_whole() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("server_sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let daemon = Daemon::new(DaemonConfig::new(Target::Unix(socket.clone()), None, SchedConfig::default()));
    let stopper = daemon.stopper();
    let running = std::thread::spawn(move || daemon.run());

    let mut peer = Peer::accept(&listener);
    let _hello: Hello = peer.recv();
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    // A budget so small that every object travels alone.
    let frames = ToSched::Snapshot { snapshot: Box::new(snapshot()), more: false }.into_parts(64);
    assert!(frames.len() >= 4, "{frames:?}");
    for frame in &frames {
        peer.send(frame);
    }
    // The first cycle sees every part: the node from one, the jobs from the last two.
    let Seen { run, updates, .. } = peer.decisions();
    assert_eq!(run, vec![("1.svr".to_string(), "(n1:ncpus=1)".to_string())]);
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].0, "2.svr");

    stopper.stop();
    running.join().unwrap().unwrap();
}

/// What the capturing layer saw of one log event.
#[derive(Debug, Clone)]
struct Logged {
    object_type: String,
    object_name: String,
    event: String,
    message: String,
}

/// Records the daemon's log events (the PBS log layer's fields).
#[derive(Clone, Default)]
struct Capture(std::sync::Arc<std::sync::Mutex<Vec<Logged>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        struct Fields(Logged);
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                match field.name() {
                    "object_type" => self.0.object_type = value.to_string(),
                    "object_name" => self.0.object_name = value.to_string(),
                    "event" => self.0.event = value.to_string(),
                    "message" => self.0.message = value.to_string(),
                    _ => {}
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.record_str(field, &format!("{value:?}"));
            }
        }
        let mut fields = Fields(Logged {
            object_type: String::new(),
            object_name: String::new(),
            event: String::new(),
            message: String::new(),
        });
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
}

fn array_parent(remaining: &str, max_run: u64, state: char) -> SchedJob {
    let mut parent = job(10, 1, state);
    parent.id = "10[].svr".into();
    parent.attrs = vec![
        Attr::new("array_indices_submitted", "1-6"),
        Attr::new("array_indices_remaining", remaining),
        Attr::new("max_run_subjobs", max_run.to_string()),
    ];
    parent
}

fn array_subjob(index: u64) -> SchedJob {
    let mut sub = job(10, 1, 'R');
    sub.id = format!("10[{index}].svr");
    sub
}

#[test]
fn daemon_holds_arrays_at_max_run_subjobs_and_logs_it() {
    use tracing_subscriber::layer::SubscriberExt;

    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("server_sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let daemon = Daemon::new(DaemonConfig::new(Target::Unix(socket), None, SchedConfig::default()));
    let stopper = daemon.stopper();
    let capture = Capture::default();
    let layer = capture.clone();
    let running = std::thread::spawn(move || {
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || daemon.run())
    });
    let limit_lines = || {
        capture
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.message == "Number of concurrent running subjobs limit reached")
            .cloned()
            .collect::<Vec<_>>()
    };

    let mut peer = Peer::accept(&listener);
    let _hello: Hello = peer.recv();
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    let mut snap = snapshot();
    let mut big = node(0);
    big.resources_available = vec![("ncpus".into(), "8".into()), ("mem".into(), "16gb".into())];
    snap.nodes = vec![big];
    snap.jobs = vec![array_parent("1-6", 2, 'Q')];
    peer.send(&ToSched::Snapshot { snapshot: Box::new(snap), more: false });

    // Two subjobs start; the array is held at its limit, logged, and not commented.
    let Seen { cycle: first, run, updates, .. } = peer.decisions();
    let ids: Vec<&str> = run.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["10[1].svr", "10[2].svr"]);
    assert!(updates.is_empty());
    let lines = limit_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!((lines[0].object_type.as_str(), lines[0].object_name.as_str()), ("Job", "10[].svr"));
    assert_eq!(lines[0].event, "0080");
    let mut began = array_parent("3-6", 2, 'B');
    began.comment = Some("Job Array Began at Mon Jan 01 at 10:00".into());
    peer.send(&ToSched::Changes {
        changes: vec![
            SchedChange::Job { job: Box::new(array_subjob(1)) },
            SchedChange::Job { job: Box::new(array_subjob(2)) },
            SchedChange::Job { job: Box::new(began.clone()) },
        ],
        cycle: false,
    });
    peer.send(&ToSched::DecisionsApplied { cycle: first, errors: vec![] });

    // qrun of a queued subjob ignores the limit.
    peer.send(&ToSched::RunNow { qrun: 3, job_id: "10[5].svr".into() });
    let Seen { cycle: second, qrun, run, .. } = peer.decisions();
    assert_eq!(qrun, Some(3));
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].0, "10[5].svr");
    let mut after_qrun = began.clone();
    after_qrun.attrs[1] = Attr::new("array_indices_remaining", "3-4,6");
    peer.send(&ToSched::Changes {
        changes: vec![
            SchedChange::Job { job: Box::new(array_subjob(5)) },
            SchedChange::Job { job: Box::new(after_qrun.clone()) },
        ],
        cycle: false,
    });
    peer.send(&ToSched::DecisionsApplied { cycle: second, errors: vec![] });

    // qalter -W max_run_subjobs=4: the next cycle starts one more (three run already).
    let mut raised = after_qrun;
    raised.attrs[2] = Attr::new("max_run_subjobs", "4");
    peer.send(&ToSched::Changes { changes: vec![SchedChange::Job { job: Box::new(raised) }], cycle: true });
    let Seen { run, updates, .. } = peer.decisions();
    let ids: Vec<&str> = run.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["10[3].svr"]);
    assert!(updates.is_empty());
    assert_eq!(limit_lines().len(), 2);

    stopper.stop();
    running.join().unwrap().unwrap();
}

#[test]
fn daemon_takes_new_settings_and_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("server_sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let daemon = Daemon::new(DaemonConfig::new(Target::Unix(socket), None, SchedConfig::default()));
    let stopper = daemon.stopper();
    let reloader = daemon.reloader();
    let running = std::thread::spawn(move || daemon.run());

    let mut peer = Peer::accept(&listener);
    let _hello: Hello = peer.recv();
    peer.send(&HelloReply::Welcome { version: PROTOCOL_VERSION, server_name: "svr".into() });
    let mut snap = snapshot();
    snap.jobs = vec![job(2, 1, 'Q')];
    snap.nodes = vec![node(2)];
    peer.send(&ToSched::Snapshot { snapshot: Box::new(snap), more: false });
    let Seen { cycle: first, run, .. } = peer.decisions();
    assert!(run.is_empty());
    peer.send(&ToSched::DecisionsApplied { cycle: first, errors: vec![] });

    // SIGHUP re-read a dedicated_time file whose window covers now: a cycle follows and
    // the job outside a dedicated queue waits.
    reloader.reload(SchedConfig { dedicated: vec![(0, 4_000_000_000)], ..SchedConfig::default() });
    let Seen { run, updates, .. } = peer.decisions();
    assert!(run.is_empty());
    assert_eq!(updates, vec![("2.svr".to_string(), "Not Running: Dedicated time conflict".to_string())]);

    stopper.stop();
    running.join().unwrap().unwrap();
}
