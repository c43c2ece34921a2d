//! qmsg on the mom: a line appended to a running job's stderr or stdout file, written with
//! the job owner's identity, never root's: the paths are the user's to choose, and root
//! appending there could reach a file the owner may not write (one in a directory only
//! root may enter, a link to a system file). The open happens on a thread of its own whose
//! filesystem identity (fsuid, fsgid, groups: per thread on Linux, set by raw system calls
//! that glibc does not broadcast to the other threads) is the owner's, so the kernel checks
//! the owner's permissions; the thread ends with the write. Only an existing regular file
//! is appended to, opened without following a link at its last component.

use std::ffi::CString;
use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use pbs_core::Pbse;
use pbs_proto::mom::JobLaunch;

use crate::exec::{Join, path_part};

/// Appends `text` and a newline to the job's stderr (`stderr`) and/or stdout (`stdout`)
/// files as its owner; the PBSE code to answer (0 once written).
pub fn append(launch: &JobLaunch, stdout: bool, stderr: bool, text: &str) -> u32 {
    let Ok(user) = crate::owner::resolve(launch) else { return Pbse::PERM.0 };
    let Ok(gid) = crate::owner::group(launch, &user) else { return Pbse::PERM.0 };
    let Ok(name) = CString::new(user.name.as_bytes()) else { return Pbse::PERM.0 };
    let groups: Vec<libc::gid_t> = nix::unistd::getgrouplist(&name, gid)
        .map(|groups| groups.into_iter().map(|g| g.as_raw()).collect())
        .unwrap_or_else(|_| vec![gid.as_raw()]);
    let workdir = launch
        .variables
        .iter()
        .find(|(k, _)| k == "PBS_O_WORKDIR")
        .map_or_else(|| user.dir.clone(), |(_, dir)| PathBuf::from(dir));
    // A joined stream went into the other stream's file.
    let join = Join::parse(&launch.join_path);
    let stderr_file = if matches!(join, Join::IntoOutput) { &launch.output_path } else { &launch.error_path };
    let stdout_file = if matches!(join, Join::IntoError) { &launch.error_path } else { &launch.output_path };
    let files: Vec<Vec<PathBuf>> = [(stderr, stderr_file), (stdout, stdout_file)]
        .into_iter()
        .filter(|(wanted, _)| *wanted)
        .map(|(_, path)| candidates(path_part(path), &workdir, &user.dir))
        .collect();
    let mut line = text.as_bytes().to_vec();
    line.push(b'\n');
    let uid = user.uid.as_raw();
    let written = std::thread::scope(|scope| {
        scope.spawn(|| as_owner(uid, gid.as_raw(), &groups, &files, &line)).join().unwrap_or(Err(Pbse::SYSTEM.0))
    });
    match written {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// Where the job's process may have opened a file it was given as `path`: the path (taken
/// from the job's working directory when relative), else the same name in the home
/// directory, as the job's process falls back.
fn candidates(path: &str, workdir: &Path, home: &Path) -> Vec<PathBuf> {
    let given = Path::new(path);
    let mut out = vec![if given.is_absolute() { given.to_path_buf() } else { workdir.join(given) }];
    if let Some(name) = given.file_name() {
        out.push(home.join(name));
    }
    out
}

/// On a thread of its own: takes the owner's filesystem identity, then appends `line` to
/// the first file of each list that opens.
fn as_owner(uid: u32, gid: u32, groups: &[libc::gid_t], files: &[Vec<PathBuf>], line: &[u8]) -> Result<(), u32> {
    // SAFETY: raw system calls on this thread's credentials, with a valid pointer and
    // length for the groups; nothing else on this thread relies on the old identity.
    unsafe {
        if libc::getuid() == 0 {
            libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr());
        }
        libc::syscall(libc::SYS_setfsgid, gid);
        libc::syscall(libc::SYS_setfsuid, uid);
        // setfsuid answers the previous value: asking again with an invalid id reads it.
        if libc::syscall(libc::SYS_setfsuid, u32::MAX) != i64::from(uid) {
            return Err(Pbse::PERM.0);
        }
    }
    for list in files {
        let mut opened = None;
        for path in list {
            let file = std::fs::OpenOptions::new()
                .append(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK)
                .open(path);
            if let Ok(file) = file
                && file.metadata().is_ok_and(|m| m.file_type().is_file() && !m.file_type().is_fifo())
            {
                opened = Some(file);
                break;
            }
        }
        let Some(mut file) = opened else { return Err(Pbse::SYSTEM.0) };
        file.write_all(line).map_err(|_| Pbse::SYSTEM.0)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_the_jobs_working_directory_and_the_home_is_the_fallback() {
        let got = candidates("x.e1", Path::new("/w"), Path::new("/h"));
        assert_eq!(got, [PathBuf::from("/w/x.e1"), PathBuf::from("/h/x.e1")]);
        let got = candidates("/a/x.e1", Path::new("/w"), Path::new("/h"));
        assert_eq!(got, [PathBuf::from("/a/x.e1"), PathBuf::from("/h/x.e1")]);
    }
}
