//! `qdel`: deletes jobs (`-W force`, `-x` to purge finished jobs from history).

use std::process::ExitCode;

use clap::Parser;
use pbs_proto::Request;

const USAGE: &str = "usage: qdel [-x] [-W force|suppress_email=X] job_identifier...\n       qdel --version\n";

#[derive(Parser, Debug)]
#[command(name = "qdel", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Also delete finished jobs from history.
    #[arg(short = 'x')]
    purge_history: bool,
    /// `force` or `suppress_email=N`.
    #[arg(short = 'W')]
    extend: Vec<String>,
    #[arg(long = "version")]
    version: bool,
    #[arg(required_unless_present = "version")]
    jobs: Vec<String>,
}

/// Whether the `-W` values ask for a forced delete; `None` if one is not understood.
fn parse_extend(values: &[String]) -> Option<bool> {
    let mut force = false;
    for value in values {
        match value.trim() {
            "force" => force = true,
            other => {
                let n = other.strip_prefix("suppress_email=")?;
                n.parse::<i64>().ok()?;
            }
        }
    }
    Some(force)
}

fn main() -> ExitCode {
    let args: Args = match pbs_cli::start(USAGE, 2, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let Some(force) = parse_extend(&args.extend) else {
        eprintln!("qdel: illegal -W value");
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut client = match pbs_cli::connect("qdel") {
        Ok(client) => client,
        Err(code) => return code,
    };
    let purge_history = args.purge_history;
    pbs_cli::perjob::run("qdel", &mut client, &args.jobs, |ids| Request::DeleteJob { ids, force, purge_history })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extend_values() {
        assert_eq!(parse_extend(&[]), Some(false));
        assert_eq!(parse_extend(&["force".into()]), Some(true));
        assert_eq!(parse_extend(&["suppress_email=5".into()]), Some(false));
        assert_eq!(parse_extend(&["bogus".into()]), None);
        assert_eq!(parse_extend(&["suppress_email=x".into()]), None);
    }
}
