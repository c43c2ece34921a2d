//! `qrun`: runs jobs now, where the scheduler would place them or on the vnodes of `-H`;
//! one request per job, in command-line order, with OpenPBS's messages and exit statuses
//! (1 for a bad command line or job id, 2 for a job the server would not run).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};
use pbs_client::{Client, ClientError};
use pbs_core::{JobId, Pbse};

const USAGE: &str = "Usage: qrun [-a] [-H vnode_specification ] job_identifier_list\n       qrun [-a] [-H - ] job_identifier_list\n       qrun --version\n";

/// getopt(3) option string of OpenPBS's qrun.
const OPTSTRING: &str = "H:a";

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qrun", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Where to run: `(n1:ncpus=1)+(n2)`, `n1+n2`, or `-`; the last one given wins.
    #[arg(short = 'H', allow_hyphen_values = true)]
    location: Vec<String>,
    /// Return once the server accepted the request instead of once the job started.
    #[arg(short = 'a')]
    asynchronous: bool,
    /// Job ids.
    jobs: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        Args { location: scan.values('H'), asynchronous: scan.has('a'), jobs: scan.operands.clone() }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    location: Option<String>,
    jobs: Vec<String>,
}

/// Parses the command line; `Err` is the text to print before exiting with status 1.
fn parse(prog: &str, argv: &[String]) -> Result<Run, String> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    let args = Args::from_scan(&scan);
    let mut errors = scan.errors.clone();
    for location in &args.location {
        if location.is_empty() {
            errors.push("qrun: illegal -H value".to_string());
        }
    }
    if !errors.is_empty() || args.jobs.is_empty() {
        return Err(jobopts::usage_text(&errors, USAGE));
    }
    // `-a` only changes when the server answers; the reply carries the same errors.
    Ok(Run { location: args.location.last().cloned(), jobs: args.jobs })
}

/// The line qrun prints when the server refuses to run `job`.
fn failure_line(error: &ClientError, job: &str, location: Option<&str>) -> String {
    match error {
        ClientError::Server { code, message } | ClientError::Refused { code, message } => {
            if message.is_empty() {
                // OpenPBS's own wording for a reply without text, spacing included.
                format!("qrun : Server returned error {} for job", code.0)
            } else if *code == Pbse::UNKNODE {
                // An unknown vnode is named by the -H text, not the job.
                pbs_cli::job_error_line("qrun", message, location.unwrap_or("(null)"))
            } else {
                pbs_cli::job_error_line("qrun", message, job)
            }
        }
        other => pbs_cli::job_error_line("qrun", other, job),
    }
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let Run { location, jobs } = match pbs_cli::parse_command_line("qrun", 1, parse) {
        Ok(run) => run,
        Err(code) => return code,
    };
    // Connected at the first well-formed id, as OpenPBS connects only to run a job.
    let mut client: Option<Result<Client, String>> = None;
    let mut status = 0u8;
    for typed in &jobs {
        if typed.parse::<JobId>().is_err() {
            pbs_cli::print_bad_job_id("qrun", typed);
            status = 1;
            continue;
        }
        let connection = client.get_or_insert_with(|| {
            pbs_cli::try_connect().map(|(_, client)| client).map_err(|failure| {
                failure.line("qrun", |server, errno| format!("could not connect to server {server} ({errno})"))
            })
        });
        let client = match connection {
            Ok(client) => client,
            Err(message) => {
                eprintln!("{message}");
                status = 2;
                continue;
            }
        };
        let server_name = client.server_name().to_string();
        let job = pbs_cli::full_job_id(typed, &server_name).unwrap_or_else(|| typed.clone());
        if let Err(e) = client.run_job(job.clone(), location.clone()) {
            eprintln!("{}", failure_line(&e, &job, location.as_deref()));
            status = 2;
        }
    }
    ExitCode::from(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], expected: Result<(Option<&str>, &[&str]), &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = parse("qrun", &argv);
        let expected = expected
            .map(|(location, jobs)| Run {
                location: location.map(str::to_string),
                jobs: jobs.iter().map(|s| s.to_string()).collect(),
            })
            .map_err(|lines| format!("{lines}{USAGE}"));
        assert_eq!(got, expected, "{argv:?}");
    }

    #[test]
    fn options() {
        check(&["1"], Ok((None, &["1"])));
        check(&["-H", "(n1:ncpus=1)+(n2)", "1", "2.s"], Ok((Some("(n1:ncpus=1)+(n2)"), &["1", "2.s"])));
        check(&["-a", "1", "-Hn1"], Ok((Some("n1"), &["1"])));
        check(&["-H", "-", "1"], Ok((Some("-"), &["1"])));
        check(&["-H", "", "1"], Err("qrun: illegal -H value\n"));
        check(&["-a"], Err(""));
        check(&[], Err(""));
        check(&["-H"], Err("qrun: option requires an argument -- 'H'\n"));
        check(&["-x", "1"], Err("qrun: invalid option -- 'x'\n"));
    }

    #[test]
    fn failure_lines() {
        let server = |code: Pbse, message: &str| ClientError::Server { code, message: message.into() };
        assert_eq!(failure_line(&server(Pbse::UNKJOBID, "Unknown Job Id"), "9.h", None), "qrun: Unknown Job Id 9.h");
        assert_eq!(
            failure_line(&server(Pbse::BADSTATE, "Request invalid for state of job"), "9.h", Some("n1")),
            "qrun: Request invalid for state of job 9.h"
        );
        assert_eq!(failure_line(&server(Pbse::UNKNODE, "Unknown node "), "9.h", Some("nx")), "qrun: Unknown node  nx");
        assert_eq!(
            failure_line(&server(Pbse::UNKJOBID, ""), "9.h", None),
            "qrun : Server returned error 15001 for job"
        );
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let words: Vec<String> = ["-H", "n1", "1", "-a", "2"].iter().map(|s| s.to_string()).collect();
        let scan = jobopts::getopt("qrun", &words, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("qrun")).unwrap());
    }
}
