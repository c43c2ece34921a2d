//! Entity limits' part of a job's life (`job::life`): a new job, an alteration and a move
//! are checked against the limits before anything changes; a job altered or moved is
//! recounted at once, so a later id of the same request is checked against what it
//! changed (`entity_limits`); other changes are recounted when the scheduler is told of
//! them.

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::{At, Proposal, Step};
use crate::request::Ctx;
use crate::state::State;

/// Entity limits of a job's steps.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "entity limits"
    }

    fn check(&self, state: &mut State, ctx: &Ctx<'_>, proposal: &Proposal<'_>) -> Result<(), ReqError> {
        match *proposal {
            Proposal::Queued { queue, attrs } => crate::entity_limits::check_new(state, ctx, queue, attrs),
            Proposal::Altered { seq, attrs } => crate::entity_limits::check_alter(state, ctx, seq, attrs),
            Proposal::Moved { seq, queue: _, in_place_of: Some(leaving) } => {
                crate::entity_limits::check_swap(state, ctx, seq, leaving)
            }
            Proposal::Moved { seq, queue, in_place_of: None } => {
                crate::entity_limits::check_move(state, ctx, seq, queue)
            }
        }
    }

    fn after(&self, state: &mut State, at: &At<'_>, _out: &mut Effects) {
        if matches!(at.step, Step::Altered | Step::Moved) && at.is_job() {
            crate::entity_limits::job_changed(state, at.key.seq);
        }
    }
}
