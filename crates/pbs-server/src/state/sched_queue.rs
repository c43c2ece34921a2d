//! The bounded queue of frames to the scheduler: when the scheduler falls behind, changes
//! wait as one coalesced record in the state instead of piling up here (see
//! `sched_view::drain`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pbs_proto::sched::ToSched;
use tokio::sync::mpsc;

/// Frames queued for the scheduler's writer at most.
pub const SCHED_QUEUE: usize = 1024;

/// The producer side of a scheduler link.
#[derive(Debug)]
pub struct SchedSender {
    pub(crate) tx: mpsc::Sender<ToSched>,
    /// Frames that found the queue full, in order.
    pub(crate) held: VecDeque<ToSched>,
    /// Set when something waits outside the queue: the writer then calls [`drain`].
    pub(crate) backlog: Arc<AtomicBool>,
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
