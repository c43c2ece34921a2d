//! The Python files shipped with the daemons (the hook runner and the `pbs` package) and
//! their installation into a directory every hook's interpreter can read.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The runner's file name in an installed directory.
pub const RUNNER_FILE: &str = "pbs_hook_runner.py";

include!(concat!(env!("OUT_DIR"), "/python_files.rs"));

/// Writes the runner and the `pbs` package into `dir` (created 0755), each file 0644 and
/// every directory and file owned by the daemon's user, so that any user may read and run
/// them (a `user=pbsuser` hook's interpreter imports them) but only the daemon's user can
/// change what hooks run with. Files are rewritten only when they differ, so a restart of
/// an unchanged daemon leaves them alone.
pub fn install(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    own(dir)?;
    for (path, text) in FILES {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755))?;
            own(parent)?;
        }
        if std::fs::read_to_string(&target).is_ok_and(|current| current == *text) {
            own(&target)?;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644))?;
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

/// Gives `path` (never followed if a symbolic link) to the daemon's user and group when
/// someone else owns it.
fn own(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::symlink_metadata(path)?;
    let (uid, gid) = (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw());
    if metadata.file_type().is_symlink() {
        return Err(io::Error::other(format!("{} is a symbolic link", path.display())));
    }
    if metadata.uid() != uid || metadata.gid() != gid {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    }
    Ok(())
}
