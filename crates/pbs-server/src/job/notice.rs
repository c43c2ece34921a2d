//! The scheduler's part of a job's life (`job::life`), the last of the table: a job that
//! went back to the queue, ended or left is marked for the scheduler (its view, or its
//! id once it is gone) and a cycle is asked for, since its resources or its place in a
//! queue are free for others. A start is told by its write (`sched_view::note_written`).

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
        if let Step::Started { .. } = at.step {
            return;
        }
        state.changes.jobs.insert(at.key, at.id.to_string());
        state.changes.cycle = true;
    }
}
