//! A job's `depend` list, parsed once: `type:id[:id...][,type:id...]`, as OpenPBS's
//! `parse_depend_list` reads it. qsub and qalter complete the ids with their server
//! before sending; the server parses what any client sends with the same rule, and refuses
//! what qsub refuses.

use std::fmt;

use crate::jobid::{ArrayPart, JobId};

/// Why a dependency list is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DependError {
    /// Bad syntax.
    #[error("illegal dependency list")]
    Syntax,
    /// A dependency on a subjob or a range of subjobs (OpenPBS prints a line about it).
    #[error("a dependency may not name a subjob or a range of subjobs")]
    Subjob,
    /// More than [`MAX_TARGETS`] distinct targets, or an `on` count above it.
    #[error("a dependency list may name at most 4096 jobs")]
    TooMany,
}

/// The most distinct targets one list may name (and the most jobs an `on:N` may await):
/// what one request may name (`pbs_proto::MAX_REQUEST_IDS`), so a list's work and the
/// text kept of it are bounded by what it means, not by how often it repeats an id.
pub const MAX_TARGETS: usize = 4096;

/// The dependency types OpenPBS knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DependKind {
    On,
    Synccount,
    After,
    Afterok,
    Afternotok,
    Afterany,
    Before,
    Beforeok,
    Beforenotok,
    Beforeany,
    Syncwith,
    Runone,
}

impl DependKind {
    /// Every kind, in OpenPBS's order.
    pub const ALL: [DependKind; 12] = [
        DependKind::On,
        DependKind::Synccount,
        DependKind::After,
        DependKind::Afterok,
        DependKind::Afternotok,
        DependKind::Afterany,
        DependKind::Before,
        DependKind::Beforeok,
        DependKind::Beforenotok,
        DependKind::Beforeany,
        DependKind::Syncwith,
        DependKind::Runone,
    ];

    /// The word that names it in a list.
    pub fn name(self) -> &'static str {
        match self {
            DependKind::On => "on",
            DependKind::Synccount => "synccount",
            DependKind::After => "after",
            DependKind::Afterok => "afterok",
            DependKind::Afternotok => "afternotok",
            DependKind::Afterany => "afterany",
            DependKind::Before => "before",
            DependKind::Beforeok => "beforeok",
            DependKind::Beforenotok => "beforenotok",
            DependKind::Beforeany => "beforeany",
            DependKind::Syncwith => "syncwith",
            DependKind::Runone => "runone",
        }
    }

    /// The kind a word names (case matters, as in OpenPBS).
    pub fn from_name(word: &str) -> Option<DependKind> {
        DependKind::ALL.into_iter().find(|k| k.name() == word)
    }

    /// Whether it takes a count (`on:2`, `synccount:3`) rather than job ids.
    pub fn takes_count(self) -> bool {
        matches!(self, DependKind::On | DependKind::Synccount)
    }
}

/// One item of a list: a kind and what it names (a count, or job ids with their server,
/// each optionally followed by `@server`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The kind.
    pub kind: DependKind,
    /// Its arguments, as they will be written back.
    pub targets: Vec<String>,
}

/// A parsed `depend` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependList(pub Vec<Dependency>);

impl DependList {
    /// Parses `list`, completing each job id without a server with `server`
    /// (`afterok:12` -> `afterok:12.server`).
    ///
    /// A target named again under the same kind (in any item, with or without its
    /// `@server`) is kept once, at its first place; an item left with none goes. More than
    /// [`MAX_TARGETS`] distinct targets is [`DependError::TooMany`].
    pub fn parse(list: &str, server: &str) -> Result<DependList, DependError> {
        if list.is_empty() || list.trim_end().ends_with(',') {
            return Err(DependError::Syntax);
        }
        let mut seen: std::collections::HashSet<(DependKind, String)> = std::collections::HashSet::new();
        let mut items = Vec::new();
        for item in list.split(',') {
            let mut dependency = parse_item(item.trim(), server)?;
            if dependency.kind.takes_count() {
                let too_many =
                    dependency.targets.iter().any(|n| n.parse::<u64>().is_ok_and(|n| n > MAX_TARGETS as u64));
                if too_many {
                    return Err(DependError::TooMany);
                }
                // As OpenPBS's server keeps one count per kind, a count named again
                // replaces the earlier one in its place.
                let kind = dependency.kind;
                if let Some(earlier) = items.iter_mut().find(|d: &&mut Dependency| d.kind == kind) {
                    earlier.targets = dependency.targets;
                    continue;
                }
            } else {
                let kind = dependency.kind;
                dependency.targets.retain(|t| seen.insert((kind, t.split('@').next().unwrap_or(t).to_string())));
                if seen.len() > MAX_TARGETS {
                    return Err(DependError::TooMany);
                }
            }
            if !dependency.targets.is_empty() {
                items.push(dependency);
            }
        }
        Ok(DependList(items))
    }
}

impl fmt::Display for DependList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, dependency) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(dependency.kind.name())?;
            for target in &dependency.targets {
                write!(f, ":{target}")?;
            }
        }
        Ok(())
    }
}

/// A list with its ids completed with `server`: what qsub and qalter send and the server
/// keeps.
pub fn expand(list: &str, server: &str) -> Result<String, DependError> {
    DependList::parse(list, server).map(|l| l.to_string())
}

fn parse_item(item: &str, server: &str) -> Result<Dependency, DependError> {
    // Colons escaped with a backslash belong to the token.
    let mut tokens: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut prev = '\0';
    for ch in item.chars() {
        if ch == ':' && prev != '\\' {
            tokens.push(std::mem::take(&mut current));
        } else {
            current.push(ch);
        }
        prev = ch;
    }
    tokens.push(current);
    if tokens.len() < 2 || tokens.iter().any(String::is_empty) {
        return Err(DependError::Syntax);
    }
    let kind = DependKind::from_name(&tokens[0]).ok_or(DependError::Syntax)?;
    let mut targets = Vec::with_capacity(tokens.len() - 1);
    for token in tokens.into_iter().skip(1) {
        if kind.takes_count() {
            // A count is one word: `on:2:3` is no count.
            if !targets.is_empty() {
                return Err(DependError::Syntax);
            }
            targets.push(token);
            continue;
        }
        let (id, at) = match token.split_once('@') {
            Some((id, at)) => (id, Some(at)),
            None => (token.as_str(), None),
        };
        let parsed: JobId = id.parse().map_err(|_| DependError::Syntax)?;
        if matches!(parsed.array(), ArrayPart::Index(_) | ArrayPart::Range(_)) {
            return Err(DependError::Subjob);
        }
        let mut full = parsed.with_server(at.unwrap_or(server)).to_string();
        if let Some(at) = at {
            full.push('@');
            full.push_str(at);
        }
        targets.push(full);
    }
    Ok(Dependency { kind, targets })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_completed_and_bad_ones_refused() {
        assert_eq!(expand("afterok:12", "srv").as_deref(), Ok("afterok:12.srv"));
        assert_eq!(expand("afterok:12:13.o,before:4", "srv").as_deref(), Ok("afterok:12.srv:13.o,before:4.srv"));
        assert_eq!(expand("afterany:12[]", "srv").as_deref(), Ok("afterany:12[].srv"));
        assert_eq!(expand("on:2", "srv").as_deref(), Ok("on:2"));
        assert_eq!(expand("on:2,afterok:12,on:3", "srv").as_deref(), Ok("on:3,afterok:12.srv"));
        assert_eq!(expand("on:2:3", "srv"), Err(DependError::Syntax));
        assert_eq!(expand("afterany:7@other", "srv").as_deref(), Ok("afterany:7.other@other"));
        assert_eq!(expand("afterok:12[1]", "srv"), Err(DependError::Subjob));
        assert_eq!(expand("afterok:12[1-3]", "srv"), Err(DependError::Subjob));
        for bad in ["", "afterok", "afterok:", "nope:1", "afterok:1,", "afterok::1", "afterok:abc", "no such thing"] {
            assert_eq!(expand(bad, "srv"), Err(DependError::Syntax), "{bad}");
        }
        let list = DependList::parse("afterok:1:2,beforeany:3", "s").expect("parses");
        assert_eq!(list.0[0].kind, DependKind::Afterok);
        assert_eq!(list.0[0].targets, ["1.s", "2.s"]);
        assert_eq!(list.0[1].kind, DependKind::Beforeany);
        // A completed list reads back unchanged.
        assert_eq!(expand(&list.to_string(), "other").as_deref(), Ok("afterok:1.s:2.s,beforeany:3.s"));
    }

    #[test]
    fn a_list_is_bounded_by_the_jobs_it_names_not_by_its_repeats() {
        // One id a million times is one target.
        let repeated = format!("afterok{}", ":12".repeat(100_000));
        assert_eq!(expand(&repeated, "srv").as_deref(), Ok("afterok:12.srv"));
        assert_eq!(
            expand("afterok:1:1.srv@srv,afterok:1,afterany:1", "srv").as_deref(),
            Ok("afterok:1.srv,afterany:1.srv")
        );
        let most: String = (1..=MAX_TARGETS).map(|i| format!(":{i}")).collect();
        assert!(expand(&format!("afterok{most}"), "srv").is_ok());
        assert_eq!(expand(&format!("afterok{most}:99999"), "srv"), Err(DependError::TooMany));
        assert_eq!(expand(&format!("afterok{most},afterany:99999"), "srv"), Err(DependError::TooMany));
        assert_eq!(expand("on:4097", "srv"), Err(DependError::TooMany));
        assert!(expand("on:4096", "srv").is_ok());
    }
}
