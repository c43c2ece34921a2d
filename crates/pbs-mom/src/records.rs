//! The records file of one job (`mom_priv/jobs/<jobid>.JB`): an append-only log of typed
//! records, one per line, that the mom and the job's shepherd both write.
//!
//! One file per job, not one per record: every file a mom creates and deletes is an inode,
//! and on ext4 each new inode is found by scanning past the recently deleted ones, so at
//! hundreds of short jobs a second the number of files per job was the mom's bottleneck.
//! A job now costs this file (plus the script of a script job, the node file and TMPDIR).
//!
//! Format: each record is `\n<kind>\t<json>\n`, written with one `write(2)` on an
//! `O_APPEND` descriptor, so concurrent writers never interleave inside a record and a
//! reader never needs a lock. A reader takes, for each kind, the last complete line whose
//! JSON parses: the part after the last `\n` is a write in progress (or torn by a crash)
//! and is ignored. The leading `\n` makes a record that a short write left incomplete end
//! at the next record's first byte, so the next record still reads whole.
//!
//! Compaction keeps the file bounded (the mom appends a usage sample every period): under
//! an exclusive `flock` it writes the latest record of each kind to a temporary file and
//! renames it over the log. Appenders hold a shared `flock` while they write and check that
//! the file they opened is still linked, so no record lands in a log that compaction has
//! already copied. Creation writes the first record the same way (temporary file, rename),
//! so the file is never seen without its launch; appends never create the file, so a late
//! record cannot bring back the log of a job that was removed.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A value that can be kept in a records file under its kind.
pub trait Record: Serialize + DeserializeOwned {
    /// The line's tag: unique per type, without tab or newline.
    const KIND: &'static str;
}

/// How often an append retries when compaction replaced the file under it.
const REOPEN_TRIES: usize = 100;

/// The records of one file, as read.
#[derive(Clone, Debug, Default)]
pub struct Records {
    /// (kind, JSON) per complete line, in file order.
    lines: Vec<(String, Vec<u8>)>,
    /// Bytes read.
    size: u64,
}

impl Records {
    /// The last record of `T`'s kind that parses.
    pub fn get<T: Record>(&self) -> Option<T> {
        self.lines
            .iter()
            .rev()
            .filter(|(kind, _)| kind == T::KIND)
            .find_map(|(_, json)| serde_json::from_slice(json).ok())
    }

    /// The last record of `T`'s kind that parses and satisfies `pred`.
    pub fn find<T: Record>(&self, pred: impl Fn(&T) -> bool) -> Option<T> {
        self.lines
            .iter()
            .rev()
            .filter(|(kind, _)| kind == T::KIND)
            .filter_map(|(_, json)| serde_json::from_slice(json).ok())
            .find(|value| pred(value))
    }

    /// Whether there is a record of `T`'s kind that parses.
    pub fn has<T: Record>(&self) -> bool {
        self.get::<T>().is_some()
    }

    /// Size of the file when it was read, in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// True if the file held no complete record (or did not exist).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    fn parse(bytes: &[u8]) -> Records {
        let complete = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(end) => bytes.get(..end).unwrap_or_default(),
            None => &[],
        };
        let lines = complete
            .split(|b| *b == b'\n')
            .filter_map(|line| {
                let tab = line.iter().position(|b| *b == b'\t')?;
                let kind = std::str::from_utf8(line.get(..tab)?).ok()?;
                Some((kind.to_string(), line.get(tab + 1..)?.to_vec()))
            })
            .collect();
        Records { lines, size: bytes.len() as u64 }
    }

    /// The latest valid record of each kind, in the order of their last appearance.
    fn compacted(&self) -> Vec<u8> {
        let mut keep: Vec<&(String, Vec<u8>)> = Vec::new();
        for line in self.lines.iter().rev() {
            if keep.iter().any(|k| k.0 == line.0) || serde_json::from_slice::<serde::de::IgnoredAny>(&line.1).is_err() {
                continue;
            }
            keep.push(line);
        }
        let mut out = Vec::new();
        for (kind, json) in keep.into_iter().rev() {
            out.push(b'\n');
            out.extend_from_slice(kind.as_bytes());
            out.push(b'\t');
            out.extend_from_slice(json);
            out.push(b'\n');
        }
        out
    }
}

fn encode<T: Record>(value: &T) -> io::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(128);
    line.push(b'\n');
    line.extend_from_slice(T::KIND.as_bytes());
    line.push(b'\t');
    // Compact JSON escapes every control character, so the record is one line.
    serde_json::to_writer(&mut line, value).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Reads the records at `path`; empty if the file is missing or unreadable.
pub fn read(path: &Path) -> Records {
    match std::fs::read(path) {
        Ok(bytes) => Records::parse(&bytes),
        Err(_) => Records::default(),
    }
}

/// Creates (or replaces, for a new run of the same job id) the file at `path` holding
/// `first`, mode 0600; returns its size.
pub fn create<T: Record>(path: &Path, first: &T) -> io::Result<u64> {
    let line = encode(first)?;
    replace(path, &line, "new")?;
    Ok(line.len() as u64)
}

/// Appends `value` to the existing file at `path`; returns the file's size after it.
pub fn append<T: Record>(path: &Path, value: &T) -> io::Result<u64> {
    let line = encode(value)?;
    for _ in 0..REOPEN_TRIES {
        // No O_CREAT: the job's files may be gone, and must stay gone.
        let file = OpenOptions::new().append(true).open(path)?;
        let file = lock(file, FlockArg::LockShared)?;
        if file.metadata()?.nlink() == 0 {
            // Compaction renamed a new file over this one (or a new run of the same job
            // id did; records that must not follow into it carry their shepherd's pid or
            // are written before the end is reported): append to that.
            continue;
        }
        let written = (&*file).write(&line)?;
        if written != line.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, format!("short write to {}", path.display())));
        }
        return Ok(file.metadata()?.len());
    }
    Err(io::Error::other(format!("{} keeps being replaced", path.display())))
}

/// Rewrites the file at `path` with only the latest record of each kind; returns the new
/// size. Appends wait while it runs.
pub fn compact(path: &Path) -> io::Result<u64> {
    let file = lock(File::open(path)?, FlockArg::LockExclusive)?;
    if file.metadata()?.nlink() == 0 {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} was removed", path.display())));
    }
    let mut bytes = Vec::new();
    (&*file).read_to_end(&mut bytes)?;
    let out = Records::parse(&bytes).compacted();
    replace(path, &out, "compact")?;
    // The lock is released (and waiting appenders see the old file unlinked) only now.
    drop(file);
    Ok(out.len() as u64)
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`. `purpose`
/// keeps creation and compaction from sharing a temporary name.
fn replace(path: &Path, bytes: &[u8], purpose: &str) -> io::Result<()> {
    let tmp = temp_path(path, purpose);
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        file.write_all(bytes)?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `.<name>.<purpose>.tmp` beside `path`: a leading dot, so no job id can name it.
fn temp_path(path: &Path, purpose: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{purpose}.tmp"))
}

fn lock(file: File, how: FlockArg) -> io::Result<Flock<File>> {
    let mut file = file;
    loop {
        match Flock::lock(file, how) {
            Ok(locked) => return Ok(locked),
            Err((back, Errno::EINTR)) => file = back,
            Err((_, errno)) => return Err(io::Error::from(errno)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct A {
        n: u64,
        text: String,
    }
    impl Record for A {
        const KIND: &'static str = "a";
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct B(u32);
    impl Record for B {
        const KIND: &'static str = "b";
    }

    fn a(n: u64) -> A {
        A { n, text: format!("line\nbreak\ttab {n}") }
    }

    #[test]
    fn records_round_trip_and_the_last_of_a_kind_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.s.JB");
        assert!(read(&path).is_empty());
        assert_eq!(create(&path, &a(1)).unwrap(), std::fs::metadata(&path).unwrap().len());
        append(&path, &B(7)).unwrap();
        append(&path, &a(2)).unwrap();
        let records = read(&path);
        assert_eq!(records.get::<A>(), Some(a(2)));
        assert_eq!(records.get::<B>(), Some(B(7)));
        assert_eq!(records.find::<A>(|a| a.n < 2), Some(a(1)));
        assert_eq!(records.find::<A>(|a| a.n > 2), None);
        assert_eq!(records.size(), std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn creation_replaces_an_earlier_run_and_append_never_creates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.s.JB");
        assert_eq!(append(&path, &B(1)).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(!path.exists());
        create(&path, &a(1)).unwrap();
        append(&path, &B(1)).unwrap();
        create(&path, &a(2)).unwrap();
        let records = read(&path);
        assert_eq!(records.get::<A>(), Some(a(2)));
        assert!(!records.has::<B>());
        // Only the file itself is left: no temporary file.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_torn_last_line_and_garbage_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.s.JB");
        create(&path, &a(1)).unwrap();
        let whole = encode(&a(2)).unwrap();
        let torn = whole.get(..whole.len() - 3).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(torn).unwrap();
        assert_eq!(read(&path).get::<A>(), Some(a(1)));
        // A record after the torn one reads whole; the torn one never parses.
        drop(file);
        append(&path, &B(3)).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"\nb\tnot json\n\nnot a record\n\xff\xfe\t{}\n").unwrap();
        let records = read(&path);
        assert_eq!(records.get::<A>(), Some(a(1)));
        assert_eq!(records.get::<B>(), Some(B(3)));
    }

    #[test]
    fn compaction_keeps_the_latest_of_each_kind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.s.JB");
        create(&path, &a(0)).unwrap();
        for i in 0..100 {
            append(&path, &B(i)).unwrap();
        }
        append(&path, &a(5)).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"\nb\tbroken\n\na\t{\"n\":").unwrap();
        drop(file);
        let before = std::fs::metadata(&path).unwrap().len();
        let size = compact(&path).unwrap();
        assert!(size < before / 10, "{size} of {before}");
        assert_eq!(size, std::fs::metadata(&path).unwrap().len());
        let records = read(&path);
        assert_eq!(records.get::<A>(), Some(a(5)));
        assert_eq!(records.get::<B>(), Some(B(99)));
        assert_eq!(records.lines.len(), 2);
        append(&path, &B(100)).unwrap();
        assert_eq!(read(&path).get::<B>(), Some(B(100)));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A record per writer, so a lost append shows as a stale latest value.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct W<const I: usize> {
        n: u64,
        text: String,
    }
    impl Record for W<0> {
        const KIND: &'static str = "w0";
    }
    impl Record for W<1> {
        const KIND: &'static str = "w1";
    }

    fn big<const I: usize>(n: u64) -> W<I> {
        // Several pages: a torn or interleaved write would show.
        W { n, text: format!("{n:05}").repeat(4000) }
    }

    fn append_many<const I: usize>(path: &Path, count: u64) -> io::Result<()>
    where
        W<I>: Record,
    {
        for n in 0..count {
            append(path, &big::<I>(n))?;
        }
        Ok(())
    }

    fn check_whole(records: &Records) {
        for (kind, json) in &records.lines {
            match kind.as_str() {
                "w0" => {
                    let w: W<0> = serde_json::from_slice(json).unwrap();
                    assert_eq!(w, big(w.n));
                }
                "w1" => {
                    let w: W<1> = serde_json::from_slice(json).unwrap();
                    assert_eq!(w, big(w.n));
                }
                "b" => assert_eq!(serde_json::from_slice::<B>(json).unwrap(), B(0)),
                other => panic!("unexpected kind {other}"),
            }
        }
    }

    #[test]
    fn concurrent_appends_never_interleave_and_none_is_lost_to_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.s.JB");
        create(&path, &B(0)).unwrap();
        let w0 = {
            let path = path.clone();
            std::thread::spawn(move || append_many::<0>(&path, 300).unwrap())
        };
        let w1 = {
            let path = path.clone();
            std::thread::spawn(move || append_many::<1>(&path, 300).unwrap())
        };
        let compactor = {
            let path = path.clone();
            std::thread::spawn(move || {
                for _ in 0..100 {
                    compact(&path).unwrap();
                }
            })
        };
        w0.join().unwrap();
        w1.join().unwrap();
        compactor.join().unwrap();
        let records = read(&path);
        check_whole(&records);
        assert_eq!(records.get::<W<0>>().map(|w| w.n), Some(299));
        assert_eq!(records.get::<W<1>>().map(|w| w.n), Some(299));
        assert_eq!(records.get::<B>(), Some(B(0)), "compaction lost the first record");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// The writer process of the next test (ignored unless run by it).
    #[test]
    #[ignore = "run as a child process by concurrent_appends_from_two_processes_never_interleave"]
    fn child_appender() {
        if let Some(path) = std::env::var_os("RECORDS_TEST_FILE") {
            append_many::<1>(Path::new(&path), 300).unwrap();
        }
    }

    #[test]
    fn concurrent_appends_from_two_processes_never_interleave() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.s.JB");
        create(&path, &B(0)).unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "records::tests::child_appender", "--ignored", "--quiet"])
            .env("RECORDS_TEST_FILE", &path)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        append_many::<0>(&path, 300).unwrap();
        assert!(child.wait().unwrap().success());
        let records = read(&path);
        check_whole(&records);
        let count = |kind: &str| records.lines.iter().filter(|(k, _)| k == kind).count();
        assert_eq!((count("w0"), count("w1")), (300, 300));
        assert_eq!(records.size(), std::fs::metadata(&path).unwrap().len());
    }
}
