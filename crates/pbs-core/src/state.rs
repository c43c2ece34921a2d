//! Job states and substates, with the letters and numbers OpenPBS shows.

use std::fmt;
use std::str::FromStr;

/// A job's `job_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    /// T: being moved between servers.
    Transit,
    /// Q: eligible to run.
    Queued,
    /// H: held.
    Held,
    /// W: waiting for its execution time.
    Waiting,
    /// R: running.
    Running,
    /// E: exiting after running.
    Exiting,
    /// X: a subjob that has finished (expired).
    Expired,
    /// B: an array with at least one subjob started.
    Begun,
    /// S: suspended.
    Suspended,
    /// U: suspended because the workstation became busy.
    UserBusy,
    /// M: moved to another server (history only).
    Moved,
    /// F: finished (history only).
    Finished,
}

impl JobState {
    /// The one-letter form used by qstat and stored in `job_state`.
    pub fn letter(self) -> char {
        match self {
            JobState::Transit => 'T',
            JobState::Queued => 'Q',
            JobState::Held => 'H',
            JobState::Waiting => 'W',
            JobState::Running => 'R',
            JobState::Exiting => 'E',
            JobState::Expired => 'X',
            JobState::Begun => 'B',
            JobState::Suspended => 'S',
            JobState::UserBusy => 'U',
            JobState::Moved => 'M',
            JobState::Finished => 'F',
        }
    }

    /// Parses a state letter (case-insensitive, as qselect -s accepts).
    pub fn from_letter(letter: char) -> Option<JobState> {
        Some(match letter.to_ascii_uppercase() {
            'T' => JobState::Transit,
            'Q' => JobState::Queued,
            'H' => JobState::Held,
            'W' => JobState::Waiting,
            'R' => JobState::Running,
            'E' => JobState::Exiting,
            'X' => JobState::Expired,
            'B' => JobState::Begun,
            'S' => JobState::Suspended,
            'U' => JobState::UserBusy,
            'M' => JobState::Moved,
            'F' => JobState::Finished,
            _ => return None,
        })
    }

    /// Finished, moved or expired jobs are history: visible only with `qstat -x`.
    pub fn is_history(self) -> bool {
        matches!(self, JobState::Finished | JobState::Moved | JobState::Expired)
    }

    /// The substate a job gets on entering this state by the ordinary path.
    pub fn default_substate(self) -> Substate {
        match self {
            JobState::Transit => Substate::TRANSIN,
            JobState::Queued => Substate::QUEUED,
            JobState::Held => Substate::HELD,
            JobState::Waiting => Substate::WAITING,
            JobState::Running => Substate::RUNNING,
            JobState::Exiting => Substate::EXITING,
            JobState::Expired => Substate::FINISHED,
            JobState::Begun => Substate::BEGUN,
            JobState::Suspended => Substate::SUSPEND,
            JobState::UserBusy => Substate::SCHSUSP,
            JobState::Moved => Substate::MOVED,
            JobState::Finished => Substate::FINISHED,
        }
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

impl FromStr for JobState {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => JobState::from_letter(c).ok_or(()),
            _ => Err(()),
        }
    }
}

/// A job's `substate` number (OpenPBS `JOB_SUBSTATE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Substate(pub u16);

impl Substate {
    /// 0: arriving from another server.
    pub const TRANSIN: Substate = Substate(0);
    /// 10: queued, eligible.
    pub const QUEUED: Substate = Substate(10);
    /// 20: held.
    pub const HELD: Substate = Substate(20);
    /// 30: waiting for execution time.
    pub const WAITING: Substate = Substate(30);
    /// 15: running, its files staging in first (`JOB_SUBSTATE_STAGEGO`).
    pub const STAGEGO: Substate = Substate(15);
    /// 37: waiting after its stage-in failed (`JOB_SUBSTATE_STAGEFAIL`).
    pub const STAGEFAIL: Substate = Substate(37);
    /// 42: running.
    pub const RUNNING: Substate = Substate(42);
    /// 43: suspended by a signal.
    pub const SUSPEND: Substate = Substate(43);
    /// 45: suspended by the scheduler.
    pub const SCHSUSP: Substate = Substate(45);
    /// 50: exiting.
    pub const EXITING: Substate = Substate(50);
    /// 51: exiting, its files staging out (`JOB_SUBSTATE_STAGEOUT`).
    pub const STAGEOUT: Substate = Substate(51);
    /// 91: terminated (deleted) before it ran.
    pub const TERMINATED: Substate = Substate(91);
    /// 92: finished.
    pub const FINISHED: Substate = Substate(92);
    /// 93: failed.
    pub const FAILED: Substate = Substate(93);
    /// 70: a job array that has begun (what OpenPBS 23.06 shows for a `B` array).
    pub const BEGUN: Substate = Substate(70);
    /// 95: held because another job of its job set runs (`JOB_SUBSTATE_RUNNING_SET`).
    pub const RUNNING_SET: Substate = Substate(95);
    /// 160: moved to another server.
    pub const MOVED: Substate = Substate(160);
}

impl fmt::Display for Substate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_round_trip() {
        for letter in "TQHWREXBSUMF".chars() {
            let state = JobState::from_letter(letter).unwrap();
            assert_eq!(state.letter(), letter);
            assert_eq!(state.to_string().parse::<JobState>(), Ok(state));
        }
        assert_eq!(JobState::from_letter('z'), None);
        assert_eq!(JobState::from_letter('q'), Some(JobState::Queued));
    }

    #[test]
    fn history_states() {
        assert!(JobState::Finished.is_history());
        assert!(!JobState::Held.is_history());
        assert_eq!(JobState::Held.default_substate(), Substate::HELD);
    }
}
