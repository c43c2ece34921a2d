//! What the job commands share about their command lines: GNU getopt(3)'s scanning (with
//! its messages), the client side of OpenPBS's job attribute checks (`illegal -X value`:
//! the rewriting that depends on the submitter, the rest being `pbs_core::jobattr`'s), and
//! the parsers behind them (`-l` lists, `-W` pairs, `-a` dates); paths and dependency lists
//! are read by `pbs_core::jobpath` and `pbs_core::depend`, which the server shares.
//!
//! Everything here is pure so the exact OpenPBS rules can be tested without a server.

use chrono::{Datelike, Local, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use pbs_core::Pbse;
use pbs_core::{depend, jobattr, jobpath};

/// A command line or option value OpenPBS rejects before talking to the server: `message`
/// is printed after `<cmd>: `, then the usage text if `usage`, and the command exits with
/// `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptError {
    pub message: String,
    pub status: u8,
    pub usage: bool,
}

impl OptError {
    /// `illegal -X value`, followed by the usage text, exit 2.
    pub fn illegal(opt: char) -> OptError {
        OptError { message: format!("illegal -{opt} value"), status: 2, usage: true }
    }
}

/// One option found by [`getopt`]: its letter and, for options that take one, its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    pub letter: char,
    pub value: Option<String>,
}

/// The result of scanning a command line the way getopt(3) does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Options in command-line order.
    pub options: Vec<Opt>,
    /// Operands, in order.
    pub operands: Vec<String>,
    /// The lines getopt(3) printed (`qdel: invalid option -- 'z'`); any means a usage error.
    pub errors: Vec<String>,
    /// The operands came after a `--`.
    pub dashdash: bool,
}

impl Scan {
    /// Rebuilds an argument vector clap parses the same way: every option as `-X value`,
    /// then `--` and the operands, so that nothing is read twice differently.
    pub fn to_clap_args(&self, prog: &str) -> Vec<String> {
        let mut out = vec![prog.to_string()];
        for opt in &self.options {
            out.push(format!("-{}", opt.letter));
            if let Some(value) = &opt.value {
                out.push(value.clone());
            }
        }
        out.push("--".to_string());
        out.extend(self.operands.iter().cloned());
        out
    }

    /// The values given to option `letter`, in command-line order (what clap collects into
    /// a `Vec`; its last one is what an `Option` field keeps).
    pub fn values(&self, letter: char) -> Vec<String> {
        self.options.iter().filter(|opt| opt.letter == letter).filter_map(|opt| opt.value.clone()).collect()
    }

    /// Whether option `letter` was given.
    pub fn has(&self, letter: char) -> bool {
        self.options.iter().any(|opt| opt.letter == letter)
    }
}

/// The text a q-command prints for a command line it refuses: each message (getopt's, then
/// its own) on a line of its own, then the usage text.
/// OpenPBS's rule for an option given more than once: the last value wins, and one entry
/// per attribute goes to the server, which refuses a name given twice (in any spelling).
pub fn last_wins(attrs: Vec<pbs_proto::Attr>) -> Vec<pbs_proto::Attr> {
    let kind = pbs_core::ObjectKind::Job;
    let mut out: Vec<pbs_proto::Attr> = Vec::with_capacity(attrs.len());
    for pbs_proto::Attr(name, value) in attrs {
        let name = kind.canonical_name(&name).into_owned();
        match out.iter_mut().find(|a| a.0.eq_ignore_ascii_case(&name)) {
            Some(existing) => existing.1 = value,
            None => out.push(pbs_proto::Attr(name, value)),
        }
    }
    out
}

pub fn usage_text(messages: &[String], usage: &str) -> String {
    let mut text: String = messages.iter().map(|m| format!("{m}\n")).collect();
    text.push_str(usage);
    text
}

/// Scans `args` (without the program name) as glibc's getopt(3) does for `optstring`
/// (`a:b` = `-a` takes a value, `-b` does not). With `permute`, options may follow operands
/// (GNU behaviour, which every q-command but qsub relies on); without, the first operand
/// ends the options. `--` always ends them. `prog` prefixes getopt's own messages.
pub fn getopt(prog: &str, args: &[String], optstring: &str, permute: bool) -> Scan {
    let mut scan = Scan::default();
    let takes_value = |c: char| -> Option<bool> {
        let at = optstring.find(c)?;
        Some(optstring[at + c.len_utf8()..].starts_with(':'))
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            scan.dashdash = true;
            scan.operands.extend(args[i..].iter().cloned());
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            if permute {
                scan.operands.push(arg.clone());
                continue;
            }
            scan.operands.push(arg.clone());
            scan.operands.extend(args[i..].iter().cloned());
            break;
        }
        let cluster: Vec<char> = arg.chars().skip(1).collect();
        let mut k = 0;
        while k < cluster.len() {
            let c = cluster[k];
            k += 1;
            match takes_value(c).filter(|_| c != ':') {
                None => scan.errors.push(format!("{prog}: invalid option -- '{c}'")),
                Some(false) => scan.options.push(Opt { letter: c, value: None }),
                Some(true) => {
                    let value = if k < cluster.len() {
                        let rest: String = cluster[k..].iter().collect();
                        k = cluster.len();
                        Some(rest)
                    } else if i < args.len() {
                        i += 1;
                        Some(args[i - 1].clone())
                    } else {
                        None
                    };
                    match value {
                        Some(value) => scan.options.push(Opt { letter: c, value: Some(value) }),
                        None => scan.errors.push(format!("{prog}: option requires an argument -- '{c}'")),
                    }
                }
            }
        }
    }
    scan
}

/// What some checks need from the submitting side: where relative paths point and which
/// server short job ids belong to.
pub struct VerifyEnv<'a> {
    /// Host put in front of output paths (`PBS_OUTPUT_HOST_NAME` or this host).
    pub host: &'a str,
    /// The working directory, for relative paths.
    pub cwd: &'a str,
    /// The default server, completing job ids in dependency lists.
    pub server: &'a str,
    /// Whether a local path is a directory (`-o dir` means `dir/`).
    pub is_dir: &'a dyn Fn(&str) -> bool,
}

/// Declares [`PlainOptions`] from one list of letters and fields: the struct clap reads and
/// the two lookups by letter that getopt's scan and the table walk use.
macro_rules! plain_options {
    ($($letter:literal => $field:ident,)*) => {
        /// The options qsub and qalter share whose value is their attribute's (`-A -e -j -k
        /// -m -M -N -o -p -P -R -S -u`), declared once for both: which attribute each sets
        /// and how its value is read is the option table's
        /// (`pbs_core::jobattr::OPTION_LETTERS`), so a command sets them by walking the
        /// table (see [`PlainOptions::walk`]), never letter by letter.
        #[derive(clap::Args, Debug, Default, Clone, PartialEq, Eq)]
        pub struct PlainOptions {
            $(
                #[arg(short = $letter, allow_hyphen_values = true)]
                $field: Option<String>,
            )*
        }

        impl PlainOptions {
            fn slot(&mut self, letter: char) -> Option<&mut Option<String>> {
                match letter {
                    $($letter => Some(&mut self.$field),)*
                    _ => None,
                }
            }

            /// The value given for `-letter`.
            pub fn value(&self, letter: char) -> Option<&str> {
                match letter {
                    $($letter => self.$field.as_deref(),)*
                    _ => None,
                }
            }
        }
    };
}

plain_options! {
    'A' => account,
    'e' => error_path,
    'j' => join,
    'k' => keep,
    'm' => mail_points,
    'M' => mail_users,
    'N' => name,
    'o' => output_path,
    'p' => priority,
    'P' => project,
    'R' => remove_files,
    'S' => shell,
    'u' => user_list,
}

impl PlainOptions {
    /// Takes `-letter value` of a getopt scan (a later value wins, as clap reads it);
    /// whether the letter is one of these.
    pub fn take(&mut self, letter: char, value: &Option<String>) -> bool {
        match self.slot(letter) {
            Some(slot) => {
                slot.clone_from(value);
                true
            }
            None => false,
        }
    }

    /// `command`'s (qsub's or qalter's) walk of the option table, one step per letter in
    /// the table's order: a plain option given on the line, with its attribute and its
    /// value read as the table says, or a letter the command reads by a rule of its own.
    pub fn walk(&self, command: jobattr::Command) -> Vec<OptionStep> {
        let mut letters: Vec<char> = Vec::new();
        let mut steps = Vec::new();
        for option in jobattr::OPTION_LETTERS.iter().filter(|o| o.used_by(command)) {
            if letters.contains(&option.letter) {
                continue;
            }
            letters.push(option.letter);
            let value = match option.value {
                jobattr::OptionValue::OwnRule => {
                    steps.push(OptionStep::Own(option.letter));
                    continue;
                }
                jobattr::OptionValue::AsGiven => self.value(option.letter),
                jobattr::OptionValue::TrimStart => self.value(option.letter).map(str::trim_start),
            };
            if let Some(value) = value.map(str::to_string) {
                steps.push(OptionStep::Plain { letter: option.letter, attribute: option.attribute, value });
            }
        }
        steps
    }
}

/// One step of a command's walk of the option table ([`PlainOptions::walk`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionStep {
    /// A plain option given on the line: the attribute it sets and its value.
    Plain { letter: char, attribute: &'static str, value: String },
    /// A letter the command reads by its own rule.
    Own(char),
}

/// Checks one job attribute as OpenPBS's client library does before sending it, and
/// returns the value to send (paths and dependency lists are rewritten into their full
/// form here; every other value is checked by [`jobattr::check_job_value`], as the server
/// checks it). The error is the PBSE code OpenPBS reports (`BADATVAL` for a bad value,
/// `JOBNBIG` for a long name, `NOATTR` for an unknown attribute). Resources are left to the
/// server, which answers with the same messages.
pub fn verify_attr(name: &str, value: &str, env: &VerifyEnv<'_>) -> Result<String, Pbse> {
    let (base, resource) = match name.split_once('.') {
        Some((base, resource)) => (base, Some(resource)),
        None => (name, None),
    };
    if !known_job_attribute(base) {
        return Err(Pbse::NOATTR);
    }
    if resource.is_some() {
        return Ok(value.to_string());
    }
    match base {
        // A list too long to keep is the server's to refuse, with its message
        // (`Illegal attribute or resource value depend`), as for `on:abc`.
        "depend" => match depend::expand(value, env.server) {
            Err(depend::DependError::TooMany) => Ok(value.to_string()),
            expanded => expanded.map_err(|_| Pbse::BADATVAL),
        },
        "job_set" => Ok(pbs_core::jobset::complete(value, env.server)),
        "Error_Path" | "Output_Path" => {
            jobpath::prepare_path(value, env.host, env.cwd, env.is_dir).ok_or(Pbse::BADATVAL)
        }
        _ => jobattr::check_job_value(base, value).map(|()| value.to_string()),
    }
}

/// Whether OpenPBS's client knows a job attribute name (case-insensitive, as it compares).
fn known_job_attribute(base: &str) -> bool {
    // Attributes the client library knows but this server does not keep.
    const CLIENT_ONLY: &[&str] = &["reserve_start", "reserve_end", "cred", "forward_x11_port", "forward_x11_cookie"];
    pbs_core::ObjectKind::Job.find(base).is_some() || CLIENT_ONLY.iter().any(|n| n.eq_ignore_ascii_case(base))
}

/// Why a `-l` list does not parse: `pbs_quote_parse`'s error number (2 illegal character,
/// 4 no closing quote), and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceListError {
    pub code: u8,
    pub offset: usize,
}

/// `set_resources`: `res[=value][,res[=value]...]`, values optionally quoted with `"` or `'`
/// (commas and blanks inside quotes are kept), blanks between items allowed. A resource
/// without `=` gets an empty value (the server rejects it). `preempt_targets=` takes the
/// rest of the list as its value, as OpenPBS's `set_resources` does.
pub fn parse_resource_list(text: &str) -> Result<Vec<(String, String)>, ResourceListError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut r = 0;
    let err = |code: u8, offset: usize| Err(ResourceListError { code, offset });
    while r < bytes.len() {
        while r < bytes.len() && bytes[r].is_ascii_whitespace() {
            r += 1;
        }
        let mut eq = r;
        while eq < bytes.len() && bytes[eq] != b'=' && bytes[eq] != b',' {
            eq += 1;
        }
        if eq == r {
            return err(1, r);
        }
        let name_len = bytes[r..eq].iter().take_while(|b| !b.is_ascii_whitespace()).count();
        let name = text[r..r + name_len].to_string();
        let next;
        let value;
        if bytes.get(eq) == Some(&b'=') && text[r..].starts_with("preempt_targets") {
            // OpenPBS's special case: the rest of the list is its value, commas and all
            // (`preempt_targets=queue=a,queue=b`).
            value = text[eq + 1..].trim_start().to_string();
            next = bytes.len();
        } else if bytes.get(eq) == Some(&b'=') {
            let (v, end) = quote_parse(text, eq + 1)?;
            value = v;
            next = end;
        } else {
            value = String::new();
            next = eq;
        }
        out.push((name, value));
        r = next;
        if bytes.get(r) == Some(&b',') {
            r += 1;
            if r == bytes.len() {
                return err(1, r);
            }
        }
    }
    Ok(out)
}

/// `pbs_quote_parse` without blanks in values: returns the value and where parsing stopped.
fn quote_parse(text: &str, start: usize) -> Result<(String, usize), ResourceListError> {
    let bytes = text.as_bytes();
    let mut s = start;
    while s < bytes.len() && bytes[s].is_ascii_whitespace() {
        s += 1;
    }
    let mut out = Vec::new();
    let mut quote: Option<u8> = None;
    let mut quoting = false;
    while s < bytes.len() {
        let c = bytes[s];
        let printable = (0x20..0x7f).contains(&c) || c >= 0x80;
        if !printable && !c.is_ascii_whitespace() {
            return Err(ResourceListError { code: 2, offset: s });
        }
        if quoting {
            if Some(c) == quote {
                quoting = false;
            } else if c == b'&' {
                return Err(ResourceListError { code: 2, offset: s });
            } else {
                out.push(c);
            }
        } else if c == b'"' || c == b'\'' {
            if quote.is_some_and(|q| q != c) {
                out.push(c);
            } else {
                quote = Some(c);
                quoting = true;
            }
        } else if c == b',' || c.is_ascii_whitespace() {
            return Ok((String::from_utf8_lossy(&out).into_owned(), s));
        } else if c == b'&' {
            return Err(ResourceListError { code: 2, offset: s });
        } else {
            out.push(c);
        }
        s += 1;
    }
    if quoting {
        return Err(ResourceListError { code: 4, offset: s });
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), s))
}

/// The text OpenPBS prints for a `-l` list that does not parse, after `<cmd>: `:
/// `illegal -l value`, and for quoting errors the reason, the list and a caret under the
/// offending character.
pub fn resource_list_message(text: &str, error: &ResourceListError) -> String {
    if error.code <= 1 {
        return "illegal -l value".to_string();
    }
    let reason = match error.code {
        2 => "illegal character",
        3 => "improper quoting syntax",
        4 => "no closing quote",
        _ => "error",
    };
    format!("illegal -l value\n {reason}:\n{text}\n{}^", " ".repeat(error.offset))
}

/// `parse_equal_string` over a whole `-W` value: `name=value[,name=value...]`, where a value
/// runs up to the comma before the next `=` (so `depend=afterok:1,afterok:2` is one pair)
/// and may be quoted. `None` on a syntax error.
pub fn parse_equal_pairs(text: &str) -> Option<Vec<(String, String)>> {
    let chars: Vec<char> = text.chars().collect();
    let mut pairs = Vec::new();
    let mut pc = 0;
    loop {
        while pc < chars.len() && chars[pc].is_whitespace() {
            pc += 1;
        }
        if pc >= chars.len() {
            return Some(pairs);
        }
        if chars[pc] == '=' || chars[pc] == ',' {
            return None;
        }
        let name_start = pc;
        while pc < chars.len() && !chars[pc].is_whitespace() && chars[pc] != '=' {
            pc += 1;
        }
        let name: String = chars[name_start..pc].iter().collect();
        while pc < chars.len() && chars[pc].is_whitespace() {
            pc += 1;
        }
        if pc >= chars.len() || chars[pc] != '=' {
            return None;
        }
        pc += 1;
        while pc < chars.len() && chars[pc].is_whitespace() {
            pc += 1;
        }
        let mut value: Vec<char> = Vec::new();
        if pc < chars.len() && (chars[pc] == '"' || chars[pc] == '\'') {
            let quote = chars[pc];
            pc += 1;
            let close = chars[pc..].iter().position(|c| *c == quote)? + pc;
            value.extend(&chars[pc..close]);
            pc = close + 1;
        }
        let rest_start = pc;
        let Some(next_eq) = chars[pc..].iter().position(|c| *c == '=').map(|p| p + pc) else {
            value.extend(&chars[rest_start..]);
            let text: String = value.iter().collect();
            if text.trim_end().ends_with(',') {
                return None;
            }
            pairs.push((name, text.trim_end().to_string()));
            return Some(pairs);
        };
        // The value ends at the last comma before the next '='.
        let comma = chars[rest_start..next_eq].iter().rposition(|c| *c == ',').map(|p| p + rest_start);
        let comma = comma?;
        value.extend(&chars[rest_start..comma]);
        let text: String = value.iter().collect();
        pairs.push((name, text.trim_end().to_string()));
        pc = comma + 1;
    }
}

/// `cvtdate`: `[[[[CC]YY]MM]DD]hhmm[.SS]` as epoch seconds in local time. Parts left out
/// are taken from now, rolling forward so the time is in the future (today's hour already
/// past means tomorrow, and so on). `None` if it does not parse.
pub fn cvtdate(text: &str) -> Option<i64> {
    cvtdate_at(text, Local::now().naive_local())
}

/// [`cvtdate`] with the current local time given, for tests.
pub fn cvtdate_at(text: &str, now: NaiveDateTime) -> Option<i64> {
    let (main, sec) = match text.split_once('.') {
        Some((main, secs)) => {
            if secs.len() != 2 || !secs.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let sec: u32 = secs.parse().ok()?;
            if sec > 59 {
                return None;
            }
            (main, sec)
        }
        None => (text, 0),
    };
    if !main.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let two = |s: &str, at: usize| -> i64 { s.get(at..at + 2).and_then(|p| p.parse().ok()).unwrap_or(0) };
    let mut year = i64::from(now.year());
    let mut mon0 = i64::from(now.month0());
    let mut mday = i64::from(now.day());
    let len = main.len();
    if !matches!(len, 4 | 6 | 8 | 10 | 12) {
        return None;
    }
    let mut pos = 0;
    let mut given_year = 0;
    let mut given_month = false;
    let mut given_day = false;
    if len == 12 {
        given_year = two(main, 0) * 100;
        pos += 2;
    }
    if len >= 10 {
        let yy = two(main, pos);
        given_year = if given_year == 0 { if yy > 68 { 1900 + yy } else { 2000 + yy } } else { given_year + yy };
        year = given_year;
        pos += 2;
    }
    if len >= 8 {
        let mm = two(main, pos);
        if !(1..=12).contains(&mm) {
            return None;
        }
        if given_year == 0 && mm <= i64::from(now.month0()) {
            year += 1;
        }
        mon0 = mm - 1;
        given_month = true;
        pos += 2;
    }
    if len >= 6 {
        let dd = two(main, pos);
        if !(1..=31).contains(&dd) {
            return None;
        }
        if !given_month && dd < i64::from(now.day()) {
            mon0 += 1;
        }
        mday = dd;
        given_day = true;
        pos += 2;
    }
    let hour = two(main, pos);
    let min = two(main, pos + 2);
    if hour > 23 || min > 59 {
        return None;
    }
    if !given_day {
        let (now_h, now_m) = (i64::from(now.hour()), i64::from(now.minute()));
        if hour < now_h || (hour == now_h && min <= now_m) {
            mday += 1;
        }
    }
    // mktime(3) normalises an overflowing month or day into the following ones.
    let year = year + mon0.div_euclid(12);
    let month = u32::try_from(mon0.rem_euclid(12) + 1).ok()?;
    let first = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, 1)?;
    let date = first.checked_add_days(chrono::Days::new(u64::try_from(mday - 1).ok()?))?;
    let when = date.and_hms_opt(u32::try_from(hour).ok()?, u32::try_from(min).ok()?, sec)?;
    Local.from_local_datetime(&when).earliest().map(|t| t.timestamp())
}

/// `check_op` of qselect: an optional leading `.op.` (`.gt.1200`). An unknown operator
/// means equality but is still skipped, as OpenPBS does.
pub fn split_select_op(text: &str) -> (pbs_proto::CompareOp, &str) {
    use pbs_proto::CompareOp;
    if !text.starts_with('.') {
        return (CompareOp::Eq, text);
    }
    let op = text.get(1..3).and_then(CompareOp::from_word).unwrap_or(CompareOp::Eq);
    (op, text.get(4..).unwrap_or(""))
}

/// `parse_destination_id`: `queue`, `queue@server` or `@server`. Returns (queue, server).
pub fn parse_destination(text: &str) -> Option<(String, Option<String>)> {
    let name_char = |c: char| c.is_ascii_graphic() && c != '#' && c != '@';
    let text = text.trim_start();
    let (queue, server) = match text.split_once('@') {
        Some((queue, server)) => (queue, Some(server)),
        None => (text, None),
    };
    if queue.len() > 15 || !queue.chars().all(name_char) {
        return None;
    }
    if let Some(server) = server {
        if server.is_empty() || !server.chars().all(name_char) {
            return None;
        }
    }
    Some((queue.to_string(), server.map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    /// Expected options, operands and getopt messages.
    type Expected<'a> = (&'a [(char, Option<&'a str>)], &'a [&'a str], &'a [&'a str]);

    fn check_getopt(args: &[&str], permute: bool, expected: Expected<'_>) {
        let scan = getopt("cmd", &strings(args), "ab:c:x", permute);
        let options: Vec<(char, Option<&str>)> = scan.options.iter().map(|o| (o.letter, o.value.as_deref())).collect();
        assert_eq!(options, expected.0, "{args:?}");
        assert_eq!(scan.operands, expected.1, "{args:?}");
        assert_eq!(scan.errors, expected.2, "{args:?}");
    }

    #[test]
    fn getopt_rules() {
        check_getopt(
            &["-a", "-bv", "-c", "w", "op"],
            true,
            (&[('a', None), ('b', Some("v")), ('c', Some("w"))], &["op"], &[]),
        );
        check_getopt(&["op", "-a", "-xb", "-q"], true, (&[('a', None), ('x', None), ('b', Some("-q"))], &["op"], &[]));
        check_getopt(&["op", "-a"], false, (&[], &["op", "-a"], &[]));
        check_getopt(&["-a", "--", "-x", "y"], false, (&[('a', None)], &["-x", "y"], &[]));
        check_getopt(
            &["-z", "-b"],
            true,
            (&[], &[], &["cmd: invalid option -- 'z'", "cmd: option requires an argument -- 'b'"]),
        );
        check_getopt(&["-", "-a"], true, (&[('a', None)], &["-"], &[]));
        let scan = getopt("cmd", &strings(&["-b", "x", "--", "op"]), "ab:", true);
        assert_eq!(scan.to_clap_args("cmd"), strings(&["cmd", "-b", "x", "--", "op"]));
        assert!(scan.dashdash);
    }

    #[test]
    fn scan_values_and_usage_text() {
        let scan = getopt("cmd", &strings(&["-b", "x", "op", "-a", "-by"]), "ab:c:", true);
        assert_eq!(scan.values('b'), strings(&["x", "y"]));
        assert!(scan.values('c').is_empty() && scan.values('a').is_empty());
        assert!(scan.has('a') && scan.has('b') && !scan.has('c'));
        assert_eq!(usage_text(&strings(&["cmd: one", "cmd: two"]), "usage: cmd\n"), "cmd: one\ncmd: two\nusage: cmd\n");
        assert_eq!(usage_text(&[], "usage: cmd\n"), "usage: cmd\n");
    }

    #[test]
    fn resource_lists() {
        let ok = |text: &str| parse_resource_list(text).unwrap();
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
        };
        assert_eq!(ok("select=2:ncpus=1,walltime=1:00"), pairs(&[("select", "2:ncpus=1"), ("walltime", "1:00")]));
        assert_eq!(ok("ncpus"), pairs(&[("ncpus", "")]));
        assert_eq!(ok("foo=\"a,b\",x=1"), pairs(&[("foo", "a,b"), ("x", "1")]));
        assert_eq!(ok("mem=1gb ncpus=2"), pairs(&[("mem", "1gb"), ("ncpus", "2")]));
        assert_eq!(
            ok("ncpus=1,preempt_targets=queue=a,Resource_List.arch=x"),
            pairs(&[("ncpus", "1"), ("preempt_targets", "queue=a,Resource_List.arch=x")])
        );
        assert_eq!(parse_resource_list("=1").unwrap_err().code, 1);
        assert_eq!(parse_resource_list("ncpus=1,").unwrap_err().code, 1);
        let quote = parse_resource_list("foo=\"abc").unwrap_err();
        assert_eq!(
            resource_list_message("foo=\"abc", &quote),
            "illegal -l value\n no closing quote:\nfoo=\"abc\n        ^"
        );
        let amp = parse_resource_list("foo=a&b").unwrap_err();
        assert_eq!(resource_list_message("foo=a&b", &amp), "illegal -l value\n illegal character:\nfoo=a&b\n     ^");
    }

    #[test]
    fn equal_pairs() {
        let pairs = |list: &[(&str, &str)]| -> Option<Vec<(String, String)>> {
            Some(list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect())
        };
        assert_eq!(parse_equal_pairs("max_run_subjobs=2"), pairs(&[("max_run_subjobs", "2")]));
        assert_eq!(
            parse_equal_pairs("depend=afterok:1,afterok:2,group_list=g"),
            pairs(&[("depend", "afterok:1,afterok:2"), ("group_list", "g")])
        );
        assert_eq!(parse_equal_pairs(" a = 'x=y' , b=2"), pairs(&[("a", "x=y"), ("b", "2")]));
        assert_eq!(parse_equal_pairs("nokey"), None);
        assert_eq!(parse_equal_pairs("=x"), None);
        assert_eq!(parse_equal_pairs("a=1,"), None);
        assert_eq!(parse_equal_pairs("a=1b=2"), None);
    }

    #[test]
    fn dates() {
        let now = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap().and_hms_opt(17, 35, 0).unwrap();
        let at = |text: &str| {
            cvtdate_at(text, now).map(|t| Local.timestamp_opt(t, 0).unwrap().format("%Y-%m-%d %H:%M:%S").to_string())
        };
        assert_eq!(at("1800").as_deref(), Some("2026-11-22 18:00:00"));
        assert_eq!(at("1700").as_deref(), Some("2026-11-23 17:00:00"));
        assert_eq!(at("1735.30").as_deref(), Some("2026-11-23 17:35:30"));
        assert_eq!(at("211200").as_deref(), Some("2026-12-21 12:00:00"));
        assert_eq!(at("01011200").as_deref(), Some("2027-01-01 12:00:00"));
        assert_eq!(at("2701011200").as_deref(), Some("2027-01-01 12:00:00"));
        assert_eq!(at("9901011200").as_deref(), Some("1999-01-01 12:00:00"));
        assert_eq!(at("202612311200").as_deref(), Some("2026-12-31 12:00:00"));
        for bad in ["12", "2460", "1299", "tomorrow", "1200.5", "13011200", "321200", ""] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn plain_options_are_the_tables() {
        use jobattr::Command::{Qalter, Qsub};
        // Every plain option of the table has its field, and nothing else has one.
        for command in [Qsub, Qalter] {
            for option in jobattr::plain_options(command) {
                let mut plain = PlainOptions::default();
                assert!(plain.take(option.letter, &Some(" v".into())), "-{} has no field", option.letter);
                assert_eq!(plain.value(option.letter), Some(" v"));
            }
        }
        let mut plain = PlainOptions::default();
        for letter in ['a', 'c', 'h', 'l', 'r', 'W', 'q', 'J'] {
            assert!(!plain.take(letter, &Some("x".into())), "-{letter} has a rule of its own");
        }
        for (letter, value) in [('N', "job"), ('p', " 5"), ('m', " abe"), ('e', " /x"), ('A', "acct")] {
            plain.take(letter, &Some(value.into()));
        }
        let steps = plain.walk(Qalter);
        let plain_steps: Vec<(char, &str, &str)> = steps
            .iter()
            .filter_map(|step| match step {
                OptionStep::Plain { letter, attribute, value } => Some((*letter, *attribute, value.as_str())),
                OptionStep::Own(_) => None,
            })
            .collect();
        let expected = [
            ('A', "Account_Name", "acct"),
            ('e', "Error_Path", " /x"),
            ('m', "Mail_Points", "abe"),
            ('N', "Job_Name", "job"),
            ('p', "Priority", "5"),
        ];
        assert_eq!(plain_steps, expected);
        // Qalter's own rules, in the table's order, each once.
        let own: Vec<char> = steps
            .iter()
            .filter_map(|step| match step {
                OptionStep::Own(letter) => Some(*letter),
                OptionStep::Plain { .. } => None,
            })
            .collect();
        assert_eq!(own, ['a', 'c', 'h', 'l', 'r', 'W']);
    }

    #[test]
    fn verification() {
        let dir = |_: &str| false;
        let env = VerifyEnv { host: "h", cwd: "/w", server: "srv", is_dir: &dir };
        let check = |name: &str, value: &str| verify_attr(name, value, &env);
        assert_eq!(check("Output_Path", "o"), Ok("h:/w/o".to_string()));
        assert_eq!(check("depend", "afterok:1"), Ok("afterok:1.srv".to_string()));
        assert_eq!(check("Priority", "2000"), Err(Pbse::BADATVAL));
        assert_eq!(check("Priority", "-5"), Ok("-5".to_string()));
        assert_eq!(check("Join_Path", "x"), Err(Pbse::BADATVAL));
        assert_eq!(check("nosuch", "1"), Err(Pbse::NOATTR));
        assert_eq!(check("Resource_List.walltime", "abc"), Ok("abc".to_string()));
        assert_eq!(check("Job_Name", &"x".repeat(300)), Err(Pbse::JOBNBIG));
        assert_eq!(check("sandbox", "private"), Ok("private".to_string()));
        assert_eq!(check("Rerunable", "y"), Ok("y".to_string()));
        assert_eq!(check("max_run_subjobs", "abc"), Ok("abc".to_string()));
    }

    #[test]
    fn select_ops_and_destinations() {
        use pbs_proto::CompareOp;
        assert_eq!(split_select_op(".gt.5"), (CompareOp::Gt, "5"));
        assert_eq!(split_select_op("5"), (CompareOp::Eq, "5"));
        assert_eq!(split_select_op(".xx.5"), (CompareOp::Eq, "5"));
        assert_eq!(parse_destination("workq"), Some(("workq".to_string(), None)));
        assert_eq!(parse_destination("workq@s"), Some(("workq".to_string(), Some("s".to_string()))));
        assert_eq!(parse_destination("@s"), Some((String::new(), Some("s".to_string()))));
        assert_eq!(parse_destination("q@"), None);
        assert_eq!(parse_destination("a#b"), None);
        assert_eq!(parse_destination("averyveryverylongqueue"), None);
    }
}
