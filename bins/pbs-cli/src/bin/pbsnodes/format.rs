//! pbsnodes's displays, as pure functions over status objects: the full display
//! (`name`, then `     attr = value` lines, times in ctime(3) form, a blank line), DSV, the
//! JSON members (cJSON's layout, through qstat's JSON writer), the `-l` lines, and the
//! one-line summaries of `-S`.

use pbs_cli::timefmt::ctime;
use pbs_core::cnum::atol;
use pbs_proto::StatusObject;

use crate::json;
use crate::options::Format;
use crate::text::{field, push_visible};

/// The node attributes OpenPBS prints in ctime(3) form (they travel as epoch seconds).
fn is_time(name: &str) -> bool {
    matches!(name, "last_state_change_time" | "last_used_time")
}

/// One node in the default format (OpenPBS's `prt_node`).
pub(crate) fn full(out: &mut Vec<u8>, node: &StatusObject) {
    out.extend_from_slice(node.name.as_bytes());
    out.push(b'\n');
    for attr in &node.attrs {
        out.extend_from_slice(b"     ");
        out.extend_from_slice(attr.0.as_bytes());
        out.extend_from_slice(b" = ");
        if is_time(&attr.0) {
            out.extend_from_slice(ctime(atol(&attr.1)).as_bytes());
        } else {
            push_visible(out, attr.1.as_bytes());
        }
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// One node as a DSV line: `Name=n|attr=value|...`, `jobs` without its spaces.
pub(crate) fn dsv(out: &mut Vec<u8>, node: &StatusObject, delimiter: &str) {
    out.extend_from_slice(b"Name=");
    out.extend_from_slice(node.name.as_bytes());
    out.extend_from_slice(delimiter.as_bytes());
    for (i, attr) in node.attrs.iter().enumerate() {
        out.extend_from_slice(attr.0.as_bytes());
        out.push(b'=');
        if attr.0 == "jobs" {
            let compact: Vec<u8> = attr.1.bytes().filter(|b| *b != b' ').collect();
            push_visible(out, &compact);
        } else {
            push_visible(out, attr.1.as_bytes());
        }
        if i + 1 < node.attrs.len() {
            out.extend_from_slice(delimiter.as_bytes());
        }
    }
    out.push(b'\n');
}

/// A JSON value being built: scalars already written out, containers kept open so the
/// layout (cJSON's: objects one member a line, arrays on one line) is applied at the end.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    /// A scalar (or parsed value) in its final text.
    Raw(Vec<u8>),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub(crate) fn string(s: &str) -> Json {
        let mut out = Vec::new();
        json::string(&mut out, s);
        Json::Raw(out)
    }

    pub(crate) fn number(n: i64) -> Json {
        Json::Raw(json::number(n as f64).into_bytes())
    }

    /// `value` as cJSON parses it (numbers become numbers, other text a string), for a
    /// member at nesting `depth`.
    pub(crate) fn parsed(value: &str, depth: usize) -> Json {
        let mut out = Vec::new();
        json::parsed(&mut out, value, depth);
        Json::Raw(out)
    }

    /// Writes the value as a member at nesting `depth` (the top-level object is depth 0).
    pub(crate) fn write(&self, out: &mut Vec<u8>, depth: usize) {
        match self {
            Json::Raw(text) => out.extend_from_slice(text),
            Json::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    item.write(out, depth);
                }
                out.push(b']');
            }
            Json::Object(members) => {
                out.extend_from_slice(b"{\n");
                for (i, (key, value)) in members.iter().enumerate() {
                    out.resize(out.len() + depth + 1, b'\t');
                    json::string(out, key);
                    out.extend_from_slice(b":\t");
                    value.write(out, depth + 1);
                    out.extend_from_slice(if i + 1 < members.len() { b",\n" } else { b"\n" });
                }
                out.resize(out.len() + depth, b'\t');
                out.push(b'}');
            }
        }
    }
}

/// `jobs` as the JSON array OpenPBS makes of it: spaces dropped, split at commas, the
/// `/cpu` part removed, a job repeated next to itself listed once.
fn jobs_array(value: &str) -> Json {
    let compact: String = value.chars().filter(|c| *c != ' ').collect();
    let mut items = Vec::new();
    let mut previous = "";
    for job in compact.split(',').filter(|j| !j.is_empty()) {
        let job = job.split('/').next().unwrap_or(job);
        if job != previous {
            items.push(Json::string(job));
        }
        previous = job;
    }
    Json::Array(items)
}

/// Whether a `resources_assigned` value is left out of JSON (zero, or text starting with
/// `0` such as `0kb`), as OpenPBS inserts them with `ignore_empty`.
fn empty_assignment(value: &str) -> bool {
    let mut parsed = Vec::new();
    json::parsed(&mut parsed, value, 4);
    if parsed.first() == Some(&b'"') {
        return value.starts_with('0');
    }
    std::str::from_utf8(&parsed).ok().and_then(|t| t.parse::<f64>().ok()) == Some(0.0)
}

/// One node as a member of the `nodes` object (OpenPBS's `encode_to_json`): resources as
/// nested objects (zero assignments left out), `jobs` as an array, other values typed.
pub(crate) fn json_node(node: &StatusObject) -> Json {
    let mut members: Vec<(String, Json)> = Vec::new();
    let attrs = &node.attrs;
    let mut i = 0;
    while i < attrs.len() {
        // Like OpenPBS, a resource of any other attribute is keyed by the attribute alone.
        let base = attrs[i].0.split_once('.').map_or(attrs[i].0.as_str(), |(base, _)| base);
        if matches!(base, "resources_available" | "resources_assigned") {
            let assigned = base == "resources_assigned";
            let mut resources = Vec::new();
            while i < attrs.len() && attrs[i].0.split_once('.').is_some_and(|(b, _)| b == base) {
                let (name, value) = (&attrs[i].0[base.len() + 1..], attrs[i].1.as_str());
                if !(assigned && empty_assignment(value)) {
                    resources.push((name.to_string(), Json::parsed(value, 4)));
                }
                i += 1;
            }
            members.push((base.to_string(), Json::Object(resources)));
            continue;
        }
        let value = if base == "jobs" { jobs_array(&attrs[i].1) } else { Json::parsed(&attrs[i].1, 3) };
        members.push((base.to_string(), value));
        i += 1;
    }
    Json::Object(members)
}

/// The JSON member of a node that could not be listed.
pub(crate) fn json_error(message: &str) -> Json {
    Json::Object(vec![("Error".to_string(), Json::string(message))])
}

/// The whole `-F json` document: prologue, then the `nodes` object.
pub(crate) fn json_document(out: &mut Vec<u8>, now: i64, version: &str, server: &str, nodes: &[(String, Json)]) {
    json::prologue(out, now, version, server);
    out.extend_from_slice(b",\n\t\"nodes\":\t");
    Json::Object(nodes.to_vec()).write(out, 1);
    json::epilogue(out);
}

/// A `-l` line: name, state and comment (`%-20s %s %s`), for nodes down or offline.
pub(crate) fn marked(out: &mut Vec<u8>, node: &StatusObject) {
    let state = node.get("state").unwrap_or("");
    if !(state.contains("down") || state.contains("offline")) {
        return;
    }
    field(out, node.name.as_bytes(), 20, None, true);
    out.push(b' ');
    out.extend_from_slice(state.as_bytes());
    out.push(b' ');
    push_visible(out, node.get("comment").unwrap_or("").as_bytes());
    out.push(b'\n');
}

/// What `-S` shows of a node.
#[derive(Debug, PartialEq, Eq)]
struct Summary {
    state: String,
    os: String,
    hardware: String,
    host: String,
    queue: String,
    comment: String,
    mem: String,
    ncpus: String,
    nmics: String,
    ngpus: String,
    jobs: String,
    njobs: i64,
    running: i64,
    suspended: i64,
}

/// A size as `-S` shows it: the number cut down by 1024 (rounding up a remainder) until
/// it has three digits, with its unit letter.
fn scale(mut amount: i64, mut prefix: usize) -> (i64, usize) {
    while amount > 999 {
        amount = ((amount % 1024) + amount) >> 10;
        prefix += 1;
    }
    (amount, prefix)
}

fn unit(prefix: usize) -> char {
    b" kmgtp?".get(prefix).map(|b| *b as char).unwrap_or('?')
}

/// `strtol` and the unit letter that follows: the value and its power of 1024.
fn size(text: &str) -> (i64, usize) {
    let n = atol(text);
    let t = text.trim_start();
    let digits = t.trim_start_matches(['-', '+']).trim_start_matches(|c: char| c.is_ascii_digit());
    let prefix = match digits.chars().next() {
        Some('k') => 1,
        Some('m') => 2,
        Some('g') => 3,
        Some('t') => 4,
        _ => 0,
    };
    (n, prefix)
}

/// Gathers the summary of a node (OpenPBS's `prt_node_summary` loop). `server` is the
/// server name stripped from job ids in the default format.
fn summarize(node: &StatusObject, jobs_wanted: bool, long: bool, strip_server: Option<&str>) -> Summary {
    let pair = |v: &str| if jobs_wanted { format!("{v}/{v}") } else { v.to_string() };
    let mut s = Summary {
        state: "--".into(),
        os: "--".into(),
        hardware: "--".into(),
        host: "--".into(),
        queue: "--".into(),
        comment: "--".into(),
        mem: if jobs_wanted { "0kb/0kb".into() } else { "0kb".into() },
        ncpus: pair("0"),
        nmics: pair("0"),
        ngpus: pair("0"),
        jobs: "--".into(),
        njobs: 0,
        running: 0,
        suspended: 0,
    };
    let attrs = &node.attrs;
    for (at, attr) in attrs.iter().enumerate() {
        let (base, resource) = match attr.0.split_once('.') {
            Some((b, r)) => (b, Some(r)),
            None => (attr.0.as_str(), None),
        };
        // The assigned amount of a resource: the next attribute after this one naming it.
        let assigned =
            |name: &str| attrs[at + 1..].iter().find(|a| a.0.split_once('.').is_some_and(|(_, r)| r == name));
        match resource {
            Some(resource) if base != "resources_assigned" => match resource {
                "mem" => {
                    let (total, prefix_total) = size(&attr.1);
                    let mut available = (0, prefix_total);
                    if jobs_wanted {
                        if let Some(a) = assigned("mem") {
                            let (mut used, mut prefix) = size(&a.1);
                            while prefix != prefix_total {
                                if prefix < prefix_total {
                                    used = ((used % 1024) + used) >> 10;
                                    prefix += 1;
                                } else {
                                    used <<= 10;
                                    prefix -= 1;
                                }
                            }
                            available = scale(total - used, prefix_total);
                        }
                    }
                    let (total, prefix_total) = scale(total, prefix_total);
                    s.mem = if jobs_wanted {
                        format!("{}{}b/{}{}b", available.0, unit(available.1), total, unit(prefix_total))
                    } else {
                        format!("{total}{}b", unit(prefix_total))
                    };
                }
                "ncpus" | "nmics" | "ngpus" => {
                    let total = atol(&attr.1);
                    let text = if jobs_wanted {
                        let used = assigned(resource).map(|a| atol(&a.1)).unwrap_or(0);
                        format!("{}/{total}", total - used)
                    } else {
                        total.to_string()
                    };
                    match resource {
                        "ncpus" => s.ncpus = text,
                        "nmics" => s.nmics = text,
                        _ => s.ngpus = text,
                    }
                }
                "host" => s.host = attr.1.clone(),
                "OS" => s.os = attr.1.clone(),
                "hardware" => s.hardware = attr.1.clone(),
                _ => {}
            },
            Some(_) => {}
            None if base == "state" => {
                s.state = if long { attr.1.clone() } else { attr.1.split(',').next().unwrap_or("").to_string() };
            }
            None if base == "comment" => s.comment = attr.1.clone(),
            None if base == "queue" => s.queue = attr.1.clone(),
            None if base == "jobs" && jobs_wanted => {
                let mut list: Vec<String> = Vec::new();
                let mut previous = String::new();
                for token in attr.1.split([',', ' ']).filter(|t| !t.is_empty()) {
                    let mut job = token.split('/').next().unwrap_or(token);
                    if let Some(server) = strip_server {
                        if let Some((seq, suffix)) = job.split_once('.') {
                            if suffix == server {
                                job = seq;
                            }
                        }
                    }
                    if job != previous && list.join(",") != job {
                        list.push(job.to_string());
                    }
                    previous = job.to_string();
                }
                s.running = list.len() as i64;
                s.njobs = s.suspended + s.running;
                s.jobs = list.join(",");
            }
            None => {}
        }
    }
    s
}

/// The column headers of `-S` (`-Sj` with `jobs`), printed once before the first line.
pub(crate) fn summary_header(out: &mut Vec<u8>, jobs: bool) {
    if jobs {
        out.extend_from_slice(
            b"                                                        mem       ncpus   nmics   ngpus\n",
        );
        out.extend_from_slice(
            b"vnode           state           njobs   run   susp      f/t        f/t     f/t     f/t   jobs\n",
        );
        out.extend_from_slice(
            b"--------------- --------------- ------ ----- ------ ------------ ------- ------- ------- -------\n",
        );
    } else {
        out.extend_from_slice(b"vnode           state           OS       hardware host            queue        mem     ncpus   nmics   ngpus  comment\n");
        out.extend_from_slice(b"--------------- --------------- -------- -------- --------------- ---------- -------- ------- ------- ------- ---------\n");
    }
}

/// How `-S` is asked for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SummaryStyle<'a> {
    pub(crate) jobs: bool,
    pub(crate) long: bool,
    pub(crate) format: Format,
    pub(crate) delimiter: &'a str,
    /// The server name, stripped from job ids in the default format.
    pub(crate) server: &'a str,
}

/// One node's summary: a table line, a DSV line, or (JSON) the member to add.
pub(crate) fn summary(out: &mut Vec<u8>, node: &StatusObject, style: SummaryStyle<'_>) -> Option<Json> {
    let strip = (style.format == Format::Default).then_some(style.server);
    let s = summarize(node, style.jobs, style.long, strip);
    let d = style.delimiter;
    match style.format {
        Format::Dsv => {
            let line = if style.jobs {
                format!(
                    "vnode={}{d}state={}{d}njobs={}{d}run={}{d}susp={}{d}mem(f/t)={}{d}ncpus(f/t)={}{d}nmics(f/t)={}{d}ngpus(f/t)={}{d}jobs={}\n",
                    node.name, s.state, s.njobs, s.running, s.suspended, s.mem, s.ncpus, s.nmics, s.ngpus, s.jobs
                )
            } else {
                format!(
                    "vnode={}{d}state={}{d}OS={}{d}hardware={}{d}host={}{d}queue={}{d}mem={}{d}ncpus={}{d}nmics={}{d}ngpus={}{d}comment=",
                    node.name, s.state, s.os, s.hardware, s.host, s.queue, s.mem, s.ncpus, s.nmics, s.ngpus
                )
            };
            out.extend_from_slice(line.as_bytes());
            if !style.jobs {
                push_visible(out, s.comment.as_bytes());
                out.push(b'\n');
            }
            None
        }
        Format::Json => {
            let mut members = vec![("State".to_string(), Json::string(&s.state))];
            if style.jobs {
                members.push(("Total Jobs".into(), Json::number(s.njobs)));
                members.push(("Running Jobs".into(), Json::number(s.running)));
                members.push(("Suspended Jobs".into(), Json::number(s.suspended)));
                members.push(("mem f/t".into(), Json::string(&s.mem)));
                members.push(("ncpus f/t".into(), Json::string(&s.ncpus)));
                members.push(("nmics f/t".into(), Json::string(&s.nmics)));
                members.push(("ngpus f/t".into(), Json::string(&s.ngpus)));
                let jobs = if s.jobs == "--" { Vec::new() } else { s.jobs.split(',').map(Json::string).collect() };
                members.push(("jobs".into(), Json::Array(jobs)));
            } else {
                members.push(("OS".into(), Json::string(&s.os)));
                members.push(("hardware".into(), Json::string(&s.hardware)));
                members.push(("host".into(), Json::string(&s.host)));
                members.push(("queue".into(), Json::string(&s.queue)));
                members.push(("Memory".into(), Json::string(&s.mem)));
                members.push(("ncpus".into(), Json::number(atol(&s.ncpus))));
                members.push(("nmics".into(), Json::number(atol(&s.nmics))));
                members.push(("ngpus".into(), Json::number(atol(&s.ngpus))));
                members.push(("comment".into(), Json::string(&s.comment)));
            }
            Some(Json::Object(members))
        }
        Format::Default => {
            // Without -L every column is cut to its width (`%-15.15s`); with it, none is.
            let cut = |w: usize| if style.long { None } else { Some(w) };
            let left = |out: &mut Vec<u8>, v: &str, w: usize| field(out, v.as_bytes(), w, cut(w), true);
            let right = |out: &mut Vec<u8>, v: &str, w: usize| field(out, v.as_bytes(), w, cut(w), false);
            let number = |out: &mut Vec<u8>, v: i64, w: usize| field(out, v.to_string().as_bytes(), w, None, false);
            left(out, &node.name, 15);
            out.push(b' ');
            left(out, &s.state, 15);
            out.push(b' ');
            if style.jobs {
                number(out, s.njobs, 6);
                out.push(b' ');
                number(out, s.running, 5);
                out.push(b' ');
                number(out, s.suspended, 6);
                out.push(b' ');
                right(out, &s.mem, 12);
                for v in [&s.ncpus, &s.nmics, &s.ngpus] {
                    out.push(b' ');
                    right(out, v, 7);
                }
                out.push(b' ');
                out.extend_from_slice(s.jobs.as_bytes());
            } else {
                left(out, &s.os, 8);
                out.push(b' ');
                left(out, &s.hardware, 8);
                out.push(b' ');
                left(out, &s.host, 15);
                out.push(b' ');
                left(out, &s.queue, 10);
                out.push(b' ');
                right(out, &s.mem, 8);
                for v in [&s.ncpus, &s.nmics, &s.ngpus] {
                    out.push(b' ');
                    right(out, v, 7);
                }
                out.push(b' ');
                push_visible(out, s.comment.as_bytes());
            }
            out.push(b'\n');
            None
        }
    }
}
