//! Deletion figures: one mom full of running jobs, all ended by one qdel. The mom finds a
//! job's processes by a pass over `/proc`; it signals every job asked for meanwhile in one
//! pass, so the figure grows with the jobs, not with their square.

use std::time::{Duration, Instant};

use anyhow::Result;
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp, Request};

use crate::bench::{Bench, Bins, Figure, ms};
use crate::preempt::wait_all;

/// `per_mom` one-cpu `sleep` jobs running on one mom, deleted by one request: the request
/// to the last job finished (job history on, so each ends in `F`). Twice: jobs that end
/// on the SIGTERM, then jobs that ignore it, ended by the SIGKILL that follows
/// `kill_delay` (1 second here), whose SIGKILLs fall due together.
pub(crate) fn deletion_figures(bins: &Bins, smoke: bool, figures: &mut Vec<Figure>) -> Result<()> {
    let per_mom = if smoke { 10 } else { 1000 };
    let mut bench = Bench::for_root_jobs(bins, figures)?;
    let mut client = bench.client()?;
    let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
    bench.start_cluster(1)?;
    let ncpus = vec![set("resources_available.ncpus", &per_mom.to_string())];
    client.manager(MgrCommand::Set, MgrObject::Node, vec!["n1".into()], ncpus)?;
    client.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![set("kill_delay", "1")])?;
    // The second has no target of its own: it is the first's cost plus kill_delay, once
    // the SIGKILLs that fall due together go out in one pass.
    let runs = [
        ("qdel_running_jobs_one_mom", "exec sleep 3600", Some("< 1000"), "ending on SIGTERM"),
        (
            "qdel_running_jobs_one_mom_sigkill",
            "trap '' TERM\nsleep 3600",
            None,
            "ignoring SIGTERM, killed after kill_delay=1",
        ),
    ];
    for (name, body, target, how) in runs {
        let mut ids = Vec::with_capacity(per_mom);
        for _ in 0..per_mom {
            let attrs = vec![
                Attr::new("Job_Name", "sleeper"),
                Attr::new("Output_Path", "localhost:/dev/null"),
                Attr::new("Error_Path", "localhost:/dev/null"),
            ];
            ids.push(client.submit(attrs, format!("#!/bin/sh\n{body}\n"), None)?);
        }
        wait_all(&mut client, &ids, "R", Duration::from_secs(300))?;
        let started = Instant::now();
        client.per_id(Request::DeleteJob { ids: ids.clone(), force: false, purge_history: false })?;
        wait_all(&mut client, &ids, "F", Duration::from_secs(300))?;
        bench.record(
            name,
            Some(ms(started.elapsed())),
            "ms",
            target,
            format!("{per_mom} running jobs on one mom {how}, one DeleteJob to the last finished"),
        );
    }
    bench.finish(figures);
    Ok(())
}
