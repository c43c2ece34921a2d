//! Times scheduling cycles on synthetic clusters (run with `--release`):
//! 10,000 queued jobs that cannot run on 1,000 nodes, 100,000 queued jobs on 10,000
//! full nodes, and one array of 100,000 queued subjobs on 4 nodes.

use pbs_sched::synthetic::{Shape, array_cluster, calendar_cluster, cluster, time_cycle};

fn main() {
    let cases = [
        ("10,000 jobs too big, 1,000 nodes", 1_000, 10_000, Shape::TooBig),
        ("10,000 jobs, 1,000 full nodes", 1_000, 10_000, Shape::NodesFull),
        ("100,000 jobs, 10,000 full nodes", 10_000, 100_000, Shape::NodesFull),
        ("100,000 jobs too big, 10,000 nodes", 10_000, 100_000, Shape::TooBig),
    ];
    for (label, nodes, jobs, shape) in cases {
        let built = std::time::Instant::now();
        let mut mirror = cluster(nodes, jobs, shape);
        let build = built.elapsed();
        let t = time_cycle(&mut mirror, 5);
        println!(
            "{label}: first cycle {:.2} ms ({} comments), steady cycle {:.2} ms ({} comments); mirror built in {:.0} ms",
            t.first.as_secs_f64() * 1e3,
            t.updates,
            t.steady.as_secs_f64() * 1e3,
            t.steady_updates,
            build.as_secs_f64() * 1e3
        );
    }
    for (label, max_run) in [("no limit", None), ("max_run_subjobs=10", Some(10))] {
        let built = std::time::Instant::now();
        let mut mirror = array_cluster(4, 100_000, max_run);
        let build = built.elapsed();
        let t = time_cycle(&mut mirror, 5);
        println!(
            "array of 100,000 subjobs, 4 nodes, {label}: first cycle {:.3} ms ({} started), steady cycle {:.3} ms; mirror built in {:.3} ms",
            t.first.as_secs_f64() * 1e3,
            t.runs,
            t.steady.as_secs_f64() * 1e3,
            build.as_secs_f64() * 1e3
        );
    }
    for depth in [1, 10] {
        let built = std::time::Instant::now();
        let mut mirror = calendar_cluster(10_000, 100_000, depth);
        let build = built.elapsed();
        let t = time_cycle(&mut mirror, 5);
        println!(
            "calendar: 100,000 jobs, 10,000 busy nodes, strict_ordering, backfill_depth {depth}: first cycle {:.2} ms ({} updates), steady cycle {:.2} ms; mirror built in {:.0} ms",
            t.first.as_secs_f64() * 1e3,
            t.updates,
            t.steady.as_secs_f64() * 1e3,
            build.as_secs_f64() * 1e3
        );
    }
    for (load, use_soft) in [(90, false), (90, true), (120, false), (120, true)] {
        let jobs = pbs_sched::sim::synthetic_jobs(5_000, 100, load, 1);
        let started = std::time::Instant::now();
        let r = pbs_sched::sim::replay_detail(&jobs, 100, use_soft);
        println!(
            "replay of 5,000 jobs on 100 nodes, offered load {load} %, {}: mean wait {:.0} s (16-cpu jobs {:.0} s), utilisation {:.1} %, {} started ({:.1} s)",
            if use_soft { "soft_walltime near the runtime" } else { "walltime only" },
            r.mean_wait,
            r.mean_wait_wide,
            r.utilisation * 100.0,
            r.started,
            started.elapsed().as_secs_f64()
        );
    }
}
