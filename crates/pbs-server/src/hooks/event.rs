//! Hook events as data: which hooks run at an event and in what order, the job a hook
//! sees, and a hook's answer turned into changes to the request or into OpenPBS's refusal.
//! Running the hooks is the dispatch's (outside the state lock); this does no I/O.

use std::collections::BTreeMap;

use pbs_core::attr::{ObjectKind, Privilege, split_name};
use pbs_core::hookattr::{self, HookEvent};
use pbs_core::{Pbse, attr::parse_bool};
use pbs_hooks::{Answer, Change, Changes, Defs, JobData, RunError, Value};
use pbs_proto::Attr;

use crate::error::ReqError;
use crate::state::{Job, State};

pub use crate::effects::HookRun;

/// The enabled hooks of `event` that have a body, in `order` (then name) as OpenPBS runs
/// them. Empty for most requests, so the dispatch's wait point costs one look here.
pub fn hooks_for(state: &State, event: HookEvent) -> Vec<HookRun> {
    let mut runs: Vec<(i64, HookRun)> = Vec::new();
    for hook in &state.hooks {
        let attr = |name: &str| hook.attrs.get_named(ObjectKind::Hook, name, None);
        if !attr("enabled").and_then(parse_bool).unwrap_or(true) {
            continue;
        }
        if !hookattr::events(attr("event").unwrap_or("")).contains(&event) {
            continue;
        }
        let Some(body) = state.hook_bodies.get(&hook.name).filter(|b| !b.python.trim().is_empty()) else {
            continue;
        };
        let order = attr("order").and_then(|o| o.parse().ok()).unwrap_or(1);
        runs.push((
            order,
            HookRun {
                name: hook.name.clone(),
                script: body.python.clone(),
                alarm: attr("alarm").and_then(|a| a.parse().ok()).unwrap_or(30),
                debug: attr("debug").and_then(parse_bool).unwrap_or(false),
            },
        ));
    }
    runs.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    runs.into_iter().map(|(_, run)| run).collect()
}

/// Whether any enabled hook with a body runs on the server (not only on the moms).
pub fn any_server_hook(state: &State) -> bool {
    HookEvent::ALL.iter().any(|event| !event.on_mom() && !hooks_for(state, *event).is_empty())
}

/// The attribute and resource types the interpreters need, as of the resources'
/// generation.
pub fn defs(state: &State) -> (u64, Defs) {
    (state.resources.generation(), pbs_hooks::definitions(&state.server_name, &state.resources))
}

/// The job a queuejob hook sees: the attributes as submitted (`Resource_List.x` gathered
/// into one resource list).
pub fn submitted_job(attrs: &[Attr]) -> JobData {
    let mut job = JobData::default();
    for Attr(name, value) in attrs {
        put(&mut job.attrs, name, value);
    }
    job
}

fn put(attrs: &mut BTreeMap<String, Value>, name: &str, value: &str) {
    match split_name(name) {
        (base, Some(resource)) => {
            let entry = attrs.entry(base.to_string()).or_insert_with(|| Value::Resources(BTreeMap::new()));
            if let Value::Resources(resources) = entry {
                resources.insert(resource.to_string(), value.to_string());
            }
        }
        (base, None) => {
            attrs.insert(base.to_string(), Value::Text(value.to_string()));
        }
    }
}

/// A job as hooks see it: every attribute, as its text.
pub fn job_data(job: &Job, id: &str) -> JobData {
    let mut data = JobData { id: Some(id.to_string()), attrs: BTreeMap::new() };
    for Attr(name, value) in job.attrs.to_wire(ObjectKind::Job) {
        put(&mut data.attrs, &name, &value);
    }
    data.attrs.insert("job_state".into(), Value::Text(job.state.letter().to_string()));
    data.attrs.insert("queue".into(), Value::Text(job.queue.to_string()));
    data.attrs.insert("substate".into(), Value::Text(job.substate.0.to_string()));
    data
}

/// The job a run is for, as a runjob hook sees it: the job, or for a queued subjob that
/// has no record yet, its array's attributes under the subjob's id.
pub fn job_to_run(state: &State, id: &str) -> Option<JobData> {
    let key = crate::jobkey::key_of(id)?;
    match (state.job(key), key.index) {
        (Some(job), _) => Some(job_data(job, id)),
        (None, Some(index)) => {
            let parent = state.jobs.get(&key.seq)?;
            let mut data = job_data(parent, id);
            data.attrs.insert("array".into(), Value::Text("False".into()));
            data.attrs.insert("array_index".into(), Value::Text(index.to_string()));
            data.attrs.insert("job_state".into(), Value::Text("Q".into()));
            Some(data)
        }
        (None, None) => None,
    }
}

/// A job's attributes as a request's list (`Resource_List.x` apart), the form hooks'
/// changes are applied to.
pub fn attrs_of(job: &JobData) -> Vec<Attr> {
    let mut attrs = Vec::new();
    for (name, value) in &job.attrs {
        match value {
            Value::Text(text) => attrs.push(Attr::new(name.as_str(), text.as_str())),
            Value::Resources(resources) => {
                for (resource, text) in resources {
                    attrs.push(Attr(format!("{name}.{resource}"), text.clone()));
                }
            }
        }
    }
    attrs
}

/// Applies a hook's changes to a request's attribute list, and records each attribute it
/// set (full wire name) in `changed`, which the request's checks then make with manager
/// privilege.
pub fn apply_changes(attrs: &mut Vec<Attr>, changes: &Changes, changed: &mut Vec<String>) {
    // A hook may spell a name otherwise; the request's names are already canonical
    // (`request::canonical`), so the change lands on the one entry the server keeps.
    for (name, change) in changes {
        let name = ObjectKind::Job.canonical_name(name);
        match change {
            None => {
                attrs.retain(|Attr(n, _)| split_name(n).0 != name);
                changed.retain(|c| split_name(c).0 != name);
            }
            Some(Change::Text(value)) => set(attrs, &name, value, changed),
            Some(Change::Resources(resources)) => {
                for (resource, value) in resources {
                    let full = format!("{name}.{resource}");
                    match value {
                        Some(value) => set(attrs, &full, value, changed),
                        None => {
                            attrs.retain(|Attr(n, _)| !n.eq_ignore_ascii_case(&full));
                            changed.retain(|c| !c.eq_ignore_ascii_case(&full));
                        }
                    }
                }
            }
        }
    }
}

fn set(attrs: &mut Vec<Attr>, name: &str, value: &str, changed: &mut Vec<String>) {
    let kept = match attrs.iter_mut().find(|Attr(n, _)| n.eq_ignore_ascii_case(name)) {
        Some(Attr(n, v)) => {
            *v = value.to_string();
            n.clone()
        }
        None => {
            attrs.push(Attr(name.to_string(), value.to_string()));
            name.to_string()
        }
    };
    if !changed.contains(&kept) {
        changed.push(kept);
    }
}

/// A run a runjob hook refused: the job stays queued, with `Not Running: PBS Error:` and
/// the hook's message as its comment (what OpenPBS's scheduler writes when a run fails);
/// gives the refusal for the scheduler (and a waiting qrun) to hear.
pub fn run_refused(
    state: &mut State,
    job_id: &str,
    refusal: &ReqError,
    now: i64,
    effects: &mut crate::effects::Effects,
) -> ReqError {
    let comment = format!("Not Running: PBS Error: {}", refusal.message);
    let Some(key) = crate::jobkey::key_of(job_id) else { return refusal.clone() };
    if let Some(job) = state.job_mut(key)
        && job.get("comment", None) != Some(comment.as_str())
    {
        job.attrs.set(job_idx!("comment"), None, comment);
        crate::job::parts::LIFE.step(state, key, crate::job::life::Step::Altered, now, effects);
    }
    refusal.clone()
}

/// Applies what a hook set on a job (a runjob hook before its run, a periodic hook),
/// through qalter's checks with manager privilege (a hook acts as the server's
/// administrator).
pub fn apply_hook_changes(
    state: &mut State,
    job_id: &str,
    changes: &[Attr],
    now: i64,
    effects: &mut crate::effects::Effects,
) -> Result<(), ReqError> {
    let who = crate::identity::Identity::daemon(&state.host);
    let ctx = crate::request::Ctx { who: &who, privilege: Privilege::Manager, now, groups: &[], hook_attrs: changes };
    let (errors, more) = crate::job::modify::modify_jobs(state, &ctx, &[job_id.to_string()], changes);
    effects.merge(more);
    match errors.into_iter().next() {
        Some(e) => Err(ReqError::with_message(Pbse(e.code), e.message)),
        None => Ok(()),
    }
}

/// What a hook's answer means for the request: go on, or OpenPBS's refusal (the client
/// sees the hook's own message when it gave one). Logs as OpenPBS's server does: the
/// hook's own lines under `origin` (`Server@host`).
pub fn verdict(event: HookEvent, hook: &str, origin: &str, answer: &Answer) -> Result<(), ReqError> {
    for entry in &answer.log {
        let mask = format!("{:04x}", entry.level & 0xffff);
        match &entry.job {
            Some(job) => {
                tracing::info!(event = mask.as_str(), object_type = "Job", object_name = job.as_str(), "{}", entry.msg)
            }
            None => tracing::info!(event = mask.as_str(), object_type = "Hook", object_name = origin, "{}", entry.msg),
        }
    }
    if answer.alarm {
        return Err(failure(event, hook, &RunError::Alarm));
    }
    if let Some(exception) = &answer.exception {
        tracing::info!(event = "0100", object_type = "Hook", object_name = hook, "{hook}: {exception}");
        return Err(failure(event, hook, &RunError::Crashed(exception.clone())));
    }
    if answer.accepted {
        return Ok(());
    }
    let rejected = format!("{event} request rejected by '{hook}'");
    tracing::info!(event = "0400", object_type = "Hook", object_name = hook, "{rejected}");
    match &answer.reject_message {
        Some(message) => {
            tracing::info!(event = "0400", object_type = "Hook", object_name = hook, "{message}");
            Err(ReqError::with_message(Pbse::HOOKERROR, message.clone()))
        }
        None => Err(ReqError::with_message(Pbse::HOOKERROR, rejected)),
    }
}

/// A hook asked for a new scheduling cycle: logged as OpenPBS's server logs it, under
/// `object` (`("Hook", name)` for a server hook, `("Node", name)` for a mom's), with the
/// hook's name in the text when its `fail_action` asked (`failed_hook`), and the scheduler
/// is asked for a cycle. The runner tells of a `pbs.server().scheduler_restart_cycle()`
/// only from a hook that neither raised nor ran past its alarm.
pub fn restart_cycle(state: &mut State, (object_type, object_name): (&str, &str), failed_hook: Option<&str>) {
    match failed_hook {
        Some(hook) => tracing::info!(
            event = "0400",
            object_type,
            object_name,
            "hook '{hook}' requested for scheduler to restart cycle"
        ),
        None => tracing::info!(event = "0400", object_type, object_name, "requested for scheduler to restart cycle"),
    }
    state.changes.cycle = true;
}

/// The refusal of a hook that raised, ran past its alarm or whose interpreter failed.
pub fn failure(event: HookEvent, hook: &str, error: &RunError) -> ReqError {
    let (logged, told) = match error {
        RunError::Alarm => (
            format!("alarm call while running {event} hook '{hook}', request rejected"),
            format!("request rejected as filter hook '{hook}' got an alarm call. Please inform Admin"),
        ),
        RunError::Crashed(_) | RunError::Unavailable(_) => (
            format!("{event} hook '{hook}' encountered an exception, request rejected"),
            format!("request rejected as filter hook '{hook}' encountered an exception. Please inform Admin"),
        ),
    };
    if let RunError::Unavailable(why) | RunError::Crashed(why) = error {
        tracing::warn!(object_type = "Hook", object_name = hook, "{why}");
    }
    tracing::info!(event = "0100", object_type = "Hook", object_name = hook, "{logged}");
    ReqError::with_message(Pbse::HOOKERROR, told)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hooks_changes_replace_add_and_unset_attributes_and_are_recorded() {
        let mut attrs = vec![
            Attr::new("Job_Name", "a"),
            Attr::new("Resource_List.ncpus", "1"),
            Attr::new("Resource_List.mem", "1gb"),
            Attr::new("comment", "x"),
        ];
        let mut changes = Changes::new();
        changes.insert("Job_Name".into(), Some(Change::Text("b".into())));
        changes.insert(
            "Resource_List".into(),
            Some(Change::Resources(
                [("soft_walltime".to_string(), Some("300".to_string())), ("mem".to_string(), None)]
                    .into_iter()
                    .collect(),
            )),
        );
        changes.insert("comment".into(), None);
        let mut changed = Vec::new();
        apply_changes(&mut attrs, &changes, &mut changed);
        assert_eq!(
            attrs,
            vec![
                Attr::new("Job_Name", "b"),
                Attr::new("Resource_List.ncpus", "1"),
                Attr::new("Resource_List.soft_walltime", "300")
            ]
        );
        assert_eq!(changed, vec!["Job_Name".to_string(), "Resource_List.soft_walltime".to_string()]);
        let seen = submitted_job(&attrs);
        assert_eq!(seen.attrs.get("Job_Name"), Some(&Value::Text("b".into())));
        let Some(Value::Resources(resources)) = seen.attrs.get("Resource_List") else { panic!("resource list") };
        assert_eq!(resources.get("soft_walltime").map(String::as_str), Some("300"));
    }

    #[test]
    fn refusals_carry_openpbs_texts() {
        let answer = Answer {
            accepted: false,
            reject_message: Some("jobs named bad are not welcome".into()),
            ..Answer::default()
        };
        let e = verdict(HookEvent::QueueJob, "reject", "Server@h", &answer).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Pbse::HOOKERROR, "jobs named bad are not welcome"));
        let answer = Answer { accepted: false, ..Answer::default() };
        assert_eq!(
            verdict(HookEvent::QueueJob, "r", "Server@h", &answer).unwrap_err().message,
            "queuejob request rejected by 'r'"
        );
        let answer = Answer { exception: Some("ZeroDivisionError: division by zero".into()), ..Answer::default() };
        assert_eq!(
            verdict(HookEvent::QueueJob, "raise", "Server@h", &answer).unwrap_err().message,
            "request rejected as filter hook 'raise' encountered an exception. Please inform Admin"
        );
        assert_eq!(
            failure(HookEvent::QueueJob, "loop", &RunError::Alarm).message,
            "request rejected as filter hook 'loop' got an alarm call. Please inform Admin"
        );
        assert!(
            verdict(HookEvent::QueueJob, "ok", "Server@h", &Answer { accepted: true, ..Answer::default() }).is_ok()
        );
    }
}
