//! Server and queue `resources_assigned`: the job-wide resources (`Resource_List`) of the
//! jobs that hold resources, counted as they start, stop and end.
//!
//! What counts is what OpenPBS counts there (its RASSN resources): `ncpus`, `mem`, `vmem`,
//! `nodect`, `mpiprocs`, and custom resources with flag `q`. An entry stays once a job has
//! used it, at zero when no running job holds it, as `qstat -Bf` shows it; sizes print in
//! the finest unit a job asked in. Nothing is stored: a restart counts the running jobs
//! again (`job::nodefail::recover`).

use pbs_core::Size;

use crate::jobkey::JobKey;
use crate::node::amounts::{amount, is_size};
use crate::state::State;

/// The built-in resources counted at server and queue level.
const COUNTED_BUILTINS: [&str; 5] = ["ncpus", "mem", "vmem", "nodect", "mpiprocs"];

pub(crate) fn counted(state: &State, resource: &str) -> bool {
    COUNTED_BUILTINS.contains(&resource) || state.resources.get(resource).is_some_and(|d| d.flags.queue_assigned)
}

/// Adds (`hold = true`) the job's `Resource_List` amounts on the server and on its queue,
/// or gives back what it was charged. Holding twice or releasing twice changes nothing.
pub fn account(state: &mut State, key: JobKey, hold: bool) {
    if !hold {
        if let Some((queue, amounts)) = state.assigned.charged.remove(&key) {
            state.assigned.change(&queue, &amounts, false);
        }
        return;
    }
    if state.assigned.charged.contains_key(&key) {
        return;
    }
    let Some(job) = state.job(key) else { return };
    let resource_list = job_idx!("Resource_List");
    let mut amounts = Vec::new();
    let mut units = Vec::new();
    for attr in job.attrs.iter().filter(|a| a.def == resource_list) {
        let Some(resource) = attr.resource.as_deref().filter(|r| counted(state, r)) else { continue };
        let Some(n) = amount(&attr.value) else { continue };
        if let Ok(size) = attr.value.parse::<Size>() {
            units.push((resource.to_string(), size.unit_shift()));
        }
        amounts.push((resource.to_string(), n));
    }
    let queue = job.queue.to_string();
    let assigned = &mut state.assigned;
    assigned.change(&queue, &amounts, true);
    assigned.charged.insert(key, (queue, amounts));
    for (resource, unit) in units {
        let smallest = assigned.units.entry(resource).or_insert(unit);
        *smallest = (*smallest).min(unit);
    }
}

/// Gives back (`hold = false`) or takes again part of what a job was charged: what its
/// suspension released under `restrict_res_to_release_on_suspend`. A job not charged
/// (holding nothing) changes nothing.
pub fn account_part(state: &mut State, key: JobKey, amounts: &[(String, u64)], hold: bool) {
    let Some((queue, charged)) = state.assigned.charged.get_mut(&key) else { return };
    for (resource, n) in amounts {
        match charged.iter_mut().find(|(r, _)| r == resource) {
            Some((_, held)) => *held = if hold { held.saturating_add(*n) } else { held.saturating_sub(*n) },
            None if hold => charged.push((resource.clone(), *n)),
            None => {}
        }
    }
    let queue = queue.clone();
    state.assigned.change(&queue, amounts, hold);
}

/// Drops a deleted queue's counts (a queue with jobs cannot be deleted), so a new queue
/// of the same name starts without them.
pub fn forget_queue(state: &mut State, name: &str) {
    state.assigned.queues.remove(name);
}

/// `resources_assigned.<resource>` pairs of the server (`queue` = None) or of a queue.
pub fn status(state: &State, queue: Option<&str>) -> Vec<(String, String)> {
    let totals = match queue {
        None => Some(&state.assigned.server),
        Some(name) => state.assigned.queues.get(name),
    };
    totals
        .into_iter()
        .flatten()
        .map(|(resource, n)| {
            let value = if is_size(state, resource) {
                Size::in_unit(*n, state.assigned.units.get(resource).copied().unwrap_or(10)).to_string()
            } else {
                n.to_string()
            };
            (format!("resources_assigned.{resource}"), value)
        })
        .collect()
}
