//! `AttrList`: the compact attribute storage of every server object, kept in the report order
//! of the object's attribute table so status replies are a single walk.

use std::sync::Arc;

use pbs_core::attr::ObjectKind;
use pbs_proto::Attr;

/// One stored attribute: index into the object's table, resource name for resource-list
/// attributes (interned, see [`Interner`]), canonical value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAttr {
    /// Index into `ObjectKind::attributes()`.
    pub def: u8,
    /// Resource name for `Resource_List`-style attributes.
    pub resource: Option<Arc<str>>,
    /// The value in canonical text.
    pub value: Box<str>,
}

/// The attributes of one object, sorted by (definition index, resource name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttrList {
    attrs: Vec<StoredAttr>,
}

/// Resolves a full dotted name (`Resource_List.ncpus`) against a table.
pub fn resolve(kind: ObjectKind, full_name: &str) -> Option<(u8, Option<&str>)> {
    let (base, resource) = pbs_core::attr::split_name(full_name);
    let (index, _) = kind.find(base)?;
    u8::try_from(index).ok().map(|i| (i, resource))
}

impl AttrList {
    /// An empty list.
    pub fn new() -> AttrList {
        AttrList::default()
    }

    fn position(&self, def: u8, resource: Option<&str>) -> Result<usize, usize> {
        self.attrs.binary_search_by(|a| (a.def, a.resource.as_deref()).cmp(&(def, resource)))
    }

    /// The value of an attribute.
    pub fn get(&self, def: u8, resource: Option<&str>) -> Option<&str> {
        self.position(def, resource).ok().map(|i| &*self.attrs[i].value)
    }

    /// The value of an attribute by (base) name; resources by `name` and `resource`.
    pub fn get_named(&self, kind: ObjectKind, name: &str, resource: Option<&str>) -> Option<&str> {
        let (index, _) = kind.find(name)?;
        self.get(u8::try_from(index).ok()?, resource)
    }

    /// Sets an attribute, keeping the order.
    pub fn set(&mut self, def: u8, resource: Option<Arc<str>>, value: impl Into<Box<str>>) {
        let value = value.into();
        match self.position(def, resource.as_deref()) {
            Ok(i) => self.attrs[i].value = value,
            Err(i) => self.attrs.insert(i, StoredAttr { def, resource, value }),
        }
    }

    /// Removes an attribute; returns whether it was set.
    pub fn unset(&mut self, def: u8, resource: Option<&str>) -> bool {
        match self.position(def, resource) {
            Ok(i) => {
                self.attrs.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Removes an attribute with all its resources.
    pub fn unset_all(&mut self, def: u8) -> bool {
        let before = self.attrs.len();
        self.attrs.retain(|a| a.def != def);
        before != self.attrs.len()
    }

    /// All (resource, value) pairs of a resource-list attribute.
    pub fn resources(&self, def: u8) -> impl Iterator<Item = (&str, &str)> {
        self.attrs.iter().filter(move |a| a.def == def).filter_map(|a| a.resource.as_deref().map(|r| (r, &*a.value)))
    }

    /// Every stored attribute in order.
    pub fn iter(&self) -> impl Iterator<Item = &StoredAttr> {
        self.attrs.iter()
    }

    /// Number of stored attributes.
    pub fn len(&self) -> usize {
        self.attrs.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.attrs.is_empty()
    }

    /// The full dotted name of a stored attribute.
    pub fn full_name(kind: ObjectKind, attr: &StoredAttr) -> String {
        let base = kind.attributes().get(attr.def as usize).map(|d| d.name).unwrap_or("?");
        match &attr.resource {
            Some(resource) => format!("{base}.{resource}"),
            None => base.to_string(),
        }
    }

    /// The list as wire attributes.
    pub fn to_wire(&self, kind: ObjectKind) -> Vec<Attr> {
        self.attrs.iter().map(|a| Attr(AttrList::full_name(kind, a), a.value.to_string())).collect()
    }

    /// Rebuilds a list from stored `(full name, value)` pairs; unknown names are skipped (a
    /// newer version's attribute read by an older server) and reported to the caller.
    pub fn from_pairs(
        kind: ObjectKind,
        pairs: &[(String, String)],
        interner: &mut Interner,
    ) -> (AttrList, Vec<String>) {
        let mut list = AttrList::new();
        let mut unknown = Vec::new();
        for (name, value) in pairs {
            match resolve(kind, name) {
                Some((def, resource)) => list.set(def, resource.map(|r| interner.intern(r)), value.as_str()),
                None => unknown.push(name.clone()),
            }
        }
        (list, unknown)
    }

    /// The list for storage: serializes as a sequence of `(full name, value)` pairs, which
    /// [`AttrList::from_pairs`] reads back. Nothing is copied: every job submission writes
    /// its record, and building the pairs first was half of that cost.
    pub fn as_pairs(&self, kind: ObjectKind) -> StoredPairs<'_> {
        StoredPairs { kind, list: self }
    }
}

/// An [`AttrList`] serialized as a sequence of `[full name, value]` pairs.
pub struct StoredPairs<'a> {
    kind: ObjectKind,
    list: &'a AttrList,
}

impl serde::Serialize for StoredPairs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeTuple};
        struct Pair<'a>(&'static str, Option<&'a str>, &'a str);
        impl serde::Serialize for Pair<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut pair = serializer.serialize_tuple(2)?;
                match self.1 {
                    None => pair.serialize_element(self.0)?,
                    // Joined in a buffer: serializing through `Display` costs several times more.
                    Some(resource) => pair.serialize_element(&[self.0, resource].join("."))?,
                }
                pair.serialize_element(self.2)?;
                pair.end()
            }
        }
        let table = self.kind.attributes();
        let mut seq = serializer.serialize_seq(Some(self.list.attrs.len()))?;
        for attr in &self.list.attrs {
            let base = table.get(attr.def as usize).map(|d| d.name).unwrap_or("?");
            seq.serialize_element(&Pair(base, attr.resource.as_deref(), &attr.value))?;
        }
        seq.end()
    }
}

/// Shares one allocation per resource name across all jobs (100,000 jobs each holding
/// `ncpus` would otherwise hold 100,000 copies).
#[derive(Debug, Default)]
pub struct Interner {
    // foldhash with a per-process seed: hashing is on every submission's path.
    names: foldhash::HashSet<Arc<str>>,
}

impl Interner {
    /// The shared copy of `name`.
    pub fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(existing) = self.names.get(name) {
            return existing.clone();
        }
        let shared: Arc<str> = Arc::from(name);
        self.names.insert(shared.clone());
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_table_order_and_resources_sorted() {
        let mut interner = Interner::default();
        let mut list = AttrList::new();
        let (rl, _) = resolve(ObjectKind::Job, "Resource_List").unwrap();
        let (name, _) = resolve(ObjectKind::Job, "Job_Name").unwrap();
        list.set(rl, Some(interner.intern("walltime")), "01:00:00");
        list.set(rl, Some(interner.intern("ncpus")), "1");
        list.set(name, None, "x");
        let wire = list.to_wire(ObjectKind::Job);
        let names: Vec<&str> = wire.iter().map(|a| a.name()).collect();
        assert_eq!(names, ["Job_Name", "Resource_List.ncpus", "Resource_List.walltime"]);
        assert_eq!(list.get(rl, Some("ncpus")), Some("1"));
        assert!(list.unset(rl, Some("ncpus")));
        assert!(!list.unset(rl, Some("ncpus")));
        assert!(list.unset_all(rl));
        assert_eq!(list.len(), 1);
    }

    #[test]
    fn pairs_round_trip_and_unknown_names_are_reported() {
        let mut interner = Interner::default();
        let pairs = vec![
            ("Job_Name".to_string(), "a".to_string()),
            ("Resource_List.mem".to_string(), "1gb".to_string()),
            ("nosuch".to_string(), "1".to_string()),
        ];
        let (list, unknown) = AttrList::from_pairs(ObjectKind::Job, &pairs, &mut interner);
        assert_eq!(unknown, ["nosuch"]);
        let stored = serde_json::to_string(&list.as_pairs(ObjectKind::Job)).unwrap();
        assert_eq!(stored, r#"[["Job_Name","a"],["Resource_List.mem","1gb"]]"#);
        let read_back: Vec<(String, String)> = serde_json::from_str(&stored).unwrap();
        assert_eq!(read_back, pairs[..2].to_vec());
    }
}
