//! Message types of every frame, one enum per direction, and the version they make up.
//!
//! Attributes travel as `(name, value)` pairs with resources in dotted form
//! (`Resource_List.ncpus`), values in the canonical text OpenPBS shows, except time
//! attributes (`ctime`, `mtime`, ...), which travel as seconds since the epoch and are turned
//! into ctime(3) text by the commands, as OpenPBS's qstat does.

use serde::{Deserialize, Serialize};

/// Version of this protocol; a peer speaking another version is refused at the handshake.
pub const PROTOCOL_VERSION: u32 = 2;

/// One attribute: full dotted name and value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attr(pub String, pub String);

impl Attr {
    /// Builds an attribute from anything string-like.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Attr {
        Attr(name.into(), value.into())
    }

    /// The full dotted name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// The value.
    pub fn value(&self) -> &str {
        &self.1
    }
}

/// The role a peer claims in its [`Hello`]; anything but `Client` must prove the cluster key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Role {
    /// A command (qsub, qstat, ...), identified by the kernel on the Unix socket.
    Client,
    /// The scheduler.
    Scheduler,
    /// An execution daemon for the named node.
    Mom {
        /// The node name it serves.
        node: String,
    },
    /// The server, connecting to a mom (see [`crate::mom`]).
    Server,
}

/// First frame of every connection, from the connecting side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the peer.
    pub version: u32,
    /// What the peer is.
    pub role: Role,
    /// On TCP: the first message of the link's handshake, hex ([`crate::link`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<String>,
    /// A command on TCP: how it proves who it is (`munge`), over an unkeyed link
    /// ([`crate::link::UnkeyedInitiation`]); daemons, which hold a key, send none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

/// A MUNGE credential proving one end of an unkeyed link, sealed, after the handshake:
/// the command's first, then the server's ([`crate::link::munge_payload`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthProof {
    /// The credential.
    pub credential: String,
}

impl Hello {
    /// The Hello of a command on the Unix socket, where the kernel names the peer.
    pub fn local(role: Role) -> Hello {
        Hello { version: PROTOCOL_VERSION, role, noise: None, auth: None }
    }
}

/// The server's answer to a [`Hello`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HelloReply {
    /// Accepted: requests may follow.
    Welcome {
        /// The server's protocol version.
        version: u32,
        /// The server name, the suffix of job ids (`12.<server_name>`).
        server_name: String,
    },
    /// On TCP: the handshake's answer, hex ([`crate::link`]); every frame after it is
    /// sealed, beginning with the Welcome.
    Handshake {
        /// The responder's handshake message.
        noise: String,
    },
    /// Refused; the server closes the connection after this.
    Refused {
        /// PBSE code.
        code: u32,
        /// Why.
        message: String,
    },
}

/// A request frame: an id chosen by the client, echoed in the reply, and the request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFrame {
    /// Client-chosen id.
    pub id: u64,
    /// The request.
    pub request: Request,
}

/// A batch request. Names follow OpenPBS's batch request types.
///
/// Every request is atomic: it either takes full effect (and is committed to disk before
/// the reply) or none. Requests on one connection are answered in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum Request {
    /// Submit a job (qsub). Reply: [`ReplyBody::JobId`].
    QueueJob {
        /// Attributes the submitter sets.
        attrs: Vec<Attr>,
        /// The job script.
        script: String,
        /// `-q queue[@server]`; the server's `default_queue` when absent.
        destination: Option<String>,
    },
    /// Status of jobs (qstat). Reply: [`ReplyBody::Status`], streamed in parts.
    StatusJob {
        /// Job ids; with `queues` also empty, every job the caller may see.
        ids: Vec<String>,
        /// Jobs of these queues.
        queues: Vec<String>,
        /// Only these attributes (full or base names); empty means all.
        attrs: Vec<String>,
        /// Include finished (history) jobs.
        history: bool,
        /// Expand arrays into their subjobs.
        subjobs: bool,
    },
    /// Ids of the jobs matching every criterion (qselect). Reply: [`ReplyBody::Ids`].
    SelectJobs {
        /// Criteria, all of which must hold.
        criteria: Vec<Criterion>,
        /// Include finished jobs.
        history: bool,
        /// Include subjobs of arrays (qselect -T without -J... see qselect).
        subjobs: bool,
        /// Only array parents (qselect -J).
        arrays_only: bool,
    },
    /// Change job attributes (qalter). Reply: [`ReplyBody::PerId`].
    ModifyJob {
        /// Jobs to alter.
        ids: Vec<String>,
        /// New values.
        attrs: Vec<Attr>,
    },
    /// Delete jobs (qdel). Reply: [`ReplyBody::PerId`].
    DeleteJob {
        /// Jobs to delete.
        ids: Vec<String>,
        /// `-W force`.
        force: bool,
        /// `-x`: also purge finished jobs from history.
        purge_history: bool,
    },
    /// Add holds (qhold). Reply: [`ReplyBody::PerId`].
    HoldJob {
        /// Jobs.
        ids: Vec<String>,
        /// Hold letters, `u`, `o`, `s` (default `u`).
        hold_types: String,
    },
    /// Remove holds (qrls). Reply: [`ReplyBody::PerId`].
    ReleaseJob {
        /// Jobs.
        ids: Vec<String>,
        /// Hold letters to remove.
        hold_types: String,
    },
    /// Server status (qstat -B, qmgr list server). Reply: [`ReplyBody::Status`].
    StatusServer {
        /// Only these attributes; empty means all.
        attrs: Vec<String>,
    },
    /// Queue status (qstat -Q). Reply: [`ReplyBody::Status`].
    StatusQueue {
        /// Queues; empty means all.
        names: Vec<String>,
        /// Only these attributes; empty means all.
        attrs: Vec<String>,
    },
    /// Node status (pbsnodes, qmgr list node). Reply: [`ReplyBody::Status`].
    StatusNode {
        /// Nodes; empty means all.
        names: Vec<String>,
    },
    /// Scheduler object status (qmgr list sched). Reply: [`ReplyBody::Status`].
    StatusSched {
        /// Schedulers; empty means all.
        names: Vec<String>,
    },
    /// Resource definitions (qmgr list resource). Reply: [`ReplyBody::Status`].
    StatusResource {
        /// Resources; empty means the custom ones.
        names: Vec<String>,
    },
    /// Hooks (qmgr list hook). Reply: [`ReplyBody::Status`].
    StatusHook {
        /// Hooks; empty means all.
        names: Vec<String>,
    },
    /// Replace a hook's body or its configuration file (qmgr import hook). Only root on
    /// the server's host. Reply: [`ReplyBody::None`].
    ImportHook {
        /// The hook.
        name: String,
        /// `application/x-python` (the body) or `application/x-config`.
        content_type: String,
        /// `default` (the text as it is) or `base64`.
        encoding: String,
        /// The file's contents, in that encoding.
        content: String,
    },
    /// A hook's body or configuration file (qmgr export hook, print hook). Only root on
    /// the server's host. Reply: [`ReplyBody::Text`].
    ExportHook {
        /// The hook.
        name: String,
        /// `application/x-python` or `application/x-config`.
        content_type: String,
        /// `default` or `base64`.
        encoding: String,
    },
    /// Run a job now (qrun). Without `exec_vnode` the scheduler places it, ignoring policy
    /// limits; with it (`qrun -H`) the server runs it there. Reply: [`ReplyBody::None`] once
    /// the job has been sent to its mom.
    RunJob {
        /// The job (a subjob id for arrays).
        id: String,
        /// `-H`: `(n1:ncpus=1)+(n2)` or `n1+n2`.
        exec_vnode: Option<String>,
    },
    /// Send a signal to running jobs (qsig). Reply: [`ReplyBody::PerId`].
    SignalJob {
        /// Jobs.
        ids: Vec<String>,
        /// `-s`: a signal name with or without `SIG`, a number, `suspend`, `resume`.
        signal: String,
    },
    /// Requeue running jobs (qrerun). Reply: [`ReplyBody::PerId`].
    RerunJob {
        /// Jobs.
        ids: Vec<String>,
        /// `-W force`: requeue even if the mom cannot be reached.
        force: bool,
    },
    /// Move queued jobs to another queue of this server (qmove). Reply: [`ReplyBody::PerId`].
    MoveJob {
        /// Jobs.
        ids: Vec<String>,
        /// `queue`, `queue@server` or `@server` (the server's default queue).
        destination: String,
    },
    /// Preempt running jobs (OpenPBS's `pbs_preempt_jobs`): managers and the scheduler
    /// only. Each job is tried with the methods of the scheduler's `preempt_order`.
    /// Reply: [`ReplyBody::Preempted`], one entry per id in the order given.
    PreemptJobs {
        /// Jobs.
        ids: Vec<String>,
    },
    /// A qmgr command on a server object. Reply: [`ReplyBody::None`].
    Manager {
        /// create, delete, set or unset.
        command: MgrCommand,
        /// The kind of object.
        object: MgrObject,
        /// Object names; empty means the default (server, default scheduler) or all.
        names: Vec<String>,
        /// Attributes with their operation.
        attrs: Vec<MgrAttr>,
    },
    /// Swap two jobs' places in the queues' order (qorder): their `queue_rank`, and their
    /// queues when they differ. Neither may have started. Reply: [`ReplyBody::None`].
    OrderJob {
        /// The first job.
        first: String,
        /// The second job.
        second: String,
    },
    /// Stop the server (qterm): operators and managers. Reply: [`ReplyBody::None`], once
    /// the server has done what `manner` asks and is about to stop.
    Shutdown {
        /// `quick` (running jobs go on), `immediate` (running jobs are requeued, or
        /// killed when not rerunnable) or `delay` (no new runs; waits for running jobs).
        manner: String,
        /// `-s`: the scheduler stops too.
        scheduler: bool,
        /// `-m`: the moms stop too (their jobs go on under their shepherds).
        moms: bool,
    },
    /// Append a line to a running job's stderr and/or stdout (qmsg), written by its
    /// mother superior's mom as the job's owner. Reply: [`ReplyBody::None`] once the mom
    /// has written it, or the mom's error.
    MessageJob {
        /// The job.
        id: String,
        /// The line (without its newline).
        text: String,
        /// `-O`: to the job's stdout.
        stdout: bool,
        /// `-E` (the default): to the job's stderr.
        stderr: bool,
    },
    /// Wait until a job has left the live set (`qsub -W block=true`). Reply:
    /// [`ReplyBody::JobDone`] once it ended (its exit status) or was deleted or aborted
    /// (why, which qsub prints); at once for a job already finished. Only its owner, an
    /// operator or a manager may wait for a job.
    WaitJob {
        /// The job.
        id: String,
    },
}

/// The id list of a per-id request, borrowed as the request is.
macro_rules! per_job_ids {
    ($request:expr) => {
        match $request {
            Request::ModifyJob { ids, .. }
            | Request::DeleteJob { ids, .. }
            | Request::HoldJob { ids, .. }
            | Request::ReleaseJob { ids, .. }
            | Request::SignalJob { ids, .. }
            | Request::RerunJob { ids, .. }
            | Request::MoveJob { ids, .. } => Some(ids),
            // Every kind is named, so a new one is decided on here before anything builds.
            Request::QueueJob { .. }
            | Request::StatusJob { .. }
            | Request::SelectJobs { .. }
            | Request::StatusServer { .. }
            | Request::StatusQueue { .. }
            | Request::StatusNode { .. }
            | Request::StatusSched { .. }
            | Request::StatusResource { .. }
            | Request::StatusHook { .. }
            | Request::ImportHook { .. }
            | Request::ExportHook { .. }
            | Request::RunJob { .. }
            // Answered per id with a method, not an error, and bounded by its own walk.
            | Request::PreemptJobs { .. }
            | Request::Manager { .. }
            // Two ids, each answered by the request's one outcome, as OpenPBS's qorder.
            | Request::OrderJob { .. }
            | Request::Shutdown { .. }
            | Request::MessageJob { .. }
            | Request::WaitJob { .. } => None,
        }
    };
}

/// Job ids one per-id request may name (qdel, qhold, qrls, qalter, qsig, qrerun): the
/// commands send longer lists in several requests, and the server refuses a longer one
/// with `Invalid request` before looking at any id, so the work and the reply of one
/// request stay bounded (4096 error lines are well under a frame).
pub const MAX_REQUEST_IDS: usize = 4096;

impl Request {
    /// The job ids of a request that acts on jobs one by one (answered per id).
    pub fn per_job_ids(&self) -> Option<&[String]> {
        per_job_ids!(self).map(Vec::as_slice)
    }

    /// [`Request::per_job_ids`], to be rewritten (the server drops repeated ids).
    pub fn per_job_ids_mut(&mut self) -> Option<&mut Vec<String>> {
        per_job_ids!(self)
    }

    /// OpenPBS's batch request number, for log lines (`Type 19 request received ...`).
    pub fn type_number(&self) -> u32 {
        match self {
            Request::QueueJob { .. } => 1,
            Request::DeleteJob { .. } => 6,
            Request::HoldJob { .. } => 7,
            Request::Manager { .. } => 9,
            Request::ModifyJob { .. } => 11,
            Request::ReleaseJob { .. } => 13,
            Request::SelectJobs { .. } => 16,
            Request::StatusJob { .. } => 19,
            Request::StatusQueue { .. } => 20,
            Request::StatusServer { .. } => 21,
            Request::RerunJob { .. } => 14,
            Request::MoveJob { .. } => 12,
            Request::RunJob { .. } => 15,
            Request::SignalJob { .. } => 18,
            Request::StatusNode { .. } => 58,
            Request::PreemptJobs { .. } => 93,
            Request::StatusSched { .. } => 81,
            Request::StatusResource { .. } => 82,
            Request::StatusHook { .. } => 83,
            Request::OrderJob { .. } => 50,
            Request::Shutdown { .. } => 17,
            Request::MessageJob { .. } => 10,
            // OpenPBS's server connects back to qsub's port instead (`check_block`).
            Request::WaitJob { .. } => 0,
            // qmgr's import and export are Manager requests in OpenPBS.
            Request::ImportHook { .. } | Request::ExportHook { .. } => 9,
        }
    }
}

/// A qselect criterion: `attr op value`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Full dotted attribute name (`Resource_List.walltime`, `job_state`, `Job_Owner`, ...).
    pub attr: String,
    /// Comparison.
    pub op: CompareOp,
    /// Value to compare against. For `job_state` with `Eq`, a set of state letters.
    pub value: String,
}

/// Comparison operators of qselect (`.eq.`, `.ne.`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompareOp {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Greater than.
    Gt,
    /// Greater or equal.
    Ge,
    /// Less than.
    Lt,
    /// Less or equal.
    Le,
}

impl CompareOp {
    /// The operator a qselect word names (`eq ne gt ge lt le`).
    pub fn from_word(word: &str) -> Option<CompareOp> {
        Some(match word {
            "eq" => CompareOp::Eq,
            "ne" => CompareOp::Ne,
            "gt" => CompareOp::Gt,
            "ge" => CompareOp::Ge,
            "lt" => CompareOp::Lt,
            "le" => CompareOp::Le,
            _ => return None,
        })
    }
}

/// The qmgr verbs that change things.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MgrCommand {
    /// Create an object.
    Create,
    /// Delete an object.
    Delete,
    /// Set attributes.
    Set,
    /// Unset attributes.
    Unset,
}

/// Objects qmgr manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MgrObject {
    /// The server.
    Server,
    /// A queue.
    Queue,
    /// A node.
    Node,
    /// A scheduler.
    Sched,
    /// A custom resource.
    Resource,
    /// A hook.
    Hook,
}

impl MgrObject {
    /// The kind of object, whose attribute table applies.
    pub fn kind(self) -> pbs_core::ObjectKind {
        use pbs_core::ObjectKind;
        match self {
            MgrObject::Server => ObjectKind::Server,
            MgrObject::Queue => ObjectKind::Queue,
            MgrObject::Node => ObjectKind::Node,
            MgrObject::Sched => ObjectKind::Sched,
            MgrObject::Resource => ObjectKind::Resource,
            MgrObject::Hook => ObjectKind::Hook,
        }
    }
}

/// An attribute in a qmgr command: `name op value`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MgrAttr {
    /// Full dotted name.
    pub name: String,
    /// `=`, `+=`, `-=`; ignored for unset.
    pub op: MgrOp,
    /// Value as typed (quotes removed).
    pub value: String,
}

/// Assignment operators of qmgr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MgrOp {
    /// `=`.
    Set,
    /// `+=`.
    Incr,
    /// `-=`.
    Decr,
}

/// One object in a status reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusObject {
    /// Job id, queue name, node name, ...
    pub name: String,
    /// Attributes in report order.
    pub attrs: Vec<Attr>,
}

impl StatusObject {
    /// The value of an attribute, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|a| a.0 == name).map(|a| a.1.as_str())
    }
}

/// A per-object failure inside a reply that covers several objects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdError {
    /// The id as the server understood it (full form, `12.server`).
    pub id: String,
    /// PBSE code.
    pub code: u32,
    /// Message text, printed by commands as `<cmd>: <message> <id>`.
    pub message: String,
}

/// What a reply carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum ReplyBody {
    /// Nothing beyond the code.
    None,
    /// The id of a new job.
    JobId(String),
    /// Status objects, plus failures for ids that were asked for by name.
    Status {
        /// Objects found.
        objects: Vec<StatusObject>,
        /// Names that failed (unknown job, finished job without history, ...).
        errors: Vec<IdError>,
    },
    /// Job ids (qselect).
    Ids(Vec<String>),
    /// Failures of a request over several ids; the ones not listed succeeded.
    PerId(Vec<IdError>),
    /// A text (a hook's exported body).
    Text(String),
    /// Each job of a PreemptJobs request with how it was preempted.
    Preempted(Vec<Preempted>),
    /// A job waited for (`WaitJob`) has left the live set.
    JobDone {
        /// Its exit status (what qsub exits with when `message` is empty).
        exit_status: i32,
        /// Why it left without ending, empty when it ended (qsub prints it and exits 3).
        message: String,
    },
}

/// How one job of a PreemptJobs request was preempted: `S` (suspended), `C`
/// (checkpointed), `R` (requeued), `D` (deleted), or `0` when no method worked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preempted {
    /// The id as the request gave it.
    pub job_id: String,
    /// The method's letter, `0` for none.
    pub method: char,
}

/// A reply frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The request id this answers.
    pub id: u64,
    /// PBSE code; 0 is success.
    pub code: u32,
    /// The full text a command prints after `<cmd>: ` (canonical PBSE text, often followed
    /// by the attribute or object in error). Empty on success.
    pub message: String,
    /// Payload.
    pub body: ReplyBody,
    /// More frames follow for the same request id (status replies are streamed).
    #[serde(default)]
    pub more: bool,
}

impl Reply {
    /// A success reply.
    pub fn ok(id: u64, body: ReplyBody) -> Reply {
        Reply { id, code: 0, message: String::new(), body, more: false }
    }

    /// A failure reply.
    pub fn error(id: u64, code: u32, message: impl Into<String>) -> Reply {
        Reply { id, code, message: message.into(), body: ReplyBody::None, more: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_json_shape_is_stable() {
        let frame =
            RequestFrame { id: 3, request: Request::HoldJob { ids: vec!["1.s".into()], hold_types: "u".into() } };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(text, r#"{"id":3,"request":{"kind":"HoldJob","ids":["1.s"],"hold_types":"u"}}"#);
        let back: RequestFrame = serde_json::from_str(&text).unwrap();
        assert_eq!(back, frame);
    }

    #[test]
    fn unknown_kind_and_fields_are_rejected() {
        assert!(serde_json::from_str::<RequestFrame>(r#"{"id":1,"request":{"kind":"Nope"}}"#).is_err());
        assert!(
            serde_json::from_str::<RequestFrame>(r#"{"id":1,"request":{"kind":"StatusServer","attrs":[],"x":1}}"#)
                .is_err()
        );
    }

    #[test]
    fn attrs_are_pairs() {
        let text = serde_json::to_string(&Attr::new("Resource_List.ncpus", "2")).unwrap();
        assert_eq!(text, r#"["Resource_List.ncpus","2"]"#);
    }
}
