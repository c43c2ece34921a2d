//! qstat's command line. clap parses it; the options are then replayed in command-line order
//! the way OpenPBS's getopt loop applies them, because later options undo earlier ones
//! (`-a` after `-n` drops the exec_host attribute from the request) and some conflicts
//! depend on the order (`-a -Q` is refused, `-Q -a` is not).

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser};

use crate::jobs::SizeUnit;

/// OpenPBS's usage text, printed to stderr on any command-line error (exit 2).
pub(crate) const USAGE: &str = "usage: \n\
qstat [-f] [-J] [-p] [-t] [-x] [-E] [-F format | -w] [-D delim] [ job_identifier... | destination... ]\n\
qstat [-a|-i|-r|-H|-T] [-J] [-t] [-u user] [-n] [-s] [-G|-M] [-1] [-w]\n\
\t[ job_identifier... | destination... ]\n\
qstat -Q [-f] [-F format] [-D delim] [ destination... ]\n\
qstat -q [-G|-M] [ destination... ]\n\
qstat -B [-f] [-F format] [-D delim] [ server_name... ]\n\
qstat --version\n";

const CONFLICT: &str = "qstat: conflicting options.\n";

/// What the user typed. Only the flags' presence is read from here; their order comes from
/// the argument indices.
#[derive(Parser, Debug, Default)]
#[command(name = "qstat", disable_help_flag = true, disable_version_flag = true, args_override_self = true)]
struct Args {
    /// Alternate display of all jobs.
    #[arg(short = 'a', action = ArgAction::SetTrue)]
    a: bool,
    /// Jobs not running (exiting, held, queued, transit, waiting).
    #[arg(short = 'i', action = ArgAction::SetTrue)]
    i: bool,
    /// Running or suspended jobs.
    #[arg(short = 'r', action = ArgAction::SetTrue)]
    r: bool,
    /// Finished and moved jobs only.
    #[arg(short = 'H', action = ArgAction::SetTrue)]
    big_h: bool,
    /// Estimated start times.
    #[arg(short = 'T', action = ArgAction::SetTrue)]
    big_t: bool,
    /// Show subjobs.
    #[arg(short = 't', action = ArgAction::SetTrue)]
    t: bool,
    /// Include finished jobs.
    #[arg(short = 'x', action = ArgAction::SetTrue)]
    x: bool,
    /// Jobs of these users.
    #[arg(short = 'u', action = ArgAction::Append, allow_hyphen_values = true)]
    u: Vec<String>,
    /// exec_host list.
    #[arg(short = 'n', action = ArgAction::SetTrue)]
    n: bool,
    /// Percentage done instead of cput.
    #[arg(short = 'p', action = ArgAction::SetTrue)]
    p: bool,
    /// Comments.
    #[arg(short = 's', action = ArgAction::SetTrue)]
    s: bool,
    /// Alternate queue display.
    #[arg(short = 'q', action = ArgAction::SetTrue)]
    q: bool,
    /// Sizes in gigabytes.
    #[arg(short = 'G', action = ArgAction::SetTrue)]
    big_g: bool,
    /// Job arrays only.
    #[arg(short = 'J', action = ArgAction::SetTrue)]
    big_j: bool,
    /// Sizes in megawords.
    #[arg(short = 'M', action = ArgAction::SetTrue)]
    big_m: bool,
    /// One line per job.
    #[arg(short = '1', action = ArgAction::SetTrue)]
    one: bool,
    /// Wide columns.
    #[arg(short = 'w', action = ArgAction::SetTrue)]
    w: bool,
    /// Full display.
    #[arg(short = 'f', action = ArgAction::SetTrue)]
    f: bool,
    /// Server status.
    #[arg(short = 'B', action = ArgAction::SetTrue)]
    big_b: bool,
    /// Queue status.
    #[arg(short = 'Q', action = ArgAction::SetTrue)]
    big_q: bool,
    /// Sort job ids.
    #[arg(short = 'E', action = ArgAction::SetTrue)]
    big_e: bool,
    /// DSV delimiter.
    #[arg(short = 'D', action = ArgAction::Append, allow_hyphen_values = true)]
    big_d: Vec<String>,
    /// Output format: default, dsv or json.
    #[arg(short = 'F', action = ArgAction::Append, allow_hyphen_values = true)]
    big_f: Vec<String>,
    /// Old-style option letters (`-W a`, `-W u user`...).
    #[arg(short = 'W', action = ArgAction::Append, allow_hyphen_values = true)]
    big_w: Vec<String>,
    #[arg(long = "version", action = ArgAction::SetTrue)]
    version: bool,
    operands: Vec<String>,
}

/// What is being listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    #[default]
    Jobs,
    Queues,
    Servers,
}

/// `-F`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Format {
    #[default]
    Default,
    Dsv,
    Json,
}

/// A job-state criterion of `-i`, `-r`, `-H`.
pub(crate) type States = &'static str;

/// The options once replayed: everything the rest of qstat needs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    pub mode: Mode,
    pub format: Format,
    pub delimiter: String,
    /// `-f` still in force (`-n` and `-s` cancel it).
    pub full: bool,
    pub wide: bool,
    pub alt: Alt,
    /// `-p`.
    pub percent: bool,
    /// `-t`.
    pub subjobs: bool,
    /// `-x` (or `-H`).
    pub history: bool,
    /// `-E`.
    pub sort_ids: bool,
    /// States a listed job must be in (each set must hold).
    pub states: Vec<States>,
    /// `-u` lists; a job must match each.
    pub users: Vec<String>,
    /// `-J`.
    pub arrays_only: bool,
    /// Attributes to ask for; `None` means all.
    pub attrs: Option<Vec<&'static str>>,
    pub operands: Vec<String>,
}

/// Alternate-display options seen (OpenPBS's `alt_opt` bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Alt {
    pub a: bool,
    pub i: bool,
    pub r: bool,
    pub u: bool,
    pub n: bool,
    pub s: bool,
    pub h: bool,
    pub q: bool,
    pub megawords: bool,
    pub gigabytes: bool,
    pub one_line: bool,
    pub w: bool,
    pub t: bool,
}

impl Alt {
    /// Any bit besides `-w`: the job display is the alternate one.
    pub(crate) fn any_but_wide(self) -> bool {
        Alt { w: false, ..self } != Alt::default()
    }

    fn any(self) -> bool {
        self != Alt::default()
    }

    pub(crate) fn unit(self) -> SizeUnit {
        if self.megawords {
            SizeUnit::MegaWords
        } else if self.gigabytes {
            SizeUnit::GigaBytes
        } else {
            SizeUnit::Auto
        }
    }
}

impl Options {
    /// Whether jobs are shown in the alternate table.
    pub(crate) fn alternate_jobs(&self) -> bool {
        self.alt.any_but_wide() && !(self.wide && self.full)
    }
}

/// How parsing ended when it did not produce options.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `--version`.
    Version,
    /// A command-line error: print this to stderr and exit 2.
    Usage(String),
}

/// The attribute list qstat starts from (`basic_attribs`).
const BASIC: &[&str] = &["Job_Name", "Job_Owner", "resources_used", "job_state", "queue"];
/// The alternate list (`alt_attribs`, which continues with the basic one).
const ALTERNATE: &[&str] =
    &["session_id", "Resource_List", "Job_Name", "Job_Owner", "resources_used", "job_state", "queue"];

/// The attribute request as OpenPBS builds it: a base list plus additions in front.
#[derive(Clone, Debug)]
enum AttrList {
    /// Everything (`-f`).
    All,
    /// `base` (possibly empty) with `added` attributes.
    List { base: &'static [&'static str], added: Vec<&'static str> },
}

impl AttrList {
    fn basic() -> AttrList {
        AttrList::List { base: BASIC, added: Vec::new() }
    }

    fn alternate() -> AttrList {
        AttrList::List { base: ALTERNATE, added: Vec::new() }
    }

    fn is_plain_basic(&self) -> bool {
        matches!(self, AttrList::List { base, added } if std::ptr::eq(*base, BASIC) && added.is_empty())
    }

    fn add(&mut self, name: &'static str) {
        match self {
            AttrList::All => *self = AttrList::List { base: &[], added: vec![name] },
            AttrList::List { added, .. } => added.push(name),
        }
    }

    fn into_request(self) -> Option<Vec<&'static str>> {
        match self {
            AttrList::All => None,
            AttrList::List { base, mut added } => {
                added.reverse();
                added.extend_from_slice(base);
                Some(added)
            }
        }
    }
}

/// One option occurrence, with its value if it takes one.
#[derive(Debug)]
enum Event {
    Flag(char),
    Value(char, String),
}

/// Parses `argv` (without the program name).
pub(crate) fn parse(argv: &[String]) -> Result<Options, Stop> {
    let command = Args::command();
    let matches = match command.try_get_matches_from(std::iter::once("qstat".to_string()).chain(argv.iter().cloned())) {
        Ok(m) => m,
        Err(e) => return Err(Stop::Usage(format!("{}{USAGE}", getopt_message(&e)))),
    };
    let args = Args::from_arg_matches(&matches).map_err(|_| Stop::Usage(USAGE.to_string()))?;
    if args.version {
        return Err(Stop::Version);
    }
    replay(&events(&matches), args.operands)
}

/// What GNU getopt prints before the usage for an unknown option or a missing value.
fn getopt_message(error: &clap::Error) -> String {
    let arg = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let letter = arg.trim_start_matches('-').chars().next().unwrap_or('?');
    match error.kind() {
        ErrorKind::UnknownArgument if !arg.starts_with("--") => format!("qstat: invalid option -- '{letter}'\n"),
        ErrorKind::InvalidValue | ErrorKind::NoEquals => format!("qstat: option requires an argument -- '{letter}'\n"),
        _ => String::new(),
    }
}

/// The options in command-line order.
fn events(matches: &ArgMatches) -> Vec<Event> {
    const FLAGS: &[(&str, char)] = &[
        ("a", 'a'),
        ("i", 'i'),
        ("r", 'r'),
        ("big_h", 'H'),
        ("big_t", 'T'),
        ("t", 't'),
        ("x", 'x'),
        ("n", 'n'),
        ("p", 'p'),
        ("s", 's'),
        ("q", 'q'),
        ("big_g", 'G'),
        ("big_j", 'J'),
        ("big_m", 'M'),
        ("one", '1'),
        ("w", 'w'),
        ("f", 'f'),
        ("big_b", 'B'),
        ("big_q", 'Q'),
        ("big_e", 'E'),
    ];
    const VALUED: &[(&str, char)] = &[("u", 'u'), ("big_d", 'D'), ("big_f", 'F'), ("big_w", 'W')];
    let mut found: Vec<(usize, Event)> = Vec::new();
    for (id, letter) in FLAGS {
        if !matches.get_flag(id) {
            continue;
        }
        if let Some(indices) = matches.indices_of(id) {
            found.extend(indices.map(|i| (i, Event::Flag(*letter))));
        }
    }
    for (id, letter) in VALUED {
        if let (Some(indices), Some(values)) = (matches.indices_of(id), matches.get_many::<String>(id)) {
            found.extend(indices.zip(values).map(|(i, v)| (i, Event::Value(*letter, v.clone()))));
        }
    }
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().map(|(_, e)| e).collect()
}

/// Applies the options in order as OpenPBS does, then checks the combinations.
fn replay(events: &[Event], operands: Vec<String>) -> Result<Options, Stop> {
    let mut o = Options { delimiter: "|".into(), operands, ..Options::default() };
    let mut attrs = AttrList::basic();
    let mut errors = String::new();
    let mut bad = false;
    let (mut seen_b, mut seen_q) = (false, false);
    let alternate = |attrs: &mut AttrList| *attrs = AttrList::alternate();
    for event in events {
        match event {
            Event::Flag('a') => {
                o.alt.a = true;
                alternate(&mut attrs);
            }
            Event::Flag('T') => {
                o.alt.t = true;
                alternate(&mut attrs);
                attrs.add("estimated.start_time");
                attrs.add("stime");
            }
            Event::Flag('i') => {
                o.alt.i = true;
                alternate(&mut attrs);
                o.states.push("EHQTW");
            }
            Event::Flag('r') => {
                o.alt.r = true;
                alternate(&mut attrs);
                o.states.push("RS");
            }
            Event::Flag('H') => {
                o.alt.h = true;
                alternate(&mut attrs);
                o.history = true;
                o.states.push("MFX");
            }
            Event::Flag('t') => o.subjobs = true,
            Event::Flag('x') => o.history = true,
            Event::Value('u', users) => {
                o.alt.u = true;
                alternate(&mut attrs);
                o.users.push(users.clone());
            }
            Event::Flag(letter @ ('n' | 's')) => {
                if *letter == 'n' {
                    o.alt.n = true;
                } else {
                    o.alt.s = true;
                }
                if attrs.is_plain_basic() || o.full {
                    alternate(&mut attrs);
                }
                attrs.add(if *letter == 'n' { "exec_host" } else { "comment" });
                o.full = false;
            }
            Event::Flag('p') => {
                o.percent = true;
                attrs.add("Resource_List");
                attrs.add("array_state_count");
            }
            Event::Flag('q') => {
                o.alt.q = true;
                o.mode = Mode::Queues;
            }
            Event::Flag('G') => {
                o.alt.gigabytes = true;
                alternate(&mut attrs);
            }
            Event::Flag('J') => o.arrays_only = true,
            Event::Flag('M') => {
                o.alt.megawords = true;
                alternate(&mut attrs);
            }
            Event::Flag('1') => o.alt.one_line = true,
            Event::Flag('w') => {
                o.alt.w = true;
                o.wide = true;
            }
            Event::Flag('f') => {
                o.full = true;
                attrs = AttrList::All;
            }
            Event::Flag('B') => {
                seen_b = true;
                o.mode = Mode::Servers;
                if seen_q || (o.alt.any() && !o.wide) {
                    errors.push_str(CONFLICT);
                    bad = true;
                }
            }
            Event::Flag('Q') => {
                seen_q = true;
                o.mode = Mode::Queues;
                if seen_b || (o.alt.any() && !o.wide) {
                    errors.push_str(CONFLICT);
                    bad = true;
                }
            }
            Event::Flag('E') => o.sort_ids = true,
            Event::Value('D', delimiter) => {
                if o.format == Format::Dsv {
                    o.delimiter = delimiter.clone();
                } else {
                    bad = true;
                }
            }
            Event::Value('F', name) => match name.to_ascii_lowercase().as_str() {
                "default" => o.format = Format::Default,
                "dsv" => o.format = Format::Dsv,
                "json" => o.format = Format::Json,
                _ => bad = true,
            },
            Event::Value('W', letters) => bad |= old_style(&mut o, letters),
            _ => bad = true,
        }
    }
    let exclusive = [o.alt.a, o.alt.i, o.alt.r, o.alt.q, o.alt.h].iter().filter(|b| **b).count();
    if exclusive > 1 {
        errors.push_str(CONFLICT);
        bad = true;
    }
    if o.alt.megawords && o.alt.gigabytes {
        errors.push_str(CONFLICT);
        bad = true;
    }
    if !(o.format == Format::Default || o.full) {
        errors.push_str(CONFLICT);
        bad = true;
    }
    if o.alt.q && o.full {
        errors.push_str(CONFLICT);
        bad = true;
    }
    if o.alt.one_line && !(o.alt.n || o.alt.s) {
        errors.push_str(CONFLICT);
        bad = true;
    }
    if o.wide && o.format != Format::Default {
        errors.push_str("qstat: option w cannot be used with -F\n");
        bad = true;
    }
    if bad {
        errors.push_str(USAGE);
        return Err(Stop::Usage(errors));
    }
    o.attrs = attrs.into_request();
    Ok(o)
}

/// `-W` letters (an old spelling of the alternate options); returns whether one was bad.
fn old_style(o: &mut Options, letters: &str) -> bool {
    for (at, c) in letters.char_indices() {
        match c {
            'a' => o.alt.a = true,
            'i' => {
                o.alt.i = true;
                o.states.push("EHQTW");
            }
            'r' => {
                o.alt.r = true;
                o.states.push("RS");
            }
            'H' => {
                o.alt.h = true;
                o.history = true;
                o.states.push("MF");
            }
            'u' => {
                o.alt.u = true;
                o.users.push(letters[at + 1..].trim_start_matches(' ').to_string());
                return false;
            }
            'n' => o.alt.n = true,
            's' => o.alt.s = true,
            'q' => {
                o.alt.q = true;
                o.mode = Mode::Queues;
            }
            'G' => o.alt.gigabytes = true,
            'M' => o.alt.megawords = true,
            '1' => o.alt.one_line = true,
            ' ' => {}
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Options, Stop> {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&argv)
    }

    fn usage_error(line: &str) -> String {
        match parse_str(line) {
            Err(Stop::Usage(text)) => text,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn attribute_requests_follow_option_order() {
        let check = |line: &str, expected: Option<&[&str]>| {
            let o = parse_str(line).unwrap_or_else(|e| panic!("{line}: {e:?}"));
            assert_eq!(o.attrs.as_deref(), expected, "{line}");
        };
        check("", Some(BASIC));
        check("-f", None);
        check("-a", Some(ALTERNATE));
        let mut with_host = vec!["exec_host"];
        with_host.extend_from_slice(ALTERNATE);
        check("-a -n", Some(&with_host));
        // -a after -n starts the list again, dropping exec_host (OpenPBS's documented quirk).
        check("-n -a", Some(ALTERNATE));
        check("-f -p", Some(&["array_state_count", "Resource_List"]));
        let mut percent = vec!["array_state_count", "Resource_List"];
        percent.extend_from_slice(BASIC);
        check("-p", Some(&percent));
    }

    #[test]
    fn displays_chosen_like_openpbs() {
        let o = parse_str("-f -n").unwrap();
        assert!(!o.full && o.alternate_jobs());
        let o = parse_str("-n -f").unwrap();
        assert!(o.full && o.alternate_jobs());
        let o = parse_str("-f -w").unwrap();
        assert!(o.full && !o.alternate_jobs());
        let o = parse_str("-a -w -f").unwrap();
        assert!(!o.alternate_jobs());
        let o = parse_str("-answ1").unwrap();
        assert!(o.alt.a && o.alt.n && o.alt.s && o.wide && o.alt.one_line);
        let o = parse_str("-f -F dsv -D ,").unwrap();
        assert_eq!((o.format, o.delimiter.as_str()), (Format::Dsv, ","));
        let o = parse_str("-f -F JSON").unwrap();
        assert_eq!(o.format, Format::Json);
        let o = parse_str("-Q -a").unwrap();
        assert_eq!(o.mode, Mode::Queues);
    }

    #[test]
    fn conflicts_and_usage() {
        assert_eq!(usage_error("-F json"), format!("{CONFLICT}{USAGE}"));
        assert_eq!(usage_error("-f -F json -w"), format!("qstat: option w cannot be used with -F\n{USAGE}"));
        assert_eq!(usage_error("-a -i"), format!("{CONFLICT}{USAGE}"));
        assert_eq!(usage_error("-a -Q"), format!("{CONFLICT}{USAGE}"));
        assert_eq!(usage_error("-Q -B"), format!("{CONFLICT}{USAGE}"));
        assert_eq!(usage_error("-1"), format!("{CONFLICT}{USAGE}"));
        assert_eq!(usage_error("-q -f"), format!("{CONFLICT}{USAGE}"));
        assert_eq!(usage_error("-G -M"), format!("{CONFLICT}{USAGE}"));
        assert_eq!(usage_error("-D , -f -F dsv"), USAGE);
        assert_eq!(usage_error("-f -F xml"), USAGE);
        assert_eq!(usage_error("-z"), format!("qstat: invalid option -- 'z'\n{USAGE}"));
        assert_eq!(usage_error("-u"), format!("qstat: option requires an argument -- 'u'\n{USAGE}"));
        assert_eq!(parse_str("--version").err(), Some(Stop::Version));
    }

    #[test]
    fn usage_text_is_openpbs() {
        assert!(USAGE.starts_with("usage: \nqstat [-f] [-J] [-p] [-t] [-x] [-E] [-F format | -w]"));
        assert!(USAGE.ends_with("[ server_name... ]\nqstat --version\n"));
    }
}
