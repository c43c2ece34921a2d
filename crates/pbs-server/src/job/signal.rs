//! qsig and qrerun: signals to running jobs (asked of their moms, applied once they
//! answered), suspend and resume, and requeuing them.

use std::collections::HashMap;

use pbs_core::{JobState, Pbse};
use pbs_proto::IdError;
use pbs_proto::mom::ToMom;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::end::{begin_end, lost};
use crate::job::life::Step;
use crate::jobkey::JobKey;
use crate::state::{EndReason, State};

/// The state a job must be in to be suspended (`suspend`) or resumed.
fn state_before(suspend: bool) -> JobState {
    if suspend { JobState::Running } else { JobState::Suspended }
}

/// Suspends (a [`Step::Suspended`]) or resumes ([`Step::Resumed`]) a running job: its
/// ncpus and other consumables are released while it is stopped and taken again when it
/// continues, as OpenPBS does.
pub fn suspend_resume(state: &mut State, key: JobKey, step: Step, now: i64) -> Result<Effects, ReqError> {
    let suspend = matches!(step, Step::Suspended { .. });
    let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if job.state != state_before(suspend) || job.placement().is_none() {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let mut out = Effects::default();
    crate::job::parts::LIFE.step(state, key, step, now, &mut out);
    crate::job::faults::note_suspended(state, key, suspend);
    Ok(out)
}

/// Signal names qsig accepts besides numbers, without the `SIG` prefix.
const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM",
    "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",
    "PWR", "SYS",
];

fn valid_signal(signal: &str) -> bool {
    if let Ok(n) = signal.parse::<u32>() {
        return (1..=64).contains(&n);
    }
    let name = signal.strip_prefix("SIG").unwrap_or(signal);
    SIGNALS.contains(&name)
}

/// A signal a qsig sends to a job's mother superior, whose answer the request waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalAsk {
    /// The id as the request named it (a range names several jobs).
    pub id: String,
    /// The job signalled.
    pub key: JobKey,
    /// Its full id, as the mom knows it.
    pub job_id: String,
    /// Its mother superior's node.
    pub node: String,
    /// What is sent: a signal, `suspend` or `resume`.
    pub signal: String,
}

/// The frames that carry one request's signals (`(node, job id, signal)` each) to the
/// moms, all answering `ask`: one per mom and signal, a `SignalJobs` for several jobs, so
/// a mom signalling many jobs finds their processes in one pass over `/proc` and the
/// request waits for one frame per mom, not one per job. Order is kept within a frame.
pub fn frames<'a>(signals: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>, ask: u64) -> Vec<(String, ToMom)> {
    let mut groups: Vec<(&str, &str, Vec<String>)> = Vec::new();
    // (node, signal) -> its group's place: a round of thousands of jobs stays linear.
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    for (node, job_id, signal) in signals {
        let slot = *index.entry((node, signal)).or_insert_with(|| {
            groups.push((node, signal, Vec::new()));
            groups.len() - 1
        });
        if let Some((_, _, job_ids)) = groups.get_mut(slot) {
            job_ids.push(job_id.to_string());
        }
    }
    groups
        .into_iter()
        .map(|(node, signal, mut job_ids)| {
            let signal = signal.to_string();
            let frame = match job_ids.as_mut_slice() {
                // One job: the frame every mom has always understood.
                [job_id] => ToMom::SignalJob { job_id: std::mem::take(job_id), signal, ask },
                _ => ToMom::SignalJobs { job_ids, signal, ask },
            };
            (node.to_string(), frame)
        })
        .collect()
}

/// What a qsig asks of the moms, and the ids refused before asking.
#[derive(Debug, Default)]
pub struct SignalAsks {
    /// Ids refused by the server.
    pub errors: Vec<IdError>,
    /// One signal per job, each to its mother superior.
    pub asks: Vec<SignalAsk>,
}

/// SignalJob (qsig) over several ids: checks each (`suspend` and `resume` are for
/// operators and managers only) and asks each job's mother superior to deliver the
/// signal. Nothing changes until the moms answer ([`answered`]): a job is suspended only
/// once its mom has stopped it.
pub fn signal_jobs(state: &mut State, ctx: &crate::request::Ctx<'_>, ids: &[String], signal: &str) -> SignalAsks {
    let signal = signal.trim().to_string();
    let mut out = SignalAsks::default();
    // One id at a time, so each ask is answered under the id the request gave.
    for id in ids {
        let mut asks = Vec::new();
        let (errors, _) = crate::request::per_key(
            state,
            ctx,
            std::slice::from_ref(id),
            crate::request::ids::RangeRule::Running,
            |state, ctx, key| {
                let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
                if job.state.is_history() {
                    return Err(ReqError::new(Pbse::HISTJOBID));
                }
                let lower = signal.to_ascii_lowercase();
                let admin = lower == "suspend" || lower == "resume";
                if admin && ctx.privilege < pbs_core::Privilege::Operator {
                    return Err(ReqError::new(Pbse::PERM));
                }
                if !admin && !valid_signal(&signal) {
                    return Err(ReqError::new(Pbse::UNKSIG));
                }
                if !matches!(job.state, JobState::Running | JobState::Suspended) || state.starting.contains(&key) {
                    return Err(ReqError::new(Pbse::BADSTATE));
                }
                if admin && job.state != state_before(lower == "suspend") {
                    return Err(ReqError::new(Pbse::BADSTATE));
                }
                let node = job.mother_superior().map(str::to_string).ok_or_else(|| ReqError::new(Pbse::BADSTATE))?;
                let job_id = job.id(&state.server_name);
                let sent = if admin { lower } else { signal.clone() };
                asks.push(SignalAsk { id: id.clone(), key, job_id, node, signal: sent });
                Ok(Effects::default())
            },
        );
        out.errors.extend(errors);
        out.asks.extend(asks);
    }
    out
}

/// The moms' answers to a qsig's asks (`codes` in the asks' order; no answer in time is
/// `PBSE_NORELYMOM`): a suspend or resume a mom carried out changes the job now; any
/// refusal is that id's error, and the job stays as it was.
pub fn answered(state: &mut State, now: i64, asks: &[SignalAsk], codes: &[u32]) -> (Vec<IdError>, Effects) {
    let mut errors = Vec::new();
    let mut effects = Effects::default();
    for (ask, &code) in asks.iter().zip(codes) {
        let outcome = match code {
            0 => match ask.signal.as_str() {
                "suspend" => suspend_resume(state, ask.key, Step::Suspended { by_scheduler: false }, now),
                "resume" => suspend_resume(state, ask.key, Step::Resumed, now),
                _ => Ok(Effects::default()),
            },
            code => Err(ReqError::new(Pbse(code))),
        };
        match outcome {
            Ok(done) => effects.merge(done),
            Err(e) => errors.push(IdError { id: ask.id.clone(), code: e.code.0, message: e.message }),
        }
    }
    (errors, effects)
}

/// RerunJob (qrerun) over several ids: operators and managers requeue running jobs;
/// the mom kills the job and the end puts it back in the queue. With `-W force` a job
/// whose mom cannot be reached is requeued at once.
pub fn rerun_jobs(
    state: &mut State,
    ctx: &crate::request::Ctx<'_>,
    ids: &[String],
    force: bool,
) -> (Vec<IdError>, Effects) {
    crate::request::per_key(state, ctx, ids, crate::request::ids::RangeRule::Running, |state, ctx, key| {
        if ctx.privilege < pbs_core::Privilege::Operator {
            return Err(ReqError::new(Pbse::PERM));
        }
        let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
        if job.state.is_history() {
            return Err(ReqError::new(Pbse::HISTJOBID));
        }
        if !matches!(job.state, JobState::Running | JobState::Suspended) {
            return Err(ReqError::new(Pbse::BADSTATE));
        }
        let rerunnable = job.get("Rerunable", None).and_then(pbs_core::attr::parse_bool).unwrap_or(true);
        if !rerunnable && !force {
            return Err(ReqError::new(Pbse::NORERUN));
        }
        let ms_up = job.mother_superior().and_then(|ms| state.node_rt.get(ms)).is_some_and(|rt| rt.up);
        Ok(if force && !ms_up { lost(state, key, ctx.now) } else { begin_end(state, key, EndReason::Rerun, ctx.now) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_frame_per_mom_and_signal_in_the_order_asked() {
        let asked = [
            ("n1", "1.s", "suspend"),
            ("n2", "2.s", "suspend"),
            ("n1", "3.s", "suspend"),
            ("n1", "4.s", "checkpoint_abort"),
            ("n1", "5.s", "suspend"),
        ];
        let frames = frames(asked, 7);
        let ids = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
        assert_eq!(
            frames,
            vec![
                (
                    "n1".to_string(),
                    ToMom::SignalJobs { job_ids: ids(&["1.s", "3.s", "5.s"]), signal: "suspend".into(), ask: 7 }
                ),
                ("n2".to_string(), ToMom::SignalJob { job_id: "2.s".into(), signal: "suspend".into(), ask: 7 }),
                (
                    "n1".to_string(),
                    ToMom::SignalJob { job_id: "4.s".into(), signal: "checkpoint_abort".into(), ask: 7 }
                ),
            ]
        );
        assert!(super::frames([], 1).is_empty());
    }
}
