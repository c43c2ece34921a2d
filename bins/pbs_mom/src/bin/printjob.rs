//! `printjob [-a] (jobid|file)...` and `printjob -s jobid`: the mom's view of a job, read
//! from its records file (`PBS_HOME/mom_priv/jobs/<jobid>.JB`), in OpenPBS's layout
//! (`pbs_mom::printjob`); `-s` prints the job's script. Root only, as OpenPBS's.
//!
//! A binary of the mom's package, not of the q-commands': it reads the mom's records
//! format, and the statically linked q-commands should not carry the mom's code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "Usage: printjob [-a] (jobid|file)\n       printjob -s jobid\n       printjob --version\n";

/// The command line, read as OpenPBS's getopt loop reads `as`: the clap struct of the
/// options it takes.
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "printjob", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Leave out the attributes.
    #[arg(short = 'a')]
    no_attributes: bool,
    /// Print the job's script.
    #[arg(short = 's')]
    script: bool,
    /// Job ids or records files.
    operands: Vec<String>,
}

/// Reads the command line; `Err` is what to print before exiting 1.
fn parse(argv: &[String]) -> Result<Args, String> {
    let mut args = Args::default();
    let mut errors = String::new();
    let mut options_done = false;
    for arg in argv {
        match arg.strip_prefix('-').filter(|letters| !options_done && !letters.is_empty()) {
            Some("-") => options_done = true,
            Some(letters) => {
                for letter in letters.chars() {
                    match letter {
                        'a' if args.script => return Err(USAGE.to_string()),
                        'a' => args.no_attributes = true,
                        's' if args.no_attributes => return Err(USAGE.to_string()),
                        's' => args.script = true,
                        other => errors.push_str(&format!("printjob: invalid option -- {other}\n")),
                    }
                }
            }
            None => args.operands.push(arg.clone()),
        }
    }
    if !errors.is_empty() || args.operands.is_empty() {
        return Err(format!("{errors}{USAGE}"));
    }
    Ok(args)
}

fn main() -> ExitCode {
    if !nix::unistd::getuid().is_root() || !nix::unistd::geteuid().is_root() {
        eprintln!("printjob must be run by root");
        return ExitCode::from(1);
    }
    let conf = match load_conf() {
        Ok(conf) => conf,
        Err(_) => {
            eprintln!("couldnot load conf file");
            return ExitCode::from(1);
        }
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv == ["--version"] {
        println!("pbs_version = {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let args = match parse(&argv) {
        Ok(args) => args,
        Err(text) => {
            eprint!("{text}");
            return ExitCode::from(1);
        }
    };
    let jobs_dir = pbs_mom::layout::Layout::new(&conf.home).jobs_dir();
    let server = conf.server.clone().unwrap_or_default();
    for operand in &args.operands {
        let given = Path::new(operand);
        // As OpenPBS: what opens as a file is a records file (not allowed with -s), anything
        // else a job id, completed with the server's name.
        let as_file = std::fs::File::open(given).is_ok();
        if as_file && args.script {
            eprint!("{USAGE}");
            return ExitCode::from(1);
        }
        let (path, job_id) = if as_file {
            (given.to_path_buf(), operand.clone())
        } else {
            let job_id = if operand.contains('.') { operand.clone() } else { format!("{operand}.{server}") };
            (jobs_dir.join(format!("{job_id}.JB")), job_id)
        };
        // An id that is not one (`../x`) names no file under the jobs directory.
        if !as_file && (!pbs_mom::layout::valid_job_id(&job_id) || !path.exists()) {
            eprintln!("Job {job_id} not found");
            return ExitCode::from(1);
        }
        if args.script {
            print!("{}", script(&path));
            continue;
        }
        match pbs_mom::printjob::format(&pbs_mom::records::read(&path), args.no_attributes) {
            Some(text) => print!("{text}"),
            None => {
                eprintln!("printjob: {}: not a job's records file", path.display());
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// The job's script: the `.SC` file beside its records, else the script its launch holds.
fn script(records: &Path) -> String {
    let path: PathBuf = pbs_mom::layout::script_path_of(records);
    std::fs::read_to_string(&path).unwrap_or_else(|_| {
        pbs_mom::records::read(records).get::<pbs_mom::layout::Spec>().map(|s| s.launch.script).unwrap_or_default()
    })
}

fn load_conf() -> anyhow::Result<pbs_core::conf::PbsConf> {
    let path = std::env::var("PBS_CONF_FILE").unwrap_or_else(|_| pbs_core::conf::DEFAULT_CONF_FILE.to_string());
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.into()),
    };
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("PBS_")).collect();
    Ok(pbs_core::conf::PbsConf::parse(&text, &env)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(argv: &[&str]) -> Result<Args, String> {
        parse(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn options_as_openpbs_reads_them() {
        let ok = |a: bool, s: bool, ops: &[&str]| {
            Ok(Args { no_attributes: a, script: s, operands: ops.iter().map(|o| o.to_string()).collect() })
        };
        assert_eq!(parsed(&["1.vm"]), ok(false, false, &["1.vm"]));
        assert_eq!(parsed(&["-a", "1.vm"]), ok(true, false, &["1.vm"]));
        assert_eq!(parsed(&["-s", "1.vm"]), ok(false, true, &["1.vm"]));
        // printjob_usage.txt
        assert_eq!(parsed(&[]), Err(USAGE.to_string()));
        assert_eq!(parsed(&["-a", "-s", "1"]), Err(USAGE.to_string()));
        assert_eq!(parsed(&["-x", "1"]), Err(format!("printjob: invalid option -- x\n{USAGE}")));
    }
}
