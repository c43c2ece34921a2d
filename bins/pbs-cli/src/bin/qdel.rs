//! `qdel`: deletes jobs (`-W force`, `-x` to delete finished jobs from history too,
//! `-Wsuppress_email=N` accepted); one request for all jobs, errors per job.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};
use pbs_proto::Request;

const USAGE: &str = "usage:\n\tqdel [-W force|suppress_email=X] [-x] job_identifier...\n\tqdel --version\n";

/// getopt(3) option string of OpenPBS's qdel.
const OPTSTRING: &str = "W:x";

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qdel", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// `force`, `suppress_email=N`, or a number (an old delay, ignored).
    #[arg(short = 'W', allow_hyphen_values = true)]
    extend: Vec<String>,
    /// Also delete finished jobs from history.
    #[arg(short = 'x')]
    purge_history: bool,
    /// Job ids.
    jobs: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        Args { extend: scan.values('W'), purge_history: scan.has('x'), jobs: scan.operands.clone() }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Deletion {
    force: bool,
    purge_history: bool,
    jobs: Vec<String>,
}

/// Parses the command line; `Err` is the text to print before exiting with status 2.
fn parse(prog: &str, argv: &[String]) -> Result<Deletion, String> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    let mut errors = scan.errors.clone();
    let args = Args::from_scan(&scan);
    let mut force = false;
    for value in &args.extend {
        if value == "force" {
            force = true;
            continue;
        }
        if value.is_empty() {
            errors.push("qdel: illegal -W value".to_string());
            continue;
        }
        if jobopts::parse_equal_pairs(value)
            .is_some_and(|pairs| pairs.first().is_some_and(|(k, _)| k == "suppress_email"))
        {
            continue;
        }
        // Anything else must be a number, as the delay qdel once took.
        if !value.bytes().all(|b| b.is_ascii_digit()) {
            errors.push("qdel: illegal -W value".to_string());
        }
    }
    if !errors.is_empty() || args.jobs.is_empty() {
        return Err(jobopts::usage_text(&errors, USAGE));
    }
    Ok(Deletion { force, purge_history: args.purge_history, jobs: args.jobs })
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let Deletion { force, purge_history, jobs } = match pbs_cli::parse_command_line("qdel", 2, parse) {
        Ok(deletion) => deletion,
        Err(code) => return code,
    };
    pbs_cli::perjob::connect_and_run("qdel", &jobs, |ids| Request::DeleteJob { ids, force, purge_history })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], expected: Result<(bool, bool, &[&str]), &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = parse("qdel", &argv);
        let expected = expected
            .map(|(force, purge_history, jobs)| Deletion {
                force,
                purge_history,
                jobs: jobs.iter().map(|s| s.to_string()).collect(),
            })
            .map_err(|lines| format!("{lines}{USAGE}"));
        assert_eq!(got, expected, "{argv:?}");
    }

    #[test]
    fn options() {
        check(&["1"], Ok((false, false, &["1"])));
        check(&["-W", "force", "-x", "1", "2.s"], Ok((true, true, &["1", "2.s"])));
        check(&["1", "-Wforce"], Ok((true, false, &["1"])));
        check(&["-Wsuppress_email=5", "1"], Ok((false, false, &["1"])));
        check(&["-W", "30", "1"], Ok((false, false, &["1"])));
        check(&["-W", "bogus", "1"], Err("qdel: illegal -W value\n"));
        check(&["-W", "", "1"], Err("qdel: illegal -W value\n"));
        check(&["-x"], Err(""));
        check(&["-y", "1"], Err("qdel: invalid option -- 'y'\n"));
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let words: Vec<String> = ["-W", "force", "1", "-x", "2"].iter().map(|s| s.to_string()).collect();
        let scan = jobopts::getopt("qdel", &words, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("qdel")).unwrap());
    }
}
