//! Dependencies between jobs (`qsub -W depend=`): a new job's `after`-family list checked
//! and kept (the child held with a system hold while it waits, each parent marked with the
//! matching `before` entry), and the children released or deleted where a parent starts or
//! ends, found through `State::dependents`, never by walking the jobs.

use pbs_core::depend::{DependKind, DependList};
use pbs_core::{JobState, Pbse, Substate};

use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::state::State;
use crate::state::depends::WAITING_KINDS;
use crate::store::StoreOp;

/// OpenPBS's substate of a job held for a dependency.
pub const SUBSTATE_DEPEND_HOLD: Substate = Substate(22);

/// The kinds this server acts on: anything else in a list is refused, never kept
/// silently idle.
fn supported(kind: DependKind) -> bool {
    WAITING_KINDS.contains(&kind)
}

/// The `before` entry a parent gets for a child waiting with `kind`.
fn reverse(kind: DependKind) -> DependKind {
    match kind {
        DependKind::After => DependKind::Before,
        DependKind::Afterok => DependKind::Beforeok,
        DependKind::Afternotok => DependKind::Beforenotok,
        _ => DependKind::Beforeany,
    }
}

/// Checks a new job's list before the job exists: every kind one this server acts on,
/// every job it names known (we refuse an unknown or purged one at once, where OpenPBS
/// creates the job and then aborts it). Gives the list as the job keeps it, each id
/// followed by `@server` as OpenPBS shows it.
pub fn check_new(state: &State, list: &str) -> Result<String, ReqError> {
    let mut parsed =
        DependList::parse(list, &state.server_name).map_err(|_| ReqError::attr(Pbse::BADATVAL, "depend"))?;
    for dependency in &mut parsed.0 {
        if !supported(dependency.kind) {
            return Err(ReqError::with_message(
                Pbse::BADATVAL,
                format!("dependency type {} is not supported by this server", dependency.kind.name()),
            ));
        }
        for target in &mut dependency.targets {
            let id = target.split('@').next().unwrap_or(target).to_string();
            // An array is named `12[]`, a plain job `12`: either name of the other is
            // unknown, as in OpenPBS (subjobs and ranges were refused by the parser).
            let known = id.parse::<pbs_core::JobId>().ok().and_then(|parsed| {
                let names_array = matches!(parsed.array(), pbs_core::ArrayPart::Parent);
                state.jobs.get(&parsed.seq()).filter(|job| job.array == names_array)
            });
            let Some(parent) = known else {
                return Err(ReqError::with_message(Pbse::UNKJOBID, format!("{} {id}", Pbse::UNKJOBID)));
            };
            *target = format!("{}@{}", parent.id(&state.server_name), state.server_name);
        }
    }
    Ok(parsed.to_string())
}

/// Enters a new job's list (already checked by [`check_new`]): each dependency already met
/// goes (a parent that finished or, for `after`, started), each that can no longer be met
/// deletes the job, the rest are kept in the index and marked on their parents; a job
/// still waiting is held (`Hold_Types` `s`, substate 22). Returns the parents' writes;
/// the job's own record is written by its submission.
pub fn submitted(state: &mut State, seq: u64, now: i64) -> Vec<StoreOp> {
    let Some(list) = state.jobs.get(&seq).and_then(|j| j.get("depend", None)).map(str::to_string) else {
        return Vec::new();
    };
    let child_id = state.jobs.get(&seq).map(|j| j.id(&state.server_name)).unwrap_or_default();
    let mut ops = Vec::new();
    let mut waiting = false;
    for (parent, kind) in crate::state::depends::waits(&list) {
        let Some(parent_job) = state.jobs.get(&parent) else { continue };
        let parent_id = parent_job.id(&state.server_name);
        let outcome = if parent_job.state.is_history() {
            let exit = parent_job.get("Exit_status", None).and_then(|s| s.parse::<i32>().ok());
            Some(met_by_end(kind, exit))
        } else if kind == DependKind::After && matches!(parent_job.state, JobState::Running | JobState::Begun) {
            Some(true)
        } else {
            None
        };
        match outcome {
            Some(true) => {
                tracing::info!(
                    object_type = "Job",
                    object_name = child_id.as_str(),
                    "{parent_id} Job has finished, dependency satisfied"
                );
                if let Some(child) = state.jobs.get_mut(&seq) {
                    let left = without_target(child.get("depend", None).unwrap_or(""), &parent_id);
                    set_list(child, left);
                }
            }
            Some(false) => {
                ops.extend(delete_child(state, seq, &parent_id, now));
                return ops;
            }
            None => {
                waiting = true;
                state.dependents.add(parent, seq, kind);
                let entry = format!("{}:{child_id}@{}", reverse(kind).name(), state.server_name);
                if let Some(parent_job) = state.jobs.get_mut(&parent) {
                    let merged = merged(parent_job.get("depend", None), &entry);
                    parent_job.attrs.set(job_idx!("depend"), None, merged);
                    ops.push(parent_job.put_op(None));
                }
            }
        }
    }
    if let Some(child) = state.jobs.get_mut(&seq) {
        if waiting {
            let holds = child.get("Hold_Types", None).unwrap_or("n").replace('n', "");
            if !holds.contains('s') {
                child.attrs.set(job_idx!("Hold_Types"), None, format!("{holds}s"));
            }
            child.state = JobState::Held;
            child.substate = SUBSTATE_DEPEND_HOLD;
            // Not eligible until released.
            child.attrs.unset(job_idx!("etime"), None);
        } else if child.state == JobState::Queued {
            child.attrs.set(job_idx!("etime"), None, now.to_string());
        }
    }
    ops
}

/// Whether a parent's end with `exit` meets a dependency of `kind` (`None`: it can no
/// longer be met).
fn met_by_end(kind: DependKind, exit: Option<i32>) -> bool {
    match kind {
        DependKind::Afterok => exit == Some(0),
        DependKind::Afternotok => exit.is_some_and(|e| e != 0),
        _ => true,
    }
}

/// A parent started: its `after` children's dependency on it is met.
pub fn parent_started(state: &mut State, parent: u64, now: i64) -> Vec<StoreOp> {
    let children = state.dependents.take(parent, &[DependKind::After]);
    let parent_id = state.jobs.get(&parent).map(|j| j.id(&state.server_name)).unwrap_or_default();
    children.into_iter().flat_map(|(child, _)| release(state, child, &parent_id, now)).collect()
}

/// A parent ended with `exit` (none: it was deleted before it ran, which leaves its
/// children waiting, as OpenPBS does): each child is released or deleted by its kind.
/// `parent_id` is its id as its children name it (`12.server`, `12[].server` for an
/// array, whose end is that of its last subjob).
pub fn parent_ended(state: &mut State, parent: u64, parent_id: &str, exit: Option<i32>, now: i64) -> Vec<StoreOp> {
    let Some(exit) = exit else { return Vec::new() };
    let children = state.dependents.take(parent, &WAITING_KINDS);
    let mut ops = Vec::new();
    for (child, kind) in children {
        if met_by_end(kind, Some(exit)) {
            ops.extend(release(state, child, parent_id, now));
        } else {
            ops.extend(delete_child(state, child, parent_id, now));
        }
    }
    ops
}

/// The `Exit_status` an array takes from a subjob that ended with `exit`: 0, 1 for a
/// failure, 2 for a job that never ran its script. As in OpenPBS, the last subjob to end
/// decides, so an array whose last subjob succeeded counts as a success for `afterok`
/// (../shared/reference depend_array_fail_first).
pub fn array_exit_status(exit: i32) -> i32 {
    match exit {
        0 => 0,
        e if e > 0 => 1,
        _ => 2,
    }
}

/// `list` without `parent_id` among its targets; an item left with none goes.
fn without_target(list: &str, parent_id: &str) -> String {
    let Ok(mut parsed) = DependList::parse(list, "") else { return list.to_string() };
    for dependency in &mut parsed.0 {
        dependency.targets.retain(|t| t.split('@').next() != Some(parent_id));
    }
    parsed.0.retain(|d| !d.targets.is_empty());
    parsed.to_string()
}

/// `list` with `entry` (`kind:target`) added to its item of that kind.
fn merged(list: Option<&str>, entry: &str) -> String {
    let Some(list) = list.filter(|l| !l.is_empty()) else { return entry.to_string() };
    let Ok(mut parsed) = DependList::parse(list, "") else { return format!("{list},{entry}") };
    let Ok(DependList(mut added)) = DependList::parse(entry, "") else { return list.to_string() };
    let Some(new) = added.pop() else { return list.to_string() };
    match parsed.0.iter_mut().find(|d| d.kind == new.kind) {
        Some(item) => item.targets.extend(new.targets),
        None => parsed.0.push(new),
    }
    parsed.to_string()
}

fn set_list(job: &mut crate::state::Job, list: String) {
    if list.is_empty() {
        job.attrs.unset(job_idx!("depend"), None);
    } else {
        job.attrs.set(job_idx!("depend"), None, list);
    }
}

/// The dependency of `child` on `parent_id` is met: it goes from the child's list, and a
/// child waiting on nothing more loses its system hold (queued again unless other holds
/// remain).
fn release(state: &mut State, child: u64, parent_id: &str, now: i64) -> Vec<StoreOp> {
    let Some(job) = state.jobs.get_mut(&child).filter(|j| !j.state.is_history()) else { return Vec::new() };
    let child_id = job.id(&state.server_name);
    tracing::info!(object_type = "Job", object_name = child_id.as_str(), "Dependency on job {parent_id} released.");
    let left = without_target(job.get("depend", None).unwrap_or(""), parent_id);
    let still_waiting = !crate::state::depends::waits(&left).is_empty();
    set_list(job, left);
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
    if !still_waiting {
        let holds: String = job.get("Hold_Types", None).unwrap_or("n").chars().filter(|c| *c != 's').collect();
        let holds = if holds.is_empty() { "n".to_string() } else { holds };
        if holds == "n" && job.state == JobState::Held {
            job.state = JobState::Queued;
            job.substate = Substate::QUEUED;
            job.attrs.set(job_idx!("etime"), None, now.to_string());
        }
        job.attrs.set(job_idx!("Hold_Types"), None, holds);
    }
    state.changes.cycle = true;
    state.jobs.get(&child).map(|j| vec![j.put_op(None)]).unwrap_or_default()
}

/// The dependency of `child` on `parent_id` can no longer be met: the child is deleted,
/// as OpenPBS does (kept in history finished, its list and system hold as they were).
fn delete_child(state: &mut State, child: u64, parent_id: &str, now: i64) -> Vec<StoreOp> {
    let history = state.server_flag("job_history_enable", false);
    let Some(job) = state.jobs.get(&child).filter(|j| !j.state.is_history() && !j.array) else { return Vec::new() };
    let child_id = job.id(&state.server_name);
    let parents: Vec<u64> =
        job.get("depend", None).map(crate::state::depends::waits).unwrap_or_default().iter().map(|(p, _)| *p).collect();
    tracing::info!(
        object_type = "Job",
        object_name = child_id.as_str(),
        "Job deleted as result of dependency on job {parent_id}"
    );
    state.dependents.forget_child(child, &parents);
    state.changes.jobs.insert(JobKey::job(child), child_id);
    state.changes.cycle = true;
    let ops = if history {
        let Some(job) = state.jobs.get_mut(&child) else { return Vec::new() };
        job.state = JobState::Finished;
        job.substate = Substate::FINISHED;
        let now = now.to_string();
        job.attrs.set(job_idx!("mtime"), None, now.as_str());
        job.attrs.set(job_idx!("history_timestamp"), None, now.as_str());
        vec![job.put_op(None)]
    } else {
        state.jobs.remove(&child);
        vec![StoreOp::DeleteJob { seq: child }]
    };
    // Its own children stay as they are, as for any job deleted before it ran.
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_lose_and_gain_targets_as_openpbs_writes_them() {
        assert_eq!(without_target("afterok:1.s@s:2.s@s,afterany:1.s@s", "1.s"), "afterok:2.s@s");
        assert_eq!(without_target("afterok:1.s@s", "1.s"), "");
        assert_eq!(merged(None, "beforeok:3.s@s"), "beforeok:3.s@s");
        assert_eq!(merged(Some("beforeok:3.s@s"), "beforeok:4.s@s"), "beforeok:3.s@s:4.s@s");
        assert_eq!(merged(Some("beforeok:3.s@s"), "beforeany:4.s@s"), "beforeok:3.s@s,beforeany:4.s@s");
        assert!(met_by_end(DependKind::Afterok, Some(0)));
        assert!(!met_by_end(DependKind::Afterok, Some(271)));
        assert!(met_by_end(DependKind::Afternotok, Some(1)));
        assert!(met_by_end(DependKind::Afterany, Some(1)));
    }
}
