//! Run limits of the server and of queues: the new form `max_run = [o:PBS_ALL=10],
//! [u:PBS_GENERIC=2],[u:alice=3],[g:PBS_GENERIC=4]` and the old attributes it replaced
//! (`max_running` = `o:PBS_ALL`, `max_user_run` = `u:PBS_GENERIC`, `max_group_run` =
//! `g:PBS_GENERIC`), plus the running-job counts they are checked against.

use std::collections::HashMap;

use crate::reason::Reason;

/// Entity limits on the number of running jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunLimits {
    /// `o:PBS_ALL`.
    pub(crate) all: Option<u64>,
    /// `u:PBS_GENERIC`.
    pub(crate) user_generic: Option<u64>,
    /// `u:<name>`.
    pub(crate) users: HashMap<String, u64>,
    /// `g:PBS_GENERIC`.
    pub(crate) group_generic: Option<u64>,
    /// `g:<name>`.
    pub(crate) groups: HashMap<String, u64>,
}

impl RunLimits {
    /// Reads the limit attributes from an attribute list (`max_run` first, then the old
    /// names fill what it left unset; OpenPBS refuses to mix both forms anyway).
    pub(crate) fn from_attrs<'a>(attrs: impl Iterator<Item = (&'a str, &'a str)>) -> RunLimits {
        let mut limits = RunLimits::default();
        let mut old: Vec<(&str, u64)> = Vec::new();
        for (name, value) in attrs {
            match name {
                "max_run" => limits.parse_max_run(value),
                "max_running" | "max_user_run" | "max_group_run" => {
                    if let Ok(n) = value.trim().parse::<u64>() {
                        old.push((name, n));
                    }
                }
                _ => {}
            }
        }
        for (name, n) in old {
            let slot = match name {
                "max_running" => &mut limits.all,
                "max_user_run" => &mut limits.user_generic,
                _ => &mut limits.group_generic,
            };
            slot.get_or_insert(n);
        }
        limits
    }

    fn parse_max_run(&mut self, value: &str) {
        // The server refuses a malformed value when it is set; one that slipped through
        // (an older store) limits nothing rather than half of what it says.
        let Ok(parsed) = pbs_core::entlim::Limits::counts(value) else { return };
        // Project limits need the job's project, which the mirror does not carry.
        if parsed.overall.is_some() {
            self.all = parsed.overall;
        }
        if parsed.user.generic.is_some() {
            self.user_generic = parsed.user.generic;
        }
        if parsed.group.generic.is_some() {
            self.group_generic = parsed.group.generic;
        }
        self.users.extend(parsed.user.named);
        self.groups.extend(parsed.group.named);
    }

    /// A user limit of some kind is set: equivalence classes then split by owner.
    pub(crate) fn has_user_limit(&self) -> bool {
        self.user_generic.is_some() || !self.users.is_empty()
    }

    /// A group limit of some kind is set.
    pub(crate) fn has_group_limit(&self) -> bool {
        self.group_generic.is_some() || !self.groups.is_empty()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.all.is_none() && !self.has_user_limit() && !self.has_group_limit()
    }
}

/// Running-job counts of one scope (the server or a queue), by user and group id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunCounts {
    pub(crate) total: u64,
    pub(crate) by_user: HashMap<u32, u64>,
    pub(crate) by_group: HashMap<u32, u64>,
}

impl RunCounts {
    /// Counts one more (`delta` = 1) or one fewer (`delta` = -1) running job.
    pub(crate) fn add(&mut self, user: u32, group: u32, delta: i64) {
        fn bump(value: &mut u64, delta: i64) {
            *value = value.saturating_add_signed(delta);
        }
        bump(&mut self.total, delta);
        bump(self.by_user.entry(user).or_default(), delta);
        bump(self.by_group.entry(group).or_default(), delta);
    }
}

/// Which scope a limit belongs to, for the comment.
#[derive(Clone, Copy)]
pub(crate) enum Scope<'a> {
    Server,
    Queue(&'a str),
}

/// Checks one entity kind (user or group) as OpenPBS's `check_*_max_*_run`: an individual
/// limit, when set, is the only one that applies; otherwise the generic one.
fn check_entity(
    individual: Option<u64>,
    generic: Option<u64>,
    used: u64,
    scope: Scope<'_>,
    is_user: bool,
    entity: &str,
) -> Option<Reason> {
    if let Some(limit) = individual {
        if used >= limit {
            return Some(match (scope, is_user) {
                (Scope::Server, true) => Reason::ServerByUserJobLimit(entity.to_string()),
                (Scope::Server, false) => Reason::ServerByGroupJobLimit(entity.to_string()),
                (Scope::Queue(q), true) => Reason::QueueByUserJobLimit(q.to_string(), entity.to_string()),
                (Scope::Queue(q), false) => Reason::QueueByGroupJobLimit(q.to_string(), entity.to_string()),
            });
        }
        return None;
    }
    let limit = generic?;
    if used < limit {
        return None;
    }
    Some(match (scope, is_user) {
        (Scope::Server, true) => Reason::ServerUserLimit,
        (Scope::Server, false) => Reason::ServerGroupLimit,
        (Scope::Queue(q), true) => Reason::QueueUserLimit(q.to_string()),
        (Scope::Queue(q), false) => Reason::QueueGroupLimit(q.to_string()),
    })
}

/// The job's owner and group, by id and name.
pub(crate) struct Entity<'a> {
    pub(crate) user: u32,
    pub(crate) user_name: &'a str,
    pub(crate) group: u32,
    pub(crate) group_name: &'a str,
}

/// Checks the group, overall and user limits of one scope, in OpenPBS's order
/// (`limfuncs[]` in limits.cpp: group, run, user).
fn check_scope(limits: &RunLimits, counts: &RunCounts, scope: Scope<'_>, who: &Entity<'_>) -> Option<Reason> {
    if limits.is_empty() {
        return None;
    }
    if limits.has_group_limit() {
        let used = counts.by_group.get(&who.group).copied().unwrap_or(0);
        let individual = limits.groups.get(who.group_name).copied();
        if let Some(reason) = check_entity(individual, limits.group_generic, used, scope, false, who.group_name) {
            return Some(reason);
        }
    }
    if let Some(all) = limits.all
        && counts.total >= all
    {
        return Some(match scope {
            Scope::Server => Reason::ServerJobLimit,
            Scope::Queue(q) => Reason::QueueJobLimit(q.to_string()),
        });
    }
    if limits.has_user_limit() {
        let used = counts.by_user.get(&who.user).copied().unwrap_or(0);
        let individual = limits.users.get(who.user_name).copied();
        if let Some(reason) = check_entity(individual, limits.user_generic, used, scope, true, who.user_name) {
            return Some(reason);
        }
    }
    None
}

/// Queue limits first, then the server's, as OpenPBS checks them.
pub(crate) fn check_limits(
    queue: (&str, &RunLimits, &RunCounts),
    server: (&RunLimits, &RunCounts),
    who: &Entity<'_>,
) -> Option<Reason> {
    let (queue_name, queue_limits, queue_counts) = queue;
    check_scope(queue_limits, queue_counts, Scope::Queue(queue_name), who)
        .or_else(|| check_scope(server.0, server.1, Scope::Server, who))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_new_and_old_forms() {
        let attrs = [("max_run", "[o:PBS_ALL=10],[u:PBS_GENERIC=2], [u:alice=3],[g:staff=1]"), ("max_user_run", "7")];
        let limits = RunLimits::from_attrs(attrs.iter().map(|(a, b)| (*a, *b)));
        assert_eq!(limits.all, Some(10));
        assert_eq!(limits.user_generic, Some(2));
        assert_eq!(limits.users.get("alice"), Some(&3));
        assert_eq!(limits.groups.get("staff"), Some(&1));
        let old = RunLimits::from_attrs([("max_running", "4"), ("max_group_run", "2")].into_iter());
        assert_eq!((old.all, old.group_generic), (Some(4), Some(2)));
    }

    #[test]
    fn individual_limit_overrides_generic() {
        let limits = RunLimits::from_attrs([("max_run", "[u:PBS_GENERIC=1],[u:alice=3]")].into_iter());
        let mut counts = RunCounts::default();
        counts.add(1, 1, 1);
        counts.add(1, 1, 1);
        let alice = Entity { user: 1, user_name: "alice", group: 1, group_name: "g" };
        assert_eq!(check_scope(&limits, &counts, Scope::Server, &alice), None);
        counts.add(1, 1, 1);
        assert_eq!(
            check_scope(&limits, &counts, Scope::Server, &alice),
            Some(Reason::ServerByUserJobLimit("alice".into()))
        );
        counts.add(2, 1, 1);
        let bob = Entity { user: 2, user_name: "bob", group: 1, group_name: "g" };
        assert_eq!(
            check_scope(&limits, &counts, Scope::Queue("workq"), &bob),
            Some(Reason::QueueUserLimit("workq".into()))
        );
    }
}
