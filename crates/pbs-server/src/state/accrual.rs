//! Eligible time (`eligible_time_enable`): what each job accrues (`accrue_type`), the
//! `eligible_time` it has accrued, and since when it accrues its current type
//! (`Job::accrue_since`, stored with the job), so the time shown is exact at any moment,
//! whenever the scheduler last sent an update.
//!
//! The stored `eligible_time` is what the job accrued up to `accrue_since`; a job that
//! accrues eligible time shows that plus the time since (OpenPBS's `sample_starttime`,
//! computed at status time as `stat_job.c` does). The type changes where the server knows
//! it ([`server_decides`], OpenPBS's `determine_accruetype`, applied to every job a change
//! writes by [`on_written`]) and where the scheduler decides it (a run limit or resources,
//! [`from_scheduler`]); each change adds what the old type accrued ([`change`], OpenPBS's
//! `update_eligible_time`).

use pbs_core::{Duration, JobState, Substate};

use crate::jobkey::JobKey;
use crate::state::{Job, State};
use crate::store::StoreOp;

/// OpenPBS's `accrue_type` values, shown as their numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccrueType {
    /// 0: not decided yet.
    Initial,
    /// 1: held, waiting for its time or a dependency, or blocked by a run limit.
    Ineligible,
    /// 2: could run but for resources.
    Eligible,
    /// 3: running.
    Run,
    /// 4: ending or ended.
    Exit,
}

impl AccrueType {
    /// The value as stored and shown.
    pub fn number(self) -> u8 {
        match self {
            AccrueType::Initial => 0,
            AccrueType::Ineligible => 1,
            AccrueType::Eligible => 2,
            AccrueType::Run => 3,
            AccrueType::Exit => 4,
        }
    }

    /// The type a number names.
    pub fn from_number(number: i64) -> Option<AccrueType> {
        Some(match number {
            0 => AccrueType::Initial,
            1 => AccrueType::Ineligible,
            2 => AccrueType::Eligible,
            3 => AccrueType::Run,
            4 => AccrueType::Exit,
            _ => return None,
        })
    }

    /// OpenPBS's name in its log lines.
    fn log_name(self) -> &'static str {
        match self {
            AccrueType::Initial => "initial_time",
            AccrueType::Ineligible => "ineligible_time",
            AccrueType::Eligible => "eligible_time",
            AccrueType::Run => "run_time",
            AccrueType::Exit => "exiting",
        }
    }

    /// A job's current type (unset is initial).
    pub fn of(job: &Job) -> AccrueType {
        job.attrs
            .get(job_idx!("accrue_type"), None)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .and_then(AccrueType::from_number)
            .unwrap_or(AccrueType::Initial)
    }
}

/// Whether the server keeps eligible time (`eligible_time_enable`).
pub fn enabled(state: &State) -> bool {
    state.server_flag("eligible_time_enable", false)
}

/// The eligible time stored on a job: what it accrued up to `accrue_since`.
fn stored_secs(job: &Job) -> i64 {
    job.attrs
        .get(job_idx!("eligible_time"), None)
        .and_then(|v| v.parse::<Duration>().ok())
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn set_secs(job: &mut Job, secs: i64) {
    let text = Duration::from_secs(u64::try_from(secs.max(0)).unwrap_or(0)).to_string();
    job.attrs.set(job_idx!("eligible_time"), None, text);
}

/// A job's eligible time at `now`: what is stored, plus the time since `accrue_since`
/// while it accrues eligible time.
pub fn eligible_secs(job: &Job, now: i64) -> i64 {
    let stored = stored_secs(job);
    if AccrueType::of(job) == AccrueType::Eligible { stored.saturating_add(since(job, now)) } else { stored }
}

/// Seconds in the job's current accrue type at `now` (0 before it has one, never negative).
fn since(job: &Job, now: i64) -> i64 {
    if job.accrue_since > 0 { now.saturating_sub(job.accrue_since).max(0) } else { 0 }
}

/// The eligible time a run's `E` or `R` record carries (`HH:MM:SS`): what the job accrued
/// up to `now`, none being `00:00:00`, as OpenPBS writes it.
pub fn recorded(job: &Job, now: i64) -> String {
    Duration::from_secs(u64::try_from(eligible_secs(job, now)).unwrap_or(0)).to_string()
}

/// The `eligible_time` a status shows at `now` (`HH:MM:SS`), when the job has one.
pub fn shown(job: &Job, now: i64) -> Option<String> {
    job.attrs.get(job_idx!("eligible_time"), None)?;
    let secs = eligible_secs(job, now);
    Some(Duration::from_secs(u64::try_from(secs).unwrap_or(0)).to_string())
}

/// What the server itself knows a job accrues, as OpenPBS's `determine_accruetype`:
/// running (its mom confirmed the start) is run time; ending is exit; waiting for its
/// execution time, a user hold or a dependency is ineligible; another hold, a suspension
/// or a stopped queue is eligible, as OpenPBS counts them. `None`: the server cannot tell
/// (a queued job: the scheduler decides, by a run limit or resources).
pub fn server_decides(state: &State, job: &Job) -> Option<AccrueType> {
    match job.state {
        JobState::Running if job.substate == Substate::RUNNING => return Some(AccrueType::Run),
        JobState::Exiting | JobState::Finished | JobState::Expired | JobState::Moved => {
            return Some(AccrueType::Exit);
        }
        _ => {}
    }
    if job.attrs.get(job_idx!("Execution_Time"), None).is_some_and(|t| t.trim().parse::<i64>().is_ok_and(|t| t != 0)) {
        return Some(AccrueType::Ineligible);
    }
    let holds = job.attrs.get(job_idx!("Hold_Types"), None).unwrap_or("n");
    if holds.contains('u') {
        return Some(AccrueType::Ineligible);
    }
    if holds.contains('o') || holds.contains('p') || holds.contains('s') {
        // A dependency's system hold (substate 22) is ineligible; other holds accrue.
        if holds.contains('s') && job.substate == Substate(22) {
            return Some(AccrueType::Ineligible);
        }
        return Some(AccrueType::Eligible);
    }
    if matches!(job.substate, Substate::SUSPEND | Substate::SCHSUSP) {
        return Some(AccrueType::Eligible);
    }
    if job.state == JobState::Transit {
        return Some(AccrueType::Eligible);
    }
    let stopped = state
        .queues
        .iter()
        .find(|q| *q.name == *job.queue)
        .and_then(|q| q.attrs.get_named(pbs_core::attr::ObjectKind::Queue, "started", None))
        .and_then(pbs_core::attr::parse_bool)
        .is_some_and(|started| !started);
    stopped.then_some(AccrueType::Eligible)
}

/// Changes a job's accrue type at `now`, adding what the old type accrued (OpenPBS's
/// `update_eligible_time`). Returns whether anything changed.
pub fn change(job: &mut Job, new: AccrueType, now: i64, server_name: &str) -> bool {
    let old = AccrueType::of(job);
    let unset = job.attrs.get(job_idx!("accrue_type"), None).is_none();
    if new == old && !unset {
        return false;
    }
    let accrued = since(job, now);
    let mut total = stored_secs(job);
    if old == AccrueType::Eligible && accrued > 0 {
        total = total.saturating_add(accrued);
    }
    set_secs(job, total);
    job.attrs.set(job_idx!("accrue_type"), None, new.number().to_string());
    job.accrue_since = now;
    tracing::debug!(
        object_type = "Job",
        object_name = %job.id(server_name),
        "Accrue type has changed to {}, previous accrue type was {} for {} secs, total eligible_time={}",
        new.log_name(),
        old.log_name(),
        accrued,
        Duration::from_secs(u64::try_from(total).unwrap_or(0)),
    );
    true
}

/// Called with every change's writes before they are committed (`Server::apply_effects`),
/// as OpenPBS's `svr_setjobstate` calls `determine_accruetype`: each job written whose
/// accrue type the server knows gets it; a job never given one (a new job) starts
/// accruing eligible time. A job changed here has its record written again in place, so
/// the type, the time and `accrue_since` are committed with the change that caused them.
pub fn on_written(state: &mut State, ops: &mut [StoreOp], now: i64) {
    if ops.is_empty() || !enabled(state) {
        return;
    }
    for op in ops.iter_mut() {
        let (key, record) = match op {
            StoreOp::PutJob { seq, record, .. } => (JobKey::job(*seq), record),
            StoreOp::PutSubjob { seq, index, record } => (JobKey::subjob(*seq, *index), record),
            _ => continue,
        };
        let Some(job) = state.job(key) else { continue };
        let decided = server_decides(state, job);
        let new = match decided {
            Some(new) => new,
            None if job.attrs.get(job_idx!("accrue_type"), None).is_none() => AccrueType::Eligible,
            None => continue,
        };
        let server_name = state.server_name.clone();
        let Some(job) = state.job_mut(key) else { continue };
        if change(job, new, now, &server_name) {
            *record = job.to_record();
        }
    }
}

/// `eligible_time_enable` was just turned on: every job not finished starts accruing now
/// (what it was before is not trusted, as OpenPBS's `eligibletime_action` says), with the
/// type the server knows, else the one it had, else eligible (the scheduler's next cycle
/// corrects it). Returns the writes.
pub fn enable_all(state: &mut State, now: i64) -> Vec<StoreOp> {
    let keys: Vec<JobKey> =
        state.jobs.values().chain(state.subjobs.values()).filter(|j| !j.state.is_history()).map(Job::key).collect();
    let mut ops = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(job) = state.job(key) else { continue };
        let new = server_decides(state, job).unwrap_or(match AccrueType::of(job) {
            AccrueType::Initial => AccrueType::Eligible,
            kept => kept,
        });
        let Some(job) = state.job_mut(key) else { continue };
        if job.attrs.get(job_idx!("eligible_time"), None).is_none() {
            set_secs(job, 0);
        }
        job.attrs.set(job_idx!("accrue_type"), None, new.number().to_string());
        job.accrue_since = now;
        ops.push(job.put_op(None));
    }
    ops
}

/// `qalter -W eligible_time=` (already checked: a manager, `eligible_time_enable` on):
/// the job's eligible time becomes `value` and accrues on from `now` (OpenPBS's
/// `alter_eligibletime`).
pub fn alter(job: &mut Job, value: &str, now: i64, server_name: &str) {
    let accrued = since(job, now);
    let kind = AccrueType::of(job);
    job.attrs.set(job_idx!("eligible_time"), None, value);
    job.accrue_since = now;
    tracing::debug!(
        object_type = "Job",
        object_name = %job.id(server_name),
        "Accrue type is {}, previous accrue type was {} for {} secs, due to qalter total eligible_time={}",
        kind.log_name(),
        kind.log_name(),
        accrued,
        value,
    );
}

/// The scheduler's `accrue_type` for a job that did not run: ineligible (a run limit) or
/// eligible (resources). Any other value is refused, as is any while eligible time is off.
pub fn from_scheduler(state: &State, value: &str) -> Option<AccrueType> {
    if !enabled(state) {
        return None;
    }
    match value.trim().parse::<i64>().ok().and_then(AccrueType::from_number) {
        Some(kind @ (AccrueType::Ineligible | AccrueType::Eligible)) => Some(kind),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_adds_only_what_eligible_time_accrued() {
        let (mut state, _) = State::from_loaded(Default::default(), "svr", "host", "/nonexistent");
        state.server.set(pbs_core::attr::ObjectKind::Server.index_of("eligible_time_enable"), None, "True");
        let parts = crate::state::JobParts {
            seq: 1,
            array: false,
            index: None,
            state: JobState::Queued,
            substate: Substate::QUEUED,
            queue: "workq".into(),
            attrs: Default::default(),
            accrue_since: 100,
        };
        let mut job = Job::new(parts, &mut state.requests);
        assert!(change(&mut job, AccrueType::Eligible, 100, "svr"));
        assert_eq!(eligible_secs(&job, 160), 60, "accrues while eligible, between updates");
        assert!(change(&mut job, AccrueType::Ineligible, 160, "svr"));
        assert_eq!((eligible_secs(&job, 1000), shown(&job, 1000).as_deref()), (60, Some("00:01:00")));
        assert!(!change(&mut job, AccrueType::Ineligible, 2000, "svr"), "the same type changes nothing");
        assert!(change(&mut job, AccrueType::Eligible, 2000, "svr"));
        assert_eq!(eligible_secs(&job, 2030), 90);
        assert_eq!(from_scheduler(&state, "3"), None, "the scheduler never sets run time");
        assert_eq!(from_scheduler(&state, "1"), Some(AccrueType::Ineligible));
        alter(&mut job, "00:00:10", 2040, "svr");
        assert_eq!(eligible_secs(&job, 2050), 20, "a qalter's value accrues on from then");
    }
}
