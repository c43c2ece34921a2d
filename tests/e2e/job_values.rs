//! Job attribute values the server refuses on its own, whoever sends them: a raw protocol
//! client gets the PBSE code qsub's own check gives for each value qsub refuses, and the
//! job is neither created nor altered; the values qsub itself sends still get through.

use pbs_client::ClientError;
use pbs_e2e::Cluster;
use pbs_proto::{Attr, Request};

const BADATVAL: u32 = 15014;
const JOBNBIG: u32 = 15173;

/// Values qsub refuses before sending (`illegal -X value`), with the code of its check.
fn refused() -> Vec<(&'static str, String, u32)> {
    let v = |name: &'static str, value: &str| (name, value.to_string(), BADATVAL);
    vec![
        v("Hold_Types", "nu"),
        v("Hold_Types", "x"),
        v("Keep_Files", "on"),
        v("Keep_Files", "d"),
        v("Join_Path", "xx"),
        v("Priority", "5000"),
        v("Priority", "-1025"),
        v("Checkpoint", "x5"),
        v("Checkpoint", "c=1x"),
        v("Mail_Points", "an"),
        v("Mail_Points", "j"),
        v("Mail_Points", "z"),
        v("Remove_Files", "x"),
        v("sandbox", "nowhere"),
        v("tolerate_node_failures", "some"),
        v("run_count", "-1"),
        v("Rerunable", "maybe"),
        v("Shell_Path_List", "sh"),
        v("Mail_Users", "a b"),
        v("User_List", "u1,"),
        v("group_list", "@host"),
        v("stagein", "in:/x"),
        v("stageout", "out@host"),
        v("array_indices_submitted", "1,3"),
        v("array_indices_submitted", "5-5"),
        v("depend", "afterok:"),
        v("depend", "no such thing"),
        v("depend", "afterok:1[2]"),
        v("depend", "afterok:1,"),
        v("Output_Path", " out"),
        v("Error_Path", ""),
        v("Job_Name", ""),
        ("Job_Name", "x".repeat(237), JOBNBIG),
    ]
}

#[test]
fn values_qsub_refuses_are_refused_from_any_client() {
    let c = Cluster::start();
    c.allow_root_jobs();
    for (name, value, code) in refused() {
        let attrs = vec![Attr::new("Hold_Types", "u"), Attr::new(name, value.as_str())];
        let answer = c.client().submit(attrs, "true\n".into(), None);
        match answer {
            Err(ClientError::Server { code: got, message }) => {
                assert_eq!(got.0, code, "{name}={value}: {message}");
                assert!(message.ends_with(name), "{name}={value}: {message}");
            }
            other => panic!("{name}={value:?} answered {other:?}"),
        }
    }
    assert_eq!(c.run("qselect", &[]).ok().stdout, "", "no job was created");

    let id = c.client().submit(vec![Attr::new("Hold_Types", "u")], "true\n".into(), None).expect("a plain job");
    for (name, value, code) in refused() {
        if name == "array_indices_submitted" {
            // Set at submission only: refused as read-only whatever its value.
            continue;
        }
        let before = c.job_attr(&id, name);
        let request = Request::ModifyJob { ids: vec![id.clone()], attrs: vec![Attr::new(name, value.as_str())] };
        let errors = c.client().per_id(request).expect("a per-id answer");
        let codes: Vec<u32> = errors.iter().map(|e| e.code).collect();
        assert_eq!(codes, [code], "{name}={value}: {errors:?}");
        assert_eq!(c.job_attr(&id, name), before, "{name} altered by {value:?}");
    }
}

#[test]
fn values_as_qsub_sends_them_are_kept() {
    let c = Cluster::start();
    c.allow_root_jobs();
    let host = c.server_name().to_string();
    let sent = [
        ("Checkpoint", "u".to_string()),
        ("Hold_Types", "n".to_string()),
        ("Join_Path", "oe".to_string()),
        ("Keep_Files", "n".to_string()),
        ("Mail_Points", "a".to_string()),
        ("Priority", "-1024".to_string()),
        ("Rerunable", "TRUE".to_string()),
        ("Output_Path", format!("{host}:/tmp/out/")),
        ("Error_Path", format!("{host}:/tmp/err file")),
        ("Shell_Path_List", "/bin/sh@h1,/bin/bash".to_string()),
        ("Mail_Users", "u1@h1,u2".to_string()),
        ("stagein", "in@h:/tmp/in,b@h:c".to_string()),
        ("Remove_Files", "oe".to_string()),
        ("sandbox", "private".to_string()),
        ("tolerate_node_failures", "job_start".to_string()),
        ("umask", "022".to_string()),
        ("Job_Name", "job-1.sh".to_string()),
        ("Variable_List", format!("PBS_O_WORKDIR=/tmp,PBS_O_HOST={host},A=x y")),
    ];
    let attrs: Vec<Attr> = sent.iter().map(|(n, v)| Attr::new(*n, v.as_str())).collect();
    let id = c.client().submit(attrs, "true\n".into(), None).expect("qsub's values are kept");
    assert_eq!(c.job_attr(&id, "Keep_Files").as_deref(), Some("n"));
    assert_eq!(c.job_attr(&id, "sandbox").as_deref(), Some("private"));
    // And qalter's.
    let alter = [("Hold_Types", "u"), ("Keep_Files", "oed"), ("Mail_Points", "abe"), ("Checkpoint", "c=10")];
    let attrs: Vec<Attr> = alter.iter().map(|(n, v)| Attr::new(*n, *v)).collect();
    let errors = c.client().per_id(Request::ModifyJob { ids: vec![id.clone()], attrs }).expect("an answer");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(c.job_attr(&id, "Keep_Files").as_deref(), Some("oed"));
    assert_eq!(c.job_attr(&id, "Checkpoint").as_deref(), Some("c=10"));
    // A dependency a raw client names by number is kept as qsub would have sent it.
    let seq = id.split('.').next().expect("a sequence number");
    let attrs = vec![Attr::new("Hold_Types", "u"), Attr::new("depend", format!("afterok:{seq}").as_str())];
    let second = c.client().submit(attrs, "true\n".into(), None).expect("a dependency on a job");
    assert_eq!(c.job_attr(&second, "depend"), Some(format!("afterok:{id}@{}", c.server_name())));
}
