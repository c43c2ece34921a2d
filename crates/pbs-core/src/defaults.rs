//! The attributes OpenPBS gives the objects it creates: a queue, node, scheduler or hook
//! made with qmgr, and the server, queue `workq` and scheduler `default` of a first start.
//! One list per object, which the server's qmgr and its first start both read.

use crate::attr::ObjectKind;

/// The attributes a queue, node, scheduler or hook starts with when qmgr creates it as
/// `name` on a server running on `host` (the server and resources have none).
pub fn new_object(kind: ObjectKind, name: &str, host: &str) -> Vec<(&'static str, String)> {
    let owned = |pairs: &[(&'static str, &str)]| pairs.iter().map(|(n, v)| (*n, v.to_string())).collect::<Vec<_>>();
    match kind {
        ObjectKind::Node => owned(&[
            ("Mom", name),
            ("Port", "15002"),
            ("ntype", "PBS"),
            ("resources_available.host", name),
            ("resources_available.vnode", name),
            ("resv_enable", "True"),
            ("sharing", "default_shared"),
        ]),
        ObjectKind::Sched => owned(&[
            ("sched_host", host),
            ("sched_cycle_length", "00:20:00"),
            ("scheduling", "False"),
            ("scheduler_iteration", "600"),
            ("state", "down"),
            ("preempt_queue_prio", "150"),
            ("preempt_prio", "express_queue, normal_jobs"),
            ("preempt_order", "SCR"),
            ("preempt_sort", "min_time_since_start"),
            ("log_events", "767"),
            ("server_dyn_res_alarm", "30"),
        ]),
        ObjectKind::Hook => owned(&[
            ("type", "site"),
            ("enabled", "true"),
            ("event", ""),
            ("user", "pbsadmin"),
            ("alarm", "30"),
            ("order", "1"),
            ("debug", "false"),
            ("fail_action", "none"),
        ]),
        _ => Vec::new(),
    }
}

/// The server's attributes at a first start.
pub const FIRST_SERVER: &[(&str, &str)] = &[
    ("scheduling", "True"),
    ("default_queue", "workq"),
    ("log_events", "511"),
    ("mailer", "/usr/sbin/sendmail"),
    ("mail_from", "adm"),
    ("query_other_jobs", "True"),
    ("resources_default.ncpus", "1"),
    ("default_chunk.ncpus", "1"),
    ("scheduler_iteration", "600"),
    ("resv_enable", "True"),
    ("node_fail_requeue", "310"),
    ("max_array_size", "10000"),
    ("resend_term_delay", "5"),
    ("pbs_license_min", "0"),
    ("pbs_license_max", "2147483647"),
    ("pbs_license_linger_time", "31536000"),
    ("eligible_time_enable", "False"),
    ("max_concurrent_provision", "5"),
    ("clear_topjob_estimates_enable", "False"),
    ("max_job_sequence_id", "9999999"),
];

/// The name of the queue a first start creates.
pub const FIRST_QUEUE: &str = "workq";

/// That queue's attributes.
pub const FIRST_QUEUE_ATTRS: &[(&str, &str)] = &[("queue_type", "Execution"), ("enabled", "True"), ("started", "True")];

/// The scheduler `default` of a first start: a scheduler as qmgr creates it, running
/// (`scheduling`, `state`), with the directories of `pbs_home` and the default partition.
pub fn first_sched(host: &str, pbs_home: &str) -> Vec<(&'static str, String)> {
    let mut attrs = new_object(ObjectKind::Sched, "default", host);
    for (name, value) in [
        ("scheduling", "True".to_string()),
        ("state", "idle".to_string()),
        ("throughput_mode", "True".to_string()),
        ("job_run_wait", "runjob_hook".to_string()),
        ("partition", "pbs-default".to_string()),
        ("sched_priv", format!("{pbs_home}/sched_priv")),
        ("sched_log", format!("{pbs_home}/sched_logs")),
    ] {
        match attrs.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => attrs.push((name, value)),
        }
    }
    attrs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_names_an_attribute_of_its_object() {
        let kinds = [ObjectKind::Queue, ObjectKind::Node, ObjectKind::Sched, ObjectKind::Hook];
        let mut all: Vec<(ObjectKind, &str)> =
            kinds.iter().flat_map(|k| new_object(*k, "n", "h").into_iter().map(move |(n, _)| (*k, n))).collect();
        all.extend(FIRST_SERVER.iter().map(|(n, _)| (ObjectKind::Server, *n)));
        all.extend(FIRST_QUEUE_ATTRS.iter().map(|(n, _)| (ObjectKind::Queue, *n)));
        all.extend(first_sched("h", "/p").into_iter().map(|(n, _)| (ObjectKind::Sched, n)));
        for (kind, name) in all {
            let base = name.split('.').next().unwrap_or(name);
            assert!(kind.find(base).is_some(), "{kind:?} has no attribute {name}");
        }
    }

    #[test]
    fn the_first_scheduler_is_a_created_one_that_runs() {
        let first = first_sched("h", "/var/spool/pbs");
        let get = |name: &str| first.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
        assert_eq!(get("scheduling"), Some("True"));
        assert_eq!(get("state"), Some("idle"));
        assert_eq!(get("sched_host"), Some("h"));
        assert_eq!(get("preempt_order"), Some("SCR"));
        assert_eq!(get("sched_log"), Some("/var/spool/pbs/sched_logs"));
        assert_eq!(first.len(), new_object(ObjectKind::Sched, "default", "h").len() + 5);
    }
}
