//! Hooks in Python: the `pbs` module and runner shipped with the daemons, and the pool of
//! warm interpreters that run hook events (protocol in docs/hooks.md).

pub mod files;
pub mod pool;
pub mod protocol;

pub use files::{RUNNER_FILE, install};
pub use pool::{Owner, Pool, Queries, RunError};
pub use protocol::{
    Answer, Change, Changes, Defs, Event, HookRun, JobData, LogEntry, ObjectData, Query, QueryReply, Requestor, Value,
};
pub use protocol::{MAX_JOBS_PER_QUERY, definitions};
