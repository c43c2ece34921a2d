//! pbsnodes, qrun, qsig, qrerun and pbsctl against real daemons: OpenPBS's formats,
//! messages and exit statuses. Nodes here have no mom behind them, so their state is
//! whatever the server says of an unreachable node: the tests check the formats, not it.

use std::path::{Path, PathBuf};
use std::process::Command;

use pbs_e2e::{Cluster, Out, bin_dir, command_dir};

/// What OpenPBS prints for a failed command: stderr and exit status, nothing on stdout.
#[track_caller]
fn assert_fails(out: &Out, stderr: &str, code: i32) {
    assert_eq!((out.stderr.as_str(), out.code), (stderr, code), "stdout: {}", out.stdout);
}

/// A free TCP port on loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap()
}

/// argv[0] of a command run by the harness, which pbsnodes and getopt put in messages.
fn prog(name: &str) -> String {
    command_dir().join(name).display().to_string()
}

/// A cluster with node `n1` (Mom on this host, a port nothing listens on).
fn cluster_with_node() -> Cluster {
    let cluster = Cluster::start();
    let create = format!("create node n1 Mom=localhost,Port={}", free_port());
    cluster.run("qmgr", &["-c", &create]).ok();
    cluster
}

/// The lines of a full display, checked for OpenPBS's layout: the name, `     attr = value`
/// lines, one blank line after each node.
#[track_caller]
fn displayed_nodes(display: &str) -> Vec<(String, Vec<(String, String)>)> {
    assert!(display.ends_with("\n\n"), "{display:?}");
    let mut nodes = Vec::new();
    for block in display.trim_end_matches('\n').split("\n\n") {
        let mut lines = block.lines();
        let name = lines.next().unwrap().to_string();
        assert!(!name.starts_with(' '), "{display}");
        let attrs = lines
            .map(|l| {
                let attr = l.strip_prefix("     ").unwrap_or_else(|| panic!("not an attribute line: {l:?}"));
                assert!(!attr.starts_with(' '), "{l:?}");
                let (name, value) = attr.split_once(" = ").unwrap_or_else(|| panic!("no ` = ` in {l:?}"));
                (name.to_string(), value.to_string())
            })
            .collect();
        nodes.push((name, attrs));
    }
    nodes
}

fn attr<'a>(attrs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

#[test]
fn pbsnodes_lists_a_node_in_openpbs_formats() {
    let cluster = cluster_with_node();
    let all = cluster.run_as_nobody("pbsnodes", &["-a"]).ok();
    assert_eq!(all.stderr, "");
    let nodes = displayed_nodes(&all.stdout);
    assert_eq!(nodes.len(), 1, "{}", all.stdout);
    let (name, attrs) = &nodes[0];
    assert_eq!(name, "n1");
    assert_eq!(attrs.first().map(|(n, v)| (n.as_str(), v.as_str())), Some(("Mom", "localhost")));
    assert_eq!(attr(attrs, "ntype"), Some("PBS"));
    assert!(attr(attrs, "state").is_some_and(|s| !s.is_empty()), "{}", all.stdout);
    assert_eq!(attr(attrs, "resources_available.host"), Some("n1"));
    assert_eq!(attr(attrs, "resources_available.vnode"), Some("n1"));
    for time in ["last_state_change_time", "last_used_time"] {
        // ctime(3) text, as `Sun Nov 22 20:35:56 2026`.
        if let Some(value) = attr(attrs, time) {
            assert_eq!(value.len(), 24, "{time} = {value}");
        }
    }

    // One vnode per host: hosts (-a), vnodes (-av), the node by name, and -v agree.
    assert_eq!(cluster.run_as_nobody("pbsnodes", &["-av"]).ok().stdout, all.stdout);
    assert_eq!(cluster.run_as_nobody("pbsnodes", &["n1"]).ok().stdout, all.stdout);
    assert_eq!(cluster.run_as_nobody("pbsnodes", &["-v", "n1"]).ok().stdout, all.stdout);
    assert_eq!(cluster.run_as_nobody("pbsnodes", &["-s", cluster.server_name(), "-v", "n1"]).ok().stdout, all.stdout);

    let json = cluster.run_as_nobody("pbsnodes", &["-a", "-F", "json"]).ok().stdout;
    assert!(json.starts_with("{\n\t\"timestamp\":\t"), "{json}");
    let value: serde_json::Value = serde_json::from_str(&json).expect("pbsnodes -F json is JSON");
    assert!(value["timestamp"].is_u64(), "{json}");
    assert_eq!(value["pbs_server"], cluster.server_name());
    assert_eq!(value["pbs_version"], cluster.run("pbsnodes", &["--version"]).ok().line().replace("pbs_version = ", ""));
    assert_eq!(value["nodes"]["n1"]["Mom"], "localhost");
    assert_eq!(value["nodes"]["n1"]["resources_available"]["host"], "n1");

    let dsv = cluster.run_as_nobody("pbsnodes", &["-a", "-F", "dsv"]).ok().stdout;
    assert!(dsv.starts_with("Name=n1|Mom=localhost|"), "{dsv}");

    let summary = cluster.run_as_nobody("pbsnodes", &["-aS"]).ok().stdout;
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 3, "{summary}");
    assert!(lines[0].starts_with("vnode           state           OS       hardware host "), "{summary}");
    assert!(lines[2].starts_with("n1              "), "{summary}");

    // -l: a line per node marked down or offline: `%-20s %s %s`.
    for line in cluster.run_as_nobody("pbsnodes", &["-l"]).ok().stdout.lines() {
        assert!(line.starts_with("n1                   "), "{line:?}");
        let state = line[21..].split(' ').next().unwrap_or_default();
        assert!(state.contains("down") || state.contains("offline"), "{line:?}");
    }
}

#[test]
fn offline_and_comment_round_trip() {
    let cluster = cluster_with_node();
    let node = |c: &Cluster| {
        let nodes = displayed_nodes(&c.run("pbsnodes", &["-v", "n1"]).ok().stdout);
        nodes.into_iter().next().unwrap().1
    };
    let out = cluster.run("pbsnodes", &["-o", "-C", "disk failed", "n1"]).ok();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    let attrs = node(&cluster);
    assert!(attr(&attrs, "state").is_some_and(|s| s.split(',').any(|w| w == "offline")), "{attrs:?}");
    assert_eq!(attr(&attrs, "comment"), Some("disk failed"));
    let listed = cluster.run("pbsnodes", &["-l"]).ok().stdout;
    let state = attr(&attrs, "state").unwrap_or_default();
    assert_eq!(listed, format!("{:<20} {state} disk failed\n", "n1"));

    cluster.run("pbsnodes", &["-r", "n1"]).ok();
    let attrs = node(&cluster);
    assert!(!attr(&attrs, "state").unwrap_or_default().contains("offline"), "{attrs:?}");

    cluster.run("pbsnodes", &["-C", "back in service", "n1"]).ok();
    assert_eq!(attr(&node(&cluster), "comment"), Some("back in service"));

    // -C before -o keeps the comment; -r with -C replaces it.
    cluster.run("pbsnodes", &["-C", "again", "-o", "n1"]).ok();
    let attrs = node(&cluster);
    assert!(attr(&attrs, "state").unwrap_or_default().contains("offline"), "{attrs:?}");
    assert_eq!(attr(&attrs, "comment"), Some("again"));
    cluster.run("pbsnodes", &["-r", "-C", "fixed", "n1"]).ok();
    let attrs = node(&cluster);
    assert!(!attr(&attrs, "state").unwrap_or_default().contains("offline"), "{attrs:?}");
    assert_eq!(attr(&attrs, "comment"), Some("fixed"));
}

#[test]
fn nobody_may_not_mark_nodes() {
    let cluster = cluster_with_node();
    let before = cluster.run("pbsnodes", &["-v", "n1"]).ok().stdout;
    assert_fails(
        &cluster.run_as_nobody("pbsnodes", &["-o", "n1"]),
        "Error marking node n1 - Unauthorized Request \n",
        1,
    );
    assert_fails(
        &cluster.run_as_nobody("pbsnodes", &["-C", "mine", "n1"]),
        "Error marking node n1 - Unauthorized Request \n",
        1,
    );
    // -q: the same failure, silently.
    assert_fails(&cluster.run_as_nobody("pbsnodes", &["-q", "-o", "n1"]), "", 1);
    assert_eq!(cluster.run("pbsnodes", &["-v", "n1"]).ok().stdout, before);
}

#[test]
fn unknown_nodes_and_usage() {
    let cluster = cluster_with_node();
    assert_fails(&cluster.run_as_nobody("pbsnodes", &["-v", "nosuch"]), "Node: nosuch,  Error: Unknown node \n", 1);
    assert_fails(&cluster.run_as_nobody("pbsnodes", &["nosuch"]), "Node: nosuch,  Error: Unknown node \n", 1);
    // The known node is still listed, and the status is the failure's.
    let out = cluster.run_as_nobody("pbsnodes", &["-v", "n1", "nosuch"]);
    assert_eq!((out.stderr.as_str(), out.code), ("Node: nosuch,  Error: Unknown node \n", 1));
    assert!(out.stdout.starts_with("n1\n     Mom = localhost\n"), "{}", out.stdout);
    // In JSON the error is the node's member, and the command succeeds.
    let json = cluster.run_as_nobody("pbsnodes", &["-F", "json", "-v", "nosuch"]).ok().stdout;
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["nodes"]["nosuch"]["Error"], "Unknown node ");
    assert_fails(&cluster.run("pbsnodes", &["-o", "nosuch"]), "Error marking node nosuch - Unknown node \n", 1);

    let pbsnodes = prog("pbsnodes");
    let usage = format!(
        "usage:\t{p} [-{{o|r}}][-C comment][-s server] host host ...\n\t{p} -l [-s server]\n\t{p} [-s server] -v vnode vnode ...\n\t{p} -a[v][S[j][L]][-F format][-D delim][-s server]\n\t{p} -[H][S[j][L]][-F format][-D delim] host host ...\n\t{p} --version\n\n",
        p = pbsnodes
    );
    assert_fails(&cluster.run("pbsnodes", &[]), &usage, 1);
    assert_fails(&cluster.run("pbsnodes", &["-o"]), &usage, 1);
    assert_fails(&cluster.run("pbsnodes", &["-l", "n1"]), &usage, 1);
    assert_fails(&cluster.run("pbsnodes", &["-a", "-F", "xml"]), &usage, 1);
    assert_fails(&cluster.run("pbsnodes", &["-Z", "n1"]), &format!("{pbsnodes}: invalid option -- 'Z'\n{usage}"), 1);
}

#[test]
fn a_server_without_nodes() {
    let cluster = Cluster::start();
    let pbsnodes = prog("pbsnodes");
    let none = format!("{pbsnodes}: No nodes found\n");
    assert_fails(&cluster.run_as_nobody("pbsnodes", &["-a"]), &none, 0);
    assert_fails(&cluster.run_as_nobody("pbsnodes", &["-l"]), &none, 0);
}

#[test]
fn job_commands_report_unknown_jobs_like_openpbs() {
    let cluster = Cluster::start();
    let host = cluster.server_name().to_string();
    assert_fails(&cluster.run("qsig", &["99999"]), &format!("qsig: Unknown Job Id 99999.{host}\n"), 153);
    assert_fails(&cluster.run("qsig", &["-s", "KILL", "99999"]), &format!("qsig: Unknown Job Id 99999.{host}\n"), 153);
    assert_fails(&cluster.run("qrerun", &["99999"]), &format!("qrerun: Unknown Job Id 99999.{host}\n"), 153);
    assert_fails(
        &cluster.run("qrerun", &["-W", "force", "99999"]),
        &format!("qrerun: Unknown Job Id 99999.{host}\n"),
        153,
    );
    assert_fails(&cluster.run("qrun", &["99999"]), &format!("qrun: Unknown Job Id 99999.{host}\n"), 2);
    assert_fails(
        &cluster.run("qrun", &["99998", "99999"]),
        &format!("qrun: Unknown Job Id 99998.{host}\nqrun: Unknown Job Id 99999.{host}\n"),
        2,
    );
}

#[test]
fn job_commands_on_a_queued_job() {
    let cluster = Cluster::start();
    let id = cluster.run_as_nobody("qsub", &["--", "/bin/sleep", "100"]).ok().line().to_string();
    // Signals and requeues are for running jobs.
    assert_fails(
        &cluster.run_as_nobody("qsig", &["-s", "HUP", &id]),
        &format!("qsig: Request invalid for state of job {id}\n"),
        168,
    );
    assert_fails(&cluster.run("qrerun", &[&id]), &format!("qrerun: Request invalid for state of job {id}\n"), 168);
    // Only operators and managers may run jobs by hand.
    assert_fails(&cluster.run_as_nobody("qrun", &[&id]), &format!("qrun: Unauthorized Request  {id}\n"), 2);
}

#[test]
fn job_commands_usage_and_bad_ids() {
    let cluster = Cluster::start();
    let qsig_usage = "usage: qsig [-s signal] job_identifier...\n       qsig --version\n";
    assert_fails(&cluster.run("qsig", &[]), qsig_usage, 2);
    assert_fails(
        &cluster.run("qsig", &["-x", "1"]),
        &format!("{}: invalid option -- 'x'\n{qsig_usage}", prog("qsig")),
        2,
    );
    assert_fails(&cluster.run("qsig", &["abc"]), "qsig: illegally formed job identifier: abc\n", 1);

    let qrerun_usage = "usage: qrerun [-W force] job_identifier...\n       qrerun --version\n";
    assert_fails(&cluster.run("qrerun", &[]), qrerun_usage, 2);
    assert_fails(&cluster.run("qrerun", &["-W", "gently", "1"]), qrerun_usage, 2);
    assert_fails(&cluster.run("qrerun", &["abc"]), "qrerun: illegally formed job identifier: abc\n", 1);

    let qrun_usage = "Usage: qrun [-a] [-H vnode_specification ] job_identifier_list\n       qrun [-a] [-H - ] job_identifier_list\n       qrun --version\n";
    assert_fails(&cluster.run("qrun", &[]), qrun_usage, 1);
    assert_fails(&cluster.run("qrun", &["-H", "", "1"]), &format!("qrun: illegal -H value\n{qrun_usage}"), 1);
    assert_fails(&cluster.run("qrun", &["abc"]), "qrun: illegally formed job identifier: abc\n", 1);

    for cmd in ["qsig", "qrerun", "qrun", "pbsnodes", "pbsctl"] {
        let version = cluster.run(cmd, &["--version"]).ok();
        assert!(version.stdout.starts_with("pbs_version = "), "{cmd}: {version:?}");
    }
}

/// A PBS_HOME and pbs.conf for pbsctl, with free ports; stops what pbsctl started when
/// dropped, so a failed test leaves no daemon behind.
struct Site {
    dir: tempfile::TempDir,
    pbsctl: PathBuf,
}

impl Site {
    fn new(start: &str) -> Site {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new().prefix("pbs-e2e-ctl-").tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default();
        let conf = format!(
            "PBS_SERVER={host}\nPBS_HOME={}\nPBS_BATCH_SERVICE_PORT={}\nPBS_MOM_SERVICE_PORT={}\nPBS_MANAGER_SERVICE_PORT={}\n{start}",
            dir.path().join("home").display(),
            free_port(),
            free_port(),
            free_port(),
        );
        std::fs::write(dir.path().join("pbs.conf"), conf).unwrap();
        Site { dir, pbsctl: bin_dir().join("pbsctl") }
    }

    fn run_program(&self, program: &Path, args: &[&str]) -> Out {
        let output =
            Command::new(program).args(args).env("PBS_CONF_FILE", self.dir.path().join("pbs.conf")).output().unwrap();
        Out {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            code: output.status.code().unwrap_or(-1),
        }
    }

    fn pbsctl(&self, args: &[&str]) -> Out {
        self.run_program(&self.pbsctl, args)
    }

    /// A site whose `pbsctl start` succeeded, and what it printed. A free port is released
    /// before a daemon binds it, so a parallel test may take it first: that start fails
    /// with `Address already in use`, and a site with other ports is tried.
    fn started(start: &str) -> (Site, Out) {
        let mut last = None;
        for _ in 0..5 {
            let site = Site::new(start);
            let out = site.pbsctl(&["start"]);
            if out.code == 0 {
                return (site, out);
            }
            assert!(out.stderr.contains("Address already in use"), "pbsctl start failed: {out:?}");
            last = Some(out);
        }
        panic!("no free ports for pbsctl's daemons: {last:?}");
    }

    fn command(&self, name: &str, args: &[&str]) -> Out {
        self.run_program(&command_dir().join(name), args)
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = self.pbsctl(&["stop"]);
    }
}

#[test]
fn pbsctl_starts_reports_and_stops_the_server() {
    let unstarted = Site::new("PBS_START_SERVER=1\nPBS_START_MOM=0\nPBS_START_SCHED=0\n");
    assert_fails(&unstarted.pbsctl(&["status"]), "", 1);
    assert_eq!(unstarted.pbsctl(&["status"]).stdout, "pbs_server is not running\n");

    let (site, started) = Site::started("PBS_START_SERVER=1\nPBS_START_MOM=0\nPBS_START_SCHED=0\n");
    let pid = std::fs::read_to_string(site.home().join("pbs_server.pid")).unwrap().trim().to_string();
    assert_eq!(started.stdout, format!("pbs_server started (pid {pid})\n"));
    // The server answers as soon as pbsctl returns.
    site.command("qstat", &["-B"]).ok();
    assert_eq!(site.pbsctl(&["status"]).ok().stdout, format!("pbs_server is pid {pid}\n"));
    assert_eq!(site.pbsctl(&["start"]).ok().stdout, format!("pbs_server is already running (pid {pid})\n"));

    let stopped = site.pbsctl(&["stop"]).ok();
    assert_eq!(stopped.stdout, format!("pbs_server stopped (pid {pid})\n"));
    assert!(!site.home().join("pbs_server.pid").exists());
    let after = site.command("qstat", &["-B"]);
    assert!(after.code != 0 && after.stderr.starts_with("qstat: cannot connect to server "), "{after:?}");
}

#[test]
fn pbsctl_reports_a_missing_daemon_binary() {
    use std::os::unix::fs::PermissionsExt;
    let site = Site::new("PBS_START_SERVER=1\nPBS_START_SCHED=1\n");
    // A pbsctl alone in its directory, with no PBS_EXEC and an empty PATH, finds nothing.
    let lonely = site.dir.path().join("bin");
    std::fs::create_dir(&lonely).unwrap();
    let copy = lonely.join("pbsctl");
    std::fs::copy(&site.pbsctl, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Another test's fork may still hold the copy's write descriptor until its child
    // execs (ETXTBSY): that passes, so try again until it has.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let output = loop {
        let run = Command::new(&copy)
            .arg("start")
            .env("PBS_CONF_FILE", site.dir.path().join("pbs.conf"))
            .env("PATH", "")
            .output();
        match run {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.unwrap(),
        }
    };
    assert_eq!(
        (String::from_utf8_lossy(&output.stderr).into_owned(), output.status.code()),
        (format!("pbsctl: cannot find pbs_server (looked in {}, and in PATH)\n", lonely.display()), Some(1))
    );
    assert!(!site.home().join("pbs_server.pid").exists(), "nothing was started");

    let none = Site::new("");
    let out = none.pbsctl(&["start"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.ends_with("starts no daemon (set PBS_START_SERVER, PBS_START_MOM or PBS_START_SCHED to 1)\n"),
        "{out:?}"
    );
}

#[test]
fn pbsctl_starts_a_whole_cluster() {
    let bins = bin_dir();
    if !bins.join("pbs_mom").exists() || !bins.join("pbs_sched").exists() {
        eprintln!("pbs_mom or pbs_sched not built: skipped");
        return;
    }
    let (site, started) = Site::started("PBS_START_SERVER=1\nPBS_START_MOM=1\nPBS_START_SCHED=1\n");
    let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default();
    let short = host.split('.').next().unwrap_or_default().to_string();
    let lines: Vec<&str> = started.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{started:?}");
    assert!(lines[0].starts_with("pbs_server started (pid "), "{started:?}");
    assert!(lines[1].starts_with("pbs_mom started (pid "), "{started:?}");
    assert_eq!(lines[2], format!("created node {short}"));
    assert!(lines[3].starts_with("pbs_sched started (pid "), "{started:?}");

    let nodes = displayed_nodes(&site.command("pbsnodes", &["-a"]).ok().stdout);
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].0, short);
    assert_eq!(attr(&nodes[0].1, "Mom"), Some(host.as_str()));

    let status = site.pbsctl(&["status"]).ok().stdout;
    assert_eq!(status.lines().filter(|l| l.contains(" is pid ")).count(), 3, "{status}");
    // A second start finds everything running and creates no second node.
    let again = site.pbsctl(&["start"]).ok().stdout;
    assert_eq!(again.lines().filter(|l| l.contains("is already running")).count(), 3, "{again}");

    let stopped = site.pbsctl(&["stop"]).ok().stdout;
    let order: Vec<&str> = stopped.lines().map(|l| l.split(' ').next().unwrap_or_default()).collect();
    assert_eq!(order, ["pbs_sched", "pbs_mom", "pbs_server"], "{stopped}");
    assert_fails(&site.pbsctl(&["status"]), "", 1);
}
