//! Running jobs: starting them on their moms, following what the moms report, ending,
//! deleting, signalling and requeuing them, and telling the scheduler what changed.
//!
//! Everything here is a change to [`State`] made under its lock, returning the store
//! operations to commit and the frames to send to moms; the callers do the I/O after the
//! lock is released.

use std::collections::HashMap;

use pbs_core::attr::ObjectKind;
use pbs_core::select::{Place, Select, Sharing};
use pbs_core::{ExecVnode, JobState, Pbse, Substate};
use pbs_proto::mom::{JobLaunch, ToMom, Usage};
use pbs_proto::sched::{Action, JobUpdate, SchedChange, SchedJob, SchedQueue, Snapshot, ToSched};
use pbs_proto::{Attr, IdError};
use tokio::sync::{mpsc, oneshot};

use crate::attrlist::resolve;
use crate::error::ReqError;
use crate::nodes;
use crate::state::{Job, JobKey, State, idx};
use crate::store::StoreOp;

/// `substate` of a job sent to its mom but not yet confirmed running (PRERUN).
pub const SUBSTATE_PRERUN: Substate = Substate(41);

/// Live links to the scheduler and the moms.
#[derive(Debug, Default)]
pub struct Links {
    /// The scheduler's change stream, when one is connected.
    pub sched: Option<crate::schedqueue::SchedSender>,
    /// Frames to each node's mom (queued while its link is down, up to [`MOM_QUEUE`]).
    pub moms: HashMap<String, mpsc::Sender<ToMom>>,
    /// `qrun` requests waiting for the scheduler's placement.
    pub qruns: HashMap<u64, oneshot::Sender<Result<(), ReqError>>>,
    /// The next `qrun` correlation number.
    pub next_qrun: u64,
}

/// Frames that may wait for one node's mom. They are queued under the state lock, where
/// nothing may wait, so past this a frame is dropped with an error in the log rather than
/// the server's memory growing for as long as a mom is away while users signal or delete
/// its jobs. Only a mom unreachable through tens of thousands of requests fills it; its
/// `NodeStatus` at reconnection then settles the jobs that ended meanwhile.
pub const MOM_QUEUE: usize = 65536;

/// Why a running job is being ended by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// qdel: the job finishes (history or gone).
    Delete,
    /// qrerun or node failure: the job goes back to the queue.
    Rerun,
}

/// A job start to send once its run is committed: the script is read from the store then.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The job (its array's script for a subjob).
    pub key: JobKey,
    /// The node whose mom gets it.
    pub node: String,
    /// What to send (script filled in later for the mother superior).
    pub launch: JobLaunch,
}

/// Frames for moms, by node name.
pub type MomFrames = Vec<(String, ToMom)>;

/// Hands frames to the moms' link tasks (queued while a link is down).
pub fn send_frames(state: &mut State, frames: MomFrames) {
    for (node, frame) in frames {
        match state.links.moms.get(&node) {
            Some(tx) => {
                if let Err(mpsc::error::TrySendError::Full(frame)) = tx.try_send(frame) {
                    tracing::error!(
                        object_type = "Node",
                        object_name = node.as_str(),
                        "{MOM_QUEUE} frames already wait for this node's mom: dropped {}",
                        match frame {
                            ToMom::RunJob { launch } => format!("the start of {}", launch.job_id),
                            ToMom::SignalJob { job_id, .. } => format!("a signal to {job_id}"),
                            ToMom::KillJob { job_id, .. } => format!("the kill of {job_id}"),
                            ToMom::ForgetJob { job_id } => format!("the forget of {job_id}"),
                            ToMom::ModifyJob { job_id, .. } => format!("the new limits of {job_id}"),
                            ToMom::Ping => "a ping".to_string(),
                        }
                    );
                }
            }
            None => tracing::warn!(object_type = "Node", object_name = node.as_str(), "no link to this node's mom"),
        }
    }
}

/// Holds the ForgetJob frames among `frames` until their job's end is committed (see
/// [`release_forgets`]); a new start of the same job on that node sends one ahead.
pub fn hold_forgets(state: &mut State, frames: &MomFrames) {
    for (node, frame) in frames {
        if let ToMom::ForgetJob { job_id } = frame {
            state.forgets_held.insert((node.clone(), job_id.clone()));
        }
    }
}

/// Once the end is committed: the frames still owed. A forget already sent ahead of a
/// new start is dropped, since sent now it would end that new run.
pub fn release_forgets(state: &mut State, frames: MomFrames) -> MomFrames {
    frames
        .into_iter()
        .filter(|(node, frame)| match frame {
            ToMom::ForgetJob { job_id } => state.forgets_held.remove(&(node.clone(), job_id.clone())),
            _ => true,
        })
        .collect()
}

/// The key of a job id: a plain job or array parent (`12.server`, `12`, `12[]`), or one
/// subjob (`12[3]`). A range (`12[1-5]`) names no single job.
pub fn key_of(job_id: &str) -> Option<JobKey> {
    let parsed: pbs_core::JobId = job_id.parse().ok()?;
    match parsed.array() {
        pbs_core::ArrayPart::None | pbs_core::ArrayPart::Parent => Some(JobKey::job(parsed.seq())),
        pbs_core::ArrayPart::Index(i) => Some(JobKey::subjob(parsed.seq(), *i)),
        pbs_core::ArrayPart::Range(_) => None,
    }
}

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

/// The chunks of a job's select, one entry per chunk (counts expanded).
fn expanded_chunks(job: &Job) -> Vec<Vec<(String, String)>> {
    let select = job.get("Resource_List", Some("select")).and_then(|s| s.parse::<Select>().ok());
    let mut out = Vec::new();
    if let Some(select) = select {
        for chunk in select.chunks() {
            for _ in 0..chunk.count().max(1) {
                out.push(chunk.resources().to_vec());
            }
        }
    }
    if out.is_empty() {
        out.push(vec![("ncpus".to_string(), "1".to_string())]);
    }
    out
}

/// Completes an exec_vnode given as bare names (`qrun -H n1+n2`): each chunk of the job's
/// select goes to the named vnodes in turn, with the chunk's consumable resources.
fn complete_exec(state: &State, job: &Job, exec: ExecVnode) -> ExecVnode {
    if exec.parts().any(|p| !p.resources.is_empty()) {
        return exec;
    }
    let names: Vec<String> = exec.parts().map(|p| p.vnode.clone()).collect();
    let chunks = expanded_chunks(job);
    let mut out = ExecVnode::default();
    for (i, chunk) in chunks.iter().enumerate() {
        let vnode = names[i % names.len().max(1)].clone();
        let resources =
            chunk.iter().filter(|(r, _)| nodes::consumable(state, r)).map(|(r, v)| (r.clone(), v.clone())).collect();
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

/// Every vnode must exist, be up and not offline.
fn check_nodes(state: &State, exec: &ExecVnode) -> Result<(), ReqError> {
    for name in exec.vnodes() {
        let node = state.nodes.iter().find(|n| n.name == name).ok_or_else(|| ReqError::new(Pbse::UNKNODE))?;
        let up = state.node_rt.get(name).is_some_and(|rt| rt.up);
        if !up || nodes::is_offline(node) {
            return Err(ReqError::new(Pbse::RESCUNAV));
        }
    }
    Ok(())
}

/// Starts a queued job on `exec_vnode`: checks, marks it running, holds its resources.
/// Returns the store operations and the launches to send once they are committed; for a
/// subjob, the caller adds [`crate::arrays::settle`]'s operations.
pub fn run_job(
    state: &mut State,
    key: JobKey,
    exec_vnode: &str,
    now: i64,
) -> Result<(Vec<StoreOp>, Vec<Launch>), ReqError> {
    let parsed: ExecVnode = exec_vnode.parse().map_err(|_| ReqError::new(Pbse::BADNODESPEC))?;
    if let Some(index) = key.index {
        // A queued subjob has no record until it starts.
        if state.job(key).is_none() {
            check_nodes(state, &parsed)?;
            crate::arrays::materialize(state, key.seq, index, now)?;
        }
    }
    let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if job.state != JobState::Queued || job.array {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let exec = complete_exec(state, job, parsed);
    check_nodes(state, &exec)?;
    let exclusive = job_exclusive(state, job, &exec);
    let exec_text = exec.to_string();
    let job_id = job.id(&state.server_name);
    let run_count: u32 = job.get("run_count", None).and_then(|v| v.parse().ok()).unwrap_or(0) + 1;
    nodes::account(state, key, &job_id, &exec, exclusive, true, now);
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
        // Brought up to date once per batch of starts: see `arrays::settle`.
        state.arrays_to_refresh.insert(key.seq);
    }
    state.starting.insert(key);
    state.changes.jobs.insert(key, job_id.clone());
    let launches = launches(state, key, &exec, run_count);
    tracing::info!(object_type = "Job", object_name = job_id.as_str(), "Job run on {exec_text}");
    Ok((ops, launches))
}

fn launches(state: &State, key: JobKey, exec: &ExecVnode, run_count: u32) -> Vec<Launch> {
    let Some(job) = state.job(key) else { return Vec::new() };
    let get = |name: &str| job.get(name, None).unwrap_or("").to_string();
    let chunks = expanded_chunks(job);
    let mut nodefile = Vec::new();
    for (i, chunk) in exec.chunks.iter().enumerate() {
        let wanted = chunks.get(i);
        let ncpus: u64 =
            wanted.and_then(|c| c.iter().find(|(r, _)| r == "ncpus")).and_then(|(_, v)| v.parse().ok()).unwrap_or(1);
        let mpiprocs: u64 = wanted
            .and_then(|c| c.iter().find(|(r, _)| r == "mpiprocs"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(if ncpus > 0 { 1 } else { 0 });
        if let Some(first) = chunk.first() {
            for _ in 0..mpiprocs {
                nodefile.push(first.vnode.clone());
            }
        }
    }
    let first_chunk = chunks.first().cloned().unwrap_or_default();
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
        mem: job.get("Resource_List", Some("mem")).and_then(nodes::amount),
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
        nodes::account(state, key, &job_id, &exec, exclusive, false, now);
    }
    state.starting.remove(&key);
    exec.vnodes().into_iter().map(|v| (v.to_string(), ToMom::ForgetJob { job_id: job_id.clone() })).collect()
}

/// Puts a job that was running back in the queue.
fn requeue(state: &mut State, key: JobKey, now: i64) -> Vec<StoreOp> {
    if key.index.is_some() {
        return crate::arrays::requeue_subjob(state, key, now);
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
        ops.extend(crate::arrays::refresh_after_end(state, key.seq, now));
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
pub fn job_ended(
    state: &mut State,
    node: &str,
    job_id: &str,
    exit_status: i32,
    usage: &Usage,
    now: i64,
) -> (Vec<StoreOp>, MomFrames) {
    let Some(key) = running_on(state, node, job_id) else {
        // Not ours (any more): let the mom drop it.
        return (Vec::new(), vec![(node.to_string(), ToMom::ForgetJob { job_id: job_id.to_string() })]);
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
    (ops, frames)
}

/// `kill_delay` of the job's queue, else the server's, else 10 s as OpenPBS.
fn kill_delay(state: &State, job: &Job) -> u32 {
    let queue = state.queue_index(&job.queue).and_then(|i| {
        state.queues[i].attrs.get_named(ObjectKind::Queue, "kill_delay", None).and_then(|v| v.parse().ok())
    });
    queue.or_else(|| state.server_attr("kill_delay", None).and_then(|v| v.parse().ok())).unwrap_or(10)
}

/// Starts ending a running job (qdel, qrerun): the mom kills it and reports the end.
pub fn begin_end(state: &mut State, key: JobKey, reason: EndReason) -> (Vec<StoreOp>, MomFrames) {
    let Some(job) = state.job(key) else { return (Vec::new(), Vec::new()) };
    let delay = kill_delay(state, job);
    let job_id = job.id(&state.server_name);
    let suspended = job.state == JobState::Suspended;
    let Some(exec) = job.get("exec_vnode", None).and_then(|e| e.parse::<ExecVnode>().ok()) else {
        return (Vec::new(), Vec::new());
    };
    let Some(ms) = exec.vnodes().first().map(|v| v.to_string()) else { return (Vec::new(), Vec::new()) };
    let exclusive = job_exclusive(state, job, &exec);
    let mut frames = Vec::new();
    if suspended {
        // A stopped session cannot act on SIGTERM: wake it first, and it holds its
        // resources again until it ends.
        frames.push((ms.clone(), ToMom::SignalJob { job_id: job_id.clone(), signal: "resume".into() }));
        nodes::account(state, key, &job_id, &exec, exclusive, true, chrono::Utc::now().timestamp());
    }
    frames.push((ms, ToMom::KillJob { job_id: job_id.clone(), kill_delay: delay }));
    state.ending.insert(key, reason);
    let Some(job) = state.job_mut(key) else { return (Vec::new(), frames) };
    if reason == EndReason::Delete {
        job.state = JobState::Exiting;
        job.substate = Substate::EXITING;
    } else if suspended {
        job.state = JobState::Running;
        job.substate = Substate::RUNNING;
    }
    let ops = vec![job.put_op(None)];
    state.changes.jobs.insert(key, job_id);
    (ops, frames)
}

/// Ends a running job without waiting for its mom (`qdel -W force`): resources are freed
/// and the moms told to forget it.
pub fn force_delete(state: &mut State, key: JobKey, now: i64) -> (Vec<StoreOp>, MomFrames) {
    state.ending.remove(&key);
    let frames = release(state, key, now);
    (finish(state, key, None, None, true, now), frames)
}

/// A job whose mother superior was lost: requeued if rerunnable, else finished. A job
/// whose start its mom never confirmed has not run, and is requeued either way.
pub fn lost(state: &mut State, key: JobKey, now: i64) -> (Vec<StoreOp>, MomFrames) {
    state.ending.remove(&key);
    let rerunnable = state.job(key).is_some_and(|j| {
        j.substate == SUBSTATE_PRERUN || j.get("Rerunable", None).and_then(pbs_core::attr::parse_bool).unwrap_or(true)
    });
    let frames = release(state, key, now);
    let ops = if rerunnable { requeue(state, key, now) } else { finish(state, key, Some(-20), None, false, now) };
    (ops, frames)
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
    keys.extend(crate::faults::suspended_on(state, node));
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
    nodes::account(state, key, &job_id, &exec, exclusive, !suspend, now);
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
    crate::faults::note_suspended(state, key, suspend);
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
        nodes::account(state, key, &id, &exec, exclusive, true, now);
    }
    let suspended: Vec<JobKey> = state
        .jobs
        .values()
        .chain(state.subjobs.values())
        .filter(|j| j.state == JobState::Suspended)
        .map(Job::key)
        .collect();
    for key in suspended {
        crate::faults::note_suspended(state, key, true);
    }
    let arrays: Vec<u64> = state.jobs.values().filter(|j| j.array && !j.state.is_history()).map(|j| j.seq).collect();
    let ops = arrays.into_iter().flat_map(|seq| crate::arrays::refresh_after_end(state, seq, now)).collect();
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
    ctx: &crate::jobs::Ctx<'_>,
    ids: &[String],
    signal: &str,
) -> (Vec<IdError>, Vec<StoreOp>) {
    let signal = signal.trim().to_string();
    crate::jobs::per_key(state, ctx, ids, crate::arrays::RangeRule::Running, |state, ctx, key| {
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
        send_frames(state, vec![(ms, ToMom::SignalJob { job_id, signal: sent })]);
        Ok(ops)
    })
}

/// RerunJob (qrerun) over several ids: operators and managers requeue running jobs;
/// the mom kills the job and the end puts it back in the queue. With `-W force` a job
/// whose mom cannot be reached is requeued at once.
pub fn rerun_jobs(
    state: &mut State,
    ctx: &crate::jobs::Ctx<'_>,
    ids: &[String],
    force: bool,
) -> (Vec<IdError>, Vec<StoreOp>) {
    crate::jobs::per_key(state, ctx, ids, crate::arrays::RangeRule::Running, |state, ctx, key| {
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
        let (ops, frames) =
            if force && !ms_up { lost(state, key, ctx.now) } else { begin_end(state, key, EndReason::Rerun) };
        send_frames(state, frames);
        Ok(ops)
    })
}

// ---- the scheduler's view ------------------------------------------------------------

/// The scheduler's view of a job.
pub fn sched_job(state: &State, job: &Job) -> SchedJob {
    let time = |name: &str| job.get(name, None).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    let resources: Vec<(String, String)> =
        job.attrs.resources(job_idx!("Resource_List")).map(|(r, v)| (r.to_string(), v.to_string())).collect();
    let mut attrs = Vec::new();
    for name in ["max_run_subjobs", "array_indices_remaining", "array_indices_submitted", "Rerunable", "run_count"] {
        if let Some(value) = job.get(name, None) {
            attrs.push(Attr::new(name, value));
        }
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

/// The whole mirror, sent when a scheduler connects.
pub fn snapshot(state: &State) -> Snapshot {
    Snapshot {
        server_name: state.server_name.clone(),
        server: state.server.to_wire(ObjectKind::Server),
        sched: sched_attrs(state),
        queues: (0..state.queues.len()).map(|i| sched_queue(state, i)).collect(),
        nodes: state.nodes.iter().map(|n| nodes::sched_node(state, n)).collect(),
        jobs: state
            .jobs
            .values()
            .chain(state.subjobs.values())
            .filter(|j| !j.state.is_history())
            .map(|j| sched_job(state, j))
            .collect(),
    }
}

/// Sends what changed to the scheduler (if one is connected) and clears the record.
/// Called under the state lock after every change, so the scheduler sees changes in the
/// order they were made.
pub fn flush(state: &mut State) {
    // Entity limits recount the jobs in the record before it is sent or dropped.
    crate::entity_limits::note_changes(state);
    match state.links.sched.as_ref() {
        None => state.changes = Default::default(),
        // The queue is full: the changes wait here, coalescing, until the link's writer
        // has room (see `schedqueue`).
        Some(link) if !link.has_room() => link.note_backlog(),
        Some(_) => flush_changes(state),
    }
}

/// Queues the pending changes for the scheduler now (the caller saw room for them).
pub fn flush_changes(state: &mut State) {
    let pending = std::mem::take(&mut state.changes);
    if state.links.sched.is_none() {
        return;
    }
    let mut changes = Vec::new();
    if pending.objects {
        changes.push(SchedChange::Server { attrs: state.server.to_wire(ObjectKind::Server) });
        changes.push(SchedChange::Sched { attrs: sched_attrs(state) });
        for i in 0..state.queues.len() {
            changes.push(SchedChange::Queue { queue: sched_queue(state, i) });
        }
        for node in &state.nodes {
            changes.push(SchedChange::Node { node: Box::new(nodes::sched_node(state, node)) });
        }
    } else {
        for name in &pending.nodes {
            match state.nodes.iter().find(|n| n.name == *name) {
                Some(node) => changes.push(SchedChange::Node { node: Box::new(nodes::sched_node(state, node)) }),
                None => changes.push(SchedChange::NodeGone { name: name.clone() }),
            }
        }
    }
    for (key, id) in &pending.jobs {
        match state.job(*key) {
            Some(job) if !job.state.is_history() => {
                changes.push(SchedChange::Job { job: Box::new(sched_job(state, job)) });
            }
            _ => changes.push(SchedChange::JobGone { id: id.clone() }),
        }
    }
    if changes.is_empty() && !pending.cycle {
        return;
    }
    if let Some(link) = state.links.sched.as_mut()
        && link.send_changes(ToSched::Changes { changes, cycle: pending.cycle }).is_err()
    {
        state.links.sched = None;
    }
}

/// Applies one cycle's decisions: runs (each checked again) and attribute updates, in
/// the order the scheduler gave them (pbs_sched sends its updates before its runs, so a
/// run's own comment stands and a walltime is set while its job is still queued).
pub fn apply_decisions(state: &mut State, actions: &[Action], now: i64) -> (Vec<IdError>, Vec<StoreOp>, Vec<Launch>) {
    let mut errors = Vec::new();
    let mut ops = Vec::new();
    let mut all_launches = Vec::new();
    for action in actions {
        match action {
            Action::Update(update) => match apply_update(state, update) {
                Ok(more) => ops.extend(more),
                Err(e) => errors.push(IdError { id: update.job_id.clone(), code: e.code.0, message: e.message }),
            },
            Action::Run(decision) => {
                let result = key_of(&decision.job_id)
                    .ok_or_else(|| ReqError::new(Pbse::UNKJOBID))
                    .and_then(|key| run_job(state, key, &decision.exec_vnode, now));
                match result {
                    Ok((more, launches)) => {
                        ops.extend(more);
                        all_launches.extend(launches);
                    }
                    Err(e) => errors.push(IdError { id: decision.job_id.clone(), code: e.code.0, message: e.message }),
                }
            }
        }
    }
    ops.extend(crate::arrays::settle(state, now));
    (errors, ops, all_launches)
}

fn apply_update(state: &mut State, update: &JobUpdate) -> Result<Vec<StoreOp>, ReqError> {
    let key = key_of(&update.job_id).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    let mut resolved = Vec::new();
    for Attr(name, value) in &update.attrs {
        let (def, resource) = resolve(ObjectKind::Job, name).ok_or_else(|| ReqError::attr(Pbse::NOATTR, name))?;
        resolved.push((def, resource.map(|r| state.interner.intern(r)), value.clone()));
    }
    let job = state.job_mut(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if job.state.is_history() {
        return Err(ReqError::new(Pbse::HISTJOBID));
    }
    // The scheduler holds the cluster key, not the users' trust: it may write only what
    // a scheduler owns, and one attribute beyond that refuses its whole update.
    for ((def, resource, value), Attr(name, _)) in resolved.iter().zip(&update.attrs) {
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
    for (def, resource, value) in resolved {
        if value.is_empty() {
            job.attrs.unset(def, resource.as_deref());
        } else {
            job.attrs.set(def, resource, value);
        }
    }
    let ops = vec![job.put_op(None)];
    state.changes.jobs.insert(key, update.job_id.clone());
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
