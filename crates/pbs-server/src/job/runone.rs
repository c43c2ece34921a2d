//! `runone` groups (`qsub -W depend=runone:X`): jobs of which only one may run, as
//! OpenPBS keeps them. Every member's `depend` list names every other member, so a
//! member's start, end, requeue or deletion finds the others in its own list, never by
//! walking the jobs: when one starts the others are held (system hold, substate 20), when
//! it ends they are deleted, when it is requeued they are released, and a member deleted
//! before it ran leaves the group (releasing them if its start had held them).

use pbs_core::depend::{DependKind, DependList};
use pbs_core::{JobState, Substate};

use crate::effects::Effects;
use crate::job::dependlist::{SUBSTATE_DEPEND_HOLD, delete_child, list_of, merged, target_seq, without_entry};
use crate::job::life::{At, Step, Why};
use crate::jobkey::JobKey;
use crate::state::{Job, State};
use crate::store::StoreOp;

/// The members a list names with `runone`.
fn members(list: &DependList) -> Vec<u64> {
    list.0
        .iter()
        .filter(|d| d.kind == DependKind::Runone)
        .flat_map(|d| d.targets.iter().filter_map(|t| target_seq(t)))
        .collect()
}

fn members_of(state: &State, seq: u64) -> Vec<u64> {
    state.jobs.get(&seq).and_then(|j| j.depend_list()).map(members).unwrap_or_default()
}

/// Whether a member keeps the others from running: it runs, or waits on a dependency.
fn blocks_the_group(job: &Job) -> bool {
    matches!(job.state, JobState::Running | JobState::Begun | JobState::Exiting | JobState::Suspended)
        || (job.state == JobState::Held && job.substate == SUBSTATE_DEPEND_HOLD)
}

/// New job `seq` joins the groups its list names: it names every member of them and each
/// member names it. Gives the members' writes and whether the new job must wait (a member
/// runs or waits on a dependency).
pub fn joined(state: &mut State, seq: u64) -> (Vec<StoreOp>, bool) {
    let named = members_of(state, seq);
    if named.is_empty() {
        return (Vec::new(), false);
    }
    let mut group = Vec::new();
    for member in named {
        for m in std::iter::once(member).chain(members_of(state, member)) {
            if m != seq && !group.contains(&m) && state.jobs.get(&m).is_some_and(|j| !j.state.is_history()) {
                group.push(m);
            }
        }
    }
    let server = state.server_name.clone();
    let Some(id) = state.jobs.get(&seq).map(|j| j.id(&server)) else { return (Vec::new(), false) };
    // OpenPBS writes the list of a new member in the order it learns of the group.
    let mut ops = Vec::new();
    let mut waits = false;
    let mut own = state.jobs.get(&seq).map(list_of).unwrap_or(DependList(Vec::new()));
    for &member in &group {
        let Some(job) = state.jobs.get_mut(&member) else { continue };
        waits |= blocks_the_group(job);
        let member_id = job.id(&server);
        let mut list = list_of(job);
        merged(&mut list, DependKind::Runone, format!("{id}@{server}"));
        job.set_depend(list);
        ops.push(job.put_op(None));
        if !members(&own).contains(&member) {
            merged(&mut own, DependKind::Runone, format!("{member_id}@{server}"));
        }
    }
    if let Some(job) = state.jobs.get_mut(&seq) {
        job.set_depend(own);
    }
    (ops, waits)
}

/// Member `seq` started: the others are held by the system (substate 20), a step of each.
fn started(state: &mut State, seq: u64, at: &At<'_>, out: &mut Effects) {
    let now = at.now;
    for member in members_of(state, seq) {
        let Some(job) = state.jobs.get_mut(&member).filter(|j| !j.state.is_history() && !blocks_the_group(j)) else {
            continue;
        };
        let holds = job.get("Hold_Types", None).unwrap_or("n");
        let held = crate::holds::written(|c| c == 's' || holds.contains(c));
        job.attrs.set(job_idx!("Hold_Types"), None, held);
        job.attrs.set(job_idx!("mtime"), None, now.to_string());
        job.state = JobState::Held;
        job.substate = Substate::HELD;
        at.life.step(state, JobKey::job(member), Step::Held, now, out);
    }
}

/// Member `seq` (`member_id`) ended after it ran: the others are deleted, as OpenPBS
/// deletes them.
fn ended(state: &mut State, seq: u64, member_id: &str, members: &[u64], at: &At<'_>, out: &mut Effects) {
    for &member in members.iter().filter(|&&m| m != seq) {
        delete_child(state, member, member_id, at.now, at.life, out);
    }
}

/// The members `seq`'s list names, read before its end changes or removes the job.
fn group_of(state: &State, seq: u64) -> Vec<u64> {
    members_of(state, seq)
}

/// Member `seq` (`member_id`) was deleted before it ran: the others no longer name it.
fn left(state: &mut State, member_id: &str, members: &[u64]) -> Vec<StoreOp> {
    let mut ops = Vec::new();
    for member in members {
        let Some(job) = state.jobs.get_mut(member).filter(|j| !j.state.is_history()) else { continue };
        if job.depend_list().is_none() {
            continue;
        }
        let mut list = list_of(job);
        without_entry(&mut list, DependKind::Runone, member_id);
        job.set_depend(list);
        ops.push(job.put_op(None));
    }
    ops
}

/// Member `member_id` was deleted after its start held the others but before that start
/// reached its mom (`qdel` between the run and its delivery): it never ran, so it leaves
/// the group and the others lose the system hold its start put on them, as at a requeue.
/// Without the release they would wait, held, on a run that does not exist.
fn start_cancelled(state: &mut State, member_id: &str, members: &[u64], now: i64) -> Vec<StoreOp> {
    // Inside the member's `Ended` step, whose notice asks the scheduler for a cycle.
    release_held(state, members, now);
    // Every member names the one leaving, so `left` writes each of them, released or not.
    left(state, member_id, members)
}

/// Member `seq`'s run was requeued: the others lose the system hold its start put on them.
fn requeued(state: &mut State, seq: u64, at: &At<'_>, out: &mut Effects) {
    let members = members_of(state, seq);
    for member in release_held(state, &members, at.now) {
        at.life.step(state, JobKey::job(member), Step::Released, at.now, out);
    }
}

/// Lifts the system hold a member's start put on each of `members` still held by it (held,
/// substate 20); gives those released, whose writes are the caller's.
fn release_held(state: &mut State, members: &[u64], now: i64) -> Vec<u64> {
    let mut released = Vec::new();
    for &member in members {
        let Some(job) =
            state.jobs.get_mut(&member).filter(|j| j.state == JobState::Held && j.substate == Substate::HELD)
        else {
            continue;
        };
        crate::job::dependlist::lift_system_hold(job, now);
        job.attrs.set(job_idx!("mtime"), None, now.to_string());
        released.push(member);
    }
    released
}

/// runone's part of a job's life (`job::life`): a member's start holds the others, its
/// end after a run deletes them, its requeue, or an end before its start reached its mom,
/// releases them; a member deleted before it ran leaves the group (the others' writes
/// before its own, as OpenPBS edits their lists first).
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "runone"
    }

    fn before(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        if let Step::Left { why: Why::Deleted { .. } } = at.step
            && at.is_job()
        {
            let group = group_of(state, at.key.seq);
            out.ops.extend(left(state, at.id, &group));
        }
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        let seq = at.key.seq;
        match at.step {
            // A subjob's start is its array's.
            Step::Started { .. } => started(state, seq, at, out),
            Step::Requeued { .. } if at.is_job() => requeued(state, seq, at, out),
            Step::Ended { ran, .. } if at.is_job() && !state.jobs.get(&seq).is_some_and(|j| j.array) => {
                // Every job here was started, so its start held the others of its group:
                // they are deleted if it ran, as OpenPBS's end of a running member deletes
                // them, and released if it was deleted before its start reached its mom.
                let group = group_of(state, seq);
                if *ran {
                    ended(state, seq, at.id, &group, at, out);
                } else {
                    out.ops.extend(start_cancelled(state, at.id, &group, at.now));
                }
            }
            _ => {}
        }
    }
}
