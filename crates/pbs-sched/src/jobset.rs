//! Job sets in a cycle: which set a job is in, and each set's turn in this cycle. A
//! set's queued jobs come in the cycle's order (the site's sort, then submission); the
//! first that fits runs and the others of its set are passed over; when none fits, only
//! the first tried may be planned as a top job, and the cycle says once that none of the
//! set's requests could be satisfied.

use std::collections::HashMap;

use pbs_proto::sched::SchedJob;

/// The scheduler's log text for a set none of whose jobs could run.
pub(crate) const NONE_SATISFIED: &str = "None of the select specification could be satisfied";

/// The leader's sequence number of the set a job is in (`job_set`, `12.server`).
pub(crate) fn set_of(view: &SchedJob) -> Option<u64> {
    let value = view.attrs.iter().find(|a| a.name() == "job_set")?.value();
    let digits = value.split('.').next()?;
    digits.parse().ok()
}

/// One set's turn in a cycle.
#[derive(Debug, Default)]
struct Turn {
    started: bool,
    /// Some member was tried: a later one may not be planned.
    tried: bool,
    /// The set's name (`job_set`), for the log line.
    name: String,
}

/// What the cycle does with a set's member it comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turning {
    /// Another member of its set runs, or starts this cycle: pass it over.
    Skip,
    /// Try it; `may_plan`: it is the first of its set tried, the only one a calendar may
    /// plan.
    Try { may_plan: bool },
}

/// The sets the cycle met, only those: a cycle over jobs in no set costs nothing more.
#[derive(Debug, Default)]
pub(crate) struct SetTurns {
    sets: HashMap<u64, Turn>,
}

impl SetTurns {
    /// The turns of a cycle in which the sets `starting` have a member whose run is still
    /// in flight (the server holds the others when it applies the run).
    pub(crate) fn new(starting: impl Iterator<Item = u64>) -> SetTurns {
        let mut turns = SetTurns::default();
        for set in starting {
            turns.sets.entry(set).or_default().started = true;
        }
        turns
    }

    /// A member of `set` (named `name`) comes up.
    pub(crate) fn turn(&mut self, set: u64, name: &str) -> Turning {
        let turn = self.sets.entry(set).or_default();
        if turn.started {
            return Turning::Skip;
        }
        let may_plan = !turn.tried;
        if !turn.tried {
            turn.tried = true;
            turn.name = name.to_string();
        }
        Turning::Try { may_plan }
    }

    /// The member tried started.
    pub(crate) fn started(&mut self, set: u64) {
        self.sets.entry(set).or_default().started = true;
    }

    /// The names of the sets of which members were tried and none started.
    pub(crate) fn unsatisfied(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> =
            self.sets.values().filter(|t| t.tried && !t.started).map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        names.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_member_tried_may_be_planned_and_a_start_passes_the_others_over() {
        let mut turns = SetTurns::new([7].into_iter());
        assert_eq!(turns.turn(7, "7.s"), Turning::Skip);
        assert_eq!(turns.turn(1, "1.s"), Turning::Try { may_plan: true });
        assert_eq!(turns.turn(1, "1.s"), Turning::Try { may_plan: false });
        assert_eq!(turns.turn(4, "4.s"), Turning::Try { may_plan: true });
        turns.started(4);
        assert_eq!(turns.turn(4, "4.s"), Turning::Skip);
        assert_eq!(turns.unsatisfied().collect::<Vec<_>>(), vec!["1.s"]);
    }
}
