//! The scheduler's copy of what the server knows: built from a [`Snapshot`], kept current
//! by [`SchedChange`]s, each applied in O(log n) (jobs and nodes live in slabs addressed
//! by id maps; queued jobs sit pre-sorted per queue; select/place are parsed once per
//! distinct request and shared; running-job counts and assigned sums are kept as jobs
//! change state). A cycle reads it without rebuilding anything.
//!
//! It also remembers what the scheduler itself sent and the server has not confirmed yet
//! (runs in flight, comments written), so a cycle never double-books a node or re-sends an
//! unchanged comment while the server's echo is still on its way.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use pbs_core::select::{Arrangement, Cmp, Place, Select, Sharing as PlaceSharing};
use pbs_core::sharing::NodeSharing;
use pbs_core::{ExecVnode, IndexSet, JobId};
use pbs_proto::Attr;
use pbs_proto::sched::{Action, SchedChange, SchedJob, SchedNode, SchedQueue, Snapshot};

use crate::condition::{Cond, NodeFilter};
use crate::config::SchedConfig;
use crate::limits::{Entity, OverSoft, RunCounts, RunLimits, Who, soft_standing};
use crate::resources::{Kind, ResId, ResourceTable, UNSET, add_amounts, amount_of, parse_amount, set_amount};

/// A node as the policy needs it.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) name: String,
    /// Arrival order: the tie-breaker after priority, as the server's node order is.
    pub(crate) seq: u64,
    pub(crate) priority: i64,
    pub(crate) state: String,
    /// In state `free` and not held exclusively (OpenPBS's `is_free`).
    pub(crate) free: bool,
    pub(crate) avail: Vec<i64>,
    pub(crate) assigned: Vec<i64>,
    /// Values of string resources (string arrays split at commas).
    pub(crate) strs: Vec<(ResId, Vec<String>)>,
    pub(crate) host: String,
    pub(crate) sharing: NodeSharing,
    pub(crate) queue: Option<String>,
    pub(crate) njobs: u32,
}

impl Node {
    pub(crate) fn order_key(&self) -> (Reverse<i64>, u64) {
        (Reverse(self.priority), self.seq)
    }

    pub(crate) fn str_values(&self, id: ResId) -> Option<&[String]> {
        self.strs.iter().find(|(r, _)| *r == id).map(|(_, v)| v.as_slice())
    }
}

/// A non-consumable value a chunk asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Wanted {
    Str(String),
    Bool(bool),
}

/// One `+`-section of a select: `count` chunks of these resources.
#[derive(Clone, Debug)]
pub(crate) struct ChunkReq {
    pub(crate) count: u32,
    /// Consumables checked on nodes (in the chunk's order, which exec_vnode keeps).
    pub(crate) cons: Vec<(ResId, i64)>,
    /// Non-consumables that must match.
    pub(crate) noncons: Vec<(ResId, Wanted)>,
    /// Conditions on non-consumables (`color!=green`), empty for most chunks.
    pub(crate) conds: Vec<Cond>,
}

/// A parsed request (select, place, job-wide resources), shared by every job asking for
/// exactly the same thing: the unit of OpenPBS's equivalence classes.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) chunks: Vec<ChunkReq>,
    /// Chunks and processes, held to what nodes have before any is placed.
    pub(crate) counts: pbs_core::capacity::Counts,
    pub(crate) arrangement: Arrangement,
    pub(crate) sharing: PlaceSharing,
    pub(crate) group: Option<ResId>,
    /// Sum over the select of each consumable (checked against all nodes at once).
    pub(crate) select_totals: Vec<(ResId, i64)>,
    /// Consumable `Resource_List` amounts (queue and server resource checks).
    pub(crate) job_wide: Vec<(ResId, i64)>,
    /// Why the request can never be placed, if it cannot be read.
    pub(crate) invalid: Option<String>,
    /// `nfilter`: the vnodes the job may be placed on, compiled once per request.
    pub(crate) filter: Option<Box<NodeFilter>>,
}

/// The views of a queued job's OR-ed alternatives (`pbs_core::orselect`): each with its
/// select, place and the `Resource_List` it would run with (job_wide from `sched_job_wide`,
/// which holds the defaults too, else `Resource_List.job_wide`). `None` for a plain job, or
/// one whose request does not read (the server refused such requests).
fn alternative_views(view: &SchedJob) -> Option<Vec<SchedJob>> {
    if !pbs_core::orselect::is_ored(&view.select) {
        return None;
    }
    let job_wide = view
        .attrs
        .iter()
        .find(|a| a.name() == "sched_job_wide")
        .map(|a| a.value())
        .or_else(|| view.resources.iter().find(|(n, _)| n == "job_wide").map(|(_, v)| v.as_str()));
    let or = pbs_core::orselect::OrSelect::parse(&view.select, job_wide).ok()?;
    (0..or.alternatives().len())
        .map(|k| {
            let resources = or.resource_list(k, view.resources.iter().map(|(n, v)| (n.as_str(), v.as_str())))?;
            let mut alternative = view.clone();
            alternative.select = or.alternatives()[k].select.to_string();
            alternative.place = resources.iter().find(|(n, _)| n == "place").map_or("free", |(_, v)| v).to_string();
            alternative.resources = resources;
            // The cycle compares and names the job's own comment: an alternative keeps none.
            alternative.comment = None;
            Some(alternative)
        })
        .collect()
}

/// Which part of an array a job is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ArrayRole {
    None,
    /// `12[]`: its queued subjobs are the indices in `remaining`, parsed once when the
    /// parent changes (kept as runs, never expanded). Boxed: every job carries its role,
    /// and a set inline would make each of them larger for the few that are arrays.
    Parent {
        remaining: Box<IndexSet>,
        max_run: Option<u64>,
    },
    /// `12[3]`.
    Sub {
        index: u64,
    },
}

/// Position of a queued job in its queue: priority (higher first), then `queue_rank`
/// (submission order unless qorder swapped it), then subjob index.
pub(crate) type OrderKey = (Reverse<i64>, u64, u64, u32);

/// A job as the policy needs it.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub(crate) view: SchedJob,
    pub(crate) user: u32,
    pub(crate) group: u32,
    /// `project`, interned: run limits count per project too.
    pub(crate) project: u32,
    pub(crate) request: u32,
    pub(crate) array: ArrayRole,
    /// The leader's sequence number of its job set (`job_set`), if it is in one.
    pub(crate) job_set: Option<u64>,
    /// Where it sits in its queue's order, when it is a candidate.
    pub(crate) key: Option<OrderKey>,
    /// A queued job with OR-ed selects: one job per alternative, in the user's order,
    /// each with that alternative's request and `Resource_List` (`alternative_views`).
    pub(crate) alternatives: Option<Box<[Job]>>,
    /// Which alternative this is, for a job of `alternatives`.
    pub(crate) alternative: Option<u32>,
    /// Its `exec_vnode`, parsed (present exactly when the view has one): boxed, as most
    /// jobs are queued and carry none.
    pub(crate) exec: Option<Box<ExecAllocs>>,
    /// A job suspended under `restrict_res_to_release_on_suspend`: what it gave back (the
    /// rest it still holds).
    pub(crate) released: Option<Box<Released>>,
}

/// What a suspension under `restrict_res_to_release_on_suspend` gave back: per vnode
/// (`resources_released`) and job-wide (`resource_released_list`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Released {
    pub(crate) allocs: Vec<Alloc>,
    pub(crate) job_wide: Vec<(ResId, i64)>,
}

impl Job {
    /// A plain job of `view`: no array, set, alternatives or placement.
    fn bare(view: SchedJob, (user, group, project): (u32, u32, u32), request: u32, key: Option<OrderKey>) -> Job {
        Job {
            view,
            user,
            group,
            project,
            request,
            array: ArrayRole::None,
            job_set: None,
            key,
            alternatives: None,
            alternative: None,
            exec: None,
            released: None,
        }
    }

    /// Whom it counts for in run limits.
    pub(crate) fn who(&self) -> Who {
        Who { user: self.user, group: self.group, project: self.project }
    }

    pub(crate) fn running(&self) -> bool {
        self.view.state == 'R'
    }

    /// Where its `exec_vnode` places it, on the vnodes the mirror knows; `None` when it has
    /// no `exec_vnode`, empty when that does not read.
    pub(crate) fn allocs(&self) -> Option<&[Alloc]> {
        self.exec.as_deref().map(|e| e.allocs.as_slice())
    }

    /// Whether part of its `exec_vnode` is on a vnode the mirror does not know.
    pub(crate) fn exec_unplaced(&self) -> bool {
        self.exec.as_ref().is_some_and(|e| !e.unplaced.is_empty())
    }

    /// The array (parent sequence number) this job counts against for
    /// `max_run_subjobs`: a subjob running or exiting. Suspended subjobs do not count.
    pub(crate) fn array_slot(&self) -> Option<u64> {
        match self.array {
            ArrayRole::Sub { .. } if matches!(self.view.state, 'R' | 'E') => Some(self.view.seq),
            _ => None,
        }
    }

    /// An array parent that has begun: the server marked it `B`, or one of its subjobs
    /// exists. The scheduler leaves such an array's comment (`Job Array Began at ...`)
    /// alone, as OpenPBS's `update_job_can_not_run` does.
    pub(crate) fn array_begun(&self, m: &Mirror) -> bool {
        matches!(self.array, ArrayRole::Parent { .. })
            && (self.view.state == 'B' || m.subjobs_present.contains_key(&self.view.seq))
    }
}

/// A queue's attributes, parsed.
#[derive(Clone, Debug, Default)]
pub(crate) struct QueueInfo {
    pub(crate) execution: bool,
    pub(crate) enabled: bool,
    pub(crate) started: bool,
    pub(crate) priority: i64,
    pub(crate) limits: RunLimits,
    /// `resources_available.*` of consumable resources.
    pub(crate) avail: Vec<(ResId, i64)>,
    /// `backfill_depth`: overrides the server's for this queue's jobs.
    pub(crate) backfill_depth: Option<u32>,
}

/// A queue: its attributes (once known), its queued jobs in order, and counts over its
/// running jobs.
#[derive(Clone, Debug, Default)]
pub(crate) struct QueueEntry {
    pub(crate) info: Option<QueueInfo>,
    pub(crate) queued: BTreeSet<OrderKey>,
    pub(crate) counts: RunCounts,
    /// Sum of the consumable `Resource_List` amounts of running jobs.
    pub(crate) assigned: Vec<i64>,
}

/// Server attributes the policy reads.
#[derive(Clone, Debug)]
pub(crate) struct ServerInfo {
    pub(crate) scheduling: bool,
    pub(crate) scheduler_iteration: Option<u64>,
    pub(crate) limits: RunLimits,
    pub(crate) avail: Vec<(ResId, i64)>,
    /// `backfill_depth` (OpenPBS default 1).
    pub(crate) backfill_depth: Option<u32>,
    /// `eligible_time_enable`: the cycle decides jobs' `accrue_type` (`accrue.rs`).
    pub(crate) eligible_time_enable: bool,
    /// `restrict_res_to_release_on_suspend`: the only resources a suspension gives back.
    pub(crate) release_on_suspend: Option<Vec<ResId>>,
}

/// Where a run the scheduler decided goes, as its cycle placed it: what the mirror books
/// while the server applies it, so the mirror never reads back the `exec_vnode` text it
/// wrote for the server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Booking {
    /// (node slot, consumables taken), one per chunk.
    pub(crate) allocs: Vec<(u32, Vec<(ResId, i64)>)>,
    /// The nodes the run holds exclusively (`pbs_core::sharing`, per node as placed).
    pub(crate) exclusive: Vec<u32>,
}

/// The consumables a chunk takes on its vnode.
pub(crate) type Taken = Vec<(ResId, i64)>;

/// Allocation of one chunk: the node and the consumables taken from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Alloc {
    pub(crate) node: u32,
    pub(crate) taken: Vec<(ResId, i64)>,
}

/// A job's `exec_vnode`, parsed once when the job's view arrives with a new one and kept
/// beside the text: what every cycle's readers (the calendar, resumption, preemption) give
/// back or book. Vnodes are kept by slot; a part on a vnode the mirror does not know is
/// kept by name until one of that name arrives, and a part on a vnode that goes is put
/// back under its name ([`Mirror::remove_node`]), so a slot reused by another node is
/// never booked for this job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExecAllocs {
    /// The parts on vnodes the mirror knows, in `exec_vnode`'s order (a vnode that arrives
    /// later goes last).
    pub(crate) allocs: Vec<Alloc>,
    /// The parts on vnodes it does not know: (vnode name, consumables taken).
    unplaced: Vec<(Box<str>, Taken)>,
}

/// A run the scheduler sent whose outcome the server has not confirmed yet.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    /// The Decisions frame it went in.
    pub(crate) frame: u64,
    /// Where it goes, as its cycle placed it.
    pub(crate) booking: Booking,
    pub(crate) queue: String,
    pub(crate) who: Who,
    pub(crate) job_wide: Vec<(ResId, i64)>,
    /// The array parent's sequence number, for a subjob.
    pub(crate) parent_seq: Option<u64>,
}

/// Names interned to small ids (users, groups, projects).
#[derive(Clone, Debug, Default)]
pub(crate) struct Interner {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Interner {
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map(String::as_str).unwrap_or("")
    }
}

/// The mirror of the server's scheduling state. Build it with [`Mirror::new`], keep it
/// current with [`Mirror::apply`], and hand it to [`crate::cycle`].
#[derive(Clone, Debug)]
pub struct Mirror {
    pub(crate) server_name: String,
    pub(crate) config: SchedConfig,
    pub(crate) res: ResourceTable,
    pub(crate) server: ServerInfo,
    pub(crate) sched_scheduling: Option<bool>,
    pub(crate) sched_iteration: Option<u64>,
    /// The scheduler object's `attr_update_period` (seconds; unset sends every cycle).
    pub(crate) attr_update_period: Option<u64>,
    /// When "job can't run" updates were last sent; `None` sends at the next cycle.
    can_t_run_sent_at: Option<i64>,
    /// The scheduler object's preemption settings.
    pub(crate) preempt: pbs_core::preempt::Settings,
    pub(crate) queues: BTreeMap<String, QueueEntry>,
    pub(crate) nodes: Vec<Option<Node>>,
    node_by_name: HashMap<String, u32>,
    free_node_slots: Vec<u32>,
    /// Node slots by priority (higher first), then arrival.
    pub(crate) node_order: Vec<u32>,
    next_node_seq: u64,
    pub(crate) jobs: Vec<Option<Job>>,
    job_by_id: HashMap<String, u32>,
    free_job_slots: Vec<u32>,
    pub(crate) requests: Vec<(Request, u32)>,
    request_by_key: HashMap<String, u32>,
    free_request_slots: Vec<u32>,
    pub(crate) users: Interner,
    pub(crate) groups: Interner,
    pub(crate) projects: Interner,
    pub(crate) server_counts: RunCounts,
    pub(crate) server_assigned: Vec<i64>,
    /// Running or exiting (not suspended) subjobs per array (parent sequence number).
    pub(crate) array_running: HashMap<u64, u64>,
    /// Subjob indices present as jobs of their own, per array: they are not the parent's
    /// to start.
    pub(crate) subjobs_present: HashMap<u64, BTreeSet<u64>>,
    pub(crate) pending: HashMap<String, Pending>,
    /// How many jobs keep a part of their `exec_vnode` on a vnode the mirror does not
    /// know: a node that arrives looks through the jobs only when some do.
    pub(crate) execs_unplaced: usize,
    /// Slots of the jobs whose view shows an estimate (`estimated.start_time` or
    /// `estimated.exec_vnode`), in slot order: what a cycle clears on jobs that are not
    /// top jobs, found without reading every job's attributes each cycle.
    pub(crate) estimated: BTreeSet<u32>,
}

/// The estimates a cycle publishes for top jobs and clears on the others.
pub(crate) const ESTIMATES: [&str; 2] = ["estimated.start_time", "estimated.exec_vnode"];

/// Whether a job's view shows an estimate a cycle may have to clear.
fn shows_estimate(view: &SchedJob) -> bool {
    view.attrs.iter().any(|a| ESTIMATES.contains(&a.name()) && !a.value().is_empty())
}

fn attr_map(attrs: &[Attr]) -> impl Iterator<Item = (&str, &str)> {
    attrs.iter().map(|a| (a.name(), a.value()))
}

fn truth(value: &str) -> Option<bool> {
    pbs_core::attr::parse_bool(value.trim())
}

impl Mirror {
    /// The mirror of a snapshot, with the scheduler's own settings.
    pub fn new(snapshot: Snapshot, config: SchedConfig) -> Mirror {
        let mut mirror = Mirror {
            server_name: snapshot.server_name.clone(),
            config,
            res: ResourceTable::default(),
            server: ServerInfo {
                scheduling: true,
                scheduler_iteration: None,
                limits: RunLimits::default(),
                avail: vec![],
                backfill_depth: None,
                eligible_time_enable: false,
                release_on_suspend: None,
            },
            sched_scheduling: None,
            preempt: pbs_core::preempt::Settings::default(),
            sched_iteration: None,
            attr_update_period: None,
            can_t_run_sent_at: None,
            queues: BTreeMap::new(),
            nodes: Vec::new(),
            node_by_name: HashMap::new(),
            free_node_slots: Vec::new(),
            node_order: Vec::new(),
            next_node_seq: 0,
            jobs: Vec::new(),
            job_by_id: HashMap::new(),
            free_job_slots: Vec::new(),
            requests: Vec::new(),
            request_by_key: HashMap::new(),
            free_request_slots: Vec::new(),
            users: Interner::default(),
            groups: Interner::default(),
            projects: Interner::default(),
            server_counts: RunCounts::default(),
            server_assigned: Vec::new(),
            array_running: HashMap::new(),
            subjobs_present: HashMap::new(),
            pending: HashMap::new(),
            execs_unplaced: 0,
            estimated: BTreeSet::new(),
        };
        // First: every value read after it is read as its resource's type says.
        mirror.res.define(&snapshot.resources);
        mirror.set_server(&snapshot.server);
        mirror.set_sched(&snapshot.sched);
        for queue in snapshot.queues {
            mirror.upsert_queue(&queue);
        }
        for node in snapshot.nodes {
            mirror.upsert_node(&node);
        }
        for job in snapshot.jobs {
            mirror.upsert_job(job);
        }
        mirror
    }

    /// New sched_config settings (SIGHUP). The `resources` line shapes the cached job
    /// requests, so a change of it waits for the next snapshot; returns false then (the
    /// other settings apply at once).
    pub fn set_config(&mut self, mut config: SchedConfig) -> bool {
        let same = config.resources == self.config.resources;
        if !same {
            config.resources = self.config.resources.clone();
        }
        self.config = config;
        same
    }

    /// Applies one change.
    pub fn apply(&mut self, change: SchedChange) {
        match change {
            SchedChange::Job { job } => self.upsert_job(*job),
            SchedChange::JobGone { id } | SchedChange::JobEnded { id, .. } => self.remove_job(&id),
            SchedChange::Node { node } => self.upsert_node(&node),
            SchedChange::NodeGone { name } => self.remove_node(&name),
            SchedChange::Queue { queue } => self.upsert_queue(&queue),
            SchedChange::QueueGone { name } => {
                if let Some(entry) = self.queues.get_mut(&name) {
                    entry.info = None;
                }
            }
            SchedChange::Server { attrs } => self.set_server(&attrs),
            SchedChange::Sched { attrs } => self.set_sched(&attrs),
            SchedChange::Resources { defs } => {
                if self.res.define(&defs) {
                    self.reread_requests();
                }
            }
        }
    }

    /// The server name (suffix of job ids).
    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    /// Both the server's and the scheduler object's `scheduling` are True.
    pub fn scheduling(&self) -> bool {
        self.server.scheduling && self.sched_scheduling.unwrap_or(true)
    }

    /// Seconds between cycles nobody asked for: the scheduler object's
    /// `preempt_queue_prio`: queues of this priority or more are express queues.
    pub(crate) fn preempt_queue_prio(&self) -> i64 {
        self.preempt.queue_prio
    }

    /// `scheduler_iteration`, else the server's, else 600.
    pub fn scheduler_iteration(&self) -> u64 {
        self.sched_iteration.or(self.server.scheduler_iteration).unwrap_or(600).max(1)
    }

    /// Number of jobs mirrored.
    pub fn job_count(&self) -> usize {
        self.job_by_id.len()
    }

    /// Number of nodes mirrored.
    pub fn node_count(&self) -> usize {
        self.node_by_name.len()
    }

    /// Records what one Decisions frame told the server: its runs stay booked until the
    /// server's echo arrives, and its comments count as the jobs' current ones.
    pub(crate) fn note_sent(&mut self, frame: u64, actions: &[Action], bookings: &HashMap<String, Booking>) {
        for action in actions {
            let update = match action {
                Action::Run(decision) => {
                    if let Some(booking) = bookings.get(&decision.job_id) {
                        self.note_run(frame, &decision.job_id, booking);
                    }
                    continue;
                }
                Action::Update(update) => update,
                // Booked like a run until the server has applied it.
                Action::Resume { job_id } => {
                    if let Some(booking) = bookings.get(job_id) {
                        self.note_run(frame, job_id, booking);
                    }
                    continue;
                }
            };
            let Some(&slot) = self.job_by_id.get(&update.job_id) else { continue };
            let Some(job) = self.jobs.get_mut(slot as usize).and_then(Option::as_mut) else { continue };
            // A job's alternatives are planned as the job: they know its estimates too. Its
            // comment is the job's own alone (the cycle compares it on the job's view).
            let alternatives = job.alternatives.iter_mut().flat_map(|a| a.iter_mut()).map(|a| &mut a.view);
            for (k, view) in std::iter::once(&mut job.view).chain(alternatives).enumerate() {
                for attr in &update.attrs {
                    if attr.name() == "comment" {
                        if k > 0 {
                            continue;
                        }
                        view.comment = (!attr.value().is_empty()).then(|| attr.value().to_string());
                    } else if attr.name().starts_with("estimated.") {
                        // Sent estimates count as known, so they are not sent again before
                        // the server's own view of the job arrives.
                        view.attrs.retain(|a| a.name() != attr.name());
                        if !attr.value().is_empty() {
                            view.attrs.push(attr.clone());
                        }
                    }
                }
            }
            if shows_estimate(&job.view) {
                self.estimated.insert(slot);
            } else {
                self.estimated.remove(&slot);
            }
        }
    }

    /// The server has applied frame `frame`: its runs are now in the mirror (or failed).
    pub fn applied(&mut self, frame: u64) {
        self.pending.retain(|_, p| p.frame != frame);
    }

    /// Forgets every run in flight (a new connection starts from a fresh snapshot).
    pub fn clear_pending(&mut self) {
        self.pending.clear();
    }

    /// A job's `exec_vnode` as the cycles read it: each part on its vnode's slot (or by
    /// name while no vnode of that name is known) with the consumables it takes. Parsed
    /// here only, once per new text ([`Mirror::upsert_job`]). A resource first seen here
    /// is interned as any first value is (`ResourceTable::consumable`). A text that does
    /// not read places nothing, as it did when it was read at every cycle.
    fn parse_exec(&mut self, exec_vnode: &str) -> ExecAllocs {
        let mut kept = ExecAllocs::default();
        let Ok(exec) = exec_vnode.parse::<ExecVnode>() else { return kept };
        for part in exec.parts() {
            let mut taken = Vec::new();
            for (name, value) in &part.resources {
                if let Some(id) = self.res.consumable(name, value)
                    && let Some(amount) = parse_amount(self.res.kind(id), value)
                {
                    taken.push((id, amount));
                }
            }
            match self.node_by_name.get(&part.vnode) {
                Some(&node) => kept.allocs.push(Alloc { node, taken }),
                None => kept.unplaced.push((part.vnode.as_str().into(), taken)),
            }
        }
        kept
    }

    fn note_run(&mut self, frame: u64, job_id: &str, booking: &Booking) {
        let (job_slot, parent_seq) = match self.job_by_id.get(job_id) {
            // A subjob with a record of its own (requeued) still counts against its array.
            Some(&slot) => {
                let seq = self.jobs[slot as usize]
                    .as_ref()
                    .and_then(|j| matches!(j.array, ArrayRole::Sub { .. }).then_some(j.view.seq));
                (Some(slot), seq)
            }
            None => {
                // A subjob started from its parent.
                let parsed: Option<JobId> = job_id.parse().ok();
                let parent = parsed.as_ref().and_then(|id| {
                    let parent_id = id.parent()?.to_string();
                    Some((self.job_by_id.get(&parent_id).copied(), id.seq()))
                });
                match parent {
                    Some((Some(slot), seq)) => (Some(slot), Some(seq)),
                    _ => (None, None),
                }
            }
        };
        let Some(job) = job_slot.and_then(|s| self.jobs.get(s as usize)).and_then(Option::as_ref) else { return };
        let request = &self.requests[job.request as usize].0;
        let pending = Pending {
            frame,
            booking: booking.clone(),
            queue: job.view.queue.clone(),
            who: job.who(),
            job_wide: request.job_wide.clone(),
            parent_seq,
        };
        self.pending.insert(job_id.to_string(), pending);
    }

    fn set_server(&mut self, attrs: &[Attr]) {
        let mut info = ServerInfo {
            scheduling: true,
            scheduler_iteration: None,
            limits: RunLimits::from_attrs(attr_map(attrs), &mut self.res),
            avail: Vec::new(),
            backfill_depth: None,
            eligible_time_enable: false,
            release_on_suspend: None,
        };
        for (name, value) in attr_map(attrs) {
            match name {
                "restrict_res_to_release_on_suspend" => {
                    info.release_on_suspend = Some(value.split(',').filter_map(|r| self.res.get(r.trim())).collect());
                }
                "scheduling" => info.scheduling = truth(value).unwrap_or(true),
                "eligible_time_enable" => info.eligible_time_enable = truth(value).unwrap_or(false),
                "backfill_depth" => info.backfill_depth = value.trim().parse().ok(),
                "scheduler_iteration" => info.scheduler_iteration = value.trim().parse().ok(),
                _ => {
                    if let Some(res) = name.strip_prefix("resources_available.") {
                        let id = self.res.intern(res, value);
                        if let Some(amount) = parse_amount(self.res.kind(id), value)
                            && self.res.kind(id).consumable()
                        {
                            info.avail.push((id, amount));
                        }
                    }
                }
            }
        }
        self.server = info;
    }

    fn set_sched(&mut self, attrs: &[Attr]) {
        self.sched_scheduling = None;
        self.sched_iteration = None;
        let period = self.attr_update_period.take();
        self.preempt = pbs_core::preempt::Settings::from_attrs(attr_map(attrs));
        for (name, value) in attr_map(attrs) {
            match name {
                "scheduling" => self.sched_scheduling = truth(value),
                "scheduler_iteration" => self.sched_iteration = value.trim().parse().ok(),
                "attr_update_period" => self.attr_update_period = value.trim().parse().ok(),
                _ => {}
            }
        }
        // A new period starts now: the next cycle sends (OpenPBS resets its timer).
        if self.attr_update_period != period {
            self.can_t_run_sent_at = None;
        }
    }

    /// Whether a cycle starting at `now` sends "job can't run" updates (`comment`,
    /// `estimated.*`): every cycle without `attr_update_period`, else once the period has
    /// passed since they were last sent.
    pub fn can_t_run_updates_due(&self, now: i64) -> bool {
        let period = self.attr_update_period.unwrap_or(0);
        period == 0
            || self
                .can_t_run_sent_at
                .is_none_or(|sent| now.saturating_sub(sent) >= i64::try_from(period).unwrap_or(i64::MAX))
    }

    /// A cycle that started at `now` sent its "job can't run" updates.
    pub fn note_can_t_run_sent(&mut self, now: i64) {
        self.can_t_run_sent_at = Some(now);
    }

    fn upsert_queue(&mut self, queue: &SchedQueue) {
        let limits = RunLimits::from_attrs(attr_map(&queue.attrs), &mut self.res);
        let mut info = QueueInfo { limits, ..QueueInfo::default() };
        for (name, value) in attr_map(&queue.attrs) {
            match name {
                "queue_type" => info.execution = value.trim().to_ascii_lowercase().starts_with('e'),
                "enabled" => info.enabled = truth(value).unwrap_or(false),
                "started" => info.started = truth(value).unwrap_or(false),
                "Priority" => info.priority = value.trim().parse().unwrap_or(0),
                "backfill_depth" => info.backfill_depth = value.trim().parse().ok(),
                _ => {
                    if let Some(res) = name.strip_prefix("resources_available.") {
                        let id = self.res.intern(res, value);
                        if let Some(amount) = parse_amount(self.res.kind(id), value)
                            && self.res.kind(id).consumable()
                        {
                            info.avail.push((id, amount));
                        }
                    }
                }
            }
        }
        self.queues.entry(queue.name.clone()).or_default().info = Some(info);
    }

    fn parse_node(&mut self, view: &SchedNode, seq: u64) -> Node {
        let mut node = Node {
            name: view.name.clone(),
            seq,
            priority: view.priority,
            state: view.state.clone(),
            free: view.state.trim() == "free" && !view.exclusive,
            avail: Vec::new(),
            assigned: Vec::new(),
            strs: Vec::new(),
            host: view.name.clone(),
            sharing: NodeSharing::parse(&view.sharing),
            queue: view.queue.clone().filter(|q| !q.is_empty()),
            njobs: u32::try_from(view.jobs.len()).unwrap_or(u32::MAX),
        };
        for (name, value) in &view.resources_available {
            let id = self.res.intern(name, value);
            match self.res.kind(id) {
                Kind::Str => {
                    if name == "host" {
                        node.host = value.clone();
                    }
                    let values = value.split(',').map(|v| v.trim().to_string()).collect();
                    node.strs.push((id, values));
                }
                kind => {
                    if let Some(amount) = parse_amount(kind, value) {
                        set_amount(&mut node.avail, id, amount);
                    }
                }
            }
        }
        // OpenPBS nodes always carry `host` and `vnode`; a mirror fed without them still
        // matches `host=`/`vnode=` chunks by name.
        for implied in ["host", "vnode"] {
            let id = self.res.intern(implied, "");
            if node.str_values(id).is_none() {
                let value = if implied == "host" { node.host.clone() } else { node.name.clone() };
                node.strs.push((id, vec![value]));
            }
        }
        for (name, value) in &view.resources_assigned {
            let id = self.res.intern(name, value);
            if let Some(amount) = parse_amount(self.res.kind(id), value)
                && self.res.kind(id).consumable()
            {
                set_amount(&mut node.assigned, id, amount);
            }
        }
        // OpenPBS's server marks a node job-busy exactly when its cpus are all assigned;
        // a job-busy node that still has cpus (a server that marks it earlier) stays
        // usable for what it has left.
        if !node.free && !view.exclusive && view.state.trim() == "job-busy" {
            let ncpus = self.res.intern("ncpus", "");
            let avail = amount_of(&node.avail, ncpus);
            let assigned = amount_of(&node.assigned, ncpus);
            node.free = avail != UNSET && avail > if assigned == UNSET { 0 } else { assigned };
        }
        node
    }

    fn order_position(&self, key: (Reverse<i64>, u64)) -> usize {
        self.node_order
            .partition_point(|slot| self.nodes[*slot as usize].as_ref().map(Node::order_key).is_some_and(|k| k < key))
    }

    fn upsert_node(&mut self, view: &SchedNode) {
        if let Some(&slot) = self.node_by_name.get(&view.name) {
            let (seq, old_key) = match self.nodes[slot as usize].as_ref() {
                Some(old) => (old.seq, old.order_key()),
                None => return,
            };
            let node = self.parse_node(view, seq);
            if node.order_key() != old_key {
                let at = self.order_position(old_key);
                if self.node_order.get(at) == Some(&slot) {
                    self.node_order.remove(at);
                }
                let key = node.order_key();
                self.nodes[slot as usize] = Some(node);
                let at = self.order_position(key);
                self.node_order.insert(at, slot);
            } else {
                self.nodes[slot as usize] = Some(node);
            }
            return;
        }
        let seq = self.next_node_seq;
        self.next_node_seq += 1;
        let node = self.parse_node(view, seq);
        let key = node.order_key();
        let slot = match self.free_node_slots.pop() {
            Some(slot) => {
                self.nodes[slot as usize] = Some(node);
                slot
            }
            None => {
                self.nodes.push(Some(node));
                u32::try_from(self.nodes.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.node_by_name.insert(view.name.clone(), slot);
        let at = self.order_position(key);
        self.node_order.insert(at, slot);
        if self.execs_unplaced > 0 {
            self.place_execs(&view.name, slot);
        }
    }

    /// A vnode named `name` arrived in `slot`: the jobs whose `exec_vnode` names it hold
    /// their parts there again.
    fn place_execs(&mut self, name: &str, slot: u32) {
        let mut placed = 0;
        for exec in self.jobs.iter_mut().flatten().filter_map(|job| job.exec.as_deref_mut()) {
            if exec.unplaced.is_empty() {
                continue;
            }
            let (here, elsewhere): (Vec<_>, Vec<_>) =
                std::mem::take(&mut exec.unplaced).into_iter().partition(|(vnode, _)| **vnode == *name);
            exec.unplaced = elsewhere;
            exec.allocs.extend(here.into_iter().map(|(_, taken)| Alloc { node: slot, taken }));
            if exec.unplaced.is_empty() {
                placed += 1;
            }
        }
        self.execs_unplaced = self.execs_unplaced.saturating_sub(placed);
    }

    /// The vnode in `slot`, named `name`, is gone: the jobs whose `exec_vnode` names it
    /// keep those parts by name, so the slot, once reused, is not theirs. Looks through
    /// every job, once per node deleted (the server refuses to delete a node with jobs, so
    /// this is rare and finds few).
    fn unplace_execs(&mut self, name: &str, slot: u32) {
        let mut unplaced = 0;
        for exec in self.jobs.iter_mut().flatten().filter_map(|job| job.exec.as_deref_mut()) {
            if !exec.allocs.iter().any(|a| a.node == slot) {
                continue;
            }
            if exec.unplaced.is_empty() {
                unplaced += 1;
            }
            let (gone, kept): (Vec<_>, Vec<_>) =
                std::mem::take(&mut exec.allocs).into_iter().partition(|a| a.node == slot);
            exec.allocs = kept;
            exec.unplaced.extend(gone.into_iter().map(|a| (Box::from(name), a.taken)));
        }
        self.execs_unplaced += unplaced;
    }

    fn remove_node(&mut self, name: &str) {
        let Some(slot) = self.node_by_name.remove(name) else { return };
        if let Some(node) = self.nodes[slot as usize].as_ref() {
            let at = self.order_position(node.order_key());
            if self.node_order.get(at) == Some(&slot) {
                self.node_order.remove(at);
            } else {
                self.node_order.retain(|s| *s != slot);
            }
        }
        self.unplace_execs(name, slot);
        self.nodes[slot as usize] = None;
        self.free_node_slots.push(slot);
        // Runs in flight on a node that is gone can no longer be booked against it.
        for pending in self.pending.values_mut() {
            pending.booking.allocs.retain(|(n, _)| *n != slot);
            pending.booking.exclusive.retain(|n| *n != slot);
        }
    }

    /// The resources a chunk is matched on: sched_config's `resources` plus booleans, or
    /// everything but the per-chunk process layout.
    fn checked(&self, name: &str, kind: Kind) -> bool {
        match &self.config.resources {
            Some(list) => kind == Kind::Bool || list.iter().any(|r| r == name),
            None => !matches!(name, "mpiprocs" | "ompthreads" | "nodect"),
        }
    }

    fn build_request(&mut self, job: &SchedJob) -> Request {
        let mut request = Request {
            chunks: Vec::new(),
            counts: pbs_core::capacity::Counts::default(),
            arrangement: Arrangement::Pack,
            sharing: PlaceSharing::Default,
            group: None,
            select_totals: Vec::new(),
            job_wide: Vec::new(),
            invalid: None,
            filter: None,
        };
        let place_text = if job.place.trim().is_empty() { "pack" } else { job.place.trim() };
        match place_text.parse::<Place>() {
            Ok(place) => {
                request.arrangement = place.arrangement;
                request.sharing = place.sharing;
                request.group = place.group.as_deref().map(|g| self.res.intern(g, ""));
            }
            Err(_) => request.invalid = Some("invalid place".to_string()),
        }
        let select_text = if job.select.trim().is_empty() {
            let ncpus = job.resources.iter().find(|(n, _)| n == "ncpus").map(|(_, v)| v.as_str()).unwrap_or("1");
            format!("1:ncpus={ncpus}")
        } else {
            job.select.trim().to_string()
        };
        match select_text.parse::<Select>() {
            Ok(select) => {
                request.counts = pbs_core::capacity::Counts::of(&select);
                for chunk in select.chunks() {
                    let mut req =
                        ChunkReq { count: chunk.count(), cons: Vec::new(), noncons: Vec::new(), conds: Vec::new() };
                    for res in chunk.resources() {
                        let (name, value) = (res.name(), res.value());
                        let id = self.res.intern(name, value);
                        let kind = self.res.kind(id);
                        if !self.checked(name, kind) {
                            continue;
                        }
                        if res.cmp() != Cmp::Eq {
                            req.conds.push(Cond::compile(&mut self.res, name, res.cmp(), value));
                            continue;
                        }
                        match kind {
                            Kind::Str => req.noncons.push((id, Wanted::Str(value.to_string()))),
                            Kind::Bool => {
                                let wanted = parse_amount(Kind::Bool, value).unwrap_or(0) != 0;
                                req.noncons.push((id, Wanted::Bool(wanted)));
                            }
                            kind => match parse_amount(kind, value) {
                                Some(amount) => {
                                    req.cons.push((id, amount));
                                    let total = amount.saturating_mul(i64::from(chunk.count()));
                                    match request.select_totals.iter_mut().find(|(r, _)| *r == id) {
                                        Some((_, sum)) => *sum = sum.saturating_add(total),
                                        None => request.select_totals.push((id, total)),
                                    }
                                }
                                None => request.invalid = Some("invalid chunk in select".to_string()),
                            },
                        }
                    }
                    request.chunks.push(req);
                }
            }
            Err(_) => request.invalid = Some("invalid chunk in select".to_string()),
        }
        for (name, value) in &job.resources {
            if name == "nfilter" {
                match NodeFilter::compile(&mut self.res, value) {
                    Some(filter) => request.filter = Some(Box::new(filter)),
                    None => request.invalid = Some("invalid nfilter".to_string()),
                }
                continue;
            }
            if matches!(name.as_str(), "select" | "place" | "nodes") {
                continue;
            }
            let id = self.res.intern(name, value);
            let kind = self.res.kind(id);
            if kind.consumable()
                && let Some(amount) = parse_amount(kind, value)
            {
                request.job_wide.push((id, amount));
            }
        }
        for &(id, total) in &request.select_totals {
            if !request.job_wide.iter().any(|(r, _)| *r == id) {
                request.job_wide.push((id, total));
            }
        }
        request
    }

    /// Builds every job's request again once a resource it may name has another kind.
    /// Rare (qmgr retyping a resource), so it walks the jobs; the server sends every
    /// node, queue and the server after a definition changes, which reads their values
    /// again. Running jobs leave the counts with their old amounts and come back with
    /// the new ones.
    fn reread_requests(&mut self) {
        let running: Vec<u32> = (0..self.jobs.len())
            .filter_map(|slot| u32::try_from(slot).ok())
            .filter(|&slot| self.jobs[slot as usize].as_ref().is_some_and(Job::running))
            .collect();
        for &slot in &running {
            self.count_running(slot, -1);
        }
        for slot in 0..u32::try_from(self.jobs.len()).unwrap_or(u32::MAX) {
            self.count_held(slot, -1);
        }
        let mut views: Vec<(u32, SchedJob)> = Vec::new();
        for job in self.jobs.iter().flatten() {
            views.push((job.request, job.view.clone()));
            views.extend(job.alternatives.iter().flat_map(|a| a.iter()).map(|a| (a.request, a.view.clone())));
        }
        let mut done = std::collections::HashSet::new();
        for (id, view) in views {
            if done.insert(id) {
                let request = self.build_request(&view);
                if let Some(entry) = self.requests.get_mut(id as usize) {
                    entry.0 = request;
                }
            }
        }
        for &slot in &running {
            self.count_running(slot, 1);
        }
        for slot in 0..u32::try_from(self.jobs.len()).unwrap_or(u32::MAX) {
            self.count_held(slot, 1);
        }
    }

    /// What a request is made of: select, place and `Resource_List`, and for OR-ed selects
    /// `sched_job_wide` too (the alternatives' job-wide resources come from it), so jobs of
    /// one request, the equivalence class of the cycle, always ask the same alternatives.
    fn request_key(job: &SchedJob) -> String {
        let mut key = String::with_capacity(64 + job.select.len() + job.place.len());
        key.push_str(&job.select);
        key.push('\u{1}');
        key.push_str(&job.place);
        for (name, value) in &job.resources {
            key.push('\u{1}');
            key.push_str(name);
            key.push('=');
            key.push_str(value);
        }
        if pbs_core::orselect::is_ored(&job.select)
            && let Some(job_wide) = job.attrs.iter().find(|a| a.name() == "sched_job_wide")
        {
            key.push_str("\u{1}sched_job_wide=");
            key.push_str(job_wide.value());
        }
        key
    }

    fn acquire_request(&mut self, job: &SchedJob) -> u32 {
        let key = Mirror::request_key(job);
        if let Some(&id) = self.request_by_key.get(&key) {
            self.requests[id as usize].1 += 1;
            return id;
        }
        let request = self.build_request(job);
        let id = match self.free_request_slots.pop() {
            Some(id) => {
                self.requests[id as usize] = (request, 1);
                id
            }
            None => {
                self.requests.push((request, 1));
                u32::try_from(self.requests.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.request_by_key.insert(key, id);
        id
    }

    fn release_request(&mut self, id: u32, job: &SchedJob) {
        let Some(entry) = self.requests.get_mut(id as usize) else { return };
        entry.1 = entry.1.saturating_sub(1);
        if entry.1 == 0 {
            self.request_by_key.remove(&Mirror::request_key(job));
            self.free_request_slots.push(id);
        }
    }

    fn array_role(job: &SchedJob) -> (ArrayRole, Option<u64>) {
        let Ok(id) = job.id.parse::<JobId>() else { return (ArrayRole::None, None) };
        match id.array() {
            pbs_core::ArrayPart::Parent => {
                let remaining = job
                    .attrs
                    .iter()
                    .find(|a| a.name() == "array_indices_remaining")
                    // A part that does not parse, or overlaps another (no server writes
                    // either), is dropped rather than run twice.
                    .map(|a| Box::new(IndexSet::parse_lenient(a.value())))
                    .unwrap_or_default();
                let max_run = job
                    .attrs
                    .iter()
                    .find(|a| a.name() == "max_run_subjobs")
                    .and_then(|a| a.value().trim().parse().ok());
                (ArrayRole::Parent { remaining, max_run }, Some(id.seq()))
            }
            pbs_core::ArrayPart::Index(index) => (ArrayRole::Sub { index: *index }, Some(id.seq())),
            _ => (ArrayRole::None, Some(id.seq())),
        }
    }

    /// Adds (`sign` 1) or removes (-1) a running job's share of the counts and sums.
    fn count_running(&mut self, job_slot: u32, sign: i64) {
        let Some(job) = self.jobs[job_slot as usize].as_ref() else { return };
        let (who, request, queue) = (job.who(), job.request, job.view.queue.clone());
        let job_wide = self.requests[request as usize].0.job_wide.clone();
        self.server_counts.add(who, &job_wide, sign);
        add_amounts(&mut self.server_assigned, &job_wide, sign);
        let entry = self.queues.entry(queue).or_default();
        entry.counts.add(who, &job_wide, sign);
        add_amounts(&mut entry.assigned, &job_wide, sign);
    }

    /// Adds (`sign` 1) or removes (-1) what a job suspended under
    /// `restrict_res_to_release_on_suspend` still holds of the server's and its queue's
    /// consumables: its job-wide amounts less what it gave back. It counts in no run limit.
    fn count_held(&mut self, job_slot: u32, sign: i64) {
        let Some(job) = self.jobs.get(job_slot as usize).and_then(Option::as_ref) else { return };
        let Some(released) = job.released.as_deref() else { return };
        let held: Vec<(ResId, i64)> = self.requests[job.request as usize]
            .0
            .job_wide
            .iter()
            .map(|&(id, n)| (id, n - released.job_wide.iter().find(|(r, _)| *r == id).map_or(0, |(_, m)| *m)))
            .filter(|&(_, n)| n > 0)
            .collect();
        let queue = job.view.queue.clone();
        add_amounts(&mut self.server_assigned, &held, sign);
        add_amounts(&mut self.queues.entry(queue).or_default().assigned, &held, sign);
    }

    /// What a suspended job's view says its suspension gave back, when the server
    /// restricted it.
    fn parse_released(&mut self, view: &SchedJob) -> Option<Released> {
        let text = view.attrs.iter().find(|a| a.name() == "resources_released")?.value().to_string();
        let allocs = self.parse_exec(&text).allocs;
        let job_wide = view
            .attrs
            .iter()
            .filter_map(|a| {
                let resource = a.name().strip_prefix("resource_released_list.")?;
                let id = self.res.consumable(resource, a.value())?;
                Some((id, parse_amount(self.res.kind(id), a.value())?))
            })
            .collect();
        Some(Released { allocs, job_wide })
    }

    /// Adds (`sign` 1) or removes (-1) a subjob from its array's `max_run_subjobs` count.
    fn count_array(&mut self, seq: u64, sign: i64) {
        let count = self.array_running.entry(seq).or_default();
        *count = count.saturating_add_signed(sign);
        if *count == 0 {
            self.array_running.remove(&seq);
        }
    }

    fn unindex_job(&mut self, slot: u32) {
        let Some(job) = self.jobs[slot as usize].as_mut() else { return };
        if let Some(key) = job.key.take()
            && let Some(entry) = self.queues.get_mut(&job.view.queue)
        {
            entry.queued.remove(&key);
        }
    }

    fn remove_job(&mut self, id: &str) {
        self.pending.remove(id);
        let Some(slot) = self.job_by_id.remove(id) else { return };
        self.unindex_job(slot);
        self.estimated.remove(&slot);
        if self.jobs[slot as usize].as_ref().is_some_and(Job::running) {
            self.count_running(slot, -1);
        }
        self.count_held(slot, -1);
        if let Some(seq) = self.jobs[slot as usize].as_ref().and_then(Job::array_slot) {
            self.count_array(seq, -1);
        }
        if let Some(job) = self.jobs[slot as usize].take() {
            if job.exec_unplaced() {
                self.execs_unplaced = self.execs_unplaced.saturating_sub(1);
            }
            if let ArrayRole::Sub { index } = job.array
                && let Some(set) = self.subjobs_present.get_mut(&job.view.seq)
            {
                set.remove(&index);
                if set.is_empty() {
                    self.subjobs_present.remove(&job.view.seq);
                }
            }
            self.release_request(job.request, &job.view);
            for alternative in job.alternatives.iter().flat_map(|a| a.iter()) {
                self.release_request(alternative.request, &alternative.view);
            }
        }
        self.free_job_slots.push(slot);
    }

    fn upsert_job(&mut self, view: SchedJob) {
        // The server's view of a job supersedes any run of it still in flight once it is
        // no longer queued (it ran, or failed and is back to Q after the frame's reply).
        if view.state != 'Q' {
            self.pending.remove(&view.id);
        }
        let id = view.id.clone();
        // An `exec_vnode` the job already had stays parsed as it was kept (the view of a
        // running job comes again at each change of it).
        let kept_exec = self
            .job_by_id
            .get(&id)
            .and_then(|&slot| self.jobs[slot as usize].as_mut())
            .filter(|old| old.view.exec_vnode == view.exec_vnode)
            .and_then(|old| old.exec.take());
        // Counted again below, as the new job's.
        if kept_exec.as_ref().is_some_and(|e| !e.unplaced.is_empty()) {
            self.execs_unplaced = self.execs_unplaced.saturating_sub(1);
        }
        if self.job_by_id.contains_key(&id) {
            self.remove_job_keep_pending(&id);
        }
        let (array, seq) = Mirror::array_role(&view);
        let user = self.users.intern(&view.owner);
        let group = self.groups.intern(&view.group);
        let project_name = view.attrs.iter().find(|a| a.name() == "project").map_or(DEFAULT_PROJECT, |a| a.value());
        let project = self.projects.intern(project_name);
        let request = self.acquire_request(&view);
        let exec = match (kept_exec, view.exec_vnode.as_deref()) {
            (Some(kept), _) => Some(kept),
            (None, Some(text)) => Some(Box::new(self.parse_exec(text))),
            (None, None) => None,
        };
        if exec.as_ref().is_some_and(|e| !e.unplaced.is_empty()) {
            self.execs_unplaced += 1;
        }
        let candidate = match &array {
            ArrayRole::Parent { remaining, .. } => matches!(view.state, 'Q' | 'B') && !remaining.is_empty(),
            _ => view.state == 'Q',
        };
        let sub_index = match array {
            ArrayRole::Sub { index } => index.saturating_add(1),
            _ => 0,
        };
        let slot = match self.free_job_slots.pop() {
            Some(slot) => slot,
            None => {
                self.jobs.push(None);
                u32::try_from(self.jobs.len() - 1).unwrap_or(u32::MAX)
            }
        };
        // Submission order, or the place qorder gave it (`queue_rank`, sent only then).
        let rank = view.attrs.iter().find(|a| a.name() == "queue_rank").and_then(|a| a.value().parse().ok());
        let key = candidate.then_some((Reverse(view.priority), rank.unwrap_or(view.seq), sub_index, slot));
        if let (ArrayRole::Sub { index }, Some(seq)) = (&array, seq) {
            self.subjobs_present.entry(seq).or_default().insert(*index);
        }
        if let Some(key) = key {
            self.queues.entry(view.queue.clone()).or_default().queued.insert(key);
        }
        let running = view.state == 'R';
        // An array's queued subjobs start from the array's record, so the array (and a
        // subjob queued on its own) gets the alternatives as a plain job does.
        let alternatives = candidate.then(|| alternative_views(&view)).flatten().map(|views| {
            let alternatives: Vec<Job> = views
                .into_iter()
                .enumerate()
                .map(|(k, view)| {
                    let request = self.acquire_request(&view);
                    let alternative = u32::try_from(k).ok();
                    // The job's place: an alternative starves when its job does.
                    Job { alternative, ..Job::bare(view, (user, group, project), request, key) }
                })
                .collect();
            alternatives.into_boxed_slice()
        });
        let job_set = crate::jobset::set_of(&view);
        let released = (view.state == 'S').then(|| self.parse_released(&view)).flatten().map(Box::new);
        let job = Job {
            array,
            job_set,
            alternatives,
            exec,
            released,
            ..Job::bare(view, (user, group, project), request, key)
        };
        let array_slot = job.array_slot();
        if shows_estimate(&job.view) {
            self.estimated.insert(slot);
        }
        self.jobs[slot as usize] = Some(job);
        self.job_by_id.insert(id, slot);
        if running {
            self.count_running(slot, 1);
        }
        self.count_held(slot, 1);
        if let Some(seq) = array_slot {
            self.count_array(seq, 1);
        }
    }

    fn remove_job_keep_pending(&mut self, id: &str) {
        let pending = self.pending.remove(id);
        self.remove_job(id);
        if let Some(pending) = pending {
            self.pending.insert(id.to_string(), pending);
        }
    }

    /// The job in a slot.
    pub(crate) fn job(&self, slot: u32) -> Option<&Job> {
        self.jobs.get(slot as usize).and_then(Option::as_ref)
    }

    pub(crate) fn job_slot(&self, id: &str) -> Option<u32> {
        self.job_by_id.get(id).copied()
    }

    pub(crate) fn request(&self, id: u32) -> &Request {
        &self.requests[id as usize].0
    }

    pub(crate) fn node(&self, slot: u32) -> Option<&Node> {
        self.nodes.get(slot as usize).and_then(Option::as_ref)
    }

    /// Whom `job` counts as in run limits, names included.
    pub(crate) fn entity(&self, job: &Job) -> Entity<'_> {
        Entity {
            who: job.who(),
            user_name: self.users.name(job.user),
            group_name: self.groups.name(job.group),
            project_name: self.projects.name(job.project),
        }
    }

    /// Where a running job stands against the soft run limits of its queue and of the
    /// server now: what preemption's `queue_softlimits` and `server_softlimits` classes
    /// read. Worked out from the usage of the job's user, group and project, which the
    /// mirror keeps as jobs start and end, so it is current for every job at once; `None`
    /// for a job that is unknown or not running.
    pub fn over_soft_limits(&self, job_id: &str) -> Option<OverSoft> {
        let job = self.job_slot(job_id).and_then(|slot| self.job(slot)).filter(|j| j.running())?;
        let queue = self.queues.get(&job.view.queue)?;
        Some(self.soft_standing_with(job, &queue.counts, &self.server_counts))
    }

    /// Where `job` stands against its queue's and the server's soft run limits when its
    /// queue counts `queue_counts` and the server `server_counts` (the mirror's, or a
    /// cycle's world's).
    pub(crate) fn soft_standing_with(
        &self,
        job: &Job,
        queue_counts: &RunCounts,
        server_counts: &RunCounts,
    ) -> OverSoft {
        let default = RunLimits::default();
        let queue_limits =
            self.queues.get(&job.view.queue).and_then(|q| q.info.as_ref()).map_or(&default, |i| &i.limits);
        soft_standing(
            (queue_limits, queue_counts),
            (&self.server.limits, server_counts),
            &self.entity(job),
            &self.request(job.request).job_wide,
        )
    }
}

/// The project of a job that names none, as OpenPBS's server sets it.
const DEFAULT_PROJECT: &str = "_pbs_project_default";

/// The array id (`12[].server`) of a subjob id (`12[3].server`); `None` for any other id.
pub(crate) fn subjob_parent_id(id: &str) -> Option<String> {
    Some(id.parse::<JobId>().ok()?.parent()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjob_ids_name_their_array() {
        assert_eq!(subjob_parent_id("12[3].srv").as_deref(), Some("12[].srv"));
        assert_eq!(subjob_parent_id("12[1-5].srv").as_deref(), Some("12[].srv"));
        assert_eq!(subjob_parent_id("12.srv"), None);
        assert_eq!(subjob_parent_id("12[].srv"), None);
        assert_eq!(subjob_parent_id("not an id"), None);
    }
}
