//! qmsg (MessageJob): checks a request to append a line to a running job's stderr or
//! stdout, as OpenPBS's `req_messagejob` does, and names the mom to write it: the job's
//! mother superior, which writes as the job's owner and answers (see "Answers from moms"
//! in docs/architecture.md). Nothing in the server's state changes.

use pbs_core::{ArrayPart, JobId, JobState, Pbse};
use pbs_proto::mom::ToMom;

use crate::error::ReqError;
use crate::request::{Ctx, may_act_on};
use crate::state::State;

/// The longest line a qmsg may carry: OpenPBS's qmsg cuts its text at 256 characters;
/// a raw client gets `Invalid request` past this.
pub const MAX_MESSAGE_LEN: usize = 4096;

/// What to ask of which mom for a qmsg; its frame's `ask` is filled in by the dispatch.
#[derive(Debug)]
pub struct MessageAsk {
    /// The mother superior's node.
    pub node: String,
    /// The job's full id.
    pub job_id: String,
    /// The frame to send.
    pub frame: ToMom,
}

/// Checks a qmsg of `id`: the caller owns the job (or is an operator), it is a plain job
/// (`not supported for Array Jobs`, as OpenPBS answers arrays and subjobs) and it runs.
pub fn message_job(
    state: &State,
    ctx: &Ctx<'_>,
    id: &str,
    text: &str,
    stdout: bool,
    stderr: bool,
) -> Result<MessageAsk, ReqError> {
    if text.len() > MAX_MESSAGE_LEN || text.contains('\n') {
        return Err(ReqError::new(Pbse::IVALREQ));
    }
    let parsed: JobId = id.parse().map_err(|_| ReqError::new(Pbse::UNKJOBID))?;
    let job = state.jobs.get(&parsed.seq()).ok_or_else(|| ReqError::new(Pbse::UNKJOBID))?;
    if !may_act_on(ctx, job) {
        return Err(ReqError::new(Pbse::PERM));
    }
    if job.state.is_history() {
        return Err(ReqError::new(Pbse::HISTJOBID));
    }
    if job.array || !matches!(parsed.array(), ArrayPart::None) {
        return Err(ReqError::with_message(Pbse::NOSUP, "not supported for Array Jobs".to_string()));
    }
    if job.state != JobState::Running {
        return Err(ReqError::new(Pbse::BADSTATE));
    }
    let node = job.mother_superior().ok_or_else(|| ReqError::new(Pbse::BADSTATE))?.to_string();
    let job_id = job.id(&state.server_name);
    // `-E` is the default when neither is asked.
    let stderr = stderr || !stdout;
    let frame = ToMom::MessageJob { job_id: job_id.clone(), text: text.to_string(), stdout, stderr, ask: 0 };
    Ok(MessageAsk { node, job_id, frame })
}
