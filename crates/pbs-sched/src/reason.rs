//! Why a job cannot run, and the job comment OpenPBS writes for it.
//!
//! The texts are those of OpenPBS's scheduler: the `fctt[]` table in
//! `src/scheduler/check.cpp` (one comment format per `sched_error_code` of `constant.h`),
//! put together by `translate_fail_code()` in the same file, which prefixes `Not Running: `
//! or `Can Never Run: ` (`NOT_RUN_PREFIX` / `NEVER_RUN_PREFIX` in `constant.h`).

use std::fmt;

use pbs_core::entlim::EntityKind;

/// Whether the job could run later or never will (`schd_err_status` NOT_RUN / NEVER_RUN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    NotRun,
    NeverRun,
}

/// A `sched_error_code` with its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// INSUFFICIENT_RESOURCE: `Insufficient amount of resource: %s %s` (resource name, then
    /// `(R: .. A: .. T: ..)`, `(asked != have)`, or empty for a single node's shortfall).
    InsufficientResource(String, String),
    /// INSUFFICIENT_QUEUE_RESOURCE.
    InsufficientQueueResource(String, String),
    /// INSUFFICIENT_SERVER_RESOURCE.
    InsufficientServerResource(String, String),
    /// NO_NODE_RESOURCES: the generic node-search failure.
    NoNodeResources,
    /// NO_FREE_NODES.
    NoFreeNodes,
    /// NO_TOTAL_NODES.
    NoTotalNodes,
    /// SET_TOO_SMALL: `%s set %s has too few free resources` (`Placement`, `switch=s1`).
    SetTooSmall(&'static str, String),
    /// NODE_NOT_EXCL: `%s is requesting an exclusive node and node is in use`.
    NodeNotExcl,
    /// INVALID_NODE_STATE: `Node is in an ineligible state: %s`.
    InvalidNodeState(String),
    /// QUEUE_JOB_LIMIT_REACHED.
    QueueJobLimit(String),
    /// SERVER_JOB_LIMIT_REACHED.
    ServerJobLimit,
    /// SERVER_USER_LIMIT_REACHED.
    ServerUserLimit,
    /// QUEUE_USER_LIMIT_REACHED.
    QueueUserLimit(String),
    /// SERVER_GROUP_LIMIT_REACHED.
    ServerGroupLimit,
    /// QUEUE_GROUP_LIMIT_REACHED.
    QueueGroupLimit(String),
    /// QUEUE_BYUSER_JOB_LIMIT_REACHED (queue, user).
    QueueByUserJobLimit(String, String),
    /// QUEUE_BYGROUP_JOB_LIMIT_REACHED (queue, group).
    QueueByGroupJobLimit(String, String),
    /// SERVER_BYUSER_JOB_LIMIT_REACHED.
    ServerByUserJobLimit(String),
    /// SERVER_BYGROUP_JOB_LIMIT_REACHED.
    ServerByGroupJobLimit(String),
    /// SERVER_PROJECT_LIMIT_REACHED.
    ServerProjectLimit,
    /// QUEUE_PROJECT_LIMIT_REACHED.
    QueueProjectLimit(String),
    /// SERVER_BYPROJECT_JOB_LIMIT_REACHED.
    ServerByProjectJobLimit(String),
    /// QUEUE_BYPROJECT_JOB_LIMIT_REACHED (queue, project).
    QueueByProjectJobLimit(String, String),
    /// The `*_RES_LIMIT_REACHED` codes: a `max_run_res` limit.
    ResourceLimit(ResLimit),
    /// MAX_RUN_SUBJOBS.
    MaxRunSubjobs,
    /// STRICT_ORDERING.
    StrictOrdering,
    /// QUEUE_NOT_STARTED: the job's queue is stopped (`qstop`).
    QueueNotStarted,
    /// INVALID_RESRESV: `Invalid Job/Resv %s`.
    InvalidJob(String),
    /// RESERVATION_CONFLICT: a filler would delay a top job.
    ReservationConflict,
    /// CROSS_DED_TIME_BOUNDRY: the job would not end before dedicated time starts.
    CrossDedTime,
    /// DED_TIME: dedicated time now, and the job is not in a dedicated queue.
    DedTime,
    /// PRIME_ONLY: a prime-time queue outside prime time.
    PrimeOnly,
    /// NONPRIME_ONLY: a non-prime-time queue in prime time.
    NonprimeOnly,
    /// CROSS_PRIME_BOUNDARY: `Job will cross into %s` (`primetime` / `non-primetime`).
    CrossPrime(&'static str),
}

/// A `max_run_res` limit a job would pass: of a queue or the server (`queue` `None`), of
/// an entity kind, generic or of the entity `named`, on `resource`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResLimit {
    pub(crate) queue: Option<String>,
    pub(crate) kind: EntityKind,
    pub(crate) named: Option<String>,
    pub(crate) resource: String,
}

impl fmt::Display for ResLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.resource;
        let word = match self.kind {
            EntityKind::User => "user",
            EntityKind::Group => "group",
            EntityKind::Project => "project",
            EntityKind::Overall => "",
        };
        match (&self.queue, self.kind, &self.named) {
            (None, EntityKind::Overall, _) => write!(f, "would exceed overall limit on resource {r} in complex"),
            (Some(q), EntityKind::Overall, _) => write!(f, "would exceed overall limit on resource {r} in queue {q}"),
            (None, _, None) => write!(f, "Server per-{word} limit reached on resource {r}"),
            (Some(q), _, None) => write!(f, "Queue {q} per-{word} limit reached on resource {r}"),
            (None, _, Some(n)) => write!(f, "would exceed {word} {n}'s limit on resource {r} in complex"),
            (Some(q), _, Some(n)) => write!(f, "would exceed {word} {n}'s limit on resource {r} in queue {q}"),
        }
    }
}

impl Reason {
    /// The text the scheduler logs for it (`fctt[].fc_info`): the comment's, but for the
    /// codes whose log text OpenPBS words differently.
    pub(crate) fn info(&self) -> String {
        match self {
            Reason::QueueJobLimit(queue) => format!("Queue {queue} job limit reached"),
            Reason::ServerJobLimit => "Server job limit reached".into(),
            Reason::ServerUserLimit => "Server per-user job limit reached".into(),
            Reason::QueueUserLimit(queue) => format!("Queue {queue} per-user job limit reached"),
            Reason::ServerGroupLimit => "Server per-group limit reached".into(),
            Reason::QueueGroupLimit(queue) => format!("Queue {queue} per-group job limit reached"),
            Reason::ServerProjectLimit => "Server per-project limit reached".into(),
            Reason::QueueProjectLimit(queue) => format!("Queue {queue} per-project job limit reached"),
            Reason::SetTooSmall(kind, name) => format!("{kind} set {name} has too few free resources or is too small"),
            Reason::CrossDedTime => "Job would not finish before dedicated time".into(),
            Reason::DedTime => "Dedicated Time".into(),
            Reason::PrimeOnly => "Job only runs in primetime".into(),
            Reason::NonprimeOnly => "Job only runs in nonprimetime".into(),
            Reason::CrossPrime(what) => format!("Job would cross into {what}"),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Reason {
    /// The comment body (`fctt[].fc_comment` with its arguments).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::InsufficientResource(res, detail) => write!(f, "Insufficient amount of resource: {res} {detail}"),
            Reason::InsufficientQueueResource(res, detail) => {
                write!(f, "Insufficient amount of queue resource: {res} {detail}")
            }
            Reason::InsufficientServerResource(res, detail) => {
                write!(f, "Insufficient amount of server resource: {res} {detail}")
            }
            Reason::NoNodeResources => f.write_str("No available resources on nodes"),
            Reason::NoFreeNodes => f.write_str("Not enough free nodes available"),
            Reason::NoTotalNodes => f.write_str("Not enough total nodes available"),
            Reason::SetTooSmall(kind, name) => write!(f, "{kind} set {name} has too few free resources"),
            Reason::NodeNotExcl => f.write_str("Job is requesting an exclusive node and node is in use"),
            Reason::InvalidNodeState(state) => write!(f, "Node is in an ineligible state: {state}"),
            Reason::QueueJobLimit(queue) => write!(f, "Queue {queue} job limit has been reached."),
            Reason::ServerJobLimit => f.write_str("Server job limit has been reached."),
            Reason::ServerUserLimit => f.write_str("User has reached server running job limit."),
            Reason::QueueUserLimit(queue) => write!(f, "User has reached queue {queue} running job limit."),
            Reason::ServerGroupLimit => f.write_str("Group has reached server running limit."),
            Reason::QueueGroupLimit(queue) => write!(f, "Group has reached queue {queue} running limit."),
            Reason::QueueByUserJobLimit(queue, user) => write!(f, "Queue {queue} job limit reached for user {user}"),
            Reason::QueueByGroupJobLimit(queue, group) => {
                write!(f, "Queue {queue} job limit reached for group {group}")
            }
            Reason::ServerByUserJobLimit(user) => write!(f, "Server job limit reached for user {user}"),
            Reason::ServerByGroupJobLimit(group) => write!(f, "Server job limit reached for group {group}"),
            Reason::ServerProjectLimit => f.write_str("Project has reached server running limit."),
            Reason::QueueProjectLimit(queue) => write!(f, "Project has reached queue {queue}'s running limit."),
            Reason::ServerByProjectJobLimit(project) => write!(f, "Server job limit reached for project {project}"),
            Reason::QueueByProjectJobLimit(queue, project) => {
                write!(f, "Queue {queue} job limit reached for project {project}")
            }
            Reason::ResourceLimit(limit) => limit.fmt(f),
            Reason::MaxRunSubjobs => f.write_str("Number of concurrent running subjobs limit reached"),
            Reason::StrictOrdering => f.write_str("Job would break strict sorted order"),
            Reason::QueueNotStarted => f.write_str("Queue not started."),
            Reason::InvalidJob(what) => write!(f, "Invalid Job/Resv {what}"),
            Reason::ReservationConflict => f.write_str("Job would conflict with reservation or top job"),
            Reason::CrossDedTime => f.write_str("Job would cross dedicated time boundary"),
            Reason::DedTime => f.write_str("Dedicated time conflict"),
            Reason::PrimeOnly => f.write_str("Job will run in primetime only"),
            Reason::NonprimeOnly => f.write_str("Job will run in nonprimetime only"),
            Reason::CrossPrime(what) => write!(f, "Job will cross into {what}"),
        }
    }
}

/// A reason with its status: what `translate_fail_code` turns into a comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) status: Status,
    pub(crate) reason: Reason,
}

impl Failure {
    pub(crate) fn not_run(reason: Reason) -> Failure {
        Failure { status: Status::NotRun, reason }
    }

    pub(crate) fn never_run(reason: Reason) -> Failure {
        Failure { status: Status::NeverRun, reason }
    }

    /// The job comment: `Not Running: <text>` or `Can Never Run: <text>`.
    pub(crate) fn comment(&self) -> String {
        let prefix = match self.status {
            Status::NotRun => "Not Running",
            Status::NeverRun => "Can Never Run",
        };
        format!("{prefix}: {}", self.reason)
    }

    /// Failures that leave the job's equivalence class runnable: the limit belongs to
    /// this one array (OpenPBS's MAX_RUN_SUBJOBS does not mark the class either).
    pub(crate) fn marks_class(&self) -> bool {
        !matches!(self.reason, Reason::MaxRunSubjobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_match_openpbs() {
        let f = Failure::not_run(Reason::InsufficientResource("ncpus".into(), "(R: 8 A: 4 T: 4)".into()));
        assert_eq!(f.comment(), "Not Running: Insufficient amount of resource: ncpus (R: 8 A: 4 T: 4)");
        let f = Failure::never_run(Reason::InsufficientResource("mem".into(), "(R: 4gb A: 2gb T: 2gb)".into()));
        assert_eq!(f.comment(), "Can Never Run: Insufficient amount of resource: mem (R: 4gb A: 2gb T: 2gb)");
        assert_eq!(
            Failure::not_run(Reason::QueueJobLimit("workq".into())).comment(),
            "Not Running: Queue workq job limit has been reached."
        );
        assert_eq!(
            Failure::not_run(Reason::ServerJobLimit).comment(),
            "Not Running: Server job limit has been reached."
        );
        assert_eq!(
            Failure::not_run(Reason::SetTooSmall("Placement", "switch=s1".into())).comment(),
            "Not Running: Placement set switch=s1 has too few free resources"
        );
        // A single node's shortfall keeps the empty argument, trailing space included.
        assert_eq!(
            Failure::not_run(Reason::InsufficientResource("ncpus".into(), String::new())).comment(),
            "Not Running: Insufficient amount of resource: ncpus "
        );
        assert_eq!(
            Failure::not_run(Reason::ReservationConflict).comment(),
            "Not Running: Job would conflict with reservation or top job"
        );
        assert_eq!(
            Failure::not_run(Reason::CrossDedTime).comment(),
            "Not Running: Job would cross dedicated time boundary"
        );
        assert_eq!(Failure::not_run(Reason::DedTime).comment(), "Not Running: Dedicated time conflict");
    }
}
