//! Least privilege between the server and its moms, end to end: the server names the
//! owner's uid and whether `acl_roots` allows root in every launch, and the mom runs
//! nothing as root without that word; a restarted mom adopts no process that merely looks
//! like a shepherd; a limit's kill message never goes through a descriptor the job chose.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pbs_e2e::{Cluster, NOBODY, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn root_jobs_run_as_root_only_while_acl_roots_allows_them() {
    let c = Cluster::with_moms(1, 1);
    let shared = c.shared_dir();
    let path = |name: &str| shared.join(name).to_str().unwrap().to_string();
    let qsub = |extra: &[&str], out: &str, as_nobody: bool| {
        let mut args = vec!["-S", "/bin/sh", "-o", out, "-e", out];
        args.extend_from_slice(extra);
        c.run_with_stdin("qsub", &args, "id -u\n", as_nobody).ok().line().to_string()
    };
    let (allowed_out, held_out, nobody_out) = (path("allowed.out"), path("held.out"), path("nobody.out"));

    // acl_roots = root: root's job runs as root.
    let allowed = qsub(&[], &allowed_out, false);
    c.wait_job_state(&allowed, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&allowed, "Exit_status").as_deref(), Some("0"), "{}", c.logs());
    assert_eq!(std::fs::read_to_string(&allowed_out).unwrap(), "0\n");

    // A root job accepted while acl_roots allowed it, run after a manager removed root
    // from acl_roots: the server no longer vouches for it, and the mom refuses it.
    let held = qsub(&["-h"], &held_out, false);
    c.qmgr("unset server acl_roots");
    c.run("qrls", &[&held]).ok();
    c.wait_job_state(&held, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&held, "Exit_status").as_deref(), Some("-10"), "{}", c.logs());
    assert!(!std::path::Path::new(&held_out).exists(), "the refused job ran");

    // Everyone else's jobs are unaffected: nobody's runs as nobody.
    let nobody = qsub(&[], &nobody_out, true);
    c.wait_job_state(&nobody, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&nobody, "Exit_status").as_deref(), Some("0"), "{}", c.logs());
    assert_eq!(std::fs::read_to_string(&nobody_out).unwrap(), format!("{NOBODY}\n"));
}

#[test]
fn a_kill_message_never_lands_in_a_file_the_job_pointed_its_stderr_at() {
    let c = Cluster::with_moms(1, 1);
    let shared = c.shared_dir();
    // Only root may write it; nobody may open it for reading.
    let precious = shared.join("root-owned");
    std::fs::write(&precious, "precious\n").unwrap();
    std::fs::set_permissions(&precious, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = shared.join("job.err");
    let args = ["-S", "/bin/sh", "-l", "cput=1", "-e", err.to_str().unwrap(), "-o", "/dev/null"];
    // The job's fd 2 becomes a read-only descriptor of the root-owned file.
    let script = format!("exec 2<{}\nwhile :; do :; done\n", precious.display());
    let id = c.run_with_stdin("qsub", &args, &script, true).ok().line().to_string();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("-28"), "{}", c.logs());
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    let text = std::fs::read_to_string(&err).unwrap();
    assert!(text.starts_with("=>> PBS: job killed: cput ") && text.ends_with(" exceeded limit 1\n"), "{text:?}");
}

/// Pids of the processes whose command line is `<anything> --shepherd <records>`.
fn shepherd_like(records: &Path) -> Vec<i32> {
    let want = records.as_os_str().as_encoded_bytes();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.get(1) == Some(&b"--shepherd".as_slice()) && args.get(2) == Some(&want) {
            out.push(pid);
        }
    }
    out
}

/// A process of `nobody` whose command line is a shepherd's (it rewrites its argv, as
/// any user's process can); killed when dropped.
struct FakeShepherd(Child);

impl Drop for FakeShepherd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fake_shepherd(records: &Path) -> FakeShepherd {
    let script = r#"$0 = "pbs_mom\0--shepherd\0$ARGV[0]\0" . ("\0" x 4096); sleep 120;"#;
    let child = Command::new("perl")
        .arg("-e")
        .arg(script)
        .arg(records)
        .uid(NOBODY)
        .gid(NOBODY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let fake = FakeShepherd(child);
    wait_until("the fake's command line", JOB_TIMEOUT, || shepherd_like(records).contains(&pid));
    fake
}

#[test]
fn a_restarted_mom_adopts_no_process_that_only_looks_like_a_shepherd() {
    let mut c = Cluster::with_moms(1, 1);
    let id = c.run_with_stdin("qsub", &["-S", "/bin/sh"], "sleep 60\n", true).ok().line().to_string();
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    wait_until("the session id", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    let sid: i32 = c.job_attr(&id, "session_id").unwrap().parse().unwrap();
    let home = std::fs::canonicalize(c.dir().join("mom-n1")).unwrap();
    let records: PathBuf = home.join("mom_priv").join("jobs").join(format!("{id}.JB"));
    let real = shepherd_like(&records);
    assert_eq!(real.len(), 1, "{real:?}");
    // The mom goes down, and the job's shepherd and session die meanwhile...
    c.kill_mom("n1");
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(real[0], libc::SIGKILL);
        libc::kill(-sid, libc::SIGKILL);
    }
    wait_until("the shepherd to be gone", JOB_TIMEOUT, || shepherd_like(&records).is_empty());
    // ...and a user's process takes the shepherd's place.
    let fake = fake_shepherd(&records);
    c.start_mom("n1");
    // The mom finds the job lost (JOB_EXEC_INITABT) instead of adopting the fake.
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("-4"), "{}", c.logs());
    c.wait_logged(&format!("process {} is not the job's shepherd", fake.0.id()));
    let log = c.mom_stderr("n1");
    assert!(!log.contains("adopted, shepherd pid"), "{log}");
}
