//! Tests of the pure core on constructed snapshots: order, placement by place and
//! sharing, the exact comments, limits, node states and queues, incremental updates,
//! strict ordering, arrays and qrun.

use pbs_proto::Attr;
use pbs_proto::sched::{Action, SchedChange, SchedJob, SchedNode, SchedQueue, Snapshot};

use crate::cycle::Preemption;
use crate::test_support::{comment_of, node_with, queued, snapshot};
use crate::{Decisions, Mirror, SchedConfig, cycle, qrun};

fn queue(name: &str, priority: i64, extra: &[(&str, &str)]) -> SchedQueue {
    let mut attrs = vec![
        Attr::new("queue_type", "Execution"),
        Attr::new("enabled", "True"),
        Attr::new("started", "True"),
        Attr::new("Priority", priority.to_string()),
    ];
    attrs.extend(extra.iter().map(|(n, v)| Attr::new(*n, *v)));
    SchedQueue { name: name.into(), attrs }
}

fn node(name: &str, ncpus: u32, mem: &str) -> SchedNode {
    node_with(name, &ncpus.to_string(), mem, &[])
}

fn with_res(mut n: SchedNode, name: &str, value: &str) -> SchedNode {
    match n.resources_available.iter_mut().find(|(r, _)| r == name) {
        Some(entry) => entry.1 = value.into(),
        None => n.resources_available.push((name.into(), value.into())),
    }
    n
}

fn job(seq: u64, queue: &str, select: &str, place: &str) -> SchedJob {
    let ncpus: u64 = select
        .split('+')
        .map(|chunk| {
            let mut parts = chunk.split(':');
            let count: u64 = parts.next().and_then(|c| c.parse().ok()).unwrap_or(1);
            let each: u64 =
                chunk.split(':').find_map(|p| p.strip_prefix("ncpus=").and_then(|v| v.parse().ok())).unwrap_or(0);
            count * each
        })
        .sum();
    let resources =
        vec![("ncpus".into(), ncpus.to_string()), ("place".into(), place.into()), ("select".into(), select.into())];
    queued(seq, queue, select, place, resources)
}

fn owned(mut j: SchedJob, owner: &str, group: &str) -> SchedJob {
    j.owner = owner.into();
    j.group = group.into();
    j
}

fn prio(mut j: SchedJob, priority: i64) -> SchedJob {
    j.priority = priority;
    j
}

fn snap(queues: Vec<SchedQueue>, nodes: Vec<SchedNode>, jobs: Vec<SchedJob>) -> Snapshot {
    snapshot(queues, nodes, jobs)
}

fn mirror(s: Snapshot) -> Mirror {
    Mirror::new(s, SchedConfig::default())
}

fn run_ids(d: &Decisions) -> Vec<&str> {
    d.runs().map(|r| r.job_id.as_str()).collect()
}

fn exec_of<'a>(d: &'a Decisions, id: &str) -> Option<&'a str> {
    d.runs().find(|r| r.job_id == id).map(|r| r.exec_vnode.as_str())
}

fn four_nodes() -> Vec<SchedNode> {
    (1..=4).map(|i| node(&format!("n{i}"), 4, "8gb")).collect()
}

#[test]
fn order_is_queue_priority_then_job_priority_then_submission() {
    let s = snap(
        vec![queue("qa", 10, &[]), queue("qb", 20, &[])],
        vec![node("n1", 8, "8gb")],
        vec![
            job(1, "qa", "1:ncpus=1", "pack"),
            job(2, "qb", "1:ncpus=1", "pack"),
            prio(job(3, "qb", "1:ncpus=1", "pack"), 5),
            prio(job(4, "qa", "1:ncpus=1", "pack"), 5),
            prio(job(5, "qb", "1:ncpus=1", "pack"), 5),
        ],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(run_ids(&d), vec!["3.svr", "5.svr", "2.svr", "4.svr", "1.svr"]);
    assert!(d.updates().next().is_none());
}

/// qorder swaps two jobs' `queue_rank`: the mirror re-sorts them when the change comes, so
/// the next cycle considers them in the swapped order.
#[test]
fn a_queue_rank_qorder_swapped_orders_jobs_of_equal_priority() {
    let ranked = |mut j: SchedJob, rank: u64| {
        j.attrs.push(Attr::new("queue_rank", rank.to_string()));
        j
    };
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 1, "8gb")],
        vec![job(1, "workq", "1:ncpus=1", "pack"), job(2, "workq", "1:ncpus=1", "pack")],
    );
    let mut m = mirror(s);
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["1.svr"]);
    m.apply(SchedChange::Job { job: Box::new(ranked(job(1, "workq", "1:ncpus=1", "pack"), 2)) });
    m.apply(SchedChange::Job { job: Box::new(ranked(job(2, "workq", "1:ncpus=1", "pack"), 1)) });
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["2.svr"]);
}

#[test]
fn equal_priority_queues_interleave_by_job_priority() {
    let s = snap(
        vec![queue("qa", 0, &[]), queue("qb", 0, &[])],
        vec![node("n1", 8, "8gb")],
        vec![
            job(1, "qa", "1:ncpus=1", "pack"),
            prio(job(2, "qb", "1:ncpus=1", "pack"), 3),
            job(3, "qb", "1:ncpus=1", "pack"),
        ],
    );
    assert_eq!(run_ids(&cycle(&mirror(s), 0)), vec!["2.svr", "1.svr", "3.svr"]);
}

#[test]
fn free_pack_scatter_placements() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        four_nodes(),
        vec![
            job(1, "workq", "2:ncpus=2", "free"),
            job(2, "workq", "2:ncpus=1", "scatter"),
            job(3, "workq", "2:ncpus=3", "pack"),
            job(4, "workq", "1:ncpus=2:mem=1gb+1:ncpus=1", "pack"),
        ],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n1:ncpus=2)+(n1:ncpus=2)"));
    // n1 is full (job-busy) now: scatter takes n2 and n3.
    assert_eq!(exec_of(&d, "2.svr"), Some("(n2:ncpus=1)+(n3:ncpus=1)"));
    // Two chunks of 3 cpus never fit on one 4-cpu host.
    assert_eq!(exec_of(&d, "3.svr"), None);
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Insufficient amount of resource: ncpus "));
    assert_eq!(exec_of(&d, "4.svr"), Some("(n2:ncpus=2:mem=1048576kb)+(n2:ncpus=1)"));
}

#[test]
fn scatter_is_per_host_and_vscatter_per_vnode() {
    let vnodes = vec![
        with_res(node("v1", 2, "4gb"), "host", "h1"),
        with_res(node("v2", 2, "4gb"), "host", "h1"),
        with_res(node("v3", 2, "4gb"), "host", "h2"),
        with_res(node("v4", 2, "4gb"), "host", "h2"),
    ];
    let s = snap(vec![queue("workq", 0, &[])], vnodes.clone(), vec![job(1, "workq", "2:ncpus=1", "scatter")]);
    assert_eq!(exec_of(&cycle(&mirror(s), 0), "1.svr"), Some("(v1:ncpus=1)+(v3:ncpus=1)"));
    let s = snap(vec![queue("workq", 0, &[])], vnodes, vec![job(1, "workq", "2:ncpus=1", "vscatter")]);
    assert_eq!(exec_of(&cycle(&mirror(s), 0), "1.svr"), Some("(v1:ncpus=1)+(v2:ncpus=1)"));
}

#[test]
fn exclusive_placement_and_node_sharing() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        four_nodes(),
        vec![
            job(1, "workq", "1:ncpus=1", "excl"),
            job(2, "workq", "1:ncpus=1", "pack"),
            job(3, "workq", "1:ncpus=1", "scatter:excl"),
            job(4, "workq", "1:ncpus=1", "pack"),
        ],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n1:ncpus=1)"));
    assert_eq!(exec_of(&d, "2.svr"), Some("(n2:ncpus=1)"));
    // n2 has a job: an exclusive request takes n3.
    assert_eq!(exec_of(&d, "3.svr"), Some("(n3:ncpus=1)"));
    assert_eq!(exec_of(&d, "4.svr"), Some("(n2:ncpus=1)"));

    let mut nodes = four_nodes();
    nodes[0].sharing = "force_excl".into();
    nodes[1].sharing = "default_excl".into();
    let s = snap(
        vec![queue("workq", 0, &[])],
        nodes,
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            job(2, "workq", "1:ncpus=1", "shared"),
            job(3, "workq", "1:ncpus=1", "shared"),
        ],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n1:ncpus=1)"));
    // default_excl yields to place=shared: both shared jobs share n2.
    assert_eq!(exec_of(&d, "2.svr"), Some("(n2:ncpus=1)"));
    assert_eq!(exec_of(&d, "3.svr"), Some("(n2:ncpus=1)"));
}

#[test]
fn group_placement_uses_one_set() {
    let mut nodes: Vec<SchedNode> = four_nodes();
    for (i, n) in nodes.iter_mut().enumerate() {
        n.resources_available.push(("switch".into(), if i < 2 { "s1" } else { "s2" }.into()));
    }
    nodes[0].state = "job-busy".into();
    nodes[0].resources_assigned = vec![("ncpus".into(), "4".into())];
    let s = snap(vec![queue("workq", 0, &[])], nodes, vec![job(1, "workq", "2:ncpus=4", "scatter:group=switch")]);
    let d = cycle(&mirror(s), 0);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n3:ncpus=4)+(n4:ncpus=4)"));
}

#[test]
fn insufficient_resource_comments_have_openpbs_text() {
    // OpenPBS test_sched_allpart test_rassn / test_free_nodes / test_too_many_ncpus.
    let nodes = vec![node("vn0", 1, "1gb"), node("vn1", 1, "1gb")];
    let s = snap(
        vec![queue("workq", 0, &[])],
        nodes.clone(),
        vec![job(1, "workq", "1:ncpus=1", "pack"), job(2, "workq", "2:ncpus=1", "free")],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(run_ids(&d), vec!["1.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Insufficient amount of resource: ncpus (R: 2 A: 1 T: 2)"));

    let s = snap(
        vec![queue("workq", 0, &[])],
        nodes.clone(),
        vec![job(1, "workq", "2:ncpus=1", "free"), job(2, "workq", "2:ncpus=1", "free")],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Not enough free nodes available"));

    let s = snap(vec![queue("workq", 0, &[])], nodes, vec![job(1, "workq", "3:ncpus=1", "free")]);
    let d = cycle(&mirror(s), 0);
    assert_eq!(comment_of(&d, "1.svr"), Some("Can Never Run: Insufficient amount of resource: ncpus (R: 3 A: 2 T: 2)"));
}

#[test]
fn memory_comments_print_sizes() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 2, "4gb")],
        vec![
            job(1, "workq", "1:ncpus=1:mem=2gb", "pack"),
            job(2, "workq", "1:ncpus=1:mem=4gb", "pack"),
            job(3, "workq", "1:ncpus=1:mem=8gb", "pack"),
        ],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(run_ids(&d), vec!["1.svr"]);
    assert_eq!(
        comment_of(&d, "2.svr"),
        Some("Not Running: Insufficient amount of resource: mem (R: 4gb A: 2gb T: 4gb)")
    );
    assert_eq!(
        comment_of(&d, "3.svr"),
        Some("Can Never Run: Insufficient amount of resource: mem (R: 8gb A: 4gb T: 4gb)")
    );
}

#[test]
fn node_level_and_non_consumable_comments() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 4, "8gb"), node("n2", 4, "8gb")],
        vec![job(1, "workq", "1:ncpus=8", "pack"), job(2, "workq", "1:ncpus=1:vnode=foo", "pack")],
    );
    let d = cycle(&mirror(s), 0);
    // Enough cpus over the cluster, but no node has 8: OpenPBS names only the resource.
    assert_eq!(comment_of(&d, "1.svr"), Some("Not Running: Insufficient amount of resource: ncpus "));
    assert_eq!(comment_of(&d, "2.svr"), Some("Can Never Run: Insufficient amount of resource: vnode (foo != n1,n2)"));
}

#[test]
fn run_limits_give_openpbs_comments() {
    let limited = |server: Vec<Attr>, queue_extra: &[(&str, &str)], jobs: Vec<SchedJob>| {
        let mut s = snap(vec![queue("workq", 0, queue_extra)], four_nodes(), jobs);
        s.server.extend(server);
        cycle(&mirror(s), 0)
    };
    let two = || vec![job(1, "workq", "1:ncpus=1", "pack"), job(2, "workq", "1:ncpus=1", "pack")];
    let d = limited(vec![], &[("max_run", "[o:PBS_ALL=1]")], two());
    assert_eq!(run_ids(&d), vec!["1.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Queue workq job limit has been reached."));

    let d = limited(vec![Attr::new("max_running", "1")], &[], two());
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Server job limit has been reached."));

    let mixed = || {
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            job(2, "workq", "1:ncpus=1", "pack"),
            owned(job(3, "workq", "1:ncpus=1", "pack"), "bob", "staff"),
        ]
    };
    let d = limited(vec![Attr::new("max_run", "[u:PBS_GENERIC=1]")], &[], mixed());
    assert_eq!(run_ids(&d), vec!["1.svr", "3.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: User has reached server running job limit."));

    let d = limited(vec![Attr::new("max_run", "[u:PBS_GENERIC=5],[u:alice=1]")], &[], mixed());
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Server job limit reached for user alice"));

    let d = limited(vec![], &[("max_user_run", "1")], mixed());
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: User has reached queue workq running job limit."));

    let d = limited(vec![], &[("max_run", "[g:users=1]")], mixed());
    assert_eq!(run_ids(&d), vec!["1.svr", "3.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Queue workq job limit reached for group users"));

    // A job already running counts.
    let mut running = job(9, "workq", "1:ncpus=1", "pack");
    running.state = 'R';
    let d =
        limited(vec![Attr::new("max_run", "[o:PBS_ALL=1]")], &[], vec![running, job(1, "workq", "1:ncpus=1", "pack")]);
    assert!(d.runs().next().is_none());
    assert_eq!(comment_of(&d, "1.svr"), Some("Not Running: Server job limit has been reached."));
}

fn with_project(mut j: SchedJob, project: &str) -> SchedJob {
    j.attrs.push(Attr::new("project", project));
    j
}

#[test]
fn resource_and_project_run_limits_give_openpbs_comments_and_log_lines() {
    let limited = |server: Vec<Attr>, queue_extra: &[(&str, &str)], jobs: Vec<SchedJob>| {
        let mut s = snap(vec![queue("workq", 0, queue_extra)], four_nodes(), jobs);
        s.server.extend(server);
        cycle(&mirror(s), 0)
    };
    let mixed = || {
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            job(2, "workq", "1:ncpus=1", "pack"),
            owned(job(3, "workq", "1:ncpus=1", "pack"), "bob", "staff"),
        ]
    };
    // runlimit_max_run_res_qstat_s.txt and runlimit_max_run_res_sched_log.txt.
    let d = limited(vec![Attr::new("max_run_res.ncpus", "[u:PBS_GENERIC=1]")], &[], mixed());
    assert_eq!(run_ids(&d), vec!["1.svr", "3.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Server per-user limit reached on resource ncpus"));
    let lines: Vec<(&str, &str, &str)> =
        d.considered.iter().map(|l| (l.event, l.object_name.as_str(), l.message.as_str())).collect();
    assert_eq!(
        lines,
        vec![
            ("0080", "1.svr", "Considering job to run"),
            ("0040", "1.svr", "Job run"),
            ("0080", "2.svr", "Considering job to run"),
            ("0040", "2.svr", "Server per-user limit reached on resource ncpus"),
            ("0080", "3.svr", "Considering job to run"),
            ("0040", "3.svr", "Job run"),
        ]
    );

    let d = limited(vec![Attr::new("max_run_res.ncpus", "[u:PBS_GENERIC=5],[u:alice=1]")], &[], mixed());
    assert_eq!(
        comment_of(&d, "2.svr"),
        Some("Not Running: would exceed user alice's limit on resource ncpus in complex")
    );
    let d = limited(vec![Attr::new("max_run_res.ncpus", "[o:PBS_ALL=2]")], &[], mixed());
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: would exceed overall limit on resource ncpus in complex"));
    let d = limited(vec![Attr::new("max_run_res.ncpus", "[g:PBS_GENERIC=1]")], &[], mixed());
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Server per-group limit reached on resource ncpus"));
    let d = limited(vec![], &[("max_run_res.ncpus", "[u:PBS_GENERIC=1]")], mixed());
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Queue workq per-user limit reached on resource ncpus"));
    // runlimit_max_run_overall_comment.txt, runlimit_max_run_user_comment.txt.
    let d = limited(vec![Attr::new("max_run", "[o:PBS_ALL=2]")], &[], mixed());
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Server job limit has been reached."));
    assert!(d.considered.iter().any(|l| l.object_name == "3.svr" && l.message == "Server job limit reached"));

    // Projects: the job's own, or OpenPBS's default when it names none.
    let projects = || {
        vec![
            with_project(job(1, "workq", "1:ncpus=1", "pack"), "p1"),
            with_project(owned(job(2, "workq", "1:ncpus=1", "pack"), "bob", "staff"), "p1"),
            job(3, "workq", "1:ncpus=1", "pack"),
        ]
    };
    let d = limited(vec![Attr::new("max_run", "[p:PBS_GENERIC=1]")], &[], projects());
    assert_eq!(run_ids(&d), vec!["1.svr", "3.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Project has reached server running limit."));
    let d = limited(vec![], &[("max_run", "[p:p1=1]")], projects());
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Queue workq job limit reached for project p1"));
    let d = limited(vec![Attr::new("max_run_res.ncpus", "[p:_pbs_project_default=0]")], &[], projects());
    assert_eq!(
        comment_of(&d, "3.svr"),
        Some("Not Running: would exceed project _pbs_project_default's limit on resource ncpus in complex")
    );
}

#[test]
fn soft_limits_let_jobs_run_and_mark_them_in_the_mirror() {
    let mut s = snap(vec![queue("workq", 0, &[])], four_nodes(), vec![]);
    s.server.push(Attr::new("max_run_soft", "[u:PBS_GENERIC=1]"));
    s.server.push(Attr::new("max_run_res_soft.ncpus", "[o:PBS_ALL=8]"));
    let jobs = vec![job(1, "workq", "1:ncpus=1", "pack"), job(2, "workq", "1:ncpus=1", "pack")];
    s.jobs = jobs.clone();
    let mut m = mirror(s);
    let d = cycle(&m, 0);
    // runlimit_max_run_soft_qstat.txt: both run, the comments are the usual ones.
    assert_eq!(run_ids(&d), vec!["1.svr", "2.svr"]);
    assert!(d.updates().all(|u| !u.attrs.iter().any(|a| a.name() == "comment")));
    let soft: Vec<&str> = d.considered.iter().filter(|l| l.event == "0400").map(|l| l.object_name.as_str()).collect();
    assert_eq!(soft, vec!["2.svr"]);
    // The server's echo: both running. Both are now over alice's soft limit.
    for (mut j, exec) in jobs.into_iter().zip(["(n1:ncpus=1)", "(n1:ncpus=1)"]) {
        j.state = 'R';
        j.exec_vnode = Some(exec.into());
        m.apply(SchedChange::Job { job: Box::new(j) });
    }
    let over = crate::OverSoft { queue: false, server: true };
    assert_eq!(m.over_soft_limits("1.svr"), Some(over));
    assert_eq!(m.over_soft_limits("2.svr"), Some(over));
    // One ends (the server tells it by the job's `Ended` step): the other is within its
    // limits again, with nothing recomputed per job.
    m.apply(SchedChange::JobEnded { id: "2.svr".into(), exit: Some(0), ran: true, at: 100 });
    assert_eq!(m.over_soft_limits("1.svr"), Some(crate::OverSoft::default()));
    assert_eq!(m.over_soft_limits("2.svr"), None);
}

/// OpenPBS's test_preemption_priority_escalation: alice's five jobs are over workq's soft
/// limit (`queue_softlimits`); bob's queued job in workq2 is over the server's
/// (`server_softlimits`, above it). Preempting any one of alice's would bring her back
/// under her limit and lift her jobs to `normal_jobs`, above bob's job: none is taken, each
/// logged, and bob's job waits.
#[test]
fn preemption_passes_over_a_job_whose_preemption_escalates_a_level() {
    let queues = vec![queue("workq", 0, &[("max_run_res_soft.ncpus", "[u:alice=4]")]), queue("workq2", 0, &[])];
    let mut jobs: Vec<SchedJob> = (1..=5)
        .map(|i| owned(running_job(job(i, "workq", "1:ncpus=1", "pack"), "n1", 100 + i as i64, &[]), "alice", "g"))
        .collect();
    jobs.push(owned(running_job(job(6, "workq2", "1:ncpus=3", "pack"), "n1", 200, &[]), "bob", "g"));
    jobs.push(owned(job(7, "workq2", "1:ncpus=1", "pack"), "bob", "g"));
    let ids: Vec<&str> = vec!["1.svr", "2.svr", "3.svr", "4.svr", "5.svr", "6.svr"];
    let mut s = snap(queues, vec![busy(node("n1", 8, "8gb"), 8, &ids)], jobs);
    s.server.push(Attr::new("max_run_res_soft.ncpus", "[u:bob=2]"));
    s.sched.push(Attr::new("preempt_prio", "express_queue, normal_jobs, server_softlimits, queue_softlimits"));
    let d = cycle(&mirror(s.clone()), 0);
    assert!(d.runs().next().is_none());
    assert_eq!(d.preempt, None);
    let escalating: Vec<&str> = d
        .considered
        .iter()
        .filter(|l| l.message == crate::preempt::ESCALATES)
        .map(|l| l.object_name.as_str())
        .collect();
    assert_eq!(escalating, vec!["5.svr", "4.svr", "3.svr", "2.svr", "1.svr"]);
    // Without bob's server limit his job is a normal one: alice's back under her limit
    // rank as normal jobs too, not above it, and the latest started is preempted.
    s.server.clear();
    let d = cycle(&mirror(s), 0);
    assert_eq!(d.preempt, Some(Preemption { for_job: "7.svr".into(), jobs: vec!["5.svr".into()] }));
}

/// The room a preemption made is the preempting job's: in the cycle after, it is tried
/// before the suspended job resumes (a plain cycle resumes first, before a normal queue).
#[test]
fn the_cycle_after_a_preemption_tries_its_job_before_resuming() {
    let mut suspended = running_job(job(9, "workq", "1:ncpus=4", "pack"), "n1", 100, &[]);
    suspended.state = 'S';
    suspended.substate = 45;
    let jobs = vec![suspended, job(1, "workq", "1:ncpus=4", "pack")];
    let m = mirror(snap(vec![queue("workq", 0, &[])], vec![node("n1", 4, "8gb")], jobs));
    let resumes = |d: &Decisions| d.actions.iter().filter(|a| matches!(a, Action::Resume { .. })).count();
    let d = cycle(&m, 0);
    assert_eq!((resumes(&d), run_ids(&d)), (1, vec![]));
    let d = crate::cycle_after_preemption(&m, 0, Some("1.svr"));
    assert_eq!((resumes(&d), run_ids(&d)), (0, vec!["1.svr"]));
}

#[test]
fn offline_and_down_nodes_are_skipped() {
    let mut nodes = vec![node("n1", 4, "8gb"), node("n2", 4, "8gb"), node("n3", 4, "8gb")];
    nodes[0].state = "offline".into();
    nodes[1].state = "down".into();
    let s = snap(vec![queue("workq", 0, &[])], nodes.clone(), vec![job(1, "workq", "1:ncpus=1", "pack")]);
    assert_eq!(exec_of(&cycle(&mirror(s), 0), "1.svr"), Some("(n3:ncpus=1)"));
    nodes[2].state = "state-unknown,down".into();
    let s = snap(vec![queue("workq", 0, &[])], nodes, vec![job(1, "workq", "1:ncpus=1", "pack")]);
    let d = cycle(&mirror(s), 0);
    assert!(d.runs().next().is_none());
    // As in OpenPBS: nodes that are not free count only what they have assigned.
    assert_eq!(comment_of(&d, "1.svr"), Some("Can Never Run: Insufficient amount of resource: ncpus (R: 1 A: 0 T: 0)"));
}

#[test]
fn node_queue_restricts_both_ways() {
    let mut nodes = vec![node("n1", 4, "8gb"), node("n2", 4, "8gb")];
    nodes[0].queue = Some("qa".into());
    let s = snap(
        vec![queue("workq", 0, &[]), queue("qa", 0, &[])],
        nodes,
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            job(2, "qa", "1:ncpus=2", "pack"),
            job(3, "qa", "1:ncpus=4", "pack"),
        ],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n2:ncpus=1)"));
    assert_eq!(exec_of(&d, "2.svr"), Some("(n1:ncpus=2)"));
    // qa's jobs never spill onto n2.
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Insufficient amount of resource: ncpus (R: 4 A: 2 T: 4)"));
}

#[test]
fn comments_are_not_resent() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 1, "1gb")],
        vec![job(1, "workq", "1:ncpus=2", "pack"), job(2, "workq", "1:ncpus=2", "pack")],
    );
    let mut m = mirror(s);
    let first = cycle(&m, 0);
    assert_eq!(first.updates().count(), 2);
    m.note_sent(1, &first.actions, &first.bookings);
    m.applied(1);
    assert!(cycle(&m, 0).updates().next().is_none());
    // The server's echo of the comment changes nothing either.
    let mut echoed = job(1, "workq", "1:ncpus=2", "pack");
    echoed.comment = comment_of(&first, "1.svr").map(str::to_string);
    m.apply(SchedChange::Job { job: Box::new(echoed) });
    assert!(cycle(&m, 0).updates().next().is_none());
}

#[test]
fn runs_in_flight_stay_booked() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 2, "4gb")],
        vec![job(1, "workq", "1:ncpus=2", "pack"), job(2, "workq", "1:ncpus=2", "pack")],
    );
    let mut m = mirror(s);
    m.apply(SchedChange::Job { job: Box::new(job(2, "workq", "1:ncpus=2", "pack")) });
    let first = cycle(&m, 0);
    assert_eq!(run_ids(&first), vec!["1.svr"]);
    m.note_sent(1, &first.actions, &first.bookings);
    // Before the server confirms, job 1 is not run twice and its cpus are taken.
    let again = cycle(&m, 0);
    assert!(again.runs().next().is_none());
    assert!(again.updates().next().is_none());
}

#[test]
fn a_run_in_flight_holds_its_node_by_the_same_sharing_rule_as_placement() {
    // On an `ignore_excl` node a `place=excl` job holds nothing exclusively, before the
    // server confirms its run as after.
    let mut nodes = vec![node("n1", 4, "4gb")];
    nodes[0].sharing = "ignore_excl".into();
    let s = snap(vec![queue("workq", 0, &[])], nodes, vec![job(1, "workq", "1:ncpus=1", "excl")]);
    let mut m = mirror(s);
    let first = cycle(&m, 0);
    assert_eq!(exec_of(&first, "1.svr"), Some("(n1:ncpus=1)"));
    m.note_sent(1, &first.actions, &first.bookings);
    m.apply(SchedChange::Job { job: Box::new(job(2, "workq", "1:ncpus=1", "pack")) });
    let again = cycle(&m, 0);
    assert_eq!(exec_of(&again, "2.svr"), Some("(n1:ncpus=1)"), "{:?}", again.updates().collect::<Vec<_>>());
}

/// Builds the same state twice: from a snapshot plus changes, and from a snapshot of
/// the result; both must decide the same.
#[test]
fn incremental_updates_equal_a_fresh_snapshot() {
    let base_nodes = four_nodes();
    let s0 = snap(
        vec![queue("workq", 0, &[]), queue("qb", 5, &[])],
        base_nodes.clone(),
        vec![
            job(1, "workq", "1:ncpus=4", "pack"),
            job(2, "workq", "2:ncpus=2", "scatter"),
            job(3, "qb", "1:ncpus=1", "pack"),
        ],
    );
    let mut a = mirror(s0);
    let mut running = job(1, "workq", "1:ncpus=4", "pack");
    running.state = 'R';
    let mut busy = base_nodes[0].clone();
    busy.state = "job-busy".into();
    busy.resources_assigned = vec![("ncpus".into(), "4".into())];
    busy.jobs = vec!["1.svr".into()];
    let n5 = node("n5", 8, "16gb");
    let changes = vec![
        SchedChange::Job { job: Box::new(running.clone()) },
        SchedChange::Node { node: Box::new(busy.clone()) },
        SchedChange::JobGone { id: "3.svr".into() },
        SchedChange::Job { job: Box::new(prio(job(4, "workq", "1:ncpus=8", "pack"), 10)) },
        SchedChange::Node { node: Box::new(n5.clone()) },
        SchedChange::Queue { queue: queue("workq", 7, &[("max_run", "[o:PBS_ALL=3]")]) },
        SchedChange::Job { job: Box::new(prio(job(2, "workq", "2:ncpus=2", "scatter"), 1)) },
    ];
    for change in changes {
        a.apply(change);
    }
    let mut nodes = base_nodes;
    nodes[0] = busy;
    nodes.push(n5);
    let s1 = snap(
        vec![queue("workq", 7, &[("max_run", "[o:PBS_ALL=3]")]), queue("qb", 5, &[])],
        nodes,
        vec![running, prio(job(2, "workq", "2:ncpus=2", "scatter"), 1), prio(job(4, "workq", "1:ncpus=8", "pack"), 10)],
    );
    let b = mirror(s1);
    let (da, db) = (cycle(&a, 0), cycle(&b, 0));
    assert_eq!(da, db);
    assert_eq!(run_ids(&da), vec!["4.svr", "2.svr"]);
    assert_eq!(exec_of(&da, "4.svr"), Some("(n5:ncpus=8)"));
}

#[test]
fn qrun_ignores_limits_but_not_resources() {
    let mut s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 2, "4gb")],
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            job(2, "workq", "1:ncpus=1", "pack"),
            job(3, "workq", "1:ncpus=4", "pack"),
        ],
    );
    s.server.push(Attr::new("max_running", "1"));
    let mut m = mirror(s);
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["1.svr"]);
    m.note_sent(1, &d.actions, &d.bookings);
    let q = qrun(&m, "2.svr", 0);
    assert_eq!(exec_of(&q, "2.svr"), Some("(n1:ncpus=1)"));
    let q = qrun(&m, "3.svr", 0);
    assert!(q.runs().next().is_none());
    assert_eq!(comment_of(&q, "3.svr"), Some("Can Never Run: Insufficient amount of resource: ncpus (R: 4 A: 2 T: 2)"));
    assert_eq!(qrun(&m, "99.svr", 0), Decisions::default());
}

#[test]
fn strict_ordering_blocks_later_jobs() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![with_res(node("n1", 4, "8gb"), "ncpus", "4")],
        vec![
            job(1, "workq", "1:ncpus=3", "pack"),
            job(2, "workq", "1:ncpus=3", "pack"),
            job(3, "workq", "1:ncpus=1", "pack"),
        ],
    );
    let strict = SchedConfig { strict_ordering: true, ..SchedConfig::default() };
    let d = cycle(&Mirror::new(s.clone(), strict), 0);
    assert_eq!(run_ids(&d), vec!["1.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Insufficient amount of resource: ncpus (R: 3 A: 1 T: 4)"));
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Job would break strict sorted order"));
    // Without strict ordering the small job fills the gap.
    assert_eq!(run_ids(&cycle(&mirror(s), 0)), vec!["1.svr", "3.svr"]);
}

#[test]
fn arrays_start_subjobs_up_to_max_run_subjobs() {
    let mut parent = job(10, "workq", "1:ncpus=1", "pack");
    parent.id = "10[].svr".into();
    parent.attrs = vec![Attr::new("array_indices_remaining", "1-5"), Attr::new("max_run_subjobs", "3")];
    let mut sub = job(10, "workq", "1:ncpus=1", "pack");
    sub.id = "10[1].svr".into();
    sub.state = 'R';
    parent.attrs[0] = Attr::new("array_indices_remaining", "2-5");
    let s = snap(vec![queue("workq", 0, &[])], four_nodes(), vec![parent, sub]);
    let d = cycle(&mirror(s), 0);
    assert_eq!(run_ids(&d), vec!["10[2].svr", "10[3].svr"]);
    // The array has begun: its comment is the server's `Job Array Began at ...`.
    assert_eq!(comment_of(&d, "10[].svr"), None);
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
}

#[test]
fn queue_and_server_resources_limit() {
    let mut running = job(9, "workq", "1:ncpus=2", "pack");
    running.state = 'R';
    let s = snap(
        vec![queue("workq", 0, &[("resources_available.ncpus", "2")])],
        four_nodes(),
        vec![running, job(1, "workq", "1:ncpus=1", "pack"), job(2, "workq", "1:ncpus=3", "pack")],
    );
    let d = cycle(&mirror(s), 0);
    assert!(d.runs().next().is_none());
    assert_eq!(
        comment_of(&d, "1.svr"),
        Some("Not Running: Insufficient amount of queue resource: ncpus (R: 1 A: 0 T: 2)")
    );
    assert_eq!(
        comment_of(&d, "2.svr"),
        Some("Can Never Run: Insufficient amount of queue resource: ncpus (R: 3 A: 2 T: 2)")
    );
}

/// An express job short of a server-level consumable preempts the jobs holding it, as one
/// short of node resources does (a queue's is alike: `check_pool_resources` and the
/// victims' shares of both sums); one that could never fit preempts nothing.
#[test]
fn a_job_short_of_a_server_consumable_preempts() {
    let normal = running_job(job(9, "workq", "1:ncpus=4", "pack"), "n1", 100, &[]);
    let nodes = || vec![busy(node("n1", 16, "8gb"), 4, &["9.svr"]), node("n2", 16, "8gb")];
    let queues = || vec![queue("workq", 0, &[]), queue("express", 200, &[])];
    let capped = |jobs: Vec<SchedJob>| {
        let mut s = snapshot(queues(), nodes(), jobs);
        s.server.push(Attr::new("resources_available.ncpus", "4"));
        mirror(s)
    };
    let d = cycle(&capped(vec![normal.clone(), job(1, "express", "1:ncpus=2", "pack")]), 0);
    assert!(d.runs().next().is_none());
    assert_eq!(d.preempt, Some(Preemption { for_job: "1.svr".into(), jobs: vec!["9.svr".into()] }));
    // More than the server has: it can never run, and preempts nothing.
    let d = cycle(&capped(vec![normal.clone(), job(2, "express", "1:ncpus=8", "pack")]), 0);
    assert_eq!(d.preempt, None);
    // Suspended, it resumes only once the server's cpus are free again, though its node
    // has room.
    let mut suspended = normal;
    suspended.state = 'S';
    suspended.substate = 45;
    let express = running_job(job(1, "express", "1:ncpus=4", "pack"), "n2", 200, &[]);
    let mut s = snapshot(queues(), vec![node("n1", 16, "8gb"), busy(node("n2", 16, "8gb"), 4, &["1.svr"])], vec![]);
    s.server.push(Attr::new("resources_available.ncpus", "4"));
    s.jobs = vec![suspended.clone(), express];
    assert!(!cycle(&mirror(s.clone()), 0).actions.iter().any(|a| matches!(a, Action::Resume { .. })));
    s.jobs = vec![suspended];
    assert!(cycle(&mirror(s), 0).actions.iter().any(|a| matches!(a, Action::Resume { .. })));
}

#[test]
fn nothing_happens_while_scheduling_is_off() {
    let mut s = snap(vec![queue("workq", 0, &[])], four_nodes(), vec![job(1, "workq", "1:ncpus=1", "pack")]);
    s.server = vec![Attr::new("scheduling", "False")];
    let m = mirror(s);
    assert!(!m.scheduling());
    assert_eq!(cycle(&m, 0), Decisions::default());
    // qrun still works, as in OpenPBS.
    assert_eq!(run_ids(&qrun(&m, "1.svr", 0)), vec!["1.svr"]);
}

#[test]
fn equivalence_classes_decide_once_per_cycle() {
    let jobs: Vec<SchedJob> = (1..=1000).map(|i| job(i, "workq", "1:ncpus=64", "pack")).collect();
    let d = cycle(&mirror(snap(vec![queue("workq", 0, &[])], four_nodes(), jobs)), 0);
    assert_eq!(d.updates().count(), 1000);
    assert!(
        d.updates()
            .all(|u| u.attrs[0].value() == "Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 16 T: 16)")
    );
}

#[test]
fn synthetic_clusters_cannot_run_anything() {
    let mut m = crate::synthetic::cluster(100, 1000, crate::synthetic::Shape::NodesFull);
    let t = crate::synthetic::time_cycle(&mut m, 1);
    assert_eq!((t.runs, t.updates, t.steady_updates), (0, 1000, 0));
    let mut m = crate::synthetic::cluster(100, 1000, crate::synthetic::Shape::TooBig);
    let t = crate::synthetic::time_cycle(&mut m, 1);
    assert_eq!((t.runs, t.updates, t.steady_updates), (0, 1000, 0));
}

#[test]
fn job_busy_node_with_cpus_left_stays_usable() {
    let mut busy = node("n1", 4, "8gb");
    busy.state = "job-busy".into();
    busy.resources_assigned = vec![("ncpus".into(), "2".into())];
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy],
        vec![job(1, "workq", "1:ncpus=2", "pack"), job(2, "workq", "1:ncpus=1", "pack")],
    );
    let d = cycle(&mirror(s), 0);
    assert_eq!(exec_of(&d, "1.svr"), Some("(n1:ncpus=2)"));
    // Full now: job-busy in the OpenPBS sense.
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Not enough free nodes available"));
}

#[test]
fn requeued_subjob_counts_against_its_array() {
    let mut parent = job(10, "workq", "1:ncpus=1", "pack");
    parent.id = "10[].svr".into();
    parent.state = 'B';
    parent.attrs = vec![Attr::new("array_indices_remaining", "-"), Attr::new("max_run_subjobs", "1")];
    let mut running = job(10, "workq", "1:ncpus=1", "pack");
    running.id = "10[1].svr".into();
    running.state = 'R';
    let mut queued = job(10, "workq", "1:ncpus=1", "pack");
    queued.id = "10[2].svr".into();
    let s = snap(vec![queue("workq", 0, &[])], four_nodes(), vec![parent, running, queued]);
    let d = cycle(&mirror(s), 0);
    assert!(d.runs().next().is_none());
    assert_eq!(comment_of(&d, "10[2].svr"), Some("Not Running: Number of concurrent running subjobs limit reached"));
}

// ---------------------------------------------------------------------------------------
// Job arrays and max_run_subjobs.

const LIMIT_COMMENT: &str = "Not Running: Number of concurrent running subjobs limit reached";

/// Array parent `SEQ[].svr` in `state` with `array_indices_remaining` = `remaining` and,
/// when given, `max_run_subjobs`.
fn array(seq: u64, select: &str, state: char, remaining: &str, max_run: Option<u64>) -> SchedJob {
    let mut parent = job(seq, "workq", select, "pack");
    parent.id = format!("{seq}[].svr");
    parent.state = state;
    parent.attrs = vec![Attr::new("array_indices_remaining", remaining), Attr::new("array_indices_submitted", "1-20")];
    if let Some(max) = max_run {
        parent.attrs.push(Attr::new("max_run_subjobs", max.to_string()));
    }
    if state == 'B' {
        parent.comment = Some("Job Array Began at Mon Jan 01 at 10:00".into());
    }
    parent
}

/// Subjob `SEQ[index].svr` in `state`.
fn subjob(seq: u64, index: u64, select: &str, state: char) -> SchedJob {
    let mut sub = job(seq, "workq", select, "pack");
    sub.id = format!("{seq}[{index}].svr");
    sub.state = state;
    sub
}

fn limit_log(array_id: &str) -> crate::LogEvent {
    crate::LogEvent {
        event: "0080",
        object_type: "Job",
        object_name: array_id.into(),
        message: "Number of concurrent running subjobs limit reached".into(),
    }
}

fn workq(jobs: Vec<SchedJob>) -> Mirror {
    mirror(snap(vec![queue("workq", 0, &[])], four_nodes(), jobs))
}

/// Takes a cycle's decisions as sent and applied, with the server's echo: each started
/// subjob running and gone from the parent's remaining indices (`remaining` after), the
/// parent begun.
fn echo_runs(m: &mut Mirror, frame: u64, d: &Decisions, parent: &SchedJob, remaining: &str) -> SchedJob {
    m.note_sent(frame, &d.actions, &d.bookings);
    for run in d.runs() {
        let index: u64 =
            run.job_id[run.job_id.find('[').unwrap_or(0) + 1..run.job_id.find(']').unwrap_or(0)].parse().unwrap_or(0);
        m.apply(SchedChange::Job { job: Box::new(subjob(parent.seq, index, &parent.select, 'R')) });
    }
    let mut began = parent.clone();
    began.state = 'B';
    began.comment = Some("Job Array Began at Mon Jan 01 at 10:00".into());
    for attr in &mut began.attrs {
        if attr.name() == "array_indices_remaining" {
            *attr = Attr::new("array_indices_remaining", remaining);
        }
    }
    m.apply(SchedChange::Job { job: Box::new(began.clone()) });
    m.applied(frame);
    began
}

#[test]
fn max_run_subjobs_counts_running_and_exiting_but_not_suspended() {
    let sel = "1:ncpus=1";
    // Running and exiting subjobs hold two of the three slots: one more starts.
    let m = workq(vec![
        array(10, sel, 'B', "4-10", Some(3)),
        subjob(10, 1, sel, 'R'),
        subjob(10, 2, sel, 'E'),
        subjob(10, 3, sel, 'S'),
    ]);
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["10[4].svr"]);
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
    // Two suspended subjobs leave two slots free.
    let m = workq(vec![
        array(10, sel, 'B', "4-10", Some(3)),
        subjob(10, 1, sel, 'R'),
        subjob(10, 2, sel, 'S'),
        subjob(10, 3, sel, 'S'),
    ]);
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["10[4].svr", "10[5].svr"]);
}

#[test]
fn array_counts_follow_subjob_state_changes() {
    let sel = "1:ncpus=1";
    let parent = array(10, sel, 'B', "3-9", Some(2));
    let mut m = workq(vec![parent, subjob(10, 1, sel, 'R'), subjob(10, 2, sel, 'R')]);
    assert!(cycle(&m, 0).runs().next().is_none());
    // Suspended: its slot is free.
    m.apply(SchedChange::Job { job: Box::new(subjob(10, 2, sel, 'S')) });
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["10[3].svr"]);
    // Resumed, then exiting: it counts again.
    m.apply(SchedChange::Job { job: Box::new(subjob(10, 2, sel, 'R')) });
    assert!(cycle(&m, 0).runs().next().is_none());
    m.apply(SchedChange::Job { job: Box::new(subjob(10, 2, sel, 'E')) });
    assert!(cycle(&m, 0).runs().next().is_none());
    // Gone: free again.
    m.apply(SchedChange::JobGone { id: "10[2].svr".into() });
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["10[3].svr"]);
    m.apply(SchedChange::JobGone { id: "10[1].svr".into() });
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["10[3].svr", "10[4].svr"]);
    assert!(m.array_running.is_empty() || m.array_running.get(&10) == Some(&0));
}

#[test]
fn array_without_limit_runs_what_fits_in_index_order() {
    // 16 cpus: every index of `1-3,5,7-11:2` starts, in ascending order.
    let m = workq(vec![array(10, "1:ncpus=1", 'Q', "1-3,5,7-11:2", None)]);
    let d = cycle(&m, 0);
    assert_eq!(
        run_ids(&d),
        vec!["10[1].svr", "10[2].svr", "10[3].svr", "10[5].svr", "10[7].svr", "10[9].svr", "10[11].svr"]
    );
    assert!(d.log.is_empty());
    // Four cpus each: four fit. Some started, so the array keeps its comment.
    let m = workq(vec![array(10, "1:ncpus=4", 'Q', "1-3,5,7-11:2", None)]);
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["10[1].svr", "10[2].svr", "10[3].svr", "10[5].svr"]);
    assert!(d.updates().next().is_none());
    assert!(d.log.is_empty());
    // A limit takes the first indices in order too.
    let m = workq(vec![array(10, "1:ncpus=1", 'Q', "7-11:2,1-3,5", Some(4))]);
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["10[1].svr", "10[2].svr", "10[3].svr", "10[5].svr"]);
}

#[test]
fn array_at_its_limit_does_not_hold_its_class() {
    let sel = "1:ncpus=1";
    // The array comes first (lower sequence number); the plain job asks for the same.
    let m = workq(vec![array(10, sel, 'B', "2-20", Some(1)), subjob(10, 1, sel, 'R'), job(11, "workq", sel, "pack")]);
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["11.svr"]);
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
    // Begun: the server's `Job Array Began at ...` stays.
    assert_eq!(comment_of(&d, "10[].svr"), None);
    assert!(d.updates().next().is_none());
}

#[test]
fn array_comment_only_when_nothing_could_start() {
    let sel = "1:ncpus=1";
    // Limit 0: nothing can ever start; the queued array says why.
    let m = workq(vec![array(10, sel, 'Q', "1-20", Some(0))]);
    let d = cycle(&m, 0);
    assert!(d.runs().next().is_none());
    assert_eq!(comment_of(&d, "10[].svr"), Some(LIMIT_COMMENT));
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
    // Some start this cycle: no comment (the server writes `Job Array Began at ...`).
    let m = workq(vec![array(10, sel, 'Q', "1-20", Some(2))]);
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["10[1].svr", "10[2].svr"]);
    assert!(d.updates().next().is_none());
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
    // A begun array keeps its comment whatever holds it back.
    let m = workq(vec![array(10, "1:ncpus=64", 'B', "2-20", None), subjob(10, 1, "1:ncpus=64", 'S')]);
    let d = cycle(&m, 0);
    assert!(d.actions.is_empty() && d.log.is_empty());
    // A queued array that cannot start for another reason gets that reason.
    let m = workq(vec![array(10, "1:ncpus=64", 'Q', "1-20", Some(2))]);
    let d = cycle(&m, 0);
    assert_eq!(
        comment_of(&d, "10[].svr"),
        Some("Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 16 T: 16)")
    );
    assert!(d.log.is_empty());
}

#[test]
fn raised_limit_takes_effect_next_cycle() {
    let sel = "1:ncpus=1";
    let parent = array(10, sel, 'Q', "1-20", Some(2));
    let mut m = workq(vec![parent.clone()]);
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["10[1].svr", "10[2].svr"]);
    let began = echo_runs(&mut m, 1, &d, &parent, "3-20");
    let d = cycle(&m, 0);
    assert!(d.actions.is_empty());
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
    // qalter -W max_run_subjobs=5.
    let mut raised = began;
    for attr in &mut raised.attrs {
        if attr.name() == "max_run_subjobs" {
            *attr = Attr::new("max_run_subjobs", "5");
        }
    }
    m.apply(SchedChange::Job { job: Box::new(raised) });
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["10[3].svr", "10[4].svr", "10[5].svr"]);
    assert!(d.updates().next().is_none());
}

#[test]
fn subjobs_in_flight_count_against_the_limit() {
    let sel = "1:ncpus=1";
    let mut m = workq(vec![array(10, sel, 'Q', "1-20", Some(2))]);
    let d = cycle(&m, 0);
    assert_eq!(run_ids(&d), vec!["10[1].svr", "10[2].svr"]);
    m.note_sent(1, &d.actions, &d.bookings);
    // Before the server's echo: nothing more, and no comment on the array.
    let d = cycle(&m, 0);
    assert!(d.actions.is_empty());
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
}

#[test]
fn requeued_subjob_index_runs_again_first() {
    let sel = "1:ncpus=1";
    let mut m = workq(vec![array(10, sel, 'B', "3-20", Some(2)), subjob(10, 1, sel, 'R'), subjob(10, 2, sel, 'R')]);
    assert!(cycle(&m, 0).runs().next().is_none());
    // qrerun 10[1]: its record goes and its index returns to the parent.
    m.apply(SchedChange::JobGone { id: "10[1].svr".into() });
    m.apply(SchedChange::Job { job: Box::new(array(10, sel, 'B', "1,3-20", Some(2))) });
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["10[1].svr"]);
}

#[test]
fn held_arrays_wait_begun_ones_run() {
    let sel = "1:ncpus=1";
    let m = workq(vec![array(10, sel, 'H', "1-20", None)]);
    let d = cycle(&m, 0);
    assert!(d.actions.is_empty());
    let m = workq(vec![array(10, sel, 'B', "2-3", None), subjob(10, 1, sel, 'R')]);
    assert_eq!(run_ids(&cycle(&m, 0)), vec!["10[2].svr", "10[3].svr"]);
    // Nothing remaining: nothing to do.
    let m = workq(vec![array(10, sel, 'B', "-", None), subjob(10, 1, sel, 'R')]);
    assert_eq!(cycle(&m, 0), Decisions::default());
}

#[test]
fn qrun_of_a_queued_subjob_ignores_the_limit() {
    let sel = "1:ncpus=1";
    let mut m = workq(vec![array(10, sel, 'B', "3-5", Some(2)), subjob(10, 1, sel, 'R'), subjob(10, 2, sel, 'R')]);
    assert!(cycle(&m, 0).runs().next().is_none());
    let q = qrun(&m, "10[4].svr", 0);
    assert_eq!(run_ids(&q), vec!["10[4].svr"]);
    assert!(q.log.is_empty());
    // Not queued (running, or not an index left): nothing to decide.
    assert_eq!(qrun(&m, "10[1].svr", 0), Decisions::default());
    assert_eq!(qrun(&m, "10[9].svr", 0), Decisions::default());
    assert_eq!(qrun(&m, "11[1].svr", 0), Decisions::default());
    // The array id: its next queued subjob, then the one after while the first is in flight.
    let q = qrun(&m, "10[].svr", 0);
    assert_eq!(run_ids(&q), vec!["10[3].svr"]);
    m.note_sent(1, &q.actions, &q.bookings);
    assert_eq!(run_ids(&qrun(&m, "10[].svr", 0)), vec!["10[4].svr"]);
}

/// OpenPBS's test_max_run_subjobs_qrun: a qrun of a subjob over its array's limit on a
/// full node preempts the normal job, never a running subjob of its own array (they rank
/// with the qrun), though one started later comes first in `preempt_sort`'s order.
#[test]
fn qrun_on_a_full_node_preempts_a_normal_job_not_its_arrays_subjobs() {
    let sel = "1:ncpus=2";
    let normal = running_job(job(1, "workq", sel, "pack"), "n1", 100, &[]);
    let sibling = running_job(subjob(10, 1, sel, 'R'), "n1", 200, &[]);
    let jobs = vec![normal, array(10, sel, 'B', "2-5", Some(1)), sibling];
    let m =
        mirror(snap(vec![queue("workq", 0, &[])], vec![busy(node("n1", 4, "8gb"), 4, &["1.svr", "10[1].svr"])], jobs));
    let q = qrun(&m, "10[2].svr", 0);
    assert!(q.runs().next().is_none());
    assert_eq!(q.preempt, Some(Preemption { for_job: "10[2].svr".into(), jobs: vec!["1.svr".into()] }));
    // Placed again once the preemption is answered, it preempts no more: with no room
    // made, its comment says why.
    let again = crate::cycle::qrun_after_preemption(&m, "10[2].svr", 0);
    assert_eq!(again.preempt, None);
    assert!(again.runs().next().is_none());
    // preemptive_sched off: a qrun preempts nothing either.
    let mut off = m.clone();
    off.set_config(SchedConfig::parse("preemptive_sched: false ALL\n"));
    assert_eq!(qrun(&off, "10[2].svr", 0).preempt, None);
}

/// With eligible time kept, a qrun that cannot place its job sets the job's accrue type
/// by why (resources: eligible), as OpenPBS's qrun does; unchanged, it is not sent.
#[test]
fn a_qrun_that_cannot_place_its_job_sets_its_accrue_type() {
    let mut held_by_limit = job(1, "workq", "1:ncpus=64", "pack");
    held_by_limit.attrs.push(Attr::new("accrue_type", "1"));
    let mut s = snap(vec![queue("workq", 0, &[])], four_nodes(), vec![held_by_limit]);
    s.server.push(Attr::new("eligible_time_enable", "True"));
    let q = qrun(&mirror(s.clone()), "1.svr", 0);
    assert_eq!(update_of(&q, "1.svr", "accrue_type"), Some("2"));
    s.jobs[0].attrs = vec![Attr::new("accrue_type", "2")];
    assert_eq!(update_of(&qrun(&mirror(s), "1.svr", 0), "1.svr", "accrue_type"), None);
}

#[test]
fn qrun_of_a_subjob_that_does_not_fit_comments_on_a_queued_array_only() {
    let big = "1:ncpus=64";
    let m = workq(vec![array(10, big, 'Q', "1-5", None)]);
    let q = qrun(&m, "10[2].svr", 0);
    assert!(q.runs().next().is_none());
    assert_eq!(
        comment_of(&q, "10[].svr"),
        Some("Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 16 T: 16)")
    );
    assert_eq!(comment_of(&q, "10[2].svr"), None);
    let m = workq(vec![array(10, big, 'B', "2-5", None), subjob(10, 1, big, 'S')]);
    let q = qrun(&m, "10[2].svr", 0);
    assert!(q.actions.is_empty());
}

/// One array of 100,000 queued subjobs on a 4-node cluster: each cycle takes the next
/// few indices and stops, whatever the array's size. Times are printed (run with
/// `--nocapture`, `--release` for meaningful numbers); `examples/cycle_bench` measures it
/// too.
#[test]
fn a_huge_array_costs_what_starts() {
    use crate::synthetic::{array_cluster, time_cycle};
    let built = std::time::Instant::now();
    let mut m = array_cluster(4, 100_000, None);
    let build = built.elapsed();
    let t = time_cycle(&mut m, 3);
    // 4 nodes x 16 cpus, one cpu per subjob.
    assert_eq!(t.runs, 64);
    eprintln!("100,000-subjob array, 4 nodes: mirror {build:?}, first cycle {:?}, steady {:?}", t.first, t.steady);
    let mut m = array_cluster(4, 100_000, Some(10));
    let t = time_cycle(&mut m, 3);
    assert_eq!(t.runs, 10);
    eprintln!("same with max_run_subjobs=10: first cycle {:?}, steady {:?}", t.first, t.steady);
}

fn running_job(mut j: SchedJob, node_name: &str, stime: i64, resources: &[(&str, &str)]) -> SchedJob {
    j.state = 'R';
    j.substate = 42;
    j.stime = stime;
    let ncpus = j.resources.iter().find(|(n, _)| n == "ncpus").map(|(_, v)| v.clone()).unwrap_or_default();
    j.exec_vnode = Some(format!("({node_name}:ncpus={ncpus})"));
    for (name, value) in resources {
        j.resources.push(((*name).into(), (*value).into()));
    }
    j
}

fn busy(mut n: SchedNode, ncpus: u32, jobs: &[&str]) -> SchedNode {
    n.resources_assigned.push(("ncpus".into(), ncpus.to_string()));
    n.jobs = jobs.iter().map(|j| (*j).to_string()).collect();
    n
}

fn update_of<'a>(d: &'a Decisions, id: &str, name: &str) -> Option<&'a str> {
    d.updates().filter(|u| u.job_id == id).flat_map(|u| u.attrs.iter()).find(|a| a.name() == name).map(Attr::value)
}

#[test]
fn cycle_publishes_extended_soft_walltime() {
    let r = running_job(job(1, "workq", "1:ncpus=1", "pack"), "n1", 100, &[("soft_walltime", "00:00:06")]);
    let k = running_job(
        job(2, "workq", "1:ncpus=1", "pack"),
        "n1",
        100,
        &[("soft_walltime", "00:00:06"), ("walltime", "00:00:16")],
    );
    let s = snap(vec![queue("workq", 0, &[])], vec![busy(node("n1", 4, "8gb"), 2, &["1.svr", "2.svr"])], vec![r, k]);
    let m = mirror(s);
    assert!(cycle(&m, 105).updates().next().is_none());
    let d = cycle(&m, 107);
    assert_eq!(update_of(&d, "1.svr", "estimated.soft_walltime"), Some("00:00:12"));
    assert_eq!(update_of(&d, "2.svr", "estimated.soft_walltime"), Some("00:00:12"));
    let d = cycle(&m, 113);
    assert_eq!(update_of(&d, "1.svr", "estimated.soft_walltime"), Some("00:00:18"));
    assert_eq!(update_of(&d, "2.svr", "estimated.soft_walltime"), Some("00:00:16"));
}

fn with_wall(mut j: SchedJob, resources: &[(&str, &str)]) -> SchedJob {
    for (name, value) in resources {
        j.resources.push(((*name).into(), (*value).into()));
    }
    j
}

fn strict_backfill() -> SchedConfig {
    SchedConfig { strict_ordering: true, ..SchedConfig::default() }
}

#[test]
fn top_jobs_chain_on_the_calendar() {
    // One 4-cpu node busy until 1100; two 4-cpu top jobs of 50 s: 1100, then 1150.
    let r = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let mut s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"])],
        vec![
            r,
            with_wall(job(2, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")]),
            with_wall(job(3, "workq", "1:ncpus=4", "pack"), &[("soft_walltime", "00:00:30"), ("walltime", "00:05:00")]),
            with_wall(job(4, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")]),
        ],
    );
    s.server.push(Attr::new("backfill_depth", "3"));
    let m = Mirror::new(s.clone(), strict_backfill());
    let d = cycle(&m, 1010);
    assert!(d.runs().next().is_none());
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1100"));
    assert_eq!(update_of(&d, "2.svr", "estimated.exec_vnode"), Some("(n1:ncpus=4)"));
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), Some("1150"));
    // Job 3 is planned with its soft_walltime (30 s).
    assert_eq!(update_of(&d, "4.svr", "estimated.start_time"), Some("1180"));
    // Depth 1 (the default): only job 2 is calendared; the others wait.
    s.server.retain(|a| a.name() != "backfill_depth");
    let d = cycle(&Mirror::new(s.clone(), strict_backfill()), 1010);
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1100"));
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), None);
    // A queue's backfill_depth overrides the server's.
    s.queues[0].attrs.push(Attr::new("backfill_depth", "2"));
    let d = cycle(&Mirror::new(s.clone(), strict_backfill()), 1010);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), Some("1150"));
    assert_eq!(update_of(&d, "4.svr", "estimated.start_time"), None);
    // Published estimates are not sent again.
    for j in &mut s.jobs {
        if j.id == "2.svr" {
            j.attrs.push(Attr::new("estimated.start_time", "1100"));
            j.attrs.push(Attr::new("estimated.exec_vnode", "(n1:ncpus=4)"));
        }
    }
    let d = cycle(&Mirror::new(s, strict_backfill()), 1010);
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), None);
    assert_eq!(update_of(&d, "2.svr", "estimated.exec_vnode"), None);
    assert!(comment_of(&d, "2.svr").is_some());
}

#[test]
fn fillers_run_only_when_they_do_not_delay_the_top_job() {
    // n1 is busy for good (no walltime); n2 has 2 of 4 cpus free until 1100. The top job
    // (4 cpus) is planned on n2 at 1100: fillers there must end by then.
    let r1 = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[]);
    let r2 = running_job(job(2, "workq", "1:ncpus=2", "pack"), "n2", 1000, &[("walltime", "00:01:40")]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"]), busy(node("n2", 4, "8gb"), 2, &["2.svr"])],
        vec![
            r1,
            r2,
            with_wall(job(3, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:10:00")]),
            job(4, "workq", "1:ncpus=1", "pack"),
            with_wall(job(5, "workq", "1:ncpus=1", "pack"), &[("walltime", "00:03:20")]),
            with_wall(job(6, "workq", "1:ncpus=1", "pack"), &[("walltime", "00:00:50")]),
            with_wall(job(7, "workq", "1:ncpus=1", "pack"), &[("soft_walltime", "00:00:50"), ("walltime", "01:00:00")]),
        ],
    );
    let d = cycle(&Mirror::new(s.clone(), strict_backfill()), 1000);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), Some("1100"));
    assert_eq!(update_of(&d, "3.svr", "estimated.exec_vnode"), Some("(n2:ncpus=4)"));
    assert_eq!(run_ids(&d), vec!["6.svr", "7.svr"]);
    let conflict = "Not Running: Job would conflict with reservation or top job";
    assert_eq!(comment_of(&d, "4.svr"), Some(conflict));
    assert_eq!(comment_of(&d, "5.svr"), Some(conflict));
    // Without backfill, strict ordering still holds everything behind the first job.
    let no_backfill = SchedConfig { strict_ordering: true, backfill: false, ..SchedConfig::default() };
    let d = cycle(&Mirror::new(s, no_backfill), 1000);
    assert!(d.runs().next().is_none());
    assert_eq!(comment_of(&d, "6.svr"), Some("Not Running: Job would break strict sorted order"));
}

#[test]
fn a_filler_keeps_off_the_top_jobs_nodes_when_it_can() {
    // n1 frees its 2 busy cpus at 1100 and is where the 4-cpu top job is planned; n2 is
    // held for good by one cpu. The 1-hour filler would pack onto n1 and delay the top
    // job, so it goes to n2, which the top job does not need.
    let r1 = running_job(job(1, "workq", "1:ncpus=2", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let r2 = running_job(job(2, "workq", "1:ncpus=1", "pack"), "n2", 1000, &[]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 2, &["1.svr"]), busy(node("n2", 4, "8gb"), 1, &["2.svr"])],
        vec![
            r1,
            r2,
            with_wall(job(3, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:10:00")]),
            with_wall(job(4, "workq", "1:ncpus=2", "pack"), &[("walltime", "01:00:00")]),
            with_wall(job(5, "workq", "1:ncpus=2", "pack"), &[("walltime", "01:00:00")]),
        ],
    );
    let d = cycle(&Mirror::new(s, strict_backfill()), 1000);
    assert_eq!(update_of(&d, "3.svr", "estimated.exec_vnode"), Some("(n1:ncpus=4)"));
    assert_eq!(run_ids(&d), vec!["4.svr"]);
    assert_eq!(exec_of(&d, "4.svr"), Some("(n2:ncpus=2)"));
    // Nowhere else is left for the next one.
    assert_eq!(comment_of(&d, "5.svr"), Some("Not Running: Job would conflict with reservation or top job"));
}

#[test]
fn a_later_top_job_that_ends_in_time_is_planned_before_an_earlier_one() {
    // n1 frees at 1100, n2 at 1200. Top job 3 needs both (from 1200); top job 4 needs one
    // node for 50 s, so it fits on n1 between 1100 and 1200.
    let r1 = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let r2 = running_job(job(2, "workq", "1:ncpus=4", "pack"), "n2", 1000, &[("walltime", "00:03:20")]);
    let mut s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"]), busy(node("n2", 4, "8gb"), 4, &["2.svr"])],
        vec![
            r1,
            r2,
            with_wall(job(3, "workq", "2:ncpus=4", "scatter"), &[("walltime", "00:10:00")]),
            with_wall(job(4, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")]),
            with_wall(job(5, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:03:00")]),
        ],
    );
    s.server.push(Attr::new("backfill_depth", "3"));
    let d = cycle(&Mirror::new(s, strict_backfill()), 1000);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), Some("1200"));
    assert_eq!(update_of(&d, "4.svr", "estimated.start_time"), Some("1100"));
    assert_eq!(update_of(&d, "4.svr", "estimated.exec_vnode"), Some("(n1:ncpus=4)"));
    // Three minutes would run into job 3's start: job 5 waits until job 3 ends.
    assert_eq!(update_of(&d, "5.svr", "estimated.start_time"), Some("1800"));
}

#[test]
fn a_job_held_by_a_run_limit_is_planned_when_its_owners_job_ends() {
    // alice may run one job; hers ends at 1100. Her next job (3 cpus: it would fit now) is
    // a top job starting then, and bob's jobs backfill meanwhile where they leave it room.
    let r = running_job(job(1, "workq", "1:ncpus=1", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let mut s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 1, &["1.svr"])],
        vec![
            r,
            with_wall(job(2, "workq", "1:ncpus=3", "pack"), &[("walltime", "00:10:00")]),
            owned(with_wall(job(3, "workq", "1:ncpus=1", "pack"), &[("walltime", "00:00:50")]), "bob", "staff"),
            owned(with_wall(job(4, "workq", "1:ncpus=2", "pack"), &[("walltime", "01:00:00")]), "bob", "staff"),
        ],
    );
    s.server.push(Attr::new("max_run", "[u:alice=1]"));
    let d = cycle(&Mirror::new(s.clone(), strict_backfill()), 1000);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Server job limit reached for user alice"));
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1100"));
    assert_eq!(update_of(&d, "2.svr", "estimated.exec_vnode"), Some("(n1:ncpus=3)"));
    assert_eq!(run_ids(&d), vec!["3.svr"]);
    assert_eq!(comment_of(&d, "4.svr"), Some("Not Running: Job would conflict with reservation or top job"));
    // A limit nothing running will ever lift holds the order, as before.
    s.server.retain(|a| a.name() != "max_run");
    s.server.push(Attr::new("max_run", "[u:alice=0]"));
    let d = cycle(&Mirror::new(s, strict_backfill()), 1000);
    assert!(d.runs().next().is_none());
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), None);
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Job would break strict sorted order"));
}

#[test]
fn an_exiting_job_does_not_lift_a_run_limit_when_it_ends() {
    // alice may run one job: job 1 is exiting (it no longer counts), job 3 runs until
    // 1200. Her queued job starts when job 3 ends, not when job 1 does.
    let mut exiting = running_job(job(1, "workq", "1:ncpus=1", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    exiting.state = 'E';
    let r3 = running_job(job(3, "workq", "1:ncpus=1", "pack"), "n1", 1000, &[("walltime", "00:03:20")]);
    let mut s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 2, &["1.svr", "3.svr"])],
        vec![exiting, r3, with_wall(job(4, "workq", "1:ncpus=1", "pack"), &[("walltime", "00:10:00")])],
    );
    s.server.push(Attr::new("max_run", "[u:alice=1]"));
    let d = cycle(&Mirror::new(s, strict_backfill()), 1000);
    assert_eq!(comment_of(&d, "4.svr"), Some("Not Running: Server job limit reached for user alice"));
    assert_eq!(update_of(&d, "4.svr", "estimated.start_time"), Some("1200"));
}

#[test]
fn an_array_at_its_max_run_subjobs_is_planned_and_later_jobs_backfill() {
    // Array 10 runs one subjob at a time; the running one ends at 1100. Under strict
    // ordering the array is a top job from then on, and job 11 behind it still runs.
    let sel = "1:ncpus=1";
    let hundred = [("walltime", "00:01:40")];
    let running = running_job(with_wall(subjob(10, 1, sel, 'R'), &hundred), "n1", 1000, &[]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 1, &["10[1].svr"])],
        vec![
            with_wall(array(10, sel, 'B', "2-20", Some(1)), &hundred),
            running,
            with_wall(job(11, "workq", sel, "pack"), &[("walltime", "01:00:00")]),
        ],
    );
    let d = cycle(&Mirror::new(s, strict_backfill()), 1000);
    assert_eq!(d.log, vec![limit_log("10[].svr")]);
    assert_eq!(update_of(&d, "10[].svr", "estimated.start_time"), Some("1100"));
    assert_eq!(run_ids(&d), vec!["11.svr"]);
}

#[test]
fn a_top_job_that_never_fits_holds_the_order() {
    // The only node is held by a job without walltime: no start can be found.
    let r = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"]), node("n2", 1, "8gb")],
        vec![r, job(2, "workq", "1:ncpus=4", "pack"), job(3, "workq", "1:ncpus=1", "pack")],
    );
    let d = cycle(&Mirror::new(s, strict_backfill()), 1000);
    assert!(d.runs().next().is_none());
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), None);
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Job would break strict sorted order"));
}

#[test]
fn dedicated_time_windows() {
    let s = snap(
        vec![queue("workq", 0, &[]), queue("dedq", 0, &[])],
        four_nodes(),
        vec![
            with_wall(job(1, "workq", "1:ncpus=1", "pack"), &[("walltime", "00:01:40")]),
            with_wall(job(2, "workq", "1:ncpus=1", "pack"), &[("walltime", "00:10:00")]),
            with_wall(job(3, "workq", "1:ncpus=1", "pack"), &[("soft_walltime", "00:01:00"), ("walltime", "01:00:00")]),
            job(4, "workq", "1:ncpus=1", "pack"),
            with_wall(job(5, "dedq", "1:ncpus=1", "pack"), &[("walltime", "00:01:00")]),
            with_wall(job(6, "dedq", "1:ncpus=1", "pack"), &[("walltime", "01:00:00")]),
        ],
    );
    let config = SchedConfig { dedicated: vec![(1200, 2000)], ..SchedConfig::default() };
    let m = Mirror::new(s, config);
    // Before the window (now 1000): only jobs ending by 1200 run; no dedicated queue.
    let d = cycle(&m, 1000);
    assert_eq!(run_ids(&d), vec!["1.svr", "3.svr"]);
    let cross = "Not Running: Job would cross dedicated time boundary";
    assert_eq!(comment_of(&d, "2.svr"), Some(cross));
    assert_eq!(comment_of(&d, "4.svr"), Some(cross));
    assert_eq!(comment_of(&d, "5.svr"), Some("Not Running: Dedicated time conflict"));
    // During the window (now 1500): only dedicated queue jobs, ending by 2000.
    let d = cycle(&m, 1500);
    assert_eq!(run_ids(&d), vec!["5.svr"]);
    assert_eq!(comment_of(&d, "1.svr"), Some("Not Running: Dedicated time conflict"));
    assert_eq!(comment_of(&d, "6.svr"), Some(cross));
    // After it, everything outside dedicated queues runs again.
    let d = cycle(&m, 2000);
    assert_eq!(run_ids(&d), vec!["1.svr", "2.svr", "3.svr", "4.svr"]);
}

#[test]
fn synthetic_calendar_plans_the_top_jobs() {
    let mut m = crate::synthetic::calendar_cluster(100, 1000, 10);
    let d = cycle(&m, 10);
    assert!(d.runs().next().is_none());
    let starts = d.updates().filter(|u| u.attrs.iter().any(|a| a.name() == "estimated.start_time")).count();
    assert_eq!(starts, 10);
    let t = crate::synthetic::time_cycle(&mut m, 1);
    assert_eq!(t.runs, 0);
}

/// Three shrink-to-fit jobs: 1 fits in 5 to 20 minutes, 2 needs at least 15, 3 fits in 1
/// to 2.
fn shrink_to_fit_jobs() -> Snapshot {
    snap(
        vec![queue("workq", 0, &[])],
        four_nodes(),
        vec![
            with_wall(
                job(1, "workq", "1:ncpus=1", "pack"),
                &[("min_walltime", "00:05:00"), ("max_walltime", "00:20:00")],
            ),
            with_wall(job(2, "workq", "1:ncpus=1", "pack"), &[("min_walltime", "00:15:00")]),
            with_wall(
                job(3, "workq", "1:ncpus=1", "pack"),
                &[("min_walltime", "00:01:00"), ("max_walltime", "00:02:00")],
            ),
        ],
    )
}

#[test]
fn shrink_to_fit_jobs_get_the_longest_walltime_that_fits() {
    let s = shrink_to_fit_jobs();
    let config = SchedConfig { dedicated: vec![(1600, 2000)], ..SchedConfig::default() };
    let d = cycle(&Mirror::new(s.clone(), config), 1000);
    assert_eq!(run_ids(&d), vec!["1.svr", "3.svr"]);
    assert_eq!(update_of(&d, "1.svr", "Resource_List.walltime"), Some("00:10:00"));
    assert_eq!(update_of(&d, "3.svr", "Resource_List.walltime"), Some("00:02:00"));
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Job would cross dedicated time boundary"));
    // No dedicated time and no max_walltime: forever is the longest.
    let d = cycle(&mirror(s), 1000);
    assert_eq!(update_of(&d, "2.svr", "Resource_List.walltime"), Some("43800:00:00"));
}

/// The server applies a frame's actions in order: a job's walltime must be set while it is
/// still queued, and no comment may follow the `Job run at ...` its run writes.
#[test]
fn actions_put_every_update_before_every_run_and_keep_each_kind_in_order() {
    let s = shrink_to_fit_jobs();
    let config = SchedConfig { dedicated: vec![(1600, 2000)], ..SchedConfig::default() };
    let d = cycle(&Mirror::new(s, config), 1000);
    // Placed as 1 (then its walltime), 2 fails, 3 (then its walltime).
    let order: Vec<(&str, &str)> = d
        .actions
        .iter()
        .map(|action| match action {
            Action::Run(run) => ("run", run.job_id.as_str()),
            Action::Resume { job_id } => ("resume", job_id.as_str()),
            Action::Update(update) => (update.attrs[0].name(), update.job_id.as_str()),
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("Resource_List.walltime", "1.svr"),
            ("comment", "2.svr"),
            ("Resource_List.walltime", "3.svr"),
            ("run", "1.svr"),
            ("run", "3.svr"),
        ]
    );
    assert_eq!(d.runs().count() + d.updates().count(), d.actions.len());
    // A qrun that places its job answers with the run alone.
    let m = workq(vec![job(7, "workq", "1:ncpus=1", "pack")]);
    let q = qrun(&m, "7.svr", 0);
    assert_eq!(run_ids(&q), vec!["7.svr"]);
    assert_eq!(q.updates().count(), 0);
}

#[test]
fn shrink_to_fit_fillers_end_before_the_top_job() {
    let r1 = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[]);
    let r2 = running_job(job(2, "workq", "1:ncpus=2", "pack"), "n2", 1000, &[("walltime", "00:01:40")]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"]), busy(node("n2", 4, "8gb"), 2, &["2.svr"])],
        vec![
            r1,
            r2,
            with_wall(job(3, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:10:00")]),
            with_wall(job(4, "workq", "1:ncpus=1", "pack"), &[("min_walltime", "00:03:00")]),
            with_wall(
                job(5, "workq", "1:ncpus=1", "pack"),
                &[("min_walltime", "00:00:30"), ("max_walltime", "01:00:00")],
            ),
        ],
    );
    let d = cycle(&Mirror::new(s, strict_backfill()), 1000);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), Some("1100"));
    assert_eq!(run_ids(&d), vec!["5.svr"]);
    assert_eq!(update_of(&d, "5.svr", "Resource_List.walltime"), Some("00:01:40"));
    assert_eq!(comment_of(&d, "4.svr"), Some("Not Running: Job would conflict with reservation or top job"));
}

#[test]
fn top_jobs_are_planned_around_dedicated_time() {
    let r = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let build = |walltime: &str| {
        let s = snap(
            vec![queue("workq", 0, &[])],
            vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"])],
            vec![r.clone(), with_wall(job(2, "workq", "1:ncpus=4", "pack"), &[("walltime", walltime)])],
        );
        Mirror::new(s, SchedConfig { dedicated: vec![(1150, 1400)], ..strict_backfill() })
    };
    // Ends exactly when the window opens: fine.
    let d = cycle(&build("00:00:50"), 1010);
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1100"));
    // Would cross into the window: planned at its end.
    let d = cycle(&build("00:01:40"), 1010);
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1400"));
}

#[test]
fn prime_time_queues_and_backfill_prime() {
    let s = snap(
        vec![queue("workq", 0, &[]), queue("p_day", 0, &[]), queue("np_night", 0, &[])],
        four_nodes(),
        vec![
            with_wall(job(1, "workq", "1:ncpus=1", "pack"), &[("walltime", "01:00:00")]),
            with_wall(job(2, "workq", "1:ncpus=1", "pack"), &[("soft_walltime", "00:20:00"), ("walltime", "05:00:00")]),
            job(3, "workq", "1:ncpus=1", "pack"),
            with_wall(job(4, "p_day", "1:ncpus=1", "pack"), &[("walltime", "00:10:00")]),
            with_wall(job(5, "np_night", "1:ncpus=1", "pack"), &[("walltime", "00:10:00")]),
        ],
    );
    // Non-prime 10000-20000; now 8200 is prime time, 1800 s before the boundary.
    let config = SchedConfig { nonprime: vec![(10_000, 20_000)], backfill_prime: true, ..SchedConfig::default() };
    let d = cycle(&Mirror::new(s.clone(), config.clone()), 8200);
    assert_eq!(run_ids(&d), vec!["2.svr", "4.svr"]);
    assert_eq!(comment_of(&d, "1.svr"), Some("Not Running: Job will cross into non-primetime"));
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Job will cross into non-primetime"));
    assert_eq!(comment_of(&d, "5.svr"), Some("Not Running: Job will run in nonprimetime only"));
    // prime_spill lets the hour-long job spill over.
    let spill = SchedConfig { prime_spill: 1800, ..config.clone() };
    assert_eq!(run_ids(&cycle(&Mirror::new(s.clone(), spill), 8200)), vec!["1.svr", "2.svr", "4.svr"]);
    // In non-prime time, crossing into prime time; prime queues wait.
    let d = cycle(&Mirror::new(s.clone(), config.clone()), 19_000);
    assert_eq!(comment_of(&d, "1.svr"), Some("Not Running: Job will cross into primetime"));
    assert_eq!(comment_of(&d, "4.svr"), Some("Not Running: Job will run in primetime only"));
    assert_eq!(run_ids(&d), vec!["5.svr"]);
    // Exempt anytime queues: only the prime and non-prime queues are checked.
    let exempt = SchedConfig { prime_exempt_anytime_queues: true, ..config };
    assert_eq!(run_ids(&cycle(&Mirror::new(s, exempt), 8200)), vec!["1.svr", "2.svr", "3.svr", "4.svr"]);
}

#[test]
fn sent_estimates_are_not_sent_again() {
    let r = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[("soft_walltime", "00:00:10")]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"])],
        vec![r, with_wall(job(2, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")])],
    );
    let mut m = Mirror::new(s, strict_backfill());
    let d = cycle(&m, 1015);
    assert_eq!(update_of(&d, "1.svr", "estimated.soft_walltime"), Some("00:00:20"));
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1020"));
    m.note_sent(1, &d.actions, &d.bookings);
    assert!(cycle(&m, 1016).updates().next().is_none());
}

#[test]
fn top_jobs_respect_backfill_prime() {
    let r = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"])],
        vec![r, with_wall(job(2, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:01:40")])],
    );
    // Prime until 1150, then non-prime until 5000: the job fits only after 1150's
    // boundary passes (it is then non-prime time until 5000).
    let config = SchedConfig { nonprime: vec![(1150, 5000)], backfill_prime: true, ..strict_backfill() };
    let d = cycle(&Mirror::new(s, config), 1010);
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1150"));
}

fn eligible(mut j: SchedJob, qtime: i64, etime: i64) -> SchedJob {
    j.qtime = qtime;
    j.etime = etime;
    j
}

#[test]
fn starving_jobs_go_first_in_their_queue_priority() {
    // max_starve is 24 hours; at 100,000 jobs eligible before 13,600 are starving.
    let s = snap(
        vec![queue("hi", 10, &[]), queue("lo", 0, &[])],
        vec![node("n1", 4, "8gb")],
        vec![
            eligible(job(1, "lo", "1:ncpus=1", "pack"), 90_000, 0),
            eligible(job(2, "lo", "1:ncpus=1", "pack"), 5_000, 0),
            eligible(job(3, "lo", "1:ncpus=1", "pack"), 500, 1_000),
            eligible(job(4, "hi", "1:ncpus=1", "pack"), 99_000, 99_000),
        ],
    );
    let d = cycle(&mirror(s.clone()), 100_000);
    // The higher queue first; then the longest starving (etime, else qtime); then the rest.
    assert_eq!(run_ids(&d), vec!["4.svr", "3.svr", "2.svr", "1.svr"]);
    // Not starving yet (eligible exactly max_starve ago), or help_starving_jobs off:
    // submission order.
    let d = cycle(&mirror(s.clone()), 1_000 + 86_400);
    assert_eq!(run_ids(&d), vec!["4.svr", "1.svr", "2.svr", "3.svr"]);
    let off = SchedConfig::parse("help_starving_jobs: false ALL\n");
    let d = cycle(&Mirror::new(s.clone(), off), 100_000);
    assert_eq!(run_ids(&d), vec!["4.svr", "1.svr", "2.svr", "3.svr"]);
    // A shorter max_starve makes more jobs starve.
    let short = SchedConfig::parse("max_starve: 1:00:00\n");
    let d = cycle(&Mirror::new(s, short), 100_000);
    assert_eq!(run_ids(&d), vec!["4.svr", "3.svr", "2.svr", "1.svr"]);
}

#[test]
fn a_starving_job_becomes_a_top_job_without_strict_ordering() {
    // n1: 2 of 4 cpus busy until 100,100. Job 3 (4 cpus) is starving: it goes first,
    // cannot run, and is planned at 100,100 on n1. Job 2 would delay it; job 4 ends first.
    let r = running_job(job(1, "workq", "1:ncpus=2", "pack"), "n1", 100_000, &[("walltime", "00:01:40")]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 2, &["1.svr"])],
        vec![
            r,
            eligible(with_wall(job(2, "workq", "1:ncpus=2", "pack"), &[("walltime", "01:00:00")]), 99_000, 99_000),
            eligible(with_wall(job(3, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")]), 1_000, 1_000),
            eligible(with_wall(job(4, "workq", "1:ncpus=2", "pack"), &[("walltime", "00:00:50")]), 99_000, 99_000),
        ],
    );
    let d = cycle(&mirror(s.clone()), 100_010);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), Some("100100"));
    assert_eq!(update_of(&d, "3.svr", "estimated.exec_vnode"), Some("(n1:ncpus=4)"));
    assert_eq!(run_ids(&d), vec!["4.svr"]);
    assert_eq!(comment_of(&d, "2.svr"), Some("Not Running: Job would conflict with reservation or top job"));
    // Nothing is starving: no top job without strict ordering, and job 2 runs.
    let d = cycle(&mirror(s.clone()), 50_000);
    assert_eq!(run_ids(&d), vec!["2.svr"]);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), None);
    // Starving top jobs count against backfill_depth (1 by default): a second starving
    // job, starving less long, gets no estimate.
    let mut more = s.clone();
    more.jobs.push(eligible(
        with_wall(job(5, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")]),
        2_000,
        2_000,
    ));
    let d = cycle(&mirror(more.clone()), 100_010);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), Some("100100"));
    assert_eq!(update_of(&d, "5.svr", "estimated.start_time"), None);
    more.server.push(Attr::new("backfill_depth", "2"));
    let d = cycle(&mirror(more), 100_010);
    assert_eq!(update_of(&d, "5.svr", "estimated.start_time"), Some("100150"));
    // Without backfill a starving job is not calendared, and without strict ordering it
    // holds nothing.
    let d = cycle(&Mirror::new(s, SchedConfig::parse("backfill: false\n")), 100_010);
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), None);
    assert_eq!(run_ids(&d), vec!["2.svr"]);
}

#[test]
fn period_qualified_settings_follow_prime_time() {
    // n1 is held for good by job 1 (3 of 4 cpus): job 2 (2 cpus) can never be planned.
    // With strict ordering it holds job 3; without, job 3 runs.
    let r = running_job(job(1, "workq", "1:ncpus=3", "pack"), "n1", 100, &[]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 3, &["1.svr"])],
        vec![r, job(2, "workq", "1:ncpus=2", "pack"), job(3, "workq", "1:ncpus=1", "pack")],
    );
    let config =
        SchedConfig { nonprime: vec![(5_000, 6_000)], ..SchedConfig::parse("strict_ordering: true non_prime\n") };
    let m = Mirror::new(s, config);
    assert_eq!(run_ids(&cycle(&m, 1_000)), vec!["3.svr"]);
    let d = cycle(&m, 5_500);
    assert!(d.runs().next().is_none());
    assert_eq!(comment_of(&d, "3.svr"), Some("Not Running: Job would break strict sorted order"));
    assert_eq!(run_ids(&cycle(&m, 6_000)), vec!["3.svr"]);
}

#[test]
fn estimates_are_cleared_when_a_job_stops_being_a_top_job() {
    let estimated = |mut j: SchedJob, both: bool| {
        j.attrs.push(Attr::new("estimated.start_time", "1100"));
        if both {
            j.attrs.push(Attr::new("estimated.exec_vnode", "(n1:ncpus=4)"));
        }
        j
    };
    let cleared = |d: &Decisions, id: &str| -> Vec<String> {
        d.updates()
            .filter(|u| u.job_id == id)
            .flat_map(|u| u.attrs.iter())
            .filter(|a| a.value().is_empty())
            .map(|a| a.name().to_string())
            .collect()
    };
    // Job 2 runs now; job 3 cannot be planned behind it (job 2 never ends): neither is a
    // top job, so both lose their estimates (only those they show). Job 4 shows none.
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 4, "8gb")],
        vec![
            estimated(job(2, "workq", "1:ncpus=4", "pack"), true),
            estimated(job(3, "workq", "1:ncpus=4", "pack"), false),
            job(4, "workq", "1:ncpus=4", "pack"),
        ],
    );
    let d = cycle(&Mirror::new(s.clone(), strict_backfill()), 1000);
    assert_eq!(run_ids(&d), vec!["2.svr"]);
    assert_eq!(cleared(&d, "2.svr"), vec!["estimated.start_time", "estimated.exec_vnode"]);
    assert_eq!(cleared(&d, "3.svr"), vec!["estimated.start_time"]);
    assert!(cleared(&d, "4.svr").is_empty());
    // With a walltime on job 2, job 3 stays the top job: its estimate is updated, not
    // cleared.
    let mut s = s;
    s.jobs[0].resources.push(("walltime".into(), "00:01:40".into()));
    let d = cycle(&Mirror::new(s.clone(), strict_backfill()), 1000);
    assert_eq!(run_ids(&d), vec!["2.svr"]);
    assert!(cleared(&d, "3.svr").is_empty());
    assert_eq!(update_of(&d, "3.svr", "estimated.exec_vnode"), Some("(n1:ncpus=4)"));
    // The estimate is current and unchanged: nothing is sent for job 3 at all.
    s.jobs[1].attrs =
        vec![Attr::new("estimated.start_time", "1100"), Attr::new("estimated.exec_vnode", "(n1:ncpus=4)")];
    let d = cycle(&Mirror::new(s.clone(), strict_backfill()), 1000);
    assert!(cleared(&d, "3.svr").is_empty());
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), None);
    // Without strict ordering (and nothing starving) there are no top jobs: cleared.
    let d = cycle(&Mirror::new(s, SchedConfig::default()), 1000);
    assert_eq!(cleared(&d, "3.svr"), vec!["estimated.start_time", "estimated.exec_vnode"]);
}

/// The mirror knows which jobs show estimates from what it sent as well as from the
/// server: an estimate a cycle published is cleared once its job is no longer a top job,
/// and a cleared one, or a job the server sends again without one, is not cleared again.
#[test]
fn an_estimate_the_scheduler_sent_is_cleared_when_its_job_stops_being_a_top_job() {
    let r = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"])],
        vec![r, with_wall(job(2, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")])],
    );
    let sent = |m: &mut Mirror, d: &Decisions| {
        let updates: Vec<Action> = d.updates().cloned().map(Action::Update).collect();
        m.note_sent(0, &updates, &Default::default());
    };
    let mut m = Mirror::new(s.clone(), strict_backfill());
    let d = cycle(&m, 1000);
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1100"));
    sent(&mut m, &d);
    // Without strict ordering job 2 is no longer a top job: what was sent is cleared, once.
    m.set_config(SchedConfig::default());
    let d = cycle(&m, 1000);
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some(""));
    assert_eq!(update_of(&d, "2.svr", "estimated.exec_vnode"), Some(""));
    sent(&mut m, &d);
    assert_eq!(update_of(&cycle(&m, 1000), "2.svr", "estimated.start_time"), None);
    // Planned and sent again, then the server's view of the job arrives without it.
    m.set_config(strict_backfill());
    let d = cycle(&m, 1000);
    sent(&mut m, &d);
    m.apply(SchedChange::Job { job: Box::new(s.jobs[1].clone()) });
    m.set_config(SchedConfig::default());
    assert_eq!(update_of(&cycle(&m, 1000), "2.svr", "estimated.start_time"), None);
}

/// Seed 004: with `attr_update_period`, a cycle inside the period sends no comment or
/// estimate for jobs that do not run (and still runs what fits); the first cycle after
/// setting or changing the period sends, and so does the first after the period.
#[test]
fn attr_update_period_holds_back_can_t_run_updates_inside_the_period() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("vn0", 1, "1gb")],
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            job(2, "workq", "1:ncpus=1", "pack"),
            job(3, "workq", "1:ncpus=2", "pack"),
        ],
    );
    let mut m = mirror(s);
    let period = |m: &mut Mirror, value: &str| {
        m.apply(SchedChange::Sched { attrs: vec![Attr::new("attr_update_period", value)] });
    };
    period(&mut m, "60");
    assert!(m.can_t_run_updates_due(1000), "the first cycle after setting the period sends");
    let d = cycle(&m, 1000);
    assert_eq!((d.held_back, comment_of(&d, "2.svr").is_some()), (None, true));
    m.note_can_t_run_sent(1000);
    // Inside the period: the run goes out, the comment does not.
    let d = cycle(&m, 1030);
    assert_eq!(run_ids(&d), vec!["1.svr"]);
    assert_eq!((d.held_back, d.updates().count()), (Some(2), 0));
    // The period passed: sent again.
    let d = cycle(&m, 1060);
    assert_eq!((d.held_back, comment_of(&d, "2.svr").is_some()), (None, true));
    // Changing the period starts it again: the next cycle sends.
    m.note_can_t_run_sent(1060);
    assert!(!m.can_t_run_updates_due(1061));
    period(&mut m, "120");
    assert!(m.can_t_run_updates_due(1061));
    // Unset or 0: every cycle sends.
    period(&mut m, "0");
    m.note_can_t_run_sent(1070);
    assert!(m.can_t_run_updates_due(1070));
    // A qrun's answer always carries its reason.
    period(&mut m, "60");
    m.note_can_t_run_sent(1080);
    let d = qrun(&m, "3.svr", 1081);
    assert!(comment_of(&d, "3.svr").is_some() && d.held_back.is_none());
}

/// The update of `id` carrying `accrue_type`, as (accrue_type, comment).
fn accrue_of<'a>(d: &'a Decisions, id: &str) -> Option<(&'a str, Option<&'a str>)> {
    let update = d.updates().find(|u| u.job_id == id && u.attrs.iter().any(|a| a.name() == "accrue_type"))?;
    let value = |name: &str| update.attrs.iter().find(|a| a.name() == name).map(Attr::value);
    Some((value("accrue_type")?, value("comment")))
}

fn with_attrs(mut j: SchedJob, attrs: &[(&str, &str)]) -> SchedJob {
    j.attrs.extend(attrs.iter().map(|(n, v)| Attr::new(*n, *v)));
    j
}

/// eligible_time_enable: a job held back by a user run limit accrues ineligible time, one
/// held back by resources eligible time, and one that would pass the limit once the jobs
/// before it this cycle ran is ineligible too (OpenPBS's cumulative check); an array held
/// back by max_run_subjobs accrues eligible time. Off, no job gets an accrue_type.
#[test]
fn eligible_time_accrue_types_follow_why_a_job_does_not_run() {
    let jobs = || {
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            job(2, "workq", "1:ncpus=1", "pack"),
            owned(job(3, "workq", "1:ncpus=3", "pack"), "bob", "users"),
            owned(job(4, "workq", "1:ncpus=1", "pack"), "bob", "users"),
            owned(job(5, "workq", "1:ncpus=3", "pack"), "bob", "users"),
            owned(array(6, "1:ncpus=1", 'Q', "1-3", Some(0)), "carol", "users"),
        ]
    };
    let mut s = snap(vec![queue("workq", 0, &[])], vec![node("n1", 3, "8gb")], jobs());
    s.server.push(Attr::new("max_run", "[u:PBS_GENERIC=1]"));
    let d = cycle(&mirror(s.clone()), 1000);
    assert_eq!(run_ids(&d), vec!["1.svr", "4.svr"]);
    assert!(d.updates().all(|u| u.attrs.iter().all(|a| a.name() != "accrue_type")), "off: no accrue_type");

    s.server.push(Attr::new("eligible_time_enable", "True"));
    let d = cycle(&mirror(s.clone()), 1000);
    assert_eq!(run_ids(&d), vec!["1.svr", "4.svr"]);
    assert_eq!(accrue_of(&d, "2.svr").map(|a| a.0), Some("1"), "alice's run limit");
    assert_eq!(accrue_of(&d, "3.svr").map(|a| a.0), Some("2"), "resources");
    assert_eq!(accrue_of(&d, "5.svr").map(|a| a.0), Some("1"), "bob's limit, counting job 3 and 4");
    assert_eq!(accrue_of(&d, "6[].svr").map(|a| a.0), Some("2"), "the array waits for its max_run_subjobs");
    assert_eq!(accrue_of(&d, "1.svr"), None, "a run's accrue type is the server's");
    // An unchanged accrue type is not sent again.
    s.jobs[1].attrs.push(Attr::new("accrue_type", "1"));
    let d = cycle(&mirror(s), 1000);
    assert_eq!(accrue_of(&d, "2.svr"), None);
}

/// attr_update_period: inside the period, a job whose accrue_type must change gets it at
/// once with its comment, and its other held updates; a job whose type stays gets nothing.
#[test]
fn an_accrue_type_change_sends_the_jobs_updates_inside_the_period() {
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 1, "8gb")],
        vec![
            job(1, "workq", "1:ncpus=1", "pack"),
            with_attrs(job(2, "workq", "1:ncpus=1", "pack"), &[("accrue_type", "2")]),
            with_attrs(owned(job(3, "workq", "1:ncpus=1", "pack"), "bob", "users"), &[("accrue_type", "2")]),
        ],
    );
    let mut m = mirror(s);
    m.apply(SchedChange::Server {
        attrs: vec![
            Attr::new("scheduling", "True"),
            Attr::new("eligible_time_enable", "True"),
            Attr::new("max_run", "[u:PBS_GENERIC=1]"),
        ],
    });
    m.apply(SchedChange::Sched { attrs: vec![Attr::new("attr_update_period", "60")] });
    m.note_can_t_run_sent(1000);
    let d = cycle(&m, 1030);
    assert_eq!(run_ids(&d), vec!["1.svr"]);
    // Job 2 waits for a node, and would pass alice's run limit with job 1 running: it is
    // ineligible now, and its type and comment go out inside the period.
    let (accrue, comment) = accrue_of(&d, "2.svr").expect("job 2's accrue_type");
    assert_eq!((accrue, comment), ("1", Some("Not Running: Not enough free nodes available")));
    // Job 3 waits for resources, as its type says: its new comment waits for the period.
    assert_eq!((comment_of(&d, "3.svr"), d.held_back), (None, Some(1)));
}

/// eligible_time_enable: starvation is measured on eligible time (what the server stored
/// plus the time since it began accruing, while eligible), not on etime.
#[test]
fn with_eligible_time_a_job_starves_on_its_eligible_time() {
    let elig = |j: SchedJob, kind: &str, stored: &str, since: i64| {
        let since = since.to_string();
        let mut j = eligible(j, 1, 1);
        j.attrs.extend([
            Attr::new("accrue_type", kind),
            Attr::new("eligible_time", stored),
            Attr::new("sample_starttime", since.as_str()),
        ]);
        j
    };
    let mut s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 1, "8gb")],
        vec![
            // Queued long ago (etime 1), but accrued little eligible time: not starving.
            elig(job(1, "workq", "1:ncpus=1", "pack"), "1", "01:00:00", 90_000),
            // 20 hours stored and eligible for 5 more: starving, so it goes first.
            elig(job(2, "workq", "1:ncpus=1", "pack"), "2", "20:00:00", 82_000),
        ],
    );
    let d = cycle(&mirror(s.clone()), 100_000);
    assert_eq!(run_ids(&d), vec!["1.svr"], "by etime both starve, job 1 longest");
    s.server.push(Attr::new("eligible_time_enable", "True"));
    let d = cycle(&mirror(s), 100_000);
    assert_eq!(run_ids(&d), vec!["2.svr"]);
}

fn in_set(mut j: SchedJob, leader: u64) -> SchedJob {
    j.attrs.push(Attr::new("job_set", format!("{leader}.svr")));
    j
}

#[test]
fn a_job_set_runs_the_first_of_its_jobs_that_fits_and_only_that_one() {
    // The design's use case: 64, 32 then 16 cpus on a 16-cpu node; a plain job after them.
    let s = snap(
        vec![queue("workq", 0, &[])],
        vec![node("n1", 16, "8gb")],
        vec![
            in_set(job(1, "workq", "1:ncpus=64", "pack"), 1),
            in_set(job(2, "workq", "1:ncpus=32", "pack"), 1),
            in_set(job(3, "workq", "1:ncpus=16", "pack"), 1),
            in_set(job(4, "workq", "1:ncpus=8", "pack"), 1),
        ],
    );
    let d = cycle(&mirror(s.clone()), 0);
    assert_eq!(run_ids(&d), vec!["3.svr"]);
    assert!(!d.considered.iter().any(|l| l.message == crate::jobset::NONE_SATISFIED));
    // On a 32-cpu node the 32-cpu job runs, and the 16- and 8-cpu ones of its set do not,
    // though they would fit beside it.
    let mut big = s.clone();
    big.nodes = vec![node("n1", 56, "8gb")];
    assert_eq!(run_ids(&cycle(&mirror(big), 0)), vec!["2.svr"]);
    // A member whose run is in flight keeps the others from running.
    let mut m = mirror(s);
    let d = cycle(&m, 0);
    m.note_sent(1, &d.actions, &d.bookings);
    assert!(run_ids(&cycle(&m, 0)).is_empty());
}

#[test]
fn a_job_set_none_of_whose_jobs_fits_plans_only_its_first_and_says_so_once() {
    let r = running_job(job(1, "workq", "1:ncpus=4", "pack"), "n1", 1000, &[("walltime", "00:01:40")]);
    let mut s = snap(
        vec![queue("workq", 0, &[])],
        vec![busy(node("n1", 4, "8gb"), 4, &["1.svr"])],
        vec![
            r,
            in_set(with_wall(job(2, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")]), 2),
            in_set(with_wall(job(3, "workq", "1:ncpus=2", "pack"), &[("walltime", "00:00:50")]), 2),
            with_wall(job(4, "workq", "1:ncpus=4", "pack"), &[("walltime", "00:00:50")]),
        ],
    );
    s.server.push(Attr::new("backfill_depth", "3"));
    let d = cycle(&Mirror::new(s, strict_backfill()), 1010);
    assert!(d.runs().next().is_none());
    assert_eq!(update_of(&d, "2.svr", "estimated.start_time"), Some("1100"));
    // The set's second job is not planned and does not hold the plain job back, which is
    // planned after the set's first.
    assert_eq!(update_of(&d, "3.svr", "estimated.start_time"), None);
    assert_eq!(update_of(&d, "4.svr", "estimated.start_time"), Some("1150"));
    let lines: Vec<_> = d.considered.iter().filter(|l| l.message == crate::jobset::NONE_SATISFIED).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].object_name, "2.svr");
}
