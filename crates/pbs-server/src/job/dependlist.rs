//! The text of `depend` lists as the server keeps them and the edits the dependency
//! kinds share (`job::depend`, `job::runone`): a target's job, an entry added or removed,
//! the system hold a job waits under (also a runone group's and a job set's), and a job deleted because what it waited on can no longer
//! happen.

use pbs_core::depend::{DependKind, DependList, Dependency};
use pbs_core::{JobState, Substate};

use crate::effects::Effects;
use crate::job::life::{Life, Step, Why};
use crate::jobkey::JobKey;
use crate::state::State;

/// OpenPBS's substate of a job held for a dependency.
pub const SUBSTATE_DEPEND_HOLD: Substate = Substate(22);

/// The sequence number a kept target (`12.server@server`, `12[].server@server`) names.
pub fn target_seq(target: &str) -> Option<u64> {
    target.split('@').next()?.parse::<pbs_core::JobId>().ok().map(|id| id.seq())
}

/// `list` without the target naming `job_id` in its item of `kind`; an item left with
/// none goes.
pub fn without_entry(list: &mut DependList, kind: DependKind, job_id: &str) {
    for dependency in list.0.iter_mut().filter(|d| d.kind == kind) {
        dependency.targets.retain(|t| t.split('@').next() != Some(job_id));
    }
    list.0.retain(|d| !d.targets.is_empty());
}

/// `list` without `parent_id` among its targets; an item left with none goes.
pub fn without_target(list: &mut DependList, parent_id: &str) {
    for dependency in &mut list.0 {
        dependency.targets.retain(|t| t.split('@').next() != Some(parent_id));
    }
    list.0.retain(|d| !d.targets.is_empty());
}

/// `list` with `target` added to its item of `kind` (once).
pub fn merged(list: &mut DependList, kind: DependKind, target: String) {
    match list.0.iter_mut().find(|d| d.kind == kind) {
        Some(item) if item.targets.contains(&target) => {}
        Some(item) => item.targets.push(target),
        None => list.0.push(Dependency { kind, targets: vec![target] }),
    }
}

/// The list a job keeps, to change and set back with [`crate::state::Job::set_depend`].
pub fn list_of(job: &crate::state::Job) -> DependList {
    job.depend_list().cloned().unwrap_or(DependList(Vec::new()))
}

/// Whether a list waits on a job, or on jobs still to name it (`on`): read from the kept
/// list, never by parsing a target.
pub fn still_waiting(list: &DependList) -> bool {
    list.0.iter().any(|d| {
        (crate::state::depends::WAITING_KINDS.contains(&d.kind) && !d.targets.is_empty())
            || (d.kind == DependKind::On && d.targets.first().is_some_and(|n| n != "0"))
    })
}

/// The dependency of `child` on `parent_id` can no longer be met: the child is deleted,
/// as OpenPBS does (kept in history finished, its list and system hold as they were). Its
/// waits on other parents stay in the index, as the `before` entries OpenPBS keeps on
/// them; their ends find it finished and leave it be. Its own children stay as they are,
/// as for any job deleted before it ran.
pub fn delete_child(state: &mut State, child: u64, parent_id: &str, now: i64, life: Life<'_>, out: &mut Effects) {
    if state.jobs.get(&child).is_none_or(|j| j.state.is_history() || j.array) {
        return;
    }
    let step = Step::Left { why: Why::Dependency(parent_id.to_string()) };
    life.step(state, JobKey::job(child), step, now, out);
}

/// Holds a job for its dependencies: system hold, substate 22, not eligible.
pub fn hold_for_dependencies(job: &mut crate::state::Job) {
    let holds = job.get("Hold_Types", None).unwrap_or("n");
    let held = crate::holds::written(|c| c == 's' || holds.contains(c));
    job.attrs.set(job_idx!("Hold_Types"), None, held);
    job.state = JobState::Held;
    job.substate = SUBSTATE_DEPEND_HOLD;
    job.attrs.unset(job_idx!("etime"), None);
}

/// Lifts the system hold of a held job that waits on nothing more (its dependencies, a
/// runone group's or a job set's running member): queued again unless other holds remain.
pub fn lift_system_hold(job: &mut crate::state::Job, now: i64) {
    let current = job.get("Hold_Types", None).unwrap_or("n");
    let holds = crate::holds::written(|c| c != 's' && current.contains(c));
    if job.state == JobState::Held {
        if holds == "n" {
            job.state = JobState::Queued;
            job.substate = Substate::QUEUED;
            job.attrs.set(job_idx!("etime"), None, now.to_string());
        } else {
            job.substate = JobState::Held.default_substate();
        }
    }
    job.attrs.set(job_idx!("Hold_Types"), None, holds);
}
