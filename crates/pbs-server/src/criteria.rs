//! qselect criteria, read once per request: each value is parsed (as a number, duration,
//! size, hold letters, states, users, queue) before the jobs are walked, so the work per
//! job does not grow with the size of what the client sent.

use std::cmp::Ordering;
use std::collections::HashSet;

use pbs_core::attr::split_name;
use pbs_core::{Duration, JobState, Size};
use pbs_proto::{CompareOp, Criterion};

use crate::state::Job;

/// A criterion's value in every form a comparison may need.
struct Value {
    text: String,
    long: Option<i64>,
    float: Option<f64>,
    duration: Option<Duration>,
    size: Option<Size>,
}

impl Value {
    fn new(text: &str) -> Value {
        Value {
            text: text.to_string(),
            long: text.parse().ok(),
            float: text.parse().ok(),
            duration: text.parse().ok(),
            size: text.parse().ok(),
        }
    }

    /// [`crate::request::attrs::compare_values`] of a job's value against this one.
    fn compare(&self, a: &str) -> Option<Ordering> {
        if let (Ok(x), Some(y)) = (a.parse::<i64>(), self.long) {
            return Some(x.cmp(&y));
        }
        let a_float = a.parse::<f64>().ok();
        if let (Some(x), Some(y)) = (a_float, self.float) {
            return x.partial_cmp(&y);
        }
        if let (Ok(x), Some(y)) = (a.parse::<Duration>(), self.duration) {
            return Some(x.cmp(&y));
        }
        if let (Ok(x), Some(y)) = (a.parse::<Size>(), self.size) {
            return Some(x.cmp(&y));
        }
        if a_float.is_some() || self.float.is_some() {
            return None;
        }
        Some(a.cmp(self.text.as_str()))
    }
}

/// What a criterion tests, prepared from its value.
enum Test {
    /// `job_state`: the states named.
    States(Vec<JobState>),
    /// `queue`: the queue name (without `@server`).
    Queue(String),
    /// `Job_Owner` / `euser`: the user names listed (a set: the list may be long).
    Users(HashSet<String>),
    /// `Hold_Types`: the letters, sorted.
    Holds(Vec<char>),
    /// Any other attribute or resource.
    Value { base: String, resource: Option<String>, value: Value },
}

/// A criterion ready to be tested against many jobs.
pub struct Prepared {
    op: CompareOp,
    test: Test,
}

impl Prepared {
    pub fn new(criterion: &Criterion) -> Prepared {
        let (base, resource) = split_name(&criterion.attr);
        let value = criterion.value.as_str();
        let test = match base {
            "job_state" => {
                let mut states: Vec<JobState> = value.chars().filter_map(JobState::from_letter).collect();
                states.sort_unstable_by_key(|s| s.letter());
                states.dedup();
                Test::States(states)
            }
            "queue" => Test::Queue(value.split('@').next().unwrap_or("").to_string()),
            "Job_Owner" | "euser" => Test::Users(
                value
                    .split(',')
                    .map(|entry| entry.split_once('@').map_or(entry, |(user, _)| user).to_string())
                    .collect(),
            ),
            "Hold_Types" => {
                let mut letters: Vec<char> = value.chars().collect();
                letters.sort_unstable();
                Test::Holds(letters)
            }
            _ => {
                Test::Value { base: base.to_string(), resource: resource.map(str::to_string), value: Value::new(value) }
            }
        };
        Prepared { op: criterion.op, test }
    }

    fn holds_ordering(&self, ord: Option<Ordering>) -> bool {
        match (self.op, ord) {
            (_, None) => false,
            (CompareOp::Eq, Some(o)) => o == Ordering::Equal,
            (CompareOp::Ne, Some(o)) => o != Ordering::Equal,
            (CompareOp::Gt, Some(o)) => o == Ordering::Greater,
            (CompareOp::Ge, Some(o)) => o != Ordering::Less,
            (CompareOp::Lt, Some(o)) => o == Ordering::Less,
            (CompareOp::Le, Some(o)) => o != Ordering::Greater,
        }
    }

    /// Whether `job`, in state `job_state`, meets the criterion.
    pub fn holds(&self, job: &Job, job_state: JobState) -> bool {
        match &self.test {
            Test::States(states) => {
                let inside = states.contains(&job_state);
                if self.op == CompareOp::Ne { !inside } else { inside }
            }
            Test::Queue(queue) => self.holds_ordering(Some(job.queue.as_ref().cmp(queue.as_str()))),
            Test::Users(users) => {
                let wanted = users.contains(job.owner());
                if self.op == CompareOp::Ne { !wanted } else { wanted }
            }
            Test::Holds(letters) => {
                let mut current: Vec<char> = job.get("Hold_Types", None).unwrap_or("n").chars().collect();
                current.sort_unstable();
                self.holds_ordering(Some(current.as_slice().cmp(letters.as_slice())))
            }
            Test::Value { base, resource, value } => match job.get(base, resource.as_deref()) {
                Some(text) => self.holds_ordering(value.compare(text)),
                None => self.op == CompareOp::Ne,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_values_compare_as_compare_values_does() {
        let samples = ["1", "-3", "2.5", "1e3", "00:10:00", "600", "1gb", "1024mb", "abc", "", "NaN", "10:00"];
        for a in samples {
            for b in samples {
                assert_eq!(Value::new(b).compare(a), crate::request::attrs::compare_values(a, b), "{a} vs {b}");
            }
        }
    }
}
