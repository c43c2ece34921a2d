//! pbs_fuzz: a wire fuzzer for a live pbs_server. It sends random and mutated frames, and
//! valid frames with hostile values, as a local user (root, and `nobody` after a setuid)
//! and as an unauthenticated TCP peer, for a given time, and checks after every burst that
//! the server is alive and answers a status request on a fresh connection within a
//! deadline. Before fuzzing it submits a few jobs as root and afterwards checks that
//! neither `nobody` nor the TCP peer changed them; at the end the server's RSS must be at
//! most `--max-rss-growth` times what it was after a warm-up. Prints what it did; exits 1
//! on a failure, 2 when it cannot run.
//!
//! Point it at a test server only, one without moms (or whose moms may run anything): root's
//! fuzzed jobs carry hostile output paths and scripts, and root's qmgr requests change the
//! server (its own `fz*` objects, and server attributes it puts back afterwards).

mod hostile;
mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp, Request};

use crate::hostile::{Gen, Rng};
use crate::wire::{Peer, Stats, Target, Undo};

/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

/// Streams of bursts from this number on are warm-ups.
const WARM_UP_STREAMS: u64 = 100;

/// Attributes of a protected job that may change without anyone touching it.
const MAY_CHANGE: &[&str] = &["eligible_time", "accrue_type"];

#[derive(Parser, Debug)]
#[command(
    name = "pbs_fuzz",
    version,
    about = "Fuzz a live pbs_server over its Unix socket and batch port (a test server without moms only)"
)]
struct Args {
    /// pbs.conf of the server (PBS_HOME, PBS_BATCH_SERVICE_PORT).
    #[arg(long, env = "PBS_CONF_FILE", default_value = pbs_core::conf::DEFAULT_CONF_FILE)]
    conf: PathBuf,
    /// The server's Unix socket (default PBS_HOME/server_sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// The batch port, host:port (default 127.0.0.1:PBS_BATCH_SERVICE_PORT).
    #[arg(long)]
    tcp: Option<String>,
    /// The server's pid (default: PBS_HOME/pbs_server.pid).
    #[arg(long)]
    server_pid: Option<u32>,
    /// How long to fuzz, warm-up included.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Seed of the generator (default: from the clock); printed, so a run can be replayed.
    #[arg(long)]
    seed: Option<u64>,
    /// Which peers to fuzz as: `root` (the Unix socket as the invoking user), `nobody`
    /// (the Unix socket after setuid to nobody; needs root), `tcp` (the batch port without
    /// the cluster key).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Peer::Root, Peer::Nobody, Peer::Tcp])]
    peers: Vec<Peer>,
    /// Jobs to submit as root before fuzzing, that nobody and the TCP peer must not change.
    #[arg(long, default_value_t = 3)]
    jobs: usize,
    /// How long the status check after each burst may take, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    deadline_ms: u64,
    /// Largest allowed ratio of the server's RSS at the end to its RSS after the warm-up.
    #[arg(long, default_value_t = 1.2)]
    max_rss_growth: f64,
    /// Print the server's RSS every this many seconds while fuzzing (0: never).
    #[arg(long, default_value_t = 0)]
    trace_rss: u64,
    /// Connections each peer keeps busy at once.
    #[arg(long, default_value_t = 2)]
    parallel: u64,
    /// Internal: run one peer's phase in this process (the setuid child) and exit.
    #[arg(long, hide = true)]
    worker: Option<Peer>,
    /// Internal: the protected jobs, for the worker.
    #[arg(long, hide = true)]
    protected: Vec<String>,
    /// Internal: which stream of bursts the worker draws from.
    #[arg(long, hide = true, default_value_t = 0)]
    stream: u64,
}

/// Everything a phase needs.
struct Ctx {
    socket: PathBuf,
    tcp: Option<String>,
    pid: u32,
    seed: u64,
    deadline: Duration,
    protected: Vec<String>,
    server_name: String,
    args: Args,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("pbs_fuzz: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<bool> {
    let (socket, tcp, pid) = locate(&args)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    let deadline = Duration::from_millis(args.deadline_ms);
    let (_, server_name) = wire::status_check(&socket, deadline, None)
        .map_err(|e| anyhow::anyhow!("the server does not answer before fuzzing: {e}"))?;
    let mut ctx = Ctx { socket, tcp, pid, seed, deadline, protected: args.protected.clone(), server_name, args };
    if let Some(peer) = ctx.args.worker {
        let seconds = ctx.args.seconds;
        let stream = ctx.args.stream;
        return Ok(match phase_here(&ctx, peer, Duration::from_secs(seconds), stream) {
            Ok(stats) => {
                println!("pbs_fuzz: {peer:?} worker: {}", stats.summary());
                true
            }
            Err(failure) => {
                println!("pbs_fuzz: FAIL ({peer:?}, seed {seed}): {failure}");
                false
            }
        });
    }
    match supervise(&mut ctx) {
        Ok(()) => {
            println!("pbs_fuzz: OK");
            Ok(true)
        }
        Err(failure) => {
            println!("pbs_fuzz: FAIL (seed {seed}): {failure}");
            Ok(false)
        }
    }
}

/// The socket, the batch port and the server's pid, from the flags or pbs.conf.
fn locate(args: &Args) -> Result<(PathBuf, Option<String>, u32)> {
    let conf = match std::fs::read_to_string(&args.conf) {
        Ok(text) => Some(pbs_core::conf::PbsConf::parse(&text, &[]).context("pbs.conf")?),
        Err(_) if args.socket.is_some() && args.server_pid.is_some() => None,
        Err(e) => bail!("cannot read {}: {e}", args.conf.display()),
    };
    let socket = match (&args.socket, &conf) {
        (Some(s), _) => s.clone(),
        (None, Some(conf)) => conf.server_socket(),
        (None, None) => bail!("no --socket and no pbs.conf"),
    };
    let tcp = args.tcp.clone().or_else(|| conf.as_ref().map(|c| format!("127.0.0.1:{}", c.batch_port)));
    let pid = match (args.server_pid, &conf) {
        (Some(pid), _) => pid,
        (None, Some(conf)) => {
            let path = conf.home.join("pbs_server.pid");
            std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .with_context(|| format!("no --server-pid and no pid in {}", path.display()))?
        }
        (None, None) => bail!("no --server-pid"),
    };
    Ok((socket, tcp, pid))
}

/// The server's resident set in kB, or `None` when the process is gone (or a zombie).
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let state = status.lines().find_map(|l| l.strip_prefix("State:"))?.trim().chars().next()?;
    if matches!(state, 'Z' | 'X') {
        return None;
    }
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The server's RSS once what the last requests allocated has been given back: the least
/// of samples over two seconds (the allocator returns freed pages with a delay, and a reply
/// may still be on its way out).
fn settled_rss_kb(pid: u32) -> Option<u64> {
    let mut least = rss_kb(pid)?;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(100));
        least = least.min(rss_kb(pid)?);
    }
    Some(least)
}

/// After a burst: the server is alive and answers a status request in time.
fn check(ctx: &Ctx, stats: &mut Stats) -> Result<(), String> {
    if rss_kb(ctx.pid).is_none() {
        return Err(format!("pbs_server (pid {}) is gone", ctx.pid));
    }
    let (took, _) = wire::status_check(&ctx.socket, ctx.deadline, ctx.protected.first().map(String::as_str))
        .map_err(|e| format!("pbs_server (pid {}) hangs: {e}", ctx.pid))?;
    stats.slowest_check = stats.slowest_check.max(took);
    Ok(())
}

/// Runs one peer's bursts in this process until `length` has passed, on `--parallel`
/// connections at once.
fn phase_here(ctx: &Ctx, peer: Peer, length: Duration, stream: u64) -> Result<Stats, String> {
    let until = Instant::now() + length;
    let before = if peer == Peer::Root {
        Some((wire::object_attrs(&ctx.socket, MgrObject::Server), wire::object_attrs(&ctx.socket, MgrObject::Sched)))
    } else {
        None
    };
    let stop = AtomicBool::new(false);
    let lanes_count = ctx.args.parallel.max(1);
    let inflight: Vec<Mutex<String>> = (0..lanes_count).map(|_| Mutex::new(String::new())).collect();
    let lanes: Vec<(Result<(), String>, Stats, Undo)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..lanes_count)
            .map(|lane| {
                let (stop, inflight) = (&stop, &inflight);
                scope.spawn(move || run_lane(ctx, peer, until, (stream, lane), stop, inflight))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| (Err("a fuzzing thread panicked".into()), Stats::default(), Undo::default()))
            })
            .collect()
    });
    let mut stats = Stats::default();
    let mut undo = Undo::default();
    let mut result = Ok(());
    for (lane_result, lane_stats, lane_undo) in lanes {
        stats.add(&lane_stats);
        undo.created.extend(lane_undo.created);
        undo.touched.extend(lane_undo.touched);
        if result.is_ok() {
            result = lane_result;
        }
    }
    if let Some((server, sched)) = before {
        restore(ctx, &undo, &server, &sched);
    }
    result.map(|()| stats)
}

/// One connection's worth of bursts (a lane), each followed by the checks; stops at the
/// first failure of any lane.
fn run_lane(
    ctx: &Ctx,
    peer: Peer,
    until: Instant,
    (stream, lane): (u64, u64),
    stop: &AtomicBool,
    inflight: &[Mutex<String>],
) -> (Result<(), String>, Stats, Undo) {
    let current = &inflight[usize::try_from(lane).unwrap_or(0)];
    let target = Target { socket: &ctx.socket, tcp: ctx.tcp.as_deref() };
    let mut g = Gen {
        rng: Rng::new(ctx.seed),
        protected: ctx.protected.clone(),
        own: Vec::new(),
        server_name: ctx.server_name.clone(),
        manager: peer == Peer::Root,
        huge_left: 0,
    };
    let mut stats = Stats::default();
    let mut undo = Undo::default();
    let mut idle = Vec::new();
    if stream >= WARM_UP_STREAMS && lane == 0 {
        wire::largest(&target, peer, &mut g, &mut stats);
    }
    let lane_stream = stream * 64 + lane;
    let mut index = 0u64;
    let mut next_trace = Instant::now();
    let result = loop {
        if lane == 0 && ctx.args.trace_rss > 0 && Instant::now() >= next_trace {
            println!("pbs_fuzz: {peer:?} burst {index}: RSS {} kB", rss_kb(ctx.pid).unwrap_or(0));
            next_trace += Duration::from_secs(ctx.args.trace_rss);
        }
        if Instant::now() >= until || stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        g.rng = Rng::derive(ctx.seed, lane_stream, index);
        let sent = match wire::burst(&target, peer, &mut g, &mut stats, &mut undo, &mut idle, current) {
            Ok(sent) => sent,
            Err(violation) => break Err(format!("burst {index} of stream {lane_stream}: {}", violation.0)),
        };
        if let Err(e) = check(ctx, &mut stats) {
            let others: Vec<String> = inflight
                .iter()
                .enumerate()
                .filter(|(other, _)| *other as u64 != lane)
                .filter_map(|(other, m)| m.lock().ok().map(|c| format!("lane {other}: {c}")))
                .collect();
            break Err(format!(
                "after burst {index} of stream {lane_stream} ({peer:?}), which sent: {}; the other lanes last sent: {}: {e}",
                sent.join("; "),
                others.join("; ")
            ));
        }
        if g.own.len() > 20 {
            clean_up(ctx, &mut g.own);
        }
        index += 1;
    };
    if result.is_err() {
        stop.store(true, Ordering::Relaxed);
    }
    drop(idle);
    clean_up(ctx, &mut g.own);
    (result, stats, undo)
}

/// Deletes the jobs a peer created, so the memory check measures leaks, not jobs.
fn clean_up(ctx: &Ctx, own: &mut Vec<String>) {
    if own.is_empty() {
        return;
    }
    let ids = std::mem::take(own);
    let _ = wire::request(&ctx.socket, Request::DeleteJob { ids, force: true, purge_history: true });
}

/// Undoes a manager's changes: deletes what it created, puts back the server and scheduler
/// attributes it set or unset.
fn restore(ctx: &Ctx, undo: &Undo, server: &BTreeMap<String, String>, sched: &BTreeMap<String, String>) {
    for (object, name) in &undo.created {
        let request =
            Request::Manager { command: MgrCommand::Delete, object: *object, names: vec![name.clone()], attrs: vec![] };
        let _ = wire::request(&ctx.socket, request);
    }
    for (object, name) in &undo.touched {
        let before = if *object == MgrObject::Sched { sched } else { server };
        let (command, value) = match before.get(name) {
            Some(value) => (MgrCommand::Set, value.clone()),
            None => (MgrCommand::Unset, String::new()),
        };
        let attrs = vec![MgrAttr { name: name.clone(), op: MgrOp::Set, value }];
        let _ = wire::request(&ctx.socket, Request::Manager { command, object: *object, names: vec![], attrs });
    }
}

/// Runs a phase as `peer`: `nobody` in a child process that drops to that user.
fn phase(ctx: &Ctx, peer: Peer, length: Duration, stream: u64) -> Result<Stats, String> {
    if peer != Peer::Nobody {
        return phase_here(ctx, peer, length, stream);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("--worker=nobody")
        .arg(format!("--seconds={}", length.as_secs().max(1)))
        .arg(format!("--seed={}", ctx.seed))
        .arg(format!("--stream={stream}"))
        .arg("--socket")
        .arg(&ctx.socket)
        .arg(format!("--server-pid={}", ctx.pid))
        .arg(format!("--deadline-ms={}", ctx.args.deadline_ms))
        .arg(format!("--trace-rss={}", ctx.args.trace_rss))
        .arg(format!("--parallel={}", ctx.args.parallel));
    for id in &ctx.protected {
        command.arg(format!("--protected={id}"));
    }
    // std drops the supplementary groups before the setuid.
    std::os::unix::process::CommandExt::uid(&mut command, NOBODY);
    std::os::unix::process::CommandExt::gid(&mut command, NOBODY);
    let status = command.status().map_err(|e| format!("cannot start the nobody worker: {e}"))?;
    if !status.success() {
        return Err(format!("the nobody worker failed ({status})"));
    }
    Ok(Stats::default())
}

/// Submits the jobs nobody and the TCP peer must not be able to change.
fn submit_protected(ctx: &Ctx) -> Result<Vec<String>, String> {
    let mut ids = Vec::new();
    for i in 0..ctx.args.jobs {
        let attrs = vec![
            Attr::new("Job_Name", format!("fz_protected{i}")),
            Attr::new("Hold_Types", "u"),
            Attr::new("Resource_List.walltime", "00:10:00"),
            Attr::new("Variable_List", "PBS_O_HOME=/root,PBS_O_WORKDIR=/"),
        ];
        let request = Request::QueueJob { attrs, script: "#!/bin/sh\nsleep 1\n".into(), destination: None };
        match wire::request(&ctx.socket, request) {
            Ok((0, body)) => ids.push(body["data"].as_str().unwrap_or_default().to_string()),
            Ok((code, _)) => {
                return Err(format!(
                    "the server refused root's job ({code}); allow it with `qmgr -c \"set server acl_roots = root\"`"
                ));
            }
            Err(e) => return Err(format!("submitting a protected job: {e}")),
        }
    }
    Ok(ids)
}

type Snapshot = BTreeMap<String, BTreeMap<String, String>>;

fn snapshot(ctx: &Ctx) -> Result<Snapshot, String> {
    let mut jobs = wire::job_attrs(&ctx.socket, &ctx.protected)?;
    for attrs in jobs.values_mut() {
        attrs.retain(|name, _| !MAY_CHANGE.contains(&name.as_str()) && !name.starts_with("estimated."));
    }
    Ok(jobs)
}

fn compare(before: &Snapshot, after: &Snapshot) -> Result<(), String> {
    let mut differences = Vec::new();
    for (id, old) in before {
        let Some(new) = after.get(id) else {
            differences.push(format!("{id} is gone"));
            continue;
        };
        for (name, value) in old {
            match new.get(name) {
                Some(v) if v == value => {}
                other => differences.push(format!("{id} {name}: {value:?} -> {other:?}")),
            }
        }
        for (name, value) in new {
            if !old.contains_key(name) {
                differences.push(format!("{id} {name}: unset -> {value:?}"));
            }
        }
    }
    if differences.is_empty() { Ok(()) } else { Err(format!("protected jobs changed: {}", differences.join("; "))) }
}

fn supervise(ctx: &mut Ctx) -> Result<(), String> {
    let peers: Vec<Peer> = {
        let mut p = ctx.args.peers.clone();
        p.sort();
        p.dedup();
        p
    };
    let is_root =
        std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false);
    if peers.contains(&Peer::Nobody) && !is_root {
        return Err("--peers nobody needs root (the fuzzer drops to nobody itself)".into());
    }
    println!(
        "pbs_fuzz: seed {}, {} s, peers {:?}, server {} pid {}, socket {}, batch port {}",
        ctx.seed,
        ctx.args.seconds,
        peers,
        ctx.server_name,
        ctx.pid,
        ctx.socket.display(),
        ctx.tcp.as_deref().unwrap_or("-")
    );
    let total = Duration::from_secs(ctx.args.seconds.max(1));
    let warm_up = total / 6;
    let mut all = Stats::default();
    for (i, peer) in peers.iter().enumerate() {
        let share = (warm_up / peers.len() as u32).max(Duration::from_secs(1));
        all.add(&phase(ctx, *peer, share, WARM_UP_STREAMS + i as u64)?);
    }
    let baseline =
        settled_rss_kb(ctx.pid).ok_or_else(|| format!("pbs_server (pid {}) is gone after the warm-up", ctx.pid))?;
    println!("pbs_fuzz: RSS after the warm-up: {baseline} kB");
    let share = (total.saturating_sub(warm_up) / peers.len() as u32).max(Duration::from_secs(1));
    // Root (a manager) may change any job, so it goes first, before the protected jobs
    // exist; nobody and the TCP peer then fuzz with root's jobs as targets.
    let order = peers.iter().filter(|p| **p == Peer::Root).chain(peers.iter().filter(|p| **p != Peer::Root));
    let mut before = None;
    for (i, peer) in order.enumerate() {
        if *peer != Peer::Root && before.is_none() {
            if ctx.args.jobs > 0 {
                ctx.protected = submit_protected(ctx)?;
                println!("pbs_fuzz: protected jobs (root's, held): {}", ctx.protected.join(" "));
            }
            before = Some(snapshot(ctx)?);
        }
        let start = Instant::now();
        let stats = phase(ctx, *peer, share, i as u64)?;
        if *peer != Peer::Nobody {
            println!("pbs_fuzz: {peer:?} for {:.1} s: {}", start.elapsed().as_secs_f64(), stats.summary());
        }
        all.add(&stats);
    }
    if let Some(before) = before {
        compare(&before, &snapshot(ctx)?)?;
        println!("pbs_fuzz: protected jobs unchanged");
    }
    check(ctx, &mut all)?;
    let end = settled_rss_kb(ctx.pid).ok_or_else(|| format!("pbs_server (pid {}) is gone at the end", ctx.pid))?;
    let ratio = end as f64 / baseline.max(1) as f64;
    println!(
        "pbs_fuzz: RSS {baseline} kB after the warm-up, {end} kB at the end ({ratio:.2}x, limit {:.2}x)",
        ctx.args.max_rss_growth
    );
    if ratio > ctx.args.max_rss_growth {
        return Err(format!("pbs_server's memory grew {ratio:.2}x ({baseline} kB -> {end} kB)"));
    }
    if !ctx.protected.is_empty() {
        clean_up(ctx, &mut ctx.protected.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(pairs: &[(&str, &str, &str)]) -> Snapshot {
        let mut out = Snapshot::new();
        for (id, name, value) in pairs {
            out.entry(id.to_string()).or_default().insert(name.to_string(), value.to_string());
        }
        out
    }

    #[test]
    fn any_change_to_a_protected_job_is_reported() {
        let before = jobs(&[("1.s", "Job_Name", "a"), ("1.s", "Hold_Types", "u"), ("2.s", "Job_Name", "b")]);
        assert!(compare(&before, &before.clone()).is_ok());
        let altered = jobs(&[("1.s", "Job_Name", "x"), ("1.s", "Hold_Types", "u"), ("2.s", "Job_Name", "b")]);
        assert!(compare(&before, &altered).unwrap_err().contains("1.s Job_Name"));
        let released = jobs(&[("1.s", "Job_Name", "a"), ("2.s", "Job_Name", "b")]);
        assert!(compare(&before, &released).unwrap_err().contains("Hold_Types"));
        let added = jobs(&[
            ("1.s", "Job_Name", "a"),
            ("1.s", "Hold_Types", "u"),
            ("1.s", "Priority", "9"),
            ("2.s", "Job_Name", "b"),
        ]);
        assert!(compare(&before, &added).unwrap_err().contains("Priority"));
        let deleted = jobs(&[("1.s", "Job_Name", "a"), ("1.s", "Hold_Types", "u")]);
        assert!(compare(&before, &deleted).unwrap_err().contains("2.s is gone"));
    }

    #[test]
    fn a_burst_draws_the_same_values_from_the_same_seed() {
        let draw = |seed, index| {
            let mut rng = Rng::derive(seed, 3, index);
            (0..8).map(|_| rng.next()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, 5), draw(7, 5));
        assert_ne!(draw(7, 5), draw(7, 6));
        assert_ne!(draw(7, 5), draw(8, 5));
    }
}
