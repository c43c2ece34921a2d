//! Authorization as OpenPBS applies it, checked as the unprivileged user `nobody` against
//! real daemons: hold letters through qalter, queue and server ACLs, custom resource
//! privileges, and running jobs' time limits altered by qalter.

use pbs_e2e::{Cluster, Out};

fn assert_fails(out: &Out, stderr: &str, code: i32) {
    assert_eq!((out.stderr.as_str(), out.code), (stderr, code), "{out:?}");
}

fn submit_as_nobody(cluster: &Cluster, args: &[&str]) -> String {
    cluster.run_as_nobody("qsub", args).ok().line().to_string()
}

#[test]
fn qalter_of_hold_types_follows_the_hold_privileges() {
    let cluster = Cluster::start();
    let id = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    cluster.run("qhold", &["-h", "o", &id]).ok();
    cluster.run("qhold", &["-h", "s", &id]).ok();
    let unauthorized = format!("qalter: Unauthorized Request  {id}\n");
    // The owner can neither clear the operator and system holds nor swap them for a user
    // hold: each changes a letter above the owner's privilege.
    for holds in ["n", "u", "o", "s"] {
        assert_fails(&cluster.run_as_nobody("qalter", &["-h", holds, &id]), &unauthorized, 159);
        assert_eq!(cluster.job_attr(&id, "Hold_Types").as_deref(), Some("os"), "qalter -h {holds}");
    }
    assert_eq!(cluster.job_attr(&id, "job_state").as_deref(), Some("H"));
    // Nor set one on a job without it.
    let free = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    for holds in ["o", "s", "us"] {
        assert_fails(
            &cluster.run_as_nobody("qalter", &["-h", holds, &free]),
            &format!("qalter: Unauthorized Request  {free}\n"),
            159,
        );
    }
    assert_eq!(cluster.job_attr(&free, "Hold_Types").as_deref(), Some("n"));
    // A user hold is the owner's to set and clear, beside holds they cannot touch.
    cluster.run_as_nobody("qalter", &["-h", "u", &free]).ok();
    assert_eq!(cluster.job_attr(&free, "Hold_Types").as_deref(), Some("u"));
    cluster.run_as_nobody("qalter", &["-h", "n", &free]).ok();
    assert_eq!(cluster.job_attr(&free, "job_state").as_deref(), Some("Q"));
    // An operator may change the operator hold, not the system one; a manager both.
    cluster.qmgr("set server operators = nobody@*");
    assert_fails(&cluster.run_as_nobody("qalter", &["-h", "n", &id]), &unauthorized, 159);
    cluster.run_as_nobody("qalter", &["-h", "s", &id]).ok();
    assert_eq!(cluster.job_attr(&id, "Hold_Types").as_deref(), Some("s"));
    cluster.run("qalter", &["-h", "n", &id]).ok();
    assert_eq!(cluster.job_attr(&id, "job_state").as_deref(), Some("Q"));
}
