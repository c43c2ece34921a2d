//! Connections and links under pressure: a flood of local connections from one user, a
//! peer that stalls mid-frame or says nothing, a mom and the server's TCP port held by
//! connections that never authenticate, and a scheduler link that carries a job with a huge
//! attribute.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, wait_until};
use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, encode_frame, read_frame, write_frame};
use pbs_proto::{Hello, HelloReply, Role};

/// More local connections than the server used to serve at once (4096), so that before
/// the per-uid cap one user holding them locked everyone else out.
const FLOOD: usize = 4300;

/// Not a test of its own: run as `nobody` by [`a_flood_from_one_user_leaves_root_and_others_served`],
/// it opens `HOLD_COUNT` connections to `HOLD_SOCKET`, says Hello on each, prints `HELD`
/// and keeps them open until its stdin closes.
#[test]
#[ignore = "a helper process, started by another test"]
fn hold_local_connections() {
    let Ok(socket) = std::env::var("HOLD_SOCKET") else { return };
    let count: usize = std::env::var("HOLD_COUNT").ok().and_then(|n| n.parse().ok()).unwrap_or(0);
    let hello = encode_frame(&Hello::local(Role::Client)).unwrap();
    // A server that stops accepting leaves connects blocked once its backlog is full: the
    // connections are made on a thread of their own, and what it made by the time it
    // stops making progress is what is held.
    let (made, progress) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..count {
            // Connections the server refuses may fail here or on the write: they are the point.
            if let Ok(mut stream) = UnixStream::connect(&socket) {
                let _ = stream.write_all(&hello);
                if made.send(Some(stream)).is_err() {
                    return;
                }
            }
        }
        let _ = made.send(None);
    });
    let mut held = Vec::new();
    while let Ok(Some(stream)) = progress.recv_timeout(Duration::from_secs(2)) {
        held.push(stream);
    }
    println!("HELD {}", held.len());
    std::io::stdout().flush().unwrap();
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(held);
}

/// Runs a command binary as `uid`, giving up after `limit`; `None` if it did not finish.
fn run_as(
    cluster: &Cluster,
    uid: u32,
    name: &str,
    args: &[&str],
    stdin: &str,
    limit: Duration,
) -> Option<(i32, String)> {
    let mut child = Command::new("setpriv")
        .args([format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".to_string()])
        .arg(pbs_e2e::command_dir().join(name))
        .args(args)
        .env("PBS_CONF_FILE", cluster.conf_path())
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn command");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            let text =
                format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            return Some((status.code().unwrap_or(-1), text));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_flood_from_one_user_leaves_root_and_others_served() {
    let cluster = Cluster::start();
    let socket = cluster.home().join("server_sock");
    let mut holder = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "conns::hold_local_connections", "--ignored", "--nocapture", "--test-threads=1"])
        .env("HOLD_SOCKET", &socket)
        .env("HOLD_COUNT", FLOOD.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the holder");
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let held = loop {
        let line = lines.next().expect("the holder's report").unwrap();
        // libtest may print the test's name on the same line first.
        if let Some((_, n)) = line.split_once("HELD ") {
            break n.trim().parse::<usize>().unwrap();
        }
    };
    assert!(held > 0, "the holder could not connect at all");

    // Root's qstat, and another user's qsub, still get through.
    let root = run_as(&cluster, 0, "qstat", &["-B"], "", Duration::from_secs(20));
    let other = run_as(&cluster, 1, "qsub", &[], "sleep 1\n", Duration::from_secs(20));
    // nobody, over its cap, is told why.
    let nobody = run_as(&cluster, pbs_e2e::NOBODY, "qstat", &["-B"], "", Duration::from_secs(20));
    drop(holder.stdin.take());
    let _ = holder.wait();

    let (code, out) = root.expect("root's qstat hung behind nobody's connections");
    assert_eq!(code, 0, "root's qstat: {out}");
    let (code, out) = other.expect("daemon's qsub hung behind nobody's connections");
    assert_eq!(code, 0, "daemon's qsub: {out}");
    assert!(out.trim().ends_with(cluster.server_name()), "daemon's qsub: {out}");
    let (code, out) = nobody.expect("nobody's qstat hung instead of being refused");
    assert_ne!(code, 0, "nobody's qstat went past its cap: {out}");
    assert!(out.contains("No free connections"), "nobody's qstat: {out}");
    // And once nobody lets go, nobody is served again.
    pbs_e2e::wait_until("nobody served again", Duration::from_secs(20), || {
        cluster.run_as_nobody("qstat", &["-B"]).code == 0
    });
}

#[test]
fn a_half_frame_that_stalls_is_dropped_within_the_deadline() {
    let cluster = Cluster::start();
    let mut stream = UnixStream::connect(cluster.home().join("server_sock")).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write_frame(&mut stream, &Hello::local(Role::Client)).unwrap();
    let welcome: HelloReply = read_frame(&mut stream, MAX_REPLY_FRAME_LEN).unwrap().unwrap();
    assert!(matches!(welcome, HelloReply::Welcome { .. }), "{welcome:?}");
    // A request announcing 100 bytes, of which 10 come; then nothing.
    stream.write_all(&100u32.to_be_bytes()).unwrap();
    stream.write_all(br#"{"id":1,"r"#).unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    // The server may say why before closing; what matters is that it closes.
    let read = stream.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(read.is_ok(), "the server kept the stalled connection open for {waited:?}: {read:?}");
    assert!(waited < Duration::from_secs(16), "dropped only after {waited:?}");
    // Everyone else is served as before.
    let mut client = cluster.client();
    client.status(pbs_proto::Request::StatusServer { attrs: vec![] }).expect("server status");
}

#[test]
fn a_tcp_peer_that_sends_nothing_is_dropped() {
    let cluster = Cluster::start();
    let port = cluster.port();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let read = stream.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(read.is_ok(), "the server kept a silent TCP peer for {waited:?}: {read:?}");
    assert!(waited < Duration::from_secs(16), "dropped only after {waited:?}");
}

/// A TCP connection to `port` on loopback from the local address `from` (any 127.x
/// address is this host's), so that one test can stand for peers at several addresses.
fn connect_from(from: Ipv4Addr, port: u16) -> TcpStream {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, SockaddrIn, bind, connect, socket};
    let fd = socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).expect("socket");
    bind(fd.as_raw_fd(), &SockaddrIn::from(SocketAddrV4::new(from, 0))).expect("bind");
    connect(fd.as_raw_fd(), &SockaddrIn::from(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))).expect("connect");
    TcpStream::from(fd)
}

/// `per_address` connections that say nothing from each of `addresses` addresses
/// (127.0.0.2 on).
fn idle_connections(port: u16, addresses: u8, per_address: usize) -> Vec<TcpStream> {
    (0..addresses)
        .flat_map(|i| (0..per_address).map(move |_| connect_from(Ipv4Addr::new(127, 0, 0, 2 + i), port)))
        .collect()
}

/// A local user on a compute node holds every connection the mom used to serve (64, 16
/// from each of 4 addresses) while the server restarts: the server's link still gets in at
/// once, not when those connections time out 10 s later.
#[test]
fn idle_connections_do_not_keep_a_restarted_server_from_its_mom() {
    let mut cluster = Cluster::with_moms(1, 1);
    let port: u16 = cluster.node_attr("n1", "Port").expect("the mom's port").parse().unwrap();
    cluster.kill9();
    wait_until("the mom saw its link end", Duration::from_secs(10), || {
        cluster.mom_stderr("n1").lines().any(|l| l.contains("server link from") && l.contains("closed"))
    });
    let idle = idle_connections(port, 4, 16);
    cluster.start_server();
    wait_until("the restarted server linked to its mom", Duration::from_secs(8), || {
        cluster.node_attr("n1", "state").as_deref() == Some("free")
    });
    drop(idle);
    let id = cluster.qsub(&["--", "/bin/true"]);
    cluster.wait_job_state(&id, "F", Duration::from_secs(30));
}

/// Connections that say nothing from 8 addresses, 64 each, held every TCP slot the server
/// used to have (512): a scheduler with its key still links, at once.
#[test]
fn idle_connections_from_many_addresses_do_not_keep_the_scheduler_out() {
    let cluster = Cluster::start();
    let key_file = cluster.dir().join("sched.key");
    cluster.write_sched_key(&key_file).expect("pbs_server --sched-key");
    let key = pbs_proto::keys::read_key_file(&key_file).expect("the scheduler's key");
    let idle = idle_connections(cluster.port(), 8, 64);
    let mut writer = TcpStream::connect(("127.0.0.1", cluster.port())).expect("connect");
    writer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reader = writer.try_clone().unwrap();
    let linked = pbs_proto::link::connect_blocking(&mut reader, &mut writer, &key, &Role::Scheduler, &Role::Server);
    assert!(linked.is_ok(), "the scheduler was kept out: {:?}\n{}", linked.err(), cluster.server_stderr());
    drop(idle);
}

#[test]
fn jobs_with_a_mebibyte_attribute_value_still_reach_the_scheduler_and_run() {
    let cluster = Cluster::with_moms(1, 4);
    cluster.qmgr("create resource big type=string");
    cluster.qmgr("set server scheduling = False");
    let mut client = cluster.client();
    let big = "x".repeat(1024 * 1024);
    let ids: Vec<String> = (0..20)
        .map(|_| {
            let attrs = vec![pbs_proto::Attr::new("Resource_List.big", big.clone())];
            client.submit(attrs, "#!/bin/sh\ntrue\n".into(), None).expect("submit")
        })
        .collect();
    // One request touching them all: the scheduler hears of 20 MiB of jobs at once, more
    // than one frame may carry.
    let mut args = vec!["-l", "walltime=00:10:00"];
    args.extend(ids.iter().map(String::as_str));
    cluster.run("qalter", &args).ok();
    cluster.qmgr("set server scheduling = True");
    for id in &ids {
        cluster.wait_job_state(id, "F", Duration::from_secs(120));
    }
    assert!(!cluster.sched_stderr().contains("Lost the server connection"), "{}", cluster.sched_stderr());
}

#[test]
fn a_scheduler_that_stops_reading_gets_coalesced_changes_not_a_backlog() {
    let cluster = Cluster::start();
    cluster.allow_root_jobs();
    // A scheduler (root on the local socket) that takes its Welcome, then reads nothing.
    let mut sched = UnixStream::connect(cluster.home().join("server_sock")).expect("connect");
    sched.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write_frame(&mut sched, &Hello::local(Role::Scheduler)).unwrap();
    let welcome: HelloReply = read_frame(&mut sched, MAX_REPLY_FRAME_LEN).unwrap().unwrap();
    assert!(matches!(welcome, HelloReply::Welcome { .. }), "{welcome:?}");
    // Each submission is a change for the scheduler: far more of them than the link's
    // queue and the socket's buffer hold.
    const JOBS: usize = 4000;
    let mut client = cluster.client();
    let mut ids = std::collections::BTreeSet::new();
    for _ in 0..JOBS {
        ids.insert(client.submit(vec![], "#!/bin/sh\ntrue\n".into(), None).expect("submit"));
    }
    // Now it reads: every job arrives, in fewer frames than there were changes.
    let mut frames = 0;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < JOBS {
        let frame: pbs_proto::sched::ToSched = read_frame(&mut sched, MAX_REPLY_FRAME_LEN).unwrap().unwrap();
        frames += 1;
        match frame {
            pbs_proto::sched::ToSched::Snapshot { snapshot, .. } => {
                seen.extend(snapshot.jobs.into_iter().map(|j| j.id));
            }
            pbs_proto::sched::ToSched::Changes { changes, .. } => {
                for change in changes {
                    if let pbs_proto::sched::SchedChange::Job { job } = change {
                        seen.insert(job.id);
                    }
                }
            }
            _ => {}
        }
    }
    assert_eq!(seen, ids);
    assert!(frames < JOBS * 3 / 4, "{frames} frames for {JOBS} submissions: the changes were not coalesced");
}
