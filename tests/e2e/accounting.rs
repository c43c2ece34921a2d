//! The accounting log (`server_priv/accounting/YYYYMMDD`) as OpenPBS writes it, for a job's
//! whole life, an array, and a server killed in the middle of a burst of job ends; and
//! `tracejob` over it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

fn today(c: &Cluster) -> PathBuf {
    c.home().join("server_priv/accounting").join(chrono::Local::now().format("%Y%m%d").to_string())
}

fn records(c: &Cluster, id: &str) -> Vec<(char, String)> {
    c.accounting_records(id)
}

fn kinds(records: &[(char, String)]) -> String {
    records.iter().map(|(k, _)| *k).collect()
}

/// The text of a record's `key=` value.
fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split(' ').find_map(|pair| pair.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

fn wait_records(c: &Cluster, id: &str, expected: &str) -> Vec<(char, String)> {
    wait_until(&format!("records {expected} of {id}"), JOB_TIMEOUT, || kinds(&records(c, id)) == expected);
    records(c, id)
}

#[test]
fn a_jobs_life_is_recorded_as_openpbs_records_it() {
    let c = Cluster::with_moms(1, 2);
    let dir = c.home().join("server_priv/accounting");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o755);

    // Ran: Q S E.
    let ran = submit(&c, &["-N", "acct_ran"], "#!/bin/sh\nexit 0\n");
    c.wait_job_state(&ran, "F", JOB_TIMEOUT);
    let life = wait_records(&c, &ran, "QSE");
    assert_eq!(std::fs::metadata(today(&c)).unwrap().permissions().mode() & 0o777, 0o644);
    let (q, s, e) = (&life[0].1, &life[1].1, &life[2].1);
    let host = &c.host;
    let ctime = c.job_attr(&ran, "ctime").map(|_| ()).and(value(q, "ctime")).unwrap().to_string();
    assert_eq!(
        q,
        &format!(
            "user=root group=root project=_pbs_project_default jobname=acct_ran queue=workq ctime={ctime} qtime={ctime} etime={ctime} Resource_List.ncpus=1 Resource_List.nodect=1 Resource_List.place=pack Resource_List.select=1:ncpus=1 "
        )
    );
    let start = value(s, "start").unwrap().to_string();
    assert!(
        s.ends_with(&format!(
            "start={start} exec_host=n1/0 exec_vnode=(n1:ncpus=1) Resource_List.ncpus=1 Resource_List.nodect=1 Resource_List.place=pack Resource_List.select=1:ncpus=1 resource_assigned.ncpus=1 "
        )),
        "{s}"
    );
    assert!(e.starts_with(&format!("user=root group=root project=_pbs_project_default jobname=acct_ran queue=workq ctime={ctime} qtime={ctime} etime={ctime} start={start} exec_host=n1/0 exec_vnode=(n1:ncpus=1) Resource_List.ncpus=1 ")), "{e}");
    assert_eq!(value(e, "Exit_status"), Some("0"));
    assert_eq!(value(e, "run_count"), Some("1"));
    assert!(value(e, "resources_used.walltime").is_some() && e.ends_with(" run_count=1"), "{e}");
    assert_eq!(value(e, "eligible_time"), None, "no eligible time while the server keeps none");

    // Deleted while queued: Q D, the requestor as user@host.
    let held = submit(&c, &["-N", "acct_delq", "-h"], "#!/bin/sh\nexit 0\n");
    c.run("qdel", &[&held]).ok();
    let life = wait_records(&c, &held, "QD");
    assert_eq!(value(&life[0].1, "etime"), Some("0"));
    assert_eq!(life[1].1, format!("requestor=root@{host}"));

    // Deleted while running: Q S D E.
    let long = submit(&c, &["-N", "acct_delr"], "#!/bin/sh\nsleep 60\n");
    c.wait_job_state(&long, "R", JOB_TIMEOUT);
    wait_records(&c, &long, "QS");
    c.run("qdel", &[&long]).ok();
    let life = wait_records(&c, &long, "QSDE");
    assert_eq!(value(&life[3].1, "run_count"), Some("1"));

    // Rerun: Q S R S E, R with Exit_status=-11 and the run's count.
    let rerun = submit(&c, &["-N", "acct_rerun"], "#!/bin/sh\nsleep 3\n");
    c.wait_job_state(&rerun, "R", JOB_TIMEOUT);
    wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(&rerun, "session_id").is_some());
    c.run("qrerun", &[&rerun]).ok();
    let life = wait_records(&c, &rerun, "QSRSE");
    assert_eq!(value(&life[2].1, "Exit_status"), Some("-11"));
    assert_eq!(value(&life[2].1, "run_count"), Some("1"));
    assert_eq!(value(&life[4].1, "run_count"), Some("2"));
    assert_eq!(value(&life[4].1, "Exit_status"), Some("0"));

    // tracejob finds each job's records among the server's and scheduler's lines.
    for (id, name) in [(&ran, "acct_ran"), (&held, "acct_delq"), (&long, "acct_delr"), (&rerun, "acct_rerun")] {
        let out = c.run("tracejob", &[id]).ok();
        let text = out.stdout.clone();
        assert!(text.starts_with(&format!("\nJob: {id}\n\n")), "{text}");
        let accounting: Vec<&str> = text.lines().filter(|l| l.get(20..26) == Some(" A    ")).collect();
        assert_eq!(accounting.len(), records(&c, id).len(), "{text}");
        assert!(
            text.contains(&format!(
                "  S    Job Queued at request of root@{host}, owner = root@{host}, job name = {name}, queue = workq"
            )),
            "{text}"
        );
        let times: Vec<&str> = text.lines().skip(3).map(|l| &l[..19]).collect();
        let mut sorted = times.clone();
        sorted.sort_by_key(|t| chrono::NaiveDateTime::parse_from_str(t, "%m/%d/%Y %H:%M:%S").unwrap());
        assert_eq!(times, sorted, "lines in time order");
    }
    // Only the accounting log, with -s -l -m.
    let only = c.run("tracejob", &["-n", "2", "-s", "-l", "-m", &ran]).ok();
    assert_eq!(only.stdout.lines().skip(3).filter(|l| l.get(20..26) == Some(" A    ")).count(), 3, "{}", only.stdout);
    assert_eq!(only.stdout.lines().count(), 6, "{}", only.stdout);
    // An ordinary user cannot read server_priv: no accounting lines, the rest as root sees it.
    let user = c.run_as_nobody("tracejob", &[&ran]).ok();
    assert!(user.stdout.lines().all(|l| l.get(20..26) != Some(" A    ")), "{}", user.stdout);
    assert!(user.stdout.contains("  S    Job Queued at request of"), "{}", user.stdout);
}

/// With `eligible_time_enable`, a run's `E` record carries the job's eligible time after
/// its usage and before `run_count`, as OpenPBS's `account_jobend` writes it.
#[test]
fn an_end_record_carries_the_eligible_time_while_the_server_keeps_it() {
    let c = Cluster::with_moms(1, 1);
    c.qmgr("set server eligible_time_enable = True");
    let busy = submit(&c, &[], "#!/bin/sh\nsleep 60\n");
    c.wait_job_state(&busy, "R", JOB_TIMEOUT);
    let waiting = submit(&c, &[], "#!/bin/sh\nexit 0\n");
    wait_until("the waiting job accrues", JOB_TIMEOUT, || {
        c.job_attr(&waiting, "eligible_time")
            .and_then(|t| t.parse::<pbs_core::Duration>().ok())
            .is_some_and(|d| d.as_secs() >= 2)
    });
    c.run("qdel", &[&busy]).ok();
    c.wait_job_state(&waiting, "F", JOB_TIMEOUT);
    let e = wait_records(&c, &waiting, "QSE").remove(2).1;
    let eligible = value(&e, "eligible_time").unwrap_or_default().to_string();
    let secs = eligible.parse::<pbs_core::Duration>().map(|d| d.as_secs()).unwrap_or(0);
    assert!(secs >= 2 && eligible.len() == 8, "{e}");
    assert!(e.ends_with(&format!(" eligible_time={eligible} run_count=1")), "{e}");
    let used = e.find(" resources_used.").unwrap_or(usize::MAX);
    assert!(used < e.find(" eligible_time=").unwrap_or(0), "after the usage: {e}");
    // It ran at once: the second or so before its start at most.
    let busy_end = wait_records(&c, &busy, "QSDE").remove(3).1;
    let short = value(&busy_end, "eligible_time").and_then(|t| t.parse::<pbs_core::Duration>().ok());
    assert!(short.is_some_and(|d| d.as_secs() < 5) && busy_end.ends_with(" run_count=1"), "{busy_end}");
}

#[test]
fn a_qalter_is_recorded_with_the_values_it_left() {
    let c = Cluster::with_moms(1, 1);
    let id = submit(&c, &["-h", "-N", "acct_alt"], "#!/bin/sh\nexit 0\n");
    // Attributes in their definition order, whatever the order asked.
    c.run("qalter", &["-l", "walltime=10:00", "-N", "renamed", &id]).ok();
    c.run("qalter", &["-A", "my project", &id]).ok();
    c.run("qdel", &[&id]).ok();
    let life = wait_records(&c, &id, "QaaD");
    assert_eq!(life[1].1, "Job_Name=renamed Resource_List.walltime=00:10:00");
    assert_eq!(life[2].1, "Account_Name=\"my project\"");
    // A qalter that the server refuses records nothing.
    let ran = submit(&c, &["-N", "acct_alt_ran"], "#!/bin/sh\nexit 0\n");
    c.wait_job_state(&ran, "F", JOB_TIMEOUT);
    let refused = c.run("qalter", &["-N", "late", &ran]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert_eq!(kinds(&wait_records(&c, &ran, "QSE")), "QSE");
}

#[test]
fn an_array_is_recorded_as_a_whole_and_by_subjob() {
    let c = Cluster::with_moms(1, 1);
    let array = submit(&c, &["-N", "acct_arr", "-J", "1-2"], "#!/bin/sh\nexit 0\n");
    c.wait_job_state(&array, "F", JOB_TIMEOUT);
    let parent = wait_records(&c, &array, "QSE");
    assert_eq!(value(&parent[0].1, "array_indices"), Some("1-2"));
    assert_eq!(value(&parent[1].1, "array_indices"), Some("1-2"));
    assert!(parent[1].1.ends_with("Resource_List.select=1:ncpus=1 "), "{}", parent[1].1);
    assert!(parent[2].1.contains("Resource_List.select=1:ncpus=1 session=0 end="), "{}", parent[2].1);
    assert!(parent[2].1.ends_with(" Exit_status=0 run_count=0"), "{}", parent[2].1);
    let seq = array.split('[').next().unwrap();
    let server = array.split_once('.').unwrap().1;
    for index in 1..=2 {
        let subjob = format!("{seq}[{index}].{server}");
        let life = wait_records(&c, &subjob, "SE");
        assert!(
            life[0].1.contains(" exec_host=n1/0 ") && life[0].1.ends_with("resource_assigned.ncpus=1 "),
            "{}",
            life[0].1
        );
        assert_eq!(value(&life[1].1, "Exit_status"), Some("0"));
    }
    // The array's start comes before its first subjob's; its end after its last one's.
    let text = std::fs::read_to_string(today(&c)).unwrap();
    let order: Vec<String> = text
        .lines()
        .filter(|l| l.contains(&format!(";{seq}[")))
        .map(|l| l.split(';').take(3).skip(1).collect::<Vec<_>>().join(";"))
        .collect();
    let first = |s: &str| order.iter().position(|o| o == s).unwrap();
    assert!(first(&format!("S;{array}")) < first(&format!("S;{seq}[1].{server}")), "{order:?}");
    assert_eq!(order.last(), Some(&format!("E;{array}")), "{order:?}");
    let out = c.run("tracejob", &[&array]).ok();
    assert_eq!(out.stdout.lines().filter(|l| l.get(20..26) == Some(" A    ")).count(), 3, "{}", out.stdout);
}

#[test]
fn a_server_killed_among_job_ends_records_each_end_once() {
    let mut c = Cluster::with_moms(2, 4);
    let mut ids = Vec::new();
    for i in 0..24 {
        // Ends spread over a second or two, so the kill lands among them.
        let script = format!("#!/bin/sh\nsleep {}\n", 1 + i % 3);
        ids.push(submit(&c, &["-N", &format!("burst{i}")], &script));
    }
    wait_until("some jobs ended", JOB_TIMEOUT, || {
        let text = std::fs::read_to_string(today(&c)).unwrap_or_default();
        text.lines().filter(|l| l.contains(";E;")).count() >= 4
    });
    c.kill9();
    c.start_server();
    for id in &ids {
        c.wait_job_state(id, "F", Duration::from_secs(60));
    }
    // Lines reach the file a moment after their commit.
    wait_until("every end in the file", JOB_TIMEOUT, || {
        let text = std::fs::read_to_string(today(&c)).unwrap_or_default();
        ids.iter().all(|id| text.contains(&format!(";E;{id};")))
    });
    let text = std::fs::read_to_string(today(&c)).unwrap();
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.splitn(4, ';').collect();
        assert_eq!(fields.len(), 4, "a whole line: {line:?}");
        if fields[1] == "E" {
            *ends.entry(fields[2]).or_default() += 1;
        }
    }
    for id in &ids {
        assert_eq!(ends.get(id.as_str()), Some(&1), "one E record of {id}:\n{text}");
    }
}

#[test]
fn a_record_that_cannot_be_written_waits_and_the_server_goes_on() {
    let mut c = Cluster::start();
    c.allow_root_jobs();
    // Every write to the day's file fails as on a full disk.
    let file = today(&c);
    let _ = std::fs::remove_file(&file);
    std::os::unix::fs::symlink("/dev/full", &file).unwrap();
    // The job and its record are committed together; the file cannot take the line, and
    // the server goes on serving.
    let id = c.qsub(&["-h", "--", "/bin/true"]);
    wait_until("the server's warning", JOB_TIMEOUT, || c.server_stderr().contains("Cannot write the accounting log"));
    let listed = c.run("qstat", &[&id]).ok();
    assert!(listed.stdout.contains(&id), "{listed:?}");
    // Room again: the waiting line reaches the file (a restart writes it, once).
    std::fs::remove_file(&file).unwrap();
    c.terminate();
    c.start_server();
    let next = c.qsub(&["-h", "--", "/bin/true"]);
    wait_records(&c, &next, "Q");
    assert_eq!(kinds(&records(&c, &id)), "Q");
}

#[test]
fn tracejob_refuses_what_names_no_job() {
    let c = Cluster::start();
    let out = c.run("tracejob", &["7777777"]);
    assert_eq!(out.code, 1);
    let server = c.server_name().to_string();
    assert_eq!(out.stderr, format!("\ntracejob: Couldn't find Job Id 7777777.{server} in logs of past 1 day\n\n"));
    let out = c.run("tracejob", &["-n", "3", "7777777.x"]);
    assert_eq!(out.stderr, "\ntracejob: Couldn't find Job Id 7777777.x in logs of past 3 days\n\n");
    let out = c.run("tracejob", &["abc"]);
    assert_eq!((out.code, out.stderr.as_str()), (1, "tracejob: illegally formed job identifier: abc\n"));
    let out = c.run("tracejob", &[]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.starts_with(
            "USAGE: tracejob [-a|s|l|m|v] [-w size] [-p path] [-n days] [-f filter_type] job_identifier...\n"
        ),
        "{out:?}"
    );
    assert!(out.stdout.ends_with("filter_excessive: ON\n"), "{out:?}");
    let out = c.run("tracejob", &["-p", "/nonexistent", "1"]);
    assert_eq!((out.code, out.stderr.as_str()), (1, "tracejob: cannot read any log directory under /nonexistent\n"));
}
