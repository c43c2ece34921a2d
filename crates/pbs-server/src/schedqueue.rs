//! The bounded queue of frames for the scheduler, and what happens when it is full.
//!
//! Frames are queued under the state lock, where nothing may wait, so a full queue cannot
//! make the producer wait. Instead: pending changes stay in `State::changes`, where they
//! coalesce by object (a job changed ten times is sent once, as it is now), and the few
//! other frames (`DecisionsApplied`, one per cycle in flight; `RunNow`, one per waiting
//! `qrun`) wait in order behind them. When the link's writer has made room it calls
//! [`drain`], which sends the changes first, then the frames that waited, so a
//! `DecisionsApplied` still follows every change its decisions caused. Memory is then
//! bounded by the queue's length plus the objects that exist, whatever the scheduler's
//! speed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pbs_proto::sched::ToSched;
use tokio::sync::mpsc;

use crate::state::State;

/// Frames queued for the scheduler's writer at most.
pub const SCHED_QUEUE: usize = 1024;

/// The producer side of a scheduler link.
#[derive(Debug)]
pub struct SchedSender {
    tx: mpsc::Sender<ToSched>,
    /// Frames that found the queue full, in order.
    held: VecDeque<ToSched>,
    /// Set when something waits outside the queue: the writer then calls [`drain`].
    backlog: Arc<AtomicBool>,
}

/// The queue was closed: the link is gone.
#[derive(Debug)]
pub struct Closed;

impl SchedSender {
    /// A new link's queue: the sender, the writer's receiver, and the backlog flag the
    /// writer watches.
    pub fn new() -> (SchedSender, mpsc::Receiver<ToSched>, Arc<AtomicBool>) {
        let (tx, rx) = mpsc::channel(SCHED_QUEUE);
        let backlog = Arc::new(AtomicBool::new(false));
        (SchedSender { tx, held: VecDeque::new(), backlog: backlog.clone() }, rx, backlog)
    }

    /// Whether this is the link whose writer holds `rx`'s peer `tx`.
    pub fn is(&self, tx: &mpsc::Sender<ToSched>) -> bool {
        self.tx.same_channel(tx)
    }

    /// A clone of the queue's sender, to recognise the link later with [`SchedSender::is`].
    pub fn sender(&self) -> mpsc::Sender<ToSched> {
        self.tx.clone()
    }

    /// Whether a frame sent now goes straight into the queue, behind nothing held.
    pub fn has_room(&self) -> bool {
        self.held.is_empty() && self.tx.capacity() > 0
    }

    /// Asks the writer to call [`drain`] once it has made room.
    pub fn note_backlog(&self) {
        self.backlog.store(true, Ordering::Release);
    }

    /// Queues `frame`, or holds it (in order) while the queue is full.
    pub fn send(&mut self, frame: ToSched) -> Result<(), Closed> {
        if !self.held.is_empty() {
            self.held.push_back(frame);
            self.note_backlog();
            return Ok(());
        }
        match self.tx.try_send(frame) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(frame)) => {
                self.held.push_back(frame);
                self.note_backlog();
                Ok(())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Closed),
        }
    }
}

impl SchedSender {
    /// Queues pending changes ahead of the held frames (which may confirm them), holding
    /// them first in line if the queue is full.
    pub fn send_changes(&mut self, frame: ToSched) -> Result<(), Closed> {
        match self.tx.try_send(frame) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(frame)) => {
                self.held.push_front(frame);
                self.note_backlog();
                Ok(())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Closed),
        }
    }
}

/// Called by the writer of the link `tx` when it has sent a frame and the backlog flag is
/// set: sends the changes that waited, then the held frames, as far as the queue has room.
pub fn drain(state: &mut State, tx: &mpsc::Sender<ToSched>) {
    let Some(link) = state.links.sched.as_mut().filter(|link| link.is(tx)) else { return };
    link.backlog.store(false, Ordering::Release);
    if link.tx.capacity() > 0 {
        crate::exec::flush_changes(state);
    }
    let Some(link) = state.links.sched.as_mut().filter(|link| link.is(tx)) else { return };
    while link.tx.capacity() > 0
        && let Some(frame) = link.held.pop_front()
    {
        if link.tx.try_send(frame).is_err() {
            state.links.sched = None;
            return;
        }
    }
    let changes_wait = !state.changes.jobs.is_empty()
        || !state.changes.nodes.is_empty()
        || state.changes.objects
        || state.changes.cycle;
    if let Some(link) = state.links.sched.as_ref()
        && (!link.held.is_empty() || changes_wait)
    {
        link.note_backlog();
    }
}

#[cfg(test)]
mod tests {
    use pbs_proto::sched::SchedChange;

    use super::*;

    #[test]
    fn a_full_queue_coalesces_changes_and_keeps_frames_behind_them() {
        let (mut state, _) = State::from_loaded(Default::default(), "svr", "host", "/nonexistent");
        let (link, mut rx, backlog) = SchedSender::new();
        let tx = link.sender();
        state.links.sched = Some(link);
        // A scheduler that reads nothing: the queue fills.
        for _ in 0..SCHED_QUEUE {
            state.changes.cycle = true;
            crate::exec::flush(&mut state);
        }
        assert_eq!(tx.capacity(), 0);
        // More changes of one node, many times: they wait, as one.
        for _ in 0..10_000 {
            state.changes.nodes.insert("n1".into());
            state.changes.cycle = true;
            crate::exec::flush(&mut state);
        }
        let applied = ToSched::DecisionsApplied { cycle: 9, errors: Vec::new() };
        state.links.sched.as_mut().map(|link| link.send(applied.clone()));
        assert!(backlog.load(Ordering::Acquire));
        assert_eq!(state.links.sched.as_ref().map(|l| l.held.len()), Some(1));

        // The writer catches up, draining whenever told to.
        let mut frames = Vec::new();
        while let Ok(frame) = rx.try_recv() {
            frames.push(frame);
            if backlog.load(Ordering::Acquire) {
                drain(&mut state, &tx);
            }
        }
        assert_eq!(frames.len(), SCHED_QUEUE + 2, "{:?}", &frames[SCHED_QUEUE - 2..]);
        let gone = SchedChange::NodeGone { name: "n1".into() };
        assert_eq!(frames[SCHED_QUEUE], ToSched::Changes { changes: vec![gone], cycle: true });
        assert_eq!(frames[SCHED_QUEUE + 1], applied);
        assert!(!backlog.load(Ordering::Acquire));
        // Back to normal: the next change goes straight out.
        state.changes.cycle = true;
        crate::exec::flush(&mut state);
        assert!(matches!(rx.try_recv(), Ok(ToSched::Changes { .. })));
    }
}
