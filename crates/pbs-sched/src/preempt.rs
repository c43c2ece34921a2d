//! Preemption in the scheduler: the scheduler object's settings, the preemption level
//! of a job (`preempt_prio`'s classes), and which running jobs to preempt so that a job
//! of a higher level can run: the fewest that free enough, taken in `preempt_sort`
//! order. The cycle asks through [`choose`] and the daemon sends the list in one
//! PreemptJobs request.

use pbs_core::preempt::{Class, Classes, Targets};
use pbs_core::sharing::is_excl;

use crate::mirror::{ArrayRole, Job, Mirror};
use crate::world::{Counted, World};

/// A job's preemption level: its `preempt_prio` rank, then (express jobs) its queue's
/// priority, so that several express queues preempt in their order, as OpenPBS adds the
/// queue's priority to the level.
pub(crate) type Level = (u32, i64);

/// The level of `job`: `starving` for a queued job that is, soft limits read for a
/// running one.
pub(crate) fn level(m: &Mirror, job: &Job, starving: bool) -> Level {
    let queue_priority = m.queues.get(&job.view.queue).and_then(|q| q.info.as_ref()).map_or(0, |i| i.priority);
    let mut classes = Classes::default();
    let express = queue_priority >= m.preempt.queue_prio;
    if express {
        classes.insert(Class::ExpressQueue);
    }
    if starving {
        classes.insert(Class::StarvingJobs);
    }
    if let Some(over) = m.over_soft_limits(&job.view.id) {
        if over.queue {
            classes.insert(Class::QueueSoftlimits);
        }
        if over.server {
            classes.insert(Class::ServerSoftlimits);
        }
    }
    (m.preempt.prio.level(classes), if express { queue_priority } else { 0 })
}

/// The level of a `qrun`'s job: above every class of `preempt_prio`, as OpenPBS puts its
/// qrun class first.
pub(crate) const QRUN: Level = (u32::MAX, 0);

/// The `preempt_targets` of `job` the scheduler obeys: none when unset, unreadable or
/// `preempt_targets_enable` is off (then every lower-level job is a candidate).
pub(crate) fn targets(m: &Mirror, job: &Job) -> Option<Targets> {
    if !m.preempt.targets_enable {
        return None;
    }
    let (_, value) = job.view.resources.iter().find(|(name, _)| name == "preempt_targets")?;
    Targets::read(value)
}

/// The running jobs to preempt so that `for_job`, of level `high`, fits (`fits` says
/// whether it does in a world), or `None` when preempting every lower-level job its
/// `preempt_targets` admits would not make room (then nothing is preempted). Candidates
/// go in `preempt_sort` order and are taken until the job fits; then each taken job the
/// job still fits without is left running, so the list is the fewest this order finds.
/// `kin`: the array whose running subjobs share `high` (a qrun of one of its subjobs), so
/// none of them is taken.
pub(crate) fn choose(
    world: &World<'_>,
    for_job: &Job,
    high: Level,
    kin: Option<u64>,
    fits: impl Fn(&World<'_>) -> bool,
) -> Option<Vec<String>> {
    let m = world.m;
    let targets = targets(m, for_job);
    let admitted = |job: &Job| {
        targets.as_ref().is_none_or(|t| {
            t.admits(&job.view.queue, |name| {
                job.view.resources.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
            })
        })
    };
    let mut candidates: Vec<&Job> = m
        .jobs
        .iter()
        .flatten()
        .filter(|job| job.running() && job.view.substate == 42 && job.exec.is_some())
        .filter(|job| !m.pending.contains_key(&job.view.id))
        .filter(|job| kin.is_none_or(|seq| !matches!(job.array, ArrayRole::Sub { .. }) || job.view.seq != seq))
        .filter(|job| level(m, job, false) < high)
        .filter(|job| admitted(job))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    if m.preempt.by_start {
        candidates.sort_by(|a, b| b.view.stime.cmp(&a.view.stime).then(b.view.seq.cmp(&a.view.seq)));
    } else {
        candidates.sort_by_key(|job| (level(m, job, false), std::cmp::Reverse(job.view.stime)));
    }
    let mut sim = world.clone();
    let mut taken: Vec<&Job> = Vec::new();
    for job in candidates {
        release(&mut sim, job);
        taken.push(job);
        if fits(&sim) {
            break;
        }
    }
    if !fits(&sim) {
        return None;
    }
    // The last one taken made the room; any earlier one the job does not need stays.
    let mut i = 0;
    while i + 1 < taken.len() {
        let mut without = world.clone();
        for (j, job) in taken.iter().enumerate() {
            if j != i {
                release(&mut without, job);
            }
        }
        if fits(&without) {
            taken.remove(i);
        } else {
            i += 1;
        }
    }
    Some(taken.iter().map(|job| job.view.id.clone()).collect())
}

/// Gives back what a running job holds in a simulated world: its vnodes' resources, its
/// share of its queue's and the server's consumables, and its run-limit counts.
fn release(world: &mut World<'_>, job: &Job) {
    let m = world.m;
    let Some(allocs) = job.allocs() else { return };
    let req = m.request(job.request);
    let exclusive = allocs.iter().any(|a| m.node(a.node).is_some_and(|node| is_excl(req.sharing, node.sharing)));
    world.unbook_nodes(allocs, exclusive);
    world.add_sums(&job.view.queue, &req.job_wide, -1);
    world.count_run(&Counted::of(m, job), -1);
}
