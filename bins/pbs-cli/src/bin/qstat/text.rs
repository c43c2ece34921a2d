//! Byte-level text helpers that reproduce the C `printf` field rules qstat's tables rely on:
//! widths and precisions count bytes, and values too long for a column end in `*`.

use std::borrow::Cow;

/// `printf("%-W.Ps")` (`left`) or `printf("%W.Ps")`: at most `precision` bytes of `s`,
/// padded with spaces to `width`.
pub(crate) fn field(out: &mut Vec<u8>, s: &[u8], width: usize, precision: Option<usize>, left: bool) {
    let s = match precision {
        Some(p) if s.len() > p => &s[..p],
        _ => s,
    };
    let pad = width.saturating_sub(s.len());
    if !left {
        out.resize(out.len() + pad, b' ');
    }
    out.extend_from_slice(s);
    if left {
        out.resize(out.len() + pad, b' ');
    }
}

/// `%-Ws`: left-aligned, never cut.
pub(crate) fn left(out: &mut Vec<u8>, s: &[u8], width: usize) {
    field(out, s, width, None, true);
}

/// `%Ws`: right-aligned, never cut.
pub(crate) fn right(out: &mut Vec<u8>, s: &[u8], width: usize) {
    field(out, s, width, None, false);
}

/// `%-W.Ws`.
pub(crate) fn left_cut(out: &mut Vec<u8>, s: &[u8], width: usize) {
    field(out, s, width, Some(width), true);
}

/// `%W.Ws`.
pub(crate) fn right_cut(out: &mut Vec<u8>, s: &[u8], width: usize) {
    field(out, s, width, Some(width), false);
}

/// A value longer than `len` bytes cut to `len` with its last byte replaced by `*`, as
/// OpenPBS's `trunc_value` and its inline copies do.
pub(crate) fn star(s: &[u8], len: usize) -> Cow<'_, [u8]> {
    if len > 0 && s.len() > len {
        let mut cut = s[..len].to_vec();
        cut[len - 1] = b'*';
        Cow::Owned(cut)
    } else {
        Cow::Borrowed(s)
    }
}

/// The part of `s` before the first `c` (all of it if there is none).
pub(crate) fn before(s: &str, c: char) -> &str {
    s.split(c).next().unwrap_or(s)
}

/// Appends `s` with control characters other than newline and TAB shown as `^X`, as
/// OpenPBS's `show_nonprint_chars` does.
pub(crate) fn push_visible(out: &mut Vec<u8>, s: &[u8]) {
    if !s.iter().any(|b| *b < 32) {
        out.extend_from_slice(s);
        return;
    }
    for &b in s {
        push_visible_byte(out, b);
    }
}

/// One byte of [`push_visible`].
fn push_visible_byte(out: &mut Vec<u8>, b: u8) {
    if b < 32 && b != b'\n' && b != b'\t' {
        out.push(b'^');
        out.push(b + 64);
    } else {
        out.push(b);
    }
}

/// Newlines and form feeds written as `\n` and `\f` (OpenPBS's `convert_feed_chars`), for
/// the one-line (`-f -w`) and DSV displays.
pub(crate) fn escape_feeds(s: &str) -> Cow<'_, str> {
    if s.contains(['\n', '\x0c']) {
        Cow::Owned(s.replace('\n', "\\n").replace('\x0c', "\\f"))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(f: impl Fn(&mut Vec<u8>), expected: &str) {
        let mut out = Vec::new();
        f(&mut out);
        assert_eq!(String::from_utf8_lossy(&out), expected);
    }

    #[test]
    fn printf_fields() {
        check(|o| left(o, b"abc", 5), "abc  ");
        check(|o| left(o, b"abcdef", 5), "abcdef");
        check(|o| right(o, b"abc", 5), "  abc");
        check(|o| left_cut(o, b"abcdef", 5), "abcde");
        check(|o| right_cut(o, b"00:10:00", 5), "00:10");
        check(|o| right_cut(o, b" -- ", 5), "  -- ");
    }

    #[test]
    fn stars() {
        assert_eq!(&*star(b"averyveryverylongname", 16), b"averyveryverylo*");
        assert_eq!(&*star(b"short", 16), b"short");
        assert_eq!(&*star(b"Execution", 4), b"Exe*");
    }

    #[test]
    fn visible_and_feeds() {
        check(|o| push_visible(o, b"a\x01b\tc\n"), "a^Ab\tc\n");
        assert_eq!(escape_feeds("a\nb\x0cc"), "a\\nb\\fc");
    }
}
