//! Eligible time's part of a job's life (`job::life`): after a step, every job the step
//! wrote (the job itself, and the others its parts changed: a runone group held, a
//! dependency's children released) gets the accrue type the server knows it has, at the
//! handler's `now`, with its record rewritten in place so the type, the time and
//! `accrue_since` are committed with the step that caused them (`state::accrual`).

use crate::effects::Effects;
use crate::job::life::At;
use crate::state::State;

/// Eligible time of a job's steps.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "eligible time"
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        if let Some(written) = out.ops.get_mut(at.written_from..) {
            crate::state::accrual::on_written(state, written, at.now);
        }
    }
}
