//! A munged of one's own, for tests and the bench: its key, socket, pid, log and seed in a
//! temporary directory, stopped when dropped. Needs Debian's munge (`munged`, `mungekey`;
//! `etc/test-deps.sh` installs them).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Why a private munged did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A program of munge's could not run or failed.
    #[error("{0} failed: is munge installed? run etc/test-deps.sh ({1})")]
    Program(&'static str, String),
    /// Its directory could not be made.
    #[error("cannot set up a munged's directory: {0}")]
    Io(#[from] std::io::Error),
    /// Its socket did not appear in time.
    #[error("munged's socket {0} did not appear")]
    NoSocket(PathBuf),
}

/// A running munged of its own.
#[derive(Debug)]
pub struct PrivateMunged {
    dir: tempfile::TempDir,
}

/// A program of munge's, from /usr/sbin when `PATH` lacks it.
fn sbin(name: &str) -> PathBuf {
    let path = Path::new("/usr/sbin").join(name);
    if path.exists() { path } else { PathBuf::from(name) }
}

fn run(name: &'static str, command: &mut Command) -> Result<(), StartError> {
    match command.output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(StartError::Program(name, String::from_utf8_lossy(&out.stderr).trim().to_string())),
        Err(e) => Err(StartError::Program(name, e.to_string())),
    }
}

impl PrivateMunged {
    /// Starts one with a new key.
    pub fn start() -> Result<PrivateMunged, StartError> {
        PrivateMunged::start_with_key(None)
    }

    /// Starts one with a copy of the key at `key` (so it decodes what another made), or a
    /// new key.
    pub fn start_with_key(key: Option<&Path>) -> Result<PrivateMunged, StartError> {
        let dir = tempfile::Builder::new().prefix("munged-").tempdir()?;
        // Every user must reach the socket inside.
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let key_file = dir.path().join("key");
        match key {
            Some(key) => {
                std::fs::copy(key, &key_file)?;
            }
            None => run(
                "mungekey",
                Command::new(sbin("mungekey")).arg("--create").arg(format!("--keyfile={}", key_file.display())),
            )?,
        }
        let path = |name: &str| dir.path().join(name).display().to_string();
        run(
            "munged",
            Command::new(sbin("munged"))
                .args(["--force", "--socket", &path("sock"), "--key-file", &path("key"), "--pid-file", &path("pid")])
                .args(["--log-file", &path("log"), "--seed-file", &path("seed")]),
        )?;
        let munged = PrivateMunged { dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !munged.socket().exists() {
            if Instant::now() > deadline {
                return Err(StartError::NoSocket(munged.socket()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(munged)
    }

    /// Its socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// Its key file.
    pub fn key(&self) -> PathBuf {
        self.dir.path().join("key")
    }

    /// A client of it.
    pub fn client(&self) -> crate::client::Munge {
        crate::client::Munge::new(self.socket())
    }
}

impl Drop for PrivateMunged {
    fn drop(&mut self) {
        let _ = Command::new(sbin("munged")).arg("--stop").arg("--socket").arg(self.socket()).output();
    }
}
