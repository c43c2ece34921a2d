//! What `qhold` and `qrls` share: `-h hold_list` (default `u`) over job ids, one request
//! for all of them, errors per job (`qhold: Unknown Job Id 12.host`).

use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};
use pbs_proto::Request;

/// getopt(3) option string of OpenPBS's qhold and qrls.
const OPTSTRING: &str = "h:";

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(disable_help_flag = true, disable_version_flag = true, args_override_self = true)]
pub(crate) struct Args {
    /// Hold types: `u`, `o`, `s` (or `p`), in any combination; `u` when absent.
    #[arg(short = 'h', allow_hyphen_values = true)]
    pub holds: Option<String>,
    /// Job ids.
    pub jobs: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        Args { holds: scan.values('h').pop(), jobs: scan.operands.clone() }
    }
}

/// The usage text of `cmd`.
fn usage(cmd: &str) -> String {
    format!("usage: {cmd} [-h hold_list] job_identifier...\n       {cmd} --version\n")
}

/// Parses the command line: (hold letters, job ids), or the text to print before exiting
/// with status 2.
pub(crate) fn parse(cmd: &str, prog: &str, argv: &[String]) -> Result<(String, Vec<String>), String> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    let mut errors = scan.errors.clone();
    let args = Args::from_scan(&scan);
    let holds = args.holds.as_deref().map(str::trim_start).unwrap_or("");
    if args.holds.is_some() && holds.is_empty() {
        errors.push(format!("{cmd}: illegal -h value"));
    }
    if !errors.is_empty() || args.jobs.is_empty() {
        return Err(jobopts::usage_text(&errors, &usage(cmd)));
    }
    // OpenPBS's library checks the letters before sending.
    if !holds.is_empty() && !pbs_core::jobattr::check_hold(holds) {
        return Err(format!("{cmd}: illegal -h value\n{}", usage(cmd)));
    }
    let holds = if holds.is_empty() { "u" } else { holds };
    Ok((holds.to_string(), args.jobs))
}

/// The whole of `qhold` (`hold`) and `qrls` (`!hold`).
pub(crate) fn main(cmd: &str, hold: bool) -> ExitCode {
    let (hold_types, jobs) = match pbs_cli::parse_command_line(cmd, 2, |prog, argv| parse(cmd, prog, argv)) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    pbs_cli::perjob::connect_and_run(cmd, &jobs, |ids| {
        let hold_types = hold_types.clone();
        if hold { Request::HoldJob { ids, hold_types } } else { Request::ReleaseJob { ids, hold_types } }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], expected: Result<(&str, &[&str]), &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let expected = expected
            .map(|(h, jobs)| (h.to_string(), jobs.iter().map(|s| s.to_string()).collect::<Vec<_>>()))
            .map_err(|lines| format!("{lines}{}", usage("qhold")));
        assert_eq!(parse("qhold", "qhold", &argv), expected, "{argv:?}");
    }

    #[test]
    fn hold_lists() {
        check(&["1"], Ok(("u", &["1"])));
        check(&["-h", "os", "1", "2.s"], Ok(("os", &["1", "2.s"])));
        check(&["1", "-h", "u"], Ok(("u", &["1"])));
        check(&["-huos", "1"], Ok(("uos", &["1"])));
        check(&["-h", "x", "1"], Err("qhold: illegal -h value\n"));
        check(&["-h", "up", "1"], Err("qhold: illegal -h value\n"));
        check(&["-h", " ", "1"], Err("qhold: illegal -h value\n"));
        check(&["-h", "u"], Err(""));
        check(&["-q", "1"], Err("qhold: invalid option -- 'q'\n"));
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let words: Vec<String> = ["1", "-h", "uo", "2"].iter().map(|s| s.to_string()).collect();
        let scan = jobopts::getopt("qhold", &words, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("qhold")).unwrap());
    }
}
