//! Dependencies between jobs (`qsub -W depend=`, `qalter -W depend=`): a job's list
//! checked and kept (the child held with a system hold while it waits; `on:N` waiting for
//! jobs that name it with a `before` kind, which makes it wait on them), qalter's changes to
//! it, and the children released or deleted where a parent starts or ends, found through
//! `State::dependents` (which also shows each parent's `before` entries), never by walking
//! the jobs. `runone` groups are `job::runone`'s.

use pbs_core::depend::{DependKind, DependList};
use pbs_core::{JobState, Pbse};

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::{At, Life};
use crate::jobkey::JobKey;
use crate::state::State;
use crate::state::depends::WAITING_KINDS;
use crate::store::StoreOp;

pub use crate::job::dependlist::SUBSTATE_DEPEND_HOLD;
use crate::job::dependlist::{
    delete_child, hold_for_dependencies, lift_system_hold, list_of, merged, still_waiting, target_seq, without_target,
};

/// The kinds a job waits with, which qalter can change: anything else in a list is
/// refused, never kept silently idle.
fn supported(kind: DependKind) -> bool {
    WAITING_KINDS.contains(&kind)
}

/// The kinds a new job may name: the waiting ones, `on:N` (it waits for N jobs to name it
/// with a `before` kind) and the `before` kinds (the job named waits on this one).
fn supported_at_submission(kind: DependKind) -> bool {
    supported(kind) || matches!(kind, DependKind::On | DependKind::Runone) || before_to_after(kind).is_some()
}

/// The wait a `before` kind puts on the job it names: `beforeok:X` on job Y makes X wait
/// `afterok:Y`.
fn before_to_after(kind: DependKind) -> Option<DependKind> {
    match kind {
        DependKind::Before => Some(DependKind::After),
        DependKind::Beforeok => Some(DependKind::Afterok),
        DependKind::Beforenotok => Some(DependKind::Afternotok),
        DependKind::Beforeany => Some(DependKind::Afterany),
        _ => None,
    }
}

/// The count of `on:N` still awaited in a list (0 without one).
fn on_count(list: &DependList) -> u64 {
    list.0
        .iter()
        .find(|d| d.kind == DependKind::On)
        .and_then(|d| d.targets.first())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Checks a new job's list before the job exists: every kind one this server acts on,
/// every job it names known (we refuse an unknown or purged one at once, where OpenPBS
/// creates the job and then aborts it). Gives the list as the job keeps it, each id
/// followed by `@server` as OpenPBS shows it.
///
/// A `before` kind names a job of the same owner that waits for it with `on:N` (OpenPBS
/// creates the job and then aborts it when the named job has no `on`; we refuse it at
/// once, as for an unknown job), and must not close a cycle with the new job's own waits.
pub fn check_new(state: &State, owner: &str, list: &str) -> Result<String, ReqError> {
    let bad_value = || ReqError::attr(Pbse::BADATVAL, "depend");
    let mut parsed = DependList::parse(list, &state.server_name).map_err(|_| bad_value())?;
    let mut waits_on_parents = Vec::new();
    let mut named_by_before = Vec::new();
    for dependency in &mut parsed.0 {
        if !supported_at_submission(dependency.kind) {
            return Err(unsupported(dependency.kind));
        }
        if dependency.kind == DependKind::On {
            let count = dependency.targets.first().and_then(|n| n.parse::<u64>().ok());
            if dependency.targets.len() != 1 || count.is_none_or(|n| n == 0) {
                return Err(bad_value());
            }
            continue;
        }
        for target in &mut dependency.targets {
            let (parent, full) = resolve(state, target)?;
            *target = full;
            let is_before = before_to_after(dependency.kind).is_some();
            if is_before || dependency.kind == DependKind::Runone {
                named_job(state, parent, owner)?;
            }
            if dependency.kind == DependKind::Runone {
                continue;
            }
            if is_before {
                let named = state.jobs.get(&parent).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
                if named.depend_list().is_none_or(|l| on_count(l) == 0) {
                    return Err(ReqError::new(Pbse::BADDEPEND));
                }
                named_by_before.push((parent, target.clone()));
            } else {
                waits_on_parents.push(parent);
            }
        }
    }
    // One walk over everything the new job will wait on, however many jobs it names.
    let ancestors = if named_by_before.is_empty() { Default::default() } else { reachable(state, &waits_on_parents) };
    for (named, target) in &named_by_before {
        if ancestors.contains(named) {
            let named_id = target.split('@').next().unwrap_or(target);
            return Err(cycle(format!("{named_id} would wait on a job that waits on it")));
        }
    }
    kept(parsed).map(|(_, text)| text)
}

/// A job a `before` kind or `runone` names, which changes too: it must be live and
/// `owner`'s.
fn named_job<'s>(state: &'s State, seq: u64, owner: &str) -> Result<&'s crate::state::Job, ReqError> {
    let named = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if named.state.is_history() {
        return Err(ReqError::new(Pbse::HISTDEPEND));
    }
    if named.owner() != owner {
        return Err(ReqError::new(Pbse::PERM));
    }
    Ok(named)
}

/// The list a job keeps, and its text: at most `MAX_TARGETS` targets, and no longer than the
/// limit on the value a request may send (each target gains its `@server` here), else
/// `Illegal attribute or resource value depend`.
fn kept(list: DependList) -> Result<(DependList, String), ReqError> {
    let targets: usize = list.0.iter().filter(|d| !d.kind.takes_count()).map(|d| d.targets.len()).sum();
    if targets > pbs_core::depend::MAX_TARGETS {
        return Err(ReqError::attr(Pbse::BADATVAL, "depend"));
    }
    let text = list.to_string();
    crate::size_limits::check_value(pbs_core::ObjectKind::Job, "depend", &text)?;
    Ok((list, text))
}

fn cycle(why: String) -> ReqError {
    ReqError::with_message(Pbse::BADDEPEND, format!("{} (cycle: {why})", Pbse::BADDEPEND))
}

fn check_supported(kind: DependKind) -> Result<(), ReqError> {
    if supported(kind) {
        return Ok(());
    }
    Err(unsupported(kind))
}

fn unsupported(kind: DependKind) -> ReqError {
    ReqError::with_message(Pbse::BADATVAL, format!("dependency type {} is not supported by this server", kind.name()))
}

/// The job a list's target names: its sequence number and the target as the server keeps
/// it (`12.server@server`), or Unknown Job Id.
pub(super) fn resolve(state: &State, target: &str) -> Result<(u64, String), ReqError> {
    let id = target.split('@').next().unwrap_or(target);
    // An array is named `12[]`, a plain job `12`: either name of the other is unknown,
    // as in OpenPBS (subjobs and ranges were refused by the parser).
    let known = id.parse::<pbs_core::JobId>().ok().and_then(|parsed| {
        let names_array = matches!(parsed.array(), pbs_core::ArrayPart::Parent);
        state.jobs.get(&parsed.seq()).filter(|job| job.array == names_array)
    });
    let Some(parent) = known else {
        return Err(ReqError::with_message(Pbse::UNKJOBID, format!("{} {id}", Pbse::UNKJOBID)));
    };
    Ok((parent.seq, format!("{}@{}", parent.id(&state.server_name), state.server_name)))
}

/// Whether `parent` has already met (`Some(true)`) or can no longer meet (`Some(false)`)
/// a dependency of `kind`, or must be waited on (`None`).
fn outcome(parent: &crate::state::Job, kind: DependKind) -> Option<bool> {
    if parent.state.is_history() {
        let exit = parent.get("Exit_status", None).and_then(|s| s.parse::<i32>().ok());
        Some(met_by_end(kind, exit))
    } else if kind == DependKind::After && matches!(parent.state, JobState::Running | JobState::Begun) {
        Some(true)
    } else {
        None
    }
}

/// `child` now waits on `parent` for `kind`: the index knows it, and shows it as the
/// parent's `before` entry (`request::filter::depend_shown`); the parent's record is not written.
fn register(state: &mut State, parent: u64, child: u64, kind: DependKind) {
    state.dependents.add(parent, child, kind);
}

/// What a list's `before` kinds name: (job, the wait it takes on this one).
fn names_by_before(list: &DependList) -> Vec<(u64, DependKind)> {
    let mut out = Vec::new();
    for dependency in &list.0 {
        let Some(after) = before_to_after(dependency.kind) else { continue };
        out.extend(dependency.targets.iter().filter_map(|t| target_seq(t)).map(|named| (named, after)));
    }
    out
}

/// Job `parent` named `child` with a `before` kind: the child now waits on the parent
/// with the matching `after` kind (in the index and in its list) and one fewer job is
/// awaited by its `on`. Gives the child's write.
fn register_before(state: &mut State, parent: u64, child: u64, kind: DependKind) -> Option<StoreOp> {
    state.dependents.add(parent, child, kind);
    let parent_id = state.jobs.get(&parent)?.id(&state.server_name);
    let target = format!("{parent_id}@{}", state.server_name);
    let child_job = state.jobs.get_mut(&child)?;
    let mut list = list_of(child_job);
    merged(&mut list, kind, target);
    with_on_decremented(&mut list);
    child_job.set_depend(list);
    Some(child_job.put_op(None))
}

/// `list` with its `on:N` one lower, gone at zero.
fn with_on_decremented(list: &mut DependList) {
    for dependency in list.0.iter_mut().filter(|d| d.kind == DependKind::On) {
        let left = dependency.targets.first().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0).saturating_sub(1);
        dependency.targets = if left == 0 { Vec::new() } else { vec![left.to_string()] };
    }
    list.0.retain(|d| !d.targets.is_empty());
}

/// [`register`] undone: `child` no longer waits on `parent` for `kind`.
fn unregister(state: &mut State, parent: u64, child: u64, kind: DependKind) {
    state.dependents.remove(parent, child, kind);
}

/// `seq` and every job that waits on it, directly or through others: a new wait of `seq`
/// on one of them would close a cycle. Walks the index, only as far as those jobs.
fn waiting_on(state: &State, seq: u64) -> std::collections::HashSet<u64> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![seq];
    while let Some(job) = stack.pop() {
        if seen.insert(job) {
            stack.extend(state.dependents.children_of(job).into_iter().map(|(child, _)| child));
        }
    }
    seen
}

/// `from` and every job they wait on, directly or through others.
fn reachable(state: &State, from: &[u64]) -> std::collections::HashSet<u64> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = from.to_vec();
    while let Some(seq) = stack.pop() {
        if !seen.insert(seq) {
            continue;
        }
        let Some(list) = state.jobs.get(&seq).and_then(|j| j.depend_list()) else { continue };
        stack.extend(crate::state::depends::waits(list).into_iter().map(|(parent, _)| parent));
    }
    seen
}

/// A qalter of `depend`, checked before anything changes: the list the job will keep and
/// the waits it drops and adds.
#[derive(Debug)]
pub struct AlterPlan {
    list: DependList,
    dropped: Vec<(u64, DependKind)>,
    added: Vec<(u64, DependKind)>,
    /// Jobs a `before` kind newly names, and the wait each takes on this one.
    named: Vec<(u64, DependKind)>,
    /// A `runone` list given: the job joins the groups it names.
    runone: bool,
}

/// Checks `qalter -W depend=LIST` on job `seq`: each kind named replaces the job's list of
/// that kind (moved to the end, as OpenPBS writes it), the others stay. Refused: an
/// unknown job (as at submission), a job that finished without meeting it
/// (`Finished job did not satisfy dependency`), and a wait that would close a cycle
/// (OpenPBS accepts one and both jobs stay held for ever).
///
/// `on:N`, `runone` and the `before` kinds are checked as at submission ([`check_new`]):
/// a job a `before` kind names waits on this one once the plan is applied (one named
/// already stays as it was, as OpenPBS leaves a registration made), `on:N` makes the job
/// wait for N more to name it, and `runone` joins it to the groups named.
pub fn check_alter(state: &State, seq: u64, requested: &str) -> Result<AlterPlan, ReqError> {
    let requested =
        DependList::parse(requested, &state.server_name).map_err(|_| ReqError::attr(Pbse::BADATVAL, "depend"))?;
    let job = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    let job_id = job.id(&state.server_name);
    let owner = job.owner().to_string();
    let mut items = job.depend_list().map(|l| l.0.clone()).unwrap_or_default();
    let already_named: Vec<(DependKind, String)> =
        items.iter().flat_map(|i| i.targets.iter().map(|t| (i.kind, t.clone()))).collect();
    let mut dropped = Vec::new();
    items.retain(|item| {
        let replaced = requested.0.iter().any(|r| r.kind == item.kind);
        if replaced && supported(item.kind) {
            dropped.extend(item.targets.iter().filter_map(|t| target_seq(t)).map(|p| (p, item.kind)));
        }
        !replaced
    });
    let mut added = Vec::new();
    let mut named = Vec::new();
    let mut runone = false;
    let descendants = waiting_on(state, seq);
    let mut ancestors = None;
    for mut item in requested.0 {
        if item.kind == DependKind::On {
            let count = item.targets.first().and_then(|n| n.parse::<u64>().ok());
            if item.targets.len() != 1 || count.is_none_or(|n| n == 0) {
                return Err(ReqError::attr(Pbse::BADATVAL, "depend"));
            }
            items.push(item);
            continue;
        }
        if let Some(after) = before_to_after(item.kind).or((item.kind == DependKind::Runone).then_some(item.kind)) {
            for target in &mut item.targets {
                let (other, full) = resolve(state, target)?;
                *target = full;
                let other_job = named_job(state, other, &owner)?;
                if item.kind == DependKind::Runone || already_named.contains(&(item.kind, target.clone())) {
                    continue;
                }
                if other_job.depend_list().is_none_or(|l| on_count(l) == 0) {
                    return Err(ReqError::new(Pbse::BADDEPEND));
                }
                if other == seq || ancestors.get_or_insert_with(|| reachable(state, &[seq])).contains(&other) {
                    let other_id = target.split('@').next().unwrap_or(target);
                    return Err(cycle(format!("{other_id} would wait on a job that waits on it")));
                }
                named.push((other, after));
            }
            runone |= item.kind == DependKind::Runone;
            items.push(item);
            continue;
        }
        check_supported(item.kind)?;
        let mut kept = Vec::new();
        for target in &item.targets {
            let (parent, full) = resolve(state, target)?;
            if descendants.contains(&parent) {
                let parent_id = full.split('@').next().unwrap_or(&full);
                let why = if parent == seq {
                    "a job cannot wait on itself".to_string()
                } else {
                    format!("{parent_id} waits on {job_id}")
                };
                return Err(cycle(why));
            }
            match state.jobs.get(&parent).and_then(|p| outcome(p, item.kind)) {
                Some(true) => {}
                Some(false) => return Err(ReqError::new(Pbse::HISTDEPEND)),
                None => {
                    added.push((parent, item.kind));
                    kept.push(full);
                }
            }
        }
        item.targets = kept;
        if !item.targets.is_empty() {
            items.push(item);
        }
    }
    Ok(AlterPlan { list: kept(DependList(items))?.0, dropped, added, named, runone })
}

/// Carries out a checked [`AlterPlan`] on job `seq`: the parents it no longer waits on
/// forget it, the new ones learn of it, and the job is held for its dependencies or
/// released from them. Gives the writes of the other jobs it changes (those a `before`
/// kind names, the members of a `runone` group it joins); the job's own write, and the
/// scheduler's notice, are the caller's (qalter's `Altered` step).
pub fn apply_alter(state: &mut State, seq: u64, plan: AlterPlan, now: i64) -> Vec<StoreOp> {
    for &(parent, kind) in &plan.dropped {
        unregister(state, parent, seq, kind);
    }
    if let Some(job) = state.jobs.get_mut(&seq) {
        job.set_depend(plan.list);
    }
    for &(parent, kind) in &plan.added {
        register(state, parent, seq, kind);
    }
    let mut ops = Vec::new();
    for &(named, kind) in &plan.named {
        ops.extend(register_before(state, seq, named, kind));
    }
    let mut blocked = false;
    if plan.runone {
        let (group_ops, group_blocks) = crate::job::runone::joined(state, seq);
        ops.extend(group_ops);
        blocked = group_blocks;
    }
    let waiting = blocked || state.jobs.get(&seq).and_then(|j| j.depend_list()).is_some_and(still_waiting);
    if let Some(job) = state.jobs.get_mut(&seq) {
        if waiting {
            hold_for_dependencies(job);
        } else if job.substate == SUBSTATE_DEPEND_HOLD {
            lift_system_hold(job, now);
        }
    }
    ops
}

/// Enters a new job's list (already checked by [`check_new`]): each dependency already met
/// goes (a parent that finished or, for `after`, started), each that can no longer be met
/// deletes the job, the rest are kept in the index and marked on their parents; a job
/// still waiting is held (`Hold_Types` `s`, substate 22). Gives the parents' writes (and
/// the job's end, when a dependency ends it); the job's own record is written by its
/// submission.
pub fn submitted(state: &mut State, seq: u64, now: i64, life: Life<'_>) -> Effects {
    let mut out = Effects::default();
    let Some(list) = state.jobs.get(&seq).and_then(|j| j.depend_list()).cloned() else {
        return out;
    };
    let child_id = state.jobs.get(&seq).map(|j| j.id(&state.server_name)).unwrap_or_default();
    let mut waiting = on_count(&list) > 0;
    for (named, kind) in names_by_before(&list) {
        out.ops.extend(register_before(state, seq, named, kind));
    }
    let (group_ops, group_blocks) = crate::job::runone::joined(state, seq);
    out.ops.extend(group_ops);
    waiting |= group_blocks;
    for (parent, kind) in crate::state::depends::waits(&list) {
        let Some(parent_job) = state.jobs.get(&parent) else { continue };
        let parent_id = parent_job.id(&state.server_name);
        match outcome(parent_job, kind) {
            Some(true) => {
                tracing::info!(
                    object_type = "Job",
                    object_name = child_id.as_str(),
                    "{parent_id} Job has finished, dependency satisfied"
                );
                if let Some(child) = state.jobs.get_mut(&seq) {
                    let mut left = list_of(child);
                    without_target(&mut left, &parent_id);
                    child.set_depend(left);
                }
            }
            Some(false) => {
                delete_child(state, seq, &parent_id, now, life, &mut out);
                return out;
            }
            None => {
                waiting = true;
                register(state, parent, seq, kind);
            }
        }
    }
    if let Some(child) = state.jobs.get_mut(&seq) {
        if waiting {
            hold_for_dependencies(child);
        } else if child.state == JobState::Queued {
            child.attrs.set(job_idx!("etime"), None, now.to_string());
        }
    }
    out
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
fn parent_started(state: &mut State, parent: u64, parent_id: &str, at: &At<'_>, out: &mut Effects) {
    for (child, _) in state.dependents.take(parent, &[DependKind::After]) {
        release(state, child, parent_id, at, out);
    }
}

/// A parent ended with `exit` (none: it was deleted before it ran, which leaves its
/// children waiting, as OpenPBS does): each child is released or deleted by its kind.
/// `parent_id` is its id as its children name it (`12.server`, `12[].server` for an
/// array, whose end is that of its last subjob). What the index keeps of a parent that is
/// gone goes with it (`State::remove_job`).
fn parent_ended(state: &mut State, parent: u64, parent_id: &str, exit: Option<i32>, at: &At<'_>, out: &mut Effects) {
    let now = at.now;
    // Deleted before it ran: its children wait on, as in OpenPBS, and its history still
    // names them.
    let Some(exit) = exit else { return };
    for (child, kind) in state.dependents.take(parent, &WAITING_KINDS) {
        if met_by_end(kind, Some(exit)) {
            release(state, child, parent_id, at, out);
        } else {
            delete_child(state, child, parent_id, now, at.life, out);
        }
    }
}

/// The exit status a job deleted while it ran counts as for its children when it has none
/// or 0: SIGTERM's (15), as a qdel's kill leaves it.
const DELETED_WHILE_RUNNING: i32 = 256 + 15;

/// The dependencies' part of a job's life (`job::life`): a start meets its `after`
/// children's dependency, an end releases or deletes its children by how it ended. A
/// subjob's start is its array's (an `after` dependency on the array is met by it); an
/// array's end is its own step, taken once its last subjob ended.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "dependencies"
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        use crate::job::life::Step;
        match at.step {
            Step::Started { .. } => {
                let seq = at.key.seq;
                let parent_id = state.jobs.get(&seq).map(|j| j.id(&state.server_name)).unwrap_or_default();
                parent_started(state, seq, &parent_id, at, out);
            }
            Step::Ended { exit, ran, deleted } if at.is_job() => {
                // A job deleted while it ran ends its children as OpenPBS's
                // `depend_on_term` does for a terminated job: afterok ones deleted, the
                // others released, whatever its exit status and even without one
                // (`qdel -W force`).
                let exit = if *deleted && *ran {
                    Some(exit.filter(|&e| e != 0).unwrap_or(DELETED_WHILE_RUNNING))
                } else {
                    *exit
                };
                parent_ended(state, at.key.seq, at.id, exit, at, out);
            }
            _ => {}
        }
    }
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

/// The dependency of `child` on `parent_id` is met: it goes from the child's list, and a
/// child waiting on nothing more loses its system hold (queued again unless other holds
/// remain): a step of the child's (released, or altered while it waits on others).
fn release(state: &mut State, child: u64, parent_id: &str, at: &At<'_>, out: &mut Effects) {
    let now = at.now;
    let Some(job) = state.jobs.get_mut(&child).filter(|j| !j.state.is_history()) else { return };
    let child_id = job.id(&state.server_name);
    tracing::info!(object_type = "Job", object_name = child_id.as_str(), "Dependency on job {parent_id} released.");
    // The kept list, never its text: a release costs the list's targets, not a parse.
    let mut left = list_of(job);
    without_target(&mut left, parent_id);
    let waiting = still_waiting(&left);
    job.set_depend(left);
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
    let step = if waiting {
        crate::job::life::Step::Altered
    } else {
        lift_system_hold(job, now);
        crate::job::life::Step::Released
    };
    at.life.step(state, JobKey::job(child), step, now, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_lose_and_gain_targets_as_openpbs_writes_them() {
        let edited = |text: &str, edit: &dyn Fn(&mut DependList)| {
            let mut list = DependList::parse(text, "").unwrap_or(DependList(Vec::new()));
            edit(&mut list);
            list.to_string()
        };
        assert_eq!(edited("afterok:1.s@s:2.s@s,afterany:1.s@s", &|l| without_target(l, "1.s")), "afterok:2.s@s");
        assert_eq!(edited("afterok:1.s@s", &|l| without_target(l, "1.s")), "");
        fn before(kind: DependKind, target: &'static str) -> impl Fn(&mut DependList) {
            move |l: &mut DependList| merged(l, kind, target.to_string())
        }
        assert_eq!(edited("", &before(DependKind::Beforeok, "3.s@s")), "beforeok:3.s@s");
        assert_eq!(edited("beforeok:3.s@s", &before(DependKind::Beforeok, "4.s@s")), "beforeok:3.s@s:4.s@s");
        assert_eq!(edited("beforeok:3.s@s", &before(DependKind::Beforeany, "4.s@s")), "beforeok:3.s@s,beforeany:4.s@s");
        assert_eq!(edited("beforeok:3.s@s", &before(DependKind::Beforeok, "3.s@s")), "beforeok:3.s@s", "once");
        let waiting = |text: &str| still_waiting(&DependList::parse(text, "").unwrap_or(DependList(Vec::new())));
        assert!(waiting("afterok:1.s@s") && waiting("on:2") && waiting("on:1,beforeok:2.s@s"));
        assert!(!waiting("beforeok:2.s@s") && !waiting("runone:3.s@s"));
        assert!(met_by_end(DependKind::Afterok, Some(0)));
        assert!(!met_by_end(DependKind::Afterok, Some(271)));
        assert!(met_by_end(DependKind::Afternotok, Some(1)));
        assert!(met_by_end(DependKind::Afterany, Some(1)));
    }
}
