//! `pbs_bench`: starts its own pbs_server in a temporary directory, loads it, and prints
//! figures (a table, or JSON with `--json`). A program that measures, not a timed test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use pbs_client::Client;
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp};
use serde::Serialize;

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
    /// Where pbs_server, qsub and qstat are (default: next to this program).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

#[derive(Serialize, Debug)]
struct Figure {
    name: String,
    value: Option<f64>,
    unit: &'static str,
    target: Option<String>,
    note: String,
}

struct Bench {
    dir: tempfile::TempDir,
    bins: PathBuf,
    server: Option<Child>,
    host: String,
    figures: Vec<Figure>,
}

impl Bench {
    fn new(bins: PathBuf) -> Result<Bench> {
        let dir = tempfile::Builder::new().prefix("pbs-bench-").tempdir()?;
        let host = nix_hostname();
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let conf = format!(
            "PBS_SERVER={host}\nPBS_HOME={}\nPBS_BATCH_SERVICE_PORT={port}\n",
            dir.path().join("home").display()
        );
        std::fs::write(dir.path().join("pbs.conf"), conf)?;
        Ok(Bench { dir, bins, server: None, host, figures: Vec::new() })
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("pbs.conf")
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("home/server_sock")
    }

    fn client(&self) -> Result<Client> {
        Ok(Client::connect_unix(&self.socket(), &self.host)?)
    }

    /// Starts the server and returns how long it took to answer a request.
    fn start_server(&mut self) -> Result<Duration> {
        let started = Instant::now();
        let child = Command::new(self.bins.join("pbs_server"))
            .env("PBS_CONF_FILE", self.conf())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting pbs_server")?;
        self.server = Some(child);
        loop {
            if let Ok(mut client) = self.client() {
                if client.status(pbs_proto::Request::StatusServer { attrs: vec![] }).is_ok() {
                    return Ok(started.elapsed());
                }
            }
            if started.elapsed() > Duration::from_secs(120) {
                bail!("pbs_server did not become ready");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn stop_server(&mut self) {
        if let Some(mut child) = self.server.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            }
            let _ = child.wait();
        }
    }

    fn server_rss_kib(&self) -> Option<u64> {
        let pid = self.server.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    fn record(&mut self, name: &str, value: Option<f64>, unit: &'static str, target: Option<&str>, note: String) {
        self.figures.push(Figure { name: name.into(), value, unit, target: target.map(String::from), note });
    }

    fn count_jobs(&self) -> Result<usize> {
        let mut client = self.client()?;
        let reply = client.status_jobs(vec![], vec![], vec!["job_state".into()], false, false)?;
        Ok(reply.objects.len())
    }

    /// Submits `per_client` jobs from each of `clients` threads; returns jobs per second.
    fn submit_burst(&self, clients: usize, per_client: usize) -> Result<f64> {
        let started = Instant::now();
        let mut threads = Vec::new();
        for t in 0..clients {
            let mut client = self.client()?;
            threads.push(std::thread::spawn(move || -> Result<()> {
                for i in 0..per_client {
                    let attrs = vec![
                        Attr::new("Job_Name", format!("b{t}_{i}")),
                        Attr::new("Resource_List.walltime", "01:00:00"),
                    ];
                    client.submit(attrs, "#!/bin/sh\nsleep 1\n".into(), None)?;
                }
                Ok(())
            }));
        }
        for thread in threads {
            thread.join().map_err(|_| anyhow::anyhow!("submitter panicked"))??;
        }
        Ok((clients * per_client) as f64 / started.elapsed().as_secs_f64())
    }

    /// Fills the server up to `total` jobs.
    fn fill_to(&self, total: usize) -> Result<()> {
        let have = self.count_jobs()?;
        if have < total {
            let missing = total - have;
            let clients = 16.min(missing);
            self.submit_burst(clients, missing / clients)?;
            let rest = missing % clients;
            if rest > 0 {
                self.submit_burst(1, rest)?;
            }
        }
        Ok(())
    }

    /// Runs a q-command `runs` times with stdout discarded; returns the median wall time.
    fn time_command(&self, name: &str, args: &[&str], runs: usize) -> Result<Duration> {
        let mut times = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            let status = Command::new(self.bins.join(name))
                .args(args)
                .env("PBS_CONF_FILE", self.conf())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .with_context(|| format!("running {name}"))?;
            let elapsed = started.elapsed();
            if !status.success() {
                bail!("{name} {} exited with {status}", args.join(" "));
            }
            times.push(elapsed);
        }
        times.sort();
        Ok(times[times.len() / 2])
    }

    /// `loops` shell-like loops of `qsub -- /bin/true`, `per_loop` each; returns jobs/s.
    fn qsub_loops(&self, loops: usize, per_loop: usize) -> Result<f64> {
        let started = Instant::now();
        let mut threads = Vec::new();
        for _ in 0..loops {
            let qsub = self.bins.join("qsub");
            let conf = self.conf();
            threads.push(std::thread::spawn(move || -> Result<()> {
                for _ in 0..per_loop {
                    let status = Command::new(&qsub)
                        .args(["--", "/bin/true"])
                        .env("PBS_CONF_FILE", &conf)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()?;
                    if !status.success() {
                        bail!("qsub exited with {status}");
                    }
                }
                Ok(())
            }));
        }
        for thread in threads {
            thread.join().map_err(|_| anyhow::anyhow!("qsub loop panicked"))??;
        }
        Ok((loops * per_loop) as f64 / started.elapsed().as_secs_f64())
    }

    fn a_job_id(&self) -> Result<String> {
        let mut client = self.client()?;
        let reply = client.status_jobs(vec![], vec![], vec!["job_state".into()], false, false)?;
        reply.objects.last().map(|o| o.name.clone()).context("no jobs")
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn nix_hostname() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".into())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn run(args: &Args) -> Result<Vec<Figure>> {
    let bins = match &args.bin_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_exe()?.parent().map(Path::to_path_buf).context("no exe dir")?,
    };
    let (per_client, small, large, loop_jobs) =
        if args.smoke { (100, 500, 1000, 50) } else { (args.jobs_per_client, args.small, args.large, 1000) };
    let mut bench = Bench::new(bins.clone())?;
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

    let one = bench.qsub_loops(1, loop_jobs);
    let note = one.as_ref().err().map(|e| e.to_string()).unwrap_or_else(|| format!("{loop_jobs} x qsub -- /bin/true"));
    bench.record("qsub_cli_1_loop", one.ok(), "jobs/s", Some(">= 1000"), note);
    let four = bench.qsub_loops(4, loop_jobs);
    let note = four.as_ref().err().map(|e| e.to_string()).unwrap_or_else(|| format!("4 loops x {loop_jobs}"));
    bench.record("qsub_cli_4_loops", four.ok(), "jobs/s", Some(">= 1500"), note);

    // The status, memory and restart figures need exact queue sizes: start over.
    bench.stop_server();
    let figures = std::mem::take(&mut bench.figures);
    drop(bench);
    let mut bench = Bench::new(bins)?;
    bench.figures = figures;
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
    Ok(std::mem::take(&mut bench.figures))
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
        println!("{:<26} {:>12} {:<7} {:<10} note", "figure", "value", "unit", "target");
        for f in &figures {
            let value = f.value.map(|v| format!("{v:.1}")).unwrap_or_else(|| "n/a".into());
            println!("{:<26} {:>12} {:<7} {:<10} {}", f.name, value, f.unit, f.target.as_deref().unwrap_or(""), f.note);
        }
    }
    std::process::ExitCode::SUCCESS
}
