//! File staging as the server sees it: the mom stages a job's files in before its shell
//! starts and out after it ends (`pbs_mom`'s `stage`), and reports a failure. A failed
//! stage-in makes the job wait [`STAGEFAIL_WAIT`] and try again, as OpenPBS's
//! `post_stagein` does; a failed stage-out leaves its files in the mom's `undelivered`.
//! Either is said in the job's comment and mailed to its owner whatever the mail points.

use pbs_core::{JobState, Substate};
use pbs_proto::mom::StageDirection;

use crate::effects::Effects;
use crate::jobkey::JobKey;
use crate::state::State;

/// The exit status a mom reports for a job whose stage-in failed (this suite's own:
/// OpenPBS's server stages in before sending the job).
pub const JOB_EXEC_STAGEIN_FAILED: i32 = -31;

/// How long a job whose stage-in failed waits before it is tried again (OpenPBS's
/// `PBS_STAGEFAIL_WAIT`).
pub const STAGEFAIL_WAIT: i64 = 30 * 60;

/// The longest comment a staging failure leaves.
const MAX_COMMENT: usize = 256;

/// A job whose stage-in failed waits until [`STAGEFAIL_WAIT`] from `now`, unless it
/// already has an execution time (OpenPBS keeps the one it has).
pub fn wait_to_retry(state: &mut State, key: JobKey, now: i64) {
    if let Some(job) = state.job_mut(key) {
        if job.get("Execution_Time", None).is_none() {
            job.attrs.set(job_idx!("Execution_Time"), None, (now + STAGEFAIL_WAIT).to_string());
        }
    }
}

/// A job its failed stage-in made wait shows OpenPBS's substate 37 (`STAGEFAIL`): its
/// write again, after the step's, once the requeue made it wait.
pub fn mark_stage_failed(state: &mut State, key: JobKey) -> Option<crate::store::StoreOp> {
    let job = state.job_mut(key)?;
    if job.state != JobState::Waiting {
        return None;
    }
    job.substate = Substate::STAGEFAIL;
    Some(job.put_op(None))
}

/// The mom of `node` stages job `job_id`'s files: in, before its shell starts, it shows
/// `R` with substate 15; out, after it ended, `E` with substate 51, as OpenPBS shows them.
pub fn staging(state: &mut State, node: &str, job_id: &str, direction: StageDirection) -> Effects {
    let Some(key) = crate::job::running::running_on(state, node, job_id) else { return Effects::default() };
    let Some(job) = state.job_mut(key) else { return Effects::default() };
    match direction {
        StageDirection::In if job.substate == crate::job::running::SUBSTATE_PRERUN => job.substate = Substate::STAGEGO,
        StageDirection::Out if job.state == JobState::Running => {
            job.state = JobState::Exiting;
            job.substate = Substate::STAGEOUT;
        }
        _ => return Effects::default(),
    }
    Effects::ops(vec![job.put_op(None)])
}

/// The mom of `node` says staging job `job_id`'s files failed: its comment says so, and
/// its owner is mailed what the copies said. The job's end follows from the same mom.
pub fn failed(state: &mut State, node: &str, job_id: &str, direction: StageDirection, message: &str) -> Effects {
    let mut out = Effects::default();
    let Some(key) = crate::job::running::running_on(state, node, job_id) else { return out };
    let text: String =
        crate::mailer::printable(message.trim()).chars().take(pbs_proto::mom::MAX_STAGE_MESSAGE).collect();
    let first = message.lines().next().unwrap_or("");
    let (comment, point, mail) = match direction {
        StageDirection::In => {
            (format!("File stage in failed: {first}"), crate::job::mail::Point::StageIn, message.trim().to_string())
        }
        StageDirection::Out => (
            format!("File stage out failed, files kept in {node}'s undelivered: {first}"),
            crate::job::mail::Point::Other,
            format!("Post job file processing error; job {job_id} on host {node}\n{}", message.trim()),
        ),
    };
    tracing::warn!(object_type = "Job", object_name = job_id, "{text}");
    let comment: String = crate::mailer::printable(&comment).chars().take(MAX_COMMENT).collect();
    if let Some(job) = state.job_mut(key) {
        job.attrs.set(job_idx!("comment"), None, comment);
    }
    crate::job::mail::forced(state, key, point, bounded_lines(&mail), &mut out);
    out
}

/// `text` with each line's control characters escaped, its lines kept.
fn bounded_lines(text: &str) -> String {
    let text: String = text.chars().take(pbs_proto::mom::MAX_STAGE_MESSAGE).collect();
    text.lines().map(|l| crate::mailer::printable(l).into_owned()).collect::<Vec<_>>().join("\n")
}
