//! Handler tests without sockets or SQLite: a state in memory, requests through the one
//! dispatch, and the effects they return.
//!
//! Each test checks what a request writes and what it sends to which mom, in which order.
//! A handler gets the state alone, with no link to send on: its frames go out only
//! through `Server::apply_effects`, after the commit.

use pbs_core::{JobState, Pbse, Privilege};
use pbs_proto::mom::{ToMom, Usage};
use pbs_proto::{Attr, Reply, ReplyBody, Request};

use crate::dispatch::{Handled, ReplyParts, handle};
use crate::effects::{Delivery, Effects};
use crate::identity::Identity;
use crate::job::life::Step;
use crate::jobkey::JobKey;
use crate::request::Ctx;
use crate::state::{Named, State};
use crate::store::StoreOp;

struct Fixture {
    state: State,
    now: i64,
}

fn root() -> Identity {
    Identity::daemon("host")
}

fn alice() -> Identity {
    Identity {
        user: "alice".into(),
        group: "users".into(),
        uid: 1000,
        host: "host".into(),
        daemon: false,
        remote: false,
    }
}

fn fixture() -> Fixture {
    let (mut state, _) = State::from_loaded(Default::default(), "svr", "host", "/nonexistent");
    let mut node = Named { name: "n1".into(), attrs: Default::default() };
    crate::state::set_named(
        &mut node.attrs,
        pbs_core::ObjectKind::Node,
        "resources_available.ncpus",
        "4",
        &mut state.interner,
    );
    state.nodes.push(node);
    state.node_rt.entry("n1".into()).or_default().up = true;
    Fixture { state, now: 1000 }
}

/// The kind of each frame, with its node: enough to check what went where, in order.
fn frames(effects: &Effects) -> Vec<(String, &'static str)> {
    effects
        .to_moms
        .iter()
        .map(|(node, frame)| {
            let kind = match frame {
                ToMom::RunJob { .. } => "RunJob",
                ToMom::SignalJob { .. } => "SignalJob",
                ToMom::SignalJobs { .. } => "SignalJobs",
                ToMom::KillJob { .. } => "KillJob",
                ToMom::ForgetJob { .. } => "ForgetJob",
                ToMom::ModifyJob { .. } => "ModifyJob",
                ToMom::Ping => "Ping",
                ToMom::Hooks { .. } => "Hooks",
                ToMom::Shutdown => "Shutdown",
                ToMom::MessageJob { .. } => "MessageJob",
            };
            (node.clone(), kind)
        })
        .collect()
}

fn n1(kinds: &[&'static str]) -> Vec<(String, &'static str)> {
    kinds.iter().map(|k| ("n1".to_string(), *k)).collect()
}

/// The kind of each store write of state, in order (accounting records: [`records`]).
fn writes(effects: &Effects) -> Vec<&'static str> {
    effects
        .ops
        .iter()
        .filter_map(|op| match op {
            StoreOp::PutJob { .. } => Some("PutJob"),
            StoreOp::PutSubjob { .. } => Some("PutSubjob"),
            StoreOp::DeleteSubjob { .. } => Some("DeleteSubjob"),
            StoreOp::DeleteJob { .. } => Some("DeleteJob"),
            StoreOp::PutObject { .. } => Some("PutObject"),
            StoreOp::DeleteObject { .. } => Some("DeleteObject"),
            StoreOp::SetMeta { .. } => Some("SetMeta"),
            StoreOp::Account(_) => None,
        })
        .collect()
}

/// The accounting records among the writes, as `T;ID`, in order.
fn records(effects: &Effects) -> Vec<String> {
    effects
        .ops
        .iter()
        .filter_map(|op| match op {
            StoreOp::Account(record) => Some(format!("{};{}", record.kind, record.id)),
            _ => None,
        })
        .collect()
}

impl Fixture {
    /// One request through the dispatch's handler, as `who`.
    fn request(&mut self, who: &Identity, request: Request) -> (Reply, Effects) {
        let privilege =
            who.privilege(self.state.server_attr("managers", None), self.state.server_attr("operators", None));
        let ctx = Ctx { who, privilege, now: self.now, groups: &[], hook_attrs: &[] };
        match handle(&mut self.state, &ctx, 1, request) {
            Handled::Apply(reply, effects) => {
                // What `apply_effects` tells the scheduler, by the same call.
                crate::sched_view::note(&mut self.state, &effects);
                // No request leaves a job's kept select or place behind its attributes,
                // nor a written job's kept indices or depend list.
                assert_eq!(self.state.stale_requests(), Vec::<JobKey>::new(), "stale kept requests");
                let written = effects.ops.iter().filter_map(|op| match op {
                    StoreOp::PutJob { seq, .. } => Some(JobKey::job(*seq)),
                    StoreOp::PutSubjob { seq, index, .. } => Some(JobKey::subjob(*seq, *index)),
                    _ => None,
                });
                assert_eq!(self.state.stale_kept_facts(written), Vec::<JobKey>::new(), "stale kept facts");
                (reply, effects)
            }
            _ => panic!("expected a reply with effects"),
        }
    }

    fn submit(&mut self, who: &Identity, attrs: &[(&str, &str)]) -> String {
        let attrs = attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect();
        let (reply, _) = self.request(who, Request::QueueJob { attrs, script: "true\n".into(), destination: None });
        match reply.body {
            ReplyBody::JobId(id) => id,
            other => panic!("no job id: code {} {other:?}", reply.code),
        }
    }

    /// A job submitted by alice with `qsub -a` for `at`.
    fn deferred(&mut self, at: i64) -> (String, JobKey) {
        let at = at.to_string();
        let id = self.submit(&alice(), &[("Execution_Time", at.as_str())]);
        let key = crate::jobkey::key_of(&id).unwrap_or(JobKey::job(u64::MAX));
        (id, key)
    }

    /// A job submitted by alice, run on n1 with `qrun -H`, and confirmed started.
    fn running_job(&mut self) -> (JobKey, String) {
        self.running_job_with(&[])
    }

    /// [`Fixture::running_job`] of a job submitted with `attrs`.
    fn running_job_with(&mut self, attrs: &[(&str, &str)]) -> (JobKey, String) {
        let id = self.submit(&alice(), attrs);
        let (reply, effects) = self.request(&root(), Request::RunJob { id: id.clone(), exec_vnode: Some("n1".into()) });
        assert_eq!(reply.code, 0, "{reply:?}");
        assert_eq!(effects.launches.len(), 1);
        let effects = crate::job::end::job_started(&mut self.state, "n1", &id, 42, self.now);
        assert_eq!(writes(&effects), ["PutJob"]);
        (crate::jobkey::key_of(&id).unwrap_or(JobKey::job(u64::MAX)), id)
    }

    fn job_state(&self, key: JobKey) -> Option<JobState> {
        self.state.job(key).map(|j| j.state)
    }
}

/// The codes of a per-id reply's failed ids, in order.
fn per_id_codes(reply: &Reply) -> Vec<u32> {
    match &reply.body {
        ReplyBody::PerId(errors) => errors.iter().map(|e| e.code).collect(),
        other => panic!("per-id reply expected: {other:?}"),
    }
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_submission_writes_the_job_and_tells_the_scheduler() {
    let mut f = fixture();
    let (reply, effects) = f.request(
        &alice(),
        Request::QueueJob {
            attrs: vec![Attr::new("Job_Name", "first")],
            script: "echo hi\n".into(),
            destination: None,
        },
    );
    assert_eq!(reply.body, ReplyBody::JobId("0.svr".into()));
    // The job with its script, then the id reservation.
    assert_eq!(writes(&effects), ["PutJob", "SetMeta"]);
    assert!(matches!(&effects.ops[0], StoreOp::PutJob { seq: 0, script: Some(s), .. } if s == "echo hi\n"));
    assert!(!effects.has_mom_work());
    assert!(f.state.changes.jobs.contains_key(&JobKey::job(0)) && f.state.changes.cycle);
}

#[test]
fn a_submission_reads_its_variables_as_the_job_will_start_with_them() {
    let mut f = fixture();
    let attrs = vec![Attr::new("Job_Name", "first"), Attr::new("Variable_List", r"PBS_O_WORKDIR=/w/a\,b,X=1")];
    let (reply, _) = f.request(&alice(), Request::QueueJob { attrs, script: "true\n".into(), destination: None });
    assert_eq!(reply.code, 0, "{reply:?}");
    let job = f.state.jobs.get(&0).expect("the job");
    // The escaped comma is part of the directory, as the job's environment will have it.
    assert_eq!(job.get("Output_Path", None), Some("host:/w/a,b/first.o0"));
    let variables = pbs_core::variables::decode(job.get("Variable_List", None).unwrap_or(""));
    assert_eq!(variables[0], ("PBS_O_WORKDIR".to_string(), "/w/a,b".to_string()));
    assert!(variables.iter().any(|(k, v)| k == "PBS_O_QUEUE" && v == "workq"));
}

#[test]
fn an_alter_writes_the_job_and_a_running_job_hears_its_new_limits_after() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[("Resource_List.walltime", "01:00:00")]);
    let (reply, effects) =
        f.request(&alice(), Request::ModifyJob { ids: ids(&[&id]), attrs: vec![Attr::new("Job_Name", "renamed")] });
    assert_eq!(reply.code, 0);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert!(!effects.has_mom_work());

    let (_, running) = f.running_job();
    let (reply, effects) = f.request(
        &alice(),
        Request::ModifyJob { ids: ids(&[&running]), attrs: vec![Attr::new("Resource_List.walltime", "00:30:00")] },
    );
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(frames(&effects), n1(&["ModifyJob"]));
}

#[test]
fn hold_and_release_write_the_job_and_send_nothing() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[]);
    let key = crate::jobkey::key_of(&id).unwrap_or(JobKey::job(u64::MAX));
    let (reply, effects) = f.request(&alice(), Request::HoldJob { ids: ids(&[&id]), hold_types: "u".into() });
    assert_eq!(reply.code, 0);
    assert_eq!((writes(&effects), f.job_state(key)), (vec!["PutJob"], Some(JobState::Held)));
    let (_, effects) = f.request(&alice(), Request::ReleaseJob { ids: ids(&[&id]), hold_types: "u".into() });
    assert_eq!((writes(&effects), f.job_state(key)), (vec!["PutJob"], Some(JobState::Queued)));
    assert!(!effects.has_mom_work());
}

/// A request naming one job a thousand times, under its several spellings, does the work
/// of naming it once (one record written), and every repeat gets its first naming's answer.
#[test]
fn a_request_naming_one_job_many_times_does_its_work_once() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[]);
    let short = id.split('.').next().unwrap_or(&id).to_string();
    let spellings = [id.clone(), short.clone(), format!("{short}[]")];
    let mut request =
        Request::HoldJob { ids: spellings.iter().cycle().take(3000).cloned().collect(), hold_types: "u".into() };
    let repeats = crate::request::ids::Repeats::drop_from(&mut request);
    assert_eq!(request.per_job_ids().map(<[String]>::len), Some(1));
    let (mut reply, effects) = f.request(&alice(), request);
    assert_eq!(writes(&effects), ["PutJob"]);
    repeats.restore(&mut reply);
    assert_eq!(reply.code, 0, "{reply:?}");

    // Errors come back once per id given, in the request's order, each under its own text.
    let unknown = ["999.srv", "999", "998", "999.srv"].map(String::from).to_vec();
    let mut request = Request::DeleteJob { ids: unknown.clone(), force: false, purge_history: false };
    let repeats = crate::request::ids::Repeats::drop_from(&mut request);
    assert_eq!(request.per_job_ids().map(<[String]>::len), Some(2));
    let (mut reply, _) = f.request(&alice(), request);
    repeats.restore(&mut reply);
    let ReplyBody::PerId(errors) = &reply.body else { panic!("per-id reply expected: {reply:?}") };
    let answered: Vec<(&str, u32)> = errors.iter().map(|e| (e.id.as_str(), e.code)).collect();
    assert_eq!(answered, unknown.iter().map(|id| (id.as_str(), 15001)).collect::<Vec<_>>());
}

/// With the most criteria a request may carry, one lock looks at a handful of jobs: the
/// lock is held for a bounded number of tests, whatever the criteria and jobs.
#[test]
fn a_selection_with_many_criteria_looks_at_few_jobs_per_lock() {
    let mut f = fixture();
    for _ in 0..20 {
        f.submit(&alice(), &[]);
    }
    let criteria: Vec<pbs_proto::Criterion> = (1..=crate::size_limits::MAX_REQUEST_ATTRS)
        .map(|i| pbs_proto::Criterion { attr: "Priority".into(), op: pbs_proto::CompareOp::Ne, value: i.to_string() })
        .collect();
    let who = alice();
    let ctx = Ctx { who: &who, privilege: Privilege::User, now: f.now, groups: &[], hook_attrs: &[] };
    let mut selection = crate::job::status::Selection::new(&criteria, false, false, false);
    let mut ids = Vec::new();
    selection.step(&f.state, &ctx, &mut ids);
    let per_lock = crate::job::status::SELECT_TESTS_PER_LOCK / criteria.len();
    assert_eq!(ids.len(), per_lock);
    let mut steps = 1;
    while !selection.done() {
        selection.step(&f.state, &ctx, &mut ids);
        steps += 1;
    }
    assert_eq!((ids.len(), steps), (20, 20usize.div_ceil(per_lock)));
    // The same criterion many times is tested once.
    let same = vec![criteria[0].clone(); crate::size_limits::MAX_REQUEST_ATTRS];
    let mut selection = crate::job::status::Selection::new(&same, false, false, false);
    let mut ids = Vec::new();
    selection.step(&f.state, &ctx, &mut ids);
    assert!(selection.done() && ids.len() == 20);
}

#[test]
fn a_run_writes_the_job_first_and_leaves_its_start_for_after_the_commit() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[]);
    let (reply, effects) = f.request(&root(), Request::RunJob { id: id.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert!(effects.to_moms.is_empty());
    assert_eq!(effects.launches.iter().map(|l| l.node.as_str()).collect::<Vec<_>>(), ["n1"]);
    assert_eq!(effects.launches[0].launch.job_id, id);
    // Only operators and managers may run a job.
    let other = f.submit(&alice(), &[]);
    let (reply, effects) = f.request(&alice(), Request::RunJob { id: other, exec_vnode: None });
    assert_eq!((reply.code, effects.is_empty()), (pbs_core::Pbse::PERM.0, true));
}

#[test]
fn an_end_writes_the_job_then_tells_the_mom_to_forget_it() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let effects = crate::job::end::job_ended(&mut f.state, "n1", &id, 0, &Usage::default(), f.now);
    assert_eq!(writes(&effects), ["DeleteJob"]);
    // The end's accounting record is committed with the end itself.
    assert_eq!(records(&effects), [format!("E;{id}")]);
    assert_eq!(frames(&effects), n1(&["ForgetJob"]));
    assert_eq!(f.job_state(key), None);
}

/// The scheduler hears of a run's end from the job's `Ended` step, with its exit status
/// and time, not from a view gone missing; a queued job deleted is only gone, and a run
/// requeued is a view again.
#[test]
fn the_scheduler_hears_of_an_end_from_the_ended_step() {
    use pbs_proto::sched::SchedChange;
    let mut f = fixture();
    let (_, ended) = f.running_job();
    let (_, requeued) = f.running_job();
    let deleted = f.submit(&alice(), &[]);
    let _ = crate::sched_view::take_changes(&mut f.state);
    let end = crate::job::end::job_ended(&mut f.state, "n1", &ended, 3, &Usage::default(), f.now + 7);
    crate::sched_view::note(&mut f.state, &end);
    let (_, rerun) = f.request(&root(), Request::RerunJob { ids: ids(&[&requeued]), force: false });
    assert_eq!(frames(&rerun), n1(&["KillJob"]));
    let requeue = crate::job::end::job_ended(&mut f.state, "n1", &requeued, 271, &Usage::default(), f.now);
    crate::sched_view::note(&mut f.state, &requeue);
    let (reply, _) =
        f.request(&alice(), Request::DeleteJob { ids: ids(&[&deleted]), force: false, purge_history: false });
    assert_eq!(reply.code, 0);
    let (changes, cycle) = crate::sched_view::take_changes(&mut f.state);
    assert!(cycle);
    let told = |id: &str| {
        changes
            .iter()
            .filter(|c| match c {
                SchedChange::Job { job } => job.id == id,
                SchedChange::JobGone { id: gone } | SchedChange::JobEnded { id: gone, .. } => gone == id,
                _ => false,
            })
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(told(&ended), [SchedChange::JobEnded { id: ended.clone(), exit: Some(3), ran: true, at: f.now + 7 }]);
    assert_eq!(told(&deleted), [SchedChange::JobGone { id: deleted.clone() }]);
    assert!(matches!(told(&requeued).as_slice(), [SchedChange::Job { .. }]), "{:?}", told(&requeued));
    assert!(f.state.changes.ended.is_empty(), "the record is cleared");
}

/// A mom that answers a KillJob with "unknown job": a job being deleted is finished
/// at once (its `E` after qdel's `D`), one being rerun is requeued, and the same answer
/// from another node, or for a job the server is not ending, changes nothing.
#[test]
fn a_job_its_mom_does_not_know_is_purged_when_the_server_was_ending_it() {
    use pbs_proto::mom::FromMom;
    let mut f = fixture();
    let (deleted, deleted_id) = f.running_job();
    let (rerun, rerun_id) = f.running_job();
    let (left, left_id) = f.running_job();
    let unknown = |id: &str| FromMom::UnknownJob { job_id: id.to_string() };
    let (_, qdel) =
        f.request(&alice(), Request::DeleteJob { ids: ids(&[&deleted_id]), force: false, purge_history: false });
    assert_eq!(records(&qdel), [format!("D;{deleted_id}")]);
    let (_, qrerun) = f.request(&root(), Request::RerunJob { ids: ids(&[&rerun_id]), force: false });
    assert_eq!(frames(&qrerun), n1(&["KillJob"]));

    let elsewhere = crate::mom_report::apply(&mut f.state, "n2", unknown(&deleted_id), f.now);
    assert!(elsewhere.is_empty(), "only its mother superior speaks for it");
    let not_ending = crate::mom_report::apply(&mut f.state, "n1", unknown(&left_id), f.now);
    assert!(not_ending.is_empty());
    assert_eq!(f.job_state(left), Some(JobState::Running));

    let purged = crate::mom_report::apply(&mut f.state, "n1", unknown(&deleted_id), f.now);
    assert_eq!(records(&purged), [format!("E;{deleted_id}")]);
    assert_eq!(f.job_state(deleted), None);
    let requeued = crate::mom_report::apply(&mut f.state, "n1", unknown(&rerun_id), f.now);
    assert_eq!(records(&requeued), [format!("R;{rerun_id}")]);
    assert_eq!(f.job_state(rerun), Some(JobState::Queued));
    assert!(!f.state.ending.contains_key(&rerun) && !f.state.ending.contains_key(&deleted));
}

#[test]
fn a_delete_of_a_running_job_asks_its_mom_to_kill_it() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let (reply, effects) =
        f.request(&alice(), Request::DeleteJob { ids: ids(&[&id]), force: false, purge_history: false });
    assert_eq!(reply.code, 0);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(records(&effects), [format!("D;{id}")]);
    assert_eq!(frames(&effects), n1(&["KillJob"]));
    assert_eq!(f.job_state(key), Some(JobState::Exiting));
    // Someone else's job: refused, with nothing to do.
    let bob = Identity { user: "bob".into(), uid: 1001, ..alice() };
    let (reply, effects) = f.request(&bob, Request::DeleteJob { ids: ids(&[&id]), force: false, purge_history: false });
    assert_eq!((reply.code, effects.is_empty()), (pbs_core::Pbse::PERM.0, true));
}

/// `qdel -W force`: the mom hears to forget the job only with the effects, which go out
/// after the commit. The handler used to hand the ForgetJob to the link itself.
#[test]
fn a_forced_delete_forgets_the_job_only_after_its_end_is_committed() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let (reply, effects) =
        f.request(&alice(), Request::DeleteJob { ids: ids(&[&id]), force: true, purge_history: false });
    assert_eq!(reply.code, 0);
    assert_eq!(writes(&effects), ["DeleteJob"]);
    assert_eq!(records(&effects), [format!("D;{id}"), format!("E;{id}")]);
    assert_eq!(frames(&effects), n1(&["ForgetJob"]));
    assert_eq!(f.job_state(key), None);
}

/// A job deleted after its run was decided but before its start went out: when the run's
/// commit is done, the start is not sent and the job ends; the mom hears to forget it
/// only with the effects of that end.
#[test]
fn a_delete_before_the_launch_ends_the_job_and_forgets_it_after_the_commit() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[]);
    let key = crate::jobkey::key_of(&id).unwrap_or(JobKey::job(u64::MAX));
    let (_, run) = f.request(&root(), Request::RunJob { id: id.clone(), exec_vnode: Some("n1".into()) });
    let (_, delete) = f.request(&alice(), Request::DeleteJob { ids: ids(&[&id]), force: false, purge_history: false });
    assert_eq!(frames(&delete), n1(&["KillJob"]));
    // The run's commit is done: its delivery comes due.
    let delivery = Delivery { launches: run.launches, ..Delivery::default() };
    let (now, follow) = crate::job::launch::committed_delivery(&mut f.state, delivery, f.now);
    assert!(now.is_empty(), "a start went out for a deleted job: {now:?}");
    assert_eq!(writes(&follow), ["DeleteJob"]);
    assert_eq!(frames(&follow), n1(&["ForgetJob"]));
    assert_eq!(f.job_state(key), None);
}

#[test]
fn a_rerun_kills_the_job_and_its_end_requeues_it_then_forgets_it() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let (reply, effects) = f.request(&root(), Request::RerunJob { ids: ids(&[&id]), force: false });
    assert_eq!(reply.code, 0);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(frames(&effects), n1(&["KillJob"]));
    let effects = crate::job::end::job_ended(&mut f.state, "n1", &id, 271, &Usage::default(), f.now);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(records(&effects), [format!("R;{id}")]);
    assert_eq!(frames(&effects), n1(&["ForgetJob"]));
    assert_eq!(f.job_state(key), Some(JobState::Queued));
}

#[test]
fn suspend_and_resume_change_the_job_only_once_its_mom_has_answered() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let ask = |f: &mut Fixture, who: &Identity, signal: &str| {
        let privilege = who.privilege(f.state.server_attr("managers", None), f.state.server_attr("operators", None));
        let ctx = Ctx { who, privilege, now: f.now, groups: &[], hook_attrs: &[] };
        match handle(&mut f.state, &ctx, 1, Request::SignalJob { ids: ids(&[&id]), signal: signal.into() }) {
            Handled::AskMoms(asking) => Ok(asking.asks),
            Handled::Apply(reply, effects) => Err((reply.code, effects.is_empty())),
            _ => panic!("a qsig asks its moms or is refused"),
        }
    };
    // The mom is asked; nothing changes until it answers.
    let asks = ask(&mut f, &root(), "suspend").expect("asks");
    let sent: Vec<(&str, &str)> = asks.asks.iter().map(|a| (a.node.as_str(), a.signal.as_str())).collect();
    assert_eq!((sent, asks.errors.len()), (vec![("n1", "suspend")], 0));
    assert_eq!(f.job_state(key), Some(JobState::Running));
    // A mom that refuses (or never answers) leaves the job as it was, and says why.
    let (errors, effects) = crate::job::signal::answered(&mut f.state, f.now, &asks.asks, &[Pbse::NORELYMOM.0]);
    assert_eq!((errors.len(), errors[0].code, effects.is_empty()), (1, Pbse::NORELYMOM.0, true));
    assert_eq!(f.job_state(key), Some(JobState::Running));
    // Confirmed: the job is suspended and written.
    let (errors, effects) = crate::job::signal::answered(&mut f.state, f.now, &asks.asks, &[0]);
    assert_eq!((errors.len(), writes(&effects)), (0, vec!["PutJob"]));
    assert_eq!(f.job_state(key), Some(JobState::Suspended));
    let job_id = asks.asks[0].job_id.clone();
    // OpenPBS's accounting of a suspension and of a resume, with the change.
    assert_eq!(records(&effects), [format!("z;{job_id}")]);
    let asks = ask(&mut f, &root(), "resume").expect("asks");
    let (_, effects) = crate::job::signal::answered(&mut f.state, f.now, &asks.asks, &[0]);
    assert_eq!((writes(&effects), f.job_state(key)), (vec!["PutJob"], Some(JobState::Running)));
    assert_eq!(records(&effects), [format!("r;{job_id}")]);
    let comment = f.state.job(key).and_then(|j| j.get("comment", None)).unwrap_or_default().to_string();
    assert!(comment.starts_with("Job run at "), "a resumed job's comment: {comment}");
    // Only operators and managers suspend; a refused request asks nothing.
    assert_eq!(ask(&mut f, &alice(), "suspend").err(), Some((Pbse::PERM.0, true)));
}

/// A node down past `node_fail_requeue`: its jobs are requeued, and its mom hears to
/// forget them only with the effects. The node watch used to send the ForgetJob first.
#[test]
fn a_node_down_too_long_requeues_its_jobs_and_forgets_them_after_the_commit() {
    let mut f = fixture();
    let (key, _) = f.running_job();
    let rt = f.state.node_rt.entry("n1".into()).or_default();
    rt.up = false;
    rt.down_since = Some(f.now);
    assert!(crate::job::nodefail::requeue_from_failed_nodes(&mut f.state, f.now + 309).is_empty());
    let effects = crate::job::nodefail::requeue_from_failed_nodes(&mut f.state, f.now + 310);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(frames(&effects), n1(&["ForgetJob"]));
    assert_eq!(f.job_state(key), Some(JobState::Queued));
}

#[test]
fn requests_that_change_nothing_have_no_effects() {
    let mut f = fixture();
    f.submit(&alice(), &[]);
    for request in [Request::StatusServer { attrs: Vec::new() }, Request::StatusNode { names: Vec::new() }] {
        let (reply, effects) = f.request(&alice(), request);
        assert_eq!((reply.code, effects.is_empty()), (0, true), "{reply:?}");
    }
    // A status and a selection are given part by part after the lock, through the same
    // dispatch.
    let who = alice();
    let ctx = Ctx { who: &who, privilege: Privilege::User, now: f.now, groups: &[], hook_attrs: &[] };
    let status =
        Request::StatusJob { ids: Vec::new(), queues: Vec::new(), attrs: Vec::new(), history: false, subjobs: false };
    assert!(matches!(handle(&mut f.state, &ctx, 1, status), Handled::Parts(ReplyParts::JobStatus(_))));
    let select = Request::SelectJobs { criteria: Vec::new(), history: false, subjobs: false, arrays_only: false };
    assert!(matches!(handle(&mut f.state, &ctx, 1, select), Handled::Parts(ReplyParts::Select(_))));
}

/// A mom that comes back: a job it holds that the server does not know is forgotten, a
/// job the server placed there that it no longer holds is lost and requeued, and one it
/// reports ended is finished; every frame follows the writes.
#[test]
fn a_reconnecting_mom_is_reconciled_with_what_the_server_believes() {
    let mut f = fixture();
    let (lost, _) = f.running_job();
    let (ended, ended_id) = f.running_job();
    let held = |job_id: &str, exit_status: Option<i32>| pbs_proto::mom::MomJob {
        job_id: job_id.into(),
        sister: false,
        session_id: 7,
        exit_status,
        usage: Usage::default(),
    };
    let report = pbs_proto::mom::FromMom::NodeStatus {
        ncpus: 4,
        mem_kb: 1 << 20,
        arch: "linux".into(),
        host: "n1".into(),
        version: "test".into(),
        jobs: vec![held("99.svr", None), held(&ended_id, Some(0))],
    };
    let effects = crate::mom_report::apply(&mut f.state, "n1", report, f.now);
    // The ended job's end, then the lost one's requeue; the execution hooks go first.
    assert_eq!(writes(&effects), ["DeleteJob", "PutJob"]);
    assert_eq!(frames(&effects), n1(&["Hooks", "ForgetJob", "ForgetJob", "ForgetJob"]));
    assert_eq!(f.job_state(ended), None);
    assert_eq!(f.job_state(lost), Some(JobState::Queued));
    assert!(f.state.node_rt.get("n1").is_some_and(|rt| rt.up));
    // The link closes: the node is down from then on.
    crate::mom_report::link_down(&mut f.state, "n1", f.now + 5);
    let rt = f.state.node_rt.get("n1").cloned().unwrap_or_default();
    assert_eq!((rt.up, rt.down_since), (false, Some(f.now + 5)));
}

/// `qsub -a`: the job waits in W with a timer entry, and at its execution time `due`
/// makes it eligible as OpenPBS does (Q, substate 10, no Execution_Time, etime and mtime
/// then), writes it, and tells the scheduler; before that time nothing happens.
#[test]
fn a_waiting_job_becomes_eligible_when_its_execution_time_falls_due() {
    use crate::state::timers::Due;
    let mut f = fixture();
    let (_, key) = f.deferred(f.now + 10);
    assert_eq!(f.job_state(key), Some(JobState::Waiting));
    assert_eq!(f.state.timers.when(Due::ExecutionTime(key.seq)), Some(f.now + 10));
    f.state.changes = Default::default();
    assert!(crate::due::due(&mut f.state, f.now + 9).is_empty());
    assert_eq!(f.job_state(key), Some(JobState::Waiting));
    let effects = crate::due::due(&mut f.state, f.now + 10);
    crate::sched_view::note(&mut f.state, &effects);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert!(!effects.has_mom_work());
    let job = f.state.jobs.get(&key.seq).expect("job");
    assert_eq!((job.state, job.substate.0), (JobState::Queued, 10));
    assert_eq!(job.get("Execution_Time", None), None);
    assert_eq!(job.get("etime", None), Some((f.now + 10).to_string().as_str()));
    assert_eq!(job.get("mtime", None), Some((f.now + 10).to_string().as_str()));
    assert!(f.state.changes.jobs.contains_key(&key) && f.state.changes.cycle);
}

/// qalter -a moves the entry; a job held meanwhile, or deleted, is passed over when its
/// old entry falls due; a released one gets its entry back.
#[test]
fn altered_held_and_deleted_waiting_jobs_follow_their_state() {
    use crate::state::timers::Due;
    let mut f = fixture();
    let (id, key) = f.deferred(f.now + 10);
    let later = (f.now + 100).to_string();
    let (reply, _) = f.request(
        &alice(),
        Request::ModifyJob { ids: ids(&[&id]), attrs: vec![Attr::new("Execution_Time", later.as_str())] },
    );
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(f.state.timers.when(Due::ExecutionTime(key.seq)), Some(f.now + 100));
    assert!(crate::due::due(&mut f.state, f.now + 50).is_empty());
    f.request(&alice(), Request::HoldJob { ids: ids(&[&id]), hold_types: "u".into() });
    assert!(crate::due::due(&mut f.state, f.now + 100).is_empty());
    assert_eq!(f.job_state(key), Some(JobState::Held));
    // Released before its time (the requests' now is the fixture's): W again, with its
    // entry back, and eligible when it falls due.
    f.request(&alice(), Request::ReleaseJob { ids: ids(&[&id]), hold_types: "u".into() });
    assert_eq!(f.job_state(key), Some(JobState::Waiting));
    assert_eq!(f.state.timers.when(Due::ExecutionTime(key.seq)), Some(f.now + 100));
    assert_eq!(writes(&crate::due::due(&mut f.state, f.now + 100)), ["PutJob"]);
    assert_eq!(f.job_state(key), Some(JobState::Queued));
    let (other, other_key) = f.deferred(f.now + 100);
    f.request(&alice(), Request::DeleteJob { ids: ids(&[&other]), force: false, purge_history: false });
    assert!(crate::due::due(&mut f.state, f.now + 200).is_empty());
    assert!(!f.state.jobs.contains_key(&other_key.seq));
}

/// The periodic entries set their own next, and a server's start sets an entry for every
/// waiting job, one whose time passed while the server was down included.
#[test]
fn periodic_work_sets_its_next_entry_and_a_start_arms_every_waiting_job() {
    use crate::state::timers::Due;
    let mut f = fixture();
    let (_, key) = f.deferred(f.now + 5);
    f.state.timers = Default::default();
    crate::due::start(&mut f.state, f.now + 60);
    assert_eq!(f.state.timers.when(Due::ExecutionTime(key.seq)), Some(f.now + 5));
    assert_eq!(f.state.timers.when(Due::NodeWatch), Some(f.now + 60 + crate::due::NODE_WATCH_EVERY));
    let effects = crate::due::due(&mut f.state, f.now + 61);
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(f.job_state(key), Some(JobState::Queued));
    assert_eq!(f.state.timers.when(Due::NodeWatch), Some(f.now + 61 + crate::due::NODE_WATCH_EVERY));
    assert_eq!(f.state.timers.when(Due::HistoryPurge), Some(f.now + 60 + crate::due::HISTORY_PURGE_EVERY));
}

/// qmgr through the dispatch: a manager's change writes the object and tells the
/// scheduler of the objects; a user's is refused and changes nothing; the other statuses
/// answer with their objects and no effects, hooks' to root only.
#[test]
fn qmgr_and_object_statuses_through_the_dispatch() {
    use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp};
    let mut f = fixture();
    let create = |names: &[&str]| Request::Manager {
        command: MgrCommand::Create,
        object: MgrObject::Queue,
        names: names.iter().map(|n| n.to_string()).collect(),
        attrs: vec![MgrAttr { name: "queue_type".into(), op: MgrOp::Set, value: "Execution".into() }],
    };
    let (reply, effects) = f.request(&alice(), create(&["q1"]));
    assert_eq!((reply.code, effects.is_empty()), (15007, true), "{reply:?}");
    f.state.changes = Default::default();
    let (reply, effects) = f.request(&root(), create(&["q1"]));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(writes(&effects), ["PutObject"]);
    assert!(!effects.has_mom_work());
    assert!(f.state.changes.objects, "the scheduler hears of a changed object");
    for (who, request, code) in [
        (alice(), Request::StatusQueue { names: vec!["q1".into()], attrs: Vec::new() }, 0),
        (alice(), Request::StatusSched { names: Vec::new() }, 0),
        (alice(), Request::StatusResource { names: Vec::new() }, 0),
        // Hooks are root's on the server's host only, not even a daemon's (a manager).
        (alice(), Request::StatusHook { names: Vec::new() }, 15136),
        (root(), Request::StatusHook { names: Vec::new() }, 15136),
        (local_root(), Request::StatusHook { names: Vec::new() }, 0),
    ] {
        let (reply, effects) = f.request(&who, request);
        assert_eq!((reply.code, effects.is_empty()), (code, true), "{reply:?}");
    }
}

/// A run's placement is parsed once, when the run is decided, and again only when the
/// server reads its jobs back at a restart; a requeue takes it away with its text.
#[test]
fn a_running_job_keeps_its_placement_parsed_across_a_restart_and_loses_it_when_requeued() {
    let mut f = fixture();
    let (key, _) = f.running_job();
    let job = f.state.job(key).expect("the job");
    assert_eq!(job.placement().map(|p| (p.exec.to_string(), p.exclusive)), Some(("(n1:ncpus=1)".to_string(), false)));
    assert_eq!(job.get("exec_vnode", None), Some("(n1:ncpus=1)"));
    assert_eq!(job.mother_superior(), Some("n1"));
    // Read back from its stored record, as at a restart.
    let StoreOp::PutJob { record, .. } = job.put_op(None) else { panic!("a job's record") };
    let text = record.text().expect("a record").to_string();
    let loaded = crate::store::Loaded { jobs: vec![(key.seq, text)], ..Default::default() };
    let (restarted, _) = State::from_loaded(loaded, "svr", "host", "/nonexistent");
    let again = restarted.job(key).expect("the job read back");
    assert_eq!(again.placement(), job.placement());
    // A requeue (the node failed) takes the placement away with its attributes.
    let effects = crate::job::end::lost(&mut f.state, key, f.now);
    assert!(!effects.ops.is_empty());
    let job = f.state.job(key).expect("the job");
    assert_eq!(job.state, JobState::Queued);
    assert_eq!((job.placement(), job.get("exec_vnode", None), job.get("exec_host", None)), (None, None, None));
}

/// Whether a run holds its nodes exclusively is decided once, at the run: a node whose
/// `sharing` changes while the job is suspended does not make its resumption share a node
/// its run took whole.
#[test]
fn a_resumed_run_holds_its_node_as_its_run_did_whatever_the_node_became() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[("Resource_List.place", "excl")]);
    let (reply, _) = f.request(&root(), Request::RunJob { id: id.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    let key = crate::jobkey::key_of(&id).expect("a key");
    assert_eq!(f.state.job(key).and_then(|j| j.placement()).map(|p| p.exclusive), Some(true));
    assert!(f.state.node_rt["n1"].exclusive);
    crate::job::signal::suspend_resume(&mut f.state, key, Step::Suspended { by_scheduler: false }, f.now)
        .expect("suspended");
    assert!(!f.state.node_rt["n1"].exclusive, "a suspended job holds nothing");
    crate::state::set_named(
        &mut f.state.nodes[0].attrs,
        pbs_core::ObjectKind::Node,
        "sharing",
        "ignore_excl",
        &mut f.state.interner,
    );
    crate::job::signal::suspend_resume(&mut f.state, key, Step::Resumed, f.now).expect("resumed");
    assert!(f.state.node_rt["n1"].exclusive, "the resumed run shares the node its run took whole");
    // Its end gives back what it holds.
    let effects = crate::job::end::lost(&mut f.state, key, f.now);
    assert!(!effects.ops.is_empty());
    assert!(!f.state.node_rt["n1"].exclusive && f.state.node_rt["n1"].assigned.is_empty());
}

/// qdel of a run whose launch has not gone out yet: the launch still goes out (the run is
/// current, only being ended) ahead of its KillJob, so the mom has the job to kill and
/// reports its end; without it the KillJob finds nothing and the job stays `E` for ever.
#[test]
fn a_run_deleted_before_its_launch_went_out_is_still_launched_ahead_of_its_kill() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[]);
    let (reply, effects) = f.request(&root(), Request::RunJob { id: id.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    let launch = effects.launches.first().expect("a launch").launch.clone();
    let (reply, effects) = f.request(&root(), Request::DeleteJob { ids: vec![id], force: false, purge_history: false });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(frames(&effects), n1(&["KillJob"]));
    assert!(
        crate::job::faults::leaving(&mut f.state, "n1", &ToMom::RunJob { launch: Box::new(launch) }),
        "the launch of a run being deleted is not stale"
    );
}

/// A parent's end finds its children in the index, and each is released or deleted by
/// its kind, after the parent's own record; a held child waits with a system hold.
#[test]
fn a_parents_end_releases_or_deletes_its_children_through_the_index() {
    let mut f = fixture();
    let (key, parent) = f.running_job();
    let ok = f.submit(&alice(), &[("depend", format!("afterok:{parent}").as_str())]);
    let notok = f.submit(&alice(), &[("depend", format!("afternotok:{parent}").as_str())]);
    let seq = |id: &str| crate::jobkey::key_of(id).map(|k| k.seq).unwrap_or(u64::MAX);
    let child = f.state.jobs.get(&seq(&ok)).expect("the child");
    assert_eq!((child.state, child.substate.0), (JobState::Held, 22));
    assert_eq!(child.get("Hold_Types", None), Some("s"));
    assert_eq!(child.get("depend", None), Some(format!("afterok:{parent}@svr").as_str()));
    // The parent's record is not rewritten; its before entries are shown from the index.
    assert_eq!(f.state.job(key).and_then(|j| j.get("depend", None)), None);
    let marked = f.state.job(key).and_then(|j| crate::request::filter::depend_shown(&f.state, j));
    assert_eq!(marked, Some(format!("beforeok:{ok}@svr,beforenotok:{notok}@svr")));
    assert_eq!(f.state.dependents.children_of(key.seq).len(), 2);

    let effects = crate::job::end::job_ended(&mut f.state, "n1", &parent, 0, &Usage::default(), f.now);
    assert_eq!(writes(&effects), ["DeleteJob", "PutJob", "DeleteJob"], "the parent's end, then its children");
    let released = f.state.jobs.get(&seq(&ok)).expect("released");
    assert_eq!(
        (released.state, released.get("Hold_Types", None), released.get("depend", None)),
        (JobState::Queued, Some("n"), None)
    );
    assert!(!f.state.jobs.contains_key(&seq(&notok)), "afternotok on a success is deleted");
    assert!(f.state.dependents.children_of(key.seq).is_empty());
}

/// A parent deleted while it ran ends its children as OpenPBS's `depend_on_term` ends a
/// terminated job's: afterok ones deleted, afternotok and afterany ones released, also when
/// `qdel -W force` leaves it no exit status and when it trapped the kill and exited 0.
#[test]
fn a_parent_deleted_while_it_ran_deletes_its_afterok_children_and_releases_the_others() {
    let seq = |id: &str| crate::jobkey::key_of(id).map(|k| k.seq).unwrap_or(u64::MAX);
    for forced in [true, false] {
        let mut f = fixture();
        let (key, parent) = f.running_job();
        let ok = f.submit(&alice(), &[("depend", format!("afterok:{parent}").as_str())]);
        let notok = f.submit(&alice(), &[("depend", format!("afternotok:{parent}").as_str())]);
        let any = f.submit(&alice(), &[("depend", format!("afterany:{parent}").as_str())]);
        let effects = if forced {
            crate::job::end::force_delete(&mut f.state, key, f.now)
        } else {
            let (reply, _) = f.request(
                &alice(),
                Request::DeleteJob { ids: vec![parent.clone()], force: false, purge_history: false },
            );
            assert_eq!(reply.code, 0, "{reply:?}");
            crate::job::end::job_ended(&mut f.state, "n1", &parent, 0, &Usage::default(), f.now)
        };
        assert!(!effects.ops.is_empty());
        assert!(!f.state.jobs.contains_key(&seq(&ok)), "forced {forced}: afterok of a deleted parent is deleted");
        for released in [&notok, &any] {
            let job = f.state.jobs.get(&seq(released)).expect("released");
            assert_eq!((job.state, job.get("Hold_Types", None)), (JobState::Queued, Some("n")), "forced {forced}");
        }
    }
}

/// A job deleted while its mom cannot be reached stays deleted when that mom is given up
/// for lost (`node_fail_requeue`, or a reconnecting mom that no longer has it): the delete
/// ends it, it is not requeued to run again.
#[test]
fn a_job_being_deleted_is_not_requeued_when_its_mom_is_lost() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let (reply, effects) =
        f.request(&alice(), Request::DeleteJob { ids: vec![id.clone()], force: false, purge_history: false });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(records(&effects).iter().any(|r| r.starts_with(&format!("D;{id}"))), "{:?}", records(&effects));
    let effects = crate::job::faults::requeue_lost(&mut f.state, key, f.now);
    assert!(!records(&effects).iter().any(|r| r.starts_with('R')), "no rerun record: {:?}", records(&effects));
    assert!(records(&effects).iter().any(|r| r.starts_with(&format!("E;{id}"))), "{:?}", records(&effects));
    assert!(matches!(f.job_state(key), None | Some(JobState::Finished)), "{:?}", f.job_state(key));
    assert!(!f.state.ending.contains_key(&key));
}

/// Root on the server's host, as the kernel names a local peer (not a daemon).
fn local_root() -> Identity {
    Identity { user: "root".into(), group: "root".into(), uid: 0, host: "host".into(), daemon: false, remote: false }
}

/// qmgr's `COMMAND hook NAME attr=value,...`.
fn hook_request(command: pbs_proto::MgrCommand, name: &str, attrs: &[(&str, &str)]) -> Request {
    let attrs = attrs
        .iter()
        .map(|(n, v)| pbs_proto::MgrAttr { name: n.to_string(), op: pbs_proto::MgrOp::Set, value: v.to_string() })
        .collect();
    Request::Manager { command, object: pbs_proto::MgrObject::Hook, names: vec![name.into()], attrs }
}

/// qmgr's `import hook NAME application/x-python ENCODING` of `content`.
fn import_hook(name: &str, encoding: &str, content: &str) -> Request {
    Request::ImportHook {
        name: name.into(),
        content_type: "application/x-python".into(),
        encoding: encoding.into(),
        content: content.into(),
    }
}

/// Execution hooks reach the moms whose links are up when the set changes (a body
/// imported, an attribute set, the hook deleted), and nothing else does; a mom whose link
/// comes up gets the whole set before anything else.
#[test]
fn execution_hook_changes_reach_the_moms_that_are_up_and_a_linking_mom_gets_the_set() {
    use pbs_proto::MgrCommand;
    let mut f = fixture();
    let mut n2 = Named { name: "n2".into(), attrs: Default::default() };
    crate::state::set_named(&mut n2.attrs, pbs_core::ObjectKind::Node, "comment", "x", &mut f.state.interner);
    f.state.nodes.push(n2);
    let manager = |command, attrs: Vec<(&str, &str)>| hook_request(command, "b", &attrs);
    let import = import_hook("b", "default", "import pbs\n");
    // No body yet: nothing to run, nothing sent.
    let (_, effects) = f.request(&local_root(), manager(MgrCommand::Create, vec![("event", "execjob_begin")]));
    assert!(frames(&effects).is_empty());
    let (reply, effects) = f.request(&local_root(), import);
    assert_eq!((reply.code, frames(&effects)), (0, n1(&["Hooks"])), "n2's link is down: {reply:?}");
    let Some((_, ToMom::Hooks { hooks })) = effects.to_moms.first() else { panic!("a Hooks frame") };
    assert_eq!(
        hooks.iter().map(|h| (h.name.as_str(), h.events.clone(), h.alarm, h.script.as_str())).collect::<Vec<_>>(),
        [("b", vec!["execjob_begin".to_string()], 30, "import pbs\n")]
    );
    let (_, effects) = f.request(&local_root(), manager(MgrCommand::Set, vec![("fail_action", "offline_vnodes")]));
    assert_eq!(frames(&effects), n1(&["Hooks"]));
    // A change that leaves the set as it was sends nothing.
    let (_, effects) = f.request(&local_root(), manager(MgrCommand::Set, vec![("fail_action", "offline_vnodes")]));
    assert!(frames(&effects).is_empty());
    // n2's mom links: the set first.
    let report = pbs_proto::mom::FromMom::NodeStatus {
        ncpus: 4,
        mem_kb: 1 << 20,
        arch: "linux".into(),
        host: "n2".into(),
        version: "test".into(),
        jobs: Vec::new(),
    };
    let effects = crate::mom_report::apply(&mut f.state, "n2", report, f.now);
    assert_eq!(frames(&effects).first(), Some(&("n2".to_string(), "Hooks")));
    let (_, effects) = f.request(&local_root(), manager(MgrCommand::Delete, vec![]));
    assert_eq!(frames(&effects), [("n1".to_string(), "Hooks"), ("n2".to_string(), "Hooks")]);
    assert!(matches!(effects.to_moms.first(), Some((_, ToMom::Hooks { hooks })) if hooks.is_empty()));
    // A failing hook's fail_action offlines its node with OpenPBS's comment, written.
    let effects = crate::mom_report::apply(
        &mut f.state,
        "n1",
        pbs_proto::mom::FromMom::OfflineByHook { hook: "b".into() },
        f.now,
    );
    assert_eq!(writes(&effects), ["PutObject"]);
    let n1 = f.state.nodes.iter().find(|n| n.name == "n1").map(|n| n.attrs.clone()).unwrap_or_default();
    assert!(crate::node::is_offline(&Named { name: "n1".into(), attrs: n1.clone() }));
    assert_eq!(
        n1.get_named(pbs_core::ObjectKind::Node, "comment", None),
        Some("offlined by hook 'b' due to hook error")
    );
}

/// A hook's offline (`offline_by_mom`) and a manager's are kept apart, as OpenPBS's state
/// bits: shown as one `offline`, a mom's recovery clears its own with its comment and
/// leaves the manager's, and clearing offline (`pbsnodes -r`) clears both.
#[test]
fn a_moms_recovery_clears_the_offline_its_hook_set_and_not_a_managers() {
    use pbs_proto::mom::FromMom;
    let mut f = fixture();
    let node = |f: &Fixture| f.state.nodes.iter().find(|n| n.name == "n1").cloned().expect("n1");
    let stored = |f: &Fixture| node(f).attrs.get_named(pbs_core::ObjectKind::Node, "state", None).map(str::to_string);
    let comment =
        |f: &Fixture| node(f).attrs.get_named(pbs_core::ObjectKind::Node, "comment", None).map(str::to_string);
    let set_state = |f: &mut Fixture, op: pbs_proto::MgrOp, value: &str| {
        let attrs = vec![pbs_proto::MgrAttr { name: "state".into(), op, value: value.into() }];
        let request = Request::Manager {
            command: pbs_proto::MgrCommand::Set,
            object: pbs_proto::MgrObject::Node,
            names: vec!["n1".into()],
            attrs,
        };
        let (reply, _) = f.request(&local_root(), request);
        assert_eq!(reply.code, 0, "{reply:?}");
    };
    // Nothing to clear: nothing written.
    let effects = crate::mom_report::apply(&mut f.state, "n1", FromMom::OfflineByHookCleared, f.now);
    assert!(writes(&effects).is_empty());

    crate::mom_report::apply(&mut f.state, "n1", FromMom::OfflineByHook { hook: "s".into() }, f.now);
    assert_eq!(stored(&f).as_deref(), Some("offline_by_mom"));
    assert!(crate::node::is_offline(&node(&f)));
    set_state(&mut f, pbs_proto::MgrOp::Incr, "offline");
    assert_eq!(stored(&f).as_deref(), Some("offline,offline_by_mom"));
    let effects = crate::mom_report::apply(&mut f.state, "n1", FromMom::OfflineByHookCleared, f.now);
    assert_eq!(writes(&effects), ["PutObject"]);
    assert_eq!(stored(&f).as_deref(), Some("offline"), "the manager's offline stays");
    assert_eq!(comment(&f), None, "the hook's comment goes");

    crate::mom_report::apply(&mut f.state, "n1", FromMom::OfflineByHook { hook: "s".into() }, f.now);
    set_state(&mut f, pbs_proto::MgrOp::Decr, "offline");
    assert_eq!(stored(&f), None, "pbsnodes -r clears both");
    assert!(!crate::node::is_offline(&node(&f)));
}

#[test]
fn fail_action_is_checked_against_the_events_and_a_restart_cycle_failure_asks_for_a_cycle() {
    use pbs_proto::MgrCommand;
    let mut f = fixture();
    let manager = |command, attrs: &[(&str, &str)]| hook_request(command, "h", attrs);
    let fail_action = |f: &Fixture| {
        f.state
            .hooks
            .iter()
            .find(|h| h.name == "h")
            .and_then(|h| h.attrs.get_named(pbs_core::ObjectKind::Hook, "fail_action", None).map(str::to_string))
    };
    // Refused at create, whatever order the attributes come in, and nothing is made.
    let (reply, effects) = f.request(
        &local_root(),
        manager(MgrCommand::Create, &[("fail_action", "offline_vnodes"), ("event", "queuejob")]),
    );
    assert_eq!(reply.code, Pbse::HOOKERROR.0, "{reply:?}");
    assert_eq!(
        reply.message,
        "Can't set hook fail_action value to 'offline_vnodes': hook event must contain at least one of \
         execjob_begin, exechost_startup, execjob_prologue"
    );
    assert!(effects.ops.is_empty() && f.state.hooks.is_empty());
    let both = "offline_vnodes,scheduler_restart_cycle";
    let (reply, _) =
        f.request(&local_root(), manager(MgrCommand::Create, &[("fail_action", both), ("event", "execjob_prologue")]));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(fail_action(&f).as_deref(), Some(both));
    for (value, refused) in [
        ("clear_vnodes_upon_recovery", "hook event must contain at least an exechost_startup value"),
        ("none,offline_vnodes", "fail_action value of a hook must be \"none\" or one or more of"),
    ] {
        let (reply, effects) = f.request(&local_root(), manager(MgrCommand::Set, &[("fail_action", value)]));
        assert_eq!(reply.code, Pbse::HOOKERROR.0, "{value}: {reply:?}");
        assert!(reply.message.contains(refused), "{value}: {reply:?}");
        assert!(effects.ops.is_empty());
        assert_eq!(fail_action(&f).as_deref(), Some(both), "a refused set changed nothing");
    }
    // A request that sets neither event nor fail_action leaves them be, even as kept by an
    // earlier version that let them disagree.
    if let Some(hook) = f.state.hooks.iter_mut().find(|h| h.name == "h") {
        crate::state::set_named(
            &mut hook.attrs,
            pbs_core::ObjectKind::Hook,
            "event",
            "queuejob",
            &mut f.state.interner,
        );
    }
    let (reply, _) = f.request(&local_root(), manager(MgrCommand::Set, &[("alarm", "5")]));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(fail_action(&f).as_deref(), Some(both));
    let (reply, _) = f.request(&local_root(), manager(MgrCommand::Set, &[("event", "execjob_prologue")]));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(fail_action(&f).as_deref(), Some(both));
    // Events that no longer allow it put it back to none, as OpenPBS's `set hook event`.
    let (reply, _) = f.request(&local_root(), manager(MgrCommand::Set, &[("event", "execjob_end")]));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(fail_action(&f).as_deref(), Some("none"));
    // A mom's report of a failed hook asks the scheduler for a cycle, and changes nothing.
    f.state.changes.cycle = false;
    let effects = crate::mom_report::apply(
        &mut f.state,
        "n1",
        pbs_proto::mom::FromMom::RestartCycleByHook { hook: "h".into(), failed: true },
        f.now,
    );
    assert!(effects.ops.is_empty());
    assert!(f.state.changes.cycle);
}

#[test]
fn setting_a_periodic_hooks_freq_restarts_its_count_from_now() {
    use pbs_proto::MgrCommand;
    let mut f = fixture();
    let set = |command, name: &str, value: &str| hook_request(command, "tick", &[(name, value)]);
    let (reply, _) = f.request(&local_root(), set(MgrCommand::Create, "event", "periodic"));
    assert_eq!(reply.code, 0, "{reply:?}");
    let import = import_hook("tick", "default", "import pbs\n");
    assert_eq!(f.request(&local_root(), import).0.code, 0);
    // Seen before its freq is set: planned with the default, 120 s on.
    assert!(crate::hooks::periodic::due(&mut f.state, f.now).is_empty());
    assert!(crate::hooks::periodic::due(&mut f.state, f.now + 1).is_empty());
    let (reply, _) = f.request(&local_root(), set(MgrCommand::Set, "freq", "1"));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(crate::hooks::periodic::due(&mut f.state, f.now + 1).is_empty(), "planned from the set, 1 s on");
    let due = crate::hooks::periodic::due(&mut f.state, f.now + 2);
    assert_eq!(due.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["tick"], "the new freq counts from now");
}

#[test]
fn only_a_hook_with_a_server_event_asks_for_an_interpreter_on_the_server() {
    use pbs_proto::MgrCommand;
    let mut f = fixture();
    let set = |command, name: &str, value: &str| hook_request(command, "h", &[(name, value)]);
    let (reply, _) = f.request(&local_root(), set(MgrCommand::Create, "event", "execjob_begin"));
    assert_eq!(reply.code, 0, "{reply:?}");
    let import = import_hook("h", "default", "import pbs\npbs.event().accept()\n");
    let (reply, _) = f.request(&local_root(), import);
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(!crate::hooks::event::any_server_hook(&f.state), "an execution hook runs on the moms only");
    let (reply, _) = f.request(&local_root(), set(MgrCommand::Set, "event", "execjob_begin,runjob"));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(crate::hooks::event::any_server_hook(&f.state));
    let (reply, _) = f.request(&local_root(), set(MgrCommand::Set, "enabled", "false"));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(!crate::hooks::event::any_server_hook(&f.state), "a disabled hook runs nowhere");
}

#[test]
fn root_alone_imports_and_exports_hook_bodies_and_deleting_a_hook_deletes_its_body() {
    use base64::Engine as _;
    use pbs_proto::MgrCommand;
    let mut f = fixture();
    let create = |command| {
        let attrs: &[(&str, &str)] = if command == MgrCommand::Create { &[("event", "queuejob")] } else { &[] };
        hook_request(command, "h", attrs)
    };
    let (reply, effects) = f.request(&local_root(), create(MgrCommand::Create));
    assert_eq!((reply.code, writes(&effects)), (0, vec!["PutObject"]), "{reply:?}");
    let body = "import pbs\npbs.event().accept()\n";
    let import = |encoding: &str, content: String| import_hook("h", encoding, &content);
    let encoded = base64::engine::general_purpose::STANDARD.encode(body);
    let (reply, effects) = f.request(&local_root(), import("base64", encoded));
    assert_eq!((reply.code, writes(&effects)), (0, vec!["PutObject"]), "{reply:?}");
    let runs = crate::hooks::event::hooks_for(&f.state, pbs_core::hookattr::HookEvent::QueueJob);
    assert_eq!(runs.iter().map(|r| (r.name.as_str(), &*r.script)).collect::<Vec<_>>(), [("h", body)]);
    assert!(crate::hooks::event::hooks_for(&f.state, pbs_core::hookattr::HookEvent::ModifyJob).is_empty());
    let export = Request::ExportHook {
        name: "h".into(),
        content_type: "application/x-python".into(),
        encoding: "default".into(),
    };
    let (reply, _) = f.request(&local_root(), export.clone());
    assert_eq!(reply.body, ReplyBody::Text(body.into()));

    // Neither an ordinary user nor a daemon (a manager) may touch hooks; nothing is written.
    for who in [alice(), root()] {
        let (reply, effects) = f.request(&who, import("default", "x".into()));
        assert_eq!(reply.code, Pbse::HOOKERROR.0, "{reply:?}");
        assert!(reply.message.ends_with("is unauthorized to access hooks data from server host"), "{reply:?}");
        assert!(effects.ops.is_empty());
        let (reply, _) = f.request(&who, export.clone());
        assert_eq!(reply.code, Pbse::HOOKERROR.0);
        let (reply, effects) = f.request(&who, create(MgrCommand::Delete));
        assert_eq!((reply.code, effects.ops.len()), (Pbse::HOOKERROR.0, 0));
    }
    let (reply, effects) = f.request(&local_root(), import("bogus", "x".into()));
    assert_eq!(
        (reply.code, reply.message.as_str()),
        (Pbse::HOOKERROR.0, "<content-encoding> must be 'default' or 'base64'")
    );
    assert!(effects.ops.is_empty());

    let (reply, effects) = f.request(&local_root(), create(MgrCommand::Delete));
    assert_eq!((reply.code, writes(&effects)), (0, vec!["DeleteObject", "DeleteObject"]));
    assert!(f.state.hook_bodies.is_empty());
    let (reply, _) = f.request(&local_root(), export);
    assert_eq!((reply.code, reply.message.as_str()), (Pbse::HOOKERROR.0, "h does not exist!"));
}

#[test]
fn what_a_hook_set_is_checked_with_manager_privilege_and_nothing_else_is() {
    let mut f = fixture();
    let who = alice();
    let attrs = vec![Attr::new("Resource_List.soft_walltime", "300")];
    let submit = |f: &mut Fixture, hook_attrs: &[Attr]| {
        let ctx = Ctx { who: &who, privilege: Privilege::User, now: f.now, groups: &[], hook_attrs };
        let request = Request::QueueJob { attrs: attrs.clone(), script: "true\n".into(), destination: None };
        match handle(&mut f.state, &ctx, 1, request) {
            Handled::Apply(reply, _) => reply,
            _ => panic!("expected a reply"),
        }
    };
    assert_eq!(submit(&mut f, &[]).code, Pbse::ATTRRO.0, "a user may not set soft_walltime");
    let reply = submit(&mut f, &[Attr::new("Resource_List.soft_walltime", "300")]);
    assert!(matches!(reply.body, ReplyBody::JobId(_)), "{reply:?}");
    // Only what the hook set is elevated: another attribute, or another value of the one
    // it set, is the user's.
    assert_eq!(submit(&mut f, &[Attr::new("Resource_List.walltime", "300")]).code, Pbse::ATTRRO.0);
    assert_eq!(submit(&mut f, &[Attr::new("Resource_List.soft_walltime", "60")]).code, Pbse::ATTRRO.0);
}

#[test]
fn preempt_jobs_is_a_managers_and_tries_each_jobs_methods_in_rounds() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let (other_key, other) = f.running_job();
    let ask = |f: &mut Fixture, who: &Identity, ids: Vec<String>| {
        let privilege = who.privilege(f.state.server_attr("managers", None), f.state.server_attr("operators", None));
        let ctx = Ctx { who, privilege, now: f.now, groups: &[], hook_attrs: &[] };
        match handle(&mut f.state, &ctx, 1, Request::PreemptJobs { ids }) {
            Handled::Preempt(ids) => Ok(ids),
            Handled::Apply(reply, effects) => Err((reply.code, effects.is_empty())),
            _ => panic!("a PreemptJobs is run or refused"),
        }
    };
    assert_eq!(ask(&mut f, &alice(), vec![id.clone()]), Err((Pbse::PERM.0, true)));
    let ids = ask(&mut f, &root(), vec![id.clone(), "nosuch".into(), id.clone(), other.clone()]).expect("run");
    // The default order, SCR: both suspensions asked in one round, nothing changed yet.
    let mut preemption = crate::job::preempt::begin(&f.state, &ids, f.now);
    let round = crate::job::preempt::step(&mut f.state, &mut preemption, f.now);
    let asked: Vec<&str> =
        round.items.iter().map(|(_, node, _, m)| (node.as_str(), m.method().letter())).map(|(n, _)| n).collect();
    assert_eq!(asked, ["n1", "n1"]);
    assert_eq!(f.job_state(key), Some(JobState::Running));
    // One mom stops its job (its `z` record is written with it), the other does not
    // answer: that job falls to C, asked of its mom, who has no checkpoint script; then R,
    // whose kill goes out in the next round.
    let effects = crate::job::preempt::answered(&mut f.state, &mut preemption, &round, &[Some(Ok(())), None], f.now);
    // The stopped job's one write, substate 45 (the scheduler's suspension) from the start.
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(records(&effects), [format!("z;{id}")]);
    assert_eq!(f.job_state(key), Some(JobState::Suspended));
    assert_eq!(f.state.job(key).map(|j| j.substate), Some(pbs_core::Substate::SCHSUSP));
    let round = crate::job::preempt::step(&mut f.state, &mut preemption, f.now);
    let asked: Vec<_> = round.items.iter().map(|item| item.3).collect();
    assert_eq!(asked, [crate::job::preempt::Ask::Checkpoint]);
    assert_eq!(f.state.ending.get(&other_key), Some(&crate::state::EndReason::Checkpoint));
    crate::job::preempt::answered(&mut f.state, &mut preemption, &round, &[Some(Err(Pbse::NOSUP.0))], f.now);
    assert_eq!(f.state.ending.get(&other_key), None, "a refused checkpoint leaves the job running");
    let round = crate::job::preempt::step(&mut f.state, &mut preemption, f.now);
    assert_eq!(round.items.len(), 1);
    assert_eq!(frames(&round.effects), n1(&["KillJob"]));
    assert!(!crate::job::preempt::done(&preemption));
    crate::job::preempt::answered(&mut f.state, &mut preemption, &round, &[Some(Ok(()))], f.now);
    assert!(crate::job::preempt::done(&preemption));
    let methods: Vec<char> = crate::job::preempt::results(&preemption).iter().map(|p| p.method).collect();
    assert_eq!(methods, ['S', '0', '0', 'R']);
    assert_eq!(f.job_state(other_key), Some(JobState::Running), "its end, not the answer, requeues it");
}

/// qmove: a job that has not started moves to an enabled queue, with its Q record; a
/// running one, an unknown queue and a disabled queue are refused.
#[test]
fn a_move_takes_a_waiting_job_to_another_queue_and_refuses_a_running_one() {
    use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp};
    let mut f = fixture();
    let set = |name: &str, value: &str| MgrAttr { name: name.into(), op: MgrOp::Set, value: value.into() };
    let attrs = vec![set("queue_type", "execution"), set("enabled", "True"), set("started", "True")];
    let create =
        Request::Manager { command: MgrCommand::Create, object: MgrObject::Queue, names: vec!["q2".into()], attrs };
    assert_eq!(f.request(&root(), create).0.code, 0);
    let held = f.submit(&alice(), &[("Hold_Types", "u")]);
    let key = crate::jobkey::key_of(&held).unwrap_or(JobKey::job(u64::MAX));
    let (reply, effects) = f.request(&alice(), Request::MoveJob { ids: ids(&[&held]), destination: "q2".into() });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(writes(&effects), ["PutJob"]);
    assert_eq!(records(&effects), [format!("Q;{held}")]);
    assert_eq!(f.state.job(key).map(|j| j.queue.to_string()).as_deref(), Some("q2"));
    let (reply, _) = f.request(&alice(), Request::MoveJob { ids: ids(&[&held]), destination: "nosuchq".into() });
    assert_eq!(per_id_codes(&reply), [Pbse::UNKQUE.0]);
    let (_, running) = f.running_job();
    let (reply, _) = f.request(&alice(), Request::MoveJob { ids: ids(&[&running]), destination: "q2".into() });
    assert_eq!(per_id_codes(&reply), [Pbse::BADSTATE.0]);
}

fn bob() -> Identity {
    Identity { user: "bob".into(), group: "users".into(), uid: 1001, host: "host".into(), daemon: false, remote: false }
}

/// qorder: the owner of both jobs swaps their `queue_rank` (the scheduler's view then
/// carries it); a running job, an unknown one and another user's are refused.
#[test]
fn an_order_swaps_two_waiting_jobs_ranks_and_refuses_a_running_unknown_or_strangers_job() {
    let mut f = fixture();
    let first = f.submit(&alice(), &[]);
    let second = f.submit(&alice(), &[]);
    let key = |id: &str| crate::jobkey::key_of(id).unwrap_or(JobKey::job(u64::MAX));
    let rank = |f: &Fixture, id: &str| f.state.job(key(id)).and_then(|j| j.get("queue_rank", None).map(str::to_string));
    let (rank1, rank2) = (rank(&f, &first), rank(&f, &second));
    let order = |first: &str, second: &str| Request::OrderJob { first: first.into(), second: second.into() };
    let (reply, effects) = f.request(&alice(), order(&first, &second));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(writes(&effects), ["PutJob", "PutJob"]);
    assert_eq!((rank(&f, &first), rank(&f, &second)), (rank2.clone(), rank1.clone()));
    let view = f.state.job(key(&second)).map(|j| crate::sched_view::sched_job(&f.state, j));
    let sent = view.and_then(|v| v.attrs.iter().find(|a| a.name() == "queue_rank").map(|a| a.value().to_string()));
    assert_eq!(sent, rank1, "the scheduler hears the swapped rank");
    let (_, running) = f.running_job();
    assert_eq!(f.request(&alice(), order(&first, &running)).0.code, Pbse::BADSTATE.0);
    assert_eq!(f.request(&alice(), order(&first, "99999.svr")).0.code, Pbse::UNKJOBID.0);
    assert_eq!(f.request(&bob(), order(&first, &second)).0.code, Pbse::PERM.0);
    assert_eq!(f.request(&alice(), order("1[2].svr", &second)).0.code, Pbse::IVALREQ.0);
    assert_eq!((rank(&f, &first), rank(&f, &second)), (rank2, rank1), "refusals change nothing");
}

/// qterm: ordinary users are refused; an immediate stop requeues the running job through
/// its mom and the server may stop once that end is in; no run starts meanwhile.
#[test]
fn a_shutdown_is_an_operators_and_an_immediate_one_requeues_running_jobs_first() {
    let mut f = fixture();
    let (key, id) = f.running_job();
    let queued = f.submit(&alice(), &[]);
    let stop = |manner: &str| Request::Shutdown { manner: manner.into(), scheduler: true, moms: true };
    assert_eq!(f.request(&alice(), stop("quick")).0.code, Pbse::PERM.0);
    assert!(f.state.stopping.is_none());
    assert_eq!(f.request(&root(), stop("soon")).0.code, Pbse::IVALREQ.0);
    let (reply, effects) = f.request(&root(), stop("immediate"));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(frames(&effects), n1(&["KillJob"]));
    assert!(!crate::shutdown::may_stop(&f.state), "it waits for the job's end");
    let run = Request::RunJob { id: queued, exec_vnode: Some("n1".into()) };
    assert_eq!(f.request(&root(), run).0.code, Pbse::SVRDOWN.0, "nothing starts while stopping");
    let effects = crate::job::end::job_ended(&mut f.state, "n1", &id, 271, &Usage::default(), f.now);
    assert_eq!(records(&effects), [format!("R;{id}")]);
    assert_eq!(f.job_state(key), Some(JobState::Queued));
    assert!(crate::shutdown::may_stop(&f.state));
}

/// qterm -t immediate of a job that is not rerunnable aborts it as OpenPBS's `job_abt`:
/// an `A` record with its reason (no `D`: nobody deleted it), its mom told to end it,
/// and its `E` once the mom reports the end.
#[test]
fn an_immediate_shutdown_aborts_a_job_that_is_not_rerunnable() {
    let mut f = fixture();
    let (_, id) = f.running_job_with(&[("Rerunable", "False")]);
    let stop = Request::Shutdown { manner: "immediate".into(), scheduler: true, moms: true };
    let (reply, effects) = f.request(&root(), stop);
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(records(&effects), [format!("A;{id}")]);
    let text = effects.ops.iter().find_map(|op| match op {
        StoreOp::Account(record) => Some(record.text.clone()),
        _ => None,
    });
    assert_eq!(text.as_deref(), Some("Aborted by PBS Server  on Server shutdown"));
    assert_eq!(frames(&effects), n1(&["KillJob"]));
    let effects = crate::job::end::job_ended(&mut f.state, "n1", &id, 271, &Usage::default(), f.now);
    assert_eq!(records(&effects), [format!("E;{id}")]);
    assert!(crate::shutdown::may_stop(&f.state));
}

/// qmsg: a running job's message goes to its mother superior's mom, with the streams
/// asked (stderr when none is); a queued job, an array and a stranger are refused, and
/// nothing is written.
#[test]
fn a_message_asks_the_running_jobs_mom_and_refuses_a_queued_job() {
    let mut f = fixture();
    let (_, running) = f.running_job();
    let queued = f.submit(&alice(), &[]);
    let message =
        |id: &str, stdout: bool| Request::MessageJob { id: id.into(), text: "hi".into(), stdout, stderr: false };
    let owner = alice();
    let ctx = Ctx { who: &owner, privilege: Privilege::User, now: 1000, groups: &[], hook_attrs: &[] };
    match handle(&mut f.state, &ctx, 1, message(&running, false)) {
        Handled::AskMom(asking) => {
            assert_eq!(asking.node, "n1");
            let ToMom::MessageJob { job_id, text, stdout, stderr, .. } = asking.frame else { panic!("a MessageJob") };
            assert_eq!((job_id.as_str(), text.as_str(), stdout, stderr), (running.as_str(), "hi", false, true));
        }
        _ => panic!("the mom is asked"),
    }
    let (reply, effects) = f.request(&alice(), message(&queued, true));
    assert_eq!(reply.code, Pbse::BADSTATE.0);
    assert!(effects.is_empty());
    assert_eq!(f.request(&bob(), message(&running, true)).0.code, Pbse::PERM.0);
    let array = f.submit(&alice(), &[("array_indices_submitted", "1-2")]);
    let (reply, _) = f.request(&alice(), message(&array, true));
    assert_eq!((reply.code, reply.message.as_str()), (Pbse::NOSUP.0, "not supported for Array Jobs"));
}

/// A subjob cannot be held alone (as in OpenPBS): its array is. A subjob requeued while
/// its array is held goes back among the array's queued indices and does not run until
/// the array is released.
#[test]
fn a_subjob_requeued_while_its_array_is_held_waits_for_the_release() {
    let mut f = fixture();
    let array = f.submit(&alice(), &[("array_indices_submitted", "1-2")]);
    let seq = crate::jobkey::key_of(&array).map_or(u64::MAX, |k| k.seq);
    let subjob = pbs_core::JobId::subjob(seq, 1, "svr").to_string();
    let (reply, _) = f.request(&root(), Request::RunJob { id: subjob.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    crate::job::end::job_started(&mut f.state, "n1", &subjob, 42, f.now);
    let (reply, _) = f.request(&alice(), Request::HoldJob { ids: ids(&[&array]), hold_types: "u".into() });
    assert_eq!(reply.code, 0, "{reply:?}");
    let (reply, _) = f.request(&root(), Request::RerunJob { ids: ids(&[&subjob]), force: false });
    assert_eq!(reply.code, 0, "{reply:?}");
    crate::job::end::job_ended(&mut f.state, "n1", &subjob, 271, &Usage::default(), f.now);
    assert_eq!(f.job_state(JobKey::job(seq)), Some(JobState::Held), "the array stays held");
    let remaining = f.state.jobs.get(&seq).and_then(|j| j.get("array_indices_remaining", None).map(str::to_string));
    assert_eq!(remaining.as_deref(), Some("1-2"), "the subjob is queued in its array again");
    let view = f.state.jobs.get(&seq).map(|j| crate::sched_view::sched_job(&f.state, j));
    assert_eq!(view.map(|v| v.state), Some('H'), "so the scheduler runs none of its subjobs");
    let (reply, _) = f.request(&root(), Request::RunJob { id: subjob.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, Pbse::BADSTATE.0, "nor does a qrun");
    let (reply, _) = f.request(&alice(), Request::ReleaseJob { ids: ids(&[&array]), hold_types: "u".into() });
    assert_eq!(reply.code, 0, "{reply:?}");
    // Every subjob is queued again, so the array is `Q` as its refresh counts it.
    assert_eq!(f.job_state(JobKey::job(seq)), Some(JobState::Queued));
    let (reply, _) = f.request(&root(), Request::RunJob { id: subjob, exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "released, it runs again: {reply:?}");
}

/// `qsub -W block=true`: only the owner (or an operator) may wait for a job; the wait is
/// answered by the step that ends the job, here a qdel that says who asked, and only once
/// the change is applied (the answer travels in the effects).
#[test]
fn a_wait_for_a_job_is_its_owners_and_is_answered_when_the_job_leaves() {
    let mut f = fixture();
    let id = f.submit(&alice(), &[("Hold_Types", "u")]);
    let wait = |f: &mut Fixture, who: &Identity| {
        let privilege = who.privilege(f.state.server_attr("managers", None), f.state.server_attr("operators", None));
        let ctx = Ctx { who, privilege, now: f.now, groups: &[], hook_attrs: &[] };
        handle(&mut f.state, &ctx, 1, Request::WaitJob { id: id.clone() })
    };
    match wait(&mut f, &bob()) {
        Handled::Apply(reply, _) => assert_eq!(reply.code, Pbse::PERM.0, "{reply:?}"),
        _ => panic!("bob may not wait for alice's job"),
    }
    let Handled::AwaitJob(mut done) = wait(&mut f, &alice()) else { panic!("alice waits") };
    let (reply, effects) =
        f.request(&root(), Request::DeleteJob { ids: ids(&[&id]), force: false, purge_history: false });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(done.try_recv().is_err(), "no answer before the change is applied");
    crate::job::block::answer(&mut f.state, effects.waits_done);
    assert_eq!(done.try_recv().ok(), Some((0, "Job to be deleted at request of root@host".to_string())));
    // Finished (kept in history): answered at once with its exit status.
    match wait(&mut f, &alice()) {
        Handled::Apply(reply, _) => assert!(matches!(reply.body, ReplyBody::JobDone { .. }), "{reply:?}"),
        _ => panic!("a finished job is answered at once"),
    }
}

/// The kind of a request, by an exhaustive match: a new kind does not build until it is
/// named here, and then [`every_request_kind_has_a_handler_test`] wants a test of it.
fn kind_of(request: &Request) -> &'static str {
    match request {
        Request::QueueJob { .. } => "QueueJob",
        Request::StatusJob { .. } => "StatusJob",
        Request::SelectJobs { .. } => "SelectJobs",
        Request::ModifyJob { .. } => "ModifyJob",
        Request::DeleteJob { .. } => "DeleteJob",
        Request::HoldJob { .. } => "HoldJob",
        Request::ReleaseJob { .. } => "ReleaseJob",
        Request::StatusServer { .. } => "StatusServer",
        Request::StatusQueue { .. } => "StatusQueue",
        Request::StatusNode { .. } => "StatusNode",
        Request::StatusSched { .. } => "StatusSched",
        Request::StatusResource { .. } => "StatusResource",
        Request::StatusHook { .. } => "StatusHook",
        Request::ImportHook { .. } => "ImportHook",
        Request::ExportHook { .. } => "ExportHook",
        Request::RunJob { .. } => "RunJob",
        Request::SignalJob { .. } => "SignalJob",
        Request::RerunJob { .. } => "RerunJob",
        Request::Manager { .. } => "Manager",
        Request::PreemptJobs { .. } => "PreemptJobs",
        Request::MoveJob { .. } => "MoveJob",
        Request::OrderJob { .. } => "OrderJob",
        Request::Shutdown { .. } => "Shutdown",
        Request::MessageJob { .. } => "MessageJob",
        Request::WaitJob { .. } => "WaitJob",
    }
}

#[test]
fn every_request_kind_has_a_handler_test() {
    let samples = [
        Request::QueueJob { attrs: Vec::new(), script: String::new(), destination: None },
        Request::StatusJob { ids: Vec::new(), queues: Vec::new(), attrs: Vec::new(), history: false, subjobs: false },
        Request::SelectJobs { criteria: Vec::new(), history: false, subjobs: false, arrays_only: false },
        Request::ModifyJob { ids: Vec::new(), attrs: Vec::new() },
        Request::DeleteJob { ids: Vec::new(), force: false, purge_history: false },
        Request::HoldJob { ids: Vec::new(), hold_types: String::new() },
        Request::ReleaseJob { ids: Vec::new(), hold_types: String::new() },
        Request::StatusServer { attrs: Vec::new() },
        Request::StatusQueue { names: Vec::new(), attrs: Vec::new() },
        Request::StatusNode { names: Vec::new() },
        Request::StatusSched { names: Vec::new() },
        Request::StatusResource { names: Vec::new() },
        Request::StatusHook { names: Vec::new() },
        Request::ImportHook {
            name: String::new(),
            content_type: String::new(),
            encoding: String::new(),
            content: String::new(),
        },
        Request::ExportHook { name: String::new(), content_type: String::new(), encoding: String::new() },
        Request::RunJob { id: String::new(), exec_vnode: None },
        Request::SignalJob { ids: Vec::new(), signal: String::new() },
        Request::RerunJob { ids: Vec::new(), force: false },
        Request::PreemptJobs { ids: Vec::new() },
        Request::MoveJob { ids: Vec::new(), destination: String::new() },
        Request::OrderJob { first: String::new(), second: String::new() },
        Request::Shutdown { manner: String::new(), scheduler: false, moms: false },
        Request::MessageJob { id: String::new(), text: String::new(), stdout: false, stderr: false },
        Request::WaitJob { id: String::new() },
        Request::Manager {
            command: pbs_proto::MgrCommand::Set,
            object: pbs_proto::MgrObject::Server,
            names: Vec::new(),
            attrs: Vec::new(),
        },
    ];
    // The tests above this one, where each kind must be sent through the dispatch.
    let source = include_str!("handler_tests.rs");
    let tests = &source[..source.find("fn kind_of(").unwrap_or(source.len())];
    let mut untested: Vec<&str> =
        samples.iter().map(kind_of).filter(|kind| !tests.contains(&format!("Request::{kind} {{"))).collect();
    untested.dedup();
    assert!(untested.is_empty(), "request kinds without a handler test: {untested:?}");
    let mut kinds: Vec<&str> = samples.iter().map(kind_of).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), samples.len(), "a sample per kind");
}

/// A chain 10,000 deep and a parent named 2,000 times in one list: submission writes the
/// child only, the index holds one relation per pair, and a qalter that would close the
/// chain into a cycle is refused after one walk of the jobs waiting on it.
#[test]
fn deep_chains_and_repeated_parents_stay_bounded() {
    let mut f = fixture();
    let head = f.submit(&alice(), &[("Hold_Types", "u")]);
    let mut previous = head.clone();
    for _ in 0..10_000 {
        let attrs = vec![Attr::new("depend", format!("afterok:{previous}"))];
        let (reply, effects) =
            f.request(&alice(), Request::QueueJob { attrs, script: "true\n".into(), destination: None });
        let job_writes = writes(&effects).into_iter().filter(|w| *w == "PutJob").count();
        assert_eq!(job_writes, 1, "the child's record only, never its parent's: {reply:?}");
        previous = match reply.body {
            ReplyBody::JobId(id) => id,
            other => panic!("no job id: {other:?}"),
        };
    }
    let seq = |id: &str| crate::jobkey::key_of(id).map(|k| k.seq).unwrap_or(u64::MAX);
    let alter = |f: &mut Fixture, id: &str, list: String| {
        f.request(&alice(), Request::ModifyJob { ids: vec![id.to_string()], attrs: vec![Attr::new("depend", list)] })
    };
    let (reply, _) = alter(&mut f, &head, format!("afterok:{previous}"));
    assert_eq!(reply.code, Pbse::BADDEPEND.0, "{reply:?}");
    assert_eq!(f.state.dependents.children_of(seq(&previous)).len(), 0);

    let parent = f.submit(&alice(), &[("Hold_Types", "u")]);
    let list = format!("afterok:{}", vec![parent.as_str(); 2000].join(":"));
    let child = f.submit(&alice(), &[("depend", list.as_str())]);
    assert_eq!(
        f.state.dependents.children_of(seq(&parent)),
        vec![(seq(&child), pbs_core::depend::DependKind::Afterok)]
    );
}

/// The record a PutJob of `seq` among `ops` writes (the last one).
fn job_record(ops: &[StoreOp], seq: u64) -> String {
    ops.iter()
        .rev()
        .find_map(|op| match op {
            StoreOp::PutJob { seq: s, record, .. } if *s == seq => record.text().ok().map(str::to_string),
            _ => None,
        })
        .expect("a PutJob of the job")
}

/// eligible_time_enable (`state::accrual`): qalter of eligible_time is a manager's, and
/// 15138 while it is off; turned on, a queued job accrues eligible time, a user hold stops
/// it (the server's own decision), the scheduler's accrue_type starts it again, the time
/// shown is exact between updates, and the record written keeps since when it accrues, so
/// a restart shows the same time. Off, qstat shows neither attribute.
#[test]
fn eligible_time_accrues_only_while_a_job_could_run_and_survives_a_restart() {
    use pbs_proto::sched::{Action, JobUpdate};
    use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp};

    use crate::request::filter::StatusFilter;
    use crate::state::accrual::eligible_secs;

    let mut f = fixture();
    let id = f.submit(&alice(), &[]);
    let key = JobKey::job(0);
    let alter = |value: &str| Request::ModifyJob { ids: ids(&[&id]), attrs: vec![Attr::new("eligible_time", value)] };
    let (reply, _) = f.request(&root(), alter("00:10:00"));
    assert_eq!(per_id_codes(&reply), [Pbse::ETEERROR.0], "off: {reply:?}");
    assert_eq!(f.state.jobs[&0].get("accrue_type", None), None, "off: nothing kept");
    let enable = |value: &str| Request::Manager {
        command: MgrCommand::Set,
        object: MgrObject::Server,
        names: Vec::new(),
        attrs: vec![MgrAttr { name: "eligible_time_enable".into(), op: MgrOp::Set, value: value.into() }],
    };
    let (reply, effects) = f.request(&root(), enable("True"));
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(job_record(&effects.ops, 0).contains("\"accrue_since\":1000"), "the job is written as it accrues");
    let (reply, _) = f.request(&alice(), alter("00:10:00"));
    assert_eq!(per_id_codes(&reply), [Pbse::ATTRRO.0], "a user may not set it");
    let job = |f: &Fixture| f.state.job(key).cloned().expect("the job");
    assert_eq!(job(&f).get("accrue_type", None), Some("2"));
    f.now += 100;
    assert_eq!(eligible_secs(&job(&f), f.now), 100, "exact between updates");
    // A user hold: ineligible, decided by the server.
    let (_, effects) = f.request(&alice(), Request::HoldJob { ids: ids(&[&id]), hold_types: "u".into() });
    assert_eq!(job(&f).get("accrue_type", None), Some("1"));
    assert!(job_record(&effects.ops, 0).contains("\"accrue_type\",\"1\""), "written with the hold");
    f.now += 500;
    assert_eq!(eligible_secs(&job(&f), f.now), 100, "a held job does not accrue");
    // Released, the server cannot tell: the scheduler's update says eligible again.
    f.request(&alice(), Request::ReleaseJob { ids: ids(&[&id]), hold_types: "u".into() });
    assert_eq!(job(&f).get("accrue_type", None), Some("1"));
    let update = |value: &str| {
        vec![Action::Update(JobUpdate { job_id: id.clone(), attrs: vec![Attr::new("accrue_type", value)] })]
    };
    let (errors, _) = crate::sched_view::apply_decisions(&mut f.state, &update("3"), f.now, None);
    assert_eq!(errors.len(), 1, "a scheduler never sets run time");
    let (errors, effects) = crate::sched_view::apply_decisions(&mut f.state, &update("2"), f.now, None);
    assert!(errors.is_empty(), "{errors:?}");
    f.now += 50;
    let shown = |f: &Fixture, privilege| {
        let filter = StatusFilter::new(&[], privilege).with_eligible_time(&f.state, f.now);
        let status = filter.job_status(&f.state, &job(f));
        let value = |name: &str| status.attrs.iter().find(|a| a.0 == name).map(|a| a.1.clone());
        (value("eligible_time"), value("accrue_type"))
    };
    assert_eq!(shown(&f, Privilege::Manager), (Some("00:02:30".into()), Some("2".into())));
    assert_eq!(shown(&f, Privilege::User), (Some("00:02:30".into()), None), "accrue_type is a manager's to read");
    // A manager's qalter: the new value accrues on from now.
    let (reply, _) = f.request(&root(), alter("01:00:00"));
    assert_eq!(per_id_codes(&reply), Vec::<u32>::new(), "{reply:?}");
    // A restart reads back the record: the same time, still accruing.
    f.now += 30;
    let record = job_record(&effects.ops, 0);
    let loaded = crate::store::Loaded { jobs: vec![(0, record)], ..Default::default() };
    let (mut restarted, _) = State::from_loaded(loaded, "svr", "host", "/nonexistent");
    restarted.server = f.state.server.clone();
    let before = restarted.jobs.get(&0).map(|j| eligible_secs(j, f.now));
    assert_eq!(before, Some(100 + 80), "the record of the scheduler's update, read back");
    assert_eq!(eligible_secs(&job(&f), f.now), 3600 + 30);
    // Off: neither attribute is shown.
    f.request(&root(), enable("False"));
    assert_eq!(shown(&f, Privilege::Manager), (None, None));
}

/// A job set's start holds the other members (substate 95, the comment) found through
/// the index, the index and holds are read back at a restart, a requeue releases them,
/// and with `job_set_finish_others` a start finishes them instead.
#[test]
fn a_job_set_start_holds_the_others_through_the_index_and_a_requeue_releases_them() {
    let mut f = fixture();
    let leader = f.submit(&alice(), &[("job_set", "new")]);
    let second = f.submit(&alice(), &[("job_set", leader.as_str())]);
    let third = f.submit(&alice(), &[("job_set", leader.as_str())]);
    let seq = |id: &str| crate::jobkey::key_of(id).map(|k| k.seq).unwrap_or(u64::MAX);
    let job = |f: &Fixture, id: &str| f.state.jobs.get(&seq(id)).expect("the job").clone();
    for id in [&leader, &second, &third] {
        assert_eq!(job(&f, id).get("job_set", None), Some(leader.as_str()));
    }
    // Another user's set is refused; a set that does not exist is none.
    let bob = Identity { user: "bob".into(), ..alice() };
    let attrs = vec![Attr::new("job_set", leader.as_str())];
    let (reply, _) = f.request(&bob, Request::QueueJob { attrs, script: String::new(), destination: None });
    assert_eq!(reply.code, Pbse::PERM.0);
    let attrs = vec![Attr::new("job_set", second.as_str())];
    let (reply, _) = f.request(&alice(), Request::QueueJob { attrs, script: String::new(), destination: None });
    assert_eq!(reply.code, Pbse::NO_JOBSET.0);

    let (reply, effects) = f.request(&root(), Request::RunJob { id: second.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(writes(&effects), ["PutJob", "PutJob", "PutJob"], "the run, then the two it holds");
    for id in [&leader, &third] {
        let held = job(&f, id);
        assert_eq!((held.state, held.substate.0, held.get("Hold_Types", None)), (JobState::Held, 95, Some("s")));
        let comment = format!("Job held, job {second} running from this job_set");
        assert_eq!(held.get("comment", None), Some(comment.as_str()));
    }
    // Read back from the records, as at a restart: the same set, the same member running.
    let jobs = [&leader, &second, &third]
        .iter()
        .map(|id| {
            let StoreOp::PutJob { record, .. } = job(&f, id).put_op(None) else { panic!("a job's record") };
            (seq(id), record.text().expect("a record").to_string())
        })
        .collect();
    let (restarted, _) =
        State::from_loaded(crate::store::Loaded { jobs, ..Default::default() }, "svr", "host", "/nonexistent");
    assert_eq!(restarted.job_sets.get(seq(&leader)), f.state.job_sets.get(seq(&leader)));
    assert_eq!(f.state.job_sets.get(seq(&leader)).and_then(|s| s.running), Some(seq(&second)));

    let effects = crate::job::end::lost(&mut f.state, JobKey::job(seq(&second)), f.now);
    assert!(!effects.ops.is_empty());
    for id in [&leader, &third] {
        let released = job(&f, id);
        assert_eq!((released.state, released.substate.0), (JobState::Queued, 10));
        assert_eq!((released.get("Hold_Types", None), released.get("comment", None)), (Some("n"), None));
    }
    assert_eq!(f.state.job_sets.get(seq(&leader)).and_then(|s| s.running), None);

    // The experimental mode: the others finish (no history here: they are gone).
    crate::state::set_named(
        &mut f.state.server,
        pbs_core::ObjectKind::Server,
        "job_set_finish_others",
        "True",
        &mut f.state.interner,
    );
    let (reply, effects) = f.request(&root(), Request::RunJob { id: third.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(records(&effects).iter().filter(|r| r.starts_with("A;")).count(), 2);
    assert!(!f.state.jobs.contains_key(&seq(&leader)) && !f.state.jobs.contains_key(&seq(&second)));
    assert_eq!(f.state.job_sets.get(seq(&leader)).map(|s| s.members.len()), Some(1));
}

/// A member whose start held the others but that was deleted before the start reached its
/// mom (`qdel` between the run and its delivery) never ran: the members its start held
/// are released, not left held for a run that does not exist. One whose start its mom
/// confirmed ran, however it ends.
#[test]
fn a_job_set_start_deleted_before_it_ran_releases_the_others() {
    let mut f = fixture();
    let leader = f.submit(&alice(), &[("job_set", "new")]);
    let second = f.submit(&alice(), &[("job_set", leader.as_str())]);
    let seq = |id: &str| crate::jobkey::key_of(id).map(|k| k.seq).unwrap_or(u64::MAX);
    let (reply, _) = f.request(&root(), Request::RunJob { id: second.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(f.state.jobs.get(&seq(&leader)).map(|j| j.substate.0), Some(95));
    let effects = crate::job::end::force_delete(&mut f.state, JobKey::job(seq(&second)), f.now);
    assert!(!effects.ops.is_empty());
    let released = f.state.jobs.get(&seq(&leader)).expect("the leader").clone();
    assert_eq!((released.state, released.substate.0), (JobState::Queued, 10));
    assert_eq!((released.get("Hold_Types", None), released.get("comment", None)), (Some("n"), None));
    assert_eq!(f.state.job_sets.get(seq(&leader)).and_then(|s| s.running), None);

    // A start its mom confirmed did run, even when `qdel -W force` ends it without an exit
    // status: the members it held are finished (no history here: gone).
    let third = f.submit(&alice(), &[("job_set", leader.as_str())]);
    let (reply, _) = f.request(&root(), Request::RunJob { id: third.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(f.state.jobs.get(&seq(&leader)).map(|j| j.substate.0), Some(95));
    assert!(!crate::job::end::job_started(&mut f.state, "n1", &third, 4242, f.now).ops.is_empty());
    let effects = crate::job::end::force_delete(&mut f.state, JobKey::job(seq(&third)), f.now);
    assert!(records(&effects).iter().any(|r| r.starts_with(&format!("A;{leader}"))), "{:?}", records(&effects));
    assert!(!f.state.jobs.contains_key(&seq(&leader)));
}

/// A runone member deleted before its start reached its mom never ran: the others its
/// start held lose that system hold and stop naming it, instead of waiting held for ever.
/// One whose start its mom confirmed ran, however it ends (`qdel -W force` too): the
/// others are deleted, as OpenPBS deletes them at a running member's end.
#[test]
fn a_runone_start_deleted_before_it_ran_releases_the_others() {
    let mut f = fixture();
    let seq = |id: &str| crate::jobkey::key_of(id).map(|k| k.seq).unwrap_or(u64::MAX);
    let first = f.submit(&alice(), &[]);
    let second = f.submit(&alice(), &[("depend", format!("runone:{first}").as_str())]);
    let (reply, _) = f.request(&root(), Request::RunJob { id: second.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    let held = f.state.jobs.get(&seq(&first)).expect("the first").clone();
    assert_eq!((held.state, held.get("Hold_Types", None)), (JobState::Held, Some("s")));
    let effects = crate::job::end::force_delete(&mut f.state, JobKey::job(seq(&second)), f.now);
    assert!(!effects.ops.is_empty());
    let released = f.state.jobs.get(&seq(&first)).expect("the first, kept").clone();
    assert_eq!((released.state, released.substate.0), (JobState::Queued, 10));
    assert_eq!((released.get("Hold_Types", None), released.get("depend", None)), (Some("n"), None));

    // A member whose start its mom confirmed ran: `qdel -W force` deletes the others.
    let third = f.submit(&alice(), &[("depend", format!("runone:{first}").as_str())]);
    let (reply, _) = f.request(&root(), Request::RunJob { id: third.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert!(!crate::job::end::job_started(&mut f.state, "n1", &third, 4242, f.now).ops.is_empty());
    let effects = crate::job::end::force_delete(&mut f.state, JobKey::job(seq(&third)), f.now);
    assert!(records(&effects).iter().any(|r| r.starts_with(&format!("A;{first}"))), "{:?}", records(&effects));
    assert!(!f.state.jobs.contains_key(&seq(&first)));
}

/// A job's request (`select`, `place`) is parsed once into the form kept beside its
/// attributes, shared by jobs asking the same, made again wherever the texts change (a
/// qalter, an OR-ed alternative chosen for a run and put back at a requeue, a start
/// reading the store), and the run reads that form.
#[test]
fn a_jobs_request_is_kept_parsed_shared_and_current() {
    use crate::state::request::Asked;
    let mut f = fixture();
    let request_of = |f: &Fixture, key: JobKey| f.state.job(key).and_then(|j| j.request_shared()).expect("kept");
    let a_id = f.submit(&alice(), &[("Resource_List.select", "1:ncpus=2"), ("Resource_List.place", "excl")]);
    let b_id = f.submit(&alice(), &[("Resource_List.select", "1:ncpus=2"), ("Resource_List.place", "excl")]);
    let (a, b) = (crate::jobkey::key_of(&a_id).expect("a key"), crate::jobkey::key_of(&b_id).expect("a key"));
    let kept = request_of(&f, a);
    assert_eq!(kept.plain().map(ToString::to_string).as_deref(), Some("1:ncpus=2"));
    assert_eq!(kept.place.as_ref().map(|p| p.sharing), Some(pbs_core::select::Sharing::Excl));
    assert!(std::sync::Arc::ptr_eq(&kept, &request_of(&f, b)), "the same texts share one parse");
    // A qalter makes the altered job's request again; the other keeps its own.
    let attrs = vec![Attr::new("Resource_List.select", "1:ncpus=3")];
    let (reply, _) = f.request(&alice(), Request::ModifyJob { ids: ids(&[&a_id]), attrs });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(request_of(&f, a).plain().map(ToString::to_string).as_deref(), Some("1:ncpus=3"));
    assert_eq!(request_of(&f, b).plain().map(ToString::to_string).as_deref(), Some("1:ncpus=2"));
    // An OR-ed request: kept with its alternatives; the alternative a run takes is what
    // the run reads (its exec_vnode takes that alternative's ncpus), and a requeue puts
    // the alternatives back.
    let c = f.submit(&alice(), &[("Resource_List.select", "1:ncpus=3||1:ncpus=1")]);
    let c_key = crate::jobkey::key_of(&c).expect("a key");
    assert_eq!(request_of(&f, c_key).ored().map(|o| o.alternatives().len()), Some(2));
    crate::job::orselect::choose(&mut f.state, c_key, Some(0)).expect("chosen");
    assert!(matches!(request_of(&f, c_key).select, Some(Asked::Plain(_))));
    let (reply, _) = f.request(&root(), Request::RunJob { id: c.clone(), exec_vnode: Some("n1".into()) });
    assert_eq!(reply.code, 0, "{reply:?}");
    assert_eq!(f.state.job(c_key).and_then(|j| j.get("exec_vnode", None)), Some("(n1:ncpus=3)"));
    let StoreOp::PutJob { record, .. } = f.state.job(c_key).expect("the job").put_op(None) else { panic!("a record") };
    let text = record.text().expect("a record").to_string();
    crate::job::end::lost(&mut f.state, c_key, f.now);
    assert_eq!(f.state.stale_requests(), Vec::<JobKey>::new());
    assert_eq!(request_of(&f, c_key).ored().map(|o| o.alternatives().len()), Some(2), "the alternatives are back");
    // Read back from the store, as at a restart: kept as the run had it.
    let loaded = crate::store::Loaded { jobs: vec![(c_key.seq, text)], ..Default::default() };
    let (restarted, _) = State::from_loaded(loaded, "svr", "host", "/nonexistent");
    assert_eq!(restarted.stale_requests(), Vec::<JobKey>::new());
    let again = restarted.job(c_key).and_then(|j| j.request_shared()).expect("kept at a start");
    assert_eq!(again.plain().map(ToString::to_string).as_deref(), Some("1:ncpus=3"));
    // A text written around `Job::set_attrs` leaves a stale copy, which the check sees.
    let job = f.state.jobs.get_mut(&b.seq).expect("the job");
    let select = f.state.interner.intern("select");
    job.attrs.set(job_idx!("Resource_List"), Some(select), "1:ncpus=4");
    assert_eq!(f.state.stale_requests(), vec![b]);
}

#[test]
fn an_arrays_queued_indices_are_kept_parsed_and_current() {
    let mut f = fixture();
    let array = f.submit(&alice(), &[("array_indices_submitted", "0-9")]);
    let key = crate::jobkey::key_of(&array).expect("a key");
    assert_eq!(f.state.job(key).map(|j| j.remaining().len()), Some(10));
    let (reply, _) = f.request(
        &alice(),
        Request::DeleteJob { ids: vec![format!("{}[3-5]", key.seq)], force: false, purge_history: false },
    );
    assert_eq!(reply.code, 0, "{reply:?}");
    let parent = f.state.job(key).expect("the array");
    assert_eq!((parent.remaining().len(), parent.get("array_indices_remaining", None)), (7, Some("0-2,6-9")));
    // A text written around `Job::set_remaining` leaves a stale copy, which the check sees.
    let parent = f.state.jobs.get_mut(&key.seq).expect("the array");
    parent.attrs.set(job_idx!("array_indices_remaining"), None, "0-4");
    assert_eq!(f.state.stale_kept_facts([key]), vec![key]);
}

#[test]
fn a_jobs_depend_list_is_kept_parsed_and_a_release_edits_the_kept_list() {
    let mut f = fixture();
    let parent = f.submit(&alice(), &[]);
    let other = f.submit(&alice(), &[("Hold_Types", "u")]);
    let child = f.submit(&alice(), &[("depend", &format!("afterok:{parent}:{other}"))]);
    let (parent_key, child_key) =
        (crate::jobkey::key_of(&parent).expect("key"), crate::jobkey::key_of(&child).expect("key"));
    let kept = |f: &Fixture| f.state.job(child_key).and_then(|j| j.depend_list()).map(ToString::to_string);
    assert_eq!(kept(&f), Some(format!("afterok:{parent}@svr:{other}@svr")));
    // The parent's end releases its wait in the kept list, and the text follows it.
    let ended = crate::job::life::Step::Ended { exit: Some(0), ran: true, deleted: false };
    crate::job::parts::LIFE.step(&mut f.state, parent_key, ended, f.now, &mut Effects::default());
    assert_eq!(kept(&f), Some(format!("afterok:{other}@svr")));
    assert_eq!(f.state.stale_kept_facts([child_key]), Vec::<JobKey>::new());
    assert_eq!(f.job_state(child_key), Some(JobState::Held), "it still waits on the other");
    // A text written around `Job::set_depend` leaves a stale copy, which the check sees.
    let job = f.state.jobs.get_mut(&child_key.seq).expect("the child");
    job.attrs.set(job_idx!("depend"), None, "afterany:1.svr@svr");
    assert_eq!(f.state.stale_kept_facts([child_key]), vec![child_key]);
}
