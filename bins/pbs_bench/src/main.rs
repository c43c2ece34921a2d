//! `pbs_bench`: starts its own pbs_server in a temporary directory, loads it, and prints
//! figures (a table, or JSON with `--json`). A program that measures, not a timed test.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser;

mod bench;
mod deletion;
mod exec;
mod preempt;
mod sched;
mod server;

use bench::{Bins, Figure, Sizes};

#[derive(Parser, Debug)]
#[command(name = "pbs_bench", about = "Measure pbs_server and the q-commands on this machine")]
struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Small sizes for CI: checks every measurement runs, the figures mean little.
    #[arg(long)]
    smoke: bool,
    /// Jobs per client in the submission-rate runs.
    #[arg(long, default_value_t = 2000)]
    jobs_per_client: usize,
    /// The small and large queue sizes for qstat, memory and restart figures.
    #[arg(long, default_value_t = 10_000)]
    small: usize,
    #[arg(long, default_value_t = 100_000)]
    large: usize,
    /// Only one group of figures: `server` (submissions, qstat, memory, restart), `exec`
    /// (jobs and arrays on moms), `accounting` (what the accounting log costs submissions
    /// and tiny jobs), `preempt` (running jobs preempted on many moms, and deleted on one)
    /// or `sched` (the scheduler's pure core).
    #[arg(long, value_parser = ["server", "exec", "accounting", "preempt", "sched"])]
    only: Option<String>,
    /// Where pbs_server, pbs_mom and pbs_sched are (default: next to this program).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Where qsub and qstat are (default: the --bin-dir), e.g. the static build of the
    /// commands, `target/x86_64-unknown-linux-musl/release`.
    #[arg(long)]
    cli_dir: Option<PathBuf>,
}

fn run(args: &Args) -> Result<Vec<Figure>> {
    let daemons = match &args.bin_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_exe()?.parent().map(Path::to_path_buf).context("no exe dir")?,
    };
    let commands = args.cli_dir.clone().unwrap_or_else(|| daemons.clone());
    let bins = Bins { daemons, commands };
    let sizes =
        Sizes { smoke: args.smoke, jobs_per_client: args.jobs_per_client, small: args.small, large: args.large };
    let wanted = |group: &str| args.only.as_deref().is_none_or(|only| only == group);
    let mut figures = Vec::new();
    if wanted("server") {
        server::server_figures(&sizes, &bins, &mut figures)?;
    }
    if wanted("exec") {
        exec::execution_figures(args.smoke, &bins, &mut figures)?;
    }
    if wanted("accounting") {
        server::accounting_figures(&sizes, &bins, &mut figures)?;
    }
    if wanted("preempt") {
        preempt::preemption_figures(&bins, args.smoke, &mut figures)?;
        deletion::deletion_figures(&bins, args.smoke, &mut figures)?;
    }
    if wanted("sched") {
        sched::sched_cycle_figures(&mut figures, args.smoke);
    }
    Ok(figures)
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let figures = match run(&args) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pbs_bench: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&figures) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("pbs_bench: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    } else {
        println!("{:<34} {:>12} {:<7} {:<10} note", "figure", "value", "unit", "target");
        for f in &figures {
            let value = f.value.map(|v| format!("{v:.1}")).unwrap_or_else(|| "n/a".into());
            println!("{:<34} {:>12} {:<7} {:<10} {}", f.name, value, f.unit, f.target.as_deref().unwrap_or(""), f.note);
        }
    }
    std::process::ExitCode::SUCCESS
}
