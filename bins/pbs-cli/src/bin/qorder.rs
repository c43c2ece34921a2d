//! `qorder job_identifier job_identifier`: swaps two jobs' places in the queues' order, as
//! OpenPBS's qorder; a refusal names both jobs (`qorder: Unknown Job Id A or B`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

const USAGE: &str = "usage: qorder job_identifier job_identifier\n       qorder --version\n";

/// The command line: OpenPBS's qorder takes exactly two operands and no options.
#[derive(clap::Parser, Debug)]
#[command(name = "qorder", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Print the version and exit.
    #[arg(long)]
    version: bool,
    /// The two jobs.
    #[arg(allow_hyphen_values = true)]
    jobs: Vec<String>,
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let args: Args = match pbs_cli::start(USAGE, 2, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let [first, second] = args.jobs.as_slice() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let conf = match pbs_cli::load_conf() {
        Ok(conf) => conf,
        Err(e) => {
            eprintln!("qorder: {e:#}");
            return ExitCode::from(2);
        }
    };
    let server = pbs_cli::server_name(&conf);
    let mut full = Vec::with_capacity(2);
    for typed in [first, second] {
        let Some(id) = pbs_cli::full_job_id(typed, &server) else {
            eprintln!("qorder: illegally formed job identifier: {typed}");
            return ExitCode::from(1);
        };
        full.push(id);
    }
    let mut client = match pbs_cli::connect("qorder") {
        Ok(client) => client,
        Err(code) => return code,
    };
    client.last_request();
    match client.order_jobs(full[0].clone(), full[1].clone()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            pbs_cli::print_job_error("qorder", &e.to_string(), &format!("{} or {}", full[0], full[1]));
            pbs_cli::exit_code(e.pbse().0)
        }
    }
}
