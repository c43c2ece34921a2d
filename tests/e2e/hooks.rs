//! Server hooks on real daemons: root manages them with qmgr exactly as OpenPBS prints it,
//! they survive a restart, and queuejob and modifyjob hooks change or refuse what ordinary
//! users submit and alter, in warm interpreters that one bad hook cannot take down.

use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, wait_until};

const JOB_TIMEOUT: Duration = Duration::from_secs(60);

/// The seed's (000) first example, verbatim.
const SOFT_HOOK: &str = "import pbs\n\
e = pbs.event()\n\
j = e.job\n\
j.Resource_List[\"soft_walltime\"] = pbs.duration(\"300\")\n\
pbs.logmsg(pbs.EVENT_DEBUG, \"Setting soft_walltime: %s\" % j.Resource_List[\"soft_walltime\"])\n";

/// Writes `body` where root's qmgr can read it and imports it as hook `name` for `event`.
fn install_hook(c: &Cluster, name: &str, event: &str, body: &str) {
    let file = c.dir().join(format!("{name}.py"));
    std::fs::write(&file, body).expect("write hook");
    c.qmgr(&format!("create hook {name} event={event}"));
    c.qmgr(&format!("import hook {name} application/x-python default {}", file.display()));
}

#[test]
fn root_manages_hooks_as_openpbs_prints_them_and_they_survive_a_restart() {
    let mut c = Cluster::start();
    install_hook(&c, "soft", "queuejob", SOFT_HOOK);
    let list = c.run("qmgr", &["-c", "list hook soft"]).ok();
    assert_eq!(
        list.stdout,
        "Hook soft\n    type = site\n    enabled = true\n    event = queuejob\n    user = pbsadmin\n    \
         alarm = 30\n    order = 1\n    debug = false\n    fail_action = none\n\n"
    );
    let printed = c.run("qmgr", &["-c", "print hook soft"]).ok();
    // What OpenPBS 23.06 printed for the same hook (hooks_print_hook.txt).
    assert_eq!(
        printed.stdout,
        "#\n# Create hooks and set their properties.\n#\n#\n# Create and define hook soft\n#\ncreate hook soft\n\
         set hook soft type = site\nset hook soft enabled = true\nset hook soft event = queuejob\n\
         set hook soft user = pbsadmin\nset hook soft alarm = 30\nset hook soft order = 1\n\
         set hook soft debug = false\nset hook soft fail_action = none\n\
         import hook soft application/x-python base64 -\n\
         aW1wb3J0IHBicwplID0gcGJzLmV2ZW50KCkKaiA9IGUuam9iCmouUmVzb3VyY2VfTGlzdFsic29mdF93YWxsdGltZSJdID0gcGJzLmR1cmF0aW9uKCIzMDAiKQpwYnMubG9nbXNnKHBicy5FVkVOVF9ERUJVRywgIlNldHRpbmcgc29mdF93YWxsdGltZTogJXMiICUgai5SZXNvdXJjZV9MaXN0WyJzb2Z0X3dhbGx0aW1lIl0pCg==\n\
         \nimport hook soft application/x-config base64 -\n\n"
    );
    let exported = c.run("qmgr", &["-c", "export hook soft application/x-python default"]).ok();
    assert_eq!(exported.stdout, SOFT_HOOK);
    logged(&c, "Hook;soft;created at request of root@");
    logged(&c, "Hook;soft;mgr_hook_import at request of root@");
    logged(&c, "Hook;soft;mgr_hook_export at request of root@");

    // An ordinary user may not even look (hooks_user_create.txt).
    let refused = c.run_as_nobody("qmgr", &["-c", "create hook x"]);
    assert_eq!(refused.code, 32, "{refused:?}");
    assert_eq!(
        refused.stderr,
        format!(
            "qmgr obj=x svr=default: nobody@{0} is unauthorized to access hooks data from server {0}\n\
             qmgr: hook error returned from server\n",
            c.host
        )
    );
    let file = c.dir().join("soft.py");
    let import =
        c.run_as_nobody("qmgr", &["-c", &format!("import hook soft application/x-python default {}", file.display())]);
    assert_eq!(import.code, 32, "{import:?}");
    assert!(import.stderr.contains("is unauthorized to access hooks data"), "{import:?}");
    assert_eq!(c.run_as_nobody("qmgr", &["-c", "list hook"]).code, 1);

    // Bad values get OpenPBS's refusal and change nothing.
    let bad = c.run("qmgr", &["-c", "set hook soft event = bogus"]);
    assert_eq!(bad.code, 32, "{bad:?}");
    assert!(bad.stderr.contains("invalid argument (bogus) to event."), "{bad:?}");
    let bad = c.run("qmgr", &["-c", "set hook soft alarm = 0"]);
    assert!(bad.stderr.contains("alarm value '0' of a hook must be > 0"), "{bad:?}");
    let exists = c.run("qmgr", &["-c", "create hook soft"]);
    assert!(exists.stderr.contains("hook name 'soft' already registered, try another name"), "{exists:?}");

    c.terminate();
    c.start_server();
    let exported = c.run("qmgr", &["-c", "export hook soft application/x-python default"]).ok();
    assert_eq!(exported.stdout, SOFT_HOOK);
    let id = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    assert_eq!(c.job_attr(&id, "Resource_List.soft_walltime").as_deref(), Some("00:05:00"));

    c.qmgr("delete hook soft");
    let gone = c.run("qmgr", &["-c", "export hook soft application/x-python default"]);
    assert!(gone.stderr.contains("soft does not exist!"), "{gone:?}");
    logged(&c, "Hook;soft;deleted at request of root@");
}

/// Waits for `line` in the server's log (its writer is a thread of its own).
#[track_caller]
fn logged(c: &Cluster, line: &str) {
    wait_until(&format!("`{line}` in the server log"), Duration::from_secs(10), || c.server_stderr().contains(line));
}

#[test]
fn the_seeds_queuejob_hooks_set_soft_walltime_on_ordinary_users_jobs() {
    let c = Cluster::start();
    install_hook(&c, "soft", "queuejob", SOFT_HOOK);
    let id = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    assert_eq!(c.job_attr(&id, "Resource_List.soft_walltime").as_deref(), Some("00:05:00"));
    logged(&c, &format!(";0080;Server@{0};Hook;Server@{0};Setting soft_walltime: 300", c.host));
    c.qmgr("delete hook soft");

    // The custom resource pair (the seed's last example), as an ordinary user.
    c.qmgr("create resource set_soft_walltime type=long");
    let pair = "import pbs\ne = pbs.event()\nj = e.job\n\n\
                j.Resource_List[\"soft_walltime\"] = pbs.duration(j.Resource_List[\"set_soft_walltime\"])\n";
    install_hook(&c, "setsoft", "queuejob", pair);
    let id = c
        .run_as_nobody("qsub", &["-h", "-l", "set_soft_walltime=3600", "-l", "select=1:ncpus=1", "--", "/bin/true"])
        .ok()
        .line()
        .to_string();
    assert_eq!(c.job_attr(&id, "Resource_List.set_soft_walltime").as_deref(), Some("3600"));
    assert_eq!(c.job_attr(&id, "Resource_List.soft_walltime").as_deref(), Some("01:00:00"));
    // The user still may not set it directly: only the hook's change is a manager's.
    let direct = c.run_as_nobody("qsub", &["-h", "-l", "soft_walltime=100", "--", "/bin/true"]);
    assert_ne!(direct.code, 0, "{direct:?}");
    // The hook's value still goes through the request's checks: above walltime is refused.
    let over =
        c.run_as_nobody("qsub", &["-h", "-l", "set_soft_walltime=3600", "-l", "walltime=00:10:00", "--", "/bin/true"]);
    assert_ne!(over.code, 0, "{over:?}");
}

#[test]
fn a_queuejob_hook_sets_max_run_subjobs_and_a_modifyjob_hook_clamps_it() {
    let c = Cluster::with_moms(1, 8);
    let mrs = "import pbs\ne = pbs.event()\nj = e.job\n\
               j.max_run_subjobs = 3\n\
               pbs.logmsg(pbs.LOG_DEBUG, \"max_run_subjobs set to 3\")\n";
    install_hook(&c, "mrs", "queuejob", mrs);
    // hooks_qsub_plain_mrs_hook.txt: the hook's value gets the server's own check.
    let plain = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]);
    assert_eq!((plain.code, plain.stderr.as_str()), (127, "qsub: Attribute has to be set on an array job\n"));
    let id = c.run_with_stdin("qsub", &["-J", "1-8"], "sleep 30\n", false).ok().line().to_string();
    assert_eq!(c.job_attr(&id, "max_run_subjobs").as_deref(), Some("3"));
    let running = || {
        let Ok(reply) = c.client().status_jobs(vec![id.clone()], vec![], vec!["job_state".into()], true, true) else {
            return 0;
        };
        reply.objects.iter().filter(|o| o.name.contains("[") && o.get("job_state") == Some("R")).count()
    };
    wait_until("three subjobs running", JOB_TIMEOUT, || running() == 3);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(running(), 3, "exactly three run");
    c.qmgr("delete hook mrs");

    let clamp = "import pbs\ne = pbs.event()\n\
                 if e.job.max_run_subjobs is not None and e.job.max_run_subjobs > 5:\n\
                 \x20   e.job.max_run_subjobs = 5\n";
    install_hook(&c, "clamp", "modifyjob", clamp);
    c.run("qalter", &["-W", "max_run_subjobs=10", &id]).ok();
    assert_eq!(c.job_attr(&id, "max_run_subjobs").as_deref(), Some("5"));
    wait_until("five subjobs running", JOB_TIMEOUT, || running() == 5);
    c.run("qalter", &["-W", "max_run_subjobs=4", &id]).ok();
    assert_eq!(c.job_attr(&id, "max_run_subjobs").as_deref(), Some("4"));
    c.run("qdel", &[&id]).ok();
}

#[test]
fn refusing_raising_looping_and_killed_hooks_fail_only_their_request() {
    let c = Cluster::start();
    let reject = "import pbs\ne = pbs.event()\n\
                  if e.job.Job_Name == \"bad\":\n\
                  \x20   e.reject(\"jobs named bad are not welcome\")\n";
    install_hook(&c, "reject", "queuejob", reject);
    let refused = c.run_as_nobody("qsub", &["-h", "-N", "bad", "--", "/bin/true"]);
    assert_eq!((refused.code, refused.stderr.as_str()), (32, "qsub: jobs named bad are not welcome\n"));
    c.run_as_nobody("qsub", &["-h", "-N", "good", "--", "/bin/true"]).ok();
    c.qmgr("delete hook reject");

    install_hook(&c, "raise", "queuejob", "import pbs\nraise ValueError('boom')\n");
    let raised = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]);
    assert_eq!(
        (raised.code, raised.stderr.as_str()),
        (32, "qsub: request rejected as filter hook 'raise' encountered an exception. Please inform Admin\n")
    );
    logged(&c, "Hook;raise;queuejob hook 'raise' encountered an exception, request rejected");
    c.qmgr("delete hook raise");

    // A hook that loops: its alarm (3 s) ends it, and the server serves others meanwhile.
    install_hook(&c, "loop", "queuejob", "import pbs\nwhile True:\n    pass\n");
    c.qmgr("set hook loop alarm = 3");
    let started = Instant::now();
    let looping = std::thread::scope(|scope| {
        let submit = scope.spawn(|| c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]));
        std::thread::sleep(Duration::from_millis(500));
        let quick = Instant::now();
        c.run("qstat", &["-B"]).ok();
        c.run_as_nobody("qselect", &[]).ok();
        assert!(quick.elapsed() < Duration::from_secs(1), "others waited {:?}", quick.elapsed());
        submit.join().expect("qsub thread")
    });
    let took = started.elapsed();
    assert_eq!(
        (looping.code, looping.stderr.as_str()),
        (32, "qsub: request rejected as filter hook 'loop' got an alarm call. Please inform Admin\n")
    );
    assert!(took >= Duration::from_millis(2900) && took < Duration::from_secs(8), "took {took:?}");
    logged(&c, "Hook;loop;alarm call while running queuejob hook 'loop', request rejected");
    c.qmgr("delete hook loop");

    // An interpreter killed mid-event fails that event only; the next one gets a new one.
    install_hook(&c, "slow", "queuejob", "import pbs, time\ntime.sleep(3)\n");
    let killed = std::thread::scope(|scope| {
        let submit = scope.spawn(|| c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]));
        let mut pids = Vec::new();
        wait_until("an interpreter in the hook", JOB_TIMEOUT, || {
            pids = interpreters(&c.home());
            !pids.is_empty()
        });
        std::thread::sleep(Duration::from_millis(300));
        for pid in &pids {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), nix::sys::signal::Signal::SIGKILL);
        }
        submit.join().expect("qsub thread")
    });
    assert_eq!(
        (killed.code, killed.stderr.as_str()),
        (32, "qsub: request rejected as filter hook 'slow' encountered an exception. Please inform Admin\n")
    );
    c.qmgr("set hook slow enabled = false");
    c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok();
    c.qmgr("delete hook slow");
    install_hook(&c, "soft", "queuejob", SOFT_HOOK);
    let id = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    assert_eq!(c.job_attr(&id, "Resource_List.soft_walltime").as_deref(), Some("00:05:00"));
}

/// The pids of this cluster's hook interpreters (their command line names the runner
/// under its PBS_HOME; other tests' clusters run theirs meanwhile).
fn interpreters(home: &std::path::Path) -> Vec<i32> {
    let runner = home.join("server_priv/hooks/lib/pbs_hook_runner.py").display().to_string();
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return pids };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&runner) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn a_runjob_hook_refuses_a_run_and_the_job_stays_queued_with_its_message() {
    let c = Cluster::with_moms(1, 2);
    let gate = "import pbs\ne = pbs.event()\n\
                if e.job.Job_Name == \"norun\":\n\
                \x20   e.reject(\"not now\")\n";
    install_hook(&c, "gate", "runjob", gate);
    let refused = c.run_with_stdin("qsub", &["-N", "norun"], "true\n", false).ok().line().to_string();
    let allowed = c.run_with_stdin("qsub", &["-N", "fine"], "true\n", false).ok().line().to_string();
    c.wait_job_state(&allowed, "F", JOB_TIMEOUT);
    wait_until("the refusal as the job's comment", JOB_TIMEOUT, || {
        c.job_attr(&refused, "comment").as_deref() == Some("Not Running: PBS Error: not now")
    });
    assert_eq!(c.job_attr(&refused, "job_state").as_deref(), Some("Q"));
    logged(&c, "Hook;gate;runjob request rejected by 'gate'");
    // qrun hears the hook (through the scheduler, and with -H).
    let qrun = c.run("qrun", &[&refused]);
    assert_eq!((qrun.code, qrun.stderr.as_str()), (2, format!("qrun: not now {refused}\n").as_str()), "{qrun:?}");
    let qrun = c.run("qrun", &["-H", "n1", &refused]);
    assert_eq!((qrun.code, qrun.stderr.as_str()), (2, format!("qrun: not now {refused}\n").as_str()), "{qrun:?}");
    assert_eq!(c.job_attr(&refused, "job_state").as_deref(), Some("Q"));
    // Disabled, the hook lets it run (qmgr starts a cycle).
    c.qmgr("set hook gate enabled = false");
    c.wait_job_state(&refused, "F", JOB_TIMEOUT);
}

/// What a runjob hook sets is made before the job runs, both for the scheduler's runs
/// and for `qrun -H`, as OpenPBS applies it.
#[test]
fn a_runjob_hooks_change_is_made_before_the_run_also_under_qrun_h() {
    let c = Cluster::with_moms(1, 2);
    let set = "import pbs\ne = pbs.event()\n\
               e.job.Resource_List[\"walltime\"] = pbs.duration(\"00:10:00\")\n";
    install_hook(&c, "longer", "runjob", set);
    let by_sched = c.run_with_stdin("qsub", &["-l", "walltime=00:01:00"], "sleep 30\n", false).ok().line().to_string();
    c.wait_job_state(&by_sched, "R", JOB_TIMEOUT);
    assert_eq!(c.job_attr(&by_sched, "Resource_List.walltime").as_deref(), Some("00:10:00"));
    c.qmgr("set server scheduling = false");
    let by_hand = c.run_with_stdin("qsub", &["-l", "walltime=00:01:00"], "sleep 30\n", false).ok().line().to_string();
    let out = c.run("qrun", &["-H", "n1", &by_hand]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(c.job_attr(&by_hand, "job_state").as_deref(), Some("R"));
    assert_eq!(c.job_attr(&by_hand, "Resource_List.walltime").as_deref(), Some("00:10:00"));
    c.run("qdel", &[&by_sched, &by_hand]).ok();
}

#[test]
fn a_periodic_hook_reads_and_alters_jobs_every_freq_seconds() {
    let c = Cluster::start();
    // Every job through jobs(), one through job(id), each changed.
    let periodic = "import pbs\n\
                    ticks = [j.id for j in pbs.server().jobs() if j.Job_Name == \"tick\"]\n\
                    for jid in ticks:\n\
                    \x20   pbs.server().job(jid).comment = \"seen by periodic\"\n\
                    for j in pbs.server().jobs():\n\
                    \x20   if j.id in ticks:\n\
                    \x20       j.Priority = 7\n";
    let tick = c.run_as_nobody("qsub", &["-h", "-N", "tick", "--", "/bin/true"]).ok().line().to_string();
    let other = c.run_as_nobody("qsub", &["-h", "-N", "other", "--", "/bin/true"]).ok().line().to_string();
    install_hook(&c, "every", "periodic", periodic);
    c.qmgr("set hook every freq = 1");
    wait_until("the periodic hook's change", JOB_TIMEOUT, || {
        c.job_attr(&tick, "comment").as_deref() == Some("seen by periodic")
    });
    assert_eq!(c.job_attr(&tick, "Priority").as_deref(), Some("7"));
    assert_eq!(c.job_attr(&other, "comment"), None);
    // It keeps running: a change made meanwhile is made again.
    c.run("qalter", &["-p", "1", &tick]).ok();
    wait_until("the periodic hook again", JOB_TIMEOUT, || c.job_attr(&tick, "Priority").as_deref() == Some("7"));
}

#[test]
fn hooks_read_the_server_and_its_queues() {
    let c = Cluster::start();
    c.qmgr("set queue workq resources_max.ncpus = 8");
    let reader = "import pbs\ne = pbs.event()\ns = pbs.server()\n\
                  q = s.queue(s.default_queue)\n\
                  e.job.comment = \"%s %s %s %s\" % (s.default_queue, q.queue_type, q.resources_max[\"ncpus\"], s.queue(\"nosuch\"))\n";
    install_hook(&c, "reader", "queuejob", reader);
    let id = c.run_as_nobody("qsub", &["-h", "--", "/bin/true"]).ok().line().to_string();
    assert_eq!(c.job_attr(&id, "comment").as_deref(), Some("workq Execution 8 None"));
}
