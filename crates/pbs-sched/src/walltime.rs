//! Job durations for the calendar, and the soft_walltime extension of running jobs.
//!
//! A job's expected duration is its `soft_walltime` when set, else its `walltime`, else
//! "forever": OpenPBS's `JOB_INFINITY` (five years), so a job without a walltime never
//! ends on the calendar. A running job that outlives its `soft_walltime` is extended by
//! whole multiples of the original request (`extend_soft_walltime` in OpenPBS's
//! `job_info.cpp`), never past its hard `walltime`; the scheduler publishes the current
//! estimate as `estimated.soft_walltime` (pbs-facts g1: soft 6 s, after 7 s -> 12 s, after
//! 13 s -> 18 s; with walltime 16 it stops at 16).

use pbs_core::Duration;
use pbs_proto::Attr;
use pbs_proto::sched::{JobUpdate, SchedJob};

/// OpenPBS's `JOB_INFINITY`: the duration of a job without a walltime (5 years).
pub const JOB_INFINITY: i64 = 60 * 60 * 24 * 365 * 5;

/// A duration resource of `Resource_List` (`walltime`, `soft_walltime`...), in seconds.
pub(crate) fn resource_secs(job: &SchedJob, name: &str) -> Option<i64> {
    let (_, value) = job.resources.iter().find(|(n, _)| n == name)?;
    value.parse::<Duration>().ok().and_then(|d| i64::try_from(d.as_secs()).ok())
}

/// An attribute of the job (`estimated.soft_walltime`...), when set and non-empty.
pub(crate) fn attr<'a>(job: &'a SchedJob, name: &str) -> Option<&'a str> {
    job.attrs.iter().find(|a| a.name() == name).map(Attr::value).filter(|v| !v.is_empty())
}

/// The duration a queued job is planned with: soft_walltime, else walltime, else forever.
/// A shrink-to-fit job is planned with its `min_walltime`.
pub(crate) fn planned_duration(job: &SchedJob) -> i64 {
    resource_secs(job, "soft_walltime")
        .or_else(|| resource_secs(job, "walltime"))
        .or_else(|| resource_secs(job, "min_walltime"))
        .unwrap_or(JOB_INFINITY)
}

/// A shrink-to-fit job's `(min_walltime, max_walltime)`: `min_walltime` set and no
/// `walltime` (a missing `max_walltime` is forever).
pub(crate) fn shrink_range(job: &SchedJob) -> Option<(i64, i64)> {
    if resource_secs(job, "walltime").is_some() {
        return None;
    }
    let min = resource_secs(job, "min_walltime")?;
    Some((min, resource_secs(job, "max_walltime").unwrap_or(JOB_INFINITY).max(min)))
}

/// The current soft_walltime estimate after `elapsed` seconds ([`pbs_core::walltime::soft_estimate`],
/// in the scheduler's signed seconds).
pub fn extended_soft_walltime(soft: i64, hard: Option<i64>, elapsed: i64) -> i64 {
    let secs = |v: i64| u64::try_from(v.max(0)).unwrap_or(0);
    let estimate = pbs_core::walltime::soft_estimate(secs(soft), hard.map(secs), secs(elapsed));
    i64::try_from(estimate).unwrap_or(i64::MAX)
}

/// The current expected duration of a running job at `now`: its extended soft_walltime
/// when it has one, else its walltime, else forever.
pub(crate) fn running_duration(job: &SchedJob, now: i64) -> i64 {
    let hard = resource_secs(job, "walltime");
    match resource_secs(job, "soft_walltime") {
        Some(soft) => extended_soft_walltime(soft, hard, now.saturating_sub(job.stime)),
        None => hard.unwrap_or(JOB_INFINITY),
    }
}

/// When a running job is expected to end.
pub(crate) fn running_end(job: &SchedJob, now: i64) -> i64 {
    let start = if job.stime > 0 { job.stime } else { now };
    start.saturating_add(running_duration(job, now))
}

/// The `estimated.soft_walltime` update a running job needs at `now`, if any: only jobs
/// with a soft_walltime (not subjobs, as OpenPBS), and only when the estimate differs from
/// the published one (an unpublished estimate counts as the request itself).
pub(crate) fn soft_walltime_update(job: &SchedJob, now: i64) -> Option<JobUpdate> {
    if job.state != 'R' || job.id.contains('[') {
        return None;
    }
    let soft = resource_secs(job, "soft_walltime")?;
    let estimate = extended_soft_walltime(soft, resource_secs(job, "walltime"), now.saturating_sub(job.stime));
    let published = attr(job, "estimated.soft_walltime")
        .and_then(|v| v.parse::<Duration>().ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok())
        .unwrap_or(soft);
    (published != estimate).then(|| JobUpdate {
        job_id: job.id.clone(),
        attrs: vec![Attr::new(
            "estimated.soft_walltime",
            Duration::from_secs(u64::try_from(estimate).unwrap_or(0)).to_string(),
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(soft: Option<&str>, hard: Option<&str>, stime: i64) -> SchedJob {
        let mut resources = Vec::new();
        if let Some(s) = soft {
            resources.push(("soft_walltime".to_string(), s.to_string()));
        }
        if let Some(h) = hard {
            resources.push(("walltime".to_string(), h.to_string()));
        }
        SchedJob { id: "1.s".into(), state: 'R', stime, resources, ..SchedJob::default() }
    }

    #[test]
    fn extension_follows_pbs_facts() {
        assert_eq!(extended_soft_walltime(6, None, 5), 6);
        assert_eq!(extended_soft_walltime(6, None, 6), 6);
        assert_eq!(extended_soft_walltime(6, None, 7), 12);
        assert_eq!(extended_soft_walltime(6, None, 13), 18);
        assert_eq!(extended_soft_walltime(6, Some(16), 7), 12);
        assert_eq!(extended_soft_walltime(6, Some(16), 13), 16);
        assert_eq!(extended_soft_walltime(6, Some(16), 100), 16);
    }

    #[test]
    fn seed_example_j() {
        // soft 1:00:00: past it -> 2:00:00, past that -> 3:00:00.
        let job = running(Some("01:00:00"), None, 1000);
        assert_eq!(soft_walltime_update(&job, 1000 + 1800), None);
        let update = soft_walltime_update(&job, 1000 + 3601).unwrap();
        assert_eq!(update.attrs, vec![Attr::new("estimated.soft_walltime", "02:00:00")]);
        let mut job2 = job.clone();
        job2.attrs.push(Attr::new("estimated.soft_walltime", "02:00:00"));
        assert_eq!(soft_walltime_update(&job2, 1000 + 5000), None);
        let update = soft_walltime_update(&job2, 1000 + 7201).unwrap();
        assert_eq!(update.attrs[0].value(), "03:00:00");
        assert_eq!(running_end(&job2, 1000 + 7201), 1000 + 3 * 3600);
    }

    #[test]
    fn seed_example_k() {
        // soft 1:00:00, walltime 1:30:00: past soft -> 1:30:00, never further.
        let job = running(Some("01:00:00"), Some("01:30:00"), 0);
        assert_eq!(soft_walltime_update(&job, 3601).unwrap().attrs[0].value(), "01:30:00");
        assert_eq!(soft_walltime_update(&job, 9000).unwrap().attrs[0].value(), "01:30:00");
        let mut published = job.clone();
        published.attrs.push(Attr::new("estimated.soft_walltime", "01:30:00"));
        assert_eq!(soft_walltime_update(&published, 9000), None);
    }

    #[test]
    fn durations_and_exclusions() {
        let none = running(None, None, 0);
        assert_eq!(running_duration(&none, 50), JOB_INFINITY);
        assert_eq!(planned_duration(&none), JOB_INFINITY);
        assert_eq!(soft_walltime_update(&none, 50), None);
        let hard = running(None, Some("00:10:00"), 1);
        assert_eq!(planned_duration(&hard), 600);
        assert_eq!(running_end(&hard, 5), 601);
        let both = running(Some("00:01:00"), Some("00:10:00"), 0);
        assert_eq!(planned_duration(&both), 60);
        let mut sub = running(Some("6"), None, 0);
        sub.id = "1[2].s".into();
        assert_eq!(soft_walltime_update(&sub, 100), None);
        let mut queued = running(Some("6"), None, 0);
        queued.state = 'Q';
        assert_eq!(soft_walltime_update(&queued, 100), None);
    }
}
