//! The wire fuzzer (`bins/pbs_fuzz`) against a live server: root and `nobody` on the Unix
//! socket and an unauthenticated TCP peer send random, mutated and hostile frames for
//! `PBS_FUZZ_SECONDS` (default 30; `PBS_FUZZ_SEED` replays a run). The server must stay up,
//! answer a status request within 5 s after every burst, keep its RSS within 1.2x of the
//! RSS after the warm-up, and let neither nobody nor the TCP peer change root's jobs.
//! Ignored in the normal run for its length; CI runs it with `--ignored`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use pbs_e2e::{Cluster, bin_dir};

#[test]
#[ignore = "runs for PBS_FUZZ_SECONDS (30 s by default): `cargo test -p pbs-e2e --test e2e fuzz -- --ignored`"]
fn the_server_survives_the_wire_fuzzer() {
    let cluster = Cluster::start();
    cluster.allow_root_jobs();
    let seconds = std::env::var("PBS_FUZZ_SECONDS").unwrap_or_else(|_| "30".into());
    let pid = cluster.server_pid().expect("server pid");
    let mut fuzz = Command::new(bin_dir().join("pbs_fuzz"));
    fuzz.arg("--conf")
        .arg(cluster.conf_path())
        .arg(format!("--server-pid={pid}"))
        .arg(format!("--seconds={seconds}"))
        .env_remove("PBS_CONF_FILE");
    if let Ok(seed) = std::env::var("PBS_FUZZ_SEED") {
        fuzz.arg(format!("--seed={seed}"));
    }
    let out = fuzz.output().expect("run pbs_fuzz");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let stderr = cluster.server_stderr();
    let tail: Vec<&str> = stderr.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(
        out.status.success(),
        "pbs_fuzz failed ({}); the server's last log lines:\n{}",
        out.status,
        tail.join("\n")
    );
    assert!(stdout.contains("pbs_fuzz: OK"), "{stdout}");
}

/// The fuzzer's own check: a server that dies while it runs is reported as a failure
/// (exit 1, `FAIL`), not taken for a server that merely refused a frame.
#[test]
fn the_fuzzer_reports_a_server_that_dies() {
    let mut cluster = Cluster::start();
    let pid = cluster.server_pid().expect("server pid");
    let mut fuzz = Command::new(bin_dir().join("pbs_fuzz"))
        .arg("--conf")
        .arg(cluster.conf_path())
        .arg(format!("--server-pid={pid}"))
        .args(["--seconds=12", "--peers=tcp", "--jobs=0", "--seed=1"])
        .env_remove("PBS_CONF_FILE")
        .stdout(Stdio::piped())
        .spawn()
        .expect("run pbs_fuzz");
    let mut lines = BufReader::new(fuzz.stdout.take().expect("stdout")).lines();
    // Once the warm-up is over the fuzzer is in its main loop: the server dies there.
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("read pbs_fuzz output");
        let warm = line.contains("RSS after the warm-up");
        seen.push(line);
        if warm {
            break;
        }
    }
    cluster.kill9();
    seen.extend(lines.map_while(Result::ok));
    let status = fuzz.wait().expect("wait for pbs_fuzz");
    let output = seen.join("\n");
    assert_eq!(status.code(), Some(1), "{output}");
    assert!(output.contains("pbs_fuzz: FAIL") && output.contains(&format!("pid {pid}")), "{output}");
}

/// Found by the fuzzer: a qselect criterion is read once per request, not once per job, so
/// a huge value costs the server no more than its size once, and nobody cannot stall it
/// (a 2 MB `Hold_Types` value over 35 jobs held the state lock 10 s).
#[test]
fn a_huge_qselect_value_is_read_once() {
    use pbs_proto::{CompareOp, Criterion};
    let cluster = Cluster::start();
    for _ in 0..40 {
        cluster.run_as_nobody("qsub", &["--", "/bin/true"]).ok();
    }
    let huge = "u".repeat(8 << 20);
    for attr in ["Hold_Types", "Job_Name", "Job_Owner", "job_state", "queue"] {
        let start = std::time::Instant::now();
        let criteria = vec![Criterion { attr: attr.into(), op: CompareOp::Ge, value: huge.clone() }];
        let ids = cluster.client().select(criteria, false, false, false).expect("select");
        let took = start.elapsed();
        assert!(took < std::time::Duration::from_secs(5), "{attr}: {took:?}");
        // Against a string of u's: every Hold_Types (n) and job name (true) is less, no
        // owner or state is named, and the queue (workq) is greater.
        let expected = if attr == "queue" { 40 } else { 0 };
        assert_eq!(ids.len(), expected, "{attr}");
    }
}
