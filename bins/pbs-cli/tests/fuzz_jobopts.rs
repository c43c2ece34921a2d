//! Property tests of the parsers the commands run on what users type: dependency lists,
//! `-l` resource lists, `-W` pairs, dates, array ranges, destinations, qselect operators and
//! every job attribute check. None panics; a dependency list, once expanded, is canonical.

use pbs_cli::jobopts::{
    VerifyEnv, cvtdate_at, getopt, parse_destination, parse_equal_pairs, parse_resource_list, split_select_op,
    verify_attr,
};
use pbs_core::jobattr::check_array_range;
use proptest::collection::vec;
use proptest::prelude::*;

fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,60}",
        "[a-z0-9:,.@=\\[\\]\\\\\"' +-]{0,60}",
        vec(any::<char>(), 0..40).prop_map(|c| c.into_iter().collect::<String>()),
    ]
}

fn depend_item() -> impl Strategy<Value = String> {
    let kind = proptest::sample::select(
        &["after", "afterok", "afternotok", "afterany", "before", "beforeok", "beforenotok", "beforeany", "runone"][..],
    );
    let id = ("[0-9]{1,6}", proptest::option::of("[a-z][a-z0-9.-]{0,10}"), proptest::option::of("[a-z]{1,6}"))
        .prop_map(|(seq, server, at)| {
            let mut id = seq;
            if let Some(s) = server {
                id.push('.');
                id.push_str(&s);
            }
            if let Some(a) = at {
                id.push('@');
                id.push_str(&a);
            }
            id
        });
    prop_oneof![
        (kind, vec(id, 1..4)).prop_map(|(k, ids)| format!("{k}:{}", ids.join(":"))),
        (proptest::sample::select(&["on", "synccount"][..]), 0..=pbs_core::depend::MAX_TARGETS)
            .prop_map(|(k, n)| format!("{k}:{n}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_user_text_panics(text in hostile()) {
        let _ = pbs_core::depend::expand(&text, "srv");
        let _ = parse_resource_list(&text);
        let _ = parse_equal_pairs(&text);
        let _ = check_array_range(&text);
        let _ = parse_destination(&text);
        let _ = split_select_op(&text);
        let now = chrono::NaiveDate::from_ymd_opt(2026, 4, 15).and_then(|d| d.and_hms_opt(12, 0, 0)).unwrap_or_default();
        let _ = cvtdate_at(&text, now);
        let env = VerifyEnv { host: "h", cwd: "/tmp", server: "srv", is_dir: &|_| false };
        for name in ["Job_Name", "Checkpoint", "depend", "Output_Path", "Execution_Time", "group_list", "Mail_Users",
                     "Hold_Types", "Keep_Files", "Mail_Points", "Priority", "Rerunable", "stagein",
                     "array_indices_submitted", "Shell_Path_List", "Resource_List.ncpus", &text] {
            let _ = verify_attr(name, &text, &env);
        }
        let args: Vec<String> = text.split(' ').map(str::to_string).collect();
        let _ = getopt("qsub", &args, "a:A:c:C:e:fhIj:J:k:l:m:M:N:o:p:q:r:S:u:v:VW:zX", true);
    }

    #[test]
    fn dependency_lists_expand_once(items in vec(depend_item(), 1..4)) {
        let list = items.join(",");
        let expanded = pbs_core::depend::expand(&list, "srv").map_err(|e| TestCaseError::fail(format!("{list}: {e:?}")))?;
        let again = pbs_core::depend::expand(&expanded, "srv").map_err(|e| TestCaseError::fail(format!("{expanded}: {e:?}")))?;
        prop_assert_eq!(&again, &expanded);
        // An item whose targets were all named before under its kind goes.
        prop_assert!(expanded.split(',').count() <= items.len());
        let parsed = pbs_core::depend::DependList::parse(&expanded, "srv").map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        for (i, item) in parsed.0.iter().enumerate() {
            for target in &item.targets {
                let id = target.split('@').next().unwrap_or(target);
                let twice = parsed.0[..=i].iter().filter(|d| d.kind == item.kind)
                    .flat_map(|d| &d.targets).filter(|t| t.split('@').next() == Some(id)).count();
                prop_assert_eq!(twice, 1, "{} named twice under {:?} in {}", id, item.kind, expanded);
            }
        }
    }

    /// A long list that repeats a few ids, in any spelling of each (with or without the
    /// server, with `@server`), keeps each id once; past 4096 distinct ids it is refused.
    #[test]
    fn long_repeated_lists_are_bounded_by_the_jobs_they_name(
        ids in vec(1u32..50, 1..8),
        repeats in 1usize..3000,
        distinct in 0usize..5000,
    ) {
        let spelled = |i: usize, id: u32| match i % 3 {
            0 => id.to_string(),
            1 => format!("{id}.srv"),
            _ => format!("{id}.srv@srv"),
        };
        let mut list = String::from("afterok");
        for i in 0..repeats {
            list.push(':');
            list.push_str(&spelled(i, ids[i % ids.len()]));
        }
        let expanded = pbs_core::depend::expand(&list, "srv").map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        let kept = expanded.trim_start_matches("afterok:").split(':').count();
        prop_assert_eq!(kept, unique.len().min(repeats));
        let many: String = (0..distinct).map(|i| format!(":{}", 1000 + i)).collect();
        let result = pbs_core::depend::expand(&format!("afterany{many}"), "srv");
        if distinct > pbs_core::depend::MAX_TARGETS {
            prop_assert_eq!(result, Err(pbs_core::depend::DependError::TooMany));
        } else if distinct > 0 {
            prop_assert!(result.is_ok());
        }
    }
}
