//! `qmsg [-E] [-O] msg_string job_identifier...`: appends a line to running jobs' stderr
//! (`-E`, the default) and/or stdout (`-O`), written by each job's mom as its owner; one
//! request per job and errors per job, as OpenPBS's qmsg.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};
use pbs_proto::Request;

const USAGE: &str = "usage: qmsg [-O] [-E] msg_string job_identifier...\n       qmsg --version\n";

/// getopt(3) option string of OpenPBS's qmsg.
const OPTSTRING: &str = "EO";

/// OpenPBS's qmsg copies the message into a buffer of this many characters.
const MAX_MSG_STRING_LEN: usize = 256;

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qmsg", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// To the jobs' stderr (the default).
    #[arg(short = 'E')]
    stderr: bool,
    /// To the jobs' stdout.
    #[arg(short = 'O')]
    stdout: bool,
    /// The message, then job ids.
    operands: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        Args { stderr: scan.has('E'), stdout: scan.has('O'), operands: scan.operands.clone() }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Message {
    text: String,
    stdout: bool,
    stderr: bool,
    jobs: Vec<String>,
}

/// Parses the command line; `Err` is the text to print before exiting with status 2.
fn parse(prog: &str, argv: &[String]) -> Result<Message, String> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    if !scan.errors.is_empty() {
        return Err(jobopts::usage_text(&scan.errors, USAGE));
    }
    let args = Args::from_scan(&scan);
    let Some((text, jobs)) = args.operands.split_first().filter(|(_, jobs)| !jobs.is_empty()) else {
        return Err(USAGE.to_string());
    };
    Ok(Message {
        text: pbs_cli::truncate(text, MAX_MSG_STRING_LEN).to_string(),
        stdout: args.stdout,
        stderr: args.stderr || !args.stdout,
        jobs: jobs.to_vec(),
    })
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let Message { text, stdout, stderr, jobs } = match pbs_cli::parse_command_line("qmsg", 2, parse) {
        Ok(message) => message,
        Err(code) => return code,
    };
    let conf = match pbs_cli::load_conf() {
        Ok(conf) => conf,
        Err(e) => {
            eprintln!("qmsg: {e:#}");
            return ExitCode::from(2);
        }
    };
    let server = pbs_cli::server_name(&conf);
    let mut status = 0u32;
    let mut client = None;
    for typed in &jobs {
        let Some(id) = pbs_cli::full_job_id(typed, &server) else {
            pbs_cli::print_bad_job_id("qmsg", typed);
            status = 1;
            continue;
        };
        let connection = match &mut client {
            Some(client) => client,
            None => match pbs_cli::connect("qmsg") {
                Ok(connected) => client.insert(connected),
                Err(code) => return code,
            },
        };
        let request = Request::MessageJob { id: id.clone(), text: text.clone(), stdout, stderr };
        if let Err(e) = connection.request(request) {
            pbs_cli::print_job_error("qmsg", &e.to_string(), &id);
            status = e.pbse().0;
        }
    }
    pbs_cli::exit_code(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], expected: Result<(&str, bool, bool, &[&str]), &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = parse("qmsg", &argv);
        let expected = expected
            .map(|(text, stdout, stderr, jobs)| Message {
                text: text.into(),
                stdout,
                stderr,
                jobs: jobs.iter().map(|s| s.to_string()).collect(),
            })
            .map_err(|lines| format!("{lines}{USAGE}"));
        assert_eq!(got, expected, "{argv:?}");
    }

    #[test]
    fn options_as_openpbs_reads_them() {
        check(&["hi", "1"], Ok(("hi", false, true, &["1"])));
        check(&["-O", "hi", "1", "2"], Ok(("hi", true, false, &["1", "2"])));
        check(&["-E", "-O", "hi", "1"], Ok(("hi", true, true, &["1"])));
        check(&["hi"], Err(""));
        check(&["-x", "hi", "1"], Err("qmsg: invalid option -- 'x'\n"));
        let long = "x".repeat(300);
        check(&[&long, "1"], Ok((&long[..256], false, true, &["1"])));
    }
}
