//! pbs_server as a library: the in-memory state, request handlers with their permission
//! checks, the SQLite store, and the socket front end. `bins/pbs_server` is a thin main.
//!
//! Entry points: [`Server::open`] rebuilds the state from disk, [`bind`] opens the sockets,
//! [`run`] serves until the shutdown future completes.

/// The table index of a job attribute named by a literal, found at compile time: a
/// misspelt name does not build.
macro_rules! job_idx {
    ($name:literal) => {
        const { pbs_core::attr::ObjectKind::Job.index_of($name) }
    };
}

pub mod accounting;
pub mod acctlog;
pub mod acl;
pub mod admission;
pub mod attrlist;
pub mod cluster_key;
pub mod criteria;
pub mod dispatch;
pub mod due;
pub mod effects;
pub mod entity_limits;
pub mod error;
#[cfg(test)]
mod handler_tests;
pub mod holds;
pub mod hooks;
pub mod hookwait;
pub mod identity;
pub mod job;
pub mod jobkey;
pub mod launch_owner;
pub mod mailer;
pub use pbs_log as logging;
pub mod mom_report;
pub mod momlink;
pub mod net;
pub mod node;
pub mod objects;
pub mod preemptwait;
pub mod privilege;
pub mod remote;
pub mod request;
pub mod run;
pub mod sched_view;
pub mod schedlink;
pub mod server;
pub mod shutdown;
pub mod size_limits;
pub mod state;
pub mod store;

pub use cluster_key::{load_or_create_cluster_key, write_peer_key};
pub use run::{Listeners, bind, run};
pub use server::{Server, ServerConfig, ServerError};
