//! File staging (`-W stagein`, `-W stageout`) on the mom's own host, copied as the job's
//! owner (`nobody` here): the files arrive and leave, a stage-in that fails makes the job
//! wait and tells its owner, a stage-out that fails keeps the file in the mom's
//! `undelivered` and says so.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use pbs_e2e::{Cluster, NOBODY, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// A mailer that appends every mail to `dir/mails`.
fn mailer(c: &Cluster) -> std::path::PathBuf {
    let log = c.dir().join("mails");
    let script = c.dir().join("mailer.sh");
    std::fs::write(&script, format!("#!/bin/sh\ncat >> {}\necho ==== >> {}\n", log.display(), log.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    c.qmgr(&format!("set server mailer = {}", script.display()));
    log
}

fn submit_as_nobody(c: &Cluster, args: &[&str], script: &str) -> String {
    let mut all = vec!["-S", "/bin/sh"];
    all.extend_from_slice(args);
    c.run_with_stdin("qsub", &all, script, true).ok().line().to_string()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn files_are_staged_in_and_out_as_the_owner() {
    let c = Cluster::with_moms(1, 1);
    let shared = c.shared_dir();
    let host = &c.host;
    std::fs::write(shared.join("src.dat"), "input\n").unwrap();
    let (local_in, local_out, result) = (shared.join("in.dat"), shared.join("out.dat"), shared.join("result.dat"));
    let stagein = format!("stagein={}@{host}:{}", path(&local_in), path(&shared.join("src.dat")));
    let stageout = format!("stageout={}@{host}:{}", path(&local_out), path(&result));
    let err = shared.join("job.err");
    let script = format!("cat {} > {}\necho done >> {}\n", path(&local_in), path(&local_out), path(&local_out));
    let id = submit_as_nobody(&c, &["-W", &stagein, "-W", &stageout, "-e", path(&err)], &script);
    assert_eq!(c.job_attr(&id, "stagein"), Some(stagein["stagein=".len()..].to_string()));
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(
        c.job_attr(&id, "Exit_status").as_deref(),
        Some("0"),
        "{}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    // Copied by the owner: the staged-in file is theirs.
    assert_eq!(std::fs::metadata(&local_in).unwrap().uid(), NOBODY);
    assert_eq!(std::fs::read_to_string(&result).unwrap(), "input\ndone\n");
    assert_eq!(std::fs::metadata(&result).unwrap().uid(), NOBODY);
}

#[test]
fn a_stage_in_that_fails_makes_the_job_wait_and_tells_its_owner() {
    let c = Cluster::with_moms(1, 1);
    let mails = mailer(&c);
    let shared = c.shared_dir();
    let host = &c.host;
    // A file that is missing, and one of root's that nobody may not read.
    let secret = shared.join("secret.dat");
    std::fs::write(&secret, "root's\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (source, said) in [(shared.join("missing.dat"), "No such file"), (secret.clone(), "Permission denied")] {
        let local = shared.join(format!("got-{}", source.file_name().unwrap().to_string_lossy()));
        let stagein = format!("stagein={}@{host}:{}", path(&local), path(&source));
        let before = chrono::Utc::now().timestamp();
        let id = submit_as_nobody(&c, &["-m", "n", "-W", &stagein], "true\n");
        c.wait_job_state(&id, "W", JOB_TIMEOUT);
        assert_eq!(c.job_attr(&id, "substate").as_deref(), Some("37"));
        let comment = c.job_attr(&id, "comment").unwrap_or_default();
        assert!(comment.starts_with("File stage in failed: Unable to copy file"), "{comment}");
        assert!(comment.contains(said), "{comment}");
        let at: i64 = c.job_attr(&id, "Execution_Time").and_then(|t| t.parse().ok()).unwrap_or(0);
        assert!((before + 1800..=before + 1800 + 60).contains(&at), "Execution_Time {at}, submitted at {before}");
        assert!(!local.exists(), "nothing of the source may arrive");
        wait_until("the stage-in mail", JOB_TIMEOUT, || {
            std::fs::read_to_string(&mails).unwrap_or_default().contains(&format!("Subject: PBS JOB {id}\n"))
        });
        let text = std::fs::read_to_string(&mails).unwrap();
        let mail = text.split("====\n").find(|m| m.contains(&format!("Subject: PBS JOB {id}\n"))).unwrap();
        assert!(
            mail.contains(
                "File stage in failed, see below.\nJob will be retried later, please investigate and correct problem.\nUnable to copy file"
            ),
            "{mail}"
        );
    }
}

#[test]
fn a_stage_out_that_fails_keeps_the_file_in_undelivered_and_says_so() {
    let c = Cluster::with_moms(1, 1);
    let mails = mailer(&c);
    let shared = c.shared_dir();
    let host = &c.host;
    // A directory nobody may not write to.
    let closed = c.dir().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    let local = shared.join("product.dat");
    let err = shared.join("job.err");
    let stageout = format!("stageout={}@{host}:{}", path(&local), path(&closed.join("product.dat")));
    let script = format!("echo made > {}\n", path(&local));
    let id = submit_as_nobody(&c, &["-m", "n", "-W", &stageout, "-e", path(&err)], &script);
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let kept = c.dir().join("mom-n1/undelivered/product.dat");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "made\n");
    assert_eq!(std::fs::metadata(&kept).unwrap().uid(), NOBODY);
    assert!(!closed.join("product.dat").exists());
    let comment = c.job_attr(&id, "comment").unwrap_or_default();
    assert!(
        comment.starts_with("File stage out failed, files kept in n1's undelivered: Unable to copy file"),
        "{comment}"
    );
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(said.contains(&format!("Output retained on that host in: {}", kept.display())), "{said}");
    wait_until("the stage-out mail", JOB_TIMEOUT, || {
        std::fs::read_to_string(&mails).unwrap_or_default().contains("Post job file processing error")
    });
    let text = std::fs::read_to_string(&mails).unwrap();
    assert!(
        text.contains(&format!("Post job file processing error; job {id} on host n1\nUnable to copy file")),
        "{text}"
    );
}

#[test]
fn malformed_staging_lists_are_refused_as_openpbs_refuses_them() {
    let c = Cluster::start();
    for bad in ["stagein=nohost", "stagein=a@h", "stageout=@h:/x", "stagein=a@h:/x,"] {
        let out = c.run("qsub", &["-W", bad, "--", "/bin/true"]);
        assert_eq!(out.code, 2, "{bad}: {out:?}");
        assert!(out.stderr.starts_with("qsub: illegal -W value"), "{bad}: {out:?}");
    }
}

#[test]
fn files_of_another_host_go_through_the_remote_copy_program_as_the_owner_in_the_staging_substates() {
    let mut c = Cluster::with_moms(1, 1);
    let shared = c.shared_dir();
    // A stand-in for scp: records how it was called and who ran it, then copies the paths.
    let log = shared.join("scp.log");
    let scp = c.dir().join("fake-scp");
    std::fs::write(
        &scp,
        format!(
            "#!/bin/sh\necho \"$(id -u) $*\" >> {log}\nfrom=$5; to=$6\n\
             case \"$to\" in *:*) gate={gates}/out;; *) gate={gates}/in;; esac\n\
             while [ ! -e $gate ]; do sleep 0.01; done\n\
             exec cp -r -- \"${{from#*:}}\" \"${{to#*:}}\"\n",
            log = path(&log),
            gates = path(&shared),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&scp, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = c.mom_conf_path("n1");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&format!("PBS_SCP={}\n", path(&scp)));
    std::fs::write(&conf, text).unwrap();
    c.kill_mom("n1");
    c.start_mom("n1");
    c.wait_node_state("n1", "free");
    std::fs::write(shared.join("far.dat"), "far away\n").unwrap();
    let (local_in, local_out) = (shared.join("near.dat"), shared.join("back.dat"));
    let stagein = format!("stagein={}@login9.example:{}", path(&local_in), path(&shared.join("far.dat")));
    let stageout = format!("stageout={}@login9.example:{}", path(&local_in), path(&local_out));
    let id = submit_as_nobody(&c, &["-W", &stagein, "-W", &stageout], "true\n");
    // While its files come, it runs in substate 15; while they go, it exits in 51.
    let shows = |state: &str, substate: &str| {
        c.job_attr(&id, "job_state").as_deref() == Some(state)
            && c.job_attr(&id, "substate").as_deref() == Some(substate)
    };
    wait_until("R 15 while staging in", JOB_TIMEOUT, || shows("R", "15"));
    std::fs::write(shared.join("in"), "").unwrap();
    wait_until("E 51 while staging out", JOB_TIMEOUT, || shows("E", "51"));
    std::fs::write(shared.join("out"), "").unwrap();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(std::fs::read_to_string(&local_out).unwrap(), "far away\n");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!(
            "{NOBODY} -B -r -p -- login9.example:{} {}\n{NOBODY} -B -r -p -- {} login9.example:{}\n",
            path(&shared.join("far.dat")),
            path(&local_in),
            path(&local_in),
            path(&local_out)
        )
    );
}
