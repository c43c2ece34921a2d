//! pbsnodes's displays against the outputs of OpenPBS 23.06
//! (shared/reference/openpbs-outputs/pbsnodes_*.txt, host `vm`), reproduced from the
//! status object the server sends: the full display is unfolded back into that object
//! (dates back to epoch seconds, as they travel) and formatted again.

use chrono::{Local, NaiveDateTime, TimeZone};
use pbs_proto::{Attr, StatusObject};

use crate::format::{self, Json, SummaryStyle};
use crate::hosts::Hosts;
use crate::options::Format;

const A_TEXT: &str = concat!(
    "vm\n",
    "     Mom = vm\n",
    "     ntype = PBS\n",
    "     state = job-busy\n",
    "     pcpus = 2\n",
    "     jobs = 26341.vm/0, 26344[0].vm/1\n",
    "     resources_available.arch = linux\n",
    "     resources_available.host = vm\n",
    "     resources_available.mem = 24684084kb\n",
    "     resources_available.ncpus = 2\n",
    "     resources_available.vnode = vm\n",
    "     resources_assigned.accelerator_memory = 0kb\n",
    "     resources_assigned.hbmem = 0kb\n",
    "     resources_assigned.mem = 0kb\n",
    "     resources_assigned.naccelerators = 0\n",
    "     resources_assigned.ncpus = 2\n",
    "     resources_assigned.vmem = 0kb\n",
    "     resv_enable = True\n",
    "     sharing = default_shared\n",
    "     license = l\n",
    "     last_state_change_time = Sun Nov 22 20:35:56 2026\n",
    "     last_used_time = Sun Nov 22 20:35:56 2026\n",
    "\n",
);

const A_JSON: &str = concat!(
    "{\n",
    "\t\"timestamp\":\t1795379766,\n",
    "\t\"pbs_version\":\t\"23.06.06\",\n",
    "\t\"pbs_server\":\t\"vm\",\n",
    "\t\"nodes\":\t{\n",
    "\t\t\"vm\":\t{\n",
    "\t\t\t\"Mom\":\t\"vm\",\n",
    "\t\t\t\"ntype\":\t\"PBS\",\n",
    "\t\t\t\"state\":\t\"job-busy\",\n",
    "\t\t\t\"pcpus\":\t2,\n",
    "\t\t\t\"jobs\":\t[\"26341.vm\", \"26344[0].vm\"],\n",
    "\t\t\t\"resources_available\":\t{\n",
    "\t\t\t\t\"arch\":\t\"linux\",\n",
    "\t\t\t\t\"host\":\t\"vm\",\n",
    "\t\t\t\t\"mem\":\t\"24684084kb\",\n",
    "\t\t\t\t\"ncpus\":\t2,\n",
    "\t\t\t\t\"vnode\":\t\"vm\"\n",
    "\t\t\t},\n",
    "\t\t\t\"resources_assigned\":\t{\n",
    "\t\t\t\t\"ncpus\":\t2\n",
    "\t\t\t},\n",
    "\t\t\t\"resv_enable\":\t\"True\",\n",
    "\t\t\t\"sharing\":\t\"default_shared\",\n",
    "\t\t\t\"license\":\t\"l\",\n",
    "\t\t\t\"last_state_change_time\":\t1795379756,\n",
    "\t\t\t\"last_used_time\":\t1795379756\n",
    "\t\t}\n",
    "\t}\n",
    "}\n",
);

/// Epoch seconds of a ctime(3) date in the local time zone.
fn epoch(date: &str) -> String {
    let naive = NaiveDateTime::parse_from_str(date, "%a %b %e %H:%M:%S %Y").unwrap_or_else(|e| panic!("{date}: {e}"));
    Local.from_local_datetime(&naive).single().map(|t| t.timestamp()).unwrap_or_default().to_string()
}

/// The node objects a full display was made from.
fn unfold(display: &str) -> Vec<StatusObject> {
    let mut nodes: Vec<StatusObject> = Vec::new();
    for line in display.lines().filter(|l| !l.is_empty()) {
        match line.strip_prefix("     ") {
            Some(attr) => {
                let (name, value) = attr.split_once(" = ").expect("name = value");
                let value = if name.ends_with("_time") { epoch(value) } else { value.to_string() };
                nodes.last_mut().expect("node").attrs.push(Attr::new(name, value));
            }
            None => nodes.push(StatusObject { name: line.into(), attrs: Vec::new() }),
        }
    }
    nodes
}

fn node(name: &str, attrs: &[(&str, &str)]) -> StatusObject {
    StatusObject { name: name.into(), attrs: attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect() }
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// `expected` against the output, line by line for a readable failure.
#[track_caller]
fn check(got: &str, expected: &str) {
    if got != expected {
        for (i, (g, e)) in got.lines().zip(expected.lines()).enumerate() {
            assert_eq!(g, e, "line {}\nwhole output:\n{got}", i + 1);
        }
        assert_eq!(got, expected);
    }
}

#[test]
fn full_display_matches_pbsnodes_a() {
    let nodes = unfold(A_TEXT);
    assert_eq!(nodes.len(), 1);
    let mut out = Vec::new();
    for node in &nodes {
        format::full(&mut out, node);
    }
    check(&text(&out), A_TEXT);
}

#[test]
fn hosts_of_one_vnode_each_display_as_the_vnodes() {
    // `pbsnodes -a` lists hosts, `-av` vnodes: on this cluster both print the same.
    let nodes = unfold(A_TEXT);
    let mut out = Vec::new();
    for host in Hosts::new(nodes).all() {
        format::full(&mut out, &host);
    }
    check(&text(&out), A_TEXT);
}

#[test]
fn json_matches_pbsnodes_a_f_json() {
    let nodes = unfold(A_TEXT);
    let members: Vec<(String, Json)> = nodes.iter().map(|n| (n.name.clone(), format::json_node(n))).collect();
    let mut out = Vec::new();
    format::json_document(&mut out, 1_795_379_766, "23.06.06", "vm", &members);
    check(&text(&out), A_JSON);
    let value: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    assert_eq!(value["nodes"]["vm"]["pcpus"], 2);
}

#[test]
fn json_of_a_node_that_could_not_be_listed() {
    let members = vec![("nx".to_string(), format::json_error("Unknown node "))];
    let mut out = Vec::new();
    format::json_document(&mut out, 7, "1.0", "h", &members);
    check(
        &text(&out),
        "{\n\t\"timestamp\":\t7,\n\t\"pbs_version\":\t\"1.0\",\n\t\"pbs_server\":\t\"h\",\n\t\"nodes\":\t{\n\t\t\"nx\":\t{\n\t\t\t\"Error\":\t\"Unknown node \"\n\t\t}\n\t}\n}\n",
    );
}

#[test]
fn json_of_a_node_without_assignments_or_jobs() {
    let n = node(
        "n1",
        &[
            ("Mom", "localhost"),
            ("Port", "15002"),
            ("state", "state-unknown,down"),
            ("resources_available.host", "n1"),
            ("resources_assigned.ncpus", "0"),
            ("resources_assigned.mem", "0kb"),
            ("comment", "has \"quotes\""),
        ],
    );
    let mut out = Vec::new();
    format::json_document(&mut out, 1, "1.0", "h", &[("n1".into(), format::json_node(&n))]);
    check(
        &text(&out),
        concat!(
            "{\n\t\"timestamp\":\t1,\n\t\"pbs_version\":\t\"1.0\",\n\t\"pbs_server\":\t\"h\",\n\t\"nodes\":\t{\n",
            "\t\t\"n1\":\t{\n",
            "\t\t\t\"Mom\":\t\"localhost\",\n",
            "\t\t\t\"Port\":\t15002,\n",
            "\t\t\t\"state\":\t\"state-unknown,down\",\n",
            "\t\t\t\"resources_available\":\t{\n\t\t\t\t\"host\":\t\"n1\"\n\t\t\t},\n",
            "\t\t\t\"resources_assigned\":\t{\n\t\t\t},\n",
            "\t\t\t\"comment\":\t\"has \\\"quotes\\\"\"\n",
            "\t\t}\n\t}\n}\n",
        ),
    );
}

#[test]
fn marked_nodes_only_in_the_l_list() {
    // pbsnodes_l.txt: the reference node is job-busy, so `-l` prints nothing.
    let mut out = Vec::new();
    for n in unfold(A_TEXT) {
        format::marked(&mut out, &n);
    }
    assert_eq!(text(&out), "");
    format::marked(&mut out, &node("n1", &[("state", "offline"), ("comment", "broken fan")]));
    format::marked(&mut out, &node("node-with-a-long-name", &[("state", "state-unknown,down")]));
    format::marked(&mut out, &node("n3", &[("state", "free")]));
    check(&text(&out), "n1                   offline broken fan\nnode-with-a-long-name state-unknown,down \n");
}

#[test]
fn dsv_lines() {
    let n = node("n1", &[("state", "free"), ("jobs", "1.h/0, 2.h/1"), ("resources_available.ncpus", "2")]);
    let mut out = Vec::new();
    format::dsv(&mut out, &n, "|");
    check(&text(&out), "Name=n1|state=free|jobs=1.h/0,2.h/1|resources_available.ncpus=2\n");
}

fn style(jobs: bool, long: bool, format: Format) -> SummaryStyle<'static> {
    SummaryStyle { jobs, long, format, delimiter: "|", server: "vm" }
}

#[test]
fn summaries_follow_openpbs_columns() {
    let nodes = unfold(A_TEXT);
    let mut out = Vec::new();
    format::summary_header(&mut out, false);
    assert!(format::summary(&mut out, &nodes[0], style(false, false, Format::Default)).is_none());
    check(
        &text(&out),
        concat!(
            "vnode           state           OS       hardware host            queue        mem     ncpus   nmics   ngpus  comment\n",
            "--------------- --------------- -------- -------- --------------- ---------- -------- ------- ------- ------- ---------\n",
            "vm              job-busy        --       --       vm              --             24gb       2       0       0 --\n",
        ),
    );
    let mut out = Vec::new();
    format::summary_header(&mut out, true);
    format::summary(&mut out, &nodes[0], style(true, false, Format::Default));
    check(
        &text(&out),
        concat!(
            "                                                        mem       ncpus   nmics   ngpus\n",
            "vnode           state           njobs   run   susp      f/t        f/t     f/t     f/t   jobs\n",
            "--------------- --------------- ------ ----- ------ ------------ ------- ------- ------- -------\n",
            "vm              job-busy             2     2      0    24gb/24gb     0/2     0/0     0/0 26341,26344[0]\n",
        ),
    );
    let mut out = Vec::new();
    format::summary(&mut out, &nodes[0], style(true, false, Format::Dsv));
    check(
        &text(&out),
        "vnode=vm|state=job-busy|njobs=2|run=2|susp=0|mem(f/t)=24gb/24gb|ncpus(f/t)=0/2|nmics(f/t)=0/0|ngpus(f/t)=0/0|jobs=26341.vm,26344[0].vm\n",
    );
    let member = format::summary(&mut Vec::new(), &nodes[0], style(false, false, Format::Json)).expect("json member");
    let mut out = Vec::new();
    member.write(&mut out, 2);
    check(
        &text(&out),
        "{\n\t\t\t\"State\":\t\"job-busy\",\n\t\t\t\"OS\":\t\"--\",\n\t\t\t\"hardware\":\t\"--\",\n\t\t\t\"host\":\t\"vm\",\n\t\t\t\"queue\":\t\"--\",\n\t\t\t\"Memory\":\t\"24gb\",\n\t\t\t\"ncpus\":\t2,\n\t\t\t\"nmics\":\t0,\n\t\t\t\"ngpus\":\t0,\n\t\t\t\"comment\":\t\"--\"\n\t\t}",
    );
}

#[test]
fn long_summaries_keep_whole_values() {
    let n = node("a-very-long-node-name", &[("state", "state-unknown,down"), ("comment", "c")]);
    let mut out = Vec::new();
    format::summary(&mut out, &n, style(false, false, Format::Default));
    format::summary(&mut out, &n, style(false, true, Format::Default));
    check(
        &text(&out),
        concat!(
            "a-very-long-nod state-unknown   --       --       --              --              0kb       0       0       0 c\n",
            "a-very-long-node-name state-unknown,down --       --       --              --              0kb       0       0       0 c\n",
        ),
    );
}

#[test]
fn operands_name_nodes_with_or_without_their_domain() {
    assert!(crate::names_node("n1", "n1"));
    assert!(crate::names_node("n1.example.com", "n1"));
    assert!(!crate::names_node("n10", "n1"));
    assert!(!crate::names_node("n1", "n1.example.com"));
}

#[test]
fn comments_are_cut_like_openpbs() {
    // OpenPBS copies -C into an 80-byte buffer.
    assert_eq!(pbs_cli::truncate(&"c".repeat(100), crate::MAX_COMMENT).len(), 79);
    assert_eq!(pbs_cli::truncate("éé", 3), "é");
}
