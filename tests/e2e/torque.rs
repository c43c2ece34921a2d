//! Workflows from other batch systems: Torque-style `nodes=` requests converted to
//! select and place as OpenPBS converts them, `qalter -r` of a running job, and SIGHUP to
//! each daemon while a job runs.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pbs_e2e::{Cluster, alive, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

fn seq(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

fn submit(c: &Cluster, args: &[&str], script: &str) -> String {
    c.run_with_stdin("qsub", args, script, false).ok().line().to_string()
}

fn attr(c: &Cluster, id: &str, name: &str) -> String {
    c.job_attr(id, name).unwrap_or_default()
}

/// A script line that waits until the test creates `go`.
fn wait_for(go: &Path) -> String {
    format!("while [ ! -e {} ]; do sleep 0.1; done\n", go.display())
}

#[track_caller]
fn logged(what: &str, text: &str, log: impl Fn() -> String) {
    wait_until(&format!("`{text}` in the {what} log"), JOB_TIMEOUT, || log().contains(text));
}

fn hangup(pid: Option<u32>) {
    let pid = i32::try_from(pid.expect("the daemon runs")).expect("a pid");
    kill(Pid::from_raw(pid), Signal::SIGHUP).expect("SIGHUP");
}

#[test]
fn nodes_with_ppn_gives_the_job_its_cpus_and_a_nodefile_line_per_task() {
    let c = Cluster::with_moms(1, 2);
    let go = c.dir().join("go");
    let script = format!("echo \"$NCPUS $(wc -l < $PBS_NODEFILE) $(sort -u $PBS_NODEFILE)\"\n{}", wait_for(&go));
    let id = submit(&c, &["-N", "ppn", "-l", "nodes=1:ppn=2"], &script);
    // cvt_nodespec_to_select and set_select_and_place; nodes is kept.
    assert_eq!(attr(&c, &id, "Resource_List.select"), "1:ncpus=2:mpiprocs=2");
    assert_eq!(attr(&c, &id, "Resource_List.place"), "scatter");
    assert_eq!(attr(&c, &id, "Resource_List.nodes"), "1:ppn=2");
    assert_eq!(attr(&c, &id, "Resource_List.ncpus"), "2");
    assert_eq!(attr(&c, &id, "Resource_List.nodect"), "1");
    assert_eq!(attr(&c, &id, "Resource_List.mpiprocs"), "2");
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    // It holds both cpus of the node: nothing else fits beside it.
    assert_eq!(c.node_attr("n1", "resources_assigned.ncpus").as_deref(), Some("2"));
    c.wait_node_state("n1", "job-busy");
    std::fs::write(&go, "").unwrap();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &id, "Exit_status"), "0", "{}", c.logs());
    let out = std::fs::read_to_string(c.dir().join(format!("ppn.o{}", seq(&id)))).unwrap();
    assert_eq!(out, "2 2 n1\n", "{}", c.logs());
}

#[test]
fn nodes_across_two_moms_by_count_and_by_name() {
    let c = Cluster::with_moms(2, 1);
    let nodefile_of = |name: &str, id: &str| {
        c.wait_job_state(id, "F", JOB_TIMEOUT);
        assert_eq!(attr(&c, id, "Exit_status"), "0", "{}", c.logs());
        let out = std::fs::read_to_string(c.dir().join(format!("{name}.o{}", seq(id)))).unwrap();
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        lines.sort_unstable();
        lines
    };
    let two = submit(&c, &["-N", "two", "-l", "nodes=2:ppn=1"], "cat $PBS_NODEFILE\n");
    assert_eq!(attr(&c, &two, "Resource_List.select"), "2:ncpus=1");
    assert_eq!(attr(&c, &two, "Resource_List.place"), "scatter");
    assert_eq!(attr(&c, &two, "Resource_List.nodect"), "2");
    assert_eq!(attr(&c, &two, "Resource_List.ncpus"), "2");
    assert_eq!(nodefile_of("two", &two), ["n1", "n2"]);

    // A property naming a node asks for that host.
    let named = submit(&c, &["-N", "named", "-l", "nodes=n1+n2"], "cat $PBS_NODEFILE\n");
    assert_eq!(attr(&c, &named, "Resource_List.select"), "1:ncpus=1:host=n1+1:ncpus=1:host=n2");
    assert_eq!(nodefile_of("named", &named), ["n1", "n2"]);
}

#[test]
fn nodes_specs_openpbs_refuses_are_refused_with_its_messages() {
    let c = Cluster::start();
    c.allow_root_jobs();
    let refused = [
        (vec!["-l", "nodes=0"], "qsub: node(s) specification error\n", 241),
        (vec!["-l", "nodes=2:ppn=0"], "qsub: node(s) specification error\n", 241),
        (vec!["-l", "nodes=2:mem=1gb"], "qsub: node(s) specification error\n", 241),
        (vec!["-l", "nodes=-1"], "qsub: Illegal attribute or resource value Resource_List.nodes\n", 166),
        (vec!["-l", "nodes=2", "-l", "select=1:ncpus=1"], "qsub: Cannot be used with select or place: nodes\n", 6),
        (vec!["-l", "nodes=2", "-l", "place=pack"], "qsub: Cannot be used with select or place: nodes\n", 6),
        (vec!["-l", "nodes=2", "-l", "ncpus=3"], "qsub: Illegal attribute or resource value\n", 166),
    ];
    for (args, stderr, code) in refused {
        let out = c.run_with_stdin("qsub", &args, "true\n", false);
        assert_eq!((out.stderr.as_str(), out.code), (stderr, code), "qsub {args:?}");
    }
    // A given ncpus is shared between the tasks.
    let shared = submit(&c, &["-h", "-l", "nodes=2", "-l", "ncpus=4"], "true\n");
    assert_eq!(attr(&c, &shared, "Resource_List.select"), "2:ncpus=2");

    // qalter makes the select again from a new spec, and refuses a bad one.
    let id = submit(&c, &["-h", "-l", "nodes=1"], "true\n");
    c.run("qalter", &["-l", "nodes=2:ppn=2", &id]).ok();
    assert_eq!(attr(&c, &id, "Resource_List.select"), "2:ncpus=2:mpiprocs=2");
    assert_eq!(attr(&c, &id, "Resource_List.ncpus"), "4");
    assert_eq!(attr(&c, &id, "Resource_List.nodect"), "2");
    let out = c.run("qalter", &["-l", "nodes=0", &id]);
    assert_eq!((out.stderr, out.code), (format!("qalter: node(s) specification error {id}\n"), 241));
    assert_eq!(attr(&c, &id, "Resource_List.nodes"), "2:ppn=2");
}

#[test]
fn qalter_r_changes_a_running_jobs_rerunability() {
    let c = Cluster::with_moms(1, 1);
    let shared = c.shared_dir();
    let go = shared.join("go");
    let out = shared.join("out");
    let args = ["-S", "/bin/sh", "-r", "y", "-o", out.to_str().unwrap(), "-j", "oe"];
    let id = c.run_with_stdin("qsub", &args, &wait_for(&go), true).ok().line().to_string();
    c.wait_job_state(&id, "R", JOB_TIMEOUT);
    // qalter_r_n_running.txt and qalter_r_y_running.txt: the owner's qalter is accepted.
    let alter = |value: &str| c.run_as_nobody("qalter", &["-r", value, &id]);
    let answer = alter("n");
    assert_eq!((answer.stderr.as_str(), answer.code), ("", 0));
    assert_eq!((attr(&c, &id, "job_state"), attr(&c, &id, "Rerunable")), ("R".into(), "False".into()));
    let answer = alter("y");
    assert_eq!((answer.stderr.as_str(), answer.code), ("", 0));
    assert_eq!((attr(&c, &id, "job_state"), attr(&c, &id, "Rerunable")), ("R".into(), "True".into()));
    // qalter_r_bad.txt
    let answer = alter("x");
    assert!(answer.stderr.starts_with("qalter: illegal -r value\nusage: qalter"), "{answer:?}");
    assert_eq!(answer.code, 2);
    std::fs::write(&go, "").unwrap();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    assert_eq!(attr(&c, &id, "Exit_status"), "0", "{}", c.logs());
}

#[test]
fn sighup_leaves_every_daemon_and_the_running_job_alone() {
    let c = Cluster::with_moms(1, 1);
    let go = c.dir().join("go");
    let id = submit(&c, &["-N", "hup"], &wait_for(&go));
    c.wait_job_state(&id, "R", JOB_TIMEOUT);

    // The mom reads pbs.conf again: new jobs get their TMPDIR under the new base.
    let conf_path = c.mom_conf_path("n1");
    let conf = std::fs::read_to_string(&conf_path).unwrap();
    let new_base = c.dir().join("tmp-after-hup");
    std::fs::create_dir_all(&new_base).unwrap();
    std::fs::set_permissions(&new_base, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let conf: String = conf
        .lines()
        .map(|l| {
            if l.starts_with("PBS_TMPDIR=") { format!("PBS_TMPDIR={}\n", new_base.display()) } else { format!("{l}\n") }
        })
        .collect();
    std::fs::write(&conf_path, conf).unwrap();
    let mom = c.mom_pid("n1");
    hangup(mom);
    // mom_hup_log.txt
    for line in [
        ";0002;pbs_mom;n/a;catch_hup;caught signal 1",
        ";0002;pbs_mom;n/a;process_hup;reset",
        ";0002;pbs_mom;Svr;Log;Log closed",
        ";0002;pbs_mom;Svr;Log;Log opened",
        "pbs.conf read again",
    ] {
        logged("mom", line, || c.mom_stderr("n1"));
    }
    assert!(mom.is_some_and(alive), "{}", c.logs());

    let server = c.server_pid();
    hangup(server);
    logged("server", ";Svr;Log;Log opened", || c.server_stderr());
    assert!(server.is_some_and(alive), "{}", c.logs());

    let sched = c.sched_pid();
    hangup(sched);
    logged("scheduler", ";Svr;restart;restart on signal 1", || c.sched_stderr());
    logged("scheduler", "Reloaded sched_config", || c.sched_stderr());
    assert!(sched.is_some_and(alive), "{}", c.logs());

    // mom_hup_pbsnodes.txt and mom_hup_ps.txt: the node stayed up, the job runs on.
    assert_eq!(c.node_attr("n1", "state").as_deref(), Some("job-busy"));
    assert_eq!(attr(&c, &id, "job_state"), "R");
    std::fs::write(&go, "").unwrap();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    // mom_hup_job_finished.txt
    assert_eq!(attr(&c, &id, "Exit_status"), "0", "{}", c.logs());
    assert!(attr(&c, &id, "comment").ends_with(" and finished"), "{}", attr(&c, &id, "comment"));

    // The scheduler still schedules, and the mom uses what it read.
    let after = submit(&c, &["-N", "after"], "echo $TMPDIR\n");
    c.wait_job_state(&after, "F", JOB_TIMEOUT);
    let out = std::fs::read_to_string(c.dir().join(format!("after.o{}", seq(&after)))).unwrap();
    assert!(out.starts_with(&new_base.display().to_string()), "{out:?}");
    assert!([mom, server, sched].into_iter().all(|pid| pid.is_some_and(alive)));
}
