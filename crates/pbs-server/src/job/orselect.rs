//! Jobs with OR-ed resource requests (`select="A||B"`, `job_wide`): checked and given their
//! defaults, `max_resc_req`, `min_resc_req` and `sched_job_wide` at submission; the
//! alternative the scheduler chose made the job's `Resource_List` when it runs, the OR-ed
//! request kept in `ORed_Resource_List` and put back when the job is requeued. The rules
//! between the texts are `pbs_core::orselect`'s; see docs/job-sets.md.

use pbs_core::Pbse;
use pbs_core::attr::ObjectKind;
use pbs_core::orselect::{OrSelect, OrSelectError, is_ored};

use crate::attrlist::{AttrList, resolve};
use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::state::State;

/// How the submission fills a plain request's defaults (`job::submit::apply_resource_defaults`),
/// applied here to each alternative in turn.
pub type ApplyDefaults = fn(&mut State, usize, &mut AttrList, bool) -> Result<(), ReqError>;

fn refused(error: OrSelectError) -> ReqError {
    ReqError::with_message(Pbse::BADATVAL, error.to_string())
}

/// Reads the request of `list`: `None` for a job with neither an OR-ed select nor job_wide.
fn parse(list: &AttrList) -> Result<Option<OrSelect>, ReqError> {
    let rl = job_idx!("Resource_List");
    let select = list.get(rl, Some("select"));
    let job_wide = list.get(rl, Some("job_wide"));
    if job_wide.is_none() && !select.is_some_and(is_ored) {
        return Ok(None);
    }
    let text = select.unwrap_or("1:ncpus=1");
    match OrSelect::parse(text, job_wide) {
        Ok(or) => Ok(Some(or)),
        Err(OrSelectError::Select(_)) => {
            tracing::error!(object_type = "Server", "failed to parse ORed select spec: {text}");
            Err(ReqError::attr(Pbse::BADATVAL, "Resource_List.select"))
        }
        Err(e) => Err(refused(e)),
    }
}

fn set_resources(state: &mut State, list: &mut AttrList, def: u8, pairs: &[(String, String)]) {
    list.unset_all(def);
    for (name, value) in pairs {
        let key = state.interner.intern(name);
        list.set(def, Some(key), value.as_str());
    }
}

/// A submission's resources: a plain request gets `apply` alone; an OR-ed one (or one
/// with job_wide) gets the design's checks, each alternative its defaults (`default_chunk`,
/// sums), `max_resc_req`/`min_resc_req` over them and `sched_job_wide`, and is queued with
/// the first alternative's `Resource_List` and every alternative's select.
pub fn apply_defaults(
    state: &mut State,
    queue_index: usize,
    list: &mut AttrList,
    select_given: bool,
    apply: ApplyDefaults,
) -> Result<(), ReqError> {
    let Some(mut or) = parse(list)? else {
        // A qalter may have taken the alternatives away.
        for def in [job_idx!("max_resc_req"), job_idx!("min_resc_req"), job_idx!("sched_job_wide")] {
            list.unset_all(def);
        }
        return apply(state, queue_index, list, select_given);
    };
    or.check_job_wide(&state.resources).map_err(refused)?;
    let rl = job_idx!("Resource_List");
    // Without a select the server makes one from the job-wide resources, as for any job.
    let has_select = list.get(rl, Some("select")).is_some();
    let mut first = None;
    let mut totals = Vec::with_capacity(or.alternatives().len());
    for k in 0..or.alternatives().len() {
        let (select_text, job_wide) = (or.alternatives()[k].select.to_string(), or.alternatives()[k].job_wide.clone());
        let mut scratch = list.clone();
        if has_select {
            // Each alternative's sums are its own (a qalter's list holds the first's).
            for derived in pbs_core::orselect::DERIVED {
                scratch.unset(rl, Some(derived));
            }
            let select_key = state.interner.intern("select");
            scratch.set(rl, Some(select_key), select_text);
        }
        for (name, value) in job_wide {
            let key = state.interner.intern(&name);
            scratch.set(rl, Some(key), value);
        }
        apply(state, queue_index, &mut scratch, select_given)?;
        // The alternative as its defaults made it (`default_chunk`).
        if let Some(select) = scratch.get(rl, Some("select")).and_then(|s| s.parse().ok()) {
            or.set_select(k, select);
        }
        totals.push(scratch.resources(rl).map(|(n, v)| (n.to_string(), v.to_string())).collect::<Vec<_>>());
        if k == 0 {
            first = Some(scratch);
        }
    }
    let Some(mut queued) = first else { return Err(ReqError::new(Pbse::INTERNAL)) };
    if or.is_ored() {
        let select_key = state.interner.intern("select");
        queued.set(rl, Some(select_key), or.select_text());
    }
    let (max, min) = pbs_core::orselect::extremes(&totals, &state.resources);
    set_resources(state, &mut queued, job_idx!("max_resc_req"), &max);
    set_resources(state, &mut queued, job_idx!("min_resc_req"), &min);
    if queued.get(rl, Some("job_wide")).is_some() {
        let merged = sched_job_wide(state, queue_index, &or);
        queued.set(job_idx!("sched_job_wide"), None, merged);
    }
    *list = queued;
    Ok(())
}

/// Each alternative's job_wide resources, then the queue's and the server's
/// `resources_default` of job-wide resources it does not name (the job's own win).
fn sched_job_wide(state: &State, queue_index: usize, or: &OrSelect) -> String {
    let defaults_of = |attrs: &AttrList, kind: ObjectKind| -> Vec<(String, String)> {
        resolve(kind, "resources_default")
            .map(|(def, _)| attrs.resources(def).map(|(r, v)| (r.to_string(), v.to_string())).collect())
            .unwrap_or_default()
    };
    let mut defaults = defaults_of(&state.queues[queue_index].attrs, ObjectKind::Queue);
    defaults.extend(defaults_of(&state.server, ObjectKind::Server));
    let per_alternative: Vec<Vec<(String, String)>> = or
        .alternatives()
        .iter()
        .map(|alternative| {
            let mut pairs = alternative.job_wide.clone();
            for (name, value) in &defaults {
                let job_wide = state.resources.get(name).is_some_and(|d| !d.flags.host_level)
                    && !matches!(name.as_str(), "select" | "job_wide" | "nodes" | "nodect");
                if job_wide && !pairs.iter().any(|(n, _)| n == name) {
                    pairs.push((name.clone(), value.clone()));
                }
            }
            pairs
        })
        .collect();
    pbs_core::orselect::job_wide_text(&per_alternative)
}

/// Makes alternative `k` (the first when the run does not say, as `qrun -H`) the job's
/// `Resource_List` before it runs, the OR-ed list kept in `ORed_Resource_List`. A job
/// without alternatives is left alone.
pub fn choose(state: &mut State, key: JobKey, k: Option<u32>) -> Result<(), ReqError> {
    let rl = job_idx!("Resource_List");
    let Some(job) = state.job(key) else { return Ok(()) };
    let Some(select) = job.attrs.get(rl, Some("select")).filter(|s| is_ored(s)) else { return Ok(()) };
    // As kept parsed (`state::request`), with the job-wide resources the alternatives run with.
    let Some(or) = job.request().and_then(|r| r.ored()) else {
        tracing::error!(object_type = "Server", "failed to parse ORed select spec: {select}");
        return Err(ReqError::attr(Pbse::BADATVAL, "Resource_List.select"));
    };
    let k = k.map_or(0, |k| k as usize);
    let chosen = or.resource_list(k, job.attrs.resources(rl)).ok_or_else(|| ReqError::new(Pbse::BADATVAL))?;
    let queued: Vec<(String, String)> = job.attrs.resources(rl).map(|(n, v)| (n.to_string(), v.to_string())).collect();
    let keep = job_idx!("ORed_Resource_List");
    let mut attrs = job.attrs.clone();
    set_resources(state, &mut attrs, keep, &queued);
    set_resources(state, &mut attrs, rl, &chosen);
    state.set_job_attrs(key, attrs);
    Ok(())
}

/// Puts back the OR-ed request a run replaced (a requeue, or a run refused after
/// [`choose`]), so every alternative is tried again.
pub fn restore(state: &mut State, key: JobKey) {
    let keep = job_idx!("ORed_Resource_List");
    let Some(job) = state.job(key) else { return };
    let kept: Vec<(String, String)> = job.attrs.resources(keep).map(|(n, v)| (n.to_string(), v.to_string())).collect();
    if kept.is_empty() {
        return;
    }
    let mut attrs = job.attrs.clone();
    set_resources(state, &mut attrs, job_idx!("Resource_List"), &kept);
    attrs.unset_all(keep);
    state.set_job_attrs(key, attrs);
}

/// The OR-ed requests' part of a job's life (`job::life`): a requeued run puts back the
/// request its choice replaced, before the job's write.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "OR-ed selects"
    }

    fn before(&self, state: &mut State, at: &crate::job::life::At<'_>, _out: &mut crate::effects::Effects) {
        if matches!(at.step, crate::job::life::Step::Requeued { .. }) && at.is_job() {
            restore(state, at.key);
        }
    }
}
