//! The pbs_sched daemon loop: connect to pbs_server as the scheduler, take the snapshot,
//! apply change frames as they come, run a cycle when asked (`Changes.cycle`) or every
//! `scheduler_iteration` seconds while scheduling is on, send each cycle's decisions in
//! one frame and wait for the server to apply them before the next cycle. `qrun` requests
//! are answered between cycles. If the server goes away the daemon reconnects with
//! backoff and starts over from a new snapshot; [`Stopper::stop`] ends it.
//!
//! Blocking std I/O: one reader thread per connection turns frames into events on a
//! channel, and the loop waits on that channel with a timeout, so frames, timers and the
//! stop request all arrive in one place.

use std::collections::VecDeque;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use pbs_core::conf::DaemonKey;
use pbs_proto::link::{LinkError, Sealer};
use pbs_proto::sched::{Action, FromSched, Snapshot, ToSched};
use pbs_proto::{FrameError, Hello, HelloReply, MAX_REPLY_FRAME_LEN, Role, read_frame, write_frame};
use tracing::{debug, info, warn};

use crate::config::SchedConfig;
use crate::cycle::{Decisions, cycle_after_preemption, qrun, qrun_after_preemption};
use crate::mirror::Mirror;

/// Where the server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Its local Unix socket (`PBS_HOME/server_sock`); root is recognised by the kernel.
    Unix(PathBuf),
    /// `HOST:PORT` over TCP, proving the cluster key.
    Tcp(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Unix(path) => write!(f, "{}", path.display()),
            Target::Tcp(addr) => f.write_str(addr),
        }
    }
}

/// How the daemon runs.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// The server.
    pub target: Target,
    /// Where the scheduler's key is, for the authenticated handshake over TCP: its own
    /// file (`pbs_server --sched-key`), or the master on the server host.
    pub key: Option<DaemonKey>,
    /// sched_config settings.
    pub sched_config: SchedConfig,
    /// First reconnection delay; doubles up to `max_backoff`.
    pub min_backoff: Duration,
    /// Longest reconnection delay.
    pub max_backoff: Duration,
    /// How long to wait for `DecisionsApplied` before going on without it.
    pub apply_timeout: Duration,
}

impl DaemonConfig {
    /// Defaults for a target: backoff 0.5 s to 30 s, 60 s for the server to apply.
    pub fn new(target: Target, key: Option<DaemonKey>, sched_config: SchedConfig) -> DaemonConfig {
        DaemonConfig {
            target,
            key,
            sched_config,
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            apply_timeout: Duration::from_secs(60),
        }
    }
}

/// Why a connection could not be used. All are retried (the server may come back), except
/// that the daemon stops when asked.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The server could not be reached.
    #[error("cannot connect to {target}: {source}")]
    Connect {
        /// Where.
        target: String,
        /// Why.
        source: io::Error,
    },
    /// The connection broke or carried something that is not a frame.
    #[error("{0}")]
    Frame(#[from] FrameError),
    /// The server refused the handshake (wrong key, another scheduler connected...).
    #[error("server refused the connection: {message} ({code})")]
    Refused {
        /// PBSE code.
        code: u32,
        /// Text.
        message: String,
    },
    /// The server said something out of turn.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The scheduler's key could not be read, or may not be trusted.
    #[error("{0}")]
    Key(#[from] pbs_proto::keys::KeyError),
}

/// What wakes the loop.
enum Event {
    /// A frame from connection `n`.
    Frame(u64, Box<ToSched>),
    /// Connection `n` ended.
    Closed(u64, String),
    /// Stop the daemon.
    Stop,
    /// New sched_config and dedicated_time settings (SIGHUP).
    Reload(Box<SchedConfig>),
}

/// Asks a running [`Daemon`] to stop.
#[derive(Clone)]
pub struct Stopper {
    events: SyncSender<Event>,
}

impl Stopper {
    /// Ends the daemon's loop at its next wake-up (immediately if it is waiting).
    pub fn stop(&self) {
        let _ = self.events.send(Event::Stop);
    }
}

/// Hands a running [`Daemon`] new settings (what SIGHUP re-read).
#[derive(Clone)]
pub struct Reloader {
    events: SyncSender<Event>,
}

impl Reloader {
    /// The next cycle uses `config`.
    pub fn reload(&self, config: SchedConfig) {
        let _ = self.events.send(Event::Reload(Box::new(config)));
    }
}

/// The daemon.
pub struct Daemon {
    config: DaemonConfig,
    events: SyncSender<Event>,
    inbox: Receiver<Event>,
    next_conn: u64,
    next_frame: u64,
}

/// Either kind of socket.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }

    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(timeout),
            Stream::Tcp(s) => s.set_read_timeout(timeout),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

/// A welcomed connection.
struct Conn {
    id: u64,
    stream: Stream,
    writer: BufWriter<Stream>,
    /// Seals every frame on a TCP link; `None` on the Unix socket.
    sealer: Option<Sealer>,
    server_name: String,
}

impl Conn {
    fn write(&mut self, message: &FromSched) -> Result<(), FrameError> {
        match &mut self.sealer {
            None => write_frame(&mut self.writer, message),
            Some(sealer) => Ok(pbs_proto::link::write_sealed(&mut self.writer, sealer, message)?),
        }
    }
}

/// How a session ended.
enum End {
    Stopped,
    Lost(String),
}

/// Longest wait on the inbox: the loop re-checks its timers at least this often.
const MAX_WAIT: Duration = Duration::from_secs(3600);
/// Events waiting for the loop at most. Bounded so that frames do not pile up here during a
/// long cycle: the reader thread waits, the socket fills, and the server keeps its changes
/// back, coalesced, until the scheduler reads again. The server reads decisions while its
/// writes to us wait, so the loop's own write of decisions never waits on this reader.
const INBOX: usize = 1024;
/// A server that does not finish the handshake in this time is given up on.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

impl Daemon {
    /// A daemon for `config`; nothing happens until [`Daemon::run`].
    pub fn new(config: DaemonConfig) -> Daemon {
        let (events, inbox) = mpsc::sync_channel(INBOX);
        Daemon { config, events, inbox, next_conn: 1, next_frame: 1 }
    }

    /// A handle that stops [`Daemon::run`].
    pub fn stopper(&self) -> Stopper {
        Stopper { events: self.events.clone() }
    }

    /// A handle that passes new settings to [`Daemon::run`].
    pub fn reloader(&self) -> Reloader {
        Reloader { events: self.events.clone() }
    }

    /// Connects, schedules, reconnects; returns when stopped.
    pub fn run(mut self) -> Result<(), DaemonError> {
        let mut backoff = self.config.min_backoff;
        loop {
            match self.connect() {
                Ok(conn) => {
                    info!(server = %conn.server_name, target = %self.config.target, "Connected to server");
                    let stream = match conn.stream.try_clone() {
                        Ok(stream) => stream,
                        Err(e) => {
                            warn!("Cannot use the connection: {e}");
                            continue;
                        }
                    };
                    let (end, got_snapshot) = self.session(conn);
                    stream.shutdown();
                    match end {
                        End::Stopped => return Ok(()),
                        End::Lost(why) => warn!("Lost the server connection: {why}"),
                    }
                    if got_snapshot {
                        backoff = self.config.min_backoff;
                    }
                }
                Err(e) => warn!("{e}"),
            }
            if self.wait_or_stop(backoff) {
                return Ok(());
            }
            backoff = (backoff * 2).min(self.config.max_backoff);
        }
    }

    /// Sleeps `delay` unless told to stop (returns true then). Events of old connections
    /// are dropped.
    fn wait_or_stop(&mut self, delay: Duration) -> bool {
        let until = Instant::now() + delay;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match self.inbox.recv_timeout(left) {
                Ok(Event::Stop) => return true,
                Ok(Event::Reload(config)) => self.config.sched_config = *config,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return false,
                Err(RecvTimeoutError::Disconnected) => return true,
            }
        }
    }

    fn read_key(&self) -> Result<Vec<u8>, DaemonError> {
        let Some(source) = &self.config.key else {
            return Err(DaemonError::Protocol("the server asks for the cluster key and none is configured".into()));
        };
        Ok(pbs_proto::keys::load(source, &Role::Scheduler)?)
    }

    /// Opens the socket, says Hello as the scheduler (over TCP: the authenticated handshake,
    /// after which every frame is sealed), and starts the reader thread.
    fn connect(&mut self) -> Result<Conn, DaemonError> {
        let target = self.config.target.to_string();
        let connect_err = |source| DaemonError::Connect { target: target.clone(), source };
        let stream = match &self.config.target {
            Target::Unix(path) => Stream::Unix(UnixStream::connect(path).map_err(connect_err)?),
            Target::Tcp(addr) => {
                let tcp = TcpStream::connect(addr).map_err(connect_err)?;
                // Decisions are small and answered at once: Nagle would only add latency.
                tcp.set_nodelay(true).map_err(connect_err)?;
                Stream::Tcp(tcp)
            }
        };
        let io_err = |e: io::Error| DaemonError::Frame(FrameError::Io(e));
        let mut reader = BufReader::with_capacity(256 * 1024, stream.try_clone().map_err(io_err)?);
        let mut writer = BufWriter::with_capacity(64 * 1024, stream.try_clone().map_err(io_err)?);
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(io_err)?;
        let (server_name, sealer, mut opener) = match &self.config.target {
            // The kernel tells the server who we are on its Unix socket.
            Target::Unix(_) => {
                write_frame(&mut writer, &Hello::local(Role::Scheduler))?;
                let reply: HelloReply = read_frame(&mut reader, MAX_REPLY_FRAME_LEN)?.ok_or_else(|| {
                    DaemonError::Protocol("the server closed the connection during the handshake".into())
                })?;
                match reply {
                    HelloReply::Welcome { server_name, .. } => (server_name, None, None),
                    HelloReply::Refused { code, message } => return Err(DaemonError::Refused { code, message }),
                    HelloReply::Handshake { .. } => {
                        return Err(DaemonError::Protocol("a handshake on the Unix socket".into()));
                    }
                }
            }
            Target::Tcp(_) => {
                let key = self.read_key()?;
                match pbs_proto::link::connect_blocking(&mut reader, &mut writer, &key, &Role::Scheduler, &Role::Server)
                {
                    Ok((server_name, sealer, opener)) => (server_name, Some(sealer), Some(opener)),
                    Err(LinkError::Refused { code, message }) => return Err(DaemonError::Refused { code, message }),
                    Err(e) => return Err(DaemonError::Protocol(e.to_string())),
                }
            }
        };
        stream.set_read_timeout(None).map_err(io_err)?;
        let id = self.next_conn;
        self.next_conn += 1;
        let events = self.events.clone();
        let spawned = std::thread::Builder::new().name("sched-reader".into()).spawn(move || {
            loop {
                let frame = match &mut opener {
                    None => read_frame::<ToSched>(&mut reader, MAX_REPLY_FRAME_LEN),
                    Some(opener) => {
                        pbs_proto::link::read_sealed(&mut reader, opener, MAX_REPLY_FRAME_LEN).map_err(FrameError::from)
                    }
                };
                match frame {
                    Ok(Some(frame)) => {
                        if events.send(Event::Frame(id, Box::new(frame))).is_err() {
                            return;
                        }
                    }
                    Ok(None) => {
                        let _ = events.send(Event::Closed(id, "the server closed the connection".into()));
                        return;
                    }
                    Err(e) => {
                        let _ = events.send(Event::Closed(id, e.to_string()));
                        return;
                    }
                }
            }
        });
        spawned.map_err(io_err)?;
        Ok(Conn { id, stream, writer, sealer, server_name })
    }

    /// Sends one Decisions frame and records it in the mirror. Returns the frame number
    /// and whether decisions were held back to keep the frame within the server's limit.
    fn send(
        &mut self,
        conn: &mut Conn,
        mirror: &mut Mirror,
        mut decisions: Decisions,
        qrun_id: Option<u64>,
    ) -> Result<(u64, bool), FrameError> {
        let frame = self.next_frame;
        self.next_frame += 1;
        let trimmed = trim_to_budget(&mut decisions, FRAME_BUDGET);
        if trimmed {
            info!(
                runs = decisions.runs().count(),
                updates = decisions.updates().count(),
                "Decisions held back for the next cycle"
            );
        }
        mirror.note_sent(frame, &decisions.actions, &decisions.bookings);
        let message = FromSched::Decisions { cycle: frame, qrun: qrun_id, actions: decisions.actions };
        conn.write(&message)?;
        Ok((frame, trimmed))
    }

    /// Waits for this connection's next event (others are stale and dropped).
    fn next_event(&self, conn: &Conn, timeout: Duration) -> Result<Event, RecvTimeoutError> {
        let until = Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let event = self.inbox.recv_timeout(left)?;
            match &event {
                Event::Frame(id, _) | Event::Closed(id, _) if *id != conn.id => continue,
                _ => return Ok(event),
            }
        }
    }

    /// One connection's life: snapshot, then changes, cycles and qruns. Returns how it
    /// ended and whether a snapshot arrived.
    fn session(&mut self, mut conn: Conn) -> (End, bool) {
        // The snapshot comes in parts; the mirror is built once the last has come.
        let mut parts: Option<Snapshot> = None;
        let mut mirror = loop {
            match self.next_event(&conn, MAX_WAIT) {
                Ok(Event::Frame(_, frame)) => match *frame {
                    ToSched::Snapshot { snapshot, more } => {
                        if let Some(whole) = join_part(&mut parts, *snapshot, more) {
                            break Mirror::new(whole, self.config.sched_config.clone());
                        }
                    }
                    ToSched::Quit => {
                        info!("Shutting down at the server's request");
                        return (End::Stopped, false);
                    }
                    other => debug!("Ignoring a frame before the snapshot: {other:?}"),
                },
                Ok(Event::Closed(_, why)) => return (End::Lost(why), false),
                Ok(Event::Reload(config)) => self.config.sched_config = *config,
                Ok(Event::Stop) | Err(RecvTimeoutError::Disconnected) => return (End::Stopped, false),
                Err(RecvTimeoutError::Timeout) => {}
            }
        };
        info!(jobs = mirror.job_count(), nodes = mirror.node_count(), "Received the server's state");
        let mut want_cycle = true;
        let mut last_cycle: Option<Instant> = None;
        let mut in_flight: Option<(u64, Instant)> = None;
        // Each waiting qrun: its request number, its job, and whether its preemption has
        // been answered (then it is placed once more, without preempting).
        let mut qruns: VecDeque<(u64, String, bool)> = VecDeque::new();
        // The job a cycle's answered preemption was for: the next cycle tries it first.
        let mut preempted_for: Option<String> = None;
        // A cycle's (or a qrun's) preemption: sent once its decisions are applied, and no
        // cycle runs until the server has answered it.
        let mut to_preempt: Option<ToPreempt> = None;
        let mut preempting: Option<Preempting> = None;
        loop {
            if in_flight.is_none() && preempting.is_none() {
                if let Some(ToPreempt { preemption, qrun }) = to_preempt.take() {
                    let number = self.next_frame;
                    self.next_frame += 1;
                    info!(object_type = "Job", object_name = %preemption.for_job, jobs = preemption.jobs.len(), "Sending one PreemptJobs request");
                    let message = FromSched::PreemptJobs { number, ids: preemption.jobs };
                    if let Err(e) = conn.write(&message) {
                        return (End::Lost(e.to_string()), true);
                    }
                    let for_job = preemption.for_job;
                    preempting = Some(Preempting { number, sent: Instant::now(), for_job, qrun });
                }
            }
            if in_flight.is_none() && preempting.is_none() {
                let sent = if let Some((qrun_id, job_id, preempted)) = qruns.pop_front() {
                    let mut decisions = if preempted {
                        qrun_after_preemption(&mirror, &job_id, now_secs())
                    } else {
                        qrun(&mirror, &job_id, now_secs())
                    };
                    debug!(object_type = "Job", object_name = %job_id, runs = decisions.runs().count(), "qrun placement");
                    log_events(&decisions);
                    if let Some(preemption) = decisions.preempt.take() {
                        // The qrun hears once the room is made and its job placed in it.
                        to_preempt = Some(ToPreempt { preemption, qrun: Some((qrun_id, job_id)) });
                        continue;
                    }
                    Some(self.send(&mut conn, &mut mirror, decisions, Some(qrun_id)))
                } else if mirror.scheduling()
                    && (want_cycle
                        || last_cycle.is_none_or(|t| t.elapsed() >= Duration::from_secs(mirror.scheduler_iteration())))
                {
                    want_cycle = false;
                    last_cycle = Some(Instant::now());
                    Some(self.run_cycle(&mut conn, &mut mirror, &mut to_preempt, preempted_for.take()))
                } else {
                    None
                };
                match sent {
                    Some(Ok((frame, trimmed))) => {
                        in_flight = Some((frame, Instant::now()));
                        // What did not fit is decided again right after this frame.
                        want_cycle |= trimmed;
                    }
                    Some(Err(e)) => return (End::Lost(e.to_string()), true),
                    None => {}
                }
            }
            let timeout = match (in_flight.or(preempting.as_ref().map(|p| (p.number, p.sent))), last_cycle) {
                (Some((_, sent)), _) => self.config.apply_timeout.saturating_sub(sent.elapsed()),
                (None, _) if !qruns.is_empty() => Duration::ZERO,
                (None, Some(last)) if mirror.scheduling() => {
                    Duration::from_secs(mirror.scheduler_iteration()).saturating_sub(last.elapsed())
                }
                _ => MAX_WAIT,
            };
            match self.next_event(&conn, timeout) {
                Ok(Event::Frame(_, frame)) => match *frame {
                    ToSched::Changes { changes, cycle } => {
                        for change in changes {
                            mirror.apply(change);
                        }
                        want_cycle |= cycle;
                    }
                    ToSched::Snapshot { snapshot, more } => {
                        if let Some(whole) = join_part(&mut parts, *snapshot, more) {
                            mirror = Mirror::new(whole, self.config.sched_config.clone());
                            in_flight = None;
                            want_cycle = true;
                        }
                    }
                    ToSched::RunNow { qrun, job_id } => qruns.push_back((qrun, job_id, false)),
                    ToSched::Quit => {
                        info!("Shutting down at the server's request");
                        return (End::Stopped, true);
                    }
                    ToSched::Preempted { number, results } => {
                        if let Some(done) = preempting.take_if(|p| p.number == number) {
                            done.answered(&mut qruns, &mut preempted_for);
                        }
                        for result in results {
                            let text = match result.method {
                                'S' => "Job preempted by suspension",
                                'C' => "Job preempted by checkpointing",
                                'R' => "Job preempted by requeuing",
                                'D' => "Job preempted by deletion",
                                _ => "Job failed to be preempted",
                            };
                            info!(object_type = "Job", object_name = %result.job_id, event = "0040", "{text}");
                        }
                        // The room made is used at once: the changes it caused are in.
                        want_cycle = true;
                    }
                    ToSched::DecisionsApplied { cycle, errors } => {
                        mirror.applied(cycle);
                        if in_flight.is_some_and(|(frame, _)| frame == cycle) {
                            in_flight = None;
                        }
                        for error in errors {
                            info!(object_type = "Job", object_name = %error.id, "Not applied: {} ({})", error.message, error.code);
                        }
                    }
                },
                Ok(Event::Closed(_, why)) => return (End::Lost(why), true),
                Ok(Event::Reload(config)) => {
                    self.config.sched_config = (*config).clone();
                    if !mirror.set_config(*config) {
                        warn!("sched_config resources changed: takes effect at the next connection");
                    }
                    info!("Reloaded sched_config and dedicated_time");
                    want_cycle = true;
                }
                Ok(Event::Stop) | Err(RecvTimeoutError::Disconnected) => return (End::Stopped, true),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(late) = preempting.take_if(|p| p.sent.elapsed() >= self.config.apply_timeout) {
                        warn!("The server did not answer the PreemptJobs request; going on without");
                        late.answered(&mut qruns, &mut preempted_for);
                    }
                    if in_flight.is_some_and(|(_, sent)| sent.elapsed() >= self.config.apply_timeout) {
                        warn!("The server did not confirm the last decisions; going on without");
                        in_flight = None;
                    }
                }
            }
        }
    }

    fn run_cycle(
        &mut self,
        conn: &mut Conn,
        mirror: &mut Mirror,
        to_preempt: &mut Option<ToPreempt>,
        first: Option<String>,
    ) -> Result<(u64, bool), FrameError> {
        // The cycle markers are logged at OpenPBS's DEBUG event class (0080), which its
        // default log_events includes; tests and admins look for them.
        info!(object_type = "Req", object_name = "", event = "0080", "Starting Scheduling Cycle");
        let started = Instant::now();
        let now = now_secs();
        let mut decisions = cycle_after_preemption(mirror, now, first.as_deref());
        log_events(&decisions);
        log_update_period(mirror, &decisions, now);
        *to_preempt = decisions.preempt.take().map(|preemption| ToPreempt { preemption, qrun: None });
        for run in decisions.runs() {
            debug!(object_type = "Job", object_name = %run.job_id, "Job run on {}", run.exec_vnode);
        }
        debug!(
            runs = decisions.runs().count(),
            updates = decisions.updates().count(),
            micros = started.elapsed().as_micros() as u64,
            "Cycle decided"
        );
        let frame = self.send(conn, mirror, decisions, None);
        info!(object_type = "Req", object_name = "", event = "0080", "Leaving Scheduling Cycle");
        frame
    }
}

/// Adds a snapshot part to those received so far; the whole snapshot once `more` is off.
fn join_part(parts: &mut Option<Snapshot>, part: Snapshot, more: bool) -> Option<Snapshot> {
    let whole = match parts.take() {
        Some(mut so_far) => {
            so_far.absorb(part);
            so_far
        }
        None => part,
    };
    if more {
        *parts = Some(whole);
        None
    } else {
        Some(whole)
    }
}

/// Says, when `attr_update_period` is set, whether this cycle sends its "job can't run"
/// updates or holds them back, and notes the sending in the mirror.
fn log_update_period(mirror: &mut Mirror, decisions: &Decisions, now: i64) {
    let period = mirror.attr_update_period.unwrap_or(0);
    match decisions.held_back {
        None => {
            mirror.note_can_t_run_sent(now);
            if period > 0 {
                info!(
                    object_type = "Req",
                    object_name = "",
                    event = "0080",
                    "Sending job can't run updates (attr_update_period {period} s)"
                );
            }
        }
        Some(held) => info!(
            object_type = "Req",
            object_name = "",
            event = "0080",
            "Holding back {held} job can't run updates (attr_update_period {period} s)"
        ),
    }
}

/// Logs what the cycle asked to log, each in its OpenPBS event class (`0080` DEBUG, e.g.
/// `Job;12[].svr;Number of concurrent running subjobs limit reached`, `0040` SCHED...),
/// written like the cycle markers: at `info` with the event code forced.
/// A preemption to send: a cycle's, or a qrun's (its request number and job), whose
/// answer waits for it.
struct ToPreempt {
    preemption: crate::cycle::Preemption,
    qrun: Option<(u64, String)>,
}

/// The PreemptJobs request in flight: its number, when it went, the job it makes room for
/// and the qrun that waits for it.
struct Preempting {
    number: u64,
    sent: Instant,
    for_job: String,
    qrun: Option<(u64, String)>,
}

impl Preempting {
    /// Answered (or given up on): a qrun's job is placed again, first and without
    /// preempting; a cycle's is tried first in the next cycle.
    fn answered(self, qruns: &mut VecDeque<(u64, String, bool)>, preempted_for: &mut Option<String>) {
        match self.qrun {
            Some((qrun_id, job_id)) => qruns.push_front((qrun_id, job_id, true)),
            None => *preempted_for = Some(self.for_job),
        }
    }
}

fn log_events(decisions: &Decisions) {
    for line in &decisions.considered {
        info!(object_type = line.object_type, object_name = %line.object_name, event = line.event, "{}", line.message);
    }
    for line in &decisions.log {
        info!(object_type = line.object_type, object_name = %line.object_name, event = line.event, "{}", line.message);
    }
}

/// Largest Decisions frame sent: half the 16 MiB the server accepts from a peer
/// (`MAX_REQUEST_FRAME_LEN`), leaving room for JSON escaping.
const FRAME_BUDGET: usize = pbs_proto::MAX_REQUEST_FRAME_LEN / 2;

/// Drops trailing decisions until the frame's estimated size fits `budget`: the budget
/// goes to runs first (a run never depends on a later one), then to updates, and each
/// kind loses its last ones. Returns whether anything was dropped; nothing dropped is
/// recorded as sent, so the next cycle decides it again. What is kept stays in order.
fn trim_to_budget(decisions: &mut Decisions, budget: usize) -> bool {
    const OVERHEAD: usize = 48;
    let run_size = |r: &pbs_proto::sched::RunDecision| r.job_id.len() + r.exec_vnode.len() + OVERHEAD;
    let update_size = |u: &pbs_proto::sched::JobUpdate| {
        u.job_id.len() + u.attrs.iter().map(|a| a.name().len() + a.value().len() + 8).sum::<usize>() + OVERHEAD
    };
    // How many of each kind fit, counted over the first of them.
    fn fitting<'a, T: 'a>(
        items: impl Iterator<Item = &'a T>,
        size: &mut usize,
        budget: usize,
        cost: impl Fn(&T) -> usize,
    ) -> usize {
        let mut kept = 0;
        for item in items {
            if *size + cost(item) > budget {
                break;
            }
            *size += cost(item);
            kept += 1;
        }
        kept
    }
    let mut size = 0usize;
    let runs_kept = fitting(decisions.runs(), &mut size, budget, run_size);
    let updates_kept = fitting(decisions.updates(), &mut size, budget, update_size);
    let (mut runs, mut updates) = (0, 0);
    let before = decisions.actions.len();
    decisions.actions.retain(|action| {
        let (seen, kept) = match action {
            // A few bytes each, and at most one per suspended job: always kept.
            Action::Resume { .. } => return true,
            Action::Run(_) => (&mut runs, runs_kept),
            Action::Update(_) => (&mut updates, updates_kept),
        };
        *seen += 1;
        *seen <= kept
    });
    decisions.actions.len() < before
}

fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use pbs_proto::Attr;
    use pbs_proto::sched::{JobUpdate, RunDecision};

    use super::*;

    #[test]
    fn big_decisions_are_trimmed_from_the_end() {
        let mut decisions = Decisions {
            actions: (0..100)
                .map(|i| {
                    Action::Update(JobUpdate {
                        job_id: format!("{i}.s"),
                        attrs: vec![Attr::new("comment", "Not Running: x")],
                    })
                })
                .chain([Action::Run(RunDecision {
                    job_id: "1.s".into(),
                    exec_vnode: "(n1:ncpus=1)".into(),
                    alternative: None,
                })])
                .collect(),
            ..Decisions::default()
        };
        assert!(!trim_to_budget(&mut decisions.clone(), 1 << 20));
        assert!(trim_to_budget(&mut decisions, 1000));
        assert_eq!(decisions.runs().count(), 1);
        let updates = decisions.updates().count();
        assert!(updates > 0 && updates < 100);
        assert_eq!(decisions.updates().next().map(|u| u.job_id.as_str()), Some("0.s"));
        // Still every update before the run.
        assert!(matches!(decisions.actions.last(), Some(Action::Run(_))));
    }
}
