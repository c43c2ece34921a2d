//! Prime time: OpenPBS's `PBS_HOME/sched_priv/holidays` file turned into non-prime
//! intervals (epoch seconds) by the daemon, and the checks the core makes with them.
//!
//! The file (`*` starts a comment line):
//!
//! ```text
//! YEAR 2026
//! *  Day       Prime  Non-Prime
//!    weekday   0600   1730
//!    saturday  none   all
//!    sunday    none   all
//! *  Day of year  Date    Holiday
//!    1            Jan 1   New Year's Day
//! ```
//!
//! A day line gives when prime time and non-prime time start (`HHMM`, `all` or
//! `none`); `monday`...`friday` override `weekday`. A holiday (its day-of-year number)
//! is non-prime all day. Days without a line, and all time outside the `YEAR`, are prime
//! (as OpenPBS without a holidays file).

use chrono::{Datelike, NaiveDate, NaiveDateTime, Weekday};

/// When one kind of time starts on a day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    All,
    None,
    At(u32),
}

fn parse_start(text: &str) -> Option<Start> {
    match text.to_ascii_lowercase().as_str() {
        "all" => Some(Start::All),
        "none" => Some(Start::None),
        t if t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit()) => {
            let hh: u32 = t[..2].parse().ok()?;
            let mm: u32 = t[2..].parse().ok()?;
            (hh < 24 && mm < 60 || (hh == 24 && mm == 0)).then_some(Start::At(hh * 60 + mm))
        }
        _ => None,
    }
}

/// Non-prime minute ranges of a day from its (prime start, non-prime start).
fn nonprime_minutes(prime: Start, nonprime: Start) -> Vec<(u32, u32)> {
    const DAY: u32 = 24 * 60;
    match (prime, nonprime) {
        (Start::All, _) | (_, Start::None) => vec![],
        (Start::None, _) | (_, Start::All) => vec![(0, DAY)],
        (Start::At(p), Start::At(n)) if p < n => vec![(0, p), (n, DAY)],
        (Start::At(p), Start::At(n)) if p > n => vec![(n, p)],
        _ => vec![],
    }
}

/// Reads a holidays file: the non-prime intervals `[from, to)` of its `YEAR` (sorted,
/// merged), converted with `to_epoch` (local time to epoch seconds), and one message per
/// malformed line (skipped). No `YEAR` line: no intervals (all prime).
pub fn parse_holidays(text: &str, to_epoch: impl Fn(NaiveDateTime) -> Option<i64>) -> (Vec<(i64, i64)>, Vec<String>) {
    let mut problems = Vec::new();
    let mut year: Option<i32> = None;
    // monday..sunday (0..7), then `weekday` at index 7.
    let mut days: [Option<(Start, Start)>; 8] = [None; 8];
    let mut holidays: Vec<u32> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('*') || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let bad =
            |problems: &mut Vec<String>| problems.push(format!("holidays line {}: malformed: {line}", number + 1));
        let first = fields[0].to_ascii_lowercase();
        let day_index = match first.as_str() {
            "monday" => Some(0),
            "tuesday" => Some(1),
            "wednesday" => Some(2),
            "thursday" => Some(3),
            "friday" => Some(4),
            "saturday" => Some(5),
            "sunday" => Some(6),
            "weekday" => Some(7),
            _ => None,
        };
        if first == "year" {
            match fields.get(1).and_then(|y| y.parse::<i32>().ok()) {
                Some(y) => year = Some(y),
                None => bad(&mut problems),
            }
        } else if let Some(index) = day_index {
            match (fields.get(1).and_then(|f| parse_start(f)), fields.get(2).and_then(|f| parse_start(f))) {
                (Some(p), Some(n)) => days[index] = Some((p, n)),
                _ => bad(&mut problems),
            }
        } else if let Ok(doy) = fields[0].parse::<u32>() {
            if (1..=366).contains(&doy) {
                holidays.push(doy);
            } else {
                bad(&mut problems);
            }
        } else {
            bad(&mut problems);
        }
    }
    let Some(year) = year else { return (Vec::new(), problems) };
    let Some(mut date) = NaiveDate::from_ymd_opt(year, 1, 1) else { return (Vec::new(), problems) };
    let mut intervals: Vec<(i64, i64)> = Vec::new();
    while date.year() == year {
        let weekday = date.weekday();
        let index = weekday.num_days_from_monday() as usize;
        let spec = days[index].or(if matches!(weekday, Weekday::Sat | Weekday::Sun) { None } else { days[7] });
        let minutes = if holidays.contains(&date.ordinal()) {
            vec![(0, 24 * 60)]
        } else {
            spec.map_or_else(Vec::new, |(p, n)| nonprime_minutes(p, n))
        };
        let at = |minute: u32| -> Option<i64> {
            let day = if minute >= 24 * 60 { date.succ_opt()? } else { date };
            to_epoch(day.and_hms_opt((minute % (24 * 60)) / 60, minute % 60, 0)?)
        };
        for (from, to) in minutes {
            if let (Some(from), Some(to)) = (at(from), at(to))
                && from < to
            {
                match intervals.last_mut() {
                    Some(last) if last.1 >= from => last.1 = last.1.max(to),
                    _ => intervals.push((from, to)),
                }
            }
        }
        let Some(next) = date.succ_opt() else { break };
        date = next;
    }
    (intervals, problems)
}

/// Whether `now` is prime time under these non-prime intervals.
pub(crate) fn is_prime(nonprime: &[(i64, i64)], now: i64) -> bool {
    !nonprime.iter().any(|&(from, to)| from <= now && now < to)
}

/// When the current prime status ends (`None`: never).
pub(crate) fn status_end(nonprime: &[(i64, i64)], now: i64) -> Option<i64> {
    if let Some(&(_, to)) = nonprime.iter().find(|&&(from, to)| from <= now && now < to) {
        return Some(to);
    }
    nonprime.iter().find(|&&(from, _)| from > now).map(|&(from, _)| from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(t: NaiveDateTime) -> Option<i64> {
        Some(t.and_utc().timestamp())
    }

    #[test]
    fn reads_days_holidays_and_bad_lines() {
        let text = "*\nYEAR 2026\n* comment\n\tweekday 0600 1730\n\tsaturday none all\n\tsunday none all\n\
                    \tfriday 0600 1200\n\t1 Jan 1 New Year's Day\n\tbogus line\n\tmonday 25:00 all\n";
        let (nonprime, problems) = parse_holidays(text, utc);
        assert_eq!(problems.len(), 2);
        let at = |m: u32, d: u32, h: u32, min: u32| {
            NaiveDate::from_ymd_opt(2026, m, d).unwrap().and_hms_opt(h, min, 0).unwrap().and_utc().timestamp()
        };
        // Thu 1 Jan 2026 is a holiday: non-prime from Wed 31 Dec... (outside the year:
        // prime) so from 1 Jan 00:00 through Fri 2 Jan 06:00.
        assert!(!is_prime(&nonprime, at(1, 1, 12, 0)));
        assert_eq!(status_end(&nonprime, at(1, 1, 12, 0)), Some(at(1, 2, 6, 0)));
        // Fri 2 Jan: prime 06:00-12:00 (friday line), then non-prime all weekend to
        // Mon 5 Jan 06:00.
        assert!(is_prime(&nonprime, at(1, 2, 9, 0)));
        assert_eq!(status_end(&nonprime, at(1, 2, 9, 0)), Some(at(1, 2, 12, 0)));
        assert_eq!(status_end(&nonprime, at(1, 3, 12, 0)), Some(at(1, 5, 6, 0)));
        // Tue 6 Jan: weekday line.
        assert!(is_prime(&nonprime, at(1, 6, 17, 29)));
        assert!(!is_prime(&nonprime, at(1, 6, 17, 30)));
        // Outside the year: prime, no end.
        assert!(is_prime(&nonprime, at(1, 1, 0, 0) - 10));
        assert_eq!(parse_holidays("weekday 0600 1730\n", utc).0, vec![]);
    }
}
