//! What the server remembers, in memory only, of launches and suspended jobs (kept by
//! `job::faults`).

use std::collections::{BTreeSet, HashMap};

use crate::jobkey::JobKey;

/// What the server remembers, in memory only, about launches and suspended jobs.
#[derive(Debug, Default)]
pub struct Tracked {
    /// Jobs whose `RunJob` went out on their mother superior's link, with the run
    /// (`run_count`) it started: until the mom confirms the start, a mom that comes back
    /// without the job has lost that launch.
    pub(crate) launched: HashMap<JobKey, u32>,
    /// Suspended jobs by node (each node of their `exec_vnode`). A suspended job holds no
    /// resources, so it is on no node's list of running jobs (`NodeRt::jobs`), yet its
    /// moms still have it.
    pub(crate) suspended: HashMap<String, BTreeSet<JobKey>>,
}
