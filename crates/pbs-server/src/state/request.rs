//! A job's request parsed once: its `Resource_List.select` (plain or OR-ed) and `place`,
//! kept typed beside its attributes (`state::Job::request`) and shared by every job whose
//! texts are the same ([`Requests`]), so a queue of identical jobs keeps one parse.
//!
//! The kept form is made from the job's attributes only, by `Job::new` and
//! `Job::set_attrs` (the one writer), wherever the texts are set: a submission, a qalter
//! (a hook's changes included), a run choosing an OR-ed alternative and a requeue putting
//! the OR-ed request back, a subjob made from its array, a start reading the store.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use pbs_core::orselect::{OrSelect, is_ored};
use pbs_core::{Place, Select};

use crate::attrlist::AttrList;

/// A select as a job asks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// One select.
    Plain(Select),
    /// Alternatives (`A||B`), read with the job-wide resources they would run with.
    Ored(OrSelect),
}

impl Asked {
    /// Its selects: the one, or each alternative's.
    pub fn selects(&self) -> impl Iterator<Item = &Select> {
        let (one, alternatives) = match self {
            Asked::Plain(select) => (Some(select), &[][..]),
            Asked::Ored(or) => (None, or.alternatives()),
        };
        one.into_iter().chain(alternatives.iter().map(|a| &a.select))
    }
}

/// A job's request, parsed.
#[derive(Debug, PartialEq, Eq)]
pub struct JobRequest {
    /// The texts it was read from ([`texts_of`]): what says whether it is current.
    texts: Box<str>,
    /// `Resource_List.select`; `None` when the job has none or it does not read.
    pub select: Option<Asked>,
    /// `Resource_List.place`; `None` when the job has none or it does not read.
    pub place: Option<Place>,
}

impl JobRequest {
    /// The select when it is one select (not OR-ed).
    pub fn plain(&self) -> Option<&Select> {
        match &self.select {
            Some(Asked::Plain(select)) => Some(select),
            _ => None,
        }
    }

    /// The alternatives of an OR-ed select.
    pub fn ored(&self) -> Option<&OrSelect> {
        match &self.select {
            Some(Asked::Ored(or)) => Some(or),
            _ => None,
        }
    }

    /// Whether it was read from what `attrs` say now.
    pub fn is_current(request: Option<&JobRequest>, attrs: &AttrList) -> bool {
        request.map(|r| &*r.texts) == texts_of(attrs).as_deref()
    }
}

const SEP: char = '\u{1}';

/// The texts a job's request is read from: `select`, `place`, and for an OR-ed select the
/// job-wide resources its alternatives run with (`sched_job_wide`, which holds the
/// defaults, else `Resource_List.job_wide`). `None` for a job with neither a select nor a
/// place.
pub fn texts_of(attrs: &AttrList) -> Option<String> {
    let rl = job_idx!("Resource_List");
    let select = attrs.get(rl, Some("select"));
    let place = attrs.get(rl, Some("place"));
    if select.is_none() && place.is_none() {
        return None;
    }
    let mut texts = String::with_capacity(32);
    texts.push_str(select.unwrap_or(""));
    texts.push(SEP);
    texts.push_str(place.unwrap_or(""));
    if select.is_some_and(is_ored) {
        let job_wide = attrs.get(job_idx!("sched_job_wide"), None).or_else(|| attrs.get(rl, Some("job_wide")));
        texts.push(SEP);
        texts.push_str(job_wide.unwrap_or(""));
    }
    Some(texts)
}

/// Requests parsed so far, by their texts: a job asking what another job asks shares its
/// parse. Entries of requests no job keeps any more are dropped now and then.
#[derive(Debug, Default)]
pub struct Requests {
    by_texts: HashMap<Box<str>, Weak<JobRequest>>,
    /// The size at which dead entries are next dropped.
    sweep_at: usize,
}

impl Requests {
    /// The request `attrs` name, parsed once per distinct texts.
    pub fn of(&mut self, attrs: &AttrList) -> Option<Arc<JobRequest>> {
        let texts = texts_of(attrs)?;
        if let Some(request) = self.by_texts.get(texts.as_str()).and_then(Weak::upgrade) {
            return Some(request);
        }
        let request = Arc::new(parse(texts.into_boxed_str()));
        self.by_texts.insert(request.texts.clone(), Arc::downgrade(&request));
        if self.by_texts.len() > self.sweep_at {
            self.by_texts.retain(|_, kept| kept.strong_count() > 0);
            self.sweep_at = (self.by_texts.len() * 2).max(1024);
        }
        Some(request)
    }
}

/// Reads the texts [`texts_of`] joined.
fn parse(texts: Box<str>) -> JobRequest {
    let mut parts = texts.split(SEP);
    let select = parts.next().unwrap_or("");
    let place = parts.next().unwrap_or("");
    let job_wide = parts.next();
    let select = if select.is_empty() {
        None
    } else if is_ored(select) {
        OrSelect::parse(select, job_wide.filter(|j| !j.is_empty())).ok().map(Asked::Ored)
    } else {
        select.parse::<Select>().ok().map(Asked::Plain)
    };
    let place = if place.is_empty() { None } else { place.parse::<Place>().ok() };
    JobRequest { select, place, texts }
}
