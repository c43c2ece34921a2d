//! The link between pbs_server and pbs_sched: the scheduler's mirror of the cluster (a
//! snapshot, then changes) and its batched decisions.
//!
//! The scheduler connects like any daemon ([`crate::Hello`] with [`crate::Role::Scheduler`],
//! over the Unix socket as root or over TCP with the cluster key). After the Welcome the
//! connection carries [`ToSched`] frames from the server and [`FromSched`] frames from the
//! scheduler. The server first sends [`ToSched::Snapshot`], then [`ToSched::Changes`] as
//! jobs, nodes, queues and the server change. Each change is the object's whole new
//! scheduling view (an upsert) or its removal, so applying them in order keeps the mirror
//! equal to the server's state; the scheduler never re-reads everything.
//!
//! A `Changes` frame with `cycle = true` asks for a scheduling cycle (a job was queued or
//! ended, a node or an attribute that matters changed). The scheduler also cycles every
//! `scheduler_iteration` seconds, and never while the server's `scheduling` is False.
//!
//! A cycle's outcome goes back in one [`FromSched::Decisions`] frame. The server applies it,
//! sends the `Changes` it caused, then [`ToSched::DecisionsApplied`]; so once the scheduler
//! has that reply its mirror already reflects its own decisions, and it starts no new cycle
//! before.

use serde::{Deserialize, Serialize};

use crate::messages::{Attr, IdError};

/// A job as the scheduler sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedJob {
    /// Full id (`12.server`, `12[].server`, `12[3].server`).
    pub id: String,
    /// Sequence number: ties in priority are broken by it (submission order).
    pub seq: u64,
    /// The queue.
    pub queue: String,
    /// `job_state` letter (`Q`, `R`, `S`, `H`, `W`, `B`...).
    pub state: char,
    /// `substate`.
    pub substate: u16,
    /// `Priority`.
    pub priority: i64,
    /// `qtime`, seconds since the epoch.
    pub qtime: i64,
    /// `etime`, when it became eligible (0 if not).
    pub etime: i64,
    /// `stime` of a running job (0 otherwise).
    pub stime: i64,
    /// `euser`.
    pub owner: String,
    /// `egroup`.
    pub group: String,
    /// `Resource_List` as (resource, value) pairs, values in canonical text.
    pub resources: Vec<(String, String)>,
    /// The select statement after `default_chunk` expansion (`schedselect`).
    pub select: String,
    /// `Resource_List.place` (`pack` when unset).
    pub place: String,
    /// `exec_vnode` of a running or suspended job.
    pub exec_vnode: Option<String>,
    /// The current `comment`, so the scheduler sends only comments that change.
    pub comment: Option<String>,
    /// Other attributes the policy reads (`max_run_subjobs`, `array_indices_remaining`,
    /// `estimated.*`, `resources_used.walltime`...), as `(full name, value)`.
    pub attrs: Vec<Attr>,
}

/// A node as the scheduler sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedNode {
    /// Node (vnode) name.
    pub name: String,
    /// `state`, comma-separated as pbsnodes shows it (`free`, `job-busy`, `offline`,
    /// `down`, `state-unknown`...).
    pub state: String,
    /// `resources_available` pairs.
    pub resources_available: Vec<(String, String)>,
    /// `resources_assigned` pairs (running jobs, reckoned by the server).
    pub resources_assigned: Vec<(String, String)>,
    /// `sharing` (`default_shared`, `default_excl`, `ignore_excl`, `force_excl`...).
    pub sharing: String,
    /// `queue`: the only queue whose jobs may run here, if set.
    pub queue: Option<String>,
    /// `priority`.
    pub priority: i64,
    /// Ids of the jobs running here (from `jobs`), each once.
    pub jobs: Vec<String>,
    /// True when a job holds the node exclusively (`place=excl` or `exclhost`).
    pub exclusive: bool,
}

/// A queue as the scheduler sees it: name plus every attribute, as `qstat -Qf` shows them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedQueue {
    /// Queue name.
    pub name: String,
    /// Its attributes (`queue_type`, `Priority`, `enabled`, `started`, `max_run`,
    /// `max_running`, `resources_available.*`, `backfill_depth`...).
    pub attrs: Vec<Attr>,
}

/// The whole mirror at connect time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// The server name (job id suffix).
    pub server_name: String,
    /// Server attributes (`scheduling`, `scheduler_iteration`, `backfill_depth`,
    /// `max_running`, `max_run`, `resources_available.*`...).
    pub server: Vec<Attr>,
    /// The default scheduler object's attributes (`scheduling`, `scheduler_iteration`,
    /// `preempt_*`, `attr_update_period`...).
    pub sched: Vec<Attr>,
    /// Queues.
    pub queues: Vec<SchedQueue>,
    /// Nodes.
    pub nodes: Vec<SchedNode>,
    /// Jobs that are not finished: queued, held, waiting, running, suspended, arrays.
    pub jobs: Vec<SchedJob>,
}

/// One change to the mirror.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum SchedChange {
    /// A job appeared or changed: its whole new view.
    Job {
        /// The job.
        job: Box<SchedJob>,
    },
    /// A job finished or was deleted: forget it.
    JobGone {
        /// Full id.
        id: String,
    },
    /// A node appeared or changed.
    Node {
        /// The node.
        node: Box<SchedNode>,
    },
    /// A node was deleted.
    NodeGone {
        /// Name.
        name: String,
    },
    /// A queue appeared or changed.
    Queue {
        /// The queue.
        queue: SchedQueue,
    },
    /// A queue was deleted.
    QueueGone {
        /// Name.
        name: String,
    },
    /// Server attributes changed: the whole new list.
    Server {
        /// Attributes.
        attrs: Vec<Attr>,
    },
    /// The default scheduler object's attributes changed: the whole new list.
    Sched {
        /// Attributes.
        attrs: Vec<Attr>,
    },
}

/// A frame from the server to the scheduler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum ToSched {
    /// The whole mirror; first frame after the Welcome.
    Snapshot {
        /// The state.
        snapshot: Box<Snapshot>,
    },
    /// Changes, in order; `cycle` asks for a scheduling cycle.
    Changes {
        /// The changes.
        changes: Vec<SchedChange>,
        /// Something happened that may let a job run.
        cycle: bool,
    },
    /// `qrun JOB` without `-H`: place this one job now, ignoring policy limits
    /// (`max_run`, `max_run_subjobs`, strict ordering), and answer with a `Decisions`
    /// frame carrying the same `qrun` number, with either a run or a comment for it.
    RunNow {
        /// Correlates the answer.
        qrun: u64,
        /// Full job id (a subjob id for arrays).
        job_id: String,
    },
    /// The outcome of a `Decisions` frame; all `Changes` it caused were sent before this.
    DecisionsApplied {
        /// The `cycle` number of the decisions.
        cycle: u64,
        /// Jobs whose run or update failed (the job was deleted meanwhile, the node went
        /// down...).
        errors: Vec<IdError>,
    },
}

/// Run a job now on these vnodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDecision {
    /// Full job id (a subjob id `12[3].server` runs that subjob of an array).
    pub job_id: String,
    /// Where: `(n1:ncpus=2:mem=1gb)+(n2:ncpus=2)`, one parenthesised group per chunk.
    pub exec_vnode: String,
}

/// Attribute updates for one job (comment, `estimated.*`...), applied without changing
/// the job's `mtime`, as OpenPBS's ModifyJob_Async.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobUpdate {
    /// Full job id.
    pub job_id: String,
    /// `(full name, value)`; an empty value unsets the attribute.
    pub attrs: Vec<Attr>,
}

/// A frame from the scheduler to the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum FromSched {
    /// Everything one cycle decided, in one frame.
    Decisions {
        /// The scheduler's cycle counter, echoed in `DecisionsApplied`.
        cycle: u64,
        /// Set when this answers a [`ToSched::RunNow`].
        qrun: Option<u64>,
        /// Jobs to start, in order.
        run: Vec<RunDecision>,
        /// Attribute updates (comments first of all).
        updates: Vec<JobUpdate>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_round_trip() {
        let frame = FromSched::Decisions {
            cycle: 7,
            qrun: None,
            run: vec![RunDecision { job_id: "1.s".into(), exec_vnode: "(n1:ncpus=1)".into() }],
            updates: vec![JobUpdate {
                job_id: "2.s".into(),
                attrs: vec![Attr::new("comment", "Not Running: Insufficient amount of resource: ncpus")],
            }],
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(serde_json::from_str::<FromSched>(&text).unwrap(), frame);
        assert!(serde_json::from_str::<ToSched>(r#"{"kind":"Bogus"}"#).is_err());
    }
}
