//! Embeds every file of `python/` (the runner and the `pbs` package) in the crate, so the
//! daemons install the module that matches their own protocol.

use std::path::{Path, PathBuf};

fn collect(dir: &Path, root: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if path.is_dir() {
            if name != "__pycache__" && name != "tests" {
                collect(&path, root, out);
            }
        } else if name.ends_with(".py") {
            let relative = path.strip_prefix(root).map(|p| p.display().to_string()).unwrap_or(name);
            out.push((relative, path));
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    let mut code = String::from("/// The shipped Python files: path under the install directory, text.\n");
    code.push_str("const FILES: &[(&str, &str)] = &[\n");
    for (relative, path) in &files {
        code.push_str(&format!("    ({relative:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("python_files.rs");
    if let Err(e) = std::fs::write(&out, code) {
        panic!("writing {}: {e}", out.display());
    }
}
