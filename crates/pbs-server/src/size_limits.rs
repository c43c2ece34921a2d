//! Size limits on what a client can make the server keep: each attribute value, a job's
//! attributes together, the attributes of one request, and object names. Each refusal is
//! a PBSE reply naming what was too large; none of the limits is near what a real job
//! needs (see docs/architecture.md, "Bounded work per request").
//!
//! The frame itself is bounded before it is read (`MAX_REQUEST_FRAME_LEN`, 16 MiB): these
//! limits bound what stays in memory after the request is answered.

use pbs_core::Pbse;
use pbs_core::attr::ObjectKind;
use pbs_proto::Request;

use crate::attrlist::AttrList;
use crate::error::ReqError;

/// Any attribute value: ten times a `select` naming a thousand hosts one by one.
pub const MAX_VALUE_LEN: usize = 1 << 20;

/// A job's environment and command line (`Variable_List`, `argument_list`,
/// `Submit_arguments`): twice what Linux lets one process's arguments and environment
/// take together by default (`ARG_MAX`, 2 MiB with an 8 MiB stack), so `qsub -V` of any
/// environment a shell can hold gets through.
pub const MAX_ENV_VALUE_LEN: usize = 4 << 20;

/// All the attribute values of one job together.
pub const MAX_JOB_ATTRS_LEN: usize = 8 << 20;

/// Attributes (or attribute names, or selection criteria) in one request.
pub const MAX_REQUEST_ATTRS: usize = 4096;

/// OpenPBS's `PBS_MAXJOBNAME`: a longer `Job_Name` is an illegal value.
pub const MAX_JOB_NAME_LEN: usize = 230;

/// OpenPBS's `PBS_MAXQUEUENAME` and `PBS_MAXSCHEDNAME`.
pub const MAX_QUEUE_NAME_LEN: usize = 15;

/// OpenPBS's `PBS_MAXHOSTNAME`, the limit on a node's name.
pub const MAX_NODE_NAME_LEN: usize = 255;

/// The limit on one value of attribute `name` (`base` or `base.resource`).
pub fn value_limit(kind: ObjectKind, name: &str) -> usize {
    match (kind, name) {
        (ObjectKind::Job, "Variable_List" | "argument_list" | "Submit_arguments") => MAX_ENV_VALUE_LEN,
        (ObjectKind::Job, "Job_Name") => MAX_JOB_NAME_LEN,
        _ => MAX_VALUE_LEN,
    }
}

/// Refuses a value longer than its attribute's limit: `Illegal attribute or resource
/// value <name>`, as OpenPBS refuses a `Job_Name` longer than `PBS_MAXJOBNAME`.
pub fn check_value(kind: ObjectKind, name: &str, value: &str) -> Result<(), ReqError> {
    if value.len() > value_limit(kind, name) {
        return Err(ReqError::attr(Pbse::BADATVAL, name));
    }
    Ok(())
}

/// Refuses a job whose attribute values together pass [`MAX_JOB_ATTRS_LEN`], naming the
/// attribute the request was setting (`last`).
pub fn check_job_total(list: &AttrList, last: &str) -> Result<(), ReqError> {
    let total: usize = list.iter().map(|a| a.value.len()).sum();
    if total > MAX_JOB_ATTRS_LEN {
        return Err(ReqError::attr(Pbse::BADATVAL, last));
    }
    Ok(())
}

/// Refuses a request that lists more than [`MAX_REQUEST_ATTRS`] attributes, object names
/// or criteria, or more than [`pbs_proto::MAX_REQUEST_IDS`] job ids: `Invalid request`,
/// before any of them is looked at. (qstat's job ids are not bounded: a status is planned
/// from them in one pass of lookups and listed in parts.)
pub fn check_request(request: &Request) -> Result<(), ReqError> {
    if request.per_job_ids().is_some_and(|ids| ids.len() > pbs_proto::MAX_REQUEST_IDS) {
        return Err(ReqError::new(Pbse::IVALREQ));
    }
    // Every kind is named, so a new one is given its lists here before the server builds.
    let count = match request {
        Request::QueueJob { attrs, .. } | Request::ModifyJob { attrs, .. } => attrs.len(),
        Request::Manager { attrs, names, .. } => attrs.len().max(names.len()),
        Request::StatusJob { attrs, queues, .. } => attrs.len().max(queues.len()),
        Request::StatusServer { attrs } => attrs.len(),
        Request::StatusQueue { attrs, names } => attrs.len().max(names.len()),
        Request::StatusNode { names }
        | Request::StatusSched { names }
        | Request::StatusResource { names }
        | Request::StatusHook { names } => names.len(),
        Request::SelectJobs { criteria, .. } => criteria.len(),
        // Their ids are bounded above; qrun names one job.
        Request::DeleteJob { .. }
        | Request::HoldJob { .. }
        | Request::ReleaseJob { .. }
        | Request::SignalJob { .. }
        | Request::RerunJob { .. }
        | Request::MoveJob { .. }
        | Request::OrderJob { .. }
        | Request::Shutdown { .. }
        | Request::MessageJob { .. }
        | Request::WaitJob { .. }
        | Request::RunJob { .. } => 0,
        // Any length the frame carries: each id costs one lookup and one line of the
        // answer, and only running jobs (each once) cost more (`job::preempt::begin`).
        Request::PreemptJobs { .. } => 0,
        // One hook; its body is bounded by the frame and by `hooks::admin::MAX_HOOK_BODY`.
        Request::ImportHook { .. } | Request::ExportHook { .. } => 0,
    };
    if count > MAX_REQUEST_ATTRS {
        return Err(ReqError::new(Pbse::IVALREQ));
    }
    Ok(())
}

/// Refuses a queue, node or scheduler name longer than OpenPBS allows, with its code.
pub fn check_object_name(kind: ObjectKind, name: &str) -> Result<(), ReqError> {
    let (limit, code) = match kind {
        ObjectKind::Queue => (MAX_QUEUE_NAME_LEN, Pbse::QUENBIG),
        ObjectKind::Node => (MAX_NODE_NAME_LEN, Pbse::NODENBIG),
        ObjectKind::Sched => (MAX_QUEUE_NAME_LEN, Pbse::SCHED_NAME_BIG),
        _ => (MAX_QUEUE_NAME_LEN.max(MAX_NODE_NAME_LEN), Pbse::IVAL_OBJ_NAME),
    };
    if name.len() > limit {
        return Err(ReqError::new(code));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_what_was_too_large() {
        let big = "x".repeat(MAX_VALUE_LEN + 1);
        assert_eq!(
            check_value(ObjectKind::Job, "Account_Name", &big).unwrap_err().message,
            "Illegal attribute or resource value Account_Name"
        );
        assert!(check_value(ObjectKind::Job, "Variable_List", &big).is_ok());
        assert!(check_value(ObjectKind::Job, "Job_Name", &"n".repeat(230)).is_ok());
        assert!(check_value(ObjectKind::Job, "Job_Name", &"n".repeat(231)).is_err());
        assert_eq!(check_object_name(ObjectKind::Queue, "sixteen_letters_").unwrap_err().code, Pbse::QUENBIG);
        // Lists of names and ids are bounded like attributes: a status of a million node
        // names would look each up among every node.
        let names: Vec<String> = (0..=MAX_REQUEST_ATTRS).map(|i| format!("n{i}")).collect();
        let refused = |request: Request| check_request(&request).map_err(|e| e.code);
        assert_eq!(refused(Request::StatusNode { names: names.clone() }), Err(Pbse::IVALREQ));
        assert_eq!(refused(Request::StatusQueue { names: names.clone(), attrs: Vec::new() }), Err(Pbse::IVALREQ));
        assert_eq!(refused(Request::StatusNode { names: names[1..].to_vec() }), Ok(()));
        let ids: Vec<String> = (0..=pbs_proto::MAX_REQUEST_IDS).map(|i| i.to_string()).collect();
        assert_eq!(refused(Request::HoldJob { ids, hold_types: "u".into() }), Err(Pbse::IVALREQ));
        assert!(check_object_name(ObjectKind::Queue, "fifteen_letters").is_ok());
    }
}
