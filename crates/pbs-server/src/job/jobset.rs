//! Job sets (`job_set`, `qsub -L`): jobs of which the first that can run runs. Joining a
//! set at submission or by qalter, and what a member's start, end, requeue or deletion
//! does to the others, each found through `state::job_sets`, never by walking the jobs:
//! a start holds the others (substate 95, `Job held, job <id> running from this
//! job_set`), or finishes them when `job_set_finish_others` is set; the end of the member
//! that ran deletes them (the set's purpose, one of its requests run, is done); a requeue
//! releases them. A set keeps its leader's id when the leader goes. See docs/job-sets.md.

use pbs_core::jobset::{SetName, parse};
use pbs_core::{JobState, Pbse, Substate};

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::{At, Step, Why};
use crate::jobkey::JobKey;
use crate::state::State;
use crate::state::job_sets::leader_of;

/// What a checked `job_set` value asks of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// Lead a new set (the set gets the job's own id).
    Lead,
    /// Join the set led by this sequence number.
    Set(u64),
}

/// Checks a `job_set` value for a job of `owner` (`is_array`: the job is an array): the
/// set must exist on this server (a leader, or a set whose leader is gone, with a member
/// not finished) and be `owner`'s. An array never joins a set, since a set runs one of
/// its jobs and an array all of its subjobs.
pub fn check(state: &State, owner: &str, value: &str, is_array: bool) -> Result<Join, ReqError> {
    if is_array {
        return Err(ReqError::attr(Pbse::BADATVAL, "job_set"));
    }
    match parse(value) {
        SetName::New => Ok(Join::Lead),
        SetName::Leader { seq, server } => {
            if server.is_some_and(|s| !names_this_server(state, &s)) {
                return Err(ReqError::new(Pbse::NO_JOBSET));
            }
            let set = state.job_sets.get(seq).ok_or_else(|| ReqError::new(Pbse::NO_JOBSET))?;
            if set.owner != owner {
                return Err(ReqError::new(Pbse::PERM));
            }
            Ok(Join::Set(seq))
        }
        SetName::Nonexistent => Err(ReqError::new(Pbse::NO_JOBSET)),
    }
}

/// qselect's `--job_set`: each `job_set` criterion must name a set that exists
/// (`NO_JOBSET` otherwise), and is compared with the set's id as members keep it.
pub fn select_criteria(state: &State, criteria: &mut [pbs_proto::Criterion]) -> Result<(), ReqError> {
    for criterion in criteria.iter_mut().filter(|c| c.attr == "job_set") {
        let leader = match parse(&criterion.value) {
            SetName::Leader { seq, server } if server.as_deref().is_none_or(|s| names_this_server(state, s)) => seq,
            _ => return Err(ReqError::new(Pbse::NO_JOBSET)),
        };
        if state.job_sets.get(leader).is_none() {
            return Err(ReqError::new(Pbse::NO_JOBSET));
        }
        criterion.value = format!("{leader}.{}", state.server_name);
    }
    Ok(())
}

/// Whether a server name given with an id or a destination is this server's.
pub fn names_this_server(state: &State, name: &str) -> bool {
    name == state.server_name || name == state.host
}

/// The set job `seq` is a member of.
pub fn set_of(state: &State, seq: u64) -> Option<u64> {
    state.jobs.get(&seq).and_then(|j| j.get("job_set", None)).and_then(leader_of)
}

/// New or altered job `seq` enters the set `join` names: its `job_set` becomes the
/// leader's id, and it is held at once when a member of the set runs. Its own record is
/// written by the caller.
pub fn joined(state: &mut State, seq: u64, join: Join, now: i64) {
    let leader = match join {
        Join::Lead => seq,
        Join::Set(leader) => leader,
    };
    let server = state.server_name.clone();
    let Some(job) = state.jobs.get_mut(&seq) else { return };
    let owner = job.get("euser", None).unwrap_or("").to_string();
    job.attrs.set(job_idx!("job_set"), None, format!("{leader}.{server}"));
    state.job_sets.join(leader, seq, &owner);
    if let Some(running) = state.job_sets.get(leader).and_then(|s| s.running) {
        let running_id = pbs_core::JobId::new(running, pbs_core::ArrayPart::None, Some(server)).to_string();
        if let Some(job) = state.jobs.get_mut(&seq) {
            hold(job, &running_id, now);
        }
    }
}

/// Job `seq` leaves its set (qalter moved it, or it is deleted before it ran): when it
/// was held for its set, that hold goes with it.
fn left(state: &mut State, seq: u64, now: i64) {
    let Some(leader) = set_of(state, seq) else { return };
    state.job_sets.leave(leader, seq);
    if let Some(job) = state.jobs.get_mut(&seq) {
        release(job, now);
    }
}

/// qalter moved queued job `seq` to the set `join` names: it leaves its set (and the hold
/// that set's run put on it) and joins the new one (held if a member of it runs). The
/// job's write and the scheduler's notice are qalter's `Altered` step.
pub fn moved(state: &mut State, seq: u64, join: Join, now: i64) {
    let target = match join {
        Join::Lead => seq,
        Join::Set(leader) => leader,
    };
    if set_of(state, seq) == Some(target) {
        return;
    }
    left(state, seq, now);
    joined(state, seq, join, now);
}

/// Member `seq` started: the others are held (substate 95), or finished when the server's
/// `job_set_finish_others` is set.
fn started(state: &mut State, seq: u64, at: &At<'_>, out: &mut Effects) {
    let now = at.now;
    let Some(leader) = set_of(state, seq) else { return };
    state.job_sets.set_running(leader, Some(seq));
    let others: Vec<u64> = members(state, leader).into_iter().filter(|&m| m != seq).collect();
    if others.is_empty() {
        return;
    }
    let running_id = pbs_core::JobId::new(seq, pbs_core::ArrayPart::None, Some(state.server_name.clone())).to_string();
    let finish_others = state.server_flag("job_set_finish_others", false);
    for member in others {
        if finish_others {
            let reason = format!("Job finished, job {running_id} running from this job_set");
            finish(state, member, reason, at, out);
            continue;
        }
        let Some(job) = state.jobs.get_mut(&member).filter(|j| waits(j)) else { continue };
        hold(job, &running_id, now);
        at.life.step(state, JobKey::job(member), Step::Held, now, out);
    }
}

/// Member `seq` (`member_id`) of set `leader` ended; `ran`: after it ran (else it was
/// deleted before). After a run the members it held are deleted: one of the set's
/// requests has run, which is what the set was for. A member whose start held the others
/// but that never ran (deleted before its start reached its mom) releases them, as a
/// requeue does: none of the set's requests has run.
fn ended(state: &mut State, leader: u64, seq: u64, ran: bool, at: &At<'_>, out: &mut Effects) {
    let member_id = at.id;
    let was_running = state.job_sets.get(leader).and_then(|s| s.running) == Some(seq);
    state.job_sets.leave(leader, seq);
    if !ran {
        // Only the holds of its own start (another member may run, released by a manager).
        if was_running {
            release_held(state, members(state, leader), at, out);
        }
        return;
    }
    let held: Vec<u64> = members(state, leader)
        .into_iter()
        .filter(|m| state.jobs.get(m).is_some_and(|j| j.substate == Substate::RUNNING_SET))
        .collect();
    let reason = format!("Job deleted, job {member_id} from this job_set ran");
    for member in held {
        finish(state, member, reason.clone(), at, out);
    }
}

/// Member `seq`'s run was requeued (qrerun, a failed node, preemption): the members its
/// start held are queued again (unless other holds remain) and their comments cleared.
fn requeued(state: &mut State, seq: u64, at: &At<'_>, out: &mut Effects) {
    let Some(leader) = set_of(state, seq) else { return };
    state.job_sets.set_running(leader, None);
    let others = members(state, leader).into_iter().filter(|&m| m != seq);
    release_held(state, others, at, out);
}

/// The members of set `leader`, in the set's order.
fn members(state: &State, leader: u64) -> Vec<u64> {
    state.job_sets.get(leader).map(|s| s.members.iter().copied().collect()).unwrap_or_default()
}

/// Lifts the set's hold from each of `members` a start holds (substate 95): a step of
/// each (released), whose notice runs the cycle again.
fn release_held(state: &mut State, members: impl IntoIterator<Item = u64>, at: &At<'_>, out: &mut Effects) {
    for member in members {
        let Some(job) = state.jobs.get_mut(&member).filter(|j| j.substate == Substate::RUNNING_SET) else { continue };
        release(job, at.now);
        at.life.step(state, JobKey::job(member), Step::Released, at.now, out);
    }
}

/// Whether a member is one a start holds: not running, not finished.
fn waits(job: &crate::state::Job) -> bool {
    matches!(job.state, JobState::Queued | JobState::Held | JobState::Waiting) && job.substate != Substate::RUNNING_SET
}

/// Holds a member for its set: a system hold (so only a manager's `qrls -h s` lifts it
/// early), substate 95, the design's comment.
fn hold(job: &mut crate::state::Job, running_id: &str, now: i64) {
    let holds = job.get("Hold_Types", None).unwrap_or("n");
    let held = crate::holds::written(|c| c == 's' || holds.contains(c));
    job.attrs.set(job_idx!("Hold_Types"), None, held);
    job.attrs.set(job_idx!("comment"), None, format!("Job held, job {running_id} running from this job_set"));
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
    job.attrs.unset(job_idx!("etime"), None);
    job.state = JobState::Held;
    job.substate = Substate::RUNNING_SET;
}

/// Lifts a set's hold: the system hold goes, the comment is cleared; the job is queued
/// unless another hold remains.
fn release(job: &mut crate::state::Job, now: i64) {
    if job.substate != Substate::RUNNING_SET {
        return;
    }
    crate::job::dependlist::lift_system_hold(job, now);
    job.attrs.unset(job_idx!("comment"), None);
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
}

/// A member that will not run: finished (kept in history when it is enabled) with
/// `reason` as its comment and accounting `A` record.
fn finish(state: &mut State, member: u64, reason: String, at: &At<'_>, out: &mut Effects) {
    if state.jobs.get(&member).is_none_or(|j| j.state.is_history()) {
        return;
    }
    at.life.step(state, JobKey::job(member), Step::Left { why: Why::JobSet(reason) }, at.now, out);
}

/// Job sets' part of a job's life (`job::life`): a member's start holds (or finishes) the
/// others, its end after a run finishes those it held, its requeue releases them; a
/// member that leaves without a run leaves the index (and the hold its set put on it,
/// before its write).
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "job sets"
    }

    fn before(&self, state: &mut State, at: &At<'_>, _out: &mut Effects) {
        let Step::Left { why } = at.step else { return };
        match why {
            Why::Deleted { .. } => left(state, at.key.seq, at.now),
            Why::JobSet(_) => {
                if let Some(leader) = set_of(state, at.key.seq) {
                    state.job_sets.leave(leader, at.key.seq);
                }
            }
            Why::Dependency(_) => {}
        }
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        if !at.is_job() {
            return;
        }
        let seq = at.key.seq;
        match at.step {
            Step::Started { .. } => started(state, seq, at, out),
            Step::Requeued { .. } => requeued(state, seq, at, out),
            Step::Ended { ran, .. } => {
                if let Some(leader) = set_of(state, seq) {
                    ended(state, leader, seq, *ran, at, out);
                }
            }
            _ => {}
        }
    }
}
