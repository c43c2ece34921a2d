//! The state one cycle works on: what is free on each node, the running counts and
//! assigned sums, updated as the cycle books jobs so that later jobs see what earlier ones
//! took. Built from the mirror at the start of a cycle in one pass over the nodes (no
//! parsing, no per-job work), with the runs still in flight already booked.

use std::collections::HashMap;

use crate::limits::{RunCounts, Who};
use crate::mirror::{Mirror, Pending};
use crate::resources::{Kind, ResId, UNSET, add_amounts, amount_of};

/// Whom a job counts against in run limits: owner, group, project and queue, with the
/// amounts it counts for, and for a subjob its array's `max_run_subjobs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Counted {
    pub(crate) who: Who,
    pub(crate) queue: String,
    /// Its consumable `Resource_List` amounts (`max_run_res` limits).
    pub(crate) amounts: Vec<(ResId, i64)>,
    /// The array's sequence number, for a subjob.
    pub(crate) array: Option<u64>,
    /// Whether it counts against run limits: running, not yet exiting (the mirror's count).
    pub(crate) limits: bool,
}

impl Counted {
    /// A job as the mirror counts it: in run limits while running, against its array
    /// while running or exiting.
    pub(crate) fn of(m: &Mirror, job: &crate::mirror::Job) -> Counted {
        Counted {
            who: job.who(),
            queue: job.view.queue.clone(),
            amounts: m.request(job.request).job_wide.clone(),
            array: job.array_slot(),
            limits: job.running(),
        }
    }

    /// A subjob of `parent` (or `parent` itself when `array` is `None`) once it runs.
    pub(crate) fn run_of(m: &Mirror, parent: &crate::mirror::Job, array: Option<u64>) -> Counted {
        Counted { array, limits: true, ..Counted::of(m, parent) }
    }
}

/// A set of nodes with the sums OpenPBS keeps for a placement set: how many nodes there
/// are, how many are free, and per resource the available and assigned totals (a node that
/// is not free counts its assigned amount as available: it has nothing more to give).
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeSet {
    pub(crate) nodes: Vec<u32>,
    pub(crate) free_nodes: u32,
    pub(crate) avail: Vec<i64>,
    pub(crate) assigned: Vec<i64>,
}

/// Allocation of one chunk (kept in the mirror, which holds running jobs' allocations).
pub(crate) use crate::mirror::Alloc;

/// The cycle's working state.
#[derive(Clone)]
pub(crate) struct World<'m> {
    pub(crate) m: &'m Mirror,
    /// The cycle's time.
    pub(crate) now: i64,
    pub(crate) nres: usize,
    /// `assigned[slot * nres + res]`, zero when unset.
    pub(crate) assigned: Vec<i64>,
    pub(crate) free: Vec<bool>,
    /// Held exclusively by a job this cycle booked.
    pub(crate) exclusive: Vec<bool>,
    pub(crate) njobs: Vec<u32>,
    /// Node slot -> index in `pools`.
    pub(crate) node_pool: Vec<u32>,
    /// Pool 0 holds the nodes tied to no queue; one more per queue that has nodes.
    pub(crate) pools: Vec<NodeSet>,
    pub(crate) pool_of_queue: HashMap<&'m str, usize>,
    /// Vnodes per host, when some host has several.
    pub(crate) hosts: HashMap<&'m str, Vec<u32>>,
    pub(crate) multi_vnode: bool,
    pub(crate) ncpus: Option<ResId>,
    pub(crate) server_counts: RunCounts,
    pub(crate) server_assigned: Vec<i64>,
    pub(crate) queue_counts: HashMap<&'m str, RunCounts>,
    pub(crate) queue_assigned: HashMap<&'m str, Vec<i64>>,
    pub(crate) array_running: HashMap<u64, u64>,
}

impl<'m> World<'m> {
    pub(crate) fn new(m: &'m Mirror, now: i64) -> World<'m> {
        let nres = m.res.len().max(1);
        let slots = m.nodes.len();
        let mut world = World {
            m,
            now,
            nres,
            assigned: vec![0; slots * nres],
            free: vec![false; slots],
            exclusive: vec![false; slots],
            njobs: vec![0; slots],
            node_pool: vec![u32::MAX; slots],
            pools: vec![NodeSet::default()],
            pool_of_queue: HashMap::new(),
            hosts: HashMap::new(),
            multi_vnode: false,
            ncpus: m.res.get("ncpus"),
            server_counts: m.server_counts.clone(),
            server_assigned: m.server_assigned.clone(),
            queue_counts: HashMap::new(),
            queue_assigned: HashMap::new(),
            array_running: m.array_running.clone(),
        };
        for (name, entry) in &m.queues {
            world.queue_counts.insert(name.as_str(), entry.counts.clone());
            world.queue_assigned.insert(name.as_str(), entry.assigned.clone());
        }
        for &slot in &m.node_order {
            let Some(node) = m.node(slot) else { continue };
            let base = slot as usize * nres;
            for (r, value) in node.assigned.iter().enumerate().take(nres) {
                if *value != UNSET {
                    world.assigned[base + r] = *value;
                }
            }
            world.free[slot as usize] = node.free;
            world.njobs[slot as usize] = node.njobs;
            let pool = match &node.queue {
                None => 0,
                Some(queue) => {
                    let next = world.pools.len();
                    let pool = *world.pool_of_queue.entry(queue.as_str()).or_insert(next);
                    if pool == next {
                        world.pools.push(NodeSet::default());
                    }
                    pool
                }
            };
            world.node_pool[slot as usize] = u32::try_from(pool).unwrap_or(u32::MAX);
            world.pools[pool].nodes.push(slot);
            world.hosts.entry(node.host.as_str()).or_default().push(slot);
        }
        world.multi_vnode = world.hosts.values().any(|v| v.len() > 1);
        if !world.multi_vnode {
            // Host sets are only needed when a host has several vnodes.
            world.hosts.clear();
        }
        for pool in 0..world.pools.len() {
            let nodes = std::mem::take(&mut world.pools[pool].nodes);
            for &slot in &nodes {
                world.add_contribution(pool, slot, 1);
            }
            world.pools[pool].nodes = nodes;
        }
        for pending in m.pending.values() {
            world.book_pending(pending);
        }
        world
    }

    pub(crate) fn assigned(&self, slot: u32, id: ResId) -> i64 {
        self.assigned.get(slot as usize * self.nres + usize::from(id)).copied().unwrap_or(0)
    }

    fn add_assigned(&mut self, slot: u32, id: ResId, amount: i64) {
        if usize::from(id) >= self.nres {
            return;
        }
        let index = slot as usize * self.nres + usize::from(id);
        if let Some(value) = self.assigned.get_mut(index) {
            *value = value.saturating_add(amount);
        }
    }

    /// Adds (`sign` 1) or removes (-1) a node's share of the sums of the pool it is in.
    fn contribute(&mut self, slot: u32, sign: i64) {
        let pool = self.node_pool[slot as usize] as usize;
        if pool < self.pools.len() {
            self.add_contribution(pool, slot, sign);
        }
    }

    /// Adds (`sign` 1) or removes (-1) a node's share of `pool`'s sums.
    fn add_contribution(&mut self, pool: usize, slot: u32, sign: i64) {
        let Some(node) = self.m.node(slot) else { return };
        let free = self.free[slot as usize];
        if free {
            let set = &mut self.pools[pool];
            set.free_nodes = set.free_nodes.saturating_add_signed(if sign > 0 { 1 } else { -1 });
        }
        for r in 0..self.nres {
            let id = ResId::try_from(r).unwrap_or(ResId::MAX);
            let kind = self.m.res.kind(id);
            if !kind.consumable() {
                continue;
            }
            let avail = amount_of(&node.avail, id);
            let assigned = self.assigned(slot, id);
            if avail == UNSET && assigned == 0 {
                continue;
            }
            let contributed = if free { if avail == UNSET { 0 } else { avail } } else { assigned };
            let set = &mut self.pools[pool];
            add_amounts(&mut set.avail, &[(id, contributed)], sign);
            add_amounts(&mut set.assigned, &[(id, assigned)], sign);
        }
    }

    /// The node is full or held exclusively now: it stops being free.
    fn update_free(&mut self, slot: u32, exclusive: bool) {
        if !self.free[slot as usize] {
            return;
        }
        let Some(node) = self.m.node(slot) else { return };
        let full = self.ncpus.is_some_and(|id| {
            let avail = amount_of(&node.avail, id);
            avail != UNSET && self.assigned(slot, id) >= avail
        });
        if exclusive || full {
            self.free[slot as usize] = false;
            self.exclusive[slot as usize] = exclusive;
        }
    }

    /// Books a placement: resources, job counts per node, node states, pool sums.
    pub(crate) fn book_nodes(&mut self, allocs: &[Alloc], exclusive_nodes: &[u32]) {
        let mut touched: Vec<u32> = Vec::with_capacity(allocs.len());
        for alloc in allocs {
            if !touched.contains(&alloc.node) {
                touched.push(alloc.node);
            }
        }
        for &slot in exclusive_nodes {
            if !touched.contains(&slot) {
                touched.push(slot);
            }
        }
        for &slot in &touched {
            self.contribute(slot, -1);
        }
        for alloc in allocs {
            for &(id, amount) in &alloc.taken {
                self.add_assigned(alloc.node, id, amount);
            }
        }
        for &slot in &touched {
            if allocs.iter().any(|a| a.node == slot) {
                self.njobs[slot as usize] = self.njobs[slot as usize].saturating_add(1);
            }
            self.update_free(slot, exclusive_nodes.contains(&slot));
            self.contribute(slot, 1);
        }
    }

    /// Releases a placement (a job ending on the calendar): the reverse of
    /// [`World::book_nodes`]. A node whose state lets jobs run becomes free again once it
    /// has room (or no job) left.
    pub(crate) fn unbook_nodes(&mut self, allocs: &[Alloc], exclusive: bool) {
        let mut touched: Vec<u32> = Vec::with_capacity(allocs.len());
        for alloc in allocs {
            if !touched.contains(&alloc.node) {
                touched.push(alloc.node);
            }
        }
        for &slot in &touched {
            self.contribute(slot, -1);
        }
        for alloc in allocs {
            for &(id, amount) in &alloc.taken {
                self.add_assigned(alloc.node, id, -amount);
            }
        }
        for &slot in &touched {
            let i = slot as usize;
            self.njobs[i] = self.njobs[i].saturating_sub(1);
            if exclusive {
                self.exclusive[i] = false;
            }
            if let Some(node) = self.m.node(slot) {
                let usable = node.state.split(',').all(|t| matches!(t.trim(), "free" | "job-busy" | "job-exclusive"));
                let held = self.exclusive[i] || (node.state.contains("job-exclusive") && !exclusive);
                let room = self.ncpus.is_none_or(|id| {
                    let avail = amount_of(&node.avail, id);
                    avail == UNSET || self.assigned(slot, id) < avail
                });
                self.free[i] = usable && (self.njobs[i] == 0 || (!held && room));
            }
            self.contribute(slot, 1);
        }
    }

    /// Adds (`sign` 1) or removes (-1) a job from the run-limit counts only: the
    /// calendar's view of who runs at some later time.
    pub(crate) fn count_run(&mut self, counted: &Counted, sign: i64) {
        if counted.limits {
            self.server_counts.add(counted.who, &counted.amounts, sign);
            if let Some(counts) = self.queue_counts.get_mut(counted.queue.as_str()) {
                counts.add(counted.who, &counted.amounts, sign);
            }
        }
        if let Some(seq) = counted.array {
            let running = self.array_running.entry(seq).or_default();
            *running = running.saturating_add_signed(sign);
        }
    }

    /// Adds (`sign` 1) or gives back (-1) a job's share of its queue's and the server's
    /// `resources_assigned` sums: what a preempted job frees of a pool's consumables, and
    /// a resumed one takes again.
    pub(crate) fn add_sums(&mut self, queue: &str, job_wide: &[(ResId, i64)], sign: i64) {
        add_amounts(&mut self.server_assigned, job_wide, sign);
        if let Some(assigned) = self.queue_assigned.get_mut(queue) {
            add_amounts(assigned, job_wide, sign);
        }
    }

    /// Counts a started job against the limits and the queue and server sums.
    pub(crate) fn book_counts(&mut self, queue: &str, who: Who, job_wide: &[(ResId, i64)], parent_seq: Option<u64>) {
        self.server_counts.add(who, job_wide, 1);
        add_amounts(&mut self.server_assigned, job_wide, 1);
        if let Some(counts) = self.queue_counts.get_mut(queue) {
            counts.add(who, job_wide, 1);
        }
        if let Some(assigned) = self.queue_assigned.get_mut(queue) {
            add_amounts(assigned, job_wide, 1);
        }
        if let Some(seq) = parent_seq {
            *self.array_running.entry(seq).or_default() += 1;
        }
    }

    fn book_pending(&mut self, pending: &Pending) {
        let allocs: Vec<Alloc> =
            pending.booking.allocs.iter().map(|(node, taken)| Alloc { node: *node, taken: taken.clone() }).collect();
        self.book_nodes(&allocs, &pending.booking.exclusive);
        self.book_counts(&pending.queue, pending.who, &pending.job_wide, pending.parent_seq);
    }

    /// Distinct values of a string resource over a node set.
    pub(crate) fn set_strs(&self, nodes: &[u32], id: ResId) -> Vec<String> {
        let mut values: Vec<String> = Vec::new();
        for &slot in nodes {
            let Some(node) = self.m.node(slot) else { continue };
            for value in node.str_values(id).unwrap_or(&[]) {
                if !values.contains(value) {
                    values.push(value.clone());
                }
            }
        }
        values
    }

    /// Whether some node of the set has True, and some False (unset counts as False).
    pub(crate) fn set_bools(&self, nodes: &[u32], id: ResId) -> (bool, bool) {
        let (mut has_true, mut has_false) = (false, false);
        for &slot in nodes {
            let Some(node) = self.m.node(slot) else { continue };
            if self.m.res.kind(id) == Kind::Bool && amount_of(&node.avail, id) == 1 {
                has_true = true;
            } else {
                has_false = true;
            }
        }
        (has_true, has_false)
    }
}
