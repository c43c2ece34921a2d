//! Periodic hooks: when each falls due (every `freq` seconds), the event a run gets, the
//! jobs it reads page by page while it runs (`pbs.server().jobs()`, `.job(id)`), and its
//! changes to jobs, applied with manager privilege through qalter's checks.

use pbs_core::attr::ObjectKind;
use pbs_core::hookattr::HookEvent;
use pbs_hooks::{Answer, Event, MAX_JOBS_PER_QUERY, Query, QueryReply, Requestor, RunError};
use pbs_proto::Attr;

use crate::effects::{Effects, HookRun};
use crate::state::State;

/// `freq` when a periodic hook has none set (OpenPBS's default).
pub const DEFAULT_FREQ: i64 = 120;

/// The periodic hooks to start at `now`. A hook first seen now starts `freq` seconds
/// later; one still running from its last start is passed over until it answers.
pub fn due(state: &mut State, now: i64) -> Vec<HookRun> {
    let mut starts = Vec::new();
    let runs = crate::hooks::event::hooks_for(state, HookEvent::Periodic);
    for run in &runs {
        let freq = state
            .hooks
            .iter()
            .find(|h| h.name == run.name)
            .and_then(|h| h.attrs.get_named(ObjectKind::Hook, "freq", None))
            .and_then(|f| f.parse::<i64>().ok())
            .filter(|f| *f > 0)
            .unwrap_or(DEFAULT_FREQ);
        let next = state.periodic_hooks.next.entry(run.name.clone()).or_insert(now + freq);
        if *next > now || state.periodic_hooks.running.contains(&run.name) {
            continue;
        }
        *next = now + freq;
        state.periodic_hooks.running.insert(run.name.clone());
        starts.push(run.clone());
    }
    // A hook deleted, disabled or no longer periodic starts its count again when it comes
    // back.
    state.periodic_hooks.next.retain(|name, _| runs.iter().any(|r| r.name == *name));
    starts
}

/// The event a periodic run gets: no job of its own; it asks for the jobs it reads.
pub fn event(run: &HookRun, host: &str) -> Event {
    Event::new(run, HookEvent::Periodic.name(), &Requestor { user: "PBS_Server".into(), host: host.to_string() })
}

/// Answers what a running periodic hook asks: one job, or a page of jobs in id order.
pub fn answer_query(state: &State, query: &Query) -> QueryReply {
    match query.what.as_str() {
        "job" => {
            let job = query.job_id.as_deref().and_then(|id| crate::request::find_job(state, id).ok());
            let jobs = job
                .filter(|job| !job.state.is_history())
                .map(|job| crate::hooks::event::job_data(job, &job.id(&state.server_name)));
            QueryReply { jobs: jobs.into_iter().collect(), ..QueryReply::default() }
        }
        "jobs" => {
            let after = query.after.as_deref().and_then(|id| id.parse::<pbs_core::JobId>().ok()).map(|id| id.seq());
            let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
            let mut jobs = Vec::new();
            let mut more = false;
            for job in state.jobs.range((from, std::ops::Bound::Unbounded)).map(|(_, job)| job) {
                if job.state.is_history() {
                    continue;
                }
                if jobs.len() == MAX_JOBS_PER_QUERY {
                    more = true;
                    break;
                }
                jobs.push(crate::hooks::event::job_data(job, &job.id(&state.server_name)));
            }
            QueryReply { jobs, more, ..QueryReply::default() }
        }
        _ => QueryReply::default(),
    }
}

/// Applies what a periodic run answered: its log lines, and its changes to jobs (each job
/// through qalter's checks with manager privilege; a change refused is logged, the others
/// stand). A run that raised, ran past its alarm or lost its interpreter changes nothing.
pub fn answered(state: &mut State, hook: &str, origin: &str, result: Result<Answer, RunError>, now: i64) -> Effects {
    state.periodic_hooks.running.remove(hook);
    let answer = match result {
        Ok(answer) => answer,
        Err(e) => {
            let _ = crate::hooks::event::failure(HookEvent::Periodic, hook, &e);
            return Effects::default();
        }
    };
    if answer.restart_cycle {
        crate::hooks::event::restart_cycle(state, ("Hook", hook), None);
    }
    if crate::hooks::event::verdict(HookEvent::Periodic, hook, origin, &answer).is_err() {
        return Effects::default();
    }
    let mut effects = Effects::default();
    for (job_id, changes) in answer.jobs.iter().flatten() {
        let mut attrs: Vec<Attr> = Vec::new();
        let mut changed = Vec::new();
        crate::hooks::event::apply_changes(&mut attrs, changes, &mut changed);
        if attrs.is_empty() {
            continue;
        }
        if let Err(e) = crate::hooks::event::apply_hook_changes(state, job_id, &attrs, now, &mut effects) {
            tracing::info!(
                event = "0100",
                object_type = "Hook",
                object_name = hook,
                "periodic hook '{hook}': {job_id}: {}",
                e.message
            );
        }
    }
    effects
}
