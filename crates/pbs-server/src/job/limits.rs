//! Entity limits' part of a job's life (`job::life`): a job altered or moved is recounted
//! at once, so a later id of the same request is checked against what it changed
//! (`entity_limits`); other changes are recounted when the scheduler is told of them.

use crate::effects::Effects;
use crate::job::life::{At, Step};
use crate::state::State;

/// Entity limits of a job's steps.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "entity limits"
    }

    fn after(&self, state: &mut State, at: &At<'_>, _out: &mut Effects) {
        if matches!(at.step, Step::Altered | Step::Moved) && at.is_job() {
            crate::entity_limits::job_changed(state, at.key.seq);
        }
    }
}
