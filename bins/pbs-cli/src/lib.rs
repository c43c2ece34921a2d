//! What every q-command shares: reading its command line, loading pbs.conf, connecting,
//! turning job ids typed by a user into full ids, printing errors in OpenPBS's form and
//! exiting with its status.

use std::process::ExitCode;

use pbs_client::{Client, ClientError};
use pbs_core::JobId;
use pbs_core::conf::{DEFAULT_CONF_FILE, PbsConf};

pub mod arena;
pub mod jobopts;
pub mod perjob;
pub mod timefmt;

#[global_allocator]
static ALLOCATOR: arena::CommandAlloc = arena::CommandAlloc::new();

/// Reads pbs.conf from `PBS_CONF_FILE` (default `/etc/pbs.conf`), with `PBS_*` environment
/// overrides. A missing file means all defaults, as OpenPBS commands tolerate.
pub fn load_conf() -> anyhow::Result<PbsConf> {
    let path = std::env::var("PBS_CONF_FILE").unwrap_or_else(|_| DEFAULT_CONF_FILE.to_string());
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(anyhow::anyhow!("cannot read {path}: {e}")),
    };
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("PBS_")).collect();
    Ok(PbsConf::parse(&text, &env)?)
}

/// Connects to the server of pbs.conf; on failure prints OpenPBS's message for `cmd`
/// (`qstat: cannot connect to server h (errno=111)`) and returns the exit code to use:
/// 2 for an unreadable pbs.conf, else the low byte of the PBSE code.
pub fn connect(cmd: &str) -> Result<Client, ExitCode> {
    match try_connect() {
        Ok((_, client)) => Ok(client),
        Err(failure) => {
            eprintln!(
                "{}",
                failure.line(cmd, |server, errno| format!("cannot connect to server {server} (errno={errno})"))
            );
            Err(match &failure {
                ConnectFailure::Conf(_) => ExitCode::from(2),
                ConnectFailure::NoServer { .. } => exit_code(pbs_core::Pbse::NOSERVER.0),
                ConnectFailure::Client(e) => exit_code(e.pbse().0),
            })
        }
    }
}

/// The exit status a command uses for a PBSE code: its low byte, as OpenPBS's `exit(pbs_errno)`.
pub fn exit_code(code: u32) -> ExitCode {
    ExitCode::from((code & 0xff) as u8)
}

/// `queue[@server]` as OpenPBS's `parse_destination_id` reads it: a queue name starts with
/// a letter or digit and holds no `@`; an empty server part is refused.
pub fn parse_destination(text: &str) -> Option<(&str, Option<&str>)> {
    let (queue, server) = match text.split_once('@') {
        Some((queue, server)) => (queue, Some(server)),
        None => (text, None),
    };
    let queue_ok = queue.is_empty()
        || (queue.starts_with(|c: char| c.is_ascii_alphanumeric())
            && queue.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'));
    let server_ok = server.is_none_or(|s| !s.is_empty() && !s.contains('@'));
    (queue_ok && server_ok && !text.is_empty()).then_some((queue, server))
}

/// Completes a job id typed by the user with the server name (`12` -> `12.server`), the way
/// OpenPBS's `get_server` does. Returns `None` if it is not a job id at all.
pub fn full_job_id(typed: &str, server_name: &str) -> Option<String> {
    let id: JobId = typed.parse().ok()?;
    Some(id.with_server(server_name).to_string())
}

/// This host's name.
pub fn local_host_name() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".to_string())
}

/// A per-job error line as `prt_job_err` words it: `<cmd>: <message> <jobid>`.
pub fn job_error_line(cmd: &str, message: impl std::fmt::Display, job_id: &str) -> String {
    format!("{cmd}: {message} {job_id}")
}

/// Prints a per-job error the way `prt_job_err` does: `<cmd>: <message> <jobid>`.
pub fn print_job_error(cmd: &str, message: &str, job_id: &str) {
    eprintln!("{}", job_error_line(cmd, message, job_id));
}

/// Prints what OpenPBS's commands say of an operand that is not a job id:
/// `<cmd>: illegally formed job identifier: <typed>`.
pub fn print_bad_job_id(cmd: &str, typed: &str) {
    eprintln!("{cmd}: illegally formed job identifier: {typed}");
}

/// At most `max` bytes of `s`, cut at a character boundary (OpenPBS copies option values
/// into fixed buffers).
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Declares a command's entry point: `pbs_cli::command_main!(body);` where `body` is a
/// `fn() -> ExitCode` doing what `main` would, with
/// `#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]` at the
/// top of the binary.
///
/// On glibc Linux the program's C `main` calls `body` through [`run_as_c_main`] instead of
/// going through std's start-up, which reads `/proc/self/maps` and installs a stack
/// overflow handler with an alternate signal stack: about twenty system calls and a tenth
/// of what a `qsub -- /bin/true` cost. What of that start-up a command can notice is done
/// by [`run_as_c_main`]. (Arguments do not depend on it: on glibc std reads them from an
/// initialiser.) Elsewhere, and in unit tests, this is an ordinary `main`.
#[macro_export]
macro_rules! command_main {
    ($body:path) => {
        #[cfg(all(not(test), target_os = "linux", target_env = "gnu"))]
        #[unsafe(no_mangle)]
        extern "C" fn main(_argc: ::std::ffi::c_int, _argv: *const *const ::std::ffi::c_char) -> ::std::ffi::c_int {
            $crate::run_as_c_main($body)
        }

        #[cfg(not(all(not(test), target_os = "linux", target_env = "gnu")))]
        fn main() -> ::std::process::ExitCode {
            $body()
        }
    };
}

/// Runs a command's body as the program's C `main` (see [`command_main!`]), keeping what std's
/// start-up and exit do that a command can notice: standard descriptors that are closed
/// are opened on `/dev/null` (so a socket opened later never becomes standard output),
/// SIGPIPE starts ignored (commands that print set it back with [`reset_sigpipe`]), a panic
/// exits with status 101, and standard output is flushed at the end. Not kept: the
/// message std prints on a stack overflow (the overflow still stops the program, with
/// SIGSEGV), and panic messages name the thread `<unnamed>` instead of `main`.
pub fn run_as_c_main(body: fn() -> ExitCode) -> std::ffi::c_int {
    open_closed_standard_fds();
    // SAFETY: setting a signal disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let code = std::panic::catch_unwind(body).unwrap_or_else(|_| ExitCode::from(101));
    // As when std's `main` returns, a failed flush (closed pipe) is not reported.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    exit_status(code)
}

/// The number an [`ExitCode`] stands for. It keeps it private, but every one a command
/// makes comes from a `u8` (`SUCCESS` is 0, `FAILURE` 1).
fn exit_status(code: ExitCode) -> std::ffi::c_int {
    (0..=u8::MAX).find(|n| ExitCode::from(*n) == code).map_or(1, std::ffi::c_int::from)
}

/// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed, as std does before
/// `main`; aborts if it cannot, as std does.
fn open_closed_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: `fds` is an array of three initialised pollfd structures that poll may write.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    for pollfd in fds {
        let closed = if polled < 0 {
            // poll itself failed (std falls back the same way): ask for each descriptor.
            // SAFETY: F_GETFD on any number only reads the descriptor table.
            let failed = unsafe { libc::fcntl(pollfd.fd, libc::F_GETFD) } == -1;
            failed && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        } else {
            pollfd.revents & libc::POLLNVAL != 0
        };
        // The lowest free descriptor is the closed one: the lower ones are open by now.
        // SAFETY: the path is a NUL-terminated string; the descriptor is deliberately kept.
        if closed && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0) } == -1 {
            std::process::abort();
        }
    }
}

/// Makes a command die quietly on a closed pipe (`qstat | head`) instead of panicking;
/// only the commands do this, never the daemons.
pub fn reset_sigpipe() {
    // SAFETY: setting a signal disposition to its default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Parses a command's arguments the way every q-command starts: SIGPIPE reset, OpenPBS's
/// usage text and `status` on a bad command line, `--version` answered. `version` reads the
/// parsed `--version` flag. `Err` carries the exit status to return at once.
pub fn start<T: clap::Parser>(usage: &str, status: u8, version: impl Fn(&T) -> bool) -> Result<T, ExitCode> {
    reset_sigpipe();
    let args = match T::try_parse() {
        Ok(args) => args,
        Err(_) => {
            eprint!("{usage}");
            return Err(ExitCode::from(status));
        }
    };
    if version(&args) {
        print_version();
        return Err(ExitCode::SUCCESS);
    }
    Ok(args)
}

/// Reads the command line the way every q-command that scans it with getopt starts:
/// SIGPIPE reset, `--version` alone answered, then `parse(prog, arguments)`, `prog` being
/// the program as invoked (else `name`). A command line `parse` refuses has its text
/// printed on stderr. `Err` carries the exit status to return at once: success after
/// `--version`, `status` after a refusal.
pub fn parse_command_line<T>(
    name: &str,
    status: u8,
    parse: impl FnOnce(&str, &[String]) -> Result<T, String>,
) -> Result<T, ExitCode> {
    reset_sigpipe();
    let argv = argv();
    if version_only(&argv) {
        print_version();
        return Err(ExitCode::SUCCESS);
    }
    let prog = argv.first().map(String::as_str).unwrap_or(name);
    parse(prog, argv.get(1..).unwrap_or_default()).map_err(|text| {
        eprint!("{text}");
        ExitCode::from(status)
    })
}

/// Why [`try_connect`] failed. Some OpenPBS commands word a connection failure their own
/// way (`pbsnodes: cannot connect to server h, error=111`, `qrun: could not connect to
/// server h (111)`), so they get the parts instead of [`connect`]'s message.
#[derive(Debug)]
pub enum ConnectFailure {
    /// pbs.conf could not be read or parsed.
    Conf(anyhow::Error),
    /// Nobody answered: the server's name and the socket's errno.
    NoServer {
        /// The server as the user knows it (`PBS_SERVER`, else this host).
        server: String,
        /// The OS error number.
        errno: i32,
    },
    /// The server answered but refused (or broke) the connection.
    Client(ClientError),
}

impl ConnectFailure {
    /// The line `cmd` prints for this failure: `<cmd>: <error>`, except for a server nobody
    /// answered, which each command words its own way: `no_server(server, errno)` gives
    /// the text after `<cmd>: `.
    pub fn line(&self, cmd: &str, no_server: impl FnOnce(&str, i32) -> String) -> String {
        match self {
            ConnectFailure::Conf(e) => format!("{cmd}: {e:#}"),
            ConnectFailure::NoServer { server, errno } => format!("{cmd}: {}", no_server(server, *errno)),
            ConnectFailure::Client(e) => format!("{cmd}: {e}"),
        }
    }
}

/// Loads pbs.conf and connects to its server, leaving the wording of a failure to the
/// caller. Returns the configuration too, for commands that print the server's name.
pub fn try_connect() -> Result<(PbsConf, Client), ConnectFailure> {
    let conf = load_conf().map_err(ConnectFailure::Conf)?;
    match Client::connect(&conf) {
        Ok(client) => Ok((conf, client)),
        Err(ClientError::Connect { errno, .. }) => Err(ConnectFailure::NoServer { server: server_name(&conf), errno }),
        // OpenPBS prints why MUNGE failed, then that the server could not be reached.
        Err(ClientError::Auth(why)) => {
            eprintln!("{why}");
            Err(ConnectFailure::NoServer { server: server_name(&conf), errno: pbs_core::Pbse::SYSTEM.0 as i32 })
        }
        Err(e) => Err(ConnectFailure::Client(e)),
    }
}

/// The server's name as OpenPBS's `pbs_default()` gives it: `PBS_SERVER`, else this host.
pub fn server_name(conf: &PbsConf) -> String {
    conf.server.clone().unwrap_or_else(local_host_name)
}

/// Seconds since the epoch now (0 if the clock is before 1970).
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Whether the command line is exactly `--version`, which every OpenPBS command answers
/// (`PRINT_VERSION_AND_EXIT`) before looking at anything else.
pub fn version_only(argv: &[String]) -> bool {
    argv.len() == 2 && argv[1] == "--version"
}

/// Prints `pbs_version = X`, the answer to `--version`.
pub fn print_version() {
    println!("pbs_version = {}", env!("CARGO_PKG_VERSION"));
}

/// The command line as strings (arguments that are not UTF-8 are converted lossily, as
/// the server could not use them anyway).
pub fn argv() -> Vec<String> {
    std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_read_as_openpbs_reads_them() {
        assert_eq!(parse_destination("workq"), Some(("workq", None)));
        assert_eq!(parse_destination("workq@vm"), Some(("workq", Some("vm"))));
        assert_eq!(parse_destination("@vm"), Some(("", Some("vm"))));
        for bad in ["", "workq@", "-q", "a@b@c", "wo rk"] {
            assert_eq!(parse_destination(bad), None, "{bad}");
        }
    }

    #[test]
    fn ids_are_completed() {
        assert_eq!(full_job_id("12", "srv").as_deref(), Some("12.srv"));
        assert_eq!(full_job_id("12[].other", "srv").as_deref(), Some("12[].other"));
        assert_eq!(full_job_id("abc", "srv"), None);
    }

    #[test]
    fn exit_codes_map_back_to_their_numbers() {
        assert_eq!(exit_status(ExitCode::SUCCESS), 0);
        assert_eq!(exit_status(ExitCode::FAILURE), 1);
        assert_eq!(exit_status(exit_code(15001)), 153);
        assert_eq!(exit_status(ExitCode::from(255)), 255);
    }

    #[test]
    fn connection_failures_are_worded_per_command() {
        let no_server = ConnectFailure::NoServer { server: "h".into(), errno: 111 };
        assert_eq!(
            no_server.line("qrun", |s, e| format!("could not connect to server {s} ({e})")),
            "qrun: could not connect to server h (111)"
        );
        let refused = ConnectFailure::Client(ClientError::Refused {
            code: pbs_core::Pbse::PERM,
            message: "Unauthorized Request".into(),
        });
        assert_eq!(refused.line("qsig", |_, _| String::new()), "qsig: Unauthorized Request");
        let conf = ConnectFailure::Conf(anyhow::anyhow!("cannot read /x: denied"));
        assert_eq!(conf.line("qdel", |_, _| String::new()), "qdel: cannot read /x: denied");
        assert_eq!(job_error_line("qdel", "Unknown Job Id", "1.h"), "qdel: Unknown Job Id 1.h");
    }
}
