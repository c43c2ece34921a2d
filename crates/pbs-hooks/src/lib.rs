//! Hooks in Python: the `pbs` module and runner shipped with the daemons, and the pool of
//! warm interpreters that run hook events (protocol in docs/hooks.md).

pub mod pool;
pub mod protocol;

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub use pool::{Pool, RunError};
pub use protocol::{Answer, Change, Changes, Defs, Event, JobData, LogEntry, Query, QueryReply, Value};
pub use protocol::{MAX_JOBS_PER_QUERY, definitions};

/// The runner's file name in an installed directory.
pub const RUNNER_FILE: &str = "pbs_hook_runner.py";

include!(concat!(env!("OUT_DIR"), "/python_files.rs"));

/// Writes the runner and the `pbs` package into `dir` (created 0755), each file 0644, so
/// that only the daemon's user can change what hooks run with. Files are rewritten only
/// when they differ, so a restart of an unchanged daemon leaves them alone.
pub fn install(dir: &Path) -> io::Result<()> {
    for (path, text) in FILES {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755))?;
        }
        if std::fs::read_to_string(&target).is_ok_and(|current| current == *text) {
            continue;
        }
        let temporary = target.with_extension("tmp");
        std::fs::write(&temporary, text)?;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&temporary, &target)?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}
