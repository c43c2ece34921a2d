//! One scheduling cycle over the mirror, and the placement of a single `qrun` job.
//!
//! The order of checks for a job is OpenPBS's `is_ok_to_run`: its equivalence class
//! (already found unable to run this cycle?), the quick test against all the nodes it may
//! use (Not Running / Can Never Run with `(R: A: T:)`), run limits, `max_run_subjobs`,
//! queue then server resources, and finally the node search. Jobs come in order: queue
//! `Priority`, job `Priority`, submission.
//!
//! Equivalence classes: jobs of one queue asking for the same select, place and
//! resources (and, where user or group limits exist, of the same owner or group) get the
//! same answer until something is booked, and booking only takes resources away; so a
//! class that failed once fails for the rest of the cycle and its other jobs cost a hash
//! lookup. That is what keeps a cycle over 100,000 waiting jobs cheap.
//!
//! Arrays: a parent `12[]` stands in the queue for its queued subjobs, the indices of
//! `array_indices_remaining` in ascending order, taken one at a time from runs parsed
//! once per change (never expanded), until one cannot start. `max_run_subjobs` counts
//! the array's running and exiting subjobs (not suspended ones) plus those started this
//! cycle; hitting it holds back only that array (its class stays runnable) and is
//! reported in [`Decisions::log`] for the daemon to log.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use pbs_core::{IndexSet, JobId};
use pbs_proto::Attr;
use pbs_proto::sched::{Action, JobUpdate, RunDecision};

use crate::calendar::{Calendar, Ending, end_of};
use crate::config::PeriodPolicy;
use pbs_core::entlim::EntityKind;

use crate::limits::{check_limits, soft_standing};
use crate::mirror::{ArrayRole, Booking, Job, Mirror, QueueInfo, subjob_parent_id};
use crate::place::{SetView, can_fit_set, find_nodes};
use crate::reason::{Failure, Reason, Status};
use crate::resources::{ResId, UNSET, amount_of, exec_amount, format_amount};
use crate::walltime::{JOB_INFINITY, planned_duration, shrink_range};
use crate::world::{Alloc, Counted, World};

/// What a cycle (or a qrun) decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions {
    /// What the server is to do, in this order: every attribute update (comments that
    /// change, estimates, shrink-to-fit walltimes), then the jobs to start in the order
    /// they were placed. Updates go first so that a run's own comment (`Job run at ...`)
    /// is the last word on its job, and a walltime is set while its job is still queued.
    pub actions: Vec<Action>,
    /// Lines for the daemon to log (the core does no I/O); not sent to the server.
    pub log: Vec<LogEvent>,
    /// The lines of OpenPBS's main loop for each job the cycle looked at: `Considering job
    /// to run`, then `Job run` or why not (the reason's log text). A job passed over
    /// because its equivalence class already failed, or by strict ordering, costs no line:
    /// a cycle over 100,000 waiting jobs would otherwise log 200,000.
    pub considered: Vec<LogEvent>,
    /// Where each run goes, as placed, by job id: what the mirror books for it while the
    /// server applies it (see `Mirror::note_sent`).
    pub(crate) bookings: HashMap<String, Booking>,
    /// "Job can't run" updates (`comment`, `estimated.*`) this cycle held back because
    /// `attr_update_period` has not passed (`None`: they were sent, as every cycle without
    /// a period).
    pub held_back: Option<usize>,
    /// Running jobs to preempt for a job of higher priority that cannot run: at most one
    /// list per cycle, sent in one PreemptJobs request once these decisions are applied.
    pub preempt: Option<Preemption>,
}

/// The jobs a cycle preempts, and for which job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemption {
    /// The job that is to run once they are preempted.
    pub for_job: String,
    /// Full ids of the running jobs to preempt.
    pub jobs: Vec<String>,
}

impl Decisions {
    /// The jobs to start, in order.
    pub fn runs(&self) -> impl Iterator<Item = &RunDecision> {
        self.actions.iter().filter_map(|action| match action {
            Action::Run(run) => Some(run),
            Action::Update(_) | Action::Resume { .. } => None,
        })
    }

    /// The attribute updates, in order.
    pub fn updates(&self) -> impl Iterator<Item = &JobUpdate> {
        self.actions.iter().filter_map(|action| match action {
            Action::Update(update) => Some(update),
            Action::Run(_) | Action::Resume { .. } => None,
        })
    }
}

/// Decisions as a cycle makes them: runs and updates come in any order and are put in
/// the order the server applies them once the cycle is over. Updates are kept as actions
/// from the start: a first cycle over 100,000 jobs has as many comments, and they are
/// not copied again.
#[derive(Default)]
struct Out {
    updates: Vec<Action>,
    runs: Vec<Action>,
    log: Vec<LogEvent>,
    considered: Vec<LogEvent>,
    bookings: HashMap<String, Booking>,
    /// `attr_update_period` has not passed: "job can't run" updates are counted, not sent.
    hold_can_t_run: bool,
    held_back: usize,
    preempt: Option<Preemption>,
    /// Jobs whose `accrue_type` changes this cycle: their other updates go out with it,
    /// whatever `attr_update_period` says, so eligible time is accrued exactly.
    accrue_changed: HashSet<String>,
}

impl Out {
    fn push_update(&mut self, update: JobUpdate) {
        self.updates.push(Action::Update(update));
    }

    /// A "job can't run" update (a comment on a job that does not run, an estimate): sent
    /// unless this cycle holds them back. The mirror keeps the job as it was, so a later
    /// cycle that sends finds the difference again.
    fn push_can_t_run(&mut self, update: JobUpdate) {
        if self.hold_can_t_run && !self.accrue_changed.contains(&update.job_id) {
            self.held_back += 1;
        } else {
            self.push_update(update);
        }
    }

    fn push_run(&mut self, run: RunDecision, placed: &crate::place::Placed) {
        let allocs = placed.allocs.iter().map(|a| (a.node, a.taken.clone())).collect();
        self.bookings.insert(run.job_id.clone(), Booking { allocs, exclusive: placed.exclusive.clone() });
        self.runs.push(Action::Run(run));
    }

    fn into_decisions(self) -> Decisions {
        let Out {
            updates: mut actions, mut runs, log, considered, bookings, hold_can_t_run, held_back, preempt, ..
        } = self;
        actions.append(&mut runs);
        let held_back = hold_can_t_run.then_some(held_back);
        Decisions { actions, log, considered, bookings, held_back, preempt }
    }
}

/// A scheduler log line the cycle asks for: `<event>;<object type>;<object name>;<message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEvent {
    /// OpenPBS's event class: `0080` (DEBUG), `0040` (SCHED), `0400` (DEBUG4).
    pub event: &'static str,
    /// `Job`.
    pub object_type: &'static str,
    /// The job or array id.
    pub object_name: String,
    /// The text.
    pub message: String,
}

impl LogEvent {
    /// `<arrayid>;Number of concurrent running subjobs limit reached`.
    fn max_run_subjobs(array_id: &str) -> LogEvent {
        LogEvent::job("0080", array_id, Reason::MaxRunSubjobs.to_string())
    }

    fn job(event: &'static str, id: &str, message: impl Into<String>) -> LogEvent {
        LogEvent { event, object_type: "Job", object_name: id.to_string(), message: message.into() }
    }
}

/// A small fast hash for the per-cycle class table (keys are four integers, never from
/// outside the process), so looking up a class costs a few nanoseconds.
#[derive(Default, Clone, Copy)]
struct FxHasher {
    hash: u64,
}

impl FxHasher {
    fn add(&mut self, value: u64) {
        self.hash = (self.hash.rotate_left(5) ^ value).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.add(u64::from(*byte));
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// (queue, request, owner or NONE, group or NONE, project or NONE).
type ClassKey = (u32, u32, u32, u32, u32);
const NONE: u32 = u32::MAX;

/// Everything the cycle carries from job to job besides the world.
struct Ctx {
    classes: HashMap<ClassKey, (Failure, String), BuildHasherDefault<FxHasher>>,
    /// Strict ordering: a job that could not run holds every later one.
    blocked: bool,
    out: Out,
    now: i64,
    /// Strict ordering with backfill: top jobs are planned on a calendar.
    backfill: bool,
    /// This cycle's runs with their expected ends, for the calendar.
    started: Vec<Ending>,
    /// Built when the first top job needs it.
    cal: Option<Calendar>,
    /// The period-qualified switches of the period the cycle runs in.
    policy: PeriodPolicy,
    /// This cycle's top jobs (ids): their estimates stay, every other job's are cleared.
    tops: HashSet<String>,
    /// `eligible_time_enable`: jobs that do not run get their `accrue_type`.
    eligible: bool,
    /// The counts of every job looked at, for the cumulative limit check of `accrue`.
    totals: Option<crate::accrue::Totals>,
    /// The job sets met, and whether the job being tried may be planned (only the first
    /// tried of its set may: `jobset`).
    sets: crate::jobset::SetTurns,
    no_plan: bool,
    /// The job tried before every other this cycle (the one the last cycle preempted
    /// for), passed over in its queue's turn.
    tried_first: Option<u32>,
}

impl Ctx {
    /// The `accrue_type` of `job` of `queue`, held back by `reason`, when eligible time
    /// is kept (`accrue`); counts the job as looked at.
    fn accrue_for(&mut self, m: &Mirror, queue: &QueueCtx<'_>, job: &Job, reason: &Reason) -> Option<u8> {
        if !self.eligible {
            return None;
        }
        let limited = self.totals.as_mut().is_some_and(|t| t.look_at(m, (queue.name, &queue.info.limits), job));
        Some(if limited { crate::accrue::INELIGIBLE } else { crate::accrue::of_reason(reason) })
    }
}

/// The queue a job is scheduled from, with what the class key and limits need.
struct QueueCtx<'a> {
    index: u32,
    name: &'a str,
    info: &'a QueueInfo,
    split_user: bool,
    split_group: bool,
    split_project: bool,
}

/// Runs one cycle: decides which queued jobs start now and where, and which comments
/// change. Pure: the same mirror and `now` give the same decisions. `now` is for the
/// calendar (estimated start times), which later work adds.
pub fn cycle(m: &Mirror, now: i64) -> Decisions {
    cycle_after_preemption(m, now, None)
}

/// [`cycle`] once a preemption it asked for has been answered: the job it preempted for
/// (`for_job`) is tried before any other, so the room made is its own, as OpenPBS runs
/// the job in the cycle that preempts for it; suspended jobs resume, and other jobs run,
/// in what is left.
pub fn cycle_after_preemption(m: &Mirror, now: i64, for_job: Option<&str>) -> Decisions {
    let policy = m.config.policy_at(now);
    // Runs are recorded for the calendar only when a top job may come: under strict
    // ordering, or when some queued job is starving.
    let any_starving = policy.help_starving_jobs
        && m.queues
            .values()
            .flat_map(|q| &q.queued)
            .any(|key| m.job(key.3).is_some_and(|j| starve_amount(m, j, now).is_some()));
    let mut ctx = Ctx {
        classes: HashMap::default(),
        blocked: false,
        out: Out { hold_can_t_run: !m.can_t_run_updates_due(now), ..Out::default() },
        now,
        backfill: policy.backfill && (policy.strict_ordering || any_starving),
        started: Vec::new(),
        cal: None,
        policy,
        tops: HashSet::new(),
        eligible: m.server.eligible_time_enable,
        totals: None,
        sets: crate::jobset::SetTurns::new(m.pending.keys().filter_map(|id| m.job(m.job_slot(id)?)?.job_set)),
        no_plan: false,
        tried_first: None,
    };
    if !m.scheduling() {
        return ctx.out.into_decisions();
    }
    // Running jobs past their soft_walltime: publish the extended estimate.
    for job in m.jobs.iter().flatten() {
        if job.running()
            && let Some(update) = crate::walltime::soft_walltime_update(&job.view, now)
        {
            ctx.out.push_update(update);
        }
    }
    let mut world = World::new(m, now);
    ctx.totals = crate::accrue::Totals::new(m, &world);
    // OpenPBS runs jobs of execution queues that are started (`enabled` only governs
    // submission).
    let mut queues: Vec<QueueCtx<'_>> = Vec::new();
    for (index, (name, entry)) in m.queues.iter().enumerate() {
        let Some(info) = entry.info.as_ref() else { continue };
        if info.execution && !info.started {
            // A stopped queue (`qstop`): its jobs wait, and say why.
            let comment = Failure::not_run(Reason::QueueNotStarted).comment();
            for key in &entry.queued {
                if let Some(job) = m.job(key.3) {
                    let accrue = ctx.eligible.then_some(crate::accrue::ELIGIBLE);
                    note_not_run(&mut ctx.out, job, Some(&comment), accrue);
                }
            }
            continue;
        }
        if !info.execution || entry.queued.is_empty() {
            continue;
        }
        queues.push(QueueCtx {
            index: u32::try_from(index).unwrap_or(NONE - 1),
            name: name.as_str(),
            info,
            split_user: m.server.limits.has(EntityKind::User) || info.limits.has(EntityKind::User),
            split_group: m.server.limits.has(EntityKind::Group) || info.limits.has(EntityKind::Group),
            split_project: m.server.limits.has(EntityKind::Project) || info.limits.has(EntityKind::Project),
        });
    }
    queues.sort_by(|a, b| b.info.priority.cmp(&a.info.priority).then(a.name.cmp(b.name)));
    // A subjob's turn is its array's.
    let first = for_job.and_then(|id| m.job_slot(id).or_else(|| m.job_slot(&subjob_parent_id(id)?)));
    if let Some(slot) = first
        && let Some(job) = m.job(slot)
        && let Some(queue) = queues.iter().find(|q| q.name == job.view.queue)
    {
        handle_job(&mut world, &mut ctx, queue, slot);
        ctx.tried_first = Some(slot);
    }
    // Jobs the scheduler suspended resume once express queues' jobs have had their turn,
    // before the other queued jobs take the room back.
    let mut resumed = false;
    let mut start = 0;
    while start < queues.len() {
        let priority = queues[start].info.priority;
        if !resumed && priority < m.preempt_queue_prio() {
            resumed = true;
            resume_suspended(&mut world, &mut ctx);
        }
        let end = queues[start..].iter().position(|q| q.info.priority != priority).map_or(queues.len(), |n| start + n);
        let group = &queues[start..end];
        // Starving jobs go first (the longest starving first, then in queue order), as
        // OpenPBS's `cmp_sort` puts them ahead of the other jobs.
        let mut starving: Vec<(i64, crate::mirror::OrderKey, usize)> = Vec::new();
        if any_starving {
            for (i, queue) in group.iter().enumerate() {
                for key in &m.queues[queue.name].queued {
                    if let Some(amount) = m.job(key.3).and_then(|job| starve_amount(m, job, now)) {
                        starving.push((amount, *key, i));
                    }
                }
            }
            starving.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for &(_, key, i) in &starving {
                handle_job(&mut world, &mut ctx, &group[i], key.3);
            }
        }
        let is_starving =
            |slot: u32| !starving.is_empty() && m.job(slot).is_some_and(|job| starve_amount(m, job, now).is_some());
        if let [queue] = group {
            for key in &m.queues[queue.name].queued {
                if !is_starving(key.3) {
                    handle_job(&mut world, &mut ctx, queue, key.3);
                }
            }
        } else {
            // Queues of equal priority: their jobs interleave by job priority, then
            // submission.
            let mut iters: Vec<_> = group.iter().map(|q| m.queues[q.name].queued.iter().peekable()).collect();
            loop {
                let mut best: Option<(usize, crate::mirror::OrderKey)> = None;
                for (i, it) in iters.iter_mut().enumerate() {
                    if let Some(&&key) = it.peek()
                        && best.is_none_or(|(_, b)| key < b)
                    {
                        best = Some((i, key));
                    }
                }
                let Some((i, key)) = best else { break };
                iters[i].next();
                if !is_starving(key.3) {
                    handle_job(&mut world, &mut ctx, &group[i], key.3);
                }
            }
        }
        start = end;
    }
    if !resumed {
        resume_suspended(&mut world, &mut ctx);
    }
    clear_stale_estimates(m, &mut ctx);
    for view in ctx.sets.unsatisfied().filter_map(|slot| m.job(slot)).map(|job| &job.view) {
        let name = crate::walltime::attr(view, "job_set").unwrap_or(&view.id);
        ctx.out.considered.push(LogEvent::job("0040", name, crate::jobset::NONE_SATISFIED));
    }
    ctx.out.into_decisions()
}

/// Resumes, oldest first, the jobs the scheduler suspended whose vnodes have room for
/// them again (a suspended job resumes where it ran), booking what they take back.
fn resume_suspended(world: &mut World<'_>, ctx: &mut Ctx) {
    let m = world.m;
    let mut suspended: Vec<&Job> = m
        .jobs
        .iter()
        .flatten()
        .filter(|job| job.view.state == 'S' && job.view.substate == 45 && !m.pending.contains_key(&job.view.id))
        .collect();
    suspended.sort_by_key(|job| (job.view.stime, job.view.seq));
    for job in suspended {
        let Some(allocs) = job.allocs() else { continue };
        let req = m.request(job.request);
        // Suspended under `restrict_res_to_release_on_suspend`, it takes back only what
        // it gave (the rest it still holds).
        let (allocs, job_wide) = match job.released.as_deref() {
            Some(released) => (released.allocs.as_slice(), released.job_wide.as_slice()),
            None => (allocs, req.job_wide.as_slice()),
        };
        let room = allocs.iter().all(|alloc| {
            let Some(node) = m.node(alloc.node) else { return false };
            world.free.get(alloc.node as usize).copied().unwrap_or(false)
                && alloc.taken.iter().all(|&(id, amount)| {
                    let avail = amount_of(&node.avail, id);
                    avail == UNSET || world.assigned(alloc.node, id).saturating_add(amount) <= avail
                })
        });
        // Its share of its queue's and the server's consumables must be free too, or a
        // job preempted for them would take them straight back.
        let queue_avail = m.queues.get(&job.view.queue).and_then(|q| q.info.as_ref()).map_or(&[][..], |i| &i.avail);
        let pools = check_pools(world, (&job.view.queue, queue_avail), job_wide);
        if !room || pools.is_err() {
            continue;
        }
        let exclusive: Vec<u32> = allocs
            .iter()
            .filter(|a| m.node(a.node).is_some_and(|node| pbs_core::sharing::is_excl(req.sharing, node.sharing)))
            .map(|a| a.node)
            .collect();
        let booking = Booking {
            allocs: allocs.iter().map(|a| (a.node, a.taken.clone())).collect(),
            exclusive: exclusive.clone(),
        };
        ctx.out.bookings.insert(job.view.id.clone(), booking);
        world.book_nodes(allocs, &exclusive);
        world.add_sums(&job.view.queue, job_wide, 1);
        world.count_run(&Counted::of(m, job), 1);
        ctx.out.considered.push(LogEvent::job("0080", &job.view.id, "Resuming job preempted by suspension"));
        ctx.out.runs.push(Action::Resume { job_id: job.view.id.clone() });
    }
}

/// OpenPBS's `job_starving` (without `eligible_time_enable`): how long past `max_starve`
/// a queued job has been eligible (since `etime`, else `qtime`), when it is starving.
/// Jobs with neither time never starve. Callers check `help_starving_jobs`.
pub(crate) fn starve_amount(m: &Mirror, job: &Job, now: i64) -> Option<i64> {
    // Only candidates (queued, not held) starve.
    job.key?;
    if m.server.eligible_time_enable {
        return crate::accrue::starve_amount(m, job, now);
    }
    let since = if job.view.etime > 0 { job.view.etime } else { job.view.qtime };
    let over = now.saturating_sub(since).saturating_sub(m.config.max_starve);
    (since > 0 && over > 0).then_some(over)
}

/// Clears `estimated.start_time` / `estimated.exec_vnode` (an empty value unsets them) on
/// every job that shows them and is not a top job this cycle: it ran, or it is no longer
/// among the top jobs.
fn clear_stale_estimates(m: &Mirror, ctx: &mut Ctx) {
    for job in m.estimated.iter().filter_map(|&slot| m.job(slot)) {
        let set: Vec<&str> = crate::mirror::ESTIMATES
            .into_iter()
            .filter(|name| crate::walltime::attr(&job.view, name).is_some())
            .collect();
        if set.is_empty() || ctx.tops.contains(&job.view.id) {
            continue;
        }
        let attrs = set.into_iter().map(|name| Attr::new(name, "")).collect();
        ctx.out.push_can_t_run(JobUpdate { job_id: job.view.id.clone(), attrs });
    }
}

/// Places one job for `qrun` (no `-H`): run limits, `max_run_subjobs` and strict ordering
/// do not apply, resources do; a job that cannot run gets its comment in the answer
/// even when unchanged. A subjob id (`12[3].server`) of an index still queued starts that
/// subjob; the array id (`12[]`) starts its next queued subjob. A subjob has no record
/// before it starts, so its comment goes to the array, unless the array has begun
/// (OpenPBS leaves a begun array's comment alone). Unknown ids, and subjobs that are not
/// queued, decide nothing (the server answers for them).
///
/// A job that does not fit for want of room preempts, as OpenPBS's qrun does: the qrun's
/// job ranks above every `preempt_prio` class, and so do its array's running subjobs
/// (they are never its victims). Then the decisions carry only the preemption; the
/// daemon sends it and places the job again with [`qrun_after_preemption`].
pub fn qrun(m: &Mirror, job_id: &str, now: i64) -> Decisions {
    place_for_qrun(m, job_id, now, true)
}

/// [`qrun`] once its preemption has been answered: the job runs in the room made, or its
/// comment says why not; it preempts no more.
pub(crate) fn qrun_after_preemption(m: &Mirror, job_id: &str, now: i64) -> Decisions {
    place_for_qrun(m, job_id, now, false)
}

fn place_for_qrun(m: &Mirror, job_id: &str, now: i64, may_preempt: bool) -> Decisions {
    let mut out = Out::default();
    let Some((job, run_id)) = qrun_target(m, job_id) else { return out.into_decisions() };
    let parent_seq = matches!(job.array, ArrayRole::Parent { .. } | ArrayRole::Sub { .. }).then_some(job.view.seq);
    let mut world = World::new(m, now);
    let default_info = QueueInfo::default();
    let info = m.queues.get(&job.view.queue).and_then(|q| q.info.as_ref()).unwrap_or(&default_info);
    let queue = QueueCtx {
        index: NONE,
        name: job.view.queue.as_str(),
        info,
        split_user: false,
        split_group: false,
        split_project: false,
    };
    // A job with OR-ed selects runs the first alternative that fits; if none does, the
    // first one's reason is the answer.
    let tried = match job.alternatives.as_deref() {
        Some(alternatives) => alternatives
            .iter()
            .find_map(|a| evaluate(&world, a, &queue, None, true).ok().map(|placed| (a, Ok(placed))))
            .or_else(|| alternatives.first().map(|a| (a, evaluate(&world, a, &queue, None, true)))),
        None => Some((job, evaluate(&world, job, &queue, None, true))),
    };
    let Some((job, tried)) = tried else { return out.into_decisions() };
    match tried {
        Ok(placed) => commit(&mut world, &mut out, job, &run_id, &placed, parent_seq),
        // The answer to a qrun always carries the reason, changed or not: it is what the
        // server tells the qrun caller.
        Err(failure) => {
            let policy = m.config.policy_at(now);
            if may_preempt
                && policy.preemptive_sched
                && failure.status == Status::NotRun
                && for_want_of_room(&failure.reason)
            {
                let fits = |sim: &World<'_>| evaluate(sim, job, &queue, None, true).is_ok();
                if plan_preemption(&mut out, &world, (job, &run_id), (crate::preempt::QRUN, parent_seq), fits) {
                    return out.into_decisions();
                }
            }
            let begun = job.array_begun(m) || world.array_running.contains_key(&job.view.seq);
            if !(matches!(job.array, ArrayRole::Parent { .. }) && begun) {
                note_comment(&mut out, &job.view.id, None, &failure.comment());
            }
            // As OpenPBS's qrun, the job accrues by why it did not run, without the
            // cumulative limits a cycle counts.
            let accrue = m.server.eligible_time_enable.then(|| crate::accrue::of_reason(&failure.reason));
            note_not_run(&mut out, job, None, accrue);
        }
    }
    out.into_decisions()
}

/// The record a `qrun` id places (the job, or the array of a subjob) and the id to run.
fn qrun_target<'m>(m: &'m Mirror, job_id: &str) -> Option<(&'m Job, String)> {
    let queued = |parent: &Job, remaining: &IndexSet, index: u64| {
        remaining.contains(index)
            && !m.subjobs_present.get(&parent.view.seq).is_some_and(|p| p.contains(&index))
            && !m.pending.contains_key(&subjob_id(m, parent, index))
    };
    if let Some(job) = m.job_slot(job_id).and_then(|slot| m.job(slot)) {
        return match &job.array {
            ArrayRole::Parent { remaining, .. } if matches!(job.view.state, 'Q' | 'B') => remaining
                .iter()
                .find(|&index| queued(job, remaining, index))
                .map(|index| (job, subjob_id(m, job, index))),
            ArrayRole::Parent { .. } => None,
            _ => (job.view.state == 'Q').then(|| (job, job_id.to_string())),
        };
    }
    let id: JobId = job_id.parse().ok()?;
    let pbs_core::ArrayPart::Index(index) = *id.array() else { return None };
    let parent = m.job_slot(&id.parent()?.to_string()).and_then(|slot| m.job(slot))?;
    let ArrayRole::Parent { remaining, .. } = &parent.array else { return None };
    if !matches!(parent.view.state, 'Q' | 'B') {
        return None;
    }
    queued(parent, remaining, index).then(|| (parent, job_id.to_string()))
}

/// The id of subjob `index` of the array `parent`.
fn subjob_id(m: &Mirror, parent: &Job, index: u64) -> String {
    JobId::subjob(parent.view.seq, index, &m.server_name).to_string()
}

/// A job that does not run: its comment when it changes (`None`: left alone) and its
/// `accrue_type` when eligible time is kept and it changes, in one update. An accrue type
/// that changes sends the update, and the job's other updates this cycle, at once.
fn note_not_run(out: &mut Out, job: &Job, comment: Option<&str>, accrue: Option<u8>) {
    let mut attrs = Vec::new();
    if let Some(comment) = comment.filter(|c| job.view.comment.as_deref() != Some(*c)) {
        attrs.push(Attr::new("comment", comment));
    }
    let accrue = accrue.filter(|a| crate::accrue::current(&job.view) != Some(*a));
    if let Some(accrue) = accrue {
        attrs.push(Attr::new("accrue_type", accrue.to_string()));
        out.accrue_changed.insert(job.view.id.clone());
        out.push_update(JobUpdate { job_id: job.view.id.clone(), attrs });
    } else if !attrs.is_empty() {
        out.push_can_t_run(JobUpdate { job_id: job.view.id.clone(), attrs });
    }
}

/// Emits a comment update when the comment of a job that does not run changes.
fn note_comment(out: &mut Out, job_id: &str, current: Option<&str>, comment: &str) {
    if current != Some(comment) {
        out.push_can_t_run(JobUpdate { job_id: job_id.to_string(), attrs: vec![Attr::new("comment", comment)] });
    }
}

fn handle_job(world: &mut World<'_>, ctx: &mut Ctx, queue: &QueueCtx<'_>, slot: u32) {
    let m = world.m;
    if ctx.tried_first == Some(slot) {
        return;
    }
    let Some(job) = m.job(slot) else { return };
    if m.pending.contains_key(&job.view.id) {
        return;
    }
    let key: ClassKey = (
        queue.index,
        job.request,
        if queue.split_user { job.user } else { NONE },
        if queue.split_group { job.group } else { NONE },
        if queue.split_project { job.project } else { NONE },
    );
    match &job.array {
        ArrayRole::Parent { remaining, max_run } => {
            let seq = job.view.seq;
            let present = m.subjobs_present.get(&seq);
            let begun = job.array_begun(m);
            let mut waiting = false;
            for index in remaining.iter() {
                if present.is_some_and(|p| p.contains(&index)) {
                    continue;
                }
                let sub_id = subjob_id(m, job, index);
                if m.pending.contains_key(&sub_id) {
                    continue;
                }
                // Once a subjob has started (this cycle, or still in flight), the server
                // marks the array begun and comments `Job Array Began at ...`; OpenPBS
                // does not overwrite that.
                let may_comment = !begun && !world.array_running.contains_key(&seq);
                match try_request(world, ctx, queue, job, key, Some(*max_run), &sub_id, may_comment) {
                    Tried::Started => {}
                    Tried::HeldByLimit => {
                        ctx.out.log.push(LogEvent::max_run_subjobs(&job.view.id));
                        waiting = true;
                        break;
                    }
                    Tried::Failed => {
                        waiting = true;
                        break;
                    }
                }
            }
            // No queued subjob left: the array accrues ineligible time (OpenPBS).
            if !waiting && ctx.eligible {
                note_not_run(&mut ctx.out, job, None, Some(crate::accrue::INELIGIBLE));
            }
        }
        ArrayRole::Sub { .. } => {
            // A subjob queued on its own (requeued) still counts against its array's
            // max_run_subjobs.
            let parent_id = subjob_parent_id(&job.view.id).unwrap_or_else(|| job.view.id.clone());
            let max_run = m.job_slot(&parent_id).and_then(|s| m.job(s)).and_then(|p| match p.array {
                ArrayRole::Parent { max_run, .. } => max_run,
                _ => None,
            });
            if try_request(world, ctx, queue, job, key, Some(max_run), &job.view.id, true) == Tried::HeldByLimit {
                ctx.out.log.push(LogEvent::max_run_subjobs(&parent_id));
            }
        }
        ArrayRole::None => {
            // A job with OR-ed selects tries its alternatives; either kind may be a job
            // set's member, tried only in its set's turn.
            let try_it = |world: &mut World<'_>, ctx: &mut Ctx| {
                try_request(world, ctx, queue, job, key, None, &job.view.id, true)
            };
            match job.job_set {
                None => {
                    try_it(world, ctx);
                }
                Some(set) => {
                    let crate::jobset::Turning::Try { may_plan } = ctx.sets.turn(set, slot) else { return };
                    ctx.no_plan = !may_plan;
                    if try_it(world, ctx) == Tried::Started {
                        ctx.sets.started(set);
                    }
                    ctx.no_plan = false;
                }
            }
        }
    }
}

/// Tries a job as its request asks: [`try_alternatives`] for OR-ed selects, else
/// [`try_job`] of the job itself (`key` is its class). The other arguments are
/// [`try_job`]'s.
#[allow(clippy::too_many_arguments)] // the cycle state, then what to try
fn try_request(
    world: &mut World<'_>,
    ctx: &mut Ctx,
    queue: &QueueCtx<'_>,
    job: &Job,
    key: ClassKey,
    array_limit: Option<Option<u64>>,
    run_id: &str,
    may_comment: bool,
) -> Tried {
    match job.alternatives.as_deref() {
        Some(alternatives) => try_alternatives(world, ctx, queue, job, alternatives, array_limit, run_id, may_comment),
        None => try_job(world, ctx, queue, (job, job), key, array_limit, run_id, may_comment),
    }
}

/// A job with OR-ed selects (docs/job-sets.md): its alternatives in the user's order, the
/// first that can run now runs (with its own walltime and place); when none can, only
/// the first is tried in full (comment, preemption, a top job's plan), as the design
/// plans only the first, and the cycle logs that none could be satisfied (when it looked,
/// not for later jobs of classes already known to fail). Each
/// alternative is its own equivalence class, so jobs asking alike cost one look each.
/// `array_limit`, `run_id` and `may_comment` are [`try_job`]'s: an array's subjob tries
/// the array's alternatives.
#[allow(clippy::too_many_arguments)] // the cycle state, then what to try
fn try_alternatives(
    world: &mut World<'_>,
    ctx: &mut Ctx,
    queue: &QueueCtx<'_>,
    job: &Job,
    alternatives: &[Job],
    array_limit: Option<Option<u64>>,
    run_id: &str,
    may_comment: bool,
) -> Tried {
    let Some(first) = alternatives.first() else { return Tried::Failed };
    let class_of = |alternative: &Job| -> ClassKey {
        (
            queue.index,
            alternative.request,
            if queue.split_user { job.user } else { NONE },
            if queue.split_group { job.group } else { NONE },
            if queue.split_project { job.project } else { NONE },
        )
    };
    // Jobs asking the same alternatives (the job's own request) share what became of them:
    // once every alternative is known to fail this cycle, a later such job looks at none,
    // and costs what a plain job of a failed class costs (its own view shows the first's
    // comment; the first is read only where accrual or a plan needs its amounts).
    let whole = class_of(job);
    if !ctx.blocked
        && let Some((failure, comment)) = ctx.classes.get(&whole)
    {
        let (failure, comment) = (failure.clone(), comment.clone());
        known_failure(world, ctx, queue, (first, job), array_limit, &failure, may_comment.then_some(comment.as_str()));
        return Tried::Failed;
    }
    let mut looked = false;
    if !ctx.blocked {
        for (k, alternative) in alternatives.iter().enumerate() {
            let key = class_of(alternative);
            if ctx.classes.contains_key(&key) {
                continue;
            }
            looked = true;
            match evaluate(world, alternative, queue, array_limit, false) {
                Ok(_) => {
                    if try_job(world, ctx, queue, (alternative, job), key, array_limit, run_id, may_comment)
                        == Tried::Started
                    {
                        return Tried::Started;
                    }
                }
                // The first is tried in full below, which records its class.
                Err(failure) if k > 0 && failure.marks_class() => {
                    let comment = failure.comment();
                    ctx.classes.insert(key, (failure, comment));
                }
                Err(_) => {}
            }
        }
    }
    // Logged when the job's alternatives were looked at, not for each job of classes
    // already known to fail (as a plain job of such a class logs nothing).
    // An array at its `max_run_subjobs` is not a request none of whose alternatives fits:
    // its array's line says why (`LogEvent::max_run_subjobs`).
    let at_limit = matches!(array_limit, Some(Some(max))
        if world.array_running.get(&job.view.seq).copied().unwrap_or(0) >= max);
    if (looked || !ctx.classes.contains_key(&class_of(first))) && !at_limit {
        ctx.out.considered.push(LogEvent::job("0040", run_id, crate::jobset::NONE_SATISFIED));
    }
    let tried = try_job(world, ctx, queue, (first, job), class_of(first), array_limit, run_id, may_comment);
    if tried == Tried::Failed && alternatives.iter().all(|a| ctx.classes.contains_key(&class_of(a))) {
        if let Some(known) = ctx.classes.get(&class_of(first)).cloned() {
            ctx.classes.insert(whole, known);
        }
    }
    tried
}

/// A job of a class already known to fail this cycle: the class's comment and the job's
/// accrual, and under strict ordering or starvation its plan. `(tried, shown)`: the job as
/// tried (an alternative, whose amounts and durations count) and the job the server knows
/// (whose comment and id the update names). They are one job but for OR-ed selects, where
/// the job's own view stands for its alternatives (they share its comment, id and
/// attributes), so a job whose alternatives are all known to fail reads none of them
/// unless accrual or a plan needs their amounts.
fn known_failure(
    world: &World<'_>,
    ctx: &mut Ctx,
    queue: &QueueCtx<'_>,
    (tried, shown): (&Job, &Job),
    array_limit: Option<Option<u64>>,
    failure: &Failure,
    comment: Option<&str>,
) {
    let accrue = ctx.accrue_for(world.m, queue, tried, &failure.reason);
    note_not_run(&mut ctx.out, shown, comment, accrue);
    if failure.status == Status::NotRun
        && (ctx.policy.strict_ordering
            || (ctx.policy.help_starving_jobs && starve_amount(world.m, shown, ctx.now).is_some()))
    {
        strict_failure(world, ctx, queue, tried, array_limit, failure);
    }
}

/// What became of one try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tried {
    Started,
    /// Not run: its array is at `max_run_subjobs`.
    HeldByLimit,
    /// Not run for any other reason.
    Failed,
}

/// Tries to start `run_id` (the job, or a subjob of it); comments on the job when it
/// cannot, if `may_comment`. `(job, shown)`: the job as tried (an alternative of an OR-ed
/// select) and the job whose view the server knows, whose comment it compares and names.
#[allow(clippy::too_many_arguments)] // the cycle state, then what to try
fn try_job(
    world: &mut World<'_>,
    ctx: &mut Ctx,
    queue: &QueueCtx<'_>,
    (job, shown): (&Job, &Job),
    key: ClassKey,
    array_limit: Option<Option<u64>>,
    run_id: &str,
    may_comment: bool,
) -> Tried {
    if ctx.blocked {
        let comment = Failure::not_run(Reason::StrictOrdering).comment();
        let accrue = ctx.accrue_for(world.m, queue, job, &Reason::StrictOrdering);
        note_not_run(&mut ctx.out, shown, may_comment.then_some(comment.as_str()), accrue);
        return Tried::Failed;
    }
    if let Some((failure, comment)) = ctx.classes.get(&key) {
        let (failure, comment) = (failure.clone(), comment.clone());
        known_failure(world, ctx, queue, (job, shown), array_limit, &failure, may_comment.then_some(comment.as_str()));
        return Tried::Failed;
    }
    let now = ctx.now;
    ctx.out.considered.push(LogEvent::job("0080", run_id, "Considering job to run"));
    let evaluated = evaluate(world, job, queue, array_limit, false).and_then(|placed| {
        // A shrink-to-fit job gets the longest walltime that ends before the next
        // dedicated time and before every top job it would take resources from.
        let mut duration = planned_duration(&job.view);
        let mut shrunk = None;
        if let Some((min, max)) = shrink_range(&job.view) {
            let ded = dedicated_limit(world.m, now).unwrap_or(JOB_INFINITY);
            let top = ctx.cal.as_ref().and_then(|c| c.latest_end(&placed)).map_or(JOB_INFINITY, |s| s - now);
            let cap = max.min(ded).min(top);
            if cap < min {
                let reason = if ded < min { Reason::CrossDedTime } else { Reason::ReservationConflict };
                return Err(Failure::not_run(reason));
            }
            duration = cap;
            shrunk = Some(cap);
        }
        let Some(cal) = ctx.cal.as_mut().filter(|c| !c.tops.is_empty()) else {
            return Ok((placed, duration, shrunk));
        };
        let end = end_of(now, duration);
        if cal.admit_filler(&placed, end) {
            return Ok((placed, duration, shrunk));
        }
        let avoid = cal.nodes_to_avoid(end);
        let pool = world.pool_of_queue.get(queue.name).copied().unwrap_or(0);
        let elsewhere: Vec<u32> =
            world.pools[pool].nodes.iter().copied().filter(|n| avoid.binary_search(n).is_err()).collect();
        match find_nodes(world, world.m.request(job.request), &elsewhere) {
            Ok(placed) if cal.admit_filler(&placed, end) => Ok((placed, duration, shrunk)),
            _ => Err(Failure::not_run(Reason::ReservationConflict)),
        }
    });
    match evaluated {
        Ok((placed, duration, shrunk)) => {
            let parent_seq = array_limit.map(|_| job.view.seq);
            commit(world, &mut ctx.out, job, run_id, &placed, parent_seq);
            if let Some(totals) = ctx.totals.as_mut() {
                totals.count(queue.name, job, world.m);
            }
            ctx.out.considered.push(LogEvent::job("0040", run_id, "Job run"));
            note_soft_limits(world, &mut ctx.out, queue, job, run_id);
            if let Some(walltime) = shrunk {
                let text = pbs_core::Duration::from_secs(u64::try_from(walltime).unwrap_or(0)).to_string();
                ctx.out.push_update(JobUpdate {
                    job_id: run_id.to_string(),
                    attrs: vec![Attr::new("Resource_List.walltime", text)],
                });
            }
            if ctx.backfill
                && let Some(end) = end_of(now, duration)
            {
                let ending = Ending {
                    end,
                    allocs: placed.allocs.clone(),
                    exclusive: !placed.exclusive.is_empty(),
                    counted: Some(Counted::run_of(world.m, job, parent_seq)),
                };
                if let Some(cal) = ctx.cal.as_mut() {
                    cal.ends.push(ending.clone());
                }
                ctx.started.push(ending);
            }
            Tried::Started
        }
        Err(failure) => {
            let comment = failure.comment();
            let accrue = ctx.accrue_for(world.m, queue, job, &failure.reason);
            note_not_run(&mut ctx.out, shown, may_comment.then_some(comment.as_str()), accrue);
            // Its array's line says it already (`LogEvent::max_run_subjobs`).
            if failure.reason != Reason::MaxRunSubjobs {
                ctx.out.considered.push(LogEvent::job("0040", run_id, failure.reason.info()));
            }
            if failure.status == Status::NeverRun {
                let text = "Job will never run with the resources currently configured in the complex";
                ctx.out.considered.push(LogEvent::job("0040", run_id, text));
            }
            if ctx.policy.preemptive_sched
                && ctx.out.preempt.is_none()
                && failure.status == Status::NotRun
                && for_want_of_room(&failure.reason)
            {
                let starving = ctx.policy.help_starving_jobs && starve_amount(world.m, job, ctx.now).is_some();
                let high = crate::preempt::level(world, job, starving);
                let fits = |sim: &World<'_>| evaluate(sim, job, queue, array_limit, false).is_ok();
                if matches!(crate::preempt::targets(world.m, job), Some(pbs_core::preempt::Targets::None)) {
                    let text = "No preemption set specified for the job: Job will not preempt";
                    ctx.out.considered.push(LogEvent::job("0400", run_id, text));
                } else {
                    plan_preemption(&mut ctx.out, world, (job, run_id), (high, None), fits);
                }
            }
            if failure.status == Status::NotRun
                && (ctx.policy.strict_ordering
                    || (ctx.policy.help_starving_jobs && starve_amount(world.m, job, ctx.now).is_some()))
            {
                strict_failure(world, ctx, queue, job, array_limit, &failure);
            }
            if failure.reason == Reason::MaxRunSubjobs {
                return Tried::HeldByLimit;
            }
            if failure.marks_class() {
                ctx.classes.insert(key, (failure, comment));
            }
            Tried::Failed
        }
    }
}

/// Asks [`crate::preempt::choose`] to make room for `job` (run as `run_id`) at level
/// `high` (`kin`: its array, for a qrun): logs the candidates passed over by priority
/// escalation and, when room can be made, OpenPBS's line, and records the preemption in
/// `out`. Whether it did.
fn plan_preemption(
    out: &mut Out,
    world: &World<'_>,
    (job, run_id): (&Job, &str),
    (high, kin): (crate::preempt::Level, Option<u64>),
    fits: impl Fn(&World<'_>) -> bool,
) -> bool {
    let choice = crate::preempt::choose(world, job, high, kin, fits);
    for id in &choice.escalating {
        out.considered.push(LogEvent::job("0100", id, crate::preempt::ESCALATES));
    }
    let Some(jobs) = choice.jobs else { return false };
    let text = "Employing preemption to try and run high priority job.";
    out.considered.push(LogEvent::job("0080", run_id, text));
    out.preempt = Some(Preemption { for_job: run_id.to_string(), jobs });
    true
}

/// A job that would run if running jobs gave their resources back: their vnodes', or
/// their share of a queue's or the server's `resources_available` (not one held by a run
/// limit or its array's `max_run_subjobs`, which preemption never serves).
fn for_want_of_room(reason: &Reason) -> bool {
    matches!(
        reason,
        Reason::InsufficientResource(..)
            | Reason::InsufficientQueueResource(..)
            | Reason::InsufficientServerResource(..)
            | Reason::NoNodeResources
            | Reason::NoFreeNodes
            | Reason::SetTooSmall(..)
            | Reason::NodeNotExcl
    )
}

/// Strict ordering, or a starving job, and a job that cannot run now: with `backfill` and
/// room under `backfill_depth`, a job held back by node resources, by a run limit or by
/// its array's `max_run_subjobs` becomes a top job (its estimated start and vnodes
/// published when they change; a limit lets it start once enough jobs it counts with have
/// ended, as OpenPBS's simulation of the calendar finds) and later jobs may still run
/// around it. Under strict ordering, a job that cannot be a top job, or would never
/// start, holds every later job; without it (a starving job) the others go on.
fn strict_failure(
    world: &World<'_>,
    ctx: &mut Ctx,
    queue: &QueueCtx<'_>,
    job: &Job,
    array_limit: Option<Option<u64>>,
    failure: &Failure,
) {
    if ctx.no_plan {
        // A job set's later member: only its first is planned, and it holds no job back.
        return;
    }
    let strict = ctx.policy.strict_ordering;
    let resources = matches!(
        failure.reason,
        Reason::InsufficientResource(..)
            | Reason::NoNodeResources
            | Reason::NoFreeNodes
            | Reason::SetTooSmall(..)
            | Reason::NodeNotExcl
    );
    // A filler that shares the limit is held by it now too: only node resources need
    // guarding against fillers.
    let limit = is_run_limit(&failure.reason) || failure.reason == Reason::MaxRunSubjobs;
    if failure.reason == Reason::ReservationConflict {
        // A filler that would delay a top job: it waits, the rest go on.
        return;
    }
    if !ctx.backfill || !(resources || limit) {
        ctx.blocked |= strict;
        return;
    }
    let m = world.m;
    let depth = queue.info.backfill_depth.or(m.server.backfill_depth).unwrap_or(1) as usize;
    let planned = ctx.cal.as_ref().map_or(0, |c| c.tops.len());
    if planned >= depth {
        // Not a top job: later jobs still backfill around the ones planned.
        if depth == 0 {
            ctx.blocked |= strict;
        }
        return;
    }
    let now = ctx.now;
    let cal = ctx.cal.get_or_insert_with(|| Calendar::build(m, now, &ctx.started));
    let pool = world.pool_of_queue.get(queue.name).copied().unwrap_or(0);
    // The start must respect dedicated and prime time as a run now would; window and
    // prime boundaries are candidate starts too.
    let duration = planned_duration(&job.view);
    let dedicated_queue = is_dedicated_queue(m, queue.name);
    let backfill_prime = ctx.policy.backfill_prime;
    let who = m.entity(job);
    let amounts = &m.request(job.request).job_wide;
    let no_counts = Default::default();
    // A subjob of an array at its max_run_subjobs starts once one of its running ones ends.
    let array_max = array_limit.flatten();
    let allowed = |t: i64, sim: &World<'_>| {
        let queue_counts = sim.queue_counts.get(queue.name).unwrap_or(&no_counts);
        dedicated_now(m, t).is_some() == dedicated_queue
            && (shrink_range(&job.view).is_some() || !crosses_dedicated(m, t, duration))
            && check_prime(m, queue.name, t, duration, backfill_prime).is_ok()
            && check_limits(
                (queue.name, &queue.info.limits, queue_counts),
                (&m.server.limits, &sim.server_counts),
                &who,
                amounts,
                &m.res,
            )
            .is_none()
            && array_max.is_none_or(|max| sim.array_running.get(&job.view.seq).copied().unwrap_or(0) < max)
    };
    let edges: Vec<i64> = m
        .config
        .dedicated
        .iter()
        .chain(&m.config.nonprime)
        .flat_map(|&(from, to)| [from, to])
        .filter(|&t| t > now)
        .collect();
    let Some(mut top) = cal.plan(world, m.request(job.request), pool, duration, allowed, &edges) else {
        ctx.blocked |= strict;
        return;
    };
    top.counted = Some(Counted::run_of(m, job, array_limit.map(|_| job.view.seq)));
    let start = top.start.to_string();
    let exec = exec_vnode(world, &top.placed.allocs);
    let mut attrs = Vec::new();
    if crate::walltime::attr(&job.view, "estimated.start_time") != Some(start.as_str()) {
        attrs.push(Attr::new("estimated.start_time", start));
    }
    if crate::walltime::attr(&job.view, "estimated.exec_vnode") != Some(exec.as_str()) {
        attrs.push(Attr::new("estimated.exec_vnode", exec));
    }
    if !attrs.is_empty() {
        ctx.out.push_can_t_run(JobUpdate { job_id: job.view.id.clone(), attrs });
    }
    cal.tops.push(top);
    ctx.tops.insert(job.view.id.clone());
}

/// A job just started that its start put over a soft limit (or that starts over one): a
/// line in the DEBUG4 class of OpenPBS's limit checks naming the preemption class it is
/// now in. What preemption reads is [`Mirror::over_soft_limits`].
fn note_soft_limits(world: &World<'_>, out: &mut Out, queue: &QueueCtx<'_>, job: &Job, run_id: &str) {
    let m = world.m;
    if queue.info.limits.soft.is_empty() && m.server.limits.soft.is_empty() {
        return;
    }
    let no_counts = Default::default();
    let queue_counts = world.queue_counts.get(queue.name).unwrap_or(&no_counts);
    let standing = soft_standing(
        (&queue.info.limits, queue_counts),
        (&m.server.limits, &world.server_counts),
        &m.entity(job),
        &m.request(job.request).job_wide,
    );
    if let Some(class) = standing.class() {
        out.considered.push(LogEvent::job("0400", run_id, format!("Over soft limits: preempt priority class {class}")));
    }
}

/// A run limit (server or queue, any entity) held the job back.
fn is_run_limit(reason: &Reason) -> bool {
    matches!(
        reason,
        Reason::ServerJobLimit
            | Reason::ServerUserLimit
            | Reason::ServerGroupLimit
            | Reason::ServerByUserJobLimit(_)
            | Reason::ServerByGroupJobLimit(_)
            | Reason::QueueJobLimit(_)
            | Reason::QueueUserLimit(_)
            | Reason::QueueGroupLimit(_)
            | Reason::QueueByUserJobLimit(..)
            | Reason::QueueByGroupJobLimit(..)
            | Reason::ServerProjectLimit
            | Reason::QueueProjectLimit(_)
            | Reason::ServerByProjectJobLimit(_)
            | Reason::QueueByProjectJobLimit(..)
            | Reason::ResourceLimit(_)
    )
}

/// The checks of OpenPBS's `is_ok_to_run`, in its order, then the node search.
fn evaluate(
    world: &World<'_>,
    job: &Job,
    queue: &QueueCtx<'_>,
    array_limit: Option<Option<u64>>,
    qrun: bool,
) -> Result<crate::place::Placed, Failure> {
    let m = world.m;
    let req = m.request(job.request);
    if let Some(what) = &req.invalid {
        return Err(Failure::never_run(Reason::InvalidJob(what.clone())));
    }
    if !qrun && dedicated_now(m, world.now).is_some() != is_dedicated_queue(m, queue.name) {
        return Err(Failure::not_run(Reason::DedTime));
    }
    if !qrun {
        let backfill_prime = m.config.policy_at(world.now).backfill_prime;
        check_prime(m, queue.name, world.now, planned_duration(&job.view), backfill_prime)?;
    }
    let pool = world.pool_of_queue.get(queue.name).copied().unwrap_or(0);
    let set = &world.pools[pool];
    let view = SetView { nodes: &set.nodes, free_nodes: set.free_nodes, avail: &set.avail, assigned: &set.assigned };
    if let Err(now_reason) = can_fit_set(world, &view, req, false) {
        return Err(match can_fit_set(world, &view, req, true) {
            Err(total_reason) => Failure::never_run(total_reason),
            Ok(()) => Failure::not_run(now_reason),
        });
    }
    if !qrun {
        let who = m.entity(job);
        let empty = Default::default();
        let queue_counts = world.queue_counts.get(queue.name).unwrap_or(&empty);
        if let Some(reason) = check_limits(
            (queue.name, &queue.info.limits, queue_counts),
            (&m.server.limits, &world.server_counts),
            &who,
            &req.job_wide,
            &m.res,
        ) {
            return Err(Failure::not_run(reason));
        }
        if let Some(Some(max)) = array_limit
            && world.array_running.get(&job.view.seq).copied().unwrap_or(0) >= max
        {
            return Err(Failure::not_run(Reason::MaxRunSubjobs));
        }
        // Shrink-to-fit jobs are fitted to dedicated time in `try_job`.
        if shrink_range(&job.view).is_none() && crosses_dedicated(m, world.now, planned_duration(&job.view)) {
            return Err(Failure::not_run(Reason::CrossDedTime));
        }
    }
    check_pools(world, (queue.name, &queue.info.avail), &req.job_wide)?;
    find_nodes(world, req, &set.nodes)
}

/// `job_wide` against its queue's (`(name, resources_available)`) and then the server's
/// `resources_available`, less what each has assigned in `world`.
fn check_pools(
    world: &World<'_>,
    (queue, queue_avail): (&str, &[(ResId, i64)]),
    job_wide: &[(ResId, i64)],
) -> Result<(), Failure> {
    let queue_assigned = world.queue_assigned.get(queue).map(Vec::as_slice).unwrap_or(&[]);
    check_pool_resources(world, queue_avail, queue_assigned, job_wide, Reason::InsufficientQueueResource)?;
    let server = &world.m.server.avail;
    check_pool_resources(world, server, &world.server_assigned, job_wide, Reason::InsufficientServerResource)
}

/// The dedicated time window `now` is in, if any.
fn dedicated_now(m: &Mirror, now: i64) -> Option<(i64, i64)> {
    m.config.dedicated.iter().copied().find(|&(from, to)| from <= now && now < to)
}

/// A dedicated queue: its name starts with `dedicated_prefix`.
fn is_dedicated_queue(m: &Mirror, queue: &str) -> bool {
    !m.config.dedicated_prefix.is_empty() && queue.starts_with(&m.config.dedicated_prefix)
}

/// OpenPBS's `check_prime_queue`, `check_nonprime_queue` and `check_prime_boundary`.
/// `backfill_prime` is the value of the period the cycle runs in.
fn check_prime(m: &Mirror, queue: &str, now: i64, duration: i64, backfill_prime: bool) -> Result<(), Failure> {
    let c = &m.config;
    let prime = crate::prime::is_prime(&c.nonprime, now);
    let prime_queue = !c.primetime_prefix.is_empty() && queue.starts_with(&c.primetime_prefix);
    let nonprime_queue = !c.nonprimetime_prefix.is_empty() && queue.starts_with(&c.nonprimetime_prefix);
    if prime_queue && !prime {
        return Err(Failure::not_run(Reason::PrimeOnly));
    }
    if nonprime_queue && prime {
        return Err(Failure::not_run(Reason::NonprimeOnly));
    }
    if !backfill_prime || (c.prime_exempt_anytime_queues && !prime_queue && !nonprime_queue) {
        return Ok(());
    }
    let Some(end) = crate::prime::status_end(&c.nonprime, now) else { return Ok(()) };
    if duration >= JOB_INFINITY || now.saturating_add(duration) > end.saturating_add(c.prime_spill) {
        return Err(Failure::not_run(Reason::CrossPrime(if prime { "non-primetime" } else { "primetime" })));
    }
    Ok(())
}

/// The longest a job started now may last without crossing dedicated time: to the
/// current window's end, or to the next window's start. `None` without windows ahead.
fn dedicated_limit(m: &Mirror, now: i64) -> Option<i64> {
    if let Some((_, to)) = dedicated_now(m, now) {
        return Some(to - now);
    }
    m.config.dedicated.iter().find(|&&(_, to)| to > now).map(|&(from, _)| from - now)
}

/// OpenPBS's `check_ded_time_boundary`: during dedicated time a job must end by the
/// window's end; outside, a job started now must neither end inside the next window nor
/// span it (a job without walltime always does).
fn crosses_dedicated(m: &Mirror, now: i64, duration: i64) -> bool {
    let end = now.saturating_add(duration);
    if let Some((_, to)) = dedicated_now(m, now) {
        return end > to;
    }
    match m.config.dedicated.iter().find(|&&(_, to)| to > now) {
        Some(&(from, to)) => (end > from && end < to) || (now <= from && end >= to),
        None => false,
    }
}

/// Queue or server `resources_available` against the job's `Resource_List`.
fn check_pool_resources(
    world: &World<'_>,
    avail: &[(ResId, i64)],
    assigned: &[i64],
    wanted: &[(ResId, i64)],
    make: fn(String, String) -> Reason,
) -> Result<(), Failure> {
    for &(id, total) in avail {
        let Some(&(_, asked)) = wanted.iter().find(|(r, _)| *r == id) else { continue };
        if asked == 0 {
            continue;
        }
        let used = amount_of(assigned, id);
        let free = (total - if used == UNSET { 0 } else { used }).max(0);
        if asked <= free {
            continue;
        }
        let kind = world.m.res.kind(id);
        let name = world.m.res.name(id).to_string();
        let (status, shown) = if asked > total { (Status::NeverRun, total) } else { (Status::NotRun, free) };
        let detail = format!(
            "(R: {} A: {} T: {})",
            format_amount(kind, asked),
            format_amount(kind, shown),
            format_amount(kind, total)
        );
        return Err(Failure { status, reason: make(name, detail) });
    }
    Ok(())
}

/// Books a placement and emits the run.
fn commit(
    world: &mut World<'_>,
    out: &mut Out,
    job: &Job,
    run_id: &str,
    placed: &crate::place::Placed,
    parent_seq: Option<u64>,
) {
    let m = world.m;
    world.book_nodes(&placed.allocs, &placed.exclusive);
    let req = m.request(job.request);
    world.book_counts(&job.view.queue, job.who(), &req.job_wide, parent_seq);
    let exec_vnode = exec_vnode(world, &placed.allocs);
    out.push_run(RunDecision { job_id: run_id.to_string(), exec_vnode, alternative: job.alternative }, placed);
}

/// `(n1:ncpus=2:mem=1048576kb)+(n2:ncpus=2)`: one group per chunk.
fn exec_vnode(world: &World<'_>, allocs: &[Alloc]) -> String {
    let m = world.m;
    let mut text = String::new();
    for (i, alloc) in allocs.iter().enumerate() {
        if i > 0 {
            text.push('+');
        }
        text.push('(');
        text.push_str(m.node(alloc.node).map(|n| n.name.as_str()).unwrap_or(""));
        for &(id, amount) in &alloc.taken {
            text.push(':');
            text.push_str(m.res.name(id));
            text.push('=');
            text.push_str(&exec_amount(m.res.kind(id), amount));
        }
        text.push(')');
    }
    text
}
