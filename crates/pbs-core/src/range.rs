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

    /// The largest index the range holds (`end` itself only when the step lands on it).
    pub fn last(&self) -> u64 {
        self.start + (self.end - self.start) / self.step * self.step
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
#[derive(Debug, Clone, Default)]
pub struct IndexSet {
    /// first -> (last, step); a single index has step 1.
    runs: std::collections::BTreeMap<u64, (u64, u64)>,
    len: usize,
}

fn run_len(first: u64, last: u64, step: u64) -> usize {
    ((last - first) / step + 1) as usize
}

/// One comma-separated part of an index set: `N`, `A-B` or `A-B:S`, as (first, last, step)
/// with `last` an index of the run.
fn parse_part(part: &str) -> Result<(u64, u64, u64), BadRange> {
    let part = part.trim();
    if part.bytes().all(|b| b.is_ascii_digit()) {
        let index = number(part)?;
        return Ok((index, index, 1));
    }
    let range: ArrayRange = part.parse()?;
    let last = range.last();
    Ok((range.start, last, if last == range.start { 1 } else { range.step }))
}

/// Where two runs meet: the indices `x` with `x = a.0 (mod a.2)` and `x = b.0 (mod b.2)`
/// inside both spans, an arithmetic progression with the least common multiple as step.
fn meet(a: (u64, u64, u64), b: (u64, u64, u64)) -> Option<(u64, u64, u64)> {
    let lo = i128::from(a.0.max(b.0));
    let hi = i128::from(a.1.min(b.1));
    if lo > hi {
        return None;
    }
    let (s1, s2) = (i128::from(a.2.max(1)), i128::from(b.2.max(1)));
    let (g, p, _) = extended_gcd(s1, s2);
    let diff = i128::from(b.0) - i128::from(a.0);
    if diff % g != 0 {
        return None;
    }
    let lcm = s1 / g * s2;
    // p * s1 = g (mod s2), so a.0 + s1 * p * diff / g is one common index.
    let k = ((diff / g) % (s2 / g)) * (p % (s2 / g)) % (s2 / g);
    let common = i128::from(a.0) + s1 * k;
    let first = lo + (common - lo).rem_euclid(lcm);
    if first > hi {
        return None;
    }
    let last = first + (hi - first) / lcm * lcm;
    let step = if first == last { 1 } else { lcm };
    Some((u64::try_from(first).ok()?, u64::try_from(last).ok()?, u64::try_from(step).ok()?))
}

/// (g, x, y) with g = gcd(a, b) = a * x + b * y, for positive a and b.
fn extended_gcd(a: i128, b: i128) -> (i128, i128, i128) {
    if b == 0 {
        (a, 1, 0)
    } else {
        let (g, x, y) = extended_gcd(b, a % b);
        (g, y, x - (a / b) * y)
    }
}

impl IndexSet {
    /// The empty set, usable in a `static`.
    pub const fn new() -> IndexSet {
        IndexSet { runs: std::collections::BTreeMap::new(), len: 0 }
    }

    pub fn from_range(range: &ArrayRange) -> Self {
        let mut set = IndexSet::default();
        set.put(range.start, range.last(), range.step);
        set
    }

    /// Reads what [`fmt::Display`] prints, skipping parts that do not parse or that
    /// overlap a part already read, so that a damaged record costs what its text costs
    /// and never more: a part becomes a run as it stands, however many indices it holds.
    pub fn parse_lenient(text: &str) -> IndexSet {
        let mut set = IndexSet::default();
        for part in text.split(',') {
            if let Ok((first, last, step)) = parse_part(part) {
                set.put_disjoint(first, last, step);
            }
        }
        set
    }

    /// Adds the run `first..=last` by `step` unless its span meets a run already held.
    fn put_disjoint(&mut self, first: u64, last: u64, step: u64) -> bool {
        let overlaps = self.runs.range(..=last).next_back().is_some_and(|(_, &(other_last, _))| other_last >= first);
        if !overlaps {
            self.put(first, last, step);
        }
        !overlaps
    }

    /// The runs as (first, last, step), in ascending order and never overlapping.
    pub fn runs(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.runs.iter().map(|(&first, &(last, step))| (first, last, step))
    }

    /// The largest index.
    pub fn last(&self) -> Option<u64> {
        self.runs.values().next_back().map(|&(last, _)| last)
    }

    /// The indices of this set that `range` also holds, computed run by run (two
    /// arithmetic progressions meet in one), so the cost is the number of runs, whatever
    /// the range's length.
    pub fn intersect(&self, range: &ArrayRange) -> IndexSet {
        let mut out = IndexSet::default();
        let (lo, hi) = (range.start, range.last());
        // Only runs whose span can meet [lo, hi]: the one holding lo, and those after it.
        let from = self.runs.range(..=lo).next_back().map(|(&first, _)| first).unwrap_or(lo);
        for (&first, &(last, step)) in self.runs.range(from..=hi) {
            if let Some((a, b, s)) = meet((first, last, step), (range.start, hi, range.step)) {
                out.put(a, b, s);
            }
        }
        out
    }

    /// Whether every index of `range` is in the set.
    pub fn contains_range(&self, range: &ArrayRange) -> bool {
        self.intersect(range).len() as u64 == range.count()
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
    /// anything else as single indices, comma separated. An empty set prints `-`. The
    /// indices are read as a sequence, whatever runs hold them, but a run is crossed in one
    /// step, so printing costs the number of runs, not of indices.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let runs: Vec<(u64, u64, u64)> = self.runs().collect();
        let Some(&(first, _, _)) = runs.first() else {
            return f.write_str("-");
        };
        let mut at = Cursor { run: 0, value: first };
        let mut first_part = true;
        loop {
            let next = at.next(&runs);
            let mut end = at;
            let mut step = 1;
            if let Some(next) = next {
                step = next.value - at.value;
                end = next;
                while let Some(after) = end.next(&runs) {
                    if after.value - end.value != step {
                        break;
                    }
                    // Inside one run every gap is its step: go to its end at once.
                    end = if after.run == end.run { Cursor { run: end.run, value: runs[end.run].1 } } else { after };
                }
                if (end.value - at.value) / step < 2 && step != 1 {
                    end = at;
                }
            }
            if !first_part {
                f.write_str(",")?;
            }
            first_part = false;
            if end.value == at.value {
                write!(f, "{}", at.value)?;
            } else if step == 1 {
                write!(f, "{}-{}", at.value, end.value)?;
            } else {
                write!(f, "{}-{}:{step}", at.value, end.value)?;
            }
            match end.next(&runs) {
                Some(after) => at = after,
                None => return Ok(()),
            }
        }
    }
}

/// Two sets are equal when they hold the same indices, however their runs cut them: the
/// printed form is one text per sequence of indices, and costs the runs to make.
impl PartialEq for IndexSet {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.to_string() == other.to_string()
    }
}

impl Eq for IndexSet {}

/// A position in the sequence of a set's indices: which run, and the index.
#[derive(Clone, Copy)]
struct Cursor {
    run: usize,
    value: u64,
}

impl Cursor {
    fn next(&self, runs: &[(u64, u64, u64)]) -> Option<Cursor> {
        let (_, last, step) = runs[self.run];
        if self.value < last {
            return Some(Cursor { run: self.run, value: self.value + step });
        }
        runs.get(self.run + 1).map(|&(first, _, _)| Cursor { run: self.run + 1, value: first })
    }
}

impl FromStr for IndexSet {
    type Err = BadRange;

    /// Reads what [`fmt::Display`] prints: parts in ascending order that do not overlap.
    fn from_str(text: &str) -> Result<Self, BadRange> {
        let mut set = IndexSet::default();
        if text.trim() == "-" {
            return Ok(set);
        }
        let mut previous_last = None;
        for part in text.split(',') {
            let (first, last, step) = parse_part(part)?;
            if previous_last.is_some_and(|p| first <= p) {
                return Err(BadRange);
            }
            set.put(first, last, step);
            previous_last = Some(last);
        }
        Ok(set)
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

    /// What the scheduler's mirror did with the runs before it kept an `IndexSet`: walk
    /// them in order, and find the one run that may hold an index by binary search.
    fn runs_iter(runs: &[(u64, u64, u64)]) -> Vec<u64> {
        runs.iter()
            .flat_map(|&(a, b, step)| (a..=b).step_by(usize::try_from(step).unwrap_or(usize::MAX).max(1)))
            .collect()
    }

    fn runs_contain(runs: &[(u64, u64, u64)], index: u64) -> bool {
        let before = runs.partition_point(|&(a, _, _)| a <= index);
        before
            .checked_sub(1)
            .and_then(|i| runs.get(i))
            .is_some_and(|&(a, b, step)| index <= b && (index - a) % step.max(1) == 0)
    }

    #[test]
    fn lenient_index_sets_iterate_and_hold_what_their_runs_do() {
        let cases = [
            ("1-3,5,7-11:2", vec![1, 2, 3, 5, 7, 9, 11]),
            ("-", vec![]),
            ("", vec![]),
            (" 4 ", vec![4]),
            // Out of order: put in order.
            ("7-11:2, 1-3,5", vec![1, 2, 3, 5, 7, 9, 11]),
            // A step that does not land on the end stops short of it.
            ("1-10:4", vec![1, 5, 9]),
            // Parts that overlap one already read are dropped, never run twice.
            ("1-10,5-20,30", vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 30]),
            ("5,1-20,21", vec![5, 21]),
            // Parts that do not parse are skipped.
            ("x,3-1,1-4:0,2,,9-9,8", vec![2, 8]),
            ("0,9999999999", vec![0, 9_999_999_999]),
            ("99999999999,1", vec![1]),
        ];
        for (text, indices) in cases {
            let set = IndexSet::parse_lenient(text);
            let runs: Vec<_> = set.runs().collect();
            assert_eq!(set.iter().collect::<Vec<_>>(), indices, "{text:?}");
            assert_eq!(runs_iter(&runs), indices, "{text:?}");
            assert_eq!(set.len(), indices.len(), "{text:?}");
            assert_eq!(set.is_empty(), indices.is_empty(), "{text:?}");
            for probe in (0..=32).chain([9_999_999_998, 9_999_999_999, u64::MAX]) {
                assert_eq!(set.contains(probe), indices.contains(&probe), "{text:?} holds {probe}?");
                assert_eq!(set.contains(probe), runs_contain(&runs, probe), "{text:?} holds {probe}?");
            }
        }
        // The next few of a huge range come without expanding it.
        let huge = IndexSet::parse_lenient("1-100000");
        assert_eq!(huge.runs().collect::<Vec<_>>(), vec![(1, 100_000, 1)]);
        assert_eq!(huge.iter().take(3).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!(huge.contains(100_000) && !huge.contains(100_001) && !huge.contains(0));
        // The strict parser takes what the set prints, and only that.
        assert_eq!(
            "1-3,5,7-11:2".parse::<IndexSet>().map(|s| s.iter().collect::<Vec<_>>()),
            Ok(vec![1, 2, 3, 5, 7, 9, 11])
        );
        assert!("-".parse::<IndexSet>().is_ok_and(|s| s.is_empty()));
        for bad in ["7-11:2,1-3", "1-10,5", "x", "", "1,,2"] {
            assert!(bad.parse::<IndexSet>().is_err(), "{bad:?}");
        }
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
