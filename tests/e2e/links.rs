//! Daemon links under attack: a peer that can listen on a node's mom port, or that holds
//! nothing but a recording of a past link, must not become a trusted daemon.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};
use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame, write_frame};
use pbs_proto::link;
use pbs_proto::sched::{FromSched, ToSched};
use pbs_proto::{Hello, HelloReply, Role};
use serde_json::{Value, json};

const STEP: Duration = Duration::from_secs(15);

fn write_json(stream: &mut TcpStream, value: &Value) {
    let body = serde_json::to_vec(value).expect("json");
    let mut frame = u32::try_from(body.len()).expect("len").to_be_bytes().to_vec();
    frame.extend(body);
    // The peer may already have closed: what it answered before is what the test checks.
    let _ = stream.write_all(&frame);
}

/// One frame's body, or `None` once the peer closed or went silent.
fn read_body(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).ok()?;
    Some(body)
}

fn read_json(stream: &mut TcpStream) -> Option<Value> {
    serde_json::from_slice(&read_body(stream)?).ok()
}

/// Creates node `node` with its mom at a port the test listens on; returns the connection
/// the server made to it, and the port.
fn fake_mom(cluster: &Cluster, node: &str) -> (TcpStream, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    cluster.qmgr(&format!("create node {node} Mom=127.0.0.1,Port={port}"));
    let (from_server, _) = listener.accept().expect("the server connects to its mom");
    from_server.set_read_timeout(Some(STEP)).expect("timeout");
    (from_server, port)
}

/// The attack of a local user on a compute node whose mom is down: bind the mom's port, let
/// the server connect to it, and relay the server's own handshake messages between that
/// connection and a new connection to the server's TCP port, so that the server proves the
/// cluster key to itself on the attacker's behalf. The attacker must never be welcomed, its
/// requests must change nothing, and the server must log the refusal with its address.
#[test]
fn a_relayed_handshake_from_a_fake_mom_is_refused_and_logged() {
    let cluster = Cluster::start();
    let (mut to_server_out, _) = fake_mom(&cluster, "evil");
    let server_hello = read_json(&mut to_server_out).expect("the server's hello");

    // Claiming a mom's role, then the scheduler's: the only roles that could be trusted.
    for role in [json!({"role": "mom", "node": "evil"}), json!({"role": "scheduler"})] {
        let mut attacker = TcpStream::connect(("127.0.0.1", cluster.port)).expect("connect");
        attacker.set_read_timeout(Some(STEP)).expect("timeout");
        let local = attacker.local_addr().expect("local addr");
        // The server's own hello, with whatever it carries, now claiming a trusted role.
        let mut hello = server_hello.clone();
        hello["role"] = role.clone();
        write_json(&mut attacker, &hello);

        let mut welcomed = false;
        for _ in 0..4 {
            let Some(answer) = read_json(&mut attacker) else { break };
            if answer["type"] == "welcome" {
                welcomed = true;
                break;
            }
            if answer["type"] == "refused" {
                break;
            }
            // Whatever the server asks of the attacker, ask the server itself (through its
            // link to the fake mom), and hand its answer back.
            write_json(&mut to_server_out, &answer);
            let Some(relayed) = read_json(&mut to_server_out) else { break };
            write_json(&mut attacker, &relayed);
        }
        // Were it welcomed, this would make every user a manager.
        let request = json!({"id": 1, "request": {"kind": "Manager", "command": "set", "object": "server",
            "names": [], "attrs": [{"name": "managers", "op": "set", "value": "nobody@*"}]}});
        write_json(&mut attacker, &request);
        let _ = read_body(&mut attacker);

        assert!(!welcomed, "a relayed handshake as {role} was welcomed:\n{}", cluster.server_stderr());
        let managers = cluster.server_attr("managers").unwrap_or_default();
        assert!(!managers.contains("nobody"), "managers = {managers}");
        let address = local.to_string();
        wait_until("the refusal logged with the peer's address", STEP, || {
            cluster.server_stderr().lines().any(|l| l.contains("Refused TCP peer") && l.contains(&address))
        });
    }
}

/// The server's master key.
fn master_key(cluster: &Cluster) -> Vec<u8> {
    std::fs::read(cluster.home().join("server_priv").join("cluster_key")).expect("cluster key")
}

/// The scheduler's key, as `pbs_server --sched-key` writes it.
fn sched_key(cluster: &Cluster) -> Vec<u8> {
    pbs_proto::keys::derive(&master_key(cluster), &Role::Scheduler)
}

/// A live scheduler link with the real key, over TCP, its snapshot read: the socket to
/// write on, the next frame it may send, sealed, and its local address.
fn scheduler_link(cluster: &Cluster) -> (TcpStream, Vec<u8>, String) {
    let mut writer = TcpStream::connect(("127.0.0.1", cluster.port)).expect("connect");
    writer.set_read_timeout(Some(STEP)).expect("timeout");
    let mut reader = writer.try_clone().expect("clone");
    let (_, mut sealer, mut opener) =
        link::connect_blocking(&mut reader, &mut writer, &sched_key(cluster), &Role::Scheduler, &Role::Server)
            .expect("a scheduler with the key is welcomed");
    let _snapshot: ToSched =
        link::read_sealed(&mut reader, &mut opener, MAX_REPLY_FRAME_LEN).expect("read").expect("snapshot");
    let decisions = FromSched::Decisions { cycle: 1, qrun: None, actions: vec![] };
    let mut frame = Vec::new();
    link::write_sealed(&mut frame, &mut sealer, &decisions).expect("seal");
    let from = writer.local_addr().expect("addr").to_string();
    (writer, frame, from)
}

/// Waits for the server to log that it closed the link from `from` as untrusted.
fn assert_closed_as_forged(cluster: &Cluster, from: &str) {
    wait_until("the forged frame logged with the peer's address", STEP, || {
        cluster.server_stderr().lines().any(|l| l.contains(from) && l.contains("frame failed authentication"))
    });
}

/// Frames of a live, authenticated scheduler link, modified or replayed by someone on the
/// path, close the link, and the server says so with the peer's address.
#[test]
fn a_modified_or_replayed_frame_on_an_authenticated_link_closes_it() {
    let cluster = Cluster::start();

    let (mut writer, mut frame, from) = scheduler_link(&cluster);
    let last = frame.len() - 1;
    frame[last] ^= 0x40;
    writer.write_all(&frame).expect("write");
    assert_closed_as_forged(&cluster, &from);

    let (mut writer, frame, from) = scheduler_link(&cluster);
    writer.write_all(&frame).expect("write");
    writer.write_all(&frame).expect("write the same frame again");
    assert_closed_as_forged(&cluster, &from);
}

/// A proof made for another role (here a mom's, with its key) presented under the
/// scheduler's Hello, and a proof under another key (a mom's, the master itself, a guess),
/// are refused and logged.
#[test]
fn a_proof_for_another_role_or_key_is_refused_and_logged() {
    let cluster = Cluster::start();
    let master = master_key(&cluster);
    let mom = Role::Mom { node: "n1".into() };
    let mom_key = pbs_proto::keys::derive(&master, &mom);
    for (key, me) in [
        (mom_key.clone(), mom.clone()),
        (mom_key, Role::Scheduler),
        (master, Role::Scheduler),
        (b"not the key".to_vec(), Role::Scheduler),
    ] {
        let mut stream = TcpStream::connect(("127.0.0.1", cluster.port)).expect("connect");
        stream.set_read_timeout(Some(STEP)).expect("timeout");
        let from = stream.local_addr().expect("addr").to_string();
        let (mut hello, _) = link::hello(&key, &me, &Role::Server).expect("hello");
        hello.role = Role::Scheduler;
        write_frame(&mut stream, &hello).expect("hello");
        let answer: Option<HelloReply> = read_frame(&mut stream, MAX_REPLY_FRAME_LEN).unwrap_or(None);
        assert!(matches!(answer, Some(HelloReply::Refused { .. })), "{answer:?}");
        wait_until("the refusal logged with the peer's address", STEP, || {
            cluster.server_stderr().lines().any(|l| l.contains("Refused TCP peer") && l.contains(&from))
        });
    }
}

/// Whoever listens on a node's mom port without the key (a user's process while the mom is
/// down) cannot answer the server's handshake: the server refuses the link, logs it with
/// the address, and the node stays down.
#[test]
fn a_fake_mom_without_the_key_is_refused_and_logged() {
    let cluster = Cluster::start();
    let (mut from_server, port) = fake_mom(&cluster, "fake");
    let hello: Hello = read_frame(&mut from_server, MAX_REPLY_FRAME_LEN).expect("read").expect("hello");
    assert_eq!(hello.role, Role::Server);
    // The best a fake mom can do: answer a handshake of its own making.
    let (own, _) = link::hello(b"a guessed key", &Role::Server, &Role::Mom { node: "fake".into() }).expect("hello");
    let mut answer = Vec::new();
    link::accept_blocking(&mut answer, b"a guessed key", &Role::Mom { node: "fake".into() }, &own).expect("answer");
    from_server.write_all(&answer).expect("answer");
    wait_refused_mom_logged(&cluster, port);
    assert_ne!(cluster.node_attr("fake", "state").as_deref(), Some("free"));
}

/// The real scheduler over TCP (`pbs_sched --server host:port`) as on another host, with
/// its own key from `pbs_server --sched-key`: its link is authenticated and sealed, and the
/// jobs it runs really run.
#[test]
fn the_scheduler_over_an_authenticated_tcp_link_runs_jobs() {
    let mut cluster = Cluster::start();
    cluster.allow_root_jobs();
    cluster.qmgr("set server job_history_enable = True");
    cluster.add_mom("n1");
    let key = cluster.dir().join("sched.key");
    cluster.write_sched_key(&key).expect("pbs_server --sched-key");
    let conf = cluster.dir().join("tcp-sched.conf");
    let home = cluster.dir().join("tcp-sched-home");
    std::fs::write(&conf, format!("PBS_HOME={}\nPBS_CLUSTER_KEY_FILE={}\n", home.display(), key.display()))
        .expect("sched conf");
    let log = std::fs::File::create(cluster.dir().join("tcp-sched.stderr")).expect("log");
    let mut sched = std::process::Command::new(pbs_e2e::bin_dir().join("pbs_sched"))
        .env("PBS_CONF_FILE", &conf)
        .arg("--server")
        .arg(format!("127.0.0.1:{}", cluster.port))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn pbs_sched");
    cluster.wait_node_state("n1", "free");
    let id = cluster.qsub(&["--", "/bin/true"]);
    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cluster.wait_job_state(&id, "F", Duration::from_secs(30));
    }));
    let _ = sched.kill();
    let _ = sched.wait();
    let sched_log = std::fs::read_to_string(cluster.dir().join("tcp-sched.stderr")).unwrap_or_default();
    assert!(ended.is_ok(), "the job did not run:\n{sched_log}\n{}", cluster.logs());
    assert_eq!(cluster.job_attr(&id, "Exit_status").as_deref(), Some("0"));
}

/// Root on node n1 can read n1's key. Listening on n2's mom port while n2's mom is down,
/// it cannot answer the server's handshake for n2: the server's first message does not
/// open under n1's key, an answer of its own making is refused and logged, and n2 stays
/// down.
#[test]
fn one_nodes_key_cannot_be_linked_to_as_another_node() {
    let mut cluster = Cluster::start();
    cluster.add_mom("n1");
    cluster.wait_node_state("n1", "free");
    let n1_key = std::fs::read(cluster.mom_key_path("n1")).expect("n1's key");
    let n2 = Role::Mom { node: "n2".into() };
    let (mut from_server, port) = fake_mom(&cluster, "n2");
    let hello: Hello = read_frame(&mut from_server, MAX_REPLY_FRAME_LEN).expect("read").expect("hello");
    let mut answer = Vec::new();
    assert!(
        link::accept_blocking(&mut answer, &n1_key, &n2, &hello).is_err(),
        "the server's handshake for n2 opened under n1's key"
    );
    let (own, _) = link::hello(&n1_key, &Role::Server, &n2).expect("hello");
    link::accept_blocking(&mut answer, &n1_key, &n2, &own).expect("answer");
    from_server.write_all(&answer).expect("answer");
    wait_refused_mom_logged(&cluster, port);
    assert_ne!(cluster.node_attr("n2", "state").as_deref(), Some("free"));
}

/// Root on node n1, with n1's key, poses as the server to n2's mom: refused, logged by that
/// mom with the address, and n2 keeps serving the real server.
#[test]
fn one_nodes_key_cannot_pose_as_the_server_to_another_nodes_mom() {
    let cluster = Cluster::with_moms(2, 1);
    let n1_key = std::fs::read(cluster.mom_key_path("n1")).expect("n1's key");
    let port: u16 = cluster.node_attr("n2", "Port").expect("n2's port").parse().expect("port");
    let mut writer = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    writer.set_read_timeout(Some(STEP)).expect("timeout");
    let from = writer.local_addr().expect("addr").to_string();
    let mut reader = writer.try_clone().expect("clone");
    let n2 = Role::Mom { node: "n2".into() };
    match link::connect_blocking(&mut reader, &mut writer, &n1_key, &Role::Server, &n2) {
        Err(link::LinkError::Refused { code, .. }) => assert_eq!(code, pbs_core::Pbse::BADCRED.0),
        Err(other) => panic!("unexpected failure {other}"),
        Ok(_) => panic!("n2's mom took n1's key for the server's"),
    }
    wait_until("the refusal logged by n2's mom", STEP, || {
        cluster.mom_stderr("n2").lines().any(|l| l.contains("refused") && l.contains(&from))
    });
    // The real server's link was not replaced: it still answers the server's pings.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(cluster.node_attr("n2", "state").as_deref(), Some("free"), "{}", cluster.logs());
}

/// Waits until the server has logged refusing the mom link to `port`, with its address.
fn wait_refused_mom_logged(cluster: &Cluster, port: u16) {
    let address = format!("127.0.0.1:{port}");
    wait_until("the refused mom logged with its address", STEP, || {
        cluster.server_stderr().lines().any(|l| l.contains("Refused the mom link") && l.contains(&address))
    });
}
