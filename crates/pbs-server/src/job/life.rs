//! A job's life: the one place a job is queued, altered, held, released, started,
//! confirmed, suspended, resumed, requeued, ended or leaves the live set.
//!
//! A verb (qsub, qalter, qhold, a run, a mom's report, qsig, qdel, qrerun, a lost node, a
//! dependency that can no longer be met, a job set's member that ran) does its own checks
//! and records its input (a mom's usage and exit status, the attributes a user set), then
//! calls [`step`] with what happened. The shared transition (state, substate, timestamps,
//! node holds, the job's own write, and history or removal) is written once, here; every
//! feature that follows jobs is a [`Part`] listed once in the table of `job::parts`, whose
//! order is the order of a commit's writes:
//!
//! - `before` the transition, a part records what the job was (the accounting record of
//!   a run that ends) and changes the job itself, so the job's own write carries it;
//! - `after` it, a part acts on what the step means for other jobs and the server's
//!   indexes (children released, a group's others held, the scheduler told).
//!
//! The job leaves the state's maps after every part has run, so a part may read what the
//! job kept (its `depend` list, its `job_set`) whatever the step. Each step also travels
//! as data in [`Effects::steps`]. The step kinds, their payloads and what each part does
//! on them are tabled in docs/architecture.md ("A job's life").
//!
//! This file names no feature: the parts know it, not it them. A part or a feature that
//! makes another job take a step (a child deleted, a set's others finished, an array's
//! end) does it through the [`Life`] it is handed, so the table is written once
//! (`job::parts::LIFE`) and a test's recording table follows the nested steps too.

use std::sync::Arc;

use pbs_core::{JobState, Substate};

use crate::attrlist::AttrList;
use crate::effects::{Effects, JobStep, StepKind};
use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::request::Ctx;
use crate::state::{Placement, State};
use crate::store::StoreOp;

/// What happens to a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A job was submitted: its record, just made, is written with its script.
    Queued {
        /// The job's script, stored with it (moved into that write: the parts see the step
        /// without it).
        script: String,
    },
    /// The verb changed the job's attributes (qalter, qorder, a hook's changes, a run a
    /// hook refused); the step writes them.
    Altered,
    /// qmove put the job in another queue.
    Moved,
    /// The verb put holds on the job (qhold), or took the state they leave.
    Held,
    /// The verb lifted holds (qrls), or the job's execution time came (`Execution_Time`).
    Released,
    /// Its mom says the job's shell runs (`session_id`): substate running.
    Confirmed {
        /// The session the mom started.
        session_id: i64,
    },
    /// A running job is stopped (qsig suspend, or the scheduler's preemption, which
    /// resumes it when room returns); its consumables are released while it is.
    Suspended {
        /// By the scheduler (substate 45), not a user's signal.
        by_scheduler: bool,
    },
    /// A suspended job runs again, its consumables taken back.
    Resumed,
    /// Its mom is told to end the run (qdel, a preemption by deletion, a walltime): the
    /// verb set what the job shows until its mom reports the end.
    Ending,
    /// A queued job (or a subjob, its record just made) starts on `placement`.
    Started {
        /// Where it runs, decided by the run.
        placement: Arc<Placement>,
        /// Its `run_count` with this run.
        run_count: u32,
    },
    /// A running job goes back to the queue (qrerun, a lost node, a rerun exit, preemption).
    Requeued {
        /// Preemption's `C`: it keeps its usage, gets no `R` record, loses its comment.
        checkpointed: bool,
    },
    /// A job's run ended (its mom reported it, `qdel -W force`, a lost node), or an
    /// array's last subjob did.
    Ended {
        /// The exit status (none: ended without one).
        exit: Option<i32>,
        /// Whether it ran: its mom confirmed the start (for an array: it began).
        ran: bool,
        /// It was deleted (qdel) while it ran.
        deleted: bool,
    },
    /// A job that is not running leaves the live set.
    Left {
        /// Why.
        why: Why,
    },
}

/// Why a job that is not running leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// qdel (its `D` record is the verb's, written as the request is taken); `purged`
    /// (`-x`): not kept in history, whatever the server keeps.
    Deleted {
        /// Gone at once.
        purged: bool,
    },
    /// A job it depends on (this id) ended so that its dependency can no longer be met.
    Dependency(String),
    /// Another member of its job set ran, or runs with `job_set_finish_others`.
    JobSet(String),
}

impl Why {
    /// The reason OpenPBS logs and records (`A`), if it is not the user's qdel.
    pub fn reason(&self) -> Option<String> {
        match self {
            Why::Deleted { .. } => None,
            Why::Dependency(parent) => Some(format!("Job deleted as result of dependency on job {parent}")),
            Why::JobSet(reason) => Some(reason.clone()),
        }
    }
}

impl Step {
    /// The step as [`Effects::steps`] carries it.
    pub fn kind(&self) -> StepKind {
        match self {
            Step::Queued { .. } => StepKind::Queued,
            Step::Altered => StepKind::Altered,
            Step::Moved => StepKind::Moved,
            Step::Held => StepKind::Held,
            Step::Released => StepKind::Released,
            Step::Confirmed { .. } => StepKind::Confirmed,
            Step::Suspended { by_scheduler } => StepKind::Suspended { by_scheduler: *by_scheduler },
            Step::Resumed => StepKind::Resumed,
            Step::Ending => StepKind::Ending,
            Step::Started { .. } => StepKind::Started,
            Step::Requeued { checkpointed } => StepKind::Requeued { checkpointed: *checkpointed },
            Step::Ended { exit, ran, .. } => StepKind::Ended { exit: *exit, ran: *ran },
            Step::Left { .. } => StepKind::Left,
        }
    }

    /// Whether the job leaves the live set (kept in history, or gone).
    pub fn leaves(&self) -> bool {
        matches!(self, Step::Ended { .. } | Step::Left { .. })
    }
}

/// Where a step is taken: the job, its id (kept for the parts after it is gone), the step,
/// the handler's `now`, and the life the step goes through (for the steps it causes).
pub struct At<'a> {
    /// The job.
    pub key: JobKey,
    /// Its full id.
    pub id: &'a str,
    /// What happens.
    pub step: &'a Step,
    /// The handler's clock.
    pub now: i64,
    /// Whether the job is kept in history once it leaves (`job_history_enable`, unless a
    /// qdel purges it), read once per step that leaves; false for the others.
    pub history: bool,
    /// The parts this step goes through.
    pub life: Life<'a>,
    /// Where this step's writes begin in the effects' `ops`: every job write from there on
    /// (the job's own, and those of other jobs its parts changed) is the step's.
    pub written_from: usize,
}

impl At<'_> {
    /// A job of its own, not a subjob.
    pub fn is_job(&self) -> bool {
        self.key.index.is_none()
    }
}

/// A step a request is about to make a job take, as the parts' [`Part::check`] sees it
/// before anything changes: what the job would be.
#[derive(Clone, Copy, Debug)]
pub enum Proposal<'a> {
    /// A new job (qsub) in `queue`, with its attributes as they would be.
    Queued {
        /// Its queue.
        queue: &'a str,
        /// Its attributes.
        attrs: &'a AttrList,
    },
    /// Job `seq`'s attributes would become `attrs` (qalter).
    Altered {
        /// The job.
        seq: u64,
        /// Its attributes after the change.
        attrs: &'a AttrList,
    },
    /// Job `seq` would go to `queue` (qmove), or take the place of job `in_place_of` in
    /// that job's queue (each half of a qorder across queues).
    Moved {
        /// The job.
        seq: u64,
        /// Its new queue.
        queue: &'a str,
        /// The job whose place it takes.
        in_place_of: Option<u64>,
    },
}

/// A feature that follows jobs' lives. Every hook sees every step; a part acts on the
/// kinds it follows and leaves the others alone.
pub trait Part: Sync {
    /// Its name, for the docs' table and the tests' record.
    fn name(&self) -> &'static str;

    /// Before a request changes anything: whether the part lets the step it proposes be
    /// taken. The first refusal, in the table's order, is the request's answer.
    fn check(&self, _state: &mut State, _ctx: &Ctx<'_>, _proposal: &Proposal<'_>) -> Result<(), ReqError> {
        Ok(())
    }

    /// Before the transition: what the job was (a record of its run), and changes to the
    /// job itself, which its own write then carries.
    fn before(&self, _state: &mut State, _at: &At<'_>, _out: &mut Effects) {}

    /// After it: what the step means for other jobs and the server's indexes.
    fn after(&self, _state: &mut State, _at: &At<'_>, _out: &mut Effects) {}
}

/// The parts a job's steps go through, in the order their writes go into a commit
/// (`job::parts::LIFE` in the server; a recording table in tests).
#[derive(Clone, Copy)]
pub struct Life<'p> {
    /// The parts, in order.
    pub parts: &'p [&'p dyn Part],
}

impl Life<'_> {
    /// Asks every part, in the table's order, whether the step `proposal` names may be
    /// taken; the first refusal is returned and the later parts are not asked.
    pub fn check(self, state: &mut State, ctx: &Ctx<'_>, proposal: &Proposal<'_>) -> Result<(), ReqError> {
        self.parts.iter().try_for_each(|part| part.check(state, ctx, proposal))
    }

    /// Takes `step` for job `key` at `now`, its writes and the steps it causes added to
    /// `out`. A job that is not there takes no step.
    pub fn step(self, state: &mut State, key: JobKey, mut step: Step, now: i64, out: &mut Effects) {
        let Some(job) = state.job(key) else { return };
        // Moved into the job's first write, not copied (a script may be large); no part
        // reads it.
        let script = match &mut step {
            Step::Queued { script } => Some(std::mem::take(script)),
            _ => None,
        };
        let id = job.id(&state.server_name);
        let purged = matches!(step, Step::Left { why: Why::Deleted { purged: true } });
        // Read only where it decides something: most steps do not leave.
        let history = step.leaves() && !purged && state.server_flag("job_history_enable", false);
        let at = At { key, id: &id, step: &step, now, history, life: self, written_from: out.ops.len() };
        for part in self.parts {
            part.before(state, &at, out);
        }
        out.ops.extend(transition(state, &at, script));
        out.steps.push(JobStep { key, id: id.clone(), kind: step.kind(), at: now });
        for part in self.parts {
            part.after(state, &at, out);
        }
        if step.leaves() && !history && key.index.is_none() {
            // Gone with what the indexes keep of it (the jobs that wait on it, its set).
            let array = state.jobs.get(&key.seq).is_some_and(|j| j.array);
            state.remove_job(key.seq);
            if array {
                state.remove_subjobs_of(key.seq);
            }
        }
    }
}

/// The change every job takes at a step, whatever features it uses; gives its own write.
fn transition(state: &mut State, at: &At<'_>, script: Option<String>) -> Vec<StoreOp> {
    let (key, now) = (at.key, at.now);
    match at.step {
        Step::Queued { .. } => own_write(state, key, script),
        Step::Altered | Step::Moved | Step::Held | Step::Released | Step::Ending => own_write(state, key, None),
        Step::Confirmed { session_id } => {
            state.starting.remove(&key);
            let Some(job) = state.job_mut(key) else { return Vec::new() };
            // Confirmed after its start (41) or its stage-in (15).
            if job.substate == crate::job::running::SUBSTATE_PRERUN || job.substate == Substate::STAGEGO {
                job.substate = Substate::RUNNING;
            }
            job.attrs.set(job_idx!("session_id"), None, session_id.to_string());
            vec![job.put_op(None)]
        }
        Step::Suspended { .. } | Step::Resumed => {
            // Under `restrict_res_to_release_on_suspend`, only what it names goes back,
            // and a resumption takes back just that.
            if matches!(at.step, Step::Suspended { .. }) {
                crate::job::released::give_back(state, key, at.id, now);
            } else {
                crate::job::released::take_back(state, key, at.id, now);
            }
            let Some(job) = state.job_mut(key) else { return Vec::new() };
            match at.step {
                Step::Suspended { by_scheduler } => {
                    job.state = JobState::Suspended;
                    job.substate = if *by_scheduler { Substate::SCHSUSP } else { Substate::SUSPEND };
                }
                _ => {
                    job.state = JobState::Running;
                    job.substate = Substate::RUNNING;
                    // OpenPBS's comment once a job runs again; a suspension leaves it alone.
                    if let Some(exec_vnode) = job.get("exec_vnode", None).map(str::to_string) {
                        job.attrs.set(job_idx!("comment"), None, crate::job::running::run_comment(&exec_vnode, now));
                    }
                }
            }
            job.attrs.set(job_idx!("mtime"), None, now.to_string());
            vec![job.put_op(None)]
        }
        Step::Started { placement, run_count } => {
            let exec_text = placement.exec.to_string();
            crate::node::account(state, key, at.id, &placement.exec, placement.exclusive, true, now);
            state.starting.insert(key);
            let Some(job) = state.job_mut(key) else { return Vec::new() };
            job.state = JobState::Running;
            job.substate = crate::job::running::SUBSTATE_PRERUN;
            job.attrs.set(job_idx!("stime"), None, now.to_string());
            job.attrs.set(job_idx!("run_count"), None, run_count.to_string());
            job.attrs.set(job_idx!("comment"), None, crate::job::running::run_comment(&exec_text, now));
            job.attrs.unset(job_idx!("Exit_status"), None);
            job.set_placement(Some(placement.clone()));
            tracing::info!(object_type = "Job", object_name = at.id, "Job run on {exec_text}");
            vec![job.put_op(None)]
        }
        Step::Requeued { checkpointed } => {
            if let Some(index) = key.index {
                // A subjob's record goes: it is an index of its array again (`job::array`).
                return match state.subjobs.remove(&(key.seq, index)) {
                    Some(_) => vec![StoreOp::DeleteSubjob { seq: key.seq, index }],
                    None => Vec::new(),
                };
            }
            let Some(job) = state.job_mut(key) else { return Vec::new() };
            // A job held while it ran (qhold, then qrerun or a lost node) comes back held,
            // and runs again only once released, as in OpenPBS.
            if job.get("Hold_Types", None).is_some_and(|h| h != "n") {
                job.state = JobState::Held;
                job.substate = Substate::HELD;
            } else if job.get("Execution_Time", None).and_then(|t| t.parse::<i64>().ok()).is_some_and(|t| t > now) {
                // As OpenPBS's `svr_evaljobstate`: an execution time ahead (a failed
                // stage-in's retry, `qalter -a` while it ran) makes it wait.
                job.state = JobState::Waiting;
                job.substate = JobState::Waiting.default_substate();
            } else {
                job.state = JobState::Queued;
                job.substate = Substate::QUEUED;
                job.attrs.set(job_idx!("etime"), None, now.to_string());
            }
            job.set_placement(None);
            for def in [job_idx!("session_id"), job_idx!("stime")] {
                job.attrs.unset(def, None);
            }
            if *checkpointed {
                job.attrs.unset(job_idx!("comment"), None);
            } else {
                job.attrs.unset_all(job_idx!("resources_used"));
            }
            job.attrs.set(job_idx!("mtime"), None, now.to_string());
            vec![job.put_op(None)]
        }
        Step::Ended { exit, deleted, .. } => {
            if let Some(index) = key.index {
                // A finished subjob is expired (`X`); its record stays while history is kept.
                let Some(mut job) = state.subjobs.remove(&(key.seq, index)) else { return Vec::new() };
                job.state = JobState::Expired;
                job.substate = Substate::FINISHED;
                job.attrs.set(job_idx!("obittime"), None, now.to_string());
                if !at.history {
                    return vec![StoreOp::DeleteSubjob { seq: key.seq, index }];
                }
                let op = job.put_op(None);
                state.finished_subjobs.insert((key.seq, index), job);
                return vec![op];
            }
            let array = state.jobs.get(&key.seq).is_some_and(|j| j.array);
            let substate = if *deleted {
                Substate::TERMINATED
            } else if !array && exit.is_some_and(|s| s != 0) {
                Substate::FAILED
            } else {
                Substate::FINISHED
            };
            finished(state, at, substate, None)
        }
        Step::Left { why } => {
            if let Some(reason) = why.reason() {
                tracing::info!(object_type = "Job", object_name = at.id, "{reason}");
            }
            let (substate, comment) = match why {
                Why::Deleted { .. } => (Substate::TERMINATED, None),
                // As OpenPBS keeps a job its dependency deleted: finished, its list and
                // system hold as they were.
                Why::Dependency(_) => (Substate::FINISHED, None),
                Why::JobSet(reason) => (Substate::TERMINATED, Some(reason.as_str())),
            };
            finished(state, at, substate, comment)
        }
    }
}

/// The job's record as the verb left it.
fn own_write(state: &State, key: JobKey, script: Option<String>) -> Vec<StoreOp> {
    state.job(key).map(|job| vec![job.put_op(script)]).unwrap_or_default()
}

/// A job leaving the live set: kept in history (`F`, with `substate`, its times and the
/// comment), or its record deleted (the job leaves the state once the parts have run).
fn finished(state: &mut State, at: &At<'_>, substate: Substate, comment: Option<&str>) -> Vec<StoreOp> {
    let seq = at.key.seq;
    let Some(job) = state.jobs.get_mut(&seq) else { return Vec::new() };
    // Finished for the parts after it too, kept or not.
    job.state = JobState::Finished;
    job.substate = substate;
    if !at.history {
        return vec![StoreOp::DeleteJob { seq }];
    }
    if let Some(comment) = comment {
        job.attrs.set(job_idx!("comment"), None, comment);
    }
    let now = at.now.to_string();
    for def in [job_idx!("mtime"), job_idx!("obittime"), job_idx!("history_timestamp")] {
        job.attrs.set(def, None, now.as_str());
    }
    vec![job.put_op(None)]
}

#[cfg(test)]
mod tests;
