//! Every step kind through a recording table: each part is called, before then after, in
//! the table's order, nested steps go through the same table, and each step travels in
//! the effects.

use std::sync::Mutex;

use pbs_core::{JobState, Privilege};
use pbs_proto::Attr;

use super::*;
use crate::identity::Identity;
use crate::request::Ctx;

/// What a recording part saw: (part, hook, job, step kind).
type Calls = Mutex<Vec<(&'static str, &'static str, JobKey, StepKind)>>;

/// The parts whose check was asked, in order.
type Checks = Mutex<Vec<&'static str>>;

/// A real part of the table, its calls recorded.
struct Recording<'a> {
    part: &'a dyn Part,
    calls: &'a Calls,
    checks: &'a Checks,
}

impl Part for Recording<'_> {
    fn name(&self) -> &'static str {
        self.part.name()
    }

    fn check(&self, state: &mut State, ctx: &Ctx<'_>, proposal: &Proposal<'_>) -> Result<(), ReqError> {
        if let Ok(mut checks) = self.checks.lock() {
            checks.push(self.part.name());
        }
        self.part.check(state, ctx, proposal)
    }

    fn before(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((self.part.name(), "before", at.key, at.step.kind()));
        }
        self.part.before(state, at, out);
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((self.part.name(), "after", at.key, at.step.kind()));
        }
        self.part.after(state, at, out);
    }
}

fn submit(state: &mut State, attrs: &[(&str, &str)]) -> JobKey {
    let who = Identity {
        user: "alice".into(),
        group: "staff".into(),
        uid: 1000,
        host: "host".into(),
        daemon: false,
        remote: false,
    };
    let ctx = Ctx { who: &who, privilege: Privilege::User, now: 1_000, groups: &[], hook_attrs: &[] };
    let attrs: Vec<Attr> = attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect();
    let (id, _) = crate::job::submit::queue_job(state, &ctx, &attrs, "true\n".into(), None).expect("submitted");
    crate::jobkey::key_of(&id).expect("a key")
}

fn placement() -> Arc<Placement> {
    Arc::new(Placement { exec: "(n1:ncpus=1)".parse().expect("an exec_vnode"), exclusive: false })
}

/// The calls one step makes of a table of `names`, when it causes no other step.
fn one_step(
    names: &[&'static str],
    key: JobKey,
    kind: StepKind,
) -> Vec<(&'static str, &'static str, JobKey, StepKind)> {
    let mut calls: Vec<_> = names.iter().map(|n| (*n, "before", key, kind)).collect();
    calls.extend(names.iter().map(|n| (*n, "after", key, kind)));
    calls
}

#[test]
fn every_step_kind_goes_through_every_part_in_the_tables_order() {
    let (mut state, _) = State::from_loaded(Default::default(), "svr", "host", "/nonexistent");
    state.server.set(pbs_core::attr::ObjectKind::Server.index_of("job_history_enable"), None, "True");
    let (calls, checks) = (Calls::default(), Checks::default());
    let recording: Vec<Recording<'_>> =
        crate::job::parts::PARTS.iter().map(|part| Recording { part: *part, calls: &calls, checks: &checks }).collect();
    let table: Vec<&dyn Part> = recording.iter().map(|r| r as &dyn Part).collect();
    let life = Life { parts: &table };
    let names: Vec<&'static str> = crate::job::parts::PARTS.iter().map(|p| p.name()).collect();
    assert_eq!(names.last(), Some(&"scheduler notice"), "the scheduler hears last");
    let taken = |calls: &Calls| std::mem::take(&mut *calls.lock().expect("calls"));

    let a = submit(&mut state, &[]);
    let steps = [
        Step::Queued { script: "true\n".into() },
        Step::Altered,
        Step::Moved,
        Step::Held,
        Step::Released,
        Step::Started { placement: placement(), run_count: 1 },
        Step::Confirmed { session_id: 42 },
        Step::Suspended { by_scheduler: false },
        Step::Resumed,
        Step::Suspended { by_scheduler: true },
        Step::Resumed,
        Step::Requeued { checkpointed: false },
        Step::Started { placement: placement(), run_count: 2 },
        Step::Requeued { checkpointed: true },
        Step::Started { placement: placement(), run_count: 3 },
        Step::Ending,
        Step::Ended { exit: Some(0), ran: true, deleted: false },
    ];
    let mut out = Effects::default();
    for step in steps {
        let kind = step.kind();
        life.step(&mut state, a, step, 2_000, &mut out);
        assert_eq!(taken(&calls), one_step(&names, a, kind), "{kind:?}");
    }
    assert_eq!(state.job(a).map(|j| j.state), Some(JobState::Finished));
    let kinds: Vec<StepKind> = out.steps.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            StepKind::Queued,
            StepKind::Altered,
            StepKind::Moved,
            StepKind::Held,
            StepKind::Released,
            StepKind::Started,
            StepKind::Confirmed,
            StepKind::Suspended { by_scheduler: false },
            StepKind::Resumed,
            StepKind::Suspended { by_scheduler: true },
            StepKind::Resumed,
            StepKind::Requeued { checkpointed: false },
            StepKind::Started,
            StepKind::Requeued { checkpointed: true },
            StepKind::Started,
            StepKind::Ending,
            StepKind::Ended { exit: Some(0), ran: true },
        ]
    );
    // Every step writes the job (and a start's, a suspension's and a resumption's records).
    let own_writes = out.ops.iter().filter(|op| matches!(op, StoreOp::PutJob { seq, .. } if *seq == a.seq)).count();
    assert_eq!(own_writes, kinds.len());
    assert!(out.steps.iter().all(|s| s.key == a && s.id == "0.svr" && s.at == 2_000));

    let deleted = submit(&mut state, &[]);
    let mut out = Effects::default();
    life.step(&mut state, deleted, Step::Left { why: Why::Deleted { purged: false } }, 2_100, &mut out);
    assert_eq!(taken(&calls), one_step(&names, deleted, StepKind::Left));
    assert_eq!(out.steps.len(), 1);

    // A parent that fails deletes its afterok child: the child's step goes through the
    // same table, inside the parent's, after the parts before the dependencies.
    let parent = submit(&mut state, &[]);
    let child = submit(&mut state, &[("depend", &format!("afterok:{}.svr", parent.seq))]);
    taken(&calls);
    let mut out = Effects::default();
    life.step(&mut state, parent, Step::Ended { exit: Some(1), ran: true, deleted: false }, 2_200, &mut out);
    let ended = StepKind::Ended { exit: Some(1), ran: true };
    let mut expected: Vec<_> = names.iter().map(|n| (*n, "before", parent, ended)).collect();
    let dependencies = names.iter().position(|n| *n == "dependencies").expect("the dependencies' part");
    expected.extend(names[..=dependencies].iter().map(|n| (*n, "after", parent, ended)));
    expected.extend(one_step(&names, child, StepKind::Left));
    expected.extend(names[dependencies + 1..].iter().map(|n| (*n, "after", parent, ended)));
    assert_eq!(taken(&calls), expected);
    assert_eq!(
        out.steps.iter().map(|s| (s.key, s.kind)).collect::<Vec<_>>(),
        [(parent, ended), (child, StepKind::Left)]
    );
    // The parent's `E` before the child's `A`, each before its job's own write.
    let order: Vec<String> = out
        .ops
        .iter()
        .filter_map(|op| match op {
            StoreOp::Account(record) => Some(format!("{};{}", record.kind, record.id)),
            StoreOp::PutJob { seq, .. } => Some(format!("put;{seq}")),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["E;2.svr", "put;2", "A;3.svr", "put;3"]);
}

/// A part that refuses every step proposed to it.
struct Refusing;

impl Part for Refusing {
    fn name(&self) -> &'static str {
        "refusing"
    }

    fn check(&self, _state: &mut State, _ctx: &Ctx<'_>, _proposal: &Proposal<'_>) -> Result<(), ReqError> {
        Err(ReqError::new(pbs_core::Pbse::PERM))
    }
}

/// A proposed step is checked by every part in the table's order; the first refusal is
/// the answer and the parts after it are not asked. In the real table, entity limits
/// refuse a new job past `max_queued` before anything changes.
#[test]
fn a_proposed_step_is_checked_by_each_part_in_order_until_one_refuses() {
    let (mut state, _) = State::from_loaded(Default::default(), "svr", "host", "/nonexistent");
    state.server.set(pbs_core::attr::ObjectKind::Server.index_of("max_queued"), None, "[u:PBS_GENERIC=1]");
    let who = Identity {
        user: "alice".into(),
        group: "staff".into(),
        uid: 1000,
        host: "host".into(),
        daemon: false,
        remote: false,
    };
    let ctx = Ctx { who: &who, privilege: Privilege::User, now: 1_000, groups: &[], hook_attrs: &[] };
    let (calls, checks) = (Calls::default(), Checks::default());
    let recording: Vec<Recording<'_>> =
        crate::job::parts::PARTS.iter().map(|part| Recording { part: *part, calls: &calls, checks: &checks }).collect();
    let names: Vec<&'static str> = crate::job::parts::PARTS.iter().map(|p| p.name()).collect();
    let attrs = AttrList::default();
    let proposal = Proposal::Queued { queue: "workq", attrs: &attrs };

    let table: Vec<&dyn Part> = recording.iter().map(|r| r as &dyn Part).collect();
    assert_eq!(Life { parts: &table }.check(&mut state, &ctx, &proposal), Ok(()));
    assert_eq!(std::mem::take(&mut *checks.lock().expect("checks")), names);

    let mut refused: Vec<&dyn Part> = table.clone();
    refused.insert(2, &Refusing);
    let answer = Life { parts: &refused }.check(&mut state, &ctx, &proposal);
    assert_eq!(answer.map_err(|e| e.code), Err(pbs_core::Pbse::PERM));
    assert_eq!(std::mem::take(&mut *checks.lock().expect("checks")), names[..2]);
    assert!(calls.lock().expect("calls").is_empty(), "a check takes no step");

    submit(&mut state, &[]);
    let answer = crate::job::parts::LIFE.check(&mut state, &ctx, &proposal);
    assert_eq!(answer.map_err(|e| e.code), Err(pbs_core::Pbse::ENTLIMCT));
}
