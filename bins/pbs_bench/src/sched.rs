//! Figures of the scheduler's pure core on synthetic clusters, no daemons involved.

use std::time::Duration;

use crate::bench::{Figure, ms};

/// The calendar (strict ordering, backfill_depth 10) and a virtual-time replay of a
/// workload planned by walltime alone and by soft_walltime.
fn calendar_figures(figures: &mut Vec<Figure>, smoke: bool) {
    use pbs_sched::synthetic::{calendar_cluster, time_cycle};
    let (nodes, jobs) = if smoke { (100, 1_000) } else { (10_000, 100_000) };
    let mut mirror = calendar_cluster(nodes, jobs, 10);
    let timing = time_cycle(&mut mirror, 3);
    figures.push(Figure {
        name: "sched_cycle_calendar_depth10".into(),
        value: Some(ms(timing.first)),
        unit: "ms",
        target: Some("< 2000".into()),
        note: format!(
            "{jobs} queued jobs on {nodes} busy nodes, backfill_depth 10; later cycles {:.1} ms",
            ms(timing.steady)
        ),
    });
    let (n_jobs, n_nodes) = if smoke { (300, 10) } else { (5_000, 100) };
    let loads: &[u32] = if smoke { &[90] } else { &[90, 100] };
    for &load in loads {
        let workload = pbs_sched::sim::synthetic_jobs(n_jobs, n_nodes, load, 1);
        for (use_soft, how) in [(false, "walltime"), (true, "soft")] {
            let replay = pbs_sched::sim::replay_detail(&workload, n_nodes, use_soft);
            figures.push(Figure {
                name: format!("replay_{load}pct_mean_wait_{how}"),
                value: Some(replay.mean_wait),
                unit: "s",
                target: use_soft.then(|| "< walltime's".to_string()),
                note: format!(
                    "{n_jobs} jobs, {n_nodes} nodes, {load}% load: utilisation {:.1}%, 16-cpu jobs wait {:.0} s",
                    replay.utilisation * 100.0,
                    replay.mean_wait_wide
                ),
            });
        }
    }
}

/// attr_update_period (seed 004): one cycle over 100,000 queued jobs on 1,000 nodes under
/// strict ordering, of which 50,000 run and 50,000 cannot, with the period unset and with
/// 60 s (inside the period): its time and the job updates it sends the server.
fn update_period_figures(figures: &mut Vec<Figure>, smoke: bool) {
    use pbs_sched::synthetic::{period_cluster, time_period_cycle};
    let (nodes, jobs) = if smoke { (10, 1_000) } else { (1_000, 100_000) };
    let now = 1_700_000_000;
    for (period, how) in [(None, "unset"), (Some(60), "60s")] {
        let mirror = period_cluster(nodes, jobs, period, now);
        // The thread's CPU time beside the wall time: on a shared machine the wall time
        // also counts the time other processes had the cpu.
        let cpu_before = thread_cpu();
        let timing = time_period_cycle(&mirror, now);
        let cpu = thread_cpu().saturating_sub(cpu_before);
        figures.push(Figure {
            name: format!("sched_cycle_100k_period_{how}"),
            value: Some(ms(timing.time)),
            unit: "ms",
            target: Some("< 1000".into()),
            note: format!(
                "{jobs} queued jobs, {nodes} nodes, strict_ordering: {} run; {} job updates sent, {} held back; cpu {:.1} ms",
                timing.runs,
                timing.updates,
                timing.held_back,
                ms(cpu)
            ),
        });
        figures.push(Figure {
            name: format!("sched_updates_100k_period_{how}"),
            value: Some(timing.updates as f64),
            unit: "updates",
            target: period.map(|_| "0".to_string()),
            note: format!("job updates the cycle sends the server ({} can't run)", jobs - timing.runs),
        });
    }
}

/// This thread's CPU time so far (user and system).
fn thread_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_THREAD)
        .map(|u| {
            let tv = |t: nix::sys::time::TimeVal| {
                Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
                    + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
            };
            tv(u.user_time()) + tv(u.system_time())
        })
        .unwrap_or_default()
}

/// 10,000 queued jobs each with a 3-way OR-ed select against the same 10,000 plain jobs,
/// timed in one run on full nodes (every alternative is looked at, none runs): the
/// alternatives may cost at most twice the plain cycle.
fn ored_cycle_figures(figures: &mut Vec<Figure>, smoke: bool) {
    use pbs_sched::synthetic::{Shape, cluster, ored_cluster, time_cycle};
    let (nodes, jobs) = if smoke { (100, 1_000) } else { (1_000, 10_000) };
    // Rounds taken in turn, the fastest of each kept: on a shared machine one side timed
    // while something else runs would otherwise decide the ratio.
    let (mut plain_mirror, mut ored_mirror) =
        (cluster(nodes, jobs, Shape::NodesFull), ored_cluster(nodes, jobs, Shape::NodesFull));
    let mut plain = time_cycle(&mut plain_mirror, 5);
    let mut ored = time_cycle(&mut ored_mirror, 5);
    for _ in 0..4 {
        let (p, o) = (time_cycle(&mut plain_mirror, 5), time_cycle(&mut ored_mirror, 5));
        plain.steady = plain.steady.min(p.steady);
        ored.steady = ored.steady.min(o.steady);
    }
    let ratio = ms(ored.first) / ms(plain.first).max(1e-6);
    let steady_ratio = ms(ored.steady) / ms(plain.steady).max(1e-6);
    figures.push(Figure {
        name: "sched_cycle_ored3_vs_plain".into(),
        value: Some(ratio),
        unit: "x",
        target: Some("<= 2".into()),
        note: format!(
            "{jobs} jobs x 3 OR-ed selects, {nodes} full nodes: first cycle {:.1} ms vs plain {:.1} ms; later cycles {:.1} ms vs {:.1} ms ({steady_ratio:.2}x)",
            ms(ored.first),
            ms(plain.first),
            ms(ored.steady),
            ms(plain.steady)
        ),
    });
}

/// Cycle time of the scheduler's pure core on synthetic clusters (no daemons involved).
pub(crate) fn sched_cycle_figures(figures: &mut Vec<Figure>, smoke: bool) {
    use pbs_sched::synthetic::{Shape, cluster, time_cycle};
    let cases: &[(&str, usize, usize, Shape, &str)] = if smoke {
        &[("sched_cycle_1k_jobs_cannot_run", 100, 1_000, Shape::TooBig, "< 20")]
    } else {
        &[
            ("sched_cycle_10k_jobs_cannot_run", 1_000, 10_000, Shape::TooBig, "< 20"),
            ("sched_cycle_10k_jobs_nodes_full", 1_000, 10_000, Shape::NodesFull, "< 20"),
            ("sched_cycle_100k_jobs_10k_full", 10_000, 100_000, Shape::NodesFull, "< 1000"),
        ]
    };
    calendar_figures(figures, smoke);
    update_period_figures(figures, smoke);
    job_set_figures(figures, smoke);
    ored_cycle_figures(figures, smoke);
    for &(name, nodes, jobs, shape, target) in cases {
        let mut mirror = cluster(nodes, jobs, shape);
        let timing = time_cycle(&mut mirror, 5);
        figures.push(Figure {
            name: name.to_string(),
            value: Some(ms(timing.first)),
            unit: "ms",
            target: Some(target.to_string()),
            note: format!(
                "{jobs} queued jobs, {nodes} nodes, pure core; first cycle ({} comments), later cycles {:.1} ms",
                timing.updates,
                ms(timing.steady)
            ),
        });
    }
}

/// A cycle over queued jobs in job sets of 5 against the same jobs in no set, in one run
/// (each the fastest of a few first cycles on a fresh mirror, alternating): the sets'
/// turns (each set tried in order, only its first planned, one line per set that cannot
/// run) must cost at most half as much again.
fn job_set_figures(figures: &mut Vec<Figure>, smoke: bool) {
    use pbs_sched::synthetic::{Shape, cluster, job_set_cluster, time_cycle};
    let (nodes, jobs) = if smoke { (100, 1_000) } else { (1_000, 10_000) };
    let sets = jobs / 5;
    let (mut plain, mut in_sets) = (f64::MAX, f64::MAX);
    let (mut plain_steady, mut sets_steady) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let timing = time_cycle(&mut cluster(nodes, jobs, Shape::NodesFull), 3);
        plain = plain.min(ms(timing.first));
        plain_steady = plain_steady.min(ms(timing.steady));
        let timing = time_cycle(&mut job_set_cluster(nodes, jobs, Shape::NodesFull, 5), 3);
        in_sets = in_sets.min(ms(timing.first));
        sets_steady = sets_steady.min(ms(timing.steady));
    }
    let label = if smoke { "1k" } else { "10k" };
    figures.push(Figure {
        name: format!("sched_cycle_{label}_jobs_plain"),
        value: Some(plain),
        unit: "ms",
        target: None,
        note: format!("{jobs} queued jobs in no set, {nodes} full nodes; later cycles {plain_steady:.1} ms"),
    });
    figures.push(Figure {
        name: format!("sched_cycle_{label}_jobs_{sets}_sets"),
        value: Some(in_sets),
        unit: "ms",
        target: None,
        note: format!("the same jobs in {sets} job sets of 5; later cycles {sets_steady:.1} ms"),
    });
    figures.push(Figure {
        name: "sched_cycle_job_sets_ratio".to_string(),
        value: Some(in_sets / plain.max(f64::MIN_POSITIVE)),
        unit: "x",
        target: Some("<= 1.5".to_string()),
        note: format!(
            "job sets / plain, first cycles; later cycles {:.2}x",
            sets_steady / plain_steady.max(f64::MIN_POSITIVE)
        ),
    });
}
