//! What the mom reads from `/proc`: the processes of job sessions (usage and signalling),
//! the host's CPUs and memory, and which shepherds are alive.

use std::collections::HashMap;
use std::path::Path;

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id.
    pub pid: i32,
    /// State letter (`R`, `S`, `T`, `Z`...).
    pub state: char,
    /// Parent pid.
    pub ppid: i32,
    /// Session id.
    pub session: i64,
    /// User + system CPU time, clock ticks.
    pub cpu_ticks: u64,
    /// CPU time of reaped children, clock ticks.
    pub child_ticks: u64,
    /// Virtual size, bytes.
    pub vsize: u64,
    /// Resident set, pages.
    pub rss_pages: u64,
}

/// Parses the text of `/proc/<pid>/stat`. The command name may hold spaces and `)`, so
/// fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let (head, tail) = text.rsplit_once(')')?;
    let pid = head.split_once('(')?.0.trim().parse().ok()?;
    let fields: Vec<&str> = tail.split_whitespace().collect();
    // fields[0] is field 3 (state) of proc(5).
    let field = |n: usize| -> Option<&str> { fields.get(n - 3).copied() };
    let num = |n: usize| -> Option<u64> { field(n)?.parse().ok() };
    let signed = |n: usize| -> Option<i64> { field(n)?.parse().ok() };
    Some(ProcStat {
        pid,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        session: signed(6)?,
        cpu_ticks: num(14)? + num(15)?,
        child_ticks: signed(16)?.max(0) as u64 + signed(17)?.max(0) as u64,
        vsize: num(23)?,
        rss_pages: signed(24)?.max(0) as u64,
    })
}

/// Every process whose stat can be read.
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Some(stat) = read_stat(name) {
            out.push(stat);
        }
    }
    out
}

fn read_stat(pid: &str) -> Option<ProcStat> {
    let text = std::fs::read_to_string(Path::new("/proc").join(pid).join("stat")).ok()?;
    parse_stat(&text)
}

/// One process's stat, if it exists.
pub fn process(pid: i32) -> Option<ProcStat> {
    read_stat(&pid.to_string())
}

/// The live (non-zombie) processes of the given sessions, grouped by session.
pub fn sessions(sids: &[i64]) -> HashMap<i64, Vec<ProcStat>> {
    let mut out: HashMap<i64, Vec<ProcStat>> = sids.iter().map(|s| (*s, Vec::new())).collect();
    for stat in all_processes() {
        if let Some(list) = out.get_mut(&stat.session) {
            list.push(stat);
        }
    }
    out
}

/// Sends `signal` to every process of session `sid`; returns how many were signalled.
/// Walking `/proc` rather than `kill(-sid)` also reaches processes that moved to another
/// process group inside the session.
pub fn signal_session(sid: i64, signal: i32) -> usize {
    signal_sessions(&[sid], signal).values().sum()
}

/// Sends `signal` to every live process of each session of `sids`, found in one pass over
/// `/proc` however many sessions there are (a pass reads every process's stat, so one
/// per session would cost a mom signalling many jobs that many passes); how many were
/// signalled in each session. As OpenPBS's `kill_session`, the whole session, whatever
/// process group its processes are in; a process that left it with setsid is not the
/// job's any more.
pub fn signal_sessions(sids: &[i64], signal: i32) -> HashMap<i64, usize> {
    let wanted: HashMap<i64, Vec<i32>> = sids.iter().map(|sid| (*sid, vec![signal])).collect();
    signal_sessions_in_order(&wanted)
}

/// [`signal_sessions`] with signals of its own for each session, sent to each of its
/// processes in their order (SIGTERM then SIGCONT, so a stopped job sees the SIGTERM).
pub fn signal_sessions_in_order(wanted: &HashMap<i64, Vec<i32>>) -> HashMap<i64, usize> {
    let mut out: HashMap<i64, usize> = HashMap::new();
    // Session 0 and 1 are the kernel's and init's: never a job's.
    if !wanted.keys().any(|sid| *sid > 1) {
        return out;
    }
    for stat in all_processes() {
        if stat.state == 'Z' || stat.session <= 1 {
            continue;
        }
        let Some(signals) = wanted.get(&stat.session) else { continue };
        for signal in signals {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(stat.pid, *signal);
            }
        }
        *out.entry(stat.session).or_default() += 1;
    }
    out
}

/// Whether `pid` is alive (a zombie is not: nobody may reap an orphaned shepherd).
pub fn alive(pid: i32) -> bool {
    pid > 0 && process(pid).is_some_and(|p| p.state != 'Z')
}

/// Processes whose command line is a shepherd's (`pbs_mom --shepherd <file>`), by the
/// records file they name. Anyone can run such a process: see [`crate::adopt`] for which
/// of them are shepherds.
pub fn shepherds() -> HashMap<String, Vec<i32>> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return out };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let mut args = cmdline.split(|b| *b == 0);
        let _argv0 = args.next();
        if args.next() == Some(b"--shepherd".as_slice())
            && let Some(records) = args.next().and_then(|d| std::str::from_utf8(d).ok())
            && alive(pid)
        {
            out.entry(records.to_string()).or_default().push(pid);
        }
    }
    out
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

/// Page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

/// CPUs of the host: the ones this process may use, else `/proc/cpuinfo`'s processors.
pub fn host_ncpus() -> u32 {
    if let Ok(n) = std::thread::available_parallelism() {
        return u32::try_from(n.get()).unwrap_or(u32::MAX);
    }
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let count = text.lines().filter(|l| l.starts_with("processor")).count();
    u32::try_from(count.max(1)).unwrap_or(1)
}

/// Physical memory of the host in kilobytes (`MemTotal` of `/proc/meminfo`).
pub fn host_mem_kb() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    parse_meminfo_total(&text).unwrap_or(0)
}

/// `MemTotal:  16318520 kB` -> 16318520.
pub fn parse_meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::process::Stdio;

    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_paren() {
        let text = "4242 (odd ) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 11 2 20 0 1 0 500 \
                    10485760 300 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let stat = parse_stat(text).unwrap();
        assert_eq!(stat.pid, 4242);
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 1);
        assert_eq!(stat.session, 4242);
        assert_eq!(stat.cpu_ticks, 10);
        assert_eq!(stat.child_ticks, 13);
        assert_eq!(stat.vsize, 10_485_760);
        assert_eq!(stat.rss_pages, 300);
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn own_process_and_host_facts_are_readable() {
        let me = process(std::process::id() as i32).unwrap();
        assert!(me.rss_pages > 0);
        assert!(host_ncpus() >= 1);
        assert!(host_mem_kb() > 0);
        assert_eq!(parse_meminfo_total("MemFree: 1 kB\nMemTotal:  2048 kB\n"), Some(2048));
    }

    /// A `sleep` in a session of its own, as a job's session leader is; killed and reaped
    /// when dropped, so a failing test leaves no stopped process holding its output open.
    pub(crate) struct Sleeper(pub(crate) std::process::Child);

    impl Sleeper {
        pub(crate) fn start() -> Sleeper {
            use std::os::unix::process::CommandExt;
            let mut command = std::process::Command::new("sleep");
            command.arg("30").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
            unsafe {
                command.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
            }
            Sleeper(command.spawn().unwrap())
        }

        pub(crate) fn sid(&self) -> i64 {
            i64::from(self.0.id())
        }
    }

    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn state_of(pid: u32) -> char {
        process(pid as i32).map_or('?', |p| p.state)
    }

    #[test]
    fn one_pass_sends_each_session_its_own_signals_in_order() {
        let (mut ended, stopped, resumed, other) =
            (Sleeper::start(), Sleeper::start(), Sleeper::start(), Sleeper::start());
        let wanted = HashMap::from([
            (ended.sid(), vec![libc::SIGTERM]),
            (stopped.sid(), vec![libc::SIGCONT, libc::SIGSTOP]),
            (resumed.sid(), vec![libc::SIGSTOP, libc::SIGCONT]),
        ]);
        let counts = signal_sessions_in_order(&wanted);
        assert_eq!(counts.get(&ended.sid()), Some(&1));
        assert_eq!(counts.get(&stopped.sid()), Some(&1));
        assert_eq!(counts.get(&resumed.sid()), Some(&1));
        assert_eq!(counts.get(&other.sid()), None);
        let status = ended.0.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGTERM));
        // A stop is seen once the kernel has delivered it: wait for it, a bounded time.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while state_of(stopped.0.id()) != 'T' && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(state_of(stopped.0.id()), 'T', "the last signal, SIGSTOP, stops it");
        assert!(matches!(state_of(resumed.0.id()), 'S' | 'R'), "the last signal, SIGCONT, leaves it running");
        assert!(matches!(state_of(other.0.id()), 'S' | 'R'), "a session not asked for is not signalled");
    }
}
