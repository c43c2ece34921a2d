//! The master key: created once, private to root, never leaving the server host; and the
//! keys derived from it that admins install on each node and on a remote scheduler.

use std::io;
use std::path::Path;

use pbs_proto::Role;
use pbs_proto::keys::{KeyError, derive, read_key_file, write_key_file};

use crate::server::{ServerError, io_err};

/// Reads the master key, creating a random one readable only by root on first start.
///
/// The file is created with mode 0600 by `open(2)` itself and never exists with a looser
/// mode, and `O_EXCL` refuses whatever already sits at the path (a file another process
/// created meanwhile, or a symbolic link planted to have the key written elsewhere). An
/// existing key that others may read or write, or that someone other than root owns, stops
/// the server (see `pbs_proto::keys::read_key_file`): every node key derived from it could
/// have been computed by them.
pub fn load_or_create_cluster_key(path: &Path) -> Result<Vec<u8>, ServerError> {
    // An empty file is what a crash between creating the file and writing the key leaves
    // behind; it holds no secret, whatever its mode, so it is replaced.
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() == 0) {
        std::fs::remove_file(path).map_err(io_err(format!("removing the empty {}", path.display())))?;
    }
    match read_key_file(path) {
        Ok(key) => return Ok(key),
        Err(KeyError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        // Never replace a key that exists but cannot be used: the nodes' keys derive from it.
        Err(e) => return Err(e.into()),
    }
    let key = pbs_proto::auth::new_secret()
        .map_err(|e| ServerError::Io {
            context: "generating the cluster key".into(),
            source: io::Error::other(e.to_string()),
        })?
        .into_bytes();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err("creating the key directory"))?;
    }
    write_key_file(path, &key).map_err(io_err(format!("creating {}", path.display())))?;
    Ok(key)
}

/// Writes `peer`'s key (a mom's or the scheduler's), derived from the master at
/// `master_path`, to a new file at `out`, mode 0600. The admin then installs it on that
/// host and names it in its pbs.conf (`PBS_CLUSTER_KEY_FILE`).
pub fn write_peer_key(master_path: &Path, peer: &Role, out: &Path) -> Result<(), ServerError> {
    let master = load_or_create_cluster_key(master_path)?;
    write_key_file(out, &derive(&master, peer)).map_err(io_err(format!("creating {}", out.display())))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_new_cluster_key_is_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server_priv").join("cluster_key");
        let key = load_or_create_cluster_key(&path).unwrap();
        assert!(!key.is_empty());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load_or_create_cluster_key(&path).unwrap(), key);
        // An empty file (a crash before the write) gets a fresh key, private too.
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let fresh = load_or_create_cluster_key(&path).unwrap();
        assert!(!fresh.is_empty() && fresh != key);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn the_cluster_key_is_never_written_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster_key");
        let elsewhere = dir.path().join("readable_by_all");
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(load_or_create_cluster_key(&path).is_err());
        assert!(!elsewhere.exists(), "the key was written through the link");
    }

    #[test]
    fn a_world_readable_master_key_stops_the_server_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster_key");
        let key = load_or_create_cluster_key(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create_cluster_key(&path).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains("readable by group or others"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), key, "the key was replaced");
    }

    #[test]
    fn a_peer_key_file_holds_the_derived_key_privately() {
        let dir = tempfile::tempdir().unwrap();
        let master_path = dir.path().join("cluster_key");
        let out = dir.path().join("n1.key");
        write_peer_key(&master_path, &Role::Mom { node: "n1".into() }, &out).unwrap();
        let master = read_key_file(&master_path).unwrap();
        assert_eq!(read_key_file(&out).unwrap(), derive(&master, &Role::Mom { node: "n1".into() }));
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
        // An existing file is never overwritten.
        assert!(write_peer_key(&master_path, &Role::Scheduler, &out).is_err());
    }
}
