//! Deletion figures: one mom full of running jobs, all ended by one qdel. The mom finds a
//! job's processes by a pass over `/proc`; it signals every job asked for meanwhile in one
//! pass, so the figure grows with the jobs, not with their square.

use std::time::{Duration, Instant};

use anyhow::Result;
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp, Request};

use crate::bench::{Bench, Bins, Figure, ms};
use crate::preempt::wait_all;

/// `per_mom` one-cpu `sleep` jobs running on one mom, deleted by one request: the request
/// to the last job finished (job history on, so each ends in `F`).
pub(crate) fn deletion_figures(bins: &Bins, smoke: bool, figures: &mut Vec<Figure>) -> Result<()> {
    let per_mom = if smoke { 10 } else { 200 };
    let mut bench = Bench::for_root_jobs(bins, figures)?;
    let mut client = bench.client()?;
    let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
    bench.start_cluster(1)?;
    let ncpus = vec![set("resources_available.ncpus", &per_mom.to_string())];
    client.manager(MgrCommand::Set, MgrObject::Node, vec!["n1".into()], ncpus)?;
    let mut ids = Vec::with_capacity(per_mom);
    for _ in 0..per_mom {
        let attrs = vec![
            Attr::new("Job_Name", "sleeper"),
            Attr::new("Output_Path", "localhost:/dev/null"),
            Attr::new("Error_Path", "localhost:/dev/null"),
        ];
        ids.push(client.submit(attrs, "#!/bin/sh\nexec sleep 3600\n".into(), None)?);
    }
    wait_all(&mut client, &ids, "R", Duration::from_secs(120))?;
    let started = Instant::now();
    client.per_id(Request::DeleteJob { ids: ids.clone(), force: false, purge_history: false })?;
    wait_all(&mut client, &ids, "F", Duration::from_secs(120))?;
    bench.record(
        "qdel_running_jobs_one_mom",
        Some(ms(started.elapsed())),
        "ms",
        Some("< 1000"),
        format!("{per_mom} running jobs on one mom, one DeleteJob to the last finished"),
    );
    bench.finish(figures);
    Ok(())
}
