//! Durations as OpenPBS writes them: `[[HH:]MM:]SS[.fff]` in, `HH:MM:SS` out.

use std::fmt;
use std::str::FromStr;

/// The largest duration accepted, so that sums and deadlines never overflow.
const MAX_SECS: u64 = i32::MAX as u64;

/// A non-negative whole number of seconds (fractions are truncated, as OpenPBS does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration {
    secs: u64,
}

/// A duration that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal duration")]
pub struct BadDuration;

impl Duration {
    pub const fn from_secs(secs: u64) -> Self {
        Duration { secs }
    }

    pub const fn as_secs(self) -> u64 {
        self.secs
    }
}

fn digits(field: &str) -> Result<u64, BadDuration> {
    if field.is_empty() || field.len() > 10 || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BadDuration);
    }
    field.parse().map_err(|_| BadDuration)
}

impl FromStr for Duration {
    type Err = BadDuration;

    fn from_str(text: &str) -> Result<Self, BadDuration> {
        let text = text.trim();
        let fields: Vec<&str> = text.split(':').collect();
        if fields.len() > 3 {
            return Err(BadDuration);
        }
        let (last, leading) = fields.split_last().ok_or(BadDuration)?;
        // A fraction is only meaningful on the seconds of a clock form (`00:00:10.5`);
        // OpenPBS rejects a bare `00.10`.
        let seconds = match last.split_once('.') {
            Some((whole, fraction)) if !leading.is_empty() => {
                if !fraction.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(BadDuration);
                }
                digits(whole)?
            }
            Some(_) => return Err(BadDuration),
            None => digits(last)?,
        };
        let mut secs = seconds;
        let mut scale = 60;
        for field in leading.iter().rev() {
            secs = secs.checked_add(digits(field)?.checked_mul(scale).ok_or(BadDuration)?).ok_or(BadDuration)?;
            scale *= 60;
        }
        if secs > MAX_SECS {
            return Err(BadDuration);
        }
        Ok(Duration { secs })
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.secs;
        write!(f, "{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Option<&str>) {
        let got = input.parse::<Duration>().ok().map(|d| d.to_string());
        assert_eq!(got.as_deref(), expected, "input {input:?}");
    }

    #[test]
    fn parses_openpbs_forms() {
        check("3600", Some("01:00:00"));
        check("10:00", Some("00:10:00"));
        check("01:00:00", Some("01:00:00"));
        check("100:00:00", Some("100:00:00"));
        check("00:00:10.5", Some("00:00:10"));
        check("0", Some("00:00:00"));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["abc", "01:20:aa", "-1", "00.10", "99999999999999999999", "", "1:2:3:4", "1::2", "+5"] {
            check(bad, None);
        }
    }
}
