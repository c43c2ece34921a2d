//! Figures of a server without moms: submissions, qstat, memory, restart, and what the
//! accounting log costs.

use anyhow::Result;
use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp};

use crate::bench::{Bench, Bins, Figure, Sizes, ms};

/// Submissions, qstat, memory and restart on a server without moms.
pub(crate) fn server_figures(sizes: &Sizes, bins: &Bins, figures: &mut Vec<Figure>) -> Result<()> {
    let bins = bins.clone();
    let (per_client, small, large, loop_jobs) =
        if sizes.smoke { (100, 500, 1000, 50) } else { (sizes.jobs_per_client, sizes.small, sizes.large, 1000) };
    // A munged of the bench's own for the remote figures; without one they say why.
    let munged = pbs_munge::private::PrivateMunged::start();
    let munge_failure = munged.as_ref().err().map(|e| e.to_string());
    let mut bench = Bench::with_munged(bins.clone(), munged.ok())?;
    bench.figures = std::mem::take(figures);
    bench.start_server()?;
    {
        // Root's jobs are refused unless root is in acl_roots, as in OpenPBS.
        let attr = MgrAttr { name: "acl_roots".into(), op: MgrOp::Set, value: "root".into() };
        bench.client()?.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![attr])?;
    }
    let rate1 = bench.submit_burst(1, per_client)?;
    bench.record("submit_rate_1_client", Some(rate1), "jobs/s", None, format!("{per_client} durable submissions"));
    let rate16 = bench.submit_burst(16, per_client)?;
    bench.record("submit_rate_16_clients", Some(rate16), "jobs/s", Some(">= 20000"), format!("16 x {per_client}"));
    // The same with `-m abe` and a stand-in mailer, in rounds alternating with plain ones.
    bench.mail_to_stand_in()?;
    let rounds = 3;
    let (plain, mailed) = bench.paired(rounds, |bench| bench.submit_burst(16, per_client))?;
    let note = format!(
        "{rounds} rounds of 16 x {per_client} with -m abe and without in turn: {mailed:.0} vs {plain:.0} jobs/s, {:.2}x without",
        mailed / plain
    );
    bench.record("submit_rate_16_clients_mail", Some(mailed), "jobs/s", Some(">= 0.9x submit_rate_16_clients"), note);
    bench.mail = false;

    // The same over TCP, each client proving itself with MUNGE as off the server's host.
    match munge_failure {
        None => {
            bench.remote = true;
            let remote1 = bench.submit_burst(1, per_client)?;
            let note = format!("{per_client} durable submissions over munge; {:.2}x the local rate", remote1 / rate1);
            bench.record("submit_rate_1_client_munge", Some(remote1), "jobs/s", None, note);
            let remote16 = bench.submit_burst(16, per_client)?;
            let note = format!("16 x {per_client} over munge; {:.2}x the local rate", remote16 / rate16);
            bench.record(
                "submit_rate_16_clients_munge",
                Some(remote16),
                "jobs/s",
                Some(">= 0.7x submit_rate_16_clients"),
                note,
            );
            bench.remote = false;
        }
        Some(why) => {
            bench.record("submit_rate_1_client_munge", None, "jobs/s", None, why.clone());
            bench.record("submit_rate_16_clients_munge", None, "jobs/s", Some(">= 0.7x submit_rate_16_clients"), why);
        }
    }

    let one = bench.qsub_loops(1, loop_jobs);
    // Which build of the commands ran matters to these two figures (docs/architecture.md).
    let from = if bins.commands == bins.daemons { String::new() } else { format!(", {}", bins.commands.display()) };
    let note =
        one.as_ref().err().map(|e| e.to_string()).unwrap_or_else(|| format!("{loop_jobs} x qsub -- /bin/true{from}"));
    let one_rate = one.as_ref().ok().copied();
    bench.record("qsub_cli_1_loop", one_rate, "jobs/s", Some(">= 1000"), note);
    let four = bench.qsub_loops(4, loop_jobs);
    let note = four.as_ref().err().map(|e| e.to_string()).unwrap_or_else(|| format!("4 loops x {loop_jobs}{from}"));
    bench.record("qsub_cli_4_loops", four.ok(), "jobs/s", Some(">= 1500"), note);

    // A chain: each job depends on the one before (afterok), all held by their
    // dependencies, as workflow tools submit them.
    let chain = bench.submit_chain(per_client)?;
    let note = format!("{per_client} jobs, each afterok the one before; {:.2}x the plain rate", chain / rate1);
    bench.record("submit_rate_chain", Some(chain), "jobs/s", Some(">= 0.8x submit_rate_1_client"), note);
    // A fan-out: every job depends on the same one, as a sweep after a setup step.
    let fan = bench.submit_fan_out(per_client)?;
    let note = format!("{per_client} jobs, each afterok one held job; {:.2}x the plain rate", fan / rate1);
    bench.record("submit_rate_fan_out", Some(fan), "jobs/s", Some(">= 0.8x submit_rate_1_client"), note);

    // The same with one trivial queuejob hook enabled, in the same run.
    bench.install_trivial_hook()?;
    let hooked1 = bench.submit_burst(1, per_client)?;
    let note = format!("{per_client} durable submissions, one queuejob hook; {:.2}x without", hooked1 / rate1);
    bench.record("submit_rate_1_client_hooked", Some(hooked1), "jobs/s", None, note);
    let hooked16 = bench.submit_burst(16, per_client)?;
    let note = format!("16 x {per_client}, one queuejob hook; {:.2}x without", hooked16 / rate16);
    bench.record("submit_rate_16_clients_hooked", Some(hooked16), "jobs/s", None, note);
    // Rounds of 100 qsubs each, alternately with the hook off and on, on this server.
    let rounds = (loop_jobs / 100).max(2);
    let paired = bench.paired_qsub_loops(rounds, loop_jobs / rounds);
    let note = match &paired {
        Ok((without, with)) => format!(
            "{rounds} rounds of {} qsubs, one queuejob hook on and off in turn: {with:.0} vs {without:.0} jobs/s, {:.2}x without",
            loop_jobs / rounds,
            with / without
        ),
        Err(e) => e.to_string(),
    };
    let hooked_loop = paired.as_ref().ok().map(|(_, with)| *with);
    bench.record("qsub_cli_1_loop_hooked", hooked_loop, "jobs/s", Some(">= 0.9x qsub_cli_1_loop, same server"), note);

    // The status, memory and restart figures need exact queue sizes: start over.
    bench.stop_server();
    let kept = std::mem::take(&mut bench.figures);
    drop(bench);
    let bench_bins = bins.clone();
    let mut bench = Bench::with_munged(bins, pbs_munge::private::PrivateMunged::start().ok())?;
    bench.figures = kept;
    bench.start_server()?;
    let attr = MgrAttr { name: "acl_roots".into(), op: MgrOp::Set, value: "root".into() };
    bench.client()?.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![attr])?;
    let rss_empty = bench.server_rss_kib();
    for (size, label) in [(small, "small"), (large, "large")] {
        bench.fill_to(size)?;
        let n = bench.count_jobs()?;
        let qstat = bench.time_command("qstat", &[], 3);
        let note = qstat.as_ref().err().map(|e| e.to_string()).unwrap_or_else(|| format!("{n} jobs"));
        let target = (label == "small").then_some("< 50");
        bench.record(&format!("qstat_{label}"), qstat.ok().map(ms), "ms", target, note);
        let full = bench.time_command("qstat", &["-f"], 3);
        let note = full.as_ref().err().map(|e| e.to_string()).unwrap_or_else(|| format!("{n} jobs"));
        let target = (label == "small").then_some("< 300");
        bench.record(&format!("qstat_f_{label}"), full.ok().map(ms), "ms", target, note);
        let id = bench.a_job_id()?;
        let single = bench.time_command("qstat", &["-f", &id], 5);
        let note = single.as_ref().err().map(|e| e.to_string()).unwrap_or_else(|| format!("one of {n} jobs"));
        let target = (label == "large").then_some("< 5");
        bench.record(&format!("qstat_f_one_of_{label}"), single.ok().map(ms), "ms", target, note);
        if label == "small" {
            // The same from another host's point of view: TCP, the link, two munge proofs.
            bench.remote = bench.munged.is_some();
            let remote = if bench.remote {
                bench.time_command("qstat", &["-f", &id], 5)
            } else {
                Err(anyhow::anyhow!("no munged"))
            };
            bench.remote = false;
            let note = remote
                .as_ref()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_else(|| format!("qstat -f of one of {n} jobs over munge"));
            bench.record("qstat_one_remote", remote.ok().map(ms), "ms", None, note);
        }
    }

    let n = bench.count_jobs()?;
    let rss = bench.server_rss_kib();
    let per_job = match (rss, rss_empty) {
        (Some(full), Some(empty)) if n > 0 => Some((full.saturating_sub(empty)) as f64 * 1024.0 / n as f64),
        _ => None,
    };
    bench.record("server_memory_per_job", per_job, "bytes", Some("<= 4096"), format!("RSS {rss:?} KiB with {n} jobs"));

    bench.stop_server();
    let restart = bench.start_server()?;
    let recovered = bench.count_jobs()?;
    bench.record(
        "server_restart",
        Some(ms(restart)),
        "ms",
        Some("< 3000"),
        format!("{recovered} of {n} jobs recovered"),
    );
    bench.stop_server();

    // Jobs that all wait for the same execution time, made eligible by one timer event.
    let deferred = if sizes.smoke { 1000 } else { 10_000 };
    let kept = std::mem::take(&mut bench.figures);
    drop(bench);
    let mut bench = Bench::new(bench_bins)?;
    bench.figures = kept;
    bench.start_server()?;
    let attr = MgrAttr { name: "acl_roots".into(), op: MgrOp::Set, value: "root".into() };
    bench.client()?.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![attr])?;
    let eligible = bench.deferred_to_queued(deferred);
    // The server logs how long each timer event held the state; the largest is this one.
    // Its log is complete once it has stopped.
    bench.stop_server();
    let held = bench.server_log_max("Timer event: ", " us under the lock").map(|us| us as f64 / 1000.0);
    let note = match &eligible {
        Err(e) => e.to_string(),
        Ok(seen) => {
            format!("{deferred} jobs with one -a time, one timer event; all seen Q {:.1} ms after it", ms(*seen))
        }
    };
    bench.record("deferred_jobs_eligible_server", held.filter(|_| eligible.is_ok()), "ms", Some("< 100"), note);

    *figures = std::mem::take(&mut bench.figures);
    Ok(())
}

/// Two fresh servers, one started with `--no-accounting`, that go through the same work
/// in alternating rounds (which goes first alternates too: the machine is shared and
/// noisy); each figure is the share of the median rate the accounting log loses
/// (target: under 5%), with each side's min and median. Both start empty and get the same
/// jobs, so neither pays for a bigger store or queue than the other.
pub(crate) fn accounting_figures(sizes: &Sizes, bins: &Bins, figures: &mut Vec<Figure>) -> Result<()> {
    // Short rounds, many of them: a round's ratio is taken between two runs a moment apart,
    // so the load other work puts on the machine changes little within it.
    let (per_client, rounds, tiny_jobs) =
        if sizes.smoke { (100, 2, 50) } else { ((sizes.jobs_per_client / 8).max(1), 41, 500) };
    let pair = || -> Result<(Bench, Bench)> {
        let mut with = Bench::new(bins.clone())?;
        let mut without = Bench::new(bins.clone())?;
        without.no_accounting = true;
        for bench in [&mut with, &mut without] {
            bench.start_server()?;
            let attr = MgrAttr { name: "acl_roots".into(), op: MgrOp::Set, value: "root".into() };
            bench.client()?.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![attr])?;
        }
        Ok((with, without))
    };
    let (mut with, without) = pair()?;
    with.figures = std::mem::take(figures);
    // One unmeasured burst each first: the first commits of a fresh store create its files.
    with.submit_burst(1, per_client / 10 + 1)?;
    without.submit_burst(1, per_client / 10 + 1)?;
    for clients in [1, 16] {
        let name = format!("accounting_cost_submit_{clients}_client{}", if clients == 1 { "" } else { "s" });
        let what = format!("rounds of {clients} x {per_client} submissions");
        alternate(&mut with, &without, rounds, &name, &what, |bench| bench.submit_burst(clients, per_client))?;
    }
    *figures = std::mem::take(&mut with.figures);
    drop(with);
    drop(without);

    // Both clusters are up at once (the idle one's daemons only wait), so that their runs
    // can alternate as the submissions' do.
    let (mut with, mut without) = pair()?;
    with.figures = std::mem::take(figures);
    with.start_cluster(4)?;
    without.start_cluster(4)?;
    with.throughput(tiny_jobs / 10 + 1)?;
    without.throughput(tiny_jobs / 10 + 1)?;
    let rounds = if sizes.smoke { 2 } else { 11 };
    let what = format!("runs of {tiny_jobs} x /bin/true on 4 moms, first submit to last finished");
    alternate(&mut with, &without, rounds, "accounting_cost_tiny_jobs_4_moms", &what, |bench| {
        bench.throughput(tiny_jobs)
    })?;
    *figures = std::mem::take(&mut with.figures);
    Ok(())
}

/// Runs `run` (a rate) `rounds` times on each of `with` and `without` the accounting log,
/// alternating which goes first, and records the share of the median rate lost.
fn alternate(
    with: &mut Bench,
    without: &Bench,
    rounds: usize,
    name: &str,
    what: &str,
    run: impl Fn(&Bench) -> Result<f64>,
) -> Result<()> {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            on.push(run(with)?);
            off.push(run(without)?);
        } else {
            off.push(run(without)?);
            on.push(run(with)?);
        }
    }
    // The rounds' own ratios say how much of a difference is noise.
    // The figure is the median of the rounds' own ratios: a drift in the machine's load
    // between rounds moves both sides of a round alike.
    let mut ratios: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a / b).collect();
    let (ratio_min, ratio_median) = min_and_median(&mut ratios);
    let ratio_max = ratios.last().copied().unwrap_or(f64::NAN);
    // Other work only ever slows a run: each side's best run is the least disturbed one.
    let (_, on_median) = min_and_median(&mut on);
    let (_, off_median) = min_and_median(&mut off);
    let on_best = on.last().copied().unwrap_or(f64::NAN);
    let off_best = off.last().copied().unwrap_or(f64::NAN);
    with.record(
        name,
        Some(100.0 * (1.0 - ratio_median)),
        "%",
        Some("< 5"),
        format!(
            "per round with/without: median {ratio_median:.3}, {ratio_min:.3} to {ratio_max:.3}; jobs/s with the \
             accounting log median {on_median:.0}, best {on_best:.0}; without median {off_median:.0}, best \
             {off_best:.0} (medians' ratio {:.3}, bests' {:.3}); {rounds} alternating {what}",
            on_median / off_median,
            on_best / off_best
        ),
    );
    Ok(())
}

/// The smallest and the median of `samples` (sorted in place; NaN for none).
fn min_and_median(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let min = samples.first().copied().unwrap_or(f64::NAN);
    (min, samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN))
}
