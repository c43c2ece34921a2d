//! The calendar: when the top jobs (the highest-priority jobs that cannot run now, at most
//! `backfill_depth` of them) are expected to start, and whether a lower-priority job
//! (a filler) may run now without delaying them.
//!
//! Built lazily, the first time a cycle needs a top job: every running job (and every run
//! in flight or started this cycle) ends at its expected end ([`crate::walltime`]: the
//! current soft_walltime estimate, else walltime; jobs without a walltime never end).
//! A top job's start is the first such end after which its placement succeeds, and its
//! run limits pass, on the cycle's world with those jobs released (and no longer counted
//! against their owner, group and queue), holding the resources of every top job planned
//! earlier whose run meets that start and the job's expected duration: a later top job
//! may slip in before an earlier one when it ends in time, as on OpenPBS's timeline.
//!
//! A filler may run now when, for every top job starting before the filler's expected
//! end, the filler takes on the top job's planned nodes no more than what the top job
//! leaves spare there (and neither holds such a node exclusively). When its first
//! placement fails that test, it is placed again on the other nodes only (OpenPBS finds
//! such nodes ineligible for it); failing both, it gets OpenPBS's `Not Running: Job
//! would conflict with reservation or top job`.

use std::collections::HashMap;

use crate::mirror::Mirror;
use pbs_core::sharing::is_excl;

use crate::place::{Placed, SetView, can_fit_set, find_nodes};
use crate::resources::{ResId, UNSET, amount_of};
use crate::walltime::{JOB_INFINITY, planned_duration, running_end};
use crate::world::{Alloc, Counted, World};

/// A job that holds resources now and releases them at `end`.
#[derive(Clone, Debug)]
pub(crate) struct Ending {
    pub(crate) end: i64,
    pub(crate) allocs: Vec<Alloc>,
    pub(crate) exclusive: bool,
    /// Whom it counts against, when known.
    pub(crate) counted: Option<Counted>,
}

/// A top job's plan.
#[derive(Clone, Debug)]
pub(crate) struct Top {
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) placed: Placed,
    /// Per planned node: what is left of each consumable once the top job starts there.
    spare: HashMap<u32, Vec<(ResId, i64)>>,
    /// Whom the top job counts against while it runs.
    pub(crate) counted: Option<Counted>,
}

/// The cycle's calendar.
#[derive(Clone, Debug, Default)]
pub(crate) struct Calendar {
    pub(crate) ends: Vec<Ending>,
    pub(crate) tops: Vec<Top>,
}

/// The end of a job that lasts `duration` from `start`: `None` for "forever".
pub(crate) fn end_of(start: i64, duration: i64) -> Option<i64> {
    (duration < JOB_INFINITY).then(|| start.saturating_add(duration))
}

impl Calendar {
    /// The ends of the jobs holding resources at `now`: running jobs from the mirror,
    /// runs in flight, and `started` (this cycle's runs). Jobs that never end are left
    /// out: their resources never come back.
    pub(crate) fn build(m: &Mirror, now: i64, started: &[Ending]) -> Calendar {
        let mut ends = Vec::new();
        for job in m.jobs.iter().flatten() {
            if !matches!(job.view.state, 'R' | 'E') {
                continue;
            }
            let Some(allocs) = job.allocs() else { continue };
            let duration = end_duration(&job.view, now);
            let Some(end) = end_of(now, duration) else { continue };
            let req = m.request(job.request);
            let allocs = allocs.to_vec();
            let exclusive =
                allocs.iter().any(|a| m.node(a.node).is_some_and(|node| is_excl(req.sharing, node.sharing)));
            ends.push(Ending { end, allocs, exclusive, counted: Some(Counted::of(m, job)) });
        }
        for (id, pending) in &m.pending {
            let duration = m
                .job_slot(id)
                .or_else(|| m.job_slot(&crate::mirror::subjob_parent_id(id)?))
                .and_then(|slot| m.job(slot))
                .map_or(JOB_INFINITY, |job| planned_duration(&job.view));
            let Some(end) = end_of(now, duration) else { continue };
            let allocs = pending.booking.allocs.iter().map(|(node, taken)| Alloc { node: *node, taken: taken.clone() });
            // Counted as the world booked it.
            let counted = Counted {
                who: pending.who,
                queue: pending.queue.clone(),
                amounts: pending.job_wide.clone(),
                array: pending.parent_seq,
                limits: true,
            };
            ends.push(Ending {
                end,
                allocs: allocs.collect(),
                exclusive: !pending.booking.exclusive.is_empty(),
                counted: Some(counted),
            });
        }
        ends.extend(started.iter().cloned());
        Calendar { ends, tops: Vec::new() }
    }

    /// When and where a job needing `req` on `nodes` (pool `pool`) could start, given
    /// the world now: the first end after which it fits. `None` when it never fits.
    /// `allowed(t)` says whether the job may start at `t` (dedicated time); `extra` are
    /// further times worth trying (when dedicated windows open or close).
    pub(crate) fn plan(
        &self,
        world: &World<'_>,
        req: &crate::mirror::Request,
        pool: usize,
        duration: i64,
        allowed: impl Fn(i64, &World<'_>) -> bool,
        extra: &[i64],
    ) -> Option<Top> {
        let mut sim = world.clone();
        let mut events: Vec<(i64, &[Alloc], bool, Option<&Counted>)> =
            self.ends.iter().map(|e| (e.end, e.allocs.as_slice(), e.exclusive, e.counted.as_ref())).collect();
        events.extend(extra.iter().map(|&t| (t, &[][..], false, None)));
        // A top job's end is a time worth trying; its resources are booked only for the
        // tries whose window meets its own.
        let top_ends = self.tops.iter().filter_map(|top| end_of(top.start, top.end - top.start));
        events.extend(top_ends.map(|t| (t, &[][..], false, None)));
        events.sort_by_key(|e| e.0);
        let nodes = world.pools.get(pool).map(|s| s.nodes.clone()).unwrap_or_default();
        let mut i = 0;
        while i < events.len() {
            let t = events[i].0;
            while i < events.len() && events[i].0 == t {
                if !events[i].1.is_empty() {
                    sim.unbook_nodes(events[i].1, events[i].2);
                }
                if let Some(counted) = events[i].3 {
                    sim.count_run(counted, -1);
                }
                i += 1;
            }
            let until = end_of(t, duration).unwrap_or(i64::MAX);
            let meeting: Vec<&Top> = self.tops.iter().filter(|top| top.start < until && top.end > t).collect();
            for top in &meeting {
                sim.book_nodes(&top.placed.allocs, &top.placed.exclusive);
                if let Some(counted) = &top.counted {
                    sim.count_run(counted, 1);
                }
            }
            if !allowed(t, &sim) {
                for top in meeting.iter().rev() {
                    unbook_top(&mut sim, top);
                }
                continue;
            }
            let set = &sim.pools[pool];
            let view =
                SetView { nodes: &set.nodes, free_nodes: set.free_nodes, avail: &set.avail, assigned: &set.assigned };
            let placed = match can_fit_set(&sim, &view, req, false) {
                Ok(()) => find_nodes(&sim, req, &nodes).ok(),
                Err(_) => None,
            };
            let Some(placed) = placed else {
                for top in meeting.iter().rev() {
                    unbook_top(&mut sim, top);
                }
                continue;
            };
            sim.book_nodes(&placed.allocs, &placed.exclusive);
            let mut spare = HashMap::new();
            for alloc in &placed.allocs {
                let Some(node) = sim.m.node(alloc.node) else { continue };
                let left: Vec<(ResId, i64)> = (0..sim.nres)
                    .filter_map(|r| {
                        let id = ResId::try_from(r).ok()?;
                        let avail = amount_of(&node.avail, id);
                        (sim.m.res.kind(id).consumable() && avail != UNSET)
                            .then(|| (id, avail - sim.assigned(alloc.node, id)))
                    })
                    .collect();
                spare.insert(alloc.node, left);
            }
            let end = t.saturating_add(duration);
            return Some(Top { start: t, end, placed, spare, counted: None });
        }
        None
    }

    /// Whether a filler placed now and ending at `end` (`None`: never) leaves every top
    /// job its planned resources; if so, books what it takes from their spare amounts.
    pub(crate) fn admit_filler(&mut self, placed: &Placed, end: Option<i64>) -> bool {
        let overlaps = |top: &Top| end.is_none_or(|end| end > top.start);
        if self.tops.iter().any(|top| overlaps(top) && conflicts(top, placed)) {
            return false;
        }
        for top in self.tops.iter_mut().filter(|t| overlaps(t)) {
            for alloc in &placed.allocs {
                let Some(spare) = top.spare.get_mut(&alloc.node) else { continue };
                for &(id, amount) in &alloc.taken {
                    if let Some(entry) = spare.iter_mut().find(|(r, _)| *r == id) {
                        entry.1 -= amount;
                    }
                }
            }
        }
        true
    }

    /// The nodes planned for a top job that starts before `end` (`None`: never): a filler
    /// ending then must keep off them, as OpenPBS's per-node check of calendar events
    /// makes such a node ineligible for it.
    pub(crate) fn nodes_to_avoid(&self, end: Option<i64>) -> Vec<u32> {
        let mut nodes: Vec<u32> = self
            .tops
            .iter()
            .filter(|top| end.is_none_or(|end| end > top.start))
            .flat_map(|top| top.spare.keys().copied().chain(top.placed.exclusive.iter().copied()))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// The latest end a placement may have without delaying a top job (`None`: no limit):
    /// the earliest start among the top jobs it would take resources from.
    pub(crate) fn latest_end(&self, placed: &Placed) -> Option<i64> {
        self.tops.iter().filter(|top| conflicts(top, placed)).map(|top| top.start).min()
    }
}

/// Takes back what trying a start booked for `top`.
fn unbook_top(sim: &mut World<'_>, top: &Top) {
    sim.unbook_nodes(&top.placed.allocs, !top.placed.exclusive.is_empty());
    if let Some(counted) = &top.counted {
        sim.count_run(counted, -1);
    }
}

/// Whether a placement, running while `top` starts, takes what `top` needs.
fn conflicts(top: &Top, placed: &Placed) -> bool {
    for alloc in &placed.allocs {
        let Some(spare) = top.spare.get(&alloc.node) else { continue };
        if placed.exclusive.contains(&alloc.node) || top.placed.exclusive.contains(&alloc.node) {
            return true;
        }
        for &(id, amount) in &alloc.taken {
            let left = spare.iter().find(|(r, _)| *r == id).map_or(i64::MAX, |(_, v)| *v);
            if amount > 0 && amount > left {
                return true;
            }
        }
    }
    placed.exclusive.iter().any(|node| top.spare.contains_key(node))
}

/// How long a running job is expected to last in all, seen from `now` (its end minus
/// `now`, at least 0), as the calendar's duration from `now`.
fn end_duration(job: &pbs_proto::sched::SchedJob, now: i64) -> i64 {
    let duration = crate::walltime::running_duration(job, now);
    if duration >= JOB_INFINITY {
        return JOB_INFINITY;
    }
    (running_end(job, now) - now).max(0)
}
