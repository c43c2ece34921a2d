//! The scheduler's connection: a snapshot, then the stream of changes, in; batched
//! decisions out. See `pbs_proto::sched` for the exchange.
//!
//! One writer per link: everything for the scheduler (snapshot, changes, the answers to
//! its decisions, `qrun` requests) goes through one channel that this task drains, so the
//! scheduler sees them in the order the state changed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::{SinkExt, StreamExt};
use pbs_core::Pbse;
use pbs_proto::link::LinkConn;
use pbs_proto::sched::{FromSched, PART_BUDGET, ToSched};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::error::ReqError;
use crate::server::Server;
use crate::state::links::Asked;
use crate::state::sched_queue::SchedSender;

/// Serves a scheduler until it disconnects.
pub async fn serve<S>(server: Arc<Server>, conn: LinkConn<S>, peer: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Bounded: see `schedqueue` for what happens when the scheduler falls behind.
    let (mut link, mut rx, backlog) = SchedSender::new();
    let tx = link.sender();
    {
        let mut state = server.lock();
        let snapshot = crate::sched_view::snapshot(&state);
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
                let mut state = server.lock();
                let shared = &mut *state;
                crate::sched_view::drain(&mut shared.state, &mut shared.links, &tx);
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
                    // Runjob hooks see each run first, outside the lock; the scheduler
                    // waits for this batch's answer meanwhile, as it waits for OpenPBS's.
                    let runs: Vec<String> = actions
                        .iter()
                        .filter_map(|action| match action {
                            pbs_proto::sched::Action::Run(run) => Some(run.job_id.clone()),
                            pbs_proto::sched::Action::Update(_) | pbs_proto::sched::Action::Resume { .. } => None,
                        })
                        .collect();
                    let verdicts = crate::hookwait::runjob_verdicts(&server, &runs).await;
                    apply(&server, &tx, cycle, qrun, &actions, verdicts.as_deref());
                }
                Ok(FromSched::PreemptJobs { number, ids }) => {
                    // Its rounds wait for moms; the link reads on meanwhile.
                    let server = server.clone();
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let results = crate::preemptwait::preempt(&server, &ids).await;
                        let mut state = server.lock();
                        if let Some(link) = state.links.sched.as_mut().filter(|link| link.is(&tx)) {
                            let _ = link.send(ToSched::Preempted { number, results });
                        }
                    });
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
    {
        let mut state = server.lock();
        if state.links.sched.as_ref().is_some_and(|current| current.is(&tx)) {
            state.links.sched = None;
            crate::state::links::answer_all_of_scheduler(&mut state.links, &Err(ReqError::new(Pbse::NOSCHEDULER)));
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
    verdicts: Option<&[Result<Vec<pbs_proto::Attr>, ReqError>]>,
) {
    let mut guard = server.lock();
    let state = &mut *guard;
    let now = chrono::Utc::now().timestamp();
    let (errors, mut effects) = crate::sched_view::apply_decisions(state, actions, now, verdicts);
    let resumes = crate::sched_view::resumes(&state.state, actions);
    let resuming = (!resumes.is_empty()).then(|| {
        let asked = resumes.iter().map(|a| Asked::Mom { node: a.node.clone(), job_id: a.job_id.clone() }).collect();
        let (ask, answered) = crate::state::links::open_ask(&mut state.links, asked);
        let signals = resumes.iter().map(|a| (a.node.as_str(), a.job_id.as_str(), "resume"));
        effects.to_moms.extend(crate::job::signal::frames(signals, ask));
        (ask, answered, resumes)
    });
    // The qrun this answers, if it still waits, and what it hears.
    let answer = qrun.and_then(|ask| {
        let asked = crate::state::links::asked_of_scheduler(&state.links, ask).into_iter().next()?;
        Some((ask, asked, crate::sched_view::qrun_outcome(state, actions, &errors)))
    });
    let applied = server.apply_effects(state, effects);
    // Through the link's queue, behind the changes just flushed (or held); a link that has
    // been replaced meanwhile gets nothing.
    if let Some(link) = state.links.sched.as_mut().filter(|link| link.is(tx)) {
        let _ = link.send(ToSched::DecisionsApplied { cycle, errors });
    }
    drop(guard);
    if let Some((ask, answered, resumes)) = resuming {
        let server = server.clone();
        tokio::spawn(resume_when_answered(server, ask, answered, resumes));
    }
    // A qrun hears once its job's run is committed and its start handed to the mom.
    if let Some((ask, asked, result)) = answer {
        let server = server.clone();
        tokio::spawn(async move {
            let committed = applied.done().await;
            let outcome = committed.map_err(|_| ReqError::new(Pbse::SYSTEM)).and(result);
            crate::state::links::answer(&mut server.lock().links, ask, &asked, outcome);
        });
    }
}

/// How long a resume waits for its mom, as a qsig's.
const RESUME_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Resumes the scheduler's suspended jobs whose moms continued them; one whose mom refused
/// or did not answer stays suspended (a late answer is undone), and the scheduler tries it
/// again in a later cycle.
async fn resume_when_answered(
    server: Arc<Server>,
    ask: u64,
    answered: tokio::sync::oneshot::Receiver<()>,
    resumes: Vec<crate::job::signal::SignalAsk>,
) {
    let _ = tokio::time::timeout(RESUME_DEADLINE, answered).await;
    let mut guard = server.lock();
    let shared = &mut *guard;
    let codes = crate::state::links::close_ask_codes(&mut shared.links, ask, resumes.len());
    let now = chrono::Utc::now().timestamp();
    let (errors, effects) = crate::job::signal::answered(&mut shared.state, now, &resumes, &codes);
    for error in errors {
        tracing::info!(object_type = "Job", object_name = error.id.as_str(), "resume failed ({})", error.code);
    }
    let _ = server.apply_effects(shared, effects);
}
