//! Which job an operation is about: [`JobKey`], a plain job or array parent, or one subjob,
//! and [`key_of`], the key of a full or short job id.

/// Which job: a plain job or array parent (`index: None`), or one subjob of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobKey {
    /// Sequence number.
    pub seq: u64,
    /// Subjob index.
    pub index: Option<u64>,
}

impl JobKey {
    /// A plain job or an array parent.
    pub fn job(seq: u64) -> JobKey {
        JobKey { seq, index: None }
    }

    /// One subjob.
    pub fn subjob(seq: u64, index: u64) -> JobKey {
        JobKey { seq, index: Some(index) }
    }
}

/// The key of a job id: a plain job or array parent (`12.server`, `12`, `12[]`), or one
/// subjob (`12[3]`). A range (`12[1-5]`) names no single job.
pub fn key_of(job_id: &str) -> Option<JobKey> {
    let parsed: pbs_core::JobId = job_id.parse().ok()?;
    match parsed.array() {
        pbs_core::ArrayPart::None | pbs_core::ArrayPart::Parent => Some(JobKey::job(parsed.seq())),
        pbs_core::ArrayPart::Index(i) => Some(JobKey::subjob(parsed.seq(), *i)),
        pbs_core::ArrayPart::Range(_) => None,
    }
}
