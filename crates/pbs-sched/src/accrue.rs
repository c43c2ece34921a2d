//! Eligible time as the scheduler decides it (`eligible_time_enable`): the `accrue_type` of
//! each queued job that does not run, from why it does not (OpenPBS's
//! `update_accruetype`), and a job's eligible time now, which starvation is measured on.
//!
//! A job held back by a user, group or project run limit accrues ineligible time; one held
//! back by anything else (resources, an overall limit, strict ordering, its array's
//! `max_run_subjobs`...) eligible time. Like OpenPBS's `CHECK_CUMULATIVE_LIMIT`, a job that
//! failed for resources but would also pass a user, group or project limit once the jobs
//! before it in this cycle ran is ineligible too: [`Totals`] counts every job the cycle
//! looked at as if it ran. An array that has no queued subjob left accrues ineligible
//! time. The server sets the types it knows itself (held, waiting, running, ending).

use std::collections::HashMap;

use pbs_core::entlim::EntityKind;
use pbs_proto::sched::SchedJob;

use crate::limits::{RunCounts, check_limits};
use crate::mirror::{Job, Mirror};
use crate::reason::Reason;
use crate::world::World;

/// `accrue_type` 1.
pub(crate) const INELIGIBLE: u8 = 1;
/// `accrue_type` 2.
pub(crate) const ELIGIBLE: u8 = 2;

/// The accrue type a job held back by `reason` accrues.
pub(crate) fn of_reason(reason: &Reason) -> u8 {
    match reason {
        Reason::ServerUserLimit
        | Reason::ServerGroupLimit
        | Reason::ServerProjectLimit
        | Reason::ServerByUserJobLimit(_)
        | Reason::ServerByGroupJobLimit(_)
        | Reason::ServerByProjectJobLimit(_)
        | Reason::QueueUserLimit(_)
        | Reason::QueueGroupLimit(_)
        | Reason::QueueProjectLimit(_)
        | Reason::QueueByUserJobLimit(..)
        | Reason::QueueByGroupJobLimit(..)
        | Reason::QueueByProjectJobLimit(..) => INELIGIBLE,
        Reason::ResourceLimit(limit) if limit.kind != EntityKind::Overall => INELIGIBLE,
        _ => ELIGIBLE,
    }
}

/// The job's `accrue_type` as the server last told it (`None` while the server keeps none).
pub(crate) fn current(job: &SchedJob) -> Option<u8> {
    crate::walltime::attr(job, "accrue_type").and_then(|v| v.trim().parse().ok())
}

/// A job's eligible time at `now`: what the server stored, plus the time since it began
/// accruing it while it accrues eligible time (OpenPBS computes the same at status time).
pub(crate) fn eligible_secs(job: &SchedJob, now: i64) -> i64 {
    let stored = crate::walltime::attr(job, "eligible_time")
        .and_then(|v| v.parse::<pbs_core::Duration>().ok())
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let since = crate::walltime::attr(job, "sample_starttime").and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    if current(job) == Some(ELIGIBLE) && since > 0 {
        stored.saturating_add(now.saturating_sub(since).max(0))
    } else {
        stored
    }
}

/// OpenPBS's `job_starving` with `eligible_time_enable`: a job starves once its eligible
/// time passes `max_starve`, by that whole time.
pub(crate) fn starve_amount(m: &Mirror, job: &Job, now: i64) -> Option<i64> {
    let eligible = eligible_secs(&job.view, now);
    (eligible > m.config.max_starve).then_some(eligible)
}

/// The run-limit counts of every job the cycle looked at, run or not (OpenPBS's
/// `total_*_counts`), kept only while eligible time is on and some hard limit is set.
pub(crate) struct Totals {
    server: RunCounts,
    queues: HashMap<String, RunCounts>,
}

impl Totals {
    /// The counts of the running jobs (and runs in flight) the cycle starts from.
    pub(crate) fn new(m: &Mirror, world: &World<'_>) -> Option<Totals> {
        let limited = !m.server.limits.hard.is_empty()
            || m.queues.values().any(|q| q.info.as_ref().is_some_and(|i| !i.limits.hard.is_empty()));
        if !m.server.eligible_time_enable || !limited {
            return None;
        }
        let queues = world.queue_counts.iter().map(|(name, counts)| (name.to_string(), counts.clone())).collect();
        Some(Totals { server: world.server_counts.clone(), queues })
    }

    /// Whether `job` of `queue` would pass a user, group or project run limit with every
    /// job looked at so far running; then counts it as looked at.
    pub(crate) fn look_at(&mut self, m: &Mirror, queue: (&str, &crate::limits::RunLimits), job: &Job) -> bool {
        let who = m.entity(job);
        let amounts = &m.request(job.request).job_wide;
        let empty = RunCounts::default();
        let queue_counts = self.queues.get(queue.0).unwrap_or(&empty);
        let reason =
            check_limits((queue.0, queue.1, queue_counts), (&m.server.limits, &self.server), &who, amounts, &m.res);
        self.count(queue.0, job, m);
        reason.is_some_and(|r| of_reason(&r) == INELIGIBLE)
    }

    /// Counts a job that runs (or was looked at).
    pub(crate) fn count(&mut self, queue: &str, job: &Job, m: &Mirror) {
        let amounts = &m.request(job.request).job_wide;
        self.server.add(job.who(), amounts, 1);
        if let Some(counts) = self.queues.get_mut(queue) {
            counts.add(job.who(), amounts, 1);
        }
    }
}
