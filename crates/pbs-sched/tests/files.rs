//! The scheduler's source files do not use each other, even through others: read from
//! the sources, as the server's layer checks are.

#![allow(clippy::unwrap_used)]

#[path = "../../pbs-server/tests/support/file_graph.rs"]
mod file_graph;

#[test]
fn no_two_files_use_each_other() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let cycles = file_graph::cycles(&src, &["lib.rs", "tests.rs"]);
    assert!(cycles.is_empty(), "files use each other:\n{}", cycles.join("\n"));
}

/// A running job's `exec_vnode` is parsed in the mirror alone, once when it arrives or
/// changes (`Mirror::upsert_job`); the cycle reads the kept allocations.
#[test]
fn exec_vnode_is_parsed_in_the_mirror_alone() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name == "mirror.rs" || name.starts_with("tests") || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("ExecVnode") {
            wrong.push(name);
        }
    }
    assert!(wrong.is_empty(), "these files parse exec_vnode text themselves: {wrong:?}");
}
