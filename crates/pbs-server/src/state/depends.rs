//! Which jobs wait on which: the index of dependencies the server acts on where a job
//! starts or ends (`job::depend`), so a parent's end looks up its children instead of
//! walking every job. Rebuilt from the children's `depend` lists when the state is read.

use std::collections::BTreeMap;

use pbs_core::depend::DependKind;

/// Parent sequence number to its waiting children: (child sequence number, kind).
#[derive(Debug, Default)]
pub struct Dependents {
    by_parent: BTreeMap<u64, Vec<(u64, DependKind)>>,
}

impl Dependents {
    /// `child` waits on `parent` for `kind` (once per pair and kind).
    pub fn add(&mut self, parent: u64, child: u64, kind: DependKind) {
        let children = self.by_parent.entry(parent).or_default();
        if !children.contains(&(child, kind)) {
            children.push((child, kind));
        }
    }

    /// Takes the children waiting on `parent` for one of `kinds`, leaving the others.
    pub fn take(&mut self, parent: u64, kinds: &[DependKind]) -> Vec<(u64, DependKind)> {
        let Some(children) = self.by_parent.get_mut(&parent) else { return Vec::new() };
        let (taken, kept): (Vec<_>, Vec<_>) = children.drain(..).partition(|(_, kind)| kinds.contains(kind));
        if kept.is_empty() {
            self.by_parent.remove(&parent);
        } else {
            self.by_parent.insert(parent, kept);
        }
        taken
    }

    /// `child` no longer waits on `parent` for `kind`.
    pub fn remove(&mut self, parent: u64, child: u64, kind: DependKind) {
        if let Some(children) = self.by_parent.get_mut(&parent) {
            children.retain(|entry| *entry != (child, kind));
            if children.is_empty() {
                self.by_parent.remove(&parent);
            }
        }
    }

    /// Forgets `child` wherever it waits (it was deleted or its list replaced).
    pub fn forget_child(&mut self, child: u64, parents: &[u64]) {
        for parent in parents {
            if let Some(children) = self.by_parent.get_mut(parent) {
                children.retain(|(c, _)| *c != child);
                if children.is_empty() {
                    self.by_parent.remove(parent);
                }
            }
        }
    }

    /// The children waiting on `parent`.
    pub fn children_of(&self, parent: u64) -> &[(u64, DependKind)] {
        self.by_parent.get(&parent).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// The kinds a child waits on its parent with: the `after` family, acted on where the
/// parent starts or ends.
pub const WAITING_KINDS: [DependKind; 4] =
    [DependKind::After, DependKind::Afterok, DependKind::Afternotok, DependKind::Afterany];

/// What a `depend` list (as the server keeps it) waits on: (parent sequence number,
/// kind) for each `after`-family target.
pub fn waits(list: &str) -> Vec<(u64, DependKind)> {
    let Ok(parsed) = pbs_core::depend::DependList::parse(list, "") else { return Vec::new() };
    let mut out = Vec::new();
    for dependency in parsed.0.iter().filter(|d| WAITING_KINDS.contains(&d.kind)) {
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
    fn children_are_taken_by_kind_and_forgotten() {
        let mut index = Dependents::default();
        index.add(1, 2, DependKind::Afterok);
        index.add(1, 2, DependKind::Afterok);
        index.add(1, 3, DependKind::After);
        index.add(4, 3, DependKind::Afterany);
        assert_eq!(index.take(1, &[DependKind::After]), vec![(3, DependKind::After)]);
        assert_eq!(index.children_of(1), &[(2, DependKind::Afterok)]);
        index.forget_child(3, &[4]);
        assert!(index.children_of(4).is_empty());
        assert_eq!(index.take(1, &[DependKind::Afterok, DependKind::Afterany]), vec![(2, DependKind::Afterok)]);
        assert!(index.children_of(1).is_empty());
        assert_eq!(
            waits("afterok:12.svr@svr:13.svr@svr,afterany:12.svr@svr,beforeok:9.svr@svr"),
            vec![(12, DependKind::Afterok), (13, DependKind::Afterok), (12, DependKind::Afterany)]
        );
    }
}
