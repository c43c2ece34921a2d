//! Array index ranges: `X-Y[:Z]` as given to `qsub -J`, and the set of indices still to run.

use std::fmt;
use std::str::FromStr;

/// The largest index accepted, so that counts and ids stay in range.
const MAX_INDEX: u64 = 9_999_999_999;

/// The indices `start, start+step, ... <= end` of a job array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArrayRange {
    pub start: u64,
    pub end: u64,
    pub step: u64,
}

/// An array range that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal -J value")]
pub struct BadRange;

fn number(text: &str) -> Result<u64, BadRange> {
    if text.is_empty() || text.len() > 10 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BadRange);
    }
    let value = text.parse().map_err(|_| BadRange)?;
    if value > MAX_INDEX {
        return Err(BadRange);
    }
    Ok(value)
}

impl ArrayRange {
    /// How many indices the range holds.
    pub fn count(&self) -> u64 {
        (self.end - self.start) / self.step + 1
    }

    pub fn contains(&self, index: u64) -> bool {
        index >= self.start && index <= self.end && (index - self.start) % self.step == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + use<> {
        (self.start..=self.end).step_by(usize::try_from(self.step).unwrap_or(usize::MAX))
    }
}

impl FromStr for ArrayRange {
    type Err = BadRange;

    fn from_str(text: &str) -> Result<Self, BadRange> {
        let (span, step) = match text.split_once(':') {
            Some((span, step)) => (span, number(step)?),
            None => (text, 1),
        };
        let (start, end) = span.split_once('-').ok_or(BadRange)?;
        let (start, end) = (number(start)?, number(end)?);
        if end <= start || step == 0 {
            return Err(BadRange);
        }
        Ok(ArrayRange { start, end, step })
    }
}

impl fmt::Display for ArrayRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start, self.end)?;
        if self.step != 1 {
            write!(f, ":{}", self.step)?;
        }
        Ok(())
    }
}

/// A set of array indices, kept as arithmetic runs `first..=last` by `step` whose spans
/// do not overlap, so that a 100,000-index array costs a few words and taking one index
/// out is a split, not a copy; printed the OpenPBS way (`1-3,5,7-9:2`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexSet {
    /// first -> (last, step); a single index has step 1.
    runs: std::collections::BTreeMap<u64, (u64, u64)>,
    len: usize,
}

fn run_len(first: u64, last: u64, step: u64) -> usize {
    ((last - first) / step + 1) as usize
}

impl IndexSet {
    pub fn from_range(range: &ArrayRange) -> Self {
        let mut set = IndexSet::default();
        let last = range.start + (range.end - range.start) / range.step * range.step;
        set.put(range.start, last, range.step);
        set
    }

    fn put(&mut self, first: u64, last: u64, step: u64) {
        let step = if first == last { 1 } else { step };
        self.runs.insert(first, (last, step));
        self.len += run_len(first, last, step);
    }

    /// The run whose span holds `index`, as (first, last, step).
    fn span_of(&self, index: u64) -> Option<(u64, u64, u64)> {
        let (&first, &(last, step)) = self.runs.range(..=index).next_back()?;
        (index <= last).then_some((first, last, step))
    }

    pub fn contains(&self, index: u64) -> bool {
        self.span_of(index).is_some_and(|(first, _, step)| (index - first) % step == 0)
    }

    pub fn remove(&mut self, index: u64) -> bool {
        if !self.contains(index) {
            return false;
        }
        let Some((first, last, step)) = self.span_of(index) else { return false };
        self.runs.remove(&first);
        self.len -= run_len(first, last, step);
        if index > first {
            self.put(first, index - step, step);
        }
        if index < last {
            self.put(index + step, last, step);
        }
        true
    }

    pub fn insert(&mut self, index: u64) -> bool {
        if self.contains(index) {
            return false;
        }
        if let Some((first, last, step)) = self.span_of(index) {
            // Inside another run's span but not one of its indices: split around it.
            self.runs.remove(&first);
            self.len -= run_len(first, last, step);
            let below = first + (index - first) / step * step;
            self.put(first, below, step);
            self.put(below + step, last, step);
        }
        self.put(index, index, 1);
        true
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The smallest index.
    pub fn first(&self) -> Option<u64> {
        self.runs.keys().next().copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs.iter().flat_map(|(&first, &(last, step))| (first..=last).step_by(step as usize))
    }
}

impl fmt::Display for IndexSet {
    /// Runs of at least three equally spaced indices print as `a-b:s` (`:1` omitted);
    /// anything else as single indices, comma separated. An empty set prints `-`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all: Vec<u64> = self.iter().collect();
        if all.is_empty() {
            return f.write_str("-");
        }
        let mut parts = Vec::new();
        let mut i = 0;
        while i < all.len() {
            let mut j = i;
            if i + 1 < all.len() {
                let step = all[i + 1] - all[i];
                while j + 1 < all.len() && all[j + 1] - all[j] == step {
                    j += 1;
                }
                if j - i < 2 && step != 1 {
                    j = i;
                }
                let step_text = if step == 1 { String::new() } else { format!(":{step}") };
                if j > i {
                    parts.push(format!("{}-{}{}", all[i], all[j], step_text));
                    i = j + 1;
                    continue;
                }
            }
            parts.push(all[i].to_string());
            i += 1;
        }
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Option<(&str, u64)>) {
        let got = input.parse::<ArrayRange>().ok().map(|r| (r.to_string(), r.count()));
        assert_eq!(got.as_ref().map(|(s, c)| (s.as_str(), *c)), expected, "input {input:?}");
    }

    #[test]
    fn parses_ranges() {
        check("1-10", Some(("1-10", 10)));
        check("2-7:2", Some(("2-7:2", 3)));
        check("0-1", Some(("0-1", 2)));
        check("1-100000", Some(("1-100000", 100_000)));
    }

    #[test]
    fn rejects_bad_ranges() {
        for bad in ["", "5", "5-5", "7-2", "1-10:0", "a-b", "-1-5", "1-5:", "1-99999999999"] {
            check(bad, None);
        }
    }

    #[test]
    fn index_sets_print_compactly() {
        let range: ArrayRange = "1-10".parse().unwrap();
        let mut set = IndexSet::from_range(&range);
        assert_eq!(set.to_string(), "1-10");
        set.remove(4);
        assert_eq!(set.to_string(), "1-3,5-10");
        let odd = IndexSet::from_range(&"1-9:2".parse().unwrap());
        assert_eq!(odd.to_string(), "1-9:2");
        for i in 1..=10 {
            set.remove(i);
        }
        assert_eq!(set.to_string(), "-");
    }

    #[test]
    fn index_sets_split_and_join_runs() {
        let mut set = IndexSet::from_range(&"1-9:2".parse().unwrap());
        assert_eq!(set.len(), 5);
        assert!(set.insert(4));
        assert!(!set.insert(5));
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![1, 3, 4, 5, 7, 9]);
        assert!(set.remove(5));
        assert!(!set.contains(5) && set.contains(7) && !set.contains(2));
        assert_eq!(set.len(), 5);
        assert_eq!(set.to_string(), "1,3-4,7,9");
        let mut big = IndexSet::from_range(&"0-99999".parse().unwrap());
        assert!(big.remove(0) && big.remove(50_000));
        assert_eq!(big.first(), Some(1));
        assert_eq!(big.to_string(), "1-49999,50001-99999");
        assert_eq!(big.len(), 99_998);
    }
}
