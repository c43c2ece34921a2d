//! Job ids: `123.server`, array parents `123[].server`, subjobs `123[5].server`, and
//! subjob ranges `123[1-5].server`, as typed by users or printed by the server.

use std::fmt;
use std::str::FromStr;

use crate::range::ArrayRange;

/// Which part of an array (if any) an id names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ArrayPart {
    /// A plain job.
    None,
    /// The whole array: `123[]`.
    Parent,
    /// One subjob: `123[5]`.
    Index(u64),
    /// Some subjobs: `123[1-5:2]`.
    Range(ArrayRange),
}

/// A parsed job id. The server part is optional in what users type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobId {
    seq: u64,
    array: ArrayPart,
    server: Option<String>,
}

/// A job id that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal job id")]
pub struct BadJobId;

impl JobId {
    pub fn new(seq: u64, array: ArrayPart, server: Option<String>) -> Self {
        JobId { seq, array, server }
    }

    /// Subjob `index` of array `seq` on `server`: `12[3].server`.
    pub fn subjob(seq: u64, index: u64, server: &str) -> Self {
        JobId { seq, array: ArrayPart::Index(index), server: Some(server.to_string()) }
    }

    /// The array a subjob or subjob range belongs to (`12[].server`); `None` for a plain
    /// job or an array itself.
    pub fn parent(&self) -> Option<JobId> {
        match self.array {
            ArrayPart::Index(_) | ArrayPart::Range(_) => {
                Some(JobId { seq: self.seq, array: ArrayPart::Parent, server: self.server.clone() })
            }
            ArrayPart::None | ArrayPart::Parent => None,
        }
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn array(&self) -> &ArrayPart {
        &self.array
    }

    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// The id with its server part filled in when the user left it out.
    pub fn with_server(mut self, server: &str) -> Self {
        if self.server.is_none() {
            self.server = Some(server.to_string());
        }
        self
    }

    /// The id without the server part (`123[]`), as qstat's short listings print it.
    pub fn display_short(&self) -> String {
        let mut out = self.seq.to_string();
        push_array(&mut out, &self.array);
        out
    }
}

fn push_array(out: &mut String, array: &ArrayPart) {
    match array {
        ArrayPart::None => {}
        ArrayPart::Parent => out.push_str("[]"),
        ArrayPart::Index(i) => out.push_str(&format!("[{i}]")),
        ArrayPart::Range(r) => out.push_str(&format!("[{r}]")),
    }
}

impl FromStr for JobId {
    type Err = BadJobId;

    fn from_str(text: &str) -> Result<Self, BadJobId> {
        let (head, server) = match text.split_once('.') {
            Some((head, server)) if !server.is_empty() => (head, Some(server.to_string())),
            Some(_) => return Err(BadJobId),
            None => (text, None),
        };
        let (digits, array) = match head.split_once('[') {
            Some((digits, rest)) => {
                let inner = rest.strip_suffix(']').ok_or(BadJobId)?;
                let part = if inner.is_empty() {
                    ArrayPart::Parent
                } else if inner.bytes().all(|b| b.is_ascii_digit()) && inner.len() <= 10 {
                    ArrayPart::Index(inner.parse().map_err(|_| BadJobId)?)
                } else {
                    ArrayPart::Range(inner.parse().map_err(|_| BadJobId)?)
                };
                (digits, part)
            }
            None => (head, ArrayPart::None),
        };
        if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(BadJobId);
        }
        let seq = digits.parse().map_err(|_| BadJobId)?;
        Ok(JobId { seq, array, server })
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_short())?;
        if let Some(server) = &self.server {
            write!(f, ".{server}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Option<&str>) {
        let got = input.parse::<JobId>().ok().map(|id| id.with_server("srv").to_string());
        assert_eq!(got.as_deref(), expected, "input {input:?}");
    }

    #[test]
    fn parses_all_forms() {
        check("12", Some("12.srv"));
        check("12.host.example", Some("12.host.example"));
        check("12[]", Some("12[].srv"));
        check("12[5].h", Some("12[5].h"));
        check("12[1-5:2]", Some("12[1-5:2].srv"));
    }

    #[test]
    fn subjob_ids_and_their_array() {
        let sub = JobId::subjob(12, 3, "srv.example");
        assert_eq!(sub.to_string(), "12[3].srv.example");
        assert_eq!("12[3].srv.example".parse::<JobId>(), Ok(sub.clone()));
        assert_eq!(sub.parent().map(|p| p.to_string()).as_deref(), Some("12[].srv.example"));
        assert_eq!(JobId::subjob(7, 0, "s").to_string(), "7[0].s");
        let range: JobId = "12[1-5:2]".parse().unwrap();
        assert_eq!(range.parent().map(|p| p.to_string()).as_deref(), Some("12[]"));
        for whole in ["12.s", "12[].s"] {
            assert_eq!(whole.parse::<JobId>().unwrap().parent(), None, "{whole}");
        }
    }

    #[test]
    fn rejects_non_ids() {
        for bad in ["", "abc", "12.", "12[", "12[x]", "[]", "1234567890123", "12]"] {
            check(bad, None);
        }
    }
}
