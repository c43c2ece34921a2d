//! The accounting log's files (`PBS_HOME/server_priv/accounting/YYYYMMDD`): the lines the
//! store's writer commits in the same transaction as the changes they describe, written
//! out to the day's file after it, and the repair at start that leaves every committed
//! record in the files exactly once.
//!
//! Each group commit's transaction holds its lines, as one row with their file and offset,
//! in the `accounting` table (a row written before batches were one row holds one line); the last row held ends where the file's committed end is. The
//! `meta` row `accounting_end` keeps that end once rows are pruned (and a new day's start),
//! so a commit touches one page more than without the log, not two. The lines themselves are written to the file after the commit, in
//! order, at most every [`FLUSH_INTERVAL`] (or sooner when many are waiting): writing them
//! before each commit made the commit's own fsync carry the file's new block (the
//! filesystem orders a file's data before the metadata the journal commits), about a
//! third of a lone client's submission rate. So:
//! - a record is durable when its change is: both are in the one transaction;
//! - a crash before the lines reach the file (or a power loss before the file is synced)
//!   leaves the file shorter than the committed end, and the next start writes again from
//!   the rows the lines the file lacks: a committed record is never lost, and one already
//!   there never written twice;
//! - lines past the committed end (none should be, as they are written after their commit)
//!   are cut off at start: a record is never kept for a change that was not;
//! - a file that cannot be written (a full disk) leaves the lines waiting, in memory and in
//!   the rows, and the writer tries again: the requests go on being served, and the lines
//!   reach the file once it has room (or at the next start).
//!
//! The file is synced at most once a second, and the rows it then holds are deleted in the
//! next transaction. Before the first line goes to a file other than the one the committed
//! end names (a new day, or a file moved away), that end is committed anew in a small
//! transaction of its own, after the old file is written out, synced and its rows deleted:
//! only the file the committed end names can ever lack lines. See docs/accounting.md.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, Transaction, params};

/// One accounting record: its type letter (`Q`, `S`, `E`, `D`, `R`, `A`...), the id it is
/// about and its text (`key=value ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcctRecord {
    /// Record type.
    pub kind: char,
    /// The job (or array, subjob) id.
    pub id: String,
    /// The record's text after the id.
    pub text: String,
}

/// Errors of the accounting files; any fails the commit that needed the write.
#[derive(Debug, thiserror::Error)]
pub enum AcctError {
    /// A file or the directory could not be written (a full disk).
    #[error("accounting log {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The rows that hold the lines could not be read or written.
    #[error("accounting log records: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// The table of lines not yet known to be synced to their file: one row per batch, its
/// lines joined by newlines in `line`.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS accounting (
    id INTEGER PRIMARY KEY, day TEXT NOT NULL, offset INTEGER NOT NULL, line TEXT NOT NULL
);
";

/// The meta key of the committed end: `YYYYMMDD <bytes>`.
const END_KEY: &str = "accounting_end";

/// How often the file is synced so that the rows it holds can go.
const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// How often the day's path is looked at for a file moved away or written by someone
/// else: once a second, not at every commit, whose own work is a few system calls.
const PATH_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long committed lines wait before they are written to the file.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(200);

/// Committed lines written at once whatever their age, so that waiting lines stay few.
const FLUSH_BYTES: usize = 1 << 20;

/// The accounting directory under `PBS_HOME`.
pub fn dir_of(home: &Path) -> PathBuf {
    home.join("server_priv").join("accounting")
}

/// One line as written: `MM/DD/YYYY HH:MM:SS;T;ID;TEXT` with control characters escaped
/// as in the server's log, so no value can end a line and forge the next.
pub fn format_line(stamp: &str, record: &AcctRecord) -> String {
    let mut line = String::with_capacity(stamp.len() + record.id.len() + record.text.len() + 8);
    push_line(&mut line, stamp, record);
    line
}

/// Appends [`format_line`]'s line to `out`.
fn push_line(out: &mut String, stamp: &str, record: &AcctRecord) {
    out.push_str(stamp);
    out.push(';');
    out.push(record.kind);
    out.push(';');
    pbs_log::push_escaped(out, &record.id);
    out.push(';');
    pbs_log::push_escaped(out, &record.text);
}

/// The day's file being appended to.
struct DayFile {
    day: String,
    path: PathBuf,
    file: File,
    ino: u64,
    dev: u64,
    /// Its length: kept here as the writer appends (it is the file's only writer), and
    /// read again from the file at each path check and after a failed write.
    len: u64,
}

/// Rows to delete (those up to `upto`, whose lines are in synced files) and the committed
/// end written in their place: the end of the file as the last committed batch left it.
pub(crate) struct Prune {
    pub(crate) upto: i64,
    day: String,
    end: u64,
}

/// A batch's lines placed at the end of a file and not committed yet.
pub(crate) struct Appended {
    day: String,
    start: u64,
    /// The lines, each but the last followed by its newline: one row, one `write`.
    lines: String,
    /// The waiting bytes before these lines were added (what an undo goes back to).
    pending_before: usize,
}

/// The writer thread's accounting files.
pub(crate) struct AcctLog {
    dir: PathBuf,
    file: Option<DayFile>,
    /// The committed end, as the writer last committed it.
    committed_end: Option<(String, u64)>,
    /// The last row whose line is appended but whose file is not synced since.
    unsynced_upto: Option<i64>,
    /// Rows up to here are in synced files and go with the next transaction.
    prunable: Option<i64>,
    last_sync: Instant,
    /// When the day's path was last looked at (see [`PATH_CHECK_INTERVAL`]).
    path_checked: Instant,
    /// Lines of the current file placed after its end and not written yet, in order.
    pending: Vec<u8>,
    /// Since when `pending` has waited.
    pending_since: Option<Instant>,
    /// When writing the waiting lines last failed (to warn once a second, not per try).
    last_failure: Option<Instant>,
}

fn err(path: &Path) -> impl FnOnce(std::io::Error) -> AcctError + '_ {
    move |source| AcctError::Io { path: path.to_path_buf(), source }
}

/// Opens (creating, mode 0644) a day's file for appending.
fn open_append(path: &Path) -> Result<File, AcctError> {
    let file = OpenOptions::new().create(true).append(true).mode(0o644).open(path).map_err(err(path))?;
    Ok(file)
}

impl AcctLog {
    /// Creates the directory (0755) and repairs the files from the store: cuts off lines
    /// past the committed end and writes again committed lines a file lacks.
    pub(crate) fn open(dir: &Path, conn: &mut Connection) -> Result<AcctLog, AcctError> {
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(err(dir))?;
        let rows: Vec<(String, u64, String)> = {
            let mut stmt = conn.prepare("SELECT day, offset, line FROM accounting ORDER BY id")?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?)))?.collect::<Result<_, _>>()?
        };
        let end: Option<String> =
            conn.query_row("SELECT value FROM meta WHERE key = ?1", params![END_KEY], |r| r.get(0)).optional()?;
        // The meta row is only rewritten when rows are pruned: the rows still held end
        // where their last line does.
        let last = rows.last().map(|(day, offset, line)| (day.clone(), offset + line.len() as u64 + 1));
        let end = committed_end(end.as_deref().and_then(parse_end), last);
        if let Some((day, end)) = &end {
            let path = dir.join(day);
            if let Ok(meta) = std::fs::metadata(&path) {
                if meta.len() > *end {
                    let file = OpenOptions::new().write(true).open(&path).map_err(err(&path))?;
                    file.set_len(*end).map_err(err(&path))?;
                    file.sync_data().map_err(err(&path))?;
                    tracing::warn!(
                        file = %path.display(),
                        bytes = meta.len() - end,
                        "Removed accounting records of changes that were not committed"
                    );
                }
            }
        }
        let mut rewritten = 0usize;
        let mut touched: Vec<(PathBuf, File)> = Vec::new();
        for (day, offset, line) in rows {
            let path = dir.join(&day);
            let mut file = open_append(&path)?;
            let len = file.metadata().map_err(err(&path))?.len();
            let want = offset + line.len() as u64 + 1;
            if len >= want {
                continue;
            }
            // A batch cut short by the crash is written again whole.
            if len > offset {
                file.set_len(offset).map_err(err(&path))?;
                file.seek(SeekFrom::End(0)).map_err(err(&path))?;
            }
            file.write_all(format!("{line}\n").as_bytes()).map_err(err(&path))?;
            rewritten += 1;
            touched.push((path, file));
        }
        for (path, file) in &touched {
            file.sync_data().map_err(err(path))?;
        }
        if rewritten > 0 {
            tracing::warn!(n_records = rewritten, "Wrote committed accounting records missing from their file");
        }
        // Every row's line is now in its synced file: the rows go, and the end they
        // described is kept in the meta row.
        let tx = conn.transaction()?;
        if let Some((day, end)) = &end {
            set_end(&tx, day, *end)?;
        }
        tx.execute("DELETE FROM accounting", [])?;
        tx.commit()?;
        Ok(AcctLog {
            dir: dir.to_path_buf(),
            file: None,
            committed_end: None,
            unsynced_upto: None,
            prunable: None,
            last_sync: Instant::now(),
            path_checked: Instant::now(),
            pending: Vec::new(),
            pending_since: None,
            last_failure: None,
        })
    }

    /// Places `records` at the end of today's file, to be written there once the
    /// transaction that records them is committed.
    pub(crate) fn append(&mut self, conn: &mut Connection, records: &[&AcctRecord]) -> Result<Appended, AcctError> {
        let (stamp, day) = pbs_log::with_local_time(|time, day| (time.to_string(), day.to_string()));
        self.open_day(conn, &day)?;
        let Some(current) = self.file.as_mut() else {
            return Err(AcctError::Io { path: self.dir.join(&day), source: std::io::ErrorKind::NotFound.into() });
        };
        let start = current.len + self.pending.len() as u64;
        if self.committed_end.as_ref() != Some(&(day.clone(), start)) {
            commit_end(conn, &day, start, None)?;
            self.committed_end = Some((day.clone(), start));
        }
        // The batch's lines are built once, into one text: its row and the bytes to write.
        let size: usize = records.iter().map(|r| stamp.len() + r.id.len() + r.text.len() + 8).sum();
        let mut lines = String::with_capacity(size);
        for (i, record) in records.iter().enumerate() {
            if i > 0 {
                lines.push('\n');
            }
            push_line(&mut lines, &stamp, record);
        }
        let pending_before = self.pending.len();
        self.pending.extend_from_slice(lines.as_bytes());
        self.pending.push(b'\n');
        self.pending_since.get_or_insert_with(Instant::now);
        Ok(Appended { day, start, lines, pending_before })
    }

    /// Takes back lines whose transaction failed.
    pub(crate) fn undo(&mut self, appended: &Appended) {
        if self.file.as_ref().is_some_and(|f| f.day == appended.day) {
            self.pending.truncate(appended.pending_before);
            if self.pending.is_empty() {
                self.pending_since = None;
            }
        }
    }

    /// Whether committed lines wait to be written.
    pub(crate) fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Writes the waiting lines once they have waited [`FLUSH_INTERVAL`] (or are many),
    /// and syncs the file when it is time: what the writer does between commits.
    pub(crate) fn tick(&mut self) {
        let due = self.pending.len() >= FLUSH_BYTES
            || self.pending_since.is_some_and(|since| since.elapsed() >= FLUSH_INTERVAL);
        if due {
            self.write_pending();
        }
        if self.unsynced_upto.is_some() && self.last_sync.elapsed() >= SYNC_INTERVAL {
            self.sync();
        }
    }

    /// Writes the waiting lines to the current file. On failure they keep waiting (their
    /// rows are committed): the next try, or the next start, writes them.
    fn write_pending(&mut self) -> bool {
        if self.pending.is_empty() {
            return true;
        }
        let Some(current) = self.file.as_mut() else { return false };
        match current.file.write_all(&self.pending) {
            Ok(()) => {
                current.len += self.pending.len() as u64;
                // A burst of long records (a job's values may be a mebibyte each) is not
                // kept allocated once written.
                if self.pending.capacity() > FLUSH_BYTES {
                    self.pending = Vec::new();
                } else {
                    self.pending.clear();
                }
                self.pending_since = None;
                true
            }
            Err(e) => {
                // A short write leaves part of a line: the start's repair rewrites it whole
                // (its offset is known), so only the end that made it is cut back here.
                let _ = current.file.set_len(current.len);
                if let Ok(meta) = current.file.metadata() {
                    current.len = meta.len();
                }
                if self.last_failure.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                    tracing::warn!(file = %current.path.display(), error = %e, "Cannot write the accounting log; its records wait in the store");
                    self.last_failure = Some(Instant::now());
                }
                // Tried again after another interval, not at once.
                self.pending_since = Some(Instant::now());
                false
            }
        }
    }

    /// The rows whose lines are in synced files, to delete in the next transaction, with
    /// the committed end that transaction keeps in their place.
    pub(crate) fn prunable(&self) -> Option<Prune> {
        let upto = self.prunable?;
        let (day, end) = self.committed_end.clone()?;
        Some(Prune { upto, day, end })
    }

    /// Notes a committed transaction: its lines' rows end at `last_row`, and `pruned` rows
    /// went with it. Syncs the file when it is time.
    pub(crate) fn committed(&mut self, appended: Option<Appended>, last_row: Option<i64>, pruned: Option<i64>) {
        if pruned.is_some() && pruned == self.prunable {
            self.prunable = None;
        }
        if let (Some(appended), Some(last_row)) = (appended, last_row) {
            let end = appended.start + appended.lines.len() as u64 + 1;
            self.committed_end = Some((appended.day, end));
            self.unsynced_upto = Some(last_row);
        }
        self.tick();
    }

    fn sync(&mut self) {
        // Only written lines can be synced, and only synced ones' rows may go.
        if !self.write_pending() {
            return;
        }
        let Some(current) = self.file.as_ref() else { return };
        match current.file.sync_data() {
            Ok(()) => {
                self.prunable = self.unsynced_upto.take().or(self.prunable);
                self.last_sync = Instant::now();
            }
            Err(e) => tracing::warn!(file = %current.path.display(), error = %e, "Cannot sync the accounting log"),
        }
    }

    /// Makes `day`'s file the current one, opening it anew when the day changed or the
    /// file at its path is no longer the one open (moved away by an administrator).
    fn open_day(&mut self, conn: &mut Connection, day: &str) -> Result<(), AcctError> {
        let path = self.dir.join(day);
        let check = self.path_checked.elapsed() >= PATH_CHECK_INTERVAL;
        let same = self.file.as_mut().is_some_and(|f| {
            if f.day != day {
                return false;
            }
            if !check {
                return true;
            }
            match std::fs::metadata(&path) {
                Ok(m) if m.ino() == f.ino && m.dev() == f.dev => {
                    f.len = m.len();
                    true
                }
                _ => false,
            }
        });
        if check {
            self.path_checked = Instant::now();
        }
        if same {
            return Ok(());
        }
        if self.file.is_some() {
            // The old file's rows cannot be checked against the new one at a restart:
            // sync it and let them go with the new committed end.
            self.sync();
            if self.unsynced_upto.is_some() {
                let path = self.file.as_ref().map(|f| f.path.clone()).unwrap_or_default();
                return Err(AcctError::Io { path, source: std::io::Error::other("cannot sync") });
            }
        }
        let file = open_append(&path)?;
        let meta = file.metadata().map_err(err(&path))?;
        let start = meta.len();
        commit_end(conn, day, start, self.prunable.take())?;
        self.committed_end = Some((day.to_string(), start));
        self.file = Some(DayFile { day: day.to_string(), path, file, ino: meta.ino(), dev: meta.dev(), len: start });
        Ok(())
    }
}

impl Drop for AcctLog {
    /// A clean stop writes out and syncs what waits (a crash leaves it to the next start).
    fn drop(&mut self) {
        self.sync();
    }
}

/// Commits the end of `day`'s file on its own, deleting the rows up to `prune`.
fn commit_end(conn: &mut Connection, day: &str, end: u64, prune: Option<i64>) -> Result<(), rusqlite::Error> {
    let tx = conn.transaction()?;
    set_end(&tx, day, end)?;
    if let Some(prune) = prune {
        tx.execute("DELETE FROM accounting WHERE id <= ?1", params![prune])?;
    }
    tx.commit()
}

fn set_end(tx: &Transaction<'_>, day: &str, end: u64) -> Result<(), rusqlite::Error> {
    tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?
        .execute(params![END_KEY, format!("{day} {end}")])?;
    Ok(())
}

/// Within the batch's transaction: the appended lines' rows, and the synced rows deleted
/// with the committed end written in their place. Returns the last row's id.
///
/// The committed end is not written per batch: while rows are held, the last one ends
/// where the batch's lines do ([`committed_end`] reads it back at start), so a commit
/// touches one more page (the rows'), not two.
pub(crate) fn record_in(
    tx: &Transaction<'_>,
    appended: Option<&Appended>,
    prune: Option<&Prune>,
) -> Result<Option<i64>, rusqlite::Error> {
    if let Some(prune) = prune {
        tx.prepare_cached("DELETE FROM accounting WHERE id <= ?1")?.execute(params![prune.upto])?;
        set_end(tx, &prune.day, prune.end)?;
    }
    let Some(appended) = appended else { return Ok(None) };
    // One row per batch: its lines, at the batch's offset.
    tx.prepare_cached("INSERT INTO accounting (day, offset, line) VALUES (?1, ?2, ?3)")?.execute(params![
        appended.day,
        appended.start as i64,
        appended.lines
    ])?;
    Ok(Some(tx.last_insert_rowid()))
}

/// The committed end from the meta row and the end of the last row still held: the later
/// of the two. Both name the same day whenever rows are held (a new day's end is committed
/// with every earlier row deleted); should they not, the meta row (written last) wins.
fn committed_end(meta: Option<(String, u64)>, last_row: Option<(String, u64)>) -> Option<(String, u64)> {
    match (meta, last_row) {
        (Some(meta), Some(row)) if meta.0 == row.0 => Some((meta.0, meta.1.max(row.1))),
        (Some(meta), _) => Some(meta),
        (None, row) => row,
    }
}

fn parse_end(text: &str) -> Option<(String, u64)> {
    let (day, end) = text.split_once(' ')?;
    Some((day.to_string(), end.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_openpbs_layout_and_cannot_forge_another() {
        let record = AcctRecord { kind: 'D', id: "12.srv".into(), text: "requestor=u@h".into() };
        assert_eq!(format_line("11/25/2026 13:24:24", &record), "11/25/2026 13:24:24;D;12.srv;requestor=u@h");
        let record = AcctRecord { kind: 'Q', id: "13.srv".into(), text: "jobname=a\n11/25/2026;E;1.srv;x".into() };
        assert_eq!(format_line("t", &record), "t;Q;13.srv;jobname=a\\n11/25/2026;E;1.srv;x");
    }
}
