//! `qselect`: prints the ids of the jobs matching every given criterion, one per line.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use pbs_proto::{CompareOp, Criterion};

const USAGE: &str = "usage: qselect [-a [op]date_time] [-A account_string] [-c [op]interval] [-h hold_list]
\t[-H] [-J] [-l resource_list] [-N name] [-p [op]priority] [-P project]
\t[-q destination] [-r y|n] [-s states] [-t subjob] [-T] [-u user_name] [-x] [destination...]
       qselect --version
";

#[derive(Parser, Debug)]
#[command(name = "qselect", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    #[arg(short = 'a')]
    execution_time: Option<String>,
    #[arg(short = 'A')]
    account: Option<String>,
    #[arg(short = 'c')]
    checkpoint: Option<String>,
    #[arg(short = 'h')]
    holds: Option<String>,
    /// Finished and moved jobs only.
    #[arg(short = 'H')]
    history_only: bool,
    /// Array jobs only.
    #[arg(short = 'J')]
    arrays: bool,
    #[arg(short = 'l')]
    resources: Vec<String>,
    #[arg(short = 'N')]
    name: Option<String>,
    #[arg(short = 'p')]
    priority: Option<String>,
    #[arg(short = 'P')]
    project: Option<String>,
    #[arg(short = 'q')]
    queue: Option<String>,
    #[arg(short = 'r')]
    rerunnable: Option<String>,
    #[arg(short = 's')]
    states: Option<String>,
    /// Include subjobs.
    #[arg(short = 'T', short_alias = 't')]
    subjobs: bool,
    #[arg(short = 'u')]
    users: Option<String>,
    /// Include finished jobs.
    #[arg(short = 'x')]
    history: bool,
    #[arg(long = "version")]
    version: bool,
    destinations: Vec<String>,
}

/// A criterion value that does not parse; the message is what qselect prints.
#[derive(Debug, PartialEq)]
struct BadOption(&'static str);

fn op_named(name: &str) -> Option<CompareOp> {
    Some(match name {
        "eq" => CompareOp::Eq,
        "ne" => CompareOp::Ne,
        "lt" => CompareOp::Lt,
        "le" => CompareOp::Le,
        "gt" => CompareOp::Gt,
        "ge" => CompareOp::Ge,
        _ => return None,
    })
}

/// Splits an optional leading `.op.` (or `op.`) from a value: `.gt.1200` -> (Gt, `1200`).
fn leading_op(text: &str) -> (CompareOp, &str) {
    let trimmed = text.strip_prefix('.').unwrap_or(text);
    if let Some((name, rest)) = trimmed.split_once('.') {
        if let Some(op) = op_named(name) {
            return (op, rest);
        }
    }
    (CompareOp::Eq, text)
}

/// `-l res.op.value[,res.op.value...]`.
fn resource_criteria(list: &str) -> Result<Vec<Criterion>, BadOption> {
    let mut out = Vec::new();
    for item in list.split(',') {
        let mut parts = item.splitn(3, '.');
        let (Some(res), Some(op), Some(value)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(BadOption("qselect: illegal -l value"));
        };
        let op = op_named(op).ok_or(BadOption("qselect: illegal -l value"))?;
        if res.is_empty() || value.is_empty() {
            return Err(BadOption("qselect: illegal -l value"));
        }
        out.push(Criterion { attr: format!("Resource_List.{res}"), op, value: value.to_string() });
    }
    Ok(out)
}

fn criteria(args: &Args) -> Result<Vec<Criterion>, BadOption> {
    let mut out = Vec::new();
    let eq = |attr: &str, value: &str| Criterion { attr: attr.into(), op: CompareOp::Eq, value: value.into() };
    if let Some(text) = &args.execution_time {
        let (op, date) = leading_op(text);
        let epoch = pbs_cli::jobopts::parse_datetime(date).ok_or(BadOption("qselect: illegal -a value"))?;
        out.push(Criterion { attr: "Execution_Time".into(), op, value: epoch.to_string() });
    }
    if let Some(account) = &args.account {
        out.push(eq("Account_Name", account));
    }
    if let Some(text) = &args.checkpoint {
        let (op, value) = leading_op(text);
        out.push(Criterion { attr: "Checkpoint".into(), op, value: value.into() });
    }
    if let Some(holds) = &args.holds {
        if !pbs_cli::valid_hold_list(holds) {
            return Err(BadOption("qselect: illegal -h value"));
        }
        out.push(eq("Hold_Types", holds));
    }
    for list in &args.resources {
        out.extend(resource_criteria(list)?);
    }
    if let Some(name) = &args.name {
        out.push(eq("Job_Name", name));
    }
    if let Some(text) = &args.priority {
        let (op, value) = leading_op(text);
        value.parse::<i64>().map_err(|_| BadOption("qselect: illegal -p value"))?;
        out.push(Criterion { attr: "Priority".into(), op, value: value.into() });
    }
    if let Some(project) = &args.project {
        out.push(eq("project", project));
    }
    if let Some(r) = &args.rerunnable {
        let value = match r.as_str() {
            "y" | "Y" => "True",
            "n" | "N" => "False",
            _ => return Err(BadOption("qselect: illegal -r value")),
        };
        out.push(eq("Rerunable", value));
    }
    if let Some(states) = &args.states {
        if states.is_empty() || !states.chars().all(|c| "QHWRETUSBXFM".contains(c)) {
            return Err(BadOption("qselect: illegal -s value"));
        }
        out.push(eq("job_state", states));
    }
    if args.history_only {
        out.push(eq("job_state", "FM"));
    }
    if let Some(users) = &args.users {
        out.push(eq("Job_Owner", users));
    }
    for destination in args.queue.iter().chain(&args.destinations) {
        let queue = destination.split('@').next().unwrap_or_default();
        if !queue.is_empty() {
            out.push(eq("queue", queue));
        }
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args: Args = match pbs_cli::start(USAGE, 2, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let criteria = match criteria(&args) {
        Ok(c) => c,
        Err(BadOption(message)) => {
            eprintln!("{message}");
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut client = match pbs_cli::connect("qselect") {
        Ok(client) => client,
        Err(code) => return code,
    };
    let history = args.history || args.history_only;
    match client.select(criteria, history, args.subjobs, args.arrays) {
        Ok(ids) => {
            let mut out = String::with_capacity(ids.len() * 16);
            for id in ids {
                out.push_str(&id);
                out.push('\n');
            }
            let _ = std::io::stdout().lock().write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("qselect: {e}");
            pbs_cli::exit_code(e.pbse().0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> Result<Vec<Criterion>, BadOption> {
        let args = Args::try_parse_from(std::iter::once("qselect").chain(argv.iter().copied())).unwrap();
        criteria(&args)
    }

    fn c(attr: &str, op: CompareOp, value: &str) -> Criterion {
        Criterion { attr: attr.into(), op, value: value.into() }
    }

    #[test]
    fn builds_criteria() {
        assert_eq!(
            parse(&["-l", "walltime.gt.00:05:00,ncpus.eq.2"]).unwrap(),
            vec![c("Resource_List.walltime", CompareOp::Gt, "00:05:00"), c("Resource_List.ncpus", CompareOp::Eq, "2")]
        );
        assert_eq!(parse(&["-s", "H"]).unwrap(), vec![c("job_state", CompareOp::Eq, "H")]);
        assert_eq!(
            parse(&["-u", "bob", "-N", "x"]).unwrap(),
            vec![c("Job_Name", CompareOp::Eq, "x"), c("Job_Owner", CompareOp::Eq, "bob")]
        );
        assert_eq!(parse(&["-q", "workq@host"]).unwrap(), vec![c("queue", CompareOp::Eq, "workq")]);
        assert_eq!(parse(&["-p", ".gt.5"]).unwrap(), vec![c("Priority", CompareOp::Gt, "5")]);
        assert_eq!(parse(&["-r", "y"]).unwrap(), vec![c("Rerunable", CompareOp::Eq, "True")]);
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(parse(&["-l", "walltime"]), Err(BadOption("qselect: illegal -l value")));
        assert_eq!(parse(&["-l", "walltime.xx.1"]), Err(BadOption("qselect: illegal -l value")));
        assert_eq!(parse(&["-s", "Z"]), Err(BadOption("qselect: illegal -s value")));
        assert_eq!(parse(&["-r", "maybe"]), Err(BadOption("qselect: illegal -r value")));
        assert_eq!(parse(&["-a", "tomorrow"]), Err(BadOption("qselect: illegal -a value")));
    }
}
