//! Events that wait together, on real `python3` processes: each gets its own answer when
//! several are written to one interpreter at once, a hook that kills its interpreter or
//! asks the daemon a question in the middle of them fails or delays only itself, and a
//! hook's body reaches an interpreter again whenever it changed.

// A test stops loudly at what it did not expect.
#![allow(clippy::expect_used)]

use std::sync::Arc;

use pbs_hooks::{Event, JobData, ObjectData, Pool, QueryReply, RunError, Value};

/// A pool of `size` interpreters running the runner installed in a new directory, which
/// lives as long as the first value.
fn installed_pool(size: usize) -> (tempfile::TempDir, Pool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = dir.path().join("lib");
    pbs_hooks::install(&lib).expect("install");
    let pool = Pool::new(pbs_hooks::pool::runner_in(&lib), None, size, "test");
    pool.set_defs(1, &pbs_hooks::definitions("s", &pbs_core::resource::ResourceRegistry::new()));
    (dir, pool)
}

fn event(hook: &str, script: &str, name: &str) -> Event {
    let attrs = [("Job_Name".to_string(), Value::Text(name.to_string()))].into_iter().collect();
    Event {
        id: 0,
        hook: hook.into(),
        event_type: "queuejob",
        script: script.into(),
        alarm: 20,
        debug: false,
        requestor: "u".into(),
        requestor_host: "h".into(),
        job: Some(JobData { id: None, attrs }),
        job_o: None,
        jobs: None,
        vnodes: None,
    }
}

const ECHO: &str = "import pbs\npbs.logmsg(pbs.LOG_DEBUG, pbs.event().job.Job_Name)\n";
const SLOW: &str = "import time\ntime.sleep(0.5)\n";
const DIE: &str = "import os\nos._exit(3)\n";
const ASK: &str = "import pbs\nq = pbs.server().queue('workq')\npbs.logmsg(pbs.LOG_DEBUG, '%s %s' % (pbs.event().job.Job_Name, q.queue_type))\n";

fn logged(answer: &pbs_hooks::Answer) -> Vec<String> {
    answer.log.iter().map(|entry| entry.msg.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_written_together_get_their_own_answers_and_a_dying_hook_fails_only_its_event() {
    // One interpreter: while the slow hook runs, the others wait and go in one write.
    let (_dir, pool) = installed_pool(1);
    let queries: pbs_hooks::Queries = Arc::new(|query: &pbs_hooks::Query| QueryReply {
        object: (query.what == "queue").then(|| ObjectData {
            name: query.name.clone().unwrap_or_default(),
            attrs: [("queue_type".to_string(), "Execution".to_string())].into_iter().collect(),
        }),
        ..QueryReply::default()
    });
    let slow = tokio::spawn({
        let pool = pool.clone();
        async move { pool.run(event("slow", SLOW, "first")).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let mut waiting = Vec::new();
    for i in 0..12 {
        let pool = pool.clone();
        let queries = queries.clone();
        waiting.push(tokio::spawn(async move {
            let name = format!("job{i}");
            match i {
                4 => pool.run(event("die", DIE, &name)).await,
                7 => pool.run_with_queries(event("ask", ASK, &name), queries).await,
                _ => pool.run(event("echo", ECHO, &name)).await,
            }
        }));
    }
    assert!(slow.await.expect("joined").expect("answered").accepted);
    for (i, handle) in waiting.into_iter().enumerate() {
        let result = handle.await.expect("joined");
        match i {
            4 => assert!(matches!(result, Err(RunError::Crashed(_))), "the dying hook's event: {result:?}"),
            7 => {
                let answer = result.expect("the asking hook answered");
                assert_eq!(logged(&answer), vec![format!("job{i} Execution")], "{answer:?}");
            }
            _ => {
                let answer = result.expect("answered");
                assert!(answer.accepted, "{answer:?}");
                assert_eq!(logged(&answer), vec![format!("job{i}")], "event {i} got another's answer");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_changed_body_runs_and_an_unchanged_one_runs_as_sent() {
    let (_dir, pool) = installed_pool(1);
    let says = |word: &str| format!("import pbs\npbs.logmsg(pbs.LOG_DEBUG, '{word}')\n");
    let mut heard = Vec::new();
    for body in [says("a"), says("a"), says("b"), says("b"), says("a")] {
        let answer = pool.run(event("h", &body, "j")).await.expect("answered");
        heard.extend(logged(&answer));
    }
    assert_eq!(heard, ["a", "a", "b", "b", "a"]);
    // A body that does not compile fails each of its events alike, sent or not.
    for _ in 0..2 {
        let answer = pool.run(event("h", "def (:\n", "j")).await.expect("answered");
        assert!(answer.exception.as_deref().is_some_and(|e| e.starts_with("SyntaxError")), "{answer:?}");
    }
    let answer = pool.run(event("h", &says("c"), "j")).await.expect("answered");
    assert_eq!(logged(&answer), ["c"]);
}

const PID: &str = "import os, pbs\npbs.logmsg(pbs.LOG_DEBUG, str(os.getpid()))\n";

fn pid_of(answer: &pbs_hooks::Answer) -> String {
    logged(answer).first().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_quick_events_is_served_by_the_running_interpreter_and_a_busy_one_makes_the_pool_grow() {
    let (_dir, pool) = installed_pool(4);
    let first = pid_of(&pool.run(event("pid", PID, "warm")).await.expect("answered"));
    // Bursts of quick events, each many at once: a new interpreter would cost tens of
    // milliseconds to start, so the one running answers them all.
    for round in 0..5 {
        let burst: Vec<_> = (0..40)
            .map(|i| {
                let pool = pool.clone();
                tokio::spawn(async move { pool.run(event("pid", PID, &format!("r{round}j{i}"))).await })
            })
            .collect();
        for handle in burst {
            let answer = handle.await.expect("joined").expect("answered");
            assert_eq!(pid_of(&answer), first, "a quick burst started another interpreter");
        }
    }
    assert_eq!(pool.idle_counts().0, 1);
    // An interpreter busy past the pool's patience: the next event gets one of its own.
    let slow = tokio::spawn({
        let pool = pool.clone();
        async move { pool.run(event("slow", SLOW, "slow")).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let answer = pool.run(event("pid", PID, "behind the slow one")).await.expect("answered");
    assert_ne!(pid_of(&answer), first, "the event waited for the busy interpreter");
    assert!(!slow.is_finished(), "the slow hook ended before the other event was answered ({:?})", started.elapsed());
    assert!(slow.await.expect("joined").expect("answered").accepted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_that_come_while_the_first_interpreter_starts_wait_for_it_instead_of_starting_more() {
    let (_dir, pool) = installed_pool(4);
    let burst: Vec<_> = (0..20)
        .map(|i| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run(event("pid", PID, &format!("j{i}"))).await })
        })
        .collect();
    let mut pids = std::collections::BTreeSet::new();
    for handle in burst {
        pids.insert(pid_of(&handle.await.expect("joined").expect("answered")));
    }
    assert_eq!(pids.len(), 1, "interpreters started for one burst: {pids:?}");
}

/// What an interpreter writes is read in bounded lines: a hook that writes an endless line
/// where answers go fails its own event as a broken interpreter (which is replaced), and
/// one that prints an endless line to stderr still gets its answer; the pool serves the
/// next event either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interpreter_writing_an_endless_line_is_dropped_not_read_to_its_end() {
    let (_dir, pool) = installed_pool(1);
    // The runner keeps its answers on a descriptor of its own (fd 1 is stderr for a hook),
    // but a hook can find it: the write-only pipe that is not stderr.
    let flood = format!(
        "import fcntl, os, stat, time
mine = os.readlink('/proc/self/fd/2')
chunk = b'x' * (1 << 20)
for fd in range(3, 256):
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode) or os.readlink('/proc/self/fd/%d' % fd) == mine:
            continue
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_WRONLY:
            continue
    except OSError:
        continue
    for _ in range({}):
        os.write(fd, chunk)
time.sleep(60)
",
        (pbs_hooks::pool::MAX_ANSWER_LINE >> 20) + 2
    );
    let started = std::time::Instant::now();
    let result = pool.run(event("flood", &flood, "flooding")).await;
    match &result {
        Err(RunError::Crashed(why)) => assert!(why.contains("longer than"), "{why}"),
        other => panic!("the flooding hook's event: {other:?}"),
    }
    // Dropped at the bound, not when the hook's alarm (20 s) would have ended it.
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "{:?}", started.elapsed());
    let after = pool.run(event("echo", ECHO, "after")).await.expect("answered");
    assert_eq!(logged(&after), ["after"]);

    let noisy = "import os\nos.write(2, b'y' * (4 << 20) + b'\\n')\n";
    let answer = pool.run(event("noisy", noisy, "noisy")).await.expect("answered");
    assert!(answer.accepted, "{answer:?}");
    let after = pool.run(event("echo", ECHO, "again")).await.expect("answered");
    assert_eq!(logged(&after), ["again"]);
}
