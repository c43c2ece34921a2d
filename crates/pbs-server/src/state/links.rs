//! The live links: the scheduler's change stream, each node's mom frame queue, and the
//! requests waiting for answers from moms or the scheduler. They sit beside the state
//! under its lock (see `server::Shared`), not in it: handlers get the state alone, so they
//! cannot send.

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
    /// Requests waiting for answers from moms or the scheduler, by the number their
    /// frames carry.
    pub asks: HashMap<u64, PendingAsk>,
    /// The last number given to a waiting request (0 is never one).
    pub last_ask: u64,
    /// Jobs whose end a waiting request takes as its answer (a preemption's requeue or
    /// delete), by full id: the request's number.
    pub ends: HashMap<String, u64>,
}

/// Who is asked one item of a waiting request, and about which job.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Asked {
    /// A node's mom (qsig's signals, later preemption's suspends, runjob hooks).
    Mom {
        /// The node.
        node: String,
        /// The job.
        job_id: String,
    },
    /// The scheduler (qrun's placement).
    Scheduler {
        /// The job.
        job_id: String,
    },
}

/// What one item of a waiting request was answered.
pub type Outcome = Result<(), ReqError>;

/// A request that sent frames to moms or the scheduler and waits until each has answered,
/// or its deadline passed (the waiting side then takes what came: an item without an
/// answer fails on its own, never the whole request).
#[derive(Debug)]
pub struct PendingAsk {
    /// Each item's answer once it came, in the order asked.
    answers: Vec<Option<Outcome>>,
    /// Where each asked item is among `answers` (a job a request names twice is asked
    /// twice), so an answer costs a lookup, not a walk of the request.
    slots: HashMap<Asked, Vec<usize>>,
    /// Items still without an answer.
    missing: usize,
    /// Told once every answer is in.
    done: Option<oneshot::Sender<()>>,
}

/// Opens a request waiting for the answers of `asked`: its number, for its frames, and
/// what is told once every answer is in.
pub fn open_ask(links: &mut Links, asked: Vec<Asked>) -> (u64, oneshot::Receiver<()>) {
    links.last_ask = links.last_ask.wrapping_add(1).max(1);
    let (tx, rx) = oneshot::channel();
    let mut slots: HashMap<Asked, Vec<usize>> = HashMap::new();
    for (i, item) in asked.into_iter().enumerate() {
        slots.entry(item).or_default().push(i);
    }
    let missing = slots.values().map(Vec::len).sum();
    let pending = PendingAsk { answers: vec![None; missing], slots, missing, done: Some(tx) };
    links.asks.insert(links.last_ask, pending);
    (links.last_ask, rx)
}

/// Records the answer to item `asked` of request `ask`; whether a request was waiting for
/// it (one that comes after its request gave up, or from another node, is not taken).
pub fn answer(links: &mut Links, ask: u64, asked: &Asked, outcome: Outcome) -> bool {
    let Some(pending) = links.asks.get_mut(&ask) else { return false };
    let Some(i) = pending.slots.get_mut(asked).and_then(Vec::pop) else { return false };
    if let Some(slot) = pending.answers.get_mut(i) {
        *slot = Some(outcome);
    }
    pending.missing = pending.missing.saturating_sub(1);
    if pending.missing == 0
        && let Some(done) = pending.done.take()
    {
        let _ = done.send(());
    }
    true
}

/// The items of request `ask` still waiting for the scheduler (what a `qrun` asked it).
pub fn asked_of_scheduler(links: &Links, ask: u64) -> Vec<Asked> {
    let Some(pending) = links.asks.get(&ask) else { return Vec::new() };
    pending
        .slots
        .iter()
        .filter(|(asked, waiting)| matches!(asked, Asked::Scheduler { .. }) && !waiting.is_empty())
        .map(|(asked, _)| asked.clone())
        .collect()
}

/// Answers every item still waiting for the scheduler with `outcome` (its link is gone).
pub fn answer_all_of_scheduler(links: &mut Links, outcome: &Outcome) {
    let asks: Vec<u64> = links.asks.keys().copied().collect();
    for ask in asks {
        for asked in asked_of_scheduler(links, ask) {
            while answer(links, ask, &asked, outcome.clone()) {}
        }
    }
}

/// Closes request `ask`: each asked item's answer in the order asked, `None` where none
/// came.
pub fn close_ask(links: &mut Links, ask: u64) -> Vec<Option<Outcome>> {
    if !links.ends.is_empty() {
        links.ends.retain(|_, waiting| *waiting != ask);
    }
    links.asks.remove(&ask).map(|p| p.answers).unwrap_or_default()
}

/// Closes request `ask` and gives each of its `items` items' PBSE code, in the order
/// asked: 0 where the mom did it, the mom's code where it refused, PBSE_NORELYMOM where no
/// answer came in time (that item fails on its own).
pub fn close_ask_codes(links: &mut Links, ask: u64, items: usize) -> Vec<u32> {
    let mut answers = close_ask(links, ask).into_iter();
    (0..items)
        .map(|_| match answers.next().flatten() {
            Some(Ok(())) => 0,
            Some(Err(e)) => e.code.0,
            None => pbs_core::Pbse::NORELYMOM.0,
        })
        .collect()
}

/// Makes the end of `job_id` (reported by its mother superior) the answer to its item of
/// request `ask`.
pub fn await_end(links: &mut Links, job_id: &str, ask: u64) {
    links.ends.insert(job_id.to_string(), ask);
}

/// `node`'s mom reported the end of `job_id`: a request waiting for it hears.
pub fn job_ended(links: &mut Links, node: &str, job_id: &str) {
    if let Some(ask) = links.ends.remove(job_id) {
        let asked = Asked::Mom { node: node.to_string(), job_id: job_id.to_string() };
        answer(links, ask, &asked, Ok(()));
    }
}

/// What a mom's numeric answer (a PBSE code, 0 for success) means to its item.
pub fn mom_outcome(code: u32) -> Outcome {
    if code == 0 { Ok(()) } else { Err(ReqError::new(pbs_core::Pbse(code))) }
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
                            ToMom::SignalJobs { job_ids, .. } => format!("a signal to {} jobs", job_ids.len()),
                            ToMom::KillJob { job_id, .. } => format!("the kill of {job_id}"),
                            ToMom::ForgetJob { job_id } => format!("the forget of {job_id}"),
                            ToMom::ModifyJob { job_id, .. } => format!("the new limits of {job_id}"),
                            ToMom::Ping => "a ping".to_string(),
                            ToMom::Hooks { .. } => "the execution hooks".to_string(),
                            ToMom::Shutdown => "a shutdown".to_string(),
                            ToMom::MessageJob { job_id, .. } => format!("a message to {job_id}"),
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
        let mom = |n: &str, j: &str| Asked::Mom { node: n.to_string(), job_id: j.to_string() };
        let code = |o: &Option<Outcome>| o.as_ref().map(|o| o.as_ref().map_or_else(|e| e.code.0, |()| 0));
        // The same job asked twice (two ranges naming it) is two items.
        let (ask, mut done) = open_ask(&mut links, vec![mom("n1", "1.s"), mom("n2", "2.s"), mom("n1", "1.s")]);
        assert!(answer(&mut links, ask, &mom("n1", "1.s"), mom_outcome(0)));
        assert!(!answer(&mut links, ask, &mom("n3", "1.s"), mom_outcome(0)), "another node's answer is not taken");
        assert!(answer(&mut links, ask, &mom("n1", "1.s"), mom_outcome(15001)));
        assert!(done.try_recv().is_err(), "one item still waits");
        assert!(!answer(&mut links, ask, &mom("n1", "1.s"), mom_outcome(0)), "no third item");
        assert!(answer(&mut links, ask, &mom("n2", "2.s"), mom_outcome(0)));
        assert!(done.try_recv().is_ok());
        let mut codes: Vec<_> = close_ask(&mut links, ask).iter().map(code).collect();
        codes.sort();
        assert_eq!(codes, vec![Some(0), Some(0), Some(15001)]);
        assert!(!answer(&mut links, ask, &mom("n2", "2.s"), mom_outcome(0)), "a late answer is not taken");
        // Unanswered items come back empty.
        let (ask, _) = open_ask(&mut links, vec![mom("n1", "1.s")]);
        assert_eq!(close_ask(&mut links, ask).iter().map(code).collect::<Vec<_>>(), vec![None]);
    }

    #[test]
    fn a_scheduler_gone_answers_its_items_and_leaves_the_moms_items_waiting() {
        let mut links = Links::default();
        let qrun = Asked::Scheduler { job_id: "1.s".into() };
        let signal = Asked::Mom { node: "n1".into(), job_id: "2.s".into() };
        let (first, mut first_done) = open_ask(&mut links, vec![qrun.clone()]);
        let (second, mut second_done) = open_ask(&mut links, vec![signal]);
        assert_eq!(asked_of_scheduler(&links, first), vec![qrun]);
        answer_all_of_scheduler(&mut links, &Err(ReqError::new(pbs_core::Pbse::NOSCHEDULER)));
        assert!(first_done.try_recv().is_ok());
        assert!(second_done.try_recv().is_err());
        let answers = close_ask(&mut links, first);
        assert!(matches!(answers.as_slice(), [Some(Err(e))] if e.code == pbs_core::Pbse::NOSCHEDULER));
        assert_eq!(close_ask(&mut links, second).len(), 1);
    }
}
