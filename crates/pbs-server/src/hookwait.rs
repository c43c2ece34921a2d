//! Where requests wait for hooks: a submission's queuejob hooks, an alteration's modifyjob
//! hooks and a `qrun -H`'s runjob hooks run at the dispatch's wait point, and the runjob
//! hooks of the scheduler's runs before its decisions are applied, all in the server's
//! interpreters and never under the state lock (it is held only to copy out what the hooks
//! read). A hook's changes are applied to the request, whose own checks then run on the
//! result, with manager privilege for exactly what a hook set; a runjob hook's, to the job
//! just before it runs.

use std::sync::Arc;

use pbs_core::hookattr::HookEvent;
use pbs_hooks::{Event, JobData, Requestor};
use pbs_proto::{Attr, Request};

use crate::error::ReqError;
use crate::hooks::event::{self, HookRun};
use crate::identity::Identity;
use crate::server::Server;
use crate::state::State;

/// What the hooks of one request read, copied out under the lock.
struct Planned {
    event: HookEvent,
    runs: Vec<HookRun>,
    /// In modifyjob and runjob: the job as it is, with its full id.
    job: Option<JobData>,
}

/// The hooks of `event` and, when there are any, brings the interpreters' definitions up
/// to date. Called under the lock.
fn hooks_of(server: &Server, state: &State, event: HookEvent) -> Vec<HookRun> {
    let runs = event::hooks_for(state, event);
    if !runs.is_empty() {
        server.sync_hook_defs(state);
    }
    runs
}

fn plan(server: &Server, request: &Request) -> Option<Planned> {
    let event = match request {
        Request::QueueJob { .. } => HookEvent::QueueJob,
        Request::ModifyJob { .. } => HookEvent::ModifyJob,
        // A qrun the scheduler places is seen with the scheduler's runs.
        Request::RunJob { exec_vnode: Some(_), .. } => HookEvent::RunJob,
        _ => return None,
    };
    let shared = server.lock();
    let state = &shared.state;
    let runs = hooks_of(server, state, event);
    if runs.is_empty() {
        return None;
    }
    let job = match request {
        // One id here (several are split by `dispatch::alter_one_by_one`); an unknown one
        // is left to the request's own answer.
        Request::ModifyJob { ids, .. } => {
            let job = ids.first().and_then(|id| crate::request::find_job(state, id).ok())?;
            Some(event::job_data(job, &job.id(&state.server_name)))
        }
        Request::RunJob { id, .. } => Some(event::job_to_run(state, id)?),
        _ => None,
    };
    Some(Planned { event, runs, job })
}

/// What an event shows a hook besides the job's attributes.
struct Seen<'a> {
    who: &'a Requestor,
    /// The job's id (none before a submission has one).
    id: Option<String>,
    /// In modifyjob: the job as it was.
    job_o: Option<JobData>,
}

/// Runs `runs` of `event` in order on a job whose attributes are `attrs` (changed in
/// place by each hook, so the next sees what the last set); records what they set in
/// `changed`.
async fn run_hooks(
    server: &Arc<Server>,
    (event, runs): (HookEvent, &[HookRun]),
    seen: Seen<'_>,
    attrs: &mut Vec<Attr>,
    changed: &mut Vec<String>,
) -> Result<(), ReqError> {
    let Seen { who, id, job_o } = seen;
    let origin = format!("Server@{}", server.config.host);
    // The server and its queues may be read while a hook runs (other jobs only in
    // periodic hooks).
    let reader = server.clone();
    let queries: pbs_hooks::Queries = Arc::new(move |query: &pbs_hooks::Query| pbs_hooks::QueryReply {
        object: crate::objects::for_hook(&reader.lock().state, query),
        ..pbs_hooks::QueryReply::default()
    });
    for run in runs {
        let mut job = event::submitted_job(attrs);
        job.id = id.clone();
        let hook_event = Event { job: Some(job), job_o: job_o.clone(), ..Event::new(run, event.name(), who) };
        let answer = server
            .hooks
            .run_with_queries(hook_event, queries.clone())
            .await
            .map_err(|e| event::failure(event, &run.name, &e))?;
        if answer.restart_cycle {
            // Asked now, whatever becomes of the request.
            let mut shared = server.lock();
            event::restart_cycle(&mut shared.state, ("Hook", &run.name), None);
            let _ = server.apply_effects(&mut shared, crate::effects::Effects::default());
        }
        event::verdict(event, &run.name, &origin, &answer)?;
        if let Some(changes) = &answer.job {
            event::apply_changes(attrs, changes, changed);
        }
    }
    Ok(())
}

/// Runs the request's hooks in order and applies each one's changes to the request; the
/// attributes they set (full wire names) with the values they set, or the refusal the
/// client gets.
pub async fn run_request_hooks(
    server: &Arc<Server>,
    who: &Identity,
    request: &mut Request,
) -> Result<Vec<Attr>, ReqError> {
    let Some(planned) = plan(server, request) else { return Ok(Vec::new()) };
    let requestor = Requestor { user: who.user.clone(), host: who.host.clone() };
    let mut changed = Vec::new();
    match request {
        Request::QueueJob { attrs, .. } => {
            let seen = Seen { who: &requestor, id: None, job_o: None };
            run_hooks(server, (planned.event, &planned.runs), seen, attrs, &mut changed).await?;
            return Ok(set_by_hooks(attrs, &changed));
        }
        Request::ModifyJob { attrs, .. } => {
            let id = planned.job.as_ref().and_then(|job| job.id.clone());
            let seen = Seen { who: &requestor, id, job_o: planned.job };
            run_hooks(server, (planned.event, &planned.runs), seen, attrs, &mut changed).await?;
            return Ok(set_by_hooks(attrs, &changed));
        }
        Request::RunJob { .. } => {
            let Some(job) = planned.job else { return Ok(Vec::new()) };
            let mut attrs = event::attrs_of(&job);
            let seen = Seen { who: &requestor, id: job.id.clone(), job_o: None };
            run_hooks(server, (planned.event, &planned.runs), seen, &mut attrs, &mut changed).await?;
            // Applied to the job just before it runs, as a scheduler's run's are.
            return Ok(set_by_hooks(&attrs, &changed));
        }
        _ => {}
    }
    Ok(Vec::new())
}

/// The entries of `attrs` the hooks set, as the request now holds them: one per name,
/// since the request's names are canonical and a hook's change lands on the entry it
/// names.
fn set_by_hooks(attrs: &[Attr], changed: &[String]) -> Vec<Attr> {
    attrs.iter().filter(|Attr(name, _)| changed.contains(name)).cloned().collect()
}

/// The runjob hooks' verdict on each of the scheduler's runs (full job ids), in order:
/// the attributes a hook set, to apply before the run, or its refusal. `None` when no
/// runjob hook is enabled, so the runs go on at once.
pub async fn runjob_verdicts(server: &Arc<Server>, runs: &[String]) -> Option<Vec<Result<Vec<Attr>, ReqError>>> {
    if runs.is_empty() {
        return None;
    }
    let (hooks, jobs) = {
        let shared = server.lock();
        let hooks = hooks_of(server, &shared.state, HookEvent::RunJob);
        if hooks.is_empty() {
            return None;
        }
        let jobs: Vec<Option<JobData>> = runs.iter().map(|id| event::job_to_run(&shared.state, id)).collect();
        (hooks, jobs)
    };
    let scheduler = Requestor { user: "Scheduler".into(), host: server.config.host.clone() };
    let mut verdicts = Vec::with_capacity(runs.len());
    for job in jobs {
        // A job gone meanwhile is refused by the run itself.
        let Some(job) = job else {
            verdicts.push(Ok(Vec::new()));
            continue;
        };
        let mut attrs = event::attrs_of(&job);
        let mut changed = Vec::new();
        let verdict = run_hooks(
            server,
            (HookEvent::RunJob, &hooks),
            Seen { who: &scheduler, id: job.id.clone(), job_o: None },
            &mut attrs,
            &mut changed,
        )
        .await
        .map(|()| attrs.into_iter().filter(|Attr(name, _)| changed.contains(name)).collect());
        verdicts.push(verdict);
    }
    Some(verdicts)
}

/// An alteration of several jobs when modifyjob hooks run: each job gets its own hooks
/// and may get its own changes, so it is handled as one request per job, as qalter sends
/// them to OpenPBS (`dispatch::alter_one_by_one`). `None` when the request is not one.
pub fn one_alteration_per_job(server: &Server, request: &Request) -> Option<(Vec<String>, Vec<Attr>)> {
    let Request::ModifyJob { ids, attrs } = request else { return None };
    if ids.len() < 2 || event::hooks_for(&server.lock().state, HookEvent::ModifyJob).is_empty() {
        return None;
    }
    Some((ids.clone(), attrs.clone()))
}
