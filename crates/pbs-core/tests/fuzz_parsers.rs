//! Property tests of every pbs-core parser that reads outside input (job ids, select and
//! place, exec_vnode, durations, sizes, resource values, pbs.conf, Torque-style nodes specs,
//! nfilter)
//! and of the soft_walltime
//! arithmetic: no input makes them panic, and what they print they read back unchanged.
//! Index ranges have their own tests (`parsers.rs`).

use pbs_core::conf::PbsConf;
use pbs_core::jobid::ArrayPart;
use pbs_core::nodespec;
use pbs_core::resource::{ResourceDef, ResourceRegistry};
use pbs_core::select::{Arrangement, Sharing};
use pbs_core::walltime::{completion_percent, soft_estimate};
use pbs_core::{Duration, ExecVnode, JobId, Place, Select, Size};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;

/// Any text, biased towards the characters these grammars give meaning to.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,60}",
        "[0-9:.+=\\[\\]()a-z,@#\\\\ \"'-]{0,60}",
        vec(any::<char>(), 0..40).prop_map(|c| c.into_iter().collect()),
    ]
}

fn resource_name() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9_-]{0,12}"
}

/// A resource value as select writes it: anything but its separators.
fn chunk_value() -> impl Strategy<Value = String> {
    "[^:+\\r\\n]{1,16}"
}

fn unique_resources() -> impl Strategy<Value = Vec<(String, String)>> {
    btree_map(resource_name(), chunk_value(), 0..5).prop_map(|m| m.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_parser_panics(text in hostile_text()) {
        let _ = text.parse::<Duration>();
        let _ = text.parse::<Size>();
        let _ = text.parse::<Select>();
        let _ = text.parse::<Place>();
        let _ = text.parse::<JobId>();
        let _ = text.parse::<ExecVnode>();
        let _ = PbsConf::parse(&text, &[]);
        for ncpus in [None, Some(0), Some(u64::MAX)] {
            let _ = nodespec::convert(&text, ncpus, Some(u64::MAX), |name| name.len() == 2);
        }
        let _ = nodespec::node_count(&text);
        let _ = nodespec::cpu_count(&text);
        let registry = ResourceRegistry::new();
        for name in ["ncpus", "mem", "walltime", "select", "place", "host", "arch", "nodect", "soft_walltime"] {
            if let Some(def) = registry.get(name) {
                let _ = def.normalize(&text);
            }
        }
        for rtype in ["long", "float", "size", "string", "string_array", "boolean"] {
            let _ = ResourceDef::custom("r", rtype, "");
        }
        let _ = ResourceDef::custom(&text, &text, &text);
        let _ = pbs_core::nfilter::NFilter::parse(&text);
        if let Ok(select) = text.parse::<Select>() {
            let _ = registry.check_select_conditions(&select);
        }
    }

    /// Filters made of the grammar's own pieces in any order: parsing never panics, and
    /// what parses has at most `MAX_TERMS` terms.
    #[test]
    fn nfilter_pieces_in_any_order(pieces in vec(select(vec![
        "resources_available", "['a']", "[b]", "==", "!=", "<", "<=", ">", ">=", "'x'", "\"y\"", "z9",
        "and", "or", "not", "(", ")", " ", "'", "[", "]",
    ]), 0..80)) {
        let text: String = pieces.concat();
        if let Ok(filter) = pbs_core::nfilter::NFilter::parse(&text) {
            prop_assert!(filter.terms().len() <= pbs_core::nfilter::MAX_TERMS);
            let _ = filter.eval(|i| i % 2 == 0);
        }
    }

    #[test]
    fn nodes_specs_become_selects_that_parse(
        parts in vec(("[0-9]{0,4}", vec("(ppn|cpp|ncpus)=[0-9]{1,4}|[a-z][a-z0-9]{0,3}", 0..4)), 1..4),
        modifiers in vec("excl|shared|[a-z]{1,4}", 0..3),
        ncpus in proptest::option::of(0u64..100),
    ) {
        let spec: Vec<String> = parts
            .iter()
            .map(|(count, props)| {
                let mut all: Vec<&str> = Vec::new();
                if !count.is_empty() {
                    all.push(count);
                }
                all.extend(props.iter().map(String::as_str));
                all.join(":")
            })
            .collect();
        let text = spec.join("+") + &modifiers.iter().map(|m| format!("#{m}")).collect::<String>();
        if let Ok(conversion) = nodespec::convert(&text, ncpus, Some(1 << 20), |name| name.starts_with('n')) {
            prop_assert!(conversion.select.parse::<Select>().is_ok(), "{text} -> {}", conversion.select);
        }
    }

    #[test]
    fn any_size_reads_back(value in any::<u64>(), unit in 0usize..6, words in any::<bool>()) {
        let text = format!("{value}{}{}", ["", "k", "m", "g", "t", "p"][unit], if words { "w" } else { "b" });
        let size: Size = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(size.to_string(), text.clone());
        let again: Size = size.to_string().parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(again.to_string(), text.clone());
        let bytes: Size = Size::from_bytes(size.to_bytes()).to_string().parse()
            .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(bytes.to_bytes(), size.to_bytes());
    }

    #[test]
    fn durations_read_back_in_any_form(secs in 0u64..=i32::MAX as u64, fraction in proptest::option::of("[0-9]{1,3}")) {
        let clock = format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
        let text = match &fraction {
            Some(f) => format!("{clock}.{f}"),
            None => clock.clone(),
        };
        let parsed: Duration = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(parsed.as_secs(), secs);
        prop_assert_eq!(parsed.to_string(), clock);
        let plain: Duration = secs.to_string().parse().map_err(|e| TestCaseError::fail(format!("{secs}: {e}")))?;
        prop_assert_eq!(plain, parsed);
    }

    #[test]
    fn job_ids_read_back(
        seq in 0u64..=999_999_999_999,
        array in prop_oneof![
            Just(ArrayPart::None),
            Just(ArrayPart::Parent),
            (0u64..=9_999_999_999).prop_map(ArrayPart::Index),
        ],
        server in proptest::option::of("[^\\r\\n]{1,30}"),
    ) {
        let id = JobId::new(seq, array, server);
        let text = id.to_string();
        let parsed: JobId = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(parsed, id);
    }

    #[test]
    fn select_reads_back(chunks in vec((1u32..=u32::MAX, unique_resources()), 1..6)) {
        let text: Vec<String> = chunks
            .iter()
            .map(|(count, resources)| {
                let mut chunk = count.to_string();
                for (name, value) in resources {
                    chunk.push_str(&format!(":{name}={value}"));
                }
                chunk
            })
            .collect();
        let text = text.join("+");
        let select: Select = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(select.to_string(), text.clone());
        let again: Select = select.to_string().parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(again, select.clone());
        prop_assert_eq!(select.nodect(), chunks.iter().map(|(c, _)| u64::from(*c)).sum::<u64>());
    }

    #[test]
    fn place_reads_any_order(
        arrangement in proptest::option::of(0usize..4),
        sharing in proptest::option::of(0usize..3),
        group in proptest::option::of(resource_name()),
        order in Just(()).prop_perturb(|_, mut rng| rng.next_u32()),
    ) {
        let mut words = Vec::new();
        if let Some(a) = arrangement {
            words.push(["free", "pack", "scatter", "vscatter"][a].to_string());
        }
        if let Some(s) = sharing {
            words.push(["excl", "shared", "exclhost"][s].to_string());
        }
        if let Some(g) = &group {
            words.push(format!("group={g}"));
        }
        prop_assume!(!words.is_empty());
        let n = words.len();
        words.rotate_left(order as usize % n);
        let text = words.join(":");
        let place: Place = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let expected_arrangement = match arrangement {
            None | Some(0) => Arrangement::Free,
            Some(1) => Arrangement::Pack,
            Some(2) => Arrangement::Scatter,
            Some(_) => Arrangement::VScatter,
        };
        let expected_sharing = match sharing {
            None => Sharing::Default,
            Some(0) => Sharing::Excl,
            Some(1) => Sharing::Shared,
            Some(_) => Sharing::ExclHost,
        };
        prop_assert_eq!(place.arrangement, expected_arrangement);
        prop_assert_eq!(place.sharing, expected_sharing);
        prop_assert_eq!(place.group, group);
    }

    #[test]
    fn exec_vnode_reads_back(
        chunks in vec(vec(("[a-zA-Z0-9][a-zA-Z0-9._-]{0,10}", vec((resource_name(), "[a-zA-Z0-9._-]{1,8}"), 0..3)), 1..3), 1..4),
    ) {
        let text: Vec<String> = chunks
            .iter()
            .map(|parts| {
                let parts: Vec<String> = parts
                    .iter()
                    .map(|(vnode, resources)| {
                        let mut part = vnode.clone();
                        for (name, value) in resources {
                            part.push_str(&format!(":{name}={value}"));
                        }
                        part
                    })
                    .collect();
                format!("({})", parts.join("+"))
            })
            .collect();
        let text = text.join("+");
        let parsed: ExecVnode = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(parsed.to_string(), text.clone());
        prop_assert_eq!(parsed.chunks.len(), chunks.len());
    }

    #[test]
    fn resource_values_normalise_once(
        name in select(&["ncpus", "mem", "vmem", "walltime", "cput", "select", "place", "arch", "host", "nodect"][..]),
        value in prop_oneof![
            hostile_text(),
            "[0-9]{1,20}[kmgtp]?[bw]?",
            "[0-9]{1,4}:[0-9]{1,2}:[0-9]{1,2}",
            "[0-9]{1,3}:ncpus=[0-9]{1,3}(:mem=[0-9]{1,3}gb)?",
        ],
    ) {
        let registry = ResourceRegistry::new();
        let Some(def) = registry.get(name) else { return Err(TestCaseError::fail(format!("{name} is not built in"))) };
        if let Ok(canonical) = def.normalize(&value) {
            let again = def.normalize(&canonical).map_err(|e| TestCaseError::fail(format!("{name}={canonical}: {e}")))?;
            prop_assert_eq!(again, canonical);
        }
    }

    #[test]
    fn pbs_conf_reads_back(
        entries in btree_map("PBS_[A-Z_]{1,20}", "[^\\s=#][^\\r\\n]{0,30}[^\\s]|[^\\s=#]", 0..8),
        comments in vec("#[^\\r\\n]{0,20}", 0..3),
    ) {
        let mut text = String::new();
        for c in &comments {
            text.push_str(c);
            text.push('\n');
        }
        for (k, v) in &entries {
            text.push_str(&format!("{k}={v}\n"));
        }
        match PbsConf::parse(&text, &[]) {
            Ok(conf) => prop_assert_eq!(conf.raw, entries),
            // Only a port key may make the file unreadable, and only when it is not a port.
            Err(e) => prop_assert!(
                entries.iter().any(|(k, v)| k.ends_with("_PORT") && v.parse::<u16>().is_err()),
                "{e}"
            ),
        }
    }

    #[test]
    fn soft_walltime_stays_within_its_bounds(soft in any::<u64>(), hard in proptest::option::of(any::<u64>()), elapsed in any::<u64>()) {
        let estimate = soft_estimate(soft, hard, elapsed);
        if soft > 0 {
            prop_assert!(estimate >= soft.min(hard.map_or(u64::MAX, |h| h.max(soft))));
            if let Some(h) = hard {
                prop_assert!(estimate <= h.max(soft));
            }
        }
        prop_assert!(completion_percent(soft, elapsed) <= 100);
    }
}
