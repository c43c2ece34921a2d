//! qdel (DeleteJob): queued jobs go at once, running ones end through their moms, history
//! is kept or purged.

use pbs_core::{JobState, Pbse, Substate};
use pbs_proto::IdError;

use crate::effects::Effects;
use crate::error::ReqError;
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
    let history = state.server_flag("job_history_enable", false);
    let mut queued = crate::job::array::QueuedDeletes::default();
    let mut effects = Effects::default();
    let (errors, _) = per_key(state, ctx, ids, crate::request::ids::RangeRule::StartInside, |state, ctx, key| {
        // A queued subjob is only an index of its array: consecutive ones are batched.
        if let Some(index) = key.index {
            if state.job(key).is_none_or(|j| j.state == JobState::Queued) {
                if !queued.holds(key.seq) {
                    effects.ops.extend(queued.flush(state, ctx.now));
                }
                queued.delete(state, key.seq, index)?;
                let id = pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string();
                effects.ops.push(crate::accounting::deleted(&id, &ctx.who.user_at_host()));
                return Ok(Effects::default());
            }
        }
        // Anything else sees the batched deletions written first, and its writes follow
        // them in order: the action's own result carries none.
        effects.ops.extend(queued.flush(state, ctx.now));
        effects.merge(delete_one(state, ctx, key, force, purge_history, history)?);
        Ok(Effects::default())
    });
    effects.ops.extend(queued.flush(state, ctx.now));
    (errors, effects)
}

/// qdel of one job, array or subjob that is not a queued subjob.
fn delete_one(
    state: &mut State,
    ctx: &Ctx<'_>,
    key: JobKey,
    force: bool,
    purge_history: bool,
    history: bool,
) -> Result<Effects, ReqError> {
    let Some(job) = state.job(key) else {
        return Err(ReqError::new(Pbse::UNKJOBID));
    };
    // OpenPBS records the request as it takes it, before the job ends.
    let record = crate::accounting::deleted(&job.id(&state.server_name), &ctx.who.user_at_host());
    if !job.state.is_history() && state.ending.get(&key) != Some(&crate::state::EndReason::Delete) {
        let mut effects = Effects::ops(vec![record]);
        effects.merge(delete_live(state, ctx, key, force, purge_history, history)?);
        return Ok(effects);
    }
    delete_live(state, ctx, key, force, purge_history, history)
}

/// [`delete_one`] once its record is made.
fn delete_live(
    state: &mut State,
    ctx: &Ctx<'_>,
    key: JobKey,
    force: bool,
    purge_history: bool,
    history: bool,
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
    // A runone member that never ran leaves its group.
    let job_id = pbs_core::JobId::new(key.seq, pbs_core::ArrayPart::None, Some(state.server_name.clone())).to_string();
    let group = crate::job::runone::group_of(state, key.seq);
    let mut ops = crate::job::runone::left(state, &job_id, &group);
    crate::job::jobset::left(state, key.seq, ctx.now);
    let Some(job) = state.job_mut(key) else {
        return Err(ReqError::new(Pbse::UNKJOBID));
    };
    if history && !purge_history {
        job.state = JobState::Finished;
        job.substate = Substate::TERMINATED;
        let now = ctx.now.to_string();
        job.attrs.set(job_idx!("mtime"), None, now.as_str());
        job.attrs.set(job_idx!("obittime"), None, now.as_str());
        job.attrs.set(job_idx!("history_timestamp"), None, now.as_str());
        ops.push(job.put_op(None));
        return Ok(Effects::ops(ops));
    }
    state.remove_job(key.seq);
    ops.push(StoreOp::DeleteJob { seq: key.seq });
    Ok(Effects::ops(ops))
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
    effects.ops.extend(crate::job::array::refresh(state, seq, now));
    effects
}
