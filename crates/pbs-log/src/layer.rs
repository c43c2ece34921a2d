//! The log layer and its writer thread: PBS-format lines, escaped, written in batches to
//! the day's file and to stderr.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::sync::mpsc;

use chrono::Local;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// A tracing layer writing PBS-format daily log files.
pub struct PbsLogLayer {
    daemon: String,
    default_object: String,
    lines: mpsc::Sender<LogMsg>,
}

/// What the writer thread receives.
enum LogMsg {
    /// (day `YYYYMMDD`, line with its newline).
    Line(String, String),
    /// Write out everything before this, then answer.
    Flush(mpsc::Sender<()>),
    /// Close the file; the next line opens it again.
    Reopen,
}

/// The writer thread's inbox, for [`flush`].
static WRITER: std::sync::OnceLock<mpsc::Sender<LogMsg>> = std::sync::OnceLock::new();

/// How long the writer lets lines gather after a write: senders then find it busy rather
/// than asleep, so a busy server does not pay a thread wake-up per log line.
const GATHER: std::time::Duration = std::time::Duration::from_millis(20);

/// Writes out every line logged so far (call before the process exits).
pub fn flush() {
    if let Some(writer) = WRITER.get() {
        let (done, wait) = mpsc::channel();
        if writer.send(LogMsg::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(std::time::Duration::from_secs(5));
        }
    }
}

/// Writes lines to the day's file and to stderr until every sender is gone.
fn writer_loop(dir: PathBuf, inbox: mpsc::Receiver<LogMsg>) {
    let mut file: Option<(String, BufWriter<File>)> = None;
    let mut stderr = BufWriter::new(std::io::stderr());
    while let Ok(first) = inbox.recv() {
        let mut next = Some(first);
        let mut waiting: Vec<mpsc::Sender<()>> = Vec::new();
        while let Some(msg) = next {
            match msg {
                LogMsg::Line(day, line) => {
                    if file.as_ref().is_none_or(|(d, _)| *d != day) {
                        if let Some((_, mut old)) = file.take() {
                            let _ = old.flush();
                        }
                        let opened = OpenOptions::new().create(true).append(true).open(dir.join(&day));
                        file = opened.ok().map(|f| (day, BufWriter::with_capacity(64 * 1024, f)));
                    }
                    if let Some((_, f)) = file.as_mut() {
                        let _ = f.write_all(line.as_bytes());
                    }
                    let _ = stderr.write_all(line.as_bytes());
                }
                LogMsg::Flush(done) => waiting.push(done),
                LogMsg::Reopen => {
                    if let Some((_, mut old)) = file.take() {
                        let _ = old.flush();
                    }
                }
            }
            next = inbox.try_recv().ok();
        }
        if let Some((_, f)) = file.as_mut() {
            let _ = f.flush();
        }
        let _ = stderr.flush();
        let flushed = !waiting.is_empty();
        for done in waiting {
            let _ = done.send(());
        }
        if !flushed {
            std::thread::sleep(GATHER);
        }
    }
}

/// Closes the day's log file and opens it again, as OpenPBS's daemons do at SIGHUP so that
/// a file renamed by log rotation is let go: `Log closed` is the old file's last line, `Log
/// opened` and the version the new one's first.
pub fn reopen() {
    tracing::info!(object_type = "Svr", object_name = "Log", "Log closed");
    if let Some(writer) = WRITER.get() {
        let _ = writer.send(LogMsg::Reopen);
    }
    tracing::info!(object_type = "Svr", object_name = "Log", "Log opened");
    tracing::info!(object_type = "Svr", "pbs_version={}", env!("CARGO_PKG_VERSION"));
}

#[derive(Default)]
struct Fields {
    message: String,
    object_type: Option<String>,
    object_name: Option<String>,
    event: Option<String>,
    rest: String,
}

/// Appends `text` to `out` with every control character escaped (`\n`, `\r`, `\t`, else
/// `\xNN`), and the Unicode line and paragraph separators as `\u2028`/`\u2029`: a job
/// name, user, queue or attribute value with a newline would otherwise start a line of its
/// own that a reader takes for the server's. Newlines read `\n` as in OpenPBS's `qstat -f`.
pub fn push_escaped(out: &mut String, text: &str) {
    // Nearly every value is printable ASCII: one pass over the bytes settles it.
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        out.push_str(text);
        return;
    }
    let needs = |c: char| c.is_control() || c == '\u{2028}' || c == '\u{2029}';
    if !text.contains(needs) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

/// A `fmt::Write` that escapes what it is given (see [`push_escaped`]), so a message built
/// from format arguments is escaped without being formatted twice.
struct Escaping<'a>(&'a mut String);

impl std::fmt::Write for Escaping<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        push_escaped(self.0, text);
        Ok(())
    }
}

fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = escaped(value),
            "object_type" => self.object_type = Some(escaped(value)),
            "object_name" => self.object_name = Some(escaped(value)),
            "event" => self.event = Some(escaped(value)),
            other => {
                let _ = write!(self.rest, " {other}=");
                push_escaped(&mut self.rest, value);
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // The message of nearly every event arrives here, as format arguments.
        if field.name() == "message" {
            self.message.clear();
            let _ = write!(Escaping(&mut self.message), "{value:?}");
        } else {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

impl PbsLogLayer {
    /// Logs of `daemon` (`Server`, `Scheduler`, `MoM`) go into `dir`; events without an
    /// object name are attributed to `default_object` (e.g. `Server@host`).
    /// Starts the writer thread for `dir`.
    pub fn new(dir: PathBuf, daemon: &str, default_object: &str) -> PbsLogLayer {
        let (lines, received) = mpsc::channel();
        // Without the thread nothing is logged, but the daemon still works.
        let _ = std::thread::Builder::new().name("log-writer".into()).spawn(move || writer_loop(dir, received));
        let _ = WRITER.set(lines.clone());
        PbsLogLayer { daemon: daemon.to_string(), default_object: default_object.to_string(), lines }
    }
}

/// One thread's local time formatted for the current second.
struct Stamp {
    second: i64,
    /// `MM/DD/YYYY HH:MM:SS`.
    time: String,
    /// `YYYYMMDD`, the log file's name.
    day: String,
}

thread_local! {
    /// Formatting the local time was a third of a log line's cost; a busy server logs many
    /// lines a second, so each thread formats each second once.
    static STAMP: std::cell::RefCell<Stamp> =
        const { std::cell::RefCell::new(Stamp { second: i64::MIN, time: String::new(), day: String::new() }) };
}

/// Calls `f` with the local time now as `MM/DD/YYYY HH:MM:SS` and as the day `YYYYMMDD`.
pub fn with_local_time<R>(f: impl FnOnce(&str, &str) -> R) -> R {
    let utc = chrono::Utc::now();
    let second = utc.timestamp();
    STAMP.with_borrow_mut(|stamp| {
        if stamp.second != second {
            // Both strings come from the same instant, so a line is never dated one second
            // in one field and the next in the other.
            let local = utc.with_timezone(&Local);
            stamp.second = second;
            stamp.time = local.format("%m/%d/%Y %H:%M:%S").to_string();
            stamp.day = local.format("%Y%m%d").to_string();
        }
        f(&stamp.time, &stamp.day)
    })
}

fn event_code(level: &Level, object_type: &str) -> &'static str {
    match *level {
        Level::ERROR => "0001",
        Level::WARN => "0002",
        Level::INFO if object_type == "Job" => "0008",
        Level::INFO => "0002",
        Level::DEBUG => "0080",
        Level::TRACE => "0100",
    }
}

impl<S: Subscriber> Layer<S> for PbsLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let object_type = fields.object_type.as_deref().unwrap_or(&self.daemon);
        let object_name = fields.object_name.as_deref().unwrap_or(&self.default_object);
        let code = fields.event.as_deref().unwrap_or_else(|| event_code(event.metadata().level(), object_type));
        let (day, line) = with_local_time(|time, day| {
            let line = format!(
                "{time};{code};{};{object_type};{object_name};{}{}\n",
                self.default_object, fields.message, fields.rest
            );
            (day.to_string(), line)
        });
        let _ = self.lines.send(LogMsg::Line(day, line));
    }
}

/// Installs the PBS log layer (daily file and stderr). `RUST_LOG` overrides the
/// `default_filter` (e.g. `info`, or `debug` with `--debug`).
pub fn init(dir: PathBuf, daemon: &str, default_object: &str, default_filter: &str) {
    let _ = std::fs::create_dir_all(&dir);
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let _ = tracing_subscriber::registry().with(filter).with(PbsLogLayer::new(dir, daemon, default_object)).try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDateTime, Timelike};

    #[test]
    fn escaping_keeps_printable_text_and_escapes_every_control_and_line_separator() {
        let escape = |text: &str| {
            let mut out = String::from(">");
            push_escaped(&mut out, text);
            out
        };
        assert_eq!(escape("queue=workq Job_Name=a b"), ">queue=workq Job_Name=a b");
        assert_eq!(escape("caf\u{e9} \u{4e2d}"), ">caf\u{e9} \u{4e2d}");
        assert_eq!(escape("a\nb\rc\td"), ">a\\nb\\rc\\td");
        assert_eq!(escape("\u{7f}\u{1}\u{85}"), ">\\x7f\\x01\\x85");
        assert_eq!(escape("x\u{2028}y\u{2029}"), ">x\\u2028y\\u2029");
    }

    /// The lines `log` produces through a layer whose writer is this test.
    fn lines_of(log: impl FnOnce()) -> Vec<String> {
        let (lines, received) = mpsc::channel();
        let layer = PbsLogLayer { daemon: "Server".into(), default_object: "Server@h".into(), lines };
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), log);
        received
            .try_iter()
            .filter_map(|msg| match msg {
                LogMsg::Line(_, line) => Some(line),
                LogMsg::Flush(_) | LogMsg::Reopen => None,
            })
            .collect()
    }

    #[test]
    fn user_strings_cannot_forge_log_lines() {
        let name = "x\n11/25/2026 10:00:00;0008;Server@h;Job;9.h;Job deleted at request of root@h";
        let lines = lines_of(|| {
            tracing::info!(object_type = "Job", object_name = "1.h", "job name = {name}, queue = workq");
            tracing::info!(object_type = "Job", object_name = "2.h\nforged", "owner = {}", "a\rb\u{1b}[2J");
            tracing::warn!(peer = "p\nq", "{}", "tab\tand DEL\u{7f}");
        });
        assert_eq!(lines.len(), 3);
        for line in &lines {
            assert_eq!(line.matches('\n').count(), 1, "{line:?}");
            assert!(line.ends_with('\n'), "{line:?}");
            assert!(!line.contains('\r') && !line.contains('\u{1b}') && !line.contains('\u{7f}'), "{line:?}");
        }
        assert!(lines[0].ends_with(";Job;1.h;job name = x\\n11/25/2026 10:00:00;0008;Server@h;Job;9.h;Job deleted at request of root@h, queue = workq\n"), "{}", lines[0]);
        assert!(lines[1].ends_with(";Job;2.h\\nforged;owner = a\\rb\\x1b[2J\n"), "{}", lines[1]);
        assert!(lines[2].ends_with(";Server;Server@h;tab\\tand DEL\\x7f peer=p\\nq\n"), "{}", lines[2]);
    }

    #[test]
    fn a_reopened_log_goes_on_in_a_new_file_where_the_old_one_was() {
        let dir = tempfile::tempdir().unwrap();
        let (lines, inbox) = mpsc::channel();
        let writer = {
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || writer_loop(dir, inbox))
        };
        let line = |text: &str| LogMsg::Line("20261125".into(), format!("{text}\n"));
        lines.send(line("before")).unwrap();
        let (done, wait) = mpsc::channel();
        lines.send(LogMsg::Flush(done)).unwrap();
        wait.recv().unwrap();
        // Log rotation renames the file; the writer still holds it open.
        std::fs::rename(dir.path().join("20261125"), dir.path().join("20261125.old")).unwrap();
        lines.send(line("still old")).unwrap();
        lines.send(LogMsg::Reopen).unwrap();
        lines.send(line("after")).unwrap();
        drop(lines);
        writer.join().unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("20261125.old")).unwrap(), "before\nstill old\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("20261125")).unwrap(), "after\n");
    }

    #[test]
    fn plain_text_is_logged_as_it_is() {
        let lines = lines_of(|| tracing::info!(object_type = "Job", object_name = "1.h", "caf\u{e9} \\ ; [x]"));
        assert!(lines[0].ends_with(";0008;Server@h;Job;1.h;caf\u{e9} \\ ; [x]\n"), "{}", lines[0]);
    }

    #[test]
    fn the_stamp_is_the_local_time_and_its_day() {
        let before = Local::now().naive_local().with_nanosecond(0).unwrap();
        let (time, day) = with_local_time(|time, day| (time.to_string(), day.to_string()));
        let again = with_local_time(|time, _| time.to_string());
        let after = Local::now().naive_local();
        let stamped = NaiveDateTime::parse_from_str(&time, "%m/%d/%Y %H:%M:%S").unwrap();
        assert!(before <= stamped && stamped <= after, "{before} <= {stamped} <= {after}");
        assert_eq!(day, stamped.format("%Y%m%d").to_string());
        let stamped_again = NaiveDateTime::parse_from_str(&again, "%m/%d/%Y %H:%M:%S").unwrap();
        assert!(stamped <= stamped_again && stamped_again <= Local::now().naive_local());
    }
}
