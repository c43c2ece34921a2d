//! qorder (OrderJob): two jobs that have not started swap their places in the queues'
//! order, as OpenPBS's `req_orderjob` does: their `queue_rank` values, and their queues when
//! they are in different ones (each checked as a move into the other's queue is:
//! `moving::check_entry`). The
//! scheduler orders jobs of equal priority by `queue_rank`, so the swap is what it sees.

use pbs_core::{ArrayPart, JobId, JobState, Pbse};

use crate::effects::Effects;
use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::request::{Ctx, may_act_on};
use crate::state::State;

/// Handles OrderJob: checks both jobs (the first one's refusal wins, as OpenPBS checks the
/// first before the second), then swaps them.
pub fn order_jobs(state: &mut State, ctx: &Ctx<'_>, first: &str, second: &str) -> Result<Effects, ReqError> {
    let first = checked(state, ctx, first)?;
    let second = checked(state, ctx, second)?;
    for seq in [first, second] {
        let Some(job) = state.jobs.get(&seq) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
        // A begun array has subjobs running: it has started too.
        if matches!(job.state, JobState::Running | JobState::Begun) {
            return Err(ReqError::new(Pbse::BADSTATE));
        }
    }
    if first == second {
        return Ok(Effects::default());
    }
    let (Some(a), Some(b)) = (state.jobs.get(&first), state.jobs.get(&second)) else {
        return Err(ReqError::new(Pbse::UNKJOBID));
    };
    let (queue_a, queue_b) = (a.queue.clone(), b.queue.clone());
    if queue_a != queue_b {
        // Each goes into the other's queue: checked as a move is, by the same rule.
        for (seq, queue, leaving) in [(first, &queue_b, second), (second, &queue_a, first)] {
            let index = state.queue_index(queue).ok_or_else(|| ReqError::new(Pbse::UNKQUE))?;
            crate::job::moving::check_entry(state, ctx, seq, index, Some(leaving))?;
        }
    }
    let rank_of = |state: &State, seq: u64| {
        state.jobs.get(&seq).and_then(|j| j.get("queue_rank", None)).map_or_else(|| seq.to_string(), str::to_string)
    };
    let (rank_a, rank_b) = (rank_of(state, first), rank_of(state, second));
    let mut out = Effects::default();
    for (seq, rank, queue) in [(first, rank_b, queue_b), (second, rank_a, queue_a)] {
        let Some(job) = state.jobs.get_mut(&seq) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
        job.attrs.set(job_idx!("queue_rank"), None, rank);
        job.queue = queue;
        crate::job::parts::LIFE.step(state, JobKey::job(seq), crate::job::life::Step::Altered, ctx.now, &mut out);
    }
    Ok(out)
}

/// The job `id` names, if the caller may act on it. A subjob or a range cannot be ordered
/// (`Invalid request`), as in OpenPBS; finished jobs are history.
fn checked(state: &State, ctx: &Ctx<'_>, id: &str) -> Result<u64, ReqError> {
    let parsed: JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    if !matches!(parsed.array(), ArrayPart::None | ArrayPart::Parent) {
        return Err(ReqError::new(Pbse::IVALREQ));
    }
    let job = state.jobs.get(&parsed.seq()).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if !may_act_on(ctx, job) {
        return Err(ReqError::new(Pbse::PERM));
    }
    if job.state.is_history() {
        return Err(ReqError::new(Pbse::HISTJOBID));
    }
    Ok(job.seq)
}
