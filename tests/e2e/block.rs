//! `qsub -W block=true`: qsub prints the job's id, waits for the job to leave and exits
//! with its exit status; a qdel while it waits makes it say who deleted the job and exit
//! 3; a signal to it deletes the job and exits 2, as OpenPBS's qsub does.

use std::io::{BufRead, BufReader, Read};
use std::process::Child;
use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts `qsub args` as root, reads the id it prints first, and gives both.
fn blocking_qsub(c: &Cluster, args: &[&str]) -> (Child, String) {
    let mut child = c.spawn("qsub", args);
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    (child, line.trim().to_string())
}

/// Waits for `child` to exit: its status and what it printed after the id.
fn finished(mut child: Child) -> (i32, String, String) {
    let deadline = std::time::Instant::now() + JOB_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "qsub -W block=true did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.code().unwrap_or(-1), out, err)
}

#[test]
fn qsub_blocks_until_its_job_ends_and_exits_with_its_status() {
    let c = Cluster::with_moms(1, 2);
    let (child, id) = blocking_qsub(&c, &["-W", "block=true", "--", "/bin/sh", "-c", "exit 7"]);
    assert!(id.ends_with(c.server_name()), "{id}");
    let (code, out, err) = finished(child);
    assert_eq!((code, out.as_str(), err.as_str()), (7, "", ""));
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("F"));
    // An array: once its last subjob ended.
    let (child, id) = blocking_qsub(&c, &["-W", "block=true", "-J", "1-3", "--", "/bin/true"]);
    assert_eq!(finished(child).0, 0);
    assert_eq!(c.job_attr(&id, "job_state").as_deref(), Some("F"));
    // A job that is gone before its qsub asks (no history kept): its end was kept for it,
    // once; a job submitted without block has nothing kept.
    c.qmgr("set server job_history_enable = False");
    let mut client = c.client();
    let submit = |client: &mut pbs_client::Client, block: bool| {
        let mut attrs = vec![pbs_proto::Attr::new("Resource_List.ncpus", "1")];
        if block {
            attrs.push(pbs_proto::Attr::new("block", "1"));
        }
        client.submit(attrs, "#!/bin/sh\nexit 4\n".into(), None).unwrap()
    };
    let (fast, plain) = (submit(&mut client, true), submit(&mut client, false));
    wait_until("both gone", JOB_TIMEOUT, || {
        c.job_attr(&fast, "job_state").is_none() && c.job_attr(&plain, "job_state").is_none()
    });
    assert_eq!(client.wait_job(&fast).unwrap(), (4, String::new()));
    assert!(client.wait_job(&fast).is_err(), "an answer is taken once");
    assert!(client.wait_job(&plain).is_err());
    // Without block, qsub returns at once, as before.
    let out = c.run("qsub", &["-W", "block=false", "--", "/bin/true"]).ok();
    assert!(out.line().ends_with(c.server_name()));
}

#[test]
fn a_qdel_while_it_waits_is_said_and_a_signal_deletes_the_job() {
    let c = Cluster::with_moms(1, 1);
    let (child, id) = blocking_qsub(&c, &["-W", "block=true", "-h", "--", "/bin/true"]);
    c.wait_job_state(&id, "H", JOB_TIMEOUT);
    c.run("qdel", &[&id]).ok();
    let (code, _, err) = finished(child);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err, format!("qsub: {id} Job to be deleted at request of root@{}\n", c.host));

    let (child, id) = blocking_qsub(&c, &["-W", "block=true", "-h", "--", "/bin/true"]);
    c.wait_job_state(&id, "H", JOB_TIMEOUT);
    // SAFETY: a signal to a child of this test.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let (code, out, err) = finished(child);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err, format!("qsub: wait for job {id} interrupted by signal 2\n"));
    assert_eq!(out, format!("Job {id} is being deleted\n"));
    wait_until("the job deleted", JOB_TIMEOUT, || c.job_attr(&id, "job_state").as_deref() == Some("F"));
}
