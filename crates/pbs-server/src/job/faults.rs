//! What the server does when something under a job fails: a launch lost with its mom's
//! link, a suspended job across reconnections and restarts, a job script the store cannot
//! give back.

use std::collections::{HashMap, HashSet};

use pbs_core::JobState;
use pbs_proto::mom::ToMom;

use crate::effects::{Effects, Launch};
use crate::jobkey::JobKey;
use crate::state::{Job, State};
use crate::store::StoreOp;

/// The comment of a job sent back to the queue because its launch was lost with its mom.
pub const LAUNCH_LOST_COMMENT: &str = "Not Running: PBS Error: Server could not connect to MOM";

/// The comment of a job sent back to the queue because its script could not be read.
pub const SCRIPT_UNREADABLE_COMMENT: &str = "Not Running: PBS Error: System error: cannot read the job script";

pub(crate) fn run_count(job: &Job) -> Option<u32> {
    job.get("run_count", None).and_then(|v| v.parse().ok())
}

/// Called by a mom's link task before it writes `frame`: false for a mother superior's
/// `RunJob` that no longer matches a starting run of its job on this node (the job was
/// requeued or ended meanwhile, e.g. because the launch was given up for lost), which
/// must not go out. A run being ended (qdel before its launch went out: `Exiting`) is
/// still current: its `KillJob` follows the `RunJob` on the same link, and the mom's end
/// report is what ends it. A `RunJob` that goes out is recorded as launched.
pub fn leaving(state: &mut State, node: &str, frame: &ToMom) -> bool {
    let ToMom::RunJob { launch } = frame else { return true };
    if launch.sister {
        return true;
    }
    let Some(key) = crate::jobkey::key_of(&launch.job_id) else { return true };
    let current = state.starting.contains(&key)
        && state.job(key).is_some_and(|job| {
            matches!(job.state, JobState::Running | JobState::Exiting)
                && run_count(job) == Some(launch.run_count)
                && job.mother_superior() == Some(node)
        });
    if !current {
        tracing::debug!(object_type = "Job", object_name = launch.job_id.as_str(), "a stale launch is not sent");
        return false;
    }
    let starting = &state.starting;
    state.faults.launched.retain(|k, _| starting.contains(k));
    state.faults.launched.insert(key, launch.run_count);
    true
}

/// A node's link task is replaced (its `Mom` or `Port` changed): the frames waiting in the
/// old link's queue are gone with it, so the launches among them count as sent and lost.
pub fn link_replaced(state: &mut State, node: &str) {
    let starting: Vec<(JobKey, u32)> = state
        .starting
        .iter()
        .filter_map(|key| {
            let job = state.job(*key)?;
            (job.mother_superior() == Some(node)).then_some((*key, run_count(job)?))
        })
        .collect();
    state.faults.launched.extend(starting);
}

/// Whether `key`, which the server places on `node` but the node's reconnected mom does
/// not hold, is lost: true unless its launch has not gone out yet (it waits in the link's
/// queue and goes out once the mom's status is reconciled).
pub fn lost_by_mom(state: &State, key: JobKey) -> bool {
    if !state.starting.contains(&key) {
        return true;
    }
    let current = state.job(key).and_then(run_count);
    current.is_some() && state.faults.launched.get(&key).copied() == current
}

/// Ends a job's run that its mom does not have. A job whose start was never confirmed
/// goes back to the queue, rerunnable or not (see [`crate::job::end::lost`]), with a comment in
/// OpenPBS's form (`Not Running: PBS Error: <PBSE_NORELYMOM's text>`).
pub fn requeue_lost(state: &mut State, key: JobKey, now: i64) -> Effects {
    let failed_start = state.job(key).is_some_and(|j| j.substate == crate::job::running::SUBSTATE_PRERUN);
    if failed_start {
        set_comment(state, key, LAUNCH_LOST_COMMENT);
        if let Some(job) = state.job(key) {
            let id = job.id(&state.server_name);
            tracing::warn!(object_type = "Job", object_name = id.as_str(), "launch lost with its mom, job requeued");
        }
    }
    state.faults.launched.remove(&key);
    let mut effects = crate::job::end::lost(state, key, now);
    if failed_start {
        hold_if_failing(state, key, now, &mut effects.ops);
    }
    effects
}

/// Runs after which a job whose start failed again is held, as OpenPBS does: a start that
/// keeps failing (a script that is gone, a mom that dies at each launch) would otherwise
/// be retried by every scheduling cycle, forever.
const MAX_RUN_COUNT: u32 = 20;

/// OpenPBS's comment on a job held for that reason.
pub const TOO_MANY_ATTEMPTS_COMMENT: &str = "job held, too many failed attempts to run";

/// Puts a system hold on `key`, just requeued after a failed start, once its runs pass
/// [`MAX_RUN_COUNT`]; the job's new record joins `ops`.
fn hold_if_failing(state: &mut State, key: JobKey, now: i64, ops: &mut Vec<StoreOp>) {
    if key.index.is_some() {
        // A requeued subjob has no record of its own to hold.
        return;
    }
    let server_name = state.server_name.clone();
    let Some(job) = state.job_mut(key) else { return };
    if !matches!(job.state, JobState::Queued | JobState::Held) || run_count(job).is_none_or(|n| n <= MAX_RUN_COUNT) {
        return;
    }
    let current = job.get("Hold_Types", None).unwrap_or("n");
    let held = crate::holds::written(|c| c == 's' || current.contains(c));
    job.attrs.set(job_idx!("Hold_Types"), None, held);
    job.attrs.set(job_idx!("comment"), None, TOO_MANY_ATTEMPTS_COMMENT);
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
    job.state = JobState::Held;
    job.substate = JobState::Held.default_substate();
    ops.push(job.put_op(None));
    let id = job.id(&server_name);
    tracing::warn!(object_type = "Job", object_name = id.as_str(), "{TOO_MANY_ATTEMPTS_COMMENT}");
}

fn set_comment(state: &mut State, key: JobKey, comment: &str) {
    if let Some(job) = state.job_mut(key) {
        job.attrs.set(job_idx!("comment"), None, comment);
    }
}

/// Fills each mother superior's launch that runs a script with that script, read from
/// the store (`scripts`, by job sequence number, or why it could not be read). Returns the
/// jobs whose script is missing: their launches must not go out.
pub fn fill_scripts(launches: &mut [Launch], scripts: Result<HashMap<u64, String>, String>) -> HashSet<JobKey> {
    let mut unreadable = HashSet::new();
    if let Err(why) = &scripts {
        tracing::error!(object_type = "Server", "cannot read job scripts: {why}");
    }
    for launch in launches.iter_mut().filter(|l| !l.launch.sister && l.launch.executable.is_none()) {
        match scripts.as_ref().ok().and_then(|s| s.get(&launch.key.seq)) {
            Some(script) => launch.launch.script.clone_from(script),
            None => {
                unreadable.insert(launch.key);
            }
        }
    }
    unreadable
}

/// A job whose script could not be read for its launch: nothing was sent, and it goes
/// back to the queue with a comment saying why.
pub fn requeue_unreadable(state: &mut State, key: JobKey, now: i64) -> Effects {
    if let Some(job) = state.job(key) {
        let id = job.id(&state.server_name);
        tracing::error!(object_type = "Job", object_name = id.as_str(), "cannot read the job script, job requeued");
    }
    set_comment(state, key, SCRIPT_UNREADABLE_COMMENT);
    let mut effects = crate::job::end::lost(state, key, now);
    hold_if_failing(state, key, now, &mut effects.ops);
    effects
}

fn vnodes(job: &Job) -> Vec<String> {
    job.placement().as_deref().map(|p| p.exec.vnodes().into_iter().map(str::to_string).collect()).unwrap_or_default()
}

/// Records that `key` was suspended (`true`) on its nodes, or resumed.
pub fn note_suspended(state: &mut State, key: JobKey, suspended: bool) {
    let Some(nodes) = state.job(key).map(vnodes) else { return };
    for node in nodes {
        let entry = state.faults.suspended.entry(node.clone()).or_default();
        if suspended {
            entry.insert(key);
        } else {
            entry.remove(&key);
        }
        prune_suspended(state, &node);
    }
}

fn suspended_here(state: &State, key: JobKey, node: &str) -> bool {
    state.job(key).is_some_and(|j| j.state == JobState::Suspended && vnodes(j).iter().any(|v| v == node))
}

/// Drops from `node`'s suspended set the jobs that no longer are suspended there (ended,
/// requeued, resumed): each suspension prunes its nodes' sets, which so stay as small as
/// the number of jobs suspended there.
fn prune_suspended(state: &mut State, node: &str) {
    let Some(keys) = state.faults.suspended.get(node) else { return };
    let stale: Vec<JobKey> = keys.iter().copied().filter(|key| !suspended_here(state, *key, node)).collect();
    if let Some(keys) = state.faults.suspended.get_mut(node) {
        for key in stale {
            keys.remove(&key);
        }
        if keys.is_empty() {
            state.faults.suspended.remove(node);
        }
    }
}

/// The suspended jobs whose mother superior is `node`.
pub fn suspended_on<'a>(state: &'a State, node: &'a str) -> impl Iterator<Item = JobKey> + 'a {
    let keys = state.faults.suspended.get(node).into_iter().flatten().copied();
    keys.filter(move |key| {
        suspended_here(state, *key, node) && state.job(*key).and_then(Job::mother_superior) == Some(node)
    })
}

/// Whether a suspended job has `node` among its nodes (so the node cannot be deleted).
pub fn holds_suspended(state: &State, node: &str) -> bool {
    state.faults.suspended.get(node).is_some_and(|keys| keys.iter().any(|key| suspended_here(state, *key, node)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrlist::AttrList;
    use pbs_core::Substate;
    use pbs_proto::mom::JobLaunch;

    fn state_with_job(job_state: JobState, substate: Substate) -> (State, JobKey) {
        let (mut state, _) = State::from_loaded(Default::default(), "s", "h", "/tmp");
        let parts = crate::state::JobParts {
            seq: 7,
            array: false,
            index: None,
            state: job_state,
            substate,
            queue: "workq".into(),
            attrs: AttrList::default(),
            accrue_since: 0,
        };
        let mut job = Job::new(parts, &mut state.requests);
        job.attrs.set(job_idx!("run_count"), None, "2");
        let exec: pbs_core::ExecVnode = "(n1:ncpus=1)".parse().expect("an exec_vnode");
        job.set_placement(Some(std::sync::Arc::new(crate::state::Placement { exec, exclusive: false })));
        state.jobs.insert(7, job);
        (state, JobKey::job(7))
    }

    fn launch(seq: u64, sister: bool, executable: Option<&str>) -> Launch {
        let launch = JobLaunch {
            job_id: format!("{seq}.s"),
            sister,
            executable: executable.map(str::to_string),
            ..JobLaunch::default()
        };
        Launch { key: JobKey::job(seq), node: "n1".into(), launch }
    }

    #[test]
    fn a_launch_still_queued_on_its_link_is_not_lost_one_sent_is() {
        let (mut state, key) = state_with_job(JobState::Running, crate::job::running::SUBSTATE_PRERUN);
        state.starting.insert(key);
        // Its RunJob still waits in the link's queue: it goes out after the reconciliation.
        assert!(!lost_by_mom(&state, key));
        // An earlier run's launch says nothing of this one.
        state.faults.launched.insert(key, 1);
        assert!(!lost_by_mom(&state, key));
        state.faults.launched.insert(key, 2);
        assert!(lost_by_mom(&state, key));
        // Neither starting nor held by the mom: lost.
        state.starting.remove(&key);
        state.faults.launched.clear();
        assert!(lost_by_mom(&state, key));
    }

    #[test]
    fn launches_queued_on_a_replaced_link_are_lost_with_it() {
        let (mut state, key) = state_with_job(JobState::Running, crate::job::running::SUBSTATE_PRERUN);
        state.starting.insert(key);
        link_replaced(&mut state, "n2");
        assert!(!lost_by_mom(&state, key));
        link_replaced(&mut state, "n1");
        assert!(lost_by_mom(&state, key));
    }

    #[test]
    fn a_lost_launch_is_requeued_with_a_comment_even_if_not_rerunnable() {
        let (mut state, key) = state_with_job(JobState::Running, crate::job::running::SUBSTATE_PRERUN);
        if let Some(job) = state.job_mut(key) {
            job.attrs.set(job_idx!("Rerunable"), None, "False");
        }
        state.starting.insert(key);
        state.faults.launched.insert(key, 2);
        let effects = requeue_lost(&mut state, key, 100);
        assert!(!effects.ops.is_empty());
        let job = state.job(key).unwrap();
        assert_eq!(job.state, JobState::Queued);
        assert_eq!(job.get("comment", None), Some(LAUNCH_LOST_COMMENT));
        assert!(!state.starting.contains(&key) && state.faults.launched.is_empty());
    }

    #[test]
    fn a_job_whose_starts_keep_failing_is_held_after_twenty_runs() {
        let (mut state, key) = state_with_job(JobState::Running, crate::job::running::SUBSTATE_PRERUN);
        requeue_unreadable(&mut state, key, 100);
        assert_eq!(state.job(key).map(|j| j.state), Some(JobState::Queued));
        if let Some(job) = state.job_mut(key) {
            job.state = JobState::Running;
            job.substate = crate::job::running::SUBSTATE_PRERUN;
            job.attrs.set(job_idx!("run_count"), None, "21");
            job.attrs.set(job_idx!("Hold_Types"), None, "u");
        }
        let ops = requeue_unreadable(&mut state, key, 100).ops;
        let job = state.job(key).unwrap();
        assert_eq!(job.state, JobState::Held);
        assert_eq!(job.get("Hold_Types", None), Some("su"));
        assert_eq!(job.get("comment", None), Some(TOO_MANY_ATTEMPTS_COMMENT));
        assert!(matches!(ops.last(), Some(StoreOp::PutJob { seq: 7, .. })));
    }

    #[test]
    fn launches_without_their_script_are_held_back() {
        let mut launches = vec![
            launch(1, false, None),
            launch(1, true, None),
            launch(2, false, None),
            launch(3, false, Some("/bin/true")),
        ];
        let scripts = HashMap::from([(1, "echo one\n".to_string())]);
        let unreadable = fill_scripts(&mut launches, Ok(scripts));
        assert_eq!(unreadable, HashSet::from([JobKey::job(2)]));
        assert_eq!(launches[0].launch.script, "echo one\n");
        // Sisters and executables need no script.
        assert_eq!(launches[1].launch.script, "");
        let unreadable = fill_scripts(&mut launches, Err("disk I/O error".into()));
        assert_eq!(unreadable, HashSet::from([JobKey::job(1), JobKey::job(2)]));
    }

    #[test]
    fn a_suspended_job_is_on_its_node_until_it_no_longer_is_suspended() {
        let (mut state, key) = state_with_job(JobState::Suspended, Substate::SUSPEND);
        note_suspended(&mut state, key, true);
        assert_eq!(crate::job::nodefail::jobs_on(&state, "n1"), vec![key]);
        assert!(crate::job::nodefail::jobs_on(&state, "n2").is_empty());
        assert!(holds_suspended(&state, "n1") && !holds_suspended(&state, "n2"));
        if let Some(job) = state.job_mut(key) {
            job.state = JobState::Running;
        }
        assert!(crate::job::nodefail::jobs_on(&state, "n1").is_empty());
        note_suspended(&mut state, key, false);
        assert!(state.faults.suspended.is_empty());
    }
}
