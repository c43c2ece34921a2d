//! `qsub`: submits a job from a script file, stdin, or `-- program args`, with `#PBS`
//! directives in the script (the command line wins), and prints the new job's id.

use std::io::Read;
use std::process::ExitCode;

use clap::Parser;
use pbs_cli::jobopts::{self, OptError};
use pbs_core::ArrayRange;
use pbs_proto::Attr;

const USAGE: &str = "usage: qsub [-a date_time] [-A account_string] [-c interval]
\t[-C directive_prefix] [-e path] [-f ] [-h ] [-I [-X]] [-j oe|eo] [-J X-Y[:Z]]
\t[-k keep] [-l resource_list] [-m mail_options] [-M user_list]
\t[-N jobname] [-o path] [-p priority] [-P project] [-q queue] [-r y|n]
\t[-R o|e|oe] [-S path] [-u user_list] [-W otherattributes=value...]
\t[-v variable_list] [-V ] [-z] [script | -- command [arg1 ...]]
       qsub --version
";

/// The options, from the command line or from one `#PBS` line.
#[derive(Parser, Debug, Default)]
#[command(name = "qsub", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    #[arg(short = 'a')]
    execution_time: Option<String>,
    #[arg(short = 'A')]
    account: Option<String>,
    #[arg(short = 'c')]
    checkpoint: Option<String>,
    #[arg(short = 'C')]
    directive_prefix: Option<String>,
    #[arg(short = 'e')]
    error_path: Option<String>,
    #[arg(short = 'f')]
    foreground: bool,
    #[arg(short = 'h')]
    hold: bool,
    #[arg(short = 'I')]
    interactive: bool,
    #[arg(short = 'X')]
    x11: bool,
    #[arg(short = 'j')]
    join: Option<String>,
    #[arg(short = 'J')]
    array: Option<String>,
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
    #[arg(short = 'q')]
    queue: Option<String>,
    #[arg(short = 'r')]
    rerunable: Option<String>,
    #[arg(short = 'R')]
    remove_files: Option<String>,
    #[arg(short = 'S')]
    shell: Option<String>,
    #[arg(short = 'u')]
    user_list: Option<String>,
    #[arg(short = 'v')]
    variables: Vec<String>,
    #[arg(short = 'V')]
    export_all: bool,
    #[arg(short = 'W')]
    extended: Vec<String>,
    #[arg(short = 'z')]
    quiet: bool,
    #[arg(long = "version")]
    version: bool,
    script: Option<String>,
    #[arg(last = true)]
    command: Vec<String>,
}

impl Args {
    /// Fills what the command line left out from a `#PBS` line; lists accumulate, the
    /// command line's entries last so that they win.
    fn merge_directive(&mut self, d: Args) {
        macro_rules! fill {
            ($($field:ident),*) => { $( if self.$field.is_none() { self.$field = d.$field; } )* };
        }
        fill!(
            execution_time,
            account,
            checkpoint,
            error_path,
            join,
            array,
            keep,
            mail_points,
            mail_users,
            name,
            output_path,
            priority,
            project,
            queue,
            rerunable,
            remove_files,
            shell,
            user_list
        );
        self.hold |= d.hold;
        self.export_all |= d.export_all;
        self.interactive |= d.interactive;
        for (mine, theirs) in
            [(&mut self.resources, d.resources), (&mut self.variables, d.variables), (&mut self.extended, d.extended)]
        {
            let mut merged = theirs;
            merged.append(mine);
            *mine = merged;
        }
    }
}

/// Splits a directive line into words, honouring double and single quotes.
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

/// The `#PBS` directives of a script: the words of each directive line, up to the first
/// line that is neither blank nor a comment.
fn directives(script: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in script.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                // A trailing comment ends the directive.
                let rest = rest.split(" #").next().unwrap_or_default();
                out.push(split_words(rest));
                continue;
            }
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        break;
    }
    out
}

/// Quotes a word for /bin/sh.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Everything needed to submit, worked out without talking to the server.
#[derive(Debug)]
struct Submission {
    attrs: Vec<Attr>,
    script: String,
    destination: Option<String>,
    quiet: bool,
}

/// Sets or replaces an attribute, keeping first-set order.
fn set(attrs: &mut Vec<Attr>, name: &str, value: impl Into<String>) {
    let value = value.into();
    match attrs.iter_mut().find(|a| a.0 == name) {
        Some(a) => a.1 = value,
        None => attrs.push(Attr::new(name, value)),
    }
}

struct Env {
    cwd: String,
    host: String,
    vars: Vec<(String, String)>,
}

fn build(mut args: Args, script_text: String, env: &Env, argv: &[String]) -> Result<Submission, OptError> {
    let prefix = args
        .directive_prefix
        .clone()
        .or_else(|| env.vars.iter().find(|(k, _)| k == "PBS_DPREFIX").map(|(_, v)| v.clone()))
        .unwrap_or_else(|| "#PBS".into());
    let from_command = !args.command.is_empty();
    if !from_command {
        for words in directives(&script_text, &prefix) {
            let directive = Args::try_parse_from(std::iter::once("qsub".to_string()).chain(words))
                .map_err(|_| OptError { message: "directive error".into(), status: 2, usage: true })?;
            args.merge_directive(directive);
        }
    }
    if args.interactive {
        return Err(OptError { message: "interactive jobs are not supported".into(), status: 2, usage: false });
    }
    let mut attrs: Vec<Attr> = Vec::new();
    let default_name = if from_command {
        args.command[0].rsplit('/').next().unwrap_or("STDIN").to_string()
    } else {
        match &args.script {
            Some(path) => path.rsplit('/').next().unwrap_or("STDIN").to_string(),
            None => "STDIN".to_string(),
        }
    };
    let name = match &args.name {
        Some(n) => jobopts::job_name(n)?,
        None => default_name,
    };
    set(&mut attrs, "Job_Name", name);
    if let Some(t) = &args.execution_time {
        let epoch = jobopts::parse_datetime(t).ok_or(OptError::illegal('a'))?;
        set(&mut attrs, "Execution_Time", epoch.to_string());
    }
    if let Some(a) = &args.account {
        set(&mut attrs, "Account_Name", a.as_str());
    }
    if let Some(c) = &args.checkpoint {
        set(&mut attrs, "Checkpoint", jobopts::checkpoint(c)?);
    }
    if let Some(p) = &args.error_path {
        set(&mut attrs, "Error_Path", jobopts::output_path(p, &env.host, &env.cwd));
    }
    if args.hold {
        set(&mut attrs, "Hold_Types", "u");
    }
    if let Some(j) = &args.join {
        set(&mut attrs, "Join_Path", jobopts::join_path(j)?);
    }
    if let Some(k) = &args.keep {
        set(&mut attrs, "Keep_Files", jobopts::keep_files(k)?);
    }
    for list in &args.resources {
        for Attr(n, v) in jobopts::resource_list(list)? {
            set(&mut attrs, &n, v);
        }
    }
    if let Some(m) = &args.mail_points {
        let points = jobopts::mail_points(m)?;
        if points.contains('j') && args.array.is_none() {
            return Err(OptError {
                message: "mail option 'j' can not be used without array job".into(),
                status: 2,
                usage: false,
            });
        }
        set(&mut attrs, "Mail_Points", points);
    }
    if let Some(m) = &args.mail_users {
        set(&mut attrs, "Mail_Users", m.as_str());
    }
    if let Some(p) = &args.output_path {
        set(&mut attrs, "Output_Path", jobopts::output_path(p, &env.host, &env.cwd));
    }
    if let Some(p) = &args.priority {
        set(&mut attrs, "Priority", jobopts::priority(p)?);
    }
    if let Some(p) = &args.project {
        set(&mut attrs, "project", p.as_str());
    }
    if let Some(r) = &args.rerunable {
        let value = jobopts::rerunable(r)?;
        if value == "False" && args.array.is_some() {
            return Err(OptError { message: " cannot submit non-rerunable Array Job".into(), status: 2, usage: false });
        }
        set(&mut attrs, "Rerunable", value);
    }
    if let Some(r) = &args.remove_files {
        if !matches!(r.as_str(), "o" | "e" | "oe" | "eo") {
            return Err(OptError::illegal('R'));
        }
        set(&mut attrs, "Remove_Files", r.as_str());
    }
    if let Some(s) = &args.shell {
        set(&mut attrs, "Shell_Path_List", s.as_str());
    }
    if let Some(u) = &args.user_list {
        set(&mut attrs, "User_List", u.as_str());
    }
    let mut max_run: Option<String> = None;
    if let Some(j) = &args.array {
        let (range, limit) = match j.split_once('%') {
            Some((r, n)) => (r, Some(n)),
            None => (j.as_str(), None),
        };
        range.parse::<ArrayRange>().map_err(|_| OptError::illegal('J'))?;
        set(&mut attrs, "array_indices_submitted", range);
        if let Some(n) = limit {
            n.parse::<u64>().map_err(|_| OptError::illegal('J'))?;
            max_run = Some(n.to_string());
        }
    }
    for list in &args.extended {
        for (key, value) in jobopts::extended(list)? {
            if key == "max_run_subjobs" {
                if max_run.is_some() {
                    return Err(OptError {
                        message: "multiple max_run_subjobs values found".into(),
                        status: 2,
                        usage: true,
                    });
                }
                max_run = Some(value);
            } else {
                set(&mut attrs, &key, value);
            }
        }
    }
    if let Some(n) = max_run {
        set(&mut attrs, "max_run_subjobs", n);
    }
    set(&mut attrs, "Variable_List", variable_list(&args, env)?);
    set(&mut attrs, "Submit_arguments", argv.join(" "));
    let script = if from_command {
        let mut exe = format!("<jsdl-hpcpa:Executable>{}</jsdl-hpcpa:Executable>", args.command[0]);
        set(&mut attrs, "executable", std::mem::take(&mut exe));
        if args.command.len() > 1 {
            let list: String =
                args.command[1..].iter().map(|a| format!("<jsdl-hpcpa:Argument>{a}</jsdl-hpcpa:Argument>")).collect();
            set(&mut attrs, "argument_list", list);
        }
        let words: Vec<String> = args.command.iter().map(|w| shell_quote(w)).collect();
        format!("#!/bin/sh\nexec {}\n", words.join(" "))
    } else {
        script_text
    };
    Ok(Submission { attrs, script, destination: args.queue.clone(), quiet: args.quiet })
}

/// `PBS_O_*` from the environment, then `-V` and `-v` variables (user `PBS_O_*` ignored).
fn variable_list(args: &Args, env: &Env) -> Result<String, OptError> {
    let get = |k: &str| env.vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let mut out: Vec<String> = Vec::new();
    for (var, from) in [
        ("PBS_O_HOME", "HOME"),
        ("PBS_O_LANG", "LANG"),
        ("PBS_O_LOGNAME", "LOGNAME"),
        ("PBS_O_PATH", "PATH"),
        ("PBS_O_MAIL", "MAIL"),
        ("PBS_O_SHELL", "SHELL"),
        ("PBS_O_TZ", "TZ"),
    ] {
        if let Some(value) = get(from) {
            out.push(format!("{var}={}", jobopts::escape_variable(value)));
        }
    }
    out.push(format!("PBS_O_WORKDIR={}", jobopts::escape_variable(&env.cwd)));
    out.push("PBS_O_SYSTEM=Linux".to_string());
    let mut push = |name: &str, value: &str| {
        if !name.starts_with("PBS_O_") {
            out.push(format!("{name}={}", jobopts::escape_variable(value)));
        }
    };
    if args.export_all {
        for (k, v) in &env.vars {
            push(k, v);
        }
    }
    for list in &args.variables {
        for item in jobopts::split_commas(list) {
            if item.is_empty() {
                return Err(OptError::illegal('v'));
            }
            match item.split_once('=') {
                Some((k, v)) => push(k, v.trim_matches('"')),
                None => push(&item, get(&item).unwrap_or("")),
            }
        }
    }
    Ok(out.join(","))
}

fn read_script(args: &Args) -> Result<String, String> {
    if !args.command.is_empty() {
        return Ok(String::new());
    }
    match &args.script {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("qsub: script file:: {e}")),
        None => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| format!("qsub: cannot read stdin: {e}"))?;
            Ok(text)
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args: Args = match pbs_cli::start(USAGE, 2, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    if args.script.is_some() && !args.command.is_empty() {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    }
    let script = match read_script(&args) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let env = Env {
        cwd: std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_else(|_| "/".into()),
        host: pbs_cli::local_host_name(),
        vars: std::env::vars().collect(),
    };
    let submission = match build(args, script, &env, &argv) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qsub: {}", e.message);
            if e.usage {
                eprint!("{USAGE}");
            }
            return ExitCode::from(e.status);
        }
    };
    let mut client = match pbs_cli::connect("qsub") {
        Ok(client) => client,
        Err(code) => return code,
    };
    match client.submit(submission.attrs, submission.script, submission.destination) {
        Ok(id) => {
            if !submission.quiet {
                println!("{id}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let text = e.to_string();
            if text.is_empty() {
                eprintln!("qsub: Error ({}) submitting job", e.pbse().0);
            } else {
                eprintln!("qsub: {text}");
            }
            pbs_cli::exit_code(e.pbse().0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env {
            cwd: "/home/u".into(),
            host: "h".into(),
            vars: vec![("HOME".into(), "/home/u".into()), ("PATH".into(), "/bin,/usr/bin".into())],
        }
    }

    fn submit(argv: &[&str], script: &str) -> Result<Submission, OptError> {
        let args = Args::try_parse_from(std::iter::once("qsub").chain(argv.iter().copied())).unwrap();
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        build(args, script.into(), &env(), &argv)
    }

    fn get<'a>(s: &'a Submission, name: &str) -> Option<&'a str> {
        s.attrs.iter().find(|a| a.0 == name).map(|a| a.1.as_str())
    }

    #[test]
    fn command_form() {
        let s = submit(&["-N", "x", "-l", "walltime=10:00", "--", "/bin/sleep", "100"], "").unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("x"));
        assert_eq!(get(&s, "Resource_List.walltime"), Some("10:00"));
        assert_eq!(get(&s, "executable"), Some("<jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>"));
        assert_eq!(get(&s, "argument_list"), Some("<jsdl-hpcpa:Argument>100</jsdl-hpcpa:Argument>"));
        assert_eq!(get(&s, "Submit_arguments"), Some("-N x -l walltime=10:00 -- /bin/sleep 100"));
        assert_eq!(s.script, "#!/bin/sh\nexec '/bin/sleep' '100'\n");
        assert_eq!(
            get(&s, "Variable_List"),
            Some("PBS_O_HOME=/home/u,PBS_O_PATH=/bin\\,/usr/bin,PBS_O_WORKDIR=/home/u,PBS_O_SYSTEM=Linux")
        );
        let s = submit(&["--", "/bin/true"], "").unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("true"));
    }

    #[test]
    fn directives_and_command_line_precedence() {
        let script = "#!/bin/sh\n# comment\n#PBS -N fromscript\n#PBS -l walltime=00:03:00 -l ncpus=2\n\necho hi\n#PBS -N ignored\n";
        let s = submit(&["-N", "cmdline", "-l", "ncpus=4"], script).unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("cmdline"));
        assert_eq!(get(&s, "Resource_List.walltime"), Some("00:03:00"));
        assert_eq!(get(&s, "Resource_List.ncpus"), Some("4"));
        let s = submit(&[], script).unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("fromscript"));
        assert_eq!(get(&submit(&[], "echo\n").unwrap(), "Job_Name"), Some("STDIN"));
    }

    #[test]
    fn arrays() {
        let s = submit(&["-h", "-J", "0-9%2", "--", "/bin/true"], "").unwrap();
        assert_eq!(get(&s, "array_indices_submitted"), Some("0-9"));
        assert_eq!(get(&s, "max_run_subjobs"), Some("2"));
        assert_eq!(get(&s, "Hold_Types"), Some("u"));
        let both = submit(&["-J", "0-9%2", "-W", "max_run_subjobs=3", "--", "/bin/true"], "").unwrap_err();
        assert_eq!((both.message.as_str(), both.usage), ("multiple max_run_subjobs values found", true));
        assert_eq!(submit(&["-J", "5", "--", "/bin/true"], "").unwrap_err(), OptError::illegal('J'));
        let s = submit(&["-W", "max_run_subjobs=2", "--", "/bin/true"], "").unwrap();
        assert_eq!(get(&s, "max_run_subjobs"), Some("2"));
    }

    #[test]
    fn bad_options() {
        assert_eq!(submit(&["-l", "foo", "--", "/bin/true"], "").unwrap_err(), OptError::illegal('l'));
        assert_eq!(submit(&["-j", "x", "--", "/bin/true"], "").unwrap_err(), OptError::illegal('j'));
        assert_eq!(submit(&["-a", "tomorrow", "--", "/bin/true"], "").unwrap_err(), OptError::illegal('a'));
        assert_eq!(submit(&["-p", "5000", "--", "/bin/true"], "").unwrap_err(), OptError::illegal('p'));
    }

    #[test]
    fn words() {
        assert_eq!(split_words(r#" -N "a b" -l x=1 'c d'"#), vec!["-N", "a b", "-l", "x=1", "c d"]);
    }
}
