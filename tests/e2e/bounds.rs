//! Bounded work per request: subjob ranges are resolved against the indices an array has,
//! never by walking the range asked for; index sets stay runs; attribute values and
//! requests have size limits with a PBSE reply.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pbs_e2e::{Cluster, Out, command_dir};

/// Longer than any of these requests takes on a loaded machine, far shorter than walking
/// ten billion indices.
const DEADLINE: Duration = Duration::from_secs(10);

fn seq(id: &str) -> &str {
    id.split('[').next().unwrap_or(id)
}

/// Runs a command as root and fails the test if it has not exited within `DEADLINE`.
fn run_within(c: &Cluster, name: &str, args: &[&str]) -> Out {
    let mut child = Command::new(command_dir().join(name))
        .args(args)
        .env("PBS_CONF_FILE", c.conf_path())
        .current_dir(c.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn command");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for command") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} {args:?} took more than {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.take().expect("stdout").read_to_string(&mut stdout).expect("read stdout");
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("read stderr");
    Out { stdout, stderr, code: status.code().unwrap_or(-1) }
}

#[test]
fn huge_subjob_ranges_answer_at_once() {
    let c = Cluster::start();
    let id = c.run_as_nobody("qsub", &["-h", "-J", "0-9", "--", "/bin/true"]).ok().line().to_string();
    let n = seq(&id);
    let server = c.server_name();
    let huge = format!("{n}[0-9999999999]");

    // qstat: OpenPBS stops at the first index the array does not have.
    let out = run_within(&c, "qstat", &[&huge]);
    assert_eq!((out.stderr.as_str(), out.code), (format!("qstat: Unknown Job Id {huge}.{server}\n").as_str(), 153));
    assert_eq!(out.stdout, "");
    let out = run_within(&c, "qstat", &["-f", &format!("{n}[2-9999999999:3]")]);
    assert_eq!(out.code, 153, "{out:?}");
    // A range inside the array lists its subjobs.
    let out = run_within(&c, "qstat", &[&format!("{n}[7-9]")]).ok();
    let listed: Vec<&str> = out.stdout.lines().skip(2).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(listed, vec![format!("{n}[7].{server}"), format!("{n}[8].{server}"), format!("{n}[9].{server}")]);

    // qsig and qrerun act on the range's running subjobs: there are none.
    for (cmd, args) in [("qsig", vec!["-s", "USR1"]), ("qrerun", vec![])] {
        let mut args = args;
        args.push(&huge);
        let out = run_within(&c, cmd, &args);
        assert_eq!(
            (out.stderr.as_str(), out.code),
            (format!("{cmd}: Request invalid for state of job {huge}.{server}\n").as_str(), 168),
            "{cmd}"
        );
    }

    // qdel: a range starting past the array's last index names nothing.
    let past = format!("{n}[10-9999999999]");
    let out = run_within(&c, "qdel", &[&past]);
    assert_eq!((out.stderr.as_str(), out.code), (format!("qdel: Unknown Job Id {past}.{server}\n").as_str(), 153));
    // One starting inside it deletes what the array has from there on.
    run_within(&c, "qdel", &[&format!("{n}[4-9999999999:2]")]).ok();
    assert_eq!(c.job_attr(&id, "array_indices_remaining").as_deref(), Some("0-3,5-9:2"));
    assert_eq!(c.job_attr(&id, "array_state_count").as_deref(), Some("Queued:7 Running:0 Exiting:0 Expired:3"));
    run_within(&c, "qdel", &[&huge]).ok();
    let out = run_within(&c, "qstat", &[&id]);
    assert_eq!(out.code, 153, "the array is gone once every subjob is deleted: {out:?}");
}

#[test]
fn array_indices_submitted_cannot_be_altered() {
    let c = Cluster::start();
    let id = c.run_as_nobody("qsub", &["-h", "-J", "1-3", "--", "/bin/true"]).ok().line().to_string();
    for (who, out) in [
        ("owner", c.run_as_nobody("qalter", &["-W", "array_indices_submitted=0-9999999999", &id])),
        ("manager", c.run("qalter", &["-W", "array_indices_submitted=1-5", &id])),
    ] {
        assert_eq!(
            (out.stderr.as_str(), out.code),
            (
                format!(
                    "qalter: Cannot set attribute, read only or insufficient permission  array_indices_submitted {id}\n"
                )
                .as_str(),
                155
            ),
            "{who}"
        );
    }
    assert_eq!(c.job_attr(&id, "array_indices_submitted").as_deref(), Some("1-3"));
    let out = run_within(&c, "qstat", &["-t", &id]).ok();
    assert_eq!(out.stdout.lines().count(), 2 + 4, "{}", out.stdout);
}
