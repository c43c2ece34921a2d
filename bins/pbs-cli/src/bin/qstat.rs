//! `qstat`: status of jobs (default table, `-a` alternate table, `-f` full, `-F json|dsv`),
//! of queues (`-Q`) and of the server (`-B`), in OpenPBS's formats.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use pbs_cli::timefmt::{ctime, is_time_attribute};
use pbs_proto::{Request, StatusObject};

const USAGE: &str = "usage:
\tqstat [-fp] [-F json|dsv [-D delim]] [-w] [-x] [-t] [-J] [-i|-r] [-H] [-u user] [job_identifier... | destination...]
\tqstat -a|-i|-r|-H|-T [-J] [-t] [-u user] [-n [-1]] [-s] [-G|-M] [-w] [-x] [job_identifier... | destination...]
\tqstat -Q [-f [-F json|dsv [-D delim]]] [-w] [destination...]
\tqstat -q [-G|-M] [destination...]
\tqstat -B [-f [-F json|dsv [-D delim]]] [server_name...]
\tqstat --version
";

/// Line limit of the full display's folding rule (OpenPBS's `CHAR_LINE_LIMIT`).
const LINE_LIMIT: usize = 78;

#[derive(Parser, Debug, Default)]
#[command(name = "qstat", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    #[arg(short = 'f')]
    full: bool,
    #[arg(short = 'F')]
    format: Option<String>,
    #[arg(short = 'D')]
    delimiter: Option<String>,
    #[arg(short = 'x')]
    history: bool,
    #[arg(short = 'H')]
    history_only: bool,
    #[arg(short = 'a')]
    alternate: bool,
    #[arg(short = 's')]
    comments: bool,
    #[arg(short = 'n')]
    nodes: bool,
    #[arg(short = '1')]
    one_line: bool,
    #[arg(short = 'w')]
    wide: bool,
    #[arg(short = 't')]
    subjobs: bool,
    #[arg(short = 'J')]
    arrays_only: bool,
    #[arg(short = 'u')]
    users: Option<String>,
    #[arg(short = 'i')]
    not_running: bool,
    #[arg(short = 'r')]
    running: bool,
    #[arg(short = 'p')]
    percent: bool,
    #[arg(short = 'G')]
    gigabytes: bool,
    #[arg(short = 'M')]
    megawords: bool,
    #[arg(short = 'T')]
    estimated: bool,
    #[arg(short = 'B')]
    server: bool,
    #[arg(short = 'Q')]
    queues: bool,
    #[arg(short = 'q')]
    queue_limits: bool,
    #[arg(long = "version")]
    version: bool,
    operands: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Text,
    Json,
    Dsv,
}

/// `s` cut to `width` characters with the last replaced by `*` when longer.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() > width {
        let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
        out.push('*');
        out
    } else {
        s.to_string()
    }
}

/// `123.host.example.com` -> `123.host`: the id up to the first dot of the server name.
fn short_job_id(id: &str) -> &str {
    match id.find('.') {
        Some(first) => match id[first + 1..].find('.') {
            Some(second) => &id[..first + 1 + second],
            None => id,
        },
        None => id,
    }
}

fn owner_user(owner: &str) -> &str {
    owner.split('@').next().unwrap_or(owner)
}

/// The default job table.
fn job_table(jobs: &[StatusObject], wide: bool, out: &mut String) {
    if jobs.is_empty() {
        return;
    }
    if wide {
        out.push_str("Job id                         Name            User             Time Use S Queue\n");
        out.push_str("-----------------------------  --------------- ---------------  -------- - ---------------\n");
    } else {
        out.push_str("Job id            Name             User              Time Use S Queue\n");
        out.push_str("----------------  ---------------- ----------------  -------- - -----\n");
    }
    let (id_w, name_w, user_w, queue_w) = if wide { (30, 15, 15, 15) } else { (17, 16, 16, 16) };
    for job in jobs {
        let id = cut(short_job_id(&job.name), id_w);
        let name = job.get("Job_Name").unwrap_or("");
        // OpenPBS cuts names of 16 or more characters to 15 plus `*`.
        let name = if !wide && name.chars().count() >= 16 { cut(name, 15) } else { cut(name, name_w) };
        let user = cut(owner_user(job.get("Job_Owner").unwrap_or("")), user_w);
        let time = cut(job.get("resources_used.cput").unwrap_or("0"), 8);
        let state = job.get("job_state").unwrap_or("?");
        let queue = cut(job.get("queue").unwrap_or(""), queue_w);
        let _ = writeln!(out, "{id:<id_w$} {name:<name_w$} {user:<user_w$}  {time:>8} {state:1} {queue:<queue_w$}");
    }
}

/// `hh:mm` of a duration `HH:MM:SS`, as the -a table's time columns show it.
fn hours_minutes(value: Option<&str>) -> String {
    match value {
        Some(v) => {
            let parts: Vec<&str> = v.split(':').collect();
            if parts.len() == 3 { format!("{}:{}", parts[0], parts[1]) } else { v.to_string() }
        }
        None => MISSING.to_string(),
    }
}

/// What the `-a` table shows for a missing value (right-aligned like any other).
const MISSING: &str = " -- ";

/// The `-a` table (also used by -s, -n, -i, -r, -u, -H).
fn alternate_table(jobs: &[StatusObject], args: &Args, server: &str, out: &mut String) {
    if jobs.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{server}: ");
    let wide = args.wide;
    if wide {
        out.push_str(&" ".repeat(99));
        out.push_str("Req'd  Req'd   Elap\n");
        out.push_str("Job ID                         Username        Queue           Jobname         SessID   NDS  TSK   Memory Time  S Time\n");
        out.push_str("------------------------------ --------------- --------------- --------------- -------- ---- ----- ------ ----- - -----\n");
    } else {
        out.push_str(&" ".repeat(60));
        out.push_str("Req'd  Req'd   Elap\n");
        out.push_str("Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time\n");
        out.push_str("--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----\n");
    }
    let (id_w, user_w, queue_w, name_w, sess_w, nds_w, tsk_w) =
        if wide { (30, 15, 15, 15, 8, 4, 5) } else { (15, 8, 8, 10, 6, 3, 3) };
    for job in jobs {
        let field = |v: Option<&str>, w: usize| cut(v.unwrap_or(MISSING), w);
        let id = cut(short_job_id(&job.name), id_w);
        let user = cut(owner_user(job.get("Job_Owner").unwrap_or("")), user_w);
        let queue = cut(job.get("queue").unwrap_or(""), queue_w);
        let name = cut(job.get("Job_Name").unwrap_or(""), name_w);
        let sess = field(job.get("session_id"), sess_w);
        let nds = field(job.get("Resource_List.nodect"), nds_w);
        let tsk = field(job.get("Resource_List.ncpus").filter(|n| *n != "0"), tsk_w);
        let mem = match job.get("Resource_List.mem").and_then(|m| m.parse::<pbs_core::Size>().ok()) {
            Some(size) => cut(&size.to_short_string(), 6),
            None => MISSING.to_string(),
        };
        let requested = if job.get("Resource_List.cput").is_some() {
            job.get("Resource_List.cput")
        } else {
            job.get("Resource_List.walltime")
        };
        let req_time = cut(&hours_minutes(requested), 5);
        let state = job.get("job_state").unwrap_or("?");
        let elapsed = if job.get("resources_used.walltime").is_some() {
            hours_minutes(job.get("resources_used.walltime"))
        } else {
            MISSING.to_string()
        };
        let elapsed = cut(&elapsed, 5);
        let _ = write!(
            out,
            "{id:<id_w$} {user:<user_w$} {queue:<queue_w$} {name:<name_w$} {sess:>sess_w$} {nds:>nds_w$} {tsk:>tsk_w$} {mem:>6} {req_time:>5} {state} {elapsed:>5}"
        );
        let exec_host = job.get("exec_host").map(|h| h.replace('+', ","));
        let comment = job.get("comment");
        if args.one_line {
            if args.nodes {
                let _ = write!(out, " {}", exec_host.as_deref().unwrap_or("--"));
            }
            if args.comments {
                let _ = write!(out, " {}", comment.unwrap_or("--"));
            }
            out.push('\n');
        } else {
            out.push('\n');
            if args.nodes {
                let _ = writeln!(out, "   {}", exec_host.as_deref().unwrap_or("--"));
            }
            if args.comments {
                if let Some(c) = comment {
                    let limit = if wide { 114 } else { 74 };
                    let text = if c.chars().count() > limit {
                        format!("{}...", c.chars().take(limit).collect::<String>())
                    } else {
                        c.to_string()
                    };
                    let _ = writeln!(out, "   {text}");
                }
            }
        }
    }
}

/// The value as a full display shows it: times in ctime form.
fn display_value<'a>(name: &str, value: &'a str) -> std::borrow::Cow<'a, str> {
    if is_time_attribute(name) {
        if name == "estimated.start_time" && value == "0" {
            return "UNKNOWN".into();
        }
        if let Ok(epoch) = value.parse::<i64>() {
            return ctime(epoch).into();
        }
    }
    value.into()
}

/// One `    name = value` line with OpenPBS's folding at commas and at the line limit.
fn full_line(name: &str, value: &str, wide: bool, out: &mut String) {
    let _ = write!(out, "    {name} = ");
    if wide {
        out.push_str(&value.replace('\n', "\\n"));
        out.push('\n');
        return;
    }
    let mut column = name.len() + 7;
    for (i, piece) in value.split(',').enumerate() {
        if i > 0 {
            out.push(',');
        }
        let len = piece.chars().count();
        if len + column < LINE_LIMIT {
            out.push_str(piece);
            column += len;
        } else {
            if i > 0 {
                out.push_str("\n\t");
                column = 9;
            }
            for c in piece.chars() {
                out.push(c);
                column += 1;
                if column > LINE_LIMIT {
                    out.push_str("\n\t");
                    column = 8;
                }
            }
        }
    }
    out.push('\n');
}

/// `<Kind>: <name>` then every attribute, then a blank line.
fn full_display(kind: &str, objects: &[StatusObject], wide: bool, out: &mut String) {
    for object in objects {
        let _ = writeln!(out, "{kind}: {}", object.name);
        for attr in &object.attrs {
            full_line(&attr.0, &display_value(&attr.0, &attr.1), wide, out);
        }
        out.push('\n');
    }
}

/// `-F dsv`: one line per object.
fn dsv_display(kind: &str, objects: &[StatusObject], delimiter: &str, out: &mut String) {
    for object in objects {
        let _ = write!(out, "{kind}: {}", object.name);
        for attr in &object.attrs {
            let value = display_value(&attr.0, &attr.1).replace('\n', "\\n");
            let _ = write!(out, "{delimiter}{}={value}", attr.0);
        }
        out.push('\n');
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// A value as qstat's JSON shows it: numbers as numbers, anything else as a string.
fn json_value(name: &str, value: &str) -> String {
    let always_string = matches!(name, "Job_Name" | "project" | "Account_Name");
    if !always_string {
        let looks_numeric =
            !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b'.' || b == b'e');
        if looks_numeric && serde_json::from_str::<serde_json::Number>(value).is_ok() {
            return value.to_string();
        }
    }
    json_string(value)
}

/// Splits a Variable_List at unescaped commas into (name, value) pairs.
fn variables(list: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = list.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            ',' => out.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out.into_iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (item, String::new()),
        })
        .collect()
}

/// `-F json`: OpenPBS's cJSON layout, TAB indented.
fn json_display(section: &str, objects: &[StatusObject], server: &str, now: i64, out: &mut String) {
    out.push_str("{\n");
    let _ = writeln!(out, "\t\"timestamp\":\t{now},");
    let _ = writeln!(out, "\t\"pbs_version\":\t{},", json_string(env!("CARGO_PKG_VERSION")));
    let _ = write!(out, "\t\"pbs_server\":\t{}", json_string(server));
    if !objects.is_empty() {
        let _ = write!(out, ",\n\t\"{section}\":\t{{\n");
        for (oi, object) in objects.iter().enumerate() {
            let _ = writeln!(out, "\t\t{}:\t{{", json_string(&object.name));
            let mut members: Vec<String> = Vec::new();
            let mut i = 0;
            while i < object.attrs.len() {
                let name = &object.attrs[i].0;
                if let Some((base, _)) = name.split_once('.') {
                    let mut inner = Vec::new();
                    while i < object.attrs.len() && object.attrs[i].0.split_once('.').map(|(b, _)| b) == Some(base) {
                        let attr = &object.attrs[i];
                        let resource = attr.0.split_once('.').map(|(_, r)| r).unwrap_or_default();
                        let value = display_value(&attr.0, &attr.1);
                        inner.push(format!("\t\t\t\t{}:\t{}", json_string(resource), json_value(resource, &value)));
                        i += 1;
                    }
                    members.push(format!("\t\t\t{}:\t{{\n{}\n\t\t\t}}", json_string(base), inner.join(",\n")));
                    continue;
                }
                let value = display_value(name, &object.attrs[i].1);
                if name == "Variable_List" {
                    let inner: Vec<String> = variables(&value)
                        .iter()
                        .map(|(k, v)| format!("\t\t\t\t{}:\t{}", json_string(k), json_string(v)))
                        .collect();
                    members.push(format!("\t\t\t\"Variable_List\":\t{{\n{}\n\t\t\t}}", inner.join(",\n")));
                } else {
                    members.push(format!("\t\t\t{}:\t{}", json_string(name), json_value(name, &value)));
                }
                i += 1;
            }
            out.push_str(&members.join(",\n"));
            out.push_str("\n\t\t}");
            if oi + 1 < objects.len() {
                out.push(',');
            }
            out.push('\n');
        }
        out.push_str("\t}");
    }
    out.push_str("\n}\n");
}

/// Counts in a `state_count` value (`Transit:0 Queued:1 ...`).
fn state_counts(state_count: &str) -> [String; 6] {
    let get = |key: &str| {
        state_count
            .split_whitespace()
            .find_map(|item| item.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
            .unwrap_or("0")
            .to_string()
    };
    [get("Queued"), get("Running"), get("Held"), get("Waiting"), get("Transit"), get("Exiting")]
}

fn server_table(objects: &[StatusObject], out: &mut String) {
    out.push_str("Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status\n");
    out.push_str("---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------\n");
    for s in objects {
        let [que, run, hld, wat, trn, ext] = state_counts(s.get("state_count").unwrap_or(""));
        let _ = writeln!(
            out,
            "{:<16} {:>5} {:>5} {que:>5} {run:>5} {hld:>5} {wat:>5} {trn:>5} {ext:>5} {:<10}",
            cut(&s.name, 16),
            s.get("max_running").unwrap_or("0"),
            s.get("total_jobs").unwrap_or("0"),
            s.get("server_state").unwrap_or("")
        );
    }
}

fn yes_no(v: Option<&str>) -> &'static str {
    if v.is_some_and(|v| v.eq_ignore_ascii_case("true")) { "yes" } else { "no" }
}

fn queue_table(objects: &[StatusObject], out: &mut String) {
    out.push_str("Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type\n");
    out.push_str("---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----\n");
    for q in objects {
        let [que, run, hld, wat, trn, ext] = state_counts(q.get("state_count").unwrap_or(""));
        let _ = writeln!(
            out,
            "{:<16} {:>5} {:>5} {:>3} {:>3} {que:>5} {run:>5} {hld:>5} {wat:>5} {trn:>5} {ext:>5} {:<4}",
            cut(&q.name, 16),
            q.get("max_running").unwrap_or("0"),
            q.get("total_jobs").unwrap_or("0"),
            yes_no(q.get("enabled")),
            yes_no(q.get("started")),
            cut(q.get("queue_type").unwrap_or(""), 4)
        );
    }
}

/// The attributes the table views need, so the server sends no more.
const TABLE_ATTRS: &[&str] = &["Job_Name", "Job_Owner", "resources_used", "job_state", "queue"];
const ALTERNATE_ATTRS: &[&str] = &[
    "Job_Name",
    "Job_Owner",
    "resources_used",
    "job_state",
    "queue",
    "session_id",
    "Resource_List",
    "exec_host",
    "comment",
];

fn keep_job(job: &StatusObject, args: &Args, users: &[&str]) -> bool {
    let state = job.get("job_state").unwrap_or("");
    if args.arrays_only && !job.name.contains("[]") {
        return false;
    }
    if args.history_only && !matches!(state, "F" | "M" | "X") {
        return false;
    }
    if args.not_running && !matches!(state, "Q" | "H" | "W" | "T") {
        return false;
    }
    if args.running && !matches!(state, "R" | "E" | "S" | "U" | "B") {
        return false;
    }
    if !users.is_empty() && !users.contains(&owner_user(job.get("Job_Owner").unwrap_or(""))) {
        return false;
    }
    true
}

fn main() -> ExitCode {
    let args: Args = match pbs_cli::start(USAGE, 2, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let format = match args.format.as_deref() {
        None => Format::Text,
        Some("json") => Format::Json,
        Some("dsv") => Format::Dsv,
        Some(_) => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if format != Format::Text && args.wide {
        eprintln!("qstat: option w cannot be used with -F");
        eprint!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut client = match pbs_cli::connect("qstat") {
        Ok(client) => client,
        Err(code) => return code,
    };
    let server_name = client.server_name().to_string();
    let delimiter = args.delimiter.clone().unwrap_or_else(|| "|".into());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let now = i64::try_from(now).unwrap_or(0);
    let mut out = String::new();
    let mut status = ExitCode::SUCCESS;

    let reply = if args.server {
        client.status(Request::StatusServer { attrs: vec![] })
    } else if args.queues || args.queue_limits {
        client.status(Request::StatusQueue { names: args.operands.clone(), attrs: vec![] })
    } else {
        let (mut ids, mut queues) = (Vec::new(), Vec::new());
        for operand in &args.operands {
            if operand.starts_with(|c: char| c.is_ascii_digit()) {
                match pbs_cli::full_job_id(operand, &server_name) {
                    Some(id) => ids.push(id),
                    None => {
                        eprintln!("qstat: illegally formed job identifier: {operand}");
                        status = ExitCode::from(1);
                    }
                }
            } else if let Some(queue) = operand.split('@').next().filter(|q| !q.is_empty()) {
                queues.push(queue.to_string());
            }
        }
        if !args.operands.is_empty() && ids.is_empty() && queues.is_empty() && status != ExitCode::SUCCESS {
            return status;
        }
        let table_view = !args.full && format == Format::Text;
        let alternate = args.alternate
            || args.comments
            || args.nodes
            || args.not_running
            || args.running
            || args.users.is_some()
            || args.history_only;
        let attrs: Vec<String> = match (table_view, alternate) {
            (true, false) => TABLE_ATTRS.iter().map(|s| s.to_string()).collect(),
            (true, true) => ALTERNATE_ATTRS.iter().map(|s| s.to_string()).collect(),
            _ => Vec::new(),
        };
        let history = args.history || args.history_only;
        client.status_jobs(ids, queues, attrs, history, args.subjobs)
    };
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            eprintln!("qstat: {e}");
            return pbs_cli::exit_code(e.pbse().0);
        }
    };

    if args.server {
        match (format, args.full) {
            (Format::Json, _) => json_display("Server", &reply.objects, &server_name, now, &mut out),
            (Format::Dsv, _) => dsv_display("Server", &reply.objects, &delimiter, &mut out),
            (Format::Text, true) => full_display("Server", &reply.objects, args.wide, &mut out),
            (Format::Text, false) => server_table(&reply.objects, &mut out),
        }
    } else if args.queues || args.queue_limits {
        match (format, args.full) {
            (Format::Json, _) => json_display("Queue", &reply.objects, &server_name, now, &mut out),
            (Format::Dsv, _) => dsv_display("Queue", &reply.objects, &delimiter, &mut out),
            (Format::Text, true) => full_display("Queue", &reply.objects, args.wide, &mut out),
            (Format::Text, false) => queue_table(&reply.objects, &mut out),
        }
    } else {
        let users: Vec<&str> = args.users.as_deref().map(|u| u.split(',').collect()).unwrap_or_default();
        let jobs: Vec<StatusObject> = reply.objects.into_iter().filter(|j| keep_job(j, &args, &users)).collect();
        let alternate = args.alternate
            || args.comments
            || args.nodes
            || args.not_running
            || args.running
            || args.users.is_some()
            || args.history_only;
        match (format, args.full) {
            (Format::Json, _) => json_display("Jobs", &jobs, &server_name, now, &mut out),
            (Format::Dsv, _) => dsv_display("Job Id", &jobs, &delimiter, &mut out),
            (Format::Text, true) => full_display("Job Id", &jobs, args.wide, &mut out),
            (Format::Text, false) if alternate => alternate_table(&jobs, &args, &server_name, &mut out),
            (Format::Text, false) => job_table(&jobs, args.wide, &mut out),
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    for error in &reply.errors {
        if error.code == pbs_core::Pbse::HISTJOBID.0 {
            eprintln!("qstat: {} Job has finished, use -x or -H to obtain historical job information", error.id);
        } else {
            pbs_cli::print_job_error("qstat", &error.message, &error.id);
        }
        status = pbs_cli::exit_code(error.code);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use pbs_proto::Attr;

    fn job(id: &str, attrs: &[(&str, &str)]) -> StatusObject {
        StatusObject { name: id.into(), attrs: attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect() }
    }

    #[test]
    fn default_table_matches_openpbs() {
        let jobs = [
            job(
                "26340.vm",
                &[("Job_Name", "heldjob"), ("Job_Owner", "pbsuser@vm"), ("job_state", "H"), ("queue", "workq")],
            ),
            job(
                "2.vm",
                &[
                    ("Job_Name", "STDIN"),
                    ("Job_Owner", "pbsuser@vm"),
                    ("resources_used.cput", "00:00:00"),
                    ("job_state", "F"),
                    ("queue", "workq"),
                ],
            ),
        ];
        let mut out = String::new();
        job_table(&jobs, false, &mut out);
        assert_eq!(
            out,
            "Job id            Name             User              Time Use S Queue\n\
             ----------------  ---------------- ----------------  -------- - -----\n\
             26340.vm          heldjob          pbsuser                  0 H workq           \n\
             2.vm              STDIN            pbsuser           00:00:00 F workq           \n"
        );
        let mut none = String::new();
        job_table(&[], false, &mut none);
        assert_eq!(none, "");
    }

    #[test]
    fn truncation() {
        assert_eq!(cut("averyveryverylongname", 16), "averyveryverylo*");
        assert_eq!(short_job_id("123.host.example.com"), "123.host");
        assert_eq!(short_job_id("123.vm"), "123.vm");
    }

    #[test]
    fn alternate_table_matches_openpbs() {
        let jobs = [job(
            "26340.vm",
            &[
                ("Job_Name", "heldjob"),
                ("Job_Owner", "pbsuser@vm"),
                ("job_state", "H"),
                ("queue", "workq"),
                ("Resource_List.ncpus", "1"),
                ("Resource_List.nodect", "1"),
                ("Resource_List.walltime", "01:00:00"),
            ],
        )];
        let mut out = String::new();
        alternate_table(&jobs, &Args { alternate: true, ..Args::default() }, "vm", &mut out);
        assert_eq!(
            out,
            "\nvm: \n                                                            Req'd  Req'd   Elap\n\
             Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time\n\
             --------------- -------- -------- ---------- ------ --- --- ------ ----- - -----\n\
             26340.vm        pbsuser  workq    heldjob       --    1   1    --  01:00 H   -- \n"
        );
    }

    #[test]
    fn folding_matches_openpbs() {
        let mut out = String::new();
        full_line(
            "Variable_List",
            "PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,PBS_O_LOGNAME=pbsuser,PBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm",
            false,
            &mut out,
        );
        assert_eq!(
            out,
            "    Variable_List = PBS_O_HOME=/home/pbsuser,PBS_O_LANG=C.UTF-8,\n\
             \tPBS_O_LOGNAME=pbsuser,\n\
             \tPBS_O_PATH=/opt/pbs/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin,\n\
             \tPBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,\n\
             \tPBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/pbsuser,\n\
             \tPBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,PBS_O_HOST=vm\n"
        );
        let mut out = String::new();
        full_line("state_count", "Transit:0 Queued:1 Held:1 Waiting:0 Running:2 Exiting:0 Begun:1 ", false, &mut out);
        assert_eq!(out, "    state_count = Transit:0 Queued:1 Held:1 Waiting:0 Running:2 Exiting:0 Begun\n\t:1 \n");
    }

    #[test]
    fn server_and_queue_tables() {
        let server = job(
            "vm",
            &[
                ("server_state", "Active"),
                ("total_jobs", "26338"),
                ("state_count", "Transit:0 Queued:1 Held:1 Waiting:0 Running:2 Exiting:0 Begun:1 "),
            ],
        );
        let mut out = String::new();
        server_table(&[server], &mut out);
        assert!(
            out.ends_with("vm                   0 26338     1     2     1     0     0     0 Active    \n"),
            "{out}"
        );
        let queue = job(
            "workq",
            &[
                ("queue_type", "Execution"),
                ("total_jobs", "5"),
                ("state_count", "Transit:0 Queued:1 Held:1 Waiting:0 Running:2 Exiting:0 Begun:1 "),
                ("enabled", "True"),
                ("started", "True"),
            ],
        );
        let mut out = String::new();
        queue_table(&[queue], &mut out);
        assert!(
            out.ends_with("workq                0     5 yes yes     1     2     1     0     0     0 Exe*\n"),
            "{out}"
        );
    }

    #[test]
    fn json_layout() {
        let jobs = [job(
            "1.vm",
            &[
                ("Job_Name", "123"),
                ("Priority", "0"),
                ("Resource_List.ncpus", "1"),
                ("Resource_List.walltime", "00:10:00"),
                ("Variable_List", "A=1,B=x\\,y"),
                ("Rerunable", "True"),
            ],
        )];
        let mut out = String::new();
        json_display("Jobs", &jobs, "vm", 5, &mut out);
        let expected = "{\n\t\"timestamp\":\t5,\n\t\"pbs_version\":\t\"VERSION\",\n\t\"pbs_server\":\t\"vm\",\n\t\"Jobs\":\t{\n\t\t\"1.vm\":\t{\n\t\t\t\"Job_Name\":\t\"123\",\n\t\t\t\"Priority\":\t0,\n\t\t\t\"Resource_List\":\t{\n\t\t\t\t\"ncpus\":\t1,\n\t\t\t\t\"walltime\":\t\"00:10:00\"\n\t\t\t},\n\t\t\t\"Variable_List\":\t{\n\t\t\t\t\"A\":\t\"1\",\n\t\t\t\t\"B\":\t\"x,y\"\n\t\t\t},\n\t\t\t\"Rerunable\":\t\"True\"\n\t\t}\n\t}\n}\n";
        assert_eq!(out, expected.replace("VERSION", env!("CARGO_PKG_VERSION")));
        assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok());
    }

    #[test]
    fn dsv_layout() {
        let mut out = String::new();
        dsv_display("Job Id", &[job("1.vm", &[("Job_Name", "a"), ("queue", "workq")])], "|", &mut out);
        assert_eq!(out, "Job Id: 1.vm|Job_Name=a|queue=workq\n");
    }
}
