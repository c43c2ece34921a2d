//! Jobs with OR-ed selects in the cycle: the first alternative that fits runs, with its own
//! job-wide resources; when none fits, only the first is planned.

use pbs_proto::Attr;
use pbs_proto::sched::{Action, SchedJob, SchedNode, Snapshot};

use crate::test_support::{self, comment_of, node_with, queued, workq};
use crate::{Decisions, Mirror, SchedConfig, cycle, qrun};

fn snapshot(nodes: Vec<SchedNode>, jobs: Vec<SchedJob>, server: &[(&str, &str)]) -> Snapshot {
    let mut snapshot = test_support::snapshot(vec![workq()], nodes, jobs);
    snapshot.server.extend(server.iter().map(|(n, v)| Attr::new(*n, *v)));
    snapshot
}

fn node(name: &str, ncpus: u32) -> SchedNode {
    node_with(name, &ncpus.to_string(), "8gb", &[])
}

/// A queued job as the server sends one with alternatives: `Resource_List` of the first,
/// the OR-ed select, and `sched_job_wide` when job_wide was given.
fn ored(seq: u64, select: &str, first_ncpus: &str, job_wide: Option<&str>) -> SchedJob {
    let mut resources = vec![
        ("ncpus".to_string(), first_ncpus.to_string()),
        ("nodect".to_string(), "1".to_string()),
        ("place".to_string(), "free".to_string()),
        ("select".to_string(), select.to_string()),
    ];
    let mut attrs = Vec::new();
    if let Some(job_wide) = job_wide {
        resources.push(("job_wide".into(), job_wide.into()));
        attrs.push(Attr::new("sched_job_wide", job_wide));
    }
    SchedJob { attrs, ..queued(seq, "workq", select, "free", resources) }
}

fn runs(d: &Decisions) -> Vec<(&str, &str, Option<u32>)> {
    d.runs().map(|r| (r.job_id.as_str(), r.exec_vnode.as_str(), r.alternative)).collect()
}

fn logged(d: &Decisions, id: &str, text: &str) -> bool {
    d.considered.iter().chain(&d.log).any(|e| e.object_name == id && e.message == text)
}

#[test]
fn the_first_alternative_that_fits_now_runs() {
    let jobs = vec![
        ored(1, "1:ncpus=8||1:ncpus=2", "8", Some("walltime=00:12:00+place=scatter||walltime=00:08:00+place=pack")),
        ored(2, "1:ncpus=1||1:ncpus=1:mem=1gb", "1", None),
    ];
    let m = Mirror::new(snapshot(vec![node("n1", 4)], jobs, &[]), SchedConfig::default());
    let d = cycle(&m, 0);
    assert_eq!(runs(&d), vec![("1.svr", "(n1:ncpus=2)", Some(1)), ("2.svr", "(n1:ncpus=1)", Some(0))]);
    assert!(!logged(&d, "1.svr", "None of the select specification could be satisfied"));
    // qrun takes the same order.
    let d = qrun(&m, "1.svr", 0);
    assert_eq!(runs(&d), vec![("1.svr", "(n1:ncpus=2)", Some(1))]);
}

#[test]
fn none_fitting_comments_and_logs_for_the_first_only() {
    let jobs = vec![ored(1, "1:ncpus=8||1:ncpus=6", "8", None)];
    let m = Mirror::new(snapshot(vec![node("n1", 4)], jobs, &[]), SchedConfig::default());
    let d = cycle(&m, 0);
    assert!(runs(&d).is_empty());
    assert!(logged(&d, "1.svr", "None of the select specification could be satisfied"));
    let comment = d
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Update(u) if u.job_id == "1.svr" => u.attrs.iter().find(|a| a.name() == "comment"),
            _ => None,
        })
        .map(Attr::value);
    // The first alternative's reason (8 cpus), not the second's.
    assert_eq!(comment, Some("Can Never Run: Insufficient amount of resource: ncpus (R: 8 A: 4 T: 4)"));
}

#[test]
fn only_the_first_alternative_is_planned_as_a_top_job() {
    let mut busy = ored(9, "1:ncpus=4", "4", None);
    busy.state = 'R';
    busy.substate = 42;
    busy.exec_vnode = Some("(n1:ncpus=4)".into());
    busy.resources.push(("walltime".into(), "01:00:00".into()));
    busy.select = "1:ncpus=4".into();
    busy.resources.retain(|(n, _)| n != "select");
    busy.resources.push(("select".into(), "1:ncpus=4".into()));
    let mut job = ored(1, "1:ncpus=4||1:ncpus=2", "4", Some("walltime=00:12:00||walltime=00:08:00"));
    job.resources.push(("walltime".into(), "00:12:00".into()));
    let config = SchedConfig { strict_ordering: true, ..SchedConfig::default() };
    let mut full = node("n1", 4);
    full.resources_assigned.push(("ncpus".into(), "4".into()));
    full.jobs = vec!["9.svr".into()];
    let m = Mirror::new(snapshot(vec![full], vec![busy, job], &[]), config);
    let d = cycle(&m, 0);
    assert!(runs(&d).is_empty());
    let estimated = d.actions.iter().find_map(|a| match a {
        Action::Update(u) if u.job_id == "1.svr" => {
            u.attrs.iter().find(|a| a.name() == "estimated.exec_vnode").map(|a| a.value().to_string())
        }
        _ => None,
    });
    assert_eq!(estimated.as_deref(), Some("(n1:ncpus=4)"));
}

#[test]
fn each_alternative_is_held_to_the_limits_with_its_own_amounts() {
    // A run limit of 2 cpus: the 4-cpu first alternative is over it, the 2-cpu second runs.
    let jobs = vec![ored(1, "1:ncpus=4||1:ncpus=2", "4", None)];
    let m = Mirror::new(
        snapshot(vec![node("n1", 8)], jobs, &[("max_run_res.ncpus", "[o:PBS_ALL=2]")]),
        SchedConfig::default(),
    );
    let d = cycle(&m, 0);
    assert_eq!(runs(&d), vec![("1.svr", "(n1:ncpus=2)", Some(1))]);
}

#[test]
fn a_comment_sent_is_known_to_every_alternative_so_the_next_cycle_sends_nothing() {
    let jobs = vec![ored(1, "1:ncpus=8||1:ncpus=6", "8", None), ored(2, "1:ncpus=8||1:ncpus=6", "8", None)];
    let mut m = Mirror::new(snapshot(vec![node("n1", 4)], jobs, &[]), SchedConfig::default());
    let first = cycle(&m, 0);
    assert_eq!(first.updates().count(), 2);
    // The second job's classes were known: it is not logged again.
    assert!(!logged(&first, "2.svr", "None of the select specification could be satisfied"));
    let sent: Vec<Action> = first.updates().cloned().map(Action::Update).collect();
    m.note_sent(0, &sent, &Default::default());
    let next = cycle(&m, 0);
    assert_eq!(next.updates().count(), 0, "{:?}", next.actions);
}

#[test]
fn an_arrays_subjobs_try_the_alternatives_as_a_plain_job_does() {
    // Four subjobs asking 8 cpus or else 2, on a 4-cpu and a 2-cpu node, at most 3 at
    // once: each subjob runs the first alternative that fits (none fits 8: all run 2).
    let mut array = ored(1, "1:ncpus=8||1:ncpus=2", "8", None);
    array.id = "1[].svr".into();
    array.attrs.push(Attr::new("array_indices_remaining", "0-3"));
    array.attrs.push(Attr::new("max_run_subjobs", "3"));
    // Subjob 7, requeued, queued on its own record.
    let mut requeued = ored(1, "1:ncpus=8||1:ncpus=2", "8", None);
    requeued.id = "1[7].svr".into();
    let m =
        Mirror::new(snapshot(vec![node("n1", 4), node("n2", 2)], vec![array, requeued], &[]), SchedConfig::default());
    let d = cycle(&m, 0);
    assert_eq!(
        runs(&d),
        vec![
            ("1[0].svr", "(n1:ncpus=2)", Some(1)),
            ("1[1].svr", "(n1:ncpus=2)", Some(1)),
            ("1[2].svr", "(n2:ncpus=2)", Some(1)),
        ]
    );
    // The fourth waits for max_run_subjobs, which is not "none could be satisfied".
    assert!(!logged(&d, "1[3].svr", "None of the select specification could be satisfied"));
    // With room for the first alternative, it is the one a subjob runs; qrun of a queued
    // index or of the requeued subjob alike.
    let m2 = Mirror::new(
        snapshot(vec![node("n1", 8)], m.jobs.iter().flatten().map(|j| j.view.clone()).collect(), &[]),
        SchedConfig::default(),
    );
    assert_eq!(runs(&qrun(&m2, "1[3].svr", 0)), vec![("1[3].svr", "(n1:ncpus=8)", Some(0))]);
    assert_eq!(runs(&qrun(&m2, "1[7].svr", 0)), vec![("1[7].svr", "(n1:ncpus=8)", Some(0))]);
}

/// n1 with 4 cpus of which `busy` are taken by a running job.
fn busy_node(busy: u32) -> SchedNode {
    let mut n = node("n1", 4);
    if busy > 0 {
        n.resources_assigned.push(("ncpus".into(), busy.to_string()));
        n.jobs = vec!["99.svr".into()];
    }
    n
}

#[test]
fn jobs_asking_alike_share_their_failure_within_a_cycle_and_not_beyond() {
    // Three jobs asking the same alternatives, n1 full: the first looks at each alternative,
    // the others are decided by what became of it, with the first alternative's comment.
    let jobs: Vec<SchedJob> = (1..=3).map(|seq| ored(seq, "1:ncpus=4||1:ncpus=2", "4", None)).collect();
    let mut m = Mirror::new(snapshot(vec![busy_node(4)], jobs, &[]), SchedConfig::default());
    let d = cycle(&m, 0);
    assert!(runs(&d).is_empty());
    let full = "Not Running: Insufficient amount of resource: ncpus (R: 4 A: 0 T: 4)";
    for id in ["1.svr", "2.svr", "3.svr"] {
        assert_eq!(comment_of(&d, id), Some(full), "{id}");
    }
    assert!(logged(&d, "1.svr", "None of the select specification could be satisfied"));
    assert!(!logged(&d, "2.svr", "None of the select specification could be satisfied"));
    assert!(!logged(&d, "3.svr", "Considering job to run"));
    let sent: Vec<Action> = d.updates().cloned().map(Action::Update).collect();
    m.note_sent(0, &sent, &Default::default());
    // Two cpus are freed between cycles: what failed last cycle is looked at again. Job 1
    // runs its second alternative, job 2 finds n1 full again and job 3 shares that.
    m.apply(pbs_proto::sched::SchedChange::Node { node: Box::new(busy_node(2)) });
    let d = cycle(&m, 0);
    assert_eq!(runs(&d), vec![("1.svr", "(n1:ncpus=2)", Some(1))]);
    assert!(logged(&d, "2.svr", "None of the select specification could be satisfied"));
    assert!(!logged(&d, "3.svr", "None of the select specification could be satisfied"));
    // n1 is full again once job 1 is placed: job 3 shares job 2's new reason.
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Not enough free nodes available"));
    assert_eq!(comment_of(&d, "3.svr"), comment_of(&d, "2.svr"));
    assert!(!logged(&d, "3.svr", "Considering job to run"));
    // All four cpus free: job 1 takes the first alternative, job 2 finds the rest.
    m.apply(pbs_proto::sched::SchedChange::Node { node: Box::new(busy_node(0)) });
    let d = cycle(&m, 0);
    assert_eq!(runs(&d), vec![("1.svr", "(n1:ncpus=4)", Some(0))]);
}

#[test]
fn jobs_whose_alternatives_differ_only_in_sched_job_wide_are_not_one_class() {
    // Dedicated time from 600 s on: an hour-long alternative would cross it, a five-minute
    // one ends before it. Both jobs show the same Resource_List; only the job-wide resources
    // the server merged (sched_job_wide, e.g. defaults changed in between) differ.
    let long = "walltime=01:00:00||walltime=01:00:00";
    let mut first = ored(1, "1:ncpus=1||1:ncpus=2", "1", Some(long));
    let mut second = ored(2, "1:ncpus=1||1:ncpus=2", "1", Some(long));
    second.attrs = vec![Attr::new("sched_job_wide", "walltime=01:00:00||walltime=00:05:00")];
    for job in [&mut first, &mut second] {
        job.resources.push(("walltime".into(), "01:00:00".into()));
    }
    let config = SchedConfig { dedicated: vec![(600, 100_000)], ..SchedConfig::default() };
    let m = Mirror::new(snapshot(vec![node("n1", 4)], vec![first, second], &[]), config);
    let d = cycle(&m, 0);
    assert_eq!(runs(&d), vec![("2.svr", "(n1:ncpus=2)", Some(1))]);
}

#[test]
fn a_starving_job_with_alternatives_is_planned_on_its_first() {
    // n1: 2 of 4 cpus busy until 100,100; the job (4 cpus, else 3) has waited since 1,000,
    // past max_starve (24 h): without strict ordering it is still a top job, planned on
    // its first alternative.
    let mut busy = ored(9, "1:ncpus=2", "2", None);
    busy.state = 'R';
    busy.substate = 42;
    busy.stime = 100_000;
    busy.exec_vnode = Some("(n1:ncpus=2)".into());
    busy.resources.push(("walltime".into(), "00:01:40".into()));
    busy.select = "1:ncpus=2".into();
    let mut job = ored(1, "1:ncpus=4||1:ncpus=3", "4", Some("walltime=00:00:50||walltime=00:00:50"));
    job.resources.push(("walltime".into(), "00:00:50".into()));
    (job.qtime, job.etime) = (1_000, 1_000);
    let mut n1 = node("n1", 4);
    n1.resources_assigned.push(("ncpus".into(), "2".into()));
    n1.jobs = vec!["9.svr".into()];
    let m = Mirror::new(snapshot(vec![n1], vec![busy, job], &[]), SchedConfig::default());
    let d = cycle(&m, 100_010);
    assert!(runs(&d).is_empty());
    let estimate = |name: &str| {
        d.updates()
            .filter(|u| u.job_id == "1.svr")
            .find_map(|u| u.attrs.iter().find(|a| a.name() == name))
            .map(|a| a.value().to_string())
    };
    assert_eq!(estimate("estimated.start_time").as_deref(), Some("100100"));
    assert_eq!(estimate("estimated.exec_vnode").as_deref(), Some("(n1:ncpus=4)"));
}
