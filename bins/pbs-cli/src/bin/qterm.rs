//! `qterm [-t immediate|delay|quick] [-m] [-s] [-f|-i] [server ...]`: stops the server, and
//! with `-s` the scheduler and `-m` the moms, as OpenPBS's qterm; what happens to running
//! jobs is the server's (`pbs_server::shutdown`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_cli::jobopts::{self, Scan};

const USAGE: &str =
    "Usage: qterm [-t immediate|delay|[quick]] [-m] [-s] [-f|-i] [server ...]\n       qterm --version\n";

/// getopt(3) option string of OpenPBS's qterm.
const OPTSTRING: &str = "t:smfFi";

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qterm", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// `immediate`, `delay` or `quick` (the default).
    #[arg(short = 't')]
    manner: Option<String>,
    /// Stop the scheduler too.
    #[arg(short = 's')]
    scheduler: bool,
    /// Stop the moms too.
    #[arg(short = 'm')]
    moms: bool,
    /// Servers (this suite has one: the server of pbs.conf is stopped).
    servers: Vec<String>,
}

impl Args {
    fn from_scan(scan: &Scan) -> Args {
        Args {
            manner: scan.values('t').pop(),
            scheduler: scan.has('s'),
            moms: scan.has('m'),
            servers: scan.operands.clone(),
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Term {
    manner: String,
    scheduler: bool,
    moms: bool,
    servers: Vec<String>,
}

/// Parses the command line as OpenPBS's qterm: getopt's messages, then the usage, status 1.
/// The failover options are checked as OpenPBS combines them (`-f` with `-F` or `-i`, `-F`
/// with `-m`) and otherwise have nothing to act on: there is no secondary server.
fn parse(prog: &str, argv: &[String]) -> Result<Term, String> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    if !scan.errors.is_empty() {
        return Err(jobopts::usage_text(&scan.errors, USAGE));
    }
    // OpenPBS counts these in command-line order: -m after -i, -f after -i or -F, -F
    // after -i, -f or -m, -i after -f or -F.
    let (mut idle, mut secondary, mut moms_seen, mut bad) = (false, 0u8, false, false);
    for opt in &scan.options {
        match opt.letter {
            'm' => moms_seen = true,
            'f' => {
                bad |= idle || secondary == 2;
                secondary = 1;
            }
            'F' => {
                bad |= idle || secondary == 1 || moms_seen;
                secondary = 2;
            }
            'i' => {
                bad |= secondary != 0;
                idle = true;
            }
            _ => {}
        }
    }
    let args = Args::from_scan(&scan);
    let manner = args.manner.unwrap_or_else(|| "quick".to_string());
    if bad || !matches!(manner.as_str(), "quick" | "immediate" | "delay") {
        return Err(USAGE.to_string());
    }
    Ok(Term { manner, scheduler: args.scheduler, moms: args.moms, servers: args.servers })
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let Term { manner, scheduler, moms, servers } = match pbs_cli::parse_command_line("qterm", 1, parse) {
        Ok(term) => term,
        Err(code) => return code,
    };
    // OpenPBS prints the server operand after a refusal (nothing when none was named).
    let named = servers.first().cloned().unwrap_or_default();
    let mut client = match pbs_cli::try_connect() {
        Ok((_, client)) => client,
        Err(failure) => {
            eprintln!(
                "{}",
                failure.line("qterm", |server, errno| format!("could not connect to server {server} ({errno})"))
            );
            return ExitCode::from(2);
        }
    };
    client.last_request();
    match client.shutdown(manner, scheduler, moms) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qterm: {e} {named}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], expected: Result<(&str, bool, bool), &str>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = parse("qterm", &argv);
        let expected = expected
            .map(|(manner, scheduler, moms)| Term { manner: manner.into(), scheduler, moms, servers: Vec::new() })
            .map_err(|lines| format!("{lines}{USAGE}"));
        assert_eq!(got, expected, "{argv:?}");
    }

    #[test]
    fn options_as_openpbs_reads_them() {
        check(&[], Ok(("quick", false, false)));
        check(&["-t", "immediate", "-s", "-m"], Ok(("immediate", true, true)));
        check(&["-tdelay", "-sm"], Ok(("delay", true, true)));
        check(&["-f"], Ok(("quick", false, false)));
        // qterm_bad_option.txt
        check(&["-x"], Err("qterm: invalid option -- 'x'\n"));
        check(&["-t", "soon"], Err(""));
        check(&["-m", "-F"], Err(""));
        check(&["-i", "-f"], Err(""));
        check(&["-t"], Err("qterm: option requires an argument -- 't'\n"));
    }
}
