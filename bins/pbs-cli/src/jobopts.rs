//! The job options qsub and qalter share: turning `-l`, `-W`, `-a`, `-j`, `-r`, ... into job
//! attributes with OpenPBS's client-side checks and messages.

use chrono::{Datelike, Local, TimeZone};
use pbs_proto::Attr;

/// An option value OpenPBS rejects on the client: the message is printed after `<cmd>: `
/// and the command exits with `status` (2 = usage follows).
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

/// `-l res=val[,res=val...]` as `Resource_List.res` attributes. A value may itself hold
/// commas only inside quotes.
pub fn resource_list(text: &str) -> Result<Vec<Attr>, OptError> {
    let mut out = Vec::new();
    for item in split_commas(text) {
        let Some((name, value)) = item.split_once('=') else {
            return Err(OptError::illegal('l'));
        };
        if name.is_empty() || value.is_empty() {
            return Err(OptError::illegal('l'));
        }
        out.push(Attr::new(format!("Resource_List.{name}"), value.trim_matches('"')));
    }
    Ok(out)
}

/// Splits at commas that are not inside double quotes.
pub fn split_commas(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted => out.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    out.push(current);
    out
}

/// `-W k=v[,k=v...]` as attributes named `k`.
pub fn extended(text: &str) -> Result<Vec<(String, String)>, OptError> {
    let mut out = Vec::new();
    for item in split_commas(text) {
        let Some((name, value)) = item.split_once('=') else {
            return Err(OptError::illegal('W'));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(OptError::illegal('W'));
        }
        out.push((name.to_string(), value.trim_matches('"').to_string()));
    }
    Ok(out)
}

/// `[[[[CC]YY]MM]DD]hhmm[.SS]` as epoch seconds; missing parts are taken from today.
pub fn parse_datetime(text: &str) -> Option<i64> {
    let (main, secs) = match text.split_once('.') {
        Some((m, s)) if s.len() == 2 => (m, s.parse::<u32>().ok()?),
        Some(_) => return None,
        None => (text, 0),
    };
    if !main.bytes().all(|b| b.is_ascii_digit()) || main.len() < 4 || main.len() > 12 || main.len() % 2 != 0 {
        return None;
    }
    let now = Local::now();
    let field = |from_end: usize| -> Option<u32> {
        let end = main.len().checked_sub(from_end)?;
        main.get(end..end + 2)?.parse().ok()
    };
    let minute = field(2)?;
    let hour = field(4)?;
    let day = if main.len() >= 6 { field(6)? } else { now.day() };
    let month = if main.len() >= 8 { field(8)? } else { now.month() };
    let year = match main.len() {
        12 => main.get(0..4)?.parse().ok()?,
        10 => 2000 + i32::try_from(field(10)?).ok()?,
        _ => now.year(),
    };
    Local.with_ymd_and_hms(year, month, day, hour, minute, secs).single().map(|t| t.timestamp())
}

/// `-j oe|eo|n`.
pub fn join_path(text: &str) -> Result<String, OptError> {
    match text {
        "oe" | "eo" | "n" => Ok(text.to_string()),
        _ => Err(OptError::illegal('j')),
    }
}

/// `-r y|n` as `True`/`False`.
pub fn rerunable(text: &str) -> Result<&'static str, OptError> {
    match text {
        "y" => Ok("True"),
        "n" => Ok("False"),
        _ => Err(OptError::illegal('r')),
    }
}

/// `-p` priority, -1024..=1023.
pub fn priority(text: &str) -> Result<String, OptError> {
    match text.trim().parse::<i64>() {
        Ok(p) if (-1024..=1023).contains(&p) => Ok(p.to_string()),
        _ => Err(OptError::illegal('p')),
    }
}

/// `-m` mail points: `n` alone, or letters from `abej`.
pub fn mail_points(text: &str) -> Result<String, OptError> {
    let ok = text == "n" || (!text.is_empty() && text.chars().all(|c| "abej".contains(c)));
    if ok { Ok(text.to_string()) } else { Err(OptError::illegal('m')) }
}

/// `-k` keep files: `n`, or letters from `oed`.
pub fn keep_files(text: &str) -> Result<String, OptError> {
    let ok = text == "n" || (!text.is_empty() && text.chars().all(|c| "oed".contains(c)));
    if ok { Ok(text.to_string()) } else { Err(OptError::illegal('k')) }
}

/// `-c` checkpoint: `n s c u w`, `c=N`, `w=N`.
pub fn checkpoint(text: &str) -> Result<String, OptError> {
    let ok = match text.split_once('=') {
        Some(("c" | "w", n)) => n.parse::<u64>().is_ok(),
        Some(_) => false,
        None => matches!(text, "n" | "s" | "c" | "u" | "w"),
    };
    if ok { Ok(text.to_string()) } else { Err(OptError::illegal('c')) }
}

/// `-N` job name: not empty, at most 236 characters, no white space or `/`, `@`, `:`.
pub fn job_name(text: &str) -> Result<String, OptError> {
    if text.chars().count() > 236 {
        return Err(OptError { message: "Job name is too long ".into(), status: 2, usage: false });
    }
    if text.is_empty() || text.chars().any(|c| c.is_whitespace() || "/@:".contains(c)) {
        return Err(OptError::illegal('N'));
    }
    Ok(text.to_string())
}

/// An `-o`/`-e` path as OpenPBS sends it: `host:/absolute/path`.
pub fn output_path(text: &str, host: &str, cwd: &str) -> String {
    let (host, path) = match text.split_once(':') {
        Some((h, p)) if !h.is_empty() && !h.contains('/') => (h, p),
        _ => (host, text),
    };
    if path.starts_with('/') { format!("{host}:{path}") } else { format!("{host}:{cwd}/{path}") }
}

/// Escapes a Variable_List value: commas separate variables, so they are written `\,`.
pub fn escape_variable(value: &str) -> String {
    value.replace('\\', "\\\\").replace(',', "\\,")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources() {
        assert_eq!(
            resource_list("select=2:ncpus=1,walltime=1:00").unwrap(),
            vec![Attr::new("Resource_List.select", "2:ncpus=1"), Attr::new("Resource_List.walltime", "1:00")]
        );
        assert_eq!(resource_list("ncpus"), Err(OptError::illegal('l')));
        assert_eq!(resource_list("=1"), Err(OptError::illegal('l')));
    }

    #[test]
    fn simple_options() {
        assert_eq!(join_path("oe").unwrap(), "oe");
        assert!(join_path("x").is_err());
        assert_eq!(rerunable("n").unwrap(), "False");
        assert!(priority("2000").is_err());
        assert_eq!(priority("-5").unwrap(), "-5");
        assert!(mail_points("abe").is_ok() && mail_points("an").is_err());
        assert!(checkpoint("c=10").is_ok() && checkpoint("x").is_err());
        assert_eq!(job_name(&"x".repeat(237)).unwrap_err().message, "Job name is too long ");
        assert!(job_name("a b").is_err());
        assert_eq!(output_path("out.txt", "h", "/home/u"), "h:/home/u/out.txt");
        assert_eq!(output_path("other:/x", "h", "/w"), "other:/x");
        assert_eq!(escape_variable("a,b"), "a\\,b");
        assert_eq!(extended("max_run_subjobs=2,depend=afterok:1").unwrap().len(), 2);
        assert!(extended("nokey").is_err());
        assert!(parse_datetime("1200").is_some() && parse_datetime("12").is_none());
        assert!(parse_datetime("2561").is_none());
        let t = parse_datetime("202611221735").unwrap();
        assert_eq!(Local.timestamp_opt(t, 0).unwrap().format("%Y-%m-%d %H:%M").to_string(), "2026-11-22 17:35");
    }
}
