//! The pool's interpreters per owner, on real `python3` processes: a `user=pbsuser` event
//! runs in an interpreter started as that owner (uid, gid, supplementary groups,
//! environment, working directory), never in root's or another user's, an owner's
//! interpreter runs that one event and is gone with what it started (root's are kept
//! warm within the pool's bound), and an owner's interpreter reads the installed module
//! but cannot change it. Needs root (it changes uids); skipped otherwise.

// A test stops loudly at what it did not expect.
#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use pbs_hooks::{Event, Owner, Pool};

/// What the hook reports, one `key=value` a line of its log.
const REPORT: &str = r#"import os, pbs
lib = os.path.dirname(pbs.__file__)
try:
    open(os.path.join(lib, "__init__.py"), "a").close()
    writable = "yes"
except OSError:
    writable = "no"
pbs.logmsg(pbs.LOG_DEBUG, "uid=%d" % os.getuid())
pbs.logmsg(pbs.LOG_DEBUG, "euid=%d" % os.geteuid())
pbs.logmsg(pbs.LOG_DEBUG, "gid=%d" % os.getgid())
pbs.logmsg(pbs.LOG_DEBUG, "groups=%s" % ",".join(str(g) for g in sorted(os.getgroups())))
pbs.logmsg(pbs.LOG_DEBUG, "pid=%d" % os.getpid())
pbs.logmsg(pbs.LOG_DEBUG, "cwd=%s" % os.getcwd())
pbs.logmsg(pbs.LOG_DEBUG, "HOME=%s" % os.environ.get("HOME", ""))
pbs.logmsg(pbs.LOG_DEBUG, "USER=%s" % os.environ.get("USER", ""))
pbs.logmsg(pbs.LOG_DEBUG, "LOGNAME=%s" % os.environ.get("LOGNAME", ""))
pbs.logmsg(pbs.LOG_DEBUG, "writable=%s" % writable)
"#;

fn is_root() -> bool {
    if system_python().is_none() {
        eprintln!("no python3 every user may run");
        return false;
    }
    nix::unistd::geteuid().is_root()
}

/// The module installed where any user can reach it (a temporary directory is 0700).
fn installed() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let lib = dir.path().join("lib");
    pbs_hooks::install(&lib).expect("install");
    (dir, lib)
}

/// A Python any user may run (`python3` on root's `PATH` may be under `/root`), as
/// `PBS_PYTHON` has to be where `user=pbsuser` hooks run.
fn system_python() -> Option<PathBuf> {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

fn pool_of(lib: &Path, size: usize) -> Pool {
    let pool = Pool::new(pbs_hooks::pool::runner_in(lib), system_python(), size, "test");
    pool.set_defs(1, &pbs_hooks::definitions("s", &pbs_core::resource::ResourceRegistry::new()));
    pool
}

fn event() -> Event {
    Event {
        id: 0,
        hook: "report".into(),
        event_type: "execjob_epilogue",
        script: REPORT.into(),
        alarm: 20,
        debug: false,
        requestor: "pbs_mom".into(),
        requestor_host: "h".into(),
        job: Some(pbs_hooks::JobData { id: Some("1.s".into()), attrs: BTreeMap::new() }),
        job_o: None,
        jobs: None,
        vnodes: Some(BTreeMap::new()),
    }
}

async fn report(pool: &Pool, owner: Option<&Owner>) -> BTreeMap<String, String> {
    let answer = pool.run_as(owner, event()).await.expect("an answer");
    assert_eq!(answer.exception, None, "{answer:?}");
    answer
        .log
        .iter()
        .filter_map(|entry| entry.msg.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

fn nobody() -> Owner {
    Owner { uid: 65534, gid: 65534, name: "nobody".into(), home: "/nonexistent".into() }
}

/// An owner with no password entry: its groups are its gid alone.
fn stranger(uid: u32) -> Owner {
    Owner { uid, gid: uid, name: format!("pbs_hooks_test_{uid}"), home: "/".into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_event_runs_only_in_an_interpreter_started_as_that_user() {
    if !is_root() {
        eprintln!("skipped: needs root to change uids");
        return;
    }
    let (_dir, lib) = installed();
    let pool = pool_of(&lib, 4);

    let root = report(&pool, None).await;
    assert_eq!((root["uid"].as_str(), root["writable"].as_str()), ("0", "yes"));

    let user = report(&pool, Some(&nobody())).await;
    assert_eq!(user["uid"], "65534");
    assert_eq!(user["euid"], "65534");
    assert_eq!(user["gid"], "65534");
    assert_eq!(user["groups"], "65534", "root's groups are dropped, the owner's taken");
    assert_eq!(user["HOME"], "/nonexistent");
    assert_eq!(user["USER"], "nobody");
    assert_eq!(user["LOGNAME"], "nobody");
    assert_eq!(user["cwd"], "/", "a home it cannot enter gives /");
    assert_eq!(user["writable"], "no", "the module is root's to change");
    assert_ne!(user["pid"], root["pid"], "root's idle interpreter never gets a user's event");

    // Root gets back its own interpreter, warm; an owner never does: each of its events
    // has an interpreter of its own.
    let root_again = report(&pool, None).await;
    assert_eq!((root_again["uid"].as_str(), root_again["pid"].as_str()), ("0", root["pid"].as_str()));
    let user_again = report(&pool, Some(&nobody())).await;
    assert_eq!(user_again["uid"], "65534");
    assert_ne!(user_again["pid"], user["pid"], "an owner's interpreter is never reused");

    // Another user never gets nobody's, nor root's.
    let other = report(&pool, Some(&stranger(4242))).await;
    assert_eq!((other["uid"].as_str(), other["groups"].as_str(), other["cwd"].as_str()), ("4242", "4242", "/"));
    assert!(other["pid"] != user["pid"] && other["pid"] != root["pid"]);
    // The same uid with another group is another identity.
    let regrouped = report(&pool, Some(&Owner { gid: 4343, ..stranger(4242) })).await;
    assert_eq!(regrouped["gid"], "4343");
    assert_ne!(regrouped["pid"], other["pid"]);
    assert_eq!(pool.idle_counts(), (1, 0), "only root's is kept");
}

/// A hook that leaves a process of its own running and reports its interpreter's pid and
/// that process's.
const LEAVES_A_PROCESS: &str = r#"import os, subprocess, pbs
child = subprocess.Popen(["/bin/sleep", "60"])
pbs.logmsg(pbs.LOG_DEBUG, "pid=%d" % os.getpid())
pbs.logmsg(pbs.LOG_DEBUG, "child=%d" % child.pid)
"#;

fn gone(pid: &str) -> bool {
    // A zombie has no `/proc/PID/cmdline` text; a live process has.
    std::fs::read(format!("/proc/{pid}/cmdline")).map_or(true, |text| text.is_empty())
}

/// Whether `pid` is gone within a few seconds. A SIGKILL sent to a group is pending at
/// once but each member exits only when the kernel next runs it, which on a busy machine
/// comes after the pool has already answered.
async fn ends_soon(pid: &str) -> bool {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !gone(pid) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_interpreter_and_what_it_started_end_with_its_event() {
    if !is_root() {
        eprintln!("skipped: needs root to change uids");
        return;
    }
    let (_dir, lib) = installed();
    let pool = pool_of(&lib, 2);
    let run = |owner: Option<Owner>| {
        let pool = pool.clone();
        async move {
            let event = Event { script: LEAVES_A_PROCESS.into(), hook: "leaves".into(), ..event() };
            let answer = pool.run_as(owner.as_ref(), event).await.expect("an answer");
            assert_eq!(answer.exception, None, "{answer:?}");
            let value = |key: &str| {
                answer.log.iter().find_map(|e| e.msg.strip_prefix(&format!("{key}="))).expect(key).to_string()
            };
            (value("pid"), value("child"))
        }
    };
    let (interpreter, child) = run(Some(nobody())).await;
    assert!(gone(&interpreter), "the owner's interpreter ended with its event");
    assert!(ends_soon(&child).await, "what it started ended with it");
    assert_eq!(pool.idle_counts(), (0, 0));
    // Root's interpreter is kept for the next event.
    let (_, root_child) = run(None).await;
    assert_eq!(pool.idle_counts(), (1, 0));
    if let Ok(pid) = root_child.parse::<i32>() {
        // SAFETY: a plain system call on the test's own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
