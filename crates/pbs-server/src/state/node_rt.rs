//! What the server knows of each node at run time: its mom's link and last report, and the
//! resources and jobs it holds (not stored: rebuilt from the running jobs after a restart).

use std::collections::BTreeMap;

use crate::jobkey::JobKey;

/// What a node's mom said about its host on the current (or last) link.
#[derive(Clone, Debug, Default)]
pub struct Reported {
    /// CPUs.
    pub ncpus: u32,
    /// Memory, kilobytes.
    pub mem_kb: u64,
    /// Architecture.
    pub arch: String,
    /// Host name.
    pub host: String,
    /// Mom version.
    pub version: String,
}

/// A node's run-time state.
#[derive(Clone, Debug, Default)]
pub struct NodeRt {
    /// The mom's link is up.
    pub up: bool,
    /// The link was up at least once since the server started.
    pub ever_up: bool,
    /// When the link went down (for `node_fail_requeue`).
    pub down_since: Option<i64>,
    /// The mom's last report.
    pub reported: Option<Reported>,
    /// Consumable resources held by running jobs, as integers (sizes in bytes).
    pub assigned: BTreeMap<String, u64>,
    /// Running jobs here, in start order, with the ncpus each holds here.
    pub jobs: Vec<(JobKey, String, u64)>,
    /// A job holds the node exclusively.
    pub exclusive: bool,
    /// `last_state_change_time`.
    pub last_state_change: i64,
    /// `last_used_time`.
    pub last_used: i64,
}

impl NodeRt {
    /// The state text pbsnodes shows, `offline` first when set.
    pub fn state_text(&self, offline: bool, available_ncpus: u64) -> String {
        let base = if !self.up {
            if self.ever_up { "down" } else { "state-unknown,down" }
        } else if self.exclusive {
            "job-exclusive"
        } else if !self.jobs.is_empty()
            && available_ncpus > 0
            && self.assigned.get("ncpus").copied().unwrap_or(0) >= available_ncpus
        {
            "job-busy"
        } else {
            "free"
        };
        match (offline, base) {
            (true, "free") => "offline".to_string(),
            (true, other) => format!("offline,{other}"),
            (false, other) => other.to_string(),
        }
    }
}
