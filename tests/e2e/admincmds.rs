//! The administrators' commands qorder and qterm against live daemons, as root, as an
//! operator and as an ordinary user (`nobody`), with OpenPBS's messages and statuses
//! (../shared/reference/openpbs-outputs/qorder_*.txt, qterm_*.txt).

use std::time::Duration;

use pbs_e2e::{Cluster, alive, command_dir, wait_until};

const WAIT: Duration = Duration::from_secs(30);

fn submit_as_nobody(cluster: &Cluster, args: &[&str]) -> String {
    cluster.run_as_nobody("qsub", args).ok().line().to_string()
}

#[test]
fn qorder_swaps_two_queued_jobs_and_the_scheduler_runs_them_in_the_new_order() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("set server scheduling = False");
    let first = submit_as_nobody(&c, &["--", "/bin/sleep", "60"]);
    let second = submit_as_nobody(&c, &["--", "/bin/sleep", "60"]);
    let rank = |id: &str| c.job_attr(id, "queue_rank");
    let (rank1, rank2) = (rank(&first), rank(&second));
    // qorder_jobs.txt, then qorder_before.txt / qorder_after.txt: the ranks are swapped.
    let out = c.run_as_nobody("qorder", &[&first, &second]);
    assert_eq!((out.code, out.stderr.as_str(), out.stdout.as_str()), (0, "", ""));
    assert_eq!((rank(&first), rank(&second)), (rank2, rank1));
    // One cpu: the scheduler starts the job that is now first, and only it.
    c.qmgr("set server scheduling = True");
    c.wait_job_state(&second, "R", WAIT);
    assert_eq!(c.job_attr(&first, "job_state").as_deref(), Some("Q"));
    // qorder_running.txt
    let out = c.run_as_nobody("qorder", &[&first, &second]);
    let expected = format!("qorder: Request invalid for state of job {first} or {second}\n");
    assert_eq!((out.code, out.stderr), (168, expected));
    // qorder_unknown.txt
    let out = c.run_as_nobody("qorder", &[&first, "99999"]);
    let expected = format!("qorder: Unknown Job Id {first} or 99999.{}\n", c.server_name());
    assert_eq!((out.code, out.stderr), (153, expected));
    // Another user's job is not nobody's to order (OpenPBS's text ends with a space), until nobody is an operator.
    let roots = c.qsub(&["-h", "--", "/bin/true"]);
    let out = c.run_as_nobody("qorder", &[&first, &roots]);
    assert_eq!((out.code, out.stderr), (159, format!("qorder: Unauthorized Request  {first} or {roots}\n")));
    c.qmgr("set server operators = nobody@*");
    let out = c.run_as_nobody("qorder", &[&first, &roots]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    let out = c.run("qorder", &[&first]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "usage: qorder job_identifier job_identifier\n       qorder --version\n")
    );
}

#[test]
fn qorder_across_queues_checks_each_job_as_qmove_does() {
    let c = Cluster::start();
    c.qmgr("create queue q2 queue_type=execution,enabled=true,started=true");
    let a = submit_as_nobody(&c, &["-h", "-l", "ncpus=4", "--", "/bin/true"]);
    let b = submit_as_nobody(&c, &["-h", "-q", "q2", "-l", "ncpus=1", "--", "/bin/true"]);
    let queue = |id: &str| c.job_attr(id, "queue");
    let refused = |needle: &str| {
        let out = c.run_as_nobody("qorder", &[&a, &b]);
        assert!(out.code != 0 && out.stderr.contains(needle), "{needle}: {out:?}");
        assert_eq!((queue(&a).as_deref(), queue(&b).as_deref()), (Some("workq"), Some("q2")));
    };
    // A disabled queue takes no job by qorder either.
    c.qmgr("set queue q2 enabled = false");
    refused("Queue is not enabled");
    c.qmgr("set queue q2 enabled = true");
    // Its entity limits count the job coming in, less the one going out.
    c.qmgr("set queue q2 max_queued_res.ncpus = [u:PBS_GENERIC=2]");
    refused("would exceed per-user limit on resource ncpus in queue q2");
    c.qmgr("set queue q2 max_queued = [u:PBS_GENERIC=1]");
    c.qmgr("set queue q2 max_queued_res.ncpus = [u:PBS_GENERIC=4]");
    let out = c.run_as_nobody("qorder", &[&a, &b]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "a swap leaves the count as it was");
    assert_eq!((queue(&a).as_deref(), queue(&b).as_deref()), (Some("q2"), Some("workq")));
}

#[test]
fn qterm_stops_the_daemons_asked_and_a_quick_stop_leaves_running_jobs_to_their_moms() {
    let mut c = Cluster::with_moms(1, 2);
    let job = submit_as_nobody(&c, &["--", "/bin/sleep", "120"]);
    c.wait_job_state(&job, "R", WAIT);
    wait_until("the job's session", WAIT, || c.job_attr(&job, "session_id").is_some());
    let session = c.job_attr(&job, "session_id");
    // One that is not rerunnable, for the immediate stop below.
    let fixed = submit_as_nobody(&c, &["-r", "n", "--", "/bin/sleep", "120"]);
    c.wait_job_state(&fixed, "R", WAIT);
    wait_until("its session", WAIT, || c.job_attr(&fixed, "session_id").is_some());
    // qterm_bad_option.txt, qterm_user_bad_option.txt
    // getopt names the program as it was run (OpenPBS's outputs ran it from the PATH).
    let usage = format!(
        "{}: invalid option -- 'x'\nUsage: qterm [-t immediate|delay|[quick]] [-m] [-s] [-f|-i] [server ...]\n       qterm --version\n",
        command_dir().join("qterm").display()
    );
    for out in [c.run("qterm", &["-x"]), c.run_as_nobody("qterm", &["-x"])] {
        assert_eq!((out.code, out.stderr.as_str()), (1, usage.as_str()));
    }
    let out = c.run_as_nobody("qterm", &[]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "qterm: Unauthorized Request  \n"));
    // Quick, with the scheduler: both exit cleanly, the mom and its job go on.
    let out = c.run("qterm", &["-s"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(c.wait_server_exit(WAIT), Some(0), "{}", c.logs());
    assert_eq!(c.wait_sched_exit(WAIT), Some(0), "{}", c.logs());
    assert!(c.mom_pid("n1").is_some_and(alive), "the mom goes on");
    c.start_server();
    // Once the mom's link is back the job has been reconciled with what the mom runs.
    c.wait_node_state("n1", "job-busy");
    assert_eq!(c.job_attr(&job, "job_state").as_deref(), Some("R"), "the restarted server finds the job");
    assert_eq!(c.job_attr(&job, "session_id"), session, "the same run");
    // An operator stops it at once with the moms: the rerunnable job is requeued first,
    // the one that is not is aborted with OpenPBS's `A` record (no `D`) and its `E`.
    c.qmgr("set server operators = nobody@*");
    let out = c.run_as_nobody("qterm", &["-t", "immediate", "-m"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(c.wait_server_exit(WAIT), Some(0), "{}", c.logs());
    assert_eq!(c.wait_mom_exit("n1", WAIT), Some(0), "{}", c.logs());
    c.start_server();
    assert_eq!(c.job_attr(&job, "job_state").as_deref(), Some("Q"), "requeued before the stop");
    assert_eq!(c.job_attr(&job, "run_count").as_deref(), Some("1"));
    assert_eq!(c.job_attr(&fixed, "job_state").as_deref(), Some("F"), "aborted");
    let log = c.accounting_log();
    assert_eq!(c.accounting_kinds(&fixed), "QSAE", "{log}");
    assert!(log.contains(&format!(";A;{fixed};Aborted by PBS Server  on Server shutdown\n")), "{log}");
}

#[test]
fn qmsg_appends_to_a_running_jobs_files_as_its_owner_and_refuses_a_queued_job() {
    use std::os::unix::fs::PermissionsExt as _;
    let c = Cluster::with_moms(1, 1);
    let shared = c.shared_dir();
    let (out, err) = (shared.join("msg_run.o"), shared.join("msg_run.e"));
    let paths = ["-o", out.to_str().unwrap_or(""), "-e", err.to_str().unwrap_or("")];
    let job = submit_as_nobody(&c, &[&paths[..], &["-N", "msg_run", "--", "/bin/sleep", "60"]].concat());
    c.wait_job_state(&job, "R", WAIT);
    wait_until("the job's files", WAIT, || out.exists() && err.exists());
    // qmsg_E_running.txt, qmsg_O_running.txt, qmsg_default_running.txt, then qmsg_job_files.txt
    for args in [&["-E", "message from qmsg -E"][..], &["-O", "message from qmsg -O"], &["message from qmsg (default)"]]
    {
        let out = c.run_as_nobody("qmsg", &[args, &[job.as_str()]].concat());
        assert_eq!((out.code, out.stderr.as_str(), out.stdout.as_str()), (0, "", ""), "{}", c.logs());
    }
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(read(&err), "message from qmsg -E\nmessage from qmsg (default)\n");
    assert_eq!(read(&out), "message from qmsg -O\n");
    // qmsg_queued.txt: one cpu, so the second job waits.
    let queued = submit_as_nobody(&c, &["--", "/bin/true"]);
    let out = c.run_as_nobody("qmsg", &["text", &queued]);
    assert_eq!((out.code, out.stderr), (168, format!("qmsg: Request invalid for state of job {queued}\n")));
    // Written as the owner, never as root: once the owner's error file is a link to a file
    // of root's, the mom's append is refused and root's file is untouched.
    let roots = shared.join("roots_file");
    std::fs::write(&roots, "root's\n").expect("root's file");
    std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::remove_file(&err).expect("the job's error file");
    std::os::unix::fs::symlink(&roots, &err).expect("link");
    let out = c.run("qmsg", &["from root, for nobody's job", &job]);
    assert_ne!(out.code, 0, "{out:?}");
    assert_eq!(read(&roots), "root's\n");
    // Another user's job: nobody may not write to root's.
    let roots_job = c.qsub(&["--", "/bin/sleep", "60"]);
    let out = c.run_as_nobody("qmsg", &["text", &roots_job]);
    assert_eq!((out.code, out.stderr), (159, format!("qmsg: Unauthorized Request  {roots_job}\n")));
    let out = c.run("qmsg", &["text"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "usage: qmsg [-O] [-E] msg_string job_identifier...\n       qmsg --version\n")
    );
}

/// Runs printjob (a binary of the mom's package, beside the daemons) with `node`'s mom's
/// pbs.conf, as root or as nobody.
fn printjob(c: &Cluster, node: &str, args: &[&str], as_nobody: bool) -> (i32, String, String) {
    printjob_with(&c.mom_conf_path(node), args, as_nobody)
}

/// The first lines printjob prints of job `id` in `state` and `substate`, created here.
fn printjob_header(id: &str, state: &str, substate: &str) -> String {
    let rule = "---------------------------------------------------";
    format!("{rule}\njobid:\t{id}\n{rule}\nstate:\t\t{state}\nsubstate:\t{substate}\nsvrflgs:\t0x1 (1)\n")
}

/// printjob with the pbs.conf `conf`.
fn printjob_with(conf: &std::path::Path, args: &[&str], as_nobody: bool) -> (i32, String, String) {
    let program = pbs_e2e::bin_dir().join("printjob");
    let mut command = if as_nobody {
        let mut command = std::process::Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(program);
        command
    } else {
        std::process::Command::new(program)
    };
    let out = command.args(args).env("PBS_CONF_FILE", conf).output().expect("printjob");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn printjob_shows_the_moms_records_of_a_job_to_root_only() {
    let c = Cluster::with_moms(1, 1);
    let job = submit_as_nobody(&c, &["-N", "pj_run", "--", "/bin/sleep", "60"]);
    c.wait_job_state(&job, "R", WAIT);
    wait_until("the job's session", WAIT, || c.job_attr(&job, "session_id").is_some());
    let session = c.job_attr(&job, "session_id").unwrap_or_default();
    // printjob_jobid.txt's layout, from the mom's records (printjob_mom_JB.txt).
    let (code, stdout, stderr) = printjob(&c, "n1", &[&job], false);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(stdout.starts_with(&printjob_header(&job, "0x4", "0x2a (42)")), "{stdout}");
    assert!(stdout.contains(&format!("\nsession_id = {session}\n")), "{stdout}");
    assert!(
        stdout.contains("\n--attributes--\n") && stdout.ends_with("job_state = R\nJob_Name = pj_run\n\n"),
        "{stdout}"
    );
    // printjob_mom_JB_a.txt: the records file named, without attributes.
    // The mom's PBS_HOME is one of the cluster's directories.
    let records = std::fs::read_dir(c.dir())
        .expect("the cluster's directory")
        .flatten()
        .map(|e| e.path().join("mom_priv/jobs").join(format!("{job}.JB")))
        .find(|p| p.exists())
        .expect("the job's records file");
    let (code, stdout, _) = printjob(&c, "n1", &["-a", records.to_str().unwrap_or("")], false);
    assert_eq!(code, 0);
    assert!(stdout.ends_with(&format!("\tuid\t{}\n\tgid\t{}\n\n", pbs_e2e::NOBODY, pbs_e2e::NOBODY)), "{stdout}");
    // printjob_unknown.txt, printjob_usage.txt, printjob_user.txt
    let unknown = format!("99999.{}", c.server_name());
    assert_eq!(printjob(&c, "n1", &[&unknown], false), (1, String::new(), format!("Job {unknown} not found\n")));
    let usage = "Usage: printjob [-a] (jobid|file)\n       printjob -s jobid\n       printjob --version\n";
    assert_eq!(printjob(&c, "n1", &[], false), (1, String::new(), usage.to_string()));
    assert_eq!(printjob(&c, "n1", &[&job], true), (1, String::new(), "printjob must be run by root\n".to_string()));
}

/// On the server's host printjob shows the server's record of a job, one that never ran
/// too (printjob_jobid.txt's layout), and `-s` its script.
#[test]
fn printjob_on_the_server_host_shows_the_servers_record_of_a_queued_job() {
    let c = Cluster::start();
    let held =
        c.run_with_stdin("qsub", &["-h", "-N", "pj_held"], "echo from the script\n", true).ok().line().to_string();
    let (code, stdout, stderr) = printjob_with(&c.conf_path(), &[&held], false);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(stdout.starts_with(&printjob_header(&held, "0x2", "0x14 (20)")), "{stdout}");
    assert!(stdout.contains("\nqueue:\t\tworkq\nunion type exec:\n\texits\t0\n--attributes--\n"), "{stdout}");
    assert!(stdout.contains("\nJob_Name = pj_held\n") && stdout.contains("\njob_state = H\n"), "{stdout}");
    assert!(stdout.contains("\nHold_Types = u\n"), "{stdout}");
    let (code, script, _) = printjob_with(&c.conf_path(), &["-s", &held], false);
    assert_eq!(code, 0);
    assert!(script.contains("echo from the script\n"), "{script}");
    let unknown = format!("99999.{}", c.server_name());
    let not_found = (1, String::new(), format!("Job {unknown} not found\n"));
    assert_eq!(printjob_with(&c.conf_path(), &[&unknown], false), not_found);
}
