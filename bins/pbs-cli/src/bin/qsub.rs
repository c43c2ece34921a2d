//! `qsub`: submits a job from a script file, standard input, or `-- program args`, reading
//! `#PBS` directives from the script (the command line wins), and prints the new job's id.
//!
//! Options are applied as OpenPBS's `process_opts` does: first the command line, then each
//! directive line at a lower priority, so an option given on the command line is never
//! overridden; then the job attributes are checked as OpenPBS's client library checks
//! them, and the job goes to the server in a single request.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "qsub/env.rs"]
mod env;
#[path = "qsub/script.rs"]
mod script;

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use nix::sys::signal::{SigSet, Signal};
use pbs_cli::jobopts::{self, OptionStep, PlainOptions, Scan, VerifyEnv};
use pbs_core::{Pbse, jobattr};
use pbs_proto::Attr;

const USAGE: &str = "usage: qsub [-a date_time] [-A account_string] [-c interval]
\t[-C directive_prefix] [-e path] [-f ] [-h ] [-I [-X]] [-j oe|eo] [-J X-Y[:Z]]
\t[-k keep] [-l resource_list] [-m mail_options] [-M user_list]
\t[-N jobname] [-o path] [-p priority] [-P project] [-q queue] [-r y|n]
\t[-R o|e|oe] [-S path] [-u user_list] [-W otherattributes=value...]
\t[-v variable_list] [-V ] [-z] [script | -- command [arg1 ...]]
       qsub --version
";

/// getopt(3) option string of OpenPBS's qsub.
const OPTSTRING: &str = "a:A:c:C:e:fhIj:J:k:l:L:m:M:N:o:p:q:r:R:S:u:v:VW:XzP:";

/// Priority of command-line options; directives get one less, so they never override.
const CMDLINE: u8 = 3;
const DIRECTIVE: u8 = CMDLINE - 1;

const INTER_ARRAY: &str = "qsub: interactive and array job submission cannot be used together";
const NO_RERUN_ARRAY: &str = "qsub:  cannot submit non-rerunable Array Job";
const BAD_W: &str = "qsub: illegal -W value";
const MULTIPLE_MAX_RUN: &str = "qsub: multiple max_run_subjobs values found";
const NO_ENV: &str = "qsub: cannot send environment with the job";
const SET_WITH_SPECS: &str = "qsub: -Wjob_set option can not be used with -L option";

/// The options of one command line or one directive line.
///
/// qsub fills it from its getopt(3) scan ([`Args::from_scan`]) rather than running clap:
/// building clap's parser costs more than the rest of a submission, and qsub must start
/// fast. A test checks that clap parses the same command lines into the same values.
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "qsub", disable_help_flag = true, disable_version_flag = true, args_override_self = true)]
struct Args {
    /// Execution time, `[[[[CC]YY]MM]DD]hhmm[.SS]`.
    #[arg(short = 'a', allow_hyphen_values = true)]
    execution_time: Option<String>,
    #[arg(short = 'c', allow_hyphen_values = true)]
    checkpoint: Option<String>,
    /// Directive prefix (default `#PBS`, or `PBS_DPREFIX`).
    #[arg(short = 'C', allow_hyphen_values = true)]
    directive_prefix: Option<String>,
    /// Foreground: accepted; this qsub never forks a helper.
    #[arg(short = 'f')]
    foreground: bool,
    /// User hold.
    #[arg(short = 'h')]
    hold: bool,
    /// Interactive job: not supported.
    #[arg(short = 'I')]
    interactive: bool,
    /// Array `X-Y[:Z][%N]`.
    #[arg(short = 'J', allow_hyphen_values = true)]
    array: Option<String>,
    #[arg(short = 'l', allow_hyphen_values = true)]
    resources: Vec<String>,
    /// One job of a job set per list (`-L select=...,walltime=...`).
    #[arg(short = 'L', allow_hyphen_values = true)]
    specs: Vec<String>,
    #[arg(short = 'q', allow_hyphen_values = true)]
    queue: Option<String>,
    #[arg(short = 'r', allow_hyphen_values = true)]
    rerunable: Option<String>,
    #[arg(short = 'v', allow_hyphen_values = true)]
    variables: Option<String>,
    /// Export the whole environment.
    #[arg(short = 'V')]
    export_all: bool,
    #[arg(short = 'W', allow_hyphen_values = true)]
    extended: Vec<String>,
    /// X11 forwarding (interactive jobs only).
    #[arg(short = 'X')]
    x11: bool,
    /// Do not print the job id.
    #[arg(short = 'z')]
    quiet: bool,
    /// The options whose value is their attribute's, qalter's too.
    #[command(flatten)]
    plain: PlainOptions,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    operands: Vec<String>,
}

impl Args {
    /// The options of a scan, the way clap parses them (a later single value wins).
    fn from_scan(scan: &Scan) -> Args {
        let mut args = Args::default();
        for opt in &scan.options {
            if args.plain.take(opt.letter, &opt.value) {
                continue;
            }
            let value = opt.value.clone();
            let single = |slot: &mut Option<String>| *slot = value.clone();
            match opt.letter {
                'a' => single(&mut args.execution_time),
                'c' => single(&mut args.checkpoint),
                'C' => single(&mut args.directive_prefix),
                'f' => args.foreground = true,
                'h' => args.hold = true,
                'I' => args.interactive = true,
                'J' => single(&mut args.array),
                'l' => args.resources.extend(value.clone()),
                'L' => args.specs.extend(value.clone()),
                'q' => single(&mut args.queue),
                'r' => single(&mut args.rerunable),
                'v' => single(&mut args.variables),
                'V' => args.export_all = true,
                'W' => args.extended.extend(value.clone()),
                'X' => args.x11 = true,
                'z' => args.quiet = true,
                _ => {}
            }
        }
        args
    }
}

/// A failure: the whole text for stderr and the exit status.
#[derive(Debug, PartialEq, Eq)]
struct Failure {
    text: String,
    status: u8,
}

impl Failure {
    fn new(text: impl Into<String>, status: u8) -> Failure {
        let mut text = text.into();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        Failure { text, status }
    }

    /// Messages, then the usage text; exit 2.
    fn usage(lines: &[String]) -> Failure {
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        text.push_str(USAGE);
        Failure { text, status: 2 }
    }
}

/// What the job is made of besides options.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// A script file.
    Script(String),
    /// Standard input.
    Stdin,
    /// `-- program args`.
    Command(Vec<String>),
}

/// Parses the command line (without the program name): getopt's rules without permutation,
/// then the operands: a script path (last) or `--` and a command.
fn parse_command_line(prog: &str, args: &[String]) -> Result<(Args, Source), Failure> {
    let scan = jobopts::getopt(prog, args, OPTSTRING, false);
    let errors = scan.errors.clone();
    let source = match (scan.dashdash, scan.operands.as_slice()) {
        (true, []) => None,
        (true, command) => Some(Source::Command(command.to_vec())),
        (false, []) => Some(Source::Stdin),
        // An option value `--` right before the script is taken for the command marker.
        (false, [_]) if scan.options.last().and_then(|o| o.value.as_deref()) == Some("--") => None,
        (false, [script]) if script == "-" => Some(Source::Stdin),
        (false, [script]) => Some(Source::Script(script.clone())),
        (false, _) => None,
    };
    match source {
        Some(source) if errors.is_empty() => Ok((Args::from_scan(&scan), source)),
        _ => Err(Failure::usage(&errors)),
    }
}

/// What the submitting side provides.
struct Inputs<'a> {
    getenv: env::GetEnv<'a>,
    /// The whole environment, for `-V`.
    environment: &'a dyn Fn() -> Vec<(String, String)>,
    cwd: String,
    /// Host for output paths.
    host: String,
    /// Default server, completing job ids in `depend`.
    server: String,
    auth_method: String,
    encrypt_method: String,
    is_dir: &'a dyn Fn(&str) -> bool,
}

/// Per-option priority of the value set so far (OpenPBS's `x_opt` variables).
#[derive(Debug, Default)]
struct Levels {
    /// The options whose value is their attribute's, by letter.
    plain: std::collections::BTreeMap<char, u8>,
    a: u8,
    c: u8,
    prefix: u8,
    h: u8,
    interactive: u8,
    array: u8,
    q: u8,
    r: u8,
    v: u8,
    export: u8,
    quiet: u8,
    depend: u8,
    specs: u8,
    job_set: u8,
    stagein: u8,
    stageout: u8,
    sandbox: u8,
    group_list: u8,
    resv_start: u8,
    resv_end: u8,
    cred: u8,
    block: u8,
    tolerate: u8,
    x11: u8,
}

/// Takes an option at priority `pass` unless one of higher priority was taken.
fn gate(level: &mut u8, pass: u8) -> bool {
    if *level <= pass {
        *level = pass;
        true
    } else {
        false
    }
}

/// The job being built.
#[derive(Debug, Default)]
struct Job {
    /// Attributes in the order they were set; later duplicates win.
    attrs: Vec<Attr>,
    lv: Levels,
    max_run_set: bool,
    /// `-r` value (`y` by default).
    rerunable: Option<char>,
    interactive: bool,
    block: bool,
    /// The expanded `-v` list.
    variables: Option<String>,
    export_all: bool,
    quiet: bool,
    destination: String,
    prefix: Option<String>,
    /// `-L` lists, in order: one job each.
    specs: Vec<Vec<(String, String)>>,
}

impl Job {
    fn set(&mut self, name: &str, value: impl Into<String>) {
        self.attrs.push(Attr::new(name, value));
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.attrs.iter().rev().find(|a| a.0 == name).map(|a| a.1.as_str())
    }

    /// Applies one line of options at priority `pass` (OpenPBS's `process_opts`). Returns
    /// the messages of rejected options (a usage error on the command line, a directive
    /// error in a script); fatal errors are `Err`.
    fn apply(&mut self, args: &Args, pass: u8, inputs: &Inputs<'_>) -> Result<Vec<String>, Failure> {
        let mut errors = Vec::new();
        let lv = &mut self.lv;
        let mut set: Vec<(&str, String)> = Vec::new();
        if let Some(value) = &args.directive_prefix {
            if gate(&mut lv.prefix, pass) {
                self.prefix = Some(value.clone());
            }
        }
        // `-q` names a destination, not an attribute: qselect's `-q` is the table's.
        if let Some(value) = &args.queue {
            if gate(&mut lv.q, pass) {
                self.destination = value.clone();
            }
        }
        // In the option table's order: the plain options as it says, the others by their
        // rules (a later line of lower priority does not override, see `gate`).
        for step in args.plain.walk(jobattr::Command::Qsub) {
            let letter = match step {
                OptionStep::Plain { letter, attribute, value } => {
                    if gate(lv.plain.entry(letter).or_default(), pass) {
                        set.push((attribute, value));
                    }
                    continue;
                }
                OptionStep::Own(letter) => letter,
            };
            match letter {
                'a' => {
                    if let Some(value) = &args.execution_time {
                        if gate(&mut lv.a, pass) {
                            match jobopts::cvtdate(value) {
                                Some(epoch) => set.push(("Execution_Time", epoch.to_string())),
                                None => errors.push("qsub: illegal -a value".to_string()),
                            }
                        }
                    }
                }
                'c' => {
                    if let Some(value) = &args.checkpoint {
                        if gate(&mut lv.c, pass) {
                            let value = value.trim_start();
                            if value == "u" {
                                errors.push("qsub: illegal -c value".to_string());
                            } else {
                                set.push(("Checkpoint", value.to_string()));
                            }
                        }
                    }
                }
                'h' if args.hold && gate(&mut lv.h, pass) => set.push(("Hold_Types", "u".to_string())),
                'I' if args.interactive => {
                    if lv.array != 0 {
                        errors.push(INTER_ARRAY.to_string());
                    } else if gate(&mut lv.interactive, pass) {
                        self.interactive = true;
                    }
                }
                'J' => {
                    if let Some(value) = &args.array {
                        if self.interactive {
                            errors.push(INTER_ARRAY.to_string());
                        } else if self.rerunable.unwrap_or('y') != 'y' {
                            errors.push(NO_RERUN_ARRAY.to_string());
                        } else if gate(&mut lv.array, pass) {
                            let (range, limit) = match value.split_once('%') {
                                Some((range, limit)) => (range, Some(limit)),
                                None => (value.as_str(), None),
                            };
                            set.push(("array_indices_submitted", range.to_string()));
                            if let Some(limit) = limit {
                                if self.max_run_set {
                                    errors.push(MULTIPLE_MAX_RUN.to_string());
                                } else {
                                    self.max_run_set = true;
                                    set.push(("max_run_subjobs", limit.to_string()));
                                }
                            }
                        }
                    }
                }
                'l' => {
                    for list in &args.resources {
                        match jobopts::parse_resource_list(list) {
                            Ok(pairs) => {
                                for (resource, value) in pairs {
                                    let name = format!("Resource_List.{resource}");
                                    // Directives only add resources not given before.
                                    let taken = pass != CMDLINE && self.attrs.iter().any(|a| a.0 == name);
                                    if !taken {
                                        self.attrs.push(Attr::new(name, value));
                                    }
                                }
                            }
                            Err(e) => errors.push(format!("qsub: {}", jobopts::resource_list_message(list, &e))),
                        }
                    }
                }
                // Lines of one priority add to each other; a higher one's replace.
                'L' if !args.specs.is_empty() && gate(&mut lv.specs, pass) => {
                    for list in &args.specs {
                        match jobopts::parse_resource_list(list) {
                            Ok(pairs) => self.specs.push(pairs),
                            Err(e) => errors.push(format!("qsub: {}", jobopts::resource_list_message(list, &e))),
                        }
                    }
                }
                'r' => {
                    if let Some(value) = &args.rerunable {
                        if gate(&mut lv.r, pass) {
                            match value.as_str() {
                                "n" if lv.array != 0 => errors.push(NO_RERUN_ARRAY.to_string()),
                                "y" | "n" => {
                                    self.rerunable = value.chars().next();
                                    set.push(("Rerunable", value.clone()));
                                }
                                _ => errors.push("qsub: illegal -r value".to_string()),
                            }
                        }
                    }
                }
                'W' => {
                    for value in &args.extended {
                        let value = value.trim_start();
                        if value.is_empty() {
                            errors.push(BAD_W.to_string());
                            continue;
                        }
                        let Some(pairs) = jobopts::parse_equal_pairs(value) else {
                            errors.push(BAD_W.to_string());
                            continue;
                        };
                        for (key, value) in pairs {
                            let gated = |level: &mut u8| gate(level, pass);
                            match key.as_str() {
                                "depend" if gated(&mut lv.depend) => set.push(("depend", value)),
                                "job_set" if gated(&mut lv.job_set) => set.push(("job_set", value)),
                                "stagein" if gated(&mut lv.stagein) => set.push(("stagein", value)),
                                "stageout" if gated(&mut lv.stageout) => set.push(("stageout", value)),
                                "sandbox" if gated(&mut lv.sandbox) => set.push(("sandbox", value)),
                                "group_list" if gated(&mut lv.group_list) => set.push(("group_list", value)),
                                "tolerate_node_failures" if gated(&mut lv.tolerate) => {
                                    set.push(("tolerate_node_failures", value))
                                }
                                "cred" if gated(&mut lv.cred) => set.push(("cred", value)),
                                "depend"
                                | "job_set"
                                | "stagein"
                                | "stageout"
                                | "sandbox"
                                | "group_list"
                                | "tolerate_node_failures"
                                | "cred" => {}
                                "interactive" => {
                                    if lv.interactive <= pass {
                                        if lv.array != 0 {
                                            errors.push(INTER_ARRAY.to_string());
                                            break;
                                        }
                                        if value.eq_ignore_ascii_case("true") {
                                            lv.interactive = pass;
                                            self.interactive = true;
                                        } else if !value.eq_ignore_ascii_case("false") {
                                            errors.push(BAD_W.to_string());
                                            break;
                                        }
                                    }
                                }
                                "block" => {
                                    if lv.block <= pass {
                                        if value.eq_ignore_ascii_case("true") {
                                            lv.block = pass;
                                            self.block = true;
                                        } else if !value.eq_ignore_ascii_case("false") {
                                            errors.push(BAD_W.to_string());
                                            break;
                                        }
                                    }
                                }
                                "reserve_start" | "reserve_end" => {
                                    let level =
                                        if key == "reserve_start" { &mut lv.resv_start } else { &mut lv.resv_end };
                                    if gate(level, pass) {
                                        match jobopts::cvtdate(&value) {
                                            Some(epoch) => self.attrs.push(Attr::new(key.as_str(), epoch.to_string())),
                                            None => {
                                                errors.push(BAD_W.to_string());
                                                break;
                                            }
                                        }
                                    }
                                }
                                "max_run_subjobs" => {
                                    if self.max_run_set {
                                        errors.push(MULTIPLE_MAX_RUN.to_string());
                                        break;
                                    }
                                    self.max_run_set = true;
                                    set.push(("max_run_subjobs", value));
                                }
                                _ => self.attrs.push(Attr::new(key.as_str(), value)),
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(value) = &args.variables {
            if gate(&mut lv.v, pass) {
                match env::expand_varlist(value, inputs.getenv) {
                    Some(expanded) => self.variables = Some(expanded),
                    None => return Err(Failure::new(NO_ENV, 1)),
                }
            }
        }
        if args.export_all && gate(&mut lv.export, pass) {
            self.export_all = true;
        }
        if args.x11 && gate(&mut lv.x11, pass) && (inputs.getenv)("DISPLAY").is_none() {
            errors.push("qsub: DISPLAY not set".to_string());
        }
        if args.quiet && gate(&mut lv.quiet, pass) {
            self.quiet = true;
        }
        for (name, value) in set {
            match (name, self.attrs.iter_mut().find(|a| a.0 == "Job_Name")) {
                // A second name replaces the first in place, as OpenPBS does.
                ("Job_Name", Some(existing)) => existing.1 = value,
                _ => self.attrs.push(Attr::new(name, value)),
            }
        }

        if self.lv.x11 == CMDLINE && !self.interactive && errors.is_empty() {
            return Err(Failure::new("qsub: X11 Forwarding possible only for interactive jobs", 1));
        }
        let mail_j = self.get("Mail_Points").is_some_and(|m| m.contains('j'));
        if errors.is_empty() && self.lv.array == 0 && mail_j {
            return Err(Failure::new("qsub: mail option 'j' can not be used without array job", 1));
        }
        if self.lv.plain.get(&'S').copied().unwrap_or(0) == 0 {
            if let Some(shell) = (inputs.getenv)("PBS_SHELL") {
                self.set("Shell_Path_List", shell);
            }
        }
        Ok(errors)
    }

    /// Applies the directives of a script, in order; any error ends qsub with status 1.
    fn apply_directives(&mut self, directives: &[String], inputs: &Inputs<'_>) -> Result<(), Failure> {
        for line in directives {
            let Ok(words) = script::split_words(line) else {
                // OpenPBS prints the character it stopped on: the terminating NUL.
                return Err(Failure::new("qsub: unmatched \0", 1));
            };
            let scan = jobopts::getopt("qsub", &words, OPTSTRING, false);
            let mut messages = scan.errors.clone();
            let mut failed = !scan.errors.is_empty() || !scan.operands.is_empty() || scan.dashdash;
            if scan.errors.is_empty() {
                let errors = self.apply(&Args::from_scan(&scan), DIRECTIVE, inputs)?;
                failed |= !errors.is_empty();
                messages.extend(errors);
            }
            if failed {
                let mut text: String = messages.iter().map(|m| format!("{m}\n")).collect();
                text.push_str("qsub: directive error: ");
                for word in &words {
                    text.push_str(word);
                    text.push(' ');
                }
                text.push('\n');
                return Err(Failure { text, status: 1 });
            }
        }
        Ok(())
    }
}

/// Everything that goes to the server.
#[derive(Debug)]
struct Submission {
    attrs: Vec<Attr>,
    /// `-L` lists: one job each, the first leading the set the others join.
    specs: Vec<Vec<(String, String)>>,
    script: String,
    destination: Option<String>,
    quiet: bool,
    /// `-W block=true`: wait for the job to leave and exit with its status.
    block: bool,
}

/// The command line applied, the source known: the job waits for its script.
struct Started {
    job: Job,
    source: Source,
    /// The arguments as typed (the server keeps them for `qstat -f`).
    submit_arguments: Option<String>,
}

/// Applies the command line (usage errors exit 2).
fn start(argv: &[String], inputs: &Inputs<'_>) -> Result<Started, Failure> {
    let prog = argv.first().map(String::as_str).unwrap_or("qsub");
    let args_only = argv.get(1..).unwrap_or_default();
    let (args, source) = parse_command_line(prog, args_only)?;
    let mut job = Job::default();
    let errors = job.apply(&args, CMDLINE, inputs)?;
    if !errors.is_empty() {
        return Err(Failure::usage(&errors));
    }
    if job.interactive {
        return Err(Failure::new("qsub: interactive jobs are not supported", 1));
    }
    let submit_arguments = (!args_only.is_empty()).then(|| args_only.join(" "));
    Ok(Started { job, source, submit_arguments })
}

/// The directive prefix: `-C` (an empty one turns directives off), else `PBS_DPREFIX`,
/// else `#PBS`.
fn directive_prefix(job: &Job, inputs: &Inputs<'_>) -> String {
    match &job.prefix {
        Some(prefix) => prefix.clone(),
        None => (inputs.getenv)("PBS_DPREFIX").unwrap_or_else(|| "#PBS".to_string()),
    }
}

/// Adds the script (read by the caller; empty for a command), the directives, the
/// environment, and checks every attribute: the submission, or the failure to print.
fn finish(started: Started, script_text: String, inputs: &Inputs<'_>) -> Result<Submission, Failure> {
    let Started { mut job, source, submit_arguments } = started;
    // OpenPBS records the command line only when there is one.
    let mut attrs: Vec<Attr> = submit_arguments.map(|a| Attr::new("Submit_arguments", a)).into_iter().collect();
    let script = match &source {
        Source::Command(command) => {
            let program = command.first().cloned().unwrap_or_default();
            job.set("executable", format!("<jsdl-hpcpa:Executable>{program}</jsdl-hpcpa:Executable>"));
            if command.len() > 1 {
                let list: String =
                    command[1..].iter().map(|a| format!("<jsdl-hpcpa:Argument>{a}</jsdl-hpcpa:Argument>")).collect();
                job.set("argument_list", list);
            }
            if job.lv.plain.get(&'N').copied().unwrap_or(0) == 0 {
                job.set("Job_Name", "STDIN");
            }
            command_script(command)
        }
        Source::Script(_) | Source::Stdin => {
            if job.lv.plain.get(&'N').copied().unwrap_or(0) == 0 {
                let name = match &source {
                    Source::Script(path) => path.rsplit('/').next().unwrap_or(path).to_string(),
                    _ => "STDIN".to_string(),
                };
                job.set("Job_Name", name);
            }
            let scanned = script::scan(&script_text, &directive_prefix(&job, inputs));
            job.apply_directives(&scanned.directives, inputs)?;
            scanned.text
        }
    };
    if !job.specs.is_empty() && job.get("job_set").is_some() {
        return Err(Failure::new(SET_WITH_SPECS, 2));
    }
    if jobopts::parse_destination(&job.destination).is_none() {
        return Err(Failure::new(format!("qsub: illegally formed destination: {}", job.destination), 2));
    }
    let basics =
        env::Basics { cwd: &inputs.cwd, auth_method: &inputs.auth_method, encrypt_method: &inputs.encrypt_method };
    let basic = env::basic_env(inputs.getenv, &basics);
    let environment = if job.export_all { Some(env::environment_list(&(inputs.environment)())) } else { None };
    let Some(variables) = env::variable_list(&basic, job.variables.as_deref(), environment.as_deref(), inputs.getenv)
    else {
        return Err(Failure::new(NO_ENV, 1));
    };
    attrs.append(&mut job.attrs);
    attrs.push(Attr::new("Variable_List", variables));
    let attrs = verify(attrs, inputs)?;
    let destination = (!job.destination.is_empty()).then(|| job.destination.clone());
    Ok(Submission {
        attrs: jobopts::last_wins(attrs),
        specs: job.specs,
        script,
        destination,
        quiet: job.quiet,
        block: job.block,
    })
}

/// The script run for `-- program args`: the program with its arguments, quoted for sh.
fn command_script(command: &[String]) -> String {
    let quoted: Vec<String> = command.iter().map(|w| format!("'{}'", w.replace('\'', "'\\''"))).collect();
    format!("#!/bin/sh\nexec {}\n", quoted.join(" "))
}

/// The option OpenPBS's qsub blames for a bad attribute value (`-l` for any resource).
fn option_of(attribute: &str) -> Option<char> {
    let base = attribute.split('.').next().unwrap_or(attribute);
    jobattr::option_letter(jobattr::Command::Qsub, base)
}

/// Checks every attribute as OpenPBS's client library does before a submit; the first
/// failure decides the message: `illegal -X value` plus usage for an option's attribute,
/// the PBSE text for others.
fn verify(attrs: Vec<Attr>, inputs: &Inputs<'_>) -> Result<Vec<Attr>, Failure> {
    let env = VerifyEnv { host: &inputs.host, cwd: &inputs.cwd, server: &inputs.server, is_dir: inputs.is_dir };
    let mut out = Vec::with_capacity(attrs.len());
    // Lines the checks print on their own before the error (the dependency parser's).
    let mut notes = String::new();
    let mut first_error: Option<(String, Pbse)> = None;
    for Attr(name, value) in attrs {
        // OpenPBS 23.06 answers a non-numeric max_run_subjobs with this text and the
        // status of PBSE_BADATVAL (its client reports a stale message); reproduce it.
        if name == "max_run_subjobs" && value.trim().parse::<i64>().is_err() && first_error.is_none() {
            let status = (Pbse::BADATVAL.0 & 0xff) as u8;
            return Err(Failure::new("qsub: Attribute has to be set on an array job", status));
        }
        match jobopts::verify_attr(&name, &value, &env) {
            Ok(value) => out.push(Attr(name, value)),
            Err(code) => {
                if name == "depend"
                    && pbs_core::depend::expand(&value, &inputs.server) == Err(pbs_core::depend::DependError::Subjob)
                {
                    notes.push_str("cannot have dependancy on subjob or range\n");
                }
                if first_error.is_none() {
                    first_error = Some((name, code));
                }
            }
        }
    }
    let Some((name, code)) = first_error else {
        return Ok(out);
    };
    let mut failure = match option_of(&name) {
        _ if code == Pbse::JOBNBIG => Failure::new("qsub: Job name is too long ", 2),
        Some(opt) => Failure::usage(&[format!("qsub: illegal -{opt} value")]),
        None => Failure::new(format!("qsub: {code}"), (code.0 & 0xff) as u8),
    };
    failure.text.insert_str(0, &notes);
    Err(failure)
}

/// Reads the script of a file or of standard input, with OpenPBS's messages and statuses.
fn read_script(source: &Source) -> Result<String, Failure> {
    let bytes = match source {
        Source::Command(_) => return Ok(String::new()),
        Source::Stdin => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                println!("Job script will be read from standard input. Submit with CTRL+D.");
            }
            let mut bytes = Vec::new();
            stdin.read_to_end(&mut bytes).map_err(|_| Failure::new("qsub: error reading script file", 1))?;
            bytes
        }
        Source::Script(path) => {
            let describe = |e: &std::io::Error| {
                e.raw_os_error()
                    .map(|n| nix::errno::Errno::from_raw(n).desc().to_string())
                    .unwrap_or_else(|| e.to_string())
            };
            let meta = std::fs::metadata(path)
                .map_err(|e| Failure::new(format!("qsub: script file:: {}", describe(&e)), 1))?;
            if !meta.is_file() {
                return Err(Failure::new("qsub: script not a file", 1));
            }
            std::fs::read(path).map_err(|e| Failure::new(format!("qsub: opening script file:: {}", describe(&e)), 8))?
        }
    };
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The working directory as OpenPBS's qsub reports it: `$PWD` when it is the current
/// directory (keeps automounter paths), else the real path.
fn working_directory() -> String {
    use std::os::unix::fs::MetadataExt;
    let real = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default();
    match std::env::var("PWD") {
        Ok(pwd) => match (std::fs::metadata(&pwd), std::fs::metadata(".")) {
            (Ok(a), Ok(b)) if a.dev() == b.dev() && a.ino() == b.ino() => pwd,
            _ => real,
        },
        Err(_) => real,
    }
}

fn run(argv: &[String]) -> Result<ExitCode, Failure> {
    let conf = pbs_cli::load_conf().map_err(|e| Failure::new(format!("qsub: {e:#}"), 2))?;
    let conf_value = |key: &str| conf.raw.get(key).cloned();
    let getenv = |name: &str| std::env::var(name).ok();
    let environment = || -> Vec<(String, String)> {
        std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned())).collect()
    };
    let is_dir = |path: &str| std::path::Path::new(path).is_dir();
    let local_host = pbs_cli::local_host_name();
    let inputs = Inputs {
        getenv: &getenv,
        environment: &environment,
        cwd: working_directory(),
        host: conf_value("PBS_OUTPUT_HOST_NAME").filter(|h| !h.is_empty()).unwrap_or_else(|| local_host.clone()),
        server: conf.server.clone().unwrap_or(local_host),
        auth_method: conf_value("PBS_INTERACTIVE_AUTH_METHOD").unwrap_or_else(|| "resvport".to_string()),
        encrypt_method: conf_value("PBS_INTERACTIVE_ENCRYPT_METHOD").unwrap_or_default(),
        is_dir: &is_dir,
    };
    let started = start(argv, &inputs)?;
    let script_text = read_script(&started.source)?;
    let mut submission = finish(started, script_text, &inputs)?;
    // pbs_cli::connect would read pbs.conf a second time.
    let mut client = match pbs_client::Client::connect(&conf) {
        Ok(client) => client,
        Err(pbs_client::ClientError::Connect { errno, .. }) => {
            let server = conf.server.clone().unwrap_or_else(pbs_cli::local_host_name);
            let text = format!("qsub: cannot connect to server {server} (errno={errno})");
            return Err(Failure::new(text, (Pbse::NOSERVER.0 & 0xff) as u8));
        }
        Err(pbs_client::ClientError::Auth(why)) => {
            eprintln!("{why}");
            let server = conf.server.clone().unwrap_or_else(pbs_cli::local_host_name);
            let text = format!("qsub: cannot connect to server {server} (errno={})", Pbse::SYSTEM.0);
            return Err(Failure::new(text, (Pbse::NOSERVER.0 & 0xff) as u8));
        }
        Err(e) => return Err(Failure::new(format!("qsub: {e}"), (e.pbse().0 & 0xff) as u8)),
    };
    if !submission.specs.is_empty() {
        return Ok(submit_set(&mut client, submission));
    }
    // Taken before the id is printed, so a signal sent once it shows is never missed.
    let signals = if submission.block { Some(block_signals()?) } else { None };
    if submission.block {
        // Marks the job as waited for, so its end is kept for this qsub even when the
        // job leaves before the wait is asked (`job::block` in the server).
        submission.attrs.push(Attr::new("block", "1"));
    } else {
        client.last_request();
    }
    match client.submit(submission.attrs, submission.script, submission.destination) {
        Ok(id) => {
            if !submission.quiet {
                println!("{id}");
            }
            if let Some(signals) = signals {
                return Ok(block(client, id, &conf, signals));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(pbs_cli::exit_code(report_refusal(&e))),
    }
}

/// Blocks SIGHUP, SIGINT, SIGQUIT and SIGTERM for [`block`], which takes them with
/// `sigwait`: blocked here, before the submission, and in the waiting thread, which
/// inherits the mask.
fn block_signals() -> Result<SigSet, Failure> {
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGHUP, Signal::SIGINT, Signal::SIGQUIT, Signal::SIGTERM] {
        signals.add(signal);
    }
    signals.thread_block().map_err(|_| Failure::new("qsub: unable to catch signals", 1))?;
    Ok(signals)
}

/// `-W block=true`: waits on the submission's connection for job `id` to leave, and exits
/// as OpenPBS's qsub does: with the job's exit status, or 3 after printing why it left
/// when it did not end (`qsub: <id> Job to be deleted at request of ...`). SIGHUP, SIGINT,
/// SIGQUIT or SIGTERM while it waits deletes the job and exits 2.
fn block(client: pbs_client::Client, id: String, conf: &pbs_core::conf::PbsConf, signals: SigSet) -> ExitCode {
    use std::io::Write;
    // Once a signal is taken, the deletion it makes must not end qsub with the wait's answer.
    static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let waited = id.clone();
    std::thread::spawn(move || {
        let mut client = client;
        client.last_request();
        let answer = client.wait_job(&waited);
        if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let code = match answer {
            Ok((exit_status, message)) if message.is_empty() => exit_status,
            Ok((_, message)) => {
                eprintln!("qsub: {waited} {message}");
                3
            }
            Err(e) => {
                eprintln!("qsub: Bad Request Protocol, {e}");
                3
            }
        };
        let _ = std::io::stdout().flush();
        // The status as OpenPBS's qsub exits with it (the low byte, as exit(2) keeps).
        std::process::exit(code);
    });
    let Ok(signal) = signals.wait() else { return ExitCode::from(1) };
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
    eprintln!("qsub: wait for job {id} interrupted by signal {}", signal as i32);
    println!("Job {id} is being deleted");
    let _ = std::io::stdout().flush();
    match pbs_client::Client::connect(conf) {
        Ok(mut client) => {
            client.last_request();
            let _ = client.per_id(pbs_proto::Request::DeleteJob { ids: vec![id], force: false, purge_history: false });
            ExitCode::from(2)
        }
        Err(e) => {
            let server = conf.server.clone().unwrap_or_else(pbs_cli::local_host_name);
            let errno = match e {
                pbs_client::ClientError::Connect { errno, .. } => errno,
                other => other.pbse().0 as i32,
            };
            eprintln!("qsub: cannot connect to server {server} (errno={errno})");
            ExitCode::from(1)
        }
    }
}

/// Prints the server's refusal of a submission as qsub does; gives its PBSE code.
fn report_refusal(e: &pbs_client::ClientError) -> u32 {
    let code = e.pbse().0;
    let text = e.to_string();
    if text.is_empty() {
        eprintln!("qsub: Error ({code}) submitting job");
    } else {
        eprintln!("qsub: {text}");
    }
    code
}

/// The attributes of the job of one `-L` list: the job's, its `Resource_List` entries
/// replaced by the list's, and `job_set` (a new set, or the leader's id).
fn spec_attrs(base: &[Attr], spec: &[(String, String)], job_set: &str) -> Vec<Attr> {
    let mut attrs: Vec<Attr> = base.to_vec();
    for (resource, value) in spec {
        let name = format!("Resource_List.{resource}");
        attrs.retain(|a| a.0 != name);
        attrs.push(Attr::new(name, value.clone()));
    }
    attrs.push(Attr::new("job_set", job_set));
    attrs
}

/// `qsub -L ... -L ...`: one submission per list, in order, on one connection. The first
/// the server takes leads the set and the others join it; a list the server refuses (a
/// queued limit, `resources_max`...) is reported and the others still go. Every id is
/// printed; the status is the first refusal's when no job was made.
fn submit_set(client: &mut pbs_client::Client, submission: Submission) -> ExitCode {
    let mut leader: Option<String> = None;
    let mut first_error = None;
    let count = submission.specs.len();
    for (i, spec) in submission.specs.iter().enumerate() {
        let job_set = leader.as_deref().unwrap_or(pbs_core::jobset::NEW_SET);
        let attrs = spec_attrs(&submission.attrs, spec, job_set);
        if i + 1 == count {
            client.last_request();
        }
        match client.submit(attrs, submission.script.clone(), submission.destination.clone()) {
            Ok(id) => {
                if !submission.quiet {
                    println!("{id}");
                }
                leader.get_or_insert(id);
            }
            Err(e) => {
                let code = report_refusal(&e);
                first_error.get_or_insert(code);
            }
        }
    }
    match (leader, first_error) {
        (None, Some(code)) => pbs_cli::exit_code(code),
        _ => ExitCode::SUCCESS,
    }
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    pbs_cli::reset_sigpipe();
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    if argv.len() == 2 && argv[1] == "--version" {
        println!("pbs_version = {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    match run(&argv) {
        Ok(code) => code,
        Err(failure) => {
            eprint!("{}", failure.text);
            ExitCode::from(failure.status)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn getenv(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "PATH" => Some("/bin".into()),
            "SHELL" => Some("/bin/bash".into()),
            "FOO" => Some("bar".into()),
            _ => None,
        }
    }

    fn environment() -> Vec<(String, String)> {
        vec![("HOME".into(), "/home/u".into()), ("X".into(), "1".into())]
    }

    fn no_dir(_: &str) -> bool {
        false
    }

    fn inputs() -> Inputs<'static> {
        Inputs {
            getenv: &getenv,
            environment: &environment,
            cwd: "/home/u".into(),
            host: "h".into(),
            server: "srv".into(),
            auth_method: "resvport".into(),
            encrypt_method: String::new(),
            is_dir: &no_dir,
        }
    }

    /// Runs qsub's pipeline up to the request, with `script` as the script's content.
    fn submit(argv: &[&str], script: &str) -> Result<Submission, Failure> {
        let argv: Vec<String> = std::iter::once("qsub").chain(argv.iter().copied()).map(String::from).collect();
        let inputs = inputs();
        let started = start(&argv, &inputs)?;
        finish(started, script.to_string(), &inputs)
    }

    fn get<'a>(s: &'a Submission, name: &str) -> Option<&'a str> {
        s.attrs.iter().find(|a| a.0 == name).map(|a| a.1.as_str())
    }

    /// Checks a failing command line: stderr text and status.
    fn check_failure(argv: &[&str], script: &str, text: &str, status: u8) {
        let failure = submit(argv, script).unwrap_err();
        assert_eq!((failure.text.as_str(), failure.status), (text, status), "{argv:?}");
    }

    fn usage(lines: &str) -> String {
        format!("{lines}{USAGE}")
    }

    #[test]
    fn usage_matches_openpbs() {
        // qsub_J_pct_and_W.txt of the reference outputs.
        let expected = "qsub: multiple max_run_subjobs values found
usage: qsub [-a date_time] [-A account_string] [-c interval]
\t[-C directive_prefix] [-e path] [-f ] [-h ] [-I [-X]] [-j oe|eo] [-J X-Y[:Z]]
\t[-k keep] [-l resource_list] [-m mail_options] [-M user_list]
\t[-N jobname] [-o path] [-p priority] [-P project] [-q queue] [-r y|n]
\t[-R o|e|oe] [-S path] [-u user_list] [-W otherattributes=value...]
\t[-v variable_list] [-V ] [-z] [script | -- command [arg1 ...]]
       qsub --version
";
        check_failure(&["-h", "-J", "0-9%2", "-W", "max_run_subjobs=3", "--", "/bin/true"], "", expected, 2);
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        for line in [
            &["-a", "1200", "-N", "x", "-N", "y", "-hz", "-lncpus=1", "-l", "mem=1gb", "-W", "a=1", "-Wb=2"][..],
            &["-A", "acct", "-c", "n", "-C", "#X", "-e", "e", "-f", "-I", "-j", "oe", "-J", "1-2", "-k", "oe"],
            &["-m", "abe", "-M", "u@h", "-o", "o", "-p", "-5", "-P", "proj", "-q", "q@s", "-r", "y", "-R", "oe"],
            &["-S", "/bin/sh", "-u", "u", "-v", "A=1", "-V", "-X", "-N", "-h"],
        ] {
            let words: Vec<String> = line.iter().map(|s| s.to_string()).collect();
            let scan = jobopts::getopt("qsub", &words, OPTSTRING, false);
            assert!(scan.errors.is_empty() && scan.operands.is_empty(), "{line:?}");
            let by_clap = Args::try_parse_from(scan.to_clap_args("qsub")).unwrap();
            assert_eq!(Args::from_scan(&scan), by_clap, "{line:?}");
        }
    }

    #[test]
    fn command_form() {
        let s = submit(&["-N", "x", "-l", "walltime=10:00", "--", "/bin/sleep", "100"], "").unwrap();
        assert_eq!(s.attrs[0], Attr::new("Submit_arguments", "-N x -l walltime=10:00 -- /bin/sleep 100"));
        assert_eq!(get(&s, "Job_Name"), Some("x"));
        assert_eq!(get(&s, "Resource_List.walltime"), Some("10:00"));
        assert_eq!(get(&s, "executable"), Some("<jsdl-hpcpa:Executable>/bin/sleep</jsdl-hpcpa:Executable>"));
        assert_eq!(get(&s, "argument_list"), Some("<jsdl-hpcpa:Argument>100</jsdl-hpcpa:Argument>"));
        assert_eq!(s.script, "#!/bin/sh\nexec '/bin/sleep' '100'\n");
        assert_eq!(
            get(&s, "Variable_List"),
            Some(
                "PBS_O_HOME=/home/u,PBS_O_PATH=/bin,PBS_O_SHELL=/bin/bash,PBS_O_INTERACTIVE_AUTH_METHOD=resvport,\
                 PBS_O_INTERACTIVE_ENCRYPT_METHOD=,PBS_O_WORKDIR=/home/u,PBS_O_SYSTEM=Linux"
            )
        );
        assert_eq!(s.destination, None);
        let s = submit(&["--", "/bin/true"], "").unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("STDIN"));
        assert_eq!(get(&s, "argument_list"), None);
        assert_eq!(get(&s, "Hold_Types"), None, "defaults are left to the server");
    }

    #[test]
    fn script_names_and_directives() {
        let script = "#!/bin/sh\n# comment\n#PBS -N fromscript\n#PBS -l walltime=00:03:00 -l ncpus=2\n\necho hi\n#PBS -N ignored\n";
        let argv: Vec<String> = ["qsub", "-N", "cmdline", "-l", "ncpus=4", "job.sh"].map(String::from).to_vec();
        let inputs = inputs();
        let s = finish(start(&argv, &inputs).unwrap(), script.to_string(), &inputs).unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("cmdline"));
        assert_eq!(get(&s, "Resource_List.walltime"), Some("00:03:00"));
        assert_eq!(get(&s, "Resource_List.ncpus"), Some("4"));
        assert_eq!(s.script, script);
        let argv: Vec<String> = ["qsub", "/path/to/job.sh"].map(String::from).to_vec();
        let s = finish(start(&argv, &inputs).unwrap(), "true\n".to_string(), &inputs).unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("job.sh"));
        let s = submit(&[], script).unwrap();
        assert_eq!(get(&s, "Job_Name"), Some("fromscript"));
        assert_eq!(get(&s, "Submit_arguments"), None);
        assert_eq!(get(&submit(&[], "echo\n").unwrap(), "Job_Name"), Some("STDIN"));
        // Directives never override the command line, the first directive -l wins.
        let s = submit(&["-h", "-W", "umask=077"], "#PBS -l ncpus=1\n#PBS -l ncpus=2\n#PBS -W umask=022\n").unwrap();
        // A generic -W attribute of a directive comes later, so it wins (as in OpenPBS).
        assert_eq!(get(&s, "umask"), Some("022"));
        assert_eq!(get(&s, "Resource_List.ncpus"), Some("1"));
        assert_eq!(get(&s, "Hold_Types"), Some("u"));
        // Another prefix, or none at all.
        assert_eq!(get(&submit(&["-C", "#X"], "#X -N other\n").unwrap(), "Job_Name"), Some("other"));
        assert_eq!(get(&submit(&["-C", ""], "#PBS -N other\n").unwrap(), "Job_Name"), Some("STDIN"));
    }

    #[test]
    fn directive_errors() {
        check_failure(&[], "#PBS -r x\n", "qsub: illegal -r value\nqsub: directive error: -r x \n", 1);
        check_failure(&[], "#PBS -Z\n", "qsub: invalid option -- 'Z'\nqsub: directive error: -Z \n", 1);
        check_failure(&[], "#PBS -N a extra\n", "qsub: directive error: -N a extra \n", 1);
        check_failure(&[], "#PBS -N \"a\n", "qsub: unmatched \0\n", 1);
        check_failure(
            &["-J", "1-5%2"],
            "#PBS -W max_run_subjobs=3\n",
            &format!("{MULTIPLE_MAX_RUN}\nqsub: directive error: -W max_run_subjobs=3 \n"),
            1,
        );
    }

    #[test]
    fn arrays() {
        let s = submit(&["-h", "-J", "0-9%2", "--", "/bin/true"], "").unwrap();
        assert_eq!(get(&s, "array_indices_submitted"), Some("0-9"));
        assert_eq!(get(&s, "max_run_subjobs"), Some("2"));
        assert_eq!(get(&s, "Hold_Types"), Some("u"));
        check_failure(
            &["-h", "-J", "0-9%2", "-W", "max_run_subjobs=3", "--", "/bin/true"],
            "",
            &usage("qsub: multiple max_run_subjobs values found\n"),
            2,
        );
        check_failure(&["-J", "5", "--", "/bin/true"], "", &usage("qsub: illegal -J value\n"), 2);
        check_failure(&["-r", "n", "-J", "1-3", "--", "/bin/true"], "", &usage(&format!("{NO_RERUN_ARRAY}\n")), 2);
        check_failure(&["-J", "1-3", "-I"], "", &usage(&format!("{INTER_ARRAY}\n")), 2);
        let s = submit(&["-W", "max_run_subjobs=2", "--", "/bin/true"], "").unwrap();
        assert_eq!(get(&s, "max_run_subjobs"), Some("2"), "the server refuses it on a non-array job");
        check_failure(
            &["-h", "-J", "0-9", "-W", "max_run_subjobs=abc", "--", "/bin/true"],
            "",
            "qsub: Attribute has to be set on an array job\n",
            166,
        );
        check_failure(
            &["-m", "j", "--", "/bin/true"],
            "",
            "qsub: mail option 'j' can not be used without array job\n",
            1,
        );
        assert_eq!(
            get(&submit(&["-m", "abej", "-J", "1-2", "--", "/bin/true"], "").unwrap(), "Mail_Points"),
            Some("abej")
        );
    }

    #[test]
    fn option_errors() {
        let cases: &[(&[&str], &str, u8)] = &[
            (&["-l", "=1", "--", "/bin/true"], "qsub: illegal -l value\n", 2),
            (&["-l", "a=\"x", "--", "/bin/true"], "qsub: illegal -l value\n no closing quote:\na=\"x\n    ^\n", 2),
            (&["-j", "x", "--", "/bin/true"], "qsub: illegal -j value\n", 2),
            (&["-a", "tomorrow", "--", "/bin/true"], "qsub: illegal -a value\n", 2),
            (&["-p", "5000", "--", "/bin/true"], "qsub: illegal -p value\n", 2),
            (&["-c", "u", "--", "/bin/true"], "qsub: illegal -c value\n", 2),
            (&["-r", "maybe", "--", "/bin/true"], "qsub: illegal -r value\n", 2),
            (&["-k", "on", "--", "/bin/true"], "qsub: illegal -k value\n", 2),
            (&["-N", "a b", "--", "/bin/true"], "qsub: illegal -N value\n", 2),
            (&["-W", "depend=after:", "--", "/bin/true"], "qsub: illegal -W value\n", 2),
            (&["-W", "", "--", "/bin/true"], "qsub: illegal -W value\n", 2),
            (&["-W", "nokey", "--", "/bin/true"], "qsub: illegal -W value\n", 2),
            (&["-S", "bash", "--", "/bin/true"], "qsub: illegal -S value\n", 2),
            (&["-Z", "--", "/bin/true"], "qsub: invalid option -- 'Z'\n", 2),
            (&["--"], "", 2),
            (&["job.sh", "-N", "x"], "", 2),
            (&["a.sh", "b.sh"], "", 2),
            (&["-N"], "qsub: option requires an argument -- 'N'\n", 2),
        ];
        for (argv, lines, status) in cases {
            check_failure(argv, "", &usage(lines), *status);
        }
        check_failure(&["-N", &"x".repeat(237), "--", "/bin/true"], "", "qsub: Job name is too long \n", 2);
        check_failure(&["-W", "nosuch=1", "--", "/bin/true"], "", "qsub: Undefined attribute \n", 154);
        check_failure(&["-q", "a#b", "--", "/bin/true"], "", "qsub: illegally formed destination: a#b\n", 2);
        check_failure(&["-v", "UNSET", "--", "/bin/true"], "", "qsub: cannot send environment with the job\n", 1);
        check_failure(&["-I"], "", "qsub: interactive jobs are not supported\n", 1);
        check_failure(&["-X", "--", "/bin/true"], "", &usage("qsub: DISPLAY not set\n"), 2);
    }

    #[test]
    fn values_sent() {
        let s = submit(
            &[
                "-o",
                "out",
                "-e",
                "/tmp/err",
                "-W",
                "depend=afterok:12",
                "-q",
                "workq",
                "-a",
                "1200",
                "-p",
                " 5",
                "--",
                "/bin/true",
            ],
            "",
        )
        .unwrap();
        assert_eq!(get(&s, "Output_Path"), Some("h:/home/u/out"));
        assert_eq!(get(&s, "Error_Path"), Some("h:/tmp/err"));
        assert_eq!(get(&s, "depend"), Some("afterok:12.srv"));
        assert_eq!(get(&s, "Priority"), Some("5"));
        assert!(get(&s, "Execution_Time").is_some_and(|t| t.parse::<i64>().is_ok()));
        assert_eq!(s.destination.as_deref(), Some("workq"));
        let s = submit(&["-v", "A=1,FOO", "-V", "-z", "-N", "one", "-N", "two", "--", "/bin/true"], "").unwrap();
        assert!(
            get(&s, "Variable_List").is_some_and(|v| v.ends_with("PBS_O_SYSTEM=Linux,A=1,FOO=bar,HOME=/home/u,X=1"))
        );
        assert_eq!(get(&s, "Job_Name"), Some("two"));
        assert!(s.quiet);
        let names: Vec<&str> = s.attrs.iter().map(|a| a.0.as_str()).collect();
        assert_eq!(names.iter().filter(|n| **n == "Job_Name").count(), 1);
    }

    #[test]
    fn job_sets() {
        let s =
            submit(&["-L", "select=1:ncpus=4,walltime=10", "-L", "select=2:ncpus=2", "-l", "walltime=5", "x.sh"], "")
                .unwrap();
        let specs: Vec<Vec<(String, String)>> = vec![
            vec![("select".into(), "1:ncpus=4".into()), ("walltime".into(), "10".into())],
            vec![("select".into(), "2:ncpus=2".into())],
        ];
        assert_eq!(s.specs, specs);
        // Each job: the -l resources, the list's winning, and its job_set.
        let first = spec_attrs(&s.attrs, &s.specs[0], "new");
        let value = |attrs: &[Attr], name: &str| attrs.iter().rev().find(|a| a.0 == name).map(|a| a.1.clone());
        assert_eq!(value(&first, "Resource_List.walltime").as_deref(), Some("10"));
        assert_eq!(value(&first, "job_set").as_deref(), Some("new"));
        let second = spec_attrs(&s.attrs, &s.specs[1], "12.srv");
        assert_eq!(value(&second, "Resource_List.walltime").as_deref(), Some("5"));
        assert_eq!(value(&second, "Resource_List.select").as_deref(), Some("2:ncpus=2"));
        assert_eq!(value(&second, "job_set").as_deref(), Some("12.srv"));
        assert_eq!(first.iter().filter(|a| a.0 == "Resource_List.walltime").count(), 1);
        // Directives: each line adds a list; the command line's replace them.
        // A directive's words are read as a shell reads them: quotes inside a list are
        // quoted again, as on the command line.
        let script = "#PBS -L 'select=1:ncpus=16,nfilter=\"a and b\"'\n#PBS -L select=2:ncpus=8\necho\n";
        let s = submit(&["x.sh"], script).unwrap();
        assert_eq!(s.specs.len(), 2);
        assert_eq!(s.specs[0][1], ("nfilter".to_string(), "a and b".to_string()));
        let s = submit(&["-L", "select=1:ncpus=1", "x.sh"], script).unwrap();
        assert_eq!(s.specs, vec![vec![("select".to_string(), "1:ncpus=1".to_string())]]);
        // job_set with -L, on the line or in a directive; a bare id gets the server.
        let both = "qsub: -Wjob_set option can not be used with -L option\n";
        check_failure(&["-L", "select=1", "-W", "job_set=12", "x.sh"], "", both, 2);
        check_failure(&["-L", "select=1", "x.sh"], "#PBS -W job_set=12\n", both, 2);
        let s = submit(&["-W", "job_set=12", "x.sh"], "").unwrap();
        assert_eq!(get(&s, "job_set"), Some("12.srv"));
        assert!(s.specs.is_empty());
    }
}
