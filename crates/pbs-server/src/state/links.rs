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
    /// Each (node, job id) asked, with the answer once it came.
    answers: Vec<(String, String, Option<u32>)>,
    /// Told once every answer is in.
    done: Option<oneshot::Sender<()>>,
}

/// Opens a request waiting for the answers of `(node, job id)` pairs: its number, for
/// its frames, and what is told once every answer is in.
pub fn open_ask(links: &mut Links, asked: Vec<(String, String)>) -> (u64, oneshot::Receiver<()>) {
    links.last_ask = links.last_ask.wrapping_add(1).max(1);
    let (tx, rx) = oneshot::channel();
    let answers = asked.into_iter().map(|(node, job)| (node, job, None)).collect();
    links.asks.insert(links.last_ask, PendingAsk { answers, done: Some(tx) });
    (links.last_ask, rx)
}

/// Records a mom's answer to request `ask` for `job_id`; whether a request was waiting
/// for it (one that comes after its request gave up, or from another node, is not taken).
pub fn answer(links: &mut Links, ask: u64, node: &str, job_id: &str, code: u32) -> bool {
    let Some(pending) = links.asks.get_mut(&ask) else { return false };
    let Some(slot) = pending.answers.iter_mut().find(|(n, j, got)| n == node && j == job_id && got.is_none()) else {
        return false;
    };
    slot.2 = Some(code);
    if pending.answers.iter().all(|(_, _, got)| got.is_some())
        && let Some(done) = pending.done.take()
    {
        let _ = done.send(());
    }
    true
}

/// Closes request `ask`: each asked pair's answer in the order asked, `None` where none
/// came.
pub fn close_ask(links: &mut Links, ask: u64) -> Vec<Option<u32>> {
    links.asks.remove(&ask).map(|p| p.answers.into_iter().map(|(_, _, got)| got).collect()).unwrap_or_default()
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
