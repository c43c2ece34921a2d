//! The use graph of a crate's source files, read from the sources as the layer checks
//! read modules: every `crate::a::b` path (grouped imports included) is an arrow to the
//! deepest file it reaches. Shared by the server's and the scheduler's tidy tests, which
//! include this file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The source files under `dir`, recursively.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Code without its test module and comments.
pub(crate) fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The file a path of modules (`job`, `run`) reaches: the deepest `a/b.rs` or
/// `a/b/mod.rs` under `src`.
fn file_of(src: &Path, segments: &[&str]) -> Option<PathBuf> {
    let mut dir = src.to_path_buf();
    let mut found = None;
    for segment in segments {
        let file = dir.join(format!("{segment}.rs"));
        let folder = dir.join(segment);
        if file.is_file() {
            found = Some(file);
            if !folder.is_dir() {
                break;
            }
        } else if folder.join("mod.rs").is_file() {
            found = Some(folder.join("mod.rs"));
        } else {
            break;
        }
        dir = folder;
    }
    found
}

/// The files `code` names through `crate::a::b::...` paths, grouped imports included
/// (`crate::job::{run, faults}`).
fn file_arrows(src: &Path, code: &str) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '{' | '}' | ',' | ' '))
            .collect();
        let (head, group) = match path.split_once('{') {
            Some((head, group)) => (head, group.split('}').next().unwrap_or("")),
            None => (path.as_str(), ""),
        };
        let head: Vec<&str> = head.split("::").map(str::trim).filter(|s| !s.is_empty()).collect();
        let mut paths = vec![head.clone()];
        for item in group.split(',') {
            let mut full = head.clone();
            full.extend(item.split("::").map(str::trim).filter(|s| !s.is_empty()));
            paths.push(full);
        }
        out.extend(paths.iter().filter_map(|p| file_of(src, p)));
    }
    out
}

/// Every use of a file by another that leads back to the first, as `a -> b -> ... -> a`;
/// files named in `skip` (relative to `src`) are left out. A folder's `mod.rs` declaring
/// its files is not a use.
pub(crate) fn cycles(src: &Path, skip: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let name = |path: &Path| path.strip_prefix(src).unwrap().to_string_lossy().to_string();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let own = name(file);
        if skip.contains(&own.as_str()) {
            continue;
        }
        let deps = file_arrows(src, &code(&std::fs::read_to_string(file).unwrap()));
        let folder = own.strip_suffix("mod.rs");
        let entry = graph.entry(own.clone()).or_default();
        entry.extend(deps.iter().map(|d| name(d)).filter(|d| *d != own && folder.is_none_or(|f| !d.starts_with(f))));
    }
    let mut cycles = Vec::new();
    for (a, deps) in &graph {
        for b in deps {
            let mut seen = BTreeSet::new();
            let mut stack = vec![b.clone()];
            while let Some(next) = stack.pop() {
                if next == *a {
                    cycles.push(format!("{a} -> {b} -> ... -> {a}"));
                    break;
                }
                if seen.insert(next.clone()) {
                    stack.extend(graph.get(&next).into_iter().flatten().cloned());
                }
            }
        }
    }
    cycles
}
