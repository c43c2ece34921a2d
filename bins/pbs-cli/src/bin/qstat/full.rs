//! The attribute-per-line displays (`-f`, `-f -w`, `-F dsv`) of jobs, queues and the server,
//! and what a job attribute's value looks like there (times as dates, the executable in its
//! JSDL wrapping).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use pbs_cli::timefmt::{ctime, is_time_attribute};
use pbs_proto::StatusObject;

use crate::text::{escape_feeds, push_visible};
use pbs_core::cnum::atol;

/// Which objects are shown: decides the title and some details of the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Job,
    Queue,
    Server,
}

impl Kind {
    fn title(self) -> &'static str {
        match self {
            Kind::Job => "Job Id",
            Kind::Queue => "Queue",
            Kind::Server => "Server",
        }
    }
}

/// Line limit of the folding rule (OpenPBS's `CHAR_LINE_LIMIT`).
const LINE_LIMIT: usize = 78;

/// `-f`: `<Title>: <name>`, one `    name = value` line per attribute (folded unless
/// `one_line`), then a blank line.
pub(crate) fn text(out: &mut Vec<u8>, kind: Kind, objects: &[StatusObject], one_line: bool) {
    for object in objects {
        out.extend_from_slice(kind.title().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(object.name.as_bytes());
        out.push(b'\n');
        for attr in &object.attrs {
            let value = shown_value(kind, &attr.0, &attr.1);
            if one_line {
                attr_one_line(out, &attr.0, &value);
            } else {
                attr_folded(out, &attr.0, value.as_bytes());
            }
            out.push(b'\n');
        }
        // Jobs and queues end the last attribute with a newline of its own even when there
        // is none; the server display does not.
        if kind != Kind::Server && object.attrs.is_empty() {
            out.push(b'\n');
        }
        out.push(b'\n');
    }
}

/// `-F dsv`: `<Title>: <name>` and `name=value` items joined by `delimiter`, one line per
/// object; the delimiter inside values is escaped with a backslash, newlines as `\n`.
pub(crate) fn dsv(out: &mut Vec<u8>, kind: Kind, objects: &[StatusObject], delimiter: &str) {
    for object in objects {
        out.extend_from_slice(kind.title().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(object.name.as_bytes());
        out.extend_from_slice(delimiter.as_bytes());
        for (i, attr) in object.attrs.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(delimiter.as_bytes());
            }
            let value = shown_value(kind, &attr.0, &attr.1);
            let escaped = escape_delimiter(&value, delimiter);
            out.extend_from_slice(attr.0.as_bytes());
            out.push(b'=');
            push_visible(out, escape_feeds(&escaped).as_bytes());
        }
        out.push(b'\n');
    }
}

fn escape_delimiter<'a>(value: &'a str, delimiter: &str) -> Cow<'a, str> {
    if delimiter.is_empty() || !value.contains(delimiter) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(value.replace(delimiter, &format!("\\{delimiter}")))
    }
}

/// `    name = value` on one line with feeds escaped (`-f -w`).
fn attr_one_line(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(b"    ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" = ");
    let value = escape_feeds(value);
    if name.contains('.') {
        out.extend_from_slice(value.as_bytes());
    } else {
        push_visible(out, value.as_bytes());
    }
}

/// `    name = value` folded as OpenPBS's `prt_attr` does: the value is cut at commas (empty
/// pieces dropped); a piece that does not fit before column 78 starts a new line (TAB
/// indented) and is itself broken every 78 columns.
pub(crate) fn attr_folded(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(b"    ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" = ");
    let mut column = name.len() + 7;
    let mut pieces = value.split(|b| *b == b',').filter(|p| !p.is_empty()).peekable();
    let mut first = true;
    while let Some(piece) = pieces.next() {
        if piece.len() + column < LINE_LIMIT {
            push_visible(out, piece);
            column += piece.len();
        } else {
            if !first {
                out.extend_from_slice(b"\n\t");
                column = 9;
            }
            // Every byte takes one column (even one shown as `^X`); a line is broken once
            // the column passes the limit.
            let mut rest = piece;
            while !rest.is_empty() {
                let room = (LINE_LIMIT + 1).saturating_sub(column).max(1);
                let (chunk, tail) = rest.split_at(room.min(rest.len()));
                push_visible(out, chunk);
                column += chunk.len();
                rest = tail;
                if column > LINE_LIMIT {
                    column = 8;
                    out.extend_from_slice(b"\n\t");
                }
            }
        }
        if pieces.peek().is_some() {
            first = false;
            out.push(b',');
        }
    }
}

/// The text a full display shows for an attribute. Only jobs get special treatment, as in
/// OpenPBS: time attributes (sent as epoch seconds) become ctime(3) dates, the executable
/// gets its JSDL tags, encoded submit arguments are decoded.
pub(crate) fn shown_value<'a>(kind: Kind, name: &str, value: &'a str) -> Cow<'a, str> {
    if kind != Kind::Job {
        return Cow::Borrowed(value);
    }
    if is_time_attribute(name) {
        let epoch = atol(value);
        if name == "estimated.start_time" && epoch == 0 {
            return Cow::Borrowed("UNKNOWN");
        }
        return Cow::Owned(cached_ctime(epoch));
    }
    match name {
        "executable" if !value.starts_with("<jsdl-hpcpa:Executable>") => {
            Cow::Owned(format!("<jsdl-hpcpa:Executable>{value}</jsdl-hpcpa:Executable>"))
        }
        "Submit_arguments" if value.contains("<jsdl-hpcpa:Argument>") => Cow::Owned(decode_arguments(value)),
        "reserve_state" => Cow::Borrowed(reservation_state(value)),
        _ => Cow::Borrowed(value),
    }
}

/// [`ctime`] remembering its answers: jobs submitted together share their dates, and
/// formatting a local time is the costly part of a full display.
fn cached_ctime(epoch: i64) -> String {
    thread_local! {
        static CACHE: RefCell<HashMap<i64, String>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| cache.borrow_mut().entry(epoch).or_insert_with(|| ctime(epoch)).clone())
}

/// `<jsdl-hpcpa:Argument>a</jsdl-hpcpa:Argument><jsdl-hpcpa:Argument>b</...>` -> `a b`.
fn decode_arguments(value: &str) -> String {
    const OPEN: &str = "<jsdl-hpcpa:Argument>";
    const CLOSE: &str = "</jsdl-hpcpa:Argument>";
    let mut args = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let end = after.find(CLOSE).unwrap_or(after.len());
        args.push(
            after[..end]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        );
        rest = after.get(end + CLOSE.len()..).unwrap_or("");
    }
    args.join(" ")
}

fn reservation_state(code: &str) -> &str {
    const NAMES: [&str; 11] = [
        "RESV_NONE",
        "RESV_UNCONFIRMED",
        "RESV_CONFIRMED",
        "RESV_WAIT",
        "RESV_TIME_TO_RUN",
        "RESV_RUNNING",
        "RESV_FINISHED",
        "RESV_BEING_DELETED",
        "RESV_DELETED",
        "RESV_DELETING_JOBS",
        "RESV_BEING_ALTERED",
    ];
    usize::try_from(atol(code)).ok().and_then(|i| NAMES.get(i)).copied().unwrap_or(code)
}
