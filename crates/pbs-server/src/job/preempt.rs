//! PreemptJobs: taking running jobs' resources away for a job of higher priority. Each
//! job is tried with the methods of the default scheduler's `preempt_order` (the band its
//! used share of requested time falls in), one after the other until one works; the
//! methods that need a mom (suspend, checkpoint through her script, and the end a
//! checkpoint, a requeue or a delete waits for) are asked of every job's mom at once, in
//! rounds, and a round waits for its slowest mom or its deadline, never for the sum.
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
    /// Its mom checkpointed it and is ending it: the job's end is awaited next.
    checkpointed: bool,
    /// The letter once decided: a method's or `0`.
    outcome: Option<char>,
}

/// What a round asks of a job's mom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// Stop the job (`SignalJob` `suspend`); the mom answers.
    Suspend,
    /// Run the site's checkpoint script and end the job (`SignalJob` `checkpoint_abort`,
    /// OpenPBS's hold request to the mom); the mom answers, and the end follows.
    Checkpoint,
    /// The job's end, whose kill (a requeue's, a delete's) or checkpoint is under way:
    /// answered by the mom's report of the end.
    End(Method),
}

impl Ask {
    /// The method this ask serves.
    pub fn method(self) -> Method {
        match self {
            Ask::Suspend => Method::Suspend,
            Ask::Checkpoint => Method::Checkpoint,
            Ask::End(method) => method,
        }
    }
}

/// What one round asks of the moms: for each item, the job's place in the request, its
/// mom and id, and what is asked. Suspensions and checkpoints need a `SignalJob` frame
/// carrying the round's number; an end is awaited, its kill already among the effects.
#[derive(Debug, Default)]
pub struct Round {
    /// (target, node, full job id, ask).
    pub items: Vec<(usize, String, String, Ask)>,
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
    Some(Target {
        key,
        job_id: job.id(&state.server_name),
        node,
        methods,
        next: 0,
        waiting: false,
        checkpointed: false,
        outcome: None,
    })
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

/// What the band is chosen by, as OpenPBS's server reads it: the original soft_walltime
/// (used capped at it), else walltime, against walltime used; else cput against cput
/// used. A job that has no usage sample yet has used the time since it started.
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
    // The original soft_walltime, however often the scheduler extended it: a job past it
    // has done 100% (seed 000), not more.
    if let Some(soft) = secs("Resource_List", "soft_walltime") {
        return (Some(soft), wall_used().min(soft));
    }
    if let Some(requested) = secs("Resource_List", "walltime") {
        return (Some(requested), wall_used());
    }
    match secs("Resource_List", "cput") {
        Some(requested) => (Some(requested), secs("resources_used", "cput").unwrap_or(0)),
        None => (None, 0),
    }
}

/// Starts the next method of every job not yet decided nor waiting: those that cannot
/// be tried (a job not rerunnable, or one that asked for no checkpoint) fail at once, and
/// the first that can is asked in this round. A job its mom checkpointed has its end
/// awaited, unless the end came already.
pub fn step(state: &mut State, p: &mut Preemption, now: i64) -> Round {
    let mut round = Round::default();
    for (i, target) in p.targets.iter_mut().enumerate() {
        if target.outcome.is_some() || target.waiting {
            continue;
        }
        if target.checkpointed {
            if state.ending.get(&target.key) == Some(&EndReason::Checkpoint) {
                let ask = Ask::End(Method::Checkpoint);
                round.items.push((i, target.node.clone(), target.job_id.clone(), ask));
                target.waiting = true;
            } else {
                preempted(target, Method::Checkpoint);
            }
            continue;
        }
        while let Some(&method) = target.methods.get(target.next) {
            let tried = if preemptable(state, target.key) { try_method(state, target, method, now) } else { None };
            match tried {
                Some(Ok(effects)) => {
                    round.effects.merge(effects);
                    let ask = match method {
                        Method::Suspend => Ask::Suspend,
                        Method::Checkpoint => Ask::Checkpoint,
                        Method::Requeue | Method::Delete => Ask::End(method),
                    };
                    round.items.push((i, target.node.clone(), target.job_id.clone(), ask));
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
        // A job submitted with `-c n` is never checkpointed (OpenPBS's hold answers
        // PBSE_NOSUP). Otherwise its end, once the mom has checkpointed it, requeues it: the
        // entry is made before the mom is asked, so an end that overtakes her answer is
        // still taken as the checkpoint's.
        Method::Checkpoint => {
            if job.get("Checkpoint", None).is_some_and(|c| c.starts_with('n')) {
                Err(Pbse::NOSUP)
            } else {
                state.ending.insert(target.key, EndReason::Checkpoint);
                Ok(Effects::default())
            }
        }
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
    for ((i, _, _, ask), answer) in round.items.iter().zip(answers) {
        let Some(target) = p.targets.get_mut(*i) else { continue };
        target.waiting = false;
        let method = ask.method();
        let outcome = match (ask, answer) {
            (Ask::Suspend, Some(Ok(()))) => match suspend(state, target.key, now) {
                Ok(more) => {
                    effects.merge(more);
                    Ok(())
                }
                Err(e) => Err(Some(e.code.0)),
            },
            (Ask::Suspend, Some(Err(code))) => Err(Some(*code)),
            (Ask::Suspend, None) => Err(Some(Pbse::NORELYMOM.0)),
            // Checkpointed: the job's end is awaited in the next round.
            (Ask::Checkpoint, Some(Ok(()))) => {
                target.checkpointed = true;
                continue;
            }
            // Refused, or no answer in time: the job runs on, and the next method (a
            // requeue kills it whatever its mom was doing) is tried.
            (Ask::Checkpoint, failed) => {
                if state.ending.get(&target.key) == Some(&EndReason::Checkpoint) {
                    state.ending.remove(&target.key);
                }
                Err(Some(failed.as_ref().and_then(|a| a.err()).unwrap_or(Pbse::NORELYMOM.0)))
            }
            (Ask::End(_), Some(Ok(()))) => Ok(()),
            (Ask::End(_), Some(Err(code))) => Err(Some(*code)),
            (Ask::End(_), None) => Err(None),
        };
        match outcome {
            Ok(()) => preempted(target, method),
            Err(Some(code)) => {
                log_method_failed(&target.job_id, method, Pbse(code));
                target.next += 1;
            }
            Err(None) => {
                log_method_failed(&target.job_id, method, Pbse::NORELYMOM);
                target.outcome = Some('0');
                log_failed(&target.job_id);
            }
        }
    }
    effects
}

/// `target` was preempted by `method`.
fn preempted(target: &mut Target, method: Method) {
    target.outcome = Some(method.letter());
    let by = match method {
        Method::Suspend => "suspension",
        Method::Checkpoint => "checkpointing",
        Method::Requeue => "requeuing",
        Method::Delete => "deletion",
    };
    tracing::info!(event = "0080", object_type = "Job", object_name = target.job_id.as_str(), "Job preempted by {by}");
}

/// The job is stopped: suspended by the scheduler (substate 45, which the scheduler
/// resumes when room returns), its resources released as a qsig suspension releases them.
fn suspend(state: &mut State, key: JobKey, now: i64) -> Result<Effects, ReqError> {
    crate::job::signal::suspend_resume(state, key, crate::job::life::Step::Suspended { by_scheduler: true }, now)
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
