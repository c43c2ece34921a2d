//! The Python hook runner (`python/pbs_hook_runner.py`) driven over its protocol
//! (docs/hooks.md, "The runner protocol"): a real `python3 -I -u` process per test, JSON
//! lines in, JSON answers out.

// A test stops loudly at what it did not expect; the helpers below are test code too.
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest a test waits for one answer (an answer is normally well under a millisecond).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// The seed's queuejob hook, byte for byte as OpenPBS printed it back (`qmgr -c 'print hook
/// soft'`, base64 decoded).
const SOFT_HOOK: &str = "import pbs\ne = pbs.event()\nj = e.job\nj.Resource_List[\"soft_walltime\"] = pbs.duration(\"300\")\npbs.logmsg(pbs.EVENT_DEBUG, \"Setting soft_walltime: %s\" % j.Resource_List[\"soft_walltime\"])\n";

/// The seed's hook that lets users set soft_walltime through a custom long resource.
const SETSOFT_HOOK: &str = "import pbs\ne = pbs.event()\nj = e.job\n\nj.Resource_List[\"soft_walltime\"] = pbs.duration(j.Resource_List[\"set_soft_walltime\"])\n";

struct Runner {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
}

impl Runner {
    /// A runner that has been sent `defs()`.
    fn start() -> Runner {
        let mut runner = Runner::spawn();
        runner.send(&defs());
        runner
    }

    fn spawn() -> Runner {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/pbs_hook_runner.py");
        let mut child = Command::new("python3")
            .args(["-I", "-u", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let (tx, answers) = channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                let mut text = sink.lock().expect("stderr lock");
                text.push_str(&line);
                text.push('\n');
            }
        });
        Runner { child, stdin, answers, stderr, next_id: 1 }
    }

    fn send_line(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("write request");
        self.stdin.write_all(b"\n").expect("write newline");
        self.stdin.flush().expect("flush");
    }

    fn send(&mut self, request: &Value) {
        let line = serde_json::to_string(request).expect("request serialises");
        self.send_line(&line);
    }

    fn answer(&mut self) -> Value {
        let line = self.answers.recv_timeout(ANSWER_TIMEOUT).expect("the runner answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer is not JSON ({e}): {line}"))
    }

    /// Sends one event without waiting for its answer; `fields` are added to a queuejob
    /// request for `script` and override it. Returns its id.
    fn start_event(&mut self, script: &str, fields: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut request = json!({
            "op": "event", "id": id, "hook": "h", "type": "queuejob", "script": script,
            "alarm": 30, "debug": false, "requestor": "pbsuser", "requestor_host": "vm",
            "job": {"id": null, "attrs": {"Job_Name": "STDIN", "Resource_List": {"ncpus": "1"}}},
            "job_o": null, "jobs": null, "vnodes": null,
        });
        if let (Some(request), Value::Object(extra)) = (request.as_object_mut(), fields) {
            request.extend(extra);
        }
        self.send(&request);
        id
    }

    /// Runs one event (see `start_event`) and gives its answer.
    fn event(&mut self, script: &str, fields: Value) -> Value {
        let id = self.start_event(script, fields);
        let answer = self.answer();
        assert_eq!(answer["id"], json!(id), "answer for another request: {answer}");
        answer
    }

    fn stderr_contains(&self, needle: &str) -> bool {
        // stderr is read by another thread: give it a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if self.stderr.lock().expect("stderr lock").contains(needle) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Job attribute and resource types as the server sends them (a subset of JOB_ATTRS).
fn defs() -> Value {
    json!({
        "op": "defs",
        "server_name": "vm",
        "job_attrs": {
            "Job_Name": "string", "Job_Owner": "string", "job_state": "char", "queue": "string",
            "Priority": "long", "comment": "string", "Resource_List": "resources",
            "resources_used": "resources", "Execution_Time": "time", "Exit_status": "long",
            "max_run_subjobs": "long", "array_indices_submitted": "string", "Rerunable": "boolean",
            "Variable_List": "env", "eligible_time": "duration", "group_list": "list",
        },
        "resources": {
            "walltime": "duration", "soft_walltime": "duration", "cput": "duration", "ncpus": "long",
            "mem": "size", "select": "string", "place": "string", "nodect": "long",
            "set_soft_walltime": "long", "scratch_ok": "boolean",
        },
    })
}

/// Seconds in `[[HH:]MM:]SS`, the forms the server accepts for a duration.
fn duration_secs(text: &str) -> u64 {
    text.split(':').fold(0, |acc, field| acc * 60 + field.parse::<u64>().expect("a duration field"))
}

fn log_messages(answer: &Value) -> Vec<(u64, String)> {
    answer["log"]
        .as_array()
        .expect("log is a list")
        .iter()
        .map(|entry| (entry["level"].as_u64().expect("level"), entry["msg"].as_str().expect("msg").to_owned()))
        .collect()
}

#[test]
fn seed_soft_walltime_hook_sets_300_seconds_and_logs_as_openpbs() {
    let mut runner = Runner::start();
    let answer = runner.event(SOFT_HOOK, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["exception"], Value::Null);
    assert_eq!(answer["alarm"], json!(false));
    let soft = answer["job"]["Resource_List"]["soft_walltime"].as_str().expect("soft_walltime set");
    assert_eq!(duration_secs(soft), 300);
    // Only what changed: ncpus was not touched.
    assert_eq!(answer["job"], json!({"Resource_List": {"soft_walltime": soft}}));
    // OpenPBS logged `0080;Server@vm;Hook;Server@vm;Setting soft_walltime: 300`.
    assert_eq!(log_messages(&answer), vec![(128, "Setting soft_walltime: 300".to_owned())]);
    assert_eq!(answer["log"][0]["job"], Value::Null);
}

#[test]
fn set_soft_walltime_hook_copies_a_long_resource_into_a_duration() {
    let mut runner = Runner::start();
    let job = json!({"id": null, "attrs": {"Resource_List": {"set_soft_walltime": "3600", "ncpus": "1"}}});
    let answer = runner.event(SETSOFT_HOOK, json!({"job": job}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    let soft = answer["job"]["Resource_List"]["soft_walltime"].as_str().expect("soft_walltime set");
    assert_eq!(duration_secs(soft), 3600);
    // pbs.duration(3600) set from an int reaches the server as 3600 seconds too.
    let answer =
        runner.event("import pbs\npbs.event().job.Resource_List['soft_walltime'] = pbs.duration(3600)\n", json!({}));
    let soft = answer["job"]["Resource_List"]["soft_walltime"].as_str().expect("soft_walltime set");
    assert_eq!(duration_secs(soft), 3600);
}

#[test]
fn max_run_subjobs_set_by_a_hook_and_log_warning_uses_mask_0006() {
    let mut runner = Runner::start();
    let script = "import pbs\ne = pbs.event()\ne.job.max_run_subjobs = 3\n\
                  pbs.logmsg(pbs.LOG_WARNING, 'max_run_subjobs set to %d' % e.job.max_run_subjobs)\n";
    let job = json!({"id": null, "attrs": {"array_indices_submitted": "1-20"}});
    let answer = runner.event(script, json!({"job": job}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["job"], json!({"max_run_subjobs": "3"}));
    // OpenPBS logged `0006;Server@vm;Hook;Server@vm;max_run_subjobs set to 3`.
    assert_eq!(log_messages(&answer), vec![(6, "max_run_subjobs set to 3".to_owned())]);
}

#[test]
fn reject_with_a_message_and_accept_otherwise() {
    let mut runner = Runner::start();
    let script = "import pbs\ne = pbs.event()\nif e.job.Job_Name == 'bad':\n    \
                  e.reject('jobs named bad are not welcome')\ne.accept()\n";
    let bad = json!({"job": {"id": null, "attrs": {"Job_Name": "bad"}}});
    let answer = runner.event(script, bad);
    assert_eq!(answer["accepted"], json!(false));
    assert_eq!(answer["reject_message"], json!("jobs named bad are not welcome"));
    assert_eq!(answer["exception"], Value::Null);
    assert_eq!(answer["alarm"], json!(false));

    let good = json!({"job": {"id": null, "attrs": {"Job_Name": "good"}}});
    let answer = runner.event(script, good);
    assert_eq!(answer["accepted"], json!(true));
    assert_eq!(answer["reject_message"], Value::Null);
    assert_eq!(answer["job"], json!({}));

    let answer = runner.event("import pbs\npbs.event().reject()\n", json!({}));
    assert_eq!(answer["accepted"], json!(false));
    assert_eq!(answer["reject_message"], Value::Null, "reject() without a message");
}

#[test]
fn scheduler_restart_cycle_is_asked_for_unless_the_hook_raised() {
    let mut runner = Runner::start();
    let job = || json!({"job": {"id": null, "attrs": {"Job_Name": "j"}}});
    let answer = runner.event("import pbs\npbs.server().scheduler_restart_cycle()\n", job());
    assert_eq!((answer["accepted"].clone(), answer["restart_cycle"].clone()), (json!(true), json!(true)), "{answer}");
    let answer = runner.event("import pbs\npbs.server().scheduler_restart_cycle()\npbs.event().reject('no')\n", job());
    assert_eq!((answer["accepted"].clone(), answer["restart_cycle"].clone()), (json!(false), json!(true)), "{answer}");
    let answer = runner.event("import pbs\npbs.server().scheduler_restart_cycle()\nraise ValueError('x')\n", job());
    assert_eq!(answer["restart_cycle"], Value::Null, "a hook that raised asks for nothing: {answer}");
    // The next event starts without the last one's request.
    let answer = runner.event("import pbs\npbs.event().accept()\n", job());
    assert_eq!(answer["restart_cycle"], Value::Null, "{answer}");
}

#[test]
fn an_exception_fails_the_event_with_its_last_traceback_line() {
    let mut runner = Runner::start();
    let answer = runner.event("import pbs\nx = 1\ny = x / 0\n", json!({}));
    assert_eq!(answer["accepted"], json!(false));
    assert_eq!(answer["exception"], json!("ZeroDivisionError: division by zero"));
    assert_eq!(answer["alarm"], json!(false));
    assert!(runner.stderr_contains("Traceback (most recent call last)"));
    assert!(runner.stderr_contains("y = x / 0"), "the traceback shows the hook's line");

    // A plain sys.exit() ends a hook normally.
    let answer = runner.event("import sys\nsys.exit()\nraise RuntimeError('not reached')\n", json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["exception"], Value::Null);

    let answer = runner.event("def broken(:\n", json!({}));
    assert_eq!(answer["accepted"], json!(false));
    assert!(answer["exception"].as_str().expect("exception").starts_with("SyntaxError"), "{answer}");
}

#[test]
fn an_alarm_stops_a_looping_hook_and_the_same_runner_goes_on() {
    let mut runner = Runner::start();
    let pid = runner.child.id();
    let started = Instant::now();
    let answer = runner.event("while True:\n    pass\n", json!({"alarm": 1}));
    let took = started.elapsed();
    assert_eq!(answer["alarm"], json!(true), "{answer}");
    assert_eq!(answer["accepted"], json!(false));
    assert_eq!(answer["exception"], Value::Null);
    assert!(took >= Duration::from_millis(900) && took < Duration::from_millis(2500), "took {took:?}");

    // A hook that swallows the first alarm is stopped by the next one.
    let script = "import time\ntry:\n    time.sleep(10)\nexcept BaseException:\n    pass\nwhile True:\n    pass\n";
    let started = Instant::now();
    let answer = runner.event(script, json!({"alarm": 1}));
    assert_eq!(answer["alarm"], json!(true), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());

    let answer = runner.event(SOFT_HOOK, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["alarm"], json!(false));
    assert_eq!(runner.child.id(), pid);
    assert!(runner.child.try_wait().expect("try_wait").is_none(), "the runner is still alive");
}

#[test]
fn what_a_hook_prints_goes_to_stderr_not_into_the_protocol() {
    let mut runner = Runner::start();
    let script = "import os, sys, pbs\n\
                  print('{\"id\": 999, \"accepted\": false}')\n\
                  sys.stdout.write('written to sys.stdout\\n')\n\
                  os.write(1, b'written to fd 1\\n')\n\
                  print('a line without newline', end='')\n\
                  pbs.event().job.comment = 'printed'\n";
    let answer = runner.event(script, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["job"], json!({"comment": "printed"}));
    assert!(runner.stderr_contains("{\"id\": 999, \"accepted\": false}"));
    assert!(runner.stderr_contains("written to sys.stdout"));
    assert!(runner.stderr_contains("written to fd 1"));
    // The next answer is the next event's, not a stray line.
    let answer = runner.event("import pbs\npbs.event().job.Priority = 5\n", json!({}));
    assert_eq!(answer["job"], json!({"Priority": "5"}));
}

#[test]
fn setting_an_unknown_attribute_fails_naming_it() {
    let mut runner = Runner::start();
    let answer = runner.event("import pbs\npbs.event().job.no_such_attr = 1\n", json!({}));
    assert_eq!(answer["accepted"], json!(false));
    let exception = answer["exception"].as_str().expect("an exception");
    assert!(exception.contains("UnsetAttributeNameError"), "{exception}");
    assert!(exception.contains("no_such_attr"), "{exception}");

    let answer = runner.event("import pbs\npbs.event().job.Resource_List['no_such_res'] = 1\n", json!({}));
    let exception = answer["exception"].as_str().expect("an exception");
    assert!(exception.contains("UnsetResourceNameError") && exception.contains("no_such_res"), "{exception}");

    let answer = runner.event("import pbs\npbs.event().job.id = '1.vm'\n", json!({}));
    let exception = answer["exception"].as_str().expect("an exception");
    assert!(exception.contains("BadAttributeValueError") && exception.contains("id"), "{exception}");

    let answer = runner.event("import pbs\npbs.no_such_function()\n", json!({}));
    let exception = answer["exception"].as_str().expect("an exception");
    assert!(exception.starts_with("AttributeError") && exception.contains("no_such_function"), "{exception}");
}

#[test]
fn a_malformed_request_gets_an_error_answer_and_the_runner_goes_on() {
    let mut runner = Runner::start();
    runner.send_line("this is not json");
    let answer = runner.answer();
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["accepted"], json!(false));
    assert!(answer["exception"].as_str().expect("exception").starts_with("bad request: "), "{answer}");

    runner.send_line(r#"{"op": "event", "id": 41}"#);
    let answer = runner.answer();
    assert_eq!(answer["id"], json!(41));
    assert!(answer["exception"].as_str().expect("exception").starts_with("bad request: "), "{answer}");

    runner.send_line(r#"{"op": "frobnicate", "id": 42}"#);
    let answer = runner.answer();
    assert_eq!(answer["id"], json!(42));
    assert!(answer["exception"].as_str().expect("exception").contains("frobnicate"), "{answer}");

    runner.send_line(r#"{"op": "event", "id": 43, "hook": "h", "type": "no_such_event", "script": ""}"#);
    let answer = runner.answer();
    assert_eq!(answer["id"], json!(43));
    assert!(answer["exception"].as_str().expect("exception").contains("no_such_event"), "{answer}");

    let answer = runner.event(SOFT_HOOK, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
}

#[test]
fn an_event_before_any_defs_is_refused() {
    let mut runner = Runner::spawn();
    let answer = runner.event(SOFT_HOOK, json!({}));
    assert_eq!(answer["accepted"], json!(false));
    assert!(answer["exception"].as_str().expect("exception").contains("defs"), "{answer}");
    runner.send(&defs());
    let answer = runner.event(SOFT_HOOK, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
}

#[test]
fn modifyjob_reads_job_o_which_is_read_only() {
    let mut runner = Runner::start();
    let script = "import pbs\ne = pbs.event()\n\
                  assert e.type == pbs.MODIFYJOB\n\
                  if e.job.Priority > e.job_o.Priority:\n    \
                  e.job.comment = 'Priority raised from %d to %d by %s' % (e.job_o.Priority, e.job.Priority, e.requestor)\n\
                  pbs.logmsg(pbs.EVENT_DEBUG, '%s %s %s' % (e.job_o.Resource_List['walltime'] == 3600, e.job_o.job_state == pbs.JOB_STATE_QUEUED, e.job_o.Resource_List['cput']))\n";
    let fields = json!({
        "type": "modifyjob",
        "job": {"id": "12.vm", "attrs": {"Priority": "10"}},
        "job_o": {"id": "12.vm", "attrs": {"Priority": "0", "job_state": "Q", "Resource_List": {"walltime": "01:00:00"}}},
    });
    let answer = runner.event(script, fields.clone());
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["job"], json!({"comment": "Priority raised from 0 to 10 by pbsuser"}));
    assert_eq!(log_messages(&answer), vec![(128, "True True None".to_owned())]);

    let answer = runner.event("import pbs\npbs.event().job_o.Priority = 3\n", fields.clone());
    assert_eq!(answer["accepted"], json!(false));
    assert!(answer["exception"].as_str().expect("exception").contains("job_o is read-only"), "{answer}");

    // job_o exists in modifyjob only.
    let answer = runner.event("import pbs\npbs.event().job_o\n", json!({}));
    assert!(answer["exception"].as_str().expect("exception").starts_with("pbs.EventIncompatibleError"), "{answer}");
}

#[test]
fn periodic_hook_changes_another_job_through_the_server() {
    let mut runner = Runner::start();
    let script = "import pbs\ns = pbs.server()\n\
                  for j in s.jobs():\n    pbs.logmsg(pbs.EVENT_DEBUG, '%s %d' % (j.id, j.Priority))\n\
                  j = s.job('6')\n\
                  j.Priority = 7\nj.Resource_List['walltime'] = pbs.duration('2:00:00')\n\
                  pbs.logmsg(pbs.EVENT_DEBUG, '%s %s' % (s.name, s.job('99.vm')))\n";
    let fields = json!({
        "type": "periodic",
        "job": null,
        "jobs": [
            {"id": "6.vm", "attrs": {"Priority": "1", "Resource_List": {"walltime": "01:00:00"}}},
            {"id": "7.vm", "attrs": {"Priority": "2"}},
        ],
    });
    let answer = runner.event(script, fields);
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["job"], Value::Null);
    let walltime = answer["jobs"]["6.vm"]["Resource_List"]["walltime"].as_str().expect("walltime");
    assert_eq!(duration_secs(walltime), 7200);
    assert_eq!(answer["jobs"]["6.vm"]["Priority"], json!("7"));
    assert_eq!(answer["jobs"].as_object().expect("jobs").len(), 1, "7.vm did not change: {answer}");
    assert_eq!(
        log_messages(&answer),
        vec![(128, "6.vm 1".to_owned()), (128, "7.vm 2".to_owned()), (128, "vm None".to_owned())]
    );

    // Other events have no access to other jobs, and say so.
    let answer = runner.event("import pbs\npbs.server().job('6.vm')\n", json!({}));
    let exception = answer["exception"].as_str().expect("exception");
    assert!(exception.starts_with("NotImplementedError") && exception.contains("periodic"), "{exception}");
}

#[test]
fn periodic_hook_without_jobs_asks_the_daemon_for_them_page_by_page() {
    let mut runner = Runner::start();
    let script = "import pbs\ns = pbs.server()\n\
                  ids = [j.id for j in s.jobs()]\n\
                  j = s.job('9')\nj.Priority = j.Priority + 2\n\
                  s.job('1.vm').comment = 'seen'\n\
                  pbs.logmsg(pbs.EVENT_DEBUG, ' '.join(ids) + ' ' + str(s.job('404')))\n";
    let id = runner.start_event(script, json!({"type": "periodic", "job": null, "jobs": null}));

    let query = runner.answer();
    assert_eq!(query, json!({"op": "query", "what": "jobs", "after": null}));
    runner.send(&json!({"op": "reply", "jobs": [{"id": "1.vm", "attrs": {"Priority": "0"}}], "more": true}));
    let query = runner.answer();
    assert_eq!(query, json!({"op": "query", "what": "jobs", "after": "1.vm"}));
    runner.send(&json!({"op": "reply", "jobs": [{"id": "2.vm", "attrs": {}}], "more": false}));
    let query = runner.answer();
    assert_eq!(query, json!({"op": "query", "what": "job", "job_id": "9.vm"}));
    runner.send(&json!({"op": "reply", "jobs": [{"id": "9.vm", "attrs": {"Priority": "1"}}], "more": false}));
    // 1.vm is known from the pages: no question. 404 is not.
    let query = runner.answer();
    assert_eq!(query, json!({"op": "query", "what": "job", "job_id": "404.vm"}));
    runner.send(&json!({"op": "reply", "jobs": [], "more": false}));

    let answer = runner.answer();
    assert_eq!(answer["id"], json!(id));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["jobs"], json!({"9.vm": {"Priority": "3"}, "1.vm": {"comment": "seen"}}));
    assert_eq!(log_messages(&answer), vec![(128, "1.vm 2.vm None".to_owned())]);
}

#[test]
fn an_alarm_during_a_query_waits_for_the_reply_and_leaves_the_pipe_clean() {
    let mut runner = Runner::start();
    let script = "import pbs\npbs.server().job('1')\nwhile True:\n    pass\n";
    let started = Instant::now();
    let id = runner.start_event(script, json!({"type": "periodic", "job": null, "jobs": null, "alarm": 1}));
    let query = runner.answer();
    assert_eq!(query["op"], json!("query"));
    thread::sleep(Duration::from_millis(1500));
    runner.send(&json!({"op": "reply", "jobs": [], "more": false}));
    let answer = runner.answer();
    assert_eq!(answer["id"], json!(id));
    assert_eq!(answer["alarm"], json!(true), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());

    // A reply nobody waits for any more (its hook was stopped first) is dropped.
    runner.send(&json!({"op": "reply", "jobs": [], "more": false}));
    let answer = runner.event(SOFT_HOOK, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
}

#[test]
fn values_are_typed_by_the_defs_and_unset_with_none() {
    let mut runner = Runner::start();
    let script = r#"import pbs
e = pbs.event()
j = e.job
rl = j.Resource_List
out = [
    type(rl["mem"]).__name__, str(rl["mem"] + pbs.size("512mb")), rl["mem"] > 1024 ** 3,
    type(rl["select"]).__name__, type(rl["place"]).__name__, rl["ncpus"] + 1,
    int(rl["walltime"]), rl["cput"], rl["scratch_ok"] is True, j.Rerunable is False,
    int(pbs.duration("1:30")), str(pbs.duration("00:05:00")), j.Exit_status,
    j.Execution_Time + 1, j.Variable_List["PBS_O_HOME"], "walltime" in rl,
]
try:
    rl["no_such_res"]
except pbs.UnsetResourceNameError as err:
    out.append(str(err))
pbs.logmsg(pbs.EVENT_DEBUG, repr(out))
j.comment = None
rl["walltime"] = None
rl["mem"] = "2gb"
j.Variable_List["EXTRA"] = "1"
"#;
    let job = json!({"id": "5.vm", "attrs": {
        "Rerunable": "False", "Execution_Time": "1700000000", "comment": "old",
        "Variable_List": "PBS_O_HOME=/home/pbsuser,PBS_O_SHELL=/bin/bash",
        "Resource_List": {"mem": "1gb", "select": "1:ncpus=1", "place": "pack", "ncpus": "2",
                          "walltime": "01:00:00", "scratch_ok": "True"},
    }});
    let answer = runner.event(script, json!({"type": "runjob", "job": job}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    let expected = "['size', '1536mb', False, 'select', 'place', 3, 3600, None, True, True, 90, '00:05:00', \
                    None, 1700000001, '/home/pbsuser', True, \"resource attribute 'no_such_res' not found\"]";
    assert_eq!(log_messages(&answer), vec![(128, expected.to_owned())]);
    assert_eq!(
        answer["job"],
        json!({
            "comment": null,
            "Resource_List": {"walltime": null, "mem": "2gb"},
            "Variable_List": "PBS_O_HOME=/home/pbsuser,PBS_O_SHELL=/bin/bash,EXTRA=1",
        })
    );
}

#[test]
fn new_defs_replace_the_old_ones() {
    let mut runner = Runner::start();
    let script = "import pbs\npbs.event().job.Resource_List['gpus'] = 2\n";
    let answer = runner.event(script, json!({}));
    assert!(answer["exception"].as_str().expect("gpus is not defined yet").contains("gpus"), "{answer}");
    let mut new_defs = defs();
    new_defs["resources"]["gpus"] = json!("long");
    runner.send(&new_defs);
    let answer = runner.event(script, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["job"], json!({"Resource_List": {"gpus": "2"}}));
}

/// A child a hook forks and that does not exec ends with the hook's code in it, as the
/// runner would: it must leave without answering, or the daemon would read two answers.
#[test]
fn a_forked_child_that_ends_the_hook_writes_no_answer() {
    let mut runner = Runner::start();
    let script = "import os, pbs\npid = os.fork()\nif pid == 0:\n    pbs.event().reject('from the child')\n\
                  os.waitpid(pid, 0)\npbs.event().accept()\n";
    let answer = runner.event(script, json!({}));
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    // The next answers are those of the next events, in order (`event` checks each id),
    // with no job in the answer of an event that has none.
    let answer = runner.event("import pbs\npbs.event().accept()\n", json!({"job": null}));
    assert_eq!(answer["job"], Value::Null, "{answer}");
    let answer = runner.event("import pbs\npbs.event().accept()\n", json!({}));
    assert_eq!(answer["job"], json!({}), "{answer}");
    assert!(runner.answers.recv_timeout(Duration::from_millis(200)).is_err(), "a stray answer");
}

#[test]
fn a_warm_runner_answers_a_trivial_event_quickly() {
    let mut runner = Runner::start();
    let script = "import pbs\ne = pbs.event()\n";
    for _ in 0..200 {
        runner.event(script, json!({}));
    }
    let rounds = 1000u32;
    let started = Instant::now();
    for _ in 0..rounds {
        let answer = runner.event(script, json!({}));
        assert_eq!(answer["accepted"], json!(true));
    }
    let each = started.elapsed() / rounds;
    eprintln!("warm round trip per trivial event: {each:?}");
    // Well under a millisecond on an idle machine; the bound leaves room for a loaded CI host.
    assert!(each < Duration::from_millis(5), "{each:?} per event");
}
