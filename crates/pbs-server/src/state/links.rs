//! The live links: the scheduler's change stream, each node's mom frame queue, the `qrun`
//! requests waiting for the scheduler, and the requests waiting for moms' answers. They
//! sit beside the state under its lock (see `server::Shared`), not in it: handlers get the
//! state alone, so they cannot send.

use std::collections::HashMap;

use pbs_proto::mom::ToMom;
use tokio::sync::{mpsc, oneshot};

use crate::effects::MomFrames;
use crate::error::ReqError;

/// Live links to the scheduler and the moms.
#[derive(Debug, Default)]
pub struct Links {
    /// The scheduler's change stream, when one is connected.
    pub sched: Option<crate::state::sched_queue::SchedSender>,
    /// Frames to each node's mom (queued while its link is down, up to [`MOM_QUEUE`]).
    pub moms: HashMap<String, mpsc::Sender<ToMom>>,
    /// `qrun` requests waiting for the scheduler's placement.
    pub qruns: HashMap<u64, oneshot::Sender<Result<(), ReqError>>>,
    /// The next `qrun` correlation number.
    pub next_qrun: u64,
    /// Requests waiting for moms' answers, by the number their frames carry.
    pub asks: HashMap<u64, PendingAsk>,
    /// The last number given to a request waiting for moms (0 is never one).
    pub last_ask: u64,
}

/// A request that sent frames to one or more moms and waits until every one has answered,
/// or its deadline passed (the waiting side then takes what came).
#[derive(Debug)]
pub struct PendingAsk {
    /// Each item's answer once it came, in the order asked.
    answers: Vec<Option<u32>>,
    /// Where each (node, job id) is among `answers` (a job a request names twice is
    /// asked twice), so an answer costs a lookup, not a walk of the request.
    slots: HashMap<(String, String), Vec<usize>>,
    /// Items still without an answer.
    missing: usize,
    /// Told once every answer is in.
    done: Option<oneshot::Sender<()>>,
}

/// Opens a request waiting for the answers of `(node, job id)` pairs: its number, for
/// its frames, and what is told once every answer is in.
pub fn open_ask(links: &mut Links, asked: Vec<(String, String)>) -> (u64, oneshot::Receiver<()>) {
    links.last_ask = links.last_ask.wrapping_add(1).max(1);
    let (tx, rx) = oneshot::channel();
    let mut slots: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for (i, pair) in asked.into_iter().enumerate() {
        slots.entry(pair).or_default().push(i);
    }
    let missing = slots.values().map(Vec::len).sum();
    let pending = PendingAsk { answers: vec![None; missing], slots, missing, done: Some(tx) };
    links.asks.insert(links.last_ask, pending);
    (links.last_ask, rx)
}

/// Records a mom's answer to request `ask` for `job_id`; whether a request was waiting
/// for it (one that comes after its request gave up, or from another node, is not taken).
pub fn answer(links: &mut Links, ask: u64, node: &str, job_id: &str, code: u32) -> bool {
    let Some(pending) = links.asks.get_mut(&ask) else { return false };
    let Some(i) = pending.slots.get_mut(&(node.to_string(), job_id.to_string())).and_then(Vec::pop) else {
        return false;
    };
    if let Some(slot) = pending.answers.get_mut(i) {
        *slot = Some(code);
    }
    pending.missing = pending.missing.saturating_sub(1);
    if pending.missing == 0
        && let Some(done) = pending.done.take()
    {
        let _ = done.send(());
    }
    true
}

/// Closes request `ask`: each asked pair's answer in the order asked, `None` where none
/// came.
pub fn close_ask(links: &mut Links, ask: u64) -> Vec<Option<u32>> {
    links.asks.remove(&ask).map(|p| p.answers).unwrap_or_default()
}

/// Frames that may wait for one node's mom. They are queued under the state lock, where
/// nothing may wait, so past this a frame is dropped with an error in the log rather than
/// the server's memory growing for as long as a mom is away while users signal or delete
/// its jobs. Only a mom unreachable through tens of thousands of requests fills it; its
/// `NodeStatus` at reconnection then settles the jobs that ended meanwhile.
pub const MOM_QUEUE: usize = 65536;

/// Hands frames to the moms' link tasks (queued while a link is down).
pub fn send_frames(links: &mut Links, frames: MomFrames) {
    for (node, frame) in frames {
        match links.moms.get(&node) {
            Some(tx) => {
                if let Err(mpsc::error::TrySendError::Full(frame)) = tx.try_send(frame) {
                    tracing::error!(
                        object_type = "Node",
                        object_name = node.as_str(),
                        "{MOM_QUEUE} frames already wait for this node's mom: dropped {}",
                        match frame {
                            ToMom::RunJob { launch } => format!("the start of {}", launch.job_id),
                            ToMom::SignalJob { job_id, .. } => format!("a signal to {job_id}"),
                            ToMom::KillJob { job_id, .. } => format!("the kill of {job_id}"),
                            ToMom::ForgetJob { job_id } => format!("the forget of {job_id}"),
                            ToMom::ModifyJob { job_id, .. } => format!("the new limits of {job_id}"),
                            ToMom::Ping => "a ping".to_string(),
                        }
                    );
                }
            }
            None => tracing::warn!(object_type = "Node", object_name = node.as_str(), "no link to this node's mom"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_fill_their_items_and_wake_the_request_once_all_are_in() {
        let mut links = Links::default();
        let pair = |n: &str, j: &str| (n.to_string(), j.to_string());
        // The same job asked twice (two ranges naming it) is two items.
        let (ask, mut done) = open_ask(&mut links, vec![pair("n1", "1.s"), pair("n2", "2.s"), pair("n1", "1.s")]);
        assert!(answer(&mut links, ask, "n1", "1.s", 0));
        assert!(!answer(&mut links, ask, "n3", "1.s", 0), "another node's answer is not taken");
        assert!(answer(&mut links, ask, "n1", "1.s", 15001));
        assert!(done.try_recv().is_err(), "one item still waits");
        assert!(!answer(&mut links, ask, "n1", "1.s", 0), "no third item");
        assert!(answer(&mut links, ask, "n2", "2.s", 0));
        assert!(done.try_recv().is_ok());
        let mut codes = close_ask(&mut links, ask);
        codes.sort();
        assert_eq!(codes, vec![Some(0), Some(0), Some(15001)]);
        assert!(!answer(&mut links, ask, "n2", "2.s", 0), "a late answer is not taken");
        // Unanswered items come back empty.
        let (ask, _) = open_ask(&mut links, vec![pair("n1", "1.s")]);
        assert_eq!(close_ask(&mut links, ask), vec![None]);
    }
}
