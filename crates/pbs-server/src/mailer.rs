//! Sends the mails of jobs' steps (`job::mail`) through the host's mailer, off the state
//! lock and after their commit: a bounded queue that drops what does not fit, at most
//! [`Limits::per_job`] mails a job and [`Limits::per_user`] a user per window, a few mailer
//! processes at once, each killed at a deadline. Nothing here is retried: a mail that
//! cannot be sent is logged and dropped, never held back from a commit.
//!
//! Mail is user input handled as root: an address is a user name or `user@host` of
//! printable characters that does not look like an option, given to the mailer as an
//! argv entry of its own (no shell), and every value put in a header or a line of the body
//! has its control characters escaped, so no job name, comment or address adds a header
//! line or a recipient. The mailer is called as OpenPBS calls it: `mailer -f from to...`,
//! with `To:` and `Subject:` headers and the body on its standard input.

use std::borrow::Cow;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::sync::{Semaphore, mpsc};

use crate::effects::Mail;

/// The mailer when the server's `mailer` is unset (OpenPBS's `SENDMAIL_CMD`).
pub const SENDMAIL: &str = "/usr/sbin/sendmail";

/// The sender when `mail_from` is unset (OpenPBS's `PBS_DEFAULT_MAIL`).
pub const DEFAULT_FROM: &str = "adm";

/// The longest address passed to the mailer.
pub const MAX_ADDRESS: usize = 256;

/// The most recipients of one mail (the rest are dropped and logged).
pub const MAX_RECIPIENTS: usize = 32;

/// How much the mailer is allowed.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Mails waiting to be sent; more are dropped.
    pub queue: usize,
    /// Mailer processes at once.
    pub concurrent: usize,
    /// How long a mailer may run before it is killed and its mail dropped.
    pub deadline: Duration,
    /// The window the counts below are kept over.
    pub window: Duration,
    /// Mails about one job per window.
    pub per_job: u32,
    /// Mails to one user's jobs per window.
    pub per_user: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            queue: 1024,
            concurrent: 4,
            deadline: Duration::from_secs(30),
            window: Duration::from_secs(60),
            per_job: 10,
            per_user: 120,
        }
    }
}

/// The sending end the server hands committed mails to.
#[derive(Clone, Debug)]
pub struct Mailer {
    tx: mpsc::Sender<Mail>,
    /// Mails dropped at the queue so far: the first and every thousandth are logged.
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

impl Mailer {
    /// Starts the task that sends mails; `mail_host` is pbs.conf's `PBS_MAIL_HOST_NAME`.
    /// Needs a tokio runtime.
    pub fn start(mail_host: Option<String>, limits: Limits) -> Mailer {
        let (tx, rx) = mpsc::channel(limits.queue.max(1));
        tokio::spawn(run(rx, mail_host, limits));
        Mailer { tx, dropped: Arc::default() }
    }

    /// A mailer that sends nothing: what it is handed waits in the receiver (tests).
    pub fn recording(queue: usize) -> (Mailer, mpsc::Receiver<Mail>) {
        let (tx, rx) = mpsc::channel(queue.max(1));
        (Mailer { tx, dropped: Arc::default() }, rx)
    }

    /// Queues committed mails; those that do not fit are dropped and logged. Never waits.
    pub fn send(&self, mails: Vec<Mail>) {
        for mail in mails {
            let why = match self.tx.try_send(mail) {
                Ok(()) => continue,
                Err(mpsc::error::TrySendError::Full(mail)) => (mail, "too many mails waiting for the mailer"),
                Err(mpsc::error::TrySendError::Closed(mail)) => (mail, "the mailer is not running"),
            };
            let dropped = self.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if dropped % 1000 == 1 {
                let job = why.0.job_id.as_str();
                tracing::warn!(
                    object_type = "Job",
                    object_name = job,
                    "mail not sent: {} ({dropped} dropped so far)",
                    why.1
                );
            }
        }
    }
}

/// The mail task: takes mails in order, counts them against the limits, and runs the
/// mailer for those admitted, at most `limits.concurrent` at once.
async fn run(mut rx: mpsc::Receiver<Mail>, mail_host: Option<String>, limits: Limits) {
    let slots = Arc::new(Semaphore::new(limits.concurrent.max(1)));
    let mut counts = Counts::new(limits);
    while let Some(mail) = rx.recv().await {
        match counts.admit(&mail.job_id, &mail.user, Instant::now()) {
            Ok(()) => {}
            // Said once per job or user and window: a flood of mails is not a flood of lines.
            Err(Some(over)) => {
                tracing::warn!(object_type = "Job", object_name = mail.job_id.as_str(), "mail not sent: {over}");
                continue;
            }
            Err(None) => continue,
        }
        let to = recipients(&mail, mail_host.as_deref());
        if to.is_empty() {
            continue;
        }
        // Waiting here fills the queue behind it, which then drops: the bound holds.
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let deadline = limits.deadline;
        tokio::spawn(async move {
            if let Err(err) = deliver(&mail, &to, deadline).await {
                tracing::warn!(object_type = "Job", object_name = mail.job_id.as_str(), "mail not sent: {err}");
            }
            drop(slot);
        });
    }
}

/// Why a mail was not admitted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Over {
    /// The job had its mails for the window.
    #[error("more than {0} mails for this job in a minute: its others this minute are dropped")]
    Job(u32),
    /// Its user had.
    #[error("more than {0} mails for user {1} in a minute: their others this minute are dropped")]
    User(u32, String),
}

/// Mails per job and per user in the current window (a fixed window, started by the first
/// mail after the last one ended; forgotten wholesale at its end, so it stays bounded by
/// what one window admits).
struct Counts {
    limits: Limits,
    since: Option<Instant>,
    jobs: HashMap<String, u32>,
    users: HashMap<String, u32>,
}

impl Counts {
    fn new(limits: Limits) -> Counts {
        Counts { limits, since: None, jobs: HashMap::new(), users: HashMap::new() }
    }

    /// Counts a mail of `job` for `user` at `now`: `Err(Some)` the first time a limit
    /// refuses one in this window (to be logged), `Err(None)` after.
    fn admit(&mut self, job: &str, user: &str, now: Instant) -> Result<(), Option<Over>> {
        if self.since.is_none_or(|since| now.duration_since(since) >= self.limits.window) {
            self.since = Some(now);
            self.jobs.clear();
            self.users.clear();
        }
        // A count one past the limit marks the refusal as said.
        let refuse = |count: &mut u32, limit: u32, over: Over| -> Result<(), Option<Over>> {
            if *count < limit {
                return Ok(());
            }
            let first = *count == limit;
            *count = limit + 1;
            Err(first.then_some(over))
        };
        let (per_job, per_user) = (self.limits.per_job, self.limits.per_user);
        refuse(self.jobs.entry(job.to_string()).or_insert(0), per_job, Over::Job(per_job))?;
        refuse(self.users.entry(user.to_string()).or_insert(0), per_user, Over::User(per_user, user.to_string()))?;
        *self.jobs.entry(job.to_string()).or_insert(0) += 1;
        *self.users.entry(user.to_string()).or_insert(0) += 1;
        Ok(())
    }
}

/// Why the mailer did not take a mail.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    /// It could not be started.
    #[error("cannot run mailer {0}: {1}")]
    Spawn(String, std::io::Error),
    /// It did not finish in time and was killed.
    #[error("mailer {0} did not finish in {1} s and was killed")]
    Deadline(String, u64),
    /// It ended with a failure.
    #[error("mailer {0} failed: {1}")]
    Failed(String, std::process::ExitStatus),
    /// Writing to it or waiting for it failed.
    #[error("mailer {0}: {1}")]
    Io(String, std::io::Error),
}

/// Runs the mailer for one mail: `mailer -f from to...`, the message on its standard
/// input, killed if it outlives `deadline`.
pub async fn deliver(mail: &Mail, to: &[String], deadline: Duration) -> Result<(), DeliverError> {
    let from = if valid_address(&mail.from) { mail.from.as_str() } else { DEFAULT_FROM };
    let mut child = tokio::process::Command::new(&mail.mailer)
        .arg("-f")
        .arg(from)
        .args(to)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| DeliverError::Spawn(mail.mailer.clone(), err))?;
    let message = message(mail, to);
    let work = async {
        if let Some(mut stdin) = child.stdin.take() {
            // A mailer that exits without reading is judged by its status, not the pipe.
            let _ = stdin.write_all(message.as_bytes()).await;
        }
        child.wait().await
    };
    match tokio::time::timeout(deadline, work).await {
        Err(_) => Err(DeliverError::Deadline(mail.mailer.clone(), deadline.as_secs())),
        Ok(Err(err)) => Err(DeliverError::Io(mail.mailer.clone(), err)),
        Ok(Ok(status)) if !status.success() => Err(DeliverError::Failed(mail.mailer.clone(), status)),
        Ok(Ok(_)) => Ok(()),
    }
}

/// The message as OpenPBS pipes it to the mailer: `To:` and `Subject:`, a blank line, the
/// body.
pub fn message(mail: &Mail, to: &[String]) -> String {
    format!("To: {}\nSubject: {}\n\n{}", to.join(" "), printable(&mail.subject), mail.body)
}

/// Whom a mail goes to, as OpenPBS's `svr_mailowner` decides: each of `Mail_Users`, with
/// `@mail_host` added where it names no host; else the owner, its host replaced by
/// `mail_host`. Addresses that are not [`valid_address`] are dropped and logged.
pub fn recipients(mail: &Mail, mail_host: Option<&str>) -> Vec<String> {
    let mut to = Vec::new();
    let mut add = |address: String| {
        if !valid_address(&address) {
            tracing::warn!(
                object_type = "Job",
                object_name = mail.job_id.as_str(),
                "mail not sent to {}: not a mail address",
                printable(&address)
            );
        } else if to.len() >= MAX_RECIPIENTS {
            tracing::warn!(
                object_type = "Job",
                object_name = mail.job_id.as_str(),
                "mail not sent to {address}: more than {MAX_RECIPIENTS} recipients"
            );
        } else if !to.contains(&address) {
            to.push(address);
        }
    };
    match mail.mail_users.as_deref() {
        Some(users) => {
            for user in users.split(',').map(str::trim).filter(|u| !u.is_empty()) {
                match mail_host {
                    Some(host) if !user.contains('@') => add(format!("{user}@{host}")),
                    _ => add(user.to_string()),
                }
            }
        }
        None => {
            let user = mail.owner.split_once('@').map_or(mail.owner.as_str(), |(user, _)| user);
            match mail_host {
                Some(host) => add(format!("{user}@{host}")),
                None => add(mail.owner.clone()),
            }
        }
    }
    to
}

/// An address the mailer may be given: `user` or `user@host`, printable ASCII without
/// spaces, commas or quotes, not starting with `-` (which a mailer would read as an
/// option), at most [`MAX_ADDRESS`] bytes.
pub fn valid_address(address: &str) -> bool {
    let plain = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b',' | b'"' | b'\'' | b'\\' | b'<' | b'>' | b'@'))
    };
    if address.len() > MAX_ADDRESS || address.starts_with('-') {
        return false;
    }
    match address.split_once('@') {
        Some((user, host)) => plain(user) && plain(host) && !host.starts_with('-'),
        None => plain(address),
    }
}

/// `text` with its control characters (newlines among them) escaped, so it stays on its
/// line of a header or body.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars().map(|c| if c.is_control() { c.escape_default().collect() } else { c.to_string() }).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(users: Option<&str>) -> Mail {
        Mail {
            job_id: "1.s".into(),
            user: "alice".into(),
            owner: "alice@login1".into(),
            mail_users: users.map(str::to_string),
            mailer: "/bin/true".into(),
            from: "adm".into(),
            subject: "PBS JOB 1.s".into(),
            body: "PBS Job Id: 1.s\n".into(),
        }
    }

    #[test]
    fn recipients_follow_openpbs_with_and_without_a_mail_host() {
        assert_eq!(recipients(&mail(None), None), ["alice@login1"]);
        assert_eq!(recipients(&mail(None), Some("mail.site")), ["alice@mail.site"]);
        assert_eq!(recipients(&mail(Some("bob,carol@x")), Some("mail.site")), ["bob@mail.site", "carol@x"]);
        assert_eq!(recipients(&mail(Some("bob, bob")), None), ["bob"]);
    }

    #[test]
    fn addresses_that_look_like_options_or_hold_spaces_are_dropped() {
        assert_eq!(recipients(&mail(Some("-oQ/tmp x,bob")), None), ["bob"]);
        assert_eq!(recipients(&mail(Some("-oQ/tmp")), None), Vec::<String>::new());
        for bad in ["", "-f", "a b", "a\nb", "a@", "@h", "a@-h", "a@b@c", "a\"b", &"x".repeat(300)] {
            assert!(!valid_address(bad), "{bad:?}");
        }
        for good in ["alice", "alice@host.example", "a.b+c@h-1"] {
            assert!(valid_address(good), "{good:?}");
        }
    }

    #[test]
    fn a_name_with_a_newline_stays_on_its_line() {
        assert_eq!(printable("x\nBcc: eve@evil"), "x\\nBcc: eve@evil");
        assert_eq!(printable("plain"), "plain");
        let mut m = mail(None);
        m.subject = "PBS JOB 1.s\r\nBcc: eve".into();
        let text = message(&m, &["alice".into()]);
        assert_eq!(text.lines().filter(|l| l.starts_with("Bcc")).count(), 0);
        assert!(text.starts_with("To: alice\nSubject: PBS JOB 1.s\\r\\nBcc: eve\n\n"));
    }

    #[test]
    fn counts_bound_mails_per_job_and_per_user_in_a_window() {
        let limits = Limits { per_job: 2, per_user: 3, window: Duration::from_secs(60), ..Limits::default() };
        let mut counts = Counts::new(limits);
        let t0 = Instant::now();
        assert!(counts.admit("1.s", "alice", t0).is_ok());
        assert!(counts.admit("1.s", "alice", t0).is_ok());
        assert_eq!(counts.admit("1.s", "alice", t0), Err(Some(Over::Job(2))));
        // Said once: the next refusal is silent.
        assert_eq!(counts.admit("1.s", "alice", t0), Err(None));
        assert!(counts.admit("2.s", "alice", t0).is_ok());
        assert_eq!(counts.admit("3.s", "alice", t0), Err(Some(Over::User(3, "alice".into()))));
        assert_eq!(counts.admit("4.s", "alice", t0), Err(None));
        assert!(counts.admit("3.s", "bob", t0).is_ok());
        // A new window forgets the counts.
        assert!(counts.admit("1.s", "alice", t0 + Duration::from_secs(61)).is_ok());
    }

    #[tokio::test]
    async fn a_full_queue_drops_mails_and_never_waits() {
        let (mailer, mut rx) = Mailer::recording(2);
        mailer.send((0..5).map(|_| mail(None)).collect());
        assert!(rx.try_recv().is_ok() && rx.try_recv().is_ok());
        assert!(rx.try_recv().is_err(), "only what fits is kept");
        assert_eq!(mailer.dropped.load(std::sync::atomic::Ordering::Relaxed), 3);
    }

    #[tokio::test]
    async fn a_mailer_gets_its_options_and_recipients_as_argv_and_the_message_on_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let script = dir.path().join("mailer");
        std::fs::write(
            &script,
            format!("#!/bin/sh\nfor a in \"$@\"; do echo \"ARG $a\"; done > {0}\ncat >> {0}\n", out.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut m = mail(Some("bob,carol@h"));
        m.mailer = script.display().to_string();
        let to = recipients(&m, None);
        deliver(&m, &to, Duration::from_secs(10)).await.unwrap();
        let got = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            got,
            "ARG -f\nARG adm\nARG bob\nARG carol@h\nTo: bob carol@h\nSubject: PBS JOB 1.s\n\nPBS Job Id: 1.s\n"
        );
    }

    #[tokio::test]
    async fn a_mailer_past_its_deadline_is_killed_and_a_failing_one_reported() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("slow");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut m = mail(None);
        m.mailer = script.display().to_string();
        let started = Instant::now();
        let err = deliver(&m, &["alice".into()], Duration::from_millis(300)).await.unwrap_err();
        assert!(matches!(err, DeliverError::Deadline(..)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        m.mailer = "/bin/false".into();
        assert!(matches!(deliver(&m, &["alice".into()], Duration::from_secs(5)).await, Err(DeliverError::Failed(..))));
        m.mailer = dir.path().join("missing").display().to_string();
        assert!(matches!(deliver(&m, &["alice".into()], Duration::from_secs(5)).await, Err(DeliverError::Spawn(..))));
    }
}
