//! `qsub -W block=true`: qsub stays connected and asks to wait for its job (`WaitJob`);
//! the answer goes when the job leaves the live set, with its exit status, or with why it
//! left without ending (deleted, aborted), which qsub prints and exits 3 on, as OpenPBS's
//! qsub does with its server's `check_block` message. A part of the job's life: the
//! steps that end a job (`Ended`, `Left`) answer its waiters, and qdel answers them with
//! who asked, as its `D` record names them. Answers go once the change is committed.
//!
//! A job submitted with `block` whose end comes before its qsub asks (a fast job on a
//! server that keeps no history) has its answer kept for it (`state::block_waits`). Waiters are bounded: [`MAX_WAITERS_PER_JOB`] a job, [`MAX_WAITERS`] in all.

use pbs_core::{ArrayPart, JobId, Pbse, Privilege};
use tokio::sync::oneshot;

use crate::effects::{Effects, WaitDone};
use crate::error::ReqError;
use crate::job::life::{At, Step};
use crate::jobkey::JobKey;
use crate::request::{Ctx, may_act_on};
use crate::state::{Job, State};

pub use crate::state::block_waits::Done;

/// The most connections waiting for one job.
pub const MAX_WAITERS_PER_JOB: usize = 4;

/// The most waiting connections in all.
pub const MAX_WAITERS: usize = 65_536;

/// What a WaitJob gives: the answer now (a finished job), or a receiver of it.
#[derive(Debug)]
pub enum Wait {
    /// It has already left.
    Now(Done),
    /// It will; the answer comes through this.
    Later(oneshot::Receiver<Done>),
}

/// A WaitJob for `id`: its owner, an operator or a manager may wait for a job or an
/// array (not a subjob).
pub fn wait(state: &mut State, ctx: &Ctx<'_>, id: &str) -> Result<Wait, ReqError> {
    let parsed: JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    if !matches!(parsed.array(), ArrayPart::None | ArrayPart::Parent) {
        return Err(ReqError::new(Pbse::IVALREQ));
    }
    let key = JobKey::job(parsed.seq());
    let Some(job) = state.jobs.get(&parsed.seq()) else {
        // Gone already: its answer may have been kept, for its owner.
        let owner = state.block_waits.kept_owner(key);
        if owner.is_some_and(|owner| owner != ctx.who.user && ctx.privilege < Privilege::Operator) {
            return Err(ReqError::new(Pbse::PERM));
        }
        return state.block_waits.take_kept(key).map(Wait::Now).ok_or_else(|| ReqError::new(Pbse::UNKJOBID));
    };
    if !may_act_on(ctx, job) {
        return Err(ReqError::new(Pbse::PERM));
    }
    if job.state.is_history() {
        let exit = job.get("Exit_status", None).and_then(|s| s.parse().ok()).unwrap_or(0);
        let kept = state.block_waits.take_kept(key);
        return Ok(Wait::Now(kept.unwrap_or((exit, String::new()))));
    }
    match state.block_waits.add(key, MAX_WAITERS_PER_JOB, MAX_WAITERS) {
        Some(done) => Ok(Wait::Later(done)),
        None => Err(ReqError::with_message(Pbse::SYSTEM, "too many connections wait for jobs".to_string())),
    }
}

/// Whether a job's leaving is answered: someone waits, or it was submitted to be.
fn answered(state: &State, key: JobKey, job: &Job) -> bool {
    state.block_waits.waited(key) || job.get("block", None).is_some()
}

/// qdel of job `key` by `requester` (`user@host`): its waiters hear who deleted it, as
/// OpenPBS's qsub prints `Job to be deleted at request of ...`.
pub fn deleted(state: &State, key: JobKey, requester: &str, out: &mut Effects) {
    let Some(job) = state.job(key).filter(|_| key.index.is_none()) else { return };
    if answered(state, key, job) {
        let message = format!("Job to be deleted at request of {requester}");
        out.waits_done.push(WaitDone { key, owner: job.owner().to_string(), exit_status: 0, message });
    }
}

/// The waiting part of a job's life.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "block"
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        let Some(job) = state.job(at.key).filter(|_| at.is_job()) else { return };
        if !answered(state, at.key, job) {
            return;
        }
        let (exit_status, message) = match at.step {
            Step::Ended { exit, .. } => (exit.unwrap_or(0), String::new()),
            Step::Left { why } => (0, why.reason().unwrap_or_else(|| "Job deleted".to_string())),
            _ => return,
        };
        out.waits_done.push(WaitDone { key: at.key, owner: job.owner().to_string(), exit_status, message });
    }
}

/// Answers the waiters of jobs that left in a committed change, or keeps the answer for
/// a qsub that has not asked yet; the first answer for a job is the one it gets.
pub fn answer(state: &mut State, left: Vec<WaitDone>) {
    for WaitDone { key, owner, exit_status, message } in left {
        state.block_waits.answer(key, owner, (exit_status, message));
    }
}
