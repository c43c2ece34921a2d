//! The cluster key: created once, private to root, read by every daemon that must prove it.

use std::io;

use crate::server::{ServerError, io_err};

/// Reads the cluster key, creating a random one readable only by root on first start.
///
/// The file is created with mode 0600 by `open(2)` itself and never exists with a looser
/// mode, and `O_EXCL` refuses whatever already sits at the path (a file another process
/// created meanwhile, or a symbolic link planted to have the key written elsewhere).
pub fn load_or_create_cluster_key(path: &std::path::Path) -> Result<Vec<u8>, ServerError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::read(path) {
        Ok(key) if !key.is_empty() => return Ok(key),
        // What a crash between creating the file and writing the key leaves behind.
        Ok(_) => std::fs::remove_file(path).map_err(io_err(format!("removing the empty {}", path.display())))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        // Never replace a key that exists but cannot be read: the nodes hold it.
        Err(e) => return Err(ServerError::Io { context: format!("reading {}", path.display()), source: e }),
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
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err(format!("creating {}", path.display())))?;
    file.write_all(&key).and_then(|()| file.sync_all()).map_err(io_err(format!("writing {}", path.display())))?;
    Ok(key)
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
}
