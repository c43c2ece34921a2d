//! The live links: the scheduler's change stream, each node's mom frame queue, and the
//! `qrun` requests waiting for the scheduler. They sit beside the state under its lock (see
//! `server::Shared`), not in it: handlers get the state alone, so they cannot send.

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
