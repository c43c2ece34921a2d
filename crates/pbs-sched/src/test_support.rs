//! Builders the scheduler's tests share: an execution queue, a node, a queued job and a
//! snapshot as the server sends them, and what a cycle says of a job.

use pbs_proto::Attr;
use pbs_proto::sched::{SchedJob, SchedNode, SchedQueue, Snapshot};

use crate::Decisions;

/// `workq`: an enabled, started execution queue.
pub(crate) fn workq() -> SchedQueue {
    SchedQueue {
        name: "workq".into(),
        attrs: vec![Attr::new("queue_type", "Execution"), Attr::new("enabled", "True"), Attr::new("started", "True")],
    }
}

/// A free, shared node with `ncpus` and `mem`, and `extra` resources after them.
pub(crate) fn node_with(name: &str, ncpus: &str, mem: &str, extra: &[(&str, &str)]) -> SchedNode {
    let mut resources_available: Vec<(String, String)> = vec![
        ("host".into(), name.into()),
        ("mem".into(), mem.into()),
        ("ncpus".into(), ncpus.into()),
        ("vnode".into(), name.into()),
    ];
    resources_available.extend(extra.iter().map(|(r, v)| (r.to_string(), v.to_string())));
    SchedNode {
        name: name.into(),
        state: "free".into(),
        resources_available,
        sharing: "default_shared".into(),
        ..SchedNode::default()
    }
}

/// Alice's queued job `SEQ.svr` in `queue` asking `select` and `place`, with `resources` as
/// its `Resource_List`.
pub(crate) fn queued(seq: u64, queue: &str, select: &str, place: &str, resources: Vec<(String, String)>) -> SchedJob {
    SchedJob {
        id: format!("{seq}.svr"),
        seq,
        queue: queue.into(),
        state: 'Q',
        substate: 10,
        owner: "alice".into(),
        group: "users".into(),
        resources,
        select: select.into(),
        place: place.into(),
        ..SchedJob::default()
    }
}

/// Server `svr` with scheduling on.
pub(crate) fn snapshot(queues: Vec<SchedQueue>, nodes: Vec<SchedNode>, jobs: Vec<SchedJob>) -> Snapshot {
    Snapshot {
        server_name: "svr".into(),
        server: vec![Attr::new("scheduling", "True")],
        sched: vec![],
        resources: vec![],
        queues,
        nodes,
        jobs,
    }
}

/// The comment a cycle sends for job `id`.
pub(crate) fn comment_of<'a>(d: &'a Decisions, id: &str) -> Option<&'a str> {
    d.updates().find(|u| u.job_id == id).and_then(|u| u.attrs.iter().find(|a| a.name() == "comment")).map(Attr::value)
}
