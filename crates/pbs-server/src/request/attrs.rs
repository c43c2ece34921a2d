//! Checking and canonicalizing attribute values a client sends, and comparing values of one
//! resource.

use std::cmp::Ordering;

use pbs_core::attr::{AttrType, ObjectKind, bool_text, parse_bool, split_name};
use pbs_core::jobattr;
use pbs_core::{ArrayRange, Duration, Pbse, Size};

use crate::error::ReqError;
use crate::request::Ctx;
use crate::state::State;
use crate::state::request::Asked;

/// Validates one attribute a client wants to set on a job and returns (def, resource,
/// canonical value). Errors carry OpenPBS's `<text> <attribute>` message. Whoever sends
/// it, a value qsub refuses is refused with qsub's code (`pbs_core::jobattr`).
pub fn check_job_attr(
    state: &State,
    ctx: &Ctx<'_>,
    name: &str,
    value: &str,
) -> Result<(u8, Option<String>, String), ReqError> {
    let (base, resource) = split_name(name);
    let Some((index, def)) = ObjectKind::Job.find(base) else {
        return Err(ReqError::attr(Pbse::NOATTR, name));
    };
    let privilege = ctx.privilege_for(name, value);
    if !def.writable_by(privilege) {
        return Err(ReqError::attr(Pbse::ATTRRO, name));
    }
    if resource.is_none() {
        // A name's characters stay qsub's rule only: a raw client may name a job with any
        // (the log escapes them); its length, checked before the server's own size limit,
        // gets qsub's JOBNBIG.
        let checked = if def.name == "Job_Name" {
            jobattr::check_job_name_length(value)
        } else {
            jobattr::check_job_value(def.name, value)
        };
        checked.map_err(|code| ReqError::attr(code, name))?;
    }
    crate::size_limits::check_value(ObjectKind::Job, name, value)?;
    let index = u8::try_from(index).map_err(|_| ReqError::new(Pbse::INTERNAL))?;
    if def.atype == AttrType::Resources {
        let Some(resource) = resource else {
            return Err(ReqError::attr(Pbse::BADATVAL, name));
        };
        let Some(rdef) = state.resources.get(resource) else {
            return Err(ReqError::attr(Pbse::UNKRESC, name));
        };
        if !rdef.writable_by(privilege) {
            return Err(ReqError::attr(Pbse::ATTRRO, name));
        }
        let canonical = if rdef.name == "select" {
            // Read once for all its checks: the privilege's first, then the conditions'.
            let asked = parse_select(value, name)?;
            crate::privilege::check_select(state, privilege, &asked)?;
            check_select_conditions(state, &asked)?;
            match asked {
                Asked::Plain(select) => select.to_string(),
                Asked::Ored(or) => or.select_text(),
            }
        } else {
            rdef.normalize(value).map_err(|_| ReqError::attr(Pbse::BADATVAL, name))?
        };
        if rdef.name == "preempt_targets" {
            use pbs_core::preempt::{BadTargets, Targets};
            let known_queue = |q: &str| state.queues.iter().any(|queue| queue.name == q);
            Targets::parse(&canonical, |r| state.resources.get(r).is_some(), known_queue).map_err(|e| match e {
                BadTargets::Syntax => ReqError::attr(Pbse::BADATVAL, name),
                BadTargets::UnknownResource(_) => ReqError::attr(Pbse::UNKRESC, name),
                BadTargets::UnknownQueue(_) => ReqError::attr(Pbse::UNKQUE, name),
            })?;
        }
        return Ok((index, Some(rdef.name.clone()), canonical));
    }
    if resource.is_some() {
        return Err(ReqError::attr(Pbse::NOATTR, name));
    }
    let mut canonical = normalize_value(def.atype, value).ok_or_else(|| ReqError::attr(Pbse::BADATVAL, name))?;
    if def.name == "Hold_Types" {
        // Kept as OpenPBS writes it back, whatever order the letters came in.
        canonical = crate::holds::written(|c| canonical.contains(c));
    }
    if def.name == "depend" {
        // As qsub sends it: every id with its server.
        canonical = pbs_core::depend::expand(&canonical, &state.server_name)
            .map_err(|_| ReqError::attr(Pbse::BADATVAL, name))?;
        // Completed, it is held to the limit the request's own value had.
        crate::size_limits::check_value(ObjectKind::Job, name, &canonical)?;
    }
    // The server's own rules, beyond qsub's.
    let valid = match def.name {
        "max_run_subjobs" => canonical.parse::<i64>().is_ok_and(|n| n >= 0),
        "array_indices_submitted" => canonical.parse::<ArrayRange>().is_ok(),
        _ => true,
    };
    if !valid {
        return Err(ReqError::attr(Pbse::BADATVAL, name));
    }
    Ok((index, None, canonical))
}

/// A select value as a client sends it, read once (as `ResourceDef::normalize` reads it):
/// an OR-ed one with too many alternatives gets its own message, any other that does not
/// read PBSE_BADATVAL.
fn parse_select(value: &str, name: &str) -> Result<Asked, ReqError> {
    if !pbs_core::orselect::is_ored(value) {
        return value.parse().map(Asked::Plain).map_err(|_| ReqError::attr(Pbse::BADATVAL, name));
    }
    pbs_core::orselect::OrSelect::parse(value, None).map(Asked::Ored).map_err(|e| {
        tracing::error!(object_type = "Server", "failed to parse ORed select spec: {value}");
        match e {
            pbs_core::orselect::OrSelectError::TooMany => ReqError::with_message(Pbse::BADATVAL, e.to_string()),
            _ => ReqError::attr(Pbse::BADATVAL, name),
        }
    })
}

/// A select's conditions (`color!=green`): none on a consumable (PBSE_CONSUMABLE_OP, the
/// design's `Consumable resource can only be requested with = operator`), and values the
/// resource can hold (PBSE_BADATVAL). Checked chunk by chunk, in every alternative of an
/// OR-ed select, for any client.
fn check_select_conditions(state: &State, asked: &Asked) -> Result<(), ReqError> {
    asked.selects().try_for_each(|select| {
        state.resources.check_select_conditions(select).map_err(|e| match e {
            pbs_core::resource::ConditionError::Consumable => ReqError::new(Pbse::CONSUMABLE_OP),
            pbs_core::resource::ConditionError::BadValue(_) => ReqError::attr(Pbse::BADATVAL, "Resource_List.select"),
        })
    })
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
