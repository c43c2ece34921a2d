//! File staging lists (`-W stagein`, `-W stageout`): `local_file@host:remote_file[,...]`,
//! read as OpenPBS reads them. The local file is on the execution host (relative to the
//! owner's home there), the remote one on `host`; a stage-in copies remote to local before
//! the job starts, a stage-out local to remote after it ends.

/// One file of a staging list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageFile {
    /// The path on the execution host.
    pub local: String,
    /// The host of the other end.
    pub host: String,
    /// The path there.
    pub remote: String,
}

/// The most files one list may name.
pub const MAX_STAGE_FILES: usize = 256;

/// Reads a staging list; `None` when an entry is not `local@host:remote` with all three
/// parts, or the list names more than [`MAX_STAGE_FILES`] files.
pub fn parse(list: &str) -> Option<Vec<StageFile>> {
    if list.trim().is_empty() {
        return None;
    }
    let files = list
        .split(',')
        .map(|item| {
            let (local, rest) = item.trim().split_once('@')?;
            let (host, remote) = rest.split_once(':')?;
            let plain = |s: &str| !s.is_empty() && !s.chars().any(char::is_control);
            (plain(local) && plain(host) && plain(remote) && !host.contains('/')).then(|| StageFile {
                local: local.to_string(),
                host: host.to_string(),
                remote: remote.to_string(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    (files.len() <= MAX_STAGE_FILES).then_some(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_openpbs_reads_them() {
        let files = parse("in.dat@login1:/data/in.dat, b@h:rel/b").unwrap();
        assert_eq!(
            files[0],
            StageFile { local: "in.dat".into(), host: "login1".into(), remote: "/data/in.dat".into() }
        );
        assert_eq!(files[1].remote, "rel/b");
        // A remote path may hold a colon of its own; the first names the host.
        assert_eq!(parse("a@h:/x:y").unwrap()[0].remote, "/x:y");
        for bad in ["", "a", "a@h", "a@h:", "@h:/x", "a@:/x", "a@h:/x,", "a\n@h:/x", "a@h/x:/y"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert!(parse(&vec!["a@h:/b"; MAX_STAGE_FILES + 1].join(",")).is_none());
    }
}
