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
    /// `project`, `estimated.*`, `resources_used.walltime`...), as `(full name, value)`.
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
    /// Every resource definition, built-in and custom, as `(name, type)` with the type as
    /// qmgr names it (`long`, `float`, `size`, `duration`, `boolean`, `string`,
    /// `string_array`): values compare as their resource's type says.
    #[serde(default)]
    pub resources: Vec<(String, String)>,
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
    /// A job left the scheduler's sight without a run of its own ending (deleted while
    /// queued, or gone in a way the server's life of the job did not record as an end):
    /// forget it.
    JobGone {
        /// Full id.
        id: String,
    },
    /// A job's run ended (the `Ended` step of its life on the server): forget it. The end
    /// as the server recorded it, so what charges usage (fairshare) reads it here rather
    /// than guessing it from a view that went missing.
    JobEnded {
        /// Full id.
        id: String,
        /// Its exit status (none: ended without one, as `qdel -W force`).
        exit: Option<i32>,
        /// Whether it ran (its mom confirmed the start).
        ran: bool,
        /// When it ended (the server's clock).
        at: i64,
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
    /// A resource was defined, removed or given another type (qmgr): every definition,
    /// as [`Snapshot::resources`]. Sent before any change that could carry a value of it.
    Resources {
        /// `(name, type)` pairs.
        defs: Vec<(String, String)>,
    },
}

/// A frame from the server to the scheduler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum ToSched {
    /// The whole mirror, first after the Welcome, in parts of at most about
    /// [`PART_BUDGET`] bytes: every part but the last has `more`; the scheduler joins them
    /// ([`Snapshot::absorb`]) and uses the mirror only once the last has come.
    Snapshot {
        /// One part of the state.
        snapshot: Box<Snapshot>,
        /// Parts follow.
        #[serde(default)]
        more: bool,
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
    /// The answer to a [`FromSched::PreemptJobs`]: every job with how it was preempted;
    /// all `Changes` the preemption caused were sent before this.
    Preempted {
        /// The number the request carried.
        number: u64,
        /// One entry per id, in the order asked.
        results: Vec<crate::messages::Preempted>,
    },
    /// The outcome of a `Decisions` frame; all `Changes` it caused were sent before this.
    DecisionsApplied {
        /// The `cycle` number of the decisions.
        cycle: u64,
        /// Jobs whose run or update failed (the job was deleted meanwhile, the node went
        /// down...).
        errors: Vec<IdError>,
    },
    /// `qterm -s`: the scheduler stops (exits) instead of reconnecting.
    Quit,
}

/// Run a job now on these vnodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDecision {
    /// Full job id (a subjob id `12[3].server` runs that subjob of an array).
    pub job_id: String,
    /// Where: `(n1:ncpus=2:mem=1gb)+(n2:ncpus=2)`, one parenthesised group per chunk.
    pub exec_vnode: String,
    /// For a job with OR-ed alternatives, the one (from 0) the exec_vnode places: it
    /// becomes the job's `Resource_List` (docs/job-sets.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative: Option<u32>,
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

/// One thing a cycle asks the server to do. The server carries out a frame's actions in
/// the order given, so an action may rely on those before it.
///
/// Preempting a running job and confirming a reservation are to become actions of their
/// own, ordered among the others, rather than new lists beside them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum Action {
    /// Start a job.
    Run(RunDecision),
    /// Set attributes of a job.
    Update(JobUpdate),
    /// Resume a job the scheduler suspended (preempted) on the vnodes it holds.
    Resume {
        /// Full job id.
        job_id: String,
    },
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
        /// What to do, in order. pbs_sched puts every update before every run: a run
        /// writes the job's own comment (`Job run at ...`), which an update from the same
        /// cycle must not overwrite, and a shrink-to-fit walltime must be set while the
        /// job is still queued.
        actions: Vec<Action>,
    },
    /// Preempt these running jobs, so that a job of higher priority can run (OpenPBS's
    /// PreemptJobs, one per cycle at most): the server tries the `preempt_order` methods
    /// on each, asking all their moms at once, and answers with [`ToSched::Preempted`].
    PreemptJobs {
        /// Echoed in the answer.
        number: u64,
        /// Full job ids.
        ids: Vec<String>,
    },
}

/// Size a part of a snapshot or of a `Changes` list is kept within, in serialized bytes:
/// far below the 16 MiB a frame may have, so a huge state or a burst of changes goes as
/// many frames instead of one that the link cannot carry. An object larger than this goes
/// alone in its part.
pub const PART_BUDGET: usize = 1024 * 1024;

/// Serialized size of `value`, without keeping the bytes.
fn json_len<T: Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and these types always serialize.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Splits `items` into runs whose serialized sizes (plus a comma each) add up to at most
/// `budget`; an item over the budget makes a run of its own.
fn split_by_size<T: Serialize>(items: Vec<T>, budget: usize) -> Vec<Vec<T>> {
    let mut runs = Vec::new();
    let mut current = Vec::new();
    let mut size = 0;
    for item in items {
        let len = json_len(&item) + 1;
        if !current.is_empty() && size + len > budget {
            runs.push(std::mem::take(&mut current));
            size = 0;
        }
        size += len;
        current.push(item);
    }
    if !current.is_empty() || runs.is_empty() {
        runs.push(current);
    }
    runs
}

impl Snapshot {
    /// Splits the snapshot into parts of about `budget` bytes each: the first carries the
    /// server name, the server and scheduler attributes and the resource definitions, then
    /// come queues, nodes and jobs, each part holding whole objects. Joining them in order with
    /// [`Snapshot::absorb`] gives back the snapshot.
    pub fn into_parts(self, budget: usize) -> Vec<Snapshot> {
        let Snapshot { server_name, server, sched, resources, queues, nodes, jobs } = self;
        let mut parts = vec![Snapshot { server_name, server, sched, resources, ..Snapshot::default() }];
        let mut room = budget.saturating_sub(json_len(&parts[0]));
        // Each object goes into the last part while it fits, else starts a new one.
        fn place<T: Serialize>(
            parts: &mut Vec<Snapshot>,
            room: &mut usize,
            budget: usize,
            items: Vec<T>,
            field: fn(&mut Snapshot) -> &mut Vec<T>,
        ) {
            for item in items {
                let len = json_len(&item) + 1;
                let last = parts.len() - 1;
                if len > *room && holds_objects(&parts[last]) {
                    parts.push(Snapshot::default());
                    *room = budget;
                }
                *room = room.saturating_sub(len);
                let last = parts.len() - 1;
                field(&mut parts[last]).push(item);
            }
        }
        fn holds_objects(part: &Snapshot) -> bool {
            !part.queues.is_empty() || !part.nodes.is_empty() || !part.jobs.is_empty()
        }
        place(&mut parts, &mut room, budget, queues, |p| &mut p.queues);
        place(&mut parts, &mut room, budget, nodes, |p| &mut p.nodes);
        place(&mut parts, &mut room, budget, jobs, |p| &mut p.jobs);
        parts
    }

    /// Adds a later part (see [`Snapshot::into_parts`]).
    pub fn absorb(&mut self, part: Snapshot) {
        let Snapshot { server_name, server, sched, resources, queues, nodes, jobs } = part;
        if self.server_name.is_empty() {
            self.server_name = server_name;
        }
        self.server.extend(server);
        self.sched.extend(sched);
        self.resources.extend(resources);
        self.queues.extend(queues);
        self.nodes.extend(nodes);
        self.jobs.extend(jobs);
    }
}

impl ToSched {
    /// This frame as frames of about `budget` bytes: a snapshot in parts, a long change
    /// list in several `Changes` (only the last asks for a cycle, so no cycle runs on half
    /// of them); anything else as it is.
    pub fn into_parts(self, budget: usize) -> Vec<ToSched> {
        match self {
            ToSched::Snapshot { snapshot, more: _ } => {
                let parts = snapshot.into_parts(budget);
                let n = parts.len();
                parts
                    .into_iter()
                    .enumerate()
                    .map(|(i, part)| ToSched::Snapshot { snapshot: Box::new(part), more: i + 1 < n })
                    .collect()
            }
            ToSched::Changes { changes, cycle } => {
                let runs = split_by_size(changes, budget);
                let n = runs.len();
                runs.into_iter()
                    .enumerate()
                    .map(|(i, changes)| ToSched::Changes { changes, cycle: cycle && i + 1 == n })
                    .collect()
            }
            other => vec![other],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_round_trip() {
        let frame = FromSched::Decisions {
            cycle: 7,
            qrun: None,
            actions: vec![
                Action::Update(JobUpdate {
                    job_id: "2.s".into(),
                    attrs: vec![Attr::new("comment", "Not Running: Insufficient amount of resource: ncpus")],
                }),
                Action::Run(RunDecision { job_id: "1.s".into(), exec_vnode: "(n1:ncpus=1)".into(), alternative: None }),
            ],
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(serde_json::from_str::<FromSched>(&text).unwrap(), frame);
        assert!(serde_json::from_str::<ToSched>(r#"{"kind":"Bogus"}"#).is_err());
    }

    #[test]
    fn actions_are_tagged_and_keep_their_order() {
        let text = r#"{"kind":"Decisions","cycle":1,"qrun":null,"actions":[
            {"action":"Run","job_id":"1.s","exec_vnode":"(n1:ncpus=1)"},
            {"action":"Update","job_id":"1.s","attrs":[["comment","x"]]},
            {"action":"Run","job_id":"2.s","exec_vnode":"(n2:ncpus=1)"}]}"#;
        let Ok(FromSched::Decisions { actions, .. }) = serde_json::from_str::<FromSched>(text) else {
            panic!("a Decisions frame")
        };
        let order: Vec<(&str, &str)> = actions
            .iter()
            .map(|a| match a {
                Action::Run(r) => ("run", r.job_id.as_str()),
                Action::Update(u) => ("update", u.job_id.as_str()),
                Action::Resume { job_id } => ("resume", job_id.as_str()),
            })
            .collect();
        assert_eq!(order, vec![("run", "1.s"), ("update", "1.s"), ("run", "2.s")]);
        for bad in [
            r#"{"action":"Preempt","job_id":"1.s"}"#,
            r#"{"action":"Run","job_id":"1.s","exec_vnode":"(n1:ncpus=1)","attrs":[]}"#,
            r#"{"job_id":"1.s","exec_vnode":"(n1:ncpus=1)"}"#,
        ] {
            assert!(serde_json::from_str::<Action>(bad).is_err(), "{bad}");
        }
        // The frame's old shape is refused, not read as an empty list.
        assert!(
            serde_json::from_str::<FromSched>(r#"{"kind":"Decisions","cycle":1,"qrun":null,"run":[],"updates":[]}"#)
                .is_err()
        );
    }

    fn job(i: u64, comment_len: usize) -> SchedJob {
        SchedJob {
            id: format!("{i}.s"),
            seq: i,
            queue: "workq".into(),
            state: 'Q',
            comment: Some("c".repeat(comment_len)),
            ..SchedJob::default()
        }
    }

    #[test]
    fn a_big_snapshot_goes_in_parts_within_the_budget_and_joins_back() {
        let budget = 4096;
        let snapshot = Snapshot {
            server_name: "s".into(),
            server: vec![Attr::new("scheduling", "True")],
            sched: vec![Attr::new("scheduler_iteration", "600")],
            resources: vec![("ncpus".into(), "long".into())],
            queues: vec![SchedQueue { name: "workq".into(), attrs: vec![Attr::new("enabled", "True")] }],
            nodes: (0..50).map(|i| SchedNode { name: format!("n{i}"), ..SchedNode::default() }).collect(),
            // Many small jobs, and one far larger than a part.
            jobs: (0..2000).map(|i| job(i, if i == 777 { 3 * budget } else { 10 })).collect(),
        };
        let frames = ToSched::Snapshot { snapshot: Box::new(snapshot.clone()), more: false }.into_parts(budget);
        assert!(frames.len() > 10, "{} parts", frames.len());
        let mut joined: Option<Snapshot> = None;
        for (i, frame) in frames.iter().enumerate() {
            let ToSched::Snapshot { snapshot: part, more } = frame else { panic!("{frame:?}") };
            assert_eq!(*more, i + 1 < frames.len());
            let len = serde_json::to_vec(frame).unwrap().len();
            let alone = part.jobs.len() == 1 && part.jobs[0].seq == 777;
            assert!(len <= budget + 256 || alone, "part {i} is {len} bytes");
            match joined.as_mut() {
                None => joined = Some((**part).clone()),
                Some(all) => all.absorb((**part).clone()),
            }
        }
        assert_eq!(joined, Some(snapshot));
    }

    #[test]
    fn a_long_change_list_goes_in_parts_and_only_the_last_asks_for_a_cycle() {
        let budget = 4096;
        let changes: Vec<SchedChange> = (0..1000)
            .map(|i| {
                if i % 2 == 0 {
                    SchedChange::Job { job: Box::new(job(i, 20)) }
                } else {
                    SchedChange::JobGone { id: format!("{i}.s") }
                }
            })
            .collect();
        let frames = ToSched::Changes { changes: changes.clone(), cycle: true }.into_parts(budget);
        assert!(frames.len() > 10, "{} parts", frames.len());
        let mut joined = Vec::new();
        for (i, frame) in frames.into_iter().enumerate() {
            assert!(serde_json::to_vec(&frame).unwrap().len() <= budget + 256);
            let ToSched::Changes { changes, cycle } = frame else { panic!() };
            assert_eq!(cycle, joined.len() + changes.len() == 1000, "part {i}");
            joined.extend(changes);
        }
        assert_eq!(joined, changes);
        // Small frames and other kinds pass as they are.
        let small = ToSched::Changes { changes: Vec::new(), cycle: true };
        assert_eq!(small.clone().into_parts(budget), vec![small]);
        let run_now = ToSched::RunNow { qrun: 1, job_id: "1.s".into() };
        assert_eq!(run_now.clone().into_parts(budget), vec![run_now]);
    }
}
