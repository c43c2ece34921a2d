//! Reading jobs: qstat (StatusJob) planned and listed part by part, qselect (SelectJobs), and
//! the purge of expired history.

use pbs_core::{Duration, JobState, Pbse};
use pbs_proto::{Criterion, IdError, StatusObject};

use crate::criteria::Prepared;
use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::request::filter::StatusFilter;
use crate::request::{Ctx, may_see};
use crate::state::{Job, State};
use crate::store::StoreOp;

/// A qselect being answered: its criteria read once, then the jobs walked in id order a
/// few at a time, each few under a lock of its own, so neither many criteria nor many jobs
/// hold the state for long, and the ids go out in parts of at most [`SELECT_IDS_PER_PART`].
pub struct Selection {
    criteria: Vec<Prepared>,
    history: bool,
    subjobs: bool,
    arrays_only: bool,
    /// The first sequence number not yet looked at; `None` once every job was.
    next_seq: Option<u64>,
}

/// Criterion tests made under one lock: 2000 jobs against a few criteria, a handful
/// against the most a request may send.
pub const SELECT_TESTS_PER_LOCK: usize = 32_000;

/// Job ids in one part of a qselect answer (a few hundred KiB).
pub const SELECT_IDS_PER_PART: usize = 20_000;

impl Selection {
    /// Reads the criteria of a SelectJobs (qselect) request.
    pub fn new(criteria: &[Criterion], history: bool, subjobs: bool, arrays_only: bool) -> Selection {
        let mut prepared: Vec<Prepared> = Vec::with_capacity(criteria.len());
        let mut seen = std::collections::HashSet::new();
        for criterion in criteria {
            // A criterion given twice tests nothing more the second time.
            if seen.insert((&criterion.attr, criterion.op, &criterion.value)) {
                prepared.push(Prepared::new(criterion));
            }
        }
        Selection { criteria: prepared, history, subjobs, arrays_only, next_seq: Some(0) }
    }

    /// Whether every job was looked at.
    pub fn done(&self) -> bool {
        self.next_seq.is_none()
    }

    /// Jobs looked at under one lock.
    fn jobs_per_lock(&self) -> usize {
        (SELECT_TESTS_PER_LOCK / self.criteria.len().max(1)).clamp(1, 2000)
    }

    /// Looks at the next few visible jobs, adding the ids of those matching every
    /// criterion to `ids`.
    pub fn step(&mut self, state: &State, ctx: &Ctx<'_>, ids: &mut Vec<String>) {
        let Some(from) = self.next_seq else { return };
        let budget = self.jobs_per_lock();
        self.next_seq = None;
        for (looked, job) in state.jobs.range(from..).map(|(_, job)| job).enumerate() {
            if looked == budget {
                self.next_seq = Some(job.seq);
                break;
            }
            if (!self.history && job.state.is_history())
                || (self.arrays_only && !job.array)
                || !may_see(state, ctx, job)
            {
                continue;
            }
            if self.subjobs && job.array && !self.arrays_only {
                // qselect -T: the subjobs stand for their array.
                let history = self.history;
                let criteria = &self.criteria;
                let holds = |subjob: &Job, letter: JobState| {
                    (history || !letter.is_history()) && criteria.iter().all(|c| c.holds(subjob, letter))
                };
                for index in crate::job::array::selected_subjobs(state, job, holds) {
                    ids.push(pbs_core::JobId::subjob(job.seq, index, &state.server_name).to_string());
                }
                continue;
            }
            if self.criteria.iter().all(|c| c.holds(job, job.state)) {
                ids.push(job.id(&state.server_name));
            }
        }
    }
}

/// What a StatusJob covers, in reply order: jobs, and subjobs kept as index runs until
/// they are listed, so planning costs the ids and arrays named, never their subjobs
/// (`qstat -t` of a 100,000-subjob array, or a range id given many times over).
#[derive(Default)]
pub struct StatusPlan(Vec<Planned>);

enum Planned {
    Key(JobKey),
    Subjobs(u64, crate::request::ids::IndexSet),
}

impl StatusPlan {
    fn push(&mut self, key: JobKey) {
        self.0.push(Planned::Key(key));
    }

    /// The keys in reply order, made as they are taken.
    pub fn into_keys(self) -> impl Iterator<Item = JobKey> + Send + use<> {
        self.0.into_iter().flat_map(|item| {
            let (key, seq, runs) = match item {
                Planned::Key(key) => (Some(key), 0, Vec::new()),
                Planned::Subjobs(seq, set) => (None, seq, set.runs().collect::<Vec<_>>()),
            };
            let subjobs = runs.into_iter().flat_map(move |(first, last, step)| {
                (first..=last)
                    .step_by(usize::try_from(step).unwrap_or(usize::MAX).max(1))
                    .map(move |index| JobKey::subjob(seq, index))
            });
            key.into_iter().chain(subjobs)
        })
    }
}

/// Decides which jobs a StatusJob covers: (the plan, per-id errors). With `subjobs`
/// (qstat -t) each array is followed by all its subjobs; a subjob or range id names
/// those subjobs (a range must lie wholly in the array, as OpenPBS's qstat requires).
pub fn status_plan(
    state: &State,
    ctx: &Ctx<'_>,
    ids: &[String],
    queues: &[String],
    history: bool,
    subjobs: bool,
) -> (StatusPlan, Vec<IdError>) {
    let mut plan = StatusPlan::default();
    let mut errors = Vec::new();
    let push_job = |plan: &mut StatusPlan, job: &Job| {
        plan.push(JobKey::job(job.seq));
        if subjobs && job.array {
            plan.0.push(Planned::Subjobs(job.seq, crate::request::ids::indices(job, "array_indices_submitted")));
        }
    };
    let listed = |job: &&Job| (history || !job.state.is_history()) && may_see(state, ctx, job);
    if ids.is_empty() && queues.is_empty() {
        for job in state.jobs.values().filter(listed) {
            push_job(&mut plan, job);
        }
        return (plan, errors);
    }
    for id in ids {
        let result = crate::request::ids::status_items(state, id).and_then(|(seq, range)| {
            let job = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
            if !may_see(state, ctx, job) {
                return Err(ReqError::new(Pbse::PERM));
            }
            if job.state.is_history() && !history {
                return Err(ReqError::new(Pbse::HISTJOBID));
            }
            Ok((job, range))
        });
        match result {
            Ok((job, crate::request::ids::StatusItems::Job)) => push_job(&mut plan, job),
            Ok((job, crate::request::ids::StatusItems::Subjob(index))) => plan.push(JobKey::subjob(job.seq, index)),
            Ok((job, crate::request::ids::StatusItems::Subjobs(set))) => plan.0.push(Planned::Subjobs(job.seq, set)),
            Err(e) => errors.push(IdError { id: id.clone(), code: e.code.0, message: e.message }),
        }
    }
    for queue in queues {
        let name = queue.split('@').next().unwrap_or("");
        if !name.is_empty() && state.queue_index(name).is_none() {
            errors.push(IdError { id: queue.clone(), code: Pbse::UNKQUE.0, message: "Unknown queue".into() });
            continue;
        }
        for job in state.jobs.values().filter(|j| name.is_empty() || *j.queue == *name).filter(listed) {
            push_job(&mut plan, job);
        }
    }
    (plan, errors)
}

/// The status of one planned key: a job, a subjob with a record, or a queued subjob.
/// `arrays` keeps the last array's parsed remaining indices and its subjob view, so
/// listing an array's subjobs builds them once, not once per subjob.
pub fn key_status(
    state: &State,
    key: JobKey,
    filter: &StatusFilter,
    arrays: &mut Option<crate::job::array::SubjobTemplate>,
) -> Option<StatusObject> {
    match (key.index, state.job(key)) {
        (_, Some(job)) => Some(filter.job_status(state, job)),
        (Some(index), None) => {
            if arrays.as_ref().is_none_or(|t| t.seq != key.seq) {
                let parent = state.jobs.get(&key.seq)?;
                *arrays = Some(crate::job::array::SubjobTemplate::new(state, parent, filter));
            }
            arrays.as_ref().map(|t| t.status(state, index))
        }
        (None, None) => None,
    }
}

/// Removes history jobs older than `job_history_duration` (default two weeks).
pub fn purge_history(state: &mut State, now: i64) -> Vec<StoreOp> {
    let duration = state
        .server_attr("job_history_duration", None)
        .and_then(|v| v.parse::<Duration>().ok())
        .map(|d| d.as_secs() as i64)
        .unwrap_or(14 * 24 * 3600);
    let expired: Vec<u64> = state
        .jobs
        .values()
        .filter(|j| j.state.is_history())
        .filter(|j| {
            j.get("history_timestamp", None).and_then(|t| t.parse::<i64>().ok()).is_some_and(|t| now - t >= duration)
        })
        .map(|j| j.seq)
        .collect();
    expired
        .into_iter()
        .map(|seq| {
            state.remove_job(seq);
            state.remove_subjobs_of(seq);
            StoreOp::DeleteJob { seq }
        })
        .collect()
}
