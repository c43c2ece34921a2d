//! `qalter`: changes attributes of jobs, with qsub's option letters and OpenPBS's checks;
//! one request covers every job, and failures are reported per job (`qalter: <text> <id>`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::process::ExitCode;

use pbs_cli::jobopts::{self, OptionStep, PlainOptions, Scan, VerifyEnv};
use pbs_core::{Pbse, jobattr};
use pbs_proto::{Attr, Request};

const USAGE: &str = "usage: qalter [-a date_time] [-A account_string] [-c interval] [-e path]
\t[-h hold_list] [-j y|n] [-k keep] [-l resource_list]
\t[-m mail_options] [-M user_list] [-N jobname] [-o path] [-p priority]
\t[-R o|e|oe] [-r y|n] [-S path] [-u user_list] [-W dependency_list]
\t[-P project_name] job_identifier...
       qalter --version
";

/// getopt(3) option string of OpenPBS's qalter.
const OPTSTRING: &str = "a:A:c:e:h:j:k:l:m:M:N:o:p:r:R:S:u:W:P:";

/// The options, as clap declares them; filled from the getopt scan (see [`Args::from_scan`]).
/// Those whose value is their attribute's are qsub's too ([`PlainOptions`]).
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qalter", disable_help_flag = true, disable_version_flag = true, args_override_self = true)]
struct Args {
    #[arg(short = 'a', allow_hyphen_values = true)]
    execution_time: Option<String>,
    #[arg(short = 'c', allow_hyphen_values = true)]
    checkpoint: Option<String>,
    #[arg(short = 'h', allow_hyphen_values = true)]
    holds: Option<String>,
    #[arg(short = 'l', allow_hyphen_values = true)]
    resources: Vec<String>,
    #[arg(short = 'r', allow_hyphen_values = true)]
    rerunable: Option<String>,
    #[arg(short = 'W', allow_hyphen_values = true)]
    extended: Vec<String>,
    #[command(flatten)]
    plain: PlainOptions,
    /// Job ids.
    jobs: Vec<String>,
}

impl Args {
    /// The options and job ids of a scan, as clap would parse them.
    fn from_scan(scan: &Scan) -> Args {
        let mut args = Args { jobs: scan.operands.clone(), ..Args::default() };
        for opt in &scan.options {
            if args.plain.take(opt.letter, &opt.value) {
                continue;
            }
            let value = opt.value.clone();
            let single = |slot: &mut Option<String>| *slot = value.clone();
            match opt.letter {
                'a' => single(&mut args.execution_time),
                'c' => single(&mut args.checkpoint),
                'h' => single(&mut args.holds),
                'l' => args.resources.extend(value.clone()),
                'r' => single(&mut args.rerunable),
                'W' => args.extended.extend(value.clone()),
                _ => {}
            }
        }
        args
    }
}

/// A command line qalter refuses before contacting the server.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    text: String,
    status: u8,
}

impl Refusal {
    fn usage(lines: &[String]) -> Refusal {
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        text.push_str(USAGE);
        Refusal { text, status: 2 }
    }
}

/// Where relative paths point and which server short ids belong to.
struct Context<'a> {
    host: &'a str,
    cwd: &'a str,
    server: &'a str,
    is_dir: &'a dyn Fn(&str) -> bool,
}

/// The option OpenPBS's qalter blames for a bad attribute value.
fn option_of(attribute: &str) -> Option<char> {
    jobattr::option_letter(jobattr::Command::Qalter, attribute)
}

/// What qalter sends, or what it prints instead of sending: per-job failures of the
/// client-side checks are printed once per job, as OpenPBS prints them.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Send these attributes.
    Alter { attrs: Vec<Attr>, jobs: Vec<String> },
    /// An attribute fails a check that OpenPBS reports per job (`<text> <id>`) with this code.
    PerJob { code: Pbse, jobs: Vec<String> },
}

/// Parses the command line and builds the attributes, with OpenPBS's checks.
fn plan(prog: &str, argv: &[String], ctx: &Context<'_>) -> Result<Plan, Refusal> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    let mut errors = scan.errors.clone();
    let args = Args::from_scan(&scan);
    let mut attrs: Vec<Attr> = Vec::new();
    let mut push = |name: &str, value: &str| attrs.push(Attr::new(name, value));
    // In the option table's order: the plain options as it says, the others by their rules.
    for step in args.plain.walk(jobattr::Command::Qalter) {
        let letter = match step {
            OptionStep::Plain { attribute, value, .. } => {
                push(attribute, &value);
                continue;
            }
            OptionStep::Own(letter) => letter,
        };
        match letter {
            'a' => {
                if let Some(value) = &args.execution_time {
                    match jobopts::cvtdate(value) {
                        Some(epoch) => push("Execution_Time", &epoch.to_string()),
                        None => errors.push("qalter: illegal -a value".to_string()),
                    }
                }
            }
            'c' => {
                if let Some(value) = &args.checkpoint {
                    let value = value.trim_start();
                    if value == "u" {
                        errors.push("qalter: illegal -c value".to_string());
                    } else {
                        push("Checkpoint", value);
                    }
                }
            }
            'h' => {
                if let Some(value) = &args.holds {
                    push("Hold_Types", value.trim_start());
                }
            }
            'l' => {
                for list in &args.resources {
                    match jobopts::parse_resource_list(list) {
                        Ok(pairs) => {
                            for (resource, value) in pairs {
                                push(&format!("Resource_List.{resource}"), &value);
                            }
                        }
                        Err(e) => errors.push(format!("qalter: {}", jobopts::resource_list_message(list, &e))),
                    }
                }
            }
            'r' => {
                if let Some(value) = &args.rerunable {
                    if matches!(value.as_str(), "y" | "n") {
                        push("Rerunable", value);
                    } else {
                        errors.push("qalter: illegal -r value".to_string());
                    }
                }
            }
            'W' => {
                for value in &args.extended {
                    let value = value.trim_start();
                    match jobopts::parse_equal_pairs(value).filter(|_| !value.is_empty()) {
                        Some(pairs) => {
                            for (key, value) in pairs {
                                push(&key, &value);
                            }
                        }
                        None => errors.push("qalter: illegal -W value".to_string()),
                    }
                }
            }
            _ => {}
        }
    }
    if !errors.is_empty() || args.jobs.is_empty() {
        return Err(Refusal::usage(&errors));
    }
    verify(attrs, args.jobs, ctx)
}

/// The client-side checks of every attribute; the first failure decides what is printed.
fn verify(attrs: Vec<Attr>, jobs: Vec<String>, ctx: &Context<'_>) -> Result<Plan, Refusal> {
    let env = VerifyEnv { host: ctx.host, cwd: ctx.cwd, server: ctx.server, is_dir: ctx.is_dir };
    let mut out = Vec::with_capacity(attrs.len());
    for Attr(name, value) in attrs {
        match jobopts::verify_attr(&name, &value, &env) {
            Ok(value) => out.push(Attr(name, value)),
            Err(code) if code == Pbse::JOBNBIG => {
                return Err(Refusal { text: "qalter: Job name is too long \n".to_string(), status: 2 });
            }
            Err(code) => {
                return match option_of(&name) {
                    Some(opt) => Err(Refusal::usage(&[format!("qalter: illegal -{opt} value")])),
                    None => Ok(Plan::PerJob { code, jobs }),
                };
            }
        }
    }
    Ok(Plan::Alter { attrs: jobopts::last_wins(out), jobs })
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    pbs_cli::reset_sigpipe();
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    if argv.len() == 2 && argv[1] == "--version" {
        println!("pbs_version = {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let prog = argv.first().map(String::as_str).unwrap_or("qalter");
    let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default();
    let conf = pbs_cli::load_conf().ok();
    let local_host = pbs_cli::local_host_name();
    let conf_value = |key: &str| conf.as_ref().and_then(|c| c.raw.get(key).filter(|v| !v.is_empty()).cloned());
    let host = conf_value("PBS_OUTPUT_HOST_NAME").unwrap_or_else(|| local_host.clone());
    let server = conf_value("PBS_SERVER").unwrap_or(local_host);
    let is_dir = |path: &str| std::path::Path::new(path).is_dir();
    let ctx = Context { host: &host, cwd: &cwd, server: &server, is_dir: &is_dir };
    let plan = match plan(prog, argv.get(1..).unwrap_or_default(), &ctx) {
        Ok(plan) => plan,
        Err(refusal) => {
            eprint!("{}", refusal.text);
            return ExitCode::from(refusal.status);
        }
    };
    let mut client = match pbs_cli::connect("qalter") {
        Ok(client) => client,
        Err(code) => return code,
    };
    match plan {
        Plan::Alter { attrs, jobs } => {
            pbs_cli::perjob::run("qalter", &mut client, &jobs, |ids| Request::ModifyJob { ids, attrs: attrs.clone() })
        }
        Plan::PerJob { code, jobs } => {
            let server_name = client.server_name().to_string();
            let (ids, any_bad) = pbs_cli::perjob::complete_ids("qalter", &jobs, &server_name);
            for id in &ids {
                pbs_cli::print_job_error("qalter", &code.to_string(), id);
            }
            if ids.is_empty() && any_bad { ExitCode::from(1) } else { pbs_cli::exit_code(code.0) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_dir(_: &str) -> bool {
        false
    }

    fn check(argv: &[&str], expected: Result<Plan, Refusal>) {
        let ctx = Context { host: "h", cwd: "/w", server: "srv", is_dir: &no_dir };
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        assert_eq!(plan("qalter", &argv, &ctx), expected, "{argv:?}");
    }

    fn alter(attrs: &[(&str, &str)], jobs: &[&str]) -> Result<Plan, Refusal> {
        Ok(Plan::Alter {
            attrs: attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect(),
            jobs: jobs.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn usage(lines: &str) -> Result<Plan, Refusal> {
        Err(Refusal { text: format!("{lines}{USAGE}"), status: 2 })
    }

    #[test]
    fn builds_attributes() {
        check(
            &["-N", "x", "-l", "walltime=1:00", "-W", "max_run_subjobs=5", "1"],
            alter(&[("Resource_List.walltime", "1:00"), ("Job_Name", "x"), ("max_run_subjobs", "5")], &["1"]),
        );
        check(&["-o", "out", "1", "2.s"], alter(&[("Output_Path", "h:/w/out")], &["1", "2.s"]));
        check(&["1", "-h", "uo"], alter(&[("Hold_Types", "uo")], &["1"]));
        check(&["-W", "depend=afterok:3", "1"], alter(&[("depend", "afterok:3.srv")], &["1"]));
        check(&["-r", "n", "-p", " 10", "1"], alter(&[("Priority", "10"), ("Rerunable", "n")], &["1"]));
        check(&["1"], alter(&[], &["1"]));
    }

    #[test]
    fn refuses_bad_values() {
        check(&["-h", "x", "1"], usage("qalter: illegal -h value\n"));
        check(&["-r", "yes", "1"], usage("qalter: illegal -r value\n"));
        check(&["-c", "u", "1"], usage("qalter: illegal -c value\n"));
        check(&["-a", "99", "1"], usage("qalter: illegal -a value\n"));
        check(&["-W", "bad", "1"], usage("qalter: illegal -W value\n"));
        check(&["-p", "x", "1"], usage("qalter: illegal -p value\n"));
        check(&["-N", "x"], usage(""));
        check(&["-Z", "1"], usage("qalter: invalid option -- 'Z'\n"));
        check(
            &["-N", &"n".repeat(300), "1"],
            Err(Refusal { text: "qalter: Job name is too long \n".into(), status: 2 }),
        );
        check(
            &["-W", "nosuch=1", "1", "2"],
            Ok(Plan::PerJob { code: Pbse::NOATTR, jobs: vec!["1".into(), "2".into()] }),
        );
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let words: Vec<String> =
            ["-a", "1200", "-N", "x", "-lncpus=1", "-l", "mem=1", "-W", "a=1", "-h", "u", "1", "2"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let scan = jobopts::getopt("qalter", &words, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("qalter")).unwrap());
    }
}
