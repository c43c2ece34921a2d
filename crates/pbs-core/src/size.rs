//! Sizes as OpenPBS writes them: `<n>[k|m|g|t|p][b|w]`, kept in the unit the user gave.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Bytes in a word, for sizes given in words (`w`).
const WORD_BYTES: u64 = 8;

/// A size: a count of a power-of-1024 unit of bytes or words.
#[derive(Debug, Clone, Copy, Eq)]
pub struct Size {
    value: u64,
    /// Power of two of the unit: 0 for b, 10 for kb, 20 for mb, ...
    shift: u32,
    words: bool,
}

/// A size that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal size")]
pub struct BadSize;

const UNITS: [(char, u32); 5] = [('k', 10), ('m', 20), ('g', 30), ('t', 40), ('p', 50)];

impl Size {
    /// The size in the largest unit that represents `bytes` exactly.
    pub fn from_bytes(bytes: u64) -> Self {
        let mut shift = 0;
        while shift < 50 && bytes != 0 && bytes % (1u64 << (shift + 10)) == 0 {
            shift += 10;
        }
        Size { value: bytes >> shift, shift, words: false }
    }

    /// `bytes` in the unit `2^shift` bytes (`shift` 0, 10, ... 50), rounded down.
    pub fn in_unit(bytes: u64, shift: u32) -> Self {
        let shift = shift.min(50) / 10 * 10;
        Size { value: bytes >> shift, shift, words: false }
    }

    /// The power of two of the unit it was given in (0 for b, 10 for kb, ...); words count
    /// as bytes.
    pub fn unit_shift(self) -> u32 {
        self.shift
    }

    /// The size in bytes, saturating at `u64::MAX`.
    pub fn to_bytes(self) -> u64 {
        let unit = if self.words { WORD_BYTES } else { 1 };
        self.value.saturating_mul(1u64 << self.shift).saturating_mul(unit)
    }

    /// The size rounded up to kilobytes, megabytes or gigabytes, whichever keeps it short
    /// (qstat -a's Memory column: `1gb`, `512mb`, `100kb`).
    pub fn to_short_string(self) -> String {
        let bytes = self.to_bytes();
        let kb = bytes.div_ceil(1024);
        if kb < 1024 * 10 {
            return format!("{kb}kb");
        }
        let mb = kb.div_ceil(1024);
        if mb < 1024 * 10 {
            return format!("{mb}mb");
        }
        format!("{}gb", mb.div_ceil(1024))
    }
}

impl PartialEq for Size {
    fn eq(&self, other: &Self) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

impl Ord for Size {
    fn cmp(&self, other: &Self) -> Ordering {
        self.to_bytes().cmp(&other.to_bytes())
    }
}

impl PartialOrd for Size {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for Size {
    type Err = BadSize;

    fn from_str(text: &str) -> Result<Self, BadSize> {
        let text = text.trim();
        let end = text.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(text.len());
        let (number, unit) = text.split_at(end);
        // u64::MAX has 20 digits, and a saturated sum prints it: it must read back.
        if number.is_empty() || number.len() > 20 {
            return Err(BadSize);
        }
        let value: u64 = number.parse().map_err(|_| BadSize)?;
        let unit = unit.to_ascii_lowercase();
        let mut chars = unit.chars();
        let (shift, rest) = match chars.next() {
            None => (0, ""),
            Some(c) => match UNITS.iter().find(|(u, _)| *u == c) {
                Some((_, shift)) => (*shift, chars.as_str()),
                None => (0, unit.as_str()),
            },
        };
        let words = match rest {
            "" | "b" => false,
            "w" => true,
            _ => return Err(BadSize),
        };
        Ok(Size { value, shift, words })
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = UNITS.iter().find(|(_, s)| *s == self.shift).map(|(c, _)| c.to_string()).unwrap_or_default();
        let suffix = if self.words { "w" } else { "b" };
        write!(f, "{}{prefix}{suffix}", self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Option<&str>) {
        let got = input.parse::<Size>().ok().map(|s| s.to_string());
        assert_eq!(got.as_deref(), expected, "input {input:?}");
    }

    #[test]
    fn a_sum_prints_in_the_unit_asked_for() {
        assert_eq!(Size::in_unit(3 << 20, 20).to_string(), "3mb");
        assert_eq!(Size::in_unit(0, 20).to_string(), "0mb");
        assert_eq!(Size::in_unit(3 << 20, 10).to_string(), "3072kb");
        assert_eq!("3mb".parse::<Size>().map(Size::unit_shift), Ok(20));
        assert_eq!("100".parse::<Size>().map(Size::unit_shift), Ok(0));
    }

    #[test]
    fn keeps_the_unit_given() {
        check("100", Some("100b"));
        check("1GB", Some("1gb"));
        check("512mb", Some("512mb"));
        check("10k", Some("10kb"));
        check("2w", Some("2w"));
        check("3MW", Some("3mw"));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "gb", "1xb", "-1gb", "1.5gb", "1gbb", "99999999999999999999999"] {
            check(bad, None);
        }
    }

    #[test]
    fn the_largest_size_reads_back() {
        let max = Size::from_bytes(u64::MAX);
        assert_eq!(max.to_string().parse::<Size>().map(Size::to_bytes), Ok(u64::MAX));
        check("18446744073709551616", None);
    }

    #[test]
    fn compares_and_sums_by_bytes() {
        let a: Size = "1gb".parse().unwrap();
        let b: Size = "1024mb".parse().unwrap();
        assert_eq!(a, b);
        assert!("2w".parse::<Size>().unwrap() > "15b".parse::<Size>().unwrap());
        assert_eq!(Size::from_bytes(3 << 30).to_string(), "3gb");
        assert_eq!(Size::from_bytes(1536).to_string(), "1536b");
        assert_eq!(Size::from_bytes(0).to_string(), "0b");
        assert_eq!("1gb".parse::<Size>().unwrap().to_short_string(), "1024mb");
        assert_eq!("100kb".parse::<Size>().unwrap().to_short_string(), "100kb");
    }
}
