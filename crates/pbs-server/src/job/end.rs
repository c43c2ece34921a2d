//! A running job's life as its mom reports it (start, usage, end), and its end on purpose
//! (qdel, qrerun) or when it is lost: its nodes released, then requeued or finished.

use pbs_core::attr::ObjectKind;
use pbs_core::{JobState, Substate};
use pbs_proto::mom::{ToMom, Usage};

use crate::effects::{Effects, MomFrames};
use crate::job::life::Step;
use crate::job::parts::LIFE;
use crate::job::running::{SUBSTATE_PRERUN, running_on};
use crate::jobkey::JobKey;
use crate::state::{EndReason, Job, State};

/// Text of a Usage as `resources_used` values.
fn usage_attrs(usage: &Usage) -> [(&'static str, String); 6] {
    [
        ("cpupercent", usage.cpupercent.to_string()),
        ("cput", pbs_core::Duration::from_secs(usage.cput).to_string()),
        ("mem", format!("{}kb", usage.mem_kb)),
        ("ncpus", usage.ncpus.to_string()),
        ("vmem", format!("{}kb", usage.vmem_kb)),
        ("walltime", pbs_core::Duration::from_secs(usage.walltime).to_string()),
    ]
}

fn set_usage(state: &mut State, key: JobKey, usage: &Usage) {
    let names: Vec<(std::sync::Arc<str>, String)> =
        usage_attrs(usage).into_iter().map(|(r, v)| (state.interner.intern(r), v)).collect();
    if let Some(job) = state.job_mut(key) {
        for (resource, value) in names {
            job.attrs.set(job_idx!("resources_used"), Some(resource), value);
        }
    }
}

/// The mom says the job's shell is running.
pub fn job_started(state: &mut State, node: &str, job_id: &str, session_id: i64, now: i64) -> Effects {
    let mut out = Effects::default();
    let Some(key) = running_on(state, node, job_id) else { return out };
    let ncpus = state.job(key).and_then(|j| j.get("Resource_List", Some("ncpus"))).unwrap_or("1").to_string();
    set_usage(state, key, &Usage { ncpus: ncpus.parse().unwrap_or(1), ..Usage::default() });
    crate::job::parts::LIFE.step(state, key, crate::job::life::Step::Confirmed { session_id }, now, &mut out);
    out
}

/// A usage sample: kept in memory, written with the job's next change.
pub fn job_usage(state: &mut State, node: &str, job_id: &str, usage: &Usage) {
    if let Some(key) = running_on(state, node, job_id) {
        set_usage(state, key, usage);
    }
}

fn finish_comment(previous: Option<&str>, exit_status: i32) -> Option<String> {
    let suffix = match exit_status {
        0 => " and finished".to_string(),
        -24 | -25 => " and exceeded resource ncpus".to_string(),
        -26 => " and exceeded resource vmem".to_string(),
        -27 => " and exceeded resource mem".to_string(),
        -28 => " and exceeded resource cput".to_string(),
        -29 => " and exceeded resource walltime".to_string(),
        _ => " and failed".to_string(),
    };
    previous.filter(|c| c.starts_with("Job run at")).map(|c| format!("{c}{suffix}"))
}

/// Releases a job's hold on its nodes and returns ForgetJob frames for each of them.
fn release(state: &mut State, key: JobKey, now: i64) -> MomFrames {
    let Some(job) = state.job(key) else { return Vec::new() };
    let job_id = job.id(&state.server_name);
    let suspended = job.state == JobState::Suspended;
    let Some(placement) = job.placement() else { return Vec::new() };
    // A suspended job holds nothing, or, under `restrict_res_to_release_on_suspend`,
    // what its suspension did not give back: taken whole again, it is all released.
    if !suspended || crate::job::released::holds_some(job) {
        if suspended {
            crate::job::released::take_back(state, key, &job_id, now);
        }
        crate::node::account(state, key, &job_id, &placement.exec, placement.exclusive, false, now);
    }
    state.starting.remove(&key);
    placement.exec.vnodes().into_iter().map(|v| (v.to_string(), ToMom::ForgetJob { job_id: job_id.clone() })).collect()
}

/// Puts a job that was running back in the queue, its run recorded (`R`) first.
fn requeue(state: &mut State, key: JobKey, now: i64) -> Effects {
    requeue_run(state, key, false, now)
}

/// [`requeue`]; a `checkpointed` job (preemption's `C`) keeps its usage and gets no `R`
/// record, and the comment goes, as OpenPBS clears its checkpoint hold's comment.
fn requeue_run(state: &mut State, key: JobKey, checkpointed: bool, now: i64) -> Effects {
    let mut out = Effects::default();
    LIFE.step(state, key, Step::Requeued { checkpointed }, now, &mut out);
    out
}

/// Records a job's end: `Exit_status`, usage, comment, as its mom reported them; then the
/// step of its life (its record, history or removal, what it means for other jobs).
fn finish(
    state: &mut State,
    key: JobKey,
    exit_status: Option<i32>,
    usage: Option<&Usage>,
    deleted: bool,
    now: i64,
) -> Effects {
    let mut out = Effects::default();
    if let Some(usage) = usage {
        set_usage(state, key, usage);
    }
    let Some(job_id) = state.job(key).map(|j| j.id(&state.server_name)) else { return out };
    // A run its mom confirmed (it has a session) ran, even when it ends without an exit
    // status (`qdel -W force`); one deleted before its start reached its mom did not.
    let ran = exit_status.is_some() || state.job(key).is_some_and(|j| j.get("session_id", None).is_some());
    let Some(job) = state.job_mut(key) else { return out };
    if let Some(status) = exit_status {
        job.attrs.set(job_idx!("Exit_status"), None, status.to_string());
        if let Some(comment) = finish_comment(job.get("comment", None), status) {
            job.attrs.set(job_idx!("comment"), None, comment);
        }
    }
    tracing::info!(
        object_type = "Job",
        object_name = job_id.as_str(),
        "Exit_status={} resources_used.cput={} resources_used.walltime={}",
        exit_status.map(|s| s.to_string()).unwrap_or_default(),
        job.get("resources_used", Some("cput")).unwrap_or("00:00:00"),
        job.get("resources_used", Some("walltime")).unwrap_or("00:00:00"),
    );
    LIFE.step(state, key, Step::Ended { exit: exit_status, ran, deleted }, now, &mut out);
    out
}

/// The mom says the job ended (or could not start).
pub fn job_ended(state: &mut State, node: &str, job_id: &str, exit_status: i32, usage: &Usage, now: i64) -> Effects {
    let Some(key) = running_on(state, node, job_id) else {
        // Not ours (any more): let the mom drop it.
        let forget = (node.to_string(), ToMom::ForgetJob { job_id: job_id.to_string() });
        return Effects { to_moms: vec![forget], ..Effects::default() };
    };
    let reason = state.ending.remove(&key);
    let frames = release(state, key, now);
    // -3 (retry), -11 (rerun), -20 (mother superior lost), -16, -18 and -22 (a mom's hook
    // rejected the start, asked for a rerun or failed): PBS ended it to run again.
    let requeued = reason == Some(EndReason::Rerun) || matches!(exit_status, -3 | -11 | -16 | -18 | -20 | -22);
    let mut effects = if reason == Some(EndReason::Checkpoint) {
        set_usage(state, key, usage);
        requeue_run(state, key, true, now)
    } else if requeued {
        set_usage(state, key, usage);
        requeue(state, key, now)
    } else if exit_status == crate::job::stage::JOB_EXEC_STAGEIN_FAILED && key.index.is_none() {
        // Its files never arrived: it waits and is tried again, as OpenPBS's does.
        crate::job::stage::wait_to_retry(state, key, now);
        let mut effects = requeue(state, key, now);
        effects.ops.extend(crate::job::stage::mark_stage_failed(state, key));
        effects
    } else {
        finish(state, key, Some(exit_status), Some(usage), reason == Some(EndReason::Delete), now)
    };
    effects.to_moms.splice(0..0, frames);
    effects
}

/// `kill_delay` of the job's queue, else the server's, else 10 s as OpenPBS.
fn kill_delay(state: &State, job: &Job) -> u32 {
    let queue = state.queue_index(&job.queue).and_then(|i| {
        state.queues[i].attrs.get_named(ObjectKind::Queue, "kill_delay", None).and_then(|v| v.parse().ok())
    });
    queue.or_else(|| state.server_attr("kill_delay", None).and_then(|v| v.parse().ok())).unwrap_or(10)
}

/// Starts ending a running job (qdel, qrerun): the mom kills it and reports the end.
pub fn begin_end(state: &mut State, key: JobKey, reason: EndReason, now: i64) -> Effects {
    let Some(job) = state.job(key) else { return Effects::default() };
    let delay = kill_delay(state, job);
    let job_id = job.id(&state.server_name);
    let suspended = job.state == JobState::Suspended;
    if job.placement().is_none() {
        return Effects::default();
    }
    let Some(ms) = job.mother_superior().map(str::to_string) else { return Effects::default() };
    let mut frames = Vec::new();
    if suspended {
        // A stopped session cannot act on SIGTERM: wake it first, and it holds its
        // resources again until it ends.
        frames.push((ms.clone(), ToMom::SignalJob { job_id: job_id.clone(), signal: "resume".into(), ask: 0 }));
        crate::job::released::take_back(state, key, &job_id, now);
    }
    frames.push((ms, ToMom::KillJob { job_id: job_id.clone(), kill_delay: delay }));
    state.ending.insert(key, reason);
    let Some(job) = state.job_mut(key) else { return Effects { to_moms: frames, ..Effects::default() } };
    if reason == EndReason::Delete {
        job.state = JobState::Exiting;
        job.substate = Substate::EXITING;
    } else if suspended {
        job.state = JobState::Running;
        job.substate = Substate::RUNNING;
    }
    let mut out = Effects { to_moms: frames, ..Effects::default() };
    crate::job::parts::LIFE.step(state, key, crate::job::life::Step::Ending, now, &mut out);
    out
}

/// Its mother superior's mom says it does not hold the job (a KillJob found nothing):
/// a job the server is ending is purged as OpenPBS's `post_delete_mom1` purges one on
/// PBSE_UNKJOBID, so its qdel never waits for an end that will not come: a deletion
/// finishes it now (as `qdel -W force`), a rerun or checkpoint requeues it as a lost run
/// is. A job the server is not ending is left to the mom's next status, which reconciles
/// what it holds.
pub fn unknown_to_its_mom(state: &mut State, node: &str, job_id: &str, now: i64) -> Effects {
    let Some(key) = running_on(state, node, job_id) else { return Effects::default() };
    let Some(&reason) = state.ending.get(&key) else { return Effects::default() };
    tracing::info!(object_type = "Job", object_name = job_id, "MOM claims no knowledge of the job, purged");
    match reason {
        EndReason::Delete => force_delete(state, key, now),
        EndReason::Rerun | EndReason::Checkpoint => lost(state, key, now),
    }
}

/// Ends a running job without waiting for its mom (`qdel -W force`): resources are freed
/// and the moms told to forget it.
pub fn force_delete(state: &mut State, key: JobKey, now: i64) -> Effects {
    state.ending.remove(&key);
    let frames = release(state, key, now);
    let mut effects = finish(state, key, None, None, true, now);
    effects.to_moms.splice(0..0, frames);
    effects
}

/// A job whose mother superior was lost: requeued if rerunnable, else finished. A job
/// whose start its mom never confirmed has not run, and is requeued either way. One being
/// deleted is finished as deleted.
pub fn lost(state: &mut State, key: JobKey, now: i64) -> Effects {
    // A job being deleted is not brought back by the loss of its mom: the delete, whose
    // `D` record is written, ends it, as OpenPBS purges a job its mom no longer knows.
    if state.ending.get(&key) == Some(&EndReason::Delete) {
        return force_delete(state, key, now);
    }
    state.ending.remove(&key);
    let rerunnable = state.job(key).is_some_and(|j| {
        j.substate == SUBSTATE_PRERUN || j.get("Rerunable", None).and_then(pbs_core::attr::parse_bool).unwrap_or(true)
    });
    let frames = release(state, key, now);
    let mut effects =
        if rerunnable { requeue(state, key, now) } else { finish(state, key, Some(-20), None, false, now) };
    effects.to_moms.splice(0..0, frames);
    effects
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_comments_follow_openpbs() {
        let run = Some("Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1)");
        assert_eq!(finish_comment(run, 0).unwrap(), "Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1) and finished");
        assert!(finish_comment(run, 1).unwrap().ends_with(" and failed"));
        assert!(finish_comment(run, -29).unwrap().ends_with(" and exceeded resource walltime"));
    }
}
