//! Synthetic clusters for the benchmark (`pbs_bench`) and for timing tests: many nodes,
//! many queued jobs, in shapes where nothing can run, so that a cycle's cost is the cost
//! of deciding that (the common state of a busy site); and one huge job array on a few
//! nodes, whose cycle must cost what starts, not what waits; and jobs with OR-ed selects.

use std::time::{Duration, Instant};

use pbs_proto::Attr;
use pbs_proto::sched::{Action, SchedJob, SchedNode, SchedQueue, Snapshot};

use crate::config::SchedConfig;
use crate::cycle::{Decisions, cycle};
use crate::mirror::Mirror;

/// What the queued jobs of a synthetic cluster run into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Nodes are empty, but every job asks for more cpus than a node has in total over
    /// the cluster (each job: `Can Never Run`).
    TooBig,
    /// Every node's cpus are all assigned to running jobs (each job: `Not Running`).
    NodesFull,
}

/// Cpus per synthetic node.
const NODE_CPUS: u64 = 16;
/// Distinct requests among the queued jobs (OpenPBS decides each once per cycle).
const REQUEST_KINDS: usize = 8;
/// Distinct owners among the queued jobs.
const OWNERS: usize = 50;

/// A snapshot of `n_nodes` nodes and `n_jobs` queued jobs (8 kinds of request, 50
/// owners, 4 priorities) in one execution queue `workq`.
pub fn snapshot(n_nodes: usize, n_jobs: usize, shape: Shape) -> Snapshot {
    let server_name = "bench".to_string();
    let queue = SchedQueue {
        name: "workq".into(),
        attrs: vec![Attr::new("queue_type", "Execution"), Attr::new("enabled", "True"), Attr::new("started", "True")],
    };
    let nodes = (0..n_nodes)
        .map(|i| {
            let name = format!("n{i:05}");
            let assigned = match shape {
                Shape::NodesFull => vec![("ncpus".to_string(), NODE_CPUS.to_string()), ("mem".into(), "64gb".into())],
                Shape::TooBig => vec![("ncpus".to_string(), "0".to_string()), ("mem".into(), "0kb".into())],
            };
            SchedNode {
                name: name.clone(),
                state: match shape {
                    Shape::NodesFull => "job-busy".into(),
                    Shape::TooBig => "free".into(),
                },
                resources_available: vec![
                    ("arch".into(), "linux".into()),
                    ("host".into(), name.clone()),
                    ("mem".into(), "64gb".into()),
                    ("ncpus".into(), NODE_CPUS.to_string()),
                    ("vnode".into(), name),
                ],
                resources_assigned: assigned,
                sharing: "default_shared".into(),
                ..SchedNode::default()
            }
        })
        .collect();
    let too_big = NODE_CPUS * n_nodes as u64 + 1;
    let jobs = (0..n_jobs)
        .map(|i| {
            let kind = i % REQUEST_KINDS;
            let ncpus = match shape {
                Shape::TooBig => too_big + kind as u64,
                Shape::NodesFull => 1 + kind as u64,
            };
            let seq = i as u64 + 1;
            SchedJob {
                id: format!("{seq}.{server_name}"),
                seq,
                queue: "workq".into(),
                state: 'Q',
                substate: 10,
                priority: (i % 4) as i64,
                qtime: 1_700_000_000 + i as i64,
                owner: format!("user{}", i % OWNERS),
                group: "users".into(),
                resources: vec![
                    ("ncpus".into(), ncpus.to_string()),
                    ("nodect".into(), "1".into()),
                    ("place".into(), "pack".into()),
                    ("select".into(), format!("1:ncpus={ncpus}")),
                ],
                select: format!("1:ncpus={ncpus}"),
                place: "pack".into(),
                ..SchedJob::default()
            }
        })
        .collect();
    Snapshot {
        server_name,
        server: vec![Attr::new("scheduling", "True")],
        sched: vec![],
        resources: vec![],
        queues: vec![queue],
        nodes,
        jobs,
    }
}

/// A snapshot of `n_nodes` free nodes (16 cpus each) and one job array `1[]` of
/// `n_subjobs` queued subjobs (`array_indices_remaining` = `1-N`), one cpu each, with
/// `max_run_subjobs` when given.
pub fn array_snapshot(n_nodes: usize, n_subjobs: u64, max_run: Option<u64>) -> Snapshot {
    let mut snap = snapshot(n_nodes, 0, Shape::TooBig);
    for node in &mut snap.nodes {
        node.resources_assigned.clear();
    }
    let mut attrs = vec![
        Attr::new("array_indices_submitted", format!("1-{n_subjobs}")),
        Attr::new("array_indices_remaining", if n_subjobs == 0 { "-".to_string() } else { format!("1-{n_subjobs}") }),
    ];
    if let Some(max) = max_run {
        attrs.push(Attr::new("max_run_subjobs", max.to_string()));
    }
    snap.jobs.push(SchedJob {
        id: format!("1[].{}", snap.server_name),
        seq: 1,
        queue: "workq".into(),
        state: 'Q',
        substate: 10,
        qtime: 1_700_000_000,
        owner: "user0".into(),
        group: "users".into(),
        resources: vec![
            ("ncpus".into(), "1".into()),
            ("nodect".into(), "1".into()),
            ("place".into(), "pack".into()),
            ("select".into(), "1:ncpus=1".into()),
        ],
        select: "1:ncpus=1".into(),
        place: "pack".into(),
        attrs,
        ..SchedJob::default()
    });
    snap
}

/// The mirror of [`array_snapshot`].
pub fn array_cluster(n_nodes: usize, n_subjobs: u64, max_run: Option<u64>) -> Mirror {
    Mirror::new(array_snapshot(n_nodes, n_subjobs, max_run), SchedConfig::default())
}

/// The mirror of [`snapshot`] with its jobs in job sets of `set_size`, in submission
/// order (the first of each set leads it), as `qsub -L` makes them.
pub fn job_set_cluster(n_nodes: usize, n_jobs: usize, shape: Shape, set_size: usize) -> Mirror {
    let mut snap = snapshot(n_nodes, n_jobs, shape);
    let server = snap.server_name.clone();
    let size = set_size.max(1) as u64;
    for job in &mut snap.jobs {
        let leader = (job.seq - 1) / size * size + 1;
        job.attrs.push(Attr::new("job_set", format!("{leader}.{server}")));
    }
    Mirror::new(snap, SchedConfig::default())
}

/// The mirror of [`snapshot`].
pub fn cluster(n_nodes: usize, n_jobs: usize, shape: Shape) -> Mirror {
    Mirror::new(snapshot(n_nodes, n_jobs, shape), SchedConfig::default())
}

/// [`snapshot`] with every queued job asking for one of three OR-ed alternatives
/// (`select="A||B||C"`, each with its own walltime through `sched_job_wide`), the first
/// being the plain job's request: the cost of alternatives against the same plain cycle.
pub fn ored_cluster(n_nodes: usize, n_jobs: usize, shape: Shape) -> Mirror {
    let mut snap = snapshot(n_nodes, n_jobs, shape);
    for job in &mut snap.jobs {
        let first = job.select.clone();
        let ncpus = job.resources.iter().find(|(n, _)| n == "ncpus").map_or(1, |(_, v)| v.parse::<u64>().unwrap_or(1));
        let select = format!("{first}||1:ncpus={}:mem=1gb||2:ncpus={}", ncpus + 1, ncpus.div_ceil(2));
        let job_wide = "walltime=01:00:00||walltime=00:30:00+place=scatter||walltime=00:10:00";
        for (name, value) in &mut job.resources {
            if name == "select" {
                value.clone_from(&select);
            }
        }
        job.resources.push(("job_wide".into(), job_wide.into()));
        job.select = select;
        job.attrs.push(Attr::new("sched_job_wide", job_wide));
    }
    Mirror::new(snap, SchedConfig::default())
}

/// What [`time_cycle`] measured.
#[derive(Clone, Debug)]
pub struct CycleTiming {
    /// The first cycle (every job's comment is new).
    pub first: Duration,
    /// The fastest of `repeats` later cycles, once the first cycle's comments are taken
    /// as sent (the steady state: nothing to re-send).
    pub steady: Duration,
    /// Jobs started by the first cycle.
    pub runs: usize,
    /// Comment updates of the first cycle.
    pub updates: usize,
    /// Comment updates of the steady cycles (0 when nothing changes).
    pub steady_updates: usize,
}

/// Times cycles over `mirror`: one first cycle, then `repeats` (at least 1) steady ones.
pub fn time_cycle(mirror: &mut Mirror, repeats: usize) -> CycleTiming {
    let started = Instant::now();
    let first: Decisions = cycle(mirror, 0);
    let first_time = started.elapsed();
    // The comments count as sent; the runs do not, so every cycle places the same jobs.
    let comments: Vec<Action> = first.updates().cloned().map(Action::Update).collect();
    mirror.note_sent(0, &comments, &Default::default());
    let mut steady = Duration::MAX;
    let mut steady_updates = 0;
    for _ in 0..repeats.max(1) {
        let started = Instant::now();
        let decisions = cycle(mirror, 0);
        steady = steady.min(started.elapsed());
        steady_updates = decisions.updates().count();
    }
    CycleTiming {
        first: first_time,
        steady,
        runs: first.runs().count(),
        updates: first.updates().count(),
        steady_updates,
    }
}

/// A calendar workload: `n_nodes` nodes, each full with one running 16-cpu job whose
/// walltime ends at a different time (1 h plus up to ~17 h), and `n_jobs` queued jobs
/// with walltimes (as [`Shape::NodesFull`]), under `strict_ordering` with the server's
/// `backfill_depth` = `depth`: each cycle plans `depth` top jobs and checks every other
/// job's class against them.
pub fn calendar_cluster(n_nodes: usize, n_jobs: usize, depth: u32) -> Mirror {
    let mut snap = snapshot(n_nodes, n_jobs, Shape::NodesFull);
    snap.server.push(Attr::new("backfill_depth", depth.to_string()));
    for (i, job) in snap.jobs.iter_mut().enumerate() {
        job.resources.push(("walltime".into(), format!("{}", 600 + (i % REQUEST_KINDS) * 600)));
    }
    let first_seq = snap.jobs.len() as u64 + 1;
    for (i, node) in snap.nodes.iter_mut().enumerate() {
        let seq = first_seq + i as u64;
        let id = format!("{seq}.{}", snap.server_name);
        node.jobs = vec![id.clone()];
        snap.jobs.push(SchedJob {
            id,
            seq,
            queue: "workq".into(),
            state: 'R',
            substate: 42,
            qtime: 1_700_000_000,
            stime: 1,
            owner: "user0".into(),
            group: "users".into(),
            resources: vec![
                ("ncpus".into(), NODE_CPUS.to_string()),
                ("nodect".into(), "1".into()),
                ("place".into(), "pack".into()),
                ("select".into(), format!("1:ncpus={NODE_CPUS}")),
                ("walltime".into(), format!("{}", 3600 + (i % 1000) * 60)),
            ],
            select: format!("1:ncpus={NODE_CPUS}"),
            place: "pack".into(),
            exec_vnode: Some(format!("({}:ncpus={NODE_CPUS})", node.name)),
            ..SchedJob::default()
        });
    }
    let config = SchedConfig { strict_ordering: true, ..SchedConfig::default() };
    Mirror::new(snap, config)
}

/// The `attr_update_period` workload (seed 004): `n_nodes` empty nodes with room for half
/// of `n_jobs` one-cpu queued jobs, under `strict_ordering`. The half that fits comes
/// first (priority 1) and runs; the other half cannot run (the cluster is full by then):
/// each gets a "job can't run" comment. With `period`, the scheduler object's
/// `attr_update_period`, and its "job can't run" updates counted as sent 10 s before
/// `now`: a cycle at `now` is inside the period.
pub fn period_cluster(n_nodes: usize, n_jobs: usize, period: Option<u64>, now: i64) -> Mirror {
    let mut snap = snapshot(n_nodes, n_jobs, Shape::TooBig);
    let cpus = n_jobs.div_ceil(2).div_ceil(n_nodes.max(1)).max(1).to_string();
    for node in &mut snap.nodes {
        node.resources_assigned.clear();
        for (name, value) in &mut node.resources_available {
            if name == "ncpus" {
                value.clone_from(&cpus);
            }
        }
    }
    for (i, job) in snap.jobs.iter_mut().enumerate() {
        job.priority = if i % 2 == 0 { 1 } else { 0 };
        job.resources = vec![
            ("ncpus".into(), "1".into()),
            ("nodect".into(), "1".into()),
            ("place".into(), "pack".into()),
            ("select".into(), "1:ncpus=1".into()),
        ];
        job.select = "1:ncpus=1".into();
    }
    if let Some(period) = period {
        snap.sched.push(Attr::new("attr_update_period", period.to_string()));
    }
    let config = SchedConfig { strict_ordering: true, ..SchedConfig::default() };
    let mut mirror = Mirror::new(snap, config);
    if period.is_some() {
        mirror.note_can_t_run_sent(now - 10);
    }
    mirror
}

/// What one cycle over a [`period_cluster`] cost and sent.
#[derive(Clone, Debug)]
pub struct PeriodTiming {
    /// The cycle's time.
    pub time: Duration,
    /// Jobs started.
    pub runs: usize,
    /// Job updates sent to the server.
    pub updates: usize,
    /// "Job can't run" updates held back by `attr_update_period`.
    pub held_back: usize,
}

/// Times one cycle at `now` over `mirror`.
pub fn time_period_cycle(mirror: &Mirror, now: i64) -> PeriodTiming {
    let started = Instant::now();
    let decisions = cycle(mirror, now);
    PeriodTiming {
        time: started.elapsed(),
        runs: decisions.runs().count(),
        updates: decisions.updates().count(),
        held_back: decisions.held_back.unwrap_or(0),
    }
}
