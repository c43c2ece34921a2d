//! Job sets by the sequence number of their leader: each set's members that have not
//! finished, its owner and the member running, so that a member's start, end, requeue or
//! deletion finds the others (and a submission naming the set finds it) without walking
//! the jobs. Rebuilt from the jobs' `job_set` values when the state is read.

use std::collections::{BTreeSet, HashMap};

/// One set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSet {
    /// `euser` of the job that created it: only this user's jobs may join.
    pub owner: String,
    /// Members not finished, in submission order (the order the scheduler tries them in,
    /// after the site's sort).
    pub members: BTreeSet<u64>,
    /// The member running, whose start held the others.
    pub running: Option<u64>,
}

/// Every set with a member not finished. A set whose leader is gone keeps its name.
#[derive(Debug, Default)]
pub struct JobSets {
    sets: HashMap<u64, JobSet>,
}

impl JobSets {
    /// The set led by `leader`, while it has a member.
    pub fn get(&self, leader: u64) -> Option<&JobSet> {
        self.sets.get(&leader)
    }

    /// `seq` joins the set led by `leader`, made for `owner` if it has no member yet.
    pub fn join(&mut self, leader: u64, seq: u64, owner: &str) {
        let set = self.sets.entry(leader).or_insert_with(|| JobSet {
            owner: owner.to_string(),
            members: BTreeSet::new(),
            running: None,
        });
        set.members.insert(seq);
    }

    /// `seq` is no longer a member (finished, deleted or moved); a set left without
    /// members is gone.
    pub fn leave(&mut self, leader: u64, seq: u64) {
        if let Some(set) = self.sets.get_mut(&leader) {
            set.members.remove(&seq);
            if set.running == Some(seq) {
                set.running = None;
            }
            if set.members.is_empty() {
                self.sets.remove(&leader);
            }
        }
    }

    /// Records the member running (`None`: none runs any more).
    pub fn set_running(&mut self, leader: u64, running: Option<u64>) {
        if let Some(set) = self.sets.get_mut(&leader) {
            set.running = running;
        }
    }

    /// How many sets there are.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether there is no set.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

/// The leader's sequence number a kept `job_set` value (`12.server`) names.
pub fn leader_of(value: &str) -> Option<u64> {
    match pbs_core::jobset::parse(value) {
        pbs_core::jobset::SetName::Leader { seq, .. } => Some(seq),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_lives_while_it_has_members_and_keeps_its_leaders_name() {
        let mut sets = JobSets::default();
        sets.join(10, 10, "alice");
        sets.join(10, 11, "bob");
        sets.join(10, 12, "bob");
        assert_eq!(sets.get(10).map(|s| s.owner.as_str()), Some("alice"));
        sets.set_running(10, Some(11));
        sets.leave(10, 10);
        assert_eq!(sets.get(10).map(|s| s.members.iter().copied().collect::<Vec<_>>()), Some(vec![11, 12]));
        sets.leave(10, 11);
        assert_eq!(sets.get(10).and_then(|s| s.running), None);
        sets.leave(10, 12);
        assert!(sets.get(10).is_none() && sets.is_empty());
        assert_eq!(leader_of("12.srv"), Some(12));
        assert_eq!(leader_of("12[].srv"), None);
    }
}
