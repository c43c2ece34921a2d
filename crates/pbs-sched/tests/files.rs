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
