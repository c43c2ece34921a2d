//! Property tests of index ranges, index sets and job ids: no input makes them panic, what
//! they print reads back the same, and what they compute run by run equals the naive
//! answer over the indices one by one.

use std::collections::BTreeSet;

use pbs_core::jobid::ArrayPart;
use pbs_core::range::IndexSet;
use pbs_core::{ArrayRange, JobId};
use proptest::prelude::*;

/// The printing rule written over the expanded indices: runs of three or more equally
/// spaced indices (two when consecutive) as `a-b[:s]`, the rest one by one.
fn naive_print(all: &[u64]) -> String {
    if all.is_empty() {
        return "-".into();
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
            if j > i {
                let step_text = if step == 1 { String::new() } else { format!(":{step}") };
                parts.push(format!("{}-{}{}", all[i], all[j], step_text));
                i = j + 1;
                continue;
            }
        }
        parts.push(all[i].to_string());
        i += 1;
    }
    parts.join(",")
}

/// A set built by taking indices out of a range and putting some back, as subjobs start
/// and are requeued, with the same indices in a `BTreeSet`.
fn built(range: &ArrayRange, removed: &[u64], restored: &[u64]) -> (IndexSet, BTreeSet<u64>) {
    let mut set = IndexSet::from_range(range);
    let mut naive: BTreeSet<u64> = range.iter().collect();
    for &i in removed {
        assert_eq!(set.remove(i), naive.remove(&i));
    }
    for &i in restored {
        assert_eq!(set.insert(i), naive.insert(i));
    }
    (set, naive)
}

fn small_range() -> impl Strategy<Value = ArrayRange> {
    (0u64..60, 1u64..80, 1u64..7).prop_map(|(start, len, step)| ArrayRange { start, end: start + len, step })
}

proptest! {
    #[test]
    fn index_sets_print_as_the_naive_rule_and_read_back(
        range in small_range(),
        removed in proptest::collection::vec(0u64..150, 0..40),
        restored in proptest::collection::vec(0u64..150, 0..10),
    ) {
        let (set, naive) = built(&range, &removed, &restored);
        let all: Vec<u64> = naive.iter().copied().collect();
        let text = set.to_string();
        prop_assert_eq!(&text, &naive_print(&all));
        prop_assert_eq!(set.iter().collect::<Vec<_>>(), all.clone());
        prop_assert_eq!(set.len(), all.len());
        let strict: IndexSet = text.parse().unwrap();
        prop_assert_eq!(strict.iter().collect::<Vec<_>>(), all.clone());
        prop_assert_eq!(IndexSet::parse_lenient(&text).iter().collect::<Vec<_>>(), all);
    }

    #[test]
    fn intersection_is_the_naive_one(
        range in small_range(),
        removed in proptest::collection::vec(0u64..150, 0..40),
        wanted in small_range(),
    ) {
        let (set, naive) = built(&range, &removed, &[]);
        let expected: Vec<u64> = wanted.iter().filter(|i| naive.contains(i)).collect();
        let got = set.intersect(&wanted);
        prop_assert_eq!(got.iter().collect::<Vec<_>>(), expected.clone());
        prop_assert_eq!(got.len(), expected.len());
        prop_assert_eq!(set.contains_range(&wanted), expected.len() as u64 == wanted.count());
    }

    #[test]
    fn huge_ranges_meet_without_expanding(start in 0u64..1000, step in 1u64..1000, wanted_step in 1u64..1000) {
        let range = ArrayRange { start, end: 9_999_999_999, step };
        let set = IndexSet::from_range(&range);
        let wanted = ArrayRange { start: 0, end: 9_999_999_999, step: wanted_step };
        let got = set.intersect(&wanted);
        // Both progressions meet every lcm(step, wanted_step) indices, or never.
        let first = got.first();
        if let Some(first) = first {
            prop_assert!(set.contains(first) && wanted.contains(first));
        }
        prop_assert_eq!(set.to_string().parse::<IndexSet>().unwrap(), set.clone());
        prop_assert_eq!(set.len() as u64, range.count());
    }

    #[test]
    fn index_set_parsers_never_panic(text in "[0-9,:\\- ]{0,40}|\\PC{0,40}") {
        let _ = text.parse::<IndexSet>();
        let lenient = IndexSet::parse_lenient(&text);
        // Whatever was read prints as a set that reads back the same.
        let again: IndexSet = lenient.to_string().parse().unwrap();
        prop_assert_eq!(again.iter().take(1000).collect::<Vec<_>>(), lenient.iter().take(1000).collect::<Vec<_>>());
        prop_assert_eq!(again.len(), lenient.len());
    }

    #[test]
    fn job_id_parsers_never_panic(text in "[0-9]{0,14}(\\[[0-9:\\-]{0,24}\\])?(\\.[a-z.]{0,10})?|\\PC{0,40}") {
        if let Ok(id) = text.parse::<JobId>() {
            let again: JobId = id.to_string().parse().unwrap();
            prop_assert_eq!(again, id);
        }
    }

    #[test]
    fn subjob_range_ids_round_trip(seq in 0u64..999_999_999_999, range in small_range()) {
        let id = JobId::new(seq, ArrayPart::Range(range), Some("host.example".into()));
        let parsed: JobId = id.to_string().parse().unwrap();
        prop_assert_eq!(parsed, id);
    }
}
