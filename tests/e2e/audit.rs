//! The third security audit's findings, each tried as an ordinary user tried it, with a
//! raw socket client where the q-commands would refuse on their own: an attribute given
//! twice or in another spelling, values that would forge accounting fields, sizes that do
//! not parse inside a chunk.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use pbs_e2e::{Cluster, wait_until};
use pbs_proto::codec::{MAX_REPLY_FRAME_LEN, read_frame};
use pbs_proto::{Reply, ReplyBody};

fn request(stream: &mut UnixStream, frame: &serde_json::Value) -> Reply {
    let payload = serde_json::to_vec(frame).expect("json");
    let len = u32::try_from(payload.len()).expect("len");
    stream.write_all(&len.to_be_bytes()).expect("write len");
    stream.write_all(&payload).expect("write payload");
    read_frame(stream, MAX_REPLY_FRAME_LEN).expect("read reply").expect("a reply")
}

fn submit_raw(stream: &mut UnixStream, attrs: &[(&str, &str)]) -> Reply {
    let attrs: Vec<[&str; 2]> = attrs.iter().map(|(n, v)| [*n, *v]).collect();
    let frame = serde_json::json!({"id": 1, "request": {"kind": "QueueJob",
        "attrs": attrs, "script": "true\n", "destination": null}});
    request(stream, &frame)
}

fn install_hook(c: &Cluster, name: &str, event: &str, body: &str) {
    let file = c.dir().join(format!("{name}.py"));
    std::fs::write(&file, body).expect("write hook");
    c.qmgr(&format!("create hook {name} event={event}"));
    c.qmgr(&format!("import hook {name} application/x-python default {}", file.display()));
}

/// A site's cap on walltime, the policy the audit bypassed.
const CAP_HOOK: &str = "import pbs\nj = pbs.event().job\nw = j.Resource_List[\"walltime\"]\n\
                        if w is None or int(w) > 3600:\n    j.Resource_List[\"walltime\"] = pbs.duration(3600)\n";

#[test]
fn an_attribute_named_twice_or_respelled_is_refused_before_any_hook_runs() {
    let c = Cluster::start();
    install_hook(&c, "cap", "queuejob", CAP_HOOK);
    let mut nobody = c.raw_connection(true);
    let named = "Illegal attribute or resource value Resource_List.walltime";
    // The attack: the hook saw the last entry, its change landed on the first, and the
    // server kept the second.
    for twice in [
        [("Resource_List.walltime", "00:10:00"), ("Resource_List.walltime", "100:00:00")],
        [("Resource_List.walltime", "00:10:00"), ("resource_list.walltime", "100:00:00")],
        [("RESOURCE_LIST.walltime", "100:00:00"), ("Resource_List.walltime", "00:10:00")],
    ] {
        let r = submit_raw(&mut nobody, &[("Hold_Types", "u"), twice[0], twice[1]]);
        assert_eq!((r.code, r.message.as_str()), (15014, named), "{twice:?}");
    }
    // Any attribute, not only resources.
    let r = submit_raw(&mut nobody, &[("Hold_Types", "u"), ("Priority", "1"), ("PRIORITY", "2")]);
    assert_eq!((r.code, r.message.as_str()), (15014, "Illegal attribute or resource value Priority"));
    // A single entry in another spelling is the attribute itself: the hook sees it under its
    // name and its cap is what the job keeps.
    let r = submit_raw(&mut nobody, &[("Hold_Types", "u"), ("resource_list.walltime", "100:00:00")]);
    let ReplyBody::JobId(id) = r.body else { panic!("no job id: {r:?}") };
    assert_eq!(c.job_attr(&id, "Resource_List.walltime").as_deref(), Some("01:00:00"));
    // qalter the same way: refused before the job is touched.
    let alter = serde_json::json!({"id": 2, "request": {"kind": "ModifyJob", "ids": [id.clone()],
        "attrs": [["Resource_List.walltime", "00:20:00"], ["resource_list.WALLTIME", "99:00:00"]]}});
    let r = request(&mut nobody, &alter);
    let failed = match &r.body {
        ReplyBody::PerId(each) => each.first().map(|e| (e.code, e.message.clone())),
        _ => None,
    };
    assert_eq!(failed.or(Some((r.code, r.message.clone()))).map(|(code, _)| code), Some(15014), "{r:?}");
    assert_eq!(c.job_attr(&id, "Resource_List.walltime").as_deref(), Some("01:00:00"));

    // The commands keep OpenPBS's rule, the last option wins, and send one entry.
    let id = c
        .run_as_nobody("qsub", &["-h", "-l", "walltime=00:10:00", "-l", "walltime=100:00:00", "--", "/bin/true"])
        .ok()
        .line()
        .to_string();
    assert_eq!(c.job_attr(&id, "Resource_List.walltime").as_deref(), Some("01:00:00"));
    c.qmgr("delete hook cap");
    let id = c
        .run_as_nobody("qsub", &["-h", "-l", "walltime=00:10:00", "-l", "walltime=00:30:00", "--", "/bin/true"])
        .ok()
        .line()
        .to_string();
    assert_eq!(c.job_attr(&id, "Resource_List.walltime").as_deref(), Some("00:30:00"));
    c.run_as_nobody("qalter", &["-l", "walltime=00:05:00", "-l", "walltime=00:06:00", &id]).ok();
    assert_eq!(c.job_attr(&id, "Resource_List.walltime").as_deref(), Some("00:06:00"));
}

/// The `key=value` fields of a record's text as a reader that honours quotes reads them: a
/// value that opens with `"` or `'` runs to the same quote.
fn fields(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].to_string();
        let after = &rest[eq + 1..];
        let (value, next) = match after.chars().next() {
            Some(q @ ('"' | '\'')) => match after[1..].find(q) {
                Some(end) => (after[1..=end].to_string(), &after[end + 2..]),
                None => (after[1..].to_string(), ""),
            },
            _ => match after.find(' ') {
                Some(end) => (after[..end].to_string(), &after[end..]),
                None => (after.to_string(), ""),
            },
        };
        out.push((key, value));
        rest = next.trim_start();
    }
    out
}

#[test]
fn no_value_a_user_chose_reads_as_a_field_of_an_accounting_record() {
    let c = Cluster::start();
    let mut nobody = c.raw_connection(true);
    let forged_name = "x user=root queue=forged";
    let forged_account = "a\" user=root group=root '";
    let r = submit_raw(
        &mut nobody,
        &[("Hold_Types", "u"), ("Job_Name", forged_name), ("Account_Name", forged_account), ("project", "p\"q")],
    );
    let ReplyBody::JobId(id) = r.body else { panic!("no job id: {r:?}") };
    let queued = || c.accounting_records(&id).into_iter().find_map(|(kind, rest)| (kind == 'Q').then_some(rest));
    wait_until("the Q record", Duration::from_secs(10), || queued().is_some());
    let text = queued().expect("Q record");
    let fields = fields(&text);
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.iter().filter(|k| **k == "user").count(), 1, "{text}");
    assert_eq!(keys.iter().filter(|k| **k == "queue").count(), 1, "{text}");
    assert_eq!(keys.iter().filter(|k| **k == "group").count(), 1, "{text}");
    let value = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    assert_eq!(value("user").as_deref(), Some("nobody"), "{text}");
    assert_eq!(value("jobname").as_deref(), Some(forged_name), "{text}");
    assert_eq!(value("queue").as_deref(), Some("workq"), "{text}");
    assert_eq!(value("project").as_deref(), Some("p\"q"), "{text}");
    // OpenPBS's own form where it has one: a blank quotes the value with `"`.
    assert!(text.contains(&format!("jobname=\"{forged_name}\" ")), "{text}");
}

#[test]
fn a_size_that_does_not_parse_in_a_chunk_is_refused_not_counted_as_nothing() {
    let c = Cluster::start();
    c.qmgr("set queue workq resources_max.mem = 1gb");
    for bad in ["8eb", "1.5gb", "99999999999999999999999gb"] {
        let select = format!("select=1:ncpus=1:mem={bad}");
        let out = c.run_as_nobody("qsub", &["-h", "-l", &select, "--", "/bin/true"]);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (166, "qsub: Illegal attribute or resource value Resource_List.select\n"),
            "{bad}: {out:?}"
        );
    }
    let mut nobody = c.raw_connection(true);
    let r = submit_raw(&mut nobody, &[("Hold_Types", "u"), ("Resource_List.select", "2:mem=1.5gb:ncpus=1")]);
    assert_eq!(r.code, 15014, "{r:?}");
    // A size that parses is held to resources_max as before.
    let r = submit_raw(&mut nobody, &[("Hold_Types", "u"), ("Resource_List.select", "1:mem=2gb:ncpus=1")]);
    assert_ne!(r.code, 0, "{r:?}");
    let r = submit_raw(&mut nobody, &[("Hold_Types", "u"), ("Resource_List.select", "1:mem=512mb:ncpus=1")]);
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn a_dependency_list_is_bounded_by_the_jobs_it_names() {
    let c = Cluster::start();
    let mut nobody = c.raw_connection(true);
    let r = submit_raw(&mut nobody, &[("Hold_Types", "u")]);
    let ReplyBody::JobId(parent) = r.body else { panic!("no job id: {r:?}") };
    // Nearly the most a value may hold, naming one job over and over: kept once.
    let repeats = ((1 << 20) - "afterok".len()) / (parent.len() + 1);
    let list = format!("afterok{}", format!(":{parent}").repeat(repeats));
    let r = submit_raw(&mut nobody, &[("depend", list.as_str())]);
    let ReplyBody::JobId(child) = r.body else { panic!("no job id: {r:?}") };
    let kept = c.job_attr(&child, "depend").expect("depend");
    assert_eq!(kept, format!("afterok:{parent}@{}", c.server_name()));
    let parents = c.job_attr(&parent, "depend").expect("the parent's before entry");
    assert!(parents.len() < 200, "{parents}");
    // Its Q record holds the list as kept, not as sent.
    wait_until("the Q record", Duration::from_secs(10), || c.accounting_kinds(&child).contains('Q'));
    let log = c.accounting_log();
    let record = log.lines().find(|l| l.contains(&format!(";Q;{child};"))).expect("record");
    assert!(record.len() < 1000, "{} bytes", record.len());
    // More than 4096 distinct jobs is refused, naming depend, by the server and by qsub.
    let many: String = (1..=4097).map(|i| format!(":{i}")).collect();
    let r = submit_raw(&mut nobody, &[("depend", format!("afterok{many}").as_str())]);
    assert_eq!((r.code, r.message.as_str()), (15014, "Illegal attribute or resource value depend"));
    let r = submit_raw(&mut nobody, &[("depend", "on:4097")]);
    assert_eq!(r.code, 15014, "{r:?}");
    let out = c.run_as_nobody("qsub", &["-W", &format!("depend=afterok{many}"), "--", "/bin/true"]);
    assert_eq!((out.code, out.stderr.as_str()), (166, "qsub: Illegal attribute or resource value depend\n"));
}
