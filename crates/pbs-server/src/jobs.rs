//! Job requests: submit, alter, delete, hold, release, select, and the job half of status.
//!
//! Each handler is a function over `&mut State` that returns the reply and the store
//! operations to commit, with no I/O, so the rules are unit-tested without sockets.

use std::cmp::Ordering;
use std::sync::Arc;

use pbs_core::attr::{AttrType, ObjectKind, Privilege, bool_text, parse_bool, split_name};
use pbs_core::jobid::ArrayPart;
use pbs_core::{ArrayRange, Duration, JobId, JobState, Pbse, Place, Select, Size, Substate};
use pbs_proto::{Attr, Criterion, IdError, StatusObject};

use crate::attrlist::{AttrList, resolve};
use crate::criteria::Prepared;
use crate::error::ReqError;
use crate::identity::Identity;
use crate::state::{Job, JobKey, State};
use crate::store::StoreOp;

/// Who asks, with which privilege, and when.
#[derive(Clone)]
pub struct Ctx<'a> {
    /// The requester.
    pub who: &'a Identity,
    /// Their privilege now.
    pub privilege: Privilege,
    /// Seconds since the epoch.
    pub now: i64,
}

/// Validates one attribute a client wants to set on a job and returns (def, resource,
/// canonical value). Errors carry OpenPBS's `<text> <attribute>` message.
pub fn check_job_attr(
    state: &State,
    ctx: &Ctx<'_>,
    name: &str,
    value: &str,
) -> Result<(u8, Option<String>, String), ReqError> {
    crate::size_limits::check_value(ObjectKind::Job, name, value)?;
    let (base, resource) = split_name(name);
    let Some((index, def)) = ObjectKind::Job.find(base) else {
        return Err(ReqError::attr(Pbse::NOATTR, name));
    };
    if !def.writable_by(ctx.privilege) {
        return Err(ReqError::attr(Pbse::ATTRRO, name));
    }
    let index = u8::try_from(index).map_err(|_| ReqError::new(Pbse::INTERNAL))?;
    if def.atype == AttrType::Resources {
        let Some(resource) = resource else {
            return Err(ReqError::attr(Pbse::BADATVAL, name));
        };
        let Some(rdef) = state.resources.get(resource) else {
            return Err(ReqError::attr(Pbse::UNKRESC, name));
        };
        if !rdef.writable_by(ctx.privilege) {
            return Err(ReqError::attr(Pbse::ATTRRO, name));
        }
        let canonical = rdef.normalize(value).map_err(|_| ReqError::attr(Pbse::BADATVAL, name))?;
        if rdef.name == "select" {
            crate::privilege::check_select(state, ctx.privilege, &canonical)?;
        }
        return Ok((index, Some(rdef.name.clone()), canonical));
    }
    if resource.is_some() {
        return Err(ReqError::attr(Pbse::NOATTR, name));
    }
    let canonical = normalize_value(def.atype, value).ok_or_else(|| ReqError::attr(Pbse::BADATVAL, name))?;
    let valid = match def.name {
        "Priority" => canonical.parse::<i64>().is_ok_and(|p| (-1024..=1023).contains(&p)),
        "Hold_Types" => !canonical.is_empty() && canonical.chars().all(|c| "uosnp".contains(c)),
        "Join_Path" => matches!(canonical.as_str(), "oe" | "eo" | "n"),
        "Keep_Files" => canonical.chars().all(|c| "oedn".contains(c)),
        "max_run_subjobs" => canonical.parse::<i64>().is_ok_and(|n| n >= 0),
        "array_indices_submitted" => canonical.parse::<ArrayRange>().is_ok(),
        _ => true,
    };
    if !valid {
        return Err(ReqError::attr(Pbse::BADATVAL, name));
    }
    Ok((index, None, canonical))
}

/// Canonical text of a value of a given type, `None` if it does not parse.
pub fn normalize_value(atype: AttrType, value: &str) -> Option<String> {
    match atype {
        AttrType::Long => value.trim().parse::<i64>().ok().map(|v| v.to_string()),
        AttrType::Float => value.trim().parse::<f64>().ok().map(|_| value.trim().to_string()),
        AttrType::Bool => parse_bool(value.trim()).map(|b| bool_text(b).to_string()),
        AttrType::Time => value.trim().parse::<i64>().ok().map(|v| v.to_string()),
        AttrType::Duration => value.parse::<Duration>().ok().map(|d| d.to_string()),
        AttrType::Size => value.parse::<Size>().ok().map(|s| s.to_string()),
        AttrType::Char | AttrType::Str | AttrType::List | AttrType::Env | AttrType::Resources => {
            Some(value.to_string())
        }
    }
}

/// Handles QueueJob: validates, applies defaults and limits, and creates the job.
pub fn queue_job(
    state: &mut State,
    ctx: &Ctx<'_>,
    attrs: &[Attr],
    script: String,
    destination: Option<&str>,
) -> Result<(String, Vec<StoreOp>), ReqError> {
    let queue_name = match destination.map(|d| d.split('@').next().unwrap_or("")).filter(|d| !d.is_empty()) {
        Some(q) => q.to_string(),
        None => state
            .server_attr("default_queue", None)
            .map(str::to_string)
            .ok_or_else(|| ReqError::new(Pbse::QUENODFLT))?,
    };
    let queue_index = state.queue_index(&queue_name).ok_or_else(|| ReqError::new(Pbse::UNKQUE))?;
    let queue_flag = |name: &str| {
        state.queues[queue_index].attrs.get_named(ObjectKind::Queue, name, None).and_then(parse_bool).unwrap_or(false)
    };
    if !queue_flag("enabled") {
        return Err(ReqError::new(Pbse::QUNOENB));
    }
    crate::acl::check_queue(state, queue_index, ctx.who)?;
    if ctx.who.uid == 0 && !ctx.who.daemon && !crate::acl::root_allowed(state, ctx.who) {
        return Err(ReqError::new(Pbse::BADUSER));
    }

    let mut list = AttrList::new();
    for Attr(name, value) in attrs {
        let (def, resource, canonical) = check_job_attr(state, ctx, name, value)?;
        let resource = resource.map(|r| state.interner.intern(&r));
        list.set(def, resource, canonical);
    }
    if let Some(Attr(last, _)) = attrs.last() {
        crate::size_limits::check_job_total(&list, last)?;
    }
    let is_array = list.get(job_idx!("array_indices_submitted"), None).is_some();
    if let Some(range) = list.get(job_idx!("array_indices_submitted"), None) {
        let count = range.parse::<ArrayRange>().map(|r| r.count()).unwrap_or(0) as i64;
        let max = state.server_attr("max_array_size", None).and_then(|v| v.parse::<i64>().ok()).unwrap_or(10_000);
        let queue_max = state.queues[queue_index]
            .attrs
            .get_named(ObjectKind::Queue, "max_array_size", None)
            .and_then(|v| v.parse::<i64>().ok());
        if count > max || queue_max.is_some_and(|q| count > q) {
            return Err(ReqError::new(Pbse::MAXARRAYSIZE));
        }
        list.set(job_idx!("array"), None, "True");
    }
    if list.get(job_idx!("max_run_subjobs"), None).is_some() && !is_array {
        return Err(ReqError::new(Pbse::NOTARRAY_ATTR));
    }

    apply_resource_defaults(state, queue_index, &mut list)?;
    check_resource_rules(&list, is_array)?;
    check_queue_limits(state, queue_index, &list)?;
    crate::entity_limits::check_new(state, ctx, &queue_name, &list)?;

    let seq = state.allocate_seq().ok_or_else(|| ReqError::new(Pbse::SYSTEM))?;
    let now = ctx.now.to_string();
    let host = ctx.who.host.clone();
    let set = |list: &mut AttrList, def: u8, value: &str| list.set(def, None, value);
    let set_default = |list: &mut AttrList, def: u8, value: &str| {
        if list.get(def, None).is_none() {
            list.set(def, None, value);
        }
    };
    set_default(&mut list, job_idx!("Job_Name"), "none");
    set(&mut list, job_idx!("Job_Owner"), &ctx.who.user_at_host());
    set(&mut list, job_idx!("euser"), &ctx.who.user);
    set(&mut list, job_idx!("egroup"), &ctx.who.group);
    for (def, value) in [
        (job_idx!("Checkpoint"), "u"),
        (job_idx!("Hold_Types"), "n"),
        (job_idx!("Join_Path"), "n"),
        (job_idx!("Keep_Files"), "n"),
        (job_idx!("Mail_Points"), "a"),
        (job_idx!("Priority"), "0"),
        (job_idx!("Rerunable"), "True"),
        (job_idx!("project"), "_pbs_project_default"),
    ] {
        set_default(&mut list, def, value);
    }
    for def in [job_idx!("ctime"), job_idx!("mtime"), job_idx!("qtime")] {
        set(&mut list, def, &now);
    }
    set(&mut list, job_idx!("Submit_Host"), &host);
    set(&mut list, job_idx!("queue_type"), "E");
    set(&mut list, job_idx!("queue_rank"), &seq.to_string());

    // One pass over the variables: with -V they are the submitter's whole environment.
    let given = list.get(job_idx!("Variable_List"), None).unwrap_or("");
    let (mut workdir, mut has_queue, mut has_host) = (None, false, false);
    for (key, value) in given.split(',').filter_map(|item| item.split_once('=')) {
        match key {
            "PBS_O_WORKDIR" if workdir.is_none() => workdir = Some(value),
            "PBS_O_QUEUE" => has_queue = true,
            "PBS_O_HOST" => has_host = true,
            _ => {}
        }
    }
    let workdir = workdir.unwrap_or_default().to_string();
    if !(has_queue && has_host) {
        let mut variables = given.to_string();
        for (key, value, present) in [("PBS_O_QUEUE", queue_name.as_str(), has_queue), ("PBS_O_HOST", &host, has_host)]
        {
            if !present {
                if !variables.is_empty() {
                    variables.push(',');
                }
                variables.push_str(key);
                variables.push('=');
                variables.push_str(value);
            }
        }
        set(&mut list, job_idx!("Variable_List"), &variables);
    }

    let job_name = list.get(job_idx!("Job_Name"), None).unwrap_or("none").to_string();
    for (def, letter) in [(job_idx!("Output_Path"), 'o'), (job_idx!("Error_Path"), 'e')] {
        // A subjob's files carry its index: the mark is replaced when it starts.
        let default_file = if is_array {
            format!("{job_name}.{letter}{seq}.{}", crate::arrays::INDEX_MARK)
        } else {
            format!("{job_name}.{letter}{seq}")
        };
        let path = match list.get(def, None) {
            None => format!("{host}:{workdir}/{default_file}"),
            Some(given) if given.ends_with('/') => format!("{given}{default_file}"),
            Some(given) => given.to_string(),
        };
        set(&mut list, def, &path);
    }

    let hold = list.get(job_idx!("Hold_Types"), None).unwrap_or("n");
    let exec_time = list.get(job_idx!("Execution_Time"), None).and_then(|v| v.parse::<i64>().ok());
    let job_state = if hold != "n" {
        JobState::Held
    } else if exec_time.is_some_and(|t| t > ctx.now) {
        JobState::Waiting
    } else {
        JobState::Queued
    };
    if is_array {
        if let Some(range) = list.get(job_idx!("array_indices_submitted"), None).map(str::to_string) {
            set(&mut list, job_idx!("array_indices_remaining"), &range);
            let count = range.parse::<ArrayRange>().map(|r| r.count()).unwrap_or(0);
            set(&mut list, job_idx!("array_state_count"), &format!("Queued:{count} Running:0 Exiting:0 Expired:0"));
        }
    }
    // etime is when the job became eligible to run: not yet for a held or waiting job.
    if job_state == JobState::Queued {
        set(&mut list, job_idx!("etime"), &ctx.now.to_string());
    }
    let queue: Arc<str> = state.interner.intern(&queue_name);
    let job = Job {
        seq,
        array: is_array,
        index: None,
        state: job_state,
        substate: job_state.default_substate(),
        queue,
        attrs: list,
    };
    let id = job.id(&state.server_name);
    let mut ops = vec![job.put_op(Some(script))];
    ops.extend(state.reserve_seq());
    state.jobs.insert(seq, job);
    Ok((id, ops))
}

/// Fills `Resource_List` from queue then server `resources_default`, builds `select` from
/// job-wide resources when absent, applies `default_chunk`, and derives the job-wide sums
/// (`ncpus`, `mem`, `nodect`) from `select`, as OpenPBS does.
pub fn apply_resource_defaults(state: &mut State, queue_index: usize, list: &mut AttrList) -> Result<(), ReqError> {
    let rl = job_idx!("Resource_List");
    let queue_defaults: Vec<(String, String)> =
        resources_of(&state.queues[queue_index].attrs, ObjectKind::Queue, "resources_default");
    let server_defaults: Vec<(String, String)> = resources_of(&state.server, ObjectKind::Server, "resources_default");
    let had_select = list.get(rl, Some("select")).is_some();
    for (resource, value) in queue_defaults.iter().chain(server_defaults.iter()) {
        if list.get(rl, Some(resource)).is_none() {
            // A job-wide default that a given select already implies must not override it.
            if had_select && is_chunk_resource(state, resource) {
                continue;
            }
            let shared = state.interner.intern(resource);
            list.set(rl, Some(shared), value.as_str());
        }
    }
    let mut chunk_defaults = resources_of(&state.queues[queue_index].attrs, ObjectKind::Queue, "default_chunk");
    for (resource, value) in resources_of(&state.server, ObjectKind::Server, "default_chunk") {
        if !chunk_defaults.iter().any(|(r, _)| *r == resource) {
            chunk_defaults.push((resource, value));
        }
    }
    let select_text = match list.get(rl, Some("select")) {
        Some(text) => text.to_string(),
        None => {
            let mut chunk = String::from("1");
            let job_wide: Vec<(String, String)> =
                list.resources(rl).map(|(r, v)| (r.to_string(), v.to_string())).collect();
            for (resource, value) in job_wide {
                if is_chunk_resource(state, &resource) {
                    chunk.push_str(&format!(":{resource}={value}"));
                }
            }
            if list.get(rl, Some("place")).is_none() {
                let place = state.interner.intern("place");
                list.set(rl, Some(place), "pack");
            }
            chunk
        }
    };
    let select: Select = select_text.parse().map_err(|_| ReqError::attr(Pbse::BADATVAL, "Resource_List.select"))?;
    for chunk in select.chunks() {
        for (resource, _) in chunk.resources() {
            let Some(def) = state.resources.get(resource) else {
                return Err(ReqError::attr(Pbse::UNKRESC, &format!("Resource_List.{resource}")));
            };
            if !def.flags.host_level && !def.builtin {
                return Err(ReqError::attr(Pbse::INVALSELECTRESC, &format!("Resource_List.{resource}")));
            }
        }
    }
    let select = select.with_default_chunk(&chunk_defaults);
    let select_value = select.to_string();
    let select_key = state.interner.intern("select");
    list.set(rl, Some(select_key), select_value);
    if list.get(rl, Some("place")).is_none() {
        let place = state.interner.intern("place");
        list.set(rl, Some(place), "free");
    }
    if let Some(place) = list.get(rl, Some("place")) {
        place.parse::<Place>().map_err(|_| ReqError::attr(Pbse::BADATVAL, "Resource_List.place"))?;
    }
    let nodect = state.interner.intern("nodect");
    list.set(rl, Some(nodect), select.nodect().to_string());
    for summed in ["ncpus", "ngpus", "mpiprocs"] {
        if let Some(total) = select.total(summed) {
            if total > 0 || summed == "ncpus" {
                let key = state.interner.intern(summed);
                list.set(rl, Some(key), total.to_string());
            }
        }
    }
    for sized in ["mem", "vmem"] {
        let mut total: Option<u64> = None;
        for chunk in select.chunks() {
            if let Some((_, value)) = chunk.resources().iter().find(|(r, _)| r == sized) {
                let bytes = value.parse::<Size>().map(|s| s.to_bytes()).unwrap_or(0);
                total = Some(total.unwrap_or(0) + bytes * u64::from(chunk.count()));
            }
        }
        if let Some(bytes) = total {
            let key = state.interner.intern(sized);
            list.set(rl, Some(key), Size::from_bytes(bytes).to_string());
        }
    }
    Ok(())
}

fn is_chunk_resource(state: &State, resource: &str) -> bool {
    state.resources.get(resource).is_some_and(|d| d.flags.host_level)
}

fn resources_of(list: &AttrList, kind: ObjectKind, name: &str) -> Vec<(String, String)> {
    match resolve(kind, name) {
        Some((def, _)) => list.resources(def).map(|(r, v)| (r.to_string(), v.to_string())).collect(),
        None => Vec::new(),
    }
}

/// The soft_walltime, shrink-to-fit and array rules between resources of one job.
pub fn check_resource_rules(list: &AttrList, is_array: bool) -> Result<(), ReqError> {
    let rl = job_idx!("Resource_List");
    let secs = |r: &str| list.get(rl, Some(r)).and_then(|v| v.parse::<Duration>().ok()).map(|d| d.as_secs());
    let soft = secs("soft_walltime");
    let hard = secs("walltime");
    let min = secs("min_walltime");
    let max = secs("max_walltime");
    if soft.is_some() && min.is_some() {
        return Err(ReqError::new(Pbse::SOFTWT_STF));
    }
    if let (Some(soft), Some(hard)) = (soft, hard) {
        if soft > hard {
            return Err(ReqError::new(Pbse::BADATVAL));
        }
    }
    if max.is_some() && min.is_none() {
        return Err(ReqError::new(Pbse::MAX_NO_MINWT));
    }
    if let (Some(min), Some(max)) = (min, max) {
        if min > max {
            return Err(ReqError::new(Pbse::MIN_GT_MAXWT));
        }
    }
    if is_array && min.is_some() {
        return Err(ReqError::new(Pbse::NOSTF_JOBARRAY));
    }
    Ok(())
}

/// Compares two resource values of the same resource: sizes by bytes, durations by
/// seconds, numbers numerically, anything else as text.
pub fn compare_values(a: &str, b: &str) -> Option<Ordering> {
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        return Some(x.cmp(&y));
    }
    if let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>()) {
        return x.partial_cmp(&y);
    }
    if let (Ok(x), Ok(y)) = (a.parse::<Duration>(), b.parse::<Duration>()) {
        return Some(x.cmp(&y));
    }
    if let (Ok(x), Ok(y)) = (a.parse::<Size>(), b.parse::<Size>()) {
        return Some(x.cmp(&y));
    }
    if a.parse::<f64>().is_ok() || b.parse::<f64>().is_ok() {
        return None;
    }
    Some(a.cmp(b))
}

/// `resources_max` / `resources_min` of the queue and the server (the entity limits are
/// `entity_limits`').
pub fn check_queue_limits(state: &State, queue_index: usize, list: &AttrList) -> Result<(), ReqError> {
    let rl = job_idx!("Resource_List");
    let queue = &state.queues[queue_index];
    let limits = [
        (resources_of(&queue.attrs, ObjectKind::Queue, "resources_max"), Ordering::Greater),
        (resources_of(&queue.attrs, ObjectKind::Queue, "resources_min"), Ordering::Less),
        (resources_of(&state.server, ObjectKind::Server, "resources_max"), Ordering::Greater),
    ];
    for (bounds, violation) in limits {
        for (resource, bound) in bounds {
            if let Some(value) = list.get(rl, Some(&resource)) {
                if compare_values(value, &bound) == Some(violation) {
                    return Err(ReqError::new(Pbse::EXCQRESC));
                }
            }
        }
    }
    Ok(())
}

/// Finds a job by a full or short id; errors as OpenPBS replies them.
pub fn find_job<'s>(state: &'s State, id: &str) -> Result<&'s Job, ReqError> {
    let seq = parse_seq(id)?;
    state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))
}

fn parse_seq(id: &str) -> Result<u64, ReqError> {
    let parsed: JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    match parsed.array() {
        ArrayPart::None | ArrayPart::Parent => Ok(parsed.seq()),
        _ => Err(ReqError::new(Pbse::UNKJOBID)),
    }
}

/// Whether the requester may act on (alter, hold, delete) this job.
pub(crate) fn may_act_on(ctx: &Ctx<'_>, job: &Job) -> bool {
    ctx.privilege >= Privilege::Operator || job.owner() == ctx.who.user
}

/// Whether the requester may see this job at all.
pub fn may_see(state: &State, ctx: &Ctx<'_>, job: &Job) -> bool {
    may_act_on(ctx, job) || state.server_flag("query_other_jobs", true)
}

pub(crate) fn per_id<F>(state: &mut State, ctx: &Ctx<'_>, ids: &[String], mut action: F) -> (Vec<IdError>, Vec<StoreOp>)
where
    F: FnMut(&mut State, &Ctx<'_>, u64) -> Result<Vec<StoreOp>, ReqError>,
{
    let mut errors = Vec::new();
    let mut ops = Vec::new();
    for id in ids {
        let result = find_job(state, id).and_then(|job| {
            if !may_act_on(ctx, job) {
                return Err(ReqError::new(Pbse::PERM));
            }
            Ok(job.seq)
        });
        match result.and_then(|seq| action(state, ctx, seq)) {
            Ok(more) => ops.extend(more),
            Err(e) => errors.push(IdError { id: id.clone(), code: e.code.0, message: e.message }),
        }
    }
    (errors, ops)
}

/// Like [`per_id`], for requests that also take subjobs (`12[3]`) and ranges
/// (`12[1-5]`, read by `rule`): the action runs once per job or subjob; permissions are
/// the array's.
pub(crate) fn per_key<F>(
    state: &mut State,
    ctx: &Ctx<'_>,
    ids: &[String],
    rule: crate::arrays::RangeRule,
    mut action: F,
) -> (Vec<IdError>, Vec<StoreOp>)
where
    F: FnMut(&mut State, &Ctx<'_>, JobKey) -> Result<Vec<StoreOp>, ReqError>,
{
    let mut errors = Vec::new();
    let mut ops = Vec::new();
    for id in ids {
        let keys = crate::arrays::keys_by(state, id, rule).and_then(|keys| {
            // A range may name no subjob left to act on: the array still decides.
            let seq = id.parse::<JobId>().map(|parsed| parsed.seq()).ok();
            let owner_ok = seq.and_then(|seq| state.jobs.get(&seq)).is_some_and(|job| may_act_on(ctx, job));
            if owner_ok { Ok(keys) } else { Err(ReqError::new(Pbse::PERM)) }
        });
        let failed = match keys {
            Err(e) => Some(e),
            // What earlier keys of a range changed stays changed, so its writes are kept.
            Ok(keys) => keys.into_iter().find_map(|key| match action(state, ctx, key) {
                Ok(more) => {
                    ops.extend(more);
                    None
                }
                Err(e) => Some(e),
            }),
        };
        if let Some(e) = failed {
            errors.push(IdError { id: id.clone(), code: e.code.0, message: e.message });
        }
    }
    (errors, ops)
}

/// Handles ModifyJob (qalter) over several ids.
pub fn modify_jobs(state: &mut State, ctx: &Ctx<'_>, ids: &[String], attrs: &[Attr]) -> (Vec<IdError>, Vec<StoreOp>) {
    per_id(state, ctx, ids, |state, ctx, seq| {
        let mut checked = Vec::new();
        for Attr(name, value) in attrs {
            if ObjectKind::Job.find(split_name(name).0).is_some_and(|(_, def)| def.create_only()) {
                return Err(ReqError::attr(Pbse::ATTRRO, name));
            }
            checked.push(check_job_attr(state, ctx, name, value)?);
        }
        let Some(job) = state.jobs.get(&seq) else {
            return Err(ReqError::new(Pbse::UNKJOBID));
        };
        if job.state.is_history() {
            return Err(ReqError::new(Pbse::HISTJOBID));
        }
        let running = matches!(job.state, JobState::Running | JobState::Suspended | JobState::Exiting);
        let mut list = job.attrs.clone();
        for ((def, resource, value), Attr(name, _)) in checked.into_iter().zip(attrs) {
            let alter_running = ObjectKind::Job.attributes().get(def as usize).is_some_and(|d| d.alter_running)
                && resource.as_deref().is_none_or(|r| state.resources.get(r).is_none_or(|d| d.alter_running));
            if running && !alter_running {
                return Err(ReqError::attr(Pbse::MODATRRUN, name));
            }
            let resource = resource.map(|r| state.interner.intern(&r));
            list.set(def, resource, value);
        }
        crate::holds::check_alter(
            ctx.privilege,
            job.attrs.get(job_idx!("Hold_Types"), None).unwrap_or("n"),
            list.get(job_idx!("Hold_Types"), None).unwrap_or("n"),
        )?;
        if let Some(Attr(last, _)) = attrs.last() {
            crate::size_limits::check_job_total(&list, last)?;
        }
        if list.get(job_idx!("max_run_subjobs"), None).is_some() && !job.array {
            return Err(ReqError::new(Pbse::NOTARRAY_ATTR));
        }
        check_resource_rules(&list, job.array)?;
        let to_mom = if running { crate::altrun::check(state, ctx.privilege, job, &list)? } else { Vec::new() };
        let select_changed = attrs.iter().any(|a| a.0 == "Resource_List.select");
        let queue_index = state.queue_index(&job.queue).unwrap_or(0);
        if select_changed {
            apply_resource_defaults(state, queue_index, &mut list)?;
        }
        check_queue_limits(state, queue_index, &list)?;
        crate::entity_limits::check_alter(state, ctx, seq, &list)?;
        list.set(job_idx!("mtime"), None, ctx.now.to_string());
        let Some(job) = state.jobs.get_mut(&seq) else {
            return Err(ReqError::new(Pbse::UNKJOBID));
        };
        job.attrs = list;
        if matches!(job.state, JobState::Queued | JobState::Held | JobState::Waiting) {
            settle_queued_state(job, ctx.now);
        }
        let ops = vec![job.put_op(None)];
        crate::entity_limits::job_changed(state, seq);
        crate::exec::send_frames(state, to_mom);
        Ok(ops)
    })
}

/// Puts a not-running job in Q, H or W from its holds and execution time.
fn settle_queued_state(job: &mut Job, now: i64) {
    let held = job.get("Hold_Types", None).is_some_and(|h| h != "n");
    let waiting = job.get("Execution_Time", None).and_then(|t| t.parse::<i64>().ok()).is_some_and(|t| t > now);
    let new_state = if held {
        JobState::Held
    } else if waiting {
        JobState::Waiting
    } else {
        JobState::Queued
    };
    if new_state != job.state {
        job.state = new_state;
        job.substate = new_state.default_substate();
        if new_state == JobState::Queued {
            job.attrs.set(job_idx!("etime"), None, now.to_string());
        }
    }
}

/// Handles DeleteJob (qdel) over several ids.
pub fn delete_jobs(
    state: &mut State,
    ctx: &Ctx<'_>,
    ids: &[String],
    force: bool,
    purge_history: bool,
) -> (Vec<IdError>, Vec<StoreOp>) {
    let history = state.server_flag("job_history_enable", false);
    let mut queued = crate::arrays::QueuedDeletes::default();
    let mut ops = Vec::new();
    let (errors, _) = per_key(state, ctx, ids, crate::arrays::RangeRule::StartInside, |state, ctx, key| {
        // A queued subjob is only an index of its array: consecutive ones are batched.
        if let Some(index) = key.index {
            if state.job(key).is_none_or(|j| j.state == JobState::Queued) {
                if !queued.holds(key.seq) {
                    ops.extend(queued.flush(state, ctx.now));
                }
                return queued.delete(state, key.seq, index).map(|()| Vec::new());
            }
        }
        // Anything else sees the batched deletions written first, and its writes follow
        // them in order: the action's own result carries none.
        ops.extend(queued.flush(state, ctx.now));
        ops.extend(delete_one(state, ctx, key, force, purge_history, history)?);
        Ok(Vec::new())
    });
    ops.extend(queued.flush(state, ctx.now));
    (errors, ops)
}

/// qdel of one job, array or subjob that is not a queued subjob.
fn delete_one(
    state: &mut State,
    ctx: &Ctx<'_>,
    key: JobKey,
    force: bool,
    purge_history: bool,
    history: bool,
) -> Result<Vec<StoreOp>, ReqError> {
    let Some(job) = state.job_mut(key) else {
        return Err(ReqError::new(Pbse::UNKJOBID));
    };
    if matches!(job.state, JobState::Running | JobState::Suspended | JobState::Exiting) {
        // A running job ends through its mom: SIGTERM, SIGKILL after kill_delay, and
        // the end is recorded when the mom reports it; `-W force` does not wait.
        let (ops, frames) = if force {
            crate::exec::force_delete(state, key, ctx.now)
        } else if state.ending.get(&key) == Some(&crate::exec::EndReason::Delete) {
            (Vec::new(), Vec::new())
        } else {
            crate::exec::begin_end(state, key, crate::exec::EndReason::Delete)
        };
        crate::exec::send_frames(state, frames);
        return Ok(ops);
    }
    if job.state.is_history() {
        if !purge_history || key.index.is_some() {
            return Err(ReqError::new(Pbse::HISTJOBID));
        }
        state.jobs.remove(&key.seq);
        state.remove_subjobs_of(key.seq);
        return Ok(vec![StoreOp::DeleteJob { seq: key.seq }]);
    }
    if job.array {
        return Ok(delete_array(state, key.seq, force, ctx.now));
    }
    if history && !purge_history {
        job.state = JobState::Finished;
        job.substate = Substate::TERMINATED;
        let now = ctx.now.to_string();
        job.attrs.set(job_idx!("mtime"), None, now.as_str());
        job.attrs.set(job_idx!("obittime"), None, now.as_str());
        job.attrs.set(job_idx!("history_timestamp"), None, now.as_str());
        return Ok(vec![job.put_op(None)]);
    }
    state.jobs.remove(&key.seq);
    Ok(vec![StoreOp::DeleteJob { seq: key.seq }])
}

/// qdel of a whole array: its queued subjobs go at once, its running ones end through
/// their moms; the array finishes when the last one has.
fn delete_array(state: &mut State, seq: u64, force: bool, now: i64) -> Vec<StoreOp> {
    let mut ops = Vec::new();
    if let Some(parent) = state.jobs.get_mut(&seq) {
        parent.attrs.set(job_idx!("array_indices_remaining"), None, "-");
        if matches!(parent.state, JobState::Held | JobState::Waiting) {
            parent.state = JobState::Begun;
        }
    }
    let running: Vec<JobKey> = state
        .subjobs_of(seq)
        .filter(|j| matches!(j.state, JobState::Running | JobState::Suspended | JobState::Exiting))
        .map(Job::key)
        .collect();
    for key in running {
        let (more, frames) = if force {
            crate::exec::force_delete(state, key, now)
        } else if state.ending.get(&key) == Some(&crate::exec::EndReason::Delete) {
            (Vec::new(), Vec::new())
        } else {
            crate::exec::begin_end(state, key, crate::exec::EndReason::Delete)
        };
        ops.extend(more);
        crate::exec::send_frames(state, frames);
    }
    ops.extend(crate::arrays::refresh(state, seq, now));
    ops
}

/// Handles HoldJob (`hold = true`) and ReleaseJob (`hold = false`).
pub fn hold_jobs(
    state: &mut State,
    ctx: &Ctx<'_>,
    ids: &[String],
    hold_types: &str,
    hold: bool,
) -> (Vec<IdError>, Vec<StoreOp>) {
    let letters: Vec<char> = if hold_types.is_empty() { vec!['u'] } else { hold_types.chars().collect() };
    per_id(state, ctx, ids, |state, ctx, seq| {
        if letters.iter().any(|c| !"uosnp".contains(*c)) {
            return Err(ReqError::new(Pbse::BADATVAL));
        }
        if letters.iter().any(|c| *c != 'n' && !crate::holds::allowed(ctx.privilege, *c)) {
            return Err(ReqError::new(Pbse::PERM));
        }
        let Some(job) = state.jobs.get_mut(&seq) else {
            return Err(ReqError::new(Pbse::UNKJOBID));
        };
        if job.state.is_history() {
            return Err(ReqError::new(Pbse::HISTJOBID));
        }
        let current = job.get("Hold_Types", None).unwrap_or("n").to_string();
        let mut set: Vec<char> = current.chars().filter(|c| *c != 'n').collect();
        for letter in &letters {
            if *letter == 'n' {
                continue;
            }
            if hold {
                if !set.contains(letter) {
                    set.push(*letter);
                }
            } else {
                set.retain(|c| c != letter);
            }
        }
        // OpenPBS prints hold letters in a fixed order.
        let ordered: String = "uosp".chars().filter(|c| set.contains(c)).collect();
        let value = if ordered.is_empty() { "n".to_string() } else { ordered };
        job.attrs.set(job_idx!("Hold_Types"), None, value.as_str());
        job.attrs.set(job_idx!("mtime"), None, ctx.now.to_string());
        // A begun array is held like a queued one: its queued subjobs wait, its running
        // ones go on; released, it is begun again.
        let begun_array = job.array && job.state == JobState::Begun;
        if begun_array || matches!(job.state, JobState::Queued | JobState::Held | JobState::Waiting) {
            settle_queued_state(job, ctx.now);
        }
        if job.array {
            let mut ops = vec![job.put_op(None)];
            ops.extend(crate::arrays::refresh(state, seq, ctx.now));
            return Ok(ops);
        }
        Ok(vec![job.put_op(None)])
    })
}

/// Handles SelectJobs (qselect): the ids of visible jobs matching every criterion.
pub fn select_jobs(
    state: &State,
    ctx: &Ctx<'_>,
    criteria: &[Criterion],
    history: bool,
    subjobs: bool,
    arrays_only: bool,
) -> Vec<String> {
    let mut ids = Vec::new();
    let criteria: Vec<Prepared> = criteria.iter().map(Prepared::new).collect();
    let visible = state
        .jobs
        .values()
        .filter(|job| history || !job.state.is_history())
        .filter(|job| !arrays_only || job.array)
        .filter(|job| may_see(state, ctx, job));
    for job in visible {
        if subjobs && job.array && !arrays_only {
            // qselect -T: the subjobs stand for their array.
            let holds = |subjob: &Job, letter: JobState| {
                (history || !letter.is_history()) && criteria.iter().all(|c| c.holds(subjob, letter))
            };
            for index in crate::arrays::selected_subjobs(state, job, holds) {
                ids.push(pbs_core::JobId::subjob(job.seq, index, &state.server_name).to_string());
            }
            continue;
        }
        if criteria.iter().all(|c| c.holds(job, job.state)) {
            ids.push(job.id(&state.server_name));
        }
    }
    ids
}

/// What a StatusJob covers, in reply order: jobs, and subjobs kept as index runs until
/// they are listed, so planning costs the ids and arrays named, never their subjobs
/// (`qstat -t` of a 100,000-subjob array, or a range id given many times over).
#[derive(Default)]
pub struct StatusPlan(Vec<Planned>);

enum Planned {
    Key(JobKey),
    Subjobs(u64, crate::arrays::IndexSet),
}

impl StatusPlan {
    fn push(&mut self, key: JobKey) {
        self.0.push(Planned::Key(key));
    }

    /// Whether nothing is to be listed.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|item| matches!(item, Planned::Subjobs(_, set) if set.is_empty()))
    }

    /// The keys in reply order, made as they are taken.
    pub fn into_keys(self) -> impl Iterator<Item = JobKey> + Send + use<> {
        self.0.into_iter().flat_map(|item| {
            let (key, seq, runs) = match item {
                Planned::Key(key) => (Some(key), 0, Vec::new()),
                Planned::Subjobs(seq, set) => (None, seq, set.runs().collect::<Vec<_>>()),
            };
            let subjobs = runs.into_iter().flat_map(move |(first, last, step)| {
                (first..=last)
                    .step_by(usize::try_from(step).unwrap_or(usize::MAX).max(1))
                    .map(move |index| JobKey::subjob(seq, index))
            });
            key.into_iter().chain(subjobs)
        })
    }
}

/// Decides which jobs a StatusJob covers: (the plan, per-id errors). With `subjobs`
/// (qstat -t) each array is followed by all its subjobs; a subjob or range id names
/// those subjobs (a range must lie wholly in the array, as OpenPBS's qstat requires).
pub fn status_plan(
    state: &State,
    ctx: &Ctx<'_>,
    ids: &[String],
    queues: &[String],
    history: bool,
    subjobs: bool,
) -> (StatusPlan, Vec<IdError>) {
    let mut plan = StatusPlan::default();
    let mut errors = Vec::new();
    let push_job = |plan: &mut StatusPlan, job: &Job| {
        plan.push(JobKey::job(job.seq));
        if subjobs && job.array {
            plan.0.push(Planned::Subjobs(job.seq, crate::arrays::indices(job, "array_indices_submitted")));
        }
    };
    let listed = |job: &&Job| (history || !job.state.is_history()) && may_see(state, ctx, job);
    if ids.is_empty() && queues.is_empty() {
        for job in state.jobs.values().filter(listed) {
            push_job(&mut plan, job);
        }
        return (plan, errors);
    }
    for id in ids {
        let result = crate::arrays::status_items(state, id).and_then(|(seq, range)| {
            let job = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
            if !may_see(state, ctx, job) {
                return Err(ReqError::new(Pbse::PERM));
            }
            if job.state.is_history() && !history {
                return Err(ReqError::new(Pbse::HISTJOBID));
            }
            Ok((job, range))
        });
        match result {
            Ok((job, crate::arrays::StatusItems::Job)) => push_job(&mut plan, job),
            Ok((job, crate::arrays::StatusItems::Subjob(index))) => plan.push(JobKey::subjob(job.seq, index)),
            Ok((job, crate::arrays::StatusItems::Subjobs(set))) => plan.0.push(Planned::Subjobs(job.seq, set)),
            Err(e) => errors.push(IdError { id: id.clone(), code: e.code.0, message: e.message }),
        }
    }
    for queue in queues {
        let name = queue.split('@').next().unwrap_or("");
        if !name.is_empty() && state.queue_index(name).is_none() {
            errors.push(IdError { id: queue.clone(), code: Pbse::UNKQUE.0, message: "Unknown queue".into() });
            continue;
        }
        for job in state.jobs.values().filter(|j| name.is_empty() || *j.queue == *name).filter(listed) {
            push_job(&mut plan, job);
        }
    }
    (plan, errors)
}

/// The status of one planned key: a job, a subjob with a record, or a queued subjob.
/// `arrays` keeps the last array's parsed remaining indices and its subjob view, so
/// listing an array's subjobs builds them once, not once per subjob.
pub fn key_status(
    state: &State,
    key: JobKey,
    filter: &StatusFilter,
    arrays: &mut Option<crate::arrays::SubjobTemplate>,
) -> Option<StatusObject> {
    match (key.index, state.job(key)) {
        (_, Some(job)) => Some(job_status(state, job, filter)),
        (Some(index), None) => {
            if arrays.as_ref().is_none_or(|t| t.seq != key.seq) {
                let parent = state.jobs.get(&key.seq)?;
                *arrays = Some(crate::arrays::SubjobTemplate::new(state, parent, filter));
            }
            arrays.as_ref().map(|t| t.status(state, index))
        }
        (None, None) => None,
    }
}

/// Whether a requested attribute list asks for `full` (a dotted name) or its base.
pub fn wanted(filter: &[String], full: &str) -> bool {
    filter.is_empty() || filter.iter().any(|f| f == full || split_name(full).0 == f.as_str())
}

/// Which job attributes a status request asks for, worked out once per request so that
/// building each job's status allocates only for what is sent.
pub struct StatusFilter {
    /// Every attribute (empty filter) or only those named.
    all: bool,
    /// Attribute indices asked for by base name (all their resources).
    bases: Vec<bool>,
    /// `base.resource` names asked for one by one.
    fulls: Vec<(u8, String)>,
    privilege: Privilege,
    /// Indices of the attributes computed from the job rather than stored.
    computed: [u8; 4],
}

impl StatusFilter {
    pub fn new(filter: &[String], privilege: Privilege) -> StatusFilter {
        let table = ObjectKind::Job.attributes();
        let mut bases = vec![false; table.len()];
        let mut fulls = Vec::new();
        for name in filter {
            let (base, resource) = split_name(name);
            if let Some((index, _)) = ObjectKind::Job.find(base) {
                match resource {
                    None => bases[index] = true,
                    Some(r) => fulls.push((u8::try_from(index).unwrap_or(u8::MAX), r.to_string())),
                }
            }
        }
        let computed = [job_idx!("job_state"), job_idx!("queue"), job_idx!("server"), job_idx!("substate")];
        StatusFilter { all: filter.is_empty(), bases, fulls, privilege, computed }
    }

    fn wants(&self, def: u8, resource: Option<&str>) -> bool {
        self.all
            || self.bases.get(def as usize).copied().unwrap_or(false)
            || resource.is_some_and(|r| self.fulls.iter().any(|(d, name)| *d == def && name == r))
    }
}

/// The status object of one job, attributes in report order, filtered by read privilege
/// and the requested names.
pub fn job_status(state: &State, job: &Job, filter: &StatusFilter) -> StatusObject {
    let table = ObjectKind::Job.attributes();
    let [state_idx, queue_idx, server_idx, _] = filter.computed;
    let computed = |def: u8| -> String {
        if def == state_idx {
            job.state.letter().to_string()
        } else if def == queue_idx {
            job.queue.to_string()
        } else if def == server_idx {
            state.server_name.clone()
        } else {
            job.substate.to_string()
        }
    };
    let hidden = crate::privilege::hidden_resources(state, filter.privilege);
    let mut sorted_computed = filter.computed;
    sorted_computed.sort_unstable();
    let mut attrs = Vec::with_capacity(if filter.all { job.attrs.len() + 4 } else { 8 });
    let mut push = |def: u8, resource: Option<&str>, value: &dyn Fn() -> String| {
        let Some(d) = table.get(def as usize) else { return };
        if !d.readable_by(filter.privilege) || !filter.wants(def, resource) {
            return;
        }
        if resource.is_some_and(|r| hidden.iter().any(|h| h == r)) {
            return;
        }
        let full = match resource {
            Some(r) => format!("{}.{}", d.name, r),
            None => d.name.to_string(),
        };
        attrs.push(Attr(full, value()));
    };
    let mut pending = sorted_computed.iter().peekable();
    for stored in job.attrs.iter() {
        while let Some(&&def) = pending.peek() {
            if def > stored.def {
                break;
            }
            push(def, None, &|| computed(def));
            pending.next();
        }
        push(stored.def, stored.resource.as_deref(), &|| stored.value.to_string());
    }
    for &def in pending {
        push(def, None, &|| computed(def));
    }
    StatusObject { name: job.id(&state.server_name), attrs }
}

/// Removes history jobs older than `job_history_duration` (default two weeks).
pub fn purge_history(state: &mut State, now: i64) -> Vec<StoreOp> {
    let duration = state
        .server_attr("job_history_duration", None)
        .and_then(|v| v.parse::<Duration>().ok())
        .map(|d| d.as_secs() as i64)
        .unwrap_or(14 * 24 * 3600);
    let expired: Vec<u64> = state
        .jobs
        .values()
        .filter(|j| j.state.is_history())
        .filter(|j| {
            j.get("history_timestamp", None).and_then(|t| t.parse::<i64>().ok()).is_some_and(|t| now - t >= duration)
        })
        .map(|j| j.seq)
        .collect();
    expired
        .into_iter()
        .map(|seq| {
            state.jobs.remove(&seq);
            state.remove_subjobs_of(seq);
            StoreOp::DeleteJob { seq }
        })
        .collect()
}
