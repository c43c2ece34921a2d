//! What tracejob does with log lines, as OpenPBS's `tracejob.c` does it: reading a line of
//! a server, scheduler, mom or accounting log into its fields, telling whether it is about
//! the job asked for, putting a job's lines in time order (with the very merge sort glibc's
//! `qsort` runs, so lines of one second come out in OpenPBS's order), leaving out
//! repeated messages and printing each line wrapped as OpenPBS wraps it.

use std::cmp::Ordering;

/// Which log a line came from, with the letter tracejob prints for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `server_priv/accounting`: `A`.
    Accounting,
    /// `server_logs`: `S`.
    Server,
    /// `mom_logs`: `M`.
    Mom,
    /// `sched_logs`: `L`.
    Sched,
}

impl Source {
    /// The four logs, in the order OpenPBS reads them.
    pub(crate) const ALL: [Source; 4] = [Source::Accounting, Source::Server, Source::Mom, Source::Sched];

    /// The letter printed for the source's lines.
    pub(crate) fn letter(self) -> char {
        match self {
            Source::Accounting => 'A',
            Source::Server => 'S',
            Source::Mom => 'M',
            Source::Sched => 'L',
        }
    }

    /// The directory under `PBS_HOME` (or `PBS_MOM_HOME` for the mom's).
    pub(crate) fn dir(self) -> &'static str {
        match self {
            Source::Accounting => "server_priv/accounting",
            Source::Server => "server_logs",
            Source::Mom => "mom_logs",
            Source::Sched => "sched_logs",
        }
    }
}

/// One line about the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The date field as written.
    pub(crate) date: String,
    /// Seconds since the epoch, -1 when the date does not read.
    pub(crate) time: i64,
    /// Microseconds of a high-resolution stamp.
    pub(crate) micros: Option<i64>,
    /// The event mask field (hex), empty for accounting lines.
    pub(crate) event: String,
    /// The object name (the job id).
    pub(crate) name: String,
    /// The message.
    pub(crate) msg: String,
    /// Where it came from.
    pub(crate) source: Source,
    /// Line number in its file.
    pub(crate) lineno: usize,
    /// Left out as an excessive repeat.
    pub(crate) hidden: bool,
}

/// Reads a log line's fields as `strtok(buf, ";")` splits them (empty fields vanish, a
/// message holding `;` keeps only its first part); an accounting line is
/// `date;type;id;text`. `None` for a line too short to name an object.
pub(crate) fn parse_line(
    line: &str,
    source: Source,
    lineno: usize,
    to_time: impl Fn(&str) -> Option<i64>,
) -> Option<Entry> {
    let mut fields = line.split(';').filter(|f| !f.is_empty());
    let date = fields.next()?;
    let (event, name, msg) = if source == Source::Accounting {
        let _record_type = fields.next();
        (String::new(), fields.next()?, fields.next().unwrap_or(""))
    } else {
        let event = fields.next().unwrap_or("");
        let _object = fields.next();
        let _kind = fields.next();
        (event.to_string(), fields.next()?, fields.next().unwrap_or(""))
    };
    let (time, micros) = match date.split_once('.').filter(|_| source != Source::Accounting) {
        Some((seconds, micros)) => match (to_time(seconds), micros.parse::<i64>()) {
            (Some(t), Ok(m)) => (t, Some(m)),
            _ => (-1, None),
        },
        None => (to_time(date).unwrap_or(-1), None),
    };
    Some(Entry {
        date: date.to_string(),
        time,
        micros,
        event,
        name: name.to_string(),
        msg: msg.to_string(),
        source,
        lineno,
        hidden: false,
    })
}

/// Whether a line's object `name` is job `wanted`: with a server suffix, the name starts
/// with it; without, the name's part before its first `.` is it.
pub(crate) fn is_job(wanted: &str, name: &str) -> bool {
    if wanted.contains('.') { name.starts_with(wanted) } else { name.split('.').next() == Some(wanted) }
}

/// OpenPBS's `sort_by_date`: by time, then microseconds, then, in one file, by line.
/// Lines of one second from different files compare equal.
fn by_date(a: &Entry, b: &Entry) -> Ordering {
    a.time.cmp(&b.time).then_with(|| {
        if let (Some(x), Some(y)) = (a.micros, b.micros) {
            if x != y {
                return x.cmp(&y);
            }
        }
        if a.source == b.source { a.lineno.cmp(&b.lineno) } else { Ordering::Equal }
    })
}

/// glibc's `qsort` for arrays that fit in memory: a top-down merge sort (`msort_with_tmp`)
/// that halves as `n / 2` and takes from the left on ties. `by_date` is no total order, so
/// only this very algorithm puts one second's lines where OpenPBS's tracejob puts them.
fn msort(items: &mut [Entry], cmp: &impl Fn(&Entry, &Entry) -> Ordering) {
    let n = items.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    msort(&mut items[..n1], cmp);
    msort(&mut items[n1..], cmp);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&items[i], &items[j]) != Ordering::Greater {
            merged.push(items[i].clone());
            i += 1;
        } else {
            merged.push(items[j].clone());
            j += 1;
        }
    }
    merged.extend_from_slice(&items[i..n1]);
    merged.extend_from_slice(&items[j..n]);
    items.clone_from_slice(&merged);
}

/// OpenPBS's `filter_excess`: sorts by message, and of each message seen `threshold`
/// times or more keeps one (the very ones OpenPBS keeps).
pub(crate) fn filter_excess(entries: &mut [Entry], threshold: usize) {
    if entries.is_empty() {
        return;
    }
    msort(entries, &|a: &Entry, b: &Entry| a.msg.as_bytes().cmp(b.msg.as_bytes()));
    let mut count = 1;
    let mut msg = entries[0].msg.clone();
    let mut j = 0;
    let n = entries.len();
    for i in 1..n {
        if entries[i].msg == msg {
            count += 1;
        } else {
            if count >= threshold {
                while j + 1 < i {
                    entries[j].hidden = true;
                    j += 1;
                }
            }
            j = i;
            count = 1;
            msg = entries[i].msg.clone();
        }
    }
    if count >= threshold {
        j += 1;
        while j < n {
            entries[j].hidden = true;
            j += 1;
        }
    }
}

/// Puts a job's lines in time order.
pub(crate) fn sort_by_date(entries: &mut [Entry]) {
    msort(entries, &by_date);
}

/// The event mask of a line as `strtol(event, NULL, 16)` reads it; accounting lines are 0.
pub(crate) fn event_mask(entry: &Entry) -> i64 {
    if entry.source == Source::Accounting {
        return 0;
    }
    let digits: String = entry.event.trim_start().chars().take_while(char::is_ascii_hexdigit).collect();
    i64::from_str_radix(&digits, 16).unwrap_or(0)
}

/// The printed lines of one entry: date and source letter in columns, the message wrapped
/// to `columns` (0: not wrapped) with continuation lines indented under the message.
pub(crate) fn format_entry(entry: &Entry, high_res: bool, columns: usize) -> String {
    let (head, start) = if high_res {
        (format!("{:<27} {:<5}", entry.date, entry.source.letter()), 33)
    } else {
        (format!("{:<20} {:<5}", entry.date, entry.source.letter()), 26)
    };
    let mut out = head;
    let msg = visible(&entry.msg);
    let lines = wrap(&msg, start, columns);
    for (n, line) in lines.iter().enumerate() {
        if n > 0 {
            out.push_str(&" ".repeat(start));
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// OpenPBS's `show_nonprint_chars`: a control character other than newline and tab as
/// `^X`.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("^{}", char::from((c as u8) ^ 0x40)),
            c => c.to_string(),
        })
        .collect()
}

/// OpenPBS's `line_wrap`: pieces of at most `end - start` bytes broken at a space (or at
/// the next space when a word is longer), the space dropped.
fn wrap(text: &str, start: usize, end: usize) -> Vec<String> {
    if end == 0 || text.is_empty() {
        return vec![text.to_string()];
    }
    let bytes = text.as_bytes();
    let width = end.saturating_sub(start);
    let total = bytes.len();
    let mut out = Vec::new();
    let mut from = 0;
    while from < total {
        let cut = if from + width < total {
            let mut at = from + width;
            while at > from && bytes[at] != b' ' {
                at -= 1;
            }
            if at == from {
                at = from + width;
                while at < total && bytes[at] != b' ' {
                    at += 1;
                }
            }
            at
        } else {
            total
        };
        out.push(String::from_utf8_lossy(&bytes[from..cut]).into_owned());
        from = cut + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(time: i64, source: Source, lineno: usize, msg: &str) -> Entry {
        Entry {
            date: "11/25/2026 13:24:24".into(),
            time,
            micros: None,
            event: "0010".into(),
            name: "1.vm".into(),
            msg: msg.into(),
            source,
            lineno,
            hidden: false,
        }
    }

    #[test]
    fn fields_are_read_as_strtok_reads_them() {
        let time = |_: &str| Some(5);
        let server = "11/25/2026 13:24:24;0008;Server@vm;Job;24909.vm;Job Queued at request of u@vm";
        let e = parse_line(server, Source::Server, 1, time).unwrap();
        assert_eq!(
            (e.name.as_str(), e.msg.as_str(), e.event.as_str(), e.time),
            ("24909.vm", "Job Queued at request of u@vm", "0008", 5)
        );
        let acct = "11/25/2026 13:24:26;D;24909.vm;requestor=u@vm";
        let e = parse_line(acct, Source::Accounting, 2, time).unwrap();
        assert_eq!((e.name.as_str(), e.msg.as_str()), ("24909.vm", "requestor=u@vm"));
        // Truncated lines name nothing, or name a job without a message.
        assert!(parse_line("11/25/2026 13:24", Source::Server, 3, time).is_none());
        assert!(parse_line("11/25/2026 13:24:26;E", Source::Accounting, 3, time).is_none());
        assert_eq!(parse_line("x;0008;S;Job;7.vm", Source::Server, 3, |_| None).unwrap().time, -1);
    }

    #[test]
    fn ids_match_as_openpbs_matches_them() {
        assert!(is_job("24907.vm", "24907.vm"));
        assert!(is_job("24907", "24907.vm"));
        assert!(!is_job("2490", "24907.vm"));
        assert!(!is_job("24911[]", "24911[1].vm"));
        assert!(is_job("24911[1].vm", "24911[1].vm"));
    }

    #[test]
    fn one_seconds_lines_keep_their_file_order_and_times_their_order() {
        let mut lines = vec![
            entry(2, Source::Server, 9, "b"),
            entry(1, Source::Accounting, 1, "q"),
            entry(1, Source::Server, 2, "enqueuing"),
            entry(1, Source::Server, 3, "Job Queued"),
            entry(1, Source::Sched, 1, "Considering job to run"),
        ];
        sort_by_date(&mut lines);
        let times: Vec<i64> = lines.iter().map(|e| e.time).collect();
        assert_eq!(times, [1, 1, 1, 1, 2]);
        let server: Vec<&str> = lines.iter().filter(|e| e.source == Source::Server).map(|e| e.msg.as_str()).collect();
        assert_eq!(server, ["enqueuing", "Job Queued", "b"]);
    }

    #[test]
    fn a_message_repeated_fifteen_times_is_printed_once() {
        let mut lines: Vec<Entry> = (0..16).map(|i| entry(i, Source::Mom, i as usize, "same")).collect();
        lines.push(entry(3, Source::Mom, 99, "other"));
        filter_excess(&mut lines, 15);
        assert_eq!(lines.iter().filter(|e| !e.hidden).count(), 2);
    }

    #[test]
    fn long_messages_wrap_under_the_message_column() {
        let e = entry(1, Source::Accounting, 1, "user=pbsuser group=pbsuser project=_pbs_project_default");
        assert_eq!(
            format_entry(&e, false, 60),
            "11/25/2026 13:24:24  A    user=pbsuser group=pbsuser\n                          project=_pbs_project_default\n"
        );
        assert_eq!(format_entry(&e, false, 0).lines().count(), 1);
    }
}
