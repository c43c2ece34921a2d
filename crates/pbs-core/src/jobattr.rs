//! What a job attribute's value may be, and which command option letter sets it: OpenPBS's
//! checks of job attribute values that do not depend on the submitting host (its client
//! "ECL" layer), made alike by the commands before they send and by the server whoever
//! sends, with the same PBSE codes; and the one table of the qsub, qalter and qselect
//! option letters, which also says how qsub and qalter read each option's value (they walk
//! it rather than naming options one by one).
//!
//! Paths and dependency lists are read by `crate::jobpath` and `crate::depend`: the
//! commands complete them (a relative path with the submitter's host and directory, ids
//! with its default server) and the server refuses what those readings refuse.

use std::collections::HashSet;

use crate::Pbse;
use crate::attr::parse_bool;

/// Checks one value of job attribute `base` (no `.resource` part) as OpenPBS's commands
/// check it before sending: `BADATVAL` for an illegal value, `JOBNBIG` for a long
/// `Job_Name`. The name is matched as spelled in the attribute table; attributes without a
/// rule here (resources, `Variable_List`, ...) pass.
pub fn check_job_value(base: &str, value: &str) -> Result<(), Pbse> {
    let valid = match base {
        "Job_Name" => return check_job_name(value),
        "Checkpoint" => check_checkpoint(value),
        "Execution_Time" | "umask" | "interactive" | "block" | "reserve_start" | "reserve_end" => is_long(value),
        "run_count" => is_long(value) && !value.trim().starts_with('-'),
        "group_list" | "User_List" => check_at_list(value, true, false),
        // A mailer would read an address starting with `-` as an option.
        "Mail_Users" => {
            check_at_list(value, false, false) && !value.split(',').any(|a| a.trim_start().starts_with('-'))
        }
        "Shell_Path_List" => check_at_list(value, true, true),
        "Hold_Types" => check_hold(value),
        "Join_Path" => matches!(value, "oe" | "eo" | "n"),
        "Keep_Files" => check_keep(value),
        "Mail_Points" => check_mail_points(value),
        "Priority" => is_long(value) && PRIORITY.contains(&crate::cnum::atol(value)),
        "Rerunable" | "release_nodes_on_stageout" | "array" => parse_bool(value).is_some(),
        "Remove_Files" => !value.is_empty() && value.chars().all(|c| c == 'o' || c == 'e'),
        "sandbox" => ["HOME", "O_WORKDIR", "PRIVATE"].iter().any(|s| s.eq_ignore_ascii_case(value)),
        "stagein" | "stageout" => check_stage_list(value),
        "array_indices_submitted" => check_array_range(value),
        "tolerate_node_failures" => matches!(value, "all" | "job_start" | "none"),
        // The server completes ids without a server name with its own.
        "depend" => crate::depend::DependList::parse(value, "server").is_ok(),
        "Output_Path" | "Error_Path" => crate::jobpath::is_valid(value),
        _ => true,
    };
    if valid { Ok(()) } else { Err(Pbse::BADATVAL) }
}

/// The job priorities OpenPBS allows.
pub const PRIORITY: std::ops::RangeInclusive<i64> = -1024..=1023;

/// The longest job name OpenPBS's commands accept (`PBS_MAXJOBNAME`).
pub const MAX_JOB_NAME: usize = 236;

/// `check_job_name` as applied when submitting or altering: letters, digits and `- _ + .`
/// (a leading digit allowed), at most [`MAX_JOB_NAME`] characters.
pub fn check_job_name(name: &str) -> Result<(), Pbse> {
    check_job_name_length(name)?;
    if name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'+' | b'.')) {
        Ok(())
    } else {
        Err(Pbse::BADATVAL)
    }
}

/// The length half of [`check_job_name`]: not empty (`BADATVAL`), not longer than
/// [`MAX_JOB_NAME`] (`JOBNBIG`).
pub fn check_job_name_length(name: &str) -> Result<(), Pbse> {
    if name.is_empty() {
        return Err(Pbse::BADATVAL);
    }
    if name.len() > MAX_JOB_NAME {
        return Err(Pbse::JOBNBIG);
    }
    Ok(())
}

/// OpenPBS's long check: leading blanks, an optionally signed decimal number and nothing
/// after it.
pub fn is_long(text: &str) -> bool {
    let t = text.trim_start();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `Checkpoint`: `n s c w u`, or `c=N` / `w=N` minutes.
pub fn check_checkpoint(value: &str) -> bool {
    match value.len() {
        0 => false,
        1 => matches!(value, "n" | "s" | "c" | "w" | "u"),
        _ => {
            let Some(minutes) = value.strip_prefix("c=").or_else(|| value.strip_prefix("w=")) else {
                return false;
            };
            !minutes.is_empty() && minutes.bytes().all(|b| b.is_ascii_digit())
        }
    }
}

/// A hold list (`Hold_Types`): letters from `u o s p n`; `n` and `p` only alone.
pub fn check_hold(value: &str) -> bool {
    if value.is_empty() || !value.chars().all(|c| "uospn".contains(c)) {
        return false;
    }
    let count = |c: char| value.chars().filter(|x| *x == c).count();
    let others = |c: char| value.chars().filter(|x| *x != c).count();
    // `n` and `p` each exclude every other letter.
    let alone = |c: char| count(c) == 0 || others(c) == 0;
    alone('n') && alone('p')
}

/// `Keep_Files`: letters from `o e d n`; `n` not with `o`/`e`; `d` needs one of them.
pub fn check_keep(value: &str) -> bool {
    if value.is_empty() || !value.chars().all(|c| "oedn".contains(c)) {
        return false;
    }
    let keep = value.contains('o') || value.contains('e');
    let dont = value.contains('n');
    !(keep && dont) && !(value.contains('d') && !(keep || dont))
}

/// `Mail_Points`: `n`, or letters from `a b e j` (but not `j` alone).
pub fn check_mail_points(value: &str) -> bool {
    let v = value.trim_start();
    if v.is_empty() || v == "j" {
        return false;
    }
    v == "n" || v.chars().all(|c| "abej".contains(c))
}

/// A `name[@host][,name[@host]...]` list; `unique_hosts` forbids naming a host twice,
/// `absolute` wants every name to be an absolute path (`Shell_Path_List`).
pub fn check_at_list(list: &str, unique_hosts: bool, absolute: bool) -> bool {
    if list.is_empty() {
        return false;
    }
    let name_char = |c: char| c.is_ascii_graphic() && c != '#' && c != '@';
    // A set, not a list: the server checks lists of any length a client sends.
    let mut hosts: HashSet<&str> = HashSet::new();
    let mut rest = list;
    loop {
        let item = rest.trim_start();
        if absolute && !item.starts_with('/') {
            return false;
        }
        let (item, next) = match item.split_once(',') {
            Some((item, next)) => (item, Some(next)),
            None => (item, None),
        };
        if next == Some("") {
            return false;
        }
        let item = item.trim_end();
        let (name, host) = match item.split_once('@') {
            Some((name, host)) => (name, Some(host)),
            None => (item, None),
        };
        if name.is_empty() || !name.chars().all(name_char) {
            return false;
        }
        if let Some(host) = host {
            if host.is_empty() || !host.chars().all(name_char) {
                return false;
            }
        }
        if unique_hosts {
            let host = host.unwrap_or("");
            if !hosts.insert(host) {
                // OpenPBS stops at the repeated host and accepts what came before.
                return true;
            }
        }
        match next {
            Some(next) => rest = next,
            None => return true,
        }
    }
}

/// `stagein`/`stageout`: `local@host:remote[,...]`.
pub fn check_stage_list(list: &str) -> bool {
    crate::stage::parse(list).is_some()
}

/// `chk_Jrange`, the `array_indices_submitted` of a submission: `X-Y[:Z]` with `X < Y`
/// and `Z >= 1` (the server's own range parser takes more, such as comma lists, which no
/// submission may give).
pub fn check_array_range(text: &str) -> bool {
    let Some((x, rest)) = text.split_once('-') else {
        return false;
    };
    let (y, z) = match rest.split_once(':') {
        Some((y, z)) => (y, Some(z)),
        None => (rest, None),
    };
    let num = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok().filter(|n| *n < i64::MAX as u64)
    };
    let (Some(x), Some(y)) = (num(x), num(y)) else {
        return false;
    };
    if y <= x {
        return false;
    }
    match z {
        None => true,
        Some(z) => num(z).is_some_and(|z| z >= 1),
    }
}

/// A job command whose option letters [`OPTION_LETTERS`] lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Submits jobs.
    Qsub,
    /// Alters jobs.
    Qalter,
    /// Selects jobs by attribute.
    Qselect,
}

/// How qsub and qalter turn an option's value into its attribute's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionValue {
    /// The value as given.
    AsGiven,
    /// The value without its leading blanks, as OpenPBS's commands read these.
    TrimStart,
    /// By a rule of the command's own: a date (`-a`), a flag or a choice (`-h`, `-r`, `-c`),
    /// a list (`-l`, `-J`), `name=value` pairs (`-W`), a destination (`-q`).
    OwnRule,
}

/// One option letter of the job commands and the job attribute it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionLetter {
    /// The letter (`h` for `-h`).
    pub letter: char,
    /// The attribute, spelled as in the attribute table.
    pub attribute: &'static str,
    /// Whether qsub, qalter and qselect (in this order) take it.
    pub commands: [bool; 3],
    /// How qsub and qalter read its value.
    pub value: OptionValue,
}

impl OptionLetter {
    /// Whether `command` takes this letter for this attribute.
    pub fn used_by(&self, command: Command) -> bool {
        self.commands[command as usize]
    }
}

const fn letter(letter: char, attribute: &'static str, commands: [bool; 3]) -> OptionLetter {
    OptionLetter { letter, attribute, commands, value: OptionValue::OwnRule }
}

/// A letter whose value is its attribute's (`value` says whether leading blanks go).
const fn plain(letter: char, attribute: &'static str, value: OptionValue) -> OptionLetter {
    OptionLetter { letter, attribute, commands: SUBMIT_ALTER, value }
}

const ALL: [bool; 3] = [true, true, true];
const SUBMIT_ALTER: [bool; 3] = [true, true, false];
const SUBMIT: [bool; 3] = [true, false, false];
const SELECT: [bool; 3] = [false, false, true];

/// Which option letter of which command sets (qsub, qalter) or selects by (qselect) which
/// job attribute. `-W name=value` can set any attribute, but OpenPBS's commands blame `-W`
/// only for the attributes listed with it here (for a bad value of another, they print the
/// PBSE text instead).
pub const OPTION_LETTERS: &[OptionLetter] = &[
    letter('a', "Execution_Time", ALL),
    OptionLetter { value: OptionValue::AsGiven, ..letter('A', "Account_Name", ALL) },
    OptionLetter { value: OptionValue::AsGiven, ..letter('P', "project", ALL) },
    letter('c', "Checkpoint", ALL),
    plain('e', "Error_Path", OptionValue::AsGiven),
    letter('h', "Hold_Types", ALL),
    letter('I', "interactive", SUBMIT),
    plain('j', "Join_Path", OptionValue::AsGiven),
    letter('J', "array_indices_submitted", SUBMIT),
    plain('k', "Keep_Files", OptionValue::AsGiven),
    letter('l', "Resource_List", ALL),
    // One job per `-L` list, each a job set's member (docs/job-sets.md).
    letter('L', "Resource_List", SUBMIT),
    plain('m', "Mail_Points", OptionValue::TrimStart),
    plain('M', "Mail_Users", OptionValue::AsGiven),
    OptionLetter { value: OptionValue::AsGiven, ..letter('N', "Job_Name", ALL) },
    plain('o', "Output_Path", OptionValue::AsGiven),
    OptionLetter { value: OptionValue::TrimStart, ..letter('p', "Priority", ALL) },
    letter('q', "queue", SELECT),
    letter('r', "Rerunable", ALL),
    plain('R', "Remove_Files", OptionValue::AsGiven),
    letter('s', "job_state", SELECT),
    plain('S', "Shell_Path_List", OptionValue::AsGiven),
    plain('u', "User_List", OptionValue::AsGiven),
    letter('u', "Job_Owner", SELECT),
    letter('W', "depend", SUBMIT_ALTER),
    letter('W', "stagein", SUBMIT_ALTER),
    letter('W', "stageout", SUBMIT_ALTER),
    letter('W', "sandbox", SUBMIT_ALTER),
    letter('W', "group_list", SUBMIT_ALTER),
    letter('W', "umask", SUBMIT_ALTER),
    letter('W', "run_count", SUBMIT_ALTER),
    letter('W', "job_set", SUBMIT_ALTER),
    letter('W', "block", SUBMIT),
    letter('W', "release_nodes_on_stageout", SUBMIT),
    letter('W', "tolerate_node_failures", SUBMIT),
    letter('W', "reserve_start", SUBMIT),
    letter('W', "reserve_end", SUBMIT),
    letter('W', "cred", SUBMIT),
];

/// The option letter `command` names for `attribute` (a base name, spelled as in the
/// table), as in its `illegal -X value` message.
pub fn option_letter(command: Command, attribute: &str) -> Option<char> {
    OPTION_LETTERS.iter().find(|o| o.used_by(command) && o.attribute == attribute).map(|o| o.letter)
}

/// The options of `command` (qsub or qalter) whose value is their attribute's, in the
/// table's order: the commands read them through this, not letter by letter.
pub fn plain_options(command: Command) -> impl Iterator<Item = &'static OptionLetter> {
    OPTION_LETTERS.iter().filter(move |o| o.used_by(command) && o.value != OptionValue::OwnRule)
}

/// The attribute option `-letter` of `command` stands for; none for `-W`, which sets many.
pub fn option_attribute(command: Command, letter: char) -> Option<&'static str> {
    if letter == 'W' {
        return None;
    }
    OPTION_LETTERS.iter().find(|o| o.used_by(command) && o.letter == letter).map(|o| o.attribute)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectKind;

    #[test]
    fn mail_users_that_look_like_mailer_options_are_refused() {
        assert!(check_job_value("Mail_Users", "alice,bob@h").is_ok());
        for bad in ["-oQ/tmp", "alice, -f", "-oQ/tmp x", "a b"] {
            assert_eq!(check_job_value("Mail_Users", bad), Err(Pbse::BADATVAL), "{bad:?}");
        }
    }

    #[test]
    fn holds_keeps_mail_checkpoints() {
        for (value, ok) in [
            ("u", true),
            ("uos", true),
            ("uu", true),
            ("n", true),
            ("p", true),
            ("un", false),
            ("nu", false),
            ("up", false),
            ("x", false),
            ("", false),
        ] {
            assert_eq!(check_hold(value), ok, "hold {value}");
        }
        for (value, ok) in [
            ("n", true),
            ("oe", true),
            ("d", false),
            ("od", true),
            ("on", false),
            ("nd", true),
            ("x", false),
            ("", false),
        ] {
            assert_eq!(check_keep(value), ok, "keep {value}");
        }
        for (value, ok) in
            [("a", true), ("abe", true), ("n", true), ("an", false), ("j", false), ("aj", true), ("", false)]
        {
            assert_eq!(check_mail_points(value), ok, "mail {value}");
        }
        for (value, ok) in [
            ("n", true),
            ("u", true),
            ("c=10", true),
            ("w=5", true),
            ("c=", false),
            ("x", false),
            ("c=1x", false),
            ("", false),
        ] {
            assert_eq!(check_checkpoint(value), ok, "checkpoint {value}");
        }
    }

    #[test]
    fn ranges_lists_and_names() {
        for (value, ok) in [
            ("0-9", true),
            ("2-7:2", true),
            ("5", false),
            ("5-5", false),
            ("9-1", false),
            ("1-9:0", false),
            ("a-b", false),
            ("1-3,5", false),
            ("0-9999999999", true),
        ] {
            assert_eq!(check_array_range(value), ok, "J {value}");
        }
        for (value, ok) in [
            ("u1", true),
            ("u1@h", true),
            ("u1,u2@h", true),
            ("", false),
            ("u1,", false),
            ("@h", false),
            ("a b", false),
        ] {
            assert_eq!(check_at_list(value, false, false), ok, "list {value}");
        }
        assert!(check_at_list("/bin/sh", true, true) && !check_at_list("sh", true, true));
        assert!(check_at_list("a@h,b@h", true, false), "a repeated host ends the list");
        let many: Vec<String> = (0..200_000).map(|i| format!("u@h{i}")).collect();
        assert!(check_at_list(&many.join(","), true, false), "a long list, checked in linear time");
        assert_eq!(check_job_name("job-1.sh"), Ok(()));
        assert_eq!(check_job_name("1job"), Ok(()));
        assert_eq!(check_job_name("a b"), Err(Pbse::BADATVAL));
        assert_eq!(check_job_name(""), Err(Pbse::BADATVAL));
        assert_eq!(check_job_name(&"x".repeat(236)), Ok(()));
        assert_eq!(check_job_name(&"x".repeat(237)), Err(Pbse::JOBNBIG));
        assert_eq!(check_job_name_length("a\nb"), Ok(()));
        assert!(check_stage_list("in@host:/tmp/in,b@h:c") && !check_stage_list("in:/x"));
        assert!(!check_stage_list("out@host") && !check_stage_list(""));
    }

    #[test]
    fn numbers() {
        assert!(is_long("12") && is_long(" -3") && is_long("+0") && is_long("022"));
        assert!(!is_long("") && !is_long("-") && !is_long("1 ") && !is_long("1x"));
    }

    #[test]
    fn values_by_attribute() {
        let check = |name: &str, value: &str| check_job_value(name, value);
        let bad = Err(Pbse::BADATVAL);
        assert_eq!(check("Priority", "2000"), bad);
        assert_eq!(check("Priority", "-1025"), bad);
        assert_eq!(check("Priority", "1023"), Ok(()));
        assert_eq!(check("Priority", "-5"), Ok(()));
        assert_eq!(check("Join_Path", "x"), bad);
        assert_eq!(check("Join_Path", "eo"), Ok(()));
        assert_eq!(check("Hold_Types", "nu"), bad);
        assert_eq!(check("Keep_Files", "on"), bad);
        assert_eq!(check("Job_Name", &"x".repeat(300)), Err(Pbse::JOBNBIG));
        assert_eq!(check("sandbox", "private"), Ok(()));
        assert_eq!(check("sandbox", "nowhere"), bad);
        assert_eq!(check("Rerunable", "y"), Ok(()));
        assert_eq!(check("Rerunable", "TRUE"), Ok(()));
        assert_eq!(check("Rerunable", "maybe"), bad);
        assert_eq!(check("run_count", "-1"), bad);
        assert_eq!(check("run_count", "3"), Ok(()));
        assert_eq!(check("umask", "022"), Ok(()));
        assert_eq!(check("Execution_Time", "tomorrow"), bad);
        assert_eq!(check("Remove_Files", "oe"), Ok(()));
        assert_eq!(check("Remove_Files", ""), bad);
        assert_eq!(check("tolerate_node_failures", "job_start"), Ok(()));
        assert_eq!(check("tolerate_node_failures", "some"), bad);
        assert_eq!(check("Shell_Path_List", "sh"), bad);
        assert_eq!(check("array_indices_submitted", "1,3"), bad);
        // Read as the commands read them, whoever sends them.
        assert_eq!(check("depend", "!! anything"), bad);
        assert_eq!(check("depend", "afterok:"), bad);
        assert_eq!(check("depend", "afterok:12.s"), Ok(()));
        assert_eq!(check("Output_Path", " out"), bad);
        assert_eq!(check("Error_Path", "h:/tmp/err file"), Ok(()));
        // Left to the server.
        for name in ["Variable_List", "max_run_subjobs", "Account_Name"] {
            assert_eq!(check(name, "!! anything"), Ok(()), "{name}");
        }
    }

    #[test]
    fn option_letters() {
        use Command::{Qalter, Qselect, Qsub};
        assert_eq!(option_letter(Qsub, "Hold_Types"), Some('h'));
        assert_eq!(option_letter(Qalter, "Hold_Types"), Some('h'));
        assert_eq!(option_letter(Qsub, "interactive"), Some('I'));
        assert_eq!(option_letter(Qalter, "interactive"), None);
        assert_eq!(option_letter(Qsub, "block"), Some('W'));
        assert_eq!(option_letter(Qalter, "block"), None);
        assert_eq!(option_letter(Qalter, "depend"), Some('W'));
        assert_eq!(option_letter(Qsub, "Variable_List"), None);
        assert_eq!(option_letter(Qselect, "Job_Owner"), Some('u'));
        assert_eq!(option_letter(Qsub, "Job_Owner"), None);
        assert_eq!(option_attribute(Qselect, 'u'), Some("Job_Owner"));
        assert_eq!(option_attribute(Qsub, 'u'), Some("User_List"));
        assert_eq!(option_attribute(Qselect, 's'), Some("job_state"));
        assert_eq!(option_attribute(Qsub, 's'), None);
        assert_eq!(option_attribute(Qsub, 'W'), None);
        for letter in "aAchlNpPqrsu".chars() {
            assert!(option_attribute(Qselect, letter).is_some(), "qselect -{letter}");
        }
        // Every attribute is a job attribute (or one qsub sends and the server does not
        // keep), and no command has a letter twice but -W.
        let client_only = ["reserve_start", "reserve_end", "cred"];
        for o in OPTION_LETTERS {
            let known = ObjectKind::Job.find(o.attribute).is_some_and(|(_, d)| d.name == o.attribute);
            assert!(known || client_only.contains(&o.attribute), "{o:?}");
        }
        for command in [Qsub, Qalter, Qselect] {
            for o in OPTION_LETTERS.iter().filter(|o| o.used_by(command) && o.letter != 'W') {
                let same = OPTION_LETTERS.iter().filter(|p| p.used_by(command) && p.letter == o.letter).count();
                assert_eq!(same, 1, "{command:?} -{}", o.letter);
            }
        }
    }
}
