//! Figures of jobs and arrays run through moms and the scheduler.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp, Request};

use crate::bench::{Bench, Bins, Figure, ms};

/// Jobs and arrays through a cluster of 4 moms and the scheduler.
pub(crate) fn execution_figures(smoke: bool, bins: &Bins, figures: &mut Vec<Figure>) -> Result<()> {
    let mut bench = Bench::new(bins.clone())?;
    bench.figures = std::mem::take(figures);
    bench.start_server()?;
    let attr = MgrAttr { name: "acl_roots".into(), op: MgrOp::Set, value: "root".into() };
    bench.client()?.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![attr])?;
    bench.start_cluster(4)?;
    let (latency_runs, tiny_jobs) = if smoke { (5, 50) } else { (21, 1000) };
    let latency = bench.one_job_latency(latency_runs)?;
    bench.record(
        "one_job_submit_to_finished",
        Some(ms(latency)),
        "ms",
        Some("< 100"),
        format!("median of {latency_runs}, /bin/true, idle cluster of 4 moms"),
    );
    let chain = bench.chain_of_two(latency_runs)?;
    bench.record(
        "afterok_chain_of_two_finished",
        Some(ms(chain)),
        "ms",
        Some("< 2x one_job + 10"),
        format!(
            "median of {latency_runs}: parent released to its afterok child finished; the release costs {:.1} ms",
            ms(chain) - 2.0 * ms(latency)
        ),
    );
    let rate = bench.throughput(tiny_jobs)?;
    bench.record(
        "tiny_jobs_4_moms",
        Some(rate),
        "jobs/s",
        Some(">= 200"),
        format!("{tiny_jobs} x /bin/true, first submit to last finished"),
    );
    // The same with `-m abe` and a stand-in mailer, in rounds alternating with plain ones:
    // every start and end decides a mail, which the mailer sends or its limits drop.
    bench.mail_to_stand_in()?;
    let rounds = 3;
    let (plain, mailed) = bench.paired(rounds, |bench| bench.throughput(tiny_jobs))?;
    bench.record(
        "tiny_jobs_4_moms_mail",
        Some(mailed),
        "jobs/s",
        Some(">= 0.9x tiny_jobs_4_moms"),
        format!(
            "{rounds} rounds of {tiny_jobs} x /bin/true with -m abe and without in turn: {mailed:.0} vs {plain:.0} jobs/s, \
             {:.2}x without; {} mails sent, the rest over the limit of mails a user gets a minute",
            mailed / plain,
            bench.mails_kept()
        ),
    );
    bench.mail = false;
    // The same jobs with one trivial execjob_begin hook on every mom, in the same run: each
    // start waits for a round trip to a warm interpreter.
    let mut client = bench.client()?;
    let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
    client.manager(MgrCommand::Create, MgrObject::Hook, vec!["begin".into()], vec![set("event", "execjob_begin")])?;
    client.request(Request::ImportHook {
        name: "begin".into(),
        content_type: "application/x-python".into(),
        encoding: "default".into(),
        content: "import pbs\npbs.event().accept()\n".into(),
    })?;
    // The hooks reach each mom before any later start does (one link, commit order). The
    // first hooked jobs also start each mom's interpreter, a one-time cost a site pays when
    // it installs a hook: it is timed apart, and the rate is measured warm, as the run
    // without the hook is (after the latency runs).
    let warm_up = tiny_jobs / 10;
    let cold = bench.throughput(warm_up)?;
    let hooked = bench.throughput(tiny_jobs)?;
    bench.record(
        "tiny_jobs_4_moms_begin_hook",
        Some(hooked),
        "jobs/s",
        Some(">= 0.8x tiny_jobs_4_moms"),
        format!(
            "{tiny_jobs} x /bin/true with one execjob_begin hook that accepts: {:.2}x without; the first {warm_up} \
             after the hook is installed, which start the interpreters: {cold:.0} jobs/s",
            hooked / rate
        ),
    );
    client.manager(MgrCommand::Delete, MgrObject::Hook, vec!["begin".into()], vec![])?;
    array_figures(&mut bench, tiny_jobs, rate)?;
    bench.stop_server();
    *figures = std::mem::take(&mut bench.figures);
    Ok(())
}

/// Job arrays: submitting and listing big ones, and tiny subjobs through the cluster.
fn array_figures(bench: &mut Bench, tiny_jobs: usize, separate_rate: f64) -> Result<()> {
    let mut client = bench.client()?;
    let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
    client.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![set("max_array_size", "100000")])?;
    let held = ["-h", "-o", "/dev/null", "-e", "/dev/null"];
    let (qsub, conf) = (bench.bins.commands.join("qsub"), bench.conf());
    let submit = |size: usize| -> Result<(Duration, String)> {
        let range = format!("0-{}", size - 1);
        let started = Instant::now();
        let out = Command::new(&qsub)
            .args(held)
            .args(["-J", &range, "--", "/bin/true"])
            .env("PBS_CONF_FILE", &conf)
            .output()?;
        let elapsed = started.elapsed();
        if !out.status.success() {
            bail!("qsub -J {range}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok((elapsed, String::from_utf8_lossy(&out.stdout).trim().to_string()))
    };
    let (elapsed, big) = submit(100_000)?;
    let (_, ten_k) = submit(10_000)?;
    bench.record("array_submit_100k", Some(ms(elapsed)), "ms", Some("< 50"), "qsub -J 0-99999, one run".into());
    let listing = bench.time_command("qstat", &[&big], 5)?;
    bench.record("array_qstat_100k", Some(ms(listing)), "ms", Some("< 20"), "qstat of the 100,000-subjob array".into());
    let expanded = bench.time_command("qstat", &["-t", &ten_k], 5)?;
    bench.record(
        "array_qstat_t_10k",
        Some(ms(expanded)),
        "ms",
        Some("< 50"),
        "qstat -t of a 10,000-subjob array".into(),
    );
    client.per_id(pbs_proto::Request::DeleteJob { ids: vec![big, ten_k], force: false, purge_history: true })?;

    let attrs = vec![
        Attr::new("executable", "<jsdl-hpcpa:Executable>/bin/true</jsdl-hpcpa:Executable>"),
        Attr::new("Output_Path", "localhost:/dev/null"),
        Attr::new("Error_Path", "localhost:/dev/null"),
        Attr::new("array_indices_submitted", format!("0-{}", tiny_jobs - 1)),
    ];
    let started = Instant::now();
    let id = client.submit(attrs, String::new(), None)?;
    loop {
        let reply = client.status_jobs(vec![id.clone()], vec![], vec!["job_state".into()], true, false)?;
        if reply.objects.first().and_then(|o| o.get("job_state")) == Some("F") {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!("array {id} did not finish");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let rate = tiny_jobs as f64 / started.elapsed().as_secs_f64();
    bench.record(
        "tiny_subjobs_4_moms",
        Some(rate),
        "jobs/s",
        Some(&format!(">= {separate_rate:.0}")),
        format!("{tiny_jobs} x /bin/true subjobs of one array (separate jobs: {separate_rate:.0}/s)"),
    );
    Ok(())
}
