//! The per-job shepherd (`pbs_mom --shepherd <records file>`): owns one job from fork to
//! exit, so that a mom restart neither kills nor loses it (like Slurm's slurmstepd).
//!
//! It detaches into its own session, prepares what the job needs as root (script, node
//! file, TMPDIR), forks the job (see [`crate::exec`]), records [`Started`], enforces the
//! walltime limit itself (so it holds while the mom is down), waits, kills what is left of
//! the session, records [`Status`] and tells the mom with a datagram on `mom_sock`. Every
//! record is in the job's records file before the datagram is sent, so a mom that was down
//! when the note came finds the same facts when it rescans `mom_priv/jobs/`. Its stderr is
//! the mom's shared `mom_priv/shepherd.err`; every line it writes there starts with
//! [`err_prefix`], so the mom can tell whose it is.
//!
//! The shepherd must stay single-threaded until the fork: the child runs ordinary Rust code
//! before exec. Its only thread, the walltime watch, starts after the fork.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::socket::{AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg, socketpair};
use nix::unistd::{ForkResult, Gid};

use crate::env;
use crate::exec::{ChildPlan, Join, path_part};
use crate::exit_codes::{JOB_EXEC_FAIL1, JOB_EXEC_FAILUID, JOB_EXEC_KILL_WALLTIME};
use crate::layout::{self, KillReason, Limits, Note, Spec, Started, Status, SuspendClock, now_ms};
use crate::records;

/// A job's umask when `-W umask` does not set one: OpenPBS's 077, so its output and error
/// files, and whatever it writes, are its owner's alone.
const DEFAULT_UMASK: u32 = 0o077;

/// Time between SIGTERM and SIGKILL when a limit ends a job.
pub const LIMIT_KILL_GRACE: Duration = Duration::from_secs(2);

/// Start of every line a shepherd writes to the shared stderr.
pub fn err_prefix(job_id: &str, pid: i32) -> String {
    format!("pbs_mom --shepherd {job_id} [{pid}]: ")
}

/// The pid and message of a line of the shared stderr written by a shepherd of `job_id`.
pub fn parse_err_line<'a>(line: &'a str, job_id: &str) -> Option<(i32, &'a str)> {
    let rest = line.strip_prefix("pbs_mom --shepherd ")?.strip_prefix(job_id)?.strip_prefix(" [")?;
    let (pid, message) = rest.split_once("]: ")?;
    Some((pid.parse().ok()?, message))
}

/// Writes one line to the shared stderr, in one write so shepherds never interleave.
fn complain(label: &str, message: &str) {
    let line = format!("{label}{}\n", message.replace('\n', " "));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Runs the shepherd for the job whose records file is `records`; returns the process exit
/// code.
pub fn run(records: &Path) -> i32 {
    let job_id = layout::job_id_of(records).unwrap_or("?").to_string();
    let label = err_prefix(&job_id, std::process::id() as i32);
    // The default report spans lines the mom could not attribute to this job.
    let panic_label = label.clone();
    std::panic::set_hook(Box::new(move |info| complain(&panic_label, &info.to_string())));
    // Out of the mom's session: a signal to the mom's process group must not reach jobs.
    let _ = nix::unistd::setsid();
    // Orphans of the job are reparented here, not to init: the shepherd then knows for
    // certain (and cheaply) whether anything of the job is left when its shell exits,
    // and their CPU time is counted.
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let Some(spec) = records::read(records).get::<Spec>() else {
        complain(&label, &format!("cannot read the launch description in {}", records.display()));
        let status = failed(JOB_EXEC_FAIL1, "cannot read the launch description".into());
        let _ = records::append(records, &status);
        return 1;
    };
    let status = shepherd(&spec, records);
    if let Err(e) = records::append(records, &status) {
        complain(&label, &format!("cannot record the end: {e}"));
    }
    notify(&spec.notify_socket, &Note::Ended { job_id: spec.launch.job_id.clone(), status });
    0
}

fn failed(exit_status: i32, message: String) -> Status {
    Status { shepherd_pid: std::process::id() as i32, ..Status::failed(exit_status, message) }
}

/// Sends a note to the mom. A mom that is down or busy loses nothing: it rescans the files.
pub fn notify(socket: &Path, note: &Note) {
    let Ok(bytes) = serde_json::to_vec(note) else { return };
    let Ok(sock) = UnixDatagram::unbound() else { return };
    if sock.set_nonblocking(true).is_err() {
        return;
    }
    // A full queue (a mom that is stopped) must not hold the shepherd: retry briefly, then
    // leave it to the mom's periodic check of the records files.
    for _ in 0..50 {
        match sock.send_to(&bytes, socket) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            _ => return,
        }
    }
}

struct Prepared {
    plan: ChildPlan,
    tmpdir: Option<PathBuf>,
    nodefile: PathBuf,
}

fn shepherd(spec: &Spec, records: &Path) -> Status {
    let prepared = match prepare(spec, records) {
        Ok(p) => p,
        Err((code, message)) => return failed(code, message),
    };
    let status = staged_run(spec, records, &prepared.plan);
    if let Some(dir) = &prepared.tmpdir {
        let _ = std::fs::remove_dir_all(dir);
    }
    let _ = std::fs::remove_file(&prepared.nodefile);
    status
}

/// The job's run between its stage-in and its stage-out, both as its owner: a stage-in
/// that fails ends it before it starts; a stage-out that fails is written to its error
/// file and told with its status.
fn staged_run(spec: &Spec, records: &Path, plan: &ChildPlan) -> Status {
    let launch = &spec.launch;
    let scp = spec.scp.clone().unwrap_or_else(|| PathBuf::from("/usr/bin/scp"));
    let user = plan.user.to_string_lossy();
    let stager = crate::stage::Stager {
        user: &user,
        uid: plan.uid,
        gid: plan.gid,
        home: &plan.home,
        own_hosts: &spec.own_hosts,
        scp: &scp,
    };
    let staging = |direction| notify(&spec.notify_socket, &Note::Staging { job_id: launch.job_id.clone(), direction });
    if let Some(list) = launch.stagein.as_deref().filter(|l| !l.trim().is_empty())
        && let Err(why) = {
            staging(pbs_proto::mom::StageDirection::In);
            stager.stage_in(list)
        }
    {
        let mut status = failed(crate::exit_codes::JOB_EXEC_STAGEIN_FAILED, why.clone());
        status.stage_failed = Some((pbs_proto::mom::StageDirection::In, bounded(why)));
        return status;
    }
    let mut status = run_job(spec, records, plan);
    if let Some(list) = launch.stageout.as_deref().filter(|l| !l.trim().is_empty())
        && status.exit_status != crate::exit_codes::JOB_EXEC_FAILUID
        && let Err(why) = {
            staging(pbs_proto::mom::StageDirection::Out);
            stager.stage_out(list, &layout::undelivered_dir(&spec.home))
        }
    {
        append_to_error_file(plan, &why);
        status.stage_failed = Some((pbs_proto::mom::StageDirection::Out, bounded(why)));
    }
    status
}

/// `text` cut to what a report may carry.
fn bounded(mut text: String) -> String {
    if text.len() > pbs_proto::mom::MAX_STAGE_MESSAGE {
        let mut end = pbs_proto::mom::MAX_STAGE_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Appends `text` to the job's error file (its output file when joined), opened as its
/// owner in a child: OpenPBS's mom says there what it could not deliver.
fn append_to_error_file(plan: &ChildPlan, text: &str) {
    let path = match plan.join {
        Join::IntoOutput => &plan.stdout,
        _ => &plan.stderr,
    };
    let mut command = std::process::Command::new("/bin/sh");
    command.args(["-c", "cat >> \"$1\"", "sh"]).arg(path).stdin(std::process::Stdio::piped());
    if nix::unistd::geteuid().is_root() {
        use std::os::unix::process::CommandExt;
        command.uid(plan.uid.as_raw()).gid(plan.gid.as_raw());
    }
    if let Ok(mut child) = command.spawn() {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(format!("{text}\n").as_bytes());
        }
        let _ = child.wait();
    }
}

/// Looks up the owner and makes the script, node file and TMPDIR.
fn prepare(spec: &Spec, records: &Path) -> Result<Prepared, (i32, String)> {
    let launch = &spec.launch;
    // Refused here, before anything is created for the owner.
    let user = crate::owner::resolve(launch).map_err(|e| (JOB_EXEC_FAILUID, e.to_string()))?;
    let gid = crate::owner::group(launch, &user).map_err(|e| (JOB_EXEC_FAILUID, e.to_string()))?;
    let shell = [launch.shell.clone().unwrap_or_default(), user.shell.to_string_lossy().into_owned()]
        .into_iter()
        .find(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "/bin/sh".to_string());
    let fail1 = |what: &str, e: std::io::Error| (JOB_EXEC_FAIL1, format!("{what}: {e}"));

    let (program, search_path, argv) = match &launch.executable {
        Some(exe) => {
            let mut argv = vec![exe.clone()];
            argv.extend(launch.arguments.iter().cloned());
            (PathBuf::from(exe), true, argv)
        }
        None => {
            // Beside the records, in a directory only root writes: nobody can plant a link.
            // A leftover of an earlier run goes first: its shell may still be reading it.
            let script = layout::script_path_of(records);
            let _ = std::fs::remove_file(&script);
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&script)
                .and_then(|mut file| file.write_all(launch.script.as_bytes()))
                .map_err(|e| fail1("writing the script", e))?;
            std::os::unix::fs::chown(&script, Some(user.uid.as_raw()), Some(gid.as_raw()))
                .map_err(|e| fail1("chown of the script", e))?;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o500))
                .map_err(|e| fail1("chmod of the script", e))?;
            (PathBuf::from(&shell), false, vec![shell.clone(), script.to_string_lossy().into_owned()])
        }
    };

    let nodefile = layout::nodefile_path(&spec.home, &launch.job_id);
    let mut lines = launch.nodefile.join("\n");
    if !lines.is_empty() {
        lines.push('\n');
    }
    std::fs::write(&nodefile, lines.as_bytes()).map_err(|e| fail1("writing the node file", e))?;
    let _ = std::os::unix::fs::chown(&nodefile, Some(user.uid.as_raw()), Some(gid.as_raw()));
    let _ = std::fs::set_permissions(&nodefile, std::fs::Permissions::from_mode(0o644));

    let tmpdir = make_tmpdir(&layout::tmpdir_path(&spec.tmpdir_base, &launch.job_id), user.uid.as_raw(), gid);
    let cookie = cookie();
    let ctx = env::JobContext {
        user: &launch.user,
        home: &user.dir,
        shell: &shell,
        mom_port: spec.mom_port,
        nodefile: &nodefile,
        tmpdir: tmpdir.as_deref(),
        cookie: &cookie,
    };
    let env = env::job_env(launch, &ctx);
    let path_var = env.get("PATH").unwrap_or(env::DEFAULT_PATH).to_string();
    let envp = env.vars().iter().filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok()).collect();
    let argv = argv.into_iter().filter_map(|a| CString::new(a).ok()).collect();
    let mut workdirs = Vec::new();
    if let Some((_, dir)) = launch.variables.iter().find(|(k, _)| k == "PBS_O_WORKDIR")
        && !dir.is_empty()
    {
        workdirs.push(PathBuf::from(dir));
    }
    workdirs.push(user.dir.clone());
    let umask = launch.umask.as_deref().and_then(|u| u32::from_str_radix(u.trim(), 8).ok()).unwrap_or(DEFAULT_UMASK);
    let user_c = CString::new(launch.user.as_bytes()).map_err(|_| (JOB_EXEC_FAILUID, "bad user name".into()))?;
    let plan = ChildPlan {
        user: user_c,
        uid: user.uid,
        root_allowed: launch.root_allowed,
        gid,
        home: user.dir.clone(),
        workdirs,
        umask,
        stdout: PathBuf::from(path_part(&launch.output_path)),
        stderr: PathBuf::from(path_part(&launch.error_path)),
        join: Join::parse(&launch.join_path),
        program,
        search_path,
        path_var,
        argv,
        envp,
    };
    Ok(Prepared { plan, tmpdir, nodefile })
}

/// Creates `<base>/pbs.<jobid>` for the owner. A leftover of that name (a symlink planted in
/// a world-writable base, say) is removed first, never followed.
fn make_tmpdir(dir: &Path, uid: u32, gid: Gid) -> Option<PathBuf> {
    let create = || std::fs::DirBuilder::new().mode(0o700).create(dir);
    if create().is_err() {
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(dir).ok()?,
            Ok(_) => std::fs::remove_file(dir).ok()?,
            Err(_) => return None,
        }
        create().ok()?;
    }
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid.as_raw())).ok()?;
    Some(dir.to_path_buf())
}

fn cookie() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Not a secret OpenPBS relies on: a time-based value still distinguishes jobs.
        bytes[..8].copy_from_slice(&now_ms().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// Forks the job, waits for it, and returns its status.
fn run_job(spec: &Spec, records: &Path, plan: &ChildPlan) -> Status {
    let launch = &spec.launch;
    let (read_end, write_end) = match socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)
    {
        Ok(pair) => pair,
        Err(e) => return failed(JOB_EXEC_FAIL1, format!("socketpair: {e}")),
    };
    // SAFETY: the shepherd is single-threaded here (the walltime thread starts later), so
    // the child may run ordinary code before it execs.
    let child = match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => {
            drop(read_end);
            crate::exec::run_child(plan, write_end)
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => return failed(JOB_EXEC_FAIL1, format!("fork: {e}")),
    };
    drop(write_end);
    let start_ms = now_ms();
    let (report, sink) = read_child_report(&read_end);
    drop(read_end);
    if !report.is_empty() {
        let _ = wait_for_leader(child.as_raw());
        let (code, message) = report.split_once('\t').unwrap_or(("-1", report.as_str()));
        return failed(code.parse().unwrap_or(JOB_EXEC_FAIL1), message.to_string());
    }
    let sid = i64::from(child.as_raw());
    let started = Started { shepherd_pid: std::process::id() as i32, session_id: sid, start_ms };
    let _ = records::append(records, &started);
    notify(&spec.notify_socket, &Note::Started { job_id: launch.job_id.clone(), started });

    let killed = Arc::new(AtomicBool::new(false));
    let message = Arc::new(Mutex::new(String::new()));
    let sink = sink.map(Arc::new);
    {
        // Watched even without a limit: qalter may set one while the job runs.
        let limit = launch.walltime;
        let watch = WalltimeWatch {
            records: records.to_path_buf(),
            sid,
            start_ms,
            limit,
            sink: sink.clone(),
            killed: killed.clone(),
            message: message.clone(),
        };
        let _ = std::thread::Builder::new().name("walltime".into()).spawn(move || watch.run());
    }
    let wstatus = wait_for_leader(child.as_raw());
    let end_ms = now_ms();
    reap_leftovers(sid);
    if !killed.load(Ordering::SeqCst)
        && let Some(reason) = records::read(records).get::<KillReason>()
        && let Some(sink) = &sink
    {
        // The mom killed it for a limit (cput, mem) and recorded why before the SIGTERM.
        kill_message(sink, &reason.message);
    }
    // SAFETY: rusage is plain data; zeroes are a valid value, and getrusage fills it.
    let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live local.
    unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut rusage);
    }
    let exit_status = if killed.load(Ordering::SeqCst) {
        JOB_EXEC_KILL_WALLTIME
    } else if libc::WIFEXITED(wstatus) {
        libc::WEXITSTATUS(wstatus)
    } else if libc::WIFSIGNALED(wstatus) {
        256 + libc::WTERMSIG(wstatus)
    } else {
        JOB_EXEC_FAIL1
    };
    let tv_ms = |tv: libc::timeval| tv.tv_sec.max(0) as u64 * 1000 + tv.tv_usec.max(0) as u64 / 1000;
    Status {
        shepherd_pid: std::process::id() as i32,
        exit_status,
        session_id: sid,
        start_ms,
        end_ms,
        cput_ms: tv_ms(rusage.ru_utime) + tv_ms(rusage.ru_stime),
        maxrss_kb: rusage.ru_maxrss.max(0) as u64,
        message: message.lock().map(|m| m.clone()).unwrap_or_default(),
        stage_failed: None,
    }
}

/// What the job's process said before it exec'd: a failure report (`code\tmessage`, empty
/// if none) and the stderr it opened as the owner, if it handed it over.
fn read_child_report(sock: &OwnedFd) -> (String, Option<File>) {
    let mut report = Vec::new();
    let mut sink = None;
    let mut buf = [0u8; 4096];
    // Bounded: the child sends at most two messages before it execs or exits.
    for _ in 0..16 {
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
        let (bytes, fds) = match recvmsg::<()>(sock.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)
        {
            Ok(msg) => {
                let mut fds = Vec::new();
                for cmsg in msg.cmsgs().into_iter().flatten() {
                    if let ControlMessageOwned::ScmRights(received) = cmsg {
                        fds.extend(received);
                    }
                }
                (msg.bytes, fds)
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        };
        // Owned at once, so any descriptor not kept is closed.
        // SAFETY: SCM_RIGHTS gave this process new descriptors that nothing else owns.
        let mut files: Vec<File> = fds.into_iter().map(|fd| File::from(unsafe { OwnedFd::from_raw_fd(fd) })).collect();
        let data = buf.get(..bytes).unwrap_or_default();
        if data == crate::exec::STDERR_HANDOFF && sink.is_none() {
            sink = files.pop();
        } else {
            report.extend_from_slice(data);
        }
        if bytes == 0 {
            break;
        }
    }
    (String::from_utf8_lossy(&report).into_owned(), sink)
}

/// Appends `=>> PBS: job killed: <message>` to the job's stderr (as OpenPBS's mom does).
fn kill_message(sink: &File, message: &str) {
    let mut sink = sink;
    let _ = sink.write_all(format!("=>> PBS: job killed: {message}\n").as_bytes());
}

/// Waits until the job's shell exits, reaping orphans reparented to the shepherd meanwhile;
/// returns the shell's wait status.
fn wait_for_leader(leader: i32) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: the pointer is to a live local.
        let rc = unsafe { libc::waitpid(-1, &mut status, 0) };
        if rc == leader {
            return status;
        }
        if rc < 0 && nix::errno::Errno::last() != nix::errno::Errno::EINTR {
            return status;
        }
    }
}

/// What the job left behind dies with it, as in OpenPBS: its session, and every process
/// that left the session but descends from the job (they are the shepherd's children now).
fn reap_leftovers(sid: i64) {
    let me = std::process::id() as i32;
    for _ in 0..1000 {
        let mut status = 0;
        loop {
            // SAFETY: the pointer is to a live local.
            match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
                0 => break,
                pid if pid > 0 => continue,
                // No child left: the common case, without reading /proc at all.
                _ => return,
            }
        }
        for p in crate::procfs::all_processes() {
            if (p.session == sid || p.ppid == me) && p.state != 'Z' {
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe {
                    libc::kill(p.pid, libc::SIGKILL);
                }
            }
        }
        // SAFETY: the pointer is to a live local.
        if unsafe { libc::waitpid(-1, &mut status, 0) } < 0 {
            return;
        }
    }
}

/// Sends `signal` to the session until nothing is left in it (for SIGKILL) or once.
pub fn kill_session(sid: i64, signal: i32) {
    for _ in 0..100 {
        if crate::procfs::signal_session(sid, signal) == 0 || signal != libc::SIGKILL {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGTERM (and SIGCONT, so a suspended job sees it), then SIGKILL after `grace`.
pub fn terminate_session(sid: i64, grace: Duration) {
    let both = std::collections::HashMap::from([(sid, vec![libc::SIGTERM, libc::SIGCONT])]);
    crate::procfs::signal_sessions_in_order(&both);
    std::thread::sleep(grace);
    kill_session(sid, libc::SIGKILL);
}

/// How often the walltime watch reads the job's records for a limit changed by qalter.
const LIMIT_POLL_MS: u64 = 1000;

/// The walltime limit, watched from a thread of the shepherd.
struct WalltimeWatch {
    records: PathBuf,
    sid: i64,
    start_ms: u64,
    /// The launch's limit; a `Limits` record replaces it.
    limit: Option<u64>,
    /// The job's stderr as the job's process opened it (see [`read_child_report`]).
    sink: Option<Arc<File>>,
    killed: Arc<AtomicBool>,
    message: Arc<Mutex<String>>,
}

impl WalltimeWatch {
    fn run(self) {
        let (used_ms, limit) = loop {
            let recs = records::read(&self.records);
            let clock: SuspendClock = recs.get().unwrap_or_default();
            let limit = recs.get::<Limits>().map_or(self.limit, |l| l.walltime);
            let used_ms = clock.walltime_ms(self.start_ms, now_ms());
            // As in OpenPBS the job is over its limit when its whole seconds exceed it.
            let deadline_ms = limit.map(|l| l.saturating_add(1).saturating_mul(1000));
            if let Some(limit) = limit.filter(|_| deadline_ms.is_some_and(|d| used_ms >= d)) {
                break (used_ms, limit);
            }
            // While suspended the clock stands still, and qalter may change the limit at
            // any time: look again within LIMIT_POLL.
            let wait = match deadline_ms {
                Some(d) if clock.since_ms.is_none() => (d - used_ms).min(LIMIT_POLL_MS),
                _ => LIMIT_POLL_MS,
            };
            std::thread::sleep(Duration::from_millis(wait));
        };
        let text = format!("walltime {} exceeded limit {limit}", used_ms / 1000);
        if let Some(sink) = &self.sink {
            kill_message(sink, &text);
        }
        if let Ok(mut m) = self.message.lock() {
            *m = text;
        }
        self.killed.store(true, Ordering::SeqCst);
        terminate_session(self.sid, LIMIT_KILL_GRACE);
    }
}

/// Path helper for the mom: the shepherd's arguments.
pub fn shepherd_args(records: &Path) -> [&std::ffi::OsStr; 2] {
    [std::ffi::OsStr::from_bytes(b"--shepherd"), records.as_os_str()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_stderr_lines_are_told_apart_by_job_and_pid() {
        let line = format!("{}panicked at x.rs:1:2: boom", err_prefix("12[3].s", 77));
        assert_eq!(parse_err_line(&line, "12[3].s"), Some((77, "panicked at x.rs:1:2: boom")));
        assert_eq!(parse_err_line(&line, "12[3]"), None);
        assert_eq!(parse_err_line(&line, "2[3].s"), None);
        assert_eq!(parse_err_line("some other text", "12[3].s"), None);
    }
}
