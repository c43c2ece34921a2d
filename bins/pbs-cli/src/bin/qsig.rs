//! `qsig`: sends a signal to running jobs (`-s signal`, SIGTERM by default); one request
//! for all jobs, errors per job, as OpenPBS's qsig prints them.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};
use pbs_proto::Request;

const USAGE: &str = "usage: qsig [-s signal] job_identifier...\n       qsig --version\n";

/// getopt(3) option string of OpenPBS's qsig.
const OPTSTRING: &str = "s:";

/// OpenPBS keeps at most this many bytes of the signal (`MAX_SIGNAL_TYPE_LEN`).
const MAX_SIGNAL_LEN: usize = 32;

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qsig", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// A signal name with or without `SIG`, a number, `suspend` or `resume`; the last one
    /// given wins.
    #[arg(short = 's', allow_hyphen_values = true)]
    signal: Vec<String>,
    /// Job ids.
    jobs: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        Args { signal: scan.values('s'), jobs: scan.operands.clone() }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Signal {
    signal: String,
    jobs: Vec<String>,
}

/// Parses the command line; `Err` is the text to print before exiting with status 2.
fn parse(prog: &str, argv: &[String]) -> Result<Signal, String> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    let args = Args::from_scan(&scan);
    if !scan.errors.is_empty() || args.jobs.is_empty() {
        return Err(jobopts::usage_text(&scan.errors, USAGE));
    }
    let signal = args.signal.last().map(|s| pbs_cli::truncate(s, MAX_SIGNAL_LEN)).unwrap_or("SIGTERM");
    Ok(Signal { signal: signal.to_string(), jobs: args.jobs })
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let Signal { signal, jobs } = match pbs_cli::parse_command_line("qsig", 2, parse) {
        Ok(request) => request,
        Err(code) => return code,
    };
    pbs_cli::perjob::connect_and_run("qsig", &jobs, |ids| Request::SignalJob { ids, signal: signal.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], expected: Result<(&str, &[&str]), &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = parse("qsig", &argv);
        let expected = expected
            .map(|(signal, jobs)| Signal { signal: signal.into(), jobs: jobs.iter().map(|s| s.to_string()).collect() })
            .map_err(|lines| format!("{lines}{USAGE}"));
        assert_eq!(got, expected, "{argv:?}");
    }

    #[test]
    fn options() {
        check(&["1"], Ok(("SIGTERM", &["1"])));
        check(&["-s", "KILL", "1", "2.s"], Ok(("KILL", &["1", "2.s"])));
        check(&["1", "-sSIGHUP"], Ok(("SIGHUP", &["1"])));
        check(&["-s", "9", "-s", "suspend", "1"], Ok(("suspend", &["1"])));
        check(&["-s", "-1", "1"], Ok(("-1", &["1"])));
        check(&["-s", "KILL"], Err(""));
        check(&[], Err(""));
        check(&["-s"], Err("qsig: option requires an argument -- 's'\n"));
        check(&["-x", "1"], Err("qsig: invalid option -- 'x'\n"));
    }

    #[test]
    fn long_signals_are_cut_like_openpbs() {
        let long = "S".repeat(40);
        check(&["-s", &long, "1"], Ok((&long[..32], &["1"])));
        assert_eq!(pbs_cli::truncate("ééé", 3), "é");
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let words: Vec<String> = ["-s", "HUP", "1", "-s", "KILL", "2"].iter().map(|s| s.to_string()).collect();
        let scan = jobopts::getopt("qsig", &words, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("qsig")).unwrap());
    }
}
