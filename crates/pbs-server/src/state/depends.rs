//! Which jobs wait on which: the index of dependencies the server acts on where a job
//! starts or ends (`job::depend`), so a parent's end looks up its children instead of
//! walking every job. Rebuilt from the children's `depend` lists when the state is read.

use std::collections::BTreeMap;

use pbs_core::depend::{DependKind, DependList};

/// One relation: `child` waits (or waited) on the parent for `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Relation {
    child: u64,
    kind: DependKind,
    /// Still to be met; a met relation stays for the parent's `before` entries.
    waiting: bool,
}

/// Parent sequence number to the children that wait or waited on it, in the order they
/// came. The parent's `before` entries are shown from here ([`shown`]) instead of being
/// written into its record at each child's submission: a parent of n children would be
/// rewritten n times, growing each time (n² bytes for a fan-out).
#[derive(Debug, Default)]
pub struct Dependents {
    by_parent: BTreeMap<u64, Vec<Relation>>,
}

impl Dependents {
    /// `child` waits on `parent` for `kind` (once per pair and kind).
    pub fn add(&mut self, parent: u64, child: u64, kind: DependKind) {
        let relations = self.by_parent.entry(parent).or_default();
        // A pair can only be entered twice by one submission or qalter naming the parent
        // twice, so only the child's latest entries are looked at: a fan-out of n children
        // stays linear.
        let latest = relations.iter_mut().rev().take_while(|r| r.child == child);
        match latest.into_iter().find(|r| r.kind == kind) {
            Some(relation) => relation.waiting = true,
            None => relations.push(Relation { child, kind, waiting: true }),
        }
    }

    /// Takes the children still waiting on `parent` for one of `kinds`: their waits are
    /// met (or can no longer be), and stay only as the parent's `before` entries.
    pub fn take(&mut self, parent: u64, kinds: &[DependKind]) -> Vec<(u64, DependKind)> {
        let Some(relations) = self.by_parent.get_mut(&parent) else { return Vec::new() };
        let mut taken = Vec::new();
        for relation in relations.iter_mut().filter(|r| r.waiting && kinds.contains(&r.kind)) {
            relation.waiting = false;
            taken.push((relation.child, relation.kind));
        }
        taken
    }

    /// `child` no longer waits on `parent` for `kind`, nor ever did (qalter dropped it).
    pub fn remove(&mut self, parent: u64, child: u64, kind: DependKind) {
        if let Some(relations) = self.by_parent.get_mut(&parent) {
            relations.retain(|r| (r.child, r.kind) != (child, kind));
            if relations.is_empty() {
                self.by_parent.remove(&parent);
            }
        }
    }

    /// Forgets `parent`'s relations: it left the server.
    pub fn forget_parent(&mut self, parent: u64) {
        self.by_parent.remove(&parent);
    }

    /// The children still waiting on `parent`.
    pub fn children_of(&self, parent: u64) -> Vec<(u64, DependKind)> {
        let relations = self.by_parent.get(&parent).map(Vec::as_slice).unwrap_or(&[]);
        relations.iter().filter(|r| r.waiting).map(|r| (r.child, r.kind)).collect()
    }

    /// Whether any job waits or waited on `parent`.
    pub fn names(&self, parent: u64) -> bool {
        self.by_parent.contains_key(&parent)
    }

    /// Each job that waits or waited on `parent`, with the kind it named it by, met or not
    /// (the parent's `before` entries as OpenPBS shows them).
    pub fn named_by(&self, parent: u64) -> impl Iterator<Item = (u64, DependKind)> + '_ {
        self.by_parent.get(&parent).into_iter().flatten().map(|r| (r.child, r.kind))
    }
}

/// The `before` entry a parent shows for a child that waits with `kind`.
pub fn before_of(kind: DependKind) -> DependKind {
    match kind {
        DependKind::After => DependKind::Before,
        DependKind::Afterok => DependKind::Beforeok,
        DependKind::Afternotok => DependKind::Beforenotok,
        _ => DependKind::Beforeany,
    }
}

/// The kinds a child waits on its parent with: the `after` family, acted on where the
/// parent starts or ends.
pub const WAITING_KINDS: [DependKind; 4] =
    [DependKind::After, DependKind::Afterok, DependKind::Afternotok, DependKind::Afterany];

/// What a `depend` list (as the server keeps it) waits on: (parent sequence number,
/// kind) for each `after`-family target.
pub fn waits(list: &DependList) -> Vec<(u64, DependKind)> {
    let mut out = Vec::new();
    for dependency in list.0.iter().filter(|d| WAITING_KINDS.contains(&d.kind)) {
        for target in &dependency.targets {
            let id = target.split('@').next().unwrap_or(target);
            if let Ok(parsed) = id.parse::<pbs_core::JobId>() {
                out.push((parsed.seq(), dependency.kind));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_taken_by_kind_and_stay_named_until_their_parent_goes() {
        let mut index = Dependents::default();
        index.add(1, 2, DependKind::Afterok);
        index.add(1, 2, DependKind::Afterok);
        index.add(1, 3, DependKind::After);
        index.add(4, 3, DependKind::Afterany);
        assert_eq!(index.take(1, &[DependKind::After]), vec![(3, DependKind::After)]);
        assert_eq!(index.take(1, &[DependKind::After]), vec![], "taken once");
        assert_eq!(index.children_of(1), &[(2, DependKind::Afterok)]);
        index.remove(4, 3, DependKind::Afterany);
        assert!(index.children_of(4).is_empty() && !index.names(4));
        assert_eq!(index.take(1, &[DependKind::Afterok, DependKind::Afterany]), vec![(2, DependKind::Afterok)]);
        assert!(index.children_of(1).is_empty());
        assert!(index.names(1), "met waits stay as the parent's before entries");
        index.forget_parent(1);
        assert!(!index.names(1));
        let list = DependList::parse("afterok:12.svr@svr:13.svr@svr,afterany:12.svr@svr,beforeok:9.svr@svr", "")
            .expect("a list");
        assert_eq!(
            waits(&list),
            vec![(12, DependKind::Afterok), (13, DependKind::Afterok), (12, DependKind::Afterany)]
        );
    }
}
