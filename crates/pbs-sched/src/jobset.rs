//! Job sets in a cycle: which set a job is in, and each set's turn in this cycle. A
//! set's queued jobs come in the cycle's order (the site's sort, then submission); the
//! first that fits runs and the others of its set are passed over; when none fits, only
//! the first tried may be planned as a top job, and the cycle says once that none of the
//! set's requests could be satisfied.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
#[derive(Debug, Default, Clone, Copy)]
struct Turn {
    started: bool,
    /// The mirror slot of the first member tried, if one was: a later one may not be
    /// planned, and it names the set in the log.
    first: Option<u32>,
}

/// A multiplicative hash for set keys (leaders' sequence numbers, never from outside the
/// process): a cycle looks a set up once per member.
#[derive(Default, Clone, Copy)]
pub(crate) struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
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
    sets: HashMap<u64, Turn, BuildHasherDefault<SeqHasher>>,
    /// Sets in the order their first member was tried, for the log.
    order: Vec<u64>,
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

    /// A member of `set` (in mirror slot `slot`) comes up.
    pub(crate) fn turn(&mut self, set: u64, slot: u32) -> Turning {
        let turn = self.sets.entry(set).or_default();
        if turn.started {
            return Turning::Skip;
        }
        if turn.first.is_some() {
            return Turning::Try { may_plan: false };
        }
        turn.first = Some(slot);
        self.order.push(set);
        Turning::Try { may_plan: true }
    }

    /// The member tried started.
    pub(crate) fn started(&mut self, set: u64) {
        self.sets.entry(set).or_default().started = true;
    }

    /// The first member tried of each set none of whose members started, in the order
    /// the sets were met.
    pub(crate) fn unsatisfied(&self) -> impl Iterator<Item = u32> + '_ {
        self.order.iter().filter_map(|set| self.sets.get(set).filter(|t| !t.started).and_then(|t| t.first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_member_tried_may_be_planned_and_a_start_passes_the_others_over() {
        let mut turns = SetTurns::new([7].into_iter());
        assert_eq!(turns.turn(7, 0), Turning::Skip);
        assert_eq!(turns.turn(1, 1), Turning::Try { may_plan: true });
        assert_eq!(turns.turn(1, 2), Turning::Try { may_plan: false });
        assert_eq!(turns.turn(4, 3), Turning::Try { may_plan: true });
        turns.started(4);
        assert_eq!(turns.turn(4, 5), Turning::Skip);
        assert_eq!(turns.turn(9, 6), Turning::Try { may_plan: true });
        assert_eq!(turns.unsatisfied().collect::<Vec<_>>(), vec![1, 6]);
    }
}
