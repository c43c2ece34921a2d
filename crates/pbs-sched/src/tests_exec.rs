//! Tests of running jobs' `exec_vnode` kept parsed in the mirror: parsed once when it
//! arrives or changes, read in that form by every cycle, and never left pointing at a
//! node slot another node took.

use pbs_proto::sched::{SchedChange, SchedJob, SchedNode, SchedQueue, Snapshot};

use crate::calendar::Calendar;
use crate::mirror::Alloc;
use crate::{Mirror, SchedConfig};

fn node(name: &str) -> SchedNode {
    SchedNode {
        name: name.into(),
        state: "free".into(),
        resources_available: vec![("mem".into(), "8gb".into()), ("ncpus".into(), "4".into())],
        sharing: "default_shared".into(),
        ..SchedNode::default()
    }
}

fn running(seq: u64, exec: &str) -> SchedJob {
    SchedJob {
        id: format!("{seq}.svr"),
        seq,
        queue: "workq".into(),
        state: 'R',
        substate: 42,
        owner: "alice".into(),
        group: "users".into(),
        resources: vec![("ncpus".into(), "3".into()), ("walltime".into(), "01:00:00".into())],
        select: "1:ncpus=2+1:ncpus=1".into(),
        place: "scatter".into(),
        exec_vnode: Some(exec.into()),
        ..SchedJob::default()
    }
}

fn mirror(nodes: Vec<SchedNode>, jobs: Vec<SchedJob>) -> Mirror {
    let queue = SchedQueue {
        name: "workq".into(),
        attrs: vec![
            pbs_proto::Attr::new("queue_type", "Execution"),
            pbs_proto::Attr::new("enabled", "True"),
            pbs_proto::Attr::new("started", "True"),
        ],
    };
    let snapshot = Snapshot {
        server_name: "svr".into(),
        server: vec![pbs_proto::Attr::new("scheduling", "True")],
        sched: vec![],
        queues: vec![queue],
        nodes,
        jobs,
        resources: vec![],
    };
    Mirror::new(snapshot, SchedConfig::default())
}

fn slot_of(m: &Mirror, name: &str) -> u32 {
    let slot = m.nodes.iter().position(|n| n.as_ref().is_some_and(|n| n.name == name)).unwrap();
    u32::try_from(slot).unwrap()
}

/// The kept allocations of a job as (vnode name, ncpus taken), in their order.
fn kept(m: &Mirror, id: &str) -> Vec<(String, i64)> {
    let ncpus = m.res.get("ncpus").unwrap();
    let job = m.job(m.job_slot(id).unwrap()).unwrap();
    job.allocs()
        .unwrap()
        .iter()
        .map(|a| {
            let name = m.node(a.node).map_or("?", |n| n.name.as_str()).to_string();
            (name, a.taken.iter().find(|(r, _)| *r == ncpus).map_or(0, |(_, v)| *v))
        })
        .collect()
}

/// How many jobs keep parts on unknown vnodes: as the mirror counts them, and as they are.
fn unplaced(m: &Mirror) -> (usize, usize) {
    (m.execs_unplaced, m.jobs.iter().flatten().filter(|j| j.exec_unplaced()).count())
}

/// The nodes the calendar gives back when the job ends.
fn calendar_nodes(m: &Mirror) -> Vec<String> {
    let calendar = Calendar::build(m, 1_700_000_000, &[]);
    let mut names: Vec<String> = calendar
        .ends
        .iter()
        .flat_map(|e| e.allocs.iter())
        .map(|a| m.node(a.node).map_or("?".to_string(), |n| n.name.clone()))
        .collect();
    names.sort();
    names
}

#[test]
fn a_running_jobs_exec_vnode_is_kept_parsed_and_read_in_that_form() {
    let mut m = mirror(vec![node("n1"), node("n2")], vec![running(1, "(n1:ncpus=2)+(n2:ncpus=1:mem=1048576kb)")]);
    assert_eq!(kept(&m, "1.svr"), vec![("n1".to_string(), 2), ("n2".to_string(), 1)]);
    let mem = m.res.get("mem").unwrap();
    let job = m.job(m.job_slot("1.svr").unwrap()).unwrap();
    assert_eq!(job.allocs().unwrap()[1].taken, vec![(m.res.get("ncpus").unwrap(), 1), (mem, 1024 * 1024)]);
    // The cycle's readers use the kept form: the text is not read again (a reader that
    // parsed it would find a vnode that does not exist here).
    let slot = m.job_slot("1.svr").unwrap() as usize;
    m.jobs[slot].as_mut().unwrap().view.exec_vnode = Some("(elsewhere:ncpus=4)".into());
    assert_eq!(calendar_nodes(&m), vec!["n1", "n2"]);
}

#[test]
fn a_new_view_of_a_job_keeps_its_parse_unless_its_exec_vnode_changed() {
    let mut m = mirror(vec![node("n1"), node("n2")], vec![running(1, "(n1:ncpus=2)+(n2:ncpus=1)")]);
    // Mark the kept form: a view with the same exec_vnode (a comment, usage) keeps it.
    let slot = m.job_slot("1.svr").unwrap() as usize;
    m.jobs[slot].as_mut().unwrap().exec.as_mut().unwrap().allocs.push(Alloc { node: 0, taken: vec![] });
    let mut again = running(1, "(n1:ncpus=2)+(n2:ncpus=1)");
    again.comment = Some("Job run at ...".into());
    m.apply(SchedChange::Job { job: Box::new(again) });
    assert_eq!(kept(&m, "1.svr").len(), 3, "the same exec_vnode was parsed again");
    // A new exec_vnode (requeued and run elsewhere) is parsed anew: no stale copy.
    m.apply(SchedChange::Job { job: Box::new(running(1, "(n2:ncpus=3)")) });
    assert_eq!(kept(&m, "1.svr"), vec![("n2".to_string(), 3)]);
    // Requeued: no exec_vnode, nothing kept.
    let mut queued = running(1, "");
    queued.state = 'Q';
    queued.exec_vnode = None;
    m.apply(SchedChange::Job { job: Box::new(queued) });
    assert!(m.job(m.job_slot("1.svr").unwrap()).unwrap().allocs().is_none());
    assert!(calendar_nodes(&m).is_empty());
}

#[test]
fn a_deleted_nodes_slot_taken_by_another_node_is_not_the_jobs() {
    let mut m = mirror(vec![node("n1"), node("n2")], vec![running(1, "(n1:ncpus=2)+(n2:ncpus=1)")]);
    let n1_slot = slot_of(&m, "n1");
    m.apply(SchedChange::NodeGone { name: "n1".into() });
    assert_eq!(kept(&m, "1.svr"), vec![("n2".to_string(), 1)]);
    // A new node takes n1's slot: the job holds nothing on it.
    m.apply(SchedChange::Node { node: Box::new(node("n3")) });
    assert_eq!(slot_of(&m, "n3"), n1_slot, "the test needs the slot reused");
    assert_eq!(kept(&m, "1.svr"), vec![("n2".to_string(), 1)]);
    assert_eq!(calendar_nodes(&m), vec!["n2"]);
    // n1 back (in another slot): the job's part there counts again, as its text says.
    m.apply(SchedChange::Node { node: Box::new(node("n1")) });
    assert_ne!(slot_of(&m, "n1"), n1_slot);
    assert_eq!(kept(&m, "1.svr"), vec![("n2".to_string(), 1), ("n1".to_string(), 2)]);
    assert_eq!(calendar_nodes(&m), vec!["n1", "n2"]);
    // A job whose vnode arrives after it: placed when it does, also after a new view of it.
    m.apply(SchedChange::Job { job: Box::new(running(2, "(n4:ncpus=1)")) });
    assert!(kept(&m, "2.svr").is_empty());
    assert_eq!(unplaced(&m), (1, 1));
    m.apply(SchedChange::Job { job: Box::new(running(2, "(n4:ncpus=1)")) });
    assert_eq!(unplaced(&m), (1, 1), "jobs with unplaced parts, counted as they are");
    m.apply(SchedChange::Node { node: Box::new(node("n4")) });
    assert_eq!(kept(&m, "2.svr"), vec![("n4".to_string(), 1)]);
    assert_eq!(unplaced(&m), (0, 0));
    // Gone jobs leave nothing to place.
    m.apply(SchedChange::JobGone { id: "1.svr".into() });
    m.apply(SchedChange::JobGone { id: "2.svr".into() });
    assert_eq!(calendar_nodes(&m), Vec::<String>::new());
}

#[test]
fn a_resource_first_seen_in_an_exec_vnode_is_counted() {
    let mut m = mirror(vec![node("n1")], vec![running(1, "(n1:ncpus=1:licenses=2:zone=east)")]);
    let licenses = m.res.get("licenses").expect("interned from the exec_vnode");
    let job = m.job(m.job_slot("1.svr").unwrap()).unwrap();
    assert!(job.allocs().unwrap()[0].taken.contains(&(licenses, 2)));
    // A value that is no amount is not interned from here: a node's value classifies it.
    assert_eq!(m.res.get("zone"), None);
    m.apply(SchedChange::Node { node: Box::new(node("n1")) });
    assert_eq!(kept(&m, "1.svr"), vec![("n1".to_string(), 1)]);
}
