//! The server link of a real pbs_mom: handshake, refusal without the key, the first
//! NodeStatus, Ping, one link at a time, and garbage that must not hurt the mom.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::TestMom;
use pbs_proto::mom::{FromMom, ToMom};
use pbs_proto::{Hello, HelloReply, MAX_REPLY_FRAME_LEN, Role, read_frame, write_frame};

#[test]
fn handshake_gives_node_status_then_answers_ping() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    match link.node_status() {
        FromMom::NodeStatus { ncpus, mem_kb, arch, host, version, jobs } => {
            assert!(ncpus >= 1);
            assert!(mem_kb > 0);
            assert_eq!(arch, "linux");
            assert!(!host.is_empty());
            assert_eq!(version, env!("CARGO_PKG_VERSION"));
            assert!(jobs.is_empty());
        }
        other => panic!("expected NodeStatus, got {other:?}"),
    }
    link.send(&ToMom::Ping);
    link.wait_for("Pong", |f| matches!(f, FromMom::Pong));
}

#[test]
fn a_peer_without_the_key_is_refused() {
    let mom = TestMom::start();
    match mom.connect_with_key(b"wrong key") {
        Err(pbs_proto::link::LinkError::Refused { code, .. }) => assert_eq!(code, pbs_core::Pbse::BADCRED.0),
        Err(other) => panic!("unexpected reply {other:?}"),
        Ok(_) => panic!("a wrong key was accepted"),
    }
    // A client or a scheduler is not the server.
    let mut stream = TcpStream::connect(("127.0.0.1", mom.port)).unwrap();
    write_frame(&mut stream, &Hello::local(Role::Client)).unwrap();
    let reply: HelloReply = read_frame(&mut stream, MAX_REPLY_FRAME_LEN).unwrap().unwrap();
    assert!(matches!(reply, HelloReply::Refused { .. }), "{reply:?}");
    // The mom still serves the real server.
    let mut link = mom.connect();
    link.node_status();
}

/// Root on another node holds that node's key: with it, or with the master a mom never
/// holds, nobody is this node's server.
#[test]
fn another_nodes_key_is_refused() {
    let mom = TestMom::start();
    for key in [common::node_key("another-node"), common::MASTER.to_vec()] {
        match mom.connect_with_key(&key) {
            Err(pbs_proto::link::LinkError::Refused { code, .. }) => assert_eq!(code, pbs_core::Pbse::BADCRED.0),
            Err(other) => panic!("unexpected reply {other:?}"),
            Ok(_) => panic!("a key not this node's was accepted"),
        }
    }
    let mut link = mom.connect();
    link.node_status();
}

#[test]
fn a_new_link_replaces_the_old_one() {
    let mom = TestMom::start();
    let mut first = mom.connect();
    first.node_status();
    let mut second = mom.connect();
    second.node_status();
    assert!(first.closed(Duration::from_secs(10)), "the old link stayed open");
    second.send(&ToMom::Ping);
    second.wait_for("Pong", |f| matches!(f, FromMom::Pong));
}

#[test]
fn garbage_closes_the_connection_but_not_the_mom() {
    let mom = TestMom::start();
    // Not a frame at all.
    let mut raw = TcpStream::connect(("127.0.0.1", mom.port)).unwrap();
    raw.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    drop(raw);
    // A huge announced length.
    let mut raw = TcpStream::connect(("127.0.0.1", mom.port)).unwrap();
    raw.write_all(&u32::MAX.to_be_bytes()).unwrap();
    drop(raw);
    // A frame of invalid JSON in place of Hello.
    let mut raw = TcpStream::connect(("127.0.0.1", mom.port)).unwrap();
    raw.write_all(&5u32.to_be_bytes()).unwrap();
    raw.write_all(b"\xff\xfe{]x").unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(read_frame::<HelloReply>(&mut raw, MAX_REPLY_FRAME_LEN).map(|f| f.is_none()).unwrap_or(true));

    // After the handshake: a frame that is not a ToMom, then a torn one.
    let mut link = mom.connect();
    link.node_status();
    link.send_raw(&9u32.to_be_bytes());
    link.send_raw(b"{\"kind\":1");
    assert!(link.closed(Duration::from_secs(10)), "a malformed request left the link open");
    let mut link = mom.connect();
    link.node_status();
    link.send_raw(&[0, 0, 0, 7, b'{', b'"', b'k']);
    drop(link);

    let mut link = mom.connect();
    link.node_status();
    link.send(&ToMom::Ping);
    link.wait_for("Pong", |f| matches!(f, FromMom::Pong));
    assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(mom.pid() as i32), None).is_ok());
}

#[test]
fn requests_for_unknown_jobs_are_answered() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    assert_eq!(link.signal("99.nowhere", "TERM"), pbs_core::Pbse::UNKJOBID.0);
    // KillJob and ForgetJob of an unknown job are no-ops; the link stays up.
    link.send(&ToMom::KillJob { job_id: "99.nowhere".into(), kill_delay: 0 });
    link.send(&ToMom::ForgetJob { job_id: "99.nowhere".into() });
    link.send(&ToMom::Ping);
    link.wait_for("Pong", |f| matches!(f, FromMom::Pong));
}
