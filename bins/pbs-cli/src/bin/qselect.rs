//! `qselect`: prints the ids of the jobs matching every given criterion, one per line.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::io::Write;
use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};
use pbs_core::Pbse;
use pbs_core::jobattr::{self, Command};
use pbs_proto::{CompareOp, Criterion};

const USAGE: &str = "usage: qselect [-a [op]date_time] [-A account_string] [-c [op]interval]
\t[-h hold_list] [-H] [-J] [-l resource_list] [-N name] [-p [op]priority]
\t[-q destination] [-r y|n] [-s states] [-t subopt[op]date_time] [-T] [-P project_name]
\t[-x] [-u user_name]
       qselect --version
";

/// getopt(3) option string of OpenPBS's qselect.
const OPTSTRING: &str = "a:A:c:h:HJl:N:p:q:r:s:t:Tu:xP:";

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
/// Options may repeat; each occurrence adds a criterion.
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qselect", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// `[.op.]date_time`: Execution_Time.
    #[arg(short = 'a', allow_hyphen_values = true)]
    execution_time: Vec<String>,
    #[arg(short = 'A', allow_hyphen_values = true)]
    account: Vec<String>,
    #[arg(short = 'c', allow_hyphen_values = true)]
    checkpoint: Vec<String>,
    #[arg(short = 'h', allow_hyphen_values = true)]
    holds: Vec<String>,
    /// Finished and moved jobs only.
    #[arg(short = 'H')]
    history_only: bool,
    /// Array jobs only.
    #[arg(short = 'J')]
    arrays: bool,
    /// `res.op.value[,res.op.value...]`.
    #[arg(short = 'l', allow_hyphen_values = true)]
    resources: Vec<String>,
    #[arg(short = 'N', allow_hyphen_values = true)]
    name: Vec<String>,
    #[arg(short = 'p', allow_hyphen_values = true)]
    priority: Vec<String>,
    #[arg(short = 'P', allow_hyphen_values = true)]
    project: Vec<String>,
    #[arg(short = 'q', allow_hyphen_values = true)]
    queue: Vec<String>,
    #[arg(short = 'r', allow_hyphen_values = true)]
    rerunable: Vec<String>,
    #[arg(short = 's', allow_hyphen_values = true)]
    states: Vec<String>,
    /// `subopt[.op.]date_time`, subopt one of `a c e g m q s t`.
    #[arg(short = 't', allow_hyphen_values = true)]
    times: Vec<String>,
    /// Subjobs too.
    #[arg(short = 'T')]
    subjobs: bool,
    #[arg(short = 'u', allow_hyphen_values = true)]
    users: Vec<String>,
    /// Finished jobs too.
    #[arg(short = 'x')]
    history: bool,
    /// Not accepted: qselect takes no operands.
    operands: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        let mut args = Args { operands: scan.operands.clone(), ..Args::default() };
        for opt in &scan.options {
            let value = opt.value.clone();
            match opt.letter {
                'a' => args.execution_time.extend(value),
                'A' => args.account.extend(value),
                'c' => args.checkpoint.extend(value),
                'h' => args.holds.extend(value),
                'H' => args.history_only = true,
                'J' => args.arrays = true,
                'l' => args.resources.extend(value),
                'N' => args.name.extend(value),
                'p' => args.priority.extend(value),
                'P' => args.project.extend(value),
                'q' => args.queue.extend(value),
                'r' => args.rerunable.extend(value),
                's' => args.states.extend(value),
                't' => args.times.extend(value),
                'T' => args.subjobs = true,
                'u' => args.users.extend(value),
                'x' => args.history = true,
                _ => {}
            }
        }
        args
    }
}

/// What is sent: the criteria and the flags of the request.
#[derive(Debug, PartialEq, Eq)]
struct Selection {
    criteria: Vec<Criterion>,
    history: bool,
    subjobs: bool,
    arrays_only: bool,
}

/// A command line refused before contacting the server: text and exit status.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    text: String,
    status: u8,
}

fn criterion(attr: &str, op: CompareOp, value: &str) -> Criterion {
    Criterion { attr: attr.to_string(), op, value: value.to_string() }
}

/// `check_res_op` over a whole `-l` value: `res.op.value[,res.op.value...]`.
fn resource_criteria(list: &str, out: &mut Vec<Criterion>) -> Result<(), String> {
    let bad = |rest: &str| Err(format!("qselect: illegal -l value\nresource_list: {rest}"));
    let mut rest = list;
    while !rest.is_empty() {
        let Some((resource, tail)) = rest.split_once('.') else {
            return bad(rest);
        };
        let Some(op) = tail.get(..2).and_then(CompareOp::from_word) else {
            return bad(rest);
        };
        // The operator is followed by one separator character (`.`).
        let after = tail.get(3..).unwrap_or("");
        let (value, next) = match after.split_once(',') {
            Some((value, next)) => (value, Some(next)),
            None => (after, None),
        };
        if value.is_empty() || next == Some("") {
            return bad(rest);
        }
        out.push(criterion(&format!("{}.{resource}", attr('l')), op, value));
        rest = next.unwrap_or("");
    }
    Ok(())
}

/// Takes `--job_set=LEADER` (or `--job_set LEADER`), the one long option, out of the
/// arguments before getopt(3) reads the rest: the job set's leader for each, or the
/// message for one without a value. The server completes and checks the id.
fn take_job_sets(argv: &[String]) -> (Vec<String>, Result<Vec<String>, String>) {
    let mut rest = Vec::with_capacity(argv.len());
    let mut sets = Vec::new();
    let mut missing = false;
    let mut args = argv.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            rest.push(arg.clone());
            rest.extend(args.by_ref().cloned());
            break;
        }
        match arg.strip_prefix("--job_set") {
            Some(value) if value.starts_with('=') => sets.push(value[1..].to_string()),
            Some("") => match args.next() {
                Some(value) => sets.push(value.clone()),
                None => missing = true,
            },
            _ => rest.push(arg.clone()),
        }
    }
    if missing || sets.iter().any(String::is_empty) {
        return (rest, Err("qselect: option '--job_set' requires an argument".to_string()));
    }
    (rest, Ok(sets))
}

/// The time attribute a `-t` sub-option names.
fn time_attribute(subopt: char) -> Option<&'static str> {
    Some(match subopt {
        'a' => "Execution_Time",
        'c' => "ctime",
        'e' => "etime",
        'g' => "eligible_time",
        'm' => "mtime",
        'q' => "qtime",
        's' => "stime",
        't' => "estimated.start_time",
        _ => return None,
    })
}

/// Builds the request from the command line, with OpenPBS's checks and messages.
fn parse(prog: &str, argv: &[String]) -> Result<Selection, Refusal> {
    let (argv, job_sets) = take_job_sets(argv);
    let scan = jobopts::getopt(prog, &argv, OPTSTRING, true);
    let mut errors = scan.errors.clone();
    let args = Args::from_scan(&scan);
    let mut out = Vec::new();
    match job_sets {
        Ok(sets) => out.extend(sets.iter().map(|set| criterion("job_set", CompareOp::Eq, set))),
        Err(message) => errors.push(message),
    }
    for text in &args.execution_time {
        let (op, date) = jobopts::split_select_op(text);
        match jobopts::cvtdate(date) {
            Some(epoch) => out.push(criterion(attr('a'), op, &epoch.to_string())),
            None => errors.push("qselect: illegal -a value".to_string()),
        }
    }
    for account in &args.account {
        out.push(criterion(attr('A'), CompareOp::Eq, account));
    }
    for text in &args.checkpoint {
        let (op, value) = jobopts::split_select_op(text);
        if value.trim_start().is_empty() {
            errors.push("qselect: illegal -c value".to_string());
        } else {
            out.push(criterion(attr('c'), op, value));
        }
    }
    for text in &args.holds {
        let (op, value) = jobopts::split_select_op(text);
        out.push(criterion(attr('h'), op, value));
    }
    for list in &args.resources {
        if let Err(message) = resource_criteria(list, &mut out) {
            errors.push(message);
        }
    }
    for name in &args.name {
        out.push(criterion(attr('N'), CompareOp::Eq, name));
    }
    for text in &args.priority {
        let (op, value) = jobopts::split_select_op(text);
        out.push(criterion(attr('p'), op, value));
    }
    for project in &args.project {
        out.push(criterion(attr('P'), CompareOp::Eq, project));
    }
    let mut destination = None;
    for text in &args.queue {
        destination = Some(text.clone());
        let (op, value) = jobopts::split_select_op(text);
        out.push(criterion(attr('q'), op, value));
    }
    for text in &args.rerunable {
        match text.trim_start().chars().next() {
            Some('y') => out.push(criterion(attr('r'), CompareOp::Eq, "True")),
            Some('n') => out.push(criterion(attr('r'), CompareOp::Eq, "False")),
            _ => errors.push("qselect: illegal -r value".to_string()),
        }
    }
    for text in &args.states {
        let (op, value) = jobopts::split_select_op(text);
        out.push(criterion(attr('s'), op, value));
    }
    for text in &args.times {
        let mut chars = text.chars();
        let attr = chars.next().and_then(time_attribute);
        let (op, date) = jobopts::split_select_op(chars.as_str());
        match (attr, jobopts::cvtdate(date)) {
            (Some(attr), Some(epoch)) => out.push(criterion(attr, op, &epoch.to_string())),
            _ => errors.push("qselect: illegal -t value".to_string()),
        }
    }
    if args.history_only {
        out.push(criterion("job_state", CompareOp::Eq, "FM"));
    }
    for users in &args.users {
        out.push(criterion(attr('u'), CompareOp::Eq, users));
    }
    if !errors.is_empty() || !args.operands.is_empty() {
        let mut text: String = errors.iter().map(|e| format!("{e}\n")).collect();
        text.push_str(USAGE);
        return Err(Refusal { text, status: 2 });
    }
    if let Some(destination) = destination {
        if jobopts::parse_destination(&destination).is_none() {
            let text = format!("qselect: illegally formed destination: {destination}\n");
            return Err(Refusal { text, status: 2 });
        }
    }
    verify(&out)?;
    Ok(Selection {
        criteria: out,
        history: args.history || args.history_only,
        subjobs: args.subjobs,
        arrays_only: args.arrays,
    })
}

/// The client-side checks OpenPBS makes on a select list, with its messages: `illegal -X
/// value` and usage, or for `-p` the PBSE text and status.
fn verify(criteria: &[Criterion]) -> Result<(), Refusal> {
    let usage = |opt: char| Refusal { text: format!("qselect: illegal -{opt} value\n{USAGE}"), status: 2 };
    for c in criteria {
        let value = c.value.as_str();
        let Some(letter) = jobattr::option_letter(Command::Qselect, &c.attr) else {
            continue;
        };
        let valid = match letter {
            'c' => jobattr::check_checkpoint(value),
            'h' => jobattr::check_hold(value),
            'N' => value.is_empty() || jobattr::check_job_name(value).is_ok(),
            's' => !value.is_empty() && value.chars().all(|s| "EFHMQRSTUWXB".contains(s)),
            'u' => jobattr::check_at_list(value, false, false),
            'p' if !jobattr::is_long(value) => {
                let text = format!("qselect: {}\n", Pbse::BADATVAL);
                return Err(Refusal { text, status: (Pbse::BADATVAL.0 & 0xff) as u8 });
            }
            _ => true,
        };
        if !valid {
            return Err(usage(letter));
        }
    }
    Ok(())
}

/// The attribute qselect's option `-letter` selects by.
fn attr(letter: char) -> &'static str {
    jobattr::option_attribute(Command::Qselect, letter).unwrap_or_default()
}

/// The output: one id per line.
fn render(ids: &[String]) -> String {
    let mut out = String::with_capacity(ids.len() * 16);
    for id in ids {
        out.push_str(id);
        out.push('\n');
    }
    out
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    pbs_cli::reset_sigpipe();
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    if argv.len() == 2 && argv[1] == "--version" {
        println!("pbs_version = {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let prog = argv.first().map(String::as_str).unwrap_or("qselect");
    let selection = match parse(prog, argv.get(1..).unwrap_or_default()) {
        Ok(selection) => selection,
        Err(refusal) => {
            eprint!("{}", refusal.text);
            return ExitCode::from(refusal.status);
        }
    };
    let mut client = match pbs_cli::connect("qselect") {
        Ok(client) => client,
        Err(code) => return code,
    };
    let Selection { criteria, history, subjobs, arrays_only } = selection;
    match client.select(criteria, history, subjobs, arrays_only) {
        Ok(ids) => {
            let _ = std::io::stdout().lock().write_all(render(&ids).as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let code = e.pbse();
            let text = e.to_string();
            if text.is_empty() {
                eprintln!("qselect: Error ({}) selecting jobs", code.0);
            } else {
                eprintln!("qselect: {text}");
            }
            // Asking for history when the server keeps none is not a failure.
            if code == Pbse::JOBHISTNOTSET { ExitCode::SUCCESS } else { pbs_cli::exit_code(code.0) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(attr: &str, op: CompareOp, value: &str) -> Criterion {
        criterion(attr, op, value)
    }

    fn check(argv: &[&str], expected: Result<Vec<Criterion>, &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = parse("qselect", &argv).map(|s| s.criteria).map_err(|r| r.text);
        let expected = expected.map_err(|lines| format!("{lines}{USAGE}"));
        assert_eq!(got, expected, "{argv:?}");
    }

    #[test]
    fn builds_criteria() {
        use CompareOp::*;
        check(
            &["-l", "walltime.gt.00:05:00,ncpus.eq.2"],
            Ok(vec![c("Resource_List.walltime", Gt, "00:05:00"), c("Resource_List.ncpus", Eq, "2")]),
        );
        check(&["-s", "H"], Ok(vec![c("job_state", Eq, "H")]));
        check(&["-s", ".ne.R"], Ok(vec![c("job_state", Ne, "R")]));
        check(&["-u", "bob", "-N", "x"], Ok(vec![c("Job_Name", Eq, "x"), c("Job_Owner", Eq, "bob")]));
        check(&["-q", "workq@host"], Ok(vec![c("queue", Eq, "workq@host")]));
        check(&["-p", ".gt.5"], Ok(vec![c("Priority", Gt, "5")]));
        check(&["-r", "y"], Ok(vec![c("Rerunable", Eq, "True")]));
        check(&["-h", "u"], Ok(vec![c("Hold_Types", Eq, "u")]));
        check(&["-H"], Ok(vec![c("job_state", Eq, "FM")]));
        check(&["-A", "acct", "-P", "proj"], Ok(vec![c("Account_Name", Eq, "acct"), c("project", Eq, "proj")]));
        check(&["-J", "-T", "-x"], Ok(vec![]));
        let t = parse("qselect", &["-tc.gt.1200".to_string()]).unwrap().criteria;
        assert_eq!((t[0].attr.as_str(), t[0].op), ("ctime", Gt));
        let sel = parse("qselect", &["-J".to_string(), "-T".to_string(), "-x".to_string()]).unwrap();
        assert!(sel.arrays_only && sel.subjobs && sel.history);
    }

    #[test]
    fn job_set_is_a_long_option() {
        use CompareOp::*;
        check(&["--job_set=12.svr"], Ok(vec![c("job_set", Eq, "12.svr")]));
        check(&["-s", "H", "--job_set", "12"], Ok(vec![c("job_set", Eq, "12"), c("job_state", Eq, "H")]));
        check(&["--job_set"], Err("qselect: option '--job_set' requires an argument\n"));
        check(&["--job_set="], Err("qselect: option '--job_set' requires an argument\n"));
    }

    #[test]
    fn rejects_bad_values() {
        check(&["-l", "walltime"], Err("qselect: illegal -l value\nresource_list: walltime\n"));
        check(&["-l", "walltime.xx.1"], Err("qselect: illegal -l value\nresource_list: walltime.xx.1\n"));
        check(&["-l", "ncpus.eq.1,"], Err("qselect: illegal -l value\nresource_list: ncpus.eq.1,\n"));
        check(&["-s", "Z"], Err("qselect: illegal -s value\n"));
        check(&["-r", "maybe"], Err("qselect: illegal -r value\n"));
        check(&["-a", "tomorrow"], Err("qselect: illegal -a value\n"));
        check(&["-t", "z1200"], Err("qselect: illegal -t value\n"));
        check(&["-h", "x"], Err("qselect: illegal -h value\n"));
        check(&["workq"], Err(""));
        check(&["-K"], Err("qselect: invalid option -- 'K'\n"));
        let refusal = parse("qselect", &["-p".to_string(), "abc".to_string()]).unwrap_err();
        assert_eq!((refusal.text.as_str(), refusal.status), ("qselect: Illegal attribute or resource value\n", 166));
        let refusal = parse("qselect", &["-q".to_string(), "a#b".to_string()]).unwrap_err();
        assert_eq!((refusal.text.as_str(), refusal.status), ("qselect: illegally formed destination: a#b\n", 2));
    }

    #[test]
    fn output_is_one_id_per_line() {
        // qselect_all.txt of the reference outputs.
        let ids: Vec<String> =
            ["26340.vm", "26341.vm", "26344[].vm", "26345.vm", "26348[].vm"].map(String::from).to_vec();
        assert_eq!(render(&ids), "26340.vm\n26341.vm\n26344[].vm\n26345.vm\n26348[].vm\n");
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let words: Vec<String> = ["-s", "Q", "-l", "ncpus.eq.1", "-l", "mem.gt.1gb", "-J", "-u", "a", "-x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let scan = jobopts::getopt("qselect", &words, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("qselect")).unwrap());
    }
}
