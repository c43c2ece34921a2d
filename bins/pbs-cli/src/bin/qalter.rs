//! `qalter`: changes attributes of queued (and, where allowed, running) jobs.

use std::process::ExitCode;

use clap::Parser;
use pbs_cli::jobopts::{self, OptError};
use pbs_proto::{Attr, Request};

const USAGE: &str = "usage: qalter [-a date_time] [-A account_string] [-c interval] [-e path]
\t[-h hold_list] [-j y|n] [-k keep] [-l resource_list] [-m mail_options]
\t[-M user_list] [-N jobname] [-o path] [-p priority] [-P project] [-r y|n] [-S path]
\t[-u user_list] [-W dependency_list] [-Wmax_run_subjobs=value] job_identifier...
       qalter --version
";

#[derive(Parser, Debug)]
#[command(name = "qalter", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    #[arg(short = 'a')]
    execution_time: Option<String>,
    #[arg(short = 'A')]
    account: Option<String>,
    #[arg(short = 'c')]
    checkpoint: Option<String>,
    #[arg(short = 'e')]
    error_path: Option<String>,
    #[arg(short = 'h')]
    holds: Option<String>,
    #[arg(short = 'j')]
    join: Option<String>,
    #[arg(short = 'k')]
    keep: Option<String>,
    #[arg(short = 'l')]
    resources: Vec<String>,
    #[arg(short = 'm')]
    mail_points: Option<String>,
    #[arg(short = 'M')]
    mail_users: Option<String>,
    #[arg(short = 'N')]
    name: Option<String>,
    #[arg(short = 'o')]
    output_path: Option<String>,
    #[arg(short = 'p')]
    priority: Option<String>,
    #[arg(short = 'P')]
    project: Option<String>,
    #[arg(short = 'r')]
    rerunable: Option<String>,
    #[arg(short = 'R')]
    remove_files: Option<String>,
    #[arg(short = 'S')]
    shell: Option<String>,
    #[arg(short = 'u')]
    user_list: Option<String>,
    #[arg(short = 'W')]
    extended: Vec<String>,
    #[arg(long = "version")]
    version: bool,
    #[arg(required_unless_present = "version")]
    jobs: Vec<String>,
}

fn attributes(args: &Args, host: &str, cwd: &str) -> Result<Vec<Attr>, OptError> {
    let mut attrs = Vec::new();
    if let Some(t) = &args.execution_time {
        let epoch = jobopts::parse_datetime(t).ok_or(OptError::illegal('a'))?;
        attrs.push(Attr::new("Execution_Time", epoch.to_string()));
    }
    if let Some(a) = &args.account {
        attrs.push(Attr::new("Account_Name", a.as_str()));
    }
    if let Some(c) = &args.checkpoint {
        attrs.push(Attr::new("Checkpoint", jobopts::checkpoint(c)?));
    }
    if let Some(p) = &args.error_path {
        attrs.push(Attr::new("Error_Path", jobopts::output_path(p, host, cwd)));
    }
    if let Some(h) = &args.holds {
        if !pbs_cli::valid_hold_list(h) {
            return Err(OptError::illegal('h'));
        }
        attrs.push(Attr::new("Hold_Types", h.as_str()));
    }
    if let Some(j) = &args.join {
        attrs.push(Attr::new("Join_Path", jobopts::join_path(j)?));
    }
    if let Some(k) = &args.keep {
        attrs.push(Attr::new("Keep_Files", jobopts::keep_files(k)?));
    }
    for list in &args.resources {
        attrs.extend(jobopts::resource_list(list)?);
    }
    if let Some(m) = &args.mail_points {
        attrs.push(Attr::new("Mail_Points", jobopts::mail_points(m)?));
    }
    if let Some(m) = &args.mail_users {
        attrs.push(Attr::new("Mail_Users", m.as_str()));
    }
    if let Some(n) = &args.name {
        attrs.push(Attr::new("Job_Name", jobopts::job_name(n)?));
    }
    if let Some(p) = &args.output_path {
        attrs.push(Attr::new("Output_Path", jobopts::output_path(p, host, cwd)));
    }
    if let Some(p) = &args.priority {
        attrs.push(Attr::new("Priority", jobopts::priority(p)?));
    }
    if let Some(p) = &args.project {
        attrs.push(Attr::new("project", p.as_str()));
    }
    if let Some(r) = &args.rerunable {
        attrs.push(Attr::new("Rerunable", jobopts::rerunable(r)?));
    }
    if let Some(r) = &args.remove_files {
        attrs.push(Attr::new("Remove_Files", r.as_str()));
    }
    if let Some(s) = &args.shell {
        attrs.push(Attr::new("Shell_Path_List", s.as_str()));
    }
    if let Some(u) = &args.user_list {
        attrs.push(Attr::new("User_List", u.as_str()));
    }
    for list in &args.extended {
        for (key, value) in jobopts::extended(list)? {
            attrs.push(Attr::new(key, value));
        }
    }
    Ok(attrs)
}

fn main() -> ExitCode {
    let args: Args = match pbs_cli::start(USAGE, 2, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_else(|_| "/".into());
    let attrs = match attributes(&args, &pbs_cli::local_host_name(), &cwd) {
        Ok(attrs) if !attrs.is_empty() => attrs,
        Ok(_) => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("qalter: {}", e.message);
            if e.usage {
                eprint!("{USAGE}");
            }
            return ExitCode::from(e.status);
        }
    };
    let mut client = match pbs_cli::connect("qalter") {
        Ok(client) => client,
        Err(code) => return code,
    };
    pbs_cli::perjob::run("qalter", &mut client, &args.jobs, |ids| Request::ModifyJob { ids, attrs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(argv: &[&str]) -> Result<Vec<Attr>, OptError> {
        let args = Args::try_parse_from(std::iter::once("qalter").chain(argv.iter().copied())).unwrap();
        attributes(&args, "h", "/w")
    }

    #[test]
    fn builds_attributes() {
        assert_eq!(
            attrs(&["-N", "x", "-l", "walltime=1:00", "-W", "max_run_subjobs=5", "1"]).unwrap(),
            vec![
                Attr::new("Resource_List.walltime", "1:00"),
                Attr::new("Job_Name", "x"),
                Attr::new("max_run_subjobs", "5")
            ]
        );
        assert_eq!(attrs(&["-h", "x", "1"]).unwrap_err(), OptError::illegal('h'));
        assert_eq!(attrs(&["-o", "out", "1"]).unwrap(), vec![Attr::new("Output_Path", "h:/w/out")]);
    }
}
