//! The harness every figure shares: a server (and moms and a scheduler) in a temporary
//! directory, the programs it runs, and the figures it collects.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use pbs_client::Client;
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp, Request};
use serde::Serialize;

/// Where the programs the bench runs are.
#[derive(Clone, Debug)]
pub(crate) struct Bins {
    pub(crate) daemons: PathBuf,
    pub(crate) commands: PathBuf,
}

#[derive(Serialize, Debug)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) value: Option<f64>,
    pub(crate) unit: &'static str,
    pub(crate) target: Option<String>,
    pub(crate) note: String,
}

pub(crate) struct Bench {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) bins: Bins,
    pub(crate) server: Option<Child>,
    pub(crate) host: String,
    pub(crate) figures: Vec<Figure>,
    /// Moms and the scheduler of the execution figures.
    pub(crate) daemons: Vec<Child>,
    /// The server writes no accounting log (`--no-accounting`), to measure what it costs.
    pub(crate) no_accounting: bool,
    /// Jobs ask for mail at their start, end and abort (`-m abe`).
    pub(crate) mail: bool,
    /// The server's TCP port.
    pub(crate) port: u16,
    /// A munged of the bench's own, which the server decodes with, when it started.
    pub(crate) munged: Option<pbs_munge::private::PrivateMunged>,
    /// Clients connect over TCP and prove themselves with MUNGE, as off the server's host.
    pub(crate) remote: bool,
}

impl Bench {
    pub(crate) fn new(bins: Bins) -> Result<Bench> {
        Bench::with_munged(bins, None)
    }

    /// A bench whose server decodes MUNGE credentials with `munged`.
    pub(crate) fn with_munged(bins: Bins, munged: Option<pbs_munge::private::PrivateMunged>) -> Result<Bench> {
        let dir = tempfile::Builder::new().prefix("pbs-bench-").tempdir()?;
        let host = nix_hostname();
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut conf = format!(
            "PBS_SERVER={host}\nPBS_HOME={}\nPBS_BATCH_SERVICE_PORT={port}\n",
            dir.path().join("home").display()
        );
        if let Some(munged) = &munged {
            conf.push_str(&format!("PBS_MUNGE_SOCKET={}\n", munged.socket().display()));
        }
        std::fs::write(dir.path().join("pbs.conf"), conf)?;
        Ok(Bench {
            dir,
            bins,
            server: None,
            host,
            figures: Vec::new(),
            daemons: Vec::new(),
            no_accounting: false,
            mail: false,
            port,
            munged,
            remote: false,
        })
    }

    pub(crate) fn conf(&self) -> PathBuf {
        self.dir.path().join("pbs.conf")
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join("home/server_sock")
    }

    pub(crate) fn client(&self) -> Result<Client> {
        match (&self.munged, self.remote) {
            (Some(munged), true) => Ok(Client::connect_munge("127.0.0.1", self.port, &munged.client(), &[0])?),
            _ => Ok(Client::connect_unix(&self.socket(), &self.host)?),
        }
    }

    /// Starts the server and returns how long it took to answer a request.
    pub(crate) fn start_server(&mut self) -> Result<Duration> {
        let started = Instant::now();
        let child = Command::new(self.bins.daemons.join("pbs_server"))
            .args(self.no_accounting.then_some("--no-accounting"))
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

    /// A started server where root may run jobs, holding the figures so far.
    pub(crate) fn for_root_jobs(bins: &Bins, figures: &mut Vec<Figure>) -> Result<Bench> {
        let mut bench = Bench::new(bins.clone())?;
        bench.figures = std::mem::take(figures);
        bench.start_server()?;
        let acl = MgrAttr { name: "acl_roots".into(), op: MgrOp::Set, value: "root".into() };
        bench.client()?.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![acl])?;
        Ok(bench)
    }

    /// Stops the server and every mom, and hands the figures back.
    pub(crate) fn finish(mut self, figures: &mut Vec<Figure>) {
        self.stop_server();
        for mut child in self.daemons.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
        *figures = std::mem::take(&mut self.figures);
    }

    pub(crate) fn stop_server(&mut self) {
        if let Some(mut child) = self.server.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            }
            let _ = child.wait();
        }
    }

    pub(crate) fn server_rss_kib(&self) -> Option<u64> {
        let pid = self.server.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    pub(crate) fn record(
        &mut self,
        name: &str,
        value: Option<f64>,
        unit: &'static str,
        target: Option<&str>,
        note: String,
    ) {
        self.figures.push(Figure { name: name.into(), value, unit, target: target.map(String::from), note });
    }

    pub(crate) fn count_jobs(&self) -> Result<usize> {
        let mut client = self.client()?;
        let reply = client.status_jobs(vec![], vec![], vec!["job_state".into()], false, false)?;
        Ok(reply.objects.len())
    }

    /// Submits `per_client` jobs from each of `clients` threads; returns jobs per second.
    pub(crate) fn submit_burst(&self, clients: usize, per_client: usize) -> Result<f64> {
        let started = Instant::now();
        let mut threads = Vec::new();
        for t in 0..clients {
            let mut client = self.client()?;
            let mail = self.mail;
            threads.push(std::thread::spawn(move || -> Result<()> {
                for i in 0..per_client {
                    let mut attrs = vec![
                        Attr::new("Job_Name", format!("b{t}_{i}")),
                        Attr::new("Resource_List.walltime", "01:00:00"),
                    ];
                    attrs.extend(mail_points(mail));
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

    /// Submits `n` jobs that all wait for one execution time a few seconds ahead, then
    /// measures from that time until every one is queued (what the server's timer event
    /// and its commit take, and one status poll).
    pub(crate) fn deferred_to_queued(&self, n: usize) -> Result<Duration> {
        let clients = 16.min(n.max(1));
        let at_secs =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs() + 3 + (n / 2000) as u64;
        let mut threads = Vec::new();
        for t in 0..clients {
            let mut client = self.client()?;
            let count = n / clients + usize::from(t < n % clients);
            threads.push(std::thread::spawn(move || -> Result<()> {
                for i in 0..count {
                    let attrs = vec![
                        Attr::new("Job_Name", format!("d{t}_{i}")),
                        Attr::new("Execution_Time", at_secs.to_string()),
                    ];
                    client.submit(attrs, "#!/bin/sh\ntrue\n".into(), None)?;
                }
                Ok(())
            }));
        }
        for thread in threads {
            thread.join().map_err(|_| anyhow::anyhow!("submitter panicked"))??;
        }
        let at = std::time::UNIX_EPOCH + Duration::from_secs(at_secs);
        if let Ok(ahead) = at.duration_since(std::time::SystemTime::now()) {
            std::thread::sleep(ahead);
        } else {
            bail!("the submissions took past the execution time");
        }
        let mut client = self.client()?;
        let queued =
            || pbs_proto::Criterion { attr: "job_state".into(), op: pbs_proto::CompareOp::Eq, value: "Q".into() };
        loop {
            let ids = client.select(vec![queued()], false, false, false)?;
            let since = std::time::SystemTime::now().duration_since(at).unwrap_or_default();
            if ids.len() >= n {
                return Ok(since);
            }
            if since > Duration::from_secs(60) {
                bail!("{} of {n} jobs queued a minute after their time", ids.len());
            }
            // Gently: each poll walks every job, on the cores the server's event needs.
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The largest number logged by the server between `before` and `after` on one line.
    pub(crate) fn server_log_max(&self, before: &str, after: &str) -> Option<u64> {
        let logs = std::fs::read_dir(self.dir.path().join("home/server_logs")).ok()?;
        let mut max = None;
        for entry in logs.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            for line in text.lines() {
                let Some((_, rest)) = line.split_once(before) else { continue };
                let Some((field, _)) = rest.split_once(after) else { continue };
                let value = field.rsplit(' ').next().and_then(|v| v.parse::<u64>().ok());
                max = max.max(value);
            }
        }
        max
    }

    /// Fills the server up to `total` jobs.
    pub(crate) fn fill_to(&self, total: usize) -> Result<()> {
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
    pub(crate) fn time_command(&self, name: &str, args: &[&str], runs: usize) -> Result<Duration> {
        let mut times = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            let mut command = Command::new(self.bins.commands.join(name));
            if self.remote {
                // As a command off the server's host: over TCP, proving itself with munge.
                command.env("PBS_AUTH_METHOD", "munge");
            }
            let status = command
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
    pub(crate) fn qsub_loops(&self, loops: usize, per_loop: usize) -> Result<f64> {
        let started = Instant::now();
        let mut threads = Vec::new();
        for _ in 0..loops {
            let qsub = self.bins.commands.join("qsub");
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

    /// Submits `n` jobs each depending on the previous one; returns jobs per second.
    pub(crate) fn submit_chain(&self, n: usize) -> Result<f64> {
        let mut client = self.client()?;
        let held = vec![Attr::new("Hold_Types", "u"), Attr::new("Job_Name", "chain")];
        let mut previous = client.submit(held, "#!/bin/sh\ntrue\n".into(), None)?;
        let started = Instant::now();
        for _ in 1..n {
            let attrs = vec![Attr::new("Job_Name", "chain"), Attr::new("depend", format!("afterok:{previous}"))];
            previous = client.submit(attrs, "#!/bin/sh\ntrue\n".into(), None)?;
        }
        Ok((n - 1) as f64 / started.elapsed().as_secs_f64())
    }

    /// Submits `n` jobs each depending on one held job; returns jobs per second.
    pub(crate) fn submit_fan_out(&self, n: usize) -> Result<f64> {
        let mut client = self.client()?;
        let held = vec![Attr::new("Hold_Types", "u"), Attr::new("Job_Name", "fan")];
        let parent = client.submit(held, "#!/bin/sh\ntrue\n".into(), None)?;
        let started = Instant::now();
        for _ in 0..n {
            let attrs = vec![Attr::new("Job_Name", "fan"), Attr::new("depend", format!("afterok:{parent}"))];
            client.submit(attrs, "#!/bin/sh\ntrue\n".into(), None)?;
        }
        Ok(n as f64 / started.elapsed().as_secs_f64())
    }

    /// Median time from releasing a held tiny job to seeing its afterok child finished,
    /// on an idle cluster: one job's run, its end, the child's release, run and end.
    pub(crate) fn chain_of_two(&self, runs: usize) -> Result<Duration> {
        let mut client = self.client()?;
        let mut times = Vec::new();
        for _ in 0..runs {
            let mut attrs = vec![
                Attr::new("executable", "<jsdl-hpcpa:Executable>/bin/true</jsdl-hpcpa:Executable>"),
                Attr::new("Output_Path", "localhost:/dev/null"),
                Attr::new("Error_Path", "localhost:/dev/null"),
            ];
            let mut parent_attrs = attrs.clone();
            parent_attrs.push(Attr::new("Hold_Types", "u"));
            let parent = client.submit(parent_attrs, String::new(), None)?;
            attrs.push(Attr::new("depend", format!("afterok:{parent}")));
            let child = client.submit(attrs, String::new(), None)?;
            let started = Instant::now();
            client.per_id(Request::ReleaseJob { ids: vec![parent.clone()], hold_types: "u".into() })?;
            Bench::wait_finished(&mut client, &child, started)?;
            times.push(started.elapsed());
        }
        times.sort();
        Ok(times[times.len() / 2])
    }

    /// Creates and imports a queuejob hook that accepts every job, and waits until it
    /// runs (its interpreter has started).
    pub(crate) fn install_trivial_hook(&self) -> Result<()> {
        let mut client = self.client()?;
        let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
        client.manager(MgrCommand::Create, MgrObject::Hook, vec!["accept".into()], vec![set("event", "queuejob")])?;
        client.request(Request::ImportHook {
            name: "accept".into(),
            content_type: "application/x-python".into(),
            encoding: "default".into(),
            content: "import pbs\npbs.event().accept()\n".into(),
        })?;
        client.submit(vec![Attr::new("Job_Name", "warm")], "#!/bin/sh\ntrue\n".into(), None)?;
        Ok(())
    }

    /// Turns the trivial hook of [`Bench::install_trivial_hook`] on or off.
    pub(crate) fn enable_trivial_hook(&self, enabled: bool) -> Result<()> {
        let value = if enabled { "true" } else { "false" };
        let attr = MgrAttr { name: "enabled".into(), op: MgrOp::Set, value: value.into() };
        self.client()?.manager(MgrCommand::Set, MgrObject::Hook, vec!["accept".into()], vec![attr])?;
        Ok(())
    }

    /// One qsub loop's rate without and with the trivial hook, in `rounds` rounds that
    /// alternate which goes first, on the same server: the two rates then see the same
    /// queue size and the same machine, where one loop measured long after the other saw
    /// tens of thousands more jobs. Returns (without, with) in jobs per second.
    pub(crate) fn paired_qsub_loops(&self, rounds: usize, per_round: usize) -> Result<(f64, f64)> {
        let (mut without, mut with) = (Duration::ZERO, Duration::ZERO);
        for round in 0..rounds {
            for hooked in [round % 2 == 1, round % 2 == 0] {
                self.enable_trivial_hook(hooked)?;
                let started = Instant::now();
                self.qsub_loops(1, per_round)?;
                *if hooked { &mut with } else { &mut without } += started.elapsed();
            }
        }
        self.enable_trivial_hook(true)?;
        let jobs = (rounds * per_round) as f64;
        Ok((jobs / without.as_secs_f64(), jobs / with.as_secs_f64()))
    }

    pub(crate) fn a_job_id(&self) -> Result<String> {
        let mut client = self.client()?;
        let reply = client.status_jobs(vec![], vec![], vec!["job_state".into()], false, false)?;
        reply.objects.last().map(|o| o.name.clone()).context("no jobs")
    }
}

impl Bench {
    /// Starts `moms` moms (nodes `n1`.. with plenty of cpus, so tiny jobs are never held
    /// back by cpus) and the scheduler, and waits until every node is free.
    pub(crate) fn start_cluster(&mut self, moms: usize) -> Result<()> {
        let master = pbs_proto::keys::read_key_file(&self.dir.path().join("home/server_priv/cluster_key"))?;
        let mut client = self.client()?;
        let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
        client.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![set("job_history_enable", "True")])?;
        for i in 1..=moms {
            let node = format!("n{i}");
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let home = self.dir.path().join(format!("mom-{node}"));
            std::fs::create_dir_all(&home)?;
            // Each mom holds its own node's key, as on a real cluster.
            let key = self.dir.path().join(format!("mom-{node}.key"));
            let node_key = pbs_proto::keys::derive(&master, &pbs_proto::Role::Mom { node: node.clone() });
            pbs_proto::keys::write_key_file(&key, &node_key).with_context(|| format!("writing {}", key.display()))?;
            let conf_path = self.dir.path().join(format!("mom-{node}.conf"));
            let conf = format!(
                "PBS_HOME={}\nPBS_MOM_SERVICE_PORT={port}\nPBS_MOM_NODE_NAME={node}\nPBS_CLUSTER_KEY_FILE={}\n",
                home.display(),
                key.display()
            );
            std::fs::write(&conf_path, conf)?;
            let child = Command::new(self.bins.daemons.join("pbs_mom"))
                .env("PBS_CONF_FILE", &conf_path)
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting pbs_mom")?;
            self.daemons.push(child);
            let attrs = vec![set("Mom", "127.0.0.1"), set("Port", &port.to_string())];
            client.manager(MgrCommand::Create, MgrObject::Node, vec![node.clone()], attrs)?;
            let ncpus = vec![set("resources_available.ncpus", "64")];
            client.manager(MgrCommand::Set, MgrObject::Node, vec![node], ncpus)?;
        }
        let sched = Command::new(self.bins.daemons.join("pbs_sched"))
            .env("PBS_CONF_FILE", self.conf())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting pbs_sched")?;
        self.daemons.push(sched);
        let started = Instant::now();
        loop {
            let nodes = client.status(pbs_proto::Request::StatusNode { names: vec![] })?;
            if nodes.objects.iter().all(|n| n.get("state") == Some("free")) {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("nodes did not come up");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn tiny_job(client: &mut Client, mail: bool) -> Result<String> {
        let mut attrs = vec![
            Attr::new("executable", "<jsdl-hpcpa:Executable>/bin/true</jsdl-hpcpa:Executable>"),
            Attr::new("Output_Path", "localhost:/dev/null"),
            Attr::new("Error_Path", "localhost:/dev/null"),
        ];
        attrs.extend(mail_points(mail));
        Ok(client.submit(attrs, String::new(), None)?)
    }

    /// Polls until job `id` is finished, at most 30 s after `started`.
    pub(crate) fn wait_finished(client: &mut Client, id: &str, started: Instant) -> Result<()> {
        loop {
            let reply = client.status_jobs(vec![id.to_string()], vec![], vec!["job_state".into()], true, false)?;
            if reply.objects.first().and_then(|o| o.get("job_state")) == Some("F") {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("job {id} did not finish");
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// Median time from submitting one tiny job to seeing it finished, on an idle cluster.
    pub(crate) fn one_job_latency(&self, runs: usize) -> Result<Duration> {
        let mut client = self.client()?;
        let mut times = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            let id = Bench::tiny_job(&mut client, self.mail)?;
            Bench::wait_finished(&mut client, &id, started)?;
            times.push(started.elapsed());
        }
        times.sort();
        Ok(times[times.len() / 2])
    }

    /// Jobs per second from the first submission to the last job finished.
    pub(crate) fn throughput(&self, jobs: usize) -> Result<f64> {
        let mut client = self.client()?;
        let started = Instant::now();
        let mut ids = Vec::with_capacity(jobs);
        for _ in 0..jobs {
            ids.push(Bench::tiny_job(&mut client, self.mail)?);
        }
        loop {
            let reply = client.status_jobs(ids.clone(), vec![], vec!["job_state".into()], true, false)?;
            let done = reply.objects.iter().filter(|o| o.get("job_state") == Some("F")).count();
            if done == jobs {
                return Ok(jobs as f64 / started.elapsed().as_secs_f64());
            }
            if started.elapsed() > Duration::from_secs(600) {
                bail!("only {done} of {jobs} jobs finished");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `-m abe` when `mail`.
fn mail_points(mail: bool) -> Option<Attr> {
    mail.then(|| Attr::new("Mail_Points", "abe"))
}

impl Bench {
    /// Makes the server's `mailer` a stand-in that keeps each mail in a file of its own
    /// under `mails/` (as a site's sendmail queues it) and turns mail on for the jobs
    /// submitted from now on.
    pub(crate) fn mail_to_stand_in(&mut self) -> Result<()> {
        let dir = self.dir.path().join("mails");
        std::fs::create_dir_all(&dir)?;
        let script = self.dir.path().join("mailer.sh");
        std::fs::write(&script, format!("#!/bin/sh\nexec cat > \"$(mktemp {}/mail.XXXXXX)\"\n", dir.display()))?;
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let attr = MgrAttr { name: "mailer".into(), op: MgrOp::Set, value: script.display().to_string() };
        self.client()?.manager(MgrCommand::Set, MgrObject::Server, vec![], vec![attr])?;
        self.mail = true;
        Ok(())
    }

    /// Runs `measure` (a rate) `rounds` times with mail off and on in turn, starting with
    /// each in turn; gives the mean rates without and with it.
    pub(crate) fn paired(
        &mut self,
        rounds: usize,
        mut measure: impl FnMut(&Bench) -> Result<f64>,
    ) -> Result<(f64, f64)> {
        let (mut without, mut with) = (0.0, 0.0);
        for round in 0..rounds {
            for mail in [round % 2 == 1, round % 2 == 0] {
                self.mail = mail;
                *if mail { &mut with } else { &mut without } += measure(self)?;
            }
        }
        Ok((without / rounds as f64, with / rounds as f64))
    }

    /// How many mails the stand-in mailer has kept.
    pub(crate) fn mails_kept(&self) -> usize {
        std::fs::read_dir(self.dir.path().join("mails")).map(|d| d.count()).unwrap_or(0)
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        for mut child in self.daemons.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) fn nix_hostname() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".into())
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The sizes a run measures at, from the command line.
pub(crate) struct Sizes {
    /// Small sizes for CI: every measurement runs, the figures mean little.
    pub(crate) smoke: bool,
    pub(crate) jobs_per_client: usize,
    pub(crate) small: usize,
    pub(crate) large: usize,
}
