//! What a node's mom reports, applied to the state: its node up with what the host has (and
//! the execution hooks it must hold), the jobs it holds reconciled with what the server
//! believes runs there, each job's start, usage and end, and a failing hook that offlines
//! its node; and its node going down when the link closes. The link itself (`momlink`)
//! only carries the frames.

use pbs_core::attr::ObjectKind;
use pbs_proto::mom::{FromMom, MomJob, ToMom};

use crate::effects::Effects;
use crate::state::State;
use crate::state::node_rt::Reported;

/// Applies one report from a node's mom to the state: its node's status and the jobs it
/// holds, a job's start, usage or end.
pub fn apply(state: &mut State, node: &str, report: FromMom, now: i64) -> Effects {
    match report {
        FromMom::NodeStatus { ncpus, mem_kb, arch, host, version, jobs } => {
            let rt = state.node_rt.entry(node.to_string()).or_default();
            let was_up = rt.up;
            rt.up = true;
            rt.ever_up = true;
            rt.down_since = None;
            rt.reported = Some(Reported { ncpus, mem_kb, arch, host, version });
            if !was_up {
                rt.last_state_change = now;
                tracing::info!(object_type = "Node", object_name = node, "node up");
            }
            state.changes.nodes.insert(node.to_string());
            state.changes.cycle = true;
            // The hooks first: a start queued behind this status runs with them.
            let mut effects = Effects { to_moms: vec![crate::hooks::mom::link_up(state, node)], ..Effects::default() };
            effects.merge(reconcile(state, node, &jobs, now));
            effects
        }
        FromMom::JobStarted { job_id, session_id } => {
            crate::job::end::job_started(state, node, &job_id, session_id, now)
        }
        FromMom::JobUsage { job_id, usage } => {
            crate::job::end::job_usage(state, node, &job_id, &usage);
            Effects::default()
        }
        FromMom::JobEnded { job_id, exit_status, usage } => {
            if matches!(exit_status, JOB_EXEC_FAILHOOK_RERUN | JOB_EXEC_HOOKERROR) {
                // OpenPBS's msg_hook_reject_rerunjob.
                tracing::info!(
                    object_type = "Job",
                    object_name = job_id.as_str(),
                    "hook rejected request, requiring job to be rerun"
                );
            }
            crate::job::end::job_ended(state, node, &job_id, exit_status, &usage, now)
        }
        FromMom::Staging { job_id, direction } => crate::job::stage::staging(state, node, &job_id, direction),
        FromMom::StageFailed { job_id, direction, message } => {
            crate::job::stage::failed(state, node, &job_id, direction, &message)
        }
        FromMom::UnknownJob { job_id } => crate::job::end::unknown_to_its_mom(state, node, &job_id, now),
        FromMom::OfflineByHook { hook } => offline_by_hook(state, node, &hook),
        FromMom::OfflineByHookCleared => offline_by_hook_cleared(state, node),
        FromMom::RestartCycleByHook { hook, failed } => {
            // OpenPBS's texts (node_manager.c), under its mom's name.
            crate::hooks::event::restart_cycle(state, ("Node", node), failed.then_some(hook.as_str()));
            Effects::default()
        }
        FromMom::SignalResult { job_id, signal, code, .. } => {
            if code != 0 {
                tracing::warn!(
                    object_type = "Job",
                    object_name = job_id.as_str(),
                    "signal {signal} failed on {node} ({code})"
                );
            }
            Effects::default()
        }
        // Its request hears it through the pending answers (`momlink`); nothing changes.
        FromMom::MessageResult { .. } | FromMom::Pong => Effects::default(),
    }
}

/// `JOB_EXEC_FAILHOOK_RERUN`: an execjob_begin or execjob_prologue hook rejected the job.
const JOB_EXEC_FAILHOOK_RERUN: i32 = -16;
/// `JOB_EXEC_HOOKERROR`: such a hook raised or ran past its alarm.
const JOB_EXEC_HOOKERROR: i32 = -22;

/// A hook with `fail_action=offline_vnodes` failed on `node`'s mom: the node is marked
/// offline by its mom (OpenPBS's `offline_by_mom`, shown as `offline`) with OpenPBS's
/// comment, until a manager clears it (`pbsnodes -r`) or the mom's exechost_startup hooks
/// recover (`clear_vnodes_upon_recovery`).
fn offline_by_hook(state: &mut State, node: &str, hook: &str) -> Effects {
    let comment = crate::hooks::mom::offline_comment(hook);
    tracing::warn!(object_type = "Node", object_name = node, "{comment}");
    set_offline_by_mom(state, node, true, Some(&comment))
}

/// `node`'s mom ran its exechost_startup hooks without an error and one of them has
/// `fail_action=clear_vnodes_upon_recovery`: the offline a hook set goes, with its comment
/// (as OpenPBS's `clear_node_offline_by_mom`); a manager's offline stays.
fn offline_by_hook_cleared(state: &mut State, node: &str) -> Effects {
    let offlined = state.nodes.iter().any(|n| n.name == node && crate::node::has_state(n, crate::node::OFFLINE_BY_MOM));
    if !offlined {
        return Effects::default();
    }
    tracing::info!(object_type = "Node", object_name = node, "offline_by_mom cleared: its hooks recovered");
    set_offline_by_mom(state, node, false, None)
}

/// Sets or clears `offline_by_mom` in `node`'s stored state, keeping a manager's offline,
/// and sets (or, with `None`, unsets) its comment.
fn set_offline_by_mom(state: &mut State, node: &str, offline: bool, comment: Option<&str>) -> Effects {
    let Some(index) = state.nodes.iter().position(|n| n.name == node) else { return Effects::default() };
    let state_idx = const { ObjectKind::Node.index_of("state") };
    let comment_idx = const { ObjectKind::Node.index_of("comment") };
    let Some(named) = state.nodes.get_mut(index) else { return Effects::default() };
    let by_manager = crate::node::has_state(named, crate::node::OFFLINE);
    match (by_manager, offline) {
        (true, true) => named.attrs.set(state_idx, None, "offline,offline_by_mom"),
        (true, false) => named.attrs.set(state_idx, None, crate::node::OFFLINE),
        (false, true) => named.attrs.set(state_idx, None, crate::node::OFFLINE_BY_MOM),
        (false, false) => {
            named.attrs.unset(state_idx, None);
        }
    }
    match comment {
        Some(comment) => named.attrs.set(comment_idx, None, comment),
        None => {
            named.attrs.unset(comment_idx, None);
        }
    }
    state.changes.nodes.insert(node.to_string());
    state.changes.objects = true;
    Effects::ops(vec![state.named_op(ObjectKind::Node, index)])
}

/// A suspend or resume a mom carried out after the request that asked for it had given up
/// (its mom did not answer in time): that request failed and the job kept its state, so
/// the mom is asked to undo it.
pub fn late_signal(node: &str, job_id: &str, signal: &str) -> Effects {
    let undo = match signal {
        "suspend" => "resume",
        "resume" => "suspend",
        _ => return Effects::default(),
    };
    tracing::warn!(
        object_type = "Job",
        object_name = job_id,
        "{node} answered {signal} after its request had failed: asking it to {undo}"
    );
    let frame = ToMom::SignalJob { job_id: job_id.to_string(), signal: undo.to_string(), ask: 0 };
    Effects { to_moms: vec![(node.to_string(), frame)], ..Effects::default() }
}

/// Matches what a reconnecting mom holds with what the server believes runs there.
fn reconcile(state: &mut State, node: &str, held: &[MomJob], now: i64) -> Effects {
    let mut effects = Effects::default();
    for job in held.iter().filter(|j| !j.sister) {
        match job.exit_status {
            Some(status) => {
                effects.merge(crate::job::end::job_ended(state, node, &job.job_id, status, &job.usage, now))
            }
            None => {
                let known = crate::job::nodefail::jobs_on(state, node)
                    .into_iter()
                    .any(|key| Some(key) == crate::jobkey::key_of(&job.job_id));
                if known {
                    if job.session_id > 0 {
                        effects.merge(crate::job::end::job_started(state, node, &job.job_id, job.session_id, now));
                    }
                    crate::job::end::job_usage(state, node, &job.job_id, &job.usage);
                } else {
                    effects.to_moms.push((node.to_string(), ToMom::ForgetJob { job_id: job.job_id.clone() }));
                }
            }
        }
    }
    for key in crate::job::nodefail::jobs_on(state, node) {
        let listed = held.iter().any(|j| !j.sister && crate::jobkey::key_of(&j.job_id) == Some(key));
        if !listed && crate::job::faults::lost_by_mom(state, key) {
            effects.merge(crate::job::faults::requeue_lost(state, key, now));
        }
    }
    effects
}

/// A node's mom link closed: the node is down from `now` (its jobs are requeued once it
/// stays down past `node_fail_requeue`, see `job::nodefail::requeue_from_failed_nodes`).
pub fn link_down(state: &mut State, node: &str, now: i64) {
    let rt = state.node_rt.entry(node.to_string()).or_default();
    if rt.up {
        rt.up = false;
        rt.down_since = Some(now);
        rt.last_state_change = now;
        tracing::warn!(object_type = "Node", object_name = node, "node down: communication closed");
    }
    state.changes.nodes.insert(node.to_string());
}

/// A node's mom link was replaced (its `Mom` or `Port` changed) or its node deleted: what
/// the old link carried is forgotten, and the node is down until the new link comes up.
pub fn link_replaced(state: &mut State, node: &str, now: i64) {
    crate::job::faults::link_replaced(state, node);
    if state.nodes.iter().any(|n| n.name == node) {
        link_down(state, node, now);
    } else {
        state.node_rt.remove(node);
        state.changes.nodes.insert(node.to_string());
    }
}
