//! `tracejob`: every line about a job in the server, scheduler, mom and accounting logs of
//! the last days, merged in time order, in OpenPBS's layout and with its options, usage and
//! exit statuses.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pbs_cli::jobopts;

#[path = "tracejob/merge.rs"]
mod merge;

use merge::{Entry, Source};

/// getopt(3) option string of OpenPBS's tracejob.
const OPTSTRING: &str = "zvamslw:p:n:f:c:";

/// Messages seen this many times are printed once (`EXCESSIVE_COUNT`).
const EXCESSIVE_COUNT: usize = 15;

/// The options, as clap declares them; filled from the getopt scan.
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "tracejob", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Toggles leaving out messages repeated `-c` times or more (on by default).
    #[arg(short = 'z', action = clap::ArgAction::Count)]
    toggle_excessive: u8,
    /// Says which log files could not be opened.
    #[arg(short = 'v')]
    verbose: bool,
    /// Leaves out the accounting log.
    #[arg(short = 'a')]
    no_accounting: bool,
    /// Leaves out the mom's log.
    #[arg(short = 'm')]
    no_mom: bool,
    /// Leaves out the server's log.
    #[arg(short = 's')]
    no_server: bool,
    /// Leaves out the scheduler's log.
    #[arg(short = 'l')]
    no_sched: bool,
    /// Columns to wrap messages at (default: the terminal's, none when not a terminal).
    #[arg(short = 'w')]
    wrap: Option<String>,
    /// `PBS_HOME` to read the logs under.
    #[arg(short = 'p')]
    path: Option<String>,
    /// Days to look back, today included (default 1).
    #[arg(short = 'n')]
    days: Option<String>,
    /// Event types to leave out.
    #[arg(short = 'f')]
    filters: Vec<String>,
    /// How many times a message must repeat to be left out.
    #[arg(short = 'c')]
    count: Option<String>,
    /// Job ids.
    jobs: Vec<String>,
}

impl Args {
    fn from_scan(scan: &jobopts::Scan) -> Args {
        let last = |c| scan.values(c).pop();
        Args {
            toggle_excessive: scan.options.iter().filter(|o| o.letter == 'z').count().min(255) as u8,
            verbose: scan.has('v'),
            no_accounting: scan.has('a'),
            no_mom: scan.has('m'),
            no_server: scan.has('s'),
            no_sched: scan.has('l'),
            wrap: last('w'),
            path: last('p'),
            days: last('n'),
            filters: scan.values('f'),
            count: last('c'),
            jobs: scan.operands.clone(),
        }
    }
}

/// What the command line asks for, checked.
#[derive(Debug, PartialEq, Eq)]
struct Trace {
    excessive: bool,
    count: usize,
    verbose: bool,
    sources: Vec<Source>,
    wrap: Option<usize>,
    path: Option<PathBuf>,
    days: u32,
    filter: i64,
    jobs: Vec<String>,
}

/// OpenPBS's event names for `-f`, with their masks.
const EVENTS: [(&str, i64); 13] = [
    ("error", 0x0001),
    ("system", 0x0002),
    ("admin", 0x0004),
    ("job", 0x0008),
    ("job_usage", 0x0010),
    ("security", 0x0020),
    ("sched", 0x0040),
    ("debug", 0x0080),
    ("debug2", 0x0100),
    ("resv", 0x0200),
    ("debug3", 0x0400),
    ("debug4", 0x0800),
    ("force", 0x8000),
];

/// `strtol(text, &end, base)` that must read all of `text`.
fn whole_number(text: &str, radix: u32) -> Option<i64> {
    let trimmed = text.trim_start();
    let digits = trimmed.strip_prefix('+').unwrap_or(trimmed);
    if digits.is_empty() {
        return Some(0).filter(|_| text.is_empty());
    }
    i64::from_str_radix(digits, radix).ok()
}

/// Checks the command line; `Err` means print the usage (after getopt's messages).
fn parse(args: Args, getopt_errors: bool) -> Result<Trace, ()> {
    let mut filter = 0i64;
    for name in &args.filters {
        if let Some((_, mask)) = EVENTS.iter().find(|(n, _)| n == name) {
            filter |= mask;
        } else if name.starts_with(|c: char| c.is_ascii_digit()) {
            // A number sets the mask outright, read in hex as OpenPBS reads it.
            filter = whole_number(name, 16).ok_or(())?;
        } else {
            return Err(());
        }
    }
    let number = |value: &Option<String>| value.as_deref().map(|v| whole_number(v, 10).ok_or(())).transpose();
    let days = number(&args.days)?.unwrap_or(1);
    let count = number(&args.count)?.unwrap_or(EXCESSIVE_COUNT as i64);
    let wrap = number(&args.wrap)?;
    if getopt_errors || args.jobs.is_empty() {
        return Err(());
    }
    let skip = [args.no_accounting, args.no_server, args.no_mom, args.no_sched];
    let sources = Source::ALL.into_iter().zip(skip).filter(|(_, skip)| !skip).map(|(s, _)| s).collect();
    Ok(Trace {
        excessive: args.toggle_excessive % 2 == 0,
        count: usize::try_from(count).unwrap_or(0),
        verbose: args.verbose,
        sources,
        // A negative width is what OpenPBS takes as "ask the terminal".
        wrap: wrap.filter(|w| *w >= 0).map(|w| w as usize),
        path: args.path.map(PathBuf::from),
        days: u32::try_from(days).unwrap_or(0),
        filter,
        jobs: args.jobs,
    })
}

fn usage(prog: &str, home: &Path) -> String {
    format!(
        "USAGE: {prog} [-a|s|l|m|v] [-w size] [-p path] [-n days] [-f filter_type] job_identifier...
   -p : path to PBS_HOME
   -w : number of columns of your terminal
   -n : number of days in the past to look for job(s) [default 1]
   -f : filter out types of log entries, multiple -f's can be specified
        error, system, admin, job, job_usage, security, sched, debug, 
        debug2, resv, debug3, debug4, force or absolute numberic equiv
   -z : toggle filtering excessive messages
   -c : what message count is considered excessive
   -a : don't use accounting log files
   -s : don't use server log files
   -l : don't use scheduler log files
   -m : don't use mom log files
   -v : verbose mode - show more error messages

       {prog} --version
   --version : display version only

default prefix path = {}
filter_excessive: ON
",
        home.display()
    )
}

/// The terminal's width, 0 when stdout is not a terminal.
fn terminal_columns() -> usize {
    let mut size = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes one `winsize` to the pointer, which points to one.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } != -1;
    if ok { usize::from(size.ws_col) } else { 0 }
}

/// Local `MM/DD/YYYY HH:MM:SS` as seconds since the epoch (`mktime`).
fn local_time(text: &str) -> Option<i64> {
    use chrono::TimeZone;
    let naive = chrono::NaiveDateTime::parse_from_str(text.trim(), "%m/%d/%Y %H:%M:%S").ok()?;
    chrono::Local.from_local_datetime(&naive).earliest().map(|t| t.timestamp())
}

/// Where each source's logs are: under `-p`, else `PBS_HOME` (the mom's under
/// `PBS_MOM_HOME` when pbs.conf sets it, as OpenPBS).
fn source_dir(trace: &Trace, home: &Path, mom_home: Option<&Path>, source: Source) -> PathBuf {
    let base = match (source, mom_home) {
        (Source::Mom, Some(mom)) => mom,
        _ => trace.path.as_deref().unwrap_or(home),
    };
    base.join(source.dir())
}

/// Reads one file's lines about `job`.
fn read_file(path: &Path, source: Source, job: &str, out: &mut Vec<Entry>) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    for (n, line) in text.lines().enumerate() {
        if let Some(entry) = merge::parse_line(line, source, n + 1, local_time) {
            if merge::is_job(job, &entry.name) {
                out.push(entry);
            }
        }
    }
    Ok(())
}

/// Whether an id may name a job: digits, an optional array index, an optional server.
fn well_formed(id: &str) -> bool {
    let seq_part = id.split('.').next().unwrap_or("");
    let (digits, rest) = seq_part.split_at(seq_part.find('[').unwrap_or(seq_part.len()));
    let index_ok = rest.is_empty()
        || rest
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .is_some_and(|i| i.chars().all(|c| c.is_ascii_digit()));
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) && index_ok && !id.ends_with('.')
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    pbs_cli::reset_sigpipe();
    let argv = pbs_cli::argv();
    if pbs_cli::version_only(&argv) {
        pbs_cli::print_version();
        return ExitCode::SUCCESS;
    }
    let conf = match pbs_cli::load_conf() {
        Ok(conf) => conf,
        Err(e) => {
            eprintln!("tracejob: {e}");
            return ExitCode::from(2);
        }
    };
    let prog = argv.first().map(|p| p.rsplit('/').next().unwrap_or(p)).unwrap_or("tracejob").to_string();
    let scan = jobopts::getopt(&prog, argv.get(1..).unwrap_or_default(), OPTSTRING, true);
    for line in &scan.errors {
        eprintln!("{line}");
    }
    let trace = match parse(Args::from_scan(&scan), !scan.errors.is_empty()) {
        Ok(trace) => trace,
        Err(()) => {
            print!("{}", usage(&prog, &conf.home));
            return ExitCode::from(1);
        }
    };
    let server = pbs_cli::server_name(&conf);
    let mom_home = conf.raw.get("PBS_MOM_HOME").map(PathBuf::from);
    let columns = trace.wrap.unwrap_or_else(terminal_columns);
    let now = chrono::Local::now();
    let mut failed = false;
    let readable: Vec<Source> = trace
        .sources
        .iter()
        .copied()
        .filter(|s| std::fs::read_dir(source_dir(&trace, &conf.home, mom_home.as_deref(), *s)).is_ok())
        .collect();
    if readable.is_empty() && !trace.sources.is_empty() {
        let home = trace.path.as_deref().unwrap_or(&conf.home);
        eprintln!("tracejob: cannot read any log directory under {}", home.display());
        return ExitCode::from(1);
    }
    let mut stdout = String::new();
    for job in &trace.jobs {
        if !well_formed(job) {
            eprintln!("tracejob: illegally formed job identifier: {job}");
            failed = true;
            continue;
        }
        let mut entries = Vec::new();
        for back in 0..trace.days {
            let day = (now - chrono::Duration::days(i64::from(back))).format("%Y%m%d").to_string();
            for source in &trace.sources {
                let file = source_dir(&trace, &conf.home, mom_home.as_deref(), *source).join(&day);
                if let Err(e) = read_file(&file, *source, job, &mut entries) {
                    if trace.verbose {
                        // As perror(3) words it.
                        let reason = match e.raw_os_error() {
                            Some(errno) => nix::errno::Errno::from_raw(errno).desc().to_string(),
                            None => e.to_string(),
                        };
                        eprintln!("{}: {reason}", file.display());
                    }
                }
            }
        }
        if entries.is_empty() {
            let full = if job.contains('.') { job.clone() } else { format!("{job}.{server}") };
            let plural = if trace.days == 1 { "" } else { "s" };
            eprint!("\ntracejob: Couldn't find Job Id {full} in logs of past {} day{plural}\n\n", trace.days);
            failed = true;
            continue;
        }
        if trace.excessive {
            merge::filter_excess(&mut entries, trace.count);
        }
        merge::sort_by_date(&mut entries);
        let high_res = entries.iter().any(|e| e.micros.is_some());
        stdout.push_str(&format!("\nJob: {}\n\n", entries[0].name));
        for entry in entries.iter().filter(|e| !e.hidden && trace.filter & merge::event_mask(e) == 0) {
            stdout.push_str(&merge::format_entry(entry, high_res, columns));
        }
        print!("{stdout}");
        stdout.clear();
    }
    if failed { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(argv: &[&str]) -> Result<Trace, ()> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let scan = jobopts::getopt("tracejob", &argv, OPTSTRING, true);
        parse(Args::from_scan(&scan), !scan.errors.is_empty())
    }

    #[test]
    fn options_as_openpbs_reads_them() {
        let t = trace(&["-n", "2", "-s", "-l", "-m", "24907.vm"]).unwrap();
        assert_eq!((t.days, t.sources.as_slice(), t.excessive), (2, &[Source::Accounting][..], true));
        assert!(!trace(&["-z", "1"]).unwrap().excessive);
        assert!(trace(&["-z", "-z", "1"]).unwrap().excessive);
        assert_eq!(trace(&["-f", "job", "-f", "sched", "1"]).unwrap().filter, 0x48);
        assert_eq!(trace(&["-f", "job", "-f", "10", "1"]).unwrap().filter, 0x10);
        for bad in [&["1", "-n", "x"][..], &["-f", "nonsense", "1"], &["-q", "1"], &[], &["-n", "1"]] {
            assert_eq!(trace(bad), Err(()), "{bad:?}");
        }
    }

    #[test]
    fn job_ids_that_cannot_name_a_job_are_told_apart() {
        for id in ["1", "24907.vm", "24911[]", "24911[3].vm"] {
            assert!(well_formed(id), "{id}");
        }
        for id in ["", "abc", "1x.vm", "12[a]", "12.", ".vm"] {
            assert!(!well_formed(id), "{id}");
        }
    }
}
