//! Hooks on the moms and the classic prologue and epilogue, on real daemons: the server
//! sends execution hooks to every mom (one that links later too, and one that restarts
//! keeps them), an execjob_begin hook's refusal requeues the job, an execjob_epilogue hook
//! sees the exit status and usage, a failing hook with `fail_action=offline_vnodes`
//! offlines its node, `mom_priv/prologue` and `epilogue` run with OpenPBS's arguments
//! and exit-status rules, and a `user=pbsuser` hook runs as the job's owner where OpenPBS
//! runs it so (qmgr refusing it where OpenPBS does).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(60);
const LOG_TIMEOUT: Duration = Duration::from_secs(30);

fn install_hook(c: &Cluster, name: &str, attrs: &str, body: &str) {
    let file = c.dir().join(format!("{name}.py"));
    std::fs::write(&file, body).expect("write hook");
    c.qmgr(&format!("create hook {name} {attrs}"));
    c.qmgr(&format!("import hook {name} application/x-python default {}", file.display()));
}

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

#[track_caller]
fn mom_logged(c: &Cluster, node: &str, text: &str) {
    wait_until(&format!("`{text}` in the log of {node}'s mom"), LOG_TIMEOUT, || c.mom_stderr(node).contains(text));
}

#[track_caller]
fn server_logged(c: &Cluster, text: &str) {
    wait_until(&format!("`{text}` in the server log"), LOG_TIMEOUT, || c.server_stderr().contains(text));
}

fn mom_priv(c: &Cluster, node: &str) -> std::path::PathBuf {
    c.dir().join(format!("mom-{node}")).join("mom_priv")
}

fn write_script(path: &std::path::Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod script");
}

#[test]
fn an_execjob_begin_hook_that_rejects_requeues_the_job_as_openpbs() {
    let c = Cluster::with_moms(1, 2);
    let body =
        "import pbs\ne = pbs.event()\nif e.job.Job_Name == \"deny\":\n    e.reject(\"not on this node\")\ne.accept()\n";
    install_hook(&c, "nobegin", "event=execjob_begin", body);
    mom_logged(&c, "n1", "execution hooks from the server: nobegin");

    // Another job passes the hook and runs.
    let ok = submit(&c, &["-N", "fine"], "exit 0\n");
    c.wait_job_state(&ok, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&ok, "Exit_status").as_deref(), Some("0"), "{}", c.logs());

    let id = submit(&c, &["-N", "deny"], "exit 0\n");
    mom_logged(&c, "n1", "Hook;nobegin;execjob_begin request rejected by 'nobegin'");
    mom_logged(&c, "n1", &format!("Job;{id};not on this node"));
    server_logged(&c, &format!("Job;{id};hook rejected request, requiring job to be rerun"));
    // Requeued, never run to an end.
    let state = c.job_attr(&id, "job_state");
    assert!(matches!(state.as_deref(), Some("Q" | "R" | "H")), "{state:?}: {}", c.logs());
    assert_eq!(c.job_attr(&id, "Exit_status"), None, "{}", c.logs());
    c.run("qdel", &[&id]).ok();
}

#[test]
fn an_execjob_epilogue_hook_sees_the_exit_status_and_usage() {
    let c = Cluster::with_moms(1, 2);
    let body = "import pbs\ne = pbs.event()\n\
                pbs.logjobmsg(e.job.id, \"exit %s walltime %s\" % (e.job.Exit_status, e.job.resources_used[\"walltime\"]))\n";
    install_hook(&c, "epi", "event=execjob_epilogue", body);
    mom_logged(&c, "n1", "execution hooks from the server: epi");
    let id = submit(&c, &["-N", "three"], "exit 3\n");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("3"), "{}", c.logs());
    // The end was reported only once the hook had run (its line may still be on its way
    // to the log file).
    c.wait_logged(&format!("Job;{id};exit 3 walltime 00:00:"));
}

#[test]
fn classic_prologue_and_epilogue_run_with_openpbs_arguments_and_exit_rules() {
    let c = Cluster::with_moms(1, 2);
    let priv_dir = mom_priv(&c, "n1");
    let out = c.dir().join("pelog");
    std::fs::create_dir_all(&out).unwrap();
    write_script(
        &priv_dir.join("prologue"),
        &format!(
            "#!/bin/sh\necho \"$@\" > {0}/prologue.args\necho \"$PBS_JOBDIR\" > {0}/prologue.env\nexit 0\n",
            out.display()
        ),
        0o755,
    );
    write_script(
        &priv_dir.join("epilogue"),
        &format!("#!/bin/sh\necho \"$@\" > {}/epilogue.args\n", out.display()),
        0o700,
    );
    let id = submit(&c, &["-N", "pe"], "exit 3\n");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("3"), "{}", c.logs());
    let user = c.job_attr(&id, "euser").unwrap_or_default();
    let group = c.job_attr(&id, "egroup").unwrap_or_default();
    let prologue = std::fs::read_to_string(out.join("prologue.args")).unwrap();
    assert_eq!(prologue, format!("{id} {user} {group}\n"));
    assert!(!std::fs::read_to_string(out.join("prologue.env")).unwrap().trim().is_empty(), "PBS_JOBDIR set");
    let epilogue = std::fs::read_to_string(out.join("epilogue.args")).unwrap();
    let args: Vec<&str> = epilogue.split_whitespace().collect();
    assert_eq!(args.len(), 10, "{epilogue}");
    assert_eq!(&args[..4], &[id.as_str(), user.as_str(), group.as_str(), "pe"], "{epilogue}");
    assert!(args[4].parse::<u32>().is_ok_and(|sid| sid > 0), "session id: {epilogue}");
    assert!(args[5].starts_with("ncpus="), "{epilogue}");
    assert!(args[6].contains("walltime="), "{epilogue}");
    assert_eq!(&args[7..], &["workq", "null", "3"], "{epilogue}");

    // A prologue that exits 1 aborts the job (JOB_EXEC_FAIL2) before its script runs.
    write_script(&priv_dir.join("prologue"), "#!/bin/sh\nexit 1\n", 0o755);
    let marker = c.dir().join("pelog").join("ran");
    let id = submit(&c, &["-N", "nope"], &format!("touch {}\n", marker.display()));
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("-2"), "{}", c.logs());
    assert!(!marker.exists(), "the job's script must not run");
    mom_logged(
        &c,
        "n1",
        &format!(
            "pro/epilogue failed, file: {}, exit: 1, nonzero p/e exit status",
            priv_dir.join("prologue").display()
        ),
    );

    // One group or others may write is not run (OpenPBS's permission error): the job is
    // requeued, never run.
    write_script(&priv_dir.join("prologue"), "#!/bin/sh\nexit 0\n", 0o777);
    let id = submit(&c, &["-N", "perm"], &format!("touch {}\n", marker.display()));
    let prologue = priv_dir.join("prologue");
    mom_logged(
        &c,
        "n1",
        &format!("Job;{id};pro/epilogue failed, file: {}, exit: -1, Permission Error", prologue.display()),
    );
    assert!(!marker.exists(), "the job's script must not run");
    c.run("qdel", &[&id]).ok();
}

#[test]
fn hooks_reach_a_mom_that_links_later_and_survive_its_restart() {
    let mut c = Cluster::with_moms(1, 2);
    let body = "import pbs\ne = pbs.event()\npbs.logjobmsg(e.job.id, \"begin hook saw %s\" % e.job.Job_Name)\n";
    install_hook(&c, "hello", "event=execjob_begin", body);
    mom_logged(&c, "n1", "execution hooks from the server: hello");

    c.add_mom("n2");
    c.qmgr("set node n2 resources_available.ncpus = 2");
    c.wait_node_state("n2", "free");
    mom_logged(&c, "n2", "execution hooks from the server: hello");
    let kept = mom_priv(&c, "n2").join("hooks");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "mom_priv/hooks is root's alone");

    // The new node runs jobs with it.
    c.run("pbsnodes", &["-o", "n1"]).ok();
    let id = submit(&c, &["-N", "late"], "exit 0\n");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    mom_logged(&c, "n2", &format!("Job;{id};begin hook saw late"));

    // A restarted mom has them from its disk before the server links again.
    c.kill_mom("n2");
    c.start_mom("n2");
    mom_logged(&c, "n2", "1 execution hooks read from");

    // Deleting the hook reaches the moms.
    c.qmgr("delete hook hello");
    mom_logged(&c, "n1", "execution hooks from the server: none");
    mom_logged(&c, "n2", "execution hooks from the server: none");
}

#[test]
fn a_raising_begin_hook_with_fail_action_offline_vnodes_offlines_the_node_and_restarts_the_cycle() {
    let c = Cluster::with_moms(1, 2);
    install_hook(
        &c,
        "boom",
        "event=execjob_begin,fail_action=\"offline_vnodes,scheduler_restart_cycle\"",
        "import pbs\nraise ValueError(\"boom\")\n",
    );
    mom_logged(&c, "n1", "execution hooks from the server: boom");
    let id = submit(&c, &["-N", "boomed"], "exit 0\n");
    mom_logged(&c, "n1", &format!("Job;{id};execjob_begin hook 'boom' encountered an exception, request rejected"));
    wait_until("n1 offline", LOG_TIMEOUT, || c.node_attr("n1", "state").is_some_and(|s| s.contains("offline")));
    assert_eq!(c.node_attr("n1", "comment").as_deref(), Some("offlined by hook 'boom' due to hook error"));
    server_logged(&c, "Node;n1;hook 'boom' requested for scheduler to restart cycle");
    // The job went back to the queue and stays there: its only node is offline.
    wait_until("the job requeued", LOG_TIMEOUT, || c.job_attr(&id, "job_state").as_deref() == Some("Q"));
    assert_eq!(c.job_attr(&id, "Exit_status"), None, "{}", c.logs());
}

/// OpenPBS's test_fail_action_startup_hook, and its recovery: a raising exechost_startup
/// hook offlines its node when its mom starts; mended, its next run (SIGHUP) clears that
/// offline and its comment, and a manager's offline stays until `pbsnodes -r`.
#[test]
fn an_exechost_startup_hook_offlines_its_node_when_it_fails_and_clears_that_when_it_recovers() {
    let mut c = Cluster::with_moms(1, 2);
    let broken = "import pbs\nif pbs.event().type == pbs.EXECHOST_STARTUP:\n    raise ValueError(\"no scratch\")\n";
    install_hook(
        &c,
        "startup",
        "event=exechost_startup,fail_action=\"offline_vnodes,clear_vnodes_upon_recovery\"",
        broken,
    );
    assert_eq!(
        c.run("qmgr", &["-c", "list hook startup"])
            .ok()
            .stdout
            .lines()
            .find(|l| l.contains("fail_action"))
            .map(str::trim),
        Some("fail_action = offline_vnodes,clear_vnodes_upon_recovery")
    );
    mom_logged(&c, "n1", "execution hooks from the server: startup");
    // Sent, not run: the event is a mom's start.
    assert_eq!(c.node_attr("n1", "state").as_deref(), Some("free"));

    c.kill_mom("n1");
    c.start_mom("n1");
    mom_logged(&c, "n1", "Node;n1;exechost_startup hook 'startup' encountered an exception, request rejected");
    wait_until("n1 offline", LOG_TIMEOUT, || c.node_attr("n1", "state").as_deref() == Some("offline"));
    assert_eq!(c.node_attr("n1", "comment").as_deref(), Some("offlined by hook 'startup' due to hook error"));
    let id = submit(&c, &["-N", "waits"], "exit 0\n");
    // A manager offlines it too: shown once, as OpenPBS shows both.
    c.run("pbsnodes", &["-o", "n1"]).ok();
    assert_eq!(c.node_attr("n1", "state").as_deref(), Some("offline"));
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));

    // Mended, the hook's next run clears its offline and comment; the manager's stays.
    let file = c.dir().join("startup.py");
    std::fs::write(&file, "import pbs\npbs.event().accept()\n").expect("write hook");
    c.qmgr(&format!("import hook startup application/x-python default {}", file.display()));
    mom_logged(&c, "n1", "execution hooks from the server: startup");
    let pid = i32::try_from(c.mom_pid("n1").expect("the mom runs")).expect("a pid");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGHUP).expect("SIGHUP");
    server_logged(&c, "Node;n1;offline_by_mom cleared: its hooks recovered");
    assert_eq!(c.node_attr("n1", "comment"), None);
    assert_eq!(c.node_attr("n1", "state").as_deref(), Some("offline"), "the manager's offline stays");
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
    c.run("pbsnodes", &["-r", "n1"]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("0"), "{}", c.logs());

    // `pbsnodes -r` clears a hook's offline as it does a manager's.
    std::fs::write(&file, broken).expect("write hook");
    c.qmgr(&format!("import hook startup application/x-python default {}", file.display()));
    mom_logged(&c, "n1", "execution hooks from the server: startup");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGHUP).expect("SIGHUP");
    wait_until("n1 offline again", LOG_TIMEOUT, || c.node_attr("n1", "state").as_deref() == Some("offline"));
    c.run("pbsnodes", &["-r", "n1"]).ok();
    c.wait_node_state("n1", "free");
}

#[test]
fn hooks_that_call_scheduler_restart_cycle_ask_for_a_cycle_on_the_server_and_on_a_mom() {
    let c = Cluster::with_moms(1, 2);
    let ask = "import pbs\npbs.server().scheduler_restart_cycle()\npbs.event().accept()\n";
    install_hook(&c, "askserver", "event=queuejob", ask);
    install_hook(&c, "askmom", "event=execjob_begin", ask);
    mom_logged(&c, "n1", "execution hooks from the server: askmom");
    let id = submit(&c, &["-N", "asking"], "exit 0\n");
    server_logged(&c, "Hook;askserver;requested for scheduler to restart cycle");
    server_logged(&c, "Node;n1;requested for scheduler to restart cycle");
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("0"), "{}", c.logs());
}

/// A Python every user may run (`python3` on root's `PATH` may be under `/root`), as
/// `PBS_PYTHON` must be where `user=pbsuser` hooks run.
fn system_python() -> std::path::PathBuf {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
        .expect("a python3 every user may run")
}

/// Restarts n1's mom with a Python the job's owner can run too, as `user=pbsuser` hooks
/// need.
fn with_owners_python(c: &mut Cluster) {
    let conf = c.dir().join("mom-n1.conf");
    let text = std::fs::read_to_string(&conf).expect("mom conf");
    std::fs::write(&conf, format!("{text}PBS_PYTHON={}\n", system_python().display())).expect("mom conf");
    c.kill_mom("n1");
    c.start_mom("n1");
    c.wait_node_state("n1", "free");
}

#[test]
fn a_hook_run_as_the_jobs_owner_that_its_owner_stops_never_offlines_the_node() {
    let mut c = Cluster::with_moms(1, 2);
    with_owners_python(&mut c);
    // The owner stops the process that runs the hook as them (here the hook does it to
    // itself): its alarm ends it, which fails the job's prologue, not the node.
    install_hook(
        &c,
        "stopped",
        "event=execjob_prologue,user=pbsuser,alarm=2,fail_action=offline_vnodes",
        "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n",
    );
    mom_logged(&c, "n1", "execution hooks from the server: stopped");
    let id = c
        .run_with_stdin("qsub", &["-S", "/bin/sh", "-o", "/dev/null", "-e", "/dev/null"], "exit 0\n", true)
        .ok()
        .line()
        .to_string();
    mom_logged(
        &c,
        "n1",
        &format!("Job;{id};alarm call while running execjob_prologue hook 'stopped', request rejected"),
    );
    mom_logged(&c, "n1", "Hook;stopped;fail_action offline_vnodes not applied: the hook ran as the job's owner");
    // The mom would have sent the node's offline before the job's end: once the job has
    // been run again, the server has heard both, and the node is still free.
    wait_until("the job run again", JOB_TIMEOUT, || {
        c.job_attr(&id, "run_count").and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n >= 2)
    });
    let state = c.node_attr("n1", "state").unwrap_or_default();
    assert!(!state.contains("offline"), "n1 is {state}\n{}", c.logs());
    c.run("qdel", &["-W", "force", &id]).ok();
}

#[test]
fn a_pbsuser_hook_runs_as_the_jobs_owner_at_prologue_and_epilogue_and_as_root_elsewhere() {
    const NOBODY: u32 = 65534;
    let mut c = Cluster::with_moms(1, 2);
    with_owners_python(&mut c);

    let body = |name: &str| {
        format!(
            "import os, pbs\ne = pbs.event()\npbs.logjobmsg(e.job.id, \"{name} uid %d cwd %s home %s\" % (os.getuid(), os.getcwd(), os.environ.get(\"HOME\")))\n"
        )
    };
    install_hook(&c, "asowner", "event=execjob_epilogue,user=pbsuser", &body("asowner"));
    install_hook(&c, "asadmin", "event=execjob_epilogue", &body("asadmin"));
    // pbsuser holds at execjob_prologue only: execjob_begin runs as root, as in OpenPBS.
    install_hook(&c, "both", "event=\"execjob_begin,execjob_prologue\",user=pbsuser", &body("both"));
    mom_logged(&c, "n1", "execution hooks from the server: ");
    wait_until("the three hooks on n1", LOG_TIMEOUT, || {
        let log = c.mom_stderr("n1");
        ["asowner", "asadmin", "both"].iter().all(|h| log.contains(h))
    });

    // nobody's login shell is nologin: its job asks for a real one.
    let id = c
        .run_with_stdin("qsub", &["-S", "/bin/sh", "-o", "/dev/null", "-e", "/dev/null"], "exit 0\n", true)
        .ok()
        .line()
        .to_string();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("0"), "{}", c.logs());
    // The mom's log is written by a thread of its own: each line is waited for.
    // nobody's home (/nonexistent) cannot be entered: its hooks run in /.
    mom_logged(&c, "n1", &format!("Job;{id};asowner uid {NOBODY} cwd / home /nonexistent"));
    mom_logged(&c, "n1", &format!("Job;{id};asadmin uid 0 cwd "));
    // begin runs as root, the prologue as nobody.
    mom_logged(&c, "n1", &format!("Job;{id};both uid 0 cwd "));
    mom_logged(&c, "n1", &format!("Job;{id};both uid {NOBODY} cwd /"));
    // The module they import is out of the reach of nobody's changes, the hooks' bodies
    // out of its reach altogether.
    let lib = mom_priv(&c, "n1").join("hooks_lib");
    assert_eq!(std::fs::metadata(&lib).unwrap().permissions().mode() & 0o777, 0o755);
    assert_eq!(std::fs::metadata(mom_priv(&c, "n1").join("hooks")).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn pbsuser_is_refused_where_openpbs_refuses_it_whichever_attribute_comes_last() {
    let c = Cluster::start();
    let refused = |command: &str, message: &str| {
        let out = c.run("qmgr", &["-c", command]);
        assert_ne!(out.code, 0, "{command}: {out:?}");
        assert!(out.stderr.contains(message), "{command}: {out:?}");
        assert!(out.stderr.contains("hook error returned from server"), "{command}: {out:?}");
    };
    let user_of = |hook: &str| {
        let list = c.run("qmgr", &["-c", &format!("list hook {hook}")]).ok().stdout;
        list.lines().find_map(|l| l.trim().strip_prefix("user = ").map(str::to_string))
    };
    let periodic = "user value of a server periodic hook must be pbsadmin";
    refused("create hook p event=periodic,user=pbsuser", &format!("qmgr obj=p svr=default: {periodic}"));
    assert_ne!(c.run("qmgr", &["-c", "list hook p"]).code, 0, "p was not created");
    c.qmgr("create hook p event=periodic");
    refused("set hook p user=pbsuser", periodic);
    assert_eq!(user_of("p").as_deref(), Some("pbsadmin"));

    // Accepted with an event that runs as the owner; periodic then cannot be added.
    c.qmgr("create hook e event=execjob_epilogue,user=pbsuser");
    assert_eq!(user_of("e").as_deref(), Some("pbsuser"));
    refused("set hook e event=\"periodic,execjob_epilogue\"", periodic);
    refused("set hook e event+=periodic", periodic);
    assert_eq!(user_of("e").as_deref(), Some("pbsuser"));
    // Events with none that runs as the owner put it back to pbsadmin, as OpenPBS does.
    c.qmgr("set hook e event=execjob_end");
    assert_eq!(user_of("e").as_deref(), Some("pbsadmin"));

    refused(
        "create hook q event=queuejob,user=pbsuser",
        "Can't set hook user value to 'pbsuser': hook event must contain at least \
         execjob_prologue,execjob_epilogue,execjob_preterm",
    );
}
