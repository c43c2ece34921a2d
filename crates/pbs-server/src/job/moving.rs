//! qmove (MoveJob): jobs that have not started go to another queue of this server, checked
//! as a submission into that queue is (enabled, its ACLs, its resource and entity limits),
//! with an accounting `Q` record naming the new queue, as OpenPBS writes one.

use pbs_core::attr::{ObjectKind, parse_bool};
use pbs_core::{JobState, Pbse};
use pbs_proto::IdError;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::Proposal;
use crate::jobkey::JobKey;
use crate::request::{Ctx, per_id};
use crate::state::State;

/// Handles MoveJob over several ids.
pub fn move_jobs(state: &mut State, ctx: &Ctx<'_>, ids: &[String], destination: &str) -> (Vec<IdError>, Effects) {
    per_id(state, ctx, ids, |state, ctx, seq| move_one(state, ctx, seq, destination))
}

fn move_one(state: &mut State, ctx: &Ctx<'_>, seq: u64, destination: &str) -> Result<Effects, ReqError> {
    // `@server` alone names the server's default queue; this server is the only one.
    let queue_name = match destination.split('@').next().filter(|q| !q.is_empty()) {
        Some(queue) => queue.to_string(),
        None => state
            .server_attr("default_queue", None)
            .map(str::to_string)
            .ok_or_else(|| ReqError::new(Pbse::QUENODFLT))?,
    };
    let queue_index = state.queue_index(&queue_name).ok_or_else(|| ReqError::new(Pbse::UNKQUE))?;
    let job = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if job.state.is_history() {
        return Err(ReqError::new(Pbse::HISTJOBID));
    }
    // A job of a job set stays with its set, on this server.
    if let Some((_, server)) = destination.split_once('@')
        && !server.is_empty()
        && !crate::job::jobset::names_this_server(state, server)
        && crate::job::jobset::set_of(state, seq).is_some()
    {
        return Err(ReqError::new(Pbse::MOVE_JOBSET));
    }
    // Only a job that has not started moves: a begun array has subjobs running.
    if !matches!(job.state, JobState::Queued | JobState::Held | JobState::Waiting) {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    if *job.queue == *queue_name {
        return Ok(Effects::default());
    }
    check_entry(state, ctx, seq, queue_index, None)?;
    let queue = state.interner.intern(&queue_name);
    let Some(job) = state.jobs.get_mut(&seq) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
    let id = job.id(&state.server_name);
    job.queue = queue;
    job.attrs.set(job_idx!("mtime"), None, ctx.now.to_string());
    tracing::info!(
        object_type = "Job",
        object_name = id.as_str(),
        "Job moved to {queue_name} at request of {}",
        ctx.who.user_at_host()
    );
    let mut out = Effects::default();
    crate::job::parts::LIFE.step(state, JobKey::job(seq), crate::job::life::Step::Moved, ctx.now, &mut out);
    Ok(out)
}

/// Whether job `seq` may enter the queue at `queue_index` from another: the one rule of
/// every way a job changes queue (qmove, and each job of a qorder across queues, which
/// takes the place of job `leaving`), as a submission into it is checked: the queue
/// enabled, its ACLs, its resource limits and its entity limits (`max_queued`,
/// `max_queued_res`).
pub(crate) fn check_entry(
    state: &mut State,
    ctx: &Ctx<'_>,
    seq: u64,
    queue_index: usize,
    leaving: Option<u64>,
) -> Result<(), ReqError> {
    let queue = &state.queues[queue_index];
    let enabled = queue.attrs.get_named(ObjectKind::Queue, "enabled", None).and_then(parse_bool).unwrap_or(false);
    if !enabled {
        return Err(ReqError::new(Pbse::QUNOENB));
    }
    let queue_name = queue.name.clone();
    crate::acl::check_queue(state, queue_index, ctx)?;
    let Some(job) = state.jobs.get(&seq) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
    crate::job::submit::check_queue_limits(state, queue_index, &job.attrs)?;
    crate::job::parts::LIFE.check(state, ctx, &Proposal::Moved { seq, queue: &queue_name, in_place_of: leaving })
}
