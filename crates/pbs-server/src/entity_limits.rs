//! Queued-job entity limits of the server and its queues (`max_queued`, `max_queued_res.*`,
//! `queued_jobs_threshold`, `queued_jobs_threshold_res.*`, each per `o:`, `u:`, `g:`, `p:`
//! entity), checked when a job is submitted and when qalter would raise what it counts
//! for, with OpenPBS's messages; and the usage they are checked against. Also the values
//! of every entity-limit attribute qmgr sets, the run limits (`max_run`, `max_run_soft`,
//! `max_run_res.*`, `max_run_res_soft.*`) included: the scheduler enforces those.
//!
//! Usage is kept incrementally, and only while some limit is set: each job's contribution
//! (its queue, owner, group, project, how many jobs it counts for and its limited
//! resources) is remembered, and the jobs named in the change record (`State::changes`,
//! the record the scheduler's stream is built from) are recounted at each flush. So a
//! submission costs a few map updates, never a walk over all jobs; the one full walk is
//! when the limits themselves change (qmgr) or after a restart, at the next check.
//!
//! What counts, as in OpenPBS: for `max_queued`, every job from submission until it
//! finishes, an array for each subjob not yet finished; for `queued_jobs_threshold`, jobs
//! that have not started (Q, H, W), an array for each queued subjob.

use std::collections::HashMap;
use std::sync::Arc;

use pbs_core::entlim::{self, Applies, EntityKind, Limits};
use pbs_core::resource::ResourceType;
use pbs_core::{ArrayRange, Duration, JobState, ObjectKind, Pbse, Privilege, Size};
use pbs_proto::MgrOp;

use crate::attrlist::AttrList;
use crate::error::ReqError;
use crate::request::Ctx;
use crate::state::entity_usage::{Config, Contribution, Family, Scope, ScopeLimits, Tracker, Usage};
use crate::state::{Job, State};

/// Count limits, by attribute name (the run limits are the scheduler's to enforce; their
/// values are checked here like the others).
const COUNT_ATTRS: [&str; 4] = ["max_queued", "queued_jobs_threshold", "max_run", "max_run_soft"];

/// Resource limits, by attribute name (each per resource: `max_queued_res.ncpus`).
const RESOURCE_ATTRS: [&str; 4] = ["max_queued_res", "queued_jobs_threshold_res", "max_run_res", "max_run_res_soft"];

/// A resource amount as a number for sums and comparisons: bytes, seconds, or the value.
pub(crate) fn amount(rtype: ResourceType, text: &str) -> Option<f64> {
    match rtype {
        ResourceType::Size => text.parse::<Size>().ok().map(|s| s.to_bytes() as f64),
        ResourceType::Duration => text.parse::<Duration>().ok().map(|d| d.as_secs() as f64),
        ResourceType::Long | ResourceType::Float => text.trim().parse::<f64>().ok().filter(|v| v.is_finite()),
        _ => None,
    }
}

/// Checks and canonicalizes a qmgr value for an entity-limit attribute; `None` when
/// `name` is not one (the caller then treats it as any other attribute). `+=` adds or
/// replaces entities, `-=` removes the entities named; an empty result unsets.
pub fn manager_value(
    state: &State,
    kind: ObjectKind,
    name: &str,
    resource: Option<&str>,
    op: MgrOp,
    current: Option<&str>,
    given: &str,
) -> Option<Result<String, ReqError>> {
    if !matches!(kind, ObjectKind::Server | ObjectKind::Queue) {
        return None;
    }
    let is_count = COUNT_ATTRS.contains(&name);
    if !is_count && !RESOURCE_ATTRS.contains(&name) {
        return None;
    }
    let full = match resource {
        Some(r) => format!("{name}.{r}"),
        None => name.to_string(),
    };
    let bad = || ReqError::attr(Pbse::BADATVAL, &full);
    let normalize = |value: &str| -> Option<String> {
        if is_count {
            return value.parse::<u64>().ok().map(|v| v.to_string());
        }
        let def = state.resources.get(resource?)?;
        let canonical = def.normalize(value).ok()?;
        amount(def.rtype, &canonical).map(|_| canonical)
    };
    let result = (|| {
        // A bare number is the old way of writing an overall count; kept as written.
        let given = given.trim();
        if is_count && op == MgrOp::Set && given.bytes().all(|b| b.is_ascii_digit()) {
            return given.parse::<u64>().map(|v| v.to_string()).map_err(|_| bad());
        }
        let mut entries: Vec<(EntityKind, String, String)> = Vec::new();
        if op != MgrOp::Set {
            if let Some(current) = current {
                for e in entlim::parse(current).map_err(|_| bad())? {
                    entries.push((e.kind, e.name.to_string(), e.value.to_string()));
                }
            }
        }
        for e in entlim::parse(given).map_err(|_| bad())? {
            let value = normalize(e.value).ok_or_else(bad)?;
            entries.retain(|(k, n, _)| !(*k == e.kind && n == e.name));
            if op != MgrOp::Decr {
                entries.push((e.kind, e.name.to_string(), value));
            }
        }
        Ok(entlim::format(&entries))
    })();
    Some(result)
}

fn read_scope(list: &AttrList, kind: ObjectKind, resources: &mut Vec<String>, state: &State) -> ScopeLimits {
    let counts = |name: &str| list.get_named(kind, name, None).and_then(|text| Limits::counts(text).ok());
    let mut scope =
        ScopeLimits { max: counts("max_queued"), queued: counts("queued_jobs_threshold"), ..Default::default() };
    for (attr, family) in [("max_queued_res", Family::Max), ("queued_jobs_threshold_res", Family::Queued)] {
        let Some((def, _)) = crate::attrlist::resolve(kind, attr) else { continue };
        for (resource, text) in list.resources(def) {
            let Some(rdef) = state.resources.get(resource) else { continue };
            let Ok(limits) = Limits::parse_with(text, |v| amount(rdef.rtype, v)) else { continue };
            let index = match resources.iter().position(|r| r == resource) {
                Some(i) => i,
                None => {
                    resources.push(resource.to_string());
                    resources.len() - 1
                }
            };
            match family {
                Family::Max => scope.max_res.push((index, limits)),
                Family::Queued => scope.queued_res.push((index, limits)),
            }
        }
    }
    scope
}

fn read_config(state: &State) -> Option<Config> {
    let mut resources = Vec::new();
    let server = read_scope(&state.server, ObjectKind::Server, &mut resources, state);
    let mut queues = HashMap::new();
    for queue in &state.queues {
        let scope = read_scope(&queue.attrs, ObjectKind::Queue, &mut resources, state);
        if !scope.is_empty() {
            queues.insert(queue.name.to_string(), scope);
        }
    }
    if server.is_empty() && queues.is_empty() {
        return None;
    }
    Some(Config { resources, server, queues })
}

/// How many jobs an array counts for: its queued subjobs, and those started but not
/// finished.
fn array_counts(state: &State, job: &Job) -> (u64, u64) {
    let queued = job.remaining().len() as u64;
    let active = state.subjobs_of(job.seq).filter(|j| !j.state.is_history()).count() as u64;
    (queued.saturating_add(active), queued)
}

pub(crate) fn amounts(config: &Config, state: &State, list: &AttrList) -> Vec<f64> {
    config
        .resources
        .iter()
        .map(|r| {
            // A job with OR-ed alternatives counts with the largest amount any of them asks.
            let text = list
                .get_named(ObjectKind::Job, "max_resc_req", Some(r))
                .or_else(|| list.get_named(ObjectKind::Job, "Resource_List", Some(r)));
            let rtype = state.resources.get(r).map(|d| d.rtype);
            text.zip(rtype).and_then(|(t, rt)| amount(rt, t)).unwrap_or(0.0)
        })
        .collect()
}

fn contribution_of(config: &Config, state: &State, job: &Job) -> Option<Contribution> {
    if job.state.is_history() {
        return None;
    }
    let (max, queued) = if job.array {
        array_counts(state, job)
    } else {
        let queued = matches!(job.state, JobState::Queued | JobState::Held | JobState::Waiting | JobState::Transit);
        (1, u64::from(queued))
    };
    Some(Contribution {
        queue: job.queue.clone(),
        user: job.get("euser", None).unwrap_or("").into(),
        group: job.get("egroup", None).unwrap_or("").into(),
        project: job.get("project", None).unwrap_or("").into(),
        max,
        queued,
        amounts: amounts(config, state, &job.attrs),
    })
}

impl Tracker {
    fn add(&mut self, contribution: &Contribution, n_resources: usize, sign: f64) {
        for scope in [None, Some(contribution.queue.clone())] {
            for (kind, name) in contribution.names() {
                let by_name = self.usage.entry((scope.clone(), kind)).or_default();
                if !by_name.contains_key(name) {
                    let fresh = Usage {
                        max_res: vec![0.0; n_resources],
                        queued_res: vec![0.0; n_resources],
                        ..Usage::default()
                    };
                    by_name.insert(name.into(), fresh);
                }
                let Some(usage) = by_name.get_mut(name) else { continue };
                if sign > 0.0 {
                    usage.max = usage.max.saturating_add(contribution.max);
                    usage.queued = usage.queued.saturating_add(contribution.queued);
                } else {
                    usage.max = usage.max.saturating_sub(contribution.max);
                    usage.queued = usage.queued.saturating_sub(contribution.queued);
                }
                for (i, per_job) in contribution.amounts.iter().enumerate() {
                    usage.max_res[i] += sign * per_job * contribution.max as f64;
                    usage.queued_res[i] += sign * per_job * contribution.queued as f64;
                }
            }
        }
    }

    /// Recounts one job (by sequence number) from what it is now.
    fn recount(&mut self, state: &State, seq: u64) {
        let Some(config) = self.config.as_ref() else { return };
        let n = config.resources.len();
        let now = state.jobs.get(&seq).and_then(|job| contribution_of(config, state, job));
        let before = self.contrib.remove(&seq);
        if before == now {
            if let Some(c) = now {
                self.contrib.insert(seq, c);
            }
            return;
        }
        if let Some(old) = before {
            self.add(&old, n, -1.0);
        }
        if let Some(new) = now {
            self.add(&new, n, 1.0);
            self.contrib.insert(seq, new);
        }
    }

    fn rebuild(&mut self, state: &State) {
        self.contrib.clear();
        self.usage.clear();
        self.config = read_config(state);
        self.built = true;
        if self.config.is_none() {
            return;
        }
        let seqs: Vec<u64> = state.jobs.keys().copied().collect();
        for seq in seqs {
            self.recount(state, seq);
        }
    }

    fn used(&self, scope: &Scope, name: &str) -> Option<&Usage> {
        self.usage.get(scope)?.get(name)
    }
}

/// Brings the tracker up to date: rebuilt if limits changed, else the jobs changed since
/// the last flush recounted (recounting is idempotent, so the flush may do them again).
fn ensure(state: &mut State) {
    let mut tracker = std::mem::take(&mut state.entity_limits);
    if !tracker.built {
        tracker.rebuild(state);
    } else if tracker.config.is_some() {
        let seqs: Vec<u64> = state.changes.jobs.keys().map(|k| k.seq).collect();
        for seq in seqs {
            tracker.recount(state, seq);
        }
    }
    state.entity_limits = tracker;
}

/// Called by `sched_view::flush` before the change record is cleared: recounts the jobs it
/// names, or, after qmgr changed objects, marks the limits for re-reading at the next
/// check.
pub fn note_changes(state: &mut State) {
    if state.changes.objects {
        let tracker = &mut state.entity_limits;
        tracker.built = false;
        tracker.contrib.clear();
        tracker.usage.clear();
        return;
    }
    if state.entity_limits.built && state.entity_limits.config.is_some() && !state.changes.jobs.is_empty() {
        ensure(state);
    }
}

/// Recounts one job now (after qalter, so a later id of the same request sees it).
pub fn job_changed(state: &mut State, seq: u64) {
    if state.entity_limits.built && state.entity_limits.config.is_some() {
        let mut tracker = std::mem::take(&mut state.entity_limits);
        tracker.recount(state, seq);
        state.entity_limits = tracker;
    }
}

/// Checks a new job (not yet in `state.jobs`) against the limits of `queue` and the server.
pub fn check_new(state: &mut State, ctx: &Ctx<'_>, queue: &str, list: &AttrList) -> Result<(), ReqError> {
    ensure(state);
    let Some(config) = state.entity_limits.config.as_ref() else { return Ok(()) };
    let count = match list.get_named(ObjectKind::Job, "array_indices_submitted", None) {
        Some(range) => range.parse::<ArrayRange>().map(|r| r.count()).unwrap_or(1),
        None => 1,
    };
    // Held or waiting, a new job has not run: it counts as queued either way.
    let queue: Arc<str> = state.interner.intern(queue);
    let candidate = Contribution {
        queue,
        user: ctx.who.user.as_str().into(),
        group: ctx.who.group.as_str().into(),
        project: list.get_named(ObjectKind::Job, "project", None).unwrap_or("_pbs_project_default").into(),
        max: count,
        queued: count,
        amounts: amounts(config, state, list),
    };
    check(&state.entity_limits, &candidate, None, Scopes::QueueAndServer)
}

/// Checks a qalter of job `seq` whose attributes would become `list`: only what the
/// change adds counts, the job's present share never does. Operators and managers may
/// alter past the limits, as in OpenPBS.
pub fn check_alter(state: &mut State, ctx: &Ctx<'_>, seq: u64, list: &AttrList) -> Result<(), ReqError> {
    if ctx.privilege >= Privilege::Operator {
        return Ok(());
    }
    ensure(state);
    let tracker = &state.entity_limits;
    let Some(config) = tracker.config.as_ref() else { return Ok(()) };
    let Some(job) = state.jobs.get(&seq) else { return Ok(()) };
    let Some(own) = contribution_of(config, state, job) else { return Ok(()) };
    let candidate = Contribution {
        project: list.get_named(ObjectKind::Job, "project", None).unwrap_or("_pbs_project_default").into(),
        amounts: amounts(config, state, list),
        ..own.clone()
    };
    check(tracker, &candidate, Some(&own), Scopes::QueueAndServer)
}

/// Checks moving job `seq` to `queue` (qmove): the destination queue's limits count the
/// job, the server's already do. Operators and managers move past the limits, as they
/// alter past them.
pub fn check_move(state: &mut State, ctx: &Ctx<'_>, seq: u64, queue: &str) -> Result<(), ReqError> {
    if ctx.privilege >= Privilege::Operator {
        return Ok(());
    }
    ensure(state);
    let queue: Arc<str> = state.interner.intern(queue);
    let tracker = &state.entity_limits;
    let Some(config) = tracker.config.as_ref() else { return Ok(()) };
    let Some(job) = state.jobs.get(&seq) else { return Ok(()) };
    let Some(own) = contribution_of(config, state, job) else { return Ok(()) };
    let candidate = Contribution { queue, ..own.clone() };
    check(tracker, &candidate, Some(&own), Scopes::QueueAndServer)
}

/// Checks job `entering` taking the place of job `leaving` in `leaving`'s queue (each
/// half of a qorder across queues): the queue's limits count `entering` and no longer
/// `leaving`; the server's counts do not change, so they are not checked.
pub fn check_swap(state: &mut State, ctx: &Ctx<'_>, entering: u64, leaving: u64) -> Result<(), ReqError> {
    if ctx.privilege >= Privilege::Operator {
        return Ok(());
    }
    ensure(state);
    let tracker = &state.entity_limits;
    let Some(config) = tracker.config.as_ref() else { return Ok(()) };
    let (Some(entering), Some(leaving)) = (state.jobs.get(&entering), state.jobs.get(&leaving)) else { return Ok(()) };
    let Some(own) = contribution_of(config, state, entering) else { return Ok(()) };
    let candidate = Contribution { queue: leaving.queue.clone(), ..own };
    let leaving = contribution_of(config, state, leaving);
    check(tracker, &candidate, leaving.as_ref(), Scopes::QueueOnly)
}

/// Which limits a change is checked against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scopes {
    QueueAndServer,
    /// A swap of two jobs' queues leaves the server's counts as they were.
    QueueOnly,
}

/// OpenPBS's order: the queue's count limits, then the server's, then the queue's
/// resource limits, then the server's; `max_*` before `queued_jobs_threshold*`; within
/// each, overall, user, group, project.
fn check(
    tracker: &Tracker,
    candidate: &Contribution,
    own: Option<&Contribution>,
    which: Scopes,
) -> Result<(), ReqError> {
    let Some(config) = tracker.config.as_ref() else { return Ok(()) };
    let queue_limits = config.queues.get(&*candidate.queue);
    let server_limits = if which == Scopes::QueueAndServer { Some(&config.server) } else { None };
    let scopes: [(Option<&ScopeLimits>, Option<Arc<str>>); 2] =
        [(queue_limits, Some(candidate.queue.clone())), (server_limits, None)];
    for (limits, scope) in &scopes {
        let Some(limits) = limits else { continue };
        for (family, set) in [(Family::Max, &limits.max), (Family::Queued, &limits.queued)] {
            let Some(set) = set else { continue };
            let pick = |c: &Contribution| if family == Family::Max { c.max as f64 } else { c.queued as f64 };
            let used = |u: &Usage| if family == Family::Max { u.max as f64 } else { u.queued as f64 };
            if let Some((kind, name, applies)) =
                exceeded(tracker, scope, candidate, own, |c| pick(c), |u| used(u), set, |v| *v as f64)
            {
                let message = count_message(family, scope.as_deref(), kind, &name, applies);
                return Err(ReqError::with_message(Pbse::ENTLIMCT, message));
            }
        }
    }
    for (limits, scope) in &scopes {
        let Some(limits) = limits else { continue };
        for (family, sets) in [(Family::Max, &limits.max_res), (Family::Queued, &limits.queued_res)] {
            for (index, set) in sets {
                let i = *index;
                let pick = |c: &Contribution| {
                    let n = if family == Family::Max { c.max } else { c.queued };
                    c.amounts.get(i).copied().unwrap_or(0.0) * n as f64
                };
                let used = |u: &Usage| {
                    let sums = if family == Family::Max { &u.max_res } else { &u.queued_res };
                    sums.get(i).copied().unwrap_or(0.0)
                };
                if let Some((kind, name, applies)) = exceeded(tracker, scope, candidate, own, pick, used, set, |v| *v) {
                    let resource = config.resources.get(i).map(String::as_str).unwrap_or("");
                    let message = resource_message(family, scope.as_deref(), kind, &name, applies, resource);
                    return Err(ReqError::with_message(Pbse::ENTLIMRESC, message));
                }
            }
        }
    }
    Ok(())
}

/// The first entity whose limit the candidate would pass: usage, less the job's own share
/// where it is counted, plus the candidate's; only entities the change adds to are
/// checked, so an alter never fails for usage that was there before it.
#[allow(clippy::too_many_arguments)]
fn exceeded<V: Copy>(
    tracker: &Tracker,
    scope: &Option<Arc<str>>,
    candidate: &Contribution,
    own: Option<&Contribution>,
    pick: impl Fn(&Contribution) -> f64,
    used: impl Fn(&Usage) -> f64,
    limits: &Limits<V>,
    as_f64: impl Fn(&V) -> f64,
) -> Option<(EntityKind, String, bool)> {
    for (kind, name) in candidate.names() {
        let applies = match kind {
            EntityKind::Overall => limits.overall.map(Applies::Named),
            EntityKind::User => limits.user.for_name(name),
            EntityKind::Group => limits.group.for_name(name),
            EntityKind::Project => limits.project.for_name(name),
        };
        let Some(applies) = applies else { continue };
        let key: Scope = (scope.clone(), kind);
        let mine = own.filter(|o| o.counts_under(&key, name)).map(&pick).unwrap_or(0.0);
        let adds = pick(candidate) - mine;
        if adds <= 0.0 {
            continue;
        }
        let now = tracker.used(&key, name).map(&used).unwrap_or(0.0) - mine;
        let (limit, generic) = match applies {
            Applies::Named(v) => (as_f64(&v), false),
            Applies::Generic(v) => (as_f64(&v), true),
        };
        if now + pick(candidate) > limit {
            return Some((kind, name.to_string(), generic));
        }
    }
    None
}

fn kind_word(kind: EntityKind) -> &'static str {
    match kind {
        EntityKind::Overall => "",
        EntityKind::User => "user",
        EntityKind::Group => "group",
        EntityKind::Project => "project",
    }
}

/// OpenPBS's texts (`msg_et_*` in its pbs_messages.c), including its queue-level generic
/// user text, which names the queue "generic".
fn count_message(family: Family, queue: Option<&str>, kind: EntityKind, name: &str, generic: bool) -> String {
    let q_state = if family == Family::Queued { " in 'Q' state" } else { "" };
    let where_ = match queue {
        Some(q) => format!("queue {q}"),
        None => "complex".to_string(),
    };
    if kind == EntityKind::Overall {
        return format!("Maximum number of jobs{q_state} already in {where_}");
    }
    let word = kind_word(kind);
    if !generic {
        return format!("Maximum number of jobs{q_state} for {word} {name} already in {where_}");
    }
    let owner = match (queue, kind) {
        (Some(_), EntityKind::User) => "queue generic's".to_string(),
        (Some(q), _) => format!("queue {q}'s"),
        (None, _) => "complex's".to_string(),
    };
    let tail = if family == Family::Queued { " of jobs in 'Q' state" } else { "" };
    format!("would exceed {owner} per-{word} limit{tail}")
}

fn resource_message(
    family: Family,
    queue: Option<&str>,
    kind: EntityKind,
    name: &str,
    generic: bool,
    resource: &str,
) -> String {
    let where_ = match queue {
        Some(q) => format!("queue {q}"),
        None => "complex".to_string(),
    };
    let tail = if family == Family::Queued { " for jobs in 'Q' state" } else { "" };
    let word = kind_word(kind);
    match (kind, generic) {
        (EntityKind::Overall, _) => format!("would exceed limit on resource {resource} in {where_}{tail}"),
        (_, true) => format!("would exceed per-{word} limit on resource {resource} in {where_}{tail}"),
        (_, false) => format!("would exceed {word} {name}'s limit on resource {resource} in {where_}{tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Identity;
    use crate::jobkey::JobKey;
    use pbs_proto::Attr;

    fn set(state: &mut State, name: &str, resource: Option<&str>, value: &str) {
        let (def, _) = crate::attrlist::resolve(ObjectKind::Server, name).unwrap();
        let resource = resource.map(|r| state.interner.intern(r));
        state.server.set(def, resource, value);
        state.changes.objects = true;
        crate::sched_view::flush(state, &mut Default::default());
    }

    /// What a request handler records, then the end-of-request flush.
    fn touched(state: &mut State, ids: &[String]) {
        for id in ids {
            let seq: u64 = id.split(['.', '[']).next().unwrap().parse().unwrap();
            state.changes.jobs.insert(JobKey::job(seq), id.clone());
        }
        crate::sched_view::flush(state, &mut Default::default());
    }

    type Key = (Option<Arc<str>>, EntityKind, Box<str>);

    fn nonzero(tracker: &Tracker) -> Vec<(Key, Usage)> {
        let mut all: Vec<(Key, Usage)> = tracker
            .usage
            .iter()
            .flat_map(|(scope, by_name)| by_name.iter().map(move |(name, u)| (scope, name, u)))
            .filter(|(_, _, u)| u.max != 0 || u.queued != 0 || u.max_res.iter().chain(&u.queued_res).any(|v| *v != 0.0))
            .map(|(scope, name, u)| ((scope.0.clone(), scope.1, name.clone()), u.clone()))
            .collect();
        all.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
        all
    }

    #[test]
    fn incremental_usage_matches_a_rebuild() {
        let (mut state, _) = State::from_loaded(Default::default(), "srv", "host", "/tmp");
        set(&mut state, "max_queued", None, "[u:PBS_GENERIC=100]");
        set(&mut state, "queued_jobs_threshold_res", Some("ncpus"), "[p:PBS_GENERIC=100]");
        let who = Identity {
            user: "alice".into(),
            group: "staff".into(),
            uid: 1000,
            host: "host".into(),
            daemon: false,
            remote: false,
        };
        let ctx = Ctx { who: &who, privilege: Privilege::User, now: 1_000, groups: &[], hook_attrs: &[] };
        let mut ids = Vec::new();
        for attrs in [
            vec![Attr::new("Resource_List.ncpus", "2")],
            vec![Attr::new("project", "p1"), Attr::new("Resource_List.ncpus", "3")],
            vec![Attr::new("array_indices_submitted", "1-7"), Attr::new("Resource_List.ncpus", "1")],
            vec![Attr::new("Hold_Types", "u")],
        ] {
            let (id, _) = crate::job::submit::queue_job(&mut state, &ctx, &attrs, String::new(), None).unwrap();
            touched(&mut state, std::slice::from_ref(&id));
            ids.push(id);
        }
        let (errors, _) = crate::job::modify::modify_jobs(
            &mut state,
            &ctx,
            &ids[..2],
            &[Attr::new("project", "p2"), Attr::new("Resource_List.ncpus", "4")],
        );
        assert!(errors.is_empty(), "{errors:?}");
        touched(&mut state, &ids[..2]);
        let (errors, _) = crate::job::modify::hold_jobs(&mut state, &ctx, &ids[3..], "u", false);
        assert!(errors.is_empty(), "{errors:?}");
        touched(&mut state, &ids[3..]);
        let (errors, _) = crate::job::delete::delete_jobs(&mut state, &ctx, &ids[..1], false, false);
        assert!(errors.is_empty(), "{errors:?}");
        touched(&mut state, &ids[..1]);
        let subjob = ids[2].replace("[]", "[3]");
        let (errors, _) =
            crate::job::delete::delete_jobs(&mut state, &ctx, std::slice::from_ref(&subjob), false, false);
        assert!(errors.is_empty(), "{errors:?}");
        touched(&mut state, &ids[2..3]);

        let incremental = nonzero(&state.entity_limits);
        let mut fresh = Tracker::default();
        fresh.rebuild(&state);
        assert_eq!(incremental, nonzero(&fresh));
        let usage = state.entity_limits.used(&(None, EntityKind::User), "alice").unwrap();
        // Job 2 (4 cpus), six subjobs of the array, the released job.
        assert_eq!((usage.max, usage.queued), (8, 8));
        assert_eq!(usage.queued_res, vec![4.0 + 6.0 + 1.0]);
    }

    #[test]
    fn messages_match_openpbs() {
        let q = Some("workq");
        assert_eq!(
            count_message(Family::Max, None, EntityKind::Overall, "PBS_ALL", false),
            "Maximum number of jobs already in complex"
        );
        assert_eq!(
            count_message(Family::Max, None, EntityKind::User, "bob", true),
            "would exceed complex's per-user limit"
        );
        assert_eq!(
            count_message(Family::Queued, q, EntityKind::User, "bob", true),
            "would exceed queue generic's per-user limit of jobs in 'Q' state"
        );
        assert_eq!(
            count_message(Family::Queued, q, EntityKind::Group, "g", true),
            "would exceed queue workq's per-group limit of jobs in 'Q' state"
        );
        assert_eq!(
            count_message(Family::Queued, None, EntityKind::User, "bob", false),
            "Maximum number of jobs in 'Q' state for user bob already in complex"
        );
        assert_eq!(
            count_message(Family::Max, q, EntityKind::Project, "p1", false),
            "Maximum number of jobs for project p1 already in queue workq"
        );
        assert_eq!(
            resource_message(Family::Max, None, EntityKind::User, "bob", false, "ncpus"),
            "would exceed user bob's limit on resource ncpus in complex"
        );
        assert_eq!(
            resource_message(Family::Queued, q, EntityKind::User, "bob", true, "ncpus"),
            "would exceed per-user limit on resource ncpus in queue workq for jobs in 'Q' state"
        );
        assert_eq!(
            resource_message(Family::Max, q, EntityKind::Overall, "PBS_ALL", false, "mem"),
            "would exceed limit on resource mem in queue workq"
        );
    }
}
