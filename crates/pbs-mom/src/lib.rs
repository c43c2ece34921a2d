//! pbs_mom, the execution daemon: it listens for the server's link ([`link`]), runs each job
//! under a per-job shepherd process that survives mom restarts ([`shepherd`], [`exec`]),
//! samples usage from /proc and enforces limits ([`mom`], [`procfs`]), and keeps every
//! job's state in one records file under `PBS_HOME/mom_priv/jobs/` ([`layout`],
//! [`records`]) until the server forgets it.
//!
//! How the pieces talk: the mom creates `jobs/<jobid>.JB` with the launch record and starts
//! `pbs_mom --shepherd <records file>`; the shepherd appends its `started` and `status`
//! records and sends the same facts as a datagram on `PBS_HOME/mom_priv/mom_sock`. The mom
//! reacts to the datagram at once (no polling on a job's path); it also notices its own
//! shepherds exiting, and checks the records of adopted shepherds at every usage sample, so
//! a lost datagram delays a report but never loses it.
//!
//! Execution hooks ([`hooks`]) and the classic prologue and epilogue scripts
//! ([`prologue`]) run in the mom's tasks around a job: a start waits for its execjob_begin
//! and execjob_prologue hooks (or the prologue), an end report for its execjob_epilogue
//! and execjob_end hooks (or the epilogue).

pub mod adopt;
pub mod checkpoint;
pub mod config;
pub mod env;
pub mod error;
pub mod exec;
pub mod exit_codes;
pub mod hooks;
pub mod layout;
pub mod link;
pub mod message;
pub use pbs_log as logging;
pub mod mom;
pub mod owner;
pub mod printjob;
pub mod procfs;
pub mod prologue;
pub mod records;
pub mod session_signals;
pub mod shepherd;
pub mod signals;
pub mod stage;

pub use config::{DEFAULT_SAMPLE_PERIOD, MomConfig, host_name};
pub use error::MomError;
pub use exit_codes::*;
pub use mom::Mom;
