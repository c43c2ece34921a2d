//! Changing queued and running jobs: qalter (ModifyJob), qhold and qrls.

use pbs_core::attr::{ObjectKind, split_name};
use pbs_core::{JobState, Pbse};
use pbs_proto::{Attr, IdError};

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::{Proposal, Step};
use crate::job::submit::{alter_nodes, apply_resource_defaults, check_queue_limits, check_resource_rules};
use crate::jobkey::JobKey;
use crate::request::attrs::check_job_attr;
use crate::request::{Ctx, per_id};
use crate::state::{Job, State};

/// Handles ModifyJob (qalter) over several ids.
pub fn modify_jobs(state: &mut State, ctx: &Ctx<'_>, ids: &[String], attrs: &[Attr]) -> (Vec<IdError>, Effects) {
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
        let mut depend = None;
        let mut eligible_time = None;
        let mut job_set = None;
        for ((def, resource, value), Attr(name, _)) in checked.into_iter().zip(attrs) {
            let alter_running = ObjectKind::Job.attributes().get(def as usize).is_some_and(|d| d.alter_running)
                && resource.as_deref().is_none_or(|r| state.resources.get(r).is_none_or(|d| d.alter_running));
            if running && !alter_running {
                return Err(ReqError::attr(Pbse::MODATRRUN, name));
            }
            if def == job_idx!("depend") {
                // Merged into the job's list and acted on by `job::depend`, not set as sent.
                depend = Some(crate::job::depend::check_alter(state, seq, &value)?);
                continue;
            }
            if def == job_idx!("eligible_time") {
                // Accrues on from the new value (`state::accrual::alter`); only while the
                // server keeps eligible time.
                if !crate::state::accrual::enabled(state) {
                    return Err(ReqError::new(Pbse::ETEERROR));
                }
                eligible_time = Some(value);
                continue;
            }
            if def == job_idx!("job_set") {
                // Moved between sets by `job::jobset`, which writes the leader's id.
                let owner = job.get("euser", None).unwrap_or("");
                job_set = Some(crate::job::jobset::check(state, owner, &value, job.array)?);
                continue;
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
        let to_mom = if running { crate::job::altrun::check(state, ctx.privilege, job, &list)? } else { Vec::new() };
        let select_changed = attrs.iter().any(|a| a.0 == "Resource_List.select");
        let nodes_changed = attrs.iter().any(|a| a.0 == "Resource_List.nodes");
        let queue_index = state.queue_index(&job.queue).unwrap_or(0);
        if nodes_changed {
            let old_select = job.attrs.get(job_idx!("Resource_List"), Some("select")).map(str::to_string);
            alter_nodes(state, &mut list, attrs, old_select.as_deref())?;
        }
        let job_wide_changed = attrs.iter().any(|a| a.0 == "Resource_List.job_wide");
        if select_changed || nodes_changed || job_wide_changed {
            let given = select_changed || job_wide_changed;
            crate::job::orselect::apply_defaults(state, queue_index, &mut list, given, apply_resource_defaults)?;
        }
        check_queue_limits(state, queue_index, &list)?;
        crate::job::parts::LIFE.check(state, ctx, &Proposal::Altered { seq, attrs: &list })?;
        list.set(job_idx!("mtime"), None, ctx.now.to_string());
        let Some(job) = state.jobs.get_mut(&seq) else {
            return Err(ReqError::new(Pbse::UNKJOBID));
        };
        job.set_attrs(list, &mut state.requests);
        if let Some(value) = eligible_time {
            crate::state::accrual::alter(job, &value, ctx.now, &state.server_name);
        }
        if matches!(job.state, JobState::Queued | JobState::Held | JobState::Waiting) {
            settle_queued_state(job, ctx.now);
        }
        let others = match depend {
            Some(plan) => crate::job::depend::apply_alter(state, seq, plan, ctx.now),
            None => Vec::new(),
        };
        if let Some(join) = job_set {
            crate::job::jobset::moved(state, seq, join, ctx.now);
        }
        let mut out = Effects { to_moms: to_mom, ops: others, ..Effects::default() };
        crate::job::parts::LIFE.step(state, JobKey::job(seq), Step::Altered, ctx.now, &mut out);
        // The `a` record names what the request set, which only the verb knows.
        let Some(job) = state.jobs.get(&seq) else {
            return Err(ReqError::new(Pbse::UNKJOBID));
        };
        out.ops.extend(crate::accounting::altered(job, &job.id(&state.server_name), attrs));
        Ok(out)
    })
}

/// Puts a not-running job in Q, H or W from its holds and execution time.
fn settle_queued_state(job: &mut Job, now: i64) {
    let held = job.get("Hold_Types", None).is_some_and(|h| h != "n");
    let waiting = crate::job::deferred::execution_time(&job.attrs).is_some_and(|t| t > now);
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

/// Handles HoldJob (`hold = true`) and ReleaseJob (`hold = false`).
pub fn hold_jobs(
    state: &mut State,
    ctx: &Ctx<'_>,
    ids: &[String],
    hold_types: &str,
    hold: bool,
) -> (Vec<IdError>, Effects) {
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
        let value = crate::holds::written(|c| set.contains(&c));
        job.attrs.set(job_idx!("Hold_Types"), None, value.as_str());
        job.attrs.set(job_idx!("mtime"), None, ctx.now.to_string());
        // A begun array is held like a queued one: its queued subjobs wait, its running
        // ones go on; released, it is begun again.
        let begun_array = job.array && job.state == JobState::Begun;
        if begun_array || matches!(job.state, JobState::Queued | JobState::Held | JobState::Waiting) {
            settle_queued_state(job, ctx.now);
        }
        let step = if hold { Step::Held } else { Step::Released };
        let mut out = Effects::default();
        crate::job::parts::LIFE.step(state, JobKey::job(seq), step, ctx.now, &mut out);
        Ok(out)
    })
}
