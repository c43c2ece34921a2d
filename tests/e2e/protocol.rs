//! Bad bytes on a live server's socket: garbage, unknown kinds, oversized frames and
//! half-closed connections get an error reply or a closed connection, and the server keeps
//! serving everyone else.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use pbs_e2e::Cluster;
use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame, write_frame};
use pbs_proto::{Hello, HelloReply, Reply, Role};

fn connect(cluster: &Cluster) -> UnixStream {
    let mut stream = UnixStream::connect(cluster.home().join("server_sock")).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
    write_frame(&mut stream, &Hello::local(Role::Client)).expect("hello");
    let welcome: HelloReply = read_frame(&mut stream, MAX_REPLY_FRAME_LEN).expect("read").expect("welcome");
    assert!(matches!(welcome, HelloReply::Welcome { .. }), "{welcome:?}");
    stream
}

fn send_raw(stream: &mut UnixStream, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("len");
    stream.write_all(&len.to_be_bytes()).expect("write len");
    stream.write_all(payload).expect("write payload");
}

fn reply(stream: &mut UnixStream) -> Reply {
    read_frame(stream, MAX_REPLY_FRAME_LEN).expect("read reply").expect("a reply, not EOF")
}

/// The server still answers a normal client.
fn assert_alive(cluster: &Cluster) {
    let mut client = cluster.client();
    let status = client.status(pbs_proto::Request::StatusServer { attrs: vec![] }).expect("server status");
    assert_eq!(status.objects.len(), 1);
}

#[test]
fn garbage_json_gets_protocol_error_and_connection_stays_usable() {
    let cluster = Cluster::start();
    let mut stream = connect(&cluster);
    send_raw(&mut stream, b"\x00\xffthis is not json{{{");
    let r = reply(&mut stream);
    assert_eq!(r.code, 15031, "{r:?}");
    assert_eq!(r.message, "Batch protocol error");
    // Same connection, a valid request still works.
    send_raw(&mut stream, br#"{"id":7,"request":{"kind":"StatusServer","attrs":[]}}"#);
    let r = reply(&mut stream);
    assert_eq!((r.id, r.code), (7, 0), "{r:?}");
    assert_alive(&cluster);
}

#[test]
fn unknown_request_kind_gets_unkreq() {
    let cluster = Cluster::start();
    let mut stream = connect(&cluster);
    send_raw(&mut stream, br#"{"id":3,"request":{"kind":"LaunchMissiles"}}"#);
    let r = reply(&mut stream);
    assert_eq!((r.id, r.code), (3, 15005), "{r:?}");
    assert_eq!(r.message, "Unknown request");
    // A known kind with wrong fields is a protocol error, not a crash.
    send_raw(&mut stream, br#"{"id":4,"request":{"kind":"QueueJob","attrs":"not a list"}}"#);
    let r = reply(&mut stream);
    assert_eq!((r.id, r.code), (4, 15031), "{r:?}");
    assert_alive(&cluster);
}

#[test]
fn oversized_frame_gets_error_then_close() {
    let cluster = Cluster::start();
    let mut stream = connect(&cluster);
    // Announce 1 GiB; the server must refuse without trying to buffer it.
    stream.write_all(&(1u32 << 30).to_be_bytes()).expect("write len");
    // The server may refuse (and close) before these bytes arrive: either is fine.
    let _ = stream.write_all(&[b'x'; 4096]);
    let r = reply(&mut stream);
    assert_eq!(r.code, 15031, "{r:?}");
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    assert_alive(&cluster);
}

#[test]
fn half_closed_and_silent_connections_do_not_stall_the_server() {
    let cluster = Cluster::start();
    // A connection that sends half a length prefix and goes quiet.
    let mut silent = UnixStream::connect(cluster.home().join("server_sock")).expect("connect");
    silent.write_all(&[0, 0]).expect("write");
    // A connection that sends half a frame then shuts down its write side.
    let mut torn = connect(&cluster);
    torn.write_all(&100u32.to_be_bytes()).expect("len");
    torn.write_all(b"{\"id\":1,").expect("partial");
    torn.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let mut rest = Vec::new();
    let _ = torn.read_to_end(&mut rest);
    assert_alive(&cluster);
    drop(silent);
}

#[test]
fn tcp_peer_without_cluster_key_can_do_nothing() {
    let cluster = Cluster::start();
    let addr = format!("127.0.0.1:{}", cluster.port);
    let wrong_key = [7u8; 32];
    let stream = std::net::TcpStream::connect(&addr).expect("tcp connect");
    stream.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
    let (mut reader, mut writer) = (stream.try_clone().expect("clone"), stream);
    let err = pbs_proto::link::connect_blocking(&mut reader, &mut writer, &wrong_key, &Role::Scheduler, &Role::Server)
        .err()
        .expect("must be refused");
    assert!(matches!(err, pbs_proto::link::LinkError::Refused { .. }), "{err:?}");
    // A client role over TCP is refused too: TCP is for daemons with the key only.
    let mut stream = std::net::TcpStream::connect(&addr).expect("tcp connect");
    stream.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
    write_frame(&mut stream, &Hello::local(Role::Client)).expect("hello");
    let answer: Option<HelloReply> = read_frame(&mut stream, MAX_REPLY_FRAME_LEN).unwrap_or(None);
    assert!(!matches!(answer, Some(HelloReply::Welcome { .. })), "{answer:?}");
    assert_alive(&cluster);
}

#[test]
fn a_request_right_behind_the_hello_then_a_shut_write_side_is_answered_then_closed() {
    let cluster = Cluster::start();
    let mut stream = UnixStream::connect(cluster.home().join("server_sock")).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
    // What `qsub` does: the Hello and its one request in one write, then no more requests.
    let mut bytes = pbs_proto::codec::encode_frame(&Hello::local(Role::Client)).expect("hello");
    let request = pbs_proto::RequestFrame { id: 5, request: pbs_proto::Request::StatusServer { attrs: vec![] } };
    bytes.extend(pbs_proto::codec::encode_frame(&request).expect("request"));
    stream.write_all(&bytes).expect("write");
    stream.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let welcome: HelloReply = read_frame(&mut stream, MAX_REPLY_FRAME_LEN).expect("read").expect("welcome");
    assert!(matches!(welcome, HelloReply::Welcome { .. }), "{welcome:?}");
    let r = reply(&mut stream);
    assert_eq!((r.id, r.code), (5, 0), "{r:?}");
    // Then the server closes its end: nothing more, and no wait for the client to go.
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("end of stream");
    assert!(rest.is_empty(), "{rest:?}");
    assert_alive(&cluster);
}
