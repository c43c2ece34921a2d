//! What the accounting log says of a job, as OpenPBS's `accounting.c` says it: the text
//! of each record type, built from the job as the change leaves it, returned as a
//! [`StoreOp::Account`] among the change's own operations so that the record is committed
//! in the same transaction as the change (the file side is `acctlog`).
//!
//! Record types: `Q` queued (also after qmove), `S` started, `E` ended, `R` requeued (a
//! rerun, `Exit_status=-11`), `D` deleted (`requestor=user@host`), `A` aborted (a dependency
//! that can no longer be met), `a` altered (qalter, or a hook's change), `z` suspended and
//! `r` resumed.

use std::fmt::Write;

use pbs_core::{JobState, Size};

use crate::acctlog::AcctRecord;
use crate::jobkey::JobKey;
use crate::state::{Job, State};
use crate::store::StoreOp;

/// How a run ended, for its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// `E`: the job (or array) is done.
    Ended,
    /// `R`: the job goes back to the queue to run again.
    Requeued,
}

/// The `Q` record of a job just queued (submitted, or moved to another queue).
pub fn queued(state: &State, key: JobKey) -> Option<StoreOp> {
    let job = state.job(key)?;
    Some(op('Q', job.id(&state.server_name), common(job, 'Q')))
}

/// The `S` record of a job (or array) that started: the common part and the consumable
/// resources its placement holds (`resource_assigned.*`).
pub fn started(state: &State, key: JobKey) -> Option<StoreOp> {
    let job = state.job(key)?;
    let mut text = common(job, 'S');
    if let Some(placement) = job.placement().as_deref() {
        for (resource, value) in assigned(state, &placement.exec, placement.exclusive) {
            let _ = write!(text, "resource_assigned.{resource}=");
            push_quoted(&mut text, &value);
            text.push(' ');
        }
    }
    Some(op('S', job.id(&state.server_name), text))
}

/// The `E` or `R` record of a run that ended at `now`, from the job's `Exit_status` and
/// `resources_used` as its end left them; `id` is the job's full id. `eligible`: the
/// job's eligible time (`HH:MM:SS`) while the server keeps it, which OpenPBS writes
/// between the usage and `run_count`.
pub fn run_ended(job: &Job, id: &str, end: RunEnd, eligible: Option<&str>, now: i64) -> StoreOp {
    let kind = match end {
        RunEnd::Ended => 'E',
        RunEnd::Requeued => 'R',
    };
    let mut text = common(job, kind);
    let session = job.attrs.get(job_idx!("session_id"), None).unwrap_or("0");
    let _ = write!(text, "session={session}");
    if let Some(alt_id) = job.attrs.get(job_idx!("alt_id"), None) {
        let _ = write!(text, " alt_id={alt_id}");
    }
    let _ = write!(text, " end={now}");
    let status =
        if end == RunEnd::Requeued { "-11" } else { job.attrs.get(job_idx!("Exit_status"), None).unwrap_or("0") };
    let _ = write!(text, " Exit_status={status}");
    for (resource, value) in job.attrs.resources(job_idx!("resources_used")) {
        if !value.is_empty() {
            let _ = write!(text, " resources_used.{resource}=");
            push_quoted(&mut text, value);
        }
    }
    if let Some(eligible) = eligible {
        let _ = write!(text, " eligible_time={eligible}");
    }
    let run_count = job.attrs.get(job_idx!("run_count"), None).unwrap_or("0");
    let _ = write!(text, " run_count={run_count}");
    op(kind, id.to_string(), text)
}

/// The `z` record of a job its mom has just suspended, as OpenPBS's
/// `log_suspend_resume_record`: its `resources_used.*` so far, then, under
/// `restrict_res_to_release_on_suspend`, what it gave back (`resources_released=`).
pub fn suspended(job: &Job, id: &str) -> StoreOp {
    let mut text = String::new();
    for (resource, value) in job.attrs.resources(job_idx!("resources_used")) {
        if !value.is_empty() {
            if !text.is_empty() {
                text.push(' ');
            }
            let _ = write!(text, "resources_used.{resource}=");
            push_quoted(&mut text, value);
        }
    }
    if let Some(released) = job.attrs.get(job_idx!("resources_released"), None) {
        if !text.is_empty() {
            text.push(' ');
        }
        let _ = write!(text, "resources_released={released}");
    }
    op('z', id.to_string(), text)
}

/// The `r` record of a suspended job resumed: OpenPBS writes no text.
pub fn resumed(id: &str) -> StoreOp {
    op('r', id.to_string(), String::new())
}

/// The `D` record of a job deleted at `requestor`'s request (`user@host`).
pub fn deleted(id: &str, requestor: &str) -> StoreOp {
    op('D', id.to_string(), format!("requestor={requestor}"))
}

/// The `A` record of a job aborted by the server, with OpenPBS's reason text.
pub fn aborted(id: &str, reason: &str) -> StoreOp {
    op('A', id.to_string(), reason.to_string())
}

/// The `a` record of a job whose attributes `attrs` were just changed (qalter or a hook),
/// as OpenPBS's `log_alter_records_for_attrs` writes it: each attribute asked for, in the
/// order attributes are defined, with its value as the change left it (`name.resource=`
/// for a resource, `="..."` around a value with a space, `=UNSET` for one unset);
/// `estimated` and `resources_used` are never named. `None` when nothing is left to say.
pub fn altered(job: &Job, id: &str, attrs: &[pbs_proto::Attr]) -> Option<StoreOp> {
    let mut asked: Vec<(usize, usize, &str, Option<&str>, &str)> = attrs
        .iter()
        .enumerate()
        .filter_map(|(order, pbs_proto::Attr(name, value))| {
            let (attr, resource) = pbs_core::attr::split_name(name);
            if matches!(attr, "estimated" | "resources_used") {
                return None;
            }
            let (index, def) = pbs_core::attr::ObjectKind::Job.find(attr)?;
            Some((index, order, def.name, resource, value.as_str()))
        })
        .collect();
    asked.sort_by_key(|&(index, order, ..)| (index, order));
    let mut text = String::new();
    for (index, _, name, resource, asked_value) in asked {
        let Ok(def) = u8::try_from(index) else { continue };
        let now = job.attrs.get(def, resource);
        let value = match now {
            Some(value) => value,
            None if asked_value.is_empty() => "UNSET",
            None => continue,
        };
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(name);
        if let Some(resource) = resource {
            text.push('.');
            text.push_str(resource);
        }
        text.push('=');
        push_quoted(&mut text, value);
    }
    (!text.is_empty()).then(|| op('a', id.to_string(), text))
}

fn op(kind: char, id: String, text: String) -> StoreOp {
    StoreOp::Account(AcctRecord { kind, id, text })
}

/// OpenPBS's `acct_job`: what every job record but `D` and `A` starts with, each pair
/// followed by a space.
fn common(job: &Job, kind: char) -> String {
    // Built under the state lock for every submission, start and end: attributes are read
    // by their compile-time index and the text is pushed, not formatted (`write!` and the
    // lookup by name were half of what the log cost a burst of submissions).
    let mut text = String::with_capacity(320);
    let get = |def: u8| job.attrs.get(def, None);
    push_pair(&mut text, "user", get(job_idx!("euser")).unwrap_or(""));
    push_pair(&mut text, "group", get(job_idx!("egroup")).unwrap_or(""));
    if let Some(account) = get(job_idx!("Account_Name")) {
        push_pair_in_quotes(&mut text, "account", account);
    }
    if let Some(project) = get(job_idx!("project")) {
        push_pair_quoted(&mut text, "project", project);
    }
    if let Some(accounting_id) = get(job_idx!("accounting_id")) {
        push_pair_in_quotes(&mut text, "accounting_id", accounting_id);
    }
    // qsub allows no blank in a name, but a raw client may send one.
    push_pair_quoted(&mut text, "jobname", get(job_idx!("Job_Name")).unwrap_or(""));
    push_pair(&mut text, "queue", &job.queue);
    push_pair(&mut text, "ctime", get(job_idx!("ctime")).unwrap_or("0"));
    push_pair(&mut text, "qtime", get(job_idx!("qtime")).unwrap_or("0"));
    push_pair(&mut text, "etime", get(job_idx!("etime")).unwrap_or("0"));
    if kind != 'Q' {
        push_pair(&mut text, "start", get(job_idx!("stime")).unwrap_or("0"));
    } else if let Some(depend) = get(job_idx!("depend")) {
        push_pair_quoted(&mut text, "depend", depend);
    }
    // An array being queued, or beginning or begun, names its indices instead of hosts;
    // its `E` (once finished) names neither.
    match get(job_idx!("array_indices_submitted")) {
        Some(indices) if job.state == JobState::Begun || kind == 'Q' || kind == 'S' => {
            push_pair(&mut text, "array_indices", indices);
        }
        _ => {
            let (exec_host, exec_vnode) = job.exec_texts();
            if let Some(value) = exec_host {
                push_pair(&mut text, "exec_host", value);
            }
            if let Some(value) = exec_vnode {
                push_pair(&mut text, "exec_vnode", value);
            }
        }
    }
    for (resource, value) in job.attrs.resources(job_idx!("Resource_List")) {
        text.push_str("Resource_List.");
        text.push_str(resource);
        text.push('=');
        push_quoted(&mut text, value);
        text.push(' ');
    }
    text
}

/// `key=value ` as the common part writes each pair.
fn push_pair(text: &mut String, key: &str, value: &str) {
    text.push_str(key);
    text.push('=');
    text.push_str(value);
    text.push(' ');
}

/// `key=value `, the value quoted as [`push_quoted`] quotes it: for a value a user chose.
fn push_pair_quoted(text: &mut String, key: &str, value: &str) {
    text.push_str(key);
    text.push('=');
    push_quoted(text, value);
    text.push(' ');
}

/// `key="value" `, as OpenPBS always quotes `account`, `accounting_id` and a `project`
/// with a space (see [`push_in_quotes`] for a value holding a `"`).
fn push_pair_in_quotes(text: &mut String, key: &str, value: &str) {
    text.push_str(key);
    text.push('=');
    push_in_quotes(text, value);
    text.push(' ');
}

/// OpenPBS's `cpy_quote_value`: a value with a blank is quoted, with `'` if it holds a
/// `"`. A value a raw client chose may hold anything, so one with a quote is quoted too
/// (a reader that honours quotes would otherwise run it into the next fields), and any
/// blank counts, not only a space: no reader can take part of a value for a `key=value`
/// field of its own. Control characters are escaped when the line is written
/// (`acctlog::push_line`).
fn push_quoted(text: &mut String, value: &str) {
    if value.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
        push_in_quotes(text, value);
    } else {
        text.push_str(value);
    }
}

/// `value` between `"`, or `'` when it holds a `"`; one holding both has its `"` written
/// `\x22`, as the log writes a control character, so its quotes always close where it
/// ends.
fn push_in_quotes(text: &mut String, value: &str) {
    match (value.contains('"'), value.contains('\'')) {
        (false, _) => {
            text.push('"');
            text.push_str(value);
            text.push('"');
        }
        (true, false) => {
            text.push('\'');
            text.push_str(value);
            text.push('\'');
        }
        (true, true) => {
            text.push('"');
            for c in value.chars() {
                match c {
                    '"' => text.push_str("\\x22"),
                    c => text.push(c),
                }
            }
            text.push('"');
        }
    }
}

/// OpenPBS's `sum_resc_alloc`: the consumable resources a placement holds, summed over its
/// vnodes in the order resources are defined; a vnode held exclusively counts whole, once.
fn assigned(state: &State, exec: &pbs_core::ExecVnode, exclusive: bool) -> Vec<(String, String)> {
    let counted = |name: &str| {
        state
            .resources
            .get(name)
            .is_some_and(|d| d.flags.consumable || d.flags.consumable_first || d.flags.queue_assigned)
    };
    let mut amounts: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut whole: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for part in exec.parts() {
        if exclusive {
            if !seen.insert(part.vnode.as_str()) {
                continue;
            }
            if let Some(node) = state.nodes.iter().find(|n| n.name == part.vnode) {
                whole.extend(crate::node::available(state, node).into_iter().filter(|(r, _)| counted(r)));
            }
            continue;
        }
        for (resource, value) in &part.resources {
            if !counted(resource) {
                continue;
            }
            match amounts.iter_mut().find(|(r, _)| r == resource) {
                Some((_, values)) => values.push(value),
                None => amounts.push((resource, vec![value])),
            }
        }
    }
    let mut out = Vec::new();
    for def in state.resources.all() {
        let values: Vec<&str> = if exclusive {
            whole.iter().filter(|(r, _)| *r == def.name).map(|(_, v)| v.as_str()).collect()
        } else {
            amounts.iter().find(|(r, _)| *r == def.name).map(|(_, v)| v.clone()).unwrap_or_default()
        };
        if let Some(sum) = sum(&values) {
            out.push((def.name.clone(), sum));
        }
    }
    out
}

/// The sum of several amounts of one resource: whole numbers, else sizes in the smallest
/// unit given, else the first value (a string resource cannot be added).
fn sum(values: &[&str]) -> Option<String> {
    let first = values.first()?;
    if let Ok(n) = values.iter().map(|v| v.parse::<u64>()).sum::<Result<u64, _>>() {
        return Some(n.to_string());
    }
    if let Ok(f) = values.iter().map(|v| v.parse::<f64>()).sum::<Result<f64, _>>() {
        return Some(f.to_string());
    }
    if let Ok(sizes) = values.iter().map(|v| v.parse::<Size>()).collect::<Result<Vec<_>, _>>() {
        let bytes = sizes.iter().map(|s| s.to_bytes()).fold(0u64, u64::saturating_add);
        let shift = sizes.iter().map(|s| s.unit_shift()).min().unwrap_or(10);
        return Some(Size::in_unit(bytes, shift).to_string());
    }
    Some(first.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_with_spaces_are_quoted_as_openpbs_quotes_them() {
        let mut text = String::new();
        push_quoted(&mut text, "a b");
        push_quoted(&mut text, "plain");
        push_quoted(&mut text, "say \"hi\" now");
        assert_eq!(text, "\"a b\"plain'say \"hi\" now'");
    }

    #[test]
    fn no_value_can_be_read_as_a_field_of_its_own() {
        let quoted = |value: &str| {
            let mut text = String::new();
            push_quoted(&mut text, value);
            text
        };
        // A blank of any kind, or a quote alone, is quoted.
        assert_eq!(quoted("a\u{a0}user=root"), "\"a\u{a0}user=root\"");
        assert_eq!(quoted("x\"y"), "'x\"y'");
        assert_eq!(quoted("it's"), "\"it's\"");
        // Both quotes: the `"` cannot close the value early.
        assert_eq!(quoted("a' \" user=root"), "\"a' \\x22 user=root\"");
        let mut text = String::new();
        push_pair_in_quotes(&mut text, "account", "x\" user=root \"");
        assert_eq!(text, "account='x\" user=root \"' ");
    }

    #[test]
    fn an_alteration_names_what_was_asked_in_definition_order() {
        use pbs_proto::Attr;
        let parts = crate::state::JobParts {
            seq: 3,
            array: false,
            index: None,
            state: JobState::Queued,
            substate: pbs_core::Substate(10),
            queue: "workq".into(),
            attrs: crate::attrlist::AttrList::default(),
            accrue_since: 0,
        };
        let mut job = Job::new(parts, &mut Default::default());
        job.attrs.set(job_idx!("Job_Name"), None, "renamed");
        job.attrs.set(job_idx!("Resource_List"), Some("walltime".into()), "00:10:00");
        job.attrs.set(job_idx!("Account_Name"), None, "my project");
        let asked = [
            Attr::new("Resource_List.walltime", "10:00"),
            Attr::new("estimated.start_time", "5"),
            Attr::new("Job_Name", "renamed"),
            Attr::new("Account_Name", "my project"),
            Attr::new("Resource_List.mem", ""),
            Attr::new("no_such_attribute", "x"),
        ];
        let Some(StoreOp::Account(record)) = altered(&job, "3.s", &asked) else { panic!("no record") };
        assert_eq!((record.kind, record.id.as_str()), ('a', "3.s"));
        assert_eq!(
            record.text,
            "Job_Name=renamed Account_Name=\"my project\" Resource_List.walltime=00:10:00 Resource_List.mem=UNSET"
        );
        assert!(altered(&job, "3.s", &[Attr::new("resources_used.cput", "1")]).is_none());
    }

    /// The common part in OpenPBS's order and quoting, for every optional key.
    #[test]
    fn the_common_part_names_each_key_as_openpbs_does() {
        let parts = crate::state::JobParts {
            seq: 4,
            array: false,
            index: None,
            state: JobState::Running,
            substate: pbs_core::Substate(42),
            queue: "workq".into(),
            attrs: crate::attrlist::AttrList::default(),
            accrue_since: 0,
        };
        let mut job = Job::new(parts, &mut Default::default());
        for (name, value) in [
            ("euser", "ann"),
            ("egroup", "staff"),
            ("Account_Name", "acct 1"),
            ("project", "big proj"),
            ("accounting_id", "x7"),
            ("Job_Name", "sim"),
            ("ctime", "10"),
            ("qtime", "11"),
            ("stime", "13"),
            ("depend", "afterok:1.s"),
            ("exec_host", "n1/0"),
            ("exec_vnode", "(n1:ncpus=1)"),
        ] {
            job.attrs.set(pbs_core::attr::ObjectKind::Job.index_of(name), None, value);
        }
        job.attrs.set(job_idx!("Resource_List"), Some("ncpus".into()), "1");
        job.attrs.set(job_idx!("Resource_List"), Some("software".into()), "a b");
        let tail = "exec_host=n1/0 exec_vnode=(n1:ncpus=1) Resource_List.ncpus=1 Resource_List.software=\"a b\" ";
        let head = "user=ann group=staff account=\"acct 1\" project=\"big proj\" accounting_id=\"x7\" jobname=sim queue=workq ctime=10 qtime=11 etime=0";
        assert_eq!(common(&job, 'Q'), format!("{head} depend=afterok:1.s {tail}"));
        assert_eq!(common(&job, 'S'), format!("{head} start=13 {tail}"));
        job.attrs.set(job_idx!("project"), None, "p1");
        assert!(common(&job, 'E').contains(" project=p1 accounting_id="));
    }

    #[test]
    fn amounts_add_up_by_kind() {
        assert_eq!(sum(&["1", "2"]).as_deref(), Some("3"));
        assert_eq!(sum(&["1gb", "512mb"]).as_deref(), Some("1536mb"));
        assert_eq!(sum(&[]), None);
    }
}
