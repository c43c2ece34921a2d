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
//! - [`synthetic`] builds large mirrors for the benchmark.
//!
//! Boundary: nothing outside `daemon` and `logging` does I/O, and `cycle` depends only on
//! its arguments.

mod config;
mod cycle;
pub mod daemon;
mod limits;
pub use pbs_log as logging;
mod mirror;
mod place;
mod reason;
mod resources;
pub mod synthetic;
mod world;

pub use config::SchedConfig;
pub use cycle::{Decisions, LogEvent, cycle, qrun};
pub use mirror::Mirror;

#[cfg(test)]
mod tests;
