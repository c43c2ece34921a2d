//! The client against a real munged: each test starts its own, with a key and a socket in
//! a temporary directory (munged is installed by `etc/test-deps.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pbs_munge::{Code, Munge, MungeError};

/// A program of Debian's munge package, from /usr/sbin when `PATH` lacks it.
fn sbin(name: &str) -> PathBuf {
    let path = Path::new("/usr/sbin").join(name);
    if path.exists() { path } else { PathBuf::from(name) }
}

/// A munged of its own, stopped when dropped.
struct Munged {
    dir: tempfile::TempDir,
}

impl Munged {
    fn start() -> Munged {
        Munged::start_with_key(None)
    }

    /// Starts munged with the key at `key`, or a new one.
    fn start_with_key(key: Option<&Path>) -> Munged {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let key_file = dir.path().join("key");
        match key {
            Some(key) => {
                std::fs::copy(key, &key_file).unwrap();
            }
            None => {
                let made = Command::new(sbin("mungekey"))
                    .arg("--create")
                    .arg(format!("--keyfile={}", key_file.display()))
                    .status();
                assert!(made.is_ok_and(|s| s.success()), "mungekey failed: is munge installed? run etc/test-deps.sh");
            }
        }
        let path = |name: &str| dir.path().join(name).display().to_string();
        let started = Command::new(sbin("munged"))
            .args(["--force", "--socket", &path("sock"), "--key-file", &path("key"), "--pid-file", &path("pid")])
            .args(["--log-file", &path("log"), "--seed-file", &path("seed")])
            .status();
        assert!(started.is_ok_and(|s| s.success()), "munged did not start: is munge installed? run etc/test-deps.sh");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !dir.path().join("sock").exists() {
            assert!(Instant::now() < deadline, "munged's socket never appeared");
            std::thread::sleep(Duration::from_millis(10));
        }
        Munged { dir }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("key")
    }
}

impl Drop for Munged {
    fn drop(&mut self) {
        let _ = Command::new(sbin("munged")).arg("--stop").arg("--socket").arg(self.socket()).status();
    }
}

#[test]
fn a_credential_carries_its_makers_ids_and_payload_and_decodes_once() {
    let munged = Munged::start();
    let munge = Munge::new(munged.socket());
    let credential = munge.encode(b"root:root").unwrap();
    assert!(credential.starts_with("MUNGE:"), "{credential}");
    let decoded = munge.decode(&credential).unwrap();
    assert_eq!((decoded.uid, decoded.gid), (0, 0));
    assert_eq!(decoded.payload, b"root:root");
    assert!(decoded.ttl > 0);
    // The same credential again is a replay.
    let again = munge.decode(&credential).unwrap_err();
    assert_eq!(again.code(), Code::CRED_REPLAYED, "{again}");
    // An empty payload is a credential too.
    assert_eq!(munge.decode(&munge.encode(b"").unwrap()).unwrap().payload, b"");
}

#[test]
fn the_uid_is_the_callers_as_the_kernel_tells_munged() {
    let munged = Munged::start();
    let socket = munged.socket();
    // This thread alone becomes nobody: SO_PEERCRED reports the connecting thread's ids.
    let credential = std::thread::spawn(move || {
        // The raw system call changes only this thread's ids (glibc's wrapper would change
        // every thread's). SAFETY: no memory is passed.
        let rc = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        assert_eq!(rc, 0);
        Munge::new(socket).encode(b"nobody").unwrap()
    })
    .join()
    .unwrap();
    let decoded = Munge::new(munged.socket()).decode(&credential).unwrap();
    assert_eq!(decoded.uid, 65534);
}

#[test]
fn a_credential_of_another_key_is_invalid_and_a_stopped_munged_is_said() {
    let one = Munged::start();
    let other = Munged::start();
    let credential = Munge::new(one.socket()).encode(b"x").unwrap();
    let err = Munge::new(other.socket()).decode(&credential).unwrap_err();
    assert_eq!(err.code(), Code::CRED_INVALID, "{err}");
    // The same key decodes it.
    let twin = Munged::start_with_key(Some(&one.key()));
    assert_eq!(Munge::new(twin.socket()).decode(&credential).unwrap().payload, b"x");
    let socket = one.socket();
    drop(one);
    let err = Munge::new(&socket).encode(b"x").unwrap_err();
    assert!(matches!(err, MungeError::Connect { .. }), "{err}");
    assert_eq!(err.code().text(), "Socket communication error");
}

#[test]
fn garbage_and_oversized_credentials_are_refused_without_reaching_far() {
    let munged = Munged::start();
    let munge = Munge::new(munged.socket());
    let err = munge.decode("MUNGE:not a credential:").unwrap_err();
    assert!(matches!(err, MungeError::Refused { .. }), "{err}");
    let huge = "M".repeat(pbs_munge::MAX_CREDENTIAL + 1);
    assert!(matches!(munge.decode(&huge), Err(MungeError::TooLong(_))));
    assert!(matches!(munge.encode(&vec![0u8; pbs_munge::MAX_PAYLOAD + 1]), Err(MungeError::TooLong(_))));
}
