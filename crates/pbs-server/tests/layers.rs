//! The server's modules are layered, and imports point down only: a module may use its own
//! layer and those below, and no two modules use each other, even through others.
//!
//! Read from the sources, as rust-analyzer's tidy tests do: every `crate::<module>` a
//! module's code names (in `use` lines and in paths alike) is an arrow. Test modules are
//! left out, since tests may reach anything. A new module must be given a layer here.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "support/file_graph.rs"]
mod file_graph;

use file_graph::{code, rust_files};

/// The layers, lowest first. Add a new module to the layer it belongs to; moving one up
/// to make this test pass is a design decision, to be explained in its commit.
const LAYERS: &[(&str, &[&str])] = &[
    // Plain data, the store and the mailer: nothing here knows of requests.
    ("foundation", &["error", "attrlist", "identity", "store", "acctlog", "mailer", "jobkey", "effects"]),
    ("state", &["state"]),
    // What every handler shares: who asks, what an id names, value and permission rules.
    ("request", &["request", "acl", "privilege", "holds", "size_limits", "criteria", "launch_owner"]),
    // What requests and events do, as changes to the state that return effects.
    (
        "domain",
        &[
            "accounting",
            "entity_limits",
            "node",
            "job",
            "objects",
            "sched_view",
            "mom_report",
            "due",
            "hooks",
            "shutdown",
        ],
    ),
    // Carrying out effects.
    ("server", &["server"]),
    // Every client request, through one match.
    ("dispatch", &["dispatch", "hookwait", "preemptwait"]),
    // Sockets, links and timers: they move bytes and own no rules.
    ("transport", &["net", "remote", "momlink", "schedlink", "admission", "run", "cluster_key"]),
];

/// Crate-root names that are not modules of this crate.
const NOT_MODULES: &[&str] = &["logging"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level module a file belongs to (`job/run.rs` is `job`'s).
fn module_of(path: &Path) -> String {
    let relative = path.strip_prefix(src()).unwrap();
    let first = relative.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

/// The modules `code` names through `crate::<name>`.
fn arrows(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let module = module_of(&file);
        // The crate root declares modules; handler tests are a test module of their own.
        if module == "lib" || module == "handler_tests" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let deps = arrows(&code(&text));
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(deps.into_iter().filter(|d| *d != module && !NOT_MODULES.contains(&d.as_str())));
    }
    graph
}

fn layer_of(module: &str) -> Option<(usize, &'static str)> {
    LAYERS.iter().enumerate().find(|(_, (_, modules))| modules.contains(&module)).map(|(i, (name, _))| (i, *name))
}

#[test]
fn every_module_has_a_layer_and_imports_point_down() {
    let graph = graph();
    let mut wrong = Vec::new();
    for (module, deps) in &graph {
        let Some((own, own_name)) = layer_of(module) else {
            wrong.push(format!("`{module}` has no layer: add it to LAYERS"));
            continue;
        };
        for dep in deps {
            match layer_of(dep) {
                None if !graph.contains_key(dep) => wrong.push(format!("`{module}` names `crate::{dep}`, no module")),
                None => {}
                Some((theirs, their_name)) if theirs > own => {
                    wrong.push(format!("`{module}` ({own_name}) uses `{dep}` ({their_name}), a layer above it"))
                }
                Some(_) => {}
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

#[test]
fn no_two_modules_use_each_other() {
    let graph = graph();
    // Depth-first search for a cycle, reporting its path.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for dep in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(dep, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Some(cycle) = visit(module, &graph, &mut Vec::new(), &mut done) {
            panic!("modules use each other: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn no_two_files_use_each_other() {
    let cycles = file_graph::cycles(&src(), &["lib.rs", "handler_tests.rs"]);
    assert!(cycles.is_empty(), "files use each other:\n{}", cycles.join("\n"));
}

#[test]
fn the_crate_root_only_declares_modules() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let code = code(&lib);
    // The one macro every module shares is the exception.
    let bodies = code.matches("fn ").count() + code.matches("struct ").count() + code.matches("impl ").count();
    assert_eq!(bodies, 0, "lib.rs holds code; it belongs in a module");
}

/// Where each way out of the core may be taken. Handlers return effects; only `server.rs`
/// commits them, tells the scheduler and hands frames to the moms' links, so nothing
/// reaches the disk, the scheduler or a mom in another order than `apply_effects`'.
const WAYS_OUT: &[(&str, &[&str])] = &[
    ("store.commit(", &["server.rs"]),
    ("send_frames(", &["server.rs", "state/links.rs"]),
    ("sched_view::flush(", &["server.rs"]),
];

/// Facts kept twice, as attribute text and parsed: only their one setter writes them, so
/// the two never disagree. A run's placement (`exec_vnode`, `exec_host`) is written by
/// `Job::set_placement` alone, an array's queued indices (`array_indices_remaining`) by
/// `Job::set_remaining` alone, a job's `depend` list by `Job::set_depend` alone. A job's
/// request (`select`, `place`) is kept parsed in a
/// field only `Job::new` and `Job::set_attrs` write (the compiler sees to that: it is
/// private to `state`); a job's attributes are replaced through `Job::set_attrs` alone
/// (`objects.rs` replaces a queue's or a node's), and the texts are parsed only where they
/// are read for the kept form (`state/request.rs`), checked as a client sends them
/// (`request/attrs.rs`) or given their defaults at a submission or qalter
/// (`job/submit.rs`, `job/orselect.rs`); `handler_tests` checks after every request that
/// no job's kept request is stale.
const ONE_WRITER: &[(&str, &[&str])] = &[
    ("job_idx!(\"exec_vnode\")", &["state/mod.rs"]),
    ("job_idx!(\"exec_host\")", &["state/mod.rs"]),
    // An array's queued indices, kept parsed: a new array's text is set before its job is
    // made from it.
    ("job_idx!(\"array_indices_remaining\")", &["state/mod.rs", "job/submit.rs"]),
    // ... and read there: never parsed again from the text by name.
    (", \"array_indices_remaining\")", &[]),
    ("(\"array_indices_remaining\", None)", &[]),
    // A job's `depend` list, kept parsed (`Job::set_depend`): releases, ends and starts
    // read the kept list; only a client's list (`job/depend.rs`) is parsed elsewhere.
    ("set(job_idx!(\"depend\")", &["state/mod.rs", "job/submit.rs"]),
    ("unset(job_idx!(\"depend\")", &["state/mod.rs"]),
    ("(\"depend\", None)", &[]),
    ("DependList::parse(", &["state/mod.rs", "job/depend.rs"]),
    (".attrs = ", &["state/mod.rs", "objects.rs"]),
    ("OrSelect::parse", &["state/request.rs", "request/attrs.rs", "job/orselect.rs"]),
    ("parse::<Select>", &["state/request.rs", "job/submit.rs"]),
    ("parse::<pbs_core::Select>", &["state/request.rs"]),
    ("parse::<Place>", &["state/request.rs", "job/submit.rs"]),
    ("parse::<pbs_core::Place>", &["state/request.rs"]),
];

#[test]
fn effects_leave_only_through_apply_effects() {
    let wrong = named_elsewhere(WAYS_OUT);
    assert!(wrong.is_empty(), "return effects instead:\n{}", wrong.join("\n"));
}

#[test]
fn facts_kept_twice_have_one_writer() {
    let wrong = named_elsewhere(ONE_WRITER);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The places where a name of `table` appears outside the files allowed to name it.
fn named_elsewhere(table: &[(&str, &[&str])]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src()).unwrap().to_string_lossy().to_string();
        if relative == "handler_tests.rs" {
            continue;
        }
        let code = code(&std::fs::read_to_string(&file).unwrap());
        for (call, allowed) in table {
            if code.contains(call) && !allowed.contains(&relative.as_str()) {
                wrong.push(format!("{relative} names `{call}`, which only {allowed:?} may"));
            }
        }
    }
    wrong
}

#[test]
fn the_file_check_sees_relative_paths_and_a_folders_arrows_into_its_own_files() {
    let dir = std::env::temp_dir().join(format!("file-graph-{}", std::process::id()));
    let files = [
        ("lib.rs", "pub mod a;\npub mod e;\n"),
        // Declaring and re-exporting its files is no use of them; calling one is.
        ("a/mod.rs", "pub mod b;\npub mod c;\npub use b::Thing;\npub struct Root;\nfn f() { c::g(); }\n"),
        ("a/b.rs", "use super::Root;\npub struct Thing;\nfn f() { crate::e::f::z(); }\n"),
        ("a/c.rs", "pub fn g() { self::inner(); }\nfn inner() { let _ = super::Root; }\n"),
        ("e/mod.rs", "pub mod f;\n"),
        ("e/f.rs", "use super::super::a::b::Thing;\npub fn z() {}\n"),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let found = file_graph::cycles(&dir, &["lib.rs"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        [
            "a/b.rs -> e/f.rs -> ... -> a/b.rs",
            "a/c.rs -> a/mod.rs -> ... -> a/c.rs",
            "a/mod.rs -> a/c.rs -> ... -> a/mod.rs",
            "e/f.rs -> a/b.rs -> ... -> e/f.rs",
        ]
    );
}

#[test]
fn the_checks_see_arrows() {
    let sample = "use crate::state::State;\nfn f() { crate::job::run::lost(); }\n// crate::comment::not\n";
    assert_eq!(arrows(&code(sample)), ["job", "state"].iter().map(|s| s.to_string()).collect());
}

/// What code under the state lock may not name: the disk, the network, processes, the
/// clock, or tasks. Handlers take `now` from their caller and return effects; whatever
/// waits is done by the dispatch, `server` or the transport, outside the lock.
const IO_AND_CLOCK: &[&str] = &[
    "std::fs",
    "fs::",
    "File::",
    "std::net",
    "std::process",
    "Command::new",
    "std::env::var",
    "Utc::now",
    "Local::now",
    "SystemTime::now",
    "Instant::now",
    "tokio::time",
    "tokio::task",
    "tokio::fs",
    "tokio::net",
    "tokio::spawn",
    "nix::",
    "libc::",
];

/// Layers whose code runs under the state lock.
const UNDER_THE_LOCK: &[&str] = &["state", "request", "domain"];

/// Files of those layers that may name one of [`IO_AND_CLOCK`], and why: each is called
/// by the dispatch or `server` outside the lock, never by a handler.
const LOOKUPS_OUTSIDE_THE_LOCK: &[(&str, &str)] = &[
    // `groups_of`: a submitter's groups, resolved by the dispatch before it locks.
    ("acl.rs", "nix::"),
    // `resolve`: a job owner's uid, looked up by `Server::with_scripts` on a blocking thread.
    ("launch_owner.rs", "nix::"),
];

#[test]
fn code_under_the_state_lock_does_no_io_and_reads_no_clock() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let module = module_of(&file);
        let Some((_, layer)) = layer_of(&module) else { continue };
        if !UNDER_THE_LOCK.contains(&layer) {
            continue;
        }
        let relative = file.strip_prefix(src()).unwrap().to_string_lossy().to_string();
        let code = code(&std::fs::read_to_string(&file).unwrap());
        for name in IO_AND_CLOCK {
            if code.contains(name) && !LOOKUPS_OUTSIDE_THE_LOCK.contains(&(relative.as_str(), *name)) {
                wrong.push(format!("{relative} names `{name}`: take it as an argument or return an effect"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
