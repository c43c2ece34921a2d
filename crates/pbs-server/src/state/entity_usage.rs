//! The queued-job entity limits as read from the server and queues, and the usage counted
//! against them (kept by `entity_limits`).

use std::collections::HashMap;
use std::sync::Arc;

use pbs_core::entlim::{self, EntityKind, Limits};

/// Limits and usage; lives in `State`.
#[derive(Default)]
pub struct Tracker {
    /// `config` and `usage` match the current limits and jobs.
    pub(crate) built: bool,
    /// `None` while no limit is set anywhere: nothing is counted then.
    pub(crate) config: Option<Config>,
    /// What each job (by sequence number) was last counted as.
    pub(crate) contrib: HashMap<u64, Contribution>,
    /// By scope and entity kind, then entity name (looked up without allocating).
    pub(crate) usage: HashMap<Scope, HashMap<Box<str>, Usage>>,
}

/// The limits of the server and of each queue.
pub(crate) struct Config {
    /// Resources some limit names; amounts are kept in this order.
    pub(crate) resources: Vec<String>,
    pub(crate) server: ScopeLimits,
    pub(crate) queues: HashMap<String, ScopeLimits>,
}

#[derive(Default)]
pub(crate) struct ScopeLimits {
    pub(crate) max: Option<Limits<u64>>,
    pub(crate) queued: Option<Limits<u64>>,
    /// (index in `Config::resources`, limits).
    pub(crate) max_res: Vec<(usize, Limits<f64>)>,
    pub(crate) queued_res: Vec<(usize, Limits<f64>)>,
}

impl ScopeLimits {
    pub(crate) fn is_empty(&self) -> bool {
        self.max.is_none() && self.queued.is_none() && self.max_res.is_empty() && self.queued_res.is_empty()
    }
}

/// What one job (an array with all its subjobs) counts for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Contribution {
    pub(crate) queue: Arc<str>,
    pub(crate) user: Box<str>,
    pub(crate) group: Box<str>,
    pub(crate) project: Box<str>,
    /// Jobs for `max_queued`.
    pub(crate) max: u64,
    /// Jobs for `queued_jobs_threshold`.
    pub(crate) queued: u64,
    /// Per job, the amount of each resource of `Config::resources`.
    pub(crate) amounts: Vec<f64>,
}

impl Contribution {
    pub(crate) fn names(&self) -> [(EntityKind, &str); 4] {
        [
            (EntityKind::Overall, entlim::ALL),
            (EntityKind::User, &self.user),
            (EntityKind::Group, &self.group),
            (EntityKind::Project, &self.project),
        ]
    }

    /// Whether this contribution is counted under `scope` for this entity.
    pub(crate) fn counts_under(&self, scope: &Scope, name: &str) -> bool {
        let queue_ok = scope.0.as_deref().is_none_or(|q| q == &*self.queue);
        queue_ok && self.names().iter().any(|(kind, n)| *kind == scope.1 && *n == name)
    }
}

/// (queue, or `None` for the server; entity kind).
pub(crate) type Scope = (Option<Arc<str>>, EntityKind);

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Usage {
    pub(crate) max: u64,
    pub(crate) queued: u64,
    pub(crate) max_res: Vec<f64>,
    pub(crate) queued_res: Vec<f64>,
}

/// Which of the two families a limit belongs to.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Family {
    Max,
    Queued,
}
