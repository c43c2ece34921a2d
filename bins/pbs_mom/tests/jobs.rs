//! Jobs on a real pbs_mom, as `nobody`: environment and output files, exit statuses, kills,
//! limits, signals, sisters, restarts of the mom while a job runs, and the start latency.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{NOBODY, TestMom, eventually, owner, session_states};
use pbs_mom::layout::{JobResult, Limits, Started, Status};
use pbs_proto::mom::{FromMom, ToMom};

#[test]
fn script_runs_as_nobody_with_the_pbs_environment() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let job = "1.testsrv";
    let script = "echo \"$PBS_JOBID $NCPUS $PBS_ENVIRONMENT\"\n\
                  echo \"user=$USER logname=$LOGNAME home=$HOME shell=$SHELL\"\n\
                  echo \"cwd=$(pwd) id=$(id -u)\"\n\
                  echo \"nodefile=$(cat $PBS_NODEFILE | tr '\\n' ,)\"\n\
                  echo \"omp=$OMP_NUM_THREADS queue=$PBS_QUEUE name=$PBS_JOBNAME env=$ENVIRONMENT\"\n\
                  echo \"nodenum=$PBS_NODENUM tasknum=$PBS_TASKNUM momport=$PBS_MOMPORT path=$PATH\"\n\
                  echo \"oqueue=$PBS_O_QUEUE leak=${MOM_LEAK_CHECK:-none} cookie=${#PBS_JOBCOOKIE}\"\n\
                  test -d \"$TMPDIR\" && test -O \"$TMPDIR\" && echo tmpdir-ok\n\
                  echo to-stderr >&2\n";
    link.run(mom.launch(job, script));
    assert!(link.started(job) > 1);
    let (status, usage) = link.ended(job);
    assert_eq!(status, 0, "{}", std::fs::read_to_string(mom.err_file(job)).unwrap_or_default());
    assert_eq!(usage.ncpus, 2);

    let out = std::fs::read_to_string(mom.out_file(job)).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1.testsrv 2 PBS_BATCH");
    assert_eq!(lines[1], "user=nobody logname=nobody home=/nonexistent shell=/bin/sh");
    assert_eq!(lines[2], format!("cwd={} id={NOBODY}", mom.work().display()));
    assert_eq!(lines[3], format!("nodefile={0},{0},", mom.node));
    assert_eq!(lines[4], "omp=2 queue=workq name=testjob env=BATCH");
    assert_eq!(lines[5], "nodenum=0 tasknum=1 momport=15003 path=/usr/bin:/bin");
    assert_eq!(lines[6], "oqueue=workq leak=none cookie=32");
    assert_eq!(lines[7], "tmpdir-ok");
    assert_eq!(owner(&mom.out_file(job)), NOBODY);
    assert_eq!(std::fs::read_to_string(mom.err_file(job)).unwrap(), "to-stderr\n");
    assert_eq!(owner(&mom.err_file(job)), NOBODY);
    // TMPDIR and the node file go with the job.
    assert!(!mom.work().join(format!("pbs.{job}")).exists());
    assert!(!mom.home().join("aux").join(job).exists());
    // One records file and the script; no directory, no temporary file.
    assert_eq!(mom.job_files(), ["1.testsrv.JB", "1.testsrv.SC"]);
    let records = mom.records(job);
    assert!(records.has::<Started>() && records.has::<Status>() && records.has::<JobResult>());
    link.send(&ToMom::ForgetJob { job_id: job.into() });
    link.send(&ToMom::Ping);
    link.wait_for("Pong", |f| matches!(f, FromMom::Pong));
    assert!(mom.job_files().is_empty(), "{:?}", mom.job_files());
}

#[test]
fn a_home_of_the_older_layout_is_left_alone() {
    let mut mom = TestMom::start();
    mom.kill9();
    // One directory per job, as older moms kept them.
    let old = mom.home().join("mom_priv").join("jobs").join("9.old");
    std::fs::create_dir(&old).unwrap();
    std::fs::write(old.join("launch.json"), b"{\"launch\":{}}").unwrap();
    std::fs::write(old.join("status.json"), b"{}").unwrap();
    mom.spawn();
    let mut link = mom.connect();
    match link.node_status() {
        FromMom::NodeStatus { jobs, .. } => assert!(jobs.is_empty(), "{jobs:?}"),
        _ => unreachable!(),
    }
    eventually("the warning", || mom.log().contains("left by an older pbs_mom, not adopted"));
    link.run(mom.launch("9.new", "exit 5\n"));
    assert_eq!(link.ended("9.new").0, 5);
    assert!(old.join("launch.json").exists());
}

#[test]
fn exit_codes_joins_and_executables() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();

    link.run(mom.launch("2.s", "echo out; echo err >&2; exit 3\n"));
    assert_eq!(link.ended("2.s").0, 3);

    let mut joined = mom.launch("3.s", "echo out; echo err >&2\n");
    joined.join_path = "oe".into();
    link.run(joined);
    assert_eq!(link.ended("3.s").0, 0);
    assert_eq!(std::fs::read_to_string(mom.out_file("3.s")).unwrap(), "out\nerr\n");
    assert!(!mom.err_file("3.s").exists());

    let mut exe = mom.launch("4.s", "");
    exe.executable = Some("echo".into());
    exe.arguments = vec!["hello".into(), "world".into()];
    link.run(exe);
    assert_eq!(link.ended("4.s").0, 0);
    assert_eq!(std::fs::read_to_string(mom.out_file("4.s")).unwrap(), "hello world\n");

    let mut missing = mom.launch("5.s", "");
    missing.executable = Some("/no/such/program".into());
    link.run(missing);
    assert_eq!(link.ended("5.s").0, 127);

    let mut bad_user = mom.launch("6.s", "true\n");
    bad_user.user = "no_such_user_here".into();
    link.run(bad_user);
    assert_eq!(link.ended("6.s").0, -10);

    // An output path nobody cannot write falls back to /dev/null; the job still runs.
    let mut unwritable = mom.launch("7.s", "echo lost\n");
    unwritable.output_path = "h:/proc/forbidden.o".into();
    link.run(unwritable);
    assert_eq!(link.ended("7.s").0, 0);
}

#[test]
fn kill_job_ends_with_256_plus_sigterm() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("10.s", "sleep 60\n"));
    let sid = link.started("10.s");
    link.send(&ToMom::KillJob { job_id: "10.s".into(), kill_delay: 5 });
    assert_eq!(link.ended("10.s").0, 271);
    eventually("the session to be gone", || session_states(sid).is_empty());
}

#[test]
fn walltime_limit_kills_with_minus_29_and_a_message() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let mut launch = mom.launch("11.s", "sleep 60\n");
    launch.walltime = Some(1);
    link.run(launch);
    link.started("11.s");
    let (status, usage) = link.ended("11.s");
    assert_eq!(status, -29);
    assert!(usage.walltime >= 2, "{usage:?}");
    let err = std::fs::read_to_string(mom.err_file("11.s")).unwrap();
    assert!(err.contains("=>> PBS: job killed: walltime 2 exceeded limit 1\n"), "{err:?}");
    eventually("the log line", || mom.log().contains("walltime 2 exceeded limit 1"));
    // The same line in the daily log file, PBS_HOME/mom_logs/YYYYMMDD.
    eventually("the daily log file", || {
        let Ok(entries) = std::fs::read_dir(mom.home().join("mom_logs")) else { return false };
        entries.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.len() == 8
                && name.bytes().all(|b| b.is_ascii_digit())
                && std::fs::read_to_string(e.path()).unwrap_or_default().contains(";pbs_mom;Job;11.s;walltime 2")
        })
    });
}

#[test]
fn cput_and_mem_limits_kill_with_their_codes() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let mut busy = mom.launch("12.s", "while :; do :; done\n");
    busy.cput = Some(1);
    link.run(busy);
    let mut big = mom.launch("13.s", "sleep 60\n");
    big.mem = Some(1024);
    link.run(big);
    assert_eq!(link.ended("13.s").0, -27);
    assert_eq!(link.ended("12.s").0, -28);
    let err = std::fs::read_to_string(mom.err_file("12.s")).unwrap();
    assert!(err.contains("=>> PBS: job killed: cput 2 exceeded limit 1\n"), "{err:?}");
    let err = std::fs::read_to_string(mom.err_file("13.s")).unwrap();
    assert!(err.contains("=>> PBS: job killed: mem ") && err.contains("kb exceeded limit 1kb\n"), "{err:?}");
}

#[test]
fn suspend_resume_and_signals() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("20.s", "sleep 60\n"));
    let sid = link.started("20.s");
    eventually("the job's sleep", || session_states(sid).len() == 2);

    assert_eq!(link.signal("20.s", "suspend"), 0);
    eventually("every process stopped", || session_states(sid).iter().all(|s| *s == 'T'));
    assert_eq!(link.signal("20.s", "resume"), 0);
    eventually("every process running again", || session_states(sid).iter().all(|s| *s != 'T'));

    assert_eq!(link.signal("20.s", "NOSUCHSIGNAL"), pbs_core::Pbse::UNKSIG.0);
    assert_eq!(link.signal("21.s", "TERM"), pbs_core::Pbse::UNKJOBID.0);
    // The usage sampler reports while the job runs.
    match link.wait_for("JobUsage", |f| matches!(f, FromMom::JobUsage { job_id, .. } if job_id == "20.s")) {
        FromMom::JobUsage { usage, .. } => assert_eq!(usage.ncpus, 2),
        _ => unreachable!(),
    }
    assert_eq!(link.signal("20.s", "SIGKILL"), 0);
    assert_eq!(link.ended("20.s").0, 256 + 9);
}

#[test]
fn suspended_time_does_not_count_against_walltime() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let mut launch = mom.launch("22.s", "sleep 60\n");
    launch.walltime = Some(2);
    link.run(launch);
    link.started("22.s");
    let t0 = Instant::now();
    assert_eq!(link.signal("22.s", "suspend"), 0);
    // Suspended well past the limit: the job must not be killed meanwhile.
    let ended = |f: &FromMom| matches!(f, FromMom::JobEnded { .. });
    assert!(link.quiet_for(Duration::from_secs(4), ended), "killed while suspended");
    assert_eq!(link.signal("22.s", "resume"), 0);
    let (status, usage) = link.ended("22.s");
    assert_eq!(status, -29);
    assert!(t0.elapsed() >= Duration::from_secs(6), "{:?}", t0.elapsed());
    assert!((3..6).contains(&usage.walltime), "{usage:?}");
    let err = std::fs::read_to_string(mom.err_file("22.s")).unwrap();
    assert!(err.contains("=>> PBS: job killed: walltime 3 exceeded limit 2\n"), "{err:?}");
}

#[test]
fn sister_jobs_are_held_until_forgotten() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let mut sister = mom.launch("30.s", "");
    sister.sister = true;
    link.run(sister);
    assert_eq!(link.started("30.s"), 0);
    let mut again = mom.connect();
    match again.node_status() {
        FromMom::NodeStatus { jobs, .. } => {
            assert_eq!(jobs.len(), 1);
            assert!(jobs[0].sister);
            assert_eq!(jobs[0].exit_status, None);
        }
        _ => unreachable!(),
    }
    again.send(&ToMom::ForgetJob { job_id: "30.s".into() });
    again.send(&ToMom::Ping);
    again.wait_for("Pong", |f| matches!(f, FromMom::Pong));
    assert!(mom.job_files().is_empty(), "{:?}", mom.job_files());
}

#[test]
fn ended_jobs_are_kept_until_forgotten() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("40.s", "exit 7\n"));
    assert_eq!(link.ended("40.s").0, 7);
    drop(link);
    let mut link = mom.connect();
    match link.node_status() {
        FromMom::NodeStatus { jobs, .. } => {
            assert_eq!(jobs.len(), 1);
            assert_eq!(jobs[0].job_id, "40.s");
            assert_eq!(jobs[0].exit_status, Some(7));
        }
        _ => unreachable!(),
    }
    link.send(&ToMom::ForgetJob { job_id: "40.s".into() });
    link.send(&ToMom::Ping);
    link.wait_for("Pong", |f| matches!(f, FromMom::Pong));
    assert!(mom.job_files().is_empty(), "{:?}", mom.job_files());
    let mut link = mom.connect();
    match link.node_status() {
        FromMom::NodeStatus { jobs, .. } => assert!(jobs.is_empty(), "{jobs:?}"),
        _ => unreachable!(),
    }
}

#[test]
fn a_running_job_survives_kill_9_of_the_mom() {
    let mut mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("50.s", "sleep 2; echo done\n"));
    let sid = link.started("50.s");
    mom.kill9();
    assert!(!session_states(sid).is_empty(), "the job died with the mom");
    mom.spawn();
    let mut link = mom.connect();
    let status = match link.node_status() {
        FromMom::NodeStatus { jobs, .. } => {
            assert_eq!(jobs.len(), 1, "{jobs:?}");
            assert_eq!(jobs[0].job_id, "50.s");
            jobs[0].exit_status
        }
        _ => unreachable!(),
    };
    let status = match status {
        Some(status) => status,
        None => link.ended("50.s").0,
    };
    assert_eq!(status, 0);
    assert_eq!(std::fs::read_to_string(mom.out_file("50.s")).unwrap(), "done\n");
    link.send(&ToMom::ForgetJob { job_id: "50.s".into() });
    link.send(&ToMom::Ping);
    link.wait_for("Pong", |f| matches!(f, FromMom::Pong));
    assert!(mom.job_files().is_empty(), "{:?}", mom.job_files());
}

#[test]
fn a_job_ending_while_the_mom_is_down_is_reported_after_restart() {
    let mut mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("51.s", "sleep 1; exit 4\n"));
    let sid = link.started("51.s");
    mom.kill9();
    eventually("the job to end", || session_states(sid).is_empty());
    eventually("its status record", || mom.records("51.s").has::<Status>());
    mom.spawn();
    let mut link = mom.connect();
    match link.node_status() {
        FromMom::NodeStatus { jobs, .. } => {
            assert_eq!(jobs.len(), 1, "{jobs:?}");
            assert_eq!(jobs[0].exit_status, Some(4));
        }
        _ => unreachable!(),
    }
}

#[test]
fn walltime_is_enforced_while_the_mom_is_down() {
    let mut mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    let mut launch = mom.launch("52.s", "sleep 60\n");
    launch.walltime = Some(1);
    link.run(launch);
    let sid = link.started("52.s");
    mom.kill9();
    eventually("the shepherd to kill the job", || session_states(sid).is_empty());
    // The session is gone a moment before the shepherd records the end: a mom started in
    // between adopts the shepherd and reports the end later, not in its NodeStatus.
    eventually("its status record", || mom.records("52.s").has::<Status>());
    mom.spawn();
    let mut link = mom.connect();
    match link.node_status() {
        FromMom::NodeStatus { jobs, .. } => {
            assert_eq!(jobs.len(), 1, "{jobs:?}");
            assert_eq!(jobs[0].exit_status, Some(-29));
        }
        _ => unreachable!(),
    }
    let err = std::fs::read_to_string(mom.err_file("52.s")).unwrap();
    assert!(err.contains("=>> PBS: job killed: walltime 2 exceeded limit 1\n"), "{err:?}");
}

#[test]
fn an_adopted_job_is_sampled_and_its_limits_enforced() {
    let mut mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    // Idle while the mom is away, then over its cput limit under the new mom.
    let mut launch = mom.launch("53.s", "sleep 2\nwhile :; do :; done\n");
    launch.cput = Some(1);
    link.run(launch);
    link.started("53.s");
    mom.kill9();
    mom.spawn();
    let mut link = mom.connect();
    link.node_status();
    match link.wait_for("JobUsage", |f| matches!(f, FromMom::JobUsage { job_id, .. } if job_id == "53.s")) {
        FromMom::JobUsage { usage, .. } => assert!(usage.mem_kb > 0 && usage.vmem_kb > 0, "{usage:?}"),
        _ => unreachable!(),
    }
    assert_eq!(link.ended("53.s").0, -28);
    eventually("the adoption in the log", || mom.log().contains("adopted, shepherd pid"));
}

#[test]
fn forget_kills_a_running_job_silently() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("60.s", "sleep 60\n"));
    let sid = link.started("60.s");
    link.send(&ToMom::ForgetJob { job_id: "60.s".into() });
    eventually("the session to be gone", || session_states(sid).is_empty());
    eventually("the job's files to be removed", || mom.job_files().is_empty());
    link.send(&ToMom::Ping);
    link.wait_for("Pong", |f| matches!(f, FromMom::Pong));
    assert!(!link.seen.iter().any(|f| matches!(f, FromMom::JobEnded { .. })), "{:?}", link.seen);
}

/// RunJob -> JobEnded of a trivial job, the path the 100 ms submit-to-finished target
/// depends on. Prints the figures; fails only if the path got grossly slow.
#[test]
fn trivial_job_latency() {
    let mom = TestMom::start_with("PBS_MOM_SAMPLE_SECS=10\n");
    let mut link = mom.connect();
    link.node_status();
    let mut report = Vec::new();
    for (kind, exe) in [("script /bin/true", false), ("executable /bin/true", true)] {
        let mut times = Vec::new();
        for i in 0..30 {
            let job_id = format!("{}{i}.lat", if exe { 200 } else { 100 });
            let mut launch = mom.launch(&job_id, "/bin/true\n");
            if exe {
                launch.executable = Some("/bin/true".into());
            }
            let t0 = Instant::now();
            link.run(launch);
            assert_eq!(link.ended(&job_id).0, 0);
            times.push(t0.elapsed());
            link.send(&ToMom::ForgetJob { job_id });
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        report.push(format!(
            "{kind}: median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            ms(times[times.len() / 2]),
            ms(times[times.len() * 9 / 10]),
            ms(times[times.len() - 1])
        ));
        assert!(times[times.len() / 2] < Duration::from_millis(100), "{report:?}");
    }
    eprintln!("RunJob -> JobEnded latency:\n  {}", report.join("\n  "));
}

#[test]
fn a_shepherd_that_dies_without_a_status_loses_its_job() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.run(mom.launch("61.s", "sleep 60\n"));
    let sid = link.started("61.s");
    let started = mom.records("61.s").get::<Started>().unwrap();
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(started.shepherd_pid, libc::SIGKILL);
    }
    assert_eq!(link.ended("61.s").0, -4);
    eventually("the log", || mom.log().contains("shepherd ended without a status"));
    // SAFETY: as above; the orphaned job must not outlive the test.
    unsafe {
        libc::kill(-(sid as i32), libc::SIGKILL);
    }
}

fn modify(job_id: &str, walltime: Option<u64>, cput: Option<u64>, run_count: u32) -> ToMom {
    ToMom::ModifyJob { job_id: job_id.into(), walltime, cput, mem: None, run_count }
}

#[test]
fn limits_changed_while_running_are_enforced() {
    let mut mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    // A walltime set on a job launched without one, and a cput limit lowered.
    let wall = mom.launch("70.s", "sleep 60\n");
    link.run(wall);
    link.started("70.s");
    let mut busy = mom.launch("71.s", "while :; do :; done\n");
    busy.cput = Some(600);
    link.run(busy);
    link.started("71.s");
    link.send(&modify("70.s", Some(1), None, 1));
    link.send(&modify("71.s", None, Some(1), 1));
    assert_eq!(link.ended("71.s").0, -28);
    assert_eq!(link.ended("70.s").0, -29);
    let err = std::fs::read_to_string(mom.err_file("70.s")).unwrap();
    assert!(err.contains("exceeded limit 1\n"), "{err:?}");
    // A limit lowered before a restart of the mom holds after it.
    let mut later = mom.launch("72.s", "sleep 2\nwhile :; do :; done\n");
    later.cput = Some(600);
    link.run(later);
    link.started("72.s");
    link.send(&modify("72.s", None, Some(1), 1));
    eventually("the new limits recorded", || mom.records("72.s").get::<Limits>().is_some_and(|l| l.cput == Some(1)));
    mom.kill9();
    mom.spawn();
    let mut link = mom.connect();
    link.node_status();
    assert_eq!(link.ended("72.s").0, -28);
}

#[test]
fn limits_that_overtake_the_launch_apply_to_its_run() {
    let mom = TestMom::start();
    let mut link = mom.connect();
    link.node_status();
    link.send(&modify("73.s", Some(1), None, 1));
    // Limits meant for an earlier run do not apply.
    link.send(&modify("74.s", Some(1), None, 1));
    let mut first = mom.launch("73.s", "sleep 60\n");
    first.walltime = Some(600);
    first.run_count = 1;
    link.run(first);
    let mut second = mom.launch("74.s", "sleep 3\n");
    second.walltime = Some(600);
    second.run_count = 2;
    link.run(second);
    assert_eq!(link.ended("74.s").0, 0);
    assert_eq!(link.ended("73.s").0, -29);
}
