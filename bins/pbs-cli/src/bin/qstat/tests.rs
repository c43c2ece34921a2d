//! Outputs of OpenPBS 23.06 (shared/reference/openpbs-outputs/qstat_*.txt, host `vm`)
//! reproduced from the status objects a server sends. Full displays are checked by
//! unfolding OpenPBS's text into objects (dates back to epoch seconds, as the server sends
//! them) and formatting them again.

use chrono::{Local, NaiveDateTime, TimeZone};
use pbs_cli::timefmt::is_time_attribute;
use pbs_proto::{Attr, IdError, StatusObject};

use super::*;
use crate::jobs::SizeUnit;

fn object(name: &str, attrs: &[(&str, &str)]) -> StatusObject {
    StatusObject { name: name.into(), attrs: attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect() }
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// `expected` against what `f` writes, with a readable diff on failure.
fn check(expected: &str, f: impl FnOnce(&mut Vec<u8>)) {
    let mut out = Vec::new();
    f(&mut out);
    let got = text(&out);
    if got != expected {
        for (i, (g, e)) in got.lines().zip(expected.lines()).enumerate() {
            if g != e {
                panic!("line {}:\n got: {g:?}\nwant: {e:?}\n\nwhole output:\n{got}", i + 1);
            }
        }
        panic!("outputs differ in length:\n got: {got:?}\nwant: {expected:?}");
    }
}

/// Epoch seconds of a ctime(3) date in the local time zone.
fn epoch(date: &str) -> String {
    let naive = NaiveDateTime::parse_from_str(date, "%a %b %e %H:%M:%S %Y").unwrap_or_else(|e| panic!("{date}: {e}"));
    Local.from_local_datetime(&naive).single().map(|t| t.timestamp()).unwrap_or_default().to_string()
}

/// The objects a full (`-f`) display was made from: continuation lines joined back, dates
/// turned back into epoch seconds, the title (`Job Id: `...) giving the name.
fn unfold(display: &str) -> Vec<StatusObject> {
    let mut objects: Vec<StatusObject> = Vec::new();
    for line in display.lines() {
        if let Some(cont) = line.strip_prefix('\t') {
            let last = objects.last_mut().and_then(|o| o.attrs.last_mut()).expect("continuation line");
            last.1.push_str(cont);
        } else if let Some(attr) = line.strip_prefix("    ") {
            let (name, value) = attr.split_once(" = ").expect("name = value");
            objects.last_mut().expect("object").attrs.push(Attr::new(name, value));
        } else if let Some((_, name)) = line.split_once(": ") {
            objects.push(StatusObject { name: name.into(), attrs: Vec::new() });
        }
    }
    for object in &mut objects {
        for attr in &mut object.attrs {
            if is_time_attribute(&attr.0) {
                attr.1 = epoch(&attr.1);
            }
        }
    }
    objects
}

fn job_row(id: &str, name: &str, state: &str, cput: Option<&str>) -> StatusObject {
    let mut attrs = vec![("Job_Name", name), ("Job_Owner", "pbsuser@vm")];
    if let Some(cput) = cput {
        attrs.push(("resources_used.cput", cput));
    }
    attrs.extend([("job_state", state), ("queue", "workq")]);
    object(id, &attrs)
}

/// The four jobs of the alternate-display references, with what `-a -n -s` asks for.
fn alternate_jobs() -> Vec<StatusObject> {
    vec![
        object(
            "26340.vm",
            &[
                ("Job_Name", "heldjob"),
                ("Job_Owner", "pbsuser@vm"),
                ("job_state", "H"),
                ("queue", "workq"),
                ("Resource_List.ncpus", "1"),
                ("Resource_List.nodect", "1"),
                ("Resource_List.place", "pack"),
                ("Resource_List.select", "1:ncpus=1"),
                ("Resource_List.walltime", "01:00:00"),
            ],
        ),
        object(
            "26341.vm",
            &[
                ("Job_Name", "runjob"),
                ("Job_Owner", "pbsuser@vm"),
                ("resources_used.cpupercent", "0"),
                ("resources_used.cput", "00:00:00"),
                ("resources_used.mem", "0kb"),
                ("resources_used.ncpus", "1"),
                ("resources_used.vmem", "0kb"),
                ("resources_used.walltime", "00:00:00"),
                ("job_state", "R"),
                ("queue", "workq"),
                ("exec_host", "vm/0"),
                ("Resource_List.ncpus", "1"),
                ("Resource_List.nodect", "1"),
                ("Resource_List.walltime", "00:10:00"),
                ("session_id", "12694"),
                ("comment", "Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1)"),
            ],
        ),
        object(
            "26344[].vm",
            &[
                ("Job_Name", "arrjob"),
                ("Job_Owner", "pbsuser@vm"),
                ("job_state", "B"),
                ("queue", "workq"),
                ("Resource_List.ncpus", "1"),
                ("Resource_List.nodect", "1"),
                ("comment", "Job Array Began at Sun Nov 22 at 20:35"),
            ],
        ),
        object(
            "26345.vm",
            &[
                ("Job_Name", "bigjob"),
                ("Job_Owner", "pbsuser@vm"),
                ("job_state", "Q"),
                ("queue", "workq"),
                ("Resource_List.ncpus", "64"),
                ("Resource_List.nodect", "1"),
                ("comment", "Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 2 T: 2)"),
            ],
        ),
    ]
}

fn default_table(jobs: &[StatusObject]) -> impl FnOnce(&mut Vec<u8>) + '_ {
    move |out| {
        jobs::default_header(out, Layout::default(), false, None);
        jobs::default_rows(out, jobs, Layout::default(), false);
    }
}

#[test]
fn default_table_matches_openpbs() {
    let jobs = vec![
        job_row("26340.vm", "heldjob", "H", None),
        job_row("26341.vm", "runjob", "R", Some("00:00:00")),
        job_row("26344[].vm", "arrjob", "B", None),
        job_row("26345.vm", "bigjob", "Q", None),
    ];
    check(QSTAT_DEFAULT, default_table(&jobs));
    check(QSTAT_J, default_table(&jobs[2..3]));
    check(QSTAT_ARRAY, default_table(&jobs[2..3]));
    let mut with_subjobs = vec![jobs[2].clone(), job_row("26344[0].vm", "arrjob", "R", Some("00:00:00"))];
    for i in 1..10 {
        with_subjobs.push(job_row(&format!("26344[{i}].vm"), "arrjob", "Q", None));
    }
    check(QSTAT_ARRAY_T, default_table(&with_subjobs));
}

#[test]
fn default_table_cuts_long_values() {
    let jobs = [object(
        "123456789012345678.host.example.com",
        &[
            ("Job_Name", "a_sixteen_chars_"),
            ("Job_Owner", "averyveryverylonguser@host"),
            ("job_state", "R"),
            ("queue", "averyveryverylongqueue"),
            ("resources_used.cput", "1234:00:00"),
        ],
    )];
    let expected = "1234567890123456* a_sixteen_chars* averyveryverylo*  1234:00* R averyveryverylo*\n";
    check(expected, |out| jobs::default_rows(out, &jobs, Layout::default(), false));
    // Wide: longer columns, and names of 15 characters are already cut.
    let expected = "123456789012345678.host        a_sixteen_char* averyveryveryl*  1234:00* R averyveryveryl*\n";
    check(expected, |out| jobs::default_rows(out, &jobs, Layout { wide: true, incr: false }, false));
    check(
        "Job id                 Name             User              Time Use S Queue\n---------------------  ---------------- ----------------  -------- - -----\n",
        |out| jobs::default_header(out, Layout { wide: false, incr: true }, false, None),
    );
}

#[test]
fn percent_column() {
    let jobs = [
        object("1.vm", &[("Job_Name", "a"), ("Job_Owner", "u@vm"), ("job_state", "Q"), ("queue", "workq")]),
        object(
            "2.vm",
            &[
                ("Job_Name", "b"),
                ("Job_Owner", "u@vm"),
                ("resources_used.walltime", "00:05:00"),
                ("job_state", "R"),
                ("queue", "workq"),
                ("Resource_List.walltime", "00:10:00"),
            ],
        ),
        object(
            "3[].vm",
            &[
                ("Job_Name", "c"),
                ("Job_Owner", "u@vm"),
                ("job_state", "B"),
                ("queue", "workq"),
                ("array_state_count", "Queued:6 Running:2 Exiting:0 Expired:2 "),
            ],
        ),
    ];
    let expected = "Job id            Name             User               % done  S Queue\n\
                    ----------------  ---------------- ----------------  -------- - -----\n\
                    1.vm              a                u                      --  Q workq           \n\
                    2.vm              b                u                      50  R workq           \n\
                    3[].vm            c                u                      20  B workq           \n";
    check(expected, |out| {
        jobs::default_header(out, Layout::default(), true, None);
        jobs::default_rows(out, &jobs, Layout::default(), true);
    });
}

fn alternate(options: &str) -> AltOptions {
    let mut alt = AltOptions::default();
    for c in options.chars() {
        match c {
            'n' => alt.nodes = true,
            's' => alt.comments = true,
            '1' => alt.one_line = true,
            'w' => alt.layout.wide = true,
            _ => {}
        }
    }
    alt
}

fn alternate_table(jobs: &[StatusObject], options: AltOptions) -> impl FnOnce(&mut Vec<u8>) + '_ {
    move |out| {
        jobs::alt_header(out, Header { server: "vm", comment: None }, options);
        jobs::alt_rows(out, jobs, options, 0);
    }
}

#[test]
fn alternate_table_matches_openpbs() {
    let mut jobs = alternate_jobs();
    // `-a` does not ask for exec_host and comment.
    let plain: Vec<StatusObject> = jobs
        .iter()
        .map(|j| {
            let mut j = j.clone();
            j.attrs.retain(|a| a.0 != "exec_host" && a.0 != "comment");
            j
        })
        .collect();
    check(QSTAT_A, alternate_table(&plain, alternate("")));
    check(QSTAT_ANS1, alternate_table(&jobs, alternate("nsw1")));
    jobs.drain(..3);
    check(QSTAT_S, alternate_table(&jobs, alternate("s")));
}

#[test]
fn alternate_table_details() {
    // Missing values, cut columns, memory sizes, cput instead of walltime, comment cut.
    let long_comment = "x".repeat(80);
    let jobs = [object(
        "1234567890123456.vm",
        &[
            ("Job_Name", "averylongjobname"),
            ("Job_Owner", "longusername@vm"),
            ("job_state", "R"),
            ("queue", "longqueuename"),
            ("Resource_List.mem", "1048576kb"),
            ("Resource_List.cput", "10:00:00"),
            ("Resource_List.walltime", "20:00:00"),
            ("resources_used.cput", "01:30:00"),
            ("session_id", "12345678"),
            ("comment", &long_comment),
        ],
    )];
    let expected = format!(
        "12345678901234* longuse* longque* averylong* 12345*  --  --  1024m 10:00 R 01:30\n   {}...\n",
        "x".repeat(70)
    );
    check(&expected, |out| jobs::alt_rows(out, &jobs, alternate("s"), 0));
}

#[test]
fn sizes_convert_like_openpbs() {
    let check_size = |value: &str, unit: SizeUnit, expected: &str| {
        assert_eq!(jobs::convert_size(value, unit), expected, "{value} {unit:?}");
    };
    check_size("4gb", SizeUnit::Auto, "4gb");
    check_size("1048576kb", SizeUnit::Auto, "1024mb");
    check_size("10000kb", SizeUnit::Auto, "10mb");
    check_size("1024", SizeUnit::Auto, "1024 b");
    check_size("2gb", SizeUnit::MegaWords, "256mw");
    check_size("512mb", SizeUnit::GigaBytes, "1gb");
    check_size("8kw", SizeUnit::Auto, "8kw");
}

#[test]
fn node_lines() {
    let check_nodes = |hosts: &str, one_line: bool, expected: &str| {
        check(expected, |out| jobs::node_lines(out, hosts.as_bytes(), one_line));
    };
    check_nodes("vm/0", false, "   vm/0\n");
    check_nodes("vm.example.com/0*2+other.example.com/1", false, "   vm/0*2+other/1\n");
    check_nodes("10.0.0.1/0", true, "10.0.0.1/0\n");
    let many: Vec<String> = (0..12).map(|i| format!("node{i:02}/0")).collect();
    check_nodes(
        &many.join("+"),
        false,
        "   node00/0+node01/0+node02/0+node03/0+node04/0+node05/0+node06/0+node07/0+\n   node08/0+node09/0+node10/0+node11/0\n",
    );
}

#[test]
fn full_display_matches_openpbs() {
    for (name, expected) in [
        ("running", QSTAT_F_RUNNING),
        ("cannot run", QSTAT_F_CANNOT_RUN),
        ("finished", QSTAT_F_FINISHED),
        ("array", QSTAT_F_ARRAY),
        ("subjob", QSTAT_F_SUBJOB),
        ("held", QSTAT_F_HELD),
        ("held after soft", QSTAT_F_HELD_AFTER_SOFT),
        ("exit 3", QSTAT_FX_EXIT3),
        ("set soft", HOOKS_QSTAT_F_SET_SOFT),
        ("soft from hook", HOOKS_QSTAT_F_SOFT_FROM_HOOK),
    ] {
        let jobs = unfold(expected);
        assert_eq!(jobs.len(), 1, "{name}");
        check(expected, |out| full::text(out, Kind::Job, &jobs, false));
    }
    let queues = unfold(QSTAT_QF_WORKQ);
    check(QSTAT_QF_WORKQ, |out| full::text(out, Kind::Queue, &queues, false));
    let servers = unfold(QSTAT_BF);
    check(QSTAT_BF, |out| full::text(out, Kind::Server, &servers, false));
}

#[test]
fn full_display_one_line_and_special_values() {
    let job = object(
        "1.vm",
        &[
            ("Job_Name", "a\nb"),
            ("Resource_List.select", "1:ncpus=1"),
            ("executable", "/bin/sleep"),
            (
                "Submit_arguments",
                "<jsdl-hpcpa:Argument>-N</jsdl-hpcpa:Argument><jsdl-hpcpa:Argument>x y</jsdl-hpcpa:Argument>",
            ),
            ("estimated.start_time", "0"),
            ("comment", "a,,b,"),
        ],
    );
    check(
        "Job Id: 1.vm\n    Job_Name = a\\nb\n    Resource_List.select = 1:ncpus=1\n    \
         executable = <jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>\n    Submit_arguments = -N x y\n    \
         estimated.start_time = UNKNOWN\n    comment = a,,b,\n\n",
        |out| full::text(out, Kind::Job, std::slice::from_ref(&job), true),
    );
    // Folded display: empty comma-separated pieces vanish, as with strtok.
    check("    comment = a,b\n", |out| {
        full::attr_folded(out, "comment", b"a,,b,");
        out.push(b'\n');
    });
    // A job without attributes still ends with two newlines.
    check("Job Id: 2.vm\n\n\n", |out| full::text(out, Kind::Job, &[object("2.vm", &[])], false));
}

#[test]
fn dsv_matches_openpbs() {
    let jobs = unfold(QSTAT_F_HELD);
    check(QSTAT_F_DSV, |out| full::dsv(out, Kind::Job, &jobs, "|"));
    let job = object("1.vm", &[("Job_Name", "a|b"), ("comment", "x\ny")]);
    check("Job Id: 1.vm|Job_Name=a\\|b|comment=x\\ny\n", |out| {
        full::dsv(out, Kind::Job, std::slice::from_ref(&job), "|")
    });
}

fn json_of(jobs: &[StatusObject]) -> String {
    let mut out = Vec::new();
    let value_of = |name: &str, value: &str| full::shown_value(Kind::Job, name, value).into_owned();
    let section = if jobs.is_empty() { None } else { Some(("Jobs", jobs)) };
    json::document(&mut out, 1_795_379_761, "23.06.06", "vm", section, &value_of);
    text(&out)
}

#[test]
fn json_matches_openpbs() {
    let jobs = unfold(QSTAT_F_RUNNING);
    assert_eq!(json_of(&jobs), QSTAT_F_JSON);
    assert_eq!(json_of(&jobs), QSTAT_F_JSON_X_MULTI);
    let parsed: serde_json::Value = serde_json::from_str(&json_of(&jobs)).expect("valid JSON");
    assert_eq!(parsed["Jobs"]["26341.vm"]["Resource_List"]["ncpus"], 1);
    assert_eq!(
        json_of(&[]),
        "{\n\t\"timestamp\":\t1795379761,\n\t\"pbs_version\":\t\"23.06.06\",\n\t\"pbs_server\":\t\"vm\"\n}\n"
    );
    let odd = [object("1.vm", &[("Job_Name", "123"), ("Variable_List", "A=1\\,2,B"), ("project", "7")])];
    assert_eq!(
        json_of(&odd),
        "{\n\t\"timestamp\":\t1795379761,\n\t\"pbs_version\":\t\"23.06.06\",\n\t\"pbs_server\":\t\"vm\",\n\t\"Jobs\":\t{\n\
         \t\t\"1.vm\":\t{\n\t\t\t\"Job_Name\":\t\"123\",\n\t\t\t\"Variable_List\":\t{\n\t\t\t\t\"A\":\t\"1,2\",\n\
         \t\t\t\t\"B\":\t\"\"\n\t\t\t},\n\t\t\t\"project\":\t\"7\"\n\t\t}\n\t}\n}\n"
    );
}

fn workq() -> StatusObject {
    let mut queue = unfold(QSTAT_QF_WORKQ).remove(0);
    queue.attrs.retain(|a| a.0 != "state_count");
    queue.attrs.push(Attr::new("state_count", "Transit:0 Queued:1 Held:1 Waiting:0 Running:2 Exiting:0 Begun:1 "));
    queue
}

#[test]
fn queue_and_server_tables_match_openpbs() {
    check(QSTAT_Q, |out| {
        queues::queue_header(out);
        queues::queue_rows(out, &[workq()]);
    });
    let server = unfold(QSTAT_BF).remove(0);
    check(QSTAT_B, |out| {
        queues::server_header(out);
        queues::server_rows(out, std::slice::from_ref(&server));
    });
}

#[test]
fn queue_limits_match_openpbs() {
    check(QSTAT_Q_LOWER, |out| queues::queue_limits(out, "vm", &[workq()], SizeUnit::Auto));
}

#[test]
fn error_lines_match_openpbs() {
    let unknown = IdError { id: "99999.vm".into(), code: 15001, message: "Unknown Job Id".into() };
    assert_eq!(format!("{}\n", error_line(&unknown)), QSTAT_UNKNOWN_STDERR);
    assert_eq!(format!("{}\n", error_line(&unknown)), QSTAT_UNKNOWN_F_STDERR);
    assert_eq!(pbs_cli::exit_code(unknown.code), std::process::ExitCode::from(153));
    let finished = IdError { id: "2.vm".into(), code: 15139, message: "Job has finished".into() };
    assert_eq!(
        error_line(&finished),
        "qstat: 2.vm Job has finished, use -x or -H to obtain historical job information"
    );
    let bare = IdError { id: "3.vm".into(), code: 15999, message: String::new() };
    assert_eq!(error_line(&bare), "qstat: Server returned error 15999 for job 3.vm");
}

#[test]
fn operands() {
    assert!(is_job_id("12") && is_job_id("12[].vm") && !is_job_id("workq") && !is_job_id("@vm"));
    let (id, server) = split_job_operand("12@other").expect("valid");
    assert_eq!((id.to_string(), server), ("12".to_string(), Some("other")));
    assert_eq!(split_job_operand("12[].vm").map(|(id, _)| id.to_string()), Some("12[].vm".to_string()));
    assert!(split_job_operand("12x").is_none());
    assert_eq!(parse_destination("workq@vm"), Some(("workq", Some("vm"))));
    assert_eq!(parse_destination("@vm"), Some(("", Some("vm"))));
    assert_eq!(parse_destination("averyverylongqueuename"), None);
    let mut ids = vec!["10.b".to_string(), "2.b".into(), "3.a".into(), "2[5].b".into(), "2[10].b".into()];
    ids.sort_by_key(|o| sort_key(o));
    assert_eq!(ids, ["3.a", "2.b", "2[5].b", "2[10].b", "10.b"]);
}

#[test]
fn selection_filters() {
    let parse = |line: &str| options::parse(&line.split_whitespace().map(String::from).collect::<Vec<_>>());
    let job = |id: &str, state: &str, owner: &str| {
        object(id, &[("Job_Owner", owner), ("job_state", state), ("queue", "workq")])
    };
    let keeps = |line: &str, j: &StatusObject| Filter::new(&parse(line).expect("options")).keeps(j);
    let queued = job("1.vm", "Q", "alice@vm");
    let running = job("2.vm", "R", "bob@host.example");
    let parent = job("3[].vm", "B", "alice@vm");
    let subjob = job("3[1].vm", "Q", "alice@vm");
    assert!(keeps("-i", &queued) && !keeps("-i", &running));
    assert!(keeps("-r", &running) && !keeps("-r", &queued));
    assert!(keeps("-u bob", &running) && !keeps("-u bob", &queued));
    assert!(keeps("-u carol,bob@*.example", &running));
    assert!(keeps("-J", &parent) && !keeps("-J", &queued) && !keeps("-J", &subjob));
    assert!(keeps("-J -t", &subjob) && !keeps("-J -t", &parent));
    assert!(!keeps("", &subjob) && keeps("-t", &subjob));
    assert!(keeps("-H", &job("4.vm", "F", "alice@vm")) && !keeps("-H", &queued));
}

#[test]
fn objects_are_matched_to_requested_ids() {
    let objects = [object("1.vm", &[]), object("3[].vm", &[]), object("3[1].vm", &[]), object("4.vm", &[])];
    let ids = ["1.vm".to_string(), "2.vm".into(), "3[].vm".into(), "4.vm".into()];
    assert_eq!(operand_of_each(&objects, &ids), [0, 2, 2, 3]);
}

#[test]
fn estimated_start_times() {
    let now = Local.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).single().map(|t| t.timestamp()).unwrap_or_default();
    let at = |days: i64, hours: i64| Some((now + days * 86_400 + hours * 3600).to_string());
    assert_eq!(jobs::estimated_start(None, now), "--");
    assert_eq!(jobs::estimated_start(Some("0"), now), "?");
    assert_eq!(jobs::estimated_start(at(0, -1).as_deref(), now), "--");
    assert_eq!(jobs::estimated_start(at(0, 3).as_deref(), now), "15:00");
    assert_eq!(jobs::estimated_start(at(2, 3).as_deref(), now), "Tu 15");
    assert_eq!(jobs::estimated_start(at(20, 0).as_deref(), now), "2026".replace("2026", "Dec"));
    assert_eq!(jobs::estimated_start(at(400, 0).as_deref(), now), "2027");
    assert_eq!(jobs::estimated_start(at(3000, 0).as_deref(), now), ">5yrs");
}
/// `qstat` (exit 0).
const QSTAT_DEFAULT: &str = r#"Job id            Name             User              Time Use S Queue
----------------  ---------------- ----------------  -------- - -----
26340.vm          heldjob          pbsuser                  0 H workq           
26341.vm          runjob           pbsuser           00:00:00 R workq           
26344[].vm        arrjob           pbsuser                  0 B workq           
26345.vm          bigjob           pbsuser                  0 Q workq           
"#;

/// `qstat -J` (exit 0).
const QSTAT_J: &str = r#"Job id            Name             User              Time Use S Queue
----------------  ---------------- ----------------  -------- - -----
26344[].vm        arrjob           pbsuser                  0 B workq           
"#;

/// `qstat 26344[].vm` (exit 0).
const QSTAT_ARRAY: &str = r#"Job id            Name             User              Time Use S Queue
----------------  ---------------- ----------------  -------- - -----
26344[].vm        arrjob           pbsuser                  0 B workq           
"#;

/// `qstat -t 26344[].vm` (exit 0).
const QSTAT_ARRAY_T: &str = r#"Job id            Name             User              Time Use S Queue
----------------  ---------------- ----------------  -------- - -----
26344[].vm        arrjob           pbsuser                  0 B workq           
26344[0].vm       arrjob           pbsuser           00:00:00 R workq           
26344[1].vm       arrjob           pbsuser                  0 Q workq           
26344[2].vm       arrjob           pbsuser                  0 Q workq           
26344[3].vm       arrjob           pbsuser                  0 Q workq           
26344[4].vm       arrjob           pbsuser                  0 Q workq           
26344[5].vm       arrjob           pbsuser                  0 Q workq           
26344[6].vm       arrjob           pbsuser                  0 Q workq           
26344[7].vm       arrjob           pbsuser                  0 Q workq           
26344[8].vm       arrjob           pbsuser                  0 Q workq           
26344[9].vm       arrjob           pbsuser                  0 Q workq           
"#;

/// `qstat -a` (exit 0).
const QSTAT_A: &str = r#"
vm: 
                                                            Req'd  Req'd   Elap
Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time
--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----
26340.vm        pbsuser  workq    heldjob       --    1   1    --  01:00 H   -- 
26341.vm        pbsuser  workq    runjob      12694   1   1    --  00:10 R 00:00
26344[].vm      pbsuser  workq    arrjob        --    1   1    --    --  B   -- 
26345.vm        pbsuser  workq    bigjob        --    1  64    --    --  Q   -- 
"#;

/// `qstat -answ1` (exit 0).
const QSTAT_ANS1: &str = r#"
vm: 
                                                                                                   Req'd  Req'd   Elap
Job ID                         Username        Queue           Jobname         SessID   NDS  TSK   Memory Time  S Time
------------------------------ --------------- --------------- --------------- -------- ---- ----- ------ ----- - -----
26340.vm                       pbsuser         workq           heldjob              --     1     1    --  01:00 H   --   -- 
    -- 
26341.vm                       pbsuser         workq           runjob             12694    1     1    --  00:10 R 00:00 vm/0
   Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1)
26344[].vm                     pbsuser         workq           arrjob               --     1     1    --    --  B   --   -- 
   Job Array Began at Sun Nov 22 at 20:35
26345.vm                       pbsuser         workq           bigjob               --     1    64    --    --  Q   --   -- 
   Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 2 T: 2)
"#;

/// `qstat -s 26345.vm` (exit 0).
const QSTAT_S: &str = r#"
vm: 
                                                            Req'd  Req'd   Elap
Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time
--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----
26345.vm        pbsuser  workq    bigjob        --    1  64    --    --  Q   -- 
   Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 2 T: 2)
"#;

/// `qstat -f 26341.vm` (exit 0).
const QSTAT_F_RUNNING: &str = r#"Job Id: 26341.vm
    Job_Name = runjob
    Job_Owner = pbsuser@vm
    resources_used.cpupercent = 0
    resources_used.cput = 00:00:00
    resources_used.mem = 0kb
    resources_used.ncpus = 1
    resources_used.vmem = 0kb
    resources_used.walltime = 00:00:00
    job_state = R
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:54 2026
    Error_Path = vm:/home/pbsuser/runjob.e26341
    exec_host = vm/0
    exec_vnode = (vm:ncpus=1)
    Hold_Types = n
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:35:55 2026
    Output_Path = vm:/home/pbsuser/runjob.o26341
    Priority = 0
    qtime = Sun Nov 22 20:35:54 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    Resource_List.walltime = 00:10:00
    stime = Sun Nov 22 20:35:54 2026
    session_id = 12694
    jobdir = /home/pbsuser
    substate = 42
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    comment = Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1)
    etime = Sun Nov 22 20:35:54 2026
    run_count = 1
    Submit_arguments = -N runjob -l walltime=00:10:00 -- /bin/sleep 30
    executable = <jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>
    argument_list = <jsdl-hpcpa:Argument>30</jsdl-hpcpa:Argument>
    project = _pbs_project_default
    Submit_Host = vm

"#;

/// `qstat -f 26345.vm` (exit 0).
const QSTAT_F_CANNOT_RUN: &str = r#"Job Id: 26345.vm
    Job_Name = bigjob
    Job_Owner = pbsuser@vm
    job_state = Q
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:54 2026
    Error_Path = vm:/home/pbsuser/bigjob.e26345
    Hold_Types = n
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:35:54 2026
    Output_Path = vm:/home/pbsuser/bigjob.o26345
    Priority = 0
    qtime = Sun Nov 22 20:35:54 2026
    Rerunable = True
    Resource_List.ncpus = 64
    Resource_List.nodect = 1
    Resource_List.place = free
    Resource_List.select = 1:ncpus=64
    substate = 10
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    comment = Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 2
	 T: 2)
    etime = Sun Nov 22 20:35:54 2026
    Submit_arguments = -N bigjob -l select=1:ncpus=64 -- /bin/true
    executable = <jsdl-hpcpa:Executable>/bin/true</jsdl-hpcpa:Executable>
    project = _pbs_project_default
    Submit_Host = vm

"#;

/// `qstat -fx 26342.vm` (exit 0).
const QSTAT_F_FINISHED: &str = r#"Job Id: 26342.vm
    Job_Name = donejob
    Job_Owner = pbsuser@vm
    resources_used.cpupercent = 0
    resources_used.cput = 00:00:00
    resources_used.mem = 0kb
    resources_used.ncpus = 1
    resources_used.vmem = 0kb
    resources_used.walltime = 00:00:00
    job_state = F
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:54 2026
    Error_Path = vm:/home/pbsuser/donejob.e26342
    exec_host = vm/1
    exec_vnode = (vm:ncpus=1)
    Hold_Types = n
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:35:55 2026
    Output_Path = vm:/home/pbsuser/donejob.o26342
    Priority = 0
    qtime = Sun Nov 22 20:35:54 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    stime = Sun Nov 22 20:35:54 2026
    obittime = Sun Nov 22 20:35:55 2026
    jobdir = /home/pbsuser
    substate = 93
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    comment = Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1) and failed
    etime = Sun Nov 22 20:35:54 2026
    run_count = 1
    Stageout_status = 1
    Exit_status = 3
    Submit_arguments = -N donejob
    history_timestamp = 1795379755
    project = _pbs_project_default
    Submit_Host = vm

"#;

/// `qstat -f 26344[].vm` (exit 0).
const QSTAT_F_ARRAY: &str = r#"Job Id: 26344[].vm
    Job_Name = arrjob
    Job_Owner = pbsuser@vm
    job_state = B
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:54 2026
    Error_Path = vm:/home/pbsuser/arrjob.e26344.^array_index^
    Hold_Types = n
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:35:56 2026
    Output_Path = vm:/home/pbsuser/arrjob.o26344.^array_index^
    Priority = 0
    qtime = Sun Nov 22 20:35:54 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    stime = Sun Nov 22 20:35:56 2026
    substate = 70
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    comment = Job Array Began at Sun Nov 22 at 20:35
    etime = Sun Nov 22 20:35:54 2026
    Submit_arguments = -J 0-9%2 -N arrjob -- /bin/sleep 20
    executable = <jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>
    argument_list = <jsdl-hpcpa:Argument>20</jsdl-hpcpa:Argument>
    array = True
    array_state_count = Queued:9 Running:1 Exiting:0 Expired:0
    array_indices_submitted = 0-9
    array_indices_remaining = 1-9
    project = _pbs_project_default
    Submit_Host = vm
    max_run_subjobs = 2

"#;

/// `qstat -f '26344[1].vm'` (exit 0).
const QSTAT_F_SUBJOB: &str = r#"Job Id: 26344[1].vm
    Job_Name = arrjob
    Job_Owner = pbsuser@vm
    job_state = Q
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:54 2026
    Error_Path = vm:/home/pbsuser/arrjob.e26344.^array_index^
    Hold_Types = n
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:35:56 2026
    Output_Path = vm:/home/pbsuser/arrjob.o26344.^array_index^
    Priority = 0
    qtime = Sun Nov 22 20:35:54 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    stime = Sun Nov 22 20:35:56 2026
    substate = 70
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    comment = Job Array Began at Sun Nov 22 at 20:35
    etime = Sun Nov 22 20:35:54 2026
    Submit_arguments = -J 0-9%2 -N arrjob -- /bin/sleep 20
    executable = <jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>
    argument_list = <jsdl-hpcpa:Argument>20</jsdl-hpcpa:Argument>

"#;

/// `qstat -f 26340.vm` (exit 0).
const QSTAT_F_HELD: &str = r#"Job Id: 26340.vm
    Job_Name = heldjob
    Job_Owner = pbsuser@vm
    job_state = H
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:53 2026
    Error_Path = vm:/home/pbsuser/heldjob.e26340
    Hold_Types = u
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:35:53 2026
    Output_Path = vm:/home/pbsuser/heldjob.o26340
    Priority = 0
    qtime = Sun Nov 22 20:35:53 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    Resource_List.walltime = 01:00:00
    substate = 20
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    Submit_arguments = -h -N heldjob -l walltime=01:00:00 -- /bin/sleep 100
    executable = <jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>
    argument_list = <jsdl-hpcpa:Argument>100</jsdl-hpcpa:Argument>
    project = _pbs_project_default
    Submit_Host = vm

"#;

/// `qstat -f 26340.vm` (exit 0).
const QSTAT_F_HELD_AFTER_SOFT: &str = r#"Job Id: 26340.vm
    Job_Name = heldjob
    Job_Owner = pbsuser@vm
    job_state = H
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:53 2026
    Error_Path = vm:/home/pbsuser/heldjob.e26340
    Hold_Types = u
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:36:05 2026
    Output_Path = vm:/home/pbsuser/heldjob.o26340
    Priority = 0
    qtime = Sun Nov 22 20:35:53 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    Resource_List.soft_walltime = 00:10:00
    Resource_List.walltime = 01:00:00
    substate = 20
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    Submit_arguments = -h -N heldjob -l walltime=01:00:00 -- /bin/sleep 100
    executable = <jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>
    argument_list = <jsdl-hpcpa:Argument>100</jsdl-hpcpa:Argument>
    project = _pbs_project_default
    Submit_Host = vm

"#;

/// `qstat -fx 26342.vm` (exit 0).
const QSTAT_FX_EXIT3: &str = r#"Job Id: 26342.vm
    Job_Name = donejob
    Job_Owner = pbsuser@vm
    resources_used.cpupercent = 0
    resources_used.cput = 00:00:00
    resources_used.mem = 0kb
    resources_used.ncpus = 1
    resources_used.vmem = 0kb
    resources_used.walltime = 00:00:00
    job_state = F
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:35:54 2026
    Error_Path = vm:/home/pbsuser/donejob.e26342
    exec_host = vm/1
    exec_vnode = (vm:ncpus=1)
    Hold_Types = n
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:35:55 2026
    Output_Path = vm:/home/pbsuser/donejob.o26342
    Priority = 0
    qtime = Sun Nov 22 20:35:54 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    stime = Sun Nov 22 20:35:54 2026
    obittime = Sun Nov 22 20:35:55 2026
    jobdir = /home/pbsuser
    substate = 93
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    comment = Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1) and failed
    etime = Sun Nov 22 20:35:54 2026
    run_count = 1
    Stageout_status = 1
    Exit_status = 3
    Submit_arguments = -N donejob
    history_timestamp = 1795379755
    project = _pbs_project_default
    Submit_Host = vm

"#;

/// `qstat -f -F dsv 26340.vm` (exit 0).
const QSTAT_F_DSV: &str = r#"Job Id: 26340.vm|Job_Name=heldjob|Job_Owner=pbsuser@vm|job_state=H|queue=workq|server=vm|Checkpoint=u|ctime=Sun Nov 22 20:35:53 2026|Error_Path=vm:/home/pbsuser/heldjob.e26340|Hold_Types=u|Join_Path=n|Keep_Files=n|Mail_Points=a|mtime=Sun Nov 22 20:35:53 2026|Output_Path=vm:/home/pbsuser/heldjob.o26340|Priority=0|qtime=Sun Nov 22 20:35:53 2026|Rerunable=True|Resource_List.ncpus=1|Resource_List.nodect=1|Resource_List.place=pack|Resource_List.select=1:ncpus=1|Resource_List.walltime=01:00:00|substate=20|Variable_List=PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,PBS_O_LOGNAME=pbsuser,PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm|Submit_arguments=-h -N heldjob -l walltime=01:00:00 -- /bin/sleep 100|executable=<jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>|argument_list=<jsdl-hpcpa:Argument>100</jsdl-hpcpa:Argument>|project=_pbs_project_default|Submit_Host=vm
"#;

/// `qstat -f -F json 26341.vm` (exit 0).
const QSTAT_F_JSON: &str = r#"{
	"timestamp":	1795379761,
	"pbs_version":	"23.06.06",
	"pbs_server":	"vm",
	"Jobs":	{
		"26341.vm":	{
			"Job_Name":	"runjob",
			"Job_Owner":	"pbsuser@vm",
			"resources_used":	{
				"cpupercent":	0,
				"cput":	"00:00:00",
				"mem":	"0kb",
				"ncpus":	1,
				"vmem":	"0kb",
				"walltime":	"00:00:00"
			},
			"job_state":	"R",
			"queue":	"workq",
			"server":	"vm",
			"Checkpoint":	"u",
			"ctime":	"Sun Nov 22 20:35:54 2026",
			"Error_Path":	"vm:/home/pbsuser/runjob.e26341",
			"exec_host":	"vm/0",
			"exec_vnode":	"(vm:ncpus=1)",
			"Hold_Types":	"n",
			"Join_Path":	"n",
			"Keep_Files":	"n",
			"Mail_Points":	"a",
			"mtime":	"Sun Nov 22 20:35:55 2026",
			"Output_Path":	"vm:/home/pbsuser/runjob.o26341",
			"Priority":	0,
			"qtime":	"Sun Nov 22 20:35:54 2026",
			"Rerunable":	"True",
			"Resource_List":	{
				"ncpus":	1,
				"nodect":	1,
				"place":	"pack",
				"select":	"1:ncpus=1",
				"walltime":	"00:10:00"
			},
			"stime":	"Sun Nov 22 20:35:54 2026",
			"session_id":	12694,
			"jobdir":	"/home/pbsuser",
			"substate":	42,
			"Variable_List":	{
				"PBS_O_HOME":	"/home/pbsuser",
				"PBS_O_LANG":	"C.UTF-8",
				"PBS_O_LOGNAME":	"pbsuser",
				"PBS_O_PATH":	"/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
				"PBS_O_SHELL":	"/bin/bash",
				"PBS_O_INTERACTIVE_AUTH_METHOD":	"resvport",
				"PBS_O_INTERACTIVE_ENCRYPT_METHOD":	"",
				"PBS_O_WORKDIR":	"/home/pbsuser",
				"PBS_O_SYSTEM":	"Linux",
				"PBS_O_QUEUE":	"workq",
				"PBS_O_HOST":	"vm"
			},
			"comment":	"Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1)",
			"etime":	"Sun Nov 22 20:35:54 2026",
			"run_count":	1,
			"Submit_arguments":	"-N runjob -l walltime=00:10:00 -- /bin/sleep 30",
			"executable":	"<jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>",
			"argument_list":	"<jsdl-hpcpa:Argument>30</jsdl-hpcpa:Argument>",
			"project":	"_pbs_project_default",
			"Submit_Host":	"vm"
		}
	}
}
"#;

/// `qstat -f -F json -x 26341.vm 26342.vm` (exit 0).
const QSTAT_F_JSON_X_MULTI: &str = r#"{
	"timestamp":	1795379761,
	"pbs_version":	"23.06.06",
	"pbs_server":	"vm",
	"Jobs":	{
		"26341.vm":	{
			"Job_Name":	"runjob",
			"Job_Owner":	"pbsuser@vm",
			"resources_used":	{
				"cpupercent":	0,
				"cput":	"00:00:00",
				"mem":	"0kb",
				"ncpus":	1,
				"vmem":	"0kb",
				"walltime":	"00:00:00"
			},
			"job_state":	"R",
			"queue":	"workq",
			"server":	"vm",
			"Checkpoint":	"u",
			"ctime":	"Sun Nov 22 20:35:54 2026",
			"Error_Path":	"vm:/home/pbsuser/runjob.e26341",
			"exec_host":	"vm/0",
			"exec_vnode":	"(vm:ncpus=1)",
			"Hold_Types":	"n",
			"Join_Path":	"n",
			"Keep_Files":	"n",
			"Mail_Points":	"a",
			"mtime":	"Sun Nov 22 20:35:55 2026",
			"Output_Path":	"vm:/home/pbsuser/runjob.o26341",
			"Priority":	0,
			"qtime":	"Sun Nov 22 20:35:54 2026",
			"Rerunable":	"True",
			"Resource_List":	{
				"ncpus":	1,
				"nodect":	1,
				"place":	"pack",
				"select":	"1:ncpus=1",
				"walltime":	"00:10:00"
			},
			"stime":	"Sun Nov 22 20:35:54 2026",
			"session_id":	12694,
			"jobdir":	"/home/pbsuser",
			"substate":	42,
			"Variable_List":	{
				"PBS_O_HOME":	"/home/pbsuser",
				"PBS_O_LANG":	"C.UTF-8",
				"PBS_O_LOGNAME":	"pbsuser",
				"PBS_O_PATH":	"/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
				"PBS_O_SHELL":	"/bin/bash",
				"PBS_O_INTERACTIVE_AUTH_METHOD":	"resvport",
				"PBS_O_INTERACTIVE_ENCRYPT_METHOD":	"",
				"PBS_O_WORKDIR":	"/home/pbsuser",
				"PBS_O_SYSTEM":	"Linux",
				"PBS_O_QUEUE":	"workq",
				"PBS_O_HOST":	"vm"
			},
			"comment":	"Job run at Sun Nov 22 at 20:35 on (vm:ncpus=1)",
			"etime":	"Sun Nov 22 20:35:54 2026",
			"run_count":	1,
			"Submit_arguments":	"-N runjob -l walltime=00:10:00 -- /bin/sleep 30",
			"executable":	"<jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>",
			"argument_list":	"<jsdl-hpcpa:Argument>30</jsdl-hpcpa:Argument>",
			"project":	"_pbs_project_default",
			"Submit_Host":	"vm"
		}
	}
}
"#;

/// `qstat -Q` (exit 0).
const QSTAT_Q: &str = r#"Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type
---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----
workq                0     5 yes yes     1     2     1     0     0     0 Exe*
"#;

/// `qstat -Qf workq` (exit 0).
const QSTAT_QF_WORKQ: &str = r#"Queue: workq
    queue_type = Execution
    total_jobs = 5
    state_count = Transit:0 Queued:1 Held:1 Waiting:0 Running:2 Exiting:0 Begun
	:1 
    resources_assigned.mem = 0mb
    resources_assigned.ncpus = 2
    resources_assigned.nodect = 2
    enabled = True
    started = True

"#;

/// `qstat -B` (exit 0).
const QSTAT_B: &str = r#"Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status
---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------
vm                   0 26338     1     2     1     0     0     0 Active    
"#;

/// `qstat -Bf` (exit 0).
const QSTAT_BF: &str = r#"Server: vm
    server_state = Active
    server_host = vm
    scheduling = True
    total_jobs = 26338
    state_count = Transit:0 Queued:1 Held:1 Waiting:0 Running:2 Exiting:0 Begun
	:1 
    default_queue = workq
    log_events = 511
    mailer = /usr/sbin/sendmail
    mail_from = adm
    query_other_jobs = True
    resources_default.ncpus = 1
    default_chunk.ncpus = 1
    resources_assigned.mem = 0mb
    resources_assigned.ncpus = 2
    resources_assigned.nodect = 2
    scheduler_iteration = 600
    resv_enable = True
    node_fail_requeue = 310
    max_array_size = 10000
    resend_term_delay = 5
    pbs_license_min = 0
    pbs_license_max = 2147483647
    pbs_license_linger_time = 31536000
    license_count = Avail_Global:1000000 Avail_Local:1000000 Used:0 High_Use:0
    pbs_version = 23.06.06
    eligible_time_enable = False
    job_history_enable = True
    max_concurrent_provision = 5
    clear_topjob_estimates_enable = False
    max_job_sequence_id = 9999999

"#;

/// `qstat -q` (exit 0).
const QSTAT_Q_LOWER: &str = r#"
server: vm

Queue            Memory CPU Time Walltime Node   Run   Que   Lm  State
---------------- ------ -------- -------- ---- ----- ----- ----  -----
workq              --      --       --     --      2     2   --   E R
                                               ----- -----
                                                   2     2
"#;

/// stderr of `qstat 99999` (exit 153, no stdout).
const QSTAT_UNKNOWN_STDERR: &str = r#"qstat: Unknown Job Id 99999.vm
"#;

/// stderr of `qstat -f 99999.vm` (exit 153, no stdout).
const QSTAT_UNKNOWN_F_STDERR: &str = r#"qstat: Unknown Job Id 99999.vm
"#;

/// `qstat -f 28001.vm` (exit 0).
const HOOKS_QSTAT_F_SET_SOFT: &str = r#"Job Id: 28001.vm
    Job_Name = STDIN
    Job_Owner = pbsuser@vm
    job_state = H
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:41:05 2026
    Error_Path = vm:/home/pbsuser/STDIN.e28001
    Hold_Types = u
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:41:05 2026
    Output_Path = vm:/home/pbsuser/STDIN.o28001
    Priority = 0
    qtime = Sun Nov 22 20:41:05 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = free
    Resource_List.select = 1:ncpus=1
    Resource_List.set_soft_walltime = 3600
    Resource_List.soft_walltime = 01:00:00
    substate = 20
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    Submit_arguments = -h -l set_soft_walltime=3600 -l select=1:ncpus=1 -- /bin
	/true
    executable = <jsdl-hpcpa:Executable>/bin/true</jsdl-hpcpa:Executable>
    project = _pbs_project_default
    Submit_Host = vm

"#;

/// `qstat -f 28000.vm` (exit 0).
const HOOKS_QSTAT_F_SOFT_FROM_HOOK: &str = r#"Job Id: 28000.vm
    Job_Name = STDIN
    Job_Owner = pbsuser@vm
    job_state = H
    queue = workq
    server = vm
    Checkpoint = u
    ctime = Sun Nov 22 20:41:04 2026
    Error_Path = vm:/home/pbsuser/STDIN.e28000
    Hold_Types = u
    Join_Path = n
    Keep_Files = n
    Mail_Points = a
    mtime = Sun Nov 22 20:41:04 2026
    Output_Path = vm:/home/pbsuser/STDIN.o28000
    Priority = 0
    qtime = Sun Nov 22 20:41:04 2026
    Rerunable = True
    Resource_List.ncpus = 1
    Resource_List.nodect = 1
    Resource_List.place = pack
    Resource_List.select = 1:ncpus=1
    Resource_List.soft_walltime = 00:05:00
    substate = 20
    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,
	PBS_O_LOGNAME=pbsuser,
	PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,
	PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,
	PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,
	PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm
    Submit_arguments = -h -- /bin/true
    executable = <jsdl-hpcpa:Executable>/bin/true</jsdl-hpcpa:Executable>
    project = _pbs_project_default
    Submit_Host = vm

"#;
