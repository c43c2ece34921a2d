//! What every part of a run shares: the substate of a start the mom has not confirmed,
//! and the time its comments write (a run's placement and mother superior are
//! `state::Job`'s).

use pbs_core::{JobState, Substate};

use crate::jobkey::{JobKey, key_of};
use crate::state::State;

/// `substate` of a job sent to its mom but not yet confirmed running (PRERUN).
pub const SUBSTATE_PRERUN: Substate = Substate(41);

/// `now` as OpenPBS's comments write a time (`Wed Nov 25 at 13:26`), in local time.
pub(crate) fn comment_time(now: i64) -> String {
    chrono::DateTime::from_timestamp(now, 0)
        .unwrap_or_default()
        .with_timezone(&chrono::Local)
        .format("%a %b %d at %H:%M")
        .to_string()
}

/// OpenPBS's comment of a job that runs (or runs again after a suspension).
pub(crate) fn run_comment(exec_vnode: &str, now: i64) -> String {
    format!("Job run at {} on {exec_vnode}", comment_time(now))
}

/// The job `job_id` whose mother superior is `node`, if it is running there.
pub fn running_on(state: &State, node: &str, job_id: &str) -> Option<JobKey> {
    let key = key_of(job_id)?;
    let job = state.job(key)?;
    if !matches!(job.state, JobState::Running | JobState::Suspended | JobState::Exiting) {
        return None;
    }
    (job.mother_superior() == Some(node)).then_some(key)
}
