//! Job arrays: an array is one record (`12[]`) whose queued subjobs are only the indices in
//! its `array_indices_remaining`; a subjob gets a record of its own (`12[3]`) when it starts,
//! so a 100,000-subjob array costs about as much as one job to submit and to list.
//!
//! Here: creating a subjob's record from its parent, putting it back, and keeping the
//! parent's `array_state_count`, `array_indices_remaining` and state in step.

use pbs_core::attr::ObjectKind;
use pbs_core::{JobState, Pbse, Substate};
use pbs_proto::StatusObject;

use crate::effects::Effects;
use crate::error::ReqError;
use crate::job::life::Life;
use crate::jobkey::JobKey;
use crate::request::filter::StatusFilter;
use crate::request::ids::{IndexSet, indices};
use crate::state::{Job, JobParts, State, idx};

/// Attributes only the array itself has; a subjob's view leaves them out.
const ARRAY_ONLY: [&str; 5] =
    ["array", "array_state_count", "array_indices_submitted", "array_indices_remaining", "max_run_subjobs"];

/// Where a subjob's output and error paths carry its index.
pub const INDEX_MARK: &str = "^array_index^";

/// Creates the record of subjob `index` from its parent as it starts: the parent's
/// attributes without the array's own, `array_id`, `array_index`, and paths with the
/// index filled in. The index leaves `array_indices_remaining`; the caller runs
/// [`refresh`] once the subjob has started.
pub fn materialize(state: &mut State, seq: u64, index: u64, now: i64) -> Result<(), ReqError> {
    if state.subjobs.contains_key(&(seq, index)) {
        return Ok(());
    }
    let parent = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if !parent.array || !matches!(parent.state, JobState::Queued | JobState::Begun) {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    if !parent.remaining().contains(index) {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let parent_id = parent.id(&state.server_name);
    let mut attrs = parent.attrs.clone();
    for name in ARRAY_ONLY {
        attrs.unset(idx(ObjectKind::Job, name), None);
    }
    for def in [job_idx!("Output_Path"), job_idx!("Error_Path")] {
        if let Some(path) = attrs.get(def, None).map(|p| p.replace(INDEX_MARK, &index.to_string())) {
            attrs.set(def, None, path);
        }
    }
    attrs.set(job_idx!("array_id"), None, parent_id);
    attrs.set(job_idx!("array_index"), None, index.to_string());
    let parts = JobParts {
        seq,
        array: false,
        index: Some(index),
        state: JobState::Queued,
        substate: Substate::QUEUED,
        queue: parent.queue.clone(),
        attrs,
        // With the array's accrue type and eligible time: it goes on from the array's.
        accrue_since: parent.accrue_since,
    };
    // The array's request: read once for all its subjobs.
    let subjob = Job::new(parts, &mut state.requests);
    let began = parent.state == JobState::Queued;
    let Some(parent) = state.jobs.get_mut(&seq) else { return Err(ReqError::new(Pbse::UNKJOBID)) };
    let mut remaining = parent.remaining().clone();
    remaining.remove(index);
    parent.set_remaining(remaining);
    if began {
        parent.attrs.set(job_idx!("stime"), None, now.to_string());
        let when = crate::job::running::comment_time(now);
        parent.attrs.set(job_idx!("comment"), None, format!("Job Array Began at {when}"));
    }
    state.subjobs.insert((seq, index), subjob);
    // The caller starts the subjob and then brings the parent up to date (and writes it)
    // once per batch of starts.
    Ok(())
}

/// Whether the start of one of array `seq`'s subjobs, taken now, is the array's begin (its
/// first subjob's start since it was queued): asked by a part ahead of this one in the
/// table, before the start marks the array for [`settle`], which makes it begun.
pub fn begins_with(state: &State, seq: u64) -> bool {
    state.jobs.get(&seq).is_some_and(|parent| parent.state == JobState::Queued)
        && !state.arrays_to_refresh.contains(&seq)
}

/// Refreshes each array whose subjobs started since the last call, once however many
/// started: a cycle that starts a thousand subjobs writes their array once.
pub fn settle(state: &mut State, now: i64, life: Life<'_>) -> Effects {
    let arrays = std::mem::take(&mut state.arrays_to_refresh);
    let mut out = Effects::default();
    for seq in arrays {
        out.merge(refresh(state, seq, now, life));
    }
    out
}

/// The arrays' part of a job's life (`job::life`): a subjob's start brings its array up
/// to date once per batch ([`settle`]); its requeue puts its index back in
/// `array_indices_remaining`; its end gives the array its `Exit_status` and counts.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "arrays"
    }

    fn after(&self, state: &mut State, at: &crate::job::life::At<'_>, out: &mut crate::effects::Effects) {
        use crate::job::life::Step;
        let Some(index) = at.key.index else {
            // A held array's queued subjobs wait, its running ones go on; released, it is
            // begun (or queued) again.
            if matches!(at.step, Step::Held | Step::Released) && state.jobs.get(&at.key.seq).is_some_and(|j| j.array) {
                out.merge(refresh_with(state, at.key.seq, at.now, true, at.life));
            }
            return;
        };
        let seq = at.key.seq;
        match at.step {
            Step::Started { .. } => {
                state.arrays_to_refresh.insert(seq);
            }
            Step::Requeued { .. } => {
                if let Some(parent) = state.jobs.get_mut(&seq) {
                    let mut remaining = parent.remaining().clone();
                    remaining.insert(index);
                    parent.set_remaining(remaining);
                }
                out.merge(refresh(state, seq, at.now, at.life));
            }
            Step::Ended { exit, .. } => {
                if let (Some(status), Some(array)) = (exit, state.jobs.get_mut(&seq)) {
                    let status = crate::job::depend::array_exit_status(*status);
                    array.attrs.set(job_idx!("Exit_status"), None, status.to_string());
                }
                out.merge(refresh_after_end(state, seq, at.now, at.life));
            }
            _ => {}
        }
    }
}

/// Queued subjobs deleted one after another (qdel of subjobs or of a range): each counts
/// as expired. Their array's remaining indices are read once and written and recounted
/// once, however many go, so deleting a range costs the number of subjobs it names.
#[derive(Default)]
pub struct QueuedDeletes {
    /// The array being worked on and its remaining indices as they now stand.
    pending: Option<(u64, IndexSet)>,
}

impl QueuedDeletes {
    /// Whether deletions of array `seq` are waiting to be written.
    pub fn holds(&self, seq: u64) -> bool {
        self.pending.as_ref().is_some_and(|(pending, _)| *pending == seq)
    }

    /// Drops queued subjob `index` of array `seq`; the caller has flushed any other array.
    pub fn delete(&mut self, state: &State, seq: u64, index: u64) -> Result<(), ReqError> {
        if !self.holds(seq) {
            let parent = state.jobs.get(&seq).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
            self.pending = Some((seq, parent.remaining().clone()));
        }
        let removed = self.pending.as_mut().is_some_and(|(_, remaining)| remaining.remove(index));
        if removed { Ok(()) } else { Err(ReqError::new(Pbse::BADSTATE)) }
    }

    /// Writes the array's remaining indices and recounts it; nothing if none waits.
    pub fn flush(&mut self, state: &mut State, now: i64, life: Life<'_>) -> Effects {
        let Some((seq, remaining)) = self.pending.take() else { return Effects::default() };
        let Some(parent) = state.jobs.get_mut(&seq) else { return Effects::default() };
        parent.set_remaining(remaining);
        refresh(state, seq, now, life)
    }
}

/// Brings the parent up to date with its subjobs: `array_state_count`, its state (`Q`
/// before any subjob started, `B` after), and its end once every subjob is done.
pub fn refresh(state: &mut State, seq: u64, now: i64, life: Life<'_>) -> Effects {
    refresh_with(state, seq, now, true, life)
}

/// [`refresh`] after a subjob ended: only the counts changed, which are derived (and
/// rebuilt at start), so the parent is written only if its state changed.
pub fn refresh_after_end(state: &mut State, seq: u64, now: i64, life: Life<'_>) -> Effects {
    refresh_with(state, seq, now, false, life)
}

fn refresh_with(state: &mut State, seq: u64, now: i64, write: bool, life: Life<'_>) -> Effects {
    let mut out = Effects::default();
    let Some(parent) = state.jobs.get(&seq) else { return out };
    let before = (parent.state, parent.substate);
    if !parent.array || parent.state.is_history() {
        return out;
    }
    let submitted = indices(parent, "array_indices_submitted").len();
    let queued = parent.remaining().len();
    let (mut running, mut exiting) = (0usize, 0usize);
    for subjob in state.subjobs_of(seq) {
        match subjob.state {
            JobState::Running | JobState::Suspended => running += 1,
            JobState::Exiting => exiting += 1,
            _ => {}
        }
    }
    let expired = submitted.saturating_sub(queued + running + exiting);
    let done = queued == 0 && running == 0 && exiting == 0;
    // The jobs that wait on the array hear of its end once, from its last subjob.
    let exit = parent.get("Exit_status", None).and_then(|s| s.parse::<i32>().ok());
    let began = parent.get("stime", None).is_some();
    // Its counts are in its view even when its record is not written.
    let id = parent.id(&state.server_name);
    state.changes.jobs.insert(JobKey::job(seq), id);
    let Some(parent) = state.jobs.get_mut(&seq) else { return out };
    parent.attrs.set(
        job_idx!("array_state_count"),
        None,
        format!("Queued:{queued} Running:{running} Exiting:{exiting} Expired:{expired}"),
    );
    if done {
        // Its end is its last subjob's: a record of its own once it began, after the
        // subjob's, then what it means for the jobs that wait on it.
        let step = crate::job::life::Step::Ended { exit, ran: began, deleted: false };
        life.step(state, JobKey::job(seq), step, now, &mut out);
        return out;
    }
    if matches!(parent.state, JobState::Queued | JobState::Begun) {
        let began = queued < submitted;
        parent.state = if began { JobState::Begun } else { JobState::Queued };
        parent.substate = parent.state.default_substate();
    }
    if write || before != (parent.state, parent.substate) {
        out.ops.push(parent.put_op(None));
    }
    out
}

/// How the subjobs of one array that have no record look in a status listing: the
/// parent's attributes without the array's own, as OpenPBS shows a queued subjob, `Q`
/// while queued and `X` (expired) once done. Built once per array per listing.
pub struct SubjobTemplate {
    /// The array's sequence number.
    pub seq: u64,
    remaining: IndexSet,
    view: StatusObject,
}

impl SubjobTemplate {
    /// The template of `parent`'s subjobs for this filter.
    pub fn new(state: &State, parent: &Job, filter: &StatusFilter) -> SubjobTemplate {
        let mut view = filter.job_status(state, parent);
        view.attrs.retain(|a| !ARRAY_ONLY.contains(&a.0.as_str()));
        SubjobTemplate { seq: parent.seq, remaining: parent.remaining().clone(), view }
    }

    /// The status of subjob `index`.
    pub fn status(&self, state: &State, index: u64) -> StatusObject {
        let mut object = self.view.clone();
        object.name = pbs_core::JobId::subjob(self.seq, index, &state.server_name).to_string();
        if let Some(attr) = object.attrs.iter_mut().find(|a| a.0 == "job_state") {
            attr.1 = if self.remaining.contains(index) { "Q" } else { "X" }.to_string();
        }
        object
    }
}

/// The indices of `parent`'s subjobs that qselect -T lists, in order: `holds(job, state)`
/// says whether a subjob seen as `job` in `state` matches. Subjobs without a record are
/// their array's attributes in state `Q` or `X`, so each of those two is tested once:
/// when neither matches only the subjobs with records are looked at, and when only `Q`
/// does, only the remaining indices, so the work follows the answer, not the array.
pub fn selected_subjobs(state: &State, parent: &Job, mut holds: impl FnMut(&Job, JobState) -> bool) -> Vec<u64> {
    let seq = parent.seq;
    let queued = holds(parent, JobState::Queued);
    let expired = holds(parent, JobState::Expired);
    let remaining = parent.remaining();
    if expired {
        return indices(parent, "array_indices_submitted")
            .iter()
            .filter(|&index| match state.job(JobKey::subjob(seq, index)) {
                Some(record) => holds(record, record.state),
                None => !remaining.contains(index) || queued,
            })
            .collect();
    }
    let span = (seq, 0)..=(seq, u64::MAX);
    let records = state.subjobs.range(span.clone()).chain(state.finished_subjobs.range(span));
    // A subjob with a record has left the remaining indices: the two never meet.
    let mut out: Vec<u64> = records.filter(|(_, record)| holds(record, record.state)).map(|((_, i), _)| *i).collect();
    if queued {
        out.extend(remaining.iter());
        out.sort_unstable();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ids::{RangeRule, StatusItems, keys_by, run_key, status_items};
    use crate::store::Loaded;

    /// A record naming ten billion indices (a damaged store, or `max_array_size` raised
    /// that far): recovery, listing, ranges and deletions cost its runs, never its indices.
    #[test]
    fn a_record_of_ten_billion_indices_stays_one_run() {
        let record = r#"{"seq":5,"array":true,"state":"Q","substate":10,"queue":"workq","attrs":[
            ["euser","alice"],["array_indices_submitted","0-9999999999"],
            ["array_indices_remaining","0-9999999999"]]}"#;
        let loaded = Loaded {
            jobs: vec![(5, record.to_string())],
            meta: vec![("initialized".to_string(), "1".to_string())],
            ..Loaded::default()
        };
        let (mut state, _) = State::from_loaded(loaded, "srv", "host", "/nonexistent");
        crate::job::nodefail::recover(&mut state, 0);
        let count = state.jobs.get(&5).and_then(|j| j.get("array_state_count", None).map(str::to_string));
        assert_eq!(count.as_deref(), Some("Queued:10000000000 Running:0 Exiting:0 Expired:0"));

        let Ok((5, StatusItems::Subjobs(listed))) = status_items(&state, "5[0-9999999999:1000000000]") else {
            panic!("a range inside the array is listed");
        };
        assert_eq!(listed.len(), 10);
        assert_eq!(listed.last(), Some(9_000_000_000));
        assert_eq!(run_key(&state, "6[1-2]"), Err(ReqError::new(Pbse::UNKJOBID)));
        assert_eq!(run_key(&state, "5[9999999998-9999999999:2]"), Ok(JobKey::subjob(5, 9_999_999_998)));
        assert_eq!(run_key(&state, "5[0-9999999999]"), Err(ReqError::new(Pbse::IVALREQ)));
        let keys = keys_by(&state, "5[9999999995-9999999999]", RangeRule::StartInside).unwrap();
        assert_eq!(keys.len(), 5);

        let mut deletes = QueuedDeletes::default();
        for index in [3, 4, 5, 9_999_999_999] {
            deletes.delete(&state, 5, index).unwrap();
        }
        assert_eq!(deletes.delete(&state, 5, 4), Err(ReqError::new(Pbse::BADSTATE)));
        deletes.flush(&mut state, 0, crate::job::parts::LIFE);
        let parent = state.jobs.get(&5).unwrap();
        assert_eq!(parent.get("array_indices_remaining", None), Some("0-2,6-9999999998"));
        assert_eq!(parent.get("array_state_count", None), Some("Queued:9999999996 Running:0 Exiting:0 Expired:4"));
        let listed = SubjobTemplate::new(&state, parent, &StatusFilter::new(&[], pbs_core::Privilege::Manager));
        assert_eq!(listed.status(&state, 4).attrs.iter().find(|a| a.0 == "job_state").map(|a| a.1.as_str()), Some("X"));
    }

    #[test]
    fn index_sets_parse_what_they_print() {
        let set = IndexSet::parse_lenient("1-3,5,7-11:2");
        let back: Vec<u64> = set.iter().collect();
        assert_eq!(back, vec![1, 2, 3, 5, 7, 9, 11]);
        assert_eq!(IndexSet::parse_lenient(&set.to_string()), set);
    }
}
