//! Signals to job sessions that nobody waits on (a qdel's SIGTERM, a forgotten job's
//! SIGKILL), sent in batches: finding a session's processes takes a pass over `/proc` that
//! reads every process's stat, so a mom asked to end hundreds of jobs at once sends all of
//! what was asked while one pass ran in the next pass, never one pass a job.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use crate::procfs;

/// Signals kept for one session until the next pass: more are dropped (the list is the
/// few signals an end sends, and a repeat of the last one is not added).
const MAX_SIGNALS_PER_SESSION: usize = 8;

/// The signals asked for and not sent yet, by session, and the pass that sends them.
#[derive(Default)]
pub struct SessionSignals {
    /// At most one entry per session the mom has signalled since the last pass: bounded
    /// by its jobs.
    pending: Mutex<HashMap<i64, Vec<i32>>>,
    wake: Notify,
}

impl SessionSignals {
    /// Asks for `signals`, in their order, to every process of session `sid` in the next
    /// pass ([`SessionSignals::run`]). Sessions 0 and 1 are never a job's: ignored.
    pub fn send(&self, sid: i64, signals: &[i32]) {
        if sid <= 1 {
            return;
        }
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let list = pending.entry(sid).or_default();
            for signal in signals {
                if list.len() < MAX_SIGNALS_PER_SESSION && list.last() != Some(signal) {
                    list.push(*signal);
                }
            }
        }
        self.wake.notify_one();
    }

    fn take(&self) -> HashMap<i64, Vec<i32>> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Sends what was asked, one pass over `/proc` for all of it, off the runtime's
    /// threads; what is asked meanwhile goes in the next pass. Runs until aborted.
    pub async fn run(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            let batch = self.take();
            if batch.is_empty() {
                continue;
            }
            let sessions = batch.len();
            let sent = tokio::task::spawn_blocking(move || procfs::signal_sessions_in_order(&batch)).await;
            tracing::debug!(sessions, processes = sent.map_or(0, |s| s.values().sum::<usize>()), "signalled sessions");
        }
    }

    /// Sends what is still asked, on this thread: when the mom stops, after its
    /// [`SessionSignals::run`] task is aborted, so that a qdel's SIGTERM asked just before
    /// is not lost with it.
    pub fn flush(&self) {
        let batch = self.take();
        if !batch.is_empty() {
            procfs::signal_sessions_in_order(&batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::tests::Sleeper;

    #[test]
    fn a_session_keeps_its_signals_in_order_without_repeats_and_bounded() {
        let signals = SessionSignals::default();
        signals.send(0, &[libc::SIGKILL]);
        signals.send(1, &[libc::SIGKILL]);
        signals.send(42, &[libc::SIGTERM, libc::SIGCONT]);
        signals.send(42, &[libc::SIGCONT]);
        signals.send(42, &[libc::SIGKILL]);
        for _ in 0..100 {
            signals.send(43, &[libc::SIGSTOP, libc::SIGCONT]);
        }
        let pending = signals.pending.lock().unwrap();
        assert_eq!(pending.len(), 2, "sessions 0 and 1 are never signalled");
        assert_eq!(pending[&42], vec![libc::SIGTERM, libc::SIGCONT, libc::SIGKILL]);
        assert_eq!(pending[&43].len(), MAX_SIGNALS_PER_SESSION);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn everything_asked_before_a_pass_goes_out_in_it() {
        let signals = Arc::new(SessionSignals::default());
        let mut sleepers: Vec<Sleeper> = (0..3).map(|_| Sleeper::start()).collect();
        // Asked before the pass runs at all: nothing is lost waiting for it.
        for sleeper in &sleepers {
            signals.send(sleeper.sid(), &[libc::SIGTERM, libc::SIGCONT]);
        }
        let pass = tokio::spawn(signals.clone().run());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        for sleeper in &mut sleepers {
            let status = loop {
                if let Some(status) = sleeper.0.try_wait().unwrap() {
                    break Some(status);
                }
                if std::time::Instant::now() > deadline {
                    break None;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            };
            let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
            assert_eq!(signal, Some(libc::SIGTERM));
        }
        assert!(signals.pending.lock().unwrap().is_empty());
        pass.abort();
    }

    #[test]
    fn a_flush_sends_what_is_left_on_the_calling_thread() {
        let signals = SessionSignals::default();
        let mut sleeper = Sleeper::start();
        signals.send(sleeper.sid(), &[libc::SIGKILL]);
        signals.flush();
        let status = sleeper.0.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
        assert!(signals.pending.lock().unwrap().is_empty());
    }
}
