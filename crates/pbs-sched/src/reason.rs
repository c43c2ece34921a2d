//! Why a job cannot run, and the job comment OpenPBS writes for it.
//!
//! The texts are those of OpenPBS's scheduler: the `fctt[]` table in
//! `src/scheduler/check.cpp` (one comment format per `sched_error_code` of `constant.h`),
//! put together by `translate_fail_code()` in the same file, which prefixes `Not Running: `
//! or `Can Never Run: ` (`NOT_RUN_PREFIX` / `NEVER_RUN_PREFIX` in `constant.h`).

use std::fmt;

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
    /// MAX_RUN_SUBJOBS.
    MaxRunSubjobs,
    /// STRICT_ORDERING.
    StrictOrdering,
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
            Reason::MaxRunSubjobs => f.write_str("Number of concurrent running subjobs limit reached"),
            Reason::StrictOrdering => f.write_str("Job would break strict sorted order"),
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
