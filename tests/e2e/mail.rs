//! Job mail as OpenPBS sends it (`-m`, `-M`, the server's `mailer` and `mail_from`),
//! recorded by a stand-in mailer script named in the server's `mailer`: each call writes
//! its argv and its standard input to a file of its own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// A mailer that records each mail in `dir/mail.N`; returns `dir`.
fn recording_mailer(c: &Cluster) -> PathBuf {
    let dir = c.dir().join("mails");
    std::fs::create_dir_all(&dir).unwrap();
    let script = c.dir().join("mailer.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nf=$(mktemp {0}/part.XXXXXX)\n{{ for a in \"$@\"; do echo \"ARG $a\"; done; cat; }} > \"$f\"\nmv \"$f\" \"{0}/mail.${{f##*.}}\"\n",
            dir.display()
        ),
    )
    .unwrap();
    set_executable(&script);
    c.qmgr(&format!("set server mailer = {}", script.display()));
    dir
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The recorded mails whose subject names job `id` exactly.
fn mails_of(dir: &Path, id: &str) -> Vec<String> {
    let subject = format!("\nSubject: PBS JOB {id}\n");
    let mut mails: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("mail."))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter(|m| m.contains(&subject))
        .collect();
    mails.sort();
    mails
}

fn wait_mails(c: &Cluster, dir: &Path, id: &str, n: usize) -> Vec<String> {
    wait_until(&format!("{n} mails of {id}"), JOB_TIMEOUT, || mails_of(dir, id).len() >= n);
    let mails = mails_of(dir, id);
    assert_eq!(mails.len(), n, "mails of {id}: {mails:#?}\n{}", c.logs());
    mails
}

/// The mail of `id` whose standard message is `message`.
fn with_message<'a>(mails: &'a [String], message: &str) -> Vec<&'a String> {
    mails.iter().filter(|m| m.lines().any(|l| l == message)).collect()
}

#[test]
fn mails_for_abe_and_for_subjobs_with_j_are_sent_as_openpbs_writes_them() {
    let c = Cluster::with_moms(1, 4);
    let dir = recording_mailer(&c);
    c.qmgr("set server mail_from = pbsadmin");
    let host = &c.host;

    let id = c.qsub(&["-m", "abe", "-N", "mailed", "--", "/bin/true"]);
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let mails = wait_mails(&c, &dir, &id, 2);
    let begun = with_message(&mails, "Begun execution");
    assert_eq!(
        begun,
        [&format!(
            "ARG -f\nARG pbsadmin\nARG root@{host}\nTo: root@{host}\nSubject: PBS JOB {id}\n\nPBS Job Id: {id}\nJob Name:   mailed\nBegun execution\n"
        )]
    );
    let ended = with_message(&mails, "Execution terminated");
    assert_eq!(ended.len(), 1, "{mails:#?}");
    let head = format!(
        "ARG -f\nARG pbsadmin\nARG root@{host}\nTo: root@{host}\nSubject: PBS JOB {id}\n\nPBS Job Id: {id}\nJob Name:   mailed\nExecution terminated\nExit_status=0\n"
    );
    assert!(ended[0].starts_with(&head), "{}", ended[0]);
    assert!(ended[0].lines().any(|l| l.starts_with("resources_used.walltime=")), "{}", ended[0]);

    // -M: each address an argv entry of its own, and the To: header.
    let id = c.qsub(&["-m", "e", "-M", "alice,bob@mail.example", "--", "/bin/true"]);
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let mails = wait_mails(&c, &dir, &id, 1);
    assert!(
        mails[0].starts_with("ARG -f\nARG pbsadmin\nARG alice\nARG bob@mail.example\nTo: alice bob@mail.example\n")
    );

    // An array: its begin and end, and each subjob's with j.
    let array = c.qsub(&["-J", "1-2", "-m", "bej", "--", "/bin/true"]);
    c.wait_job_state(&array, "F", JOB_TIMEOUT);
    assert_eq!(wait_mails(&c, &dir, &array, 2).len(), 2);
    let array_mails = mails_of(&dir, &array);
    assert_eq!(with_message(&array_mails, "Begun execution").len(), 1);
    let end = with_message(&array_mails, "Execution terminated");
    assert!(end[0].ends_with("Execution terminated\nExit_status=0\n"), "{}", end[0]);
    for i in 1..=2 {
        let sub = array.replace("[]", &format!("[{i}]"));
        let sub_mails = wait_mails(&c, &dir, &sub, 2);
        assert_eq!(with_message(&sub_mails, "Begun execution").len(), 1, "{sub_mails:#?}");
        assert_eq!(with_message(&sub_mails, "Execution terminated").len(), 1, "{sub_mails:#?}");
    }
    // Without j, the subjobs send nothing.
    let quiet = c.qsub(&["-J", "1-2", "-m", "be", "--", "/bin/true"]);
    c.wait_job_state(&quiet, "F", JOB_TIMEOUT);
    wait_mails(&c, &dir, &quiet, 2);
    let sub = quiet.replace("[]", "[1]");
    assert!(mails_of(&dir, &sub).is_empty());

    // The default mail point is a: a job a dependency deletes says why.
    let failing = c.qsub(&["-m", "n", "--", "/bin/false"]);
    let child = c.qsub(&["-W", &format!("depend=afterok:{failing}"), "--", "/bin/true"]);
    c.wait_job_state(&child, "F", JOB_TIMEOUT);
    let mails = wait_mails(&c, &dir, &child, 1);
    assert!(
        mails[0]
            .ends_with(&format!("\nAborted by PBS Server \nJob deleted as result of dependency on job {failing}\n")),
        "{}",
        mails[0]
    );
    assert!(mails_of(&dir, &failing).is_empty(), "-m n sends nothing");

    // qdel by someone other than the owner tells the owner, whatever the mail points; the
    // owner's own qdel does not.
    let theirs = c.run_as_nobody("qsub", &["-m", "n", "-h", "--", "/bin/true"]).ok().line().to_string();
    let own = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    c.run("qdel", &[&theirs]).ok();
    c.run_as_nobody("qdel", &[&own]).ok();
    let mails = wait_mails(&c, &dir, &theirs, 1);
    assert_eq!(
        mails[0],
        format!(
            "ARG -f\nARG pbsadmin\nARG nobody@{host}\nTo: nobody@{host}\nSubject: PBS JOB {theirs}\n\nPBS Job Id: {theirs}\nJob Name:   STDIN\nJob to be deleted at request of root@{host}\n"
        )
    );
    c.wait_job_state(&own, "F", JOB_TIMEOUT);
    let late = c.qsub(&["-m", "b", "--", "/bin/true"]);
    wait_mails(&c, &dir, &late, 1);
    assert!(mails_of(&dir, &own).is_empty(), "the owner's qdel mails nothing");
}

#[test]
fn no_job_name_or_address_adds_a_header_or_an_option() {
    let c = Cluster::with_moms(1, 1);
    let dir = recording_mailer(&c);
    for bad in [["-M", "-oQ/tmp x"], ["-M", "-oQ/tmp"], ["-M", "alice,-fevil"]] {
        let out = c.run("qsub", &[bad[0], bad[1], "--", "/bin/true"]);
        assert_eq!(out.code, 2, "{bad:?}: {out:?}");
        assert!(out.stderr.starts_with("qsub: illegal -M value\nusage: qsub"), "{bad:?}: {out:?}");
    }
    let out = c.run("qsub", &["-N", "a\nBcc: eve@evil.example", "--", "/bin/true"]);
    assert_ne!(out.code, 0, "{out:?}");
    // Past the command: the server refuses the same addresses itself.
    let refused = c.client().submit(
        vec![pbs_proto::Attr::new("Mail_Users", "-oQ/tmp"), pbs_proto::Attr::new("Mail_Points", "abe")],
        "#!/bin/sh\ntrue\n".into(),
        None,
    );
    assert!(refused.is_err(), "{refused:?}");
    // A hook may set any name: it stays on its line of the body.
    let hook = c.dir().join("rename.py");
    std::fs::write(&hook, "import pbs\npbs.event().job.Job_Name = 'x\\nBcc: eve@evil.example'\npbs.event().accept()\n")
        .unwrap();
    c.qmgr("create hook rename event=queuejob");
    c.qmgr(&format!("import hook rename application/x-python default {}", hook.display()));
    let id = c.qsub(&["-m", "b", "--", "/bin/true"]);
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let name = c.job_attr(&id, "Job_Name").unwrap_or_default();
    let mails = wait_mails(&c, &dir, &id, 1);
    let (headers, body) = mails[0].split_once("\n\n").unwrap();
    assert!(!headers.contains("Bcc") && !headers.contains("eve@"), "{}", mails[0]);
    assert!(!body.lines().any(|l| l.starts_with("Bcc")), "{}", mails[0]);
    assert_eq!(name, "x\nBcc: eve@evil.example");
    assert!(body.contains("Job Name:   x\\nBcc: eve@evil.example\n"), "{}", mails[0]);
}

#[test]
fn a_mailer_that_hangs_does_not_slow_jobs_down() {
    let c = Cluster::with_moms(1, 4);
    let script = c.dir().join("hang.sh");
    let started = c.dir().join("hung");
    std::fs::write(&script, format!("#!/bin/sh\necho x >> {}\nexec sleep 120\n", started.display())).unwrap();
    set_executable(&script);
    c.qmgr(&format!("set server mailer = {}", script.display()));
    let begin = Instant::now();
    let ids: Vec<String> = (0..60).map(|_| c.qsub(&["-m", "abe", "--", "/bin/true"])).collect();
    for id in &ids {
        c.wait_job_state(id, "F", JOB_TIMEOUT);
    }
    let took = begin.elapsed();
    // Four mailers at once, each hanging: the jobs went on regardless.
    wait_until("the mailers to start", JOB_TIMEOUT, || {
        std::fs::read_to_string(&started).unwrap_or_default().lines().count() == 4
    });
    assert!(took < Duration::from_secs(20), "60 jobs with mail took {took:?}");
    let id = c.qsub(&["--", "/bin/true"]);
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(std::fs::read_to_string(&started).unwrap().lines().count(), 4, "still four mailers at once");
}

#[test]
fn pbs_confs_mail_host_name_is_the_host_of_addresses_that_name_none() {
    let mut c = Cluster::start();
    let dir = recording_mailer(&c);
    c.terminate();
    let mut conf = std::fs::read_to_string(c.conf_path()).unwrap();
    conf.push_str("PBS_MAIL_HOST_NAME=mail.example\n");
    std::fs::write(c.conf_path(), conf).unwrap();
    c.start_server();
    // The owner's host is replaced; in -M, a name without a host gets it, one with a host
    // keeps its own. A qdel by root mails nobody's jobs whatever their mail points.
    let owned = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    let listed =
        c.run_as_nobody("qsub", &["-h", "-M", "alice,bob@elsewhere", "--", "/bin/true"]).ok().line().to_string();
    c.run("qdel", &[&owned, &listed]).ok();
    let to_owner = wait_mails(&c, &dir, &owned, 1);
    assert!(
        to_owner[0].starts_with("ARG -f\nARG adm\nARG nobody@mail.example\nTo: nobody@mail.example\n"),
        "{}",
        to_owner[0]
    );
    let to_list = wait_mails(&c, &dir, &listed, 1);
    assert!(
        to_list[0].starts_with(
            "ARG -f\nARG adm\nARG alice@mail.example\nARG bob@elsewhere\nTo: alice@mail.example bob@elsewhere\n"
        ),
        "{}",
        to_list[0]
    );
}
