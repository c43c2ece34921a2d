//! The site's checkpoint script, as OpenPBS's mom runs it for a checkpoint that ends the
//! job (preemption's `C`): the `$action checkpoint_abort <timeout> !<script> [args]` line
//! of `mom_priv/config`, its arguments (`%jobid`, `%sid`, `%taskid`, `%uid`, `%gid`,
//! `%login`, `%owner`, `%globid`, `%auxid`, `%path`), its checks (owned by root, a group
//! of at most 10, executable by its owner, not writable by others) and its time limit.
//! The script runs as root, without standard streams, and says by its exit status whether
//! the job is checkpointed; the mom then kills the job, whose end requeues it.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pbs_core::Pbse;

/// The `$action checkpoint_abort` line of a mom's config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// Seconds the script may run; 0: no limit (OpenPBS's `alarm(0)`).
    pub timeout: u64,
    /// The script; a relative name is under `mom_priv`.
    pub script: PathBuf,
    /// Its arguments, `%name` ones replaced when it runs.
    pub args: Vec<String>,
}

/// What a script's arguments may name of the job.
#[derive(Clone, Debug)]
pub struct JobFacts {
    /// Full id.
    pub job_id: String,
    /// The job's session.
    pub session_id: i64,
    /// The owner's uid and gid, when known.
    pub uid: Option<u32>,
    /// The owner's group's gid, when known.
    pub gid: Option<u32>,
    /// `euser`.
    pub login: String,
    /// `Job_Owner` as the mom knows it.
    pub owner: String,
    /// `Job_Name`.
    pub job_name: String,
    /// The queue.
    pub queue: String,
}

/// Reads the `$action checkpoint_abort` line of `mom_priv/config` (the last one wins);
/// `None` when there is none, or it is not a script (OpenPBS's other verb, `requeue`, is
/// not a checkpoint). `priv_dir` resolves a relative script name.
pub fn configured(config: &str, priv_dir: &Path) -> Option<Action> {
    let mut found = None;
    for line in config.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("$action") || words.next() != Some("checkpoint_abort") {
            continue;
        }
        let Some(timeout) = words.next().filter(|t| t.starts_with(|c: char| c.is_ascii_digit())) else { continue };
        let timeout = timeout
            .bytes()
            .take_while(u8::is_ascii_digit)
            .fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0')));
        let Some(script) = words.next().and_then(|s| s.strip_prefix('!')).filter(|s| !s.is_empty()) else {
            found = None;
            continue;
        };
        let script = if Path::new(script).is_absolute() { PathBuf::from(script) } else { priv_dir.join(script) };
        found = Some(Action { timeout, script, args: words.map(str::to_string).collect() });
    }
    found
}

/// Why a checkpoint failed: the PBSE code the mom answers, and what her log says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    /// PBSE_NOSUP without a script, else PBSE_CKPSHORT (OpenPBS's `post_chkpt`).
    pub code: Pbse,
    /// The log line.
    pub message: String,
}

/// Runs `action` for a job and waits for it (at most its timeout, then it is killed);
/// `checkpoint_dir` is the job's `checkpoint/<id>.CK`, made first, whose task file is
/// `%path`. `Ok` with the log lines when the script exited 0.
pub fn run(action: &Action, job: &JobFacts, checkpoint_dir: &Path) -> Result<Vec<String>, Failed> {
    let ckpshort = |message: String| Failed { code: Pbse::CKPSHORT, message };
    let name = "checkpoint_abort";
    let script = action.script.display();
    let meta = std::fs::metadata(&action.script)
        .map_err(|_| ckpshort(format!("action {name} script {script} does not exist")))?;
    if meta.uid() != 0 || meta.gid() > 10 || meta.mode() & 0o100 == 0 || meta.mode() & 0o002 != 0 {
        return Err(ckpshort(format!("action {name} script {script} cannot be executed due to permissions")));
    }
    let _ = std::fs::remove_dir_all(checkpoint_dir);
    std::fs::create_dir_all(checkpoint_dir).map_err(|e| ckpshort(format!("checkpoint failed: {e}")))?;
    // OpenPBS's task file name: the task's number in eight hex digits.
    let task_path = checkpoint_dir.join("00000001");
    let mut args = Vec::with_capacity(action.args.len());
    for arg in &action.args {
        let value = match arg.strip_prefix('%') {
            None => arg.clone(),
            Some("jobid") => job.job_id.clone(),
            Some("sid") => job.session_id.to_string(),
            Some("taskid") => "1".to_string(),
            Some("uid") => job.uid.unwrap_or(0).to_string(),
            Some("gid") => job.gid.unwrap_or(0).to_string(),
            Some("login") => job.login.clone(),
            Some("owner") => job.owner.clone(),
            Some("globid") | Some("auxid") => "NULL".to_string(),
            Some("path") => task_path.display().to_string(),
            Some(_) => {
                return Err(ckpshort(format!(
                    "action {name} script {script} cannot be run due to unknown parameter {arg}"
                )));
            }
        };
        args.push(value);
    }
    let mut child = Command::new(&action.script)
        .args(&args)
        .env_clear()
        .env("PATH", "/bin:/usr/bin")
        .env("PBS_JOBID", &job.job_id)
        .env("PBS_JOBNAME", &job.job_name)
        .env("PBS_QUEUE", &job.queue)
        .env("PBS_SID", job.session_id.to_string())
        .env("PBS_TASKNUM", "1")
        .env("PBS_NODENUM", "0")
        .env("UID", job.uid.unwrap_or(0).to_string())
        .env("GID", job.gid.unwrap_or(0).to_string())
        .env("LOGNAME", &job.login)
        .env("USER", &job.login)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| ckpshort(format!("action script {script} cannot be run due to fork failure {e}")))?;
    let limit = (action.timeout > 0).then(|| Instant::now() + Duration::from_secs(action.timeout));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if limit.is_some_and(|l| Instant::now() >= l) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    let said = match status.map(|s| (s.code(), s.signal())) {
        Some((Some(code), _)) => format!("{name} script {script}: exit code {code}"),
        Some((None, Some(signal))) => format!("{name} script {script}: got signal {signal}"),
        _ => format!("{name} script {script}: exited abnormally"),
    };
    if status.is_some_and(|s| s.success()) {
        Ok(vec![said, format!("checkpointed to {}", checkpoint_dir.display())])
    } else {
        let _ = std::fs::remove_dir_all(checkpoint_dir);
        Err(ckpshort(said))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_line_reads_as_openpbs_reads_it() {
        let priv_dir = Path::new("/var/spool/pbs/mom_priv");
        let config = "$clienthost server\n$action checkpoint_abort 30 !/usr/local/bin/ck %jobid %sid %path\n";
        let action = configured(config, priv_dir).unwrap();
        assert_eq!(action.timeout, 30);
        assert_eq!(action.script, PathBuf::from("/usr/local/bin/ck"));
        assert_eq!(action.args, vec!["%jobid", "%sid", "%path"]);
        let relative = configured("$action checkpoint_abort 5 !ck.sh\n", priv_dir).unwrap();
        assert_eq!(relative.script, priv_dir.join("ck.sh"));
        for none in [
            "",
            "$action checkpoint 30 !/bin/ck\n",
            "$action checkpoint_abort 30 requeue\n",
            "$action checkpoint_abort x !/bin/ck\n",
            "$action checkpoint_abort 30\n",
            "#$action checkpoint_abort 30 !/bin/ck\n",
        ] {
            assert_eq!(configured(none, priv_dir), None, "{none}");
        }
    }

    #[test]
    fn a_missing_script_or_an_unknown_parameter_fails_the_checkpoint() {
        let dir = std::env::temp_dir().join(format!("ckpt-test-{}", std::process::id()));
        let job = JobFacts {
            job_id: "1.s".into(),
            session_id: 1,
            uid: None,
            gid: None,
            login: "u".into(),
            owner: "u@h".into(),
            job_name: "j".into(),
            queue: "workq".into(),
        };
        let missing = Action { timeout: 1, script: dir.join("nothing"), args: Vec::new() };
        let failed = run(&missing, &job, &dir.join("1.s.CK")).unwrap_err();
        assert_eq!(failed.code, Pbse::CKPSHORT);
        assert!(failed.message.contains("does not exist"), "{}", failed.message);
        let shell = Action { timeout: 1, script: PathBuf::from("/bin/sh"), args: vec!["%nonsense".into()] };
        let failed = run(&shell, &job, &dir.join("1.s.CK")).unwrap_err();
        assert!(failed.message.contains("unknown parameter %nonsense"), "{}", failed.message);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
