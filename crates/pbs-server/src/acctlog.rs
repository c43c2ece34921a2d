//! The accounting log's files (`PBS_HOME/server_priv/accounting/YYYYMMDD`): the lines the
//! store's writer commits in the same transaction as the changes they describe, written
//! out to the day's file after it, and the repair at start that leaves every committed
//! record in the files exactly once.
//!
//! Each group commit's transaction holds its lines, compressed, with their file, offset
//! and batch number (an *entry*), in a page the commit writes anyway: the `acct` column of
//! the last job row it writes ([`Placement`]). A row of its own costs each commit one more
//! page in the WAL and its fsync, which was most of what the log cost a burst of
//! submissions. Only a commit that writes no job row (a qdel of a queued job, the end of
//! one not kept in history) puts its entry in a row of `accounting_batches`. The lines
//! themselves are written to the file after the commit, in order, at most every
//! [`FLUSH_INTERVAL`] (or sooner when many are waiting): writing them before each commit
//! made the commit's own fsync carry the file's new block (the filesystem orders a file's
//! data before the metadata the journal commits), about a third of a lone client's
//! submission rate. So:
//! - a record is durable when its change is: both are in the one transaction;
//! - a crash before the lines reach the file (or a power loss before the file is synced)
//!   leaves the file shorter than the committed end, and the next start writes again from
//!   the entries the lines the file lacks: a committed record is never lost, and one
//!   already there never written twice;
//! - lines past the committed end (none should be, as they are written after their commit)
//!   are cut off at start: a record is never kept for a change that was not;
//! - a file that cannot be written (a full disk) leaves the lines waiting, in memory and in
//!   their entries, and the writer tries again: the requests go on being served, and the
//!   lines reach the file once it has room (or at the next start).
//!
//! The file is synced at most once a second; the next transaction then writes the `meta`
//! row `accounting_end` (`day end upto`): every entry numbered up to `upto` is in a synced
//! file, so the entries job rows still hold from before are ignored from then on (a row
//! sheds its own when it is next written), and `accounting_batches` loses its rows. A job
//! row deleted while it holds entries not synced yet hands them to the row that takes the
//! commit's entry. Before the first line goes to a file other than the one the committed
//! end names (a new day, or a file moved away), that end is committed anew in a small
//! transaction of its own, after the old file is written out and synced: only the file the
//! committed end names can ever lack lines. See docs/accounting.md.

use std::collections::HashMap;
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
    /// The entries that hold the lines could not be read or written.
    #[error("accounting log records: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Entries no job row of their commit could hold, a row per commit (`n`: the highest
/// batch number among them), deleted once synced.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS accounting_batches (n INTEGER PRIMARY KEY, entries BLOB NOT NULL);
";

/// The table of the version before entries: one row per batch, read once at start.
const OLD_TABLE: &str = "accounting";

/// The meta key of the committed end: `YYYYMMDD <bytes> <upto>`.
const END_KEY: &str = "accounting_end";

/// The first byte of an `acct` column or an `accounting_batches` row: the entries' layout.
const ENTRIES_LAYOUT: u8 = 1;

/// Entry bytes a job row holds at most; a commit whose entries would take its host past
/// this (a row written again and again while the file cannot be written) puts them in
/// `accounting_batches` instead, so no row grows without end.
const MAX_ROW_ENTRIES: usize = 16 << 10;

/// A batch's lines larger than this are not read back at start (a damaged entry).
const MAX_ENTRY_LINES: usize = 1 << 30;

/// How often the file is synced so that the entries of its lines stop counting.
const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// How often the day's path is looked at for a file moved away or written by someone
/// else: once a second, not at every commit, whose own work is a few system calls.
const PATH_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long committed lines wait before they are written to the file.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(200);

/// Committed lines written at once whatever their age, so that waiting lines stay few.
const FLUSH_BYTES: usize = 1 << 18;

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

/// What the next transaction writes once a sync has put entries in a synced file: the
/// entries up to `upto` no longer count, and the committed end goes with it.
pub(crate) struct Prune {
    pub(crate) upto: u64,
    day: String,
    end: u64,
}

/// A batch's lines placed at the end of a file and not committed yet.
pub(crate) struct Appended {
    day: String,
    /// Where the file ends after these lines and their newline.
    end: u64,
    /// The batch's number: entries are repaired in this order, and `upto` counts them.
    n: u64,
    /// The lines' entry, encoded once (see [`push_entry`]).
    entry: Vec<u8>,
    /// The waiting bytes before these lines were added (what an undo goes back to).
    pending_before: usize,
}

/// Where a commit's entries go: the job rows it writes that hold entries (its host, and
/// rows that held some already), or a row of `accounting_batches`.
#[derive(Default)]
pub(crate) struct Placement {
    /// The `acct` column of each job row written that holds entries; the others' is NULL.
    columns: HashMap<u64, Vec<u8>>,
    /// The row that takes the commit's new entries.
    host: Option<u64>,
    /// Rows deleted by the commit whose entries moved to the host (or the spill row).
    moved_from: Vec<u64>,
    /// Entries no row could take: (n, column).
    spill: Option<(u64, Vec<u8>)>,
    /// The highest batch number the commit writes.
    last_n: Option<u64>,
}

impl Placement {
    /// The `acct` column to write with job `seq`'s row.
    pub(crate) fn column(&self, seq: u64) -> Option<&[u8]> {
        self.columns.get(&seq).map(Vec::as_slice)
    }
}

/// The writer thread's accounting files.
pub(crate) struct AcctLog {
    dir: PathBuf,
    file: Option<DayFile>,
    /// The committed end, as the writer last committed it.
    committed_end: Option<(String, u64)>,
    /// The `upto` the meta row holds.
    committed_upto: u64,
    /// The number the next batch (or spill row) takes.
    next_n: u64,
    /// Entries not synced yet, by the job row that holds them (without the layout byte).
    hosted: HashMap<u64, Vec<u8>>,
    /// The last batch committed whose lines are not synced since.
    unsynced_upto: Option<u64>,
    /// Entries up to here are in synced files: the next transaction says so.
    prunable: Option<u64>,
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
    /// past the committed end and writes again committed lines a file lacks. `job_entries`
    /// are the `acct` columns of the job rows, read with the jobs themselves.
    pub(crate) fn open(dir: &Path, conn: &mut Connection, job_entries: Vec<Vec<u8>>) -> Result<AcctLog, AcctError> {
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(err(dir))?;
        let end: Option<String> =
            conn.query_row("SELECT value FROM meta WHERE key = ?1", params![END_KEY], |r| r.get(0)).optional()?;
        let meta = end.as_deref().and_then(parse_end);
        let upto = meta.as_ref().map_or(0, |(_, _, upto)| *upto);
        // A store written before entries holds its lines in rows of their own; they all
        // come before any entry.
        let mut batches: Vec<(String, u64, String)> = Vec::new();
        let old_table = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            params![OLD_TABLE],
            |r| r.get::<_, i64>(0),
        )? > 0;
        if old_table {
            let mut stmt = conn.prepare("SELECT day, offset, line FROM accounting ORDER BY id")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?)))?;
            batches = rows.collect::<Result<_, _>>()?;
        }
        let spilled: Vec<Vec<u8>> = {
            let mut stmt = conn.prepare("SELECT entries FROM accounting_batches")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        let mut entries = Vec::new();
        for column in job_entries.iter().chain(&spilled) {
            if let Err(e) = read_entries(column, upto, &mut entries) {
                tracing::warn!(error = %e, "An accounting entry in the store cannot be read; its lines are skipped");
            }
        }
        entries.sort_by_key(|e| e.n);
        let last_n = entries.last().map_or(upto, |e| e.n.max(upto));
        batches.extend(entries.into_iter().map(|e| (e.day, e.offset, e.lines)));
        // The meta row is only rewritten once entries are synced: the entries still
        // counted end where their last line does.
        let last = batches.last().map(|(day, offset, line)| (day.clone(), offset + line.len() as u64 + 1));
        let end = committed_end(meta.map(|(day, end, _)| (day, end)), last);
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
        for (day, offset, line) in batches {
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
        // Every entry's lines are now in their synced file: the meta row says so (the
        // entries job rows hold no longer count), and the other rows go.
        let tx = conn.transaction()?;
        if let Some((day, end)) = &end {
            set_end(&tx, day, *end, last_n)?;
        }
        if old_table {
            tx.execute_batch("DROP TABLE accounting")?;
        }
        tx.execute("DELETE FROM accounting_batches", [])?;
        tx.commit()?;
        Ok(AcctLog {
            dir: dir.to_path_buf(),
            file: None,
            committed_end: None,
            committed_upto: last_n,
            next_n: last_n + 1,
            hosted: HashMap::new(),
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
            commit_end(conn, &day, start, self.committed_upto, None)?;
            self.committed_end = Some((day.clone(), start));
        }
        // The batch's lines are built once, into one text: its entry and the bytes to write.
        let size: usize = records.iter().map(|r| stamp.len() + r.id.len() + r.text.len() + 8).sum();
        let mut lines = String::with_capacity(size);
        for (i, record) in records.iter().enumerate() {
            if i > 0 {
                lines.push('\n');
            }
            push_line(&mut lines, &stamp, record);
        }
        let n = self.next_n;
        self.next_n += 1;
        let mut entry = Vec::new();
        push_entry(&mut entry, n, &day, start, &lines);
        let pending_before = self.pending.len();
        self.pending.extend_from_slice(lines.as_bytes());
        self.pending.push(b'\n');
        self.pending_since.get_or_insert_with(Instant::now);
        let end = start + lines.len() as u64 + 1;
        Ok(Appended { day, end, n, entry, pending_before })
    }

    /// Where the commit whose job rows are `rows` (each `(seq, written)`: written, or
    /// deleted, in the commit's order) puts its entries: the last row it writes and does
    /// not delete takes the new batch's entry and those of the rows it deletes; rows
    /// written that hold entries already write them again.
    pub(crate) fn place(&mut self, rows: &[(u64, bool)], appended: Option<&Appended>) -> Placement {
        let mut placement = Placement::default();
        // Sets, not lists: a batch may delete thousands of jobs (one qdel of many).
        let mut deleted_later = std::collections::HashSet::new();
        let mut host = None;
        for &(seq, written) in rows.iter().rev() {
            if !written {
                deleted_later.insert(seq);
            } else if !deleted_later.contains(&seq) {
                host = Some(seq);
                break;
            }
        }
        let mut moved = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &(seq, written) in rows {
            if written || Some(seq) == host {
                continue;
            }
            if let Some(entries) = self.hosted.get(&seq).filter(|_| seen.insert(seq)) {
                moved.extend_from_slice(entries);
                placement.moved_from.push(seq);
            }
        }
        if let Some(appended) = appended {
            moved.extend_from_slice(&appended.entry);
            placement.last_n = Some(appended.n);
        }
        if !moved.is_empty() {
            let held = host.map_or(0, |h| self.hosted.get(&h).map_or(0, Vec::len));
            match host.filter(|_| held + moved.len() <= MAX_ROW_ENTRIES) {
                Some(host) => {
                    let own = self.hosted.get(&host).map_or(&[][..], Vec::as_slice);
                    placement.columns.insert(host, column_of(&[own, &moved]));
                    placement.host = Some(host);
                }
                None => {
                    let n = match appended {
                        Some(appended) => appended.n,
                        None => {
                            self.next_n += 1;
                            self.next_n - 1
                        }
                    };
                    placement.spill = Some((n, column_of(&[&moved])));
                    placement.last_n = Some(n);
                }
            }
        }
        for &(seq, written) in rows {
            if written && !placement.columns.contains_key(&seq) {
                if let Some(entries) = self.hosted.get(&seq) {
                    placement.columns.insert(seq, column_of(&[entries]));
                }
            }
        }
        placement
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
    /// entries are committed): the next try, or the next start, writes them.
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

    /// The entries whose lines are in synced files, for the next transaction to say so,
    /// with the committed end it writes.
    pub(crate) fn prunable(&self) -> Option<Prune> {
        let upto = self.prunable?;
        let (day, end) = self.committed_end.clone()?;
        Some(Prune { upto, day, end })
    }

    /// Notes a committed transaction: its entries went where `placement` put them, and it
    /// said entries up to `pruned` are synced. Syncs the file when it is time.
    pub(crate) fn committed(&mut self, appended: Option<Appended>, mut placement: Placement, pruned: Option<u64>) {
        if let Some(pruned) = pruned {
            self.committed_upto = self.committed_upto.max(pruned);
            if Some(pruned) == self.prunable {
                self.prunable = None;
            }
        }
        for seq in &placement.moved_from {
            self.hosted.remove(seq);
        }
        if let Some(host) = placement.host {
            if let Some(mut column) = placement.columns.remove(&host) {
                column.remove(0);
                self.hosted.insert(host, column);
            }
        }
        if placement.last_n.is_some() {
            self.unsynced_upto = self.unsynced_upto.max(placement.last_n);
        }
        if let Some(appended) = appended {
            self.committed_end = Some((appended.day, appended.end));
        }
        self.tick();
    }

    fn sync(&mut self) {
        // Only written lines can be synced, and only synced ones' entries may stop counting.
        if !self.write_pending() {
            return;
        }
        let Some(current) = self.file.as_ref() else { return };
        match current.file.sync_data() {
            Ok(()) => {
                self.prunable = self.unsynced_upto.take().or(self.prunable);
                // Every committed entry's lines are in the synced file now.
                self.hosted.clear();
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
            // The old file's entries cannot be checked against the new one at a restart:
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
        let upto = self.prunable.take().map_or(self.committed_upto, |p| p.max(self.committed_upto));
        commit_end(conn, day, start, upto, Some(upto))?;
        self.committed_upto = upto;
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

/// Commits the end of `day`'s file on its own, with the entries up to `upto` synced (the
/// rows of `accounting_batches` up to `prune` deleted).
fn commit_end(
    conn: &mut Connection,
    day: &str,
    end: u64,
    upto: u64,
    prune: Option<u64>,
) -> Result<(), rusqlite::Error> {
    let tx = conn.transaction()?;
    set_end(&tx, day, end, upto)?;
    if let Some(prune) = prune {
        tx.execute("DELETE FROM accounting_batches WHERE n <= ?1", params![prune as i64])?;
    }
    tx.commit()
}

fn set_end(tx: &Transaction<'_>, day: &str, end: u64, upto: u64) -> Result<(), rusqlite::Error> {
    tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?
        .execute(params![END_KEY, format!("{day} {end} {upto}")])?;
    Ok(())
}

/// Within the batch's transaction: the entries no job row takes, and, after a sync, the
/// meta row that says which entries are synced (with the committed end) and the
/// `accounting_batches` rows that go with them.
///
/// The committed end is not written per batch: while entries count, the last one ends
/// where the batch's lines do ([`committed_end`] reads it back at start).
pub(crate) fn record_in(
    tx: &Transaction<'_>,
    placement: Option<&Placement>,
    prune: Option<&Prune>,
) -> Result<(), rusqlite::Error> {
    if let Some(prune) = prune {
        tx.prepare_cached("DELETE FROM accounting_batches WHERE n <= ?1")?.execute(params![prune.upto as i64])?;
        set_end(tx, &prune.day, prune.end, prune.upto)?;
    }
    if let Some((n, column)) = placement.and_then(|p| p.spill.as_ref()) {
        tx.prepare_cached("INSERT INTO accounting_batches (n, entries) VALUES (?1, ?2)")?
            .execute(params![*n as i64, column])?;
    }
    Ok(())
}

/// Appends one entry: `n`, the offset, the lines' length, the packed length (u64, u64,
/// u32, u32, little-endian), the day's length (u8) and name, then the lines packed with
/// LZ4 (a batch's lines share most of their keys and values: a tenth of their size).
fn push_entry(out: &mut Vec<u8>, n: u64, day: &str, offset: u64, lines: &str) {
    let packed = lz4_flex::block::compress(lines.as_bytes());
    let day = &day.as_bytes()[..day.len().min(u8::MAX as usize)];
    out.reserve(8 + 8 + 4 + 4 + 1 + day.len() + packed.len());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&(u32::try_from(lines.len()).unwrap_or(u32::MAX)).to_le_bytes());
    out.extend_from_slice(&(u32::try_from(packed.len()).unwrap_or(u32::MAX)).to_le_bytes());
    out.push(day.len() as u8);
    out.extend_from_slice(day);
    out.extend_from_slice(&packed);
}

/// An `acct` column or `accounting_batches` row: the layout byte, then `parts`' entries.
fn column_of(parts: &[&[u8]]) -> Vec<u8> {
    let mut column = Vec::with_capacity(1 + parts.iter().map(|p| p.len()).sum::<usize>());
    column.push(ENTRIES_LAYOUT);
    for part in parts {
        column.extend_from_slice(part);
    }
    column
}

/// One entry read back: a batch's lines and where they go.
struct Entry {
    n: u64,
    day: String,
    offset: u64,
    lines: String,
}

/// Reads the entries of a column numbered above `upto` into `out` (those at or below are
/// in synced files and are not unpacked).
fn read_entries(column: &[u8], upto: u64, out: &mut Vec<Entry>) -> Result<(), String> {
    let Some((&layout, mut rest)) = column.split_first() else { return Ok(()) };
    if layout != ENTRIES_LAYOUT {
        return Err(format!("unknown entries layout {layout}"));
    }
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if rest.len() < n {
            return Err("an entry is cut short".into());
        }
        let (head, tail) = rest.split_at(n);
        *rest = tail;
        Ok(head)
    }
    let u64_of = |b: &[u8]| b.try_into().map(u64::from_le_bytes).map_err(|_| "bad entry".to_string());
    let u32_of = |b: &[u8]| b.try_into().map(u32::from_le_bytes).map_err(|_| "bad entry".to_string());
    while !rest.is_empty() {
        let n = u64_of(take(&mut rest, 8)?)?;
        let offset = u64_of(take(&mut rest, 8)?)?;
        let len = u32_of(take(&mut rest, 4)?)? as usize;
        let packed_len = u32_of(take(&mut rest, 4)?)? as usize;
        let day_len = take(&mut rest, 1)?[0] as usize;
        let day = take(&mut rest, day_len)?;
        let packed = take(&mut rest, packed_len)?;
        if n <= upto {
            continue;
        }
        if len > MAX_ENTRY_LINES {
            return Err(format!("an entry of {len} bytes"));
        }
        let day = std::str::from_utf8(day).map_err(|e| e.to_string())?.to_string();
        let lines = lz4_flex::block::decompress(packed, len).map_err(|e| e.to_string())?;
        let lines = String::from_utf8(lines).map_err(|e| e.to_string())?;
        if lines.len() != len {
            return Err("an entry's lines have the wrong length".into());
        }
        out.push(Entry { n, day, offset, lines });
    }
    Ok(())
}

/// The committed end from the meta row and the end of the last entry that still counts:
/// the later of the two. Both name the same day whenever entries count (a new day's end
/// is committed with every earlier entry synced); should they not, the meta row (written
/// last) wins.
fn committed_end(meta: Option<(String, u64)>, last_entry: Option<(String, u64)>) -> Option<(String, u64)> {
    match (meta, last_entry) {
        (Some(meta), Some(entry)) if meta.0 == entry.0 => Some((meta.0, meta.1.max(entry.1))),
        (Some(meta), _) => Some(meta),
        (None, entry) => entry,
    }
}

/// `day end upto` (a store written before entries has no `upto`: 0).
fn parse_end(text: &str) -> Option<(String, u64, u64)> {
    let mut words = text.split(' ');
    let day = words.next()?.to_string();
    let end = words.next()?.parse().ok()?;
    let upto = match words.next() {
        Some(upto) => upto.parse().ok()?,
        None => 0,
    };
    Some((day, end, upto))
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
