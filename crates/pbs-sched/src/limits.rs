//! Run limits of the server and of queues, hard and soft: `max_run`, `max_run_res.RES`,
//! `max_run_soft` and `max_run_res_soft.RES`, each per `o:PBS_ALL`, `u:`, `g:` and `p:`
//! entity (generic `PBS_GENERIC` or named), and the old attributes `max_run` replaced
//! (`max_running` = `o:PBS_ALL`, `max_user_run` = `u:PBS_GENERIC`, `max_group_run` =
//! `g:PBS_GENERIC`); the running jobs' usage per entity they are checked against, kept by
//! adding and removing one job at a time; and which limit a job would break.
//!
//! A hard limit holds a job back when starting it would pass the limit. A soft limit
//! never does: a running job whose entity uses more than its soft limit is "over its soft
//! limits", OpenPBS's `queue_softlimits` / `server_softlimits` preemption classes.

use std::collections::HashMap;

use pbs_core::entlim::{self, Applies, EntityKind, Limits, Scoped};

use crate::reason::{Reason, ResLimit};
use crate::resources::{ResId, ResourceTable, UNSET, add_amounts, amount_of, parse_amount};

/// The limits of one attribute family (hard or soft) of one scope.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LimitSet {
    /// `max_run` (`max_run_soft`): running jobs.
    pub(crate) run: Limits<u64>,
    /// `max_run_res.RES` (`max_run_res_soft.RES`): amounts of `Resource_List.RES`, in
    /// the scheduler's units, in the order the attributes came.
    pub(crate) res: Vec<(ResId, Limits<i64>)>,
}

impl LimitSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.run.is_empty() && self.res.iter().all(|(_, l)| l.is_empty())
    }

    fn has(&self, kind: EntityKind) -> bool {
        fn set<V: Copy>(l: &Limits<V>, kind: EntityKind) -> bool {
            match kind {
                EntityKind::Overall => l.overall.is_some(),
                EntityKind::User => l.user.is_set(),
                EntityKind::Group => l.group.is_set(),
                EntityKind::Project => l.project.is_set(),
            }
        }
        set(&self.run, kind) || self.res.iter().any(|(_, l)| set(l, kind))
    }
}

/// The run limits of one scope (the server or a queue).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RunLimits {
    pub(crate) hard: LimitSet,
    pub(crate) soft: LimitSet,
}

impl RunLimits {
    /// Reads the limit attributes from an attribute list (`max_run` first, then the old
    /// names fill what it left unset; OpenPBS refuses to mix both forms anyway). Resource
    /// limits intern their resource in `res`.
    pub(crate) fn from_attrs<'a>(
        attrs: impl Iterator<Item = (&'a str, &'a str)>,
        res: &mut ResourceTable,
    ) -> RunLimits {
        let mut limits = RunLimits::default();
        let mut old: Vec<(&str, u64)> = Vec::new();
        for (name, value) in attrs {
            // The server refuses a malformed value when it is set; one that slipped through
            // (an older store) limits nothing rather than half of what it says.
            match name {
                "max_run" => limits.hard.run = Limits::counts(value).unwrap_or_default(),
                "max_run_soft" => limits.soft.run = Limits::counts(value).unwrap_or_default(),
                "max_running" | "max_user_run" | "max_group_run" => {
                    if let Ok(n) = value.trim().parse::<u64>() {
                        old.push((name, n));
                    }
                }
                _ => {
                    let (set, resource) = if let Some(r) = name.strip_prefix("max_run_res.") {
                        (&mut limits.hard, r)
                    } else if let Some(r) = name.strip_prefix("max_run_res_soft.") {
                        (&mut limits.soft, r)
                    } else {
                        continue;
                    };
                    if let Some(parsed) = resource_limits(res, resource, value) {
                        set.res.push(parsed);
                    }
                }
            }
        }
        for (name, n) in old {
            let slot = match name {
                "max_running" => &mut limits.hard.run.overall,
                "max_user_run" => &mut limits.hard.run.user.generic,
                _ => &mut limits.hard.run.group.generic,
            };
            slot.get_or_insert(n);
        }
        limits
    }

    /// A hard limit of this kind (count or resource) is set: equivalence classes then
    /// split by that entity (soft limits never hold a job back, so never split them).
    pub(crate) fn has(&self, kind: EntityKind) -> bool {
        self.hard.has(kind)
    }
}

/// A resource limit's amounts in the scheduler's units (kilobytes, seconds...). A limit
/// on a resource that is not an amount cannot be counted and is left out.
fn resource_limits(res: &mut ResourceTable, resource: &str, text: &str) -> Option<(ResId, Limits<i64>)> {
    let sample = entlim::parse(text).ok()?.first()?.value.to_string();
    let id = res.intern(resource, &sample);
    let kind = res.kind(id);
    if !kind.consumable() {
        return None;
    }
    Some((id, Limits::parse_with(text, |v| parse_amount(kind, v)).ok()?))
}

/// Whom a job counts for: its owner, group and project, interned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Who {
    pub(crate) user: u32,
    pub(crate) group: u32,
    pub(crate) project: u32,
}

/// What the running jobs of one entity use: how many there are and the sums of their
/// `Resource_List` amounts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) jobs: u64,
    /// Dense by resource id, [`UNSET`] where nothing was added.
    pub(crate) res: Vec<i64>,
}

impl Usage {
    fn add(&mut self, amounts: &[(ResId, i64)], sign: i64) {
        self.jobs = self.jobs.saturating_add_signed(sign);
        add_amounts(&mut self.res, amounts, sign);
    }

    pub(crate) fn amount(&self, id: ResId) -> i64 {
        match amount_of(&self.res, id) {
            UNSET => 0,
            v => v,
        }
    }
}

/// Running-job usage of one scope (the server or a queue), overall and per entity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunCounts {
    pub(crate) all: Usage,
    pub(crate) by_user: HashMap<u32, Usage>,
    pub(crate) by_group: HashMap<u32, Usage>,
    pub(crate) by_project: HashMap<u32, Usage>,
}

impl RunCounts {
    /// Counts one more (`sign` = 1) or one fewer (`sign` = -1) running job, with its
    /// amounts. An entity left with no job is dropped, so the maps hold only the entities
    /// that run something.
    pub(crate) fn add(&mut self, who: Who, amounts: &[(ResId, i64)], sign: i64) {
        self.all.add(amounts, sign);
        for (map, id) in
            [(&mut self.by_user, who.user), (&mut self.by_group, who.group), (&mut self.by_project, who.project)]
        {
            let usage = map.entry(id).or_default();
            usage.add(amounts, sign);
            if usage.jobs == 0 {
                map.remove(&id);
            }
        }
    }

    /// The usage of `who`'s entity of `kind`.
    pub(crate) fn of(&self, kind: EntityKind, who: Who) -> Option<&Usage> {
        match kind {
            EntityKind::Overall => Some(&self.all),
            EntityKind::User => self.by_user.get(&who.user),
            EntityKind::Group => self.by_group.get(&who.group),
            EntityKind::Project => self.by_project.get(&who.project),
        }
    }
}

/// Which scope a limit belongs to, for the comment.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scope<'a> {
    Server,
    Queue(&'a str),
}

impl Scope<'_> {
    fn queue(self) -> Option<String> {
        match self {
            Scope::Server => None,
            Scope::Queue(q) => Some(q.to_string()),
        }
    }
}

/// The job's owner, group and project, by id and name.
pub(crate) struct Entity<'a> {
    pub(crate) who: Who,
    pub(crate) user_name: &'a str,
    pub(crate) group_name: &'a str,
    pub(crate) project_name: &'a str,
}

impl Entity<'_> {
    fn name(&self, kind: EntityKind) -> &str {
        match kind {
            EntityKind::Overall => entlim::ALL,
            EntityKind::User => self.user_name,
            EntityKind::Group => self.group_name,
            EntityKind::Project => self.project_name,
        }
    }
}

/// OpenPBS's order within a scope (`limfuncs[]` in limits.cpp): group, project, overall,
/// user.
const ORDER: [EntityKind; 4] = [EntityKind::Group, EntityKind::Project, EntityKind::Overall, EntityKind::User];

/// The limit that applies to the entity of `kind` named `name`: its own, which is then the
/// only one, or else the generic one.
fn applies<V: Copy>(limits: &Limits<V>, kind: EntityKind, name: &str) -> Option<Applies<V>> {
    let scoped: &Scoped<V> = match kind {
        EntityKind::Overall => return limits.overall.map(Applies::Generic),
        EntityKind::User => &limits.user,
        EntityKind::Group => &limits.group,
        EntityKind::Project => &limits.project,
    };
    scoped.for_name(name)
}

fn value<V>(applies: Applies<V>) -> (V, bool) {
    match applies {
        Applies::Named(v) => (v, true),
        Applies::Generic(v) => (v, false),
    }
}

/// The count limit of `scope` that one more running job of `who` would pass.
fn check_run(limits: &Limits<u64>, counts: &RunCounts, scope: Scope<'_>, who: &Entity<'_>) -> Option<Reason> {
    for kind in ORDER {
        let Some(applies) = applies(limits, kind, who.name(kind)) else { continue };
        let (limit, named) = value(applies);
        let used = counts.of(kind, who.who).map_or(0, |u| u.jobs);
        if used >= limit {
            return Some(run_reason(scope, kind, named.then(|| who.name(kind).to_string())));
        }
    }
    None
}

fn run_reason(scope: Scope<'_>, kind: EntityKind, named: Option<String>) -> Reason {
    match (scope, kind, named) {
        (Scope::Server, EntityKind::Overall, _) => Reason::ServerJobLimit,
        (Scope::Queue(q), EntityKind::Overall, _) => Reason::QueueJobLimit(q.to_string()),
        (Scope::Server, EntityKind::User, None) => Reason::ServerUserLimit,
        (Scope::Server, EntityKind::Group, None) => Reason::ServerGroupLimit,
        (Scope::Server, EntityKind::Project, None) => Reason::ServerProjectLimit,
        (Scope::Queue(q), EntityKind::User, None) => Reason::QueueUserLimit(q.to_string()),
        (Scope::Queue(q), EntityKind::Group, None) => Reason::QueueGroupLimit(q.to_string()),
        (Scope::Queue(q), EntityKind::Project, None) => Reason::QueueProjectLimit(q.to_string()),
        (Scope::Server, EntityKind::User, Some(n)) => Reason::ServerByUserJobLimit(n),
        (Scope::Server, EntityKind::Group, Some(n)) => Reason::ServerByGroupJobLimit(n),
        (Scope::Server, EntityKind::Project, Some(n)) => Reason::ServerByProjectJobLimit(n),
        (Scope::Queue(q), EntityKind::User, Some(n)) => Reason::QueueByUserJobLimit(q.to_string(), n),
        (Scope::Queue(q), EntityKind::Group, Some(n)) => Reason::QueueByGroupJobLimit(q.to_string(), n),
        (Scope::Queue(q), EntityKind::Project, Some(n)) => Reason::QueueByProjectJobLimit(q.to_string(), n),
    }
}

/// The resource limit of `scope` that `amounts` (the job's request) on top of what
/// `who`'s entities use would pass. A resource the job does not ask for is not checked.
fn check_res(
    limits: &[(ResId, Limits<i64>)],
    counts: &RunCounts,
    scope: Scope<'_>,
    who: &Entity<'_>,
    amounts: &[(ResId, i64)],
    table: &ResourceTable,
) -> Option<Reason> {
    for kind in ORDER {
        for (id, set) in limits {
            let Some(&(_, asked)) = amounts.iter().find(|(r, _)| r == id) else { continue };
            let Some(applies) = applies(set, kind, who.name(kind)) else { continue };
            let (limit, named) = value(applies);
            let used = counts.of(kind, who.who).map_or(0, |u| u.amount(*id));
            if used.saturating_add(asked) > limit {
                let named = (named && kind != EntityKind::Overall).then(|| who.name(kind).to_string());
                let resource = table.name(*id).to_string();
                return Some(Reason::ResourceLimit(ResLimit { queue: scope.queue(), kind, named, resource }));
            }
        }
    }
    None
}

/// The hard limit starting the job would pass, checked in OpenPBS's order: the queue's
/// count limits, the server's, then the queue's resource limits and the server's.
pub(crate) fn check_limits(
    queue: (&str, &RunLimits, &RunCounts),
    server: (&RunLimits, &RunCounts),
    who: &Entity<'_>,
    amounts: &[(ResId, i64)],
    table: &ResourceTable,
) -> Option<Reason> {
    let (queue_name, queue_limits, queue_counts) = queue;
    let (server_limits, server_counts) = server;
    let q = Scope::Queue(queue_name);
    let (qh, sh) = (&queue_limits.hard, &server_limits.hard);
    if qh.is_empty() && sh.is_empty() {
        return None;
    }
    check_run(&qh.run, queue_counts, q, who)
        .or_else(|| check_run(&sh.run, server_counts, Scope::Server, who))
        .or_else(|| check_res(&qh.res, queue_counts, q, who, amounts, table))
        .or_else(|| check_res(&sh.res, server_counts, Scope::Server, who, amounts, table))
}

/// Whether an entity of `who` uses more than a soft limit of one scope: more running jobs
/// than its count limit, or more of a resource the job asks for than its limit. `counts`
/// include the job itself.
fn over_soft(limits: &LimitSet, counts: &RunCounts, who: &Entity<'_>, amounts: &[(ResId, i64)]) -> bool {
    for kind in ORDER {
        let usage = counts.of(kind, who.who);
        if let Some(applies) = applies(&limits.run, kind, who.name(kind))
            && usage.map_or(0, |u| u.jobs) > value(applies).0
        {
            return true;
        }
        for (id, set) in &limits.res {
            if !amounts.iter().any(|(r, _)| r == id) {
                continue;
            }
            if let Some(applies) = applies(set, kind, who.name(kind))
                && usage.map_or(0, |u| u.amount(*id)) > value(applies).0
            {
                return true;
            }
        }
    }
    false
}

/// A running job's standing against soft limits: OpenPBS's `PREEMPT_OVER_QUEUE_LIMIT` and
/// `PREEMPT_OVER_SERVER_LIMIT` bits, which the `queue_softlimits` and `server_softlimits`
/// classes of `preempt_prio` name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OverSoft {
    /// Over a soft limit of its queue.
    pub queue: bool,
    /// Over a soft limit of the server.
    pub server: bool,
}

impl OverSoft {
    /// The preemption class names it falls in, joined as `preempt_prio` joins them
    /// (`queue_softlimits+server_softlimits`); `None` when within every soft limit.
    pub fn class(self) -> Option<&'static str> {
        match (self.queue, self.server) {
            (false, false) => None,
            (true, false) => Some("queue_softlimits"),
            (false, true) => Some("server_softlimits"),
            (true, true) => Some("queue_softlimits+server_softlimits"),
        }
    }
}

/// Where a running job stands against the soft limits of its queue and the server, as
/// `check_soft_limits` finds it: from the entities' usage, so it follows every job of the
/// same user, group or project that starts or ends without any per-job bookkeeping.
pub(crate) fn soft_standing(
    queue: (&RunLimits, &RunCounts),
    server: (&RunLimits, &RunCounts),
    who: &Entity<'_>,
    amounts: &[(ResId, i64)],
) -> OverSoft {
    OverSoft {
        queue: !queue.0.soft.is_empty() && over_soft(&queue.0.soft, queue.1, who, amounts),
        server: !server.0.soft.is_empty() && over_soft(&server.0.soft, server.1, who, amounts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(attrs: &[(&str, &str)], table: &mut ResourceTable) -> RunLimits {
        RunLimits::from_attrs(attrs.iter().map(|(a, b)| (*a, *b)), table)
    }

    fn entity(user: u32, name: &'static str) -> Entity<'static> {
        Entity { who: Who { user, group: 1, project: 1 }, user_name: name, group_name: "g", project_name: "p" }
    }

    #[test]
    fn parses_new_and_old_forms() {
        let mut table = ResourceTable::default();
        let attrs = [
            ("max_run", "[o:PBS_ALL=10],[u:PBS_GENERIC=2], [u:alice=3],[g:staff=1],[p:proj=4]"),
            ("max_user_run", "7"),
            ("max_run_res.mem", "[u:PBS_GENERIC=2gb]"),
            ("max_run_soft", "[u:PBS_GENERIC=1]"),
            ("max_run_res_soft.ncpus", "[g:PBS_GENERIC=8]"),
        ];
        let l = limits(&attrs, &mut table);
        assert_eq!(l.hard.run.overall, Some(10));
        assert_eq!(l.hard.run.user.generic, Some(2));
        assert_eq!(l.hard.run.user.named.get("alice"), Some(&3));
        assert_eq!(l.hard.run.group.named.get("staff"), Some(&1));
        assert_eq!(l.hard.run.project.named.get("proj"), Some(&4));
        let mem = table.get("mem").unwrap();
        assert_eq!(l.hard.res.len(), 1);
        assert_eq!((l.hard.res[0].0, l.hard.res[0].1.user.generic), (mem, Some(2 * 1024 * 1024)));
        assert_eq!(l.soft.run.user.generic, Some(1));
        assert_eq!(l.soft.res[0].1.group.generic, Some(8));
        assert!(l.has(EntityKind::Project) && l.has(EntityKind::Group));
        let old = limits(&[("max_running", "4"), ("max_group_run", "2")], &mut table);
        assert_eq!((old.hard.run.overall, old.hard.run.group.generic), (Some(4), Some(2)));
        assert!(old.soft.is_empty());
    }

    #[test]
    fn individual_limit_overrides_generic() {
        let mut table = ResourceTable::default();
        let l = limits(&[("max_run", "[u:PBS_GENERIC=1],[u:alice=3]")], &mut table);
        let empty = RunLimits::default();
        let mut counts = RunCounts::default();
        let alice = entity(1, "alice");
        counts.add(alice.who, &[], 1);
        counts.add(alice.who, &[], 1);
        let check = |counts: &RunCounts, who: &Entity<'_>, queue: &RunLimits, server: &RunLimits| {
            check_limits(("workq", queue, counts), (server, counts), who, &[], &table)
        };
        assert_eq!(check(&counts, &alice, &empty, &l), None);
        counts.add(alice.who, &[], 1);
        assert_eq!(check(&counts, &alice, &empty, &l), Some(Reason::ServerByUserJobLimit("alice".into())));
        let bob = entity(2, "bob");
        counts.add(bob.who, &[], 1);
        assert_eq!(check(&counts, &bob, &l, &empty), Some(Reason::QueueUserLimit("workq".into())));
    }

    #[test]
    fn resource_limits_count_what_runs_plus_what_the_job_asks() {
        let mut table = ResourceTable::default();
        let l = limits(&[("max_run_res.ncpus", "[u:PBS_GENERIC=4],[u:alice=6],[o:PBS_ALL=10]")], &mut table);
        let ncpus = table.get("ncpus").unwrap();
        let empty = RunLimits::default();
        let mut counts = RunCounts::default();
        let (alice, bob) = (entity(1, "alice"), entity(2, "bob"));
        let check = |counts: &RunCounts, who: &Entity<'_>, asked: i64| {
            check_limits(("workq", &empty, counts), (&l, counts), who, &[(ncpus, asked)], &table)
        };
        counts.add(bob.who, &[(ncpus, 3)], 1);
        assert_eq!(check(&counts, &bob, 1), None);
        let reason = check(&counts, &bob, 2).unwrap();
        assert_eq!(reason.to_string(), "Server per-user limit reached on resource ncpus");
        counts.add(alice.who, &[(ncpus, 5)], 1);
        let reason = check(&counts, &alice, 2).unwrap();
        assert_eq!(reason.to_string(), "would exceed user alice's limit on resource ncpus in complex");
        // 8 running: a job of 3 passes the overall limit, checked before the user's.
        let reason = check(&counts, &bob, 3).unwrap();
        assert_eq!(reason.to_string(), "would exceed overall limit on resource ncpus in complex");
        // A job that does not ask for the resource is not held by its limit.
        assert_eq!(check_limits(("workq", &empty, &counts), (&l, &counts), &bob, &[], &table), None);
        // Ends give the usage back; an entity with nothing running is forgotten.
        counts.add(alice.who, &[(ncpus, 5)], -1);
        assert!(!counts.by_user.contains_key(&alice.who.user));
        assert_eq!(counts.all.amount(ncpus), 3);
    }

    #[test]
    fn queue_counts_come_before_server_counts_and_groups_before_users() {
        let mut table = ResourceTable::default();
        let queue = limits(&[("max_run_res.ncpus", "[g:PBS_GENERIC=1]"), ("max_run", "[p:PBS_GENERIC=1]")], &mut table);
        let server = limits(&[("max_run", "[u:PBS_GENERIC=1]")], &mut table);
        let ncpus = table.get("ncpus").unwrap();
        let mut counts = RunCounts::default();
        let alice = entity(1, "alice");
        counts.add(alice.who, &[(ncpus, 1)], 1);
        let reason = check_limits(("q1", &queue, &counts), (&server, &counts), &alice, &[(ncpus, 1)], &table);
        assert_eq!(reason.map(|r| r.to_string()).as_deref(), Some("Project has reached queue q1's running limit."));
        let queue = limits(&[("max_run_res.ncpus", "[g:PBS_GENERIC=1]")], &mut table);
        let reason = check_limits(("q1", &queue, &counts), (&server, &counts), &alice, &[(ncpus, 1)], &table);
        assert_eq!(reason.map(|r| r.to_string()).as_deref(), Some("User has reached server running job limit."));
        let reason =
            check_limits(("q1", &queue, &counts), (&RunLimits::default(), &counts), &alice, &[(ncpus, 1)], &table);
        assert_eq!(
            reason.map(|r| r.to_string()).as_deref(),
            Some("Queue q1 per-group limit reached on resource ncpus")
        );
    }

    #[test]
    fn soft_limits_mark_jobs_once_their_entity_passes_them() {
        let mut table = ResourceTable::default();
        let server = limits(&[("max_run_soft", "[u:PBS_GENERIC=1]")], &mut table);
        let queue = limits(&[("max_run_res_soft.ncpus", "[o:PBS_ALL=2]")], &mut table);
        let ncpus = table.get("ncpus").unwrap();
        let mut counts = RunCounts::default();
        let alice = entity(1, "alice");
        let job = [(ncpus, 1)];
        counts.add(alice.who, &job, 1);
        let standing = |counts: &RunCounts, amounts: &[(ResId, i64)]| {
            soft_standing((&queue, counts), (&server, counts), &alice, amounts)
        };
        // At the limit is within it.
        assert_eq!(standing(&counts, &job), OverSoft::default());
        counts.add(alice.who, &job, 1);
        assert_eq!(standing(&counts, &job), OverSoft { queue: false, server: true });
        assert_eq!(standing(&counts, &job).class(), Some("server_softlimits"));
        counts.add(alice.who, &job, 1);
        assert_eq!(standing(&counts, &job).class(), Some("queue_softlimits+server_softlimits"));
        // A job that does not ask for the resource is not over its resource limit.
        assert_eq!(standing(&counts, &[]), OverSoft { queue: false, server: true });
        // Soft limits never hold a job back.
        assert_eq!(check_limits(("q", &queue, &counts), (&server, &counts), &alice, &job, &table), None);
        counts.add(alice.who, &job, -1);
        counts.add(alice.who, &job, -1);
        assert_eq!(standing(&counts, &job), OverSoft::default());
    }
}
