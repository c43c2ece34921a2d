//! The scheduler's connection: a snapshot, then the stream of changes, in; batched
//! decisions out. See `pbs_proto::sched` for the exchange.
//!
//! One writer per link: everything for the scheduler (snapshot, changes, the answers to
//! its decisions, `qrun` requests) goes through one channel that this task drains, so the
//! scheduler sees them in the order the state changed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::{SinkExt, StreamExt};
use pbs_core::{JobState, Pbse};
use pbs_proto::link::LinkConn;
use pbs_proto::sched::{FromSched, PART_BUDGET, ToSched};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use crate::Server;
use crate::error::ReqError;
use crate::exec::{self, Launch};
use crate::schedqueue::SchedSender;

/// Serves a scheduler until it disconnects.
pub async fn serve<S>(server: Arc<Server>, conn: LinkConn<S>, peer: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Bounded: see `schedqueue` for what happens when the scheduler falls behind.
    let (mut link, mut rx, backlog) = SchedSender::new();
    let tx = link.sender();
    {
        let Ok(mut state) = server.state.lock() else { return };
        let snapshot = exec::snapshot(&state);
        // What was pending is already in the snapshot.
        state.changes = Default::default();
        let _ = link.send(ToSched::Snapshot { snapshot: Box::new(snapshot), more: false });
        let _ = link.send(ToSched::Changes { changes: Vec::new(), cycle: true });
        if state.links.sched.replace(link).is_some() {
            tracing::warn!(object_type = "Server", "a new scheduler connection replaces the old one");
        }
    }
    tracing::info!(object_type = "Server", "Scheduler connected");
    // Reading and writing go on side by side: decisions are read while a write to the
    // scheduler waits, so a scheduler that waits for its own write of decisions before it
    // reads again (its inbox is bounded) cannot stall the link.
    let (mut sink, mut stream) = conn.split::<bytes::Bytes>();
    let writer = async {
        while let Some(out) = rx.recv().await {
            let Ok(bytes) = serde_json::to_vec(&out) else { return };
            // A snapshot of a big cluster, or a burst of changes, goes in parts: one frame
            // could exceed what the link carries.
            if bytes.len() <= PART_BUDGET {
                if sink.send(bytes::Bytes::from(bytes)).await.is_err() {
                    return;
                }
            } else if !send_parts(&mut sink, out).await {
                return;
            }
            if backlog.load(Ordering::Acquire) {
                let Ok(mut state) = server.state.lock() else { return };
                crate::schedqueue::drain(&mut state, &tx);
            }
        }
    };
    let reader = async {
        loop {
            let bytes = match stream.next().await {
                Some(Ok(bytes)) => bytes,
                Some(Err(e)) => {
                    tracing::warn!(object_type = "Server", "Closed the scheduler's link from {peer}: {e}");
                    return;
                }
                None => return,
            };
            match serde_json::from_slice::<FromSched>(&bytes) {
                Ok(FromSched::Decisions { cycle, qrun, actions }) => {
                    apply(&server, &tx, cycle, qrun, &actions);
                }
                Err(e) => {
                    tracing::warn!(object_type = "Server", "bad frame from the scheduler: {e}");
                    return;
                }
            }
        }
    };
    tokio::select! {
        () = writer => {}
        () = reader => {}
    }
    if let Ok(mut state) = server.state.lock() {
        if state.links.sched.as_ref().is_some_and(|current| current.is(&tx)) {
            state.links.sched = None;
            for (_, waiter) in state.links.qruns.drain() {
                let _ = waiter.send(Err(ReqError::new(Pbse::NOSCHEDULER)));
            }
        }
    }
    tracing::info!(object_type = "Server", "Scheduler disconnected");
}

/// Sends `out` as frames of at most about [`PART_BUDGET`] bytes.
async fn send_parts<Si>(sink: &mut Si, out: ToSched) -> bool
where
    Si: futures::Sink<bytes::Bytes> + Unpin,
{
    for part in out.into_parts(PART_BUDGET) {
        let Ok(bytes) = serde_json::to_vec(&part) else { return false };
        if sink.send(bytes::Bytes::from(bytes)).await.is_err() {
            return false;
        }
    }
    true
}

fn apply(
    server: &Arc<Server>,
    tx: &mpsc::Sender<ToSched>,
    cycle: u64,
    qrun: Option<u64>,
    actions: &[pbs_proto::sched::Action],
) {
    let Ok(mut state) = server.state.lock() else { return };
    let now = chrono::Utc::now().timestamp();
    let (errors, ops, launches) = exec::apply_decisions(&mut state, actions, now);
    let mut answer = None;
    if let Some(number) = qrun {
        if let Some(waiter) = state.links.qruns.remove(&number) {
            let started = actions.iter().any(|action| {
                let pbs_proto::sched::Action::Run(r) = action else { return false };
                exec::key_of(&r.job_id).and_then(|k| state.job(k)).is_some_and(|j| j.state == JobState::Running)
            });
            let result = if started {
                Ok(())
            } else {
                let why = errors.first().map(|e| e.message.clone());
                Err(match why {
                    Some(message) => ReqError::with_message(Pbse::RESCUNAV, message),
                    None => ReqError::new(Pbse::RESCUNAV),
                })
            };
            answer = Some((waiter, result));
        }
    }
    exec::flush(&mut state);
    // Through the link's queue, behind the changes just flushed (or held); a link that has
    // been replaced meanwhile gets nothing.
    if let Some(link) = state.links.sched.as_mut().filter(|link| link.is(tx)) {
        let _ = link.send(ToSched::DecisionsApplied { cycle, errors });
    }
    let ack = server.store.commit(ops);
    drop(state);
    launch_after_commit(server.clone(), Some(ack), launches, answer);
}

/// A `qrun` waiting for its job's run to be committed, and what to tell it.
pub type QrunAnswer = (oneshot::Sender<Result<(), ReqError>>, Result<(), ReqError>);

/// Sends job starts to their moms once the runs are on disk, with each script read from
/// the store (outside the state lock).
pub fn launch_after_commit(
    server: Arc<Server>,
    ack: Option<oneshot::Receiver<Result<(), String>>>,
    mut launches: Vec<Launch>,
    answer: Option<QrunAnswer>,
) {
    tokio::spawn(async move {
        // No receiver: the caller already saw the commit.
        let committed = match ack {
            Some(ack) => matches!(ack.await, Ok(Ok(()))),
            None => true,
        };
        if let Some((waiter, result)) = answer {
            let _ = waiter.send(if committed { result } else { Err(ReqError::new(Pbse::SYSTEM)) });
        }
        if !committed || launches.is_empty() {
            return;
        }
        let wanted: Vec<u64> =
            launches.iter().filter(|l| !l.launch.sister && l.launch.executable.is_none()).map(|l| l.key.seq).collect();
        let mut unreadable = std::collections::HashSet::new();
        if !wanted.is_empty() {
            let path = server.db_path();
            let scripts = tokio::task::spawn_blocking(move || crate::store::Store::read_scripts(&path, &wanted)).await;
            let scripts = match scripts {
                Ok(Ok(scripts)) => Ok(scripts),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            unreadable = crate::faults::fill_scripts(&mut launches, scripts);
        }
        let Ok(mut state) = server.state.lock() else { return };
        let now = chrono::Utc::now().timestamp();
        let mut frames = Vec::new();
        let mut ops = Vec::new();
        let mut settled = Vec::new();
        for launch in launches {
            let ending = state.ending.get(&launch.key).copied();
            match ending {
                None if state.job(launch.key).is_some_and(|j| j.state == JobState::Running) => {
                    // Never a start without its script: the job goes back to the queue.
                    if unreadable.contains(&launch.key) {
                        if !settled.contains(&launch.key) {
                            settled.push(launch.key);
                            let (more, f) = crate::faults::requeue_unreadable(&mut state, launch.key, now);
                            ops.extend(more);
                            frames.extend(f);
                        }
                        continue;
                    }
                    // A rerun on a mom that still holds the previous run's end: that end is
                    // committed (before this run was), so the forget goes out first, or the
                    // mom would answer the new start with the old end.
                    if state.forgets_held.remove(&(launch.node.clone(), launch.launch.job_id.clone())) {
                        let job_id = launch.launch.job_id.clone();
                        frames.push((launch.node.clone(), pbs_proto::mom::ToMom::ForgetJob { job_id }));
                    }
                    frames.push((launch.node, pbs_proto::mom::ToMom::RunJob { launch: Box::new(launch.launch) }));
                }
                // Deleted or requeued before its start went out: no mom knows it, so it
                // ends here and now (its KillJob found nothing to kill).
                Some(reason) if !settled.contains(&launch.key) => {
                    settled.push(launch.key);
                    let (more, f) = match reason {
                        exec::EndReason::Rerun => exec::lost(&mut state, launch.key, now),
                        exec::EndReason::Delete => exec::force_delete(&mut state, launch.key, now),
                    };
                    ops.extend(more);
                    frames.extend(f);
                }
                _ => {}
            }
        }
        exec::send_frames(&mut state, frames);
        exec::flush(&mut state);
        server.store.commit_detached(ops);
    });
}
