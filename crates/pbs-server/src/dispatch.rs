//! The one dispatch of client requests: every request, status and qrun included, is
//! checked, handled under the state lock by its domain module, and its effects applied
//! through [`Server::apply_effects`] before the reply goes out.

use std::sync::Arc;
use std::time::Duration;

use pbs_core::Pbse;
use pbs_core::attr::ObjectKind;
use pbs_proto::mom::ToMom;
use pbs_proto::{Reply, ReplyBody, Request, StatusObject};
use tokio::sync::oneshot;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::identity::Identity;
use crate::job::status::StatusPlan;
use crate::jobkey::JobKey;
use crate::request::Ctx;
use crate::request::filter::StatusFilter;
use crate::server::{Applied, Server};
use crate::state::State;
use crate::state::links::Asked;

/// How long `qrun` waits for the scheduler to place a job.
const QRUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Jobs per status reply frame: keeps the state lock short and frames small.
const STATUS_CHUNK: usize = 2000;

/// Bytes of attribute text per status reply frame, well under what a frame may carry
/// (a job may hold 8 MiB of values).
const STATUS_PART_BYTES: usize = 4 << 20;

/// What a request is answered with.
pub enum Response {
    /// One reply.
    Reply(Reply),
    /// An answer in parts, each built under a short lock as it is taken.
    Parts(ReplyParts),
}

/// An answer sent in parts: a job status or a selection, each part made under a lock of
/// its own, so a long answer never holds the state for long nor makes a frame too big.
pub enum ReplyParts {
    /// qstat.
    JobStatus(JobStatusParts),
    /// qselect.
    Select(SelectParts),
}

impl ReplyParts {
    /// The next part, `None` once the last has been given.
    pub async fn next_part(&mut self, server: &Server) -> Option<Reply> {
        match self {
            ReplyParts::JobStatus(parts) => parts.next_part(server),
            ReplyParts::Select(parts) => parts.next_part(server).await,
        }
    }
}

/// What the handler under the lock leaves to the dispatch.
pub(crate) enum Handled {
    /// A reply, sent once the effects are carried out.
    Apply(Reply, Effects),
    /// An answer to give part by part.
    Parts(ReplyParts),
    /// A qrun for the scheduler to place (the job's full id).
    AskScheduler(String),
    /// A qsig whose answer waits for the moms'.
    AskMoms(AskingMoms),
    /// A qmsg whose answer is its mom's.
    AskMom(crate::job::message::MessageAsk),
    /// A PreemptJobs list, run through its rounds outside the lock.
    Preempt(Vec<String>),
    /// A WaitJob whose job has not left yet.
    AwaitJob(oneshot::Receiver<crate::job::block::Done>),
}

/// A qsig waiting for its moms: the ids as the request gave them (for the answer's
/// order), what was refused at once, and what each mom is asked.
pub(crate) struct AskingMoms {
    pub(crate) ids: Vec<String>,
    pub(crate) asks: crate::job::signal::SignalAsks,
}

/// Handles one request from `who` and gives its response.
pub async fn dispatch(server: &Arc<Server>, who: &Identity, id: u64, mut request: Request) -> Response {
    if let Err(e) = crate::size_limits::check_request(&request) {
        return Response::Reply(Reply::error(id, e.code.0, e.message));
    }
    // Before any hook or check reads them: every attribute under its one spelling, and
    // none given twice, so what a hook sees and changes is what the server acts on.
    if let Err(e) = crate::request::canonical::canonicalize(&mut request) {
        return Response::Reply(Reply::error(id, e.code.0, e.message));
    }
    // Outside the lock: a request naming one job many times is handled as naming it once,
    // and a submitter's groups (which a directory service may be slow to give) are known.
    let repeats = crate::request::ids::Repeats::drop_from(&mut request);
    let groups = if matches!(request, Request::QueueJob { .. }) { crate::acl::groups_of(who) } else { Vec::new() };
    // The one point where a request may wait before the state is locked: queuejob and
    // modifyjob hooks run here, on the request as it came, before anything is decided.
    if let Some(split) = crate::hookwait::one_alteration_per_job(server, &request) {
        return Response::Reply(alter_one_by_one(server, who, id, split).await);
    }
    let hook_attrs = match crate::hookwait::run_request_hooks(server, who, &mut request).await {
        Ok(changed) => changed,
        Err(e) => return Response::Reply(Reply::error(id, e.code.0, e.message)),
    };
    let sets_up_hooks =
        matches!(request, Request::ImportHook { .. } | Request::Manager { object: pbs_proto::MgrObject::Hook, .. });
    let (reply, applied) = match handle_locked(server, who, &groups, &hook_attrs, id, request) {
        Locked::Applied(reply, applied) => {
            // An interpreter is started only once a hook can run here: execution hooks run
            // on the moms, and an interpreter kept for them would cost a start for nothing.
            if sets_up_hooks && crate::hooks::event::any_server_hook(&server.lock().state) {
                server.hooks.warm();
            }
            (reply, applied)
        }
        Locked::Respond(Response::Reply(mut reply)) => {
            repeats.restore(&mut reply);
            return Response::Reply(reply);
        }
        Locked::Respond(response) => return response,
        Locked::AwaitMoms { ask, answered, asking, applied } => {
            let mut reply = answer_from_moms(server, id, ask, answered, asking, applied).await;
            repeats.restore(&mut reply);
            return Response::Reply(reply);
        }
        Locked::AwaitMom { ask, answered, applied } => {
            let _ = applied.done().await;
            let _ = tokio::time::timeout(MOM_ANSWER_DEADLINE, answered).await;
            let codes = crate::state::links::close_ask_codes(&mut server.lock().links, ask, 1);
            let code = codes.first().copied().unwrap_or(Pbse::NORELYMOM.0);
            return Response::Reply(match code {
                0 => Reply::ok(id, ReplyBody::None),
                code => Reply::error(id, code, Pbse(code).to_string()),
            });
        }
        Locked::Preempt(ids) => {
            let results = crate::preemptwait::preempt(server, &ids).await;
            return Response::Reply(Reply::ok(id, ReplyBody::Preempted(results)));
        }
        Locked::AwaitJob(done) => {
            // As long as the job takes: the connection is the waiter's own.
            return Response::Reply(match done.await {
                Ok((exit_status, message)) => Reply::ok(id, ReplyBody::JobDone { exit_status, message }),
                Err(_) => Reply::error(id, Pbse::SYSTEM.0, format!("{}the job's end was not seen", Pbse::SYSTEM)),
            });
        }
        Locked::AwaitScheduler { ask, answered } => {
            let _ = tokio::time::timeout(QRUN_TIMEOUT, answered).await;
            let answers = crate::state::links::close_ask(&mut server.lock().links, ask);
            // No answer in time: the scheduler did not take the request.
            let result = answers.into_iter().next().flatten().unwrap_or_else(|| Err(ReqError::new(Pbse::NOSCHEDULER)));
            return Response::Reply(match result {
                Ok(()) => Reply::ok(id, ReplyBody::None),
                Err(e) => Reply::error(id, e.code.0, e.message),
            });
        }
    };
    let committed = applied.done().await;
    Response::Reply(match committed {
        Ok(()) => {
            let mut reply = reply;
            repeats.restore(&mut reply);
            reply
        }
        Err(e) => Reply::error(id, Pbse::SYSTEM.0, format!("{}{e}", Pbse::SYSTEM)),
    })
}

/// Handles `ids` one by one (see `hookwait::one_alteration_per_job`) and answers per id.
async fn alter_one_by_one(
    server: &Arc<Server>,
    who: &Identity,
    id: u64,
    split: (Vec<String>, Vec<pbs_proto::Attr>),
) -> Reply {
    let (ids, attrs) = split;
    let mut errors: Vec<pbs_proto::IdError> = Vec::new();
    for job_id in ids {
        let one = Request::ModifyJob { ids: vec![job_id.clone()], attrs: attrs.clone() };
        let response = Box::pin(dispatch(server, who, id, one)).await;
        if let Response::Reply(reply) = response {
            match reply.body {
                ReplyBody::PerId(mut each) => errors.append(&mut each),
                _ if reply.code != 0 => {
                    errors.push(pbs_proto::IdError { id: job_id, code: reply.code, message: reply.message })
                }
                _ => {}
            }
        }
    }
    let code = errors.last().map(|e| e.code).unwrap_or(0);
    let message = errors.last().map(|e| e.message.clone()).unwrap_or_default();
    Reply { id, code, message, body: ReplyBody::PerId(errors), more: false }
}

/// How long a request waits for a mom's answer: one that has not answered by then fails
/// its own items (`Server could not connect to MOM`), never the whole request.
const MOM_ANSWER_DEADLINE: Duration = Duration::from_secs(10);

/// Waits for the moms' answers to a request (or the deadline), then applies them under
/// the lock like any handler's outcome and gives the reply once that is committed.
async fn answer_from_moms(
    server: &Arc<Server>,
    id: u64,
    ask: u64,
    answered: oneshot::Receiver<()>,
    asking: AskingMoms,
    sent: Applied,
) -> Reply {
    let _ = sent.done().await;
    let _ = tokio::time::timeout(MOM_ANSWER_DEADLINE, answered).await;
    let AskingMoms { ids, asks } = asking;
    let (errors, applied) = {
        let mut guard = server.lock();
        let shared = &mut *guard;
        let codes = crate::state::links::close_ask_codes(&mut shared.links, ask, asks.asks.len());
        let now = chrono::Utc::now().timestamp();
        let (mut errors, effects) = crate::job::signal::answered(&mut shared.state, now, &asks.asks, &codes);
        errors.extend(asks.errors);
        (errors, server.apply_effects(shared, effects))
    };
    // In the request's order, as every per-id answer.
    let order: std::collections::HashMap<&str, usize> =
        ids.iter().enumerate().rev().map(|(i, id)| (id.as_str(), i)).collect();
    let mut errors = errors;
    errors.sort_by_key(|e| order.get(e.id.as_str()).copied().unwrap_or(usize::MAX));
    match applied.done().await {
        Ok(()) => {
            let code = errors.last().map(|e| e.code).unwrap_or(0);
            let message = errors.last().map(|e| e.message.clone()).unwrap_or_default();
            Reply { id, code, message, body: ReplyBody::PerId(errors), more: false }
        }
        Err(e) => Reply::error(id, Pbse::SYSTEM.0, format!("{}{e}", Pbse::SYSTEM)),
    }
}

/// Where a request stands when the state lock is released.
enum Locked {
    /// Its reply, once its effects are carried out.
    Applied(Reply, Applied),
    /// Answered already.
    Respond(Response),
    /// A qrun waiting for the scheduler's answer (request number `ask`).
    AwaitScheduler { ask: u64, answered: oneshot::Receiver<()> },
    /// A PreemptJobs request, checked.
    Preempt(Vec<String>),
    /// A request waiting for moms' answers (request number `ask`), its frames handed on
    /// by `applied`.
    AwaitMoms { ask: u64, answered: oneshot::Receiver<()>, asking: AskingMoms, applied: Applied },
    /// Waiting for one mom's answer (qmsg), which is the reply.
    AwaitMom { ask: u64, answered: oneshot::Receiver<()>, applied: Applied },
    /// Waiting for a job to leave (`qsub -W block=true`).
    AwaitJob(oneshot::Receiver<crate::job::block::Done>),
}

/// The part of a request under the state lock: checks, the handler, and the start of its
/// effects.
fn handle_locked(
    server: &Arc<Server>,
    who: &Identity,
    groups: &[String],
    hook_attrs: &[pbs_proto::Attr],
    id: u64,
    request: Request,
) -> Locked {
    let mut guard = server.lock();
    #[cfg(debug_assertions)]
    crate::dispatch::test_panic(&request);
    let shared = &mut *guard;
    let ctx = Ctx { groups, hook_attrs, ..server.ctx(shared, who) };
    if let Err(e) = crate::acl::check_request(shared, who, ctx.privilege) {
        return Locked::Respond(Response::Reply(crate::acl::refusal(id, &request, e)));
    }
    match handle(&mut shared.state, &ctx, id, request) {
        Handled::Apply(reply, effects) => {
            let applied = server.apply_effects(shared, effects);
            if shared.state.stopping.is_some() {
                // `run` stops once the reply is out (it drains connections mid-request).
                server.stop.notify_one();
            }
            Locked::Applied(reply, applied)
        }
        Handled::Parts(parts) => Locked::Respond(Response::Parts(parts)),
        Handled::AskMoms(asking) => {
            let asked = asking
                .asks
                .asks
                .iter()
                .map(|a| Asked::Mom { node: a.node.clone(), job_id: a.job_id.clone() })
                .collect();
            let (ask, answered) = crate::state::links::open_ask(&mut shared.links, asked);
            let signals = asking.asks.asks.iter().map(|a| (a.node.as_str(), a.job_id.as_str(), a.signal.as_str()));
            let frames = crate::job::signal::frames(signals, ask);
            let applied = server.apply_effects(shared, Effects { to_moms: frames, ..Effects::default() });
            Locked::AwaitMoms { ask, answered, asking, applied }
        }
        Handled::AskMom(mut asking) => {
            let asked = Asked::Mom { node: asking.node.clone(), job_id: asking.job_id.clone() };
            let (ask, answered) = crate::state::links::open_ask(&mut shared.links, vec![asked]);
            if let ToMom::MessageJob { ask: number, .. } = &mut asking.frame {
                *number = ask;
            }
            let frames = vec![(asking.node, asking.frame)];
            let applied = server.apply_effects(shared, Effects { to_moms: frames, ..Effects::default() });
            Locked::AwaitMom { ask, answered, applied }
        }
        Handled::Preempt(ids) => Locked::Preempt(ids),
        Handled::AwaitJob(done) => Locked::AwaitJob(done),
        Handled::AskScheduler(full_id) => match crate::sched_view::ask_scheduler(&mut shared.links, full_id) {
            Ok((ask, answered)) => Locked::AwaitScheduler { ask, answered },
            Err(e) => Locked::Respond(Response::Reply(Reply::error(id, e.code.0, e.message))),
        },
    }
}

/// Handles a request under the state lock: the domain module's answer and its effects.
pub(crate) fn handle(state: &mut State, ctx: &Ctx<'_>, id: u64, request: Request) -> Handled {
    let fail = |e: ReqError| Handled::Apply(Reply::error(id, e.code.0, e.message), Effects::default());
    let per_id = |(errors, effects): (Vec<pbs_proto::IdError>, Effects)| {
        let code = errors.last().map(|e| e.code).unwrap_or(0);
        let message = errors.last().map(|e| e.message.clone()).unwrap_or_default();
        Handled::Apply(Reply { id, code, message, body: ReplyBody::PerId(errors), more: false }, effects)
    };
    let touched = touched_jobs(state, &request);
    let handled = match request {
        Request::QueueJob { attrs, script, destination } => {
            match crate::job::submit::queue_job(state, ctx, &attrs, script, destination.as_deref()) {
                Ok((job_id, effects)) => {
                    log_queued(state, ctx.who, &job_id);
                    Handled::Apply(Reply::ok(id, ReplyBody::JobId(job_id)), effects)
                }
                Err(e) => fail(e),
            }
        }
        Request::ModifyJob { ids, attrs } => per_id(crate::job::modify::modify_jobs(state, ctx, &ids, &attrs)),
        Request::DeleteJob { ids, force, purge_history } => {
            per_id(crate::job::delete::delete_jobs(state, ctx, &ids, force, purge_history))
        }
        Request::SignalJob { ids, signal } => {
            let asks = crate::job::signal::signal_jobs(state, ctx, &ids, &signal);
            if asks.asks.is_empty() {
                per_id((asks.errors, Effects::default()))
            } else {
                Handled::AskMoms(AskingMoms { ids, asks })
            }
        }
        Request::PreemptJobs { ids } => {
            // The scheduler's own requests come over its link; of the clients, managers
            // alone may take running jobs' resources away.
            if ctx.privilege < pbs_core::Privilege::Manager {
                return fail(ReqError::new(Pbse::PERM));
            }
            Handled::Preempt(ids)
        }
        Request::RerunJob { ids, force } => per_id(crate::job::signal::rerun_jobs(state, ctx, &ids, force)),
        Request::MoveJob { ids, destination } => per_id(crate::job::moving::move_jobs(state, ctx, &ids, &destination)),
        Request::Shutdown { manner, scheduler, moms } => {
            match crate::shutdown::request(state, ctx, &manner, scheduler, moms) {
                Ok(effects) => Handled::Apply(Reply::ok(id, ReplyBody::None), effects),
                Err(e) => fail(e),
            }
        }
        Request::WaitJob { id: job_id } => match crate::job::block::wait(state, ctx, &job_id) {
            Ok(crate::job::block::Wait::Now((exit_status, message))) => {
                Handled::Apply(Reply::ok(id, ReplyBody::JobDone { exit_status, message }), Effects::default())
            }
            Ok(crate::job::block::Wait::Later(done)) => Handled::AwaitJob(done),
            Err(e) => fail(e),
        },
        Request::MessageJob { id: job_id, text, stdout, stderr } => {
            match crate::job::message::message_job(state, ctx, &job_id, &text, stdout, stderr) {
                Ok(asking) => Handled::AskMom(asking),
                Err(e) => fail(e),
            }
        }
        Request::OrderJob { first, second } => match crate::job::order::order_jobs(state, ctx, &first, &second) {
            Ok(effects) => Handled::Apply(Reply::ok(id, ReplyBody::None), effects),
            Err(e) => fail(e),
        },
        Request::HoldJob { ids, hold_types } => {
            per_id(crate::job::modify::hold_jobs(state, ctx, &ids, &hold_types, true))
        }
        Request::ReleaseJob { ids, hold_types } => {
            per_id(crate::job::modify::hold_jobs(state, ctx, &ids, &hold_types, false))
        }
        Request::RunJob { id: job_id, exec_vnode } => {
            // A qrun -H's runjob hooks' changes, made just before the run as a scheduler's
            // run's are.
            let before_run = |state: &mut State, full_id: &str| {
                let mut effects = crate::effects::Effects::default();
                if !ctx.hook_attrs.is_empty() {
                    crate::hooks::event::apply_hook_changes(state, full_id, ctx.hook_attrs, ctx.now, &mut effects)?;
                }
                Ok(effects)
            };
            match crate::job::launch::qrun(state, ctx, &job_id, exec_vnode, before_run) {
                Ok(crate::job::launch::Qrun::Run(effects)) => Handled::Apply(Reply::ok(id, ReplyBody::None), effects),
                Ok(crate::job::launch::Qrun::Refused(effects, e)) => {
                    Handled::Apply(Reply::error(id, e.code.0, e.message), effects)
                }
                Ok(crate::job::launch::Qrun::AskScheduler(full_id)) => Handled::AskScheduler(full_id),
                Err(e) => fail(e),
            }
        }
        Request::SelectJobs { mut criteria, history, subjobs, arrays_only } => {
            if let Err(e) = crate::privilege::check_criteria(state, ctx.privilege, &criteria) {
                return fail(e);
            }
            if let Err(e) = crate::job::jobset::select_criteria(state, &mut criteria) {
                return fail(e);
            }
            let selection = crate::job::status::Selection::new(&criteria, history, subjobs, arrays_only);
            Handled::Parts(ReplyParts::Select(SelectParts { id, selection, who: ctx.who.clone(), last_given: false }))
        }
        Request::StatusJob { ids, queues, attrs, history, subjobs } => {
            let (plan, errors) = crate::job::status::status_plan(state, ctx, &ids, &queues, history, subjobs);
            let filter = StatusFilter::new(&attrs, ctx.privilege).with_eligible_time(state, ctx.now);
            Handled::Parts(ReplyParts::JobStatus(JobStatusParts::new(id, plan, errors, filter)))
        }
        Request::StatusServer { attrs } => {
            let object = crate::objects::server_status(state, ctx.privilege, &attrs);
            status(id, Ok(vec![object]))
        }
        Request::StatusQueue { names, attrs } => {
            status(id, crate::objects::named_status(state, ObjectKind::Queue, &names, ctx.privilege, &attrs))
        }
        Request::StatusNode { names } => status(id, crate::node::node_status(state, &names, ctx.privilege)),
        Request::StatusSched { names } => {
            status(id, crate::objects::named_status(state, ObjectKind::Sched, &names, ctx.privilege, &[]))
        }
        Request::StatusHook { names } => {
            if let Err(e) = crate::hooks::admin::check_admin(state, ctx) {
                return fail(e);
            }
            status(id, crate::objects::named_status(state, ObjectKind::Hook, &names, ctx.privilege, &[]))
        }
        Request::ImportHook { name, content_type, encoding, content } => {
            match crate::hooks::admin::import(state, ctx, &name, &content_type, &encoding, &content) {
                Ok(effects) => Handled::Apply(Reply::ok(id, ReplyBody::None), effects),
                Err(e) => fail(e),
            }
        }
        Request::ExportHook { name, content_type, encoding } => {
            match crate::hooks::admin::export(state, ctx, &name, &content_type, &encoding) {
                Ok(text) => Handled::Apply(Reply::ok(id, ReplyBody::Text(text)), Effects::default()),
                Err(e) => fail(e),
            }
        }
        Request::StatusResource { names } => status(id, crate::objects::resource_status(state, &names)),
        Request::Manager { command, object, names, attrs } => {
            match crate::objects::manager(state, ctx, command, object, &names, &attrs) {
                Ok(effects) => {
                    tracing::info!(
                        object_type = "Server",
                        "{:?} {:?} {} by {}",
                        command,
                        object,
                        names.join(","),
                        ctx.who.user_at_host()
                    );
                    Handled::Apply(Reply::ok(id, ReplyBody::None), effects)
                }
                Err(e) => fail(e),
            }
        }
    };
    for (key, job_id) in touched {
        state.changes.jobs.insert(key, job_id);
        state.changes.cycle = true;
    }
    handled
}

fn log_queued(state: &State, who: &Identity, job_id: &str) {
    let job = job_id.parse::<pbs_core::JobId>().ok().and_then(|parsed| state.jobs.get(&parsed.seq()));
    tracing::info!(
        object_type = "Job",
        object_name = job_id,
        "Job Queued at request of {}, owner = {}, job name = {}, queue = {}",
        who.user_at_host(),
        who.user_at_host(),
        job.and_then(|j| j.get("Job_Name", None)).unwrap_or(""),
        job.map(|j| j.queue.to_string()).unwrap_or_default()
    );
}

/// The jobs a request names, with their full ids, so the scheduler hears of their changes.
fn touched_jobs(state: &State, request: &Request) -> Vec<(JobKey, String)> {
    let Some(ids) = request.per_job_ids() else { return Vec::new() };
    ids.iter()
        .flat_map(|id| crate::request::ids::touched_by(state, id))
        .filter_map(|key| {
            let job = state.job(key).or_else(|| state.jobs.get(&key.seq))?;
            let id = match key.index {
                Some(index) => pbs_core::JobId::subjob(key.seq, index, &state.server_name).to_string(),
                None => job.id(&state.server_name),
            };
            Some((key, id))
        })
        .collect()
}

fn status(id: u64, result: Result<Vec<StatusObject>, ReqError>) -> Handled {
    let reply = match result {
        Ok(objects) => Reply::ok(id, ReplyBody::Status { objects, errors: Vec::new() }),
        Err(e) => Reply::error(id, e.code.0, e.message),
    };
    Handled::Apply(reply, Effects::default())
}

/// A job status being listed: the plan made under the request's lock, turned into reply
/// parts of [`STATUS_CHUNK`] jobs, each built under a lock of its own, so a big listing
/// never holds the state for long.
pub struct JobStatusParts {
    id: u64,
    keys: std::iter::Peekable<Box<dyn Iterator<Item = JobKey> + Send>>,
    errors: Option<Vec<pbs_proto::IdError>>,
    code: u32,
    message: String,
    filter: StatusFilter,
    arrays: Option<crate::job::array::SubjobTemplate>,
}

impl JobStatusParts {
    fn new(id: u64, plan: StatusPlan, errors: Vec<pbs_proto::IdError>, filter: StatusFilter) -> JobStatusParts {
        let code = errors.last().map(|e| e.code).unwrap_or(0);
        let message = errors.last().map(|e| e.message.clone()).unwrap_or_default();
        let keys: Box<dyn Iterator<Item = JobKey> + Send> = Box::new(plan.into_keys());
        JobStatusParts { id, keys: keys.peekable(), errors: Some(errors), code, message, filter, arrays: None }
    }

    /// The next part, `None` once the last has been given (the last part carries the
    /// per-id errors, so a listing of nothing is one part).
    pub fn next_part(&mut self, server: &Server) -> Option<Reply> {
        self.errors.as_ref()?;
        let mut objects: Vec<StatusObject> = Vec::new();
        let mut bytes = 0;
        {
            let state = server.lock();
            // A part ends at its count of jobs or its size, whichever comes first: 2000
            // jobs of several MiB each would make a frame no connection can carry.
            while objects.len() < STATUS_CHUNK && bytes < STATUS_PART_BYTES {
                let Some(key) = self.keys.next() else { break };
                if let Some(object) = crate::job::status::key_status(&state, key, &self.filter, &mut self.arrays) {
                    bytes += object.name.len() + object.attrs.iter().map(|a| a.0.len() + a.1.len() + 8).sum::<usize>();
                    objects.push(object);
                }
            }
        }
        let last = self.keys.peek().is_none();
        let errors = if last { self.errors.take().unwrap_or_default() } else { Vec::new() };
        let body = ReplyBody::Status { objects, errors };
        Some(Reply { id: self.id, code: self.code, message: self.message.clone(), body, more: !last })
    }
}

/// A qselect being answered: the jobs are walked a few at a time under short locks (see
/// [`crate::job::status::Selection`]) and the ids matched so far go out in a part once
/// there are enough of them.
pub struct SelectParts {
    id: u64,
    selection: crate::job::status::Selection,
    who: Identity,
    last_given: bool,
}

impl SelectParts {
    /// The next part, `None` once the last has been given (a selection of nothing is one
    /// part).
    pub async fn next_part(&mut self, server: &Server) -> Option<Reply> {
        if self.last_given {
            return None;
        }
        let mut ids = Vec::new();
        while !self.selection.done() && ids.len() < crate::job::status::SELECT_IDS_PER_PART {
            {
                let state = server.lock();
                let ctx = server.ctx(&state, &self.who);
                self.selection.step(&state, &ctx, &mut ids);
            }
            // Between two steps the lock goes to whoever waits for it, and this worker to
            // the other connections' tasks.
            server.give_way().await;
        }
        let last = self.selection.done();
        self.last_given = last;
        Some(Reply { id: self.id, code: 0, message: String::new(), body: ReplyBody::Ids(ids), more: !last })
    }
}

/// The job name that makes a debug build panic under the state lock (see [`test_panic`]).
#[cfg(debug_assertions)]
const TEST_PANIC_JOB_NAME: &str = "PBS_TEST_PANIC_UNDER_STATE_LOCK";

/// Debug builds started with `PBS_TEST_PANIC_TRIGGER` in their environment only (the
/// end-to-end harness sets it; release builds have no such request): a submission named
/// [`TEST_PANIC_JOB_NAME`] panics while the caller holds the state lock, as a bug in a
/// request handler would. No honest request can do that, and the test must see what a
/// panic there does to the server.
#[cfg(debug_assertions)]
pub(crate) fn test_panic(request: &Request) {
    static ARMED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*ARMED.get_or_init(|| std::env::var_os("PBS_TEST_PANIC_TRIGGER").is_some()) {
        return;
    }
    if let Request::QueueJob { attrs, .. } = request {
        if attrs.iter().any(|a| a.0 == "Job_Name" && a.1 == TEST_PANIC_JOB_NAME) {
            panic!("{TEST_PANIC_JOB_NAME}: a panic under the state lock, on request");
        }
    }
}
