//! qdel (DeleteJob): queued jobs go at once, running ones end through their moms, history
//! is kept or purged.

use pbs_core::{JobState, Pbse};
use pbs_proto::IdError;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::{Step, Why};
use crate::job::parts::LIFE;
use crate::jobkey::JobKey;
use crate::request::{Ctx, per_key};
use crate::state::{Job, State};
use crate::store::StoreOp;

/// Handles DeleteJob (qdel) over several ids.
pub fn delete_jobs(
    state: &mut State,
    ctx: &Ctx<'_>,
    ids: &[String],
    force: bool,
    purge_history: bool,
) -> (Vec<IdError>, Effects) {
    let mut queued = crate::job::array::QueuedDeletes::default();
    let mut effects = Effects::default();
    let (errors, _) = per_key(state, ctx, ids, crate::request::ids::RangeRule::StartInside, |state, ctx, key| {
        // A queued subjob is only an index of its array: consecutive ones are batched.
        if let Some(index) = key.index {
            if state.job(key).is_none_or(|j| j.state == JobState::Queued) {
                if !queued.holds(key.seq) {
                    effects.merge(queued.flush(state, ctx.now, LIFE));
                }
                queued.delete(state, key.seq, index)?;
                let id = pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string();
                effects.ops.push(crate::accounting::deleted(&id, &ctx.who.user_at_host()));
                return Ok(Effects::default());
            }
        }
        // Anything else sees the batched deletions written first, and its writes follow
        // them in order: the action's own result carries none.
        effects.merge(queued.flush(state, ctx.now, LIFE));
        effects.merge(delete_one(state, ctx, key, force, purge_history)?);
        Ok(Effects::default())
    });
    effects.merge(queued.flush(state, ctx.now, LIFE));
    (errors, effects)
}

/// qdel of one job, array or subjob that is not a queued subjob.
fn delete_one(
    state: &mut State,
    ctx: &Ctx<'_>,
    key: JobKey,
    force: bool,
    purge_history: bool,
) -> Result<Effects, ReqError> {
    let Some(job) = state.job(key) else {
        return Err(ReqError::new(Pbse::UNKJOBID));
    };
    // OpenPBS records the request as it takes it, before the job ends.
    let record = crate::accounting::deleted(&job.id(&state.server_name), &ctx.who.user_at_host());
    if !job.state.is_history() && state.ending.get(&key) != Some(&crate::state::EndReason::Delete) {
        let mut effects = Effects::ops(vec![record]);
        crate::job::mail::deleted_by_other(state, key, &ctx.who.user_at_host(), &mut effects);
        crate::job::block::deleted(state, key, &ctx.who.user_at_host(), &mut effects);
        effects.merge(delete_live(state, ctx, key, force, purge_history)?);
        return Ok(effects);
    }
    delete_live(state, ctx, key, force, purge_history)
}

/// [`delete_one`] once its record is made.
fn delete_live(
    state: &mut State,
    ctx: &Ctx<'_>,
    key: JobKey,
    force: bool,
    purge_history: bool,
) -> Result<Effects, ReqError> {
    let Some(job) = state.job_mut(key) else {
        return Err(ReqError::new(Pbse::UNKJOBID));
    };
    if matches!(job.state, JobState::Running | JobState::Suspended | JobState::Exiting) {
        // A running job ends through its mom: SIGTERM, SIGKILL after kill_delay, and
        // the end is recorded when the mom reports it; `-W force` does not wait.
        return Ok(if force {
            crate::job::end::force_delete(state, key, ctx.now)
        } else if state.ending.get(&key) == Some(&crate::state::EndReason::Delete) {
            Effects::default()
        } else {
            crate::job::end::begin_end(state, key, crate::state::EndReason::Delete, ctx.now)
        });
    }
    if job.state.is_history() {
        if !purge_history || key.index.is_some() {
            return Err(ReqError::new(Pbse::HISTJOBID));
        }
        state.remove_job(key.seq);
        state.remove_subjobs_of(key.seq);
        return Ok(Effects::ops(vec![StoreOp::DeleteJob { seq: key.seq }]));
    }
    if job.array {
        return Ok(delete_array(state, key.seq, force, ctx.now));
    }
    // `-x` purges it at once, as if the server kept no history.
    let mut effects = Effects::default();
    let step = Step::Left { why: Why::Deleted { purged: purge_history } };
    LIFE.step(state, key, step, ctx.now, &mut effects);
    Ok(effects)
}

/// qdel of a whole array: its queued subjobs go at once, its running ones end through
/// their moms; the array finishes when the last one has.
fn delete_array(state: &mut State, seq: u64, force: bool, now: i64) -> Effects {
    let mut effects = Effects::default();
    if let Some(parent) = state.jobs.get_mut(&seq) {
        parent.set_remaining(pbs_core::IndexSet::default());
        if matches!(parent.state, JobState::Held | JobState::Waiting) {
            parent.state = JobState::Begun;
        }
    }
    let running: Vec<JobKey> = state
        .subjobs_of(seq)
        .filter(|j| matches!(j.state, JobState::Running | JobState::Suspended | JobState::Exiting))
        .map(Job::key)
        .collect();
    for key in running {
        if force {
            effects.merge(crate::job::end::force_delete(state, key, now));
        } else if state.ending.get(&key) != Some(&crate::state::EndReason::Delete) {
            effects.merge(crate::job::end::begin_end(state, key, crate::state::EndReason::Delete, now));
        }
    }
    effects.merge(crate::job::array::refresh(state, seq, now, LIFE));
    effects
}
