//! Request plumbing every handler shares: who asks and with which privilege ([`Ctx`]), the
//! job an id names and whether the requester may see or act on it, and running an action
//! over each id of a request with OpenPBS's per-id errors.

pub mod attrs;
pub mod canonical;
pub mod filter;
pub mod ids;

use pbs_core::attr::Privilege;
use pbs_core::jobid::ArrayPart;
use pbs_core::{JobId, Pbse};
use pbs_proto::IdError;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::identity::Identity;
use crate::jobkey::JobKey;
use crate::state::{Job, State};

/// Who asks, with which privilege, and when.
#[derive(Clone)]
pub struct Ctx<'a> {
    /// The requester.
    pub who: &'a Identity,
    /// Their privilege now.
    pub privilege: Privilege,
    /// Seconds since the epoch.
    pub now: i64,
    /// Every group of the requester, looked up before the state lock for a submission
    /// (a queue's group ACL needs them); empty otherwise.
    pub groups: &'a [String],
    /// The job attributes (full wire names, canonical) a queuejob or modifyjob hook set on
    /// this request, with the values it set: those values are checked with manager
    /// privilege, as OpenPBS applies a hook's changes, and every other check still
    /// applies to them.
    pub hook_attrs: &'a [pbs_proto::Attr],
}

impl Ctx<'_> {
    /// The privilege attribute `name` of this request is checked with for `value`: a
    /// hook's only for the very value a hook set.
    pub fn privilege_for(&self, name: &str, value: &str) -> Privilege {
        let set_by_hook = self.hook_attrs.iter().any(|a| a.0.eq_ignore_ascii_case(name) && a.1 == value);
        if set_by_hook { self.privilege.max(Privilege::Manager) } else { self.privilege }
    }
}

/// Finds a job by a full or short id; errors as OpenPBS replies them.
pub fn find_job<'s>(state: &'s State, id: &str) -> Result<&'s Job, ReqError> {
    let seq = parse_seq(id)?;
    state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))
}

fn parse_seq(id: &str) -> Result<u64, ReqError> {
    let parsed: JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    match parsed.array() {
        ArrayPart::None | ArrayPart::Parent => Ok(parsed.seq()),
        _ => Err(ReqError::new(Pbse::UNKJOBID)),
    }
}

/// Whether the requester may act on (alter, hold, delete) this job.
pub(crate) fn may_act_on(ctx: &Ctx<'_>, job: &Job) -> bool {
    ctx.privilege >= Privilege::Operator || job.owner() == ctx.who.user
}

/// Whether the requester may see this job at all.
pub fn may_see(state: &State, ctx: &Ctx<'_>, job: &Job) -> bool {
    may_act_on(ctx, job) || state.server_flag("query_other_jobs", true)
}

pub(crate) fn per_id<F, E>(state: &mut State, ctx: &Ctx<'_>, ids: &[String], mut action: F) -> (Vec<IdError>, Effects)
where
    F: FnMut(&mut State, &Ctx<'_>, u64) -> Result<E, ReqError>,
    E: Into<Effects>,
{
    let mut errors = Vec::new();
    let mut effects = Effects::default();
    for id in ids {
        let result = find_job(state, id).and_then(|job| {
            if !may_act_on(ctx, job) {
                return Err(ReqError::new(Pbse::PERM));
            }
            Ok(job.seq)
        });
        match result.and_then(|seq| action(state, ctx, seq)) {
            Ok(more) => effects.merge(more.into()),
            Err(e) => errors.push(IdError { id: id.clone(), code: e.code.0, message: e.message }),
        }
    }
    (errors, effects)
}

/// Like [`per_id`], for requests that also take subjobs (`12[3]`) and ranges
/// (`12[1-5]`, read by `rule`): the action runs once per job or subjob; permissions are
/// the array's.
pub(crate) fn per_key<F, E>(
    state: &mut State,
    ctx: &Ctx<'_>,
    ids: &[String],
    rule: crate::request::ids::RangeRule,
    mut action: F,
) -> (Vec<IdError>, Effects)
where
    F: FnMut(&mut State, &Ctx<'_>, JobKey) -> Result<E, ReqError>,
    E: Into<Effects>,
{
    let mut errors = Vec::new();
    let mut effects = Effects::default();
    for id in ids {
        // The array's owner decides, before its indices are read: a range that names no
        // subjob left to act on is still theirs, and a stranger's range costs nothing.
        let seq = id.parse::<JobId>().map(|parsed| parsed.seq()).ok();
        let keys = match seq.and_then(|seq| state.jobs.get(&seq)) {
            None => Err(ReqError::new(Pbse::UNKJOBID)),
            Some(job) if !may_act_on(ctx, job) => Err(ReqError::new(Pbse::PERM)),
            Some(_) => crate::request::ids::keys_by(state, id, rule),
        };
        let failed = match keys {
            Err(e) => Some(e),
            // What earlier keys of a range changed stays changed, so its writes are kept.
            Ok(keys) => keys.into_iter().find_map(|key| match action(state, ctx, key) {
                Ok(more) => {
                    effects.merge(more.into());
                    None
                }
                Err(e) => Some(e),
            }),
        };
        if let Some(e) = failed {
            errors.push(IdError { id: id.clone(), code: e.code.0, message: e.message });
        }
    }
    (errors, effects)
}
