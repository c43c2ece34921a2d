//! The job process between `fork` and `exec`: its own session, the owner's identity, working
//! directory, umask, output files opened as the owner, and the exec of the shell or program.
//!
//! This runs in the child of the single-threaded shepherd, so it may allocate; it never
//! returns. It talks to the shepherd on a close-on-exec `SOCK_SEQPACKET` socket: a failure
//! before the job's files exist is reported as `code\tmessage`; once they are open, the
//! job's stderr, opened here as the owner, is handed to the shepherd ([`STDERR_HANDOFF`])
//! for its own messages; an exec that succeeds then closes the socket silently.

use std::ffi::{CString, OsStr};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::stat::Mode;
use nix::unistd::{Gid, Uid};

use crate::exit_codes::JOB_EXEC_FAILUID;

/// The payload of the message that carries the job's stderr descriptor to the shepherd.
pub const STDERR_HANDOFF: &[u8] = b"stderr";

/// Exit status of a job whose shell could not be executed (OpenPBS's mom exits 254 there).
const SHELL_EXEC_FAILED: i32 = 254;

/// How stdout and stderr are joined (`Join_Path`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// Separate files.
    None,
    /// stderr into the output file (`oe`).
    IntoOutput,
    /// stdout into the error file (`eo`).
    IntoError,
}

impl Join {
    /// Reads `Join_Path`.
    pub fn parse(text: &str) -> Join {
        match text.trim() {
            "oe" => Join::IntoOutput,
            "eo" => Join::IntoError,
            _ => Join::None,
        }
    }
}

/// Everything the child needs, prepared by the shepherd before the fork.
#[derive(Debug)]
pub struct ChildPlan {
    /// The owner's name (for initgroups).
    pub user: CString,
    /// The owner's uid.
    pub uid: Uid,
    /// The server allowed the job to run as root (`acl_roots`); checked again here, last.
    pub root_allowed: bool,
    /// The group to run as.
    pub gid: Gid,
    /// The owner's home directory.
    pub home: PathBuf,
    /// Working directories to try, in order.
    pub workdirs: Vec<PathBuf>,
    /// The job's umask.
    pub umask: u32,
    /// Where stdout goes (path part of `Output_Path`).
    pub stdout: PathBuf,
    /// Where stderr goes.
    pub stderr: PathBuf,
    /// `Join_Path`.
    pub join: Join,
    /// The program: a shell (script jobs) or the user's executable.
    pub program: PathBuf,
    /// True for `qsub -- program`: looked up in the job's PATH when it has no `/`.
    pub search_path: bool,
    /// The job's PATH, for that lookup.
    pub path_var: String,
    /// argv, `argv[0]` included.
    pub argv: Vec<CString>,
    /// The environment, `NAME=value`.
    pub envp: Vec<CString>,
}

/// The path part of `host:/path`.
pub fn path_part(spec: &str) -> &str {
    if spec.starts_with('/') {
        return spec;
    }
    spec.split_once(':').map(|(_, p)| p).unwrap_or(spec)
}

/// Becomes the job: never returns.
pub fn run_child(plan: &ChildPlan, report: OwnedFd) -> ! {
    match prepare(plan) {
        Ok(()) => {}
        Err((code, message)) => {
            let text = format!("{code}\t{message}");
            let _ = nix::unistd::write(report.as_fd(), text.as_bytes());
            exit_now(1);
        }
    }
    hand_over_stderr(&report);
    let program = resolve_program(plan);
    let Ok(program_c) = CString::new(program.as_os_str().as_bytes()) else {
        exec_failed(plan, &program, nix::errno::Errno::EINVAL);
    };
    let err = match nix::unistd::execve(&program_c, &plan.argv, &plan.envp) {
        Err(e) => e,
        Ok(never) => match never {},
    };
    exec_failed(plan, &program, err)
}

/// Everything up to the exec; an error is `(JOB_EXEC_* code, message)`.
fn prepare(plan: &ChildPlan) -> Result<(), (i32, String)> {
    let _ = nix::unistd::setsid();
    reset_signals();
    nix::sys::stat::umask(Mode::from_bits_truncate(plan.umask & 0o777));
    drop_privileges(plan).map_err(|e| (JOB_EXEC_FAILUID, e))?;
    // Tried after dropping privileges, so "can the owner enter it" is the kernel's answer.
    if !plan.workdirs.iter().any(|dir| nix::unistd::chdir(dir.as_path()).is_ok()) {
        let _ = nix::unistd::chdir("/");
    }
    let (out, err) = match plan.join {
        Join::IntoOutput => {
            let f = open_output(&plan.stdout, &plan.home);
            (f.try_clone().ok(), Some(f))
        }
        Join::IntoError => {
            let f = open_output(&plan.stderr, &plan.home);
            (f.try_clone().ok(), Some(f))
        }
        Join::None => (Some(open_output(&plan.stdout, &plan.home)), Some(open_output(&plan.stderr, &plan.home))),
    };
    if let Ok(null) = File::open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(&null);
    }
    if let Some(out) = out {
        let _ = nix::unistd::dup2_stdout(&out);
    }
    if let Some(err) = err {
        let _ = nix::unistd::dup2_stderr(&err);
    }
    Ok(())
}

/// Gives the shepherd the job's stderr as this process opened it, as the owner: the
/// shepherd writes its messages there, never through a descriptor the job could have
/// replaced since (reopening `/proc/<pid>/fd/2` as root would turn a read-only descriptor
/// of a root-owned file into a writable one). Without it the shepherd writes nothing.
fn hand_over_stderr(report: &OwnedFd) {
    let payload = [std::io::IoSlice::new(STDERR_HANDOFF)];
    let fds = [libc::STDERR_FILENO];
    let rights = [nix::sys::socket::ControlMessage::ScmRights(&fds)];
    let _ = nix::sys::socket::sendmsg::<()>(
        report.as_raw_fd(),
        &payload,
        &rights,
        nix::sys::socket::MsgFlags::empty(),
        None,
    );
}

/// The job starts with default signal dispositions and nothing blocked: Rust ignores
/// SIGPIPE in the shepherd, and an ignored signal would stay ignored across exec.
fn reset_signals() {
    for signal in Signal::iterator() {
        if matches!(signal, Signal::SIGKILL | Signal::SIGSTOP) {
            continue;
        }
        // SAFETY: installing SIG_DFL runs no handler code; the child is single-threaded.
        unsafe {
            let _ = nix::sys::signal::signal(signal, SigHandler::SigDfl);
        }
    }
    let _ = nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
}

fn drop_privileges(plan: &ChildPlan) -> Result<(), String> {
    if plan.uid.is_root() && !plan.root_allowed {
        return Err("refusing to run as root: the server's acl_roots did not allow it".to_string());
    }
    let euid = nix::unistd::geteuid();
    if !euid.is_root() {
        // An unprivileged mom (a developer's) can only run its own user's jobs.
        return if euid == plan.uid {
            Ok(())
        } else {
            Err(format!("cannot run as uid {}: pbs_mom is not root", plan.uid))
        };
    }
    let user = plan.user.to_string_lossy();
    nix::unistd::initgroups(&plan.user, plan.gid).map_err(|e| format!("initgroups({user}): {e}"))?;
    nix::unistd::setgid(plan.gid).map_err(|e| format!("setgid({}): {e}", plan.gid))?;
    nix::unistd::setuid(plan.uid).map_err(|e| format!("setuid({}): {e}", plan.uid))?;
    Ok(())
}

/// Opens an output file as the (already unprivileged) owner: the path, else the same file
/// name in the home directory, else /dev/null.
fn open_output(path: &Path, home: &Path) -> File {
    let open = |p: &Path| {
        OpenOptions::new()
            .create(true)
            // Appends by the shepherd (limit messages) must not be overwritten by the job.
            // std refuses truncate with append, so O_TRUNC goes in as a raw flag.
            .append(true)
            .mode(0o644)
            .custom_flags(libc::O_NOCTTY | libc::O_TRUNC)
            .open(p)
    };
    if !path.as_os_str().is_empty()
        && let Ok(file) = open(path)
    {
        return file;
    }
    if let Some(name) = path.file_name()
        && let Ok(file) = open(&home.join(name))
    {
        return file;
    }
    match OpenOptions::new().write(true).open("/dev/null") {
        Ok(file) => file,
        // Without /dev/null there is nothing better; stdout stays what the shepherd had.
        Err(_) => exit_now(1),
    }
}

fn resolve_program(plan: &ChildPlan) -> PathBuf {
    if !plan.search_path || plan.program.as_os_str().as_bytes().contains(&b'/') {
        return plan.program.clone();
    }
    for dir in plan.path_var.split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(&plan.program);
        if nix::unistd::access(&candidate, nix::unistd::AccessFlags::X_OK).is_ok() && candidate.is_file() {
            return candidate;
        }
    }
    plan.program.clone()
}

fn exec_failed(plan: &ChildPlan, program: &Path, err: nix::errno::Errno) -> ! {
    let mut stderr = std::io::stderr();
    if plan.search_path {
        let _ = writeln!(stderr, "{}: {}", display(program.as_os_str()), err.desc());
        // The shell's conventions for a command not found / not executable.
        exit_now(if err == nix::errno::Errno::ENOENT { 127 } else { 126 });
    }
    let _ = writeln!(stderr, "pbs_mom: exec of shell {} failed: {}", display(program.as_os_str()), err.desc());
    exit_now(SHELL_EXEC_FAILED)
}

fn display(text: &OsStr) -> String {
    text.to_string_lossy().into_owned()
}

/// `_exit`: no atexit handlers or buffered output of the shepherd run twice in the child.
fn exit_now(code: i32) -> ! {
    // SAFETY: _exit ends the process at once and has no preconditions.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_part_drops_the_host() {
        assert_eq!(path_part("host:/home/u/x.o1"), "/home/u/x.o1");
        assert_eq!(path_part("/abs/path"), "/abs/path");
        assert_eq!(path_part("rel.o1"), "rel.o1");
        assert_eq!(path_part("h.example.com:/a:b"), "/a:b");
    }

    #[test]
    fn join_values() {
        assert_eq!(Join::parse("oe"), Join::IntoOutput);
        assert_eq!(Join::parse("eo"), Join::IntoError);
        assert_eq!(Join::parse("n"), Join::None);
        assert_eq!(Join::parse(""), Join::None);
    }
}
