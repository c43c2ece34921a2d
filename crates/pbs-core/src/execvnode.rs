//! `exec_vnode` and `exec_host`: where a running job's chunks were placed.
//!
//! `exec_vnode` is one parenthesised group per chunk, joined by `+`; a group names one or
//! more vnodes with the resources taken from each: `(n1:ncpus=2:mem=1gb)+(n2:ncpus=1+n3:ncpus=1)`.
//! `exec_host` lists hosts with a cpu index and count: `n1/0*2+n2/0`.
//! `qrun -H` also accepts bare names, `n1+n2`, which take a chunk each.

use std::fmt;

/// One vnode of a chunk with the resources the job takes from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VnodePart {
    /// The vnode name.
    pub vnode: String,
    /// `(resource, value)` taken from it, in the order written.
    pub resources: Vec<(String, String)>,
}

impl VnodePart {
    /// The value of a resource taken from this vnode.
    pub fn get(&self, resource: &str) -> Option<&str> {
        self.resources.iter().find(|(r, _)| r == resource).map(|(_, v)| v.as_str())
    }
}

/// A parsed `exec_vnode`: chunks, each one or more vnode parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecVnode {
    /// Chunks in order; the first vnode of the first chunk is the mother superior's.
    pub chunks: Vec<Vec<VnodePart>>,
}

/// An `exec_vnode` that cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("illegal exec_vnode {0:?}")]
pub struct BadExecVnode(pub String);

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '[' | ']'))
}

fn parse_part(text: &str, whole: &str) -> Result<VnodePart, BadExecVnode> {
    let bad = || BadExecVnode(whole.to_string());
    let mut fields = text.split(':');
    let vnode = fields.next().unwrap_or("").trim();
    if !valid_name(vnode) {
        return Err(bad());
    }
    let mut resources = Vec::new();
    for field in fields {
        let (name, value) = field.split_once('=').ok_or_else(bad)?;
        if name.is_empty() || value.is_empty() {
            return Err(bad());
        }
        resources.push((name.to_string(), value.to_string()));
    }
    Ok(VnodePart { vnode: vnode.to_string(), resources })
}

impl std::str::FromStr for ExecVnode {
    type Err = BadExecVnode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadExecVnode(text.to_string());
        let text_trimmed = text.trim();
        if text_trimmed.is_empty() {
            return Err(bad());
        }
        let mut chunks = Vec::new();
        let mut rest = text_trimmed;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('(') {
                let close = after.find(')').ok_or_else(bad)?;
                let inner = &after[..close];
                let parts = inner.split('+').map(|p| parse_part(p, text)).collect::<Result<Vec<_>, _>>()?;
                chunks.push(parts);
                rest = &after[close + 1..];
            } else {
                let end = rest.find('+').unwrap_or(rest.len());
                chunks.push(vec![parse_part(&rest[..end], text)?]);
                rest = &rest[end..];
            }
            if let Some(after) = rest.strip_prefix('+') {
                if after.is_empty() {
                    return Err(bad());
                }
                rest = after;
            } else if !rest.is_empty() {
                return Err(bad());
            }
        }
        Ok(ExecVnode { chunks })
    }
}

impl fmt::Display for ExecVnode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, chunk) in self.chunks.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str("(")?;
            for (j, part) in chunk.iter().enumerate() {
                if j > 0 {
                    f.write_str("+")?;
                }
                f.write_str(&part.vnode)?;
                for (name, value) in &part.resources {
                    write!(f, ":{name}={value}")?;
                }
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl ExecVnode {
    /// What a suspension gives back when only the resources `kept` names are released
    /// (`restrict_res_to_release_on_suspend`), as OpenPBS writes a job's
    /// `resources_released`: each vnode part its own chunk with just those resources, and
    /// `ncpus=0` where it has none, so that the chunk still names its vnode.
    pub fn restricted(&self, kept: impl Fn(&str) -> bool) -> ExecVnode {
        let chunks = self
            .parts()
            .map(|part| {
                let mut resources: Vec<(String, String)> =
                    part.resources.iter().filter(|(name, _)| kept(name)).cloned().collect();
                if resources.is_empty() {
                    resources.push(("ncpus".into(), "0".into()));
                }
                vec![VnodePart { vnode: part.vnode.clone(), resources }]
            })
            .collect();
        ExecVnode { chunks }
    }

    /// Every vnode part, chunk after chunk.
    pub fn parts(&self) -> impl Iterator<Item = &VnodePart> {
        self.chunks.iter().flatten()
    }

    /// The distinct vnodes in first-use order; the first is the mother superior's.
    pub fn vnodes(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for part in self.parts() {
            if !seen.contains(&part.vnode.as_str()) {
                seen.push(&part.vnode);
            }
        }
        seen
    }

    /// `exec_host` as OpenPBS writes it: per vnode in first-use order, `name/N` where N
    /// counts the job's earlier chunks on that vnode, with `*ncpus` when ncpus is not 1.
    pub fn exec_host(&self) -> String {
        let mut used: Vec<(&str, u32)> = Vec::new();
        let mut out = Vec::new();
        for part in self.parts() {
            let ncpus: u32 = part.get("ncpus").and_then(|v| v.parse().ok()).unwrap_or(0);
            let index = match used.iter_mut().find(|(n, _)| *n == part.vnode) {
                Some((_, count)) => {
                    *count += 1;
                    *count - 1
                }
                None => {
                    used.push((&part.vnode, 1));
                    0
                }
            };
            if ncpus > 1 {
                out.push(format!("{}/{index}*{ncpus}", part.vnode));
            } else {
                out.push(format!("{}/{index}", part.vnode));
            }
        }
        out.join("+")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restricted_splits_parts_and_keeps_named_resources() {
        let exec: ExecVnode = "(n1:ncpus=4:mem=524288kb)+(n2:ncpus=1:mem=1kb+n3:mem=2kb)".parse().unwrap();
        assert_eq!(exec.restricted(|r| r == "ncpus").to_string(), "(n1:ncpus=4)+(n2:ncpus=1)+(n3:ncpus=0)");
        assert_eq!(exec.restricted(|r| r == "mem").to_string(), "(n1:mem=524288kb)+(n2:mem=1kb)+(n3:mem=2kb)");
    }

    #[test]
    fn parses_and_prints_openpbs_forms() {
        let text = "(n1:ncpus=2:mem=1gb)+(n2:ncpus=1+n3:ncpus=1)";
        let ev: ExecVnode = text.parse().unwrap();
        assert_eq!(ev.chunks.len(), 2);
        assert_eq!(ev.chunks[1][1].vnode, "n3");
        assert_eq!(ev.chunks[0][0].get("mem"), Some("1gb"));
        assert_eq!(ev.to_string(), text);
        assert_eq!(ev.vnodes(), vec!["n1", "n2", "n3"]);
        assert_eq!(ev.exec_host(), "n1/0*2+n2/0+n3/0");
    }

    #[test]
    fn bare_names_from_qrun_h() {
        let ev: ExecVnode = "n1+n2".parse().unwrap();
        assert_eq!(ev.chunks.len(), 2);
        assert!(ev.chunks[0][0].resources.is_empty());
        let single: ExecVnode = "(vm:ncpus=1)".parse().unwrap();
        assert_eq!(single.exec_host(), "vm/0");
    }

    #[test]
    fn repeated_vnode_counts_up() {
        let ev: ExecVnode = "(n1:ncpus=1)+(n1:ncpus=1)".parse().unwrap();
        assert_eq!(ev.exec_host(), "n1/0+n1/1");
        assert_eq!(ev.vnodes(), vec!["n1"]);
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in ["", "(", "(n1", "(n1:ncpus)", "n1+", "(n1)x", "(:ncpus=1)", "(n 1)", "+n1"] {
            assert!(bad.parse::<ExecVnode>().is_err(), "{bad:?}");
        }
    }
}
