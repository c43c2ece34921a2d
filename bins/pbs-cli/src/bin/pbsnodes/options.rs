//! pbsnodes's command line: OpenPBS's option letters replayed in command-line order, since
//! what an option means depends on the ones before it (`-C` then `-o` keeps the comment and
//! marks offline; `-l` after `-a` is a usage error; `-v` after `-l` is one too).

use pbs_cli::jobopts;

/// getopt(3) option string of OpenPBS's pbsnodes.
pub(crate) const OPTSTRING: &str = "acC:dD:F:HjlLoqrs:Sv";

/// The usage text, which names the program as it was invoked.
pub(crate) fn usage(prog: &str) -> String {
    format!(
        "usage:\t{prog} [-{{o|r}}][-C comment][-s server] host host ...\n\
         \t{prog} -l [-s server]\n\
         \t{prog} [-s server] -v vnode vnode ...\n\
         \t{prog} -a[v][S[j][L]][-F format][-D delim][-s server]\n\
         \t{prog} -[H][S[j][L]][-F format][-D delim] host host ...\n\
         \t{prog} --version\n\n"
    )
}

/// The options, as clap declares them; tests check that the getopt scan reads the same
/// (see [`Args::from_scan`]). What they mean together is decided by [`parse`], which
/// replays the scan itself: a letter's meaning depends on the letters before it, which
/// this struct cannot hold, so nothing outside the tests reads its fields.
#[allow(dead_code)]
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "pbsnodes", disable_help_flag = true, disable_version_flag = true)]
pub(crate) struct Args {
    /// List every host (every vnode with `-v`).
    #[arg(short = 'a')]
    all: bool,
    /// Clear `offline` and `down` (deprecated).
    #[arg(short = 'c')]
    clear: bool,
    /// Comment to set on the nodes.
    #[arg(short = 'C', allow_hyphen_values = true)]
    comment: Vec<String>,
    /// Mark the named nodes down and the others up (deprecated).
    #[arg(short = 'd')]
    down: bool,
    /// Delimiter of `-F dsv`.
    #[arg(short = 'D', allow_hyphen_values = true)]
    delimiter: Vec<String>,
    /// Output format: `default`, `dsv` or `json`.
    #[arg(short = 'F', allow_hyphen_values = true)]
    format: Vec<String>,
    /// The hosts named and every vnode on them.
    #[arg(short = 'H')]
    with_vnodes: bool,
    /// Job summary (with `-S`).
    #[arg(short = 'j')]
    jobs: bool,
    /// Nodes marked down or offline.
    #[arg(short = 'l')]
    marked: bool,
    /// Long summary: no column is cut.
    #[arg(short = 'L')]
    long: bool,
    /// Mark the named nodes offline.
    #[arg(short = 'o')]
    offline: bool,
    /// Print no error messages.
    #[arg(short = 'q')]
    quiet: bool,
    /// Clear offline on the named nodes.
    #[arg(short = 'r')]
    reset: bool,
    /// Server (accepted; the server of pbs.conf is the one reached).
    #[arg(short = 's', allow_hyphen_values = true)]
    server: Vec<String>,
    /// One line per node.
    #[arg(short = 'S')]
    summary: bool,
    /// Vnodes rather than hosts.
    #[arg(short = 'v')]
    vnodes: bool,
    /// Nodes.
    nodes: Vec<String>,
}

impl Args {
    #[cfg(test)]
    pub(crate) fn from_scan(scan: &jobopts::Scan) -> Args {
        let mut args = Args { nodes: scan.operands.clone(), ..Args::default() };
        for opt in &scan.options {
            let value = opt.value.clone();
            match opt.letter {
                'a' => args.all = true,
                'c' => args.clear = true,
                'C' => args.comment.extend(value),
                'd' => args.down = true,
                'D' => args.delimiter.extend(value),
                'F' => args.format.extend(value),
                'H' => args.with_vnodes = true,
                'j' => args.jobs = true,
                'l' => args.marked = true,
                'L' => args.long = true,
                'o' => args.offline = true,
                'q' => args.quiet = true,
                'r' => args.reset = true,
                's' => args.server.extend(value),
                'S' => args.summary = true,
                'v' => args.vnodes = true,
                _ => {}
            }
        }
        args
    }
}

/// What pbsnodes does (OpenPBS's `mgr_operation_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Oper {
    /// `-d`: mark the named nodes down, the others up.
    Down,
    /// `-l`: list nodes marked down or offline.
    ListMarked,
    /// `-c`: clear offline and down.
    Clear,
    /// `-o`: mark offline.
    Offline,
    /// `-r`: clear offline.
    Reset,
    /// `-C` alone: set the comment.
    UpdateComment,
    /// `-a`: list all.
    All,
    /// Operands only (or `-v`): list those.
    ListSpecified,
    /// `-H`: the named hosts and their vnodes.
    ListHostsWithVnodes,
}

/// Output formats of `-F`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Default,
    Dsv,
    Json,
}

/// The command line, decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Options {
    pub(crate) oper: Oper,
    pub(crate) vnodes: bool,
    pub(crate) comment: Option<String>,
    pub(crate) format: Format,
    pub(crate) delimiter: String,
    pub(crate) quiet: bool,
    pub(crate) server: Option<String>,
    pub(crate) summary: bool,
    pub(crate) job_summary: bool,
    pub(crate) long_summary: bool,
    pub(crate) nodes: Vec<String>,
}

/// A command line pbsnodes rejects: what to print (getopt's messages, then the usage
/// unless `-q`), and the exit status is 1.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UsageError(pub(crate) String);

/// Replays the options as OpenPBS's option loop does.
pub(crate) fn parse(prog: &str, argv: &[String]) -> Result<Options, UsageError> {
    let scan = jobopts::getopt(prog, argv, OPTSTRING, true);
    let mut o = Options {
        oper: Oper::ListSpecified,
        vnodes: false,
        comment: None,
        format: Format::Default,
        delimiter: "|".to_string(),
        quiet: false,
        server: None,
        summary: false,
        job_summary: false,
        long_summary: false,
        nodes: scan.operands.clone(),
    };
    let mut bad = !scan.errors.is_empty() || argv.is_empty();
    let listing = |oper: Oper| matches!(oper, Oper::ListSpecified | Oper::All | Oper::ListHostsWithVnodes);
    for opt in &scan.options {
        let value = opt.value.clone().unwrap_or_default();
        let fresh = o.oper == Oper::ListSpecified;
        match opt.letter {
            'a' if fresh => o.oper = Oper::All,
            'c' if fresh || o.vnodes => o.oper = Oper::Clear,
            'C' if fresh => {
                o.oper = Oper::UpdateComment;
                o.comment = Some(value);
            }
            'C' if matches!(o.oper, Oper::Offline | Oper::Reset) => o.comment = Some(value),
            'd' if fresh || o.vnodes => o.oper = Oper::Down,
            'D' if listing(o.oper) => o.delimiter = value,
            'F' => match ["default", "dsv", "json"].iter().position(|f| f.eq_ignore_ascii_case(&value)) {
                Some(0) => o.format = Format::Default,
                Some(1) => o.format = Format::Dsv,
                Some(_) => o.format = Format::Json,
                None => bad = true,
            },
            'H' if fresh => o.oper = Oper::ListHostsWithVnodes,
            'j' if listing(o.oper) => o.job_summary = true,
            'l' if fresh || o.vnodes => o.oper = Oper::ListMarked,
            'L' if listing(o.oper) => o.long_summary = true,
            'o' if fresh || o.vnodes || o.oper == Oper::UpdateComment => o.oper = Oper::Offline,
            'q' => o.quiet = true,
            'r' if fresh || o.vnodes || o.oper == Oper::UpdateComment => o.oper = Oper::Reset,
            's' => o.server = Some(value),
            'S' if listing(o.oper) => o.summary = true,
            'v' if matches!(o.oper, Oper::ListSpecified | Oper::All) => o.vnodes = true,
            _ => bad = true,
        }
    }
    let no_nodes = o.nodes.is_empty();
    let bad =
        bad || match o.oper {
            Oper::ListMarked => !no_nodes,
            Oper::Clear
            | Oper::Offline
            | Oper::Reset
            | Oper::ListHostsWithVnodes
            | Oper::ListSpecified
            | Oper::UpdateComment => no_nodes,
            Oper::Down | Oper::All => false,
        } || (o.summary && !listing(o.oper));
    if bad {
        let usage = if o.quiet { String::new() } else { usage(prog) };
        return Err(UsageError(jobopts::usage_text(&scan.errors, &usage)));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(argv: &[&str]) -> Vec<String> {
        argv.iter().map(|s| s.to_string()).collect()
    }

    fn ok(argv: &[&str]) -> Options {
        parse("pbsnodes", &words(argv)).unwrap_or_else(|e| panic!("{argv:?}: {e:?}"))
    }

    fn usage_error(argv: &[&str]) -> String {
        match parse("pbsnodes", &words(argv)) {
            Ok(o) => panic!("{argv:?} accepted: {o:?}"),
            Err(UsageError(text)) => text,
        }
    }

    #[test]
    fn operations() {
        assert_eq!(ok(&["-a"]).oper, Oper::All);
        let av = ok(&["-av"]);
        assert_eq!((av.oper, av.vnodes), (Oper::All, true));
        assert_eq!(ok(&["-l"]).oper, Oper::ListMarked);
        let v = ok(&["-v", "n1", "n2"]);
        assert_eq!((v.oper, v.vnodes, v.nodes.clone()), (Oper::ListSpecified, true, words(&["n1", "n2"])));
        assert_eq!(ok(&["n1"]).oper, Oper::ListSpecified);
        let o = ok(&["-o", "n1"]);
        assert_eq!((o.oper, o.comment), (Oper::Offline, None));
        let oc = ok(&["-C", "broken fan", "-o", "n1"]);
        assert_eq!((oc.oper, oc.comment.as_deref()), (Oper::Offline, Some("broken fan")));
        let rc = ok(&["n1", "-r", "-C", ""]);
        assert_eq!((rc.oper, rc.comment.as_deref()), (Oper::Reset, Some("")));
        let c = ok(&["-C", "hello", "n1"]);
        assert_eq!((c.oper, c.comment.as_deref()), (Oper::UpdateComment, Some("hello")));
        let json = ok(&["-a", "-F", "JSON", "-s", "srv"]);
        assert_eq!((json.format, json.server.as_deref()), (Format::Json, Some("srv")));
        let s = ok(&["-aSjL"]);
        assert!(s.summary && s.job_summary && s.long_summary);
        assert_eq!(ok(&["-H", "h1"]).oper, Oper::ListHostsWithVnodes);
        assert_eq!(ok(&["-a", "-D", ",", "-F", "dsv"]).delimiter, ",");
        assert_eq!(ok(&["-vl"]).oper, Oper::ListMarked);
        assert_eq!(ok(&["-c", "n1"]).oper, Oper::Clear);
    }

    #[test]
    fn usage_errors() {
        let text = usage("pbsnodes");
        assert!(text.starts_with("usage:\tpbsnodes [-{o|r}][-C comment][-s server] host host ...\n"), "{text}");
        assert!(text.ends_with("\tpbsnodes --version\n\n"));
        assert_eq!(usage_error(&[]), text);
        assert_eq!(usage_error(&["-o"]), text);
        assert_eq!(usage_error(&["-l", "n1"]), text);
        assert_eq!(usage_error(&["-lv"]), text);
        assert_eq!(usage_error(&["-al"]), text);
        assert_eq!(usage_error(&["-o", "-C", "x"]), text);
        assert_eq!(usage_error(&["-a", "-F", "xml"]), text);
        assert_eq!(usage_error(&["-lS"]), text);
        assert_eq!(usage_error(&["-v"]), text);
        assert_eq!(usage_error(&["-x", "n1"]), format!("pbsnodes: invalid option -- 'x'\n{text}"));
        assert_eq!(usage_error(&["-q", "-o"]), "");
    }

    #[test]
    fn clap_reads_the_same_options() {
        use clap::Parser;
        let argv = words(&["-a", "-v", "-C", "c", "-D", ",", "-F", "json", "-s", "srv", "-SjL", "n1", "-q"]);
        let scan = jobopts::getopt("pbsnodes", &argv, OPTSTRING, true);
        assert_eq!(Args::from_scan(&scan), Args::try_parse_from(scan.to_clap_args("pbsnodes")).unwrap());
    }
}
