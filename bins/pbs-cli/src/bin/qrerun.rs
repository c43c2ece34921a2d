//! `qrerun`: requeues running jobs (`-W force` even when their mom cannot be reached); one
//! request for all jobs, errors per job, as OpenPBS's qrerun prints them.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};
use pbs_proto::Request;

const USAGE: &str = "usage: qrerun [-W force] job_identifier...\n       qrerun --version\n";

/// getopt(3) option string of OpenPBS's qrerun.
const OPTSTRING: &str = "W:";

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qrerun", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Only `force` is accepted.
    #[arg(short = 'W', allow_hyphen_values = true)]
    extend: Vec<String>,
    /// Job ids.
    jobs: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        Args { extend: scan.values('W'), jobs: scan.operands.clone() }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Rerun {
    force: bool,
    jobs: Vec<String>,
}

/// Parses the command line; `Err` is the text to print before exiting with status 2.
/// OpenPBS's qrerun prints only its usage for a `-W` other than `force`, no other message.
fn parse(prog: &str, argv: &[String]) -> Result<Rerun, String> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    let args = Args::from_scan(&scan);
    // OpenPBS's qrerun exits at the first option getopt rejects: one message at most.
    if let Some(first) = scan.errors.first() {
        return Err(jobopts::usage_text(std::slice::from_ref(first), USAGE));
    }
    if args.extend.iter().any(|w| w != "force") || args.jobs.is_empty() {
        return Err(USAGE.to_string());
    }
    Ok(Rerun { force: !args.extend.is_empty(), jobs: args.jobs })
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let Rerun { force, jobs } = match pbs_cli::parse_command_line("qrerun", 2, parse) {
        Ok(request) => request,
        Err(code) => return code,
    };
    pbs_cli::perjob::connect_and_run("qrerun", &jobs, |ids| Request::RerunJob { ids, force })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], expected: Result<(bool, &[&str]), &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = parse("qrerun", &argv);
        let expected = expected
            .map(|(force, jobs)| Rerun { force, jobs: jobs.iter().map(|s| s.to_string()).collect() })
            .map_err(|lines| format!("{lines}{USAGE}"));
        assert_eq!(got, expected, "{argv:?}");
    }

    #[test]
    fn options() {
        check(&["1"], Ok((false, &["1"])));
        check(&["-W", "force", "1", "2.s"], Ok((true, &["1", "2.s"])));
        check(&["1", "-Wforce"], Ok((true, &["1"])));
        check(&["-W", "Force", "1"], Err(""));
        check(&["-W", "force"], Err(""));
        check(&[], Err(""));
        check(&["-W"], Err("qrerun: option requires an argument -- 'W'\n"));
        check(&["-f", "1"], Err("qrerun: invalid option -- 'f'\n"));
        check(&["-f", "-g", "1"], Err("qrerun: invalid option -- 'f'\n"));
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let words: Vec<String> = ["-W", "force", "1", "2"].iter().map(|s| s.to_string()).collect();
        let scan = jobopts::getopt("qrerun", &words, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("qrerun")).unwrap());
    }
}
