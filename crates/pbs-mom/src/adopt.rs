//! Which running processes a restarted mom may adopt as its shepherds: only those that
//! prove they hold the job's secret, never one whose command line merely looks right.
//!
//! The mom makes a random secret for each run of a job, keeps it in the job's records file
//! (root-only, in a root-only directory) and gives it to the shepherd it starts in the
//! shepherd's environment ([`SECRET_ENV`]), the only one the shepherd has. A process's
//! environment can be read through `/proc/<pid>/environ` only by its owner's peers with
//! ptrace rights: for a shepherd, root. Any user can run a process whose command line is
//! `pbs_mom --shepherd <records>` (or whose pid is one the records name, once the real
//! shepherd's pid is reused), but not one whose environment holds a secret it cannot read.
//! The job never sees the secret: it is exec'd with an environment built from scratch,
//! and between fork and exec it runs as its owner, whom the kernel then denies
//! `/proc/<pid>/environ` (a change of uid makes the process non-dumpable).

use std::io::Read;

/// The shepherd's environment variable holding its job's secret.
pub const SECRET_ENV: &str = "PBS_SHEPHERD_SECRET";

/// A shepherd's environment is this one variable; a larger environment is not a shepherd's.
const ENVIRON_MAX: u64 = 16 * 1024;

/// A new secret: 32 random bytes, hex. No weaker fallback: without it no job starts.
pub use pbs_proto::auth::new_secret;

/// Whether process `pid` is alive and holds `secret` in its environment. An empty secret
/// (a records file written before secrets existed) proves nothing.
pub fn holds_secret(pid: i32, secret: &str) -> bool {
    if pid <= 0 || secret.is_empty() {
        return false;
    }
    let Ok(file) = std::fs::File::open(format!("/proc/{pid}/environ")) else { return false };
    let mut environ = Vec::new();
    if file.take(ENVIRON_MAX + 1).read_to_end(&mut environ).is_err() || environ.len() as u64 > ENVIRON_MAX {
        return false;
    }
    let want = format!("{SECRET_ENV}={secret}");
    environ.split(|b| *b == 0).any(|entry| same(entry, want.as_bytes()))
}

/// The one of `candidates` (processes whose command line names the job's records) that
/// proves it is the job's shepherd; the others are logged and left alone.
pub fn proven(job_id: &str, candidates: &[i32], secret: &str) -> Option<i32> {
    let mut found = None;
    for pid in candidates {
        if found.is_none() && holds_secret(*pid, secret) {
            found = Some(*pid);
        } else {
            tracing::warn!(
                object_type = "Job",
                object_name = job_id,
                "process {pid} is not the job's shepherd (it cannot prove it): not adopted"
            );
        }
    }
    found
}

/// Equality whose time does not depend on where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_process_with_the_secret_proves_itself() {
        let secret = new_secret().unwrap();
        assert_eq!(secret.len(), 64);
        assert_ne!(secret, new_secret().unwrap());
        let mut child =
            std::process::Command::new("sleep").arg("30").env_clear().env(SECRET_ENV, &secret).spawn().unwrap();
        let pid = child.id() as i32;
        assert!(holds_secret(pid, &secret));
        assert!(!holds_secret(pid, &new_secret().unwrap()));
        assert!(!holds_secret(pid, &secret[..63]));
        assert!(!holds_secret(pid, ""));
        // This process has no secret at all.
        assert!(!holds_secret(std::process::id() as i32, &secret));
        assert_eq!(proven("1.s", &[std::process::id() as i32, pid], &secret), Some(pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!holds_secret(pid, &secret));
    }
}
