//! `-F json` in the layout of OpenPBS's cJSON output: TAB indentation, `"key":\tvalue`, and
//! every attribute value that parses as JSON (numbers above all) emitted as that JSON value.

use pbs_proto::StatusObject;

/// Writes the whole document: the prologue, then `section` (`Jobs`, `Queue`, `Server`) if
/// any object was found. `value_of` gives the text shown for an attribute (times as dates).
#[cfg(test)]
pub(crate) fn document(
    out: &mut Vec<u8>,
    now: i64,
    version: &str,
    server: &str,
    section: Option<(&str, &[StatusObject])>,
    value_of: &dyn Fn(&str, &str) -> String,
) {
    prologue(out, now, version, server);
    if let Some((key, objects)) = section {
        section_start(out, key);
        for (i, object) in objects.iter().enumerate() {
            member(out, object, i == 0, value_of);
        }
        section_end(out);
    }
    epilogue(out);
}

/// `{`, the time, the version and the server.
pub(crate) fn prologue(out: &mut Vec<u8>, now: i64, version: &str, server: &str) {
    out.extend_from_slice(b"{\n\t\"timestamp\":\t");
    out.extend_from_slice(number(now as f64).as_bytes());
    out.extend_from_slice(b",\n\t\"pbs_version\":\t");
    string(out, version);
    out.extend_from_slice(b",\n\t\"pbs_server\":\t");
    string(out, server);
}

/// Opens the object holding the jobs, queues or servers.
pub(crate) fn section_start(out: &mut Vec<u8>, key: &str) {
    out.extend_from_slice(b",\n\t");
    string(out, key);
    out.extend_from_slice(b":\t{");
}

/// One job, queue or server of the section.
pub(crate) fn member(out: &mut Vec<u8>, object: &StatusObject, first: bool, value_of: &dyn Fn(&str, &str) -> String) {
    out.extend_from_slice(if first { b"\n\t\t" } else { b",\n\t\t" });
    string(out, &object.name);
    out.extend_from_slice(b":\t");
    attributes(out, object, value_of);
}

/// Closes the section.
pub(crate) fn section_end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\n\t}");
}

/// Closes the document.
pub(crate) fn epilogue(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\n}\n");
}

/// One object's attributes at depth 3: consecutive `base.resource` attributes become a
/// nested object under `base`, `Variable_List` an object of variables.
fn attributes(out: &mut Vec<u8>, object: &StatusObject, value_of: &dyn Fn(&str, &str) -> String) {
    out.extend_from_slice(b"{\n");
    let attrs = &object.attrs;
    let mut i = 0;
    while i < attrs.len() {
        if i > 0 {
            out.extend_from_slice(b",\n");
        }
        out.extend_from_slice(b"\t\t\t");
        let name = attrs[i].0.as_str();
        if let Some((base, _)) = name.split_once('.') {
            string(out, base);
            out.extend_from_slice(b":\t{\n");
            let mut first = true;
            while i < attrs.len() && attrs[i].0.split_once('.').is_some_and(|(b, _)| b == base) {
                let (full, value) = (attrs[i].0.as_str(), attrs[i].1.as_str());
                let resource = &full[base.len() + 1..];
                if !first {
                    out.extend_from_slice(b",\n");
                }
                first = false;
                out.extend_from_slice(b"\t\t\t\t");
                string(out, resource);
                out.extend_from_slice(b":\t");
                parsed(out, &value_of(full, value), 4);
                i += 1;
            }
            out.extend_from_slice(b"\n\t\t\t}");
            continue;
        }
        string(out, name);
        out.extend_from_slice(b":\t");
        let value = value_of(name, &attrs[i].1);
        match name {
            "Variable_List" => variables(out, &value),
            "Job_Name" | "project" | "Account_Name" => string(out, &value),
            _ => parsed(out, &value, 3),
        }
        i += 1;
    }
    if attrs.is_empty() {
        out.extend_from_slice(b"\t\t}");
    } else {
        out.extend_from_slice(b"\n\t\t}");
    }
}

/// `Variable_List` as an object: items split at commas not escaped by a backslash, each
/// at its first `=`.
fn variables(out: &mut Vec<u8>, list: &str) {
    out.extend_from_slice(b"{\n");
    let bytes = list.as_bytes();
    let mut i = 0;
    let mut first = true;
    while i < bytes.len() {
        let mut item: Vec<u8> = Vec::new();
        while i < bytes.len() && bytes[i] != b',' {
            if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b',') {
                i += 1;
            }
            item.push(bytes[i]);
            i += 1;
        }
        if i < bytes.len() {
            i += 1;
        }
        let item = String::from_utf8_lossy(&item).into_owned();
        let (key, value) = item.split_once('=').unwrap_or((item.as_str(), ""));
        if !first {
            out.extend_from_slice(b",\n");
        }
        first = false;
        out.extend_from_slice(b"\t\t\t\t");
        string(out, key);
        out.extend_from_slice(b":\t");
        parsed(out, value, 4);
    }
    if first {
        out.extend_from_slice(b"\t\t\t}");
    } else {
        out.extend_from_slice(b"\n\t\t\t}");
    }
}

/// A JSON string with cJSON's escapes.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b if b < 32 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

/// `value` as the JSON it parses as (cJSON's `ParseWithOpts`, whole input), else as a
/// string. `depth` is the nesting of the member being written, for nested objects.
pub(crate) fn parsed(out: &mut Vec<u8>, value: &str, depth: usize) {
    let text = value.trim_start_matches('\u{feff}').trim_matches(|c: char| c <= ' ');
    match text.as_bytes().first() {
        _ if text == "null" => out.extend_from_slice(b"null"),
        _ if text == "true" => out.extend_from_slice(b"true"),
        _ if text == "false" => out.extend_from_slice(b"false"),
        Some(b'-' | b'0'..=b'9') => match scan_number(text) {
            Some(n) if n.len() == text.len() => match n.parse::<f64>() {
                Ok(d) => out.extend_from_slice(number(d).as_bytes()),
                Err(_) => string(out, value),
            },
            _ => string(out, value),
        },
        Some(b'"' | b'[' | b'{') => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => json_value(out, &v, depth),
            Err(_) => string(out, value),
        },
        _ => string(out, value),
    }
}

/// The longest prefix `strtod` would read from the characters cJSON hands it.
fn scan_number(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        let frac_start = i + 1;
        let mut j = frac_start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        digits += j - frac_start;
        if digits > 0 {
            i = j;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    Some(&text[..i])
}

fn json_value(out: &mut Vec<u8>, value: &serde_json::Value, depth: usize) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(number(n.as_f64().unwrap_or(0.0)).as_bytes()),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                json_value(out, item, depth);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.extend_from_slice(b"{\n");
            for (i, (key, item)) in map.iter().enumerate() {
                out.resize(out.len() + depth + 1, b'\t');
                string(out, key);
                out.extend_from_slice(b":\t");
                json_value(out, item, depth + 1);
                out.extend_from_slice(if i + 1 < map.len() { b",\n" } else { b"\n" });
            }
            out.resize(out.len() + depth, b'\t');
            out.push(b'}');
        }
    }
}

/// A number as cJSON prints it: `%d` when it is a whole `int`, else `%1.15g`, or `%1.17g`
/// when 15 digits do not read back.
pub(crate) fn number(d: f64) -> String {
    if !d.is_finite() {
        return "null".into();
    }
    let int = if d >= f64::from(i32::MAX) {
        i32::MAX
    } else if d <= f64::from(i32::MIN) {
        i32::MIN
    } else {
        d as i32
    };
    if d == f64::from(int) {
        return int.to_string();
    }
    let short = format_g(d, 15);
    match short.parse::<f64>() {
        Ok(back) if (back - d).abs() <= back.abs().max(d.abs()) * f64::EPSILON => short,
        _ => format_g(d, 17),
    }
}

/// C's `%1.<precision>g`.
fn format_g(d: f64, precision: usize) -> String {
    if d == 0.0 {
        return if d.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{:.*e}", precision - 1, d);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        strip_zeros(&format!("{d:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_parsed(input: &str, expected: &str) {
        let mut out = Vec::new();
        parsed(&mut out, input, 3);
        assert_eq!(String::from_utf8_lossy(&out), expected, "{input:?}");
    }

    #[test]
    fn values_parse_like_cjson() {
        check_parsed("0", "0");
        check_parsed("12694", "12694");
        check_parsed("00:10:00", "\"00:10:00\"");
        check_parsed("1:ncpus=1", "\"1:ncpus=1\"");
        check_parsed("0kb", "\"0kb\"");
        check_parsed("True", "\"True\"");
        check_parsed("true", "true");
        check_parsed("23.06.06", "\"23.06.06\"");
        check_parsed("1.5", "1.5");
        check_parsed("012", "12");
        check_parsed("-", "\"-\"");
        check_parsed("+5", "\"+5\"");
        check_parsed(" 7 ", "7");
        check_parsed("2147483647", "2147483647");
        check_parsed("2147483648", "2147483648");
        check_parsed("1e3", "1000");
        check_parsed("0.1", "0.1");
        check_parsed("12345678901234567890", "1.2345678901234567e+19");
        check_parsed("", "\"\"");
        check_parsed("a\"b\\c\nd", "\"a\\\"b\\\\c\\nd\"");
        check_parsed("[1, 2]", "[1, 2]");
        check_parsed("\"quoted\"", "\"quoted\"");
    }

    #[test]
    fn numbers_print_like_cjson() {
        assert_eq!(number(1_795_379_761.0), "1795379761");
        assert_eq!(number(0.000_012_5), "1.25e-05");
        assert_eq!(number(-0.5), "-0.5");
        assert_eq!(number(f64::INFINITY), "null");
    }
}
