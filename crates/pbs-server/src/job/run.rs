//! Running jobs: starting them on their moms (qrun and the scheduler's runs), following what
//! the moms report, ending, signalling, suspending and requeuing them.
//!
//! Everything here is a change to [`State`] made under its lock, returning the [`Effects`]
//! to carry out once it is committed.

use pbs_core::attr::ObjectKind;
use pbs_core::select::{Place, Select, Sharing};
use pbs_core::{ExecVnode, JobState, Pbse, Substate};
use pbs_proto::IdError;
use pbs_proto::mom::{JobLaunch, ToMom, Usage};

use crate::effects::{Delivery, Effects, Launch, MomFrames};
use crate::error::ReqError;
use crate::jobkey::{JobKey, key_of};
use crate::state::{EndReason, Job, State};
use crate::store::StoreOp;

/// `substate` of a job sent to its mom but not yet confirmed running (PRERUN).
pub const SUBSTATE_PRERUN: Substate = Substate(41);

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

/// Decodes `Variable_List` (`K=V,K2=V2`, commas and backslashes in values escaped).
pub fn decode_variables(list: &str) -> Vec<(String, String)> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut chars = list.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            ',' => items.push(std::mem::take(&mut current)),
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
        .into_iter()
        .filter_map(|item| item.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

fn unescape_xml(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// The texts between `<tag>` and `</tag>`, in order (`executable`, `argument_list`).
fn jsdl_values(text: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        out.push(unescape_xml(&after[..end]));
        rest = &after[end + close.len()..];
    }
    out
}

/// A job's select: as stored, else one chunk of `ncpus=1`.
fn select_of(job: &Job) -> Select {
    let parsed = job.get("Resource_List", Some("select")).and_then(|s| s.parse::<Select>().ok());
    match parsed {
        Some(select) if !select.chunks().is_empty() => select,
        _ => Select::single(vec![("ncpus".to_string(), "1".to_string())]),
    }
}

/// The chunks of a select one by one, each repeated its count, made as they are taken:
/// walked only as far as an exec_vnode reaches, never expanded.
fn each_chunk(select: &Select) -> impl Iterator<Item = &pbs_core::select::Chunk> {
    select.chunks().iter().flat_map(|chunk| std::iter::repeat_n(chunk, chunk.count().max(1) as usize))
}

/// Whether the vnodes an exec_vnode names can ever hold the job's chunks and processes
/// (`pbs_core::capacity`): checked before anything is made per chunk or per process, so
/// `select=4000000000:ncpus=0` or `mpiprocs=2000000000` costs nothing here.
fn check_capacity(state: &State, select: &Select, exec: &ExecVnode) -> Result<(), ReqError> {
    let names: std::collections::HashSet<&str> = exec.parts().map(|p| p.vnode.as_str()).collect();
    let ncpus: u64 = state
        .nodes
        .iter()
        .filter(|n| names.contains(n.name.as_str()))
        .map(|n| crate::node::available_ncpus(&crate::node::available(state, n)))
        .fold(0, u64::saturating_add);
    let slots = pbs_core::capacity::Slots::of(names.len() as u64, ncpus);
    pbs_core::capacity::Counts::of(select).check(slots).map_err(|e| {
        tracing::info!(object_type = "Job", "Refused a run: {e}");
        ReqError::new(Pbse::RESCUNAV)
    })
}

/// Completes an exec_vnode given as bare names (`qrun -H n1+n2`): each chunk of the job's
/// select goes to the named vnodes in turn, with the chunk's consumable resources.
fn complete_exec(state: &State, select: &Select, exec: ExecVnode) -> ExecVnode {
    if exec.parts().any(|p| !p.resources.is_empty()) {
        return exec;
    }
    let names: Vec<String> = exec.parts().map(|p| p.vnode.clone()).collect();
    let mut out = ExecVnode::default();
    for (i, chunk) in each_chunk(select).enumerate() {
        let vnode = names[i % names.len().max(1)].clone();
        let resources = chunk
            .resources()
            .iter()
            .filter(|(r, _)| crate::node::consumable(state, r))
            .map(|(r, v)| (r.clone(), v.clone()))
            .collect();
        out.chunks.push(vec![pbs_core::execvnode::VnodePart { vnode, resources }]);
    }
    out
}

fn run_comment(exec_vnode: &str) -> String {
    format!("Job run at {} on {exec_vnode}", chrono::Local::now().format("%a %b %d at %H:%M"))
}

fn job_exclusive(state: &State, job: &Job, exec: &ExecVnode) -> bool {
    let place = job.get("Resource_List", Some("place")).and_then(|p| p.parse::<Place>().ok()).unwrap_or_default();
    let excl_place = matches!(place.sharing, Sharing::Excl | Sharing::ExclHost);
    let shared_place = place.sharing == Sharing::Shared;
    exec.vnodes().iter().any(|name| {
        let sharing = state
            .nodes
            .iter()
            .find(|n| n.name == *name)
            .and_then(|n| n.attrs.get_named(ObjectKind::Node, "sharing", None))
            .unwrap_or("default_shared");
        match sharing {
            "force_excl" | "force_exclhost" => true,
            "ignore_excl" => false,
            "default_excl" | "default_exclhost" => !shared_place,
            _ => excl_place,
        }
    })
}

/// What a qrun does once its rules pass.
pub enum Qrun {
    /// `-H`: the job runs where asked, with these effects.
    Run(Effects),
    /// No `-H`: the scheduler places the job (its full id).
    AskScheduler(String),
}

/// RunJob (qrun): operators and managers only; the job (or a subjob, `12[3]`, from its
/// array's remaining indices) must be queued. With `-H` the job starts here and now.
pub fn qrun(
    state: &mut State,
    ctx: &crate::request::Ctx<'_>,
    job_id: &str,
    exec_vnode: Option<String>,
) -> Result<Qrun, ReqError> {
    if ctx.privilege < pbs_core::Privilege::Operator {
        return Err(ReqError::new(Pbse::PERM));
    }
    let key = crate::request::ids::run_key(state, job_id)?;
    let queued = match (key.index, state.job(key)) {
        (_, Some(job)) => job.state == JobState::Queued && !job.array,
        (Some(index), None) => state.jobs.get(&key.seq).is_some_and(|parent| {
            matches!(parent.state, JobState::Queued | JobState::Begun)
                && crate::request::ids::indices(parent, "array_indices_remaining").contains(index)
        }),
        (None, None) => false,
    };
    if !queued {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    match exec_vnode {
        Some(exec_vnode) => {
            let mut effects = run_job(state, key, &exec_vnode, ctx.now)?;
            effects.ops.extend(crate::job::array::settle(state, ctx.now));
            Ok(Qrun::Run(effects))
        }
        None => Ok(Qrun::AskScheduler(match key.index {
            Some(index) => pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string(),
            None => state.job(key).map(|j| j.id(&state.server_name)).unwrap_or_default(),
        })),
    }
}

/// Every vnode must exist, be up and not offline.
fn check_nodes(state: &State, exec: &ExecVnode) -> Result<(), ReqError> {
    for name in exec.vnodes() {
        let node = state.nodes.iter().find(|n| n.name == name).ok_or_else(|| ReqError::new(Pbse::UNKNODE))?;
        let up = state.node_rt.get(name).is_some_and(|rt| rt.up);
        if !up || crate::node::is_offline(node) {
            return Err(ReqError::new(Pbse::RESCUNAV));
        }
    }
    Ok(())
}

/// Starts a queued job on `exec_vnode`: checks, marks it running, holds its resources.
/// Returns the store operations and the launches to send once they are committed; for a
/// subjob, the caller adds [`crate::job::array::settle`]'s operations.
pub fn run_job(state: &mut State, key: JobKey, exec_vnode: &str, now: i64) -> Result<Effects, ReqError> {
    let parsed: ExecVnode = exec_vnode.parse().map_err(|_| ReqError::new(Pbse::BADNODESPEC))?;
    if let Some(index) = key.index {
        // A queued subjob has no record until it starts.
        if state.job(key).is_none() {
            check_nodes(state, &parsed)?;
            crate::job::array::materialize(state, key.seq, index, now)?;
        }
    }
    let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if job.state != JobState::Queued || job.array {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let select = select_of(job);
    check_capacity(state, &select, &parsed)?;
    let exec = complete_exec(state, &select, parsed);
    check_nodes(state, &exec)?;
    let exclusive = job_exclusive(state, job, &exec);
    let exec_text = exec.to_string();
    let job_id = job.id(&state.server_name);
    // A run_count a user set near the top of its range stays there.
    let run_count = job.get("run_count", None).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0).saturating_add(1);
    let run_count = u32::try_from(run_count).unwrap_or(u32::MAX);
    crate::node::account(state, key, &job_id, &exec, exclusive, true, now);
    let Some(job) = state.job_mut(key) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
    job.state = JobState::Running;
    job.substate = SUBSTATE_PRERUN;
    job.attrs.set(job_idx!("exec_host"), None, exec.exec_host());
    job.attrs.set(job_idx!("exec_vnode"), None, exec_text.as_str());
    job.attrs.set(job_idx!("stime"), None, now.to_string());
    job.attrs.set(job_idx!("run_count"), None, run_count.to_string());
    job.attrs.set(job_idx!("comment"), None, run_comment(&exec_text));
    job.attrs.unset(job_idx!("Exit_status"), None);
    let ops = vec![job.put_op(None)];
    if key.index.is_some() {
        // Brought up to date once per batch of starts: see `job::array::settle`.
        state.arrays_to_refresh.insert(key.seq);
    }
    state.starting.insert(key);
    state.changes.jobs.insert(key, job_id.clone());
    let launches = launches(state, key, &select, &exec, run_count);
    tracing::info!(object_type = "Job", object_name = job_id.as_str(), "Job run on {exec_text}");
    Ok(Effects { ops, to_moms: Vec::new(), launches })
}

fn launches(state: &State, key: JobKey, select: &Select, exec: &ExecVnode, run_count: u32) -> Vec<Launch> {
    let Some(job) = state.job(key) else { return Vec::new() };
    let get = |name: &str| job.get(name, None).unwrap_or("").to_string();
    // One line per process of each chunk, on its first vnode; [`check_capacity`] has held
    // the processes to what the job's vnodes have.
    let mut nodefile = Vec::new();
    let mut wanted = each_chunk(select);
    for chunk in &exec.chunks {
        let mpiprocs = wanted.next().map_or(1, pbs_core::capacity::chunk_mpiprocs);
        if let Some(first) = chunk.first() {
            nodefile.extend(std::iter::repeat_n(first.vnode.clone(), mpiprocs as usize));
        }
    }
    let first_chunk = select.chunks().first().map(|c| c.resources().to_vec()).unwrap_or_default();
    let chunk_value =
        |name: &str| -> Option<u32> { first_chunk.iter().find(|(r, _)| r == name).and_then(|(_, v)| v.parse().ok()) };
    let ms_ncpus = exec
        .chunks
        .first()
        .and_then(|c| c.first())
        .and_then(|p| p.get("ncpus"))
        .and_then(|v| v.parse().ok())
        .or_else(|| chunk_value("ncpus"))
        .unwrap_or(1);
    let duration = |name: &str| {
        job.get("Resource_List", Some(name)).and_then(|v| v.parse::<pbs_core::Duration>().ok()).map(|d| d.as_secs())
    };
    let executable =
        job.get("executable", None).and_then(|e| jsdl_values(e, "jsdl-hpcpa:Executable").into_iter().next());
    let arguments = job.get("argument_list", None).map(|a| jsdl_values(a, "jsdl-hpcpa:Argument")).unwrap_or_default();
    let mother_superior = exec.vnodes().first().map(|v| v.to_string()).unwrap_or_default();
    let shell = job.get("Shell_Path_List", None).and_then(|list| shell_for(list, &mother_superior));
    let (uid, root_allowed) = crate::launch_owner::owner(state, job);
    let base = JobLaunch {
        job_id: job.id(&state.server_name),
        job_name: get("Job_Name"),
        user: get("euser"),
        uid,
        root_allowed,
        group: get("egroup"),
        queue: job.queue.to_string(),
        sister: false,
        script: String::new(),
        executable,
        arguments,
        shell,
        variables: decode_variables(job.get("Variable_List", None).unwrap_or("")),
        output_path: get("Output_Path"),
        error_path: get("Error_Path"),
        join_path: job.get("Join_Path", None).unwrap_or("n").to_string(),
        keep_files: job.get("Keep_Files", None).unwrap_or("n").to_string(),
        umask: job.get("umask", None).map(str::to_string),
        nodefile,
        ncpus: ms_ncpus,
        ompthreads: chunk_value("ompthreads").unwrap_or(ms_ncpus),
        walltime: duration("walltime"),
        cput: duration("cput"),
        mem: job.get("Resource_List", Some("mem")).and_then(crate::node::amount),
        array_index: job.get("array_index", None).map(str::to_string),
        array_id: job.get("array_id", None).map(str::to_string),
        account: job.get("Account_Name", None).map(str::to_string),
        run_count,
    };
    exec.vnodes()
        .into_iter()
        .enumerate()
        .map(|(i, vnode)| {
            let mut launch = base.clone();
            if i > 0 {
                launch.sister = true;
                launch.ncpus = exec
                    .parts()
                    .filter(|p| p.vnode == vnode)
                    .filter_map(|p| p.get("ncpus").and_then(|v| v.parse::<u32>().ok()))
                    .sum();
            }
            Launch { key, node: vnode.to_string(), launch }
        })
        .collect()
}

/// The shell of `-S path[@host],...` for `host`: its own entry, else the one without a host.
fn shell_for(list: &str, host: &str) -> Option<String> {
    let entries: Vec<&str> = list.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
    let own = entries.iter().find_map(|e| e.split_once('@').filter(|(_, h)| *h == host).map(|(p, _)| p));
    own.or_else(|| entries.iter().copied().find(|e| !e.contains('@'))).map(str::to_string)
}

/// What goes to the moms of a delivery whose commit is done: its frames, then each start
/// whose job is still running that start. A job deleted or requeued before its start went
/// out ends here, since no mom knows it; a start whose script could not be read is
/// requeued. Returns the frames to send now and the effects of those ends.
pub fn committed_delivery(state: &mut State, delivery: Delivery, now: i64) -> (MomFrames, Effects) {
    let Delivery { mut frames, launches, unreadable } = delivery;
    let mut follow = Effects::default();
    let mut settled = Vec::new();
    for launch in launches {
        match state.ending.get(&launch.key).copied() {
            None if state.job(launch.key).is_some_and(|j| j.state == JobState::Running) => {
                // Never a start without its script: the job goes back to the queue.
                if unreadable.contains(&launch.key) {
                    if !settled.contains(&launch.key) {
                        settled.push(launch.key);
                        follow.merge(crate::job::faults::requeue_unreadable(state, launch.key, now));
                    }
                    continue;
                }
                frames.push((launch.node, ToMom::RunJob { launch: Box::new(launch.launch) }));
            }
            Some(reason) if !settled.contains(&launch.key) => {
                settled.push(launch.key);
                follow.merge(match reason {
                    EndReason::Rerun => lost(state, launch.key, now),
                    EndReason::Delete => force_delete(state, launch.key, now),
                });
            }
            _ => {}
        }
    }
    (frames, follow)
}

/// The job `job_id` whose mother superior is `node`, if it is running there.
fn running_on(state: &State, node: &str, job_id: &str) -> Option<JobKey> {
    let key = key_of(job_id)?;
    let job = state.job(key)?;
    if !matches!(job.state, JobState::Running | JobState::Suspended | JobState::Exiting) {
        return None;
    }
    let exec: ExecVnode = job.get("exec_vnode", None)?.parse().ok()?;
    (exec.vnodes().first() == Some(&node)).then_some(key)
}

/// The mom says the job's shell is running.
pub fn job_started(state: &mut State, node: &str, job_id: &str, session_id: i64) -> Vec<StoreOp> {
    let Some(key) = running_on(state, node, job_id) else { return Vec::new() };
    state.starting.remove(&key);
    let ncpus = state.job(key).and_then(|j| j.get("Resource_List", Some("ncpus"))).unwrap_or("1").to_string();
    set_usage(state, key, &Usage { ncpus: ncpus.parse().unwrap_or(1), ..Usage::default() });
    let Some(job) = state.job_mut(key) else { return Vec::new() };
    if job.substate == SUBSTATE_PRERUN {
        job.substate = Substate::RUNNING;
    }
    job.attrs.set(job_idx!("session_id"), None, session_id.to_string());
    let ops = vec![job.put_op(None)];
    state.changes.jobs.insert(key, job_id.to_string());
    ops
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
    let Some(exec) = job.get("exec_vnode", None).and_then(|e| e.parse::<ExecVnode>().ok()) else {
        return Vec::new();
    };
    if !suspended {
        let exclusive = job_exclusive(state, job, &exec);
        crate::node::account(state, key, &job_id, &exec, exclusive, false, now);
    }
    state.starting.remove(&key);
    exec.vnodes().into_iter().map(|v| (v.to_string(), ToMom::ForgetJob { job_id: job_id.clone() })).collect()
}

/// Puts a job that was running back in the queue.
fn requeue(state: &mut State, key: JobKey, now: i64) -> Vec<StoreOp> {
    if key.index.is_some() {
        return crate::job::array::requeue_subjob(state, key, now);
    }
    let server_name = state.server_name.clone();
    let Some(job) = state.job_mut(key) else { return Vec::new() };
    job.state = JobState::Queued;
    job.substate = Substate::QUEUED;
    for def in [job_idx!("exec_host"), job_idx!("exec_vnode"), job_idx!("session_id"), job_idx!("stime")] {
        job.attrs.unset(def, None);
    }
    job.attrs.unset_all(job_idx!("resources_used"));
    job.attrs.set(job_idx!("etime"), None, now.to_string());
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
    let id = job.id(&server_name);
    let ops = vec![job.put_op(None)];
    state.changes.jobs.insert(key, id);
    state.changes.cycle = true;
    ops
}

/// Records a job's end: `Exit_status`, usage, comment; history or removal.
fn finish(
    state: &mut State,
    key: JobKey,
    exit_status: Option<i32>,
    usage: Option<&Usage>,
    deleted: bool,
    now: i64,
) -> Vec<StoreOp> {
    if let Some(usage) = usage {
        set_usage(state, key, usage);
    }
    let history = state.server_flag("job_history_enable", false);
    let Some(job_id) = state.job(key).map(|j| j.id(&state.server_name)) else { return Vec::new() };
    state.changes.jobs.insert(key, job_id.clone());
    state.changes.cycle = true;
    let Some(job) = state.job_mut(key) else { return Vec::new() };
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
    if let Some(index) = key.index {
        // A finished subjob is expired (`X`); its record stays while history is kept.
        job.state = JobState::Expired;
        job.substate = Substate::FINISHED;
        job.attrs.set(job_idx!("obittime"), None, now.to_string());
        let op = job.put_op(None);
        let record = state.subjobs.remove(&(key.seq, index));
        let mut ops = match record {
            Some(record) if history => {
                state.finished_subjobs.insert((key.seq, index), record);
                vec![op]
            }
            _ => vec![StoreOp::DeleteSubjob { seq: key.seq, index }],
        };
        ops.extend(crate::job::array::refresh_after_end(state, key.seq, now));
        return ops;
    }
    if history {
        job.state = JobState::Finished;
        job.substate = if deleted {
            Substate::TERMINATED
        } else if exit_status.is_some_and(|s| s != 0) {
            Substate::FAILED
        } else {
            Substate::FINISHED
        };
        let now = now.to_string();
        job.attrs.set(job_idx!("mtime"), None, now.as_str());
        job.attrs.set(job_idx!("obittime"), None, now.as_str());
        job.attrs.set(job_idx!("history_timestamp"), None, now.as_str());
        vec![job.put_op(None)]
    } else if let Some(index) = key.index {
        state.subjobs.remove(&(key.seq, index));
        vec![StoreOp::DeleteSubjob { seq: key.seq, index }]
    } else {
        state.jobs.remove(&key.seq);
        vec![StoreOp::DeleteJob { seq: key.seq }]
    }
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
    // -3 (retry), -11 (rerun), -20 (mother superior lost): PBS ended it to run again.
    let requeued = reason == Some(EndReason::Rerun) || matches!(exit_status, -3 | -11 | -20);
    let ops = if requeued {
        set_usage(state, key, usage);
        requeue(state, key, now)
    } else {
        finish(state, key, Some(exit_status), Some(usage), reason == Some(EndReason::Delete), now)
    };
    Effects { ops, to_moms: frames, launches: Vec::new() }
}

/// `kill_delay` of the job's queue, else the server's, else 10 s as OpenPBS.
fn kill_delay(state: &State, job: &Job) -> u32 {
    let queue = state.queue_index(&job.queue).and_then(|i| {
        state.queues[i].attrs.get_named(ObjectKind::Queue, "kill_delay", None).and_then(|v| v.parse().ok())
    });
    queue.or_else(|| state.server_attr("kill_delay", None).and_then(|v| v.parse().ok())).unwrap_or(10)
}

/// Starts ending a running job (qdel, qrerun): the mom kills it and reports the end.
pub fn begin_end(state: &mut State, key: JobKey, reason: EndReason) -> Effects {
    let Some(job) = state.job(key) else { return Effects::default() };
    let delay = kill_delay(state, job);
    let job_id = job.id(&state.server_name);
    let suspended = job.state == JobState::Suspended;
    let Some(exec) = job.get("exec_vnode", None).and_then(|e| e.parse::<ExecVnode>().ok()) else {
        return Effects::default();
    };
    let Some(ms) = exec.vnodes().first().map(|v| v.to_string()) else { return Effects::default() };
    let exclusive = job_exclusive(state, job, &exec);
    let mut frames = Vec::new();
    if suspended {
        // A stopped session cannot act on SIGTERM: wake it first, and it holds its
        // resources again until it ends.
        frames.push((ms.clone(), ToMom::SignalJob { job_id: job_id.clone(), signal: "resume".into() }));
        crate::node::account(state, key, &job_id, &exec, exclusive, true, chrono::Utc::now().timestamp());
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
    let ops = vec![job.put_op(None)];
    state.changes.jobs.insert(key, job_id);
    Effects { ops, to_moms: frames, launches: Vec::new() }
}

/// Ends a running job without waiting for its mom (`qdel -W force`): resources are freed
/// and the moms told to forget it.
pub fn force_delete(state: &mut State, key: JobKey, now: i64) -> Effects {
    state.ending.remove(&key);
    let frames = release(state, key, now);
    Effects { ops: finish(state, key, None, None, true, now), to_moms: frames, launches: Vec::new() }
}

/// A job whose mother superior was lost: requeued if rerunnable, else finished. A job
/// whose start its mom never confirmed has not run, and is requeued either way.
pub fn lost(state: &mut State, key: JobKey, now: i64) -> Effects {
    state.ending.remove(&key);
    let rerunnable = state.job(key).is_some_and(|j| {
        j.substate == SUBSTATE_PRERUN || j.get("Rerunable", None).and_then(pbs_core::attr::parse_bool).unwrap_or(true)
    });
    let frames = release(state, key, now);
    let ops = if rerunnable { requeue(state, key, now) } else { finish(state, key, Some(-20), None, false, now) };
    Effects { ops, to_moms: frames, launches: Vec::new() }
}

/// Jobs on nodes down longer than `node_fail_requeue` seconds (default 310; 0 disables it)
/// are requeued, or finished if not rerunnable, as OpenPBS does.
pub fn requeue_from_failed_nodes(state: &mut State, now: i64) -> Effects {
    let limit = state.server_attr("node_fail_requeue", None).and_then(|v| v.parse::<i64>().ok()).unwrap_or(310);
    if limit <= 0 {
        return Effects::default();
    }
    let failed: Vec<String> = state
        .node_rt
        .iter()
        .filter(|(_, rt)| !rt.up && rt.down_since.is_some_and(|t| now - t >= limit))
        .map(|(name, _)| name.clone())
        // Suspended jobs hold nothing on the node, but are lost with it too.
        .filter(|name| !jobs_on(state, name).is_empty())
        .collect();
    let mut effects = Effects::default();
    for node in failed {
        for key in jobs_on(state, &node) {
            let id = state.job(key).map(|j| j.id(&state.server_name)).unwrap_or_default();
            tracing::info!(object_type = "Job", object_name = id.as_str(), "requeued: node {node} failed");
            effects.merge(crate::job::faults::requeue_lost(state, key, now));
        }
    }
    effects
}

/// The ids of jobs whose mother superior is `node`, suspended ones included (they hold no
/// resources there, but their mom has them).
pub fn jobs_on(state: &State, node: &str) -> Vec<JobKey> {
    let mut keys: Vec<JobKey> = state
        .node_rt
        .get(node)
        .map(|rt| rt.jobs.iter().map(|(key, _, _)| *key).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|key| {
            state
                .job(*key)
                .and_then(|j| j.get("exec_vnode", None))
                .and_then(|e| e.parse::<ExecVnode>().ok())
                .is_some_and(|e| e.vnodes().first() == Some(&node))
        })
        .collect();
    keys.extend(crate::job::faults::suspended_on(state, node));
    keys
}

/// Suspends (`suspend = true`) or resumes a running job: its ncpus and other consumables
/// are released while it is stopped and taken again when it continues, as OpenPBS does.
pub fn suspend_resume(state: &mut State, key: JobKey, suspend: bool, now: i64) -> Result<Vec<StoreOp>, ReqError> {
    let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    let wanted = if suspend { JobState::Running } else { JobState::Suspended };
    if job.state != wanted {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let exec: ExecVnode =
        job.get("exec_vnode", None).and_then(|e| e.parse().ok()).ok_or_else(|| ReqError::new(Pbse::BADSTATE))?;
    let job_id = job.id(&state.server_name);
    let exclusive = job_exclusive(state, job, &exec);
    crate::node::account(state, key, &job_id, &exec, exclusive, !suspend, now);
    let Some(job) = state.job_mut(key) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
    if suspend {
        job.state = JobState::Suspended;
        job.substate = Substate::SUSPEND;
    } else {
        job.state = JobState::Running;
        job.substate = Substate::RUNNING;
    }
    job.attrs.set(job_idx!("mtime"), None, now.to_string());
    let ops = vec![job.put_op(None)];
    state.changes.jobs.insert(key, job_id);
    state.changes.cycle = true;
    crate::job::faults::note_suspended(state, key, suspend);
    Ok(ops)
}

/// Rebuilds what running jobs hold on nodes, and the arrays' counts, after a restart;
/// returns what must be written if an array turns out to be done.
pub fn recover(state: &mut State, now: i64) -> Vec<StoreOp> {
    let running: Vec<(JobKey, String, ExecVnode)> = state
        .jobs
        .values()
        .chain(state.subjobs.values())
        .filter(|j| matches!(j.state, JobState::Running | JobState::Exiting))
        .filter_map(|j| {
            let exec: ExecVnode = j.get("exec_vnode", None)?.parse().ok()?;
            Some((j.key(), j.id(&state.server_name), exec))
        })
        .collect();
    for (key, id, exec) in running {
        let exclusive = state.job(key).is_some_and(|j| job_exclusive(state, j, &exec));
        crate::node::account(state, key, &id, &exec, exclusive, true, now);
    }
    let suspended: Vec<JobKey> = state
        .jobs
        .values()
        .chain(state.subjobs.values())
        .filter(|j| j.state == JobState::Suspended)
        .map(Job::key)
        .collect();
    for key in suspended {
        crate::job::faults::note_suspended(state, key, true);
    }
    let arrays: Vec<u64> = state.jobs.values().filter(|j| j.array && !j.state.is_history()).map(|j| j.seq).collect();
    let ops = arrays.into_iter().flat_map(|seq| crate::job::array::refresh_after_end(state, seq, now)).collect();
    state.changes = Default::default();
    ops
}

/// Signal names qsig accepts besides numbers, without the `SIG` prefix.
const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM",
    "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",
    "PWR", "SYS",
];

fn valid_signal(signal: &str) -> bool {
    if let Ok(n) = signal.parse::<u32>() {
        return (1..=64).contains(&n);
    }
    let name = signal.strip_prefix("SIG").unwrap_or(signal);
    SIGNALS.contains(&name)
}

/// The mother superior's node of a running job.
pub(crate) fn mother_superior(job: &Job) -> Option<String> {
    let exec: ExecVnode = job.get("exec_vnode", None)?.parse().ok()?;
    exec.vnodes().first().map(|v| v.to_string())
}

/// SignalJob (qsig) over several ids: `suspend` and `resume` (operators and managers
/// only) stop and continue the whole job and release and take back its resources; any
/// other signal goes to the job's session.
pub fn signal_jobs(
    state: &mut State,
    ctx: &crate::request::Ctx<'_>,
    ids: &[String],
    signal: &str,
) -> (Vec<IdError>, Effects) {
    let signal = signal.trim().to_string();
    crate::request::per_key(state, ctx, ids, crate::request::ids::RangeRule::Running, |state, ctx, key| {
        let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
        if job.state.is_history() {
            return Err(ReqError::new(Pbse::HISTJOBID));
        }
        let lower = signal.to_ascii_lowercase();
        let admin = lower == "suspend" || lower == "resume";
        if admin && ctx.privilege < pbs_core::Privilege::Operator {
            return Err(ReqError::new(Pbse::PERM));
        }
        if !admin && !valid_signal(&signal) {
            return Err(ReqError::new(Pbse::UNKSIG));
        }
        if !matches!(job.state, JobState::Running | JobState::Suspended) || state.starting.contains(&key) {
            return Err(ReqError::new(Pbse::BADSTATE));
        }
        let ms = mother_superior(job).ok_or_else(|| ReqError::new(Pbse::BADSTATE))?;
        let job_id = job.id(&state.server_name);
        let ops = if admin { suspend_resume(state, key, lower == "suspend", ctx.now)? } else { Vec::new() };
        let sent = if admin { lower } else { signal.clone() };
        Ok(Effects { ops, to_moms: vec![(ms, ToMom::SignalJob { job_id, signal: sent })], launches: Vec::new() })
    })
}

/// RerunJob (qrerun) over several ids: operators and managers requeue running jobs;
/// the mom kills the job and the end puts it back in the queue. With `-W force` a job
/// whose mom cannot be reached is requeued at once.
pub fn rerun_jobs(
    state: &mut State,
    ctx: &crate::request::Ctx<'_>,
    ids: &[String],
    force: bool,
) -> (Vec<IdError>, Effects) {
    crate::request::per_key(state, ctx, ids, crate::request::ids::RangeRule::Running, |state, ctx, key| {
        if ctx.privilege < pbs_core::Privilege::Operator {
            return Err(ReqError::new(Pbse::PERM));
        }
        let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
        if job.state.is_history() {
            return Err(ReqError::new(Pbse::HISTJOBID));
        }
        if !matches!(job.state, JobState::Running | JobState::Suspended) {
            return Err(ReqError::new(Pbse::BADSTATE));
        }
        let rerunnable = job.get("Rerunable", None).and_then(pbs_core::attr::parse_bool).unwrap_or(true);
        if !rerunnable && !force {
            return Err(ReqError::new(Pbse::NORERUN));
        }
        let ms_up = mother_superior(job).and_then(|ms| state.node_rt.get(&ms)).is_some_and(|rt| rt.up);
        Ok(if force && !ms_up { lost(state, key, ctx.now) } else { begin_end(state, key, EndReason::Rerun) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_decode_escaped_commas() {
        let vars = decode_variables(r"PBS_O_HOME=/root,A=x\,y,B=,PBS_O_WORKDIR=/tmp");
        assert_eq!(
            vars,
            vec![
                ("PBS_O_HOME".to_string(), "/root".to_string()),
                ("A".to_string(), "x,y".to_string()),
                ("B".to_string(), String::new()),
                ("PBS_O_WORKDIR".to_string(), "/tmp".to_string()),
            ]
        );
    }

    #[test]
    fn shell_path_list_prefers_the_host_entry() {
        assert_eq!(shell_for("/bin/sh", "n1").as_deref(), Some("/bin/sh"));
        assert_eq!(shell_for("/bin/csh@n2,/bin/bash@n1,/bin/sh", "n1").as_deref(), Some("/bin/bash"));
        assert_eq!(shell_for("/bin/csh@n2,/bin/sh", "n1").as_deref(), Some("/bin/sh"));
        assert_eq!(shell_for("/bin/csh@n2", "n1"), None);
    }

    #[test]
    fn jsdl_lists() {
        let args = "<jsdl-hpcpa:Argument>1</jsdl-hpcpa:Argument><jsdl-hpcpa:Argument>a&amp;b</jsdl-hpcpa:Argument>";
        assert_eq!(jsdl_values(args, "jsdl-hpcpa:Argument"), vec!["1", "a&b"]);
    }

    #[test]
    fn finish_comments_follow_openpbs() {
        let run = Some("Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1)");
        assert_eq!(finish_comment(run, 0).unwrap(), "Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1) and finished");
        assert!(finish_comment(run, 1).unwrap().ends_with(" and failed"));
        assert!(finish_comment(run, -29).unwrap().ends_with(" and exceeded resource walltime"));
    }
}
