//! qterm (Shutdown): who may stop the server, and what each manner does to running jobs
//! before it stops, as OpenPBS's `req_shutdown` and `svr_shutdown` do. `quick` leaves
//! them running (their moms keep them; a restarted server finds them); `immediate`
//! requeues the rerunnable ones and aborts the others (an `A` record, as OpenPBS's
//! `rerun_or_kill` calls `job_abt`, not a user's deletion); `delay` starts no new run and waits
//! for the running ones to end. The stop itself (telling the scheduler and the moms,
//! flushing the store) is `run::stop`'s, once [`State::stopping`] is set.

use pbs_core::{JobState, Pbse, Privilege};

use crate::effects::Effects;
use crate::error::ReqError;
use crate::request::Ctx;
use crate::state::{State, StopManner, Stopping};

/// Handles Shutdown: checks the requester (operators and managers, as OpenPBS's
/// `req_shutdown`), marks the server stopping and, for `immediate`, ends its running jobs.
pub fn request(
    state: &mut State,
    ctx: &Ctx<'_>,
    manner: &str,
    scheduler: bool,
    moms: bool,
) -> Result<Effects, ReqError> {
    if ctx.privilege < Privilege::Operator {
        return Err(ReqError::new(Pbse::PERM));
    }
    let manner = match manner {
        "quick" | "" => StopManner::Quick,
        "immediate" => StopManner::Immediate,
        "delay" => StopManner::Delay,
        _ => return Err(ReqError::new(Pbse::IVALREQ)),
    };
    let by = ctx.who.user_at_host();
    tracing::info!(object_type = "Server", "shutdown by request of {by}");
    let kind = match manner {
        StopManner::Quick => "Quick",
        StopManner::Immediate => "Immediate",
        StopManner::Delay => "Delayed",
    };
    tracing::info!(object_type = "Server", "Starting to shutdown the server, type is {kind}");
    state.stopping = Some(Stopping { manner, scheduler, moms });
    if manner != StopManner::Immediate {
        return Ok(Effects::default());
    }
    // Rerunnable jobs go back to the queue, the others are aborted (OpenPBS's
    // `rerun_or_kill`); the server stops once their moms have reported them ended.
    let (mut rerun, mut abort) = (Vec::new(), Vec::new());
    for job in state.jobs.values().filter(|j| !j.array).chain(state.subjobs.values()) {
        if !matches!(job.state, JobState::Running | JobState::Suspended) {
            continue;
        }
        let rerunnable = job.get("Rerunable", None).and_then(pbs_core::attr::parse_bool).unwrap_or(true);
        let id = match job.index {
            Some(index) => pbs_core::JobId::subjob(job.seq, index, &state.server_name).to_string(),
            None => job.id(&state.server_name),
        };
        if rerunnable { rerun.push(id) } else { abort.push((job.key(), id)) }
    }
    let manager = Ctx { privilege: Privilege::Manager, ..*ctx };
    let (_, mut effects) = crate::job::signal::rerun_jobs(state, &manager, &rerun, false);
    for (key, id) in abort {
        tracing::info!(object_type = "Job", object_name = id.as_str(), "{ABORTED_ON_SHUTDOWN}");
        effects.ops.push(crate::accounting::aborted(&id, ABORTED_ON_SHUTDOWN));
        effects.merge(crate::job::end::begin_end(state, key, crate::state::EndReason::Delete, ctx.now));
    }
    Ok(effects)
}

/// OpenPBS's reason for a job that is not rerunnable at an immediate stop
/// (`msg_job_abort` and `msg_on_shutdown`, two spaces between them).
const ABORTED_ON_SHUTDOWN: &str = "Aborted by PBS Server  on Server shutdown";

/// Whether the server may stop now: nothing it must wait for is running. A quick stop
/// never waits; the others wait for every running or suspended job to be gone.
pub fn may_stop(state: &State) -> bool {
    match state.stopping {
        None => false,
        Some(Stopping { manner: StopManner::Quick, .. }) => true,
        Some(_) => !state
            .jobs
            .values()
            .chain(state.subjobs.values())
            .any(|j| !j.array && matches!(j.state, JobState::Running | JobState::Suspended | JobState::Exiting)),
    }
}
