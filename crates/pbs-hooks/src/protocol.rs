//! The lines a daemon and a runner exchange (docs/hooks.md, "The runner protocol").

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The attribute and resource types the `pbs` module turns text into values by.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Defs {
    /// The server's name (`pbs.server().name`).
    pub server_name: String,
    /// Job attribute name to type (`string`, `long`, `resources`...).
    pub job_attrs: BTreeMap<String, String>,
    /// Resource name to type (`long`, `size`, `duration`...).
    pub resources: BTreeMap<String, String>,
}

/// The definitions for a server named `server_name` with `resources`: every job attribute
/// of pbs-core's table, typed as the protocol names types.
pub fn definitions(server_name: &str, resources: &pbs_core::resource::ResourceRegistry) -> Defs {
    let job_attrs = pbs_core::ObjectKind::Job
        .attributes()
        .iter()
        .map(|def| (def.name.to_string(), type_name(def.atype).to_string()))
        .collect();
    let resources = resources.all().map(|def| (def.name.clone(), def.rtype.to_string())).collect();
    Defs { server_name: server_name.to_string(), job_attrs, resources }
}

/// An attribute type's name in `defs`.
fn type_name(atype: pbs_core::AttrType) -> &'static str {
    use pbs_core::AttrType;
    match atype {
        AttrType::Str => "string",
        AttrType::Long => "long",
        AttrType::Float => "float",
        AttrType::Bool => "boolean",
        AttrType::Time => "time",
        AttrType::Duration => "duration",
        AttrType::Size => "size",
        AttrType::Char => "char",
        AttrType::Resources => "resources",
        AttrType::List => "list",
        AttrType::Env => "env",
    }
}

/// One attribute's value: text, or a resource list's resources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// The attribute's text.
    Text(String),
    /// Resource name to text.
    Resources(BTreeMap<String, String>),
}

/// A job as a hook sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JobData {
    /// Its id; none before it is created (queuejob).
    pub id: Option<String>,
    /// Attribute name to value.
    pub attrs: BTreeMap<String, Value>,
}

/// One hook run on one event.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// Set by the pool: the answer carries it back.
    pub id: u64,
    /// The hook's name.
    pub hook: String,
    /// The event (`queuejob`, `modifyjob`...).
    #[serde(rename = "type")]
    pub event_type: &'static str,
    /// The hook's body (written by the pool, only to an interpreter that does not have it).
    #[serde(skip_serializing)]
    pub script: Arc<str>,
    /// Seconds it may run.
    pub alarm: u64,
    /// The hook's `debug`.
    pub debug: bool,
    /// Who made the request.
    pub requestor: String,
    /// Their host.
    pub requestor_host: String,
    /// The event's job.
    pub job: Option<JobData>,
    /// In modifyjob: the job as it was.
    pub job_o: Option<JobData>,
    /// In periodic: the jobs it may read and change.
    pub jobs: Option<Vec<JobData>>,
    /// In mom events: the job's vnodes and their attributes.
    pub vnodes: Option<BTreeMap<String, BTreeMap<String, String>>>,
}

/// Who a hook event comes from (`pbs.event().requestor`, `requestor_host`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requestor {
    /// The user (or daemon) asking.
    pub user: String,
    /// Their host.
    pub host: String,
}

/// One hook to run: its name, body, alarm and `debug`, as the daemons keep them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookRun {
    /// Its name.
    pub name: String,
    /// Its body.
    pub script: Arc<str>,
    /// Seconds it may run.
    pub alarm: u64,
    /// Its `debug`.
    pub debug: bool,
}

impl Event {
    /// `run` at `event_type` for `who`, with no job, jobs or vnodes yet (the caller sets
    /// what its event shows).
    pub fn new(run: &HookRun, event_type: &'static str, who: &Requestor) -> Event {
        Event {
            id: 0,
            hook: run.name.clone(),
            event_type,
            script: run.script.clone(),
            alarm: run.alarm,
            debug: run.debug,
            requestor: who.user.clone(),
            requestor_host: who.host.clone(),
            job: None,
            job_o: None,
            jobs: None,
            vnodes: None,
        }
    }
}

/// A change a hook made to one attribute: its new text, or (for a resource list) its
/// changed resources, each `None` when unset.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Change {
    /// The new text.
    Text(String),
    /// Resource name to new text, `None` for one it unset.
    Resources(BTreeMap<String, Option<String>>),
}

/// Attribute name to its change, `None` for an attribute the hook unset.
pub type Changes = BTreeMap<String, Option<Change>>;

/// A `pbs.logmsg` or `pbs.logjobmsg` call.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct LogEntry {
    /// The log event mask the daemon writes.
    pub level: u32,
    /// The job of a `logjobmsg`.
    #[serde(default)]
    pub job: Option<String>,
    /// The message.
    pub msg: String,
}

/// What a hook decided.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Answer {
    /// The event's id.
    #[serde(default)]
    pub id: Option<u64>,
    /// False once the hook called `reject()` (or failed).
    #[serde(default)]
    pub accepted: bool,
    /// `reject(msg)`'s message.
    #[serde(default)]
    pub reject_message: Option<String>,
    /// The last line of the traceback of an exception the hook raised.
    #[serde(default)]
    pub exception: Option<String>,
    /// The hook ran past its alarm.
    #[serde(default)]
    pub alarm: bool,
    /// Changes to the event's job.
    #[serde(default)]
    pub job: Option<Changes>,
    /// In periodic: changes to other jobs by id.
    #[serde(default)]
    pub jobs: Option<BTreeMap<String, Changes>>,
    /// Its log calls, in order.
    #[serde(default)]
    pub log: Vec<LogEntry>,
    /// It called `pbs.server().scheduler_restart_cycle()` (and neither raised nor ran past
    /// its alarm): the scheduler is to start a new cycle.
    #[serde(default)]
    pub restart_cycle: bool,
}

/// Most jobs one query's answer carries: `pbs.server().jobs()` pages through the rest.
pub const MAX_JOBS_PER_QUERY: usize = 500;

/// What a running hook asks the daemon for (`pbs.server().jobs()`, `.job(id)`), written
/// by the runner as `{"op": "query", ...}` before its answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Query {
    /// `jobs` (a page, after `after`) or `job` (`job_id`).
    pub what: String,
    /// The job asked for.
    #[serde(default)]
    pub job_id: Option<String>,
    /// The page starts after this job id; from the first job when none.
    #[serde(default)]
    pub after: Option<String>,
    /// The queue asked for (`what`: `queue`).
    #[serde(default)]
    pub name: Option<String>,
}

/// The daemon's answer to a [`Query`], written as `{"op": "reply", ...}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueryReply {
    /// The jobs found, in id order (at most [`MAX_JOBS_PER_QUERY`]).
    pub jobs: Vec<JobData>,
    /// More jobs follow the last one.
    pub more: bool,
    /// The server or queue asked for (`what`: `server`, `queue`): none when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectData>,
}

/// A server or queue as hooks read it: its name and attributes as text, resources by
/// their dotted names (`resources_max.ncpus`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObjectData {
    /// Its name.
    pub name: String,
    /// Attribute name to text.
    pub attrs: BTreeMap<String, String>,
}
