//! `qrls`: removes holds from jobs (`-h u|o|s`, default `u`).

use std::process::ExitCode;

use clap::Parser;
use pbs_proto::Request;

const USAGE: &str = "usage: qrls [-h hold_list] job_identifier...\n       qrls --version\n";

#[derive(Parser, Debug)]
#[command(name = "qrls", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Hold types: letters from `u`, `o`, `s`, `n`, `p`.
    #[arg(short = 'h', default_value = "u")]
    holds: String,
    #[arg(long = "version")]
    version: bool,
    #[arg(required_unless_present = "version")]
    jobs: Vec<String>,
}

fn main() -> ExitCode {
    pbs_cli::reset_sigpipe();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(_) => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.version {
        println!("pbs_version = {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    if !pbs_cli::valid_hold_list(&args.holds) {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut client = match pbs_cli::connect("qrls") {
        Ok(client) => client,
        Err(code) => return code,
    };
    let hold_types = args.holds;
    pbs_cli::perjob::run("qrls", &mut client, &args.jobs, |ids| Request::ReleaseJob { ids, hold_types })
}
