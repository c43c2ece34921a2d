//! A virtual-time replay of a job stream through the real policy core, to measure what
//! soft_walltime buys the calendar: jobs whose real runtime is a fraction of their
//! walltime, run once planned by walltime alone and once with a `soft_walltime` near the
//! real runtime. Pure and deterministic (no clock, no I/O): the same input gives the same
//! figures.
//!
//! The cluster is `nodes` nodes of 16 cpus under `strict_ordering` with `backfill_depth`
//! 10; each job is one chunk of 1 to 16 cpus. Time jumps from event to event (a
//! submission, a job's real end) and a cycle runs at each.

use pbs_proto::Attr;
use pbs_proto::sched::{SchedChange, SchedJob, SchedNode, SchedQueue, Snapshot};

use crate::config::SchedConfig;
use crate::cycle::cycle;
use crate::mirror::Mirror;

/// Cpus per simulated node.
pub const NODE_CPUS: u32 = 16;

/// One job of the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimJob {
    /// Submission time, seconds.
    pub submit: i64,
    /// Cpus (one chunk, at most [`NODE_CPUS`]).
    pub ncpus: u32,
    /// Requested walltime, seconds.
    pub walltime: i64,
    /// How long it really runs (at most `walltime`).
    pub runtime: i64,
    /// The admin's estimate, used when the replay is asked to (at most `walltime`).
    pub soft_walltime: i64,
}

/// `n` jobs from a fixed pseudo-random stream (`seed`): 1-16 cpus, walltimes of 10 min
/// to 4 h in 10-minute steps, real runtimes 10-90 % of the walltime, soft_walltime the
/// runtime rounded up to 5 minutes (capped at the walltime), arrivals spaced so that the
/// offered load is about `load_percent` % of what `nodes` nodes can do.
pub fn synthetic_jobs(n: usize, nodes: usize, load_percent: u32, seed: u64) -> Vec<SimJob> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    let mut next = move |range: u64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % range.max(1)
    };
    let mut jobs: Vec<SimJob> = (0..n)
        .map(|_| {
            let ncpus = [1, 2, 4, 8, 16][next(5) as usize];
            let walltime = 600 * (1 + next(24) as i64);
            let runtime = (walltime * (10 + next(81) as i64) / 100).max(1);
            let soft_walltime = ((runtime + 299) / 300 * 300).min(walltime);
            SimJob { submit: 0, ncpus, walltime, runtime, soft_walltime }
        })
        .collect();
    let work: i64 = jobs.iter().map(|j| i64::from(j.ncpus) * j.runtime).sum();
    let capacity = (nodes.max(1) as i64) * i64::from(NODE_CPUS);
    // Mean gap so that work / (n * gap) = load * capacity.
    let gap = (work * 100 / (i64::from(load_percent.max(1)) * capacity * n.max(1) as i64)).max(1);
    let mut t = 0;
    for job in &mut jobs {
        job.submit = t;
        t += next(2 * gap as u64 + 1) as i64;
    }
    jobs
}

fn node_view(index: usize, assigned: u32, jobs: &[String]) -> SchedNode {
    let name = format!("n{index:04}");
    SchedNode {
        name: name.clone(),
        state: if assigned >= NODE_CPUS { "job-busy".into() } else { "free".into() },
        resources_available: vec![
            ("host".into(), name.clone()),
            ("ncpus".into(), NODE_CPUS.to_string()),
            ("vnode".into(), name),
        ],
        resources_assigned: vec![("ncpus".into(), assigned.to_string())],
        sharing: "default_shared".into(),
        jobs: jobs.to_vec(),
        ..SchedNode::default()
    }
}

fn job_view(i: usize, job: &SimJob, use_soft: bool) -> SchedJob {
    let select = format!("1:ncpus={}", job.ncpus);
    let mut resources = vec![
        ("ncpus".to_string(), job.ncpus.to_string()),
        ("place".to_string(), "pack".to_string()),
        ("select".to_string(), select.clone()),
        ("walltime".to_string(), job.walltime.to_string()),
    ];
    if use_soft {
        resources.push(("soft_walltime".into(), job.soft_walltime.to_string()));
    }
    SchedJob {
        id: format!("{}.sim", i + 1),
        seq: i as u64 + 1,
        queue: "workq".into(),
        state: 'Q',
        substate: 10,
        qtime: job.submit,
        owner: "user".into(),
        group: "users".into(),
        resources,
        select,
        place: "pack".into(),
        ..SchedJob::default()
    }
}

/// Replays `jobs` (sorted by submission) on `nodes` nodes; with `use_soft` the jobs carry
/// their soft_walltime. Returns (mean wait in seconds, cpu utilisation from the first
/// submission to the last end, 0..1).
pub fn replay(jobs: &[SimJob], nodes: usize, use_soft: bool) -> (f64, f64) {
    let r = replay_detail(jobs, nodes, use_soft);
    (r.mean_wait, r.utilisation)
}

/// What [`replay_detail`] measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replay {
    /// Mean wait (start - submission) over the jobs that started, seconds.
    pub mean_wait: f64,
    /// Cpu utilisation from the first submission to the last end, 0..1.
    pub utilisation: f64,
    /// Mean wait of the whole-node (16-cpu) jobs, the ones that need the calendar.
    pub mean_wait_wide: f64,
    /// Jobs that started.
    pub started: usize,
}

/// [`replay`] with more figures.
pub fn replay_detail(jobs: &[SimJob], nodes: usize, use_soft: bool) -> Replay {
    if jobs.is_empty() || nodes == 0 {
        return Replay::default();
    }
    let snapshot = Snapshot {
        server_name: "sim".into(),
        server: vec![Attr::new("scheduling", "True"), Attr::new("backfill_depth", "10")],
        sched: vec![],
        resources: vec![],
        queues: vec![SchedQueue {
            name: "workq".into(),
            attrs: vec![
                Attr::new("queue_type", "Execution"),
                Attr::new("enabled", "True"),
                Attr::new("started", "True"),
            ],
        }],
        nodes: (0..nodes).map(|i| node_view(i, 0, &[])).collect(),
        jobs: vec![],
    };
    let mut m = Mirror::new(snapshot, SchedConfig { strict_ordering: true, ..SchedConfig::default() });
    let mut node_used = vec![0u32; nodes];
    let mut node_jobs: Vec<Vec<String>> = vec![Vec::new(); nodes];
    // (end, job index, node index) of running jobs.
    let mut running: Vec<(i64, usize, usize)> = Vec::new();
    let mut start_of = vec![None::<i64>; jobs.len()];
    let mut next_submit = 0;
    let mut done = 0;
    let mut last_end = 0;
    while done < jobs.len() {
        let next_end = running.iter().map(|r| r.0).min();
        let next_sub = jobs.get(next_submit).map(|j| j.submit);
        let Some(now) = [next_end, next_sub].into_iter().flatten().min() else { break };
        let mut changes = Vec::new();
        let mut touched: Vec<usize> = Vec::new();
        running.retain(|&(end, i, n)| {
            if end > now {
                return true;
            }
            node_used[n] -= jobs[i].ncpus;
            let id = format!("{}.sim", i + 1);
            node_jobs[n].retain(|j| *j != id);
            changes.push(SchedChange::JobEnded { id, exit: Some(0), ran: true, at: end });
            touched.push(n);
            done += 1;
            last_end = last_end.max(end);
            false
        });
        while next_submit < jobs.len() && jobs[next_submit].submit <= now {
            changes.push(SchedChange::Job { job: Box::new(job_view(next_submit, &jobs[next_submit], use_soft)) });
            next_submit += 1;
        }
        for &n in &touched {
            changes.push(SchedChange::Node { node: Box::new(node_view(n, node_used[n], &node_jobs[n])) });
        }
        for change in changes {
            m.apply(change);
        }
        let decisions = cycle(&m, now);
        for run in decisions.runs() {
            let Some(i) = run.job_id.strip_suffix(".sim").and_then(|s| s.parse::<usize>().ok()).map(|s| s - 1) else {
                continue;
            };
            let Some(n) = run
                .exec_vnode
                .trim_start_matches('(')
                .split(':')
                .next()
                .and_then(|name| name.strip_prefix('n'))
                .and_then(|s| s.parse::<usize>().ok())
            else {
                continue;
            };
            if i >= jobs.len() || n >= nodes {
                continue;
            }
            node_used[n] += jobs[i].ncpus;
            node_jobs[n].push(run.job_id.clone());
            let mut view = job_view(i, &jobs[i], use_soft);
            view.state = 'R';
            view.substate = 42;
            view.stime = now;
            view.exec_vnode = Some(run.exec_vnode.clone());
            m.apply(SchedChange::Job { job: Box::new(view) });
            m.apply(SchedChange::Node { node: Box::new(node_view(n, node_used[n], &node_jobs[n])) });
            running.push((now + jobs[i].runtime.min(jobs[i].walltime), i, n));
            start_of[i] = Some(now);
        }
        if decisions.runs().next().is_none() && running.is_empty() && next_submit >= jobs.len() {
            // Nothing runs and nothing will change: the rest can never start.
            break;
        }
    }
    let mean = |wide_only: bool| {
        let waits: Vec<i64> = jobs
            .iter()
            .zip(&start_of)
            .filter(|(j, _)| !wide_only || j.ncpus == NODE_CPUS)
            .filter_map(|(j, s)| s.map(|s| s - j.submit))
            .collect();
        (waits.iter().sum::<i64>() as f64 / waits.len().max(1) as f64, waits.len())
    };
    let (mean_wait, started) = mean(false);
    let (mean_wait_wide, _) = mean(true);
    let work: i64 =
        jobs.iter().zip(&start_of).filter(|(_, s)| s.is_some()).map(|(j, _)| i64::from(j.ncpus) * j.runtime).sum();
    let span = (last_end - jobs[0].submit).max(1);
    let utilisation = work as f64 / (span as f64 * (nodes * NODE_CPUS as usize) as f64);
    Replay { mean_wait, utilisation, mean_wait_wide, started }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_is_deterministic_and_runs_everything() {
        let jobs = synthetic_jobs(150, 4, 120, 7);
        assert_eq!(jobs, synthetic_jobs(150, 4, 120, 7));
        assert!(jobs.iter().all(|j| j.runtime <= j.walltime && j.soft_walltime <= j.walltime));
        let hard = replay(&jobs, 4, false);
        let soft = replay(&jobs, 4, true);
        assert_eq!(hard, replay(&jobs, 4, false));
        assert!(hard.1 > 0.0 && hard.1 <= 1.0 && soft.1 > 0.0 && soft.1 <= 1.0, "{hard:?} {soft:?}");
        assert!(hard.0 >= 0.0 && soft.0 >= 0.0);
        // Tiny: every job starts (a job that never started would leave the wait at 0
        // for it, but utilisation would then fall far below these bounds).
        assert!(replay(&jobs[..1], 1, true).1 > 0.0);
        assert_eq!(replay_detail(&jobs, 4, true).started, jobs.len());
    }
}
