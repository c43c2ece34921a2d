//! A job's output and error paths (`Output_Path`, `Error_Path`): `[host:]path` as
//! OpenPBS's `prepare_path` reads it. qsub and qalter complete a path before sending it; the
//! server refuses from any client what that reading refuses.

/// `prepare_path`: `[host:]path` to `host:/absolute/path`. A relative path is taken from
/// `cwd` (unless a host was given); an existing directory gets a trailing `/` so the server
/// appends the default file name. `None` if it does not parse.
pub fn prepare_path(path_in: &str, local_host: &str, cwd: &str, is_dir: &dyn Fn(&str) -> bool) -> Option<String> {
    let chars: Vec<char> = path_in.chars().collect();
    let mut c = chars.iter().take_while(|ch| ch.is_whitespace()).count();
    if c == chars.len() {
        return None;
    }
    let host_given = path_in.contains(':');
    let mut host = String::new();
    if host_given {
        while c < chars.len() && chars[c] != ':' {
            let ch = chars[c];
            if ch.is_ascii_alphanumeric() || matches!(ch, '.' | '-' | '_') {
                host.push(ch);
            } else {
                break;
            }
            c += 1;
        }
    }
    let mut path = String::new();
    if chars.get(c) == Some(&':') || c == 0 {
        if chars.get(c) == Some(&':') {
            c += 1;
        }
        while c < chars.len() && (chars[c] == ' ' || chars[c].is_ascii_graphic() || !chars[c].is_ascii()) {
            path.push(chars[c]);
            c += 1;
        }
    }
    if c != chars.len() || (path.is_empty() && host.is_empty()) {
        return None;
    }
    if !path.is_empty() && !path.ends_with('/') && is_dir(&path) {
        path.push('/');
    }
    let host = if host.is_empty() { local_host } else { host.as_str() };
    let mut out = format!("{host}:");
    if !path.starts_with('/') && !host_given {
        out.push_str(cwd);
        out.push('/');
    }
    out.push_str(&path);
    Some(out)
}

/// Whether `value` is a path [`prepare_path`] reads: what the server accepts from any client.
pub fn is_valid(value: &str) -> bool {
    prepare_path(value, "host", "/", &|_| false).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let dir = |p: &str| p == "/tmp" || p == "outdir";
        let check = |input: &str, expected: Option<&str>| {
            assert_eq!(prepare_path(input, "h", "/home/u", &dir).as_deref(), expected, "{input}");
        };
        check("out.txt", Some("h:/home/u/out.txt"));
        check("/tmp", Some("h:/tmp/"));
        check("outdir", Some("h:/home/u/outdir/"));
        check("other:/x/y", Some("other:/x/y"));
        check("other:rel", Some("other:rel"));
        check("/a/b:c", Some("h:/a/b:c"));
        check("", None);
        check(" out", None);
        for bad in ["", " ", " out", "a\tb", "h%:x"] {
            assert!(!is_valid(bad), "{bad:?}");
        }
        assert!(is_valid("host:/home/u/out") && is_valid("/with space"));
    }
}
