//! The dispatch's wait point for hooks: a submission's queuejob hooks and an alteration's
//! modifyjob hooks run here, in the server's interpreters, before the state is locked for
//! the request; their changes are applied to the request, and the request's own checks
//! then run on the result (the attributes a hook set with manager privilege). The state
//! lock is held only to copy out what the hooks read, never while Python runs.

use std::sync::Arc;

use pbs_core::hookattr::HookEvent;
use pbs_hooks::Event;
use pbs_proto::{Attr, Request};

use crate::error::ReqError;
use crate::hooks::event::{self, HookRun};
use crate::identity::Identity;
use crate::server::Server;

/// What the hooks of one request read, copied out under the lock.
struct Planned {
    event: HookEvent,
    runs: Vec<HookRun>,
    /// In modifyjob: the job as it is.
    job_o: Option<pbs_hooks::JobData>,
    /// In modifyjob: the job's full id.
    job_id: Option<String>,
}

fn plan(server: &Server, request: &Request) -> Option<Planned> {
    let event = match request {
        Request::QueueJob { .. } => HookEvent::QueueJob,
        Request::ModifyJob { .. } => HookEvent::ModifyJob,
        _ => return None,
    };
    let shared = server.lock();
    let state = &shared.state;
    let runs = event::hooks_for(state, event);
    if runs.is_empty() {
        return None;
    }
    if server.hooks.defs_generation() != Some(state.resources.generation()) {
        let (generation, defs) = event::defs(state);
        server.hooks.set_defs(generation, &defs);
    }
    let (mut job_o, mut job_id) = (None, None);
    if let Request::ModifyJob { ids, .. } = request {
        // One id here (several are split by `alter_one_by_one`); an unknown one is left
        // to the request's own answer.
        let job = ids.first().and_then(|id| crate::request::find_job(state, id).ok())?;
        let id = job.id(&state.server_name);
        job_o = Some(event::job_data(job, &id));
        job_id = Some(id);
    }
    Some(Planned { event, runs, job_o, job_id })
}

/// Runs the request's hooks in order and applies each one's changes to the request; the
/// attributes they set (full wire names), or the refusal the client gets.
pub async fn run_request_hooks(
    server: &Arc<Server>,
    who: &Identity,
    request: &mut Request,
) -> Result<Vec<String>, ReqError> {
    let Some(planned) = plan(server, request) else { return Ok(Vec::new()) };
    let attrs = match request {
        Request::QueueJob { attrs, .. } | Request::ModifyJob { attrs, .. } => attrs,
        _ => return Ok(Vec::new()),
    };
    let origin = format!("Server@{}", server.config.host);
    let mut changed = Vec::new();
    for run in planned.runs {
        let mut job = event::submitted_job(attrs);
        job.id = planned.job_id.clone();
        let hook_event = Event {
            id: 0,
            hook: run.name.clone(),
            event_type: planned.event.name(),
            script: run.script.clone(),
            alarm: run.alarm,
            debug: run.debug,
            requestor: who.user.clone(),
            requestor_host: who.host.clone(),
            job: Some(job),
            job_o: planned.job_o.clone(),
            jobs: None,
            vnodes: None,
        };
        let answer = server.hooks.run(hook_event).await.map_err(|e| event::failure(planned.event, &run.name, &e))?;
        event::verdict(planned.event, &run.name, &origin, &answer)?;
        if let Some(changes) = &answer.job {
            event::apply_changes(attrs, changes, &mut changed);
        }
    }
    Ok(changed)
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
