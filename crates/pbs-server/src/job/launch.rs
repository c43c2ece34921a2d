//! Starting jobs (qrun and the scheduler's runs): checked, marked running with their
//! resources held, and their launches handed to the moms once the run is committed.
//!
//! Everything here is a change to [`State`] made under its lock, returning the [`Effects`]
//! to carry out once it is committed.

use std::borrow::Cow;

use pbs_core::select::Select;
use pbs_core::{ExecVnode, JobState, Pbse};
use pbs_proto::mom::{JobLaunch, ToMom};

use crate::effects::{Delivery, Effects, Launch, MomFrames};
use crate::error::ReqError;
use crate::job::end::{force_delete, lost};
use crate::jobkey::JobKey;
use crate::state::request::JobRequest;
use crate::state::{EndReason, State};
use crate::store::StoreOp;

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

/// A job's select, as kept parsed (`state::request`), else one chunk of `ncpus=1`.
fn select_of(request: Option<&JobRequest>) -> Cow<'_, Select> {
    match request.and_then(JobRequest::plain) {
        Some(select) if !select.chunks().is_empty() => Cow::Borrowed(select),
        _ => Cow::Owned(Select::single(vec![("ncpus".to_string(), "1".to_string())])),
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
            .filter(|r| r.cmp() == pbs_core::select::Cmp::Eq && crate::node::consumable(state, r.name()))
            .map(|r| (r.name().to_string(), r.value().to_string()))
            .collect();
        out.chunks.push(vec![pbs_core::execvnode::VnodePart { vnode, resources }]);
    }
    out
}

/// What a qrun does once its rules pass.
pub enum Qrun {
    /// `-H`: the job runs where asked, with these effects.
    Run(Effects),
    /// `-H`: the run was refused once its runjob hooks' changes were made: those stay.
    Refused(Effects, ReqError),
    /// No `-H`: the scheduler places the job (its full id).
    AskScheduler(String),
}

/// RunJob (qrun): operators and managers only; the job (or a subjob, `12[3]`, from its
/// array's remaining indices) must be queued. With `-H` the job starts here and now, once
/// `before_run` (its runjob hooks' changes, given the job's full id) has been made.
pub fn qrun(
    state: &mut State,
    ctx: &crate::request::Ctx<'_>,
    job_id: &str,
    exec_vnode: Option<String>,
    before_run: impl FnOnce(&mut State, &str) -> Result<Effects, ReqError>,
) -> Result<Qrun, ReqError> {
    if ctx.privilege < pbs_core::Privilege::Operator {
        return Err(ReqError::new(Pbse::PERM));
    }
    let key = crate::request::ids::run_key(state, job_id)?;
    let queued = match (key.index, state.job(key)) {
        (_, Some(job)) => job.state == JobState::Queued && !job.array,
        (Some(index), None) => state.jobs.get(&key.seq).is_some_and(|parent| {
            matches!(parent.state, JobState::Queued | JobState::Begun) && parent.remaining().contains(index)
        }),
        (None, None) => false,
    };
    if !queued {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let full_id = match key.index {
        Some(index) => pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string(),
        None => state.job(key).map(|j| j.id(&state.server_name)).unwrap_or_default(),
    };
    match exec_vnode {
        Some(exec_vnode) => {
            let mut effects = before_run(state, &full_id)?;
            match run_job(state, key, &exec_vnode, ctx.now, None) {
                Ok(more) => effects.merge(more),
                Err(e) if effects.ops.is_empty() => return Err(e),
                Err(e) => return Ok(Qrun::Refused(effects, e)),
            }
            effects.merge(crate::job::array::settle(state, ctx.now, crate::job::parts::LIFE));
            Ok(Qrun::Run(effects))
        }
        None => Ok(Qrun::AskScheduler(full_id)),
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
///
/// A job with OR-ed selects runs `alternative` (the first when `None`, as `qrun -H`):
/// chosen here, once the record exists, so a subjob (whose record is made from its
/// array's just before) runs its alternative as a plain job does; a run refused after
/// the choice puts the OR-ed request back.
pub fn run_job(
    state: &mut State,
    key: JobKey,
    exec_vnode: &str,
    now: i64,
    alternative: Option<u32>,
) -> Result<Effects, ReqError> {
    // A server that qterm is stopping starts nothing more (a delayed stop waits for the
    // jobs already running).
    if state.stopping.is_some() {
        return Err(ReqError::new(Pbse::SVRDOWN));
    }
    let parsed: ExecVnode = exec_vnode.parse().map_err(|_| ReqError::new(Pbse::BADNODESPEC))?;
    let mut array_began = None;
    if let Some(index) = key.index {
        // A queued subjob has no record until it starts.
        if state.job(key).is_none() {
            check_nodes(state, &parsed)?;
            let first = state.jobs.get(&key.seq).is_some_and(|p| p.get("stime", None).is_none());
            crate::job::array::materialize(state, key.seq, index, now)?;
            // The array's own start is recorded before its first subjob's.
            if first {
                array_began = crate::accounting::started(state, JobKey::job(key.seq));
            }
        }
    }
    let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if job.state != JobState::Queued || job.array {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    crate::job::orselect::choose(state, key, alternative)?;
    start_chosen(state, key, parsed, array_began, now).inspect_err(|_| crate::job::orselect::restore(state, key))
}

/// [`run_job`] once the job's request is the one it runs with.
fn start_chosen(
    state: &mut State,
    key: JobKey,
    parsed: ExecVnode,
    array_began: Option<StoreOp>,
    now: i64,
) -> Result<Effects, ReqError> {
    let job = state.job(key).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    // The request as kept: read once, when its texts were set.
    let request = job.request_shared();
    let select = select_of(request.as_deref());
    check_capacity(state, &select, &parsed)?;
    let exec = complete_exec(state, &select, parsed);
    check_nodes(state, &exec)?;
    let exclusive = state.runs_exclusively(request.as_deref().and_then(|r| r.place.as_ref()), &exec);
    // A run_count a user set near the top of its range stays there.
    let run_count = job.get("run_count", None).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0).saturating_add(1);
    let run_count = u32::try_from(run_count).unwrap_or(u32::MAX);
    let placement = std::sync::Arc::new(crate::state::Placement { exec, exclusive });
    let mut effects = Effects { ops: array_began.into_iter().collect(), ..Effects::default() };
    let step = crate::job::life::Step::Started { placement: placement.clone(), run_count };
    crate::job::parts::LIFE.step(state, key, step, now, &mut effects);
    effects.launches = launches(state, key, &select, &placement.exec, run_count);
    Ok(effects)
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
    let first_chunk = select.chunks().first();
    let chunk_value =
        |name: &str| -> Option<u32> { first_chunk.and_then(|c| c.get(name)).and_then(|v| v.parse().ok()) };
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
    let mother_superior = job.mother_superior().unwrap_or_default();
    let shell = job.get("Shell_Path_List", None).and_then(|list| shell_for(list, mother_superior));
    // The uid is looked up once the run is committed, off the lock (`launch_owner`).
    let root_allowed = crate::launch_owner::root_named(state, job);
    let base = JobLaunch {
        job_id: job.id(&state.server_name),
        job_name: get("Job_Name"),
        user: get("euser"),
        uid: None,
        root_allowed,
        group: get("egroup"),
        queue: job.queue.to_string(),
        sister: false,
        script: String::new(),
        executable,
        arguments,
        shell,
        variables: pbs_core::variables::decode(job.get("Variable_List", None).unwrap_or("")),
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
        stagein: job.get("stagein", None).map(str::to_string),
        stageout: job.get("stageout", None).map(str::to_string),
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
    let Delivery { mut frames, launches, unreadable, notify: _ } = delivery;
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
                    EndReason::Rerun | EndReason::Checkpoint => lost(state, launch.key, now),
                    EndReason::Delete => force_delete(state, launch.key, now),
                });
            }
            _ => {}
        }
    }
    (frames, follow)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
