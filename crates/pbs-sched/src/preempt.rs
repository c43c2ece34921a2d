//! Preemption in the scheduler: the scheduler object's settings, the preemption level
//! of a job (`preempt_prio`'s classes), and which running jobs to preempt so that a job
//! of a higher level can run: the fewest that free enough, taken in `preempt_sort`
//! order. The cycle asks through [`choose`] and the daemon sends the list in one
//! PreemptJobs request.

use pbs_core::preempt::{Class, Classes, Targets};
use pbs_core::sharing::is_excl;

use crate::limits::RunCounts;
use crate::mirror::{Alloc, ArrayRole, Job, Mirror};
use crate::resources::ResId;
use crate::world::{Counted, World};

/// A job's preemption level: its `preempt_prio` rank, then (express jobs) its queue's
/// priority, so that several express queues preempt in their order, as OpenPBS adds the
/// queue's priority to the level.
pub(crate) type Level = (u32, i64);

/// The level of `job` in `world`: `starving` for a queued job that is; its soft-limit
/// classes from its entities' usage in that world, queued or running, as OpenPBS's
/// `check_soft_limits` reads them, so a simulated preemption that brings an entity back
/// under a limit raises its jobs' levels.
pub(crate) fn level(world: &World<'_>, job: &Job, starving: bool) -> Level {
    let m = world.m;
    let queue_info = m.queues.get(&job.view.queue).and_then(|q| q.info.as_ref());
    let queue_priority = queue_info.map_or(0, |i| i.priority);
    let mut classes = Classes::default();
    let express = queue_priority >= m.preempt.queue_prio;
    if express {
        classes.insert(Class::ExpressQueue);
    }
    if starving {
        classes.insert(Class::StarvingJobs);
    }
    if queue_info.is_some_and(|i| !i.limits.soft.is_empty()) || !m.server.limits.soft.is_empty() {
        let no_counts = RunCounts::default();
        let queue_counts = world.queue_counts.get(job.view.queue.as_str()).unwrap_or(&no_counts);
        let over = m.soft_standing_with(job, queue_counts, &world.server_counts);
        if over.queue {
            classes.insert(Class::QueueSoftlimits);
        }
        if over.server {
            classes.insert(Class::ServerSoftlimits);
        }
    }
    (m.preempt.prio.level(classes), if express { queue_priority } else { 0 })
}

/// Whether any soft run limit is set: only then can a preemption change a level.
fn any_soft_limits(m: &Mirror) -> bool {
    !m.server.limits.soft.is_empty()
        || m.queues.values().any(|q| q.info.as_ref().is_some_and(|i| !i.limits.soft.is_empty()))
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

/// What [`choose`] found: the jobs to preempt, if enough room can be made, and the
/// candidates passed over because preempting them would raise a job's level above the
/// preempting job's (OpenPBS's priority escalation), for the log.
#[derive(Debug, Default)]
pub(crate) struct Choice {
    pub(crate) jobs: Option<Vec<String>>,
    pub(crate) escalating: Vec<String>,
}

/// The log line of a candidate passed over by priority escalation, as OpenPBS's.
pub(crate) const ESCALATES: &str =
    "Preempting job will escalate its priority or priority of other jobs, not preempting it";

/// The running jobs to preempt so that `for_job`, of level `high`, fits (`fits` says
/// whether it does in a world), or `None` when preempting every lower-level job its
/// `preempt_targets` admits would not make room (then nothing is preempted). Candidates
/// go in `preempt_sort` order and are taken until the job fits; one whose preemption
/// would lift it, or a job taken before it, above `high` (an entity brought back under a
/// soft limit) is passed over; then each taken job the job still fits without is left
/// running, so the list is the fewest this order finds. `kin`: the array whose running
/// subjobs share `high` (a qrun of one of its subjobs), so none of them is taken.
pub(crate) fn choose(
    world: &World<'_>,
    for_job: &Job,
    high: Level,
    kin: Option<u64>,
    fits: impl Fn(&World<'_>) -> bool,
) -> Choice {
    let m = world.m;
    let targets = targets(m, for_job);
    let admitted = |job: &Job| {
        targets.as_ref().is_none_or(|t| {
            t.admits(&job.view.queue, |name| {
                job.view.resources.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
            })
        })
    };
    let mut candidates: Vec<(&Job, Level)> = m
        .jobs
        .iter()
        .flatten()
        .filter(|job| job.running() && job.view.substate == 42 && job.exec.is_some())
        .filter(|job| !m.pending.contains_key(&job.view.id))
        .filter(|job| kin.is_none_or(|seq| !matches!(job.array, ArrayRole::Sub { .. }) || job.view.seq != seq))
        .map(|job| (job, level(world, job, false)))
        .filter(|&(job, level)| level < high && admitted(job))
        .collect();
    let mut choice = Choice::default();
    if candidates.is_empty() {
        return choice;
    }
    if m.preempt.by_start {
        candidates.sort_by(|(a, _), (b, _)| b.view.stime.cmp(&a.view.stime).then(b.view.seq.cmp(&a.view.seq)));
    } else {
        candidates.sort_by_key(|&(job, level)| (level, std::cmp::Reverse(job.view.stime)));
    }
    let soft = any_soft_limits(m);
    let mut sim = world.clone();
    let mut taken: Vec<&Job> = Vec::new();
    for (job, _) in candidates {
        let before = soft.then(|| sim.clone());
        release(&mut sim, job);
        if let Some(before) = before
            && taken.iter().chain([&job]).any(|t| level(&sim, t, false) > high)
        {
            sim = before;
            choice.escalating.push(job.view.id.clone());
            continue;
        }
        taken.push(job);
        if fits(&sim) {
            break;
        }
    }
    if !fits(&sim) {
        return choice;
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
    choice.jobs = Some(taken.iter().map(|job| job.view.id.clone()).collect());
    choice
}

/// Gives back what a running job holds in a simulated world: its vnodes' resources, its
/// share of its queue's and the server's consumables, and its run-limit counts. Under
/// `restrict_res_to_release_on_suspend` only the resources it names, as a suspension
/// gives back (a victim the server requeues instead frees more than planned).
fn release(world: &mut World<'_>, job: &Job) {
    let m = world.m;
    let Some(allocs) = job.allocs() else { return };
    let req = m.request(job.request);
    let exclusive = allocs.iter().any(|a| m.node(a.node).is_some_and(|node| is_excl(req.sharing, node.sharing)));
    match &m.server.release_on_suspend {
        None => {
            world.unbook_nodes(allocs, exclusive);
            world.add_sums(&job.view.queue, &req.job_wide, -1);
        }
        Some(names) => {
            let kept = |taken: &[(ResId, i64)]| -> Vec<(ResId, i64)> {
                taken.iter().copied().filter(|(id, _)| names.contains(id)).collect()
            };
            let released: Vec<Alloc> = allocs.iter().map(|a| Alloc { node: a.node, taken: kept(&a.taken) }).collect();
            world.unbook_nodes(&released, exclusive);
            world.add_sums(&job.view.queue, &kept(&req.job_wide), -1);
        }
    }
    world.count_run(&Counted::of(m, job), -1);
}
