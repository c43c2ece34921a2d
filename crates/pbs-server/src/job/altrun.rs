//! qalter of a running job's limits (walltime, cput, mem): who may change them, and the
//! new limits its mom must enforce.

use pbs_core::Pbse;
use pbs_core::attr::Privilege;
use pbs_proto::mom::ToMom;

use crate::attrlist::AttrList;
use crate::effects::MomFrames;
use crate::error::ReqError;
use crate::request::attrs::compare_values;
use crate::state::{Job, State};

/// The limits a mom enforces, as `JobLaunch` carries them: walltime and cput in seconds,
/// mem in bytes.
pub fn limits(list: &AttrList) -> (Option<u64>, Option<u64>, Option<u64>) {
    let rl = job_idx!("Resource_List");
    let secs = |r: &str| list.get(rl, Some(r)).and_then(|v| v.parse::<pbs_core::Duration>().ok()).map(|d| d.as_secs());
    (secs("walltime"), secs("cput"), list.get(rl, Some("mem")).and_then(crate::node::amount))
}

/// Checks a qalter of running `job` to `new` and returns the frame that tells its mom the
/// new limits (none if they did not change). A user's raise of any resource is refused.
pub fn check(state: &State, privilege: Privilege, job: &Job, new: &AttrList) -> Result<MomFrames, ReqError> {
    let rl = job_idx!("Resource_List");
    if privilege < Privilege::Operator {
        let raised = new.resources(rl).any(|(resource, value)| {
            job.attrs
                .get(rl, Some(resource))
                .is_some_and(|old| compare_values(old, value) == Some(std::cmp::Ordering::Less))
        });
        if raised {
            return Err(ReqError::new(Pbse::PERM));
        }
    }
    let (walltime, cput, mem) = limits(new);
    if (walltime, cput, mem) == limits(&job.attrs) {
        return Ok(Vec::new());
    }
    let Some(ms) = job.mother_superior().map(str::to_string) else { return Ok(Vec::new()) };
    let run_count = job.get("run_count", None).and_then(|v| v.parse().ok()).unwrap_or(0);
    Ok(vec![(ms, ToMom::ModifyJob { job_id: job.id(&state.server_name), walltime, cput, mem, run_count })])
}
