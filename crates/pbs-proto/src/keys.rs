//! Daemon keys: the server's master key and the keys derived from it, one per peer, and
//! the checks every daemon makes of a key file before trusting it.
//!
//! Only the server holds the master key (`server_priv/cluster_key`). A mom holds
//! `derive(master, mom:<node>)` and a scheduler over TCP `derive(master, scheduler)`: the
//! server derives the same key when it links to that node's mom or accepts the scheduler,
//! so each link is keyed by a secret only its two ends hold. Root on one compute node
//! learns that node's key and nothing else: it cannot prove another node's key, nor the
//! scheduler's, and a derived key does not give back the master.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use blake2::Blake2sMac256;
use blake2::digest::{KeyInit, Mac};
use pbs_core::conf::DaemonKey;
use sha2::{Digest, Sha256};

use crate::auth::hex;
use crate::link::role_tag;
use crate::messages::Role;

/// Why a key file was not used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// It could not be opened or read.
    #[error("cannot read the key file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// It holds nothing.
    #[error("the key file {path} is empty")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Anyone but its owner could read or change it: a key others may have read is no
    /// longer a secret, and one others may write is theirs to choose.
    #[error(
        "the key file {path} is {access} (mode {mode:04o}): a key file must be readable and writable by its owner \
         only (chmod 600 {path})"
    )]
    Mode {
        /// The file.
        path: PathBuf,
        /// Who else may touch it.
        access: Access,
        /// Its permission bits.
        mode: u32,
    },
    /// Someone other than root (or this daemon's own user) owns it, and could give it any
    /// mode, or any content.
    #[error("the key file {path} is owned by uid {uid}: it must be owned by root{also}")]
    Owner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// The daemon's own user, when not root.
        also: String,
    },
    /// Not a regular file.
    #[error("the key file {path} is not a regular file")]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
}

impl KeyError {
    /// The file is not there (yet): a daemon may start without it and read it once an
    /// admin has installed it, unlike a key file it may not trust.
    pub fn is_missing(&self) -> bool {
        matches!(self, KeyError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Who besides its owner may reach a key file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Group or others may read it.
    Readable,
    /// Group or others may write it (and maybe read it).
    Writable,
    /// Group or others may execute it only: still not a mode a key has.
    Other,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Readable => "readable by group or others",
            Access::Writable => "writable by group or others",
            Access::Other => "open to group or others",
        })
    }
}

/// The key of the link between the server and `peer` (a mom of one node, or the
/// scheduler): a keyed hash of the master key and the peer's role, so that it names one
/// peer and gives nothing about the master or any other peer's key. Written to the peer's
/// key file as it is returned (64 hex characters).
pub fn derive(master: &[u8], peer: &Role) -> Vec<u8> {
    // The master may be of any length (a site may have written its own); BLAKE2s takes a
    // key of at most 32 bytes, so the master is first hashed to one.
    let mut hash = Sha256::new();
    hash.update(b"pbs-rs master key\0");
    hash.update(master);
    let mac_key: [u8; 32] = hash.finalize().into();
    let mut mac = <Blake2sMac256 as KeyInit>::new(&mac_key.into());
    mac.update(b"pbs-rs daemon key\0");
    mac.update(role_tag(peer).as_bytes());
    hex(&mac.finalize().into_bytes()).into_bytes()
}

/// Reads a key file after checking that only its owner may read or write it and that its
/// owner is root (or the user this daemon runs as, for daemons run unprivileged). The
/// checks are made on the opened file, so the file checked is the file read.
pub fn read_key_file(path: &Path) -> Result<Vec<u8>, KeyError> {
    let read_err = |source| KeyError::Read { path: path.to_path_buf(), source };
    let mut file = std::fs::File::open(path).map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    check_metadata(path, &meta)?;
    let mut key = Vec::new();
    file.read_to_end(&mut key).map_err(read_err)?;
    if key.is_empty() {
        return Err(KeyError::Empty { path: path.to_path_buf() });
    }
    Ok(key)
}

/// The ownership and mode checks of [`read_key_file`].
pub fn check_metadata(path: &Path, meta: &std::fs::Metadata) -> Result<(), KeyError> {
    if !meta.is_file() {
        return Err(KeyError::NotAFile { path: path.to_path_buf() });
    }
    let mode = meta.mode() & 0o7777;
    let loose = mode & 0o077;
    if loose != 0 {
        let access = if loose & 0o022 != 0 {
            Access::Writable
        } else if loose & 0o044 != 0 {
            Access::Readable
        } else {
            Access::Other
        };
        return Err(KeyError::Mode { path: path.to_path_buf(), access, mode });
    }
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != 0 && meta.uid() != euid {
        let also = if euid == 0 { String::new() } else { format!(" or by uid {euid}, which this daemon runs as") };
        return Err(KeyError::Owner { path: path.to_path_buf(), uid: meta.uid(), also });
    }
    Ok(())
}

/// The key of this daemon's links as `me`: its own key file as it is, or the master key
/// (on the server host) with `me`'s key derived from it.
pub fn load(source: &DaemonKey, me: &Role) -> Result<Vec<u8>, KeyError> {
    match source {
        DaemonKey::Own(path) => read_key_file(path),
        DaemonKey::FromMaster(path) => Ok(derive(&read_key_file(path)?, me)),
    }
}

/// Writes a new key file, mode 0600 from its creation (`open(2)` sets it, so the key is
/// never readable by others even for an instant), refusing whatever already sits at the
/// path: an existing key, or a symbolic link planted to have the key written elsewhere.
pub fn write_key_file(path: &Path, key: &[u8]) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(key)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const MASTER: &[u8] = b"the master key";

    fn mom(node: &str) -> Role {
        Role::Mom { node: node.into() }
    }

    #[test]
    fn each_peer_gets_its_own_key_and_none_is_the_master() {
        let n1 = derive(MASTER, &mom("n1"));
        assert_eq!(n1, derive(MASTER, &mom("n1")), "derivation is deterministic");
        assert_eq!(n1.len(), 64);
        assert_ne!(n1, derive(MASTER, &mom("n2")));
        assert_ne!(n1, derive(MASTER, &mom("n10")));
        assert_ne!(n1, derive(MASTER, &Role::Scheduler));
        assert_ne!(n1, MASTER);
        assert_ne!(n1, derive(b"another master", &mom("n1")));
        // A node whose name looks like another role's tag is still its own.
        assert_ne!(derive(MASTER, &mom("scheduler")), derive(MASTER, &Role::Scheduler));
        // A node's key is not the master of the next level: deriving from it gives
        // nothing the server would use.
        assert_ne!(derive(&n1, &mom("n2")), derive(MASTER, &mom("n2")));
    }

    #[test]
    fn a_private_key_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        write_key_file(&path, b"secret").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(read_key_file(&path).unwrap(), b"secret");
        assert_eq!(load(&DaemonKey::Own(path.clone()), &Role::Scheduler).unwrap(), b"secret");
        assert_eq!(load(&DaemonKey::FromMaster(path), &Role::Scheduler).unwrap(), derive(b"secret", &Role::Scheduler));
    }

    #[test]
    fn a_key_file_others_may_read_or_write_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        write_key_file(&path, b"secret").unwrap();
        for (mode, says) in [
            (0o644, "readable by group or others"),
            (0o640, "readable by group or others"),
            (0o604, "readable by group or others"),
            (0o622, "writable by group or others"),
            (0o666, "writable by group or others"),
            (0o601, "open to group or others"),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = read_key_file(&path).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, KeyError::Mode { .. }), "{mode:o}: {text}");
            assert!(text.contains(&path.display().to_string()) && text.contains(says), "{mode:o}: {text}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(read_key_file(&path).unwrap(), b"secret");
    }

    #[test]
    fn a_key_file_owned_by_another_user_is_refused() {
        // Only root can give a file away; an unprivileged run checks its own files only.
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        write_key_file(&path, b"secret").unwrap();
        nix::unistd::chown(&path, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let err = read_key_file(&path).unwrap_err();
        assert!(matches!(err, KeyError::Owner { uid: 65534, .. }), "{err}");
        assert!(err.to_string().contains("owned by uid 65534"), "{err}");
    }

    #[test]
    fn an_existing_file_or_link_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        write_key_file(&path, b"first").unwrap();
        assert!(write_key_file(&path, b"second").is_err());
        assert_eq!(read_key_file(&path).unwrap(), b"first");
        let link = dir.path().join("link");
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        assert!(write_key_file(&link, b"secret").is_err());
        assert!(!elsewhere.exists());
    }

    #[test]
    fn empty_and_missing_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        assert!(matches!(read_key_file(&path), Err(KeyError::Read { .. })));
        write_key_file(&path, b"").unwrap();
        assert!(matches!(read_key_file(&path), Err(KeyError::Empty { .. })));
        assert!(matches!(read_key_file(dir.path()), Err(KeyError::NotAFile { .. })));
    }
}
