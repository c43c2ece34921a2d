//! Tidy tests over the whole workspace, read from the sources (no binary needed): the crate
//! graph docs/architecture.md draws is the one the `Cargo.toml`s make, and no file of any
//! crate uses an item defined in its crate's root (a root declares modules, re-exports
//! and, for a program, holds its `main`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The member folders the workspace's `Cargo.toml` lists.
fn members() -> Vec<PathBuf> {
    let text = read(&workspace().join("Cargo.toml"));
    let list = text.split("members = [").nth(1).and_then(|rest| rest.split(']').next()).expect("a members list");
    list.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()).map(|m| workspace().join(m)).collect()
}

/// A member's package name and the names its `[dependencies]` table lists.
fn manifest(member: &Path) -> (String, BTreeSet<String>) {
    let text = read(&member.join("Cargo.toml"));
    let mut section = String::new();
    let mut name = None;
    let mut deps = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let Some(key) = line.split(['=', '.', ' ']).next().filter(|k| !k.is_empty() && !k.starts_with('#')) else {
            continue;
        };
        if section == "[package]" && key == "name" && name.is_none() {
            name = line.split('"').nth(1).map(str::to_string);
        }
        if section == "[dependencies]" {
            deps.insert(key.to_string());
        }
    }
    (name.unwrap_or_else(|| panic!("{}: no package name", member.display())), deps)
}

/// The graph as the `Cargo.toml`s make it: each workspace crate and the workspace crates
/// among its normal dependencies (dev-dependencies are the tests' business).
fn cargo_graph() -> BTreeMap<String, BTreeSet<String>> {
    let manifests: Vec<(String, BTreeSet<String>)> = members().iter().map(|m| manifest(m)).collect();
    let names: BTreeSet<String> = manifests.iter().map(|(n, _)| n.clone()).collect();
    manifests.into_iter().map(|(name, deps)| (name, deps.intersection(&names).cloned().collect())).collect()
}

/// The graph as docs/architecture.md lists it under its "Crates" heading.
fn documented_graph() -> BTreeMap<String, BTreeSet<String>> {
    let text = read(&workspace().join("docs/architecture.md"));
    let section = text.split("\n## Crates").nth(1).expect("a Crates section");
    let section = section.split("\n|").next().unwrap_or(section);
    let mut graph = BTreeMap::new();
    for line in section.lines() {
        let Some(rest) = line.strip_prefix("- `") else { continue };
        let Some((name, deps)) = rest.split_once("`:") else { continue };
        let deps = deps.split(',').map(str::trim).filter(|d| !d.is_empty()).map(str::to_string).collect();
        graph.insert(name.to_string(), deps);
    }
    graph
}

#[test]
fn the_crate_graph_is_the_one_the_docs_draw_and_has_no_circle() {
    let cargo = cargo_graph();
    assert!(cargo.len() >= 15, "every member read: {cargo:?}");
    assert_eq!(documented_graph(), cargo, "docs/architecture.md's crate list against the Cargo.tomls");
    // Depth-first: a crate met again on the path is a circle.
    fn visit<'a>(graph: &'a BTreeMap<String, BTreeSet<String>>, name: &'a str, path: &mut Vec<&'a str>) {
        assert!(!path.contains(&name), "a circle of crates: {path:?} -> {name}");
        path.push(name);
        for dep in graph.get(name).into_iter().flatten() {
            visit(graph, dep, path);
        }
        path.pop();
    }
    for name in cargo.keys() {
        visit(&cargo, name, &mut Vec::new());
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names a root file defines itself (not those it declares as modules or re-exports).
fn defined_in(root: &str) -> BTreeSet<String> {
    const KINDS: [&str; 8] = ["fn ", "const ", "static ", "struct ", "enum ", "type ", "trait ", "macro_rules! "];
    let mut names = BTreeSet::new();
    for line in root.lines() {
        let line = line.trim_start();
        if line.starts_with("//") || line.starts_with("use ") || line.starts_with("pub use ") {
            continue;
        }
        let line = line.strip_prefix("pub(crate) ").or_else(|| line.strip_prefix("pub ")).unwrap_or(line);
        for kind in KINDS {
            if let Some(rest) = line.strip_prefix(kind) {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    names.insert(name);
                }
            }
        }
    }
    names
}

/// Files of `member` that use an item its root defines (`crate::NAME`), as (file, name).
fn root_uses(member: &Path) -> Vec<(String, String)> {
    let src = member.join("src");
    let root = ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).find(|p| p.exists());
    let Some(root) = root else { return Vec::new() };
    let defined = defined_in(&read(&root));
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != root && !f.starts_with(src.join("bin"))) {
        let code = read(file);
        for name in &defined {
            let used = code.match_indices(&format!("crate::{name}")).any(|(at, pattern)| {
                let next = code[at + pattern.len()..].chars().next();
                next.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            });
            if used {
                let shown = file.strip_prefix(workspace()).unwrap_or(file).display().to_string();
                found.push((shown, name.clone()));
            }
        }
    }
    found
}

#[test]
fn no_file_uses_its_crates_root() {
    let found: Vec<(String, String)> = members().iter().flat_map(|m| root_uses(m)).collect();
    assert_eq!(found, Vec::<(String, String)>::new(), "files using an item their crate root defines");
}

#[test]
fn the_checks_see_what_they_claim() {
    let root = "//! x\npub mod a;\npub use a::B;\npub const VERSION: u32 = 1;\nfn helper() {}\n";
    assert_eq!(defined_in(root), ["VERSION", "helper"].into_iter().map(str::to_string).collect());
    let toml = "[package]\nname = \"x\"\n[dependencies]\npbs-core.workspace = true\nserde = { workspace = true }\n[dev-dependencies]\ntempfile.workspace = true\n";
    let dir = std::env::temp_dir().join(format!("tidy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    std::fs::write(dir.join("Cargo.toml"), toml).expect("written");
    let (name, deps) = manifest(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((name.as_str(), deps), ("x", ["pbs-core", "serde"].into_iter().map(str::to_string).collect()));
}
