//! The scheduler: a pure policy core and the daemon loop around it.
//!
//! - [`Mirror`] holds the server's scheduling state: built from a
//!   [`pbs_proto::sched::Snapshot`], kept current by [`pbs_proto::sched::SchedChange`]s
//!   applied one at a time, never rebuilt except when a connection starts.
//! - [`cycle`] decides, without any I/O, which queued jobs start now and where, which
//!   job comments change, and which lines the daemon should log ([`LogEvent`]); [`qrun`]
//!   places the one job of a `qrun` without `-H`.
//! - [`daemon`] connects to pbs_server, feeds the mirror, runs cycles when asked or every
//!   `scheduler_iteration`, and sends the decisions back in one frame per cycle.
//! - [`walltime`]: job durations (soft_walltime, else walltime, else forever =
//!   [`walltime::JOB_INFINITY`]) and the soft_walltime extension of running jobs, published
//!   as `estimated.soft_walltime`.
//! - `calendar`: under `strict_ordering` (with `backfill`), up to `backfill_depth` top jobs
//!   get `estimated.start_time` / `estimated.exec_vnode`, and later jobs run only when they
//!   do not delay them (`Job would conflict with reservation or top job`). A job that
//!   stops being a top job (it ran, or fell out of the top jobs) has both cleared.
//! - Starvation (`help_starving_jobs`, `max_starve`): a queued job eligible (since `etime`,
//!   else `qtime`; with `eligible_time_enable`, its eligible time) for longer than
//!   `max_starve` goes first among the jobs of its queue priority and, when it cannot run,
//!   becomes a top job even without strict ordering.
//! - `accrue`: with `eligible_time_enable`, the `accrue_type` of each job that does not
//!   run (a user, group or project run limit: ineligible; anything else: eligible), sent
//!   with the job's other updates at once, whatever `attr_update_period` says.
//! - `strict_ordering`, `backfill`, `help_starving_jobs` and `backfill_prime` take the
//!   `ALL` / `prime` / `non_prime` qualifiers; a cycle uses the values of the period it
//!   runs in ([`SchedConfig::policy_at`]).
//! - Dedicated time ([`SchedConfig::dedicated`], from `sched_priv/dedicated_time` via
//!   [`parse_dedicated_time`]) and prime time ([`SchedConfig::nonprime`], from
//!   `sched_priv/holidays` via [`prime::parse_holidays`]) are data in the config: the
//!   daemon reads the files, the core only compares times. Shrink-to-fit jobs
//!   (`min_walltime`, no walltime) get the longest walltime that fits, sent as
//!   `Resource_List.walltime` with their run.
//! - Jobs with OR-ed selects (`select="A||B"`, docs/job-sets.md): the mirror keeps one
//!   job view per alternative, and a cycle runs the first alternative that fits now, else
//!   tries only the first in full (its comment, preemption and plan).
//! - [`synthetic`] builds large mirrors for the benchmark; [`sim`] replays a job stream in
//!   virtual time through the core.
//!
//! Boundary: nothing outside `daemon` and `logging` does I/O, and `cycle` depends only on
//! its arguments.

mod accrue;
mod calendar;
mod condition;
mod config;
mod cycle;
pub mod daemon;
mod jobset;
mod limits;
pub use pbs_log as logging;
mod mirror;
mod place;
mod preempt;
pub mod prime;
mod reason;
mod resources;
pub mod sim;
pub mod synthetic;
pub mod walltime;
mod world;

pub use config::{DEFAULT_SCHED_CONFIG, PeriodPolicy, SchedConfig, local_epoch, parse_dedicated_time};
pub use cycle::{Decisions, LogEvent, cycle, cycle_after_preemption, qrun};
pub use limits::OverSoft;
pub use mirror::Mirror;

#[cfg(test)]
mod orselect_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_conditions;
#[cfg(test)]
mod tests_exec;
