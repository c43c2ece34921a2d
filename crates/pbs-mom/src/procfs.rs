//! What the mom reads from `/proc`: the processes of job sessions (usage and signalling),
//! the host's CPUs and memory, and which shepherds are alive.

use std::collections::{HashMap, HashSet};
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
    let wanted: HashSet<i64> = sids.iter().copied().filter(|sid| *sid > 1).collect();
    let mut out: HashMap<i64, usize> = HashMap::new();
    if wanted.is_empty() {
        return out;
    }
    for stat in all_processes() {
        if stat.state != 'Z' && wanted.contains(&stat.session) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(stat.pid, signal);
            }
            *out.entry(stat.session).or_default() += 1;
        }
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
mod tests {
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
}
