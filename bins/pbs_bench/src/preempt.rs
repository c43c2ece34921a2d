//! Preemption figures: many running jobs on many moms preempted by one PreemptJobs
//! request, the moms asked all at once, so the request takes as long as its slowest mom,
//! not the sum.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use pbs_client::Client;
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp, Request};

use crate::bench::{Bench, Bins, Figure, ms};

/// Waits until every job of `ids` is in `state` (running ones also confirmed by their
/// mom, substate 42; finished ones, `F`, read from the job history), at most `limit`.
pub(crate) fn wait_all(client: &mut Client, ids: &[String], state: &str, limit: Duration) -> Result<()> {
    let started = Instant::now();
    loop {
        let attrs = vec!["job_state".into(), "substate".into()];
        let reply = client.status_jobs(ids.to_vec(), vec![], attrs, state == "F", false)?;
        let there = reply
            .objects
            .iter()
            .filter(|o| o.get("job_state") == Some(state) && (state != "R" || o.get("substate") == Some("42")))
            .count();
        if there == ids.len() {
            return Ok(());
        }
        if started.elapsed() > limit {
            bail!("{there} of {} jobs in state {state}", ids.len());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Times one PreemptJobs request for `ids`; fails unless every job was suspended.
fn preempt_all(client: &mut Client, ids: &[String]) -> Result<Duration> {
    let started = Instant::now();
    let answer = client.preempt_jobs(ids)?;
    let elapsed = started.elapsed();
    let suspended = answer.iter().filter(|(_, method)| *method == 'S').count();
    if suspended != ids.len() {
        bail!("{suspended} of {} jobs suspended", ids.len());
    }
    Ok(elapsed)
}

/// `moms` moms of `per_mom` cpus, each full of one-cpu jobs, preempted for one job that
/// takes the whole cluster: by the scheduler (submission of the big job to its start), by
/// one request (its answer), and by one request while one mom takes a second to answer.
pub(crate) fn preemption_figures(bins: &Bins, smoke: bool, figures: &mut Vec<Figure>) -> Result<()> {
    let (moms, per_mom) = if smoke { (2, 4) } else { (10, 10) };
    let n_jobs = moms * per_mom;
    let mut bench = Bench::for_root_jobs(bins, figures)?;
    let mut client = bench.client()?;
    let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
    bench.start_cluster(moms)?;
    for i in 1..=moms {
        let ncpus = vec![set("resources_available.ncpus", &per_mom.to_string())];
        client.manager(MgrCommand::Set, MgrObject::Node, vec![format!("n{i}")], ncpus)?;
    }
    let express =
        vec![set("queue_type", "execution"), set("Priority", "200"), set("enabled", "True"), set("started", "True")];
    client.manager(MgrCommand::Create, MgrObject::Queue, vec!["express".into()], express)?;
    let quiet = |name: &str| vec![Attr::new("Job_Name", name), Attr::new("Output_Path", "localhost:/dev/null")];
    let mut ids = Vec::with_capacity(n_jobs);
    for _ in 0..n_jobs {
        let mut attrs = quiet("low");
        attrs.push(Attr::new("Error_Path", "localhost:/dev/null"));
        ids.push(client.submit(attrs, "#!/bin/sh\nexec sleep 3600\n".into(), None)?);
    }
    wait_all(&mut client, &ids, "R", Duration::from_secs(120))?;

    // The scheduler: the big job is submitted, every running job is suspended by one
    // request, and the big job starts in the next cycle.
    let started = Instant::now();
    let mut attrs = quiet("big");
    attrs.push(Attr::new("Error_Path", "localhost:/dev/null"));
    attrs.push(Attr::new("Resource_List.select", format!("{moms}:ncpus={per_mom}")));
    let big = client.submit(attrs, "#!/bin/sh\nexec sleep 3600\n".into(), Some("express".into()))?;
    wait_all(&mut client, std::slice::from_ref(&big), "R", Duration::from_secs(60))?;
    let by_scheduler = started.elapsed();
    wait_all(&mut client, &ids, "S", Duration::from_secs(10))?;
    bench.record(
        "preempt_by_scheduler",
        Some(ms(by_scheduler)),
        "ms",
        Some("< 200"),
        format!("{n_jobs} running jobs on {moms} moms suspended for one job of the whole cluster: its submission to its start"),
    );
    client.per_id(Request::DeleteJob { ids: vec![big], force: false, purge_history: false })?;
    wait_all(&mut client, &ids, "R", Duration::from_secs(60))?;

    // The request alone (scheduling off, so nothing resumes them meanwhile).
    client.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![set("scheduling", "False")])?;
    let one_request = preempt_all(&mut client, &ids)?;
    bench.record(
        "preempt_jobs_request",
        Some(ms(one_request)),
        "ms",
        Some("< 200"),
        format!("one PreemptJobs request suspending {n_jobs} jobs on {moms} moms, to its answer"),
    );
    client.signal_jobs(ids.clone(), "resume".into())?;
    wait_all(&mut client, &ids, "R", Duration::from_secs(60))?;

    // One mom answers a second late (stopped for that second): the list waits for her once.
    let slow = bench.daemons.first().map(std::process::Child::id).and_then(|pid| i32::try_from(pid).ok());
    let Some(slow) = slow.map(nix::unistd::Pid::from_raw) else { bail!("no mom to slow down") };
    nix::sys::signal::kill(slow, nix::sys::signal::Signal::SIGSTOP)?;
    let waker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        nix::sys::signal::kill(slow, nix::sys::signal::Signal::SIGCONT)
    });
    let with_slow = preempt_all(&mut client, &ids);
    let woken = waker.join().map_err(|_| anyhow::anyhow!("waker panicked"))?;
    woken?;
    let with_slow = with_slow?;
    bench.record(
        "preempt_jobs_one_slow_mom",
        Some(ms(with_slow)),
        "ms",
        Some("~ 1000 (the slowest mom)"),
        format!("the same request while one of the {moms} moms is stopped for 1 s: the list waits for her once"),
    );
    client.per_id(Request::DeleteJob { ids, force: true, purge_history: false })?;
    bench.finish(figures);
    Ok(())
}
