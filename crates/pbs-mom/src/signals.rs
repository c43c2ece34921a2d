//! Signal names as qsig and the server give them: `TERM`, `SIGTERM`, `term`, numbers, and
//! OpenPBS's `suspend` / `resume`.

/// What a SignalJob asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobSignal {
    /// SIGSTOP to every process of the session, and the walltime clock stops.
    Suspend,
    /// SIGCONT to every process of the session, and the walltime clock runs again.
    Resume,
    /// Any other signal, by number.
    Raw(i32),
}

const NAMES: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("IOT", libc::SIGIOT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("STKFLT", libc::SIGSTKFLT),
    ("CHLD", libc::SIGCHLD),
    ("CLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    ("POLL", libc::SIGPOLL),
    ("PWR", libc::SIGPWR),
    ("SYS", libc::SIGSYS),
];

/// Parses a signal as the server relays it; `None` for an unknown name or number.
pub fn parse(text: &str) -> Option<JobSignal> {
    let text = text.trim();
    match text.to_ascii_lowercase().as_str() {
        "suspend" => return Some(JobSignal::Suspend),
        "resume" => return Some(JobSignal::Resume),
        _ => {}
    }
    if let Ok(number) = text.parse::<i32>() {
        return (1..=libc::SIGRTMAX()).contains(&number).then_some(JobSignal::Raw(number));
    }
    let upper = text.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    NAMES.iter().find(|(name, _)| *name == bare).map(|(_, number)| JobSignal::Raw(*number))
}

/// The number a [`JobSignal`] is delivered as.
pub fn number(signal: JobSignal) -> i32 {
    match signal {
        JobSignal::Suspend => libc::SIGSTOP,
        JobSignal::Resume => libc::SIGCONT,
        JobSignal::Raw(n) => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_pbs_words() {
        assert_eq!(parse("TERM"), Some(JobSignal::Raw(libc::SIGTERM)));
        assert_eq!(parse("SIGKILL"), Some(JobSignal::Raw(libc::SIGKILL)));
        assert_eq!(parse("sigusr1"), Some(JobSignal::Raw(libc::SIGUSR1)));
        assert_eq!(parse("9"), Some(JobSignal::Raw(9)));
        assert_eq!(parse("suspend"), Some(JobSignal::Suspend));
        assert_eq!(parse("resume"), Some(JobSignal::Resume));
        assert_eq!(parse("NOPE"), None);
        assert_eq!(parse("0"), None);
        assert_eq!(parse("999"), None);
        assert_eq!(parse(""), None);
        assert_eq!(number(JobSignal::Suspend), libc::SIGSTOP);
    }
}
