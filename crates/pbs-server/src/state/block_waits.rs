//! The connections waiting for jobs to leave (`qsub -W block=true`, `job::block`), and the
//! answers kept for `block` jobs that left before their qsub asked: run-time only, never
//! stored (a restarted server's qsubs have lost their connections).

use std::collections::{HashMap, VecDeque};

use tokio::sync::oneshot;

use crate::jobkey::JobKey;

/// How a waited-for job left: its exit status, and why when it did not end on its own.
pub type Done = (i32, String);

/// The most answers kept for jobs nobody waited for yet.
pub const MAX_KEPT: usize = 4096;

/// Waiters by job, and answers kept.
#[derive(Debug, Default)]
pub struct BlockWaits {
    waiters: HashMap<JobKey, Vec<oneshot::Sender<Done>>>,
    kept: HashMap<JobKey, (String, Done)>,
    kept_order: VecDeque<JobKey>,
}

impl BlockWaits {
    /// Whether a connection waits for `key`.
    pub fn waited(&self, key: JobKey) -> bool {
        self.waiters.get(&key).is_some_and(|w| w.iter().any(|w| !w.is_closed()))
    }

    /// A new waiter for `key`, unless `key` has `per_job` live waiters or all jobs
    /// `total`.
    pub fn add(&mut self, key: JobKey, per_job: usize, total: usize) -> Option<oneshot::Receiver<Done>> {
        let all: usize = self.waiters.values().map(Vec::len).sum();
        let waiters = self.waiters.entry(key).or_default();
        waiters.retain(|w| !w.is_closed());
        if waiters.len() >= per_job || all >= total {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        waiters.push(tx);
        Some(rx)
    }

    /// `key` left: its waiters get `done`, or, with none, it is kept for `owner`; the first
    /// answer for a job is the one it gets.
    pub fn answer(&mut self, key: JobKey, owner: String, done: Done) {
        let waiters: Vec<_> =
            self.waiters.remove(&key).unwrap_or_default().into_iter().filter(|w| !w.is_closed()).collect();
        if waiters.is_empty() {
            self.keep(key, owner, done);
            return;
        }
        for waiter in waiters {
            let _ = waiter.send(done.clone());
        }
    }

    /// Whose the answer kept for `key` is.
    pub fn kept_owner(&self, key: JobKey) -> Option<&str> {
        self.kept.get(&key).map(|(owner, _)| owner.as_str())
    }

    /// Takes the answer kept for `key`.
    pub fn take_kept(&mut self, key: JobKey) -> Option<Done> {
        let (_, done) = self.kept.remove(&key)?;
        self.kept_order.retain(|k| *k != key);
        Some(done)
    }

    fn keep(&mut self, key: JobKey, owner: String, done: Done) {
        if self.kept.contains_key(&key) {
            return;
        }
        if self.kept_order.len() >= MAX_KEPT
            && let Some(oldest) = self.kept_order.pop_front()
        {
            self.kept.remove(&oldest);
        }
        self.kept_order.push_back(key);
        self.kept.insert(key, (owner, done));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_answers_are_bounded_and_the_oldest_goes_first() {
        let mut waits = BlockWaits::default();
        for seq in 0..(MAX_KEPT as u64 + 10) {
            waits.answer(JobKey::job(seq), "alice".into(), (seq as i32, String::new()));
        }
        assert_eq!(waits.kept.len(), MAX_KEPT);
        assert_eq!(waits.kept_owner(JobKey::job(9)), None);
        assert_eq!(waits.kept_owner(JobKey::job(10)), Some("alice"));
        // The first answer for a job stays.
        waits.answer(JobKey::job(10), "alice".into(), (99, String::new()));
        assert_eq!(waits.take_kept(JobKey::job(10)), Some((10, String::new())));
        assert_eq!(waits.take_kept(JobKey::job(10)), None, "taken once");
    }

    #[test]
    fn waiters_are_bounded_per_job_and_in_all_and_a_closed_one_frees_its_place() {
        let mut waits = BlockWaits::default();
        let a = waits.add(JobKey::job(1), 2, 3);
        let b = waits.add(JobKey::job(1), 2, 3);
        assert!(a.is_some() && b.is_some());
        assert!(waits.add(JobKey::job(1), 2, 3).is_none(), "two a job");
        assert!(waits.add(JobKey::job(2), 2, 3).is_some());
        assert!(waits.add(JobKey::job(3), 2, 3).is_none(), "three in all");
        drop(a);
        assert!(waits.add(JobKey::job(1), 2, 4).is_some(), "a closed waiter's place is free");
        let mut b = b.unwrap();
        waits.answer(JobKey::job(1), "alice".into(), (7, String::new()));
        assert_eq!(b.try_recv().ok(), Some((7, String::new())));
        assert_eq!(waits.take_kept(JobKey::job(1)), None, "answered, not kept");
    }
}
