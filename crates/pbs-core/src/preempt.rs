//! Preemption's settings as the scheduler object holds them (`preempt_order`,
//! `preempt_prio`, `preempt_sort`), checked as OpenPBS checks them, and the rules both
//! daemons read from them: the methods a job is preempted by for the share of its
//! requested time it has used, and the priority class a job falls in.

use std::fmt;

/// The names of the four settings, with the values OpenPBS gives them when unset.
pub const DEFAULTS: [(&str, &str); 4] = [
    ("preempt_queue_prio", "150"),
    ("preempt_prio", "express_queue, normal_jobs"),
    ("preempt_order", "SCR"),
    ("preempt_sort", "min_time_since_start"),
];

/// At most this many numbers in `preempt_order` (OpenPBS's `PREEMPT_ORDER_MAX`).
pub const ORDER_MAX_NUMBERS: usize = 20;

/// A way of taking a running job's resources away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// S: the job's processes are stopped and its resources released.
    Suspend,
    /// C: the job is checkpointed and requeued.
    Checkpoint,
    /// R: the job is killed and queued again.
    Requeue,
    /// D: the job is deleted.
    Delete,
}

impl Method {
    /// The letter of `preempt_order` and of a PreemptJobs reply.
    pub fn letter(self) -> char {
        match self {
            Method::Suspend => 'S',
            Method::Checkpoint => 'C',
            Method::Requeue => 'R',
            Method::Delete => 'D',
        }
    }

    /// The method of a letter.
    pub fn from_letter(letter: char) -> Option<Method> {
        Some(match letter {
            'S' => Method::Suspend,
            'C' => Method::Checkpoint,
            'R' => Method::Requeue,
            'D' => Method::Delete,
            _ => return None,
        })
    }

    /// The word OpenPBS's log lines use (`preemption method suspend failed for job`).
    pub fn word(self) -> &'static str {
        match self {
            Method::Suspend => "suspend",
            Method::Checkpoint => "checkpoint",
            Method::Requeue => "requeue",
            Method::Delete => "delete",
        }
    }
}

/// A value of one of the settings that OpenPBS refuses (`Illegal attribute or resource
/// value`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("illegal preemption setting: {0}")]
pub struct BadSetting(pub &'static str);

/// One band of `preempt_order`: the methods tried, in order, for a job whose percentage
/// of requested time left is within `low..=high`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// Highest percentage left of the band.
    pub high: u32,
    /// Lowest percentage left of the band.
    pub low: u32,
    /// The methods, in the order they are tried (none when the value ends with a number).
    pub methods: Vec<Method>,
}

/// `preempt_order` read: bands from 100% of the requested time left down to 0%.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreemptOrder {
    bands: Vec<Band>,
}

impl PreemptOrder {
    /// Reads a value as OpenPBS's server does (`action_sched_preempt_order`): tokens
    /// apart by blanks, letters then a number then letters..., each of `S`, `C`, `R`, `D`
    /// at most once per group, at most [`ORDER_MAX_NUMBERS`] numbers. We also refuse
    /// numbers that do not descend below 100 (`SCR 50 S 80 R`), which OpenPBS takes and
    /// then never uses the band of.
    pub fn parse(text: &str) -> Result<PreemptOrder, BadSetting> {
        let mut tokens = text.split([' ', '\t']).filter(|t| !t.is_empty()).peekable();
        if tokens.peek().is_none_or(|t| t.starts_with(|c: char| c.is_ascii_digit())) {
            return Err(BadSetting("preempt_order must start with methods"));
        }
        let mut bands = vec![Band { high: 100, low: 0, methods: Vec::new() }];
        let mut next_is_number = false;
        let mut numbers = 0;
        for token in tokens {
            if numbers == ORDER_MAX_NUMBERS {
                return Err(BadSetting("preempt_order has too many bands"));
            }
            let last = bands.len() - 1;
            if token.starts_with(|c: char| c.is_ascii_digit()) {
                if !next_is_number {
                    return Err(BadSetting("preempt_order has two numbers in a row"));
                }
                let number: u32 =
                    token.parse().map_err(|_| BadSetting("preempt_order has a number that does not read"))?;
                if number >= bands[last].high {
                    return Err(BadSetting("preempt_order's bands must descend"));
                }
                bands[last].low = number + 1;
                bands.push(Band { high: number, low: 0, methods: Vec::new() });
                numbers += 1;
                next_is_number = false;
            } else {
                if next_is_number {
                    return Err(BadSetting("preempt_order has two method groups in a row"));
                }
                for letter in token.chars() {
                    let method =
                        Method::from_letter(letter).ok_or(BadSetting("preempt_order has an unknown method"))?;
                    if bands[last].methods.contains(&method) {
                        return Err(BadSetting("preempt_order repeats a method in a group"));
                    }
                    bands[last].methods.push(method);
                }
                next_is_number = true;
            }
        }
        Ok(PreemptOrder { bands })
    }

    /// The bands, highest first.
    pub fn bands(&self) -> &[Band] {
        &self.bands
    }

    /// The methods for a job that has used `used` of its `requested` time (seconds), as
    /// OpenPBS's `get_preemption_order`: the percentage left is truncated, a job past its
    /// request counts as 1% left, and a job without a request gets the first band.
    pub fn methods_for(&self, requested: Option<u64>, used: u64) -> &[Method] {
        let first = &self.bands[0].methods;
        let Some(requested) = requested.filter(|r| *r > 0) else { return first };
        // One band: nothing to choose (OpenPBS tests the second band's top for 0).
        if self.bands.get(1).is_none_or(|b| b.high == 0) {
            return first;
        }
        let used_percent = used as f64 / requested as f64 * 100.0;
        let mut left = (100.0 - used_percent) as i64;
        if left < 0 {
            left = 1;
        }
        self.bands.iter().find(|b| left <= i64::from(b.high) && left >= i64::from(b.low)).map_or(first, |b| &b.methods)
    }
}

impl Default for PreemptOrder {
    fn default() -> Self {
        PreemptOrder {
            bands: vec![Band {
                high: 100,
                low: 0,
                methods: vec![Method::Suspend, Method::Checkpoint, Method::Requeue],
            }],
        }
    }
}

/// A preemption priority class of `preempt_prio`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// `normal_jobs`: a job in none of the other classes.
    Normal,
    /// `fairshare`: over its fairshare usage.
    Fairshare,
    /// `queue_softlimits`: its entity is over a soft run limit of its queue.
    QueueSoftlimits,
    /// `server_softlimits`: its entity is over a soft run limit of the server.
    ServerSoftlimits,
    /// `express_queue`: in a queue whose `Priority` is at least `preempt_queue_prio`.
    ExpressQueue,
    /// `starving_jobs`: eligible longer than `max_starve` (the seed's class).
    StarvingJobs,
}

impl Class {
    fn from_name(name: &str) -> Option<Class> {
        Some(match name {
            "normal_jobs" => Class::Normal,
            "fairshare" => Class::Fairshare,
            "queue_softlimits" => Class::QueueSoftlimits,
            "server_softlimits" => Class::ServerSoftlimits,
            "express_queue" => Class::ExpressQueue,
            "starving_jobs" => Class::StarvingJobs,
            _ => return None,
        })
    }

    /// The name `preempt_prio` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Class::Normal => "normal_jobs",
            Class::Fairshare => "fairshare",
            Class::QueueSoftlimits => "queue_softlimits",
            Class::ServerSoftlimits => "server_softlimits",
            Class::ExpressQueue => "express_queue",
            Class::StarvingJobs => "starving_jobs",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of classes a job is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Classes(u8);

impl Classes {
    /// Adds a class.
    pub fn insert(&mut self, class: Class) {
        self.0 |= class.bit();
    }

    /// Whether every class of `other` is in this set.
    pub fn contains_all(self, other: Classes) -> bool {
        other.0 != 0 && self.0 & other.0 == other.0
    }

    /// Whether it holds `class`.
    pub fn contains(self, class: Class) -> bool {
        self.0 & class.bit() != 0
    }
}

/// `preempt_prio` read: entries (each one class or several joined by `+`), highest
/// priority first as OpenPBS orders them, entries of more classes before those of fewer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreemptPrio {
    entries: Vec<Classes>,
}

impl PreemptPrio {
    /// Reads a value as OpenPBS's check does: a comma list whose entries join known class
    /// names with `+`.
    pub fn parse(text: &str) -> Result<PreemptPrio, BadSetting> {
        let mut entries = Vec::new();
        for entry in text.split(',') {
            let entry = entry.trim();
            if entry.is_empty() {
                return Err(BadSetting("preempt_prio has an empty entry"));
            }
            let mut classes = Classes::default();
            for name in entry.split('+') {
                classes.insert(Class::from_name(name.trim()).ok_or(BadSetting("preempt_prio has an unknown class"))?);
            }
            entries.push(classes);
        }
        // Stable: among entries of as many classes, the order given decides.
        entries.sort_by_key(|c| std::cmp::Reverse(c.0.count_ones()));
        Ok(PreemptPrio { entries })
    }

    /// The preemption priority of a job in `classes` (higher preempts lower): the rank of
    /// the first entry all of whose classes it is in, counted from the bottom; a job
    /// matching none ranks as `normal_jobs` does (0 when that is not listed).
    pub fn level(&self, classes: Classes) -> u32 {
        let mut classes = classes;
        if classes.0 == 0 {
            classes.insert(Class::Normal);
        }
        let n = self.entries.len() as u32;
        let rank = |i: usize| n - i as u32;
        if let Some(i) = self.entries.iter().position(|e| classes.contains_all(*e)) {
            return rank(i);
        }
        let mut normal = Classes::default();
        normal.insert(Class::Normal);
        self.entries.iter().position(|e| *e == normal).map_or(0, rank)
    }
}

impl Default for PreemptPrio {
    fn default() -> Self {
        PreemptPrio::parse(DEFAULTS[1].1).unwrap_or(PreemptPrio { entries: Vec::new() })
    }
}

/// `preempt_queue_prio`, `preempt_prio` and `preempt_sort` as the server sends them
/// (OpenPBS's defaults where unset or unreadable: the server refuses bad values).
#[derive(Clone, Debug)]
pub struct Settings {
    /// `preempt_queue_prio`.
    pub queue_prio: i64,
    /// `preempt_prio`.
    pub prio: PreemptPrio,
    /// `preempt_sort=min_time_since_start`: the most recently started go first.
    pub by_start: bool,
    /// `preempt_targets_enable` (unset: True): jobs' `preempt_targets` are obeyed.
    pub targets_enable: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { queue_prio: 150, prio: PreemptPrio::default(), by_start: true, targets_enable: true }
    }
}

impl Settings {
    /// Reads the scheduler object's attributes as `(name, value)`.
    pub fn from_attrs<'a>(attrs: impl Iterator<Item = (&'a str, &'a str)>) -> Settings {
        let mut settings = Settings { by_start: false, ..Settings::default() };
        for (name, value) in attrs {
            match name {
                "preempt_queue_prio" => settings.queue_prio = value.trim().parse().unwrap_or(150),
                "preempt_prio" => settings.prio = PreemptPrio::parse(value).unwrap_or_default(),
                "preempt_sort" => settings.by_start = value.trim().eq_ignore_ascii_case("min_time_since_start"),
                "preempt_targets_enable" => {
                    settings.targets_enable = crate::attr::parse_bool(value).unwrap_or(true);
                }
                _ => {}
            }
        }
        settings
    }
}

/// `Resource_List.preempt_targets` read: the running jobs a job may preempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// `NONE`: the job preempts nothing.
    None,
    /// A running job is a target when it matches any of these.
    Any(Vec<Target>),
}

/// One entry of `preempt_targets`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `queue=Q`: jobs of queue `Q`.
    Queue(String),
    /// `Resource_List.RES=value`: jobs whose `Resource_List.RES` is exactly `value`.
    Resource {
        /// The resource's name.
        name: String,
        /// Its value, as the job's text must be.
        value: String,
    },
}

/// Why a `preempt_targets` value is refused, as OpenPBS's server refuses it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadTargets {
    /// Not `NONE` alone, nor entries of `queue=Q` and `Resource_List.RES=value`:
    /// `Illegal attribute or resource value`.
    #[error("preempt_targets does not read")]
    Syntax,
    /// A resource that is not defined: `Unknown resource`.
    #[error("unknown resource {0} in preempt_targets")]
    UnknownResource(String),
    /// A queue that does not exist: `Unknown queue`.
    #[error("unknown queue {0} in preempt_targets")]
    UnknownQueue(String),
}

impl Targets {
    /// Reads a value as OpenPBS's `preempt_targets_action` does: comma-separated entries,
    /// `NONE` (any case) only alone, `queue=` and `Resource_List.` named in any case;
    /// `known_resource` and `known_queue` say what exists.
    pub fn parse(
        text: &str,
        known_resource: impl Fn(&str) -> bool,
        known_queue: impl Fn(&str) -> bool,
    ) -> Result<Targets, BadTargets> {
        let entries: Vec<&str> = text.split(',').map(str::trim).collect();
        if entries.iter().any(|e| e.eq_ignore_ascii_case("NONE")) {
            return if entries.len() == 1 { Ok(Targets::None) } else { Err(BadTargets::Syntax) };
        }
        let mut targets = Vec::with_capacity(entries.len());
        for entry in entries {
            let split = entry.find(['.', '=']).ok_or(BadTargets::Syntax)?;
            let (kind, rest) = entry.split_at(split);
            if kind.eq_ignore_ascii_case("Resource_List") && rest.starts_with('.') {
                let (name, value) = rest[1..].split_once('=').ok_or(BadTargets::Syntax)?;
                if !known_resource(name) {
                    return Err(BadTargets::UnknownResource(name.to_string()));
                }
                targets.push(Target::Resource { name: name.to_string(), value: value.to_string() });
            } else if kind.eq_ignore_ascii_case("queue") && rest.starts_with('=') {
                let queue = &rest[1..];
                if !known_queue(queue) {
                    return Err(BadTargets::UnknownQueue(queue.to_string()));
                }
                targets.push(Target::Queue(queue.to_string()));
            } else {
                return Err(BadTargets::Syntax);
            }
        }
        Ok(Targets::Any(targets))
    }

    /// Reads a value the server took, for the scheduler: every queue and resource is
    /// taken as known (one deleted since simply matches nothing).
    pub fn read(text: &str) -> Option<Targets> {
        Targets::parse(text, |_| true, |_| true).ok()
    }

    /// Whether a running job of `queue` whose `Resource_List` gives `resource` may be
    /// preempted, as OpenPBS's `preempt_job_set_filter`: any entry matching is enough.
    pub fn admits<'a>(&self, queue: &str, resource: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Targets::None => false,
            Targets::Any(targets) => targets.iter().any(|target| match target {
                Target::Queue(q) => q == queue,
                Target::Resource { name, value } => resource(name) == Some(value.as_str()),
            }),
        }
    }
}

/// Checks a value of one of the preemption settings of the scheduler object; other
/// attributes pass.
pub fn check_sched_value(name: &str, value: &str) -> Result<(), BadSetting> {
    match name {
        "preempt_order" => PreemptOrder::parse(value).map(|_| ()),
        "preempt_prio" => PreemptPrio::parse(value).map(|_| ()),
        // The one sort OpenPBS knows; unsetting it is how a site turns it off.
        "preempt_sort" if value != "min_time_since_start" => Err(BadSetting("preempt_sort")),
        _ => Ok(()),
    }
}

/// The value OpenPBS shows for a preemption setting that is unset.
pub fn default_of(name: &str) -> Option<&'static str> {
    DEFAULTS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letters(methods: &[Method]) -> String {
        methods.iter().map(|m| m.letter()).collect()
    }

    #[test]
    fn orders_openpbs_takes_and_refuses() {
        for good in ["SCR", "SR", "S", "D", "SCR 80 SC 50 S", "R 10 S", "SCRD", "SCR 80", "S\t50 R"] {
            assert!(PreemptOrder::parse(good).is_ok(), "{good}");
        }
        // pbs_preempt_params.py's refusals, then ours: bands that do not descend.
        for bad in [
            "abc",
            "123abc",
            "abc123",
            "SCR 80 PQR",
            "PQR",
            "SCR SC",
            "80 SC",
            "SCR 80 70",
            "",
            "SS",
            "scr",
            "SCR 80 SC 90 S",
            "SCR 100 S",
            "SCR 50 SC 50 S",
            "S 8x R",
        ] {
            assert!(PreemptOrder::parse(bad).is_err(), "{bad}");
        }
        let twenty: String = (0..20).map(|i| format!("S {} ", 95 - i * 4)).collect::<String>() + "R";
        assert!(PreemptOrder::parse(twenty.trim()).is_err(), "21 groups after 20 numbers");
        let nineteen: String = (0..19).map(|i| format!("S {} ", 95 - i * 4)).collect::<String>() + "R";
        assert!(PreemptOrder::parse(nineteen.trim()).is_ok());
    }

    #[test]
    fn the_band_follows_the_percentage_left() {
        let order = PreemptOrder::parse("SCR 80 SC 50 S").unwrap();
        // 10% used: 90% left, the first band; 30% used: 70% left; 60% used: 40% left.
        assert_eq!(letters(order.methods_for(Some(100), 10)), "SCR");
        assert_eq!(letters(order.methods_for(Some(100), 30)), "SC");
        assert_eq!(letters(order.methods_for(Some(100), 60)), "S");
        // Past the request: 1% left. A number belongs to the band below it: 80% left is
        // the second band, 81% the first.
        assert_eq!(letters(order.methods_for(Some(100), 250)), "S");
        assert_eq!(letters(order.methods_for(Some(100), 19)), "SCR");
        assert_eq!(letters(order.methods_for(Some(100), 20)), "SC");
        // No request: the first band.
        assert_eq!(letters(order.methods_for(None, 60)), "SCR");
        let one = PreemptOrder::parse("R").unwrap();
        assert_eq!(letters(one.methods_for(Some(100), 99)), "R");
        let open = PreemptOrder::parse("R 10").unwrap();
        assert_eq!(letters(open.methods_for(Some(100), 95)), "");
        assert_eq!(letters(PreemptOrder::default().methods_for(Some(10), 5)), "SCR");
    }

    #[test]
    fn priority_classes_rank_as_listed_with_combined_entries_first() {
        for bad in ["nrmal_jobs", "express_queue, nrmal_jobs", "abc", "express_queue,", "express_queue+"] {
            assert!(PreemptPrio::parse(bad).is_err(), "{bad}");
        }
        let prio = PreemptPrio::default();
        let mut express = Classes::default();
        express.insert(Class::ExpressQueue);
        let normal = Classes::default();
        assert!(prio.level(express) > prio.level(normal));
        let prio = PreemptPrio::parse("express_queue, normal_jobs, express_queue+fairshare, fairshare").unwrap();
        let mut both = express;
        both.insert(Class::Fairshare);
        let mut fair = Classes::default();
        fair.insert(Class::Fairshare);
        assert!(prio.level(both) > prio.level(express));
        assert!(prio.level(express) > prio.level(normal));
        assert!(prio.level(normal) > prio.level(fair));
        let mut soft = Classes::default();
        soft.insert(Class::ServerSoftlimits);
        let prio = PreemptPrio::parse("express_queue, normal_jobs, server_softlimits").unwrap();
        assert!(prio.level(soft) < prio.level(normal));
    }

    #[test]
    fn targets_read_as_openpbs_reads_them() {
        let known = |name: &str| matches!(name, "ncpus" | "software" | "workq" | "express");
        let parse = |text: &str| Targets::parse(text, known, known);
        assert_eq!(parse("NONE"), Ok(Targets::None));
        assert_eq!(parse(" none"), Ok(Targets::None));
        let both = parse("queue=workq,Resource_List.software=abc").unwrap();
        assert_eq!(
            both,
            Targets::Any(vec![
                Target::Queue("workq".into()),
                Target::Resource { name: "software".into(), value: "abc".into() }
            ])
        );
        assert_eq!(parse("QUEUE=express"), Ok(Targets::Any(vec![Target::Queue("express".into())])));
        for bad in ["NONE,queue=workq", "queue", "queue.workq", "Resource_List=abc", "Resource_List.ncpus", "abc=1", ""]
        {
            assert_eq!(parse(bad), Err(BadTargets::Syntax), "{bad}");
        }
        assert_eq!(parse("queue=nosuch"), Err(BadTargets::UnknownQueue("nosuch".into())));
        assert_eq!(parse("Resource_List.foo=1"), Err(BadTargets::UnknownResource("foo".into())));
        let res = |name: &str| (name == "software").then_some("abc");
        assert!(both.admits("other", res));
        assert!(both.admits("workq", |_| None));
        assert!(!both.admits("other", |_| None));
        assert!(!both.admits("other", |name: &str| (name == "software").then_some("abcd")));
        assert!(!Targets::None.admits("workq", res));
    }

    #[test]
    fn sort_takes_its_one_value() {
        assert!(check_sched_value("preempt_sort", "min_time_since_start").is_ok());
        for bad in ["123", "min_time_sincestart", "abc"] {
            assert!(check_sched_value("preempt_sort", bad).is_err());
        }
        assert!(check_sched_value("scheduling", "whatever").is_ok());
    }
}
