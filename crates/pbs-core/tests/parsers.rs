//! Property tests of the value parsers: what they print they parse back to the same value,
//! and no input makes them panic.

use pbs_core::jobid::ArrayPart;
use pbs_core::{ArrayRange, Duration, JobId, Select, Size};
use proptest::prelude::*;

proptest! {
    #[test]
    fn duration_round_trips(secs in 0u64..=i32::MAX as u64) {
        let d = Duration::from_secs(secs);
        let parsed: Duration = d.to_string().parse().unwrap();
        prop_assert_eq!(parsed, d);
    }

    #[test]
    fn clock_forms_add_up(h in 0u64..1000, m in 0u64..60, s in 0u64..60) {
        let parsed: Duration = format!("{h}:{m:02}:{s:02}").parse().unwrap();
        prop_assert_eq!(parsed.as_secs(), h * 3600 + m * 60 + s);
    }

    #[test]
    fn size_round_trips(value in 0u64..1_000_000, unit in "(|k|m|g|t|p)(b|w)?") {
        let text = format!("{value}{unit}");
        let size: Size = text.parse().unwrap();
        let again: Size = size.to_string().parse().unwrap();
        prop_assert_eq!(size.to_bytes(), again.to_bytes());
        prop_assert_eq!(Size::from_bytes(size.to_bytes()).to_bytes(), size.to_bytes());
    }

    #[test]
    fn select_round_trips(chunks in proptest::collection::vec((1u32..100, 1u32..64, 1u32..512), 1..5)) {
        let text: Vec<String> = chunks.iter().map(|(n, c, m)| format!("{n}:ncpus={c}:mem={m}gb")).collect();
        let text = text.join("+");
        let select: Select = text.parse().unwrap();
        prop_assert_eq!(select.to_string(), text);
        let cpus: u64 = chunks.iter().map(|(n, c, _)| u64::from(*n) * u64::from(*c)).sum();
        prop_assert_eq!(select.total("ncpus"), Some(cpus));
    }

    #[test]
    fn job_ids_round_trip(seq in 0u64..999_999_999_999, index in proptest::option::of(0u64..100_000)) {
        let array = index.map(ArrayPart::Index).unwrap_or(ArrayPart::None);
        let id = JobId::new(seq, array, Some("host.example".into()));
        let parsed: JobId = id.to_string().parse().unwrap();
        prop_assert_eq!(parsed, id);
    }

    #[test]
    fn ranges_count_what_they_iterate(start in 0u64..1000, len in 1u64..1000, step in 1u64..20) {
        let range: ArrayRange = format!("{start}-{}:{step}", start + len).parse().unwrap();
        prop_assert_eq!(range.count(), range.iter().count() as u64);
        prop_assert!(range.iter().all(|i| range.contains(i)));
    }

    #[test]
    fn parsers_never_panic(text in "\\PC{0,40}") {
        let _ = text.parse::<Duration>();
        let _ = text.parse::<Size>();
        let _ = text.parse::<Select>();
        let _ = text.parse::<JobId>();
        let _ = text.parse::<ArrayRange>();
        let _ = text.parse::<pbs_core::Place>();
    }
}
