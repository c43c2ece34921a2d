//! Connections to the server and one burst of frames over them, per kind of peer.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pbs_proto::sched::{Action, FromSched, JobUpdate, RunDecision};
use pbs_proto::{Attr, Hello, HelloReply, MAX_REPLY_FRAME_LEN, MgrCommand, MgrObject, Request, RequestFrame, Role};
use serde_json::Value;

use crate::hostile::{Gen, frame, mutate};

/// How long the fuzzer waits for a reply before it gives up on a connection (a request may
/// legitimately wait longer, e.g. a run for the scheduler; that costs the server nothing).
const REPLY_WAIT: Duration = Duration::from_secs(2);

pub(crate) trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// One connection and what it is for.
pub(crate) struct Conn {
    stream: Box<dyn Stream>,
}

pub(crate) fn connect_unix(path: &Path, wait: Duration) -> std::io::Result<Conn> {
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(wait))?;
    stream.set_write_timeout(Some(wait))?;
    Ok(Conn { stream: Box::new(stream) })
}

pub(crate) fn connect_tcp(addr: &str, wait: Duration) -> std::io::Result<(Conn, TcpStream)> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(wait))?;
    stream.set_write_timeout(Some(wait))?;
    let _ = stream.set_nodelay(true);
    let keep = stream.try_clone()?;
    Ok((Conn { stream: Box::new(stream) }, keep))
}

impl Conn {
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).and_then(|()| self.stream.flush()).is_ok()
    }

    pub(crate) fn send<T: serde::Serialize>(&mut self, message: &T) -> bool {
        match serde_json::to_vec(message) {
            Ok(body) => self.send_raw(&frame(&body)),
            Err(_) => false,
        }
    }

    /// The next frame as JSON; `None` on a timeout, a close or a frame that is not JSON.
    pub(crate) fn recv(&mut self) -> Option<Value> {
        pbs_proto::read_frame::<Value>(&mut self.stream, MAX_REPLY_FRAME_LEN).ok().flatten()
    }

    /// The whole reply to request `id` (parts joined): its code and body, or `None`.
    pub(crate) fn reply(&mut self, id: u64) -> Option<(u32, Value)> {
        loop {
            let part = self.recv()?;
            if part.get("type").is_some() {
                // The Welcome (or a refusal) of a pipelined Hello.
                if part["type"] == "refused" {
                    return None;
                }
                continue;
            }
            let code = part["code"].as_u64().and_then(|c| u32::try_from(c).ok()).unwrap_or(u32::MAX);
            if part["id"].as_u64() == Some(id) && !part["more"].as_bool().unwrap_or(false) {
                return Some((code, part["body"].clone()));
            }
            if part["id"].as_u64() != Some(id) && part["id"].as_u64() != Some(0) {
                return Some((u32::MAX, Value::Null));
            }
            if part["id"].as_u64() == Some(0) {
                return Some((code, Value::Null));
            }
        }
    }
}

/// Which peer sends a burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub(crate) enum Peer {
    /// The Unix socket as the invoking user (root: a manager).
    Root,
    /// The Unix socket after setuid to `nobody`.
    Nobody,
    /// The batch port, without the cluster key.
    Tcp,
}

/// What a run did, for the report.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) bursts: u64,
    pub(crate) connections: u64,
    pub(crate) frames: u64,
    pub(crate) bytes: u64,
    pub(crate) requests: BTreeMap<String, u64>,
    pub(crate) codes: BTreeMap<u32, u64>,
    pub(crate) unanswered: u64,
    pub(crate) slowest_check: Duration,
}

impl Stats {
    pub(crate) fn add(&mut self, other: &Stats) {
        self.bursts += other.bursts;
        self.connections += other.connections;
        self.frames += other.frames;
        self.bytes += other.bytes;
        self.unanswered += other.unanswered;
        for (k, v) in &other.requests {
            *self.requests.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.codes {
            *self.codes.entry(*k).or_default() += v;
        }
        self.slowest_check = self.slowest_check.max(other.slowest_check);
    }

    pub(crate) fn summary(&self) -> String {
        let requests: Vec<String> = self.requests.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let codes: Vec<String> = self.codes.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        format!(
            "{} bursts, {} connections, {} frames ({} KiB); requests: {}; reply codes: {}; {} unanswered within {} s; slowest status check {} ms",
            self.bursts,
            self.connections,
            self.frames,
            self.bytes / 1024,
            requests.join(", "),
            codes.join(" "),
            self.unanswered,
            REPLY_WAIT.as_secs(),
            self.slowest_check.as_millis()
        )
    }
}

/// Where the server is and who the fuzzer is talking as.
pub(crate) struct Target<'a> {
    pub(crate) socket: &'a Path,
    pub(crate) tcp: Option<&'a str>,
}

/// Something the server did that it must never do.
pub(crate) struct Violation(pub(crate) String);

/// What a manager changed, to be undone at the end of its phase.
#[derive(Default)]
pub(crate) struct Undo {
    /// `(object, name)` created.
    pub(crate) created: Vec<(MgrObject, String)>,
    /// Server and scheduler attributes set or unset.
    pub(crate) touched: Vec<(MgrObject, String)>,
}

/// One burst: a connection (or a few), some frames, the replies read. Returns what the
/// burst sent, for the report of a failure after it.
pub(crate) fn burst(
    target: &Target<'_>,
    peer: Peer,
    g: &mut Gen,
    stats: &mut Stats,
    undo: &mut Undo,
    idle: &mut Vec<TcpStream>,
    current: &Mutex<String>,
) -> Result<Vec<String>, Violation> {
    let mut log = Log { lines: Vec::new(), current };
    g.huge_left = 1;
    stats.bursts += 1;
    match peer {
        Peer::Tcp => tcp_burst(target, g, stats, &mut log, idle)?,
        Peer::Root | Peer::Nobody => local_burst(target, peer, g, stats, undo, &mut log)?,
    }
    Ok(log.lines)
}

/// What a burst sent, and the frame it is sending now, which the other lanes' checks
/// report if the server stops answering meanwhile.
pub(crate) struct Log<'a> {
    lines: Vec<String>,
    current: &'a Mutex<String>,
}

impl Log<'_> {
    fn push(&mut self, line: String) {
        if let Ok(mut current) = self.current.lock() {
            current.clone_from(&line);
        }
        if self.lines.len() < 40 {
            self.lines.push(line);
        }
    }
}

fn note(stats: &mut Stats, log: &mut Log<'_>, what: &str, bytes: usize) {
    stats.frames += 1;
    stats.bytes += bytes as u64;
    log.push(format!("{what} ({bytes} bytes)"));
}

/// The start of a frame's body, for the report of a failure.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(160)]).into_owned();
    if body.len() > 160 { format!("{text}...") } else { text }
}

fn kind_of(request: &Request) -> String {
    let text = serde_json::to_value(request).ok();
    text.and_then(|v| v["kind"].as_str().map(str::to_string)).unwrap_or_default()
}

fn local_burst(
    target: &Target<'_>,
    peer: Peer,
    g: &mut Gen,
    stats: &mut Stats,
    undo: &mut Undo,
    log: &mut Log<'_>,
) -> Result<(), Violation> {
    let Ok(mut conn) = connect_unix(target.socket, REPLY_WAIT) else {
        log.push("connect failed".into());
        return Ok(());
    };
    stats.connections += 1;
    let choice = g.rng.below(100);
    if choice < 5 {
        let bytes = g.rng.noise(1, 4096);
        note(stats, log, "random bytes before the Hello", bytes.len());
        conn.send_raw(&bytes);
        let _ = conn.recv();
        return Ok(());
    }
    if choice < 10 {
        // A Hello bent out of shape.
        let hello = serde_json::to_vec(&g.hello(Role::Client)).unwrap_or_default();
        let bytes = mutate(&mut g.rng, frame(&hello));
        note(stats, log, "mutated Hello", bytes.len());
        conn.send_raw(&bytes);
        let _ = conn.recv();
        return Ok(());
    }
    let role = if choice < 18 { g.role() } else { Role::Client };
    let hello = g.hello(role.clone());
    note(stats, log, &format!("Hello {:?} v{}", role, hello.version), 0);
    if !conn.send(&hello) {
        return Ok(());
    }
    let answer = conn.recv();
    let welcomed = answer.as_ref().is_some_and(|a| a["type"] == "welcome");
    if welcomed && peer == Peer::Nobody && role != Role::Client {
        return Err(Violation(format!("nobody was welcomed on the Unix socket as {role:?}")));
    }
    if !welcomed {
        return Ok(());
    }
    if role == Role::Scheduler {
        sched_burst(&mut conn, g, stats, log);
        return Ok(());
    }
    match g.rng.below(100) {
        0..=7 => {
            let bytes = g.rng.noise(0, 8192);
            let bytes = if g.rng.chance(50) { frame(&bytes) } else { bytes };
            note(stats, log, "random bytes", bytes.len());
            conn.send_raw(&bytes);
            let _ = conn.recv();
        }
        8..=12 => {
            // A length the server must refuse before reading the body.
            let len = (16u32 << 20) + 1 + g.rng.below(u64::from(u32::MAX - (16 << 20) - 1)) as u32;
            note(stats, log, &format!("length prefix {len}"), 4);
            conn.send_raw(&len.to_be_bytes());
            conn.send_raw(&g.rng.noise(0, 1024));
            let _ = conn.recv();
        }
        13..=17 => {
            // A frame cut short, then the connection closed mid-frame.
            let (value, _) = g.request_json(1);
            let bytes = frame(&serde_json::to_vec(&value).unwrap_or_default());
            let cut = g.rng.index(bytes.len());
            note(stats, log, "truncated frame", cut);
            conn.send_raw(&bytes[..cut]);
        }
        18..=22 => {
            let deep = g.deep_text();
            let body = if g.rng.chance(50) {
                format!(r#"{{"id":1,"request":{{"kind":"QueueJob","attrs":{deep},"script":"","destination":null}}}}"#)
            } else {
                deep
            };
            note(stats, log, "deeply nested JSON", body.len());
            conn.send_raw(&frame(body.as_bytes()));
            let _ = conn.reply(1);
        }
        _ => requests(&mut conn, peer, g, stats, undo, log)?,
    }
    Ok(())
}

/// A sequence of request frames on a welcomed connection, each answered before the next.
fn requests(
    conn: &mut Conn,
    peer: Peer,
    g: &mut Gen,
    stats: &mut Stats,
    undo: &mut Undo,
    log: &mut Log<'_>,
) -> Result<(), Violation> {
    for id in 1..=1 + g.rng.below(20) {
        let (value, request) = g.request_json(id);
        let mut body = serde_json::to_vec(&value).unwrap_or_default();
        let mutated = g.rng.chance(10);
        if mutated {
            body = mutate(&mut g.rng, body);
        }
        let kind = request.as_ref().map(kind_of).unwrap_or_else(|| "malformed".into());
        let kind = if mutated { format!("mutated {kind}") } else { kind };
        *stats.requests.entry(kind.clone()).or_default() += 1;
        note(stats, log, &format!("{kind} {}", excerpt(&body)), body.len());
        if !conn.send_raw(&frame(&body)) {
            return Ok(());
        }
        let Some((code, body)) = conn.reply(id) else {
            stats.unanswered += 1;
            return Ok(());
        };
        *stats.codes.entry(code).or_default() += 1;
        if code != 0 || mutated {
            continue;
        }
        let Some(request) = request else { continue };
        match (&request, peer) {
            (Request::QueueJob { .. }, _) => {
                if let Some(id) = body["data"].as_str() {
                    g.own.push(id.to_string());
                }
            }
            (Request::Manager { .. } | Request::RunJob { .. }, Peer::Nobody) => {
                return Err(Violation(format!("nobody's {kind} succeeded: {value}")));
            }
            (Request::Manager { command, object, names, attrs }, _) => match (command, object) {
                (MgrCommand::Create, _) => undo.created.extend(names.iter().map(|n| (*object, n.clone()))),
                (MgrCommand::Set | MgrCommand::Unset, MgrObject::Server | MgrObject::Sched) => {
                    undo.touched.extend(attrs.iter().map(|a| (*object, a.name.clone())));
                }
                _ => {}
            },
            _ => {}
        }
    }
    Ok(())
}

/// Root may connect as the scheduler: random decisions on the scheduler's link.
fn sched_burst(conn: &mut Conn, g: &mut Gen, stats: &mut Stats, log: &mut Log<'_>) {
    // The snapshot comes first; it may be large, and is not needed.
    let _ = conn.recv();
    for cycle in 0..1 + g.rng.below(5) {
        let run: Vec<RunDecision> = (0..g.rng.index(3))
            .map(|_| RunDecision { job_id: g.job_id(), exec_vnode: g.string(), alternative: None })
            .collect();
        let updates: Vec<JobUpdate> = (0..g.rng.index(3))
            .map(|_| JobUpdate {
                job_id: g.job_id(),
                attrs: (0..1 + g.rng.index(3))
                    .map(|_| {
                        let name = g
                            .rng
                            .pick(&[
                                "comment",
                                "estimated.start_time",
                                "estimated.exec_vnode",
                                "Resource_List.walltime",
                                "euser",
                                "Job_Owner",
                            ])
                            .to_string();
                        Attr(name, g.string())
                    })
                    .collect(),
            })
            .collect();
        // Runs and updates mixed in any order: the server takes them as they come.
        let mut actions: Vec<Action> = Vec::new();
        for action in run.into_iter().map(Action::Run).chain(updates.into_iter().map(Action::Update)) {
            let at = g.rng.index(actions.len() + 1);
            actions.insert(at, action);
        }
        let decisions = FromSched::Decisions { cycle, qrun: None, actions };
        let mut body = serde_json::to_vec(&decisions).unwrap_or_default();
        if g.rng.chance(20) {
            body = mutate(&mut g.rng, body);
        }
        note(stats, log, "scheduler Decisions", body.len());
        *stats.requests.entry("sched Decisions".into()).or_default() += 1;
        if !conn.send_raw(&frame(&body)) {
            return;
        }
        // Changes and then DecisionsApplied come back; read until that or a timeout.
        let deadline = Instant::now() + REPLY_WAIT;
        while Instant::now() < deadline {
            match conn.recv() {
                Some(v) if v["kind"] == "DecisionsApplied" => break,
                Some(_) => {}
                None => return,
            }
        }
    }
}

fn tcp_burst(
    target: &Target<'_>,
    g: &mut Gen,
    stats: &mut Stats,
    log: &mut Log<'_>,
    idle: &mut Vec<TcpStream>,
) -> Result<(), Violation> {
    let Some(addr) = target.tcp else { return Ok(()) };
    let Ok((mut conn, keep)) = connect_tcp(addr, REPLY_WAIT) else {
        log.push("TCP connect failed".into());
        return Ok(());
    };
    stats.connections += 1;
    match g.rng.below(100) {
        0..=9 => {
            let bytes = g.rng.noise(1, 8192);
            note(stats, log, "TCP random bytes", bytes.len());
            conn.send_raw(&bytes);
            let _ = conn.recv();
        }
        10..=14 => {
            // Says nothing, and stays connected across bursts.
            note(stats, log, "TCP silent peer", 0);
            if idle.len() >= 16 {
                idle.remove(0);
            }
            idle.push(keep);
        }
        15..=22 => {
            let len = 4096 + g.rng.below(u64::from(u32::MAX - 4096)) as u32;
            note(stats, log, &format!("TCP length prefix {len}"), 4);
            conn.send_raw(&len.to_be_bytes());
            conn.send_raw(&g.rng.noise(0, 4096));
            let _ = conn.recv();
        }
        23..=30 => {
            let node = if g.rng.chance(50) { g.string() } else { "x".repeat(1 << 20) };
            let hello = Hello::local(Role::Mom { node });
            note(stats, log, "TCP Hello with a huge node name", 0);
            conn.send(&hello);
            welcomed_without_key(&mut conn)?;
        }
        _ => {
            let role = g.role();
            let hello = g.hello(role.clone());
            let mut body = serde_json::to_vec(&hello).unwrap_or_default();
            if g.rng.chance(15) {
                body = mutate(&mut g.rng, body);
            }
            note(stats, log, &format!("TCP Hello {role:?}"), body.len());
            if !conn.send_raw(&frame(&body)) {
                return Ok(());
            }
            // The Hello carries a made-up handshake message: read the answer, or go straight
            // on with requests.
            if g.rng.chance(50) {
                welcomed_without_key(&mut conn)?;
            }
            for id in 1..=1 + g.rng.below(5) {
                let (value, request) = g.request_json(id);
                let kind = request.as_ref().map(kind_of).unwrap_or_else(|| "malformed".into());
                *stats.requests.entry(format!("TCP {kind}")).or_default() += 1;
                note(stats, log, &format!("TCP {kind} {}", excerpt(value.to_string().as_bytes())), 0);
                if !conn.send(&value) {
                    break;
                }
                match conn.recv() {
                    Some(reply) if reply["code"] == 0 && reply.get("id").is_some() => {
                        return Err(Violation(format!("unauthenticated TCP peer's {kind} succeeded: {reply}")));
                    }
                    Some(reply) if reply["type"] == "welcome" => {
                        return Err(Violation("unauthenticated TCP peer was welcomed".into()));
                    }
                    Some(_) => {}
                    None => break,
                }
            }
        }
    }
    Ok(())
}

/// Reads the server's answers after a TCP Hello/proof; a Welcome is a violation.
fn welcomed_without_key(conn: &mut Conn) -> Result<bool, Violation> {
    for _ in 0..2 {
        match conn.recv() {
            Some(v) if v["type"] == "welcome" => {
                return Err(Violation(format!("unauthenticated TCP peer was welcomed: {v}")));
            }
            Some(v) if v["type"] == "challenge" => continue,
            _ => return Ok(false),
        }
    }
    Ok(false)
}

/// Asks for the server's status on a fresh local connection; the time it took, or why not.
pub(crate) fn status_check(socket: &Path, deadline: Duration, job: Option<&str>) -> Result<(Duration, String), String> {
    let start = Instant::now();
    let mut conn =
        connect_unix(socket, deadline).map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
    let hello = Hello::local(Role::Client);
    if !conn.send(&hello) {
        return Err("the Hello could not be sent".into());
    }
    let server_name = match conn.recv().map(serde_json::from_value::<HelloReply>) {
        Some(Ok(HelloReply::Welcome { server_name, .. })) => server_name,
        other => return Err(format!("no Welcome within {} ms: {other:?}", deadline.as_millis())),
    };
    let mut requests = vec![Request::StatusServer { attrs: vec![] }];
    if let Some(job) = job {
        requests.push(Request::StatusJob {
            ids: vec![job.to_string()],
            queues: vec![],
            attrs: vec!["job_state".into()],
            history: false,
            subjobs: false,
        });
    }
    for (id, request) in (1..).zip(requests) {
        let kind = kind_of(&request);
        if !conn.send(&RequestFrame { id, request }) {
            return Err(format!("{kind} could not be sent"));
        }
        match conn.reply(id) {
            Some((0, _)) => {}
            Some((code, _)) if kind == "StatusJob" && code != u32::MAX => {}
            other => return Err(format!("{kind} not answered within {} ms: {other:?}", deadline.as_millis())),
        }
    }
    let took = start.elapsed();
    if took > deadline {
        return Err(format!("status took {} ms, more than {} ms", took.as_millis(), deadline.as_millis()));
    }
    Ok((took, server_name))
}

/// One request on a fresh local connection, as the current user.
pub(crate) fn request(socket: &Path, request: Request) -> Result<(u32, Value), String> {
    let mut conn = connect_unix(socket, Duration::from_secs(30)).map_err(|e| format!("connect: {e}"))?;
    let hello = Hello::local(Role::Client);
    if !conn.send(&hello) || !conn.send(&RequestFrame { id: 1, request }) {
        return Err("send failed".into());
    }
    conn.reply(1).ok_or_else(|| "no reply".to_string())
}

/// The attributes of jobs, by id, as a status shows them.
pub(crate) fn job_attrs(socket: &Path, ids: &[String]) -> Result<BTreeMap<String, BTreeMap<String, String>>, String> {
    let (code, body) = request(
        socket,
        Request::StatusJob { ids: ids.to_vec(), queues: vec![], attrs: vec![], history: true, subjobs: false },
    )?;
    if code != 0 {
        return Err(format!("status of the protected jobs failed with {code}"));
    }
    let mut out = BTreeMap::new();
    for object in body["data"]["objects"].as_array().into_iter().flatten() {
        let name = object["name"].as_str().unwrap_or_default().to_string();
        let attrs = object["attrs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|pair| Some((pair[0].as_str()?.to_string(), pair[1].as_str()?.to_string())))
            .collect();
        out.insert(name, attrs);
    }
    Ok(out)
}

/// Attributes of the server or the default scheduler, by name.
pub(crate) fn object_attrs(socket: &Path, object: MgrObject) -> BTreeMap<String, String> {
    let request = match object {
        MgrObject::Sched => Request::StatusSched { names: vec![] },
        _ => Request::StatusServer { attrs: vec![] },
    };
    let Ok((0, body)) = self::request(socket, request) else { return BTreeMap::new() };
    body["data"]["objects"][0]["attrs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| Some((pair[0].as_str()?.to_string(), pair[1].as_str()?.to_string())))
        .collect()
}

/// The largest frames a peer may send, each once: the warm-up starts with them so that the
/// memory the server keeps for its biggest buffers counts in the baseline, not as growth.
pub(crate) fn largest(target: &Target<'_>, peer: Peer, g: &mut Gen, stats: &mut Stats) {
    // A little under the 16 MiB request limit, leaving room for the rest of the frame.
    let big = "x".repeat((16 << 20) - 4096);
    let mut requests = vec![
        Request::QueueJob { attrs: vec![], script: big.clone(), destination: None },
        Request::QueueJob {
            attrs: vec![Attr::new("Variable_List", format!("A={big}"))],
            script: String::new(),
            destination: None,
        },
        Request::StatusJob { ids: vec![big.clone()], queues: vec![], attrs: vec![], history: false, subjobs: false },
    ];
    match peer {
        Peer::Tcp => {
            let Some(addr) = target.tcp else { return };
            if let Ok((mut conn, _)) = connect_tcp(addr, REPLY_WAIT) {
                stats.connections += 1;
                conn.send(&Hello::local(Role::Mom { node: big }));
                let _ = conn.recv();
            }
        }
        Peer::Root | Peer::Nobody => {
            // An alteration of its own job (one of the two just submitted, if accepted).
            requests.push(Request::ModifyJob { ids: vec![], attrs: vec![Attr::new("Job_Name", big.clone())] });
            for mut request in requests {
                if let Request::ModifyJob { ids, .. } = &mut request {
                    ids.extend(g.own.first().cloned());
                }
                let Ok(mut conn) = connect_unix(target.socket, REPLY_WAIT) else { continue };
                stats.connections += 1;
                let hello = Hello::local(Role::Client);
                if conn.send(&hello) && conn.send(&RequestFrame { id: 1, request }) {
                    if let Some((0, body)) = conn.reply(1) {
                        if let Some(id) = body["data"].as_str() {
                            g.own.push(id.to_string());
                        }
                    }
                }
            }
            // Millions of tiny values in one frame, which reading into a tree multiplies.
            let mut tiny = br#"{"id":1,"request":{"kind":"HoldJob","hold_types":"u","ids":["#.to_vec();
            while tiny.len() < (16 << 20) - 64 {
                tiny.extend_from_slice(b"[0],");
            }
            tiny.extend_from_slice(b"[0]]}}");
            if let Ok(mut conn) = connect_unix(target.socket, REPLY_WAIT) {
                stats.connections += 1;
                if conn.send(&Hello::local(Role::Client)) && conn.send_raw(&frame(&tiny)) {
                    let _ = conn.reply(1);
                }
            }
        }
    }
}
