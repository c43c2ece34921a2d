//! What a job id names: a job, an array, one subjob or a subjob range (`12[1-5]`), resolved
//! against the array's index runs, never index by index.

pub use pbs_core::range::IndexSet;
use pbs_core::{ArrayRange, JobState, Pbse};

use crate::error::ReqError;
use crate::jobkey::JobKey;
use crate::state::{Job, State};

/// An array attribute holding indices (`array_indices_submitted`/`_remaining`), read as
/// runs as they stand, never one index at a time: reading a record costs its length,
/// whatever the indices it names.
pub fn indices(job: &Job, attr: &str) -> IndexSet {
    match job.get(attr, None) {
        Some("-") | None => IndexSet::default(),
        Some(text) => IndexSet::parse_lenient(text),
    }
}

/// Whether `index` is one of the array's subjobs.
pub fn submitted(job: &Job, index: u64) -> bool {
    job.array && indices(job, "array_indices_submitted").contains(index)
}

/// How a request reads a subjob range (`12[1-5]`), as OpenPBS's request handlers do
/// (qstat's rule, every index of the range the array's, is [`status_items`]; qrun's,
/// exactly one, is [`run_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeRule {
    /// qdel: the range must start between the array's first and last index; its queued
    /// and running subjobs are deleted, finished ones left alone.
    StartInside,
    /// qsig, qrerun: the subjobs of the range that are running; none is a state error.
    Running,
}

/// The one job or subjob qrun names: a range must meet the array in exactly one index.
pub fn run_key(state: &State, id: &str) -> Result<JobKey, ReqError> {
    let parsed: pbs_core::JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    let seq = parsed.seq();
    let job = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    match parsed.array() {
        pbs_core::ArrayPart::None | pbs_core::ArrayPart::Parent => Ok(JobKey::job(seq)),
        pbs_core::ArrayPart::Index(i) if submitted(job, *i) => Ok(JobKey::subjob(seq, *i)),
        pbs_core::ArrayPart::Range(range) if job.array => {
            let set = indices(job, "array_indices_submitted").intersect(range);
            match (set.first(), set.len()) {
                (Some(index), 1) => Ok(JobKey::subjob(seq, index)),
                (None, _) => Err(ReqError::new(Pbse::UNKJOBID)),
                _ => Err(ReqError::new(Pbse::IVALREQ)),
            }
        }
        _ => Err(ReqError::new(Pbse::UNKJOBID)),
    }
}

/// The keys an id names, a range read by `rule`. A range is met with the array's index
/// runs, never walked: `12[0-9999999999]` costs what the array holds, and the state lock is
/// held for the length of the answer.
pub fn keys_by(state: &State, id: &str, rule: RangeRule) -> Result<Vec<JobKey>, ReqError> {
    let parsed: pbs_core::JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    let seq = parsed.seq();
    let job = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    match parsed.array() {
        pbs_core::ArrayPart::None | pbs_core::ArrayPart::Parent => Ok(vec![JobKey::job(seq)]),
        pbs_core::ArrayPart::Index(i) if submitted(job, *i) => Ok(vec![JobKey::subjob(seq, *i)]),
        pbs_core::ArrayPart::Range(range) if job.array => range_keys(state, job, range, rule),
        _ => Err(ReqError::new(Pbse::UNKJOBID)),
    }
}

/// The jobs a request naming `id` may change, for the scheduler's change stream: the job,
/// a subjob and its array, or for a range the array and those of its subjobs that have
/// records (running or ending). A queued subjob is only an index of its array, whose own
/// change covers it: a range costs the subjobs that run in its span, never its indices.
pub fn touched_by(state: &State, id: &str) -> Vec<JobKey> {
    let Ok(parsed) = id.parse::<pbs_core::JobId>() else { return Vec::new() };
    let seq = parsed.seq();
    if !state.jobs.contains_key(&seq) {
        return Vec::new();
    }
    let range = match parsed.array() {
        pbs_core::ArrayPart::None | pbs_core::ArrayPart::Parent => return vec![JobKey::job(seq)],
        pbs_core::ArrayPart::Index(index) => return vec![JobKey::subjob(seq, *index), JobKey::job(seq)],
        pbs_core::ArrayPart::Range(range) => range,
    };
    let (start, end) = (range.start, range.end);
    let wanted = |index: u64| range.contains(index);
    let mut keys = vec![JobKey::job(seq)];
    keys.extend(
        state
            .subjobs
            .range((seq, start)..=(seq, end))
            .filter(|((_, index), _)| wanted(*index))
            .map(|((_, index), _)| JobKey::subjob(seq, *index)),
    );
    keys
}

/// What a status id names: a job or array, one subjob, or the subjobs of a range.
pub enum StatusItems {
    /// A job or an array (with its subjobs under qstat -t).
    Job,
    /// One subjob.
    Subjob(u64),
    /// The subjobs of a range, every one of them the array's.
    Subjobs(IndexSet),
}

/// Resolves a status id to its job's sequence number and what it names, a range as an
/// index set (met with the array's runs, never walked nor expanded).
pub fn status_items(state: &State, id: &str) -> Result<(u64, StatusItems), ReqError> {
    let parsed: pbs_core::JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    let seq = parsed.seq();
    let job = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    match parsed.array() {
        pbs_core::ArrayPart::None | pbs_core::ArrayPart::Parent => Ok((seq, StatusItems::Job)),
        pbs_core::ArrayPart::Index(i) if submitted(job, *i) => Ok((seq, StatusItems::Subjob(*i))),
        pbs_core::ArrayPart::Range(range) if job.array => {
            let set = indices(job, "array_indices_submitted").intersect(range);
            if set.len() as u64 == range.count() {
                Ok((seq, StatusItems::Subjobs(set)))
            } else {
                Err(ReqError::new(Pbse::UNKJOBID))
            }
        }
        _ => Err(ReqError::new(Pbse::UNKJOBID)),
    }
}

/// The ids a per-id request repeats, dropped before the request is handled so that
/// naming one job a thousand times costs what naming it once does; each repeat gets its
/// first naming's answer back in [`Repeats::restore`].
///
/// Two ids are the same when they name the same thing (`12`, `12.srv` and `12[]` name
/// job 12; `12[1-5]` and `12[1-5].srv` one range), whatever server suffix they carry.
#[derive(Default)]
pub struct Repeats {
    /// Every id as the request gave it, with the position of its first naming among the
    /// ids kept; empty when nothing was repeated.
    original: Vec<(String, usize)>,
}

/// What an id names, for telling repeats apart: unreadable ids by their text.
#[derive(PartialEq, Eq, Hash)]
enum Named {
    Id(u64, Option<pbs_core::ArrayPart>),
    Text(String),
}

fn named(id: &str) -> Named {
    match id.parse::<pbs_core::JobId>() {
        Ok(parsed) => match parsed.array() {
            pbs_core::ArrayPart::None | pbs_core::ArrayPart::Parent => Named::Id(parsed.seq(), None),
            part => Named::Id(parsed.seq(), Some(part.clone())),
        },
        Err(_) => Named::Text(id.to_string()),
    }
}

impl Repeats {
    /// Drops the repeated ids of a per-id request, keeping each first naming in order.
    pub fn drop_from(request: &mut pbs_proto::Request) -> Repeats {
        let Some(ids) = request.per_job_ids_mut() else { return Repeats::default() };
        let mut first_of: std::collections::HashMap<Named, usize> = std::collections::HashMap::with_capacity(ids.len());
        let positions: Vec<usize> = ids
            .iter()
            .map(|id| {
                let next = first_of.len();
                *first_of.entry(named(id)).or_insert(next)
            })
            .collect();
        if first_of.len() == ids.len() {
            return Repeats::default();
        }
        let all = std::mem::take(ids);
        let mut original = Vec::with_capacity(all.len());
        for (id, position) in all.into_iter().zip(positions) {
            if position == ids.len() {
                ids.push(id.clone());
            }
            original.push((id, position));
        }
        Repeats { original }
    }

    /// Gives each repeated id the answer of its first naming, in the request's order.
    pub fn restore(self, reply: &mut pbs_proto::Reply) {
        if self.original.is_empty() {
            return;
        }
        let pbs_proto::ReplyBody::PerId(errors) = &mut reply.body else { return };
        let mut by_kept: std::collections::HashMap<usize, pbs_proto::IdError> = std::collections::HashMap::new();
        let kept: std::collections::HashMap<&str, usize> =
            self.original.iter().map(|(id, position)| (id.as_str(), *position)).collect();
        for error in errors.drain(..) {
            if let Some(position) = kept.get(error.id.as_str()) {
                by_kept.entry(*position).or_insert(error);
            }
        }
        for (id, position) in &self.original {
            if let Some(error) = by_kept.get(position) {
                errors.push(pbs_proto::IdError { id: id.clone(), ..error.clone() });
            }
        }
        if let Some(last) = errors.last() {
            reply.code = last.code;
            reply.message = last.message.clone();
        }
    }
}

fn range_keys(state: &State, job: &Job, range: &ArrayRange, rule: RangeRule) -> Result<Vec<JobKey>, ReqError> {
    let seq = job.seq;
    let in_span = state.subjobs.range((seq, range.start)..=(seq, range.end)).filter(|((_, i), _)| range.contains(*i));
    if rule == RangeRule::Running {
        // The array's running subjobs are few next to its indices: look at each of them.
        let keys: Vec<JobKey> = in_span
            .filter(|(_, sub)| matches!(sub.state, JobState::Running | JobState::Suspended))
            .map(|((_, index), _)| JobKey::subjob(seq, *index))
            .collect();
        return if keys.is_empty() { Err(ReqError::new(Pbse::BADSTATE)) } else { Ok(keys) };
    }
    let all = indices(job, "array_indices_submitted");
    let inside =
        all.first().is_some_and(|first| range.start >= first) && all.last().is_some_and(|last| range.start <= last);
    if !inside {
        return Err(ReqError::new(Pbse::UNKJOBID));
    }
    let queued = job.remaining().intersect(range);
    let mut keys: Vec<JobKey> = queued.iter().map(|i| JobKey::subjob(seq, i)).collect();
    // Subjobs with records have left the remaining indices.
    keys.extend(in_span.map(|((_, index), _)| JobKey::subjob(seq, *index)));
    keys.sort_unstable();
    Ok(keys)
}
