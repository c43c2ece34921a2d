//! File staging as the job's owner (`-W stagein`, `-W stageout`): the shepherd copies
//! each file of the list with `cp` when its host is this one, else with `scp` (pbs.conf's
//! `PBS_SCP`, else `PBS_RCP`, else `/usr/bin/scp`), run as the owner with the owner's
//! groups, in the owner's home: every path is resolved with the owner's rights, never
//! root's, so no link planted by a user makes root read or write what the user may not.
//!
//! A stage-out that fails moves the local file into `PBS_HOME/undelivered` (world-writable
//! and sticky), again as the owner, as OpenPBS's mom leaves it there.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::unistd::{Gid, Uid};
use pbs_core::stage::StageFile;

/// Where the copies run and with which program.
#[derive(Clone, Debug)]
pub struct Stager<'a> {
    /// The owner's name, uid, gid and home.
    pub user: &'a str,
    /// Its uid.
    pub uid: Uid,
    /// Its gid.
    pub gid: Gid,
    /// Its home on this host, where relative local paths start.
    pub home: &'a Path,
    /// The names this host goes by: a file on one of them is copied with `cp`.
    pub own_hosts: &'a [String],
    /// The remote copy program.
    pub scp: &'a Path,
}

/// The remote copy program OpenPBS's mom would use: `PBS_SCP`, else `PBS_RCP`.
pub fn remote_copy(conf: &std::collections::BTreeMap<String, String>) -> PathBuf {
    ["PBS_SCP", "PBS_RCP"]
        .iter()
        .find_map(|key| conf.get(*key).filter(|v| !v.trim().is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/scp"))
}

impl Stager<'_> {
    /// Copies every file of `list` from its host to this one; the first failure stops the
    /// rest and says why.
    pub fn stage_in(&self, list: &str) -> Result<(), String> {
        let files = pbs_core::stage::parse(list).ok_or_else(|| format!("bad stagein list {list:?}"))?;
        for file in &files {
            self.copy(&self.remote_spec(file), &file.local, self.is_local(&file.host)).map_err(|why| {
                format!("Unable to copy file {} from {}:{}: {why}", file.local, file.host, file.remote)
            })?;
        }
        Ok(())
    }

    /// Copies every file of `list` from this host to its own; each that fails is moved
    /// into `undelivered`. Returns what failed, one line a file.
    pub fn stage_out(&self, list: &str, undelivered: &Path) -> Result<(), String> {
        let files = pbs_core::stage::parse(list).ok_or_else(|| format!("bad stageout list {list:?}"))?;
        let mut failures = Vec::new();
        for file in &files {
            if let Err(why) = self.copy(&file.local, &self.remote_spec(file), self.is_local(&file.host)) {
                let kept = match self.keep(&file.local, undelivered) {
                    Ok(path) => format!("Output retained on that host in: {}", path.display()),
                    Err(err) => format!("and it could not be kept in {}: {err}", undelivered.display()),
                };
                failures.push(format!(
                    "Unable to copy file {} to {}:{}: {why}\n{kept}",
                    file.local, file.host, file.remote
                ));
            }
        }
        if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
    }

    /// The other end as the copy program takes it: a plain path on this host, else
    /// `host:path`.
    fn remote_spec(&self, file: &StageFile) -> String {
        if self.is_local(&file.host) { file.remote.clone() } else { format!("{}:{}", file.host, file.remote) }
    }

    fn is_local(&self, host: &str) -> bool {
        let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
        host == "localhost" || self.own_hosts.iter().any(|own| short(own) == short(host))
    }

    /// Runs one copy as the owner, `local`ly with `cp` or with the remote copy program;
    /// `Err` carries what the program said.
    fn copy(&self, from: &str, to: &str, local: bool) -> Result<(), String> {
        let mut command = if local {
            let mut c = Command::new("/bin/cp");
            c.args(["-r", "--", from, to]);
            c
        } else {
            let mut c = Command::new(self.scp);
            c.args(["-B", "-r", "-p", "--", from, to]);
            c
        };
        self.run_as_owner(&mut command)
    }

    /// Moves `local` into `undelivered` as the owner; gives where it went.
    fn keep(&self, local: &str, undelivered: &Path) -> Result<PathBuf, String> {
        let name = Path::new(local).file_name().ok_or_else(|| format!("{local} names no file"))?;
        let target = undelivered.join(name);
        let mut command = Command::new("/bin/mv");
        command.arg("--").arg(local).arg(&target);
        self.run_as_owner(&mut command)?;
        Ok(target)
    }

    fn run_as_owner(&self, command: &mut Command) -> Result<(), String> {
        let groups = owner_groups(self.user, self.gid);
        let (uid, gid) = (self.uid.as_raw(), self.gid.as_raw());
        let as_root = nix::unistd::geteuid().is_root();
        // A user without a home here (nobody's is /nonexistent) copies from `/`.
        let cwd = if self.home.is_dir() { self.home } else { Path::new("/") };
        command
            .current_dir(cwd)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.home)
            .env("USER", self.user)
            .env("LOGNAME", self.user)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if as_root {
            // SAFETY: only async-signal-safe system calls between fork and exec; the groups
            // were looked up before the fork.
            unsafe {
                command.pre_exec(move || {
                    if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let output = command.output().map_err(|e| format!("cannot run the copy: {e}"))?;
        if output.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        let said: String = said.trim().chars().take(1024).map(|c| if c.is_control() { ' ' } else { c }).collect();
        Err(if said.is_empty() { format!("{}", output.status) } else { said })
    }
}

/// The owner's groups (their primary one first), looked up before any fork.
fn owner_groups(user: &str, gid: Gid) -> Vec<libc::gid_t> {
    let Ok(name) = std::ffi::CString::new(user) else { return vec![gid.as_raw()] };
    match nix::unistd::getgrouplist(&name, gid) {
        Ok(groups) => groups.into_iter().map(Gid::as_raw).collect(),
        Err(_) => vec![gid.as_raw()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stager<'a>(home: &'a Path, own: &'a [String]) -> Stager<'a> {
        Stager {
            user: "nobody",
            uid: nix::unistd::geteuid(),
            gid: nix::unistd::getegid(),
            home,
            own_hosts: own,
            scp: Path::new("/nonexistent/scp"),
        }
    }

    #[test]
    fn this_hosts_names_copy_with_cp_and_others_with_scp() {
        let own = vec!["node1.example".to_string(), "n1".to_string()];
        let home = Path::new("/");
        let s = stager(home, &own);
        let file = |host: &str| StageFile { local: "a".into(), host: host.into(), remote: "/r".into() };
        assert_eq!(s.remote_spec(&file("node1")), "/r");
        assert_eq!(s.remote_spec(&file("n1")), "/r");
        assert_eq!(s.remote_spec(&file("localhost")), "/r");
        assert_eq!(s.remote_spec(&file("login2")), "login2:/r");
    }

    #[test]
    fn a_failed_stage_out_keeps_the_file_in_undelivered_and_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let undelivered = dir.path().join("undelivered");
        std::fs::create_dir(&undelivered).unwrap();
        std::fs::write(dir.path().join("out.dat"), "result").unwrap();
        let own = vec!["here".to_string()];
        let s = stager(dir.path(), &own);
        s.stage_in(&format!("in.dat@here:{}", dir.path().join("out.dat").display())).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("in.dat")).unwrap(), "result");
        let err = s.stage_out("out.dat@here:/nonexistent/dir/out.dat", &undelivered).unwrap_err();
        assert!(err.starts_with("Unable to copy file out.dat to here:/nonexistent/dir/out.dat: "), "{err}");
        assert!(
            err.ends_with(&format!("Output retained on that host in: {}", undelivered.join("out.dat").display())),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(undelivered.join("out.dat")).unwrap(), "result");
        assert!(!dir.path().join("out.dat").exists());
        let err = s.stage_in("x@here:/nonexistent/x").unwrap_err();
        assert!(err.starts_with("Unable to copy file x from here:/nonexistent/x: "), "{err}");
    }
}
