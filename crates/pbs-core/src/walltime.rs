//! soft_walltime arithmetic (seed PP-482): how long a running job is expected to take now,
//! and how far through its work it counts for preemption ordering.

/// The current soft_walltime estimate of a job that has run `elapsed` seconds: the
/// original `soft` while not exceeded; each time it is exceeded it grows by another
/// `soft`, never past the hard `walltime`. `soft == 0` leaves nothing to extend.
pub fn soft_estimate(soft: u64, walltime: Option<u64>, elapsed: u64) -> u64 {
    if soft == 0 {
        return walltime.unwrap_or(0);
    }
    let extended = if elapsed > soft { soft.saturating_add((elapsed / soft).saturating_mul(soft)) } else { soft };
    match walltime {
        Some(hard) => extended.min(hard.max(soft)),
        None => extended,
    }
}

/// Percentage of completion for preemption ordering: elapsed over the *original*
/// soft_walltime, rounded up (the seed's 59 minutes of one hour is 99%), 100 once reached
/// and for ever after, however often the estimate was extended.
pub fn completion_percent(soft: u64, elapsed: u64) -> u32 {
    if soft == 0 || elapsed >= soft {
        return 100;
    }
    u32::try_from(elapsed.saturating_mul(100).div_ceil(soft)).unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = 3600;
    const MIN: u64 = 60;

    #[test]
    fn job_j_is_extended_by_its_original_soft_walltime() {
        // soft_walltime=1:00:00: 1h until exceeded, then 2h, then 3h.
        assert_eq!(soft_estimate(HOUR, None, 30 * MIN), HOUR);
        assert_eq!(soft_estimate(HOUR, None, HOUR), HOUR);
        assert_eq!(soft_estimate(HOUR, None, HOUR + 1), 2 * HOUR);
        assert_eq!(soft_estimate(HOUR, None, 2 * HOUR + 1), 3 * HOUR);
    }

    #[test]
    fn job_k_stops_at_its_hard_walltime() {
        // soft_walltime=1:00:00, walltime=1:30:00: extended to 1:30:00, not 2:00:00.
        assert_eq!(soft_estimate(HOUR, Some(90 * MIN), HOUR + 1), 90 * MIN);
        assert_eq!(soft_estimate(HOUR, Some(90 * MIN), 85 * MIN), 90 * MIN);
    }

    #[test]
    fn pbs_facts_example() {
        // soft=6: after 7 s -> 12, after 13 s -> 18; with walltime 16 it stops at 16.
        assert_eq!(soft_estimate(6, None, 7), 12);
        assert_eq!(soft_estimate(6, None, 13), 18);
        assert_eq!(soft_estimate(6, Some(16), 13), 16);
    }

    #[test]
    fn completion_follows_the_original_request() {
        // The seed: at 59 minutes of a 1-hour soft_walltime 99%; at 1:00 100%, and still
        // 100% at 1:30 after the estimate was extended to 2 hours.
        assert_eq!(completion_percent(HOUR, 59 * MIN), 99);
        assert_eq!(completion_percent(HOUR, 30 * MIN), 50);
        assert_eq!(completion_percent(HOUR, HOUR), 100);
        assert_eq!(completion_percent(HOUR, 90 * MIN), 100);
        assert_eq!(completion_percent(HOUR, 0), 0);
    }
}
