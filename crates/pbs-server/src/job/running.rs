//! What every part of a run shares: the substate of a start the mom has not confirmed,
//! a running job's mother superior, and whether its run holds its nodes exclusively.

use pbs_core::attr::ObjectKind;
use pbs_core::select::Place;
use pbs_core::sharing::{NodeSharing, is_excl};
use pbs_core::{ExecVnode, Substate};

use crate::state::{Job, State};

/// `substate` of a job sent to its mom but not yet confirmed running (PRERUN).
pub const SUBSTATE_PRERUN: Substate = Substate(41);

/// The mother superior's node of a running job.
pub(crate) fn mother_superior(job: &Job) -> Option<String> {
    job.mother_superior().map(str::to_string)
}

/// Whether a run on `exec` holds its nodes exclusively (`pbs_core::sharing`, the rule the
/// scheduler placed it by): any of them held so holds them all, as the scheduler's mirror
/// books a pending run.
pub(crate) fn job_exclusive(state: &State, job: &Job, exec: &ExecVnode) -> bool {
    let place = job.get("Resource_List", Some("place")).and_then(|p| p.parse::<Place>().ok()).unwrap_or_default();
    exec.vnodes().iter().any(|name| {
        let sharing = state
            .nodes
            .iter()
            .find(|n| n.name == *name)
            .and_then(|n| n.attrs.get_named(ObjectKind::Node, "sharing", None))
            .map(NodeSharing::parse)
            .unwrap_or_default();
        is_excl(place.sharing, sharing)
    })
}

/// `now` as OpenPBS's comments write a time (`Wed Nov 25 at 13:26`), in local time.
pub(crate) fn comment_time(now: i64) -> String {
    chrono::DateTime::from_timestamp(now, 0)
        .unwrap_or_default()
        .with_timezone(&chrono::Local)
        .format("%a %b %d at %H:%M")
        .to_string()
}
