//! One attribute, one value, one spelling: the attribute names of a request that sets
//! attributes are put in their table's spelling, and a name given twice, in any spelling,
//! is refused, before any hook, privilege or value check reads the request.
//!
//! Attribute names match in any case, as in OpenPBS, so `resource_list.walltime` and
//! `Resource_List.walltime` are one attribute. Were both kept, a hook would see one, the
//! privilege check another and the job keep a third: every later reader can trust that a
//! name stands for one value.

use std::cmp::Ordering;

use pbs_core::Pbse;
use pbs_core::attr::ObjectKind;
use pbs_proto::{Attr, Request};

use crate::error::ReqError;

/// Puts the attribute names of `request` in their canonical spelling and refuses a name
/// given more than once: `Illegal attribute or resource value <name>` (15014). Requests
/// that set no attributes pass untouched.
pub fn canonicalize(request: &mut Request) -> Result<(), ReqError> {
    match request {
        Request::QueueJob { attrs, .. } | Request::ModifyJob { attrs, .. } => {
            for Attr(name, _) in attrs.iter_mut() {
                respell(ObjectKind::Job, name);
            }
            refuse_repeats(attrs.iter().map(|Attr(name, _)| name.as_str()))
        }
        Request::Manager { object, attrs, .. } => {
            let kind = object.kind();
            for attr in attrs.iter_mut() {
                respell(kind, &mut attr.name);
            }
            refuse_repeats(attrs.iter().map(|attr| attr.name.as_str()))
        }
        // Every kind is named, so a new one that carries attributes is decided on here.
        Request::StatusJob { .. }
        | Request::SelectJobs { .. }
        | Request::DeleteJob { .. }
        | Request::HoldJob { .. }
        | Request::ReleaseJob { .. }
        | Request::StatusServer { .. }
        | Request::StatusQueue { .. }
        | Request::StatusNode { .. }
        | Request::StatusSched { .. }
        | Request::StatusResource { .. }
        | Request::StatusHook { .. }
        | Request::ImportHook { .. }
        | Request::ExportHook { .. }
        | Request::RunJob { .. }
        | Request::SignalJob { .. }
        | Request::RerunJob { .. }
        | Request::MoveJob { .. }
        | Request::PreemptJobs { .. }
        | Request::OrderJob { .. }
        | Request::Shutdown { .. }
        | Request::MessageJob { .. }
        | Request::WaitJob { .. } => Ok(()),
    }
}

fn respell(kind: ObjectKind, name: &mut String) {
    let canonical = kind.canonical_name(name);
    if canonical != name.as_str() {
        *name = canonical.into_owned();
    }
}

/// Refuses a name that `names` (already respelled) give twice: bases and resources are
/// compared in any case. Sorted, not hashed: a request holds at most
/// `size_limits::MAX_REQUEST_ATTRS` names and nothing is allocated per name.
fn refuse_repeats<'a>(names: impl Iterator<Item = &'a str>) -> Result<(), ReqError> {
    let mut names: Vec<&str> = names.collect();
    if names.len() < 2 {
        return Ok(());
    }
    names.sort_unstable_by(|a, b| ignoring_case(a, b));
    match names.windows(2).find(|pair| ignoring_case(pair[0], pair[1]) == Ordering::Equal) {
        Some(pair) => Err(ReqError::attr(Pbse::BADATVAL, pair[1])),
        None => Ok(()),
    }
}

fn ignoring_case(a: &str, b: &str) -> Ordering {
    a.bytes().map(|c| c.to_ascii_lowercase()).cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submit(attrs: &[(&str, &str)]) -> Request {
        Request::QueueJob {
            attrs: attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect(),
            script: String::new(),
            destination: None,
        }
    }

    fn refusal(mut request: Request) -> Option<(Pbse, String)> {
        canonicalize(&mut request).err().map(|e| (e.code, e.message))
    }

    #[test]
    fn names_take_the_tables_spelling() {
        let mut request = submit(&[("resource_list.walltime", "10"), ("JOB_NAME", "x"), ("no_such", "1")]);
        canonicalize(&mut request).unwrap();
        let Request::QueueJob { attrs, .. } = request else { unreachable!() };
        let names: Vec<&str> = attrs.iter().map(|a| a.name()).collect();
        assert_eq!(names, ["Resource_List.walltime", "Job_Name", "no_such"]);
    }

    #[test]
    fn a_name_given_twice_in_any_spelling_is_refused_naming_it() {
        let twice = refusal(submit(&[("Resource_List.walltime", "1"), ("Resource_List.walltime", "2")]));
        assert_eq!(
            twice,
            Some((Pbse::BADATVAL, "Illegal attribute or resource value Resource_List.walltime".to_string()))
        );
        assert!(refusal(submit(&[("Resource_List.walltime", "1"), ("resource_list.walltime", "2")])).is_some());
        assert!(refusal(submit(&[("Resource_List.mem", "1"), ("Resource_List.MEM", "2")])).is_some());
        assert!(refusal(submit(&[("Job_Name", "a"), ("x", "1"), ("job_name", "b")])).is_some());
        assert!(refusal(submit(&[("no_such", "a"), ("NO_SUCH", "b")])).is_some());
        assert_eq!(refusal(submit(&[("Resource_List.walltime", "1"), ("Resource_List.mem", "2")])), None);
        let alter = Request::ModifyJob {
            ids: vec!["1".into()],
            attrs: vec![Attr::new("Priority", "1"), Attr::new("priority", "2")],
        };
        assert!(refusal(alter).is_some());
        let manager = Request::Manager {
            command: pbs_proto::MgrCommand::Set,
            object: pbs_proto::MgrObject::Server,
            names: Vec::new(),
            attrs: ["scheduling", "Scheduling"]
                .iter()
                .map(|n| pbs_proto::MgrAttr { name: n.to_string(), op: pbs_proto::MgrOp::Set, value: "t".into() })
                .collect(),
        };
        assert!(refusal(manager).is_some());
    }
}
