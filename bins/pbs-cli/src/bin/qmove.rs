//! `qmove destination job_identifier...`: moves jobs that have not started to another
//! queue; one request for all jobs, errors per job, as OpenPBS's qmove prints them.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_proto::Request;

const USAGE: &str = "usage: qmove destination job_identifier...\n       qmove --version\n";

/// The command line: OpenPBS's qmove takes no options, only its operands.
#[derive(clap::Parser, Debug)]
#[command(name = "qmove", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Print the version and exit.
    #[arg(long)]
    version: bool,
    /// `queue`, `queue@server` or `@server`.
    #[arg(allow_hyphen_values = true)]
    destination: Option<String>,
    /// Job ids.
    #[arg(allow_hyphen_values = true)]
    jobs: Vec<String>,
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let args: Args = match pbs_cli::start(USAGE, 2, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let Some(destination) = args.destination.filter(|_| !args.jobs.is_empty()) else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    if pbs_cli::parse_destination(&destination).is_none() {
        eprintln!("qmove: illegally formed destination: {destination}");
        return ExitCode::from(2);
    }
    pbs_cli::perjob::connect_and_run("qmove", &args.jobs, |ids| Request::MoveJob {
        ids,
        destination: destination.clone(),
    })
}
