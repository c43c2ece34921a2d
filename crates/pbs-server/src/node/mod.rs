//! Nodes: their status as pbsnodes shows it, the scheduler's view of them, and the
//! resources running jobs hold on them.

pub mod amounts;
pub mod assigned;

pub use amounts::{amount, is_size};

use std::collections::BTreeMap;

use pbs_core::ExecVnode;
use pbs_core::attr::{ObjectKind, Privilege};
use pbs_proto::StatusObject;
use pbs_proto::sched::SchedNode;

use crate::attrlist::AttrList;
use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::request::filter::filtered;
use crate::state::node_rt::NodeRt;
use crate::state::{Named, State, set_named};

/// Whether a resource is consumable on nodes.
pub fn consumable(state: &State, resource: &str) -> bool {
    state.resources.get(resource).is_some_and(|d| d.flags.consumable)
}

/// The stored `state` word of a node a manager offlined (`pbsnodes -o`).
pub const OFFLINE: &str = "offline";
/// The stored `state` word of a node a hook's failure on its mom offlined: OpenPBS's
/// `offline_by_mom`, shown as `offline` too, but cleared on its own by a mom's recovery
/// (`clear_vnodes_upon_recovery`) while a manager's offline stays.
pub const OFFLINE_BY_MOM: &str = "offline_by_mom";

/// Whether the stored `state` of a node holds `word`.
pub fn has_state(node: &Named, word: &str) -> bool {
    node.attrs.get_named(ObjectKind::Node, "state", None).is_some_and(|s| s.split(',').any(|f| f.trim() == word))
}

/// Whether the stored `state` of a node holds either offline flag.
pub fn is_offline(node: &Named) -> bool {
    has_state(node, OFFLINE) || has_state(node, OFFLINE_BY_MOM)
}

/// Effective `resources_available` of a node: what a manager set wins over what the mom
/// reported.
pub fn available(state: &State, node: &Named) -> Vec<(String, String)> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    if let Some(rep) = state.node_rt.get(&node.name).and_then(|rt| rt.reported.as_ref()) {
        out.insert("arch".into(), rep.arch.clone());
        out.insert("host".into(), rep.host.clone());
        out.insert("mem".into(), format!("{}kb", rep.mem_kb));
        out.insert("ncpus".into(), rep.ncpus.to_string());
    }
    for (resource, value) in node.attrs.resources(const { ObjectKind::Node.index_of("resources_available") }) {
        out.insert(resource.to_string(), value.to_string());
    }
    out.entry("vnode".into()).or_insert_with(|| node.name.clone());
    out.entry("host".into()).or_insert_with(|| node.name.clone());
    out.into_iter().collect()
}

pub(crate) fn available_ncpus(available: &[(String, String)]) -> u64 {
    available.iter().find(|(r, _)| r == "ncpus").and_then(|(_, v)| amount(v)).unwrap_or(0)
}

/// `resources_assigned` as text pairs, with the zeros OpenPBS shows once a mom is known.
pub fn assigned_text(state: &State, rt: &NodeRt) -> Vec<(String, String)> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    if rt.ever_up || !rt.assigned.is_empty() {
        for (resource, zero) in [("mem", "0kb"), ("ncpus", "0"), ("vmem", "0kb")] {
            out.insert(resource.to_string(), zero.to_string());
        }
    }
    for (resource, value) in &rt.assigned {
        let text = if is_size(state, resource) { format!("{}kb", value / 1024) } else { value.to_string() };
        out.insert(resource.clone(), text);
    }
    out.into_iter().collect()
}

/// StatusNode: stored attributes plus everything known at run time, in table order.
pub fn node_status(state: &State, names: &[String], privilege: Privilege) -> Result<Vec<StatusObject>, ReqError> {
    let selected: Vec<&Named> = if names.is_empty() {
        state.nodes.iter().collect()
    } else {
        let mut out = Vec::new();
        for name in names {
            let node =
                state.nodes.iter().find(|n| n.name == *name).ok_or_else(|| ReqError::new(pbs_core::Pbse::UNKNODE))?;
            out.push(node);
        }
        out
    };
    let mut interner = crate::attrlist::Interner::default();
    Ok(selected
        .into_iter()
        .map(|node| {
            let rt = state.node_rt.get(&node.name).cloned().unwrap_or_default();
            let avail = available(state, node);
            let mut list: AttrList = node.attrs.clone();
            let mut set = |name: &str, value: &str| set_named(&mut list, ObjectKind::Node, name, value, &mut interner);
            set("state", &rt.state_text(is_offline(node), available_ncpus(&avail)));
            if let Some(rep) = &rt.reported {
                set("pbs_version", &rep.version);
                set("pcpus", &rep.ncpus.to_string());
            }
            if !rt.jobs.is_empty() {
                let mut slots = Vec::new();
                let mut index = 0u64;
                // One slot per cpu a job holds here, never more than the node has: a
                // qrun -H may have given a job more cpus than that.
                let node_ncpus = available_ncpus(&avail).max(1);
                for (_, id, ncpus) in &rt.jobs {
                    for _ in 0..(*ncpus).clamp(1, node_ncpus) {
                        slots.push(format!("{id}/{index}"));
                        index += 1;
                    }
                }
                set("jobs", &slots.join(", "));
            }
            for (resource, value) in &avail {
                set(&format!("resources_available.{resource}"), value);
            }
            for (resource, value) in assigned_text(state, &rt) {
                set(&format!("resources_assigned.{resource}"), &value);
            }
            if rt.last_state_change > 0 {
                set("last_state_change_time", &rt.last_state_change.to_string());
            }
            if rt.last_used > 0 {
                set("last_used_time", &rt.last_used.to_string());
            }
            StatusObject {
                name: node.name.clone(),
                attrs: filtered(
                    &list,
                    ObjectKind::Node,
                    privilege,
                    &[],
                    Vec::new(),
                    crate::privilege::hidden_resources(state, privilege),
                ),
            }
        })
        .collect())
}

/// The scheduler's view of one node.
pub fn sched_node(state: &State, node: &Named) -> SchedNode {
    let rt = state.node_rt.get(&node.name).cloned().unwrap_or_default();
    let avail = available(state, node);
    let get = |name: &str| node.attrs.get_named(ObjectKind::Node, name, None);
    let mut jobs: Vec<String> = Vec::new();
    for (_, id, _) in &rt.jobs {
        if !jobs.contains(id) {
            jobs.push(id.clone());
        }
    }
    SchedNode {
        name: node.name.clone(),
        state: rt.state_text(is_offline(node), available_ncpus(&avail)),
        resources_assigned: assigned_text(state, &rt),
        resources_available: avail,
        sharing: get("sharing").unwrap_or("default_shared").to_string(),
        queue: get("queue").map(str::to_string),
        priority: get("priority").and_then(|p| p.parse().ok()).unwrap_or(0),
        jobs,
        exclusive: rt.exclusive,
    }
}

/// Adds (`hold = true`) or removes a running job's resources on every node of its
/// `exec_vnode`, and records or forgets it in the nodes' job lists; the server's and its
/// queue's `resources_assigned` follow.
pub fn account(
    state: &mut State,
    key: JobKey,
    job_id: &str,
    exec_vnode: &ExecVnode,
    exclusive: bool,
    hold: bool,
    now: i64,
) {
    crate::node::assigned::account(state, key, hold);
    account_vnodes(state, key, (job_id, exec_vnode, exclusive), hold, now);
}

/// [`account`] of what a suspension under `restrict_res_to_release_on_suspend` gave back
/// (`hold = false`) or a resumption takes again: only the released amounts, per vnode
/// (`exec`) and job-wide on the server and the queue; the job leaves and rejoins the
/// nodes' job lists as a whole suspension makes it.
pub fn account_released(
    state: &mut State,
    key: JobKey,
    (exec, job_wide): (&ExecVnode, &[(String, u64)]),
    hold: bool,
    now: i64,
) {
    let Some(job) = state.job(key) else { return };
    let job_id = job.id(&state.server_name);
    let exclusive = job.placement().is_some_and(|p| p.exclusive);
    crate::node::assigned::account_part(state, key, job_wide, hold);
    account_vnodes(state, key, (&job_id, exec, exclusive), hold, now);
}

/// The vnodes' side of [`account`]: `(job id, exec_vnode, exclusive)`.
fn account_vnodes(
    state: &mut State,
    key: JobKey,
    (job_id, exec_vnode, exclusive): (&str, &ExecVnode, bool),
    hold: bool,
    now: i64,
) {
    let mut per_node: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    for part in exec_vnode.parts() {
        let entry = per_node.entry(part.vnode.clone()).or_default();
        for (resource, value) in &part.resources {
            if !consumable(state, resource) {
                continue;
            }
            if let Some(n) = amount(value) {
                entry.push((resource.clone(), n));
            }
        }
    }
    for (vnode, resources) in per_node {
        let rt = state.node_rt.entry(vnode.clone()).or_default();
        let ncpus: u64 = resources.iter().filter(|(r, _)| r == "ncpus").map(|(_, n)| *n).fold(0, u64::saturating_add);
        for (resource, n) in resources {
            let slot = rt.assigned.entry(resource).or_insert(0);
            *slot = if hold { slot.saturating_add(n) } else { slot.saturating_sub(n) };
        }
        rt.assigned.retain(|_, v| *v > 0);
        if hold {
            rt.jobs.push((key, job_id.to_string(), ncpus));
            rt.exclusive |= exclusive;
            rt.last_used = now;
        } else {
            rt.jobs.retain(|(k, _, _)| *k != key);
            if exclusive || rt.jobs.is_empty() {
                rt.exclusive = false;
            }
            rt.last_used = now;
        }
        state.changes.nodes.insert(vnode);
    }
}
