//! PreemptJobs: taking running jobs' resources away for a job of higher priority. Each
//! job is tried with the methods of the default scheduler's `preempt_order` (the band its
//! used share of requested time falls in), one after the other until one works; the
//! methods that need a mom (suspend, and the end a requeue or a delete waits for) are
//! asked of every job's mom at once, in rounds, and a round waits for its slowest mom or
//! its deadline, never for the sum.
//!
//! Nothing here waits: [`begin`] reads the request, [`step`] starts the next method of
//! every job still undecided and says what to ask of which mom, [`answered`] applies a
//! round's answers. The dispatch's driver (`preemptwait`) runs the rounds.

use std::collections::HashSet;

use pbs_core::Pbse;
use pbs_core::attr::ObjectKind;
use pbs_core::preempt::{Method, PreemptOrder};
use pbs_core::{JobState, Substate};
use pbs_proto::Preempted;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::state::{EndReason, State};

/// A PreemptJobs request under way.
#[derive(Debug)]
pub struct Preemption {
    /// The ids as the request gave them, each with its job's place in `targets`, or none
    /// when it names nothing preemptable (answered `0` at once).
    ids: Vec<(String, Option<usize>)>,
    targets: Vec<Target>,
}

/// One running job being preempted.
#[derive(Debug)]
struct Target {
    key: JobKey,
    job_id: String,
    /// Its mother superior, which suspends it and reports its end.
    node: String,
    methods: Vec<Method>,
    /// The method tried next, or whose answer is awaited.
    next: usize,
    /// Waiting for the answer to `methods[next]`.
    waiting: bool,
    /// The letter once decided: a method's or `0`.
    outcome: Option<char>,
}

/// What one round asks of the moms: for each item, the job's place in the request, its
/// mom and id. Suspensions need a `SignalJob` frame carrying the round's number; a
/// requeue or delete waits for the job's end, whose kill is already among the effects.
#[derive(Debug, Default)]
pub struct Round {
    /// (target, node, full job id, method).
    pub items: Vec<(usize, String, String, Method)>,
    /// The kills of requeues and deletes, and what they changed.
    pub effects: Effects,
}

/// Reads a PreemptJobs list. Work is one lookup per id: an id that names no running job
/// (unknown, queued, finished, a range, a job named before) is answered `0` without more.
pub fn begin(state: &State, ids: &[String], now: i64) -> Preemption {
    let order = sched_order(state);
    let mut seen: HashSet<JobKey> = HashSet::new();
    let mut out = Preemption { ids: Vec::with_capacity(ids.len()), targets: Vec::new() };
    for id in ids {
        let target = target_of(state, id, &order, now).filter(|t| seen.insert(t.key));
        let slot = target.map(|t| {
            out.targets.push(t);
            out.targets.len() - 1
        });
        if slot.is_none() {
            log_failed(id);
        }
        out.ids.push((id.clone(), slot));
    }
    out
}

fn target_of(state: &State, id: &str, order: &PreemptOrder, now: i64) -> Option<Target> {
    let parsed: pbs_core::JobId = id.parse().ok()?;
    let key = match parsed.array() {
        pbs_core::ArrayPart::None => JobKey::job(parsed.seq()),
        pbs_core::ArrayPart::Index(index) => JobKey::subjob(parsed.seq(), *index),
        // An array or a range is not one running job.
        pbs_core::ArrayPart::Parent | pbs_core::ArrayPart::Range(_) => return None,
    };
    if !preemptable(state, key) {
        return None;
    }
    let job = state.job(key)?;
    let node = job.mother_superior()?.to_string();
    let (requested, used) = requested_and_used(job, now);
    let methods = order.methods_for(requested, used).to_vec();
    Some(Target { key, job_id: job.id(&state.server_name), node, methods, next: 0, waiting: false, outcome: None })
}

/// Running, confirmed by its mom, and not already ending.
fn preemptable(state: &State, key: JobKey) -> bool {
    state.job(key).is_some_and(|job| job.state == JobState::Running && job.substate == Substate::RUNNING)
        && !state.starting.contains(&key)
        && !state.ending.contains_key(&key)
}

/// The default scheduler's `preempt_order` (its default when unset or unreadable).
fn sched_order(state: &State) -> PreemptOrder {
    state
        .scheds
        .iter()
        .find(|s| s.name == "default")
        .and_then(|s| s.attrs.get_named(ObjectKind::Sched, "preempt_order", None))
        .and_then(|text| PreemptOrder::parse(text).ok())
        .unwrap_or_default()
}

/// What the band is chosen by, as OpenPBS's server reads it: the original soft_walltime,
/// else walltime, against walltime used; else cput against cput used. A job that has no
/// usage sample yet has used the time since it started.
fn requested_and_used(job: &crate::state::Job, now: i64) -> (Option<u64>, u64) {
    let secs = |name: &str, resource: &str| {
        job.get(name, Some(resource)).and_then(|v| v.parse::<pbs_core::Duration>().ok()).map(|d| d.as_secs())
    };
    let wall_used = || {
        secs("resources_used", "walltime").unwrap_or_else(|| {
            let stime: i64 = job.get("stime", None).and_then(|s| s.parse().ok()).unwrap_or(now);
            u64::try_from(now.saturating_sub(stime)).unwrap_or(0)
        })
    };
    if let Some(requested) = secs("Resource_List", "soft_walltime").or_else(|| secs("Resource_List", "walltime")) {
        return (Some(requested), wall_used());
    }
    match secs("Resource_List", "cput") {
        Some(requested) => (Some(requested), secs("resources_used", "cput").unwrap_or(0)),
        None => (None, 0),
    }
}

/// Starts the next method of every job not yet decided nor waiting: those that need no
/// mom are tried at once (checkpointing fails here: no mom runs a checkpoint script), and
/// the first that needs one is asked in this round.
pub fn step(state: &mut State, p: &mut Preemption, now: i64) -> Round {
    let mut round = Round::default();
    for (i, target) in p.targets.iter_mut().enumerate() {
        if target.outcome.is_some() || target.waiting {
            continue;
        }
        while let Some(&method) = target.methods.get(target.next) {
            let tried = if preemptable(state, target.key) { try_method(state, target, method, now) } else { None };
            match tried {
                Some(Ok(effects)) => {
                    round.effects.merge(effects);
                    round.items.push((i, target.node.clone(), target.job_id.clone(), method));
                    target.waiting = true;
                    break;
                }
                Some(Err(code)) => {
                    log_method_failed(&target.job_id, method, code);
                    target.next += 1;
                }
                // Not running any more (ended meanwhile): nothing else to try.
                None => target.next = target.methods.len(),
            }
        }
        if !target.waiting {
            target.outcome = Some('0');
            log_failed(&target.job_id);
        }
    }
    round
}

/// Starts one method on a running job: `Ok` with what it changed when a mom's answer
/// decides it, `Err` with the reason when it cannot be tried.
fn try_method(state: &mut State, target: &Target, method: Method, now: i64) -> Option<Result<Effects, Pbse>> {
    let job = state.job(target.key)?;
    Some(match method {
        // Nothing changes before the mom has stopped the job.
        Method::Suspend => Ok(Effects::default()),
        // A checkpoint needs the mom's checkpoint script, which no mom runs yet.
        Method::Checkpoint => Err(Pbse::NOSUP),
        Method::Requeue => {
            let rerunnable = job.get("Rerunable", None).and_then(pbs_core::attr::parse_bool).unwrap_or(true);
            if !rerunnable {
                Err(Pbse::NORERUN)
            } else {
                Ok(crate::job::end::begin_end(state, target.key, EndReason::Rerun, now))
            }
        }
        Method::Delete => Ok(crate::job::end::begin_end(state, target.key, EndReason::Delete, now)),
    })
}

/// Applies a round's answers (`None` where none came in time), in the round's order: a
/// suspension the mom carried out suspends the job now and frees its resources; one
/// refused moves the job to its next method. A requeue or delete is answered by the job's
/// end; one whose end did not come in time is not tried further (its kill is under way),
/// and answers `0`.
pub fn answered(
    state: &mut State,
    p: &mut Preemption,
    round: &Round,
    answers: &[Option<Result<(), u32>>],
    now: i64,
) -> Effects {
    let mut effects = Effects::default();
    for ((i, _, _, method), answer) in round.items.iter().zip(answers) {
        let Some(target) = p.targets.get_mut(*i) else { continue };
        target.waiting = false;
        let outcome = match (method, answer) {
            (Method::Suspend, Some(Ok(()))) => match suspend(state, target.key, now) {
                Ok(more) => {
                    effects.merge(more);
                    Ok(())
                }
                Err(e) => Err(Some(e.code.0)),
            },
            (Method::Suspend, Some(Err(code))) => Err(Some(*code)),
            (Method::Suspend, None) => Err(Some(Pbse::NORELYMOM.0)),
            (_, Some(Ok(()))) => Ok(()),
            (_, Some(Err(code))) => Err(Some(*code)),
            (_, None) => Err(None),
        };
        match outcome {
            Ok(()) => {
                target.outcome = Some(method.letter());
                let by = match method {
                    Method::Suspend => "suspension",
                    Method::Checkpoint => "checkpointing",
                    Method::Requeue => "requeuing",
                    Method::Delete => "deletion",
                };
                tracing::info!(
                    event = "0080",
                    object_type = "Job",
                    object_name = target.job_id.as_str(),
                    "Job preempted by {by}"
                );
            }
            Err(Some(code)) => {
                log_method_failed(&target.job_id, *method, Pbse(code));
                target.next += 1;
            }
            Err(None) => {
                log_method_failed(&target.job_id, *method, Pbse::NORELYMOM);
                target.outcome = Some('0');
                log_failed(&target.job_id);
            }
        }
    }
    effects
}

/// The job is stopped: suspended by the scheduler (substate 45, which the scheduler
/// resumes when room returns), its resources released as a qsig suspension releases them.
fn suspend(state: &mut State, key: JobKey, now: i64) -> Result<Effects, ReqError> {
    crate::job::signal::suspend_resume(state, key, true, now)?;
    let job = state.job_mut(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    job.substate = Substate::SCHSUSP;
    Ok(Effects::ops(vec![job.put_op(None)]))
}

/// Whether every job is decided.
pub fn done(p: &Preemption) -> bool {
    p.targets.iter().all(|t| t.outcome.is_some())
}

/// The reply: every id in the order given, with its method's letter or `0`.
pub fn results(p: &Preemption) -> Vec<Preempted> {
    p.ids
        .iter()
        .map(|(id, slot)| Preempted {
            job_id: id.clone(),
            method: slot.and_then(|i| p.targets.get(i)).and_then(|t| t.outcome).unwrap_or('0'),
        })
        .collect()
}

fn log_method_failed(job_id: &str, method: Method, code: Pbse) {
    // OpenPBS's DEBUG event class, as its server logs these.
    tracing::info!(
        event = "0080",
        object_type = "Job",
        object_name = job_id,
        "preemption method {} failed for job ({})",
        method.word(),
        code.0
    );
}

fn log_failed(job_id: &str) {
    tracing::info!(event = "0080", object_type = "Job", object_name = job_id, "Job failed to be preempted");
}
