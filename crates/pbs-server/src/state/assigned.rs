//! The amounts server and queue `resources_assigned` count, held in the state (the counting
//! is `node::assigned`'s).

use std::collections::{BTreeMap, HashMap};

use crate::jobkey::JobKey;

/// Amounts held by running jobs: sizes in bytes, the rest in units.
#[derive(Debug, Default)]
pub struct Assigned {
    pub(crate) server: BTreeMap<String, u64>,
    pub(crate) queues: HashMap<String, BTreeMap<String, u64>>,
    /// What each job holding resources was charged, and in which queue: its end gives back
    /// exactly that, even if its `Resource_List` was altered while it ran.
    pub(crate) charged: HashMap<JobKey, (String, Vec<(String, u64)>)>,
    /// For sizes, the smallest unit any job asked in: OpenPBS adds sizes in the finer unit
    /// of the two and prints the total in it (`resources_assigned.mem = 0mb`).
    pub(crate) units: HashMap<String, u32>,
}

impl Assigned {
    /// Adds or subtracts `amounts` on the server and on `queue`.
    pub(crate) fn change(&mut self, queue: &str, amounts: &[(String, u64)], add: bool) {
        let queue_totals = self.queues.entry(queue.to_string()).or_default();
        for totals in [&mut self.server, queue_totals] {
            for (resource, n) in amounts {
                let slot = totals.entry(resource.clone()).or_insert(0);
                *slot = if add { slot.saturating_add(*n) } else { slot.saturating_sub(*n) };
            }
        }
    }
}
