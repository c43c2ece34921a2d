//! Jobs on failed nodes, requeued once a node has been down longer than
//! `node_fail_requeue`, and the running jobs' resources counted again at a restart.

use pbs_core::JobState;

use crate::effects::Effects;
use crate::jobkey::JobKey;
use crate::state::{Job, Placement, State};
use crate::store::StoreOp;

/// Jobs on nodes down longer than `node_fail_requeue` seconds (default 310; 0 disables it)
/// are requeued, or finished if not rerunnable, as OpenPBS does.
pub fn requeue_from_failed_nodes(state: &mut State, now: i64) -> Effects {
    let limit = state.server_attr("node_fail_requeue", None).and_then(|v| v.parse::<i64>().ok()).unwrap_or(310);
    if limit <= 0 {
        return Effects::default();
    }
    let failed: Vec<String> = state
        .node_rt
        .iter()
        .filter(|(_, rt)| !rt.up && rt.down_since.is_some_and(|t| now - t >= limit))
        .map(|(name, _)| name.clone())
        // Suspended jobs hold nothing on the node, but are lost with it too.
        .filter(|name| !jobs_on(state, name).is_empty())
        .collect();
    let mut effects = Effects::default();
    for node in failed {
        for key in jobs_on(state, &node) {
            let id = state.job(key).map(|j| j.id(&state.server_name)).unwrap_or_default();
            tracing::info!(object_type = "Job", object_name = id.as_str(), "requeued: node {node} failed");
            effects.merge(crate::job::faults::requeue_lost(state, key, now));
        }
    }
    effects
}

/// The ids of jobs whose mother superior is `node`, suspended ones included (they hold no
/// resources there, but their mom has them).
pub fn jobs_on(state: &State, node: &str) -> Vec<JobKey> {
    let mut keys: Vec<JobKey> = state
        .node_rt
        .get(node)
        .map(|rt| rt.jobs.iter().map(|(key, _, _)| *key).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|key| state.job(*key).and_then(Job::mother_superior) == Some(node))
        .collect();
    keys.extend(crate::job::faults::suspended_on(state, node));
    keys
}

/// Rebuilds what running jobs hold on nodes, and the arrays' counts, after a restart;
/// returns what must be written if an array turns out to be done.
pub fn recover(state: &mut State, now: i64) -> Vec<StoreOp> {
    let running: Vec<(JobKey, String, std::sync::Arc<Placement>)> = state
        .jobs
        .values()
        .chain(state.subjobs.values())
        .filter(|j| matches!(j.state, JobState::Running | JobState::Exiting))
        .filter_map(|j| Some((j.key(), j.id(&state.server_name), j.placement()?)))
        .collect();
    for (key, id, placement) in running {
        crate::node::account(state, key, &id, &placement.exec, placement.exclusive, true, now);
    }
    let suspended: Vec<JobKey> = state
        .jobs
        .values()
        .chain(state.subjobs.values())
        .filter(|j| j.state == JobState::Suspended)
        .map(Job::key)
        .collect();
    for key in suspended {
        crate::job::faults::note_suspended(state, key, true);
        // What a suspension under `restrict_res_to_release_on_suspend` kept is still held.
        crate::job::released::recount(state, key, now);
    }
    let arrays: Vec<u64> = state.jobs.values().filter(|j| j.array && !j.state.is_history()).map(|j| j.seq).collect();
    // At a start nobody follows the steps yet: only the writes are kept.
    let ops = arrays
        .into_iter()
        .flat_map(|seq| crate::job::array::refresh_after_end(state, seq, now, crate::job::parts::LIFE).ops)
        .collect();
    state.changes = Default::default();
    ops
}
