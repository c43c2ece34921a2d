//! C's reading of numbers, as OpenPBS's C code reads attribute text: `atol`, which takes
//! the leading integer and stops at anything else. One home, so that the commands and the
//! server agree on odd input (a value too large saturates, as glibc's `strtol` does).

/// C's `atol`: leading blanks, an optional sign, then digits; 0 if there are none. A value
/// beyond `i64` saturates.
pub fn atol(text: &str) -> i64 {
    let t = text.trim_start();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if negative { -n } else { n }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_leading_integer_and_saturates() {
        assert_eq!((atol(" 42x"), atol("-7"), atol("+3"), atol("x"), atol("")), (42, -7, 3, 0, 0));
        assert_eq!(atol("99999999999999999999999"), i64::MAX);
        assert_eq!(atol("-99999999999999999999999"), -i64::MAX);
    }
}
