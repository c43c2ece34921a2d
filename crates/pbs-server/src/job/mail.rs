//! The mail part of a job's life (`job::life`): which steps mail the job's owner, and what
//! the mail says, as OpenPBS's `svr_mailowner` decides and words it. A start mails `b`
//! ("Begun execution"), an end `e` ("Execution terminated" with the exit status and the
//! usage), a job a dependency or its set ends `a` ("Aborted by PBS Server" with the
//! reason); a kill for a limit and a start the mom could not make mail whatever the mail
//! points, as OpenPBS forces them. A subjob mails only with `j` among its points; an
//! array mails its begin (its first subjob's start) and its end (its last subjob's).
//!
//! The part only decides: the mail travels in [`Effects::mails`] and is sent after the
//! commit by `crate::mailer`, off the state lock, which also owns the addresses.

use std::fmt::Write as _;

use crate::effects::{Effects, Mail};
use crate::job::life::{At, Step, Why};
use crate::state::{Job, State};

/// OpenPBS's mail points (`MAIL_ABORT`, `MAIL_BEGIN`, `MAIL_END`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// `a`: the job was aborted.
    Abort,
    /// `b`: it began.
    Begin,
    /// `e`: it ended.
    End,
    /// A stage-in failed (OpenPBS's `MAIL_STAGEIN`), mailed only when forced.
    StageIn,
    /// Another event, mailed only when forced (OpenPBS's `MAIL_OTHER`), with no standard
    /// message.
    Other,
}

impl Point {
    fn letter(self) -> char {
        match self {
            Point::Abort => 'a',
            Point::Begin => 'b',
            Point::End => 'e',
            Point::StageIn => 's',
            Point::Other => 'o',
        }
    }

    /// The standard message OpenPBS puts first in the body.
    fn message(self) -> &'static str {
        match self {
            Point::Abort => "Aborted by PBS Server ",
            Point::Begin => "Begun execution",
            Point::End => "Execution terminated",
            Point::StageIn => {
                "File stage in failed, see below.\nJob will be retried later, please investigate and correct problem."
            }
            Point::Other => "",
        }
    }
}

/// Whether a mail is sent whatever the job's mail points (OpenPBS's `MAIL_FORCE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Force {
    /// Only if the job asked for this point.
    No,
    /// Always.
    Yes,
}

/// The mail part.
pub struct Part;

impl crate::job::life::Part for Part {
    fn name(&self) -> &'static str {
        "mail"
    }

    fn after(&self, state: &mut State, at: &At<'_>, out: &mut Effects) {
        match at.step {
            Step::Started { .. } => {
                mail(state, at, Point::Begin, Force::No, None, out);
                if let Some(seq) = at.key.index.map(|_| at.key.seq) {
                    if crate::job::array::begins_with(state, seq) {
                        if let Some(array) = state.jobs.get(&seq) {
                            let id = array.id(&state.server_name);
                            push(state, array, &id, Point::Begin, Force::No, None, out);
                        }
                    }
                }
            }
            Step::Ended { exit, ran: true, .. } => match exit.and_then(forced_abort) {
                Some(reason) => mail(state, at, Point::Abort, Force::Yes, Some(reason.to_string()), out),
                None => {
                    let text = state.job(at.key).map(|job| end_text(job, *exit, at.key.index.is_none() && job.array));
                    mail(state, at, Point::End, Force::No, text, out);
                }
            },
            Step::Left { why } if !matches!(why, Why::Deleted { .. }) => {
                mail(state, at, Point::Abort, Force::No, why.reason(), out);
            }
            _ => {}
        }
    }
}

/// The reason OpenPBS mails whatever the mail points for a run its mom ended with a
/// special exit status: a limit's kill, or a start it could not make.
fn forced_abort(exit: i32) -> Option<&'static str> {
    Some(match exit {
        -1 => "Job cannot be executed\nSee Administrator for help",
        -2 => "Job cannot be executed\nSee job standard error file",
        -27 => "Job exceeded resource mem\nSee job standard error file",
        -28 => "Job exceeded resource cput\nSee job standard error file",
        -29 => "Job exceeded resource walltime\nSee job standard error file",
        _ => return None,
    })
}

/// The end mail's text: `Exit_status=N`, then each `resources_used.R=V` on a line of its
/// own (an array's end has the status only, as OpenPBS's).
fn end_text(job: &Job, exit: Option<i32>, array: bool) -> String {
    let mut text = format!("Exit_status={}", exit.unwrap_or(0));
    if !array {
        for (resource, value) in job.attrs.resources(job_idx!("resources_used")) {
            if !value.is_empty() {
                let _ = write!(text, "\nresources_used.{resource}={value}");
            }
        }
    }
    text
}

fn mail(state: &State, at: &At<'_>, point: Point, force: Force, text: Option<String>, out: &mut Effects) {
    if let Some(job) = state.job(at.key) {
        push(state, job, at.id, point, force, text, out);
    }
}

/// Adds the mail of `point` for `job` if its mail points (or `force`) ask for it.
fn push(state: &State, job: &Job, id: &str, point: Point, force: Force, text: Option<String>, out: &mut Effects) {
    if force == Force::No && !wanted(job.get("Mail_Points", None), point, job.index.is_some()) {
        return;
    }
    let mut body = String::new();
    let _ = writeln!(body, "PBS Job Id: {}", crate::mailer::printable(id));
    let _ = writeln!(body, "Job Name:   {}", crate::mailer::printable(job.get("Job_Name", None).unwrap_or("")));
    if point != Point::Other {
        let _ = writeln!(body, "{}", point.message());
    }
    if let Some(text) = text {
        let _ = writeln!(body, "{text}");
    }
    out.mails.push(Mail {
        job_id: id.to_string(),
        user: job.owner().to_string(),
        owner: job.get("Job_Owner", None).unwrap_or("").to_string(),
        mail_users: job.get("Mail_Users", None).map(str::to_string),
        mailer: state.server_attr("mailer", None).unwrap_or(crate::mailer::SENDMAIL).to_string(),
        from: state.server_attr("mail_from", None).unwrap_or(crate::mailer::DEFAULT_FROM).to_string(),
        subject: format!("PBS JOB {id}"),
        body,
    });
}

/// qdel by someone other than the job's owner (`requester`, `user@host`): the owner is
/// told whatever the mail points, as OpenPBS's `acct_del_write` tells them. The verb's, as
/// its `D` record is: no step says who asked.
pub fn deleted_by_other(state: &State, key: crate::jobkey::JobKey, requester: &str, out: &mut Effects) {
    let Some(job) = state.job(key) else { return };
    let user = |who: &str| who.split_once('@').map_or(who, |(user, _)| user).to_string();
    if user(requester) == user(job.get("Job_Owner", None).unwrap_or("")) {
        return;
    }
    let id = job.id(&state.server_name);
    let text = format!("Job to be deleted at request of {}", crate::mailer::printable(requester));
    push(state, job, &id, Point::Other, Force::Yes, Some(text), out);
}

/// A mail about job `key` whatever its mail points (OpenPBS's `MAIL_FORCE`), from a report
/// that is not a step (a mom's staging that failed).
pub fn forced(state: &State, key: crate::jobkey::JobKey, point: Point, text: String, out: &mut Effects) {
    let Some(job) = state.job(key) else { return };
    let id = job.id(&state.server_name);
    push(state, job, &id, point, Force::Yes, Some(text), out);
}

/// Whether mail points `points` ask for `point`: unset means `a` only, as OpenPBS; a
/// subjob mails only with `j` among them.
pub fn wanted(points: Option<&str>, point: Point, subjob: bool) -> bool {
    match points {
        None => point == Point::Abort && !subjob,
        Some(points) => (!subjob || points.contains('j')) && points.contains(point.letter()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mail_points_choose_as_openpbs() {
        assert!(wanted(None, Point::Abort, false));
        assert!(!wanted(None, Point::Begin, false));
        assert!(!wanted(None, Point::Abort, true));
        assert!(wanted(Some("abe"), Point::End, false));
        assert!(!wanted(Some("abe"), Point::End, true));
        assert!(wanted(Some("abej"), Point::End, true));
        assert!(!wanted(Some("n"), Point::Abort, false));
        assert!(!wanted(Some("be"), Point::Abort, false));
    }

    #[test]
    fn limit_kills_are_forced_aborts_and_other_exits_are_not() {
        assert!(forced_abort(-29).is_some_and(|r| r.starts_with("Job exceeded resource walltime")));
        assert_eq!(forced_abort(0), None);
        assert_eq!(forced_abort(271), None);
    }
}
