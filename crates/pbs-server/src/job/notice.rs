//! The scheduler's part of a job's life (`job::life`), the last of the table: every job a
//! step changes is marked for the scheduler (its view, or its id once it is gone), and
//! every step but a start and its confirmation asks for a cycle, since resources, a
//! place in a queue or a job that may run changed. A start and its confirmation are the
//! scheduler's own decision coming true: no cycle for them.

use crate::effects::Effects;
use crate::job::life::{At, Step};
use crate::state::State;

/// The scheduler's notice of a job's steps.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "scheduler notice"
    }

    fn after(&self, state: &mut State, at: &At<'_>, _out: &mut Effects) {
        state.changes.jobs.entry(at.key).or_insert_with(|| at.id.to_string());
        if !matches!(at.step, Step::Started { .. } | Step::Confirmed { .. }) {
            state.changes.cycle = true;
        }
    }
}
