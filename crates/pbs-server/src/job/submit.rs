//! Job submission (QueueJob): checks, defaults, limits and the new job's record.

use std::cmp::Ordering;
use std::sync::Arc;

use pbs_core::attr::{ObjectKind, parse_bool};
use pbs_core::{ArrayRange, Duration, JobState, Pbse, Place, Select, Size};
use pbs_proto::Attr;

use crate::attrlist::{AttrList, resolve};
use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::Proposal;
use crate::request::Ctx;
use crate::request::attrs::{check_job_attr, compare_values};
use crate::state::{Job, JobParts, State};

/// Handles QueueJob: validates, applies defaults and limits, and creates the job.
pub fn queue_job(
    state: &mut State,
    ctx: &Ctx<'_>,
    attrs: &[Attr],
    script: String,
    destination: Option<&str>,
) -> Result<(String, Effects), ReqError> {
    let (queue_name, queue_index) = queue_for(state, ctx, destination)?;
    let (mut list, is_array, join) = checked_request(state, ctx, attrs, &queue_name, queue_index)?;
    let seq = state.allocate_seq().ok_or_else(|| ReqError::new(Pbse::SYSTEM))?;
    set_server_values(&mut list, ctx, seq, &queue_name, is_array);
    let set = |list: &mut AttrList, def: u8, value: &str| list.set(def, None, value);

    let hold = list.get(job_idx!("Hold_Types"), None).unwrap_or("n");
    let exec_time = crate::job::deferred::execution_time(&list);
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
    let parts = JobParts {
        seq,
        array: is_array,
        index: None,
        state: job_state,
        substate: job_state.default_substate(),
        queue,
        attrs: list,
        accrue_since: ctx.now,
    };
    let job = Job::new(parts, &mut state.requests);
    let id = job.id(&state.server_name);
    let has_depend = job.attrs.get(job_idx!("depend"), None).is_some();
    state.jobs.insert(seq, job);
    // The record shows the job as its dependencies leave it (held: `etime=0`), unless they
    // end it at once (on a parent that already failed): then as it was queued.
    let key = crate::jobkey::JobKey::job(seq);
    let queued_before = if has_depend { crate::accounting::queued(state, key) } else { None };
    // Its dependencies may hold it (or, on a parent that already failed, end it at once).
    let parents = crate::job::depend::submitted(state, seq, ctx.now, crate::job::parts::LIFE);
    if let Some(join) = join {
        crate::job::jobset::joined(state, seq, join, ctx.now);
    }
    let mut effects = Effects::default();
    crate::job::parts::LIFE.step(state, key, crate::job::life::Step::Queued { script }, ctx.now, &mut effects);
    let queued_now =
        state.jobs.get(&seq).filter(|j| !j.state.is_history()).and_then(|_| crate::accounting::queued(state, key));
    effects.ops.extend(queued_now.or(queued_before));
    effects.ops.extend(state.reserve_seq());
    effects.merge(parents);
    Ok((id, effects))
}

/// The queue a submission goes to (its destination, else the server's default), checked:
/// enabled, its ACLs, and root only where the server allows it.
fn queue_for(state: &State, ctx: &Ctx<'_>, destination: Option<&str>) -> Result<(String, usize), ReqError> {
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
    crate::acl::check_queue(state, queue_index, ctx)?;
    if ctx.who.uid == 0 && !ctx.who.daemon && !crate::acl::root_allowed(state, ctx.who) {
        return Err(ReqError::new(Pbse::BADUSER));
    }
    Ok((queue_name, queue_index))
}

/// The request's attributes, each checked as qsub checks it, with the queue's and the
/// server's defaults and every limit applied: the job's list, whether it is an array, and
/// the job set it joins.
fn checked_request(
    state: &mut State,
    ctx: &Ctx<'_>,
    attrs: &[Attr],
    queue_name: &str,
    queue_index: usize,
) -> Result<(AttrList, bool, Option<crate::job::jobset::Join>), ReqError> {
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

    let select_given = list.get(job_idx!("Resource_List"), Some("select")).is_some();
    convert_nodes(state, queue_index, &mut list)?;
    crate::job::orselect::apply_defaults(state, queue_index, &mut list, select_given, apply_resource_defaults)?;
    check_resource_rules(&list, is_array)?;
    check_queue_limits(state, queue_index, &list)?;
    crate::job::parts::LIFE.check(state, ctx, &Proposal::Queued { queue: queue_name, attrs: &list })?;

    if let Some(text) = list.get(job_idx!("depend"), None).map(str::to_string) {
        let kept = crate::job::depend::check_new(state, &ctx.who.user, &text)?;
        list.set(job_idx!("depend"), None, kept);
    }

    let join = match list.get(job_idx!("job_set"), None) {
        Some(value) => Some(crate::job::jobset::check(state, &ctx.who.user, value, is_array)?),
        None => None,
    };
    Ok((list, is_array, join))
}

/// The values the server sets on a new job (owner, times, defaults, `PBS_O_*`, the output
/// and error paths), as OpenPBS sets them.
fn set_server_values(list: &mut AttrList, ctx: &Ctx<'_>, seq: u64, queue_name: &str, is_array: bool) {
    let now = ctx.now.to_string();
    let host = ctx.who.host.clone();
    let set = |list: &mut AttrList, def: u8, value: &str| list.set(def, None, value);
    let set_default = |list: &mut AttrList, def: u8, value: &str| {
        if list.get(def, None).is_none() {
            list.set(def, None, value);
        }
    };
    set_default(&mut *list, job_idx!("Job_Name"), "none");
    set(&mut *list, job_idx!("Job_Owner"), &ctx.who.user_at_host());
    set(&mut *list, job_idx!("euser"), &ctx.who.user);
    set(&mut *list, job_idx!("egroup"), &ctx.who.group);
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
        set_default(&mut *list, def, value);
    }
    for def in [job_idx!("ctime"), job_idx!("mtime"), job_idx!("qtime")] {
        set(&mut *list, def, &now);
    }
    set(&mut *list, job_idx!("Submit_Host"), &host);
    set(&mut *list, job_idx!("queue_type"), "E");
    set(&mut *list, job_idx!("queue_rank"), &seq.to_string());

    // One pass over the variables: with -V they are the submitter's whole environment.
    let given = list.get(job_idx!("Variable_List"), None).unwrap_or("");
    let (mut workdir, mut has_queue, mut has_host) = (None, false, false);
    for (key, value) in pbs_core::variables::decode(given) {
        match key.as_str() {
            "PBS_O_WORKDIR" if workdir.is_none() => workdir = Some(value),
            "PBS_O_QUEUE" => has_queue = true,
            "PBS_O_HOST" => has_host = true,
            _ => {}
        }
    }
    let workdir = workdir.unwrap_or_default();
    if !(has_queue && has_host) {
        let mut variables = given.to_string();
        for (key, value, present) in [("PBS_O_QUEUE", queue_name, has_queue), ("PBS_O_HOST", &host, has_host)] {
            if !present {
                if !variables.is_empty() {
                    variables.push(',');
                }
                variables.push_str(key);
                variables.push('=');
                variables.push_str(value);
            }
        }
        set(&mut *list, job_idx!("Variable_List"), &variables);
    }

    let job_name = list.get(job_idx!("Job_Name"), None).unwrap_or("none").to_string();
    for (def, letter) in [(job_idx!("Output_Path"), 'o'), (job_idx!("Error_Path"), 'e')] {
        // A subjob's files carry its index: the mark is replaced when it starts.
        let default_file = if is_array {
            format!("{job_name}.{letter}{seq}.{}", crate::job::array::INDEX_MARK)
        } else {
            format!("{job_name}.{letter}{seq}")
        };
        let path = match list.get(def, None) {
            None => format!("{host}:{workdir}/{default_file}"),
            Some(given) if given.ends_with('/') => format!("{given}{default_file}"),
            Some(given) => given.to_string(),
        };
        set(&mut *list, def, &path);
    }
}

/// A submitted job's Torque-style `nodes` request, as OpenPBS's server takes it: a spec it
/// cannot read is `node(s) specification error`, a spec beside `select` or `place` is
/// refused, and unless a `resources_default.select` gives the job its select, the spec
/// becomes the job's `select` and `place` and sets its `ncpus` (`nodes` is kept).
fn convert_nodes(state: &mut State, queue_index: usize, list: &mut AttrList) -> Result<(), ReqError> {
    let rl = job_idx!("Resource_List");
    let Some(nodes) = list.get(rl, Some("nodes")).map(str::to_string) else {
        return Ok(());
    };
    let ncpus = list.get(rl, Some("ncpus")).and_then(|v| v.parse::<u64>().ok());
    let mem_kb = list.get(rl, Some("mem")).and_then(|v| v.parse::<Size>().ok()).map(|s| s.to_bytes().div_ceil(1024));
    let conversion = pbs_core::nodespec::convert(&nodes, ncpus, mem_kb, |name| is_node_name(state, name))
        .map_err(|e| ReqError::new(e.pbse()))?;
    if list.get(rl, Some("select")).is_some() || list.get(rl, Some("place")).is_some() {
        return Err(ReqError::with_message(Pbse::INVALNODEPLACE, format!("{}: nodes", Pbse::INVALNODEPLACE)));
    }
    let default_select =
        |attrs: &AttrList, kind| resources_of(attrs, kind, "resources_default").iter().any(|(r, _)| r == "select");
    if default_select(&state.queues[queue_index].attrs, ObjectKind::Queue)
        || default_select(&state.server, ObjectKind::Server)
    {
        return Ok(());
    }
    set_conversion(state, list, conversion);
    Ok(())
}

/// Whether `name` names a node, as OpenPBS matches a nodes spec's properties (any case).
fn is_node_name(state: &State, name: &str) -> bool {
    state.nodes.iter().any(|n| n.name.eq_ignore_ascii_case(name))
}

/// Sets the `select`, `place` and `ncpus` a nodes spec became; a spec without a place
/// (`#shared`) leaves the job's as it is.
fn set_conversion(state: &mut State, list: &mut AttrList, conversion: pbs_core::nodespec::Conversion) {
    let rl = job_idx!("Resource_List");
    let select = state.interner.intern("select");
    list.set(rl, Some(select), conversion.select);
    if let Some(place) = conversion.place {
        let key = state.interner.intern("place");
        list.set(rl, Some(key), place);
    }
    let ncpus = state.interner.intern("ncpus");
    list.set(rl, Some(ncpus), conversion.ncpus.to_string());
}

/// A qalter of a job's `nodes` (OpenPBS's `set_node_ct` when altering, then the select
/// rebuilt from it): the spec checked, `ncpus` set to its tasks, and unless the same qalter
/// sets `select`, the job's `select` and `place` made again from it. A `mem` the qalter sets,
/// or one the job's select already split between its chunks, is split again.
///
/// OpenPBS keeps a select its submitter gave (rather than one it made); the server does not
/// record which, so here a `nodes` alteration always remakes it.
pub fn alter_nodes(
    state: &mut State,
    list: &mut AttrList,
    attrs: &[Attr],
    old_select: Option<&str>,
) -> Result<(), ReqError> {
    let rl = job_idx!("Resource_List");
    let Some(nodes) = list.get(rl, Some("nodes")).map(str::to_string) else {
        return Ok(());
    };
    let mem_altered = attrs.iter().any(|a| a.0 == "Resource_List.mem");
    let mem_split = old_select
        .and_then(|s| s.parse::<Select>().ok())
        .is_some_and(|s| s.chunks().iter().any(|c| c.get("mem").is_some()));
    let mem_kb = (mem_altered || mem_split)
        .then(|| list.get(rl, Some("mem")).and_then(|v| v.parse::<Size>().ok()))
        .flatten()
        .map(|s| s.to_bytes().div_ceil(1024));
    let conversion = pbs_core::nodespec::convert(&nodes, None, mem_kb, |name| is_node_name(state, name))
        .map_err(|e| ReqError::new(e.pbse()))?;
    if attrs.iter().any(|a| a.0 == "Resource_List.select") {
        let ncpus = state.interner.intern("ncpus");
        list.set(rl, Some(ncpus), conversion.ncpus.to_string());
        return Ok(());
    }
    set_conversion(state, list, conversion);
    Ok(())
}

/// Fills `Resource_List` from queue then server `resources_default`, builds `select` from
/// job-wide resources when absent, applies `default_chunk`, and derives the job-wide sums
/// (`ncpus`, `mem`, `nodect`) from `select`, as OpenPBS does. `select_given`: the client
/// gave the select (not the server, from job-wide resources or a nodes spec), so job-wide
/// defaults of chunk resources do not apply.
pub fn apply_resource_defaults(
    state: &mut State,
    queue_index: usize,
    list: &mut AttrList,
    select_given: bool,
) -> Result<(), ReqError> {
    let rl = job_idx!("Resource_List");
    let queue_defaults: Vec<(String, String)> =
        resources_of(&state.queues[queue_index].attrs, ObjectKind::Queue, "resources_default");
    let server_defaults: Vec<(String, String)> = resources_of(&state.server, ObjectKind::Server, "resources_default");
    for (resource, value) in queue_defaults.iter().chain(server_defaults.iter()) {
        if list.get(rl, Some(resource)).is_none() {
            // A job-wide default that a given select already implies must not override it.
            if select_given && is_chunk_resource(state, resource) {
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
        for resource in chunk.resources().iter().map(|r| r.name()) {
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
    // A sum that would wrap is refused: wrapped, `2:mem=8192pb` (2^63 bytes each) would pass a queue's
    // `resources_max.mem` as `0b`.
    let too_large = |_| ReqError::attr(Pbse::BADATVAL, "Resource_List.select");
    for summed in ["ncpus", "ngpus", "mpiprocs"] {
        let total = pbs_core::capacity::checked_total(&select, summed, |v| v.parse().ok()).map_err(too_large)?;
        if let Some(total) = total {
            if total > 0 || summed == "ncpus" {
                let key = state.interner.intern(summed);
                list.set(rl, Some(key), total.to_string());
            }
        }
    }
    for sized in ["mem", "vmem"] {
        let bytes = |v: &str| v.parse::<Size>().ok().map(|s| s.to_bytes());
        if let Some(total) = pbs_core::capacity::checked_total(&select, sized, bytes).map_err(too_large)? {
            let key = state.interner.intern(sized);
            list.set(rl, Some(key), Size::from_bytes(total).to_string());
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
        // A job with alternatives is held to its largest and smallest amounts over them.
        let extreme = if violation == Ordering::Greater { job_idx!("max_resc_req") } else { job_idx!("min_resc_req") };
        for (resource, bound) in bounds {
            if let Some(value) = list.get(extreme, Some(&resource)).or_else(|| list.get(rl, Some(&resource))) {
                if compare_values(value, &bound) == Some(violation) {
                    return Err(ReqError::new(Pbse::EXCQRESC));
                }
            }
        }
    }
    Ok(())
}
