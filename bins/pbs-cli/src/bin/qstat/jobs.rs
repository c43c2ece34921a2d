//! The one-line-per-job displays: the default table (`qstat`, `-p`, `-w`) and the
//! alternate table (`-a`, `-i`, `-r`, `-H`, `-u`, `-n`, `-s`, `-1`, `-T`, `-G`, `-M`), with
//! OpenPBS's column widths, cuts and `--` placeholders.

use std::borrow::Cow;

use chrono::{Datelike, Local, TimeZone};
use pbs_core::cnum::atol;
use pbs_proto::StatusObject;

use crate::text::{before, left, left_cut, push_visible, right, right_cut, star};

/// How a table is laid out.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Layout {
    /// `-w`: wider columns.
    pub wide: bool,
    /// The server's `max_job_sequence_id` is above 9999999: wider job ids.
    pub incr: bool,
}

/// The server line above the tables: its name (alternate table only) and `comment`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header<'a> {
    /// Name shown as `<name>: ` by the alternate table.
    pub server: &'a str,
    /// The server's `comment`, if set.
    pub comment: Option<&'a str>,
}

/// Unit for the Memory column (`-M` megawords, `-G` gigabytes, else the value's own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SizeUnit {
    #[default]
    Auto,
    MegaWords,
    GigaBytes,
}

/// Options of the alternate table.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AltOptions {
    pub layout: Layout,
    /// `-n`: exec_host below (or, with `-1`, after) the row.
    pub nodes: bool,
    /// `-s`: the comment below the row.
    pub comments: bool,
    /// `-1`.
    pub one_line: bool,
    /// `-T`: estimated start times instead of elapsed time.
    pub estimated: bool,
    pub unit: SizeUnit,
}

const NULL: &[u8] = b"(null)";
const BLANK: &[u8] = b" -- ";

/// The default table's header lines (with the server comment above them, if any).
pub(crate) fn default_header(out: &mut Vec<u8>, layout: Layout, percent: bool, comment: Option<&str>) {
    if let Some(comment) = comment {
        push_visible(out, comment.as_bytes());
        out.push(b'\n');
    }
    let (title, dashes) = match (percent, layout.wide, layout.incr) {
        (true, true, _) => (
            "Job id                         Name            User              % done  S Queue",
            "-----------------------------  --------------- ---------------  -------- - ---------------",
        ),
        (true, false, true) => (
            "Job id                 Name             User               % done  S Queue",
            "---------------------  ---------------- ----------------  -------- - -----",
        ),
        (true, false, false) => (
            "Job id            Name             User               % done  S Queue",
            "----------------  ---------------- ----------------  -------- - -----",
        ),
        (false, true, _) => (
            "Job id                         Name            User             Time Use S Queue",
            "-----------------------------  --------------- ---------------  -------- - ---------------",
        ),
        (false, false, true) => (
            "Job id                 Name             User              Time Use S Queue",
            "---------------------  ---------------- ----------------  -------- - -----",
        ),
        (false, false, false) => (
            "Job id            Name             User              Time Use S Queue",
            "----------------  ---------------- ----------------  -------- - -----",
        ),
    };
    out.extend_from_slice(title.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(dashes.as_bytes());
    out.push(b'\n');
}

/// The default table's rows: id, name, owner, cput used (or `% done` with `-p`), state,
/// queue.
pub(crate) fn default_rows(out: &mut Vec<u8>, jobs: &[StatusObject], layout: Layout, percent: bool) {
    let (id_w, name_w, user_w, queue_w) = if layout.wide {
        (30, 15, 15, 15)
    } else if layout.incr {
        (22, 16, 16, 16)
    } else {
        (17, 16, 16, 16)
    };
    for job in jobs {
        let mut name: Option<Cow<'_, [u8]>> = None;
        let mut owner: Option<&[u8]> = None;
        let mut state: Option<&[u8]> = None;
        let mut queue: Option<&[u8]> = None;
        let (mut timeu, mut timer, mut wtimu, mut wtimr, mut arsct) = (None, None, None, None, None);
        for attr in &job.attrs {
            let value = attr.1.as_str();
            match attr.0.as_str() {
                "Job_Name" => {
                    // Names of the full column width are cut too, unlike the other columns.
                    let bytes = value.as_bytes();
                    name = Some(if bytes.len() >= name_w {
                        let mut cut = bytes[..name_w - 1].to_vec();
                        cut.push(b'*');
                        Cow::Owned(cut)
                    } else {
                        Cow::Borrowed(bytes)
                    });
                }
                "Job_Owner" => owner = Some(before(value, '@').as_bytes()),
                "resources_used.cput" => timeu = Some(value),
                "resources_used.walltime" => wtimu = Some(value),
                "Resource_List.cput" => timer = Some(value),
                "Resource_List.walltime" => wtimr = Some(value),
                "job_state" => state = Some(value.as_bytes()),
                "queue" => queue = Some(before(value, '@').as_bytes()),
                "array_state_count" => arsct = Some(value),
                _ => {}
            }
        }
        let id = star(short_id(&job.name).as_bytes(), id_w);
        let owner = star(owner.unwrap_or(NULL), user_w);
        let state = star(state.unwrap_or(NULL), 1);
        let queue = star(queue.unwrap_or(NULL), queue_w);
        let cut8 = |v: Option<&str>| v.map(|v| String::from_utf8_lossy(&star(v.as_bytes(), 8)).into_owned());
        let used: Cow<'_, [u8]> = if percent {
            let state_text = String::from_utf8_lossy(&state).into_owned();
            percent_done(
                &state_text,
                cut8(Some(timeu.unwrap_or("0"))).as_deref(),
                cut8(timer).as_deref(),
                cut8(wtimu).as_deref(),
                cut8(wtimr).as_deref(),
                arsct,
            )
            .into_bytes()
            .into()
        } else {
            star(timeu.unwrap_or("0").as_bytes(), 8)
        };
        left(out, &id, id_w);
        out.push(b' ');
        left(out, name.as_deref().unwrap_or(NULL), name_w);
        out.push(b' ');
        left(out, &owner, user_w);
        out.extend_from_slice(b"  ");
        right(out, &used, 8);
        out.push(b' ');
        right(out, &state, 1);
        out.push(b' ');
        left(out, &queue, queue_w);
        out.push(b'\n');
    }
}

/// `123.host.example.com` -> `123.host`: the id up to the first dot of the server name.
pub(crate) fn short_id(id: &str) -> &str {
    match id.find('.') {
        Some(first) => match id[first + 1..].find('.') {
            Some(second) => &id[..first + 1 + second],
            None => id,
        },
        None => id,
    }
}

/// `hh:mm:ss` (or fewer fields) in seconds, reading each field like `atol`.
fn seconds(text: &str) -> i64 {
    text.split(':').fold(0, |acc, part| acc.saturating_mul(60).saturating_add(atol(part)))
}

/// The `-p` column: share of subjobs done for an array, else the larger of cput and walltime
/// used over requested; `-- ` when unknown.
fn percent_done(
    state: &str,
    timeu: Option<&str>,
    timer: Option<&str>,
    wtimu: Option<&str>,
    wtimr: Option<&str>,
    arsct: Option<&str>,
) -> String {
    match state.as_bytes().first() {
        Some(b'Q' | b'T' | b'W') => return "-- ".to_string(),
        Some(b'X') => return "100".to_string(),
        _ => {}
    }
    if let Some(counts) = arsct {
        let get = |key: &str| {
            counts
                .split_whitespace()
                .find_map(|item| item.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
                .map(atol)
                .unwrap_or(0)
        };
        let (queued, running, exiting, expired) = (get("Queued"), get("Running"), get("Exiting"), get("Expired"));
        let total = queued + running + exiting + expired;
        if total != 0 {
            let done = expired * 100 / total;
            if (0..1000).contains(&done) {
                return format!("{done:3} ");
            }
        }
        return "-- ".to_string();
    }
    let ratio = |used: Option<&str>, requested: Option<&str>| match (used, requested) {
        (Some(used), Some(requested)) => {
            let bottom = seconds(requested);
            if bottom != 0 { seconds(used) * 100 / bottom } else { -1 }
        }
        _ => -1,
    };
    let cpu = ratio(timeu, timer);
    let wall = ratio(wtimu, wtimr);
    if cpu != -1 || wall != -1 { format!("{:3} ", cpu.max(wall)) } else { "-- ".to_string() }
}

/// The alternate table's header: a blank line, `<server>: <comment>`, then three lines.
pub(crate) fn alt_header(out: &mut Vec<u8>, header: Header<'_>, options: AltOptions) {
    out.push(b'\n');
    out.extend_from_slice(header.server.as_bytes());
    out.extend_from_slice(b": ");
    if let Some(comment) = header.comment {
        push_visible(out, comment.as_bytes());
    }
    let layout = options.layout;
    if layout.wide {
        const SPACES: &[u8] = &[b' '; 99];
        out.push(b'\n');
        if options.estimated {
            out.extend_from_slice(SPACES);
            out.extend_from_slice(b"               Est\n");
        }
        out.extend_from_slice(SPACES);
        out.extend_from_slice(if options.estimated { b"Req'd  Req'd   Start\n" } else { b"Req'd  Req'd   Elap\n" });
        out.extend_from_slice(
            b"Job ID                         Username        Queue           Jobname         SessID   NDS  TSK   Memory Time  S Time\n",
        );
        out.extend_from_slice(
            b"------------------------------ --------------- --------------- --------------- -------- ---- ----- ------ ----- - -----\n",
        );
        return;
    }
    let indent = if layout.incr { 65 } else { 60 };
    out.push(b'\n');
    if options.estimated {
        out.resize(out.len() + indent + 15, b' ');
        out.extend_from_slice(b"Est\n");
    }
    out.resize(out.len() + indent, b' ');
    out.extend_from_slice(if options.estimated { b"Req'd  Req'd   Start\n" } else { b"Req'd  Req'd   Elap\n" });
    if layout.incr {
        out.extend_from_slice(
            b"Job ID               Username Queue    Jobname    SessID NDS TSK Memory Time  S Time\n",
        );
        out.extend_from_slice(
            b"-------------------- -------- -------- ---------- ------ --- --- ------ ----- - -----\n",
        );
    } else {
        out.extend_from_slice(b"Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time\n");
        out.extend_from_slice(b"--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----\n");
    }
}

/// Comments longer than a line are cut and end in `...`.
const COMMENT_SCOPE_SHORT: usize = 74;
const COMMENT_SCOPE_WIDE: usize = 114;
/// What is kept of a cut comment (the buffer size OpenPBS copies into, less its NUL).
const COMMENT_KEEP_SHORT: usize = 70;
const COMMENT_KEEP_WIDE: usize = 110;

/// The alternate table's rows. `now` is used by `-T` only.
pub(crate) fn alt_rows<'a>(out: &mut Vec<u8>, jobs: &'a [StatusObject], options: AltOptions, now: i64) {
    let wide = options.layout.wide;
    let pick = |short: usize, long: usize| if wide { long } else { short };
    for job in jobs {
        // Values are cut (last character `*`) when they are set; the ` -- ` placeholders
        // are not, and the column's precision shortens them instead.
        let id_len = if options.layout.incr { 20 } else { 15 };
        let cut = |value: &'a [u8], short: usize, long: usize| star(value, pick(short, long));
        let mut user: Cow<'_, [u8]> = Cow::Borrowed(BLANK);
        let mut queue: Cow<'_, [u8]> = Cow::Borrowed(BLANK);
        let mut name: Cow<'_, [u8]> = Cow::Borrowed(BLANK);
        let mut session: Cow<'_, [u8]> = Cow::Borrowed(BLANK);
        let mut nodect: Cow<'_, [u8]> = Cow::Borrowed(BLANK);
        let mut tasks: Cow<'_, [u8]> = Cow::Borrowed(BLANK);
        let mut memory: Vec<u8> = BLANK.to_vec();
        let (mut req_cpu, mut req_wall, mut used_cpu, mut used_wall): (&[u8], &[u8], &[u8], &[u8]) =
            (BLANK, BLANK, BLANK, BLANK);
        let mut state: &[u8] = BLANK;
        let mut exec_host: &[u8] = BLANK;
        let mut comment: Vec<u8> = BLANK.to_vec();
        let mut estimated: Option<&str> = None;
        let mut use_cpu = false;
        for attr in &job.attrs {
            let value = attr.1.as_bytes();
            match attr.0.as_str() {
                "Job_Name" => name = cut(value, 10, 15),
                "Job_Owner" => user = cut(before(&attr.1, '@').as_bytes(), 8, 15),
                "job_state" => state = value,
                "queue" => queue = cut(value, 8, 15),
                "session_id" => session = cut(value, 6, 8),
                "Resource_List.nodect" => nodect = cut(value, 3, 4),
                "Resource_List.ncpus" | "Resource_List.mppe" if value != b"0" => tasks = cut(value, 3, 5),
                "Resource_List.mem" => {
                    let mut size = convert_size(&attr.1, options.unit).into_bytes();
                    size.truncate(5);
                    memory = size;
                }
                "Resource_List.walltime" => req_wall = value,
                "Resource_List.cput" => {
                    req_cpu = value;
                    use_cpu = true;
                }
                "exec_host" => exec_host = value,
                "estimated.start_time" => estimated = Some(&attr.1),
                "resources_used.walltime" => used_wall = value,
                "resources_used.cput" => used_cpu = value,
                "comment" => comment = cut_comment(value, wide),
                _ => {}
            }
        }
        let time: Vec<u8> = if options.estimated {
            if matches!(state.first(), Some(b'Q' | b'S' | b'B')) {
                estimated_start(estimated, now).into_bytes()
            } else {
                b"--".to_vec()
            }
        } else if use_cpu {
            used_cpu.to_vec()
        } else {
            used_wall.to_vec()
        };
        let id = star(job.name.as_bytes(), pick(id_len, 30));
        let requested = if use_cpu { req_cpu } else { req_wall };
        if wide {
            left_cut(out, &id, 30);
            out.push(b' ');
            left_cut(out, &user, 15);
            out.push(b' ');
            left_cut(out, &queue, 15);
            out.push(b' ');
            left_cut(out, &name, 15);
            out.push(b' ');
            right_cut(out, &session, 8);
            out.push(b' ');
            right_cut(out, &nodect, 4);
            out.push(b' ');
            right_cut(out, &tasks, 5);
            out.push(b' ');
            right_cut(out, &memory, 6);
            out.push(b' ');
            right_cut(out, requested, 5);
            out.push(b' ');
            right(out, state, 1);
            out.push(b' ');
            right_cut(out, &time, 5);
        } else {
            left_cut(out, &id, id_len);
            out.push(b' ');
            left_cut(out, &user, 8);
            out.push(b' ');
            left_cut(out, &queue, 8);
            out.push(b' ');
            left_cut(out, &name, 10);
            out.push(b' ');
            right_cut(out, &session, 6);
            out.push(b' ');
            right_cut(out, &nodect, 3);
            out.push(b' ');
            right_cut(out, &tasks, 3);
            out.push(b' ');
            right_cut(out, &memory, 6);
            out.push(b' ');
            right_cut(out, requested, 5);
            out.push(b' ');
            right_cut(out, state, 1);
            out.push(b' ');
            right_cut(out, &time, 5);
        }
        out.push(if options.one_line { b' ' } else { b'\n' });
        if options.nodes {
            node_lines(out, exec_host, options.one_line);
        }
        if options.comments && !comment.is_empty() {
            out.extend_from_slice(b"   ");
            push_visible(out, &comment);
            out.push(b'\n');
        }
    }
}

fn cut_comment(value: &[u8], wide: bool) -> Vec<u8> {
    if value.len() <= COMMENT_SCOPE_SHORT || (wide && value.len() <= COMMENT_SCOPE_WIDE) {
        return value.to_vec();
    }
    let keep = if wide { COMMENT_KEEP_WIDE } else { COMMENT_KEEP_SHORT };
    let mut cut = value[..keep.min(value.len())].to_vec();
    cut.extend_from_slice(b"...");
    cut
}

/// The exec_host list as `-n` shows it: hosts cut at their first dot, lines of under 78
/// characters joined by `+`, indented by 3 (or all on the row with `-1`).
pub(crate) fn node_lines(out: &mut Vec<u8>, exec_host: &[u8], one_line: bool) {
    if exec_host.is_empty() {
        return;
    }
    let mut line: Vec<u8> = Vec::with_capacity(80);
    let flush = |out: &mut Vec<u8>, line: &[u8], end: bool| {
        if !one_line {
            out.extend_from_slice(b"   ");
        }
        push_visible(out, line);
        if end || !one_line {
            out.push(b'\n');
        }
    };
    for token in exec_host.split(|b| *b == b'+').filter(|t| !t.is_empty()) {
        let host_len = token.iter().position(|b| *b == b'/').unwrap_or(token.len());
        let (host, chunk) = token.split_at(host_len);
        let host_text = String::from_utf8_lossy(host);
        let short: &[u8] = if host_text.parse::<std::net::Ipv4Addr>().is_ok() {
            host
        } else {
            host.split(|b| *b == b'.').find(|part| !part.is_empty()).unwrap_or(b"(null)")
        };
        let len = short.len() + chunk.len();
        if line.len() + len >= 77 {
            flush(out, &line, false);
            line.clear();
        }
        line.extend_from_slice(short);
        line.extend_from_slice(chunk);
        line.push(b'+');
    }
    if line.is_empty() {
        if one_line {
            out.push(b'\n');
        }
        return;
    }
    line.pop();
    flush(out, &line, true);
}

/// A size as the Memory columns show it: `cnv_size` of OpenPBS, in the value's own unit
/// (raised until it has at most 4 digits), or megawords (`-M`) or gigabytes (`-G`).
pub(crate) fn convert_size(value: &str, unit: SizeUnit) -> String {
    const SUFFIXES: &[u8] = b" kmgtp?";
    let digits_end = value.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(value.len());
    let mut n: u64 = value[..digits_end].parse().unwrap_or(0);
    let rest = &value.as_bytes()[digits_end..];
    let from: i32 = match rest.first() {
        Some(b'k') => 1,
        Some(b'm') => 2,
        Some(b'g') => 3,
        Some(b't') => 4,
        _ => 0,
    };
    let mut words = false;
    if rest.first() == Some(&b'w') || rest.get(1) == Some(&b'w') {
        n <<= 3;
        words = true;
    }
    let mut to = match unit {
        SizeUnit::MegaWords => {
            words = true;
            2
        }
        SizeUnit::GigaBytes => {
            words = false;
            3
        }
        SizeUnit::Auto => from,
    };
    let shift = (from - to) * 10;
    if shift < 0 {
        let s = (-shift) as u32;
        n = (n + ((1u64 << s) - 1)) >> s;
    } else if shift > 0 {
        n = n.checked_shl(shift as u32).unwrap_or(u64::MAX);
    }
    if words {
        n = (n + 7) >> 3;
    }
    while n > 9999 {
        n = (n + 1023) >> 10;
        to += 1;
    }
    let letter = SUFFIXES.get(to as usize).copied().unwrap_or(b'?') as char;
    format!("{n}{letter}{}", if words { 'w' } else { 'b' })
}

/// The `-T` column: `?` when the scheduler could not estimate, `--` when unset or past, else
/// `HH:MM` today, `We 15` this week, `Feb` this year, `2028` within five years, or `>5yrs`.
pub(crate) fn estimated_start(value: Option<&str>, now: i64) -> String {
    let Some(value) = value else { return "--".into() };
    let start = atol(value);
    if start == 0 {
        return "?".into();
    }
    let (Some(now_tm), Some(start_tm)) = (Local.timestamp_opt(now, 0).single(), Local.timestamp_opt(start, 0).single())
    else {
        return "--".into();
    };
    if start < now {
        return "--".into();
    }
    if now_tm.year() == start_tm.year() && now_tm.ordinal() == start_tm.ordinal() {
        start_tm.format("%H:%M").to_string()
    } else if start - now < 7 * 24 * 3600 {
        let day = start_tm.format("%a").to_string();
        format!("{} {}", &day[..day.len().min(2)], start_tm.format("%H"))
    } else if now_tm.year() == start_tm.year() {
        start_tm.format("%b").to_string()
    } else if start_tm.year() - now_tm.year() < 5 {
        start_tm.format("%Y").to_string()
    } else {
        ">5yrs".into()
    }
}

/// Orders jobs for `-T`: started jobs first by start time, then queued ones by estimated
/// start, unknown or past estimates last. An insertion sort, as OpenPBS's, since the order
/// is not total.
pub(crate) fn sort_by_estimate(jobs: Vec<StatusObject>, now: i64) -> Vec<StatusObject> {
    let key = |job: &StatusObject| {
        let get = |name: &str| job.get(name).map(atol).unwrap_or(-1);
        (get("stime"), get("estimated.start_time"))
    };
    let compare = |a: (i64, i64), b: (i64, i64)| -> i32 {
        let ((stime_a, est_a), (stime_b, est_b)) = (a, b);
        if stime_a >= 0 || stime_b >= 0 {
            return if stime_a == -1 && stime_b >= 0 {
                1
            } else if stime_a >= 0 && stime_b == -1 {
                -1
            } else {
                (stime_a.cmp(&stime_b)) as i32
            };
        }
        if est_a == est_b {
            0
        } else if est_a == -1 || est_a < now {
            1
        } else if est_b == -1 || est_b < now {
            -1
        } else {
            (est_a.cmp(&est_b)) as i32
        }
    };
    let mut sorted: Vec<(StatusObject, (i64, i64))> = Vec::with_capacity(jobs.len());
    for job in jobs {
        let k = key(&job);
        let at = sorted.iter().position(|(_, other)| compare(k, *other) < 0).unwrap_or(sorted.len());
        sorted.insert(at, (job, k));
    }
    sorted.into_iter().map(|(job, _)| job).collect()
}
