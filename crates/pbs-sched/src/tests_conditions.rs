//! Tests of conditional chunk requests (`color!=green`) and `nfilter` through whole cycles:
//! where jobs go, the comments of jobs no vnode suits, and like-node groups.

use pbs_proto::Attr;
use pbs_proto::sched::{SchedChange, SchedJob, SchedNode, SchedQueue, Snapshot};

use crate::test_support::{node_with, queued, snapshot, workq};
use crate::{Decisions, Mirror, SchedConfig, cycle};

fn node(name: &str, extra: &[(&str, &str)]) -> SchedNode {
    node_with(name, "4", "8gb", extra)
}

fn job(seq: u64, select: &str, place: &str, extra: &[(&str, &str)]) -> SchedJob {
    let mut resources: Vec<(String, String)> =
        vec![("ncpus".into(), "1".into()), ("place".into(), place.into()), ("select".into(), select.into())];
    resources.extend(extra.iter().map(|(r, v)| (r.to_string(), v.to_string())));
    queued(seq, "workq", select, place, resources)
}

fn decide(nodes: Vec<SchedNode>, jobs: Vec<SchedJob>) -> Decisions {
    cycle(&Mirror::new(snapshot(vec![workq()], nodes, jobs), SchedConfig::default()), 0)
}

fn exec_of<'a>(d: &'a Decisions, id: &str) -> Option<&'a str> {
    d.runs().find(|r| r.job_id == id).map(|r| r.exec_vnode.as_str())
}

fn comment_of<'a>(d: &'a Decisions, id: &str) -> Option<&'a str> {
    d.updates().find(|u| u.job_id == id).and_then(|u| u.attrs.iter().find(|a| a.name() == "comment")).map(Attr::value)
}

fn colored() -> Vec<SchedNode> {
    vec![node("n1", &[("color", "green")]), node("n2", &[]), node("n3", &[("color", "blue")])]
}

#[test]
fn unequal_runs_on_a_vnode_with_another_value_never_on_an_unset_one() {
    let d = decide(colored(), vec![job(1, "1:ncpus=1:color!=green", "free", &[])]);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n3:ncpus=1)"));
    // `=` keeps its meaning beside it.
    let d = decide(colored(), vec![job(1, "1:ncpus=1:color=green", "free", &[])]);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n1:ncpus=1)"));
}

#[test]
fn numbers_compare_as_numbers_and_strings_byte_by_byte() {
    let nodes = vec![
        node("n1", &[("cores", "8"), ("ver", "ver_012")]),
        node("n2", &[("cores", "16"), ("ver", "ver_12")]),
        node("n3", &[("cores", "32"), ("ver", "ver_045")]),
    ];
    let d = decide(
        nodes,
        vec![
            job(1, "1:ncpus=1:cores>=16", "free", &[]),
            job(2, "1:ncpus=1:ver>ver_045", "free", &[]),
            job(3, "1:ncpus=1:cores>9", "free", &[]),
            job(4, "1:ncpus=1:cores<8", "free", &[]),
        ],
    );
    assert_eq!(exec_of(&d, "1.svr"), Some("(n2:ncpus=1)"));
    // "ver_12" > "ver_045": '1' sorts after '0'.
    assert_eq!(exec_of(&d, "2.svr"), Some("(n2:ncpus=1)"));
    // 16 > 9 as numbers, though no value is above "9" as a string.
    assert_eq!(exec_of(&d, "3.svr"), Some("(n2:ncpus=1)"));
    assert_eq!(comment_of(&d, "4.svr"), Some("Can Never Run: Insufficient amount of resource: cores (R: <8)"));
}

#[test]
fn a_string_resource_whose_values_read_as_numbers_compares_as_a_string() {
    let queue = SchedQueue {
        name: "workq".into(),
        attrs: vec![Attr::new("queue_type", "Execution"), Attr::new("enabled", "True"), Attr::new("started", "True")],
    };
    let nodes = vec![node("n1", &[("build", "85")]), node("n2", &[("build", "120")])];
    let jobs = vec![
        job(1, "1:ncpus=1:build>100", "free", &[]),
        // `=` matches the string: not an amount the first job takes from the vnode.
        job(2, "1:ncpus=1:build=85", "free", &[]),
        job(3, "1:ncpus=1:build=85", "free", &[]),
    ];
    let snapshot = Snapshot {
        server_name: "svr".into(),
        server: vec![Attr::new("scheduling", "True")],
        sched: vec![],
        resources: vec![("build".into(), "string".into())],
        queues: vec![queue],
        nodes: nodes.clone(),
        jobs,
    };
    let mut m = Mirror::new(snapshot, SchedConfig::default());
    let d = cycle(&m, 0);
    // "85" > "100" byte by byte ('8' after '1'): n1, the first vnode, meets it.
    assert_eq!(exec_of(&d, "1.svr"), Some("(n1:ncpus=1)"));
    assert_eq!(exec_of(&d, "2.svr"), Some("(n1:ncpus=1)"));
    assert_eq!(exec_of(&d, "3.svr"), Some("(n1:ncpus=1)"));
    // Retyped to long (qmgr), the server sends the definitions then every node again:
    // now 85 < 100 and only n2 meets it.
    m.apply(SchedChange::Resources { defs: vec![("build".into(), "long".into())] });
    for node in nodes {
        m.apply(SchedChange::Node { node: Box::new(node) });
    }
    assert_eq!(exec_of(&cycle(&m, 0), "1.svr"), Some("(n2:ncpus=1)"));
}

#[test]
fn a_condition_no_vnode_meets_can_never_run_and_says_what_was_asked() {
    let nodes = vec![node("n1", &[("color", "green")]), node("n2", &[("color", "green")])];
    let d = decide(nodes, vec![job(1, "1:ncpus=1:color!=green", "free", &[])]);
    assert_eq!(
        comment_of(&d, "1.svr"),
        Some("Can Never Run: Insufficient amount of resource: color (R: !=green A: green)")
    );
}

#[test]
fn nfilter_keeps_the_job_to_the_vnodes_it_passes() {
    let nodes = vec![
        node("n1", &[("os_ver", "rhel5"), ("color", "blue")]),
        node("n2", &[("os_ver", "rhel7"), ("color", "black")]),
        node("n3", &[("os_ver", "rhel7"), ("color", "blue")]),
    ];
    let filter = "resources_available['os_ver']>=rhel6 and resources_available['color']=='blue'";
    let none = "resources_available['os_ver']=='rhel9'";
    let d = decide(
        nodes,
        vec![
            job(1, "1:ncpus=1", "free", &[("nfilter", filter)]),
            job(2, "1:ncpus=1", "free", &[("nfilter", none)]),
            job(3, "1:ncpus=1", "free", &[("nfilter", "resources_available['os_ver']>=")]),
        ],
    );
    assert_eq!(exec_of(&d, "1.svr"), Some("(n3:ncpus=1)"));
    assert_eq!(comment_of(&d, "2.svr"), Some("Can Never Run: No available resources on nodes"));
    assert_eq!(comment_of(&d, "3.svr"), Some("Can Never Run: Invalid Job/Resv invalid nfilter"));
}

/// Use case 2 of the design: like nodes by a non-consumable, with a condition or a filter
/// that rules one group out. The first group has room; without the condition the job
/// would go there.
#[test]
fn like_node_groups_count_only_the_vnodes_that_meet_the_conditions() {
    let nodes = vec![
        node("n1", &[("switch", "s1"), ("cpu_type", "sandybridge")]),
        node("n2", &[("switch", "s1"), ("cpu_type", "sandybridge")]),
        node("n3", &[("switch", "s2"), ("cpu_type", "ivybridge")]),
        node("n4", &[("switch", "s2"), ("cpu_type", "ivybridge")]),
    ];
    let d = decide(nodes.clone(), vec![job(1, "2:ncpus=1", "scatter:group=switch", &[])]);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n1:ncpus=1)+(n2:ncpus=1)"));
    let d = decide(nodes.clone(), vec![job(1, "2:ncpus=1:cpu_type!=sandybridge", "scatter:group=switch", &[])]);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n3:ncpus=1)+(n4:ncpus=1)"));
    let filter = [("nfilter", "not resources_available['cpu_type']=='sandybridge'")];
    let d = decide(nodes.clone(), vec![job(1, "2:ncpus=1", "scatter:group=switch", &filter)]);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n3:ncpus=1)+(n4:ncpus=1)"));
    // A group of two where only one vnode meets the condition is not a group of two.
    let mut mixed = nodes;
    mixed[1] = node("n2", &[("switch", "s1"), ("cpu_type", "ivybridge")]);
    let d = decide(mixed, vec![job(1, "2:ncpus=1:cpu_type!=sandybridge", "scatter:group=switch", &[])]);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n3:ncpus=1)+(n4:ncpus=1)"));
}
