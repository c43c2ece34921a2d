//! Least privilege between the server and its moms, end to end: the server names the
//! owner's uid and whether `acl_roots` allows root in every launch, and the mom runs
//! nothing as root without that word.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use pbs_e2e::{Cluster, NOBODY};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// A directory every user may write to, inside the cluster's directory.
fn shared_dir(c: &Cluster) -> std::path::PathBuf {
    let dir = c.dir().join("shared");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

#[test]
fn root_jobs_run_as_root_only_while_acl_roots_allows_them() {
    let c = Cluster::with_moms(1, 1);
    let shared = shared_dir(&c);
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
