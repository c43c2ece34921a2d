//! Deferred start (`qsub -a`, `qalter -a`): a job whose `Execution_Time` is ahead waits in
//! `W` (substate 30), and at that time becomes eligible as OpenPBS makes it: `Q` (substate
//! 10), `Execution_Time` gone, `etime` and `mtime` the time it was reached. This happens
//! whether or not the scheduler is scheduling; the job's entry in the state's timers
//! (`state::timers`) brings it here, and a restart sets the entries again from the jobs.

use pbs_core::JobState;

use crate::attrlist::AttrList;
use crate::effects::Effects;
use crate::jobkey::JobKey;
use crate::state::State;
use crate::state::timers::Due;

/// A job's execution time (of its attributes), if it has one.
pub fn execution_time(attrs: &AttrList) -> Option<i64> {
    attrs.get(job_idx!("Execution_Time"), None).and_then(|t| t.parse::<i64>().ok())
}

/// Deferred start's part of a job's life (`job::life`): a job that waits for its execution
/// time after a step (submitted, altered, released with `-a` ahead) has its timer set.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "deferred start"
    }

    fn after(&self, state: &mut State, at: &crate::job::life::At<'_>, _out: &mut Effects) {
        if at.is_job() {
            arm(state, at.key.seq);
        }
    }
}

/// Sets the timer of job `seq` if it waits for its execution time: after each of its
/// steps ([`Part`]) and at start for every job.
pub fn arm(state: &mut State, seq: u64) {
    let Some(job) = state.jobs.get(&seq) else { return };
    if job.state != JobState::Waiting {
        return;
    }
    if let Some(time) = execution_time(&job.attrs) {
        state.timers.set(Due::ExecutionTime(seq), time);
    }
}

/// Sets the timers of every waiting job (at start: a time passed while the server was
/// down falls due at once).
pub fn arm_all(state: &mut State) {
    let waiting: Vec<u64> = state.jobs.values().filter(|j| j.state == JobState::Waiting).map(|j| j.seq).collect();
    for seq in waiting {
        arm(state, seq);
    }
}

/// Job `seq`'s execution time has come: if it still waits for it, it becomes eligible,
/// its step's effects added to `out` (one timer event may reach thousands of jobs).
pub fn reached(state: &mut State, seq: u64, now: i64, life: crate::job::life::Life<'_>, out: &mut Effects) {
    let Some(job) = state.jobs.get_mut(&seq) else { return };
    // Altered, held, released or deleted since the entry was set: its state says what holds.
    if job.state != JobState::Waiting || execution_time(&job.attrs).is_some_and(|t| t > now) {
        return;
    }
    job.attrs.unset(job_idx!("Execution_Time"), None);
    job.state = JobState::Queued;
    job.substate = JobState::Queued.default_substate();
    let stamp = now.to_string();
    job.attrs.set(job_idx!("etime"), None, stamp.as_str());
    job.attrs.set(job_idx!("mtime"), None, stamp.as_str());
    life.step(state, JobKey::job(seq), crate::job::life::Step::Released, now, out);
}
