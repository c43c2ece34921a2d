//! The server's in-memory state: jobs, queues, nodes, schedulers, hooks, resource
//! definitions and server attributes, with their storage records and first-start defaults.
//!
//! **Invariant:** this is the only copy of the truth while the server runs; the store
//! holds what every acknowledged request changed, so a restart rebuilds the same state.

pub mod accrual;
pub mod assigned;
pub mod block_waits;
pub mod depends;
pub mod entity_usage;
pub mod job_sets;
pub mod links;
pub mod node_rt;
pub mod request;
pub mod sched_queue;
pub mod timers;
pub mod tracked;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use pbs_core::attr::{ObjectKind, bool_text};
use pbs_core::depend::DependList;
use pbs_core::resource::{ResourceDef, ResourceRegistry};
use pbs_core::{ExecVnode, IndexSet, JobState, Substate};
use serde::{Deserialize, Serialize};

use crate::attrlist::{AttrList, Interner, resolve};
use crate::jobkey::JobKey;
use crate::state::request::{JobRequest, Requests};
use crate::store::{Loaded, Record, StoreOp};

/// Why a running job is being ended by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// qdel: the job finishes (history or gone).
    Delete,
    /// qrerun or node failure: the job goes back to the queue.
    Rerun,
    /// Its mom checkpointed it and is ending it (preemption's `C`): back to the queue
    /// with its usage, and no `R` record, as OpenPBS requeues a checkpointed job.
    Checkpoint,
}

/// The `pbs_version` this server reports.
pub const PBS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A job, an array parent, or a subjob that has run (queued subjobs have no record: they
/// are the indices in their parent's `array_indices_remaining`).
#[derive(Clone, Debug)]
pub struct Job {
    /// Sequence number, the numeric part of the id.
    pub seq: u64,
    /// An array parent (`12[]`).
    pub array: bool,
    /// The index of a subjob (`12[3]`).
    pub index: Option<u64>,
    /// `job_state`.
    pub state: JobState,
    /// `substate`.
    pub substate: Substate,
    /// The queue it is in.
    pub queue: Arc<str>,
    /// All other attributes.
    pub attrs: AttrList,
    /// Where a job runs: its `exec_vnode`, parsed once when it is set
    /// ([`Job::set_placement`]) or loaded, and read by every event of its run (start, end,
    /// node failure, signals, restart) instead of being parsed again. Private, so that
    /// its one writer is [`Job::set_placement`] (and the read-back at a start).
    placement: Option<Arc<Placement>>,
    /// Since when it accrues its `accrue_type` (seconds since the epoch; 0 for a record
    /// from before eligible time was kept): see `state::accrual`.
    pub accrue_since: i64,
    /// Its `select` and `place`, parsed from its attributes (`state::request`): made by
    /// [`Job::new`] and [`Job::set_attrs`] alone, so it never disagrees with them.
    request: Option<Arc<JobRequest>>,
    /// An array's queued indices, its `array_indices_remaining` parsed once: read by every
    /// subjob id a request names, every start and every count, and written with the text
    /// by [`Job::set_remaining`] alone.
    remaining: Option<Box<IndexSet>>,
    /// Its `depend` list parsed once: read by every release, end and start that looks at
    /// what it waits on, and written with the text by [`Job::set_depend`] alone.
    depend: Option<Box<DependList>>,
}

/// The queued indices of a job that is not an array.
static NO_INDICES: IndexSet = IndexSet::new();

/// What a new job is made of: a [`Job`] but for what is derived from its attributes.
pub struct JobParts {
    /// Sequence number.
    pub seq: u64,
    /// An array parent.
    pub array: bool,
    /// The index of a subjob.
    pub index: Option<u64>,
    /// `job_state`.
    pub state: JobState,
    /// `substate`.
    pub substate: Substate,
    /// Its queue.
    pub queue: Arc<str>,
    /// Its attributes.
    pub attrs: AttrList,
    /// Since when it accrues its `accrue_type`.
    pub accrue_since: i64,
}

/// Where a running job is, as decided when it was run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Its vnodes and the amounts taken on each (`exec_vnode`).
    pub exec: ExecVnode,
    /// Whether it holds its nodes exclusively (`pbs_core::sharing`, decided once at the
    /// run): its end, suspension and resumption give back exactly what its run took, even
    /// if a node's `sharing` or its `place` changed meanwhile.
    pub exclusive: bool,
}

/// A job's stored record as read back, written by [`Job::to_record`]. Its `seq` and
/// `index` fields are not read: the row's key says the same.
#[derive(Deserialize)]
struct JobRecord {
    array: bool,
    state: char,
    substate: u16,
    queue: String,
    attrs: Vec<(String, String)>,
    #[serde(default)]
    accrue_since: i64,
}

/// A named object with only attributes (queue, node, scheduler, hook).
#[derive(Clone, Debug)]
pub struct Named {
    /// Its name.
    pub name: String,
    /// Its attributes.
    pub attrs: AttrList,
}

/// A hook's imported files, shared with the events that run it while it may be replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookBody {
    /// `application/x-python`: the script.
    pub python: Arc<str>,
    /// `application/x-config`: the configuration file (`pbs.hook_config_filename`).
    pub config: Arc<str>,
}

/// The store kind of hook bodies, apart from the hooks' attributes.
pub const HOOK_BODY_KIND: &str = "hook_body";

impl HookBody {
    /// The store operation saving hook `name`'s body.
    pub fn op(&self, name: &str) -> StoreOp {
        StoreOp::PutObject { kind: HOOK_BODY_KIND, name: name.to_string(), record: Record::json(self) }
    }
}

#[derive(Serialize, Deserialize)]
struct CustomResourceRecord {
    rtype: String,
    flags: String,
}

/// How qterm asked the server to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopManner {
    /// Running jobs go on under their moms.
    Quick,
    /// Running jobs are requeued, or killed when not rerunnable, before the stop.
    Immediate,
    /// No new run; the stop waits for the running jobs to end.
    Delay,
}

/// A stop qterm asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopping {
    /// What happens to running jobs.
    pub manner: StopManner,
    /// `-s`: the scheduler is told to stop.
    pub scheduler: bool,
    /// `-m`: the moms are told to stop.
    pub moms: bool,
}

/// The whole server state.
pub struct State {
    /// The suffix of job ids.
    pub server_name: String,
    /// This host's name.
    pub host: String,
    /// Server attributes.
    pub server: AttrList,
    /// Queues in creation order.
    pub queues: Vec<Named>,
    /// Nodes in creation order.
    pub nodes: Vec<Named>,
    /// Scheduler objects (`default` first).
    pub scheds: Vec<Named>,
    /// Hooks.
    pub hooks: Vec<Named>,
    /// What `qmgr import hook` gave each hook: its Python body and configuration file.
    pub hook_bodies: HashMap<String, HookBody>,
    /// Resource definitions, built in and custom.
    pub resources: ResourceRegistry,
    /// Jobs by sequence number.
    pub jobs: BTreeMap<u64, Job>,
    /// Subjobs that are running or ending.
    pub subjobs: BTreeMap<(u64, u64), Job>,
    /// Finished subjobs kept in history, apart so that counting an array's active
    /// subjobs never walks its finished ones.
    pub finished_subjobs: BTreeMap<(u64, u64), Job>,
    /// The next sequence number to hand out.
    pub next_seq: u64,
    /// Every id below this (since the last wrap) may have been handed out: the store holds
    /// it, so that ids are reserved in blocks instead of with a write per job.
    pub seq_reserved: u64,
    /// Shared resource-name strings.
    pub interner: Interner,
    /// Run-time node state (mom reports, resources held), by node name.
    pub node_rt: HashMap<String, crate::state::node_rt::NodeRt>,
    /// Server and queue `resources_assigned` (run time, like `node_rt`).
    pub assigned: crate::state::assigned::Assigned,
    /// What changed since the scheduler was last told.
    pub changes: PendingChanges,
    /// Running jobs being ended on purpose, and what to do when their mom reports the end.
    pub ending: HashMap<JobKey, crate::state::EndReason>,
    /// Jobs whose start the mom has not confirmed yet.
    pub starting: HashSet<JobKey>,
    /// Arrays whose subjobs started in the batch being applied (see `job::array::settle`).
    pub arrays_to_refresh: BTreeSet<u64>,
    /// Connections waiting for jobs to leave, and answers kept (`qsub -W block=true`).
    pub block_waits: block_waits::BlockWaits,
    /// Set by qterm: the server is stopping, and how (see `shutdown`).
    pub stopping: Option<Stopping>,
    /// Queued-job entity limits and the usage they are checked against.
    pub entity_limits: crate::state::entity_usage::Tracker,
    /// Launches handed to a mom link and suspended jobs by node (see `faults`).
    pub faults: crate::state::tracked::Tracked,
    /// What falls due at a time (`timers`): execution times, the node watch, the purge.
    pub timers: crate::state::timers::Timers,
    /// Periodic hooks' next starts and runs in flight.
    pub periodic_hooks: crate::state::timers::PeriodicHooks,
    /// Jobs waiting on others (`depend`), by the job they wait on.
    pub dependents: crate::state::depends::Dependents,
    /// Job sets by leader (`job_set`).
    pub job_sets: crate::state::job_sets::JobSets,
    /// Jobs' requests, parsed once per distinct text (`state::request`).
    pub requests: Requests,
}

/// Objects changed since the scheduler was last told, and whether a cycle is due.
#[derive(Debug, Default)]
pub struct PendingChanges {
    /// Jobs by key, with their full ids (kept for jobs that are gone).
    pub jobs: BTreeMap<JobKey, String>,
    /// Jobs whose run ended (the `Ended` steps of `Effects::steps`): exit status, whether
    /// it ran, when. A job here that is gone or history is told as `JobEnded`.
    pub ended: BTreeMap<JobKey, (Option<i32>, bool, i64)>,
    /// Nodes by name.
    pub nodes: BTreeSet<String>,
    /// Every queue, node, server and scheduler attribute (after qmgr).
    pub objects: bool,
    /// The resource definitions (a resource created, deleted or retyped).
    pub resources: bool,
    /// Something happened that may let a job run.
    pub cycle: bool,
}

/// The kinds of named objects the state keeps a list of, in qmgr's order (what qmgr does
/// with each is `objects::NAMED_KINDS`).
pub const NAMED_KINDS: [ObjectKind; 4] = [ObjectKind::Queue, ObjectKind::Node, ObjectKind::Sched, ObjectKind::Hook];

/// An array's queued indices as its attributes hold them.
fn remaining_of(array: bool, attrs: &AttrList) -> Option<Box<IndexSet>> {
    if !array {
        return None;
    }
    let set = match attrs.get(job_idx!("array_indices_remaining"), None) {
        Some("-") | None => IndexSet::default(),
        Some(text) => IndexSet::parse_lenient(text),
    };
    Some(Box::new(set))
}

/// A job's `depend` list as its attributes hold it (already complete: no server to add).
fn depend_of(attrs: &AttrList) -> Option<Box<DependList>> {
    let text = attrs.get(job_idx!("depend"), None)?;
    DependList::parse(text, "").ok().filter(|list| !list.0.is_empty()).map(Box::new)
}

/// Looks up an attribute index that must exist in a table (a typo here is a bug).
pub fn idx(kind: ObjectKind, name: &str) -> u8 {
    resolve(kind, name).map(|(i, _)| i).unwrap_or(u8::MAX)
}

/// How many job ids one store write reserves.
pub const SEQ_BLOCK: u64 = 1000;

impl Job {
    /// A job of `parts`, its request read from its attributes (shared with any job asking
    /// the same); not placed.
    pub fn new(parts: JobParts, requests: &mut Requests) -> Job {
        let JobParts { seq, array, index, state, substate, queue, attrs, accrue_since } = parts;
        let request = requests.of(&attrs);
        let remaining = remaining_of(array, &attrs);
        let depend = depend_of(&attrs);
        Job {
            seq,
            array,
            index,
            state,
            substate,
            queue,
            attrs,
            placement: None,
            accrue_since,
            request,
            remaining,
            depend,
        }
    }

    /// Its `depend` list as it keeps it (every id with its server), if it has one.
    pub fn depend_list(&self) -> Option<&DependList> {
        self.depend.as_deref()
    }

    /// Sets its `depend` list, and the text from it; an empty list unsets both.
    pub fn set_depend(&mut self, list: DependList) {
        if list.0.is_empty() {
            self.attrs.unset(job_idx!("depend"), None);
            self.depend = None;
        } else {
            self.attrs.set(job_idx!("depend"), None, list.to_string());
            self.depend = Some(Box::new(list));
        }
    }

    /// An array's queued indices (none for another job).
    pub fn remaining(&self) -> &IndexSet {
        self.remaining.as_deref().unwrap_or(&NO_INDICES)
    }

    /// Sets an array's queued indices, and its `array_indices_remaining` from them.
    pub fn set_remaining(&mut self, remaining: IndexSet) {
        self.attrs.set(job_idx!("array_indices_remaining"), None, remaining.to_string());
        self.remaining = self.array.then(|| Box::new(remaining));
    }

    /// Its request (`select`, `place`) as parsed from its attributes.
    pub fn request(&self) -> Option<&JobRequest> {
        self.request.as_deref()
    }

    /// The same, shared (to read it while the state changes).
    pub fn request_shared(&self) -> Option<Arc<JobRequest>> {
        self.request.clone()
    }

    /// Replaces its attributes (a qalter, an OR-ed request chosen or put back), its request
    /// read again from them unless their `select` and `place` are what it was read from.
    pub fn set_attrs(&mut self, attrs: AttrList, requests: &mut Requests) {
        self.attrs = attrs;
        if !JobRequest::is_current(self.request.as_deref(), &self.attrs) {
            self.request = requests.of(&self.attrs);
        }
        self.remaining = remaining_of(self.array, &self.attrs);
        self.depend = depend_of(&self.attrs);
    }

    /// The full id, `12.server`, `12[].server` or `12[3].server`.
    pub fn id(&self, server_name: &str) -> String {
        match self.index {
            Some(index) => pbs_core::JobId::subjob(self.seq, index, server_name).to_string(),
            None if self.array => format!("{}[].{}", self.seq, server_name),
            None => format!("{}.{}", self.seq, server_name),
        }
    }

    /// Its key.
    pub fn key(&self) -> JobKey {
        JobKey { seq: self.seq, index: self.index }
    }

    /// A job attribute by base name (and resource).
    pub fn get(&self, name: &str, resource: Option<&str>) -> Option<&str> {
        self.attrs.get_named(ObjectKind::Job, name, resource)
    }

    /// Where it runs, if it was placed.
    pub fn placement(&self) -> Option<Arc<Placement>> {
        self.placement.clone()
    }

    /// Its `exec_host` and `exec_vnode` texts, as its placement left them.
    pub fn exec_texts(&self) -> (Option<&str>, Option<&str>) {
        (self.attrs.get(job_idx!("exec_host"), None), self.attrs.get(job_idx!("exec_vnode"), None))
    }

    /// The node of its mother superior (the first of its placement).
    pub fn mother_superior(&self) -> Option<&str> {
        self.placement.as_deref().and_then(|p| p.exec.vnodes().first().copied())
    }

    /// Places it (its `exec_vnode` and `exec_host`), or takes both away.
    pub fn set_placement(&mut self, placement: Option<Arc<Placement>>) {
        match &placement {
            Some(placement) => {
                self.attrs.set(job_idx!("exec_host"), None, placement.exec.exec_host());
                self.attrs.set(job_idx!("exec_vnode"), None, placement.exec.to_string());
            }
            None => {
                self.attrs.unset(job_idx!("exec_host"), None);
                self.attrs.unset(job_idx!("exec_vnode"), None);
            }
        }
        self.placement = placement;
    }

    /// The owner's user name (`euser`).
    pub fn owner(&self) -> &str {
        self.get("euser", None).unwrap_or("")
    }

    /// The storage record.
    pub fn to_record(&self) -> Record {
        #[derive(Serialize)]
        struct Out<'a> {
            seq: u64,
            array: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            index: Option<u64>,
            state: char,
            substate: u16,
            queue: &'a str,
            attrs: crate::attrlist::StoredPairs<'a>,
            #[serde(skip_serializing_if = "is_zero")]
            accrue_since: i64,
        }
        fn is_zero(n: &i64) -> bool {
            *n == 0
        }
        let record = Out {
            seq: self.seq,
            array: self.array,
            index: self.index,
            state: self.state.letter(),
            substate: self.substate.0,
            queue: &self.queue,
            attrs: self.attrs.as_pairs(ObjectKind::Job),
            accrue_since: self.accrue_since,
        };
        Record::json(&record)
    }

    /// The store operation that saves this job (or subjob).
    pub fn put_op(&self, script: Option<String>) -> StoreOp {
        match self.index {
            Some(index) => StoreOp::PutSubjob { seq: self.seq, index, record: self.to_record() },
            None => StoreOp::PutJob { seq: self.seq, record: self.to_record(), script },
        }
    }
}

impl Named {
    fn record(&self, kind: ObjectKind) -> Record {
        Record::json(&self.attrs.as_pairs(kind))
    }
}

/// The storage kind word of an object kind.
pub fn store_kind(kind: ObjectKind) -> &'static str {
    kind.qmgr_name()
}

impl State {
    /// Rebuilds the state from what the store loaded; a fresh store gets OpenPBS's
    /// first-start set-up. Returns the state and the operations that persist any set-up.
    pub fn from_loaded(loaded: Loaded, server_name: &str, host: &str, pbs_home: &str) -> (State, Vec<StoreOp>) {
        let mut state = State {
            server_name: server_name.to_string(),
            host: host.to_string(),
            server: AttrList::new(),
            queues: Vec::new(),
            nodes: Vec::new(),
            scheds: Vec::new(),
            hooks: Vec::new(),
            hook_bodies: HashMap::new(),
            resources: ResourceRegistry::new(),
            jobs: BTreeMap::new(),
            subjobs: BTreeMap::new(),
            finished_subjobs: BTreeMap::new(),
            next_seq: 0,
            seq_reserved: 0,
            interner: Interner::default(),
            node_rt: HashMap::new(),
            assigned: Default::default(),
            changes: PendingChanges::default(),
            ending: HashMap::new(),
            starting: HashSet::new(),
            arrays_to_refresh: BTreeSet::new(),
            block_waits: Default::default(),
            stopping: None,
            entity_limits: Default::default(),
            faults: Default::default(),
            timers: Default::default(),
            periodic_hooks: Default::default(),
            dependents: Default::default(),
            job_sets: Default::default(),
            requests: Requests::default(),
        };
        let fresh = !loaded.meta.iter().any(|(k, _)| k == "initialized");
        for (key, value) in &loaded.meta {
            if key == "next_seq" {
                state.next_seq = value.parse().unwrap_or(0);
                state.seq_reserved = state.next_seq;
            }
        }
        for (kind, name, record) in &loaded.objects {
            if kind == HOOK_BODY_KIND {
                match serde_json::from_str::<HookBody>(record) {
                    Ok(body) => {
                        state.hook_bodies.insert(name.clone(), body);
                    }
                    Err(e) => tracing::error!(hook = %name, error = %e, "Unreadable hook body skipped"),
                }
                continue;
            }
            let pairs: Vec<(String, String)> = match serde_json::from_str(record) {
                Ok(pairs) => pairs,
                // A custom resource's record is no list of pairs: it is read below.
                Err(_) if kind == "resource" => Vec::new(),
                Err(e) => {
                    tracing::error!(kind = %kind, name = %name, error = %e, "Unreadable object record skipped");
                    continue;
                }
            };
            let object_kind = match kind.as_str() {
                "server" => ObjectKind::Server,
                "resource" => {
                    if let Ok(rec) = serde_json::from_str::<CustomResourceRecord>(record) {
                        if let Ok(def) = ResourceDef::custom(name, &rec.rtype, &rec.flags) {
                            let _ = state.resources.define(def);
                        }
                    }
                    continue;
                }
                other => match NAMED_KINDS.into_iter().find(|k| store_kind(*k) == other) {
                    Some(named) => named,
                    None => continue,
                },
            };
            let (attrs, unknown) = AttrList::from_pairs(object_kind, &pairs, &mut state.interner);
            for name in unknown {
                tracing::warn!(attribute = %name, "Ignoring unknown stored attribute");
            }
            let named = Named { name: name.clone(), attrs };
            match object_kind {
                ObjectKind::Server => state.server = named.attrs,
                kind => match state.named_mut(kind) {
                    Some(list) => list.push(named),
                    None => tracing::warn!(name = %name, "Ignoring a stored object of a kind kept elsewhere"),
                },
            }
        }
        let records = loaded
            .jobs
            .iter()
            .map(|(seq, r)| (*seq, None, r))
            .chain(loaded.subjobs.iter().map(|(seq, i, r)| (*seq, Some(*i), r)));
        for (seq, index, record) in records {
            match serde_json::from_str::<JobRecord>(record) {
                Ok(rec) => {
                    let (attrs, _) = AttrList::from_pairs(ObjectKind::Job, &rec.attrs, &mut state.interner);
                    let job_state = JobState::from_letter(rec.state).unwrap_or(JobState::Queued);
                    let queue = state.interner.intern(&rec.queue);
                    let parts = JobParts {
                        seq,
                        array: rec.array,
                        index,
                        state: job_state,
                        substate: Substate(rec.substate),
                        queue,
                        attrs,
                        accrue_since: rec.accrue_since,
                    };
                    let mut job = Job::new(parts, &mut state.requests);
                    job.placement = state.placement_of(&job);
                    match index {
                        Some(index) if job.state.is_history() => {
                            state.finished_subjobs.insert((seq, index), job);
                        }
                        Some(index) => {
                            state.subjobs.insert((seq, index), job);
                        }
                        None => {
                            state.jobs.insert(seq, job);
                        }
                    }
                    state.next_seq = state.next_seq.max(seq + 1);
                }
                Err(e) => tracing::error!(seq, error = %e, "Unreadable job record skipped"),
            }
        }
        // The jobs still waiting on others, by the job they wait on.
        for job in state.jobs.values().filter(|j| !j.state.is_history()) {
            if let Some(list) = job.depend_list() {
                for (parent, kind) in crate::state::depends::waits(list) {
                    state.dependents.add(parent, job.seq, kind);
                }
            }
        }
        // Job sets, with the member that runs.
        for job in state.jobs.values().filter(|j| !j.state.is_history() && !j.array) {
            let Some(leader) = job.get("job_set", None).and_then(crate::state::job_sets::leader_of) else { continue };
            let owner = job.get("euser", None).unwrap_or("");
            state.job_sets.join(leader, job.seq, owner);
            if matches!(job.state, JobState::Running | JobState::Exiting | JobState::Suspended) {
                state.job_sets.set_running(leader, Some(job.seq));
            }
        }
        let mut ops = Vec::new();
        if fresh {
            ops = state.first_start(pbs_home);
        }
        (state, ops)
    }

    fn first_start(&mut self, pbs_home: &str) -> Vec<StoreOp> {
        use pbs_core::defaults;
        for (name, value) in defaults::FIRST_SERVER {
            self.set_attr(ObjectKind::Server, None, name, value);
        }
        let mut workq = Named { name: defaults::FIRST_QUEUE.into(), attrs: AttrList::new() };
        for (name, value) in defaults::FIRST_QUEUE_ATTRS {
            set_named(&mut workq.attrs, ObjectKind::Queue, name, value, &mut self.interner);
        }
        self.queues.push(workq);
        let mut sched = Named { name: "default".into(), attrs: AttrList::new() };
        for (name, value) in defaults::first_sched(&self.host, pbs_home) {
            set_named(&mut sched.attrs, ObjectKind::Sched, name, &value, &mut self.interner);
        }
        self.scheds.push(sched);
        vec![
            self.server_op(),
            self.named_op(ObjectKind::Queue, 0),
            self.named_op(ObjectKind::Sched, 0),
            StoreOp::SetMeta { key: "initialized", value: "1".into() },
        ]
    }

    /// Sets an attribute by full dotted name on the server or the named object list.
    fn set_attr(&mut self, kind: ObjectKind, index: Option<usize>, name: &str, value: &str) {
        let list = match (kind, index) {
            (ObjectKind::Server, _) => &mut self.server,
            (ObjectKind::Queue, Some(i)) => &mut self.queues[i].attrs,
            _ => return,
        };
        set_named(list, kind, name, value, &mut self.interner);
    }

    /// The store operation saving the server attributes.
    pub fn server_op(&self) -> StoreOp {
        StoreOp::PutObject {
            kind: "server",
            name: "server".into(),
            record: Record::json(&self.server.as_pairs(ObjectKind::Server)),
        }
    }

    /// The objects of a kind (queues, nodes, schedulers, hooks); none for a kind that is
    /// not kept as a list of named objects. Every kind is named here, so a new one must be
    /// given its place (or none) before the server builds.
    pub fn named(&self, kind: ObjectKind) -> &[Named] {
        match kind {
            ObjectKind::Queue => &self.queues,
            ObjectKind::Node => &self.nodes,
            ObjectKind::Sched => &self.scheds,
            ObjectKind::Hook => &self.hooks,
            ObjectKind::Job | ObjectKind::Server | ObjectKind::Resource => &[],
        }
    }

    /// Mutable access to the objects of a kind kept as a list of named objects.
    pub fn named_mut(&mut self, kind: ObjectKind) -> Option<&mut Vec<Named>> {
        match kind {
            ObjectKind::Queue => Some(&mut self.queues),
            ObjectKind::Node => Some(&mut self.nodes),
            ObjectKind::Sched => Some(&mut self.scheds),
            ObjectKind::Hook => Some(&mut self.hooks),
            ObjectKind::Job | ObjectKind::Server | ObjectKind::Resource => None,
        }
    }

    /// The store operation saving one named object.
    pub fn named_op(&self, kind: ObjectKind, index: usize) -> StoreOp {
        let named = &self.named(kind)[index];
        StoreOp::PutObject { kind: store_kind(kind), name: named.name.clone(), record: named.record(kind) }
    }

    /// The store operation saving a custom resource definition.
    pub fn resource_op(def: &ResourceDef) -> StoreOp {
        let record = CustomResourceRecord { rtype: def.rtype.to_string(), flags: def.flags.to_string() };
        StoreOp::PutObject { kind: "resource", name: def.name.clone(), record: Record::json(&record) }
    }

    /// A job, array parent or subjob record by key.
    pub fn job(&self, key: JobKey) -> Option<&Job> {
        match key.index {
            None => self.jobs.get(&key.seq),
            Some(index) => self.subjobs.get(&(key.seq, index)).or_else(|| self.finished_subjobs.get(&(key.seq, index))),
        }
    }

    /// Replaces a job's attributes ([`Job::set_attrs`]); false when there is no such job.
    pub fn set_job_attrs(&mut self, key: JobKey, attrs: AttrList) -> bool {
        let job = match key.index {
            None => self.jobs.get_mut(&key.seq),
            Some(index) => match self.subjobs.get_mut(&(key.seq, index)) {
                Some(job) => Some(job),
                None => self.finished_subjobs.get_mut(&(key.seq, index)),
            },
        };
        let Some(job) = job else { return false };
        job.set_attrs(attrs, &mut self.requests);
        true
    }

    /// The jobs whose kept request is not what their attributes say: none, unless a
    /// writer of `select` or `place` went around [`Job::set_attrs`] (handler tests check).
    pub fn stale_requests(&self) -> Vec<JobKey> {
        let jobs = self.jobs.values().chain(self.subjobs.values()).chain(self.finished_subjobs.values());
        jobs.filter(|job| !JobRequest::is_current(job.request(), &job.attrs)).map(Job::key).collect()
    }

    /// Of the jobs `written`, those whose queued indices or `depend` list are not what
    /// their attributes say: none, unless a writer of `array_indices_remaining` went
    /// around [`Job::set_remaining`] or one of `depend` around [`Job::set_depend`]. Read
    /// for the jobs a change writes, since a text written around its setter is written to
    /// the store with it (handler tests check after every request).
    pub fn stale_kept_facts(&self, written: impl IntoIterator<Item = JobKey>) -> Vec<JobKey> {
        let stale = |job: &Job| {
            let indices = job.array
                && job.attrs.get(job_idx!("array_indices_remaining"), None) != Some(&job.remaining().to_string());
            let depend =
                job.attrs.get(job_idx!("depend"), None) != job.depend_list().map(ToString::to_string).as_deref();
            indices || depend
        };
        written.into_iter().filter(|key| self.job(*key).is_some_and(stale)).collect()
    }

    /// Mutable access by key.
    pub fn job_mut(&mut self, key: JobKey) -> Option<&mut Job> {
        match key.index {
            None => self.jobs.get_mut(&key.seq),
            Some(index) => match self.subjobs.get_mut(&(key.seq, index)) {
                Some(job) => Some(job),
                None => self.finished_subjobs.get_mut(&(key.seq, index)),
            },
        }
    }

    /// Removes a job from the server, with what the index keeps of the jobs that wait or
    /// waited on it.
    pub fn remove_job(&mut self, seq: u64) -> Option<Job> {
        self.dependents.forget_parent(seq);
        if let Some(leader) = self.jobs.get(&seq).and_then(|j| j.get("job_set", None)).and_then(job_sets::leader_of) {
            self.job_sets.leave(leader, seq);
        }
        self.jobs.remove(&seq)
    }

    /// Forgets every subjob record of an array (the array itself is gone).
    pub fn remove_subjobs_of(&mut self, seq: u64) {
        for map in [&mut self.subjobs, &mut self.finished_subjobs] {
            let gone: Vec<(u64, u64)> = map.range((seq, 0)..=(seq, u64::MAX)).map(|(k, _)| *k).collect();
            for key in gone {
                map.remove(&key);
            }
        }
    }

    /// The running or ending subjobs of an array, in index order.
    pub fn subjobs_of(&self, seq: u64) -> impl Iterator<Item = &Job> {
        self.subjobs.range((seq, 0)..=(seq, u64::MAX)).map(|(_, j)| j)
    }

    /// Index of a queue by name.
    pub fn queue_index(&self, name: &str) -> Option<usize> {
        self.queues.iter().position(|q| q.name == name)
    }

    /// A server attribute by base name (and resource).
    pub fn server_attr(&self, name: &str, resource: Option<&str>) -> Option<&str> {
        self.server.get_named(ObjectKind::Server, name, resource)
    }

    /// A boolean server attribute, `default` when unset.
    pub fn server_flag(&self, name: &str, default: bool) -> bool {
        self.server_attr(name, None).and_then(pbs_core::attr::parse_bool).unwrap_or(default)
    }

    /// Counts jobs of a queue (or all queues) by state, for `state_count` and `total_jobs`.
    pub fn state_counts(&self, queue: Option<&str>) -> StateCounts {
        let mut counts = StateCounts::default();
        for job in self.jobs.values() {
            if queue.is_some_and(|q| &*job.queue != q) {
                continue;
            }
            match job.state {
                JobState::Transit => counts.transit += 1,
                JobState::Queued => counts.queued += 1,
                JobState::Held => counts.held += 1,
                JobState::Waiting => counts.waiting += 1,
                JobState::Running | JobState::Suspended | JobState::UserBusy => counts.running += 1,
                JobState::Exiting => counts.exiting += 1,
                JobState::Begun => counts.begun += 1,
                JobState::Finished | JobState::Moved | JobState::Expired => continue,
            }
            counts.total += 1;
        }
        counts
    }

    /// Allocates the next job sequence number, wrapping at `max_job_sequence_id` and
    /// skipping numbers still in use, so an id is never handed out twice.
    pub fn allocate_seq(&mut self) -> Option<u64> {
        let max =
            self.server_attr("max_job_sequence_id", None).and_then(|v| v.parse::<u64>().ok()).unwrap_or(9_999_999);
        for _ in 0..=max {
            let seq = if self.next_seq > max { 0 } else { self.next_seq };
            self.next_seq = seq + 1;
            if !self.jobs.contains_key(&seq) {
                return Some(seq);
            }
        }
        None
    }

    /// After an id was allocated: the store write that keeps the reservation ahead of
    /// `next_seq`, if one is due. A crash then skips at most [`SEQ_BLOCK`] ids and never
    /// reuses one.
    pub fn reserve_seq(&mut self) -> Option<StoreOp> {
        let outside = self.next_seq > self.seq_reserved || self.next_seq + SEQ_BLOCK < self.seq_reserved;
        if !outside {
            return None;
        }
        self.seq_reserved = self.next_seq + SEQ_BLOCK;
        Some(StoreOp::SetMeta { key: "next_seq", value: self.seq_reserved.to_string() })
    }

    /// The exact next id, written at a clean shutdown so that a restart does not skip ids.
    pub fn exact_seq_op(&mut self) -> StoreOp {
        self.seq_reserved = self.next_seq;
        StoreOp::SetMeta { key: "next_seq", value: self.next_seq.to_string() }
    }

    /// Text of a boolean for attribute values.
    pub fn bool_value(value: bool) -> &'static str {
        bool_text(value)
    }
}

/// Sets `name` (full dotted) on a list, ignoring names the table does not know.
pub fn set_named(list: &mut AttrList, kind: ObjectKind, name: &str, value: &str, interner: &mut Interner) {
    if let Some((def, resource)) = resolve(kind, name) {
        list.set(def, resource.map(|r| interner.intern(r)), value);
    }
}

/// Job counts by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// All non-history jobs.
    pub total: u64,
    /// T.
    pub transit: u64,
    /// Q.
    pub queued: u64,
    /// H.
    pub held: u64,
    /// W.
    pub waiting: u64,
    /// R, S, U.
    pub running: u64,
    /// E.
    pub exiting: u64,
    /// B.
    pub begun: u64,
}

impl StateCounts {
    /// OpenPBS's `state_count` text, trailing space included.
    pub fn text(&self) -> String {
        format!(
            "Transit:{} Queued:{} Held:{} Waiting:{} Running:{} Exiting:{} Begun:{} ",
            self.transit, self.queued, self.held, self.waiting, self.running, self.exiting, self.begun
        )
    }
}

impl State {
    /// Whether a job with `place` holds the vnodes of `exec` exclusively: node `sharing`
    /// against the job's `place` (`pbs_core::sharing`), any of them held so holds them
    /// all, as the scheduler's mirror books a run in flight.
    pub fn runs_exclusively(&self, place: Option<&pbs_core::Place>, exec: &ExecVnode) -> bool {
        let place = place.cloned().unwrap_or_default();
        exec.vnodes().iter().any(|name| {
            let sharing = self
                .nodes
                .iter()
                .find(|n| n.name == *name)
                .and_then(|n| n.attrs.get_named(ObjectKind::Node, "sharing", None))
                .map(pbs_core::sharing::NodeSharing::parse)
                .unwrap_or_default();
            pbs_core::sharing::is_excl(place.sharing, sharing)
        })
    }

    /// The placement a job's stored attributes name (read back at a start).
    fn placement_of(&self, job: &Job) -> Option<Arc<Placement>> {
        let exec: ExecVnode = job.attrs.get(job_idx!("exec_vnode"), None)?.parse().ok()?;
        let place = job.request().and_then(|r| r.place.as_ref());
        let exclusive = self.runs_exclusively(place, &exec);
        Some(Arc::new(Placement { exec, exclusive }))
    }
}
