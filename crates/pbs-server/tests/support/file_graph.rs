//! The use graph of a crate's source files, read from the sources as the layer checks
//! read modules: every `crate::a::b`, `super::a` or `self::a` path (grouped imports
//! included), and a child's name in a file whose module has files of its own, is an arrow
//! to the deepest file it reaches. Shared by the server's and the scheduler's tidy tests, which
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

/// The module paths written after a path's prefix (`a::b`, or a group `a::{b, c::d}`).
fn paths_after(rest: &str) -> Vec<Vec<&str>> {
    let end = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | ':' | '{' | '}' | ',' | ' ' | '*')))
        .map_or(rest.len(), |(i, _)| i);
    let path = &rest[..end];
    let (head, group) = match path.split_once('{') {
        Some((head, group)) => (head, group.split('}').next().unwrap_or("")),
        None => (path, ""),
    };
    let head: Vec<&str> = head.split("::").map(str::trim).filter(|s| !s.is_empty()).collect();
    let mut paths = vec![head.clone()];
    for item in group.split(',') {
        let mut full = head.clone();
        full.extend(item.split("::").map(str::trim).filter(|s| !s.is_empty()));
        paths.push(full);
    }
    paths
}

/// Whether `code[at..]` starts a path: no identifier character or `::` right before it.
fn starts_a_path(code: &str, at: usize) -> bool {
    let before = &code[..at];
    !before.ends_with("::") && !before.chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Whether a line only declares or re-exports a module (`mod x;`, `pub use x::Y;`): a
/// folder's `mod.rs` naming its own files that way does not use them, it makes them.
fn declares_or_reexports(line: &str) -> bool {
    let line = line.trim_start();
    let public = ["pub(crate) ", "pub(super) ", "pub "].iter().find_map(|p| line.strip_prefix(p));
    line.starts_with("mod ") || public.is_some_and(|rest| rest.starts_with("mod ") || rest.starts_with("use "))
}

/// The module path of a file under `src`: `a/b.rs` and `a/b/mod.rs` are `a::b`; the
/// crate root is empty.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().to_string()).collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if !matches!(stem, "mod" | "lib" | "main") {
            parts.push(stem.to_string());
        }
    }
    parts
}

/// The modules a file's module has as files of its own (`a/mod.rs` or `a.rs` beside a
/// folder `a/`: the files and folders in `a/`).
fn children_of(src: &Path, module: &[String]) -> Vec<String> {
    let folder = module.iter().fold(src.to_path_buf(), |dir, m| dir.join(m));
    if module.is_empty() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&folder) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().to_string();
            if path.is_dir() {
                path.join("mod.rs").is_file().then_some(name)
            } else {
                name.strip_suffix(".rs").filter(|stem| *stem != "mod").map(str::to_string)
            }
        })
        .collect()
}

/// The files `code` (the code of the file `rel` under `src`) names: through
/// `crate::a::b::...` paths, grouped imports included (`crate::job::{run, faults}`);
/// through `super::` and `self::` paths, read from the file's own module; and, in a file
/// whose module has files of its own, through a child's name (`assigned::amount`), unless
/// the line only declares or re-exports it.
fn file_arrows(src: &Path, rel: &Path, code: &str) -> BTreeSet<PathBuf> {
    let module = module_of(rel);
    let mut out = BTreeSet::new();
    let reach = |base: &[String], rest: &str, out: &mut BTreeSet<PathBuf>| {
        for path in paths_after(rest) {
            let mut full: Vec<&str> = base.iter().map(String::as_str).collect();
            full.extend(path);
            out.extend(file_of(src, &full));
        }
    };
    for (at, _) in code.match_indices("crate::") {
        if starts_a_path(code, at) {
            reach(&[], &code[at + "crate::".len()..], &mut out);
        }
    }
    for (at, _) in code.match_indices("self::") {
        if starts_a_path(code, at) {
            reach(&module, &code[at + "self::".len()..], &mut out);
        }
    }
    for (at, _) in code.match_indices("super::") {
        if !starts_a_path(code, at) {
            continue;
        }
        let mut rest = &code[at + "super::".len()..];
        let mut base = module.clone();
        base.pop();
        while let Some(more) = rest.strip_prefix("super::") {
            base.pop();
            rest = more;
        }
        // From the crate root, only a path into a file of its own is an arrow here (its
        // items are the crate-root test's).
        reach(&base, rest, &mut out);
    }
    let children = children_of(src, &module);
    for line in code.lines().filter(|l| !declares_or_reexports(l)) {
        for child in &children {
            let named = format!("{child}::");
            for (at, _) in line.match_indices(named.as_str()) {
                if starts_a_path(line, at) {
                    reach(&module, &line[at..], &mut out);
                }
            }
        }
    }
    out
}

/// Every use of a file by another that leads back to the first, as `a -> b -> ... -> a`;
/// files named in `skip` (relative to `src`) are left out. A folder's `mod.rs` declaring
/// or re-exporting its files is not a use; calling into them is.
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
        let rel = file.strip_prefix(src).unwrap();
        let deps = file_arrows(src, rel, &code(&std::fs::read_to_string(file).unwrap()));
        let entry = graph.entry(own.clone()).or_default();
        entry.extend(deps.iter().map(|d| name(d)).filter(|d| *d != own));
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
