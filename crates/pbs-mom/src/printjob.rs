//! What `printjob` prints of a job's records file (`mom_priv/jobs/<id>.JB`): the fields of
//! OpenPBS's printjob in its layout (the job's quick-save part, the mom's union, then
//! `--attributes--`), filled from our records: the launch, the start, the usage sample and
//! the result. Fields our records do not hold are printed as OpenPBS prints them unset
//! (0, empty); see docs/architecture.md "The mom" for each difference.

use std::fmt::Write as _;

use pbs_proto::mom::Usage;

use crate::layout::{JobResult, Spec, Started, Status};
use crate::records::Records;

/// OpenPBS's job states and substates as the mom has them.
const STATE_RUNNING: u32 = 4;
const STATE_EXITING: u32 = 5;
const SUBSTATE_PRERUN: u32 = 41;
const SUBSTATE_RUNNING: u32 = 42;
const SUBSTATE_EXITING: u32 = 50;
/// `JOB_SVFLG_HERE`: this mom is the job's mother superior.
const SVFLG_HERE: u32 = 1;

/// The text printjob prints for `records`, `None` when they hold no launch (not a job's
/// records file). `no_attributes` is `-a`.
pub fn format(records: &Records, no_attributes: bool) -> Option<String> {
    let spec: Spec = records.get()?;
    let launch = &spec.launch;
    let started: Option<Started> = records.get();
    let ended =
        records.get::<JobResult>().map(|r| r.exit_status).or_else(|| records.get::<Status>().map(|s| s.exit_status));
    let (state, substate) = match (started, ended) {
        (_, Some(_)) => (STATE_EXITING, SUBSTATE_EXITING),
        (Some(_), None) => (STATE_RUNNING, SUBSTATE_RUNNING),
        (None, None) => (STATE_RUNNING, SUBSTATE_PRERUN),
    };
    let svrflags = if launch.sister { 0 } else { SVFLG_HERE };
    let stime = started.map_or(0, |s| s.start_ms / 1000);
    let gid = nix::unistd::Group::from_name(&launch.group).ok().flatten().map_or(0, |g| g.gid.as_raw());
    let rule = "---------------------------------------------------";
    let mut out = String::new();
    let _ = writeln!(out, "{rule}\njobid:\t{}\n{rule}", launch.job_id);
    let _ = writeln!(out, "state:\t\t0x{state:x}");
    let _ = writeln!(out, "substate:\t0x{substate:x} ({substate})");
    let _ = writeln!(out, "svrflgs:\t0x{svrflags:x} ({svrflags})");
    let _ = writeln!(out, "stime:\t\t{stime}");
    let _ = writeln!(out, "obittime:\t\t0");
    let _ = writeln!(out, "file base:\t{}", launch.job_id);
    let _ = writeln!(out, "queue:\t\t");
    let _ = writeln!(out, "union type mom:");
    // The server's address is not in our records (the link is keyed, not addressed).
    let _ = writeln!(out, "\tsvraddr\t0");
    let _ = writeln!(out, "\texitst\t{}", ended.unwrap_or(0));
    let _ = writeln!(out, "\tuid\t{}", launch.uid.unwrap_or(0));
    let _ = writeln!(out, "\tgid\t{gid}");
    if !no_attributes {
        out.push_str("--attributes--\n");
        for (name, value) in attributes(records, &spec, substate, stime) {
            let _ = writeln!(out, "{name} = {value}");
        }
    }
    out.push('\n');
    Some(out)
}

/// The job's attributes as the mom holds them, in OpenPBS's names.
fn attributes(records: &Records, spec: &Spec, substate: u32, stime: u64) -> Vec<(String, String)> {
    let launch = &spec.launch;
    let mut attrs: Vec<(String, String)> = Vec::new();
    let mut push = |name: &str, value: String| attrs.push((name.to_string(), value));
    push("run_count", launch.run_count.to_string());
    if let Some(executable) = &launch.executable {
        let arguments: String =
            launch.arguments.iter().map(|a| format!("<jsdl-hpcpa:Argument>{a}</jsdl-hpcpa:Argument>")).collect();
        push("argument_list", arguments);
        push("executable", executable.clone());
    }
    push("hashname", launch.job_id.clone());
    push("egroup", launch.group.clone());
    push("euser", launch.user.clone());
    let variables: Vec<String> = launch.variables.iter().map(|(k, v)| format!("{k}={v}")).collect();
    push("Variable_List", variables.join(","));
    push("substate", substate.to_string());
    if let Some(started) = records.get::<Started>() {
        push("session_id", started.session_id.to_string());
        push("stime", stime.to_string());
    }
    push("Resource_List.ncpus", launch.ncpus.to_string());
    if let Some(walltime) = launch.walltime {
        push("Resource_List.walltime", hms(walltime));
    }
    if let Some(cput) = launch.cput {
        push("Resource_List.cput", hms(cput));
    }
    if let Some(mem) = launch.mem {
        push("Resource_List.mem", format!("{}kb", mem / 1024));
    }
    push("Output_Path", launch.output_path.clone());
    push("Keep_Files", launch.keep_files.clone());
    push("Join_Path", launch.join_path.clone());
    push("Error_Path", launch.error_path.clone());
    if let Some(account) = &launch.account {
        push("Account_Name", account.clone());
    }
    if let (Some(id), Some(index)) = (&launch.array_id, &launch.array_index) {
        push("array_id", id.clone());
        push("array_index", index.clone());
    }
    if let Some(usage) = records.get::<Usage>() {
        push("resources_used.cput", hms(usage.cput));
        push("resources_used.mem", format!("{}kb", usage.mem_kb));
        push("resources_used.walltime", hms(usage.walltime));
    }
    push("queue", launch.queue.clone());
    let state = if substate == SUBSTATE_EXITING { "E" } else { "R" };
    push("job_state", state.to_string());
    push("Job_Name", launch.job_name.clone());
    attrs
}

fn hms(seconds: u64) -> String {
    format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use pbs_proto::mom::JobLaunch;

    use super::*;

    fn spec() -> Spec {
        Spec {
            launch: JobLaunch {
                job_id: "24906.vm".into(),
                job_name: "pj_run".into(),
                user: "root".into(),
                uid: Some(0),
                group: "root".into(),
                queue: "workq".into(),
                executable: Some("/bin/sleep".into()),
                arguments: vec!["10".into()],
                ncpus: 1,
                output_path: "vm:/home/u/pj_run.o24906".into(),
                error_path: "vm:/home/u/pj_run.e24906".into(),
                join_path: "n".into(),
                keep_files: "n".into(),
                run_count: 1,
                ..JobLaunch::default()
            },
            home: PathBuf::from("/var/spool/pbs"),
            tmpdir_base: PathBuf::from("/var/tmp"),
            mom_port: 15002,
            notify_socket: PathBuf::from("/x"),
            shepherd_secret: String::new(),
            own_hosts: Vec::new(),
            scp: None,
        }
    }

    /// The layout of printjob_mom_JB.txt and printjob_mom_JB_a.txt, from our records.
    #[test]
    fn a_running_jobs_records_print_in_openpbs_layout() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("24906.vm.JB");
        crate::records::create(&path, &spec()).unwrap_or_else(|e| panic!("{e}"));
        let started = Started { shepherd_pid: 10, session_id: 1826, start_ms: 1_795_613_062_000 };
        crate::records::append(&path, &started).unwrap_or_else(|e| panic!("{e}"));
        let records = crate::records::read(&path);
        let head = "---------------------------------------------------\njobid:\t24906.vm\n---------------------------------------------------\nstate:\t\t0x4\nsubstate:\t0x2a (42)\nsvrflgs:\t0x1 (1)\nstime:\t\t1795613062\nobittime:\t\t0\nfile base:\t24906.vm\nqueue:\t\t\nunion type mom:\n\tsvraddr\t0\n\texitst\t0\n\tuid\t0\n\tgid\t0\n";
        assert_eq!(format(&records, true).as_deref(), Some(format!("{head}\n").as_str()));
        let full = format(&records, false).unwrap_or_default();
        assert!(full.starts_with(&format!("{head}--attributes--\nrun_count = 1\nargument_list = <jsdl-hpcpa:Argument>10</jsdl-hpcpa:Argument>\nexecutable = /bin/sleep\n")), "{full}");
        assert!(full.contains("\nsession_id = 1826\nstime = 1795613062\n"), "{full}");
        assert!(full.ends_with("job_state = R\nJob_Name = pj_run\n\n"), "{full}");
        assert_eq!(format(&Records::default(), false), None);
    }
}
