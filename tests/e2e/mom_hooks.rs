//! Hooks on the moms and the classic prologue and epilogue, on real daemons: the server
//! sends execution hooks to every mom (one that links later too, and one that restarts
//! keeps them), an execjob_begin hook's refusal requeues the job, an execjob_epilogue hook
//! sees the exit status and usage, a failing hook with `fail_action=offline_vnodes`
//! offlines its node, and `mom_priv/prologue` and `epilogue` run with OpenPBS's arguments
//! and exit-status rules.

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
    // The end was reported only once the hook had run: its line is already there.
    let log = c.mom_stderr("n1");
    assert!(log.contains(&format!("Job;{id};exit 3 walltime 00:00:")), "no hook line for {id}: {}", c.logs());
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
fn a_raising_begin_hook_with_fail_action_offline_vnodes_offlines_the_node() {
    let c = Cluster::with_moms(1, 2);
    install_hook(
        &c,
        "boom",
        "event=execjob_begin,fail_action=offline_vnodes",
        "import pbs\nraise ValueError(\"boom\")\n",
    );
    mom_logged(&c, "n1", "execution hooks from the server: boom");
    let id = submit(&c, &["-N", "boomed"], "exit 0\n");
    mom_logged(&c, "n1", &format!("Job;{id};execjob_begin hook 'boom' encountered an exception, request rejected"));
    wait_until("n1 offline", LOG_TIMEOUT, || c.node_attr("n1", "state").is_some_and(|s| s.contains("offline")));
    assert_eq!(c.node_attr("n1", "comment").as_deref(), Some("offlined by hook 'boom' due to hook error"));
    // The job went back to the queue and stays there: its only node is offline.
    wait_until("the job requeued", LOG_TIMEOUT, || c.job_attr(&id, "job_state").as_deref() == Some("Q"));
    assert_eq!(c.job_attr(&id, "Exit_status"), None, "{}", c.logs());
}
