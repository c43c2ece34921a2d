//! Acknowledged means committed: a `kill -9` of the server in the middle of a burst of
//! submissions loses no job whose id a client was given, and ids are never reused.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use pbs_e2e::Cluster;
use pbs_proto::Attr;

#[test]
fn kill9_during_submission_burst_loses_no_acknowledged_job() {
    let mut cluster = Cluster::start();
    cluster.allow_root_jobs();
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut workers = Vec::new();
    for worker in 0..4 {
        let mut client = cluster.client();
        let acked = Arc::clone(&acknowledged);
        workers.push(std::thread::spawn(move || {
            for i in 0.. {
                let attrs = vec![Attr::new("Job_Name", format!("burst{worker}_{i}"))];
                match client.submit(attrs, "#!/bin/sh\ntrue\n".into(), None) {
                    Ok(id) => acked.lock().expect("lock").push(id),
                    Err(_) => return,
                }
            }
        }));
    }
    // Kill once a real burst is under way.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while acknowledged.lock().expect("lock").len() < 300 {
        assert!(std::time::Instant::now() < deadline, "burst never reached 300 jobs");
        assert!(!workers.iter().all(|w| w.is_finished()), "all submitters failed");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    cluster.kill9();
    for w in workers {
        w.join().expect("worker");
    }
    let acked: Vec<String> = acknowledged.lock().expect("lock").clone();
    cluster.start_server();

    let mut client = cluster.client();
    let status = client.status_jobs(vec![], vec![], vec![], false, false).expect("status");
    let present: BTreeSet<String> = status.objects.iter().map(|o| o.name.clone()).collect();
    let missing: Vec<&String> = acked.iter().filter(|id| !present.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged jobs lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    // Every surviving job kept its attributes.
    for object in &status.objects {
        let name = object.attrs.iter().find(|a| a.name() == "Job_Name").map(|a| a.value().to_string());
        assert!(name.is_some_and(|n| n.starts_with("burst")), "{object:?}");
    }
    // The next id is new.
    let next = client.submit(vec![], "#!/bin/sh\ntrue\n".into(), None).expect("submit after restart");
    assert!(!present.contains(&next), "id {next} reused");
    let seq = |id: &str| id.split('.').next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let highest = present.iter().map(|id| seq(id)).max().unwrap_or(0);
    assert!(seq(&next) > highest, "id {next} not after {highest}");
}

#[test]
fn sigterm_stops_cleanly_and_state_survives_restart() {
    let mut cluster = Cluster::start();
    cluster.allow_root_jobs();
    let mut client = cluster.client();
    let id = client
        .submit(
            vec![Attr::new("Job_Name", "keep"), Attr::new("Resource_List.walltime", "10:00")],
            "#!/bin/sh\n".into(),
            None,
        )
        .expect("submit");
    drop(client);
    assert_eq!(cluster.terminate(), Some(0));
    // The day's log holds the job in PBS's line format, written out before the exit.
    let logs = std::fs::read_dir(cluster.home().join("server_logs")).expect("server_logs");
    let text: String = logs.filter_map(Result::ok).filter_map(|e| std::fs::read_to_string(e.path()).ok()).collect();
    let queued =
        text.lines().find(|l| l.contains(&format!(";Job;{id};Job Queued at request of root@"))).expect("log line");
    let fields: Vec<&str> = queued.split(';').collect();
    assert_eq!((fields.len(), fields[1]), (6, "0008"), "{queued}");
    assert!(fields[5].ends_with("job name = keep, queue = workq"), "{queued}");
    assert!(text.lines().last().is_some_and(|l| l.ends_with(";Server shut down")), "{text}");
    cluster.start_server();
    let mut client = cluster.client();
    let status = client.status_jobs(vec![id.clone()], vec![], vec![], false, false).expect("status");
    let job = &status.objects[0];
    assert_eq!(job.name, id);
    let get = |n: &str| job.attrs.iter().find(|a| a.name() == n).map(|a| a.value().to_string());
    assert_eq!(get("Job_Name").as_deref(), Some("keep"));
    assert_eq!(get("Resource_List.walltime").as_deref(), Some("00:10:00"));
    // After a clean stop the id sequence continues without a gap.
    let next = client.submit(vec![], "#!/bin/sh\n".into(), None).expect("submit after restart");
    let seq = |id: &str| id.split('.').next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(u64::MAX);
    assert_eq!(seq(&next), seq(&id) + 1, "{id} then {next}");
}
