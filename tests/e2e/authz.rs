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
        assert_eq!(cluster.job_attr(&id, "Hold_Types").as_deref(), Some("so"), "qalter -h {holds}");
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

fn denied(command: &str, attr: &str, id: Option<&str>) -> String {
    let text = format!("{command}: Cannot set attribute, read only or insufficient permission  {attr}");
    match id {
        Some(id) => format!("{text} {id}\n"),
        None => format!("{text}\n"),
    }
}

#[test]
fn custom_resources_keep_their_privileges() {
    let cluster = Cluster::start();
    cluster.qmgr("create resource rsecret type=long,flag=r");
    cluster.qmgr("create resource isecret type=long,flag=i");
    cluster.qmgr("create resource hsecret type=long,flag=hi");
    cluster.qmgr("create resource open type=long");
    // Resource definitions are the managers': an operator may neither change nor unset one.
    cluster.qmgr("set server operators = nobody@*");
    for command in ["set resource open flag = h", "set resource open type = string", "unset resource open flag"] {
        assert_fails(
            &cluster.run_as_nobody("qmgr", &["-c", command]),
            "qmgr obj=open svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n",
            159,
        );
    }
    assert_eq!(cluster.run("qmgr", &["-c", "list resource open"]).ok().stdout, "Resource open\n    type = long\n\n");
    cluster.qmgr("unset server operators");
    // A built-in resource cannot be redefined.
    assert_fails(
        &cluster.run("qmgr", &["-c", "set resource ncpus flag = h"]),
        "qmgr obj=ncpus svr=default: Invalid request\nqmgr: Error (15004) returned from server\n",
        156,
    );
    // Read-only (r) and invisible (i) resources are not the owner's to set.
    for resource in ["rsecret", "isecret"] {
        let attr = format!("Resource_List.{resource}");
        let out = cluster.run_as_nobody("qsub", &["-l", &format!("{resource}=1"), "--", "/bin/true"]);
        assert_fails(&out, &denied("qsub", &attr, None), 155);
    }
    let id = submit_as_nobody(&cluster, &["-l", "open=1", "--", "/bin/true"]);
    for resource in ["rsecret", "isecret"] {
        let attr = format!("Resource_List.{resource}");
        let out = cluster.run_as_nobody("qalter", &["-l", &format!("{resource}=2"), &id]);
        assert_fails(&out, &denied("qalter", &attr, Some(&id)), 155);
    }
    // Nor is an invisible resource usable in a chunk.
    let out = cluster.run_as_nobody("qsub", &["-l", "select=1:ncpus=1:hsecret=1", "--", "/bin/true"]);
    assert_fails(&out, "qsub: Resource invalid in \"select\" specification Resource_List.hsecret\n", 4);
    // A manager sets both; the owner sees the read-only one only.
    cluster.run("qalter", &["-l", "rsecret=2", "-l", "isecret=3", &id]).ok();
    let mine = cluster.run_as_nobody("qstat", &["-f", &id]).ok().stdout;
    assert!(mine.contains("    Resource_List.rsecret = 2\n"), "{mine}");
    assert!(!mine.contains("isecret"), "{mine}");
    let roots = cluster.run("qstat", &["-f", &id]).ok().stdout;
    assert!(roots.contains("    Resource_List.isecret = 3\n"), "{roots}");
}

fn nobody_group() -> String {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(pbs_e2e::NOBODY))
        .ok()
        .flatten()
        .map(|g| g.name)
        .expect("a group for nobody's gid")
}

const UNAUTHORIZED: &str = "qsub: Unauthorized Request \n";

#[test]
fn queue_user_and_group_acls_refuse_submission() {
    let cluster = Cluster::start();
    cluster.allow_root_jobs();
    cluster.qmgr("set queue workq acl_user_enable = True");
    // Enabled with no list: nobody at all may submit, managers included.
    assert_fails(&cluster.run_as_nobody("qsub", &["--", "/bin/true"]), UNAUTHORIZED, 159);
    assert_fails(&cluster.run("qsub", &["--", "/bin/true"]), UNAUTHORIZED, 159);
    cluster.qmgr("set queue workq acl_users = root");
    cluster.qsub(&["--", "/bin/true"]);
    assert_fails(&cluster.run_as_nobody("qsub", &["--", "/bin/true"]), UNAUTHORIZED, 159);
    cluster.qmgr("set queue workq acl_users += nobody");
    submit_as_nobody(&cluster, &["--", "/bin/true"]);
    // A `-` entry refuses; a lone `+` lets everyone else in; entries are kept in
    // OpenPBS's order, so the first that matches is the most specific.
    cluster.qmgr("set queue workq acl_users = \"-nobody@*,+\"");
    assert_eq!(cluster.queue_attr("workq", "acl_users").as_deref(), Some("+,-nobody@*"));
    assert_fails(&cluster.run_as_nobody("qsub", &["--", "/bin/true"]), UNAUTHORIZED, 159);
    cluster.qsub(&["--", "/bin/true"]);
    assert_fails(
        &cluster.run("qmgr", &["-c", "set queue workq acl_users += +"]),
        "qmgr obj=workq svr=default: Duplicate entry in list \nqmgr: Error (15055) returned from server\n",
        207,
    );
    cluster.qmgr("set queue workq acl_user_enable = False");
    submit_as_nobody(&cluster, &["--", "/bin/true"]);

    // Groups: any group of the job's user.
    cluster.qmgr("set queue workq acl_group_enable = True");
    cluster.qmgr("set queue workq acl_groups = root");
    assert_fails(&cluster.run_as_nobody("qsub", &["--", "/bin/true"]), UNAUTHORIZED, 159);
    cluster.qmgr(&format!("set queue workq acl_groups += {}", nobody_group()));
    submit_as_nobody(&cluster, &["--", "/bin/true"]);
}

#[test]
fn queue_host_acl_and_from_route_only() {
    let cluster = Cluster::start();
    cluster.allow_root_jobs();
    // Queue ACLs are the operators' to set; from_route_only the managers'.
    cluster.qmgr("set server operators = nobody@*");
    cluster.run_as_nobody("qmgr", &["-c", "set queue workq acl_host_enable = True"]).ok();
    cluster.run_as_nobody("qmgr", &["-c", "set queue workq acl_hosts = *.invalid"]).ok();
    assert_fails(
        &cluster.run_as_nobody("qmgr", &["-c", "set queue workq from_route_only = True"]),
        "qmgr obj=workq svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n",
        159,
    );
    cluster.qmgr("unset server operators");
    let badhost = "qsub: Access from host not allowed, or unknown host\n";
    assert_fails(&cluster.run_as_nobody("qsub", &["--", "/bin/true"]), badhost, 160);
    assert_fails(&cluster.run("qsub", &["--", "/bin/true"]), badhost, 160);
    cluster.qmgr(&format!("set queue workq acl_hosts += {}", cluster.host));
    submit_as_nobody(&cluster, &["--", "/bin/true"]);
    // Only a routing queue may bring jobs into a from_route_only queue.
    cluster.qmgr("set queue workq from_route_only = True");
    let denied = "qsub: Access to queue is denied\n";
    assert_fails(&cluster.run_as_nobody("qsub", &["--", "/bin/true"]), denied, 174);
    assert_fails(&cluster.run("qsub", &["--", "/bin/true"]), denied, 174);
}

#[test]
fn server_acls_refuse_requests() {
    let cluster = Cluster::start();
    let id = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    // The server's own host is always let in.
    cluster.qmgr("set server acl_host_enable = True");
    submit_as_nobody(&cluster, &["--", "/bin/true"]);
    cluster.qmgr("set server acl_user_enable = True");
    cluster.qmgr("set server acl_users = root");
    assert_fails(&cluster.run_as_nobody("qsub", &["--", "/bin/true"]), UNAUTHORIZED, 159);
    // Every request, not only submissions.
    assert_eq!(cluster.run_as_nobody("qstat", &[&id]).code, 159);
    assert_fails(&cluster.run_as_nobody("qdel", &[&id]), &format!("qdel: Unauthorized Request  {id}\n"), 159);
    // Operators and managers pass whatever the list says.
    cluster.qmgr("set server operators = nobody@*");
    cluster.run_as_nobody("qstat", &[&id]).ok();
    cluster.qmgr("unset server operators");
    cluster.qmgr(&format!("set server acl_users += nobody@{}", cluster.host));
    submit_as_nobody(&cluster, &["--", "/bin/true"]);
    cluster.run_as_nobody("qstat", &[&id]).ok();
}

const JOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn walltime_lowered_by_qalter_reaches_the_mom() {
    let c = Cluster::with_moms(1, 2);
    let shared = c.dir().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let err = shared.join("err.txt");
    let out = shared.join("out.txt");
    let args = ["-S", "/bin/sh", "-l", "walltime=100", "-o", out.to_str().unwrap(), "-e", err.to_str().unwrap()];
    let id = c.run_with_stdin("qsub", &args, "sleep 90\n", true).ok().line().to_string();
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    // The owner may not raise a running job's limit, only lower it.
    assert_fails(
        &c.run_as_nobody("qalter", &["-l", "walltime=200", &id]),
        &format!("qalter: Unauthorized Request  {id}\n"),
        159,
    );
    assert_eq!(c.job_attr(&id, "Resource_List.walltime").as_deref(), Some("00:01:40"));
    c.run_as_nobody("qalter", &["-l", "walltime=2", &id]).ok();
    assert_eq!(c.job_attr(&id, "Resource_List.walltime").as_deref(), Some("00:00:02"));
    // The mom kills it for the new limit, long before the old one or the script's end.
    c.wait_job_state(&id, "F", std::time::Duration::from_secs(30));
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("-29"), "{}", c.logs());
    let errors = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(errors.contains("=>> PBS: job killed: walltime "), "{errors:?}");
    assert!(errors.contains("exceeded limit 2"), "{errors:?}");

    // A manager may raise it: the mom then lets the job run past the old limit.
    let id = c.qsub(&["-l", "walltime=8", "-o", "/dev/null", "-e", "/dev/null", "--", "/bin/sleep", "12"]);
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    c.run("qalter", &["-l", "walltime=60", &id]).ok();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("0"), "{}", c.logs());
}

#[test]
fn invisible_resources_are_left_out_of_object_status_for_users() {
    let cluster = Cluster::start();
    cluster.qmgr("create resource isecret type=long,flag=i");
    cluster.qmgr("set queue workq resources_default.isecret = 5");
    cluster.qmgr("set server resources_max.isecret = 9");
    let queue = cluster.run_as_nobody("qstat", &["-Qf", "workq"]).ok().stdout;
    assert!(!queue.contains("isecret"), "{queue}");
    let server = cluster.run_as_nobody("qstat", &["-Bf"]).ok().stdout;
    assert!(!server.contains("isecret"), "{server}");
    assert!(cluster.run("qstat", &["-Qf", "workq"]).ok().stdout.contains("    resources_default.isecret = 5\n"));
    assert!(cluster.run("qstat", &["-Bf"]).ok().stdout.contains("    resources_max.isecret = 9\n"));
    // The default reaches the job, which its owner sees without it.
    let id = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    assert!(!cluster.run_as_nobody("qstat", &["-f", &id]).ok().stdout.contains("isecret"));
    assert_eq!(cluster.job_attr(&id, "Resource_List.isecret").as_deref(), Some("5"));
}

#[test]
fn qselect_cannot_probe_what_a_user_may_not_read() {
    let cluster = Cluster::start();
    cluster.qmgr("create resource isecret type=long,flag=i");
    cluster.qmgr("create resource rsecret type=long,flag=r");
    let id = submit_as_nobody(&cluster, &["--", "/bin/true"]);
    cluster.run("qalter", &["-l", "isecret=5", "-l", "rsecret=6", &id]).ok();
    assert_fails(
        &cluster.run_as_nobody("qselect", &["-l", "isecret.eq.5"]),
        "qselect: Cannot set attribute, read only or insufficient permission  Resource_List.isecret\n",
        155,
    );
    // A read-only resource may be selected on; root selects on both.
    assert_eq!(cluster.run_as_nobody("qselect", &["-l", "rsecret.eq.6"]).ok().stdout, format!("{id}\n"));
    assert_eq!(cluster.run("qselect", &["-l", "isecret.eq.5"]).ok().stdout, format!("{id}\n"));
}

#[test]
fn a_limit_lowered_while_the_mom_is_down_reaches_it_when_it_returns() {
    let mut c = Cluster::with_moms(1, 1);
    let id = c.qsub(&["-l", "walltime=100", "-o", "/dev/null", "-e", "/dev/null", "--", "/bin/sleep", "90"]);
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    pbs_e2e::wait_until("the job's session", JOB_TIMEOUT, || c.job_attr(&id, "session_id").is_some());
    c.kill_mom("n1");
    c.wait_node_state("n1", "down");
    c.run("qalter", &["-l", "walltime=3", &id]).ok();
    c.start_mom("n1");
    c.wait_job_state(&id, "F", std::time::Duration::from_secs(30));
    assert_eq!(c.job_attr(&id, "Exit_status").as_deref(), Some("-29"), "{}", c.logs());
}
