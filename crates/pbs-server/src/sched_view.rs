//! The scheduler's view of the server: the snapshot a connecting scheduler gets, the stream
//! of changes after it, its decisions applied, and `qrun` requests sent to it.

use std::sync::atomic::Ordering;

use pbs_core::attr::ObjectKind;
use pbs_core::{JobState, Pbse};
use pbs_proto::sched::{Action, JobUpdate, SchedChange, SchedJob, SchedQueue, Snapshot, ToSched};
use pbs_proto::{Attr, IdError};
use tokio::sync::{mpsc, oneshot};

use crate::attrlist::resolve;
use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::launch::run_job;
use crate::jobkey::key_of;
use crate::state::links::{Asked, Links, open_ask};
use crate::state::{Job, State, idx};
use crate::store::StoreOp;

/// Asks the connected scheduler to place `full_id` now, as one item of a waiting request
/// (`state::links`): the request's number, carried by the frame and the scheduler's
/// answer, and what is told once the answer is in (see `schedlink::apply`).
pub fn ask_scheduler(links: &mut Links, full_id: String) -> Result<(u64, oneshot::Receiver<()>), ReqError> {
    if links.sched.is_none() {
        return Err(ReqError::new(Pbse::NOSCHEDULER));
    }
    let (ask, answered) = open_ask(links, vec![Asked::Scheduler { job_id: full_id.clone() }]);
    if let Some(sched) = links.sched.as_mut() {
        let _ = sched.send(ToSched::RunNow { qrun: ask, job_id: full_id });
    }
    Ok((ask, answered))
}

/// The scheduler's view of a job.
pub fn sched_job(state: &State, job: &Job) -> SchedJob {
    let time = |name: &str| job.get(name, None).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    let resources: Vec<(String, String)> =
        job.attrs.resources(job_idx!("Resource_List")).map(|(r, v)| (r.to_string(), v.to_string())).collect();
    let mut attrs = Vec::new();
    for name in [
        "max_run_subjobs",
        "array_indices_remaining",
        "array_indices_submitted",
        "Rerunable",
        "run_count",
        "project",
        "job_set",
        "sched_job_wide",
    ] {
        if let Some(value) = job.get(name, None) {
            attrs.push(Attr::new(name, value));
        }
    }
    // What the scheduler decides eligible time by: the type, the time accrued up to
    // `accrue_since` and that time (OpenPBS's `sample_starttime`), only once the server
    // keeps them.
    if let Some(kind) = job.get("accrue_type", None) {
        attrs.push(Attr::new("accrue_type", kind));
        attrs.push(Attr::new("eligible_time", job.get("eligible_time", None).unwrap_or("0")));
        attrs.push(Attr::new("sample_starttime", job.accrue_since.to_string()));
    }
    // A job suspended under `restrict_res_to_release_on_suspend`: what it gave back.
    if let Some(released) = job.get("resources_released", None) {
        attrs.push(Attr::new("resources_released", released));
        for (r, v) in job.attrs.resources(job_idx!("resource_released_list")) {
            attrs.push(Attr::new(format!("resource_released_list.{r}"), v));
        }
    }
    // A job's place among equal priorities is its submission unless qorder swapped it:
    // only then is `queue_rank` sent, so the common job costs nothing more.
    if let Some(rank) = job.get("queue_rank", None).filter(|rank| rank.parse::<u64>().ok() != Some(job.seq)) {
        attrs.push(Attr::new("queue_rank", rank));
    }
    for (base, resource) in
        [("estimated", None), ("resources_used", Some("walltime")), ("resources_used", Some("cput"))]
    {
        match resource {
            Some(r) => {
                if let Some(v) = job.get(base, Some(r)) {
                    attrs.push(Attr::new(format!("{base}.{r}"), v));
                }
            }
            None => {
                for (r, v) in job.attrs.resources(idx(ObjectKind::Job, base)) {
                    attrs.push(Attr::new(format!("{base}.{r}"), v));
                }
            }
        }
    }
    SchedJob {
        id: job.id(&state.server_name),
        seq: job.seq,
        queue: job.queue.to_string(),
        state: job.state.letter(),
        substate: job.substate.0,
        priority: job.get("Priority", None).and_then(|p| p.parse().ok()).unwrap_or(0),
        qtime: time("qtime"),
        etime: time("etime"),
        stime: time("stime"),
        owner: job.owner().to_string(),
        group: job.get("egroup", None).unwrap_or("").to_string(),
        select: job.get("Resource_List", Some("select")).unwrap_or("1:ncpus=1").to_string(),
        place: job.get("Resource_List", Some("place")).unwrap_or("pack").to_string(),
        resources,
        exec_vnode: job.get("exec_vnode", None).map(str::to_string),
        comment: job.get("comment", None).map(str::to_string),
        attrs,
    }
}

fn sched_queue(state: &State, index: usize) -> SchedQueue {
    let queue = &state.queues[index];
    SchedQueue { name: queue.name.clone(), attrs: queue.attrs.to_wire(ObjectKind::Queue) }
}

fn sched_attrs(state: &State) -> Vec<Attr> {
    state.scheds.iter().find(|s| s.name == "default").map(|s| s.attrs.to_wire(ObjectKind::Sched)).unwrap_or_default()
}

/// Every resource definition as `(name, type)`: the scheduler compares values by type.
fn resource_defs(state: &State) -> Vec<(String, String)> {
    state.resources.all().map(|def| (def.name.clone(), def.rtype.to_string())).collect()
}

/// The whole mirror, sent when a scheduler connects.
pub fn snapshot(state: &State) -> Snapshot {
    Snapshot {
        server_name: state.server_name.clone(),
        server: state.server.to_wire(ObjectKind::Server),
        sched: sched_attrs(state),
        resources: resource_defs(state),
        queues: (0..state.queues.len()).map(|i| sched_queue(state, i)).collect(),
        nodes: state.nodes.iter().map(|n| crate::node::sched_node(state, n)).collect(),
        jobs: state
            .jobs
            .values()
            .chain(state.subjobs.values())
            .filter(|j| !j.state.is_history())
            .map(|j| sched_job(state, j))
            .collect(),
    }
}

/// Notes what `effects` tell the scheduler, before the commit (`apply_effects`, and the
/// handler tests' fixture through this same call): the jobs its writes change
/// ([`note_written`]) and the runs its steps end, which the scheduler hears of as
/// `JobEnded` with their exit status.
pub fn note(state: &mut State, effects: &crate::effects::Effects) {
    note_written(state, &effects.ops);
    for step in &effects.steps {
        if let crate::effects::StepKind::Ended { exit, ran } = step.kind {
            state.changes.ended.insert(step.key, (exit, ran, step.at));
        }
    }
}

/// Marks every job `ops` write as changed for the scheduler: a job whose record is
/// written is a job the scheduler hears of, with no mark to place by hand. Removals,
/// nodes, objects and `cycle` stay marked where they happen: a removed job's id is gone
/// from the state by then, node states are not stored, and whether a change may let a
/// job run is a decision, not a write.
fn note_written(state: &mut State, ops: &[StoreOp]) {
    for op in ops {
        let key = match op {
            StoreOp::PutJob { seq, .. } => crate::jobkey::JobKey::job(*seq),
            StoreOp::PutSubjob { seq, index, .. } => crate::jobkey::JobKey::subjob(*seq, *index),
            StoreOp::DeleteJob { .. }
            | StoreOp::DeleteSubjob { .. }
            | StoreOp::PutObject { .. }
            | StoreOp::DeleteObject { .. }
            | StoreOp::SetMeta { .. }
            | StoreOp::Account(_) => continue,
        };
        if state.changes.jobs.contains_key(&key) {
            continue;
        }
        let id = match key.index {
            Some(index) => pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string(),
            None => match state.jobs.get(&key.seq) {
                Some(job) => job.id(&state.server_name),
                None => continue,
            },
        };
        state.changes.jobs.insert(key, id);
    }
}

/// Sends what changed to the scheduler (if one is connected) and clears the record.
/// Called under the state lock after every change, so the scheduler sees changes in the
/// order they were made.
pub fn flush(state: &mut State, links: &mut Links) {
    // Entity limits recount the jobs in the record before it is sent or dropped.
    crate::entity_limits::note_changes(state);
    match links.sched.as_ref() {
        None => state.changes = Default::default(),
        // The queue is full: the changes wait here, coalescing, until the link's writer
        // has room (see `schedqueue`).
        Some(link) if !link.has_room() => link.note_backlog(),
        Some(_) => flush_changes(state, links),
    }
}

/// Queues the pending changes for the scheduler now (the caller saw room for them).
pub fn flush_changes(state: &mut State, links: &mut Links) {
    if links.sched.is_none() {
        state.changes = Default::default();
        return;
    }
    let (changes, cycle) = take_changes(state);
    if changes.is_empty() && !cycle {
        return;
    }
    if let Some(link) = links.sched.as_mut()
        && link.send_changes(ToSched::Changes { changes, cycle }).is_err()
    {
        links.sched = None;
    }
}

/// The pending changes as the scheduler is told them, and whether they ask for a cycle;
/// the record is cleared.
pub fn take_changes(state: &mut State) -> (Vec<SchedChange>, bool) {
    let pending = std::mem::take(&mut state.changes);
    let mut changes = Vec::new();
    // First: a value of a new resource may come in the changes after it.
    if pending.resources {
        changes.push(SchedChange::Resources { defs: resource_defs(state) });
    }
    if pending.objects {
        changes.push(SchedChange::Server { attrs: state.server.to_wire(ObjectKind::Server) });
        changes.push(SchedChange::Sched { attrs: sched_attrs(state) });
        for i in 0..state.queues.len() {
            changes.push(SchedChange::Queue { queue: sched_queue(state, i) });
        }
        for node in &state.nodes {
            changes.push(SchedChange::Node { node: Box::new(crate::node::sched_node(state, node)) });
        }
    } else {
        for name in &pending.nodes {
            match state.nodes.iter().find(|n| n.name == *name) {
                Some(node) => changes.push(SchedChange::Node { node: Box::new(crate::node::sched_node(state, node)) }),
                None => changes.push(SchedChange::NodeGone { name: name.clone() }),
            }
        }
    }
    for (key, id) in &pending.jobs {
        match state.job(*key) {
            Some(job) if !job.state.is_history() => {
                changes.push(SchedChange::Job { job: Box::new(sched_job(state, job)) });
            }
            _ => match pending.ended.get(key) {
                Some(&(exit, ran, at)) => changes.push(SchedChange::JobEnded { id: id.clone(), exit, ran, at }),
                None => changes.push(SchedChange::JobGone { id: id.clone() }),
            },
        }
    }
    (changes, pending.cycle)
}

/// Applies one cycle's decisions: runs (each checked again) and attribute updates, in
/// the order the scheduler gave them (pbs_sched sends its updates before its runs, so a
/// run's own comment stands and a walltime is set while its job is still queued).
/// `verdicts`, when runjob hooks ran, has one per run in order: the attributes a hook set
/// (applied first, with manager privilege) or its refusal, which leaves the job queued
/// with the hook's message in its comment, as OpenPBS's scheduler writes it.
pub fn apply_decisions(
    state: &mut State,
    actions: &[Action],
    now: i64,
    verdicts: Option<&[Result<Vec<Attr>, ReqError>]>,
) -> (Vec<IdError>, Effects) {
    let mut errors = Vec::new();
    let mut effects = Effects::default();
    let mut verdicts = verdicts.unwrap_or_default().iter();
    for action in actions {
        match action {
            Action::Update(update) => match apply_update(state, update, now) {
                Ok(more) => effects.ops.extend(more),
                Err(e) => errors.push(IdError { id: update.job_id.clone(), code: e.code.0, message: e.message }),
            },
            Action::Run(decision) => {
                let verdict = verdicts.next();
                let result = match verdict {
                    Some(Err(refusal)) => {
                        Err(crate::hooks::event::run_refused(state, &decision.job_id, refusal, now, &mut effects))
                    }
                    Some(Ok(changes)) if !changes.is_empty() => {
                        crate::hooks::event::apply_hook_changes(state, &decision.job_id, changes, now, &mut effects)
                    }
                    _ => Ok(()),
                };
                let result = result.and_then(|()| {
                    key_of(&decision.job_id)
                        .ok_or_else(|| ReqError::new(Pbse::UNKJOBID))
                        .and_then(|key| run_job(state, key, &decision.exec_vnode, now, decision.alternative))
                });
                match result {
                    Ok(more) => effects.merge(more),
                    Err(e) => errors.push(IdError { id: decision.job_id.clone(), code: e.code.0, message: e.message }),
                }
            }
            // Asked of the moms once these are applied ([`resumes`]).
            Action::Resume { .. } => {}
        }
    }
    effects.merge(crate::job::array::settle(state, now, crate::job::parts::LIFE));
    (errors, effects)
}

/// The resumes among a scheduler's actions, as signals to ask of each job's mother
/// superior: only jobs the scheduler suspended (substate 45) that are still suspended. A
/// job resumes, and takes its resources back, once its mom has continued it.
pub fn resumes(state: &State, actions: &[Action]) -> Vec<crate::job::signal::SignalAsk> {
    actions
        .iter()
        .filter_map(|action| {
            let Action::Resume { job_id } = action else { return None };
            let key = key_of(job_id)?;
            let job = state.job(key)?;
            if job.state != JobState::Suspended || job.substate != pbs_core::Substate::SCHSUSP {
                return None;
            }
            let node = job.mother_superior()?.to_string();
            Some(crate::job::signal::SignalAsk {
                id: job_id.clone(),
                key,
                job_id: job.id(&state.server_name),
                node,
                signal: "resume".into(),
            })
        })
        .collect()
}

/// What a `qrun` the scheduler answered with `actions` hears: its job started, or why not
/// (the first error of the batch, as OpenPBS's "Not Running" reason).
pub fn qrun_outcome(state: &State, actions: &[Action], errors: &[IdError]) -> Result<(), ReqError> {
    let started = actions.iter().any(|action| {
        let Action::Run(run) = action else { return false };
        key_of(&run.job_id).and_then(|key| state.job(key)).is_some_and(|job| job.state == JobState::Running)
    });
    if started {
        return Ok(());
    }
    Err(match errors.first() {
        // A runjob hook's refusal reaches qrun as the hook's error, as in OpenPBS.
        Some(e) if e.code == Pbse::HOOKERROR.0 => ReqError::with_message(Pbse::HOOKERROR, e.message.clone()),
        Some(e) => ReqError::with_message(Pbse::RESCUNAV, e.message.clone()),
        None => ReqError::new(Pbse::RESCUNAV),
    })
}

fn apply_update(state: &mut State, update: &JobUpdate, now: i64) -> Result<Vec<StoreOp>, ReqError> {
    let key = key_of(&update.job_id).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    let mut resolved = Vec::new();
    let mut accrue = None;
    for Attr(name, value) in &update.attrs {
        // The scheduler's accrue type (a run limit or resources) is a change of what the job
        // accrues, applied with what the old type accrued (`state::accrual`).
        if name == "accrue_type" {
            let kind = crate::state::accrual::from_scheduler(state, value)
                .ok_or_else(|| ReqError::attr(Pbse::BADATVAL, name))?;
            accrue = Some(kind);
            continue;
        }
        let (def, resource) = resolve(ObjectKind::Job, name).ok_or_else(|| ReqError::attr(Pbse::NOATTR, name))?;
        resolved.push((def, resource.map(|r| state.interner.intern(r)), value.clone(), name));
    }
    let server_name = if accrue.is_some() { state.server_name.clone() } else { String::new() };
    let job = state.job_mut(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if job.state.is_history() {
        return Err(ReqError::new(Pbse::HISTJOBID));
    }
    // The scheduler holds the cluster key, not the users' trust: it may write only what
    // a scheduler owns, and one attribute beyond that refuses its whole update.
    for (def, resource, value, name) in &resolved {
        if !scheduler_may_set(job, *def, resource.as_deref(), value) {
            tracing::warn!(
                object_type = "Job",
                object_name = update.job_id.as_str(),
                "Scheduler update refused: a scheduler may not set {:?} to {:?}",
                name,
                value
            );
            return Err(ReqError::attr(Pbse::PERM, name));
        }
    }
    for (def, resource, value, _) in resolved {
        if value.is_empty() {
            job.attrs.unset(def, resource.as_deref());
        } else {
            job.attrs.set(def, resource, value);
        }
    }
    if let Some(kind) = accrue {
        crate::state::accrual::change(job, kind, now, &server_name);
    }
    let ops = vec![job.put_op(None)];
    Ok(ops)
}

/// What a scheduler owns on a job: `comment`, `estimated.*`, and the walltime it chooses
/// for a queued shrink-to-fit job, within the job's `min_walltime`/`max_walltime`. The run
/// itself (and what it implies) comes through `RunDecision`, not attribute updates.
fn scheduler_may_set(job: &Job, def: u8, resource: Option<&str>, value: &str) -> bool {
    if def == job_idx!("comment") && resource.is_none() {
        return true;
    }
    if def == job_idx!("estimated") {
        return true;
    }
    if def != job_idx!("Resource_List") || resource != Some("walltime") || job.state != JobState::Queued {
        return false;
    }
    let secs = |text: &str| text.parse::<pbs_core::Duration>().ok().map(|d| d.as_secs());
    let rl = job_idx!("Resource_List");
    let Some(min) = job.attrs.get(rl, Some("min_walltime")).and_then(secs) else { return false };
    let max = job.attrs.get(rl, Some("max_walltime")).and_then(secs);
    secs(value).is_some_and(|chosen| chosen >= min && max.is_none_or(|max| chosen <= max))
}

/// Called by the writer of the link `tx` when it has sent a frame and the backlog flag is
/// set: sends the changes that waited, then the held frames, as far as the queue has room.
pub fn drain(state: &mut State, links: &mut Links, tx: &mpsc::Sender<ToSched>) {
    let Some(link) = links.sched.as_mut().filter(|link| link.is(tx)) else { return };
    link.backlog.store(false, Ordering::Release);
    if link.tx.capacity() > 0 {
        flush_changes(state, links);
    }
    let Some(link) = links.sched.as_mut().filter(|link| link.is(tx)) else { return };
    while link.tx.capacity() > 0
        && let Some(frame) = link.held.pop_front()
    {
        if link.tx.try_send(frame).is_err() {
            links.sched = None;
            return;
        }
    }
    let changes_wait = !state.changes.jobs.is_empty()
        || !state.changes.nodes.is_empty()
        || state.changes.objects
        || state.changes.cycle;
    if let Some(link) = links.sched.as_ref()
        && (!link.held.is_empty() || changes_wait)
    {
        link.note_backlog();
    }
}

#[cfg(test)]
mod tests {
    use pbs_proto::sched::SchedChange;

    use super::*;
    use crate::state::sched_queue::{SCHED_QUEUE, SchedSender};

    #[test]
    fn a_full_queue_coalesces_changes_and_keeps_frames_behind_them() {
        let (mut state, _) = State::from_loaded(Default::default(), "svr", "host", "/nonexistent");
        let (link, mut rx, backlog) = SchedSender::new();
        let tx = link.sender();
        let mut links = Links { sched: Some(link), ..Links::default() };
        // A scheduler that reads nothing: the queue fills.
        for _ in 0..SCHED_QUEUE {
            state.changes.cycle = true;
            flush(&mut state, &mut links);
        }
        assert_eq!(tx.capacity(), 0);
        // More changes of one node, many times: they wait, as one.
        for _ in 0..10_000 {
            state.changes.nodes.insert("n1".into());
            state.changes.cycle = true;
            flush(&mut state, &mut links);
        }
        let applied = ToSched::DecisionsApplied { cycle: 9, errors: Vec::new() };
        links.sched.as_mut().map(|link| link.send(applied.clone()));
        assert!(backlog.load(Ordering::Acquire));
        assert_eq!(links.sched.as_ref().map(|l| l.held.len()), Some(1));

        // The writer catches up, draining whenever told to.
        let mut frames = Vec::new();
        while let Ok(frame) = rx.try_recv() {
            frames.push(frame);
            if backlog.load(Ordering::Acquire) {
                drain(&mut state, &mut links, &tx);
            }
        }
        assert_eq!(frames.len(), SCHED_QUEUE + 2, "{:?}", &frames[SCHED_QUEUE - 2..]);
        let gone = SchedChange::NodeGone { name: "n1".into() };
        assert_eq!(frames[SCHED_QUEUE], ToSched::Changes { changes: vec![gone], cycle: true });
        assert_eq!(frames[SCHED_QUEUE + 1], applied);
        assert!(!backlog.load(Ordering::Acquire));
        // Back to normal: the next change goes straight out.
        state.changes.cycle = true;
        flush(&mut state, &mut links);
        assert!(matches!(rx.try_recv(), Ok(ToSched::Changes { .. })));
    }
}
