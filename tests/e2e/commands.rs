//! The q-commands against a live server: round trips, OpenPBS's error texts and exit
//! statuses, as an ordinary user (`nobody`) and as root.

use std::time::Duration;

use pbs_e2e::{Cluster, Out, wait_until};

/// What OpenPBS prints for a failed command: stderr line and exit status.
#[track_caller]
fn assert_fails(out: &Out, stderr: &str, code: i32) {
    assert_eq!((out.stderr.as_str(), out.code), (stderr, code), "stdout: {}", out.stdout);
}

fn submit_as_nobody(cluster: &Cluster, args: &[&str]) -> String {
    let out = cluster.run_as_nobody("qsub", args).ok();
    let id = out.line().to_string();
    let (seq, server) = id.split_once('.').expect("id has a server part");
    assert!(seq.chars().all(|c| c.is_ascii_digit()), "{id}");
    assert_eq!(server, cluster.server_name());
    id
}

fn full(cluster: &Cluster, id: &str) -> String {
    cluster.run("qstat", &["-f", id]).ok().stdout
}

#[test]
fn submit_status_alter_hold_release_delete_round_trip() {
    let cluster = Cluster::start();
    let id = submit_as_nobody(&cluster, &["-N", "hello", "-l", "walltime=10:00", "--", "/bin/true"]);

    let table = cluster.run_as_nobody("qstat", &[&id]).ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "Job id            Name             User              Time Use S Queue");
    assert_eq!(lines[1], "----------------  ---------------- ----------------  -------- - -----");
    assert_eq!(lines[2], format!("{:<17} {:<16} {:<16}  {:>8} Q {:<16}", id, "hello", "nobody", "0", "workq"));

    let f = full(&cluster, &id);
    assert!(f.starts_with(&format!("Job Id: {id}\n")), "{f}");
    for line in
        ["    Job_Name = hello", "    job_state = Q", "    queue = workq", "    Resource_List.walltime = 00:10:00"]
    {
        assert!(f.lines().any(|l| l == line), "missing {line:?} in\n{f}");
    }
    assert!(f.lines().any(|l| l.starts_with("    Job_Owner = nobody@")), "{f}");

    let json = cluster.run("qstat", &["-f", "-F", "json", &id]).ok().stdout;
    let value: serde_json::Value = serde_json::from_str(&json).expect("qstat -F json is JSON");
    assert_eq!(value["Jobs"][&id]["Job_Name"], "hello");
    assert_eq!(value["Jobs"][&id]["Resource_List"]["walltime"], "00:10:00");

    cluster.run_as_nobody("qalter", &["-N", "renamed", "-l", "walltime=20:00", &id]).ok();
    let f = full(&cluster, &id);
    assert!(f.contains("    Job_Name = renamed\n"), "{f}");
    assert!(f.contains("    Resource_List.walltime = 00:20:00\n"), "{f}");

    cluster.run_as_nobody("qhold", &[&id]).ok();
    assert!(full(&cluster, &id).contains("    job_state = H\n"));
    assert!(full(&cluster, &id).contains("    Hold_Types = u\n"));
    let held = cluster.run_as_nobody("qselect", &["-s", "H"]).ok().stdout;
    assert_eq!(held, format!("{id}\n"));
    cluster.run_as_nobody("qrls", &[&id]).ok();
    assert!(full(&cluster, &id).contains("    job_state = Q\n"));
    assert_eq!(cluster.run_as_nobody("qselect", &["-s", "H"]).ok().stdout, "");

    cluster.run_as_nobody("qdel", &[&id]).ok();
    assert_fails(&cluster.run_as_nobody("qstat", &[&id]), &format!("qstat: Unknown Job Id {id}\n"), 153);
}

#[test]
fn script_on_stdin_with_directives() {
    let cluster = Cluster::start();
    let script = "#!/bin/sh\n#PBS -N fromscript\n#PBS -l walltime=00:03:00\n#PBS -l ncpus=2\necho hi\n";
    let out = cluster.run_with_stdin("qsub", &["-N", "cmdline"], script, true).ok();
    let id = out.line().to_string();
    let f = full(&cluster, &id);
    // The command line wins over the directive.
    assert!(f.contains("    Job_Name = cmdline\n"), "{f}");
    assert!(f.contains("    Resource_List.walltime = 00:03:00\n"), "{f}");
    assert!(f.contains("    Resource_List.ncpus = 2\n"), "{f}");
    assert!(f.contains("    Resource_List.select = 1:ncpus=2\n"), "{f}");
    let plain = cluster.run_with_stdin("qsub", &[], "sleep 1\n", true).ok();
    assert!(full(&cluster, plain.line()).contains("    Job_Name = STDIN\n"));
}

#[test]
fn qsub_errors_match_openpbs() {
    let cluster = Cluster::start();
    let cases: &[(&[&str], &str, i32)] = &[
        (&["-l", "foo=1", "--", "/bin/true"], "qsub: Unknown resource Resource_List.foo\n", 187),
        (&["-q", "nosuchq", "--", "/bin/true"], "qsub: Unknown queue\n", 170),
        (
            &["-l", "soft_walltime=10", "--", "/bin/true"],
            "qsub: Cannot set attribute, read only or insufficient permission  Resource_List.soft_walltime\n",
            155,
        ),
        (&["-h", "-J", "0-20000", "--", "/bin/true"], "qsub: Array job exceeds server or queue size limit\n", 3),
        (&["-h", "-W", "max_run_subjobs=2", "--", "/bin/true"], "qsub: Attribute has to be set on an array job\n", 127),
        (
            &["-l", "walltime=abc", "--", "/bin/true"],
            "qsub: Illegal attribute or resource value Resource_List.walltime\n",
            166,
        ),
        (
            &["-l", "select=abc", "--", "/bin/true"],
            "qsub: Illegal attribute or resource value Resource_List.select\n",
            166,
        ),
    ];
    for (args, stderr, code) in cases {
        let out = cluster.run_as_nobody("qsub", args);
        assert_eq!((out.stderr.as_str(), out.code), (*stderr, *code), "qsub {args:?}");
        assert_eq!(out.stdout, "");
    }
    // Root's own jobs are refused unless acl_roots allows them.
    assert_fails(&cluster.run("qsub", &["--", "/bin/true"]), "qsub: Bad UID for job execution\n", 175);
    // Nothing above created a job.
    assert_eq!(cluster.run("qselect", &[]).ok().stdout, "");
}

#[test]
fn unknown_jobs_and_per_job_errors() {
    let cluster = Cluster::start();
    let host = cluster.server_name().to_string();
    assert_fails(&cluster.run_as_nobody("qstat", &["99999"]), &format!("qstat: Unknown Job Id 99999.{host}\n"), 153);
    assert_fails(
        &cluster.run_as_nobody("qstat", &["-f", &format!("99999.{host}")]),
        &format!("qstat: Unknown Job Id 99999.{host}\n"),
        153,
    );
    assert_fails(&cluster.run_as_nobody("qdel", &["99999"]), &format!("qdel: Unknown Job Id 99999.{host}\n"), 153);
    let id = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    assert_fails(
        &cluster.run_as_nobody("qalter", &["-l", "soft_walltime=10", &id]),
        &format!(
            "qalter: Cannot set attribute, read only or insufficient permission  Resource_List.soft_walltime {id}\n"
        ),
        155,
    );
    assert_fails(
        &cluster.run_as_nobody("qalter", &["-W", "max_run_subjobs=5", &id]),
        &format!("qalter: Attribute has to be set on an array job {id}\n"),
        127,
    );
    // A manager may set soft_walltime; above walltime is refused.
    cluster.run("qalter", &["-l", "walltime=01:00:00", &id]).ok();
    cluster.run("qalter", &["-l", "soft_walltime=00:30:00", &id]).ok();
    assert!(full(&cluster, &id).contains("    Resource_List.soft_walltime = 00:30:00\n"));
    assert_fails(
        &cluster.run("qalter", &["-l", "soft_walltime=02:00:00", &id]),
        &format!("qalter: Illegal attribute or resource value {id}\n"),
        166,
    );
}

#[test]
fn nobody_is_denied_on_other_users_jobs_and_on_qmgr() {
    let cluster = Cluster::start();
    cluster.allow_root_jobs();
    let roots = cluster.qsub(&["-N", "rootjob", "--", "/bin/true"]);
    let unauthorized = |cmd: &str| format!("{cmd}: Unauthorized Request  {roots}\n");
    assert_fails(&cluster.run_as_nobody("qdel", &[&roots]), &unauthorized("qdel"), 159);
    assert_fails(&cluster.run_as_nobody("qalter", &["-N", "mine", &roots]), &unauthorized("qalter"), 159);
    assert_fails(&cluster.run_as_nobody("qhold", &[&roots]), &unauthorized("qhold"), 159);
    assert_fails(&cluster.run_as_nobody("qrls", &[&roots]), &unauthorized("qrls"), 159);
    // The job is untouched.
    let f = full(&cluster, &roots);
    assert!(f.contains("    Job_Name = rootjob\n") && f.contains("    job_state = Q\n"), "{f}");

    // A user may not set a system hold even on their own job.
    let own = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    assert_fails(
        &cluster.run_as_nobody("qhold", &["-h", "s", &own]),
        &format!("qhold: Unauthorized Request  {own}\n"),
        159,
    );
    cluster.run("qhold", &["-h", "s", &own]).ok();
    assert!(full(&cluster, &own).contains("    Hold_Types = s\n"));
    assert_fails(
        &cluster.run_as_nobody("qrls", &["-h", "s", &own]),
        &format!("qrls: Unauthorized Request  {own}\n"),
        159,
    );

    assert_fails(
        &cluster.run_as_nobody("qmgr", &["-c", "set server scheduling=False"]),
        "qmgr obj= svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n",
        159,
    );
    assert_fails(
        &cluster.run_as_nobody("qmgr", &["-c", "create queue stolen"]),
        "qmgr obj=stolen svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n",
        159,
    );

    // query_other_jobs = False hides root's job from nobody.
    assert!(cluster.run_as_nobody("qstat", &[]).ok().stdout.contains("rootjob"));
    cluster.run("qmgr", &["-c", "set server query_other_jobs = False"]).ok();
    let seen = cluster.run_as_nobody("qstat", &[]).ok().stdout;
    assert!(!seen.contains("rootjob") && seen.contains(&own[..own.find('.').unwrap_or(0)]), "{seen}");
}

#[test]
fn history_jobs_need_x() {
    let cluster = Cluster::start();
    cluster.run("qmgr", &["-c", "set server job_history_enable = True"]).ok();
    let id = submit_as_nobody(&cluster, &["-N", "gone", "--", "/bin/true"]);
    cluster.run_as_nobody("qdel", &[&id]).ok();
    assert_fails(
        &cluster.run_as_nobody("qstat", &[&id]),
        &format!("qstat: {id} Job has finished, use -x or -H to obtain historical job information\n"),
        35,
    );
    let f = cluster.run("qstat", &["-x", "-f", &id]).ok().stdout;
    assert!(f.contains("    job_state = F\n"), "{f}");
    let listed = cluster.run("qstat", &["-x"]).ok().stdout;
    assert!(listed.lines().any(|l| l.contains(" gone ") && l.contains(" F workq")), "{listed}");
}

#[test]
fn qselect_criteria() {
    let cluster = Cluster::start();
    let short = submit_as_nobody(&cluster, &["-N", "short", "-l", "walltime=00:01:00", "--", "/bin/true"]);
    let long = submit_as_nobody(&cluster, &["-N", "long", "-l", "walltime=01:00:00", "--", "/bin/true"]);
    assert_eq!(cluster.run("qselect", &["-l", "walltime.gt.00:05:00"]).ok().stdout, format!("{long}\n"));
    assert_eq!(cluster.run("qselect", &["-N", "short"]).ok().stdout, format!("{short}\n"));
    assert_eq!(cluster.run("qselect", &["-u", "nobody"]).ok().stdout, format!("{short}\n{long}\n"));
    assert_eq!(cluster.run("qselect", &["-u", "root"]).ok().stdout, "");
}

#[test]
fn qmgr_resources_queues_and_print_server_replay() {
    let cluster = Cluster::start();
    let out = cluster.run("qmgr", &["-c", "create resource set_soft_walltime type=long"]).ok();
    assert_eq!(out.stdout, "");
    let out = cluster.run("qmgr", &["-c", "list resource set_soft_walltime"]).ok();
    assert_eq!(out.stdout, "Resource set_soft_walltime\n    type = long\n\n");
    cluster.run("qmgr", &["-c", "delete resource set_soft_walltime"]).ok();

    assert_fails(
        &cluster.run("qmgr", &["-c", "list queue nosuchq"]),
        "qmgr obj=nosuchq svr=default: Unknown queue\nqmgr: Error (15018) returned from server\n",
        1,
    );
    assert_fails(
        &cluster.run("qmgr", &["-c", "set server nosuchattr=1"]),
        "qmgr: Syntax error\nset server nosuchattr=1\n                      ^\n",
        4,
    );

    // A custom resource and a second queue with limits, then print server replays.
    cluster.run("qmgr", &["-c", "create resource scratch type=size,flag=nh"]).ok();
    cluster.run("qmgr", &["-c", "c q short"]).ok();
    cluster.run("qmgr", &["-c", "s q short queue_type=e, enabled=t, started=t, resources_max.walltime=00:10:00"]).ok();
    let printed = cluster.run("qmgr", &["-c", "p s"]).ok().stdout;
    assert!(printed.contains("create queue short\n"), "{printed}");
    assert!(printed.contains("set queue short resources_max.walltime = 00:10:00\n"), "{printed}");

    // The limit applies to submissions.
    let over = cluster.run_as_nobody("qsub", &["-q", "short", "-l", "walltime=01:00:00", "--", "/bin/true"]);
    assert_fails(&over, "qsub: Job violates queue and/or server resource limits\n", 188);
    submit_as_nobody(&cluster, &["-q", "short", "-l", "walltime=00:05:00", "-l", "scratch=1gb", "--", "/bin/true"]);

    // Replaying the printout into a fresh server recreates the set-up.
    let fresh = Cluster::start();
    // The printout creates workq, as OpenPBS's does; a fresh server already has it.
    fresh.run("qmgr", &["-c", "delete queue workq"]).ok();
    // Deleting the default queue unsets default_queue.
    assert!(!fresh.run("qmgr", &["-c", "list server"]).ok().stdout.contains("default_queue"));
    let replay = fresh.run_with_stdin("qmgr", &[], &printed, false);
    assert_eq!(replay.code, 0, "{replay:?}");
    assert_eq!(fresh.run("qmgr", &["-c", "p s"]).ok().stdout, printed);
}

#[test]
fn state_survives_restart_with_commands() {
    let mut cluster = Cluster::start();
    let id = submit_as_nobody(&cluster, &["-N", "durable", "-h", "--", "/bin/true"]);
    cluster.run("qmgr", &["-c", "set server max_queued = [o:PBS_ALL=500]"]).ok();
    let before = full(&cluster, &id);
    cluster.kill9();
    cluster.start_server();
    assert_eq!(full(&cluster, &id), before);
    let next = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    assert_ne!(next, id);
    assert!(cluster.run("qmgr", &["-c", "l s"]).ok().stdout.contains("    max_queued = [o:PBS_ALL=500]\n"));
}

#[test]
fn managers_and_operators_attributes_grant_privilege() {
    let cluster = Cluster::start();
    let own = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    // A user may not set an "other" hold; an operator may, but still not a system hold
    // (managers only) nor change the server.
    assert_eq!(cluster.run_as_nobody("qhold", &["-h", "o", &own]).code, 159);
    cluster.run("qmgr", &["-c", "set server operators += nobody@*"]).ok();
    cluster.run_as_nobody("qhold", &["-h", "o", &own]).ok();
    assert!(full(&cluster, &own).contains("    Hold_Types = o\n"));
    assert_eq!(cluster.run_as_nobody("qhold", &["-h", "s", &own]).code, 159);
    assert_eq!(cluster.run_as_nobody("qmgr", &["-c", "set server scheduling = False"]).code, 159);
    // As a manager nobody may.
    cluster.run("qmgr", &["-c", "set server managers += nobody@*"]).ok();
    cluster.run_as_nobody("qmgr", &["-c", "set server scheduling = False"]).ok();
    assert!(cluster.run("qmgr", &["-c", "list server"]).ok().stdout.contains("    scheduling = False\n"));
    // And removing the entry takes the privilege away again.
    cluster.run("qmgr", &["-c", "set server managers -= nobody@*"]).ok();
    assert_eq!(cluster.run_as_nobody("qmgr", &["-c", "set server scheduling = True"]).code, 159);
}

#[test]
fn script_file_server_and_queue_views_and_history_purge() {
    let cluster = Cluster::start();
    let script = cluster.dir().join("work.sh");
    std::fs::write(&script, "#!/bin/sh\n#PBS -l walltime=00:02:00\nhostname\n").expect("write script");
    let path = script.display().to_string();
    let id = submit_as_nobody(&cluster, &[&path]);
    assert!(full(&cluster, &id).contains("    Job_Name = work.sh\n"));

    let b = cluster.run("qstat", &["-B"]).ok().stdout;
    let lines: Vec<&str> = b.lines().collect();
    assert_eq!(lines[0], "Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status");
    assert_eq!(
        lines[2],
        format!("{:<16}     0     1     1     0     0     0     0     0 Active    ", cluster.server_name())
    );
    let q = cluster.run("qstat", &["-Q"]).ok().stdout;
    assert!(q.ends_with("workq                0     1 yes yes     1     0     0     0     0     0 Exe*\n"), "{q}");
    let qf = cluster.run("qstat", &["-Qf", "workq"]).ok().stdout;
    assert!(qf.starts_with("Queue: workq\n    queue_type = Execution\n    total_jobs = 1\n"), "{qf}");

    cluster.run("qmgr", &["-c", "set server job_history_enable = True"]).ok();
    cluster.run_as_nobody("qdel", &[&id]).ok();
    assert!(cluster.run("qstat", &["-x", &id]).ok().stdout.contains(" F workq"));
    cluster.run_as_nobody("qdel", &["-x", &id]).ok();
    assert_fails(&cluster.run("qstat", &["-x", &id]), &format!("qstat: Unknown Job Id {id}\n"), 153);
}

#[test]
fn qdisable_qenable_qstop_and_qstart_switch_a_queue_as_openpbs() {
    let c = Cluster::with_moms(1, 1);
    // qdisable_*.txt: a disabled queue takes no job; only managers and operators switch it.
    let out = c.run_as_nobody("qdisable", &["workq"]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "qdisable: Unauthorized Request  workq\n"), "{out:?}");
    c.run("qdisable", &["workq"]).ok();
    let out = c.run_as_nobody("qsub", &["--", "/bin/true"]);
    assert_eq!((out.code, out.stderr.as_str()), (173, "qsub: Queue is not enabled\n"), "{out:?}");
    let listed = c.run("qstat", &["-Q", "workq"]).ok().stdout;
    assert!(listed.lines().nth(2).is_some_and(|l| l.contains("  no yes ")), "{listed}");
    c.run("qenable", &["workq"]).ok();
    // qstop_*.txt: a stopped queue keeps its jobs queued, with the reason.
    c.run("qstop", &["workq"]).ok();
    let listed = c.run("qstat", &["-Q", "workq"]).ok().stdout;
    assert!(listed.lines().nth(2).is_some_and(|l| l.contains(" yes  no ")), "{listed}");
    let id = c.qsub(&["--", "/bin/true"]);
    wait_until("the stopped queue's comment", Duration::from_secs(30), || {
        c.job_attr(&id, "comment").as_deref() == Some("Not Running: Queue not started.")
    });
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("Q"));
    let out = c.run_as_nobody("qstart", &["workq"]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "qstart: Unauthorized Request  workq\n"), "{out:?}");
    // qstart_*.txt: started again, the job runs.
    c.run("qstart", &["workq"]).ok();
    c.wait_job_state(&id, "F", Duration::from_secs(30));
    // Each destination in turn; the status is the last failure's, as OpenPBS's.
    let out = c.run("qstop", &["bad@", "nosuchq"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr, "qstop: illegally formed destination: bad@\nqstop: Unknown queue nosuchq\n");
    let out = c.run("qenable", &[]);
    assert_eq!((out.code, out.stderr.as_str()), (1, "Usage: qenable [queue][@server] ...\n       qenable --version\n"));
}

#[test]
fn qmove_moves_a_job_that_has_not_started_and_refuses_a_running_one() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("create queue q2 queue_type=execution,enabled=true,started=true");
    let held = submit_as_nobody(&c, &["-h", "-N", "mv_held", "--", "/bin/true"]);
    // qmove_held*.txt
    let out = c.run_as_nobody("qmove", &["q2", &held]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out:?}");
    assert_eq!(c.job_attr(&held, "queue").as_deref(), Some("q2"));
    assert_eq!(c.job_attr(&held, "job_state").as_deref(), Some("H"));
    // qmove_acct.txt: a second Q record, naming the new queue.
    wait_until("the move's Q record", Duration::from_secs(30), || {
        let records = c.accounting_records(&held);
        let queued: Vec<&String> = records.iter().filter(|(kind, _)| *kind == 'Q').map(|(_, text)| text).collect();
        queued.len() == 2 && queued[1].contains(" queue=q2 ")
    });
    // qmove_unknown_queue.txt, then qmove_running.txt
    let out = c.run_as_nobody("qmove", &["nosuchq", &held]);
    assert_eq!((out.code, out.stderr.clone()), (170, format!("qmove: Unknown queue {held}\n")));
    let running = submit_as_nobody(&c, &["--", "/bin/sleep", "30"]);
    c.wait_job_state(&running, "R", Duration::from_secs(30));
    let out = c.run_as_nobody("qmove", &["q2", &running]);
    assert_eq!((out.code, out.stderr.clone()), (168, format!("qmove: Request invalid for state of job {running}\n")));
    c.run("qdel", &[&running]).ok();
    // Released in its new queue, it runs from there.
    c.run_as_nobody("qrls", &[&held]).ok();
    c.wait_job_state(&held, "F", Duration::from_secs(30));
    assert_eq!(c.job_attr(&held, "queue").as_deref(), Some("q2"));
    let out = c.run("qmove", &["q2"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "usage: qmove destination job_identifier...\n       qmove --version\n")
    );
    let out = c.run("qmove", &["bad@", &held]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "qmove: illegally formed destination: bad@\n"));
}
