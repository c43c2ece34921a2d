//! Per-resource privileges on jobs: which resources a requester may name in a chunk and
//! which ones a status hides from them (custom resource flags `i` and `r`, as OpenPBS's
//! resource permissions). Whether a resource may be set is `ResourceDef::writable_by`.

use pbs_core::attr::{ObjectKind, Privilege, split_name};
use pbs_core::{Pbse, Select};
use pbs_proto::Criterion;

use crate::error::ReqError;
use crate::state::State;
use crate::state::request::Asked;

/// Refuses a `select` naming a resource the requester may not see (an `i` resource for
/// an ordinary user): PBSE_INVALSELECTRESC with the resource, as OpenPBS's select check;
/// in every alternative of an OR-ed select.
pub fn check_select(state: &State, privilege: Privilege, asked: &Asked) -> Result<(), ReqError> {
    if privilege >= Privilege::Operator || state.resources.invisible().is_empty() {
        return Ok(());
    }
    for chunk in asked.selects().flat_map(Select::chunks) {
        for resource in chunk.resources().iter().map(|r| r.name()) {
            if state.resources.get(resource).is_some_and(|d| !d.readable_by(privilege)) {
                return Err(ReqError::attr(Pbse::INVALSELECTRESC, &format!("Resource_List.{resource}")));
            }
        }
    }
    Ok(())
}

/// Refuses a qselect on what the requester may not read, so a selection cannot probe a
/// value a status hides: an attribute above their privilege (PBSE_PERM) or an `i`
/// resource for an ordinary user (PBSE_ATTRRO, as OpenPBS decodes it with the user's
/// rights).
pub fn check_criteria(state: &State, privilege: Privilege, criteria: &[Criterion]) -> Result<(), ReqError> {
    for criterion in criteria {
        let (base, resource) = split_name(&criterion.attr);
        if ObjectKind::Job.find(base).is_some_and(|(_, def)| !def.readable_by(privilege)) {
            return Err(ReqError::new(Pbse::PERM));
        }
        if resource.is_some_and(|r| hidden_resources(state, privilege).iter().any(|h| h == r)) {
            return Err(ReqError::attr(Pbse::ATTRRO, &criterion.attr));
        }
    }
    Ok(())
}

/// The resource names a status must leave out for `privilege` (none for operators and
/// managers, and none at all on most servers).
pub fn hidden_resources(state: &State, privilege: Privilege) -> &[String] {
    if privilege >= Privilege::Operator { &[] } else { state.resources.invisible() }
}
