//! qsig and qrerun: signals to running jobs, suspend and resume, and requeuing them.

use pbs_core::{ExecVnode, JobState, Pbse, Substate};
use pbs_proto::IdError;
use pbs_proto::mom::ToMom;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::end::{begin_end, lost};
use crate::job::running::{job_exclusive, mother_superior};
use crate::jobkey::JobKey;
use crate::state::{EndReason, State};
use crate::store::StoreOp;

/// Suspends (`suspend = true`) or resumes a running job: its ncpus and other consumables
/// are released while it is stopped and taken again when it continues, as OpenPBS does.
pub fn suspend_resume(state: &mut State, key: JobKey, suspend: bool, now: i64) -> Result<Vec<StoreOp>, ReqError> {
    let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    let wanted = if suspend { JobState::Running } else { JobState::Suspended };
    if job.state != wanted {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let exec: ExecVnode =
        job.get("exec_vnode", None).and_then(|e| e.parse().ok()).ok_or_else(|| ReqError::new(Pbse::BADSTATE))?;
    let job_id = job.id(&state.server_name);
    let exclusive = job_exclusive(state, job, &exec);
    crate::node::account(state, key, &job_id, &exec, exclusive, !suspend, now);
    let Some(job) = state.job_mut(key) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
    if suspend {
        job.state = JobState::Suspended;
        job.substate = Substate::SUSPEND;
    } else {
        job.state = JobState::Running;
        job.substate = Substate::RUNNING;
    }
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
    let ops = vec![job.put_op(None)];
    state.changes.jobs.insert(key, job_id);
    state.changes.cycle = true;
    crate::job::faults::note_suspended(state, key, suspend);
    Ok(ops)
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

/// SignalJob (qsig) over several ids: `suspend` and `resume` (operators and managers
/// only) stop and continue the whole job and release and take back its resources; any
/// other signal goes to the job's session.
pub fn signal_jobs(
    state: &mut State,
    ctx: &crate::request::Ctx<'_>,
    ids: &[String],
    signal: &str,
) -> (Vec<IdError>, Effects) {
    let signal = signal.trim().to_string();
    crate::request::per_key(state, ctx, ids, crate::request::ids::RangeRule::Running, |state, ctx, key| {
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
        let ms = mother_superior(job).ok_or_else(|| ReqError::new(Pbse::BADSTATE))?;
        let job_id = job.id(&state.server_name);
        let ops = if admin { suspend_resume(state, key, lower == "suspend", ctx.now)? } else { Vec::new() };
        let sent = if admin { lower } else { signal.clone() };
        Ok(Effects { ops, to_moms: vec![(ms, ToMom::SignalJob { job_id, signal: sent })], launches: Vec::new() })
    })
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
        let ms_up = mother_superior(job).and_then(|ms| state.node_rt.get(&ms)).is_some_and(|rt| rt.up);
        Ok(if force && !ms_up { lost(state, key, ctx.now) } else { begin_end(state, key, EndReason::Rerun, ctx.now) })
    })
}
