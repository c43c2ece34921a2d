//! The classic `PBS_HOME/mom_priv/prologue` and `epilogue` scripts, run as OpenPBS's mom
//! runs them (`src/resmom/prolog.c`, `run_pelog`): only a regular file owned by root,
//! readable and executable by its owner and writable by neither group nor others; as root,
//! in a session of its own, stdin from `/dev/null`, the mom's environment plus
//! `PBS_JOBDIR` (the owner's home); arguments `jobid user group` (the epilogue adds
//! `jobname sessionid resource_list resources_used queue account exit_status`); killed
//! with its process group after [`PELOG_TIMEOUT`]. Its exit code is OpenPBS's: 0 when the
//! file is missing, -1 for a permission error, -3 when killed by a signal, -4 on timeout.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// OpenPBS's `PBS_PROLOG_TIME`: how long a prologue or epilogue may run.
pub const PELOG_TIMEOUT: Duration = Duration::from_secs(30);

/// Which script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// `mom_priv/prologue`, before the job's script.
    Prologue,
    /// `mom_priv/epilogue`, after it.
    Epilogue,
}

impl Which {
    /// Its file name under `mom_priv`.
    pub fn file_name(self) -> &'static str {
        match self {
            Which::Prologue => "prologue",
            Which::Epilogue => "epilogue",
        }
    }
}

/// Whether the script exists at all (a missing one is not run, and costs one `stat`).
pub fn exists(path: &Path) -> bool {
    std::fs::metadata(path).is_ok()
}

fn failed(job_id: &str, path: &Path, exit: i32, text: &str) -> i32 {
    tracing::warn!(
        object_type = "Job",
        object_name = job_id,
        "pro/epilogue failed, file: {}, exit: {exit}, {text}",
        path.display()
    );
    exit
}

/// Whether `path` may run as a prologue or epilogue: OpenPBS's test, with the daemon's
/// own user standing for root when it runs unprivileged.
fn permitted(meta: &std::fs::Metadata) -> bool {
    let mode = meta.permissions().mode();
    let owner_ok = meta.uid() == 0 || meta.uid() == nix::unistd::geteuid().as_raw();
    owner_ok && meta.is_file() && mode & 0o500 == 0o500 && mode & 0o022 == 0
}

/// Runs `path` for job `job_id` with OpenPBS's arguments (`args` after `jobid user group`)
/// and gives OpenPBS's exit code for it.
pub async fn run(which: Which, path: &Path, job_id: &str, user: &str, group: &str, args: &[String]) -> i32 {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return 0,
        Err(e) => return failed(job_id, path, e.raw_os_error().unwrap_or(-1), "cannot stat"),
    };
    if !permitted(&meta) {
        return failed(job_id, path, -1, "Permission Error");
    }
    let owner = user.to_string();
    let home = tokio::task::spawn_blocking(move || {
        nix::unistd::User::from_name(&owner).ok().flatten().map(|u| u.dir.display().to_string())
    })
    .await
    .ok()
    .flatten();
    let mut command = tokio::process::Command::new(path);
    command
        .arg(job_id)
        .arg(user)
        .arg(group)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(home) = home {
        command.env("PBS_JOBDIR", home);
    }
    tracing::debug!(object_type = "Job", object_name = job_id, "running {}", which.file_name());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failed(job_id, path, e.raw_os_error().unwrap_or(-1), "cannot run"),
    };
    let group_id = child.id().and_then(|pid| i32::try_from(pid).ok());
    let kill_group = || {
        if let Some(pgid) = group_id {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
        }
    };
    let exit = match tokio::time::timeout(PELOG_TIMEOUT, child.wait()).await {
        Ok(Ok(status)) => status.code().unwrap_or(-3),
        Ok(Err(_)) => -3,
        Err(_) => {
            kill_group();
            let _ = child.wait().await;
            -4
        }
    };
    // What it left behind in its session goes with it, as in OpenPBS.
    kill_group();
    if exit != 0 {
        return failed(job_id, path, exit, "nonzero p/e exit status");
    }
    0
}

/// The job's end status as a prologue's outcome means it to the server: exit 1 aborts the
/// job (`JOB_EXEC_FAIL2`), any other failure requeues it (`JOB_EXEC_RETRY`), as OpenPBS's
/// `finish_exec`.
pub fn prologue_failure(exit: i32) -> Option<i32> {
    match exit {
        0 => None,
        1 => Some(crate::exit_codes::JOB_EXEC_FAIL2),
        _ => Some(crate::exit_codes::JOB_EXEC_RETRY),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prologue_exit_codes_map_as_openpbs() {
        assert_eq!(prologue_failure(0), None);
        assert_eq!(prologue_failure(1), Some(-2));
        assert_eq!(prologue_failure(2), Some(-3));
        assert_eq!(prologue_failure(-4), Some(-3));
        assert_eq!(prologue_failure(-1), Some(-3));
    }

    #[tokio::test]
    async fn a_script_others_may_write_is_not_run_and_arguments_are_openpbs() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("args");
        let script = dir.path().join("prologue");
        std::fs::write(&script, format!("#!/bin/sh\necho \"$@\" > {}\nexit 2\n", out.display())).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o757)).unwrap();
        assert_eq!(run(Which::Prologue, &script, "1.s", "root", "root", &[]).await, -1);
        assert!(!out.exists());
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(run(Which::Prologue, &script, "1.s", "root", "root", &[]).await, 2);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "1.s root root\n");
        assert_eq!(run(Which::Prologue, &dir.path().join("missing"), "1.s", "root", "root", &[]).await, 0);
    }
}
