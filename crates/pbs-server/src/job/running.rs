//! What every part of a run shares: the substate of a start the mom has not confirmed,
//! and the time its comments write (a run's placement and mother superior are
//! `state::Job`'s).

use pbs_core::Substate;

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
