//! Policy settings that OpenPBS keeps in `PBS_HOME/sched_priv/sched_config` rather than in
//! server attributes: `strict_ordering`, `backfill`, `help_starving_jobs`, `max_starve`,
//! the prime-time keys and the `resources` line.
//!
//! Only these keys are read; every other line of a real sched_config is accepted and
//! ignored, so an OpenPBS file can be dropped in unchanged.
//!
//! `strict_ordering`, `backfill`, `help_starving_jobs`, `backfill_prime` and
//! `preemptive_sched` take OpenPBS's
//! period qualifier after the value: `ALL` (or none) sets both periods, `prime` only prime
//! time, `non_prime` only non-prime time. The plain fields hold the prime-time values;
//! [`SchedConfig::non_prime_policy`] holds the non-prime ones once a line names a period,
//! and [`SchedConfig::policy_at`] picks the values of the period a cycle runs in.

/// The switches that may differ between prime and non-prime time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodPolicy {
    /// `strict_ordering`.
    pub strict_ordering: bool,
    /// `backfill`.
    pub backfill: bool,
    /// `help_starving_jobs`.
    pub help_starving_jobs: bool,
    /// `backfill_prime`.
    pub backfill_prime: bool,
    /// `preemptive_sched`: whether a job that cannot run may preempt running jobs.
    pub preemptive_sched: bool,
}

/// The scheduler's policy switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// `strict_ordering`: a job that cannot run keeps every later job from running
    /// (OpenPBS default False). Prime-time value (see [`SchedConfig::policy_at`]).
    pub strict_ordering: bool,
    /// `help_starving_jobs` (OpenPBS's shipped sched_config: True): a queued job eligible
    /// for longer than `max_starve` is starving; starving jobs go first among the jobs of
    /// their queue priority and become top jobs even without strict ordering.
    pub help_starving_jobs: bool,
    /// `max_starve`, seconds (shipped sched_config: 24:00:00).
    pub max_starve: i64,
    /// The non-prime-time values, once a sched_config line names a period; `None`: the
    /// same as prime time.
    pub non_prime_policy: Option<PeriodPolicy>,
    /// `backfill`: lower jobs may run around the top jobs when strict ordering is on
    /// (OpenPBS default True). Needs the calendar, which is not built yet: until then a
    /// blocked strict order blocks everything after it.
    pub backfill: bool,
    /// `resources`: the resources matched against nodes. `None` means every resource a
    /// chunk asks for (booleans are always matched, as in OpenPBS).
    pub resources: Option<Vec<String>>,
    /// `dedicated_prefix`: queues whose name starts with it run only during dedicated
    /// time (OpenPBS default `ded`).
    pub dedicated_prefix: String,
    /// Dedicated time windows `[from, to)`, epoch seconds, sorted: the content of
    /// `PBS_HOME/sched_priv/dedicated_time` (see [`parse_dedicated_time`]), read by the
    /// daemon with sched_config.
    pub dedicated: Vec<(i64, i64)>,
    /// `backfill_prime`: a job must end before the prime status changes (plus
    /// `prime_spill`). OpenPBS default False.
    pub backfill_prime: bool,
    /// `prime_spill`, seconds (default 0).
    pub prime_spill: i64,
    /// `preemptive_sched` (OpenPBS default True): off, no job preempts another.
    /// Prime-time value (see [`SchedConfig::policy_at`]).
    pub preemptive_sched: bool,
    /// `primetime_prefix` (default `p_`): such queues run only in prime time.
    pub primetime_prefix: String,
    /// `nonprimetime_prefix` (default `np_`): such queues run only in non-prime time.
    pub nonprimetime_prefix: String,
    /// `prime_exempt_anytime_queues` (default False): `backfill_prime` spares jobs of
    /// queues that are neither prime nor non-prime queues.
    pub prime_exempt_anytime_queues: bool,
    /// Non-prime intervals `[from, to)`, epoch seconds, sorted: the `holidays` file as
    /// [`crate::prime::parse_holidays`] reads it. Empty: always prime time.
    pub nonprime: Vec<(i64, i64)>,
}

impl Default for SchedConfig {
    fn default() -> SchedConfig {
        SchedConfig {
            strict_ordering: false,
            help_starving_jobs: true,
            max_starve: 24 * 3600,
            non_prime_policy: None,
            backfill: true,
            resources: None,
            dedicated_prefix: "ded".to_string(),
            dedicated: Vec::new(),
            backfill_prime: false,
            prime_spill: 0,
            preemptive_sched: true,
            primetime_prefix: "p_".to_string(),
            nonprimetime_prefix: "np_".to_string(),
            prime_exempt_anytime_queues: false,
            nonprime: Vec::new(),
        }
    }
}

/// Reads OpenPBS's `dedicated_time` file: `MM/DD/YYYY HH:MM MM/DD/YYYY HH:MM` (start,
/// end) per line, `#` comments and blank lines ignored. `to_epoch` turns a local date and
/// time into epoch seconds (the daemon passes the local time zone; tests a fixed one).
/// Returns the windows, sorted, and one message per malformed line (which is skipped).
pub fn parse_dedicated_time(
    text: &str,
    to_epoch: impl Fn(chrono::NaiveDateTime) -> Option<i64>,
) -> (Vec<(i64, i64)>, Vec<String>) {
    let mut windows = Vec::new();
    let mut errors = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let stamp = |date: &str, time: &str| {
            chrono::NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%m/%d/%Y %H:%M").ok().and_then(&to_epoch)
        };
        let window = match fields.as_slice() {
            [d1, t1, d2, t2] => stamp(d1, t1).zip(stamp(d2, t2)),
            _ => None,
        };
        match window {
            Some((from, to)) if from < to => windows.push((from, to)),
            Some(_) => errors.push(format!("dedicated_time line {}: end is not after start: {line}", number + 1)),
            None => errors.push(format!("dedicated_time line {}: malformed: {line}", number + 1)),
        }
    }
    windows.sort_unstable();
    (windows, errors)
}

/// Local date and time to epoch seconds, in the process's time zone (the earlier of two
/// candidates across a DST change; `None` for a time that does not exist).
pub fn local_epoch(time: chrono::NaiveDateTime) -> Option<i64> {
    use chrono::TimeZone;
    chrono::Local.from_local_datetime(&time).earliest().map(|t| t.timestamp())
}

/// The first word of `value` as a duration (`[[HH:]MM:]SS`), in seconds.
fn seconds(value: &str) -> Option<i64> {
    let duration = value.split_whitespace().next()?.parse::<pbs_core::Duration>().ok()?;
    i64::try_from(duration.as_secs()).ok()
}

fn truth(value: &str) -> Option<bool> {
    let word = value.split_whitespace().next()?;
    match word.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Some(true),
        "false" | "f" | "no" | "n" | "0" => Some(false),
        _ => None,
    }
}

/// The period a sched_config line applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Period {
    All,
    Prime,
    NonPrime,
}

/// The sched_config a first start installs: the keys this scheduler reads, with their
/// defaults and what each does, in the layout of OpenPBS's own file.
pub const DEFAULT_SCHED_CONFIG: &str = include_str!("default_sched_config");

/// The qualifier after the value (`true prime`): none or `ALL` is both periods.
fn period(value: &str) -> Option<Period> {
    match value.split_whitespace().nth(1).map(str::to_ascii_lowercase).as_deref() {
        None | Some("all") => Some(Period::All),
        Some("prime") => Some(Period::Prime),
        Some("non_prime") => Some(Period::NonPrime),
        _ => None,
    }
}

impl SchedConfig {
    /// The prime-time values of the period-qualified switches.
    fn prime_policy(&self) -> PeriodPolicy {
        PeriodPolicy {
            strict_ordering: self.strict_ordering,
            backfill: self.backfill,
            help_starving_jobs: self.help_starving_jobs,
            backfill_prime: self.backfill_prime,
            preemptive_sched: self.preemptive_sched,
        }
    }

    /// The period-qualified switches in force at `now`: prime time unless `now` falls in
    /// a non-prime interval of the holidays file.
    pub fn policy_at(&self, now: i64) -> PeriodPolicy {
        match self.non_prime_policy {
            Some(non_prime) if !crate::prime::is_prime(&self.nonprime, now) => non_prime,
            _ => self.prime_policy(),
        }
    }

    /// Sets one period-qualified switch for `period`.
    fn set_switch(&mut self, period: Period, value: bool, field: fn(&mut PeriodPolicy) -> &mut bool) {
        if period != Period::All && self.non_prime_policy.is_none() {
            self.non_prime_policy = Some(self.prime_policy());
        }
        if period != Period::NonPrime {
            let mut prime = self.prime_policy();
            *field(&mut prime) = value;
            self.strict_ordering = prime.strict_ordering;
            self.backfill = prime.backfill;
            self.help_starving_jobs = prime.help_starving_jobs;
            self.backfill_prime = prime.backfill_prime;
            self.preemptive_sched = prime.preemptive_sched;
        }
        if period != Period::Prime
            && let Some(non_prime) = self.non_prime_policy.as_mut()
        {
            *field(non_prime) = value;
        }
    }

    /// Reads the text of a sched_config file; unknown keys and malformed lines are ignored.
    pub fn parse(text: &str) -> SchedConfig {
        SchedConfig::parse_checked(text).0
    }

    /// As [`SchedConfig::parse`], with one message per line that was skipped: a line
    /// without `key: value`, or a known key whose value does not parse.
    pub fn parse_checked(text: &str) -> (SchedConfig, Vec<String>) {
        let mut config = SchedConfig::default();
        let mut problems = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                problems.push(format!("sched_config line {}: malformed: {line}", number + 1));
                continue;
            };
            let value = value.trim();
            let bad = |problems: &mut Vec<String>| {
                problems.push(format!("sched_config line {}: bad value for {}: {value}", number + 1, key.trim()));
            };
            let switch: Option<fn(&mut PeriodPolicy) -> &mut bool> = match key.trim() {
                "strict_ordering" => Some(|p| &mut p.strict_ordering),
                "backfill" => Some(|p| &mut p.backfill),
                "help_starving_jobs" => Some(|p| &mut p.help_starving_jobs),
                "backfill_prime" => Some(|p| &mut p.backfill_prime),
                "preemptive_sched" => Some(|p| &mut p.preemptive_sched),
                _ => None,
            };
            if let Some(field) = switch {
                match truth(value).zip(period(value)) {
                    Some((v, when)) => config.set_switch(when, v, field),
                    None => bad(&mut problems),
                }
                continue;
            }
            match key.trim() {
                "max_starve" => match seconds(value) {
                    Some(secs) => config.max_starve = secs,
                    None => bad(&mut problems),
                },
                "dedicated_prefix" => match value.split_whitespace().next() {
                    Some(prefix) => config.dedicated_prefix = prefix.to_string(),
                    None => bad(&mut problems),
                },
                "primetime_prefix" => match value.split_whitespace().next() {
                    Some(prefix) => config.primetime_prefix = prefix.to_string(),
                    None => bad(&mut problems),
                },
                "nonprimetime_prefix" => match value.split_whitespace().next() {
                    Some(prefix) => config.nonprimetime_prefix = prefix.to_string(),
                    None => bad(&mut problems),
                },
                "prime_exempt_anytime_queues" => match truth(value) {
                    Some(v) => config.prime_exempt_anytime_queues = v,
                    None => bad(&mut problems),
                },
                "prime_spill" => match seconds(value) {
                    Some(secs) => config.prime_spill = secs,
                    None => bad(&mut problems),
                },
                // Scheduler object attributes now (seed 002): set with qmgr, never read here.
                name @ ("preempt_queue_prio" | "preempt_prio" | "preempt_order" | "preempt_sort") => {
                    problems.push(format!("Obsolete config name {name}, instead use nothing - set via qmgr"));
                }
                "resources" => {
                    let list = value.trim_matches('"');
                    config.resources =
                        Some(list.split(',').map(|r| r.trim().to_string()).filter(|r| !r.is_empty()).collect());
                }
                _ => {}
            }
        }
        (config, problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installed_default_reads_back_as_the_defaults() {
        let (parsed, problems) = SchedConfig::parse_checked(DEFAULT_SCHED_CONFIG);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(parsed, SchedConfig::default());
    }

    #[test]
    fn reads_the_keys_it_knows() {
        let text = "# comment\nround_robin: False all\nstrict_ordering: true ALL\nbackfill: false\n\
                    resources: \"ncpus, mem, arch, host, vnode, aoe, eoe\"\n";
        let config = SchedConfig::parse(text);
        assert!(config.strict_ordering);
        assert!(!config.backfill);
        assert_eq!(config.resources.as_ref().map(Vec::len), Some(7));
        assert_eq!(SchedConfig::parse(""), SchedConfig::default());
        assert_eq!(SchedConfig::parse("dedicated_prefix: maint\n").dedicated_prefix, "maint");
        assert_eq!(SchedConfig::default().dedicated_prefix, "ded");
        let (config, problems) =
            SchedConfig::parse_checked("strict_ordering: maybe\nno colon here\nbackfill: false\nfoo: bar\n");
        assert!(!config.strict_ordering && !config.backfill);
        assert_eq!(problems.len(), 2);
        assert!(problems[0].contains("line 1") && problems[1].contains("line 2"));
        let config = SchedConfig::parse(
            "backfill_prime: true ALL\nprime_spill: 1:00:00\nprimetime_prefix: pr_\nnonprimetime_prefix: npr_\n\
             prime_exempt_anytime_queues: true\n",
        );
        assert!(config.backfill_prime && config.prime_exempt_anytime_queues);
        assert_eq!(config.prime_spill, 3600);
        assert_eq!((config.primetime_prefix.as_str(), config.nonprimetime_prefix.as_str()), ("pr_", "npr_"));
    }

    #[test]
    fn preemption_settings_are_obsolete_here_and_ignored() {
        let (config, problems) =
            SchedConfig::parse_checked("preempt_order: \"R\"\npreempt_sort: min_time_since_start\n");
        assert_eq!(config, SchedConfig::default());
        assert_eq!(
            problems,
            vec![
                "Obsolete config name preempt_order, instead use nothing - set via qmgr",
                "Obsolete config name preempt_sort, instead use nothing - set via qmgr",
            ]
        );
    }

    #[test]
    fn reads_starvation_keys_with_openpbs_defaults() {
        let config = SchedConfig::default();
        assert!(config.help_starving_jobs);
        assert_eq!(config.max_starve, 86_400);
        let config = SchedConfig::parse("help_starving_jobs: false ALL\nmax_starve: 2:00:00\n");
        assert!(!config.help_starving_jobs);
        assert_eq!(config.max_starve, 7200);
        let (config, problems) = SchedConfig::parse_checked("max_starve: soon\nhelp_starving_jobs: true sometimes\n");
        assert_eq!(config.max_starve, 86_400);
        assert!(config.help_starving_jobs);
        assert_eq!(problems.len(), 2);
    }

    #[test]
    fn period_qualifiers_pick_the_value_of_the_current_period() {
        // Non-prime from 100 to 200.
        let with_nonprime = |text: &str| SchedConfig { nonprime: vec![(100, 200)], ..SchedConfig::parse(text) };
        let config = with_nonprime("strict_ordering: true prime\n");
        assert!(config.policy_at(50).strict_ordering);
        assert!(!config.policy_at(150).strict_ordering);
        assert!(config.policy_at(250).strict_ordering);
        let config =
            with_nonprime("backfill: false ALL\nhelp_starving_jobs: false non_prime\nbackfill_prime: true prime\n");
        let (prime, non_prime) = (config.policy_at(0), config.policy_at(100));
        assert!(!prime.backfill && !non_prime.backfill);
        assert!(prime.help_starving_jobs && !non_prime.help_starving_jobs);
        assert!(prime.backfill_prime && !non_prime.backfill_prime);
        // A later ALL line sets both periods.
        let config = with_nonprime("strict_ordering: true non_prime\nstrict_ordering: false all\n");
        assert!(!config.policy_at(0).strict_ordering && !config.policy_at(150).strict_ordering);
        // Without a qualified line, both periods share the values.
        let config = with_nonprime("strict_ordering: true\n");
        assert_eq!(config.non_prime_policy, None);
        assert!(config.policy_at(150).strict_ordering);
        let (_, problems) = SchedConfig::parse_checked("strict_ordering: true weekends\n");
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn reads_dedicated_time_and_skips_bad_lines() {
        let utc = |t: chrono::NaiveDateTime| Some(t.and_utc().timestamp());
        let text = "# FROM TO\n\n04/15/2026 12:00 04/15/2026 15:30\n01/01/2026 00:00 01/01/2026 01:00 # new year\n\
                    garbage here\n13/40/2026 12:00 04/15/2026 15:30\n04/15/2026 12:00 04/15/2026 11:00\n";
        let (windows, errors) = parse_dedicated_time(text, utc);
        assert_eq!(windows, vec![(1_767_225_600, 1_767_229_200), (1_776_254_400, 1_776_267_000)]);
        assert_eq!(errors.len(), 3);
        assert!(errors[0].contains("line 5"));
    }
}

/// Property tests: no text makes the sched_config, dedicated_time or holidays readers
/// panic, and every setting they know, written as OpenPBS writes it, reads back.
#[cfg(test)]
mod props {
    use super::*;
    use proptest::collection::vec;
    use proptest::option;
    use proptest::prelude::*;

    fn utc(t: chrono::NaiveDateTime) -> Option<i64> {
        Some(t.and_utc().timestamp())
    }

    fn policy() -> impl Strategy<Value = PeriodPolicy> {
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(strict_ordering, backfill, help_starving_jobs, backfill_prime, preemptive_sched)| PeriodPolicy {
                strict_ordering,
                backfill,
                help_starving_jobs,
                backfill_prime,
                preemptive_sched,
            },
        )
    }

    fn config() -> impl Strategy<Value = SchedConfig> {
        let secs = 0i64..=i64::from(i32::MAX);
        (
            policy(),
            option::of(policy()),
            (secs.clone(), secs, any::<bool>()),
            ("[a-z_]{1,8}", "[a-z_]{1,8}", "[a-z_]{1,8}"),
            option::of(vec("[a-z][a-z0-9_.]{0,10}", 0..5)),
        )
            .prop_map(|(prime, non_prime_policy, (max_starve, prime_spill, exempt), prefixes, resources)| {
                SchedConfig {
                    strict_ordering: prime.strict_ordering,
                    backfill: prime.backfill,
                    help_starving_jobs: prime.help_starving_jobs,
                    backfill_prime: prime.backfill_prime,
                    preemptive_sched: prime.preemptive_sched,
                    non_prime_policy,
                    max_starve,
                    prime_spill,
                    prime_exempt_anytime_queues: exempt,
                    dedicated_prefix: prefixes.0,
                    primetime_prefix: prefixes.1,
                    nonprimetime_prefix: prefixes.2,
                    resources,
                    ..SchedConfig::default()
                }
            })
    }

    /// The sched_config text that sets `config`, in OpenPBS's spelling.
    fn print(config: &SchedConfig) -> String {
        let truth = |v: bool| if v { "True" } else { "False" };
        let mut out = String::from("# written by the property test\n\nround_robin: False all\n");
        type Switch = (&'static str, fn(&PeriodPolicy) -> bool);
        let switches: [Switch; 5] = [
            ("strict_ordering", |p| p.strict_ordering),
            ("backfill", |p| p.backfill),
            ("help_starving_jobs", |p| p.help_starving_jobs),
            ("backfill_prime", |p| p.backfill_prime),
            ("preemptive_sched", |p| p.preemptive_sched),
        ];
        for (key, get) in switches {
            match &config.non_prime_policy {
                None => out.push_str(&format!("{key}: {} ALL\n", truth(get(&config.prime_policy())))),
                Some(non_prime) => {
                    out.push_str(&format!("{key}: {} prime\n", truth(get(&config.prime_policy()))));
                    out.push_str(&format!("{key}:\t{}   non_prime\n", truth(get(non_prime))));
                }
            }
        }
        let duration = |secs: i64| pbs_core::Duration::from_secs(secs.unsigned_abs()).to_string();
        out.push_str(&format!("max_starve: {}\n", duration(config.max_starve)));
        out.push_str(&format!("prime_spill: {}\n", duration(config.prime_spill)));
        out.push_str(&format!("prime_exempt_anytime_queues: {}\n", truth(config.prime_exempt_anytime_queues)));
        out.push_str(&format!("dedicated_prefix: {}\n", config.dedicated_prefix));
        out.push_str(&format!("primetime_prefix: {}\n", config.primetime_prefix));
        out.push_str(&format!("nonprimetime_prefix: {}\n", config.nonprimetime_prefix));
        if let Some(resources) = &config.resources {
            out.push_str(&format!("resources: \"{}\"\n", resources.join(", ")));
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn no_text_panics(text in prop_oneof!["\\PC{0,200}", "([a-z_]{1,20}:[ \\t]*[A-Za-z0-9:\" ,._-]{0,20}\\n){0,8}"]) {
            let (_, problems) = SchedConfig::parse_checked(&text);
            prop_assert!(problems.len() <= text.lines().count());
            let _ = parse_dedicated_time(&text, utc);
            let _ = crate::prime::parse_holidays(&text, utc);
        }

        #[test]
        fn dates_with_hostile_fields_never_panic(
            fields in vec(prop_oneof!["[0-9]{1,3}/[0-9]{1,3}/[0-9]{1,6}", "[0-9]{1,3}:[0-9]{1,3}", "[0-9]{1,5}", "[a-z]{1,6}"], 0..6),
        ) {
            let line = fields.join(" ");
            let _ = parse_dedicated_time(&line, utc);
            let _ = crate::prime::parse_holidays(&format!("YEAR 2026\n{line}\n"), utc);
            let _ = crate::prime::parse_holidays(&format!("YEAR {line}\n"), utc);
        }

        #[test]
        fn every_setting_reads_back(config in config()) {
            let text = print(&config);
            let (parsed, problems) = SchedConfig::parse_checked(&text);
            prop_assert!(problems.is_empty(), "{:?}", problems);
            prop_assert_eq!(parsed, config);
        }
    }
}
