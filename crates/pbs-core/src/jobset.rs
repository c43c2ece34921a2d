//! What a `job_set` value names, read alike by the commands and the server: the id of a
//! set's leader (a bare `12` completed with the default server, as `depend` ids are) or
//! [`NEW_SET`], with which `qsub -L` makes its first job the leader of a new set.

use crate::jobid::{ArrayPart, JobId};

/// The `job_set` value with which a job leads a new set (its `job_set` becomes its own
/// id). Job ids start with a digit, so no id reads as this.
pub const NEW_SET: &str = "new";

/// What a `job_set` value asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetName {
    /// Lead a new set.
    New,
    /// Join the set led by this plain job (sequence number, server as given).
    Leader { seq: u64, server: Option<String> },
    /// Anything else: a subjob, an array, text that is no job id. No set has such a name.
    Nonexistent,
}

/// Reads a `job_set` value.
pub fn parse(value: &str) -> SetName {
    let value = value.trim();
    if value == NEW_SET {
        return SetName::New;
    }
    match value.parse::<JobId>() {
        Ok(id) if *id.array() == ArrayPart::None => {
            SetName::Leader { seq: id.seq(), server: id.server().map(str::to_string) }
        }
        _ => SetName::Nonexistent,
    }
}

/// The value as the commands send it: a bare sequence number gets the default server, as
/// `-W depend` ids do; anything else is sent as given for the server to judge.
pub fn complete(value: &str, server: &str) -> String {
    match parse(value) {
        SetName::Leader { seq, server: None } if !server.is_empty() => format!("{seq}.{server}"),
        _ => value.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_a_leader_a_new_set_or_nothing() {
        assert_eq!(parse("new"), SetName::New);
        assert_eq!(parse("12"), SetName::Leader { seq: 12, server: None });
        assert_eq!(parse("12.srv"), SetName::Leader { seq: 12, server: Some("srv".into()) });
        for value in ["12[].srv", "12[3].srv", "abc", "", "12.", "-1"] {
            assert_eq!(parse(value), SetName::Nonexistent, "{value}");
        }
        assert_eq!(complete("12", "srv"), "12.srv");
        assert_eq!(complete("12.other", "srv"), "12.other");
        assert_eq!(complete("new", "srv"), "new");
        assert_eq!(complete("12[]", "srv"), "12[]");
    }
}
