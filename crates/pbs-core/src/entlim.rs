//! Entity limits: OpenPBS's `[o:PBS_ALL=20],[u:PBS_GENERIC=10],[u:alice=5],[g:staff=2],
//! [p:proj=3]` syntax, read once here for the server's queued-job limits (`max_queued`,
//! `queued_jobs_threshold` and their `_res` forms) and the scheduler's run limits.

use std::collections::HashMap;

/// The name standing for every entity of a kind without a limit of its own.
pub const GENERIC: &str = "PBS_GENERIC";
/// The name of the overall entity.
pub const ALL: &str = "PBS_ALL";

/// The most entries one limit attribute may hold: the value is bounded anyway by the
/// attribute size limit, this keeps a parse's work small whatever the caller.
const MAX_ENTRIES: usize = 4096;

/// Who a limit applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityKind {
    /// `o:PBS_ALL`: everyone together.
    Overall,
    /// `u:`
    User,
    /// `g:`
    Group,
    /// `p:`
    Project,
}

impl EntityKind {
    /// The letter before the colon.
    pub fn letter(self) -> char {
        match self {
            EntityKind::Overall => 'o',
            EntityKind::User => 'u',
            EntityKind::Group => 'g',
            EntityKind::Project => 'p',
        }
    }

    fn from_letter(letter: &str) -> Option<EntityKind> {
        match letter {
            "o" => Some(EntityKind::Overall),
            "u" => Some(EntityKind::User),
            "g" => Some(EntityKind::Group),
            "p" => Some(EntityKind::Project),
            _ => None,
        }
    }
}

/// One `[k:name=value]` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub kind: EntityKind,
    /// The entity's name (`PBS_GENERIC` for the generic limit, `PBS_ALL` for overall).
    pub name: &'a str,
    /// The limit as written (a count, or a resource amount for the `_res` attributes).
    pub value: &'a str,
}

/// A limit text that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntlimError {
    #[error("entity limit syntax error")]
    Syntax,
    #[error("too many entity limit entries")]
    TooMany,
}

/// Splits a limit text into its entries. A bare number is accepted as the overall limit
/// (`max_queued = 500`, as older sites write it).
pub fn parse(text: &str) -> Result<Vec<Entry<'_>>, EntlimError> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(vec![Entry { kind: EntityKind::Overall, name: ALL, value: text }]);
    }
    let mut entries = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if entries.len() >= MAX_ENTRIES {
            return Err(EntlimError::TooMany);
        }
        let inner_start = rest.strip_prefix('[').ok_or(EntlimError::Syntax)?;
        let close = inner_start.find(']').ok_or(EntlimError::Syntax)?;
        let inner = &inner_start[..close];
        rest = inner_start[close + 1..].trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
            if rest.is_empty() {
                return Err(EntlimError::Syntax);
            }
        } else if !rest.is_empty() {
            return Err(EntlimError::Syntax);
        }
        let (entity, value) = inner.split_once('=').ok_or(EntlimError::Syntax)?;
        let (letter, name) = entity.split_once(':').ok_or(EntlimError::Syntax)?;
        let kind = EntityKind::from_letter(letter.trim()).ok_or(EntlimError::Syntax)?;
        let (name, value) = (name.trim(), value.trim());
        let name_ok = match kind {
            EntityKind::Overall => name == ALL,
            _ => !name.is_empty() && name != ALL && !name.contains(|c: char| c.is_whitespace() || "[],=:".contains(c)),
        };
        if !name_ok || value.is_empty() {
            return Err(EntlimError::Syntax);
        }
        entries.push(Entry { kind, name, value });
    }
    if entries.is_empty() {
        return Err(EntlimError::Syntax);
    }
    Ok(entries)
}

/// The attributes whose values are entity limits: qmgr checks their syntax before
/// sending, and lets unquoted spaces into them.
pub const ATTRS: [&str; 8] = [
    "max_run",
    "max_run_res",
    "max_run_soft",
    "max_run_res_soft",
    "max_queued",
    "max_queued_res",
    "queued_jobs_threshold",
    "queued_jobs_threshold_res",
];

/// Where a limit text breaks the syntax qmgr checks before sending (OpenPBS's
/// `entlim_parse` without a callback): the byte offset of the first character in error.
/// Values are not read here; the server refuses one that is not a number or an amount.
pub fn syntax_error_at(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut start = 0;
    while start <= bytes.len() {
        let end = text[start..].find(',').map_or(bytes.len(), |e| start + e);
        if let Err(at) = check_one(bytes, start, end) {
            return Some(at);
        }
        start = end + 1;
    }
    None
}

/// One `[k:name=value]` between `start` and `end` (a comma or the end of the text).
fn check_one(bytes: &[u8], start: usize, end: usize) -> Result<(), usize> {
    let at = |i: usize| if i < end { Some(bytes[i]) } else { None };
    let mut i = start;
    while at(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    if at(i) != Some(b'[') {
        return Err(i);
    }
    i += 1;
    while at(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    if !matches!(at(i), Some(b'u' | b'g' | b'p' | b'o')) {
        return Err(i);
    }
    i += 1;
    if at(i) != Some(b':') {
        return Err(i);
    }
    i += 1;
    match at(i) {
        None => return Err(i),
        Some(b) if b.is_ascii_whitespace() => return Err(i),
        _ => {}
    }
    let mut name_ended = false;
    if let Some(quote @ (b'"' | b'\'')) = at(i) {
        i += 1;
        while at(i).is_some_and(|b| b != quote) {
            i += 1;
        }
        if at(i).is_none() {
            return Err(i);
        }
        name_ended = true;
    }
    i += 1;
    loop {
        match at(i) {
            None => return Err(i),
            Some(b'=' | b']') => break,
            Some(b) if b.is_ascii_whitespace() => name_ended = true,
            Some(_) if name_ended => return Err(i),
            Some(_) => {}
        }
        i += 1;
    }
    if at(i) == Some(b']') {
        // `[u:name]`, no value: what `-=` names.
        return Ok(());
    }
    i += 1;
    while at(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    if matches!(at(i), None | Some(b'-')) {
        return Err(i);
    }
    i += 1;
    while at(i).is_some_and(|b| b != b']' && !b.is_ascii_whitespace()) {
        i += 1;
    }
    while at(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    if at(i) != Some(b']') {
        return Err(i);
    }
    Ok(())
}

/// Writes entries back in the form OpenPBS prints: `[u:PBS_GENERIC=10],[u:alice=5]`.
pub fn format(entries: &[(EntityKind, String, String)]) -> String {
    let mut out = String::new();
    for (kind, name, value) in entries {
        if !out.is_empty() {
            out.push(',');
        }
        out.push('[');
        out.push(kind.letter());
        out.push(':');
        out.push_str(name);
        out.push('=');
        out.push_str(value);
        out.push(']');
    }
    out
}

/// The limits of one attribute, typed: counts (`u64`) or resource amounts.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits<V> {
    /// `o:PBS_ALL`.
    pub overall: Option<V>,
    /// `u:`, `g:` and `p:` limits.
    pub user: Scoped<V>,
    pub group: Scoped<V>,
    pub project: Scoped<V>,
}

impl<V> Default for Limits<V> {
    fn default() -> Self {
        Limits { overall: None, user: Scoped::default(), group: Scoped::default(), project: Scoped::default() }
    }
}

/// The generic and the named limits of one entity kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Scoped<V> {
    pub generic: Option<V>,
    pub named: HashMap<String, V>,
}

impl<V> Default for Scoped<V> {
    fn default() -> Self {
        Scoped { generic: None, named: HashMap::new() }
    }
}

/// Which limit applies to an entity: its own, which is then the only one, or else the
/// generic one (OpenPBS's rule in both the server and the scheduler).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Applies<V> {
    Named(V),
    Generic(V),
}

impl<V: Copy> Scoped<V> {
    /// The limit that applies to `name`, if any.
    pub fn for_name(&self, name: &str) -> Option<Applies<V>> {
        match self.named.get(name) {
            Some(v) => Some(Applies::Named(*v)),
            None => self.generic.map(Applies::Generic),
        }
    }

    /// Whether any limit of this kind is set.
    pub fn is_set(&self) -> bool {
        self.generic.is_some() || !self.named.is_empty()
    }
}

impl<V> Limits<V> {
    /// Reads a limit text, converting each value with `value`; later entries for the same
    /// entity replace earlier ones.
    pub fn parse_with(text: &str, mut value: impl FnMut(&str) -> Option<V>) -> Result<Limits<V>, EntlimError> {
        let mut limits = Limits::default();
        for entry in parse(text)? {
            let v = value(entry.value).ok_or(EntlimError::Syntax)?;
            let scoped = match entry.kind {
                EntityKind::Overall => {
                    limits.overall = Some(v);
                    continue;
                }
                EntityKind::User => &mut limits.user,
                EntityKind::Group => &mut limits.group,
                EntityKind::Project => &mut limits.project,
            };
            if entry.name == GENERIC {
                scoped.generic = Some(v);
            } else {
                scoped.named.insert(entry.name.to_string(), v);
            }
        }
        Ok(limits)
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.overall.is_none()
            && self.user.generic.is_none()
            && self.user.named.is_empty()
            && self.group.generic.is_none()
            && self.group.named.is_empty()
            && self.project.generic.is_none()
            && self.project.named.is_empty()
    }
}

impl Limits<u64> {
    /// Reads a count limit (`max_queued`, `max_run`...).
    pub fn counts(text: &str) -> Result<Limits<u64>, EntlimError> {
        Limits::parse_with(text, |v| v.parse::<u64>().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let l = Limits::counts("[o:PBS_ALL=20], [u:PBS_GENERIC=10],[u:alice=5],[g:staff=2],[p:p1=3]").unwrap();
        assert_eq!(l.overall, Some(20));
        assert_eq!(l.user.for_name("alice"), Some(Applies::Named(5)));
        assert_eq!(l.user.for_name("bob"), Some(Applies::Generic(10)));
        assert_eq!(l.group.for_name("staff"), Some(Applies::Named(2)));
        assert_eq!(l.group.for_name("other"), None);
        assert_eq!(l.project.for_name("p1"), Some(Applies::Named(3)));
        assert_eq!(Limits::counts("500").unwrap().overall, Some(500));
    }

    #[test]
    fn refuses_bad_syntax() {
        for bad in [
            "",
            "[",
            "[u:alice=5",
            "[x:PBS_GENERIC=1]",
            "[u:PBS_GENERIC=abc]",
            "[o:alice=1]",
            "[u:=1]",
            "[u:alice]",
            "[u:alice=1],",
            "[u:alice=1] [u:bob=2]",
            "u:alice=1",
            "[u:PBS_ALL=1]",
        ] {
            assert!(Limits::counts(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn syntax_errors_are_found_where_qmgr_points() {
        assert_eq!(syntax_error_at("[x:PBS_GENERIC=1]"), Some(1));
        assert_eq!(syntax_error_at("[u:PBS_GENERIC=abc]"), None);
        assert_eq!(syntax_error_at("[u:PBS_GENERIC=1], [g:staff=2]"), None);
        assert_eq!(syntax_error_at("[u:alice]"), None);
        assert_eq!(syntax_error_at("u:alice=1"), Some(0));
        assert_eq!(syntax_error_at("[u alice=1]"), Some(2));
        assert_eq!(syntax_error_at("[u:alice=-1]"), Some(9));
        assert_eq!(syntax_error_at("[u:alice=1"), Some(10));
        assert_eq!(syntax_error_at("[u:alice=1],[q:b=2]"), Some(13));
        assert_eq!(syntax_error_at("[u:al ice=1]"), Some(6));
    }

    #[test]
    fn formats_back() {
        let entries =
            vec![(EntityKind::Overall, ALL.to_string(), "2".to_string()), (EntityKind::User, "a".into(), "1".into())];
        assert_eq!(format(&entries), "[o:PBS_ALL=2],[u:a=1]");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in ".{0,200}") {
            let _ = parse(&text);
            let _ = syntax_error_at(&text);
        }

        #[test]
        fn formatted_entries_parse_back(
            entries in proptest::collection::vec(("[ugp]", "[a-z][a-z0-9_]{0,8}", 0u64..100_000), 1..8)
        ) {
            let typed: Vec<(EntityKind, String, String)> = entries
                .iter()
                .map(|(k, n, v)| (EntityKind::from_letter(k).unwrap(), n.clone(), v.to_string()))
                .collect();
            let text = format(&typed);
            let parsed = parse(&text).unwrap();
            proptest::prop_assert_eq!(parsed.len(), typed.len());
            for (p, (k, n, v)) in parsed.iter().zip(&typed) {
                proptest::prop_assert_eq!((p.kind, p.name, p.value), (*k, n.as_str(), v.as_str()));
            }
        }
    }
}
