//! `restrict_res_to_release_on_suspend`: which resources a suspended job gives back while
//! it is stopped, kept on the job as OpenPBS keeps them (`resources_released`, per vnode,
//! and `resource_released_list`, job-wide) from its suspension to its resumption. Unset,
//! a suspension gives back everything, and neither attribute is set.
//!
//! What a suspension gives back ([`give_back`]) is what a resumption takes back
//! ([`take_back`]), and what a suspended job still holds goes when it ends.

use pbs_core::{ExecVnode, Size};

use crate::jobkey::JobKey;
use crate::node::amounts::{amount, is_size};
use crate::state::{Job, State};

/// What a suspension under the server's list gave back.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Released {
    /// Per vnode (`resources_released`).
    exec: ExecVnode,
    /// Job-wide, what the server's and the queue's `resources_assigned` gave back
    /// (`resource_released_list`), each amount in bytes for sizes.
    list: Vec<(String, u64)>,
}

impl Released {
    /// Per vnode and job-wide, as `node::account_released` takes them.
    fn parts(&self) -> (&ExecVnode, &[(String, u64)]) {
        (&self.exec, &self.list)
    }
}

/// The server's list, when set.
fn restricted_to(state: &State) -> Option<Vec<String>> {
    let value = state.server_attr("restrict_res_to_release_on_suspend", None)?;
    let names: Vec<String> = value.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
    (!names.is_empty()).then_some(names)
}

/// At a suspension of `key` placed on `exec`: under the server's list, records on the job
/// what it gives back and returns it; `None` (everything goes) when the list is unset.
/// The job-wide amounts are those of the vnodes' released resources that the server
/// counts, then those of its `Resource_List` the list names (server and queue level
/// consumables), as OpenPBS's `update_resources_rel`.
fn on_suspend(state: &mut State, key: JobKey, exec: &ExecVnode) -> Option<Released> {
    let names = restricted_to(state)?;
    let released = exec.restricted(|resource| names.iter().any(|n| n == resource));
    let mut list: Vec<(String, u64)> = Vec::new();
    for part in released.parts() {
        for (resource, value) in &part.resources {
            if crate::node::assigned::counted(state, resource)
                && let Some(n) = amount(value)
            {
                add(&mut list, resource, n);
            }
        }
    }
    let job = state.job(key)?;
    let job_wide: Vec<(String, u64)> = job
        .attrs
        .resources(job_idx!("Resource_List"))
        .filter(|(resource, _)| names.iter().any(|n| n == resource) && !list.iter().any(|(r, _)| r == resource))
        .filter(|(resource, _)| crate::node::assigned::counted(state, resource))
        .filter_map(|(resource, value)| Some((resource.to_string(), amount(value)?)))
        .collect();
    for (resource, n) in job_wide {
        add(&mut list, &resource, n);
    }
    let shown: Vec<(String, String)> = list.iter().map(|(r, n)| (r.clone(), show(state, r, *n))).collect();
    let job = state.job_mut(key)?;
    job.attrs.set(job_idx!("resources_released"), None, released.to_string());
    job.attrs.unset_all(job_idx!("resource_released_list"));
    for (resource, value) in shown {
        let resource = state.interner.intern(&resource);
        if let Some(job) = state.job_mut(key) {
            job.attrs.set(job_idx!("resource_released_list"), Some(resource), value);
        }
    }
    Some(Released { exec: released, list })
}

fn add(list: &mut Vec<(String, u64)>, resource: &str, n: u64) {
    match list.iter_mut().find(|(r, _)| r == resource) {
        Some((_, sum)) => *sum = sum.saturating_add(n),
        None => list.push((resource.to_string(), n)),
    }
}

/// An amount as `resource_released_list` shows it: sizes in kb, as OpenPBS.
fn show(state: &State, resource: &str, n: u64) -> String {
    if is_size(state, resource) { Size::in_unit(n, 10).to_string() } else { n.to_string() }
}

/// What the suspension of `job` gave back under the server's list, read from the job.
fn of(job: &Job) -> Option<Released> {
    let exec: ExecVnode = job.attrs.get(job_idx!("resources_released"), None)?.parse().ok()?;
    let list = job
        .attrs
        .resources(job_idx!("resource_released_list"))
        .filter_map(|(resource, value)| Some((resource.to_string(), amount(value)?)))
        .collect();
    Some(Released { exec, list })
}

/// The job runs again, or ends: nothing of it is released any more.
fn clear(job: &mut Job) {
    job.attrs.unset(job_idx!("resources_released"), None);
    job.attrs.unset_all(job_idx!("resource_released_list"));
}

/// A suspension of `key` (`job_id`): its resources go back, all of them or, under the
/// server's list, those it names ([`on_suspend`] records them on the job).
pub fn give_back(state: &mut State, key: JobKey, job_id: &str, now: i64) {
    let Some(placement) = state.job(key).and_then(Job::placement) else { return };
    match on_suspend(state, key, &placement.exec) {
        Some(released) => crate::node::account_released(state, key, released.parts(), false, now),
        None => crate::node::account(state, key, job_id, &placement.exec, placement.exclusive, false, now),
    }
}

/// A suspended job runs again (resumed, or woken to end): it takes back what its
/// suspension gave, and nothing of it is released any more.
pub fn take_back(state: &mut State, key: JobKey, job_id: &str, now: i64) {
    let Some(job) = state.job(key) else { return };
    let Some(placement) = job.placement() else { return };
    match of(job) {
        Some(released) => {
            crate::node::account_released(state, key, released.parts(), true, now);
            if let Some(job) = state.job_mut(key) {
                clear(job);
            }
        }
        None => crate::node::account(state, key, job_id, &placement.exec, placement.exclusive, true, now),
    }
}

/// Whether suspended job `job` still holds resources: what its suspension under the
/// server's list kept (without the list it gave back everything).
pub fn holds_some(job: &Job) -> bool {
    job.attrs.get(job_idx!("resources_released"), None).is_some()
}

/// At a restart, suspended job `key` holds again what its suspension kept.
pub fn recount(state: &mut State, key: JobKey, now: i64) {
    let Some(job) = state.job(key) else { return };
    let (Some(released), Some(placement)) = (of(job), job.placement()) else { return };
    let id = job.id(&state.server_name);
    crate::node::account(state, key, &id, &placement.exec, placement.exclusive, true, now);
    crate::node::account_released(state, key, released.parts(), false, now);
}
