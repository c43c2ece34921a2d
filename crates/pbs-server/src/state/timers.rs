//! What is due at a time: the server's one table of timed events. Each entry names what
//! falls due (a job's execution time, the node watch, the history purge) and when; the
//! server's one timer hands the entries whose time has come to `due::due`, whose effects
//! go through `apply_effects` like a request's.
//!
//! An entry is a reminder, not a promise: whoever handles it checks the state again (a
//! job deleted or altered since is simply passed over), so nothing has to cancel one.
//! Each thing has at most one entry: setting it again moves it.

use std::collections::{BTreeSet, HashMap};

/// Something that falls due at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Due {
    /// A waiting job's `Execution_Time` (`qsub -a`): it becomes eligible to run.
    ExecutionTime(u64),
    /// Jobs on nodes down longer than `node_fail_requeue` are requeued (every second).
    NodeWatch,
    /// Job history past `job_history_duration` is purged (every 30 seconds).
    HistoryPurge,
    /// Periodic hooks whose `freq` has passed start (checked every second).
    PeriodicHooks,
}

/// When each periodic hook runs next, and which are running (a hook still running when
/// it falls due again is not started twice).
#[derive(Debug, Default)]
pub struct PeriodicHooks {
    /// Hook name to its next start, seconds since the epoch.
    pub next: std::collections::BTreeMap<String, i64>,
    /// Hooks started and not yet answered.
    pub running: BTreeSet<String>,
}

/// The entries, in time order.
#[derive(Debug, Default)]
pub struct Timers {
    by_time: BTreeSet<(i64, Due)>,
    at: HashMap<Due, i64>,
}

impl Timers {
    /// Sets `what` to fall due at `time` (seconds since the epoch), moving an entry it had.
    pub fn set(&mut self, what: Due, time: i64) {
        if let Some(old) = self.at.insert(what, time) {
            self.by_time.remove(&(old, what));
        }
        self.by_time.insert((time, what));
    }

    /// When `what` falls due, if it has an entry.
    pub fn when(&self, what: Due) -> Option<i64> {
        self.at.get(&what).copied()
    }

    /// The time of the earliest entry.
    pub fn next(&self) -> Option<i64> {
        self.by_time.first().map(|(time, _)| *time)
    }

    /// Takes every entry due at or before `now`, earliest first.
    pub fn take_due(&mut self, now: i64) -> Vec<Due> {
        let mut due = Vec::new();
        while let Some(&(time, what)) = self.by_time.first() {
            if time > now {
                break;
            }
            self.by_time.pop_first();
            self.at.remove(&what);
            due.push(what);
        }
        due
    }

    /// Entries waiting.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_time.len()
    }

    /// Whether none waits.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.by_time.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_fall_due_in_time_order_and_setting_again_moves_one() {
        let mut timers = Timers::default();
        timers.set(Due::ExecutionTime(7), 100);
        timers.set(Due::NodeWatch, 50);
        timers.set(Due::ExecutionTime(8), 100);
        timers.set(Due::ExecutionTime(7), 200);
        assert_eq!((timers.len(), timers.next(), timers.when(Due::ExecutionTime(7))), (3, Some(50), Some(200)));
        assert_eq!(timers.take_due(49), vec![]);
        assert_eq!(timers.take_due(150), vec![Due::NodeWatch, Due::ExecutionTime(8)]);
        assert_eq!(timers.take_due(1000), vec![Due::ExecutionTime(7)]);
        assert!(timers.is_empty() && timers.when(Due::ExecutionTime(7)).is_none());
    }
}
