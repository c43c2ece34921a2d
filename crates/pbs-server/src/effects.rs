//! What a handled request or event leaves to do once the state has changed: store writes,
//! frames for moms and job starts, as one [`Effects`] value; and the [`Outbox`] that hands
//! frames to the moms' links in commit order.
//!
//! Handlers change the state under its lock and return effects; they never write to the
//! store or a link themselves. `server::Server::apply_effects` is the one place effects are
//! carried out, always in the same order: commit, notify the scheduler, send to moms, reply.

use std::collections::BTreeMap;

use pbs_proto::mom::{JobLaunch, ToMom};

use crate::jobkey::JobKey;
use crate::store::{CommitError, StoreOp};

/// Frames for moms, by node name.
pub type MomFrames = Vec<(String, ToMom)>;

/// A job start to send once its run is committed: the script is read from the store then.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The job (its array's script for a subjob).
    pub key: JobKey,
    /// The node whose mom gets it.
    pub node: String,
    /// What to send (script filled in later for the mother superior).
    pub launch: JobLaunch,
}

/// A hook to run outside the state lock once the change that asked for it is carried
/// out (a periodic hook falling due).
pub use pbs_hooks::HookRun;

/// A step of a job's life that a change made (`job::life`), as data: what the change did to
/// the job, for whoever follows jobs outside the lock (tests assert on them as on a
/// recording outbox; the scheduler, metrics and the simulation read starts and ends here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStep {
    /// The job (a subjob's own key).
    pub key: JobKey,
    /// Its full id.
    pub id: String,
    /// What happened.
    pub kind: StepKind,
    /// When (the handler's `now`).
    pub at: i64,
}

/// The kinds of [`JobStep`], with what a follower needs of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// It was submitted.
    Queued,
    /// Its attributes changed.
    Altered,
    /// It went to another queue.
    Moved,
    /// Holds were put on it.
    Held,
    /// Holds were lifted, or its execution time came.
    Released,
    /// Its mom confirmed the start.
    Confirmed,
    /// It was stopped; `by_scheduler`: preemption's suspension.
    Suspended {
        /// The scheduler suspended it.
        by_scheduler: bool,
    },
    /// It runs again.
    Resumed,
    /// Its mom was told to end it.
    Ending,
    /// It started on its placement.
    Started,
    /// Its run went back to the queue; `checkpointed`: preemption's `C`, with its usage.
    Requeued {
        /// The run was checkpointed.
        checkpointed: bool,
    },
    /// Its run (or, for an array, its last subjob's) ended.
    Ended {
        /// Its exit status (none: deleted without one, `qdel -W force`).
        exit: Option<i32>,
        /// Whether it ran (its mom confirmed the start).
        ran: bool,
    },
    /// It left the live set without a run of its own ending.
    Left,
}

/// The effects of one request or event on the world outside the state.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    /// Store writes, committed as one unit, in this order.
    pub ops: Vec<StoreOp>,
    /// Frames for moms, handed to their links once `ops` are committed, in this order.
    pub to_moms: MomFrames,
    /// Job starts, sent after `to_moms` once `ops` are committed and the scripts read.
    pub launches: Vec<Launch>,
    /// Periodic hooks to start; each one's changes come back as effects of their own.
    pub periodic_hooks: Vec<HookRun>,
    /// The steps of jobs' lives this change made, in the order they were taken.
    pub steps: Vec<JobStep>,
    /// Mails to their owners about the jobs' steps, handed to the mailer once `ops` are
    /// committed (`job::mail`, `crate::mailer`).
    pub mails: Vec<Mail>,
    /// Jobs that left with connections waiting for them (`job::block`): their exit status
    /// and why, answered once `ops` are committed.
    pub waits_done: Vec<WaitDone>,
}

/// A job that left while a qsub waits (or will ask) for it (`job::block`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitDone {
    /// The job.
    pub key: JobKey,
    /// Its owner (`euser`), who alone may take a kept answer.
    pub owner: String,
    /// Its exit status.
    pub exit_status: i32,
    /// Why it left without ending; empty when it ended.
    pub message: String,
}

/// A mail about a job, as its step decided it (`job::mail`): the mailer resolves its
/// recipients and runs the host's mailer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mail {
    /// The job's full id.
    pub job_id: String,
    /// The user it runs as (`euser`), whose mails per minute are bounded.
    pub user: String,
    /// `Job_Owner` (`user@host`): the recipient when `mail_users` is unset.
    pub owner: String,
    /// `Mail_Users` as the job has it.
    pub mail_users: Option<String>,
    /// The server's `mailer`.
    pub mailer: String,
    /// The server's `mail_from`.
    pub from: String,
    /// The `Subject:` header.
    pub subject: String,
    /// The body, from `PBS Job Id:` on.
    pub body: String,
}

impl Effects {
    /// Effects that are only store writes.
    pub fn ops(ops: Vec<StoreOp>) -> Effects {
        Effects { ops, ..Effects::default() }
    }

    /// Appends `other`'s effects after these.
    pub fn merge(&mut self, other: Effects) {
        self.ops.extend(other.ops);
        self.to_moms.extend(other.to_moms);
        self.launches.extend(other.launches);
        self.periodic_hooks.extend(other.periodic_hooks);
        self.steps.extend(other.steps);
        self.mails.extend(other.mails);
        self.waits_done.extend(other.waits_done);
    }

    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
            && !self.has_mom_work()
            && self.periodic_hooks.is_empty()
            && self.mails.is_empty()
            && self.waits_done.is_empty()
    }

    /// Whether anything goes to a mom.
    pub fn has_mom_work(&self) -> bool {
        !self.to_moms.is_empty() || !self.launches.is_empty()
    }
}

impl From<Vec<StoreOp>> for Effects {
    fn from(ops: Vec<StoreOp>) -> Effects {
        Effects::ops(ops)
    }
}

/// What goes to the moms once a commit is done: frames, then starts with their scripts.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Frames to send first.
    pub frames: MomFrames,
    /// Starts with their scripts filled in.
    pub launches: Vec<Launch>,
    /// Jobs among `launches` whose script could not be read: they must not start.
    pub unreadable: std::collections::HashSet<JobKey>,
    /// Who waits for this delivery to be handed to the links: told only then, so a reply
    /// never goes out before the frames of its own change, even when those wait behind
    /// an earlier commit's.
    pub notify: Option<Notify>,
}

/// A waiter for a delivery, and what its commit gave.
#[derive(Debug)]
pub struct Notify {
    /// The waiter.
    pub waiter: tokio::sync::oneshot::Sender<Result<(), CommitError>>,
    /// Whether the commit before the delivery succeeded.
    pub committed: Result<(), CommitError>,
}

impl Notify {
    /// Tells the waiter the delivery is out.
    pub fn send(self) {
        let _ = self.waiter.send(self.committed);
    }
}

/// Puts the mom work of effects in commit order: each effects value with mom work takes a
/// ticket when its writes are queued (under the state lock, so tickets follow commits), and
/// its delivery goes out only after every earlier ticket's. A job's end and its `ForgetJob`
/// therefore always reach a mom before a later start of the same job, however the tasks
/// waiting for the commits are scheduled.
#[derive(Debug, Default)]
pub struct Outbox {
    next_ticket: u64,
    next_out: u64,
    ready: BTreeMap<u64, Delivery>,
}

impl Outbox {
    /// A ticket for effects whose writes were just queued.
    pub fn ticket(&mut self) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        ticket
    }

    /// Whether `ticket` is the next to go out (nothing before it is waiting).
    pub fn is_next(&self, ticket: u64) -> bool {
        ticket == self.next_out
    }

    /// Records that `ticket`'s commit is done; returns the deliveries now due, in order.
    pub fn complete(&mut self, ticket: u64, delivery: Delivery) -> Vec<Delivery> {
        self.ready.insert(ticket, delivery);
        let mut due = Vec::new();
        while let Some(delivery) = self.ready.remove(&self.next_out) {
            due.push(delivery);
            self.next_out += 1;
        }
        due
    }

    /// Tickets taken and not yet out.
    #[cfg(test)]
    fn waiting(&self) -> u64 {
        self.next_ticket - self.next_out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forget(id: &str) -> Delivery {
        Delivery { frames: vec![("n1".into(), ToMom::ForgetJob { job_id: id.into() })], ..Delivery::default() }
    }

    #[test]
    fn deliveries_go_out_in_ticket_order_whatever_order_commits_are_seen() {
        let mut outbox = Outbox::default();
        let (a, b, c) = (outbox.ticket(), outbox.ticket(), outbox.ticket());
        assert!(outbox.is_next(a) && !outbox.is_next(b));
        // The tasks of b and c see their commits first: nothing may go out yet.
        assert!(outbox.complete(c, forget("c")).is_empty());
        assert!(outbox.complete(b, forget("b")).is_empty());
        assert_eq!(outbox.waiting(), 3);
        let due = outbox.complete(a, forget("a"));
        let ids: Vec<_> = due
            .iter()
            .flat_map(|d| &d.frames)
            .map(|(_, f)| match f {
                ToMom::ForgetJob { job_id } => job_id.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(outbox.waiting(), 0);
    }

    #[test]
    fn effects_merge_in_order() {
        let mut first = Effects::ops(vec![StoreOp::DeleteJob { seq: 1 }]);
        first.to_moms.push(("n1".into(), ToMom::Ping));
        let mut second = Effects::ops(vec![StoreOp::DeleteJob { seq: 2 }]);
        second.to_moms.push(("n2".into(), ToMom::Ping));
        first.merge(second);
        assert_eq!(first.ops, vec![StoreOp::DeleteJob { seq: 1 }, StoreOp::DeleteJob { seq: 2 }]);
        assert_eq!(first.to_moms.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["n1", "n2"]);
        assert!(first.has_mom_work() && !Effects::default().has_mom_work());
    }
}
