//! The durable store: SQLite in WAL mode under `PBS_HOME/server_priv/`, written by one
//! thread that groups the changes of concurrent requests into one transaction (one fsync).
//!
//! Request handlers change the in-memory state, hand the matching [`StoreOp`]s to
//! [`Store::commit`] and reply only once the returned receiver reports the commit.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed; the request that needed the write fails with PBSE_SYSTEM.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The writer thread is gone (the server is shutting down).
    #[error("store writer stopped")]
    WriterGone,
    /// A record could not be serialized; its commit fails rather than store it empty.
    #[error("cannot serialize a record: {0}")]
    Encode(String),
    /// The accounting log could not be written (a full disk): the commit fails with it.
    #[error("{0}")]
    Accounting(#[from] crate::acctlog::AcctError),
}

/// A record serialized for the store, or why it could not be: such a record fails its
/// commit (which stops the server, as any failed commit does) instead of being stored
/// empty, so a restart never reads back a job or object that lost its attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record(Result<String, String>);

impl Record {
    /// `value` as JSON.
    pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> Record {
        Record(serde_json::to_string(value).map_err(|e| e.to_string()))
    }

    /// The text to store.
    pub(crate) fn text(&self) -> Result<&str, StoreError> {
        self.0.as_deref().map_err(|e| StoreError::Encode(e.clone()))
    }
}

impl From<String> for Record {
    fn from(text: String) -> Record {
        Record(Ok(text))
    }
}

/// One change to persist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreOp {
    /// Insert or replace a job record (JSON), and its script when given.
    PutJob {
        /// Sequence number, the primary key.
        seq: u64,
        /// JSON record.
        record: Record,
        /// The script, stored once at submission.
        script: Option<String>,
    },
    /// Insert or replace a subjob record.
    PutSubjob {
        /// The array's sequence number.
        seq: u64,
        /// The subjob's index.
        index: u64,
        /// JSON record.
        record: Record,
    },
    /// Remove a subjob record.
    DeleteSubjob {
        /// The array's sequence number.
        seq: u64,
        /// The subjob's index.
        index: u64,
    },
    /// Remove a job, its script and any subjob records.
    DeleteJob {
        /// Sequence number.
        seq: u64,
    },
    /// Insert or replace a server object (`server`, `queue`, `node`, `sched`, `hook`,
    /// `resource`).
    PutObject {
        /// Object kind.
        kind: &'static str,
        /// Object name.
        name: String,
        /// JSON record.
        record: Record,
    },
    /// Remove a server object.
    DeleteObject {
        /// Object kind.
        kind: &'static str,
        /// Object name.
        name: String,
    },
    /// Set a key of the meta table (e.g. the next job sequence number).
    SetMeta {
        /// Key.
        key: &'static str,
        /// Value.
        value: String,
    },
    /// An accounting record, written to the day's file with this commit (`acctlog`).
    Account(crate::acctlog::AcctRecord),
}

/// Everything read back at start.
#[derive(Debug, Default)]
pub struct Loaded {
    /// (seq, JSON record) of every job.
    pub jobs: Vec<(u64, String)>,
    /// (seq, index, JSON record) of every subjob that has run.
    pub subjobs: Vec<(u64, u64, String)>,
    /// (kind, name, JSON record) of every other object, in insertion order.
    pub objects: Vec<(String, String, String)>,
    /// Meta keys.
    pub meta: Vec<(String, String)>,
    /// The accounting entries job rows hold (`acct`), read in the same pass as the jobs
    /// for the accounting log's repair; [`Store::open`] hands them to it.
    pub(crate) job_entries: Vec<Vec<u8>>,
}

/// Why a commit did not happen. Any failed commit stops the server (see the writer), so
/// callers only ever pass this on as PBSE_SYSTEM.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// SQLite refused the transaction.
    #[error("database error: {0}")]
    Database(String),
    /// The writer thread is gone (the server is stopping).
    #[error("store writer stopped")]
    WriterGone,
}

/// The answer to a [`Store::commit`].
pub type CommitAck = oneshot::Receiver<Result<(), CommitError>>;

/// How the writer tells a commit's waiter it is done.
pub(crate) type Ack = oneshot::Sender<Result<(), CommitError>>;

/// Handle to the writer thread.
#[derive(Clone)]
pub struct Store {
    // Dropped before `_writer`: with the last clone's sender gone, the writer's loop ends
    // once it has committed what was queued, and the guard then waits for it.
    tx: mpsc::Sender<(Vec<StoreOp>, Ack)>,
    _writer: Option<Arc<WriterGuard>>,
}

/// The writer thread, joined when the last clone of the store is dropped, so what it
/// still holds (accounting lines waiting to be written) is out before the process goes on.
struct WriterGuard(Option<thread::JoinHandle<()>>);

impl Drop for WriterGuard {
    fn drop(&mut self) {
        if let Some(writer) = self.0.take() {
            let _ = writer.join();
        }
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (seq INTEGER PRIMARY KEY, record TEXT NOT NULL, script TEXT, acct BLOB);
CREATE TABLE IF NOT EXISTS subjobs (
    seq INTEGER NOT NULL, idx INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (seq, idx)
);
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL, name TEXT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (kind, name)
);
";

fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    // WAL lets the writer commit without blocking readers; synchronous=FULL fsyncs every
    // commit, which group commit makes affordable.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(crate::acctlog::SCHEMA)?;
    migrate(&conn)?;
    Ok(conn)
}

/// Brings a database written by an earlier version to the current layout.
fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let has_table = |name: &str| -> Result<bool, rusqlite::Error> {
        conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", params![name], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
    };
    let columns: Vec<String> =
        conn.prepare("SELECT * FROM jobs LIMIT 0")?.column_names().into_iter().map(str::to_string).collect();
    if !columns.iter().any(|c| c == "script") {
        conn.execute_batch("ALTER TABLE jobs ADD COLUMN script TEXT")?;
    }
    // Accounting entries ride in the job rows a commit writes anyway (`acctlog`).
    if !columns.iter().any(|c| c == "acct") {
        conn.execute_batch("ALTER TABLE jobs ADD COLUMN acct BLOB")?;
    }
    // Scripts used to live in a table of their own.
    if has_table("job_scripts")? {
        conn.execute_batch(
            "BEGIN;
             UPDATE jobs SET script = (SELECT script FROM job_scripts WHERE job_scripts.seq = jobs.seq)
                 WHERE script IS NULL;
             DROP TABLE job_scripts;
             COMMIT;",
        )?;
    }
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database, reads everything back and starts the
    /// writer thread, which writes accounting records to files in `accounting` (none are
    /// written without it).
    pub fn open(path: &Path, accounting: Option<&Path>) -> Result<(Store, Loaded), StoreError> {
        Store::open_with(path, accounting, WAL_RESTART_FRAMES)
    }

    /// [`Store::open`] with the WAL length at which the writer starts it over.
    fn open_with(
        path: &Path,
        accounting: Option<&Path>,
        wal_restart_frames: i64,
    ) -> Result<(Store, Loaded), StoreError> {
        let mut conn = open_connection(path)?;
        let mut loaded = load(&conn)?;
        let entries = std::mem::take(&mut loaded.job_entries);
        let acct = accounting.map(|dir| crate::acctlog::AcctLog::open(dir, &mut conn, entries)).transpose()?;
        // Checkpoints run on their own connection and thread: done inline (SQLite's
        // default) they would add a database fsync to some unlucky request's commit.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let checkpoint_conn = open_connection(path)?;
        let (poke, poked) = mpsc::sync_channel::<()>(1);
        let wal_long = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&wal_long);
        thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpoint_conn, poked, wal_restart_frames, &flag))
            .map_err(|_| StoreError::WriterGone)?;
        let (tx, rx) = mpsc::channel::<(Vec<StoreOp>, Ack)>();
        let writer = thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer_loop(conn, acct, rx, poke, &wal_long))
            .map_err(|_| StoreError::WriterGone)?;
        Ok((Store { tx, _writer: Some(Arc::new(WriterGuard(Some(writer)))) }, loaded))
    }

    /// A store without a database whose commits go to the returned receiver: a test
    /// sees each commit as it is queued, and acknowledges it (or not) when it chooses.
    #[cfg(test)]
    pub(crate) fn recording() -> (Store, mpsc::Receiver<(Vec<StoreOp>, Ack)>) {
        let (tx, rx) = mpsc::channel();
        (Store { tx, _writer: None }, rx)
    }

    /// Queues changes; the receiver fires once they are committed. Call it while holding
    /// the state lock so changes reach the disk in the order they were made in memory.
    pub fn commit(&self, ops: Vec<StoreOp>) -> CommitAck {
        let (ack_tx, ack_rx) = oneshot::channel();
        if ops.is_empty() {
            let _ = ack_tx.send(Ok(()));
        } else if let Err(mpsc::SendError((_, ack))) = self.tx.send((ops, ack_tx)) {
            let _ = ack.send(Err(CommitError::WriterGone));
        }
        ack_rx
    }

    /// Reads the scripts of several jobs (missing ones are left out). Runs on blocking
    /// threads; each keeps its read connection open between calls.
    pub fn read_scripts(path: &Path, seqs: &[u64]) -> Result<std::collections::HashMap<u64, String>, StoreError> {
        thread_local! {
            static READER: std::cell::RefCell<Option<(std::path::PathBuf, Connection)>> =
                const { std::cell::RefCell::new(None) };
        }
        READER.with(|cell| {
            let mut cached = cell.borrow_mut();
            if cached.as_ref().is_none_or(|(p, _)| p != path) {
                *cached = Some((path.to_path_buf(), Connection::open(path)?));
            }
            let Some((_, conn)) = cached.as_ref() else { return Ok(Default::default()) };
            let mut stmt = conn.prepare_cached("SELECT script FROM jobs WHERE seq = ?1")?;
            let mut out = std::collections::HashMap::new();
            for seq in seqs {
                let script: Option<Option<String>> = stmt.query_row(params![*seq as i64], |r| r.get(0)).optional()?;
                if let Some(Some(script)) = script {
                    out.insert(*seq, script);
                }
            }
            Ok(out)
        })
    }

    /// Reads a job's script.
    pub fn read_script(path: &Path, seq: u64) -> Result<Option<String>, StoreError> {
        let conn = Connection::open(path)?;
        Ok(conn.query_row("SELECT script FROM jobs WHERE seq = ?1", params![seq as i64], |r| r.get(0)).optional()?)
    }
}

fn load(conn: &Connection) -> Result<Loaded, StoreError> {
    let mut loaded = Loaded::default();
    let mut stmt = conn.prepare("SELECT seq, record, acct FROM jobs ORDER BY seq")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        loaded.jobs.push((row.get::<_, i64>(0)? as u64, row.get(1)?));
        if let Some(entries) = row.get::<_, Option<Vec<u8>>>(2)? {
            loaded.job_entries.push(entries);
        }
    }
    drop(rows);
    let mut stmt = conn.prepare("SELECT seq, idx, record FROM subjobs ORDER BY seq, idx")?;
    loaded.subjobs = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut stmt = conn.prepare("SELECT kind, name, record FROM objects ORDER BY rowid")?;
    loaded.objects = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let mut stmt = conn.prepare("SELECT key, value FROM meta")?;
    loaded.meta = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    Ok(loaded)
}

/// Least time between two checkpoints, so a busy writer is not chased by one per commit.
const CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// WAL length (in 4 KiB frames) from which the writer finishes a checkpoint itself, so
/// that its next commit starts the WAL over from the beginning.
///
/// SQLite only starts the WAL over when a write begins with every frame checkpointed. A
/// checkpoint on another thread never sees that under a steady stream of commits (some
/// always land while it copies), so the WAL would grow for as long as the stream lasts,
/// and every commit would append to the file: its fsync then also writes the file's new
/// size and extents, which measured twice the cost of an fsync of overwritten blocks here
/// (220-280 against 110-140 µs per 16 KiB).
const WAL_RESTART_FRAMES: i64 = 4096;

/// Copies committed WAL pages into the database whenever the writer says it committed
/// (at most every [`CHECKPOINT_INTERVAL`]). PASSIVE never blocks the writer. Raises
/// `wal_long` when the WAL has grown to `restart_frames` ([`WAL_RESTART_FRAMES`]).
fn checkpoint_loop(conn: Connection, poked: mpsc::Receiver<()>, restart_frames: i64, wal_long: &AtomicBool) {
    while poked.recv().is_ok() {
        match checkpoint(&conn) {
            Ok(frames) if frames >= restart_frames => wal_long.store(true, Ordering::Relaxed),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "WAL checkpoint failed"),
        }
        thread::sleep(CHECKPOINT_INTERVAL);
    }
    // The writer is gone: fold the whole WAL back so the next start reads one file.
    let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
}

/// A PASSIVE checkpoint; returns the WAL's length in frames.
fn checkpoint(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1))
}

/// What the writer thread does before it waits for the next commit, set once by the
/// server's binary: its allocator's collect. mimalloc gives a thread's freed pages back
/// only when that thread allocates again, and the writer (which formats the accounting
/// lines) may then wait a long time holding a burst's pages.
static WRITER_IDLE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Sets [`WRITER_IDLE`]'s hook (the first call wins).
pub fn on_writer_idle(hook: fn()) {
    let _ = WRITER_IDLE.set(hook);
}

fn writer_loop(
    mut conn: Connection,
    mut acct: Option<crate::acctlog::AcctLog>,
    rx: mpsc::Receiver<(Vec<StoreOp>, Ack)>,
    poke: mpsc::SyncSender<()>,
    wal_long: &AtomicBool,
) {
    loop {
        // Committed accounting lines wait a moment to be written together (`acctlog`):
        // wake for them when no commit comes first.
        let waiting = acct.as_ref().is_some_and(crate::acctlog::AcctLog::waiting);
        let first = if waiting {
            match rx.recv_timeout(crate::acctlog::FLUSH_INTERVAL) {
                Ok(first) => first,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(acct) = acct.as_mut() {
                        acct.tick();
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        } else {
            if let Some(hook) = WRITER_IDLE.get() {
                hook();
            }
            match rx.recv() {
                Ok(first) => first,
                Err(_) => break,
            }
        };
        // Everything that queued up while the previous commit was on disk goes into this
        // one transaction: that is the group commit.
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
            if batch.len() >= 4096 {
                break;
            }
        }
        let result = commit_batch(&mut conn, acct.as_mut(), &batch).map_err(|e| CommitError::Database(e.to_string()));
        for (_, ack) in batch {
            let _ = ack.send(result.clone());
        }
        if let Err(e) = &result {
            // Memory now holds changes the disk does not: serving on would show clients
            // jobs that a restart would not have. Stop, so a restart reloads what is durable.
            tracing::error!(error = %e, "Store commit failed; stopping the server");
            pbs_log::flush();
            // A best-effort moment for the error replies to go out; the exit does not
            // depend on it.
            std::thread::sleep(std::time::Duration::from_millis(100));
            std::process::exit(1);
        }
        if wal_long.swap(false, Ordering::Relaxed) {
            // The checkpoint thread has just copied nearly all of the WAL; the writer copies
            // the few frames committed meanwhile (no commit can land while it does), so
            // the next commit starts the WAL over. The batch above is already answered.
            if let Err(e) = checkpoint(&conn) {
                tracing::warn!(error = %e, "WAL checkpoint failed");
            }
        }
        // Full means a checkpoint is already pending: nothing to add.
        let _ = poke.try_send(());
    }
}

/// Commits a batch: its accounting lines are appended first, then the transaction holds
/// the changes and the lines' entries together (see `acctlog`).
fn commit_batch(
    conn: &mut Connection,
    acct: Option<&mut crate::acctlog::AcctLog>,
    batch: &[(Vec<StoreOp>, Ack)],
) -> Result<(), StoreError> {
    let Some(acct) = acct else { return apply(conn, batch, None, None) };
    let ops = || batch.iter().flat_map(|(ops, _)| ops);
    let records: Vec<&crate::acctlog::AcctRecord> = ops()
        .filter_map(|op| match op {
            StoreOp::Account(record) => Some(record),
            _ => None,
        })
        .collect();
    let rows: Vec<(u64, bool)> = ops()
        .filter_map(|op| match op {
            StoreOp::PutJob { seq, .. } => Some((*seq, true)),
            StoreOp::DeleteJob { seq } => Some((*seq, false)),
            _ => None,
        })
        .collect();
    let appended = if records.is_empty() { None } else { Some(acct.append(conn, &records)?) };
    let placement = acct.place(&rows, appended.as_ref());
    let prune = acct.prunable();
    match apply(conn, batch, Some(&placement), prune.as_ref()) {
        Ok(()) => {
            acct.committed(appended, placement, prune.map(|p| p.upto));
            Ok(())
        }
        Err(e) => {
            if let Some(appended) = &appended {
                acct.undo(appended);
            }
            Err(e)
        }
    }
}

/// One transaction: the batch's changes and, with the accounting log, where its entries
/// go (`placement`: a job row's `acct` column or a row of their own) and what a sync
/// allows to let go (`prune`).
fn apply(
    conn: &mut Connection,
    batch: &[(Vec<StoreOp>, Ack)],
    placement: Option<&crate::acctlog::Placement>,
    prune: Option<&crate::acctlog::Prune>,
) -> Result<(), StoreError> {
    let tx = conn.transaction()?;
    crate::acctlog::record_in(&tx, placement, prune)?;
    {
        // The script lives in the job's row (one B-tree touched per job, not two) and is
        // only written when given: later updates keep it. Without the accounting log the
        // entries a row holds are left as they are, for a later start with it to read.
        let mut put_job = tx.prepare_cached(if placement.is_some() {
            "INSERT INTO jobs (seq, record, script, acct) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (seq) DO UPDATE SET record = excluded.record,
                 script = coalesce(excluded.script, jobs.script), acct = excluded.acct"
        } else {
            "INSERT INTO jobs (seq, record, script, acct) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (seq) DO UPDATE SET record = excluded.record, script = coalesce(excluded.script, jobs.script)"
        })?;
        let mut del_job = tx.prepare_cached("DELETE FROM jobs WHERE seq = ?1")?;
        let mut put_subjob =
            tx.prepare_cached("INSERT OR REPLACE INTO subjobs (seq, idx, record) VALUES (?1, ?2, ?3)")?;
        let mut del_subjob = tx.prepare_cached("DELETE FROM subjobs WHERE seq = ?1 AND idx = ?2")?;
        let mut del_subjobs = tx.prepare_cached("DELETE FROM subjobs WHERE seq = ?1")?;
        let mut put_object = tx.prepare_cached(
            "INSERT INTO objects (kind, name, record) VALUES (?1, ?2, ?3)
             ON CONFLICT (kind, name) DO UPDATE SET record = excluded.record",
        )?;
        let mut del_object = tx.prepare_cached("DELETE FROM objects WHERE kind = ?1 AND name = ?2")?;
        let mut set_meta = tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
        for (ops, _) in batch {
            for op in ops {
                match op {
                    StoreOp::PutJob { seq, record, script } => {
                        let acct = placement.and_then(|p| p.column(*seq));
                        put_job.execute(params![*seq as i64, record.text()?, script, acct])?;
                    }
                    StoreOp::DeleteJob { seq } => {
                        del_job.execute(params![*seq as i64])?;
                        del_subjobs.execute(params![*seq as i64])?;
                    }
                    StoreOp::PutSubjob { seq, index, record } => {
                        put_subjob.execute(params![*seq as i64, *index as i64, record.text()?])?;
                    }
                    StoreOp::DeleteSubjob { seq, index } => {
                        del_subjob.execute(params![*seq as i64, *index as i64])?;
                    }
                    StoreOp::PutObject { kind, name, record } => {
                        put_object.execute(params![kind, name, record.text()?])?;
                    }
                    StoreOp::DeleteObject { kind, name } => {
                        del_object.execute(params![kind, name])?;
                    }
                    StoreOp::SetMeta { key, value } => {
                        set_meta.execute(params![key, value])?;
                    }
                    // Placed by `commit_batch`.
                    StoreOp::Account(_) => {}
                }
            }
        }
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn committed_ops_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbs.db");
        {
            let (store, loaded) = Store::open(&path, None).unwrap();
            assert!(loaded.jobs.is_empty());
            let ack = store.commit(vec![
                StoreOp::PutJob { seq: 1, record: "{}".to_string().into(), script: Some("echo".into()) },
                StoreOp::PutJob { seq: 2, record: "{}".to_string().into(), script: None },
                StoreOp::PutJob { seq: 1, record: "{}".to_string().into(), script: None },
                StoreOp::DeleteJob { seq: 2 },
                StoreOp::PutObject { kind: "queue", name: "workq".into(), record: "[]".to_string().into() },
                StoreOp::SetMeta { key: "next_seq", value: "3".into() },
            ]);
            ack.await.unwrap().unwrap();
        }
        let (_store, loaded) = Store::open(&path, None).unwrap();
        assert_eq!(loaded.jobs, vec![(1, "{}".to_string())]);
        assert_eq!(loaded.objects.len(), 1);
        assert_eq!(loaded.meta, vec![("next_seq".to_string(), "3".to_string())]);
        assert_eq!(Store::read_script(&path, 1).unwrap().as_deref(), Some("echo"));
    }

    /// The WAL header's checkpoint sequence number, which SQLite bumps each time it starts
    /// the WAL over (0 while there is no header).
    fn wal_restarts(wal: &Path) -> u32 {
        use std::io::Read;
        let mut header = [0u8; 16];
        match std::fs::File::open(wal).and_then(|mut f| f.read_exact(&mut header)) {
            Ok(()) => u32::from_be_bytes([header[12], header[13], header[14], header[15]]),
            Err(_) => 0,
        }
    }

    #[tokio::test]
    async fn a_steady_stream_of_commits_starts_the_wal_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbs.db");
        let wal = dir.path().join("pbs.db-wal");
        let (store, _) = Store::open_with(&path, None, 16).unwrap();
        // Changes arrive faster than commits take, as in a burst of submissions: every
        // commit finds the next one's changes queued, so the checkpoint thread alone never
        // finds the WAL fully copied, and the WAL would only grow.
        let stop = Arc::new(AtomicBool::new(false));
        let feeder = {
            let (store, stop) = (store.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    drop(store.commit(vec![StoreOp::PutJob { seq, record: "x".repeat(6000).into(), script: None }]));
                    thread::sleep(std::time::Duration::from_micros(50));
                }
                seq
            })
        };
        let started = std::time::Instant::now();
        while wal_restarts(&wal) < 2 && started.elapsed() < std::time::Duration::from_secs(30) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        stop.store(true, Ordering::Relaxed);
        let fed = feeder.join().unwrap();
        assert!(wal_restarts(&wal) >= 2, "the WAL did not start over twice in {fed} changes");
        // Commits are applied in order: once this one is on disk, all of them are.
        store.commit(vec![StoreOp::SetMeta { key: "next_seq", value: fed.to_string() }]).await.unwrap().unwrap();
        drop(store);
        let (_store, loaded) = Store::open(&path, None).unwrap();
        assert_eq!(loaded.jobs.len() as u64, fed);
    }

    fn record(kind: char, id: &str) -> StoreOp {
        StoreOp::Account(crate::acctlog::AcctRecord { kind, id: id.into(), text: format!("queue=workq {id}") })
    }

    fn today(dir: &Path) -> std::path::PathBuf {
        dir.join(pbs_log::with_local_time(|_, day| day.to_string()))
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path).unwrap().lines().map(|l| l.split_once(';').unwrap().1.to_string()).collect()
    }

    #[tokio::test]
    async fn records_reach_the_days_file_once_across_restarts() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbs.db");
        let acct = dir.path().join("accounting");
        {
            let (store, _) = Store::open(&path, Some(&acct)).unwrap();
            let ops = vec![StoreOp::SetMeta { key: "next_seq", value: "2".into() }, record('Q', "1.srv")];
            store.commit(ops).await.unwrap().unwrap();
            store.commit(vec![record('E', "1.srv")]).await.unwrap().unwrap();
        }
        let file = today(&acct);
        assert_eq!(lines(&file), ["Q;1.srv;queue=workq 1.srv", "E;1.srv;queue=workq 1.srv"]);
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o644);
        assert_eq!(std::fs::metadata(&acct).unwrap().permissions().mode() & 0o777, 0o755);

        // A restart writes nothing twice.
        drop(Store::open(&path, Some(&acct)).unwrap());
        assert_eq!(lines(&file).len(), 2);

        // Lines appended for a transaction that never committed (a kill between the two)
        // are cut off; committed lines a file lost (a power cut before it was synced) are
        // written again.
        {
            let (store, _) = Store::open(&path, Some(&acct)).unwrap();
            store.commit(vec![record('S', "2.srv")]).await.unwrap().unwrap();
        }
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("11/25/2026 13:24:24;E;3.srv;never committed\n");
        std::fs::write(&file, &text).unwrap();
        drop(Store::open(&path, Some(&acct)).unwrap());
        assert_eq!(lines(&file).len(), 3, "the uncommitted line is gone");
        {
            let (store, _) = Store::open(&path, Some(&acct)).unwrap();
            store.commit(vec![record('S', "3.srv")]).await.unwrap().unwrap();
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let cut = text.len() - 10;
        std::fs::write(&file, &text[..cut]).unwrap();
        drop(Store::open(&path, Some(&acct)).unwrap());
        assert_eq!(lines(&file)[2..], ["S;2.srv;queue=workq 2.srv", "S;3.srv;queue=workq 3.srv"]);
    }

    /// The writer keeps the file's length itself: lines written out between two commits
    /// (past the flush interval, inside a second) must move the next batch's offset, or a
    /// restart would take the file for longer than committed and cut good lines off.
    #[tokio::test]
    async fn batches_written_out_one_by_one_keep_their_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbs.db");
        let acct = dir.path().join("accounting");
        {
            let (store, _) = Store::open(&path, Some(&acct)).unwrap();
            for id in ["1.srv", "2.srv", "3.srv"] {
                store.commit(vec![record('Q', id)]).await.unwrap().unwrap();
                let file = today(&acct);
                let written = || std::fs::read_to_string(&file).unwrap_or_default().contains(&format!(";Q;{id};"));
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while !written() {
                    assert!(std::time::Instant::now() < deadline, "{id} never reached the file");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
        drop(Store::open(&path, Some(&acct)).unwrap());
        assert_eq!(
            lines(&today(&acct)),
            ["Q;1.srv;queue=workq 1.srv", "Q;2.srv;queue=workq 2.srv", "Q;3.srv;queue=workq 3.srv"]
        );
    }

    /// The committed end is written only after a sync; a kill -9 after the last entries
    /// stopped counting must still find every committed line in the file, once.
    #[test]
    fn records_survive_a_kill_after_their_rows_were_pruned() {
        let (_dir, acct_dir, mut conn, mut acct) = acct_store();
        let commit = |conn: &mut Connection, acct: &mut crate::acctlog::AcctLog, ops: Vec<StoreOp>| {
            let (ack, _) = oneshot::channel();
            commit_batch(conn, Some(acct), &[(ops, ack)]).unwrap();
            // Long enough for the lines to be written and the file synced.
            std::thread::sleep(std::time::Duration::from_millis(1100));
            acct.tick();
        };
        commit(&mut conn, &mut acct, vec![record('Q', "1.srv")]);
        commit(&mut conn, &mut acct, vec![record('E', "1.srv")]);
        // A batch without records prunes the rows of both lines (no job row was written
        // with them, so they had rows of their own).
        commit(&mut conn, &mut acct, vec![StoreOp::SetMeta { key: "next_seq", value: "2".into() }]);
        assert_eq!(batch_rows(&conn), 0, "the synced lines' rows are gone");
        // A kill: nothing the writer would do at a clean stop.
        std::mem::forget(acct);
        let file = today(&acct_dir);
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file), ["Q;1.srv;queue=workq 1.srv", "E;1.srv;queue=workq 1.srv"]);
        // Committed after the restart: one more line, nothing cut, nothing twice.
        let mut acct = reopen(&acct_dir, &mut conn);
        commit(&mut conn, &mut acct, vec![record('Q', "2.srv")]);
        std::mem::forget(acct);
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file).len(), 3);
        // A batch's lines are one row: a file that lost the end of a batch (a power cut
        // before its sync) gets the whole batch again, each line once.
        let mut acct = reopen(&acct_dir, &mut conn);
        commit(&mut conn, &mut acct, vec![record('Q', "3.srv"), record('Q', "4.srv")]);
        std::mem::forget(acct);
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, &text[..text.len() - 10]).unwrap();
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file)[3..], ["Q;3.srv;queue=workq 3.srv", "Q;4.srv;queue=workq 4.srv"]);
    }

    /// A store's connection and its accounting log, as the writer holds them, in a fresh
    /// directory (kept alive by the first value).
    fn acct_store() -> (tempfile::TempDir, std::path::PathBuf, Connection, crate::acctlog::AcctLog) {
        let dir = tempfile::tempdir().unwrap();
        let acct_dir = dir.path().join("accounting");
        let mut conn = open_connection(&dir.path().join("pbs.db")).unwrap();
        let acct = reopen(&acct_dir, &mut conn);
        (dir, acct_dir, conn, acct)
    }

    /// The accounting log as a start opens it: with the entries the job rows hold.
    fn reopen(acct_dir: &Path, conn: &mut Connection) -> crate::acctlog::AcctLog {
        let entries = load(conn).unwrap().job_entries;
        crate::acctlog::AcctLog::open(acct_dir, conn, entries).unwrap()
    }

    /// Whether job `seq`'s row holds accounting entries.
    fn holds_entries(conn: &Connection, seq: u64) -> bool {
        conn.query_row("SELECT acct IS NOT NULL FROM jobs WHERE seq = ?1", params![seq as i64], |r| r.get(0)).unwrap()
    }

    fn batch_rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM accounting_batches", [], |r| r.get(0)).unwrap()
    }

    fn put(seq: u64) -> StoreOp {
        StoreOp::PutJob { seq, record: "{}".to_string().into(), script: None }
    }

    /// Commits one batch, as the writer does, without waiting for its lines to be written.
    fn commit_now(conn: &mut Connection, acct: &mut crate::acctlog::AcctLog, ops: Vec<StoreOp>) {
        let (ack, _) = oneshot::channel();
        commit_batch(conn, Some(acct), &[(ops, ack)]).unwrap();
    }

    /// A commit's lines ride in the last job row it writes (no page of their own): they
    /// must come back from there after a kill that lost the file, including those of a row
    /// deleted before they were synced, and then never twice.
    #[test]
    fn lines_kept_in_job_rows_survive_a_kill_that_lost_the_file() {
        let (_dir, acct_dir, mut conn, mut acct) = acct_store();
        commit_now(&mut conn, &mut acct, vec![put(1), record('Q', "1.srv")]);
        commit_now(&mut conn, &mut acct, vec![put(2), record('Q', "2.srv"), put(1), record('S', "1.srv")]);
        assert_eq!(batch_rows(&conn), 0, "the lines are in the job rows, not rows of their own");
        assert!(
            holds_entries(&conn, 1) && !holds_entries(&conn, 2),
            "job 1's row, the last written each time, holds both"
        );
        // Job 1 goes, before its lines are synced, in a commit that writes no other row:
        // what its row held goes to a row of its own with the new line.
        commit_now(&mut conn, &mut acct, vec![StoreOp::DeleteJob { seq: 1 }, record('E', "1.srv")]);
        assert_eq!(batch_rows(&conn), 1);
        // A kill, and a file that lost every line (a power cut before its sync).
        std::mem::forget(acct);
        let file = today(&acct_dir);
        let _ = std::fs::remove_file(&file);
        drop(reopen(&acct_dir, &mut conn));
        let want = [
            "Q;1.srv;queue=workq 1.srv",
            "Q;2.srv;queue=workq 2.srv",
            "S;1.srv;queue=workq 1.srv",
            "E;1.srv;queue=workq 1.srv",
        ];
        assert_eq!(lines(&file), want);
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file), want, "nothing is written twice");
        // The next commit deletes the row that held them, and a new day's lines start
        // after them.
        let mut acct = reopen(&acct_dir, &mut conn);
        commit_now(&mut conn, &mut acct, vec![StoreOp::DeleteJob { seq: 2 }, put(3), record('Q', "3.srv")]);
        std::mem::forget(acct);
        let _ = std::fs::remove_file(&file);
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file), ["Q;3.srv;queue=workq 3.srv"], "only the line committed since");
    }

    /// No job row takes more than a bound of lines (a row written again and again while the
    /// file cannot be written would grow without end): past it, they get a row of their own.
    #[test]
    fn lines_too_many_for_a_job_row_get_a_row_of_their_own() {
        let (_dir, acct_dir, mut conn, mut acct) = acct_store();
        // 20 KiB that do not pack.
        let mut x: u32 = 1;
        let text: String = (0..20_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                char::from(b'a' + (x >> 16) as u8 % 26)
            })
            .collect();
        let big = StoreOp::Account(crate::acctlog::AcctRecord { kind: 'a', id: "1.srv".into(), text: text.clone() });
        commit_now(&mut conn, &mut acct, vec![put(1), big]);
        assert_eq!(batch_rows(&conn), 1);
        assert!(!holds_entries(&conn, 1));
        std::mem::forget(acct);
        let file = today(&acct_dir);
        let _ = std::fs::remove_file(&file);
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file), [format!("a;1.srv;{text}")]);
    }

    /// A job row keeps the lines it held after they were synced, until it is next written:
    /// they must never be written again, even to a new file at the same path.
    #[test]
    fn synced_lines_a_job_row_still_holds_are_not_written_again() {
        let (dir, acct_dir, mut conn, mut acct) = acct_store();
        commit_now(&mut conn, &mut acct, vec![put(1), record('Q', "1.srv")]);
        // Long enough for the line to be written and the file synced; the next commit
        // says so.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        acct.tick();
        commit_now(&mut conn, &mut acct, vec![put(2)]);
        assert!(holds_entries(&conn, 1), "job 1's row was not written since, so it still holds its line");
        std::mem::forget(acct);
        // An administrator moves the day's file away.
        let file = today(&acct_dir);
        std::fs::rename(&file, dir.path().join("moved")).unwrap();
        drop(reopen(&acct_dir, &mut conn));
        assert!(!file.exists() || lines(&file).is_empty(), "a synced line came back: {:?}", lines(&file));
        // Written again, the row lets its line go.
        let mut acct = reopen(&acct_dir, &mut conn);
        commit_now(&mut conn, &mut acct, vec![put(1)]);
        assert!(!holds_entries(&conn, 1));
    }

    /// A store from the version that kept each batch in a row of an `accounting` table:
    /// the lines its file lacks are written at the first start, and the table goes.
    #[test]
    fn lines_of_the_table_before_entries_are_written_at_the_first_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbs.db");
        let acct_dir = dir.path().join("accounting");
        let mut conn = open_connection(&path).unwrap();
        let day = pbs_log::with_local_time(|_, day| day.to_string());
        conn.execute_batch(&format!(
            "CREATE TABLE accounting (id INTEGER PRIMARY KEY, day TEXT NOT NULL, offset INTEGER NOT NULL, line TEXT NOT NULL);
             INSERT INTO accounting (day, offset, line) VALUES ('{day}', 0, 't;Q;1.srv;a'), ('{day}', 12, 't;E;1.srv;b');
             INSERT INTO meta (key, value) VALUES ('accounting_end', '{day} 0');"
        ))
        .unwrap();
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&today(&acct_dir)), ["Q;1.srv;a", "E;1.srv;b"]);
        let tables: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'accounting'", [], |r| r.get(0)).unwrap();
        assert_eq!(tables, 0);
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&today(&acct_dir)).len(), 2);
    }

    #[test]
    fn a_record_that_cannot_be_written_waits_in_the_store_and_reaches_its_file_once() {
        let (_dir, acct_dir, mut conn, mut acct) = acct_store();
        // A full disk, as /dev/full answers every write.
        let file = today(&acct_dir);
        std::os::unix::fs::symlink("/dev/full", &file).unwrap();
        let (ack, _) = oneshot::channel();
        let batch = vec![(
            vec![StoreOp::PutJob { seq: 9, record: "{}".to_string().into(), script: None }, record('Q', "9.srv")],
            ack,
        )];
        // The change and its record are committed together; the file cannot take the line.
        commit_batch(&mut conn, Some(&mut acct), &batch).unwrap();
        assert_eq!(load(&conn).unwrap().jobs.len(), 1);
        std::thread::sleep(crate::acctlog::FLUSH_INTERVAL);
        acct.tick();
        assert!(acct.waiting(), "the line waits for room");
        drop(acct);
        // Room again: the next start writes it, once.
        std::fs::remove_file(&file).unwrap();
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file), ["Q;9.srv;queue=workq 9.srv"]);
        drop(reopen(&acct_dir, &mut conn));
        assert_eq!(lines(&file).len(), 1);
    }

    #[test]
    fn old_layout_with_a_scripts_table_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbs.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE jobs (seq INTEGER PRIMARY KEY, record TEXT NOT NULL);
                 CREATE TABLE job_scripts (seq INTEGER PRIMARY KEY, script TEXT NOT NULL);
                 INSERT INTO jobs VALUES (4, '{}');
                 INSERT INTO job_scripts VALUES (4, 'echo old');",
            )
            .unwrap();
        }
        let (_store, loaded) = Store::open(&path, None).unwrap();
        assert_eq!(loaded.jobs, vec![(4, "{}".to_string())]);
        assert_eq!(Store::read_script(&path, 4).unwrap().as_deref(), Some("echo old"));
    }
}
