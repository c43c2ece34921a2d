//! Daemon logs in PBS's line format, one file per day under `PBS_HOME/<daemon>_logs/`
//! (`server_logs`, `sched_logs`, `mom_logs`), shared by the three daemons:
//! `MM/DD/YYYY HH:MM:SS;EVENT;daemon;object type;object name;message`, and the same lines
//! on stderr. Events name their object with the `object_type` and `object_name` fields.
//! Every field is escaped here (control characters as `\n`, `\x1b`...), so no string from a
//! user can end a line and forge the next.
//!
//! Request handlers only format a line and hand it to a writer thread, which writes in
//! batches and flushes whenever it has caught up: a log line never costs a request a
//! system call.
//!
//! [`daemon`] holds the rest of what the three daemons' `main`s share: their common options,
//! reading pbs.conf, log set-up, the exit status and the stop-signal future.

pub mod daemon;
pub mod layer;

pub use layer::*;
