//! The accounting part of a job's life (`job::life`): which record each step writes, and
//! where in the commit. A run's `E` or `R` is taken from the job as it ran, before the
//! transition changes it (with its eligible time while the server keeps it); a start's `S` from the job as it runs; a suspension's `z` and a
//! resumption's `r` after the job's write; a move's `Q` in its new queue; a job a
//! dependency or its set ends gets its `A`. qdel's `D` is the request's, written by
//! `job::delete` as the request is taken, and a submission's `Q` is `job::submit`'s (its
//! text depends on what the job's dependencies did before the step).

use crate::effects::Effects;
use crate::job::life::{At, Step};
use crate::state::State;

/// The accounting records of a job's steps.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "accounting"
    }

    fn before(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        let Some(job) = state.job(at.key) else { return };
        let end = match at.step {
            Step::Requeued { checkpointed: false } => crate::accounting::RunEnd::Requeued,
            // An array that never began has no run to record.
            Step::Ended { .. } if !(job.array && job.get("stime", None).is_none()) => crate::accounting::RunEnd::Ended,
            Step::Left { why } => {
                if let Some(reason) = why.reason() {
                    out.ops.push(crate::accounting::aborted(at.id, &reason));
                }
                return;
            }
            _ => return,
        };
        let eligible = crate::state::accrual::enabled(state).then(|| crate::state::accrual::recorded(job, at.now));
        out.ops.push(crate::accounting::run_ended(job, at.id, end, eligible.as_deref(), at.now));
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        match at.step {
            Step::Started { .. } => out.ops.extend(crate::accounting::started(state, at.key)),
            Step::Suspended { .. } => {
                if let Some(job) = state.job(at.key) {
                    out.ops.push(crate::accounting::suspended(job, at.id));
                }
            }
            Step::Resumed => out.ops.push(crate::accounting::resumed(at.id)),
            Step::Moved => out.ops.extend(crate::accounting::queued(state, at.key)),
            _ => {}
        }
    }
}
