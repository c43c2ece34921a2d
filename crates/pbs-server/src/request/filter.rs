//! Which attributes a status request asks for, worked out once per request, and a job's
//! status object under it.

use pbs_core::attr::{ObjectKind, Privilege, split_name};
use pbs_proto::{Attr, StatusObject};

use crate::attrlist::{AttrList, resolve};
use crate::state::{Job, State};

/// Whether a requested attribute list asks for `full` (a dotted name) or its base.
pub fn wanted(filter: &[String], full: &str) -> bool {
    filter.is_empty() || filter.iter().any(|f| f == full || split_name(full).0 == f.as_str())
}

/// Which job attributes a status request asks for, worked out once per request so that
/// building each job's status allocates only for what is sent.
pub struct StatusFilter {
    /// Every attribute (empty filter) or only those named.
    pub(crate) all: bool,
    /// Attribute indices asked for by base name (all their resources).
    pub(crate) bases: Vec<bool>,
    /// `base.resource` names asked for one by one.
    pub(crate) fulls: Vec<(u8, String)>,
    pub(crate) privilege: Privilege,
    /// Indices of the attributes computed from the job rather than stored.
    pub(crate) computed: [u8; 4],
    /// With `eligible_time_enable` on, the time the status is taken at: `eligible_time`
    /// is shown as accrued then, as OpenPBS computes it at status time. Off (`None`),
    /// neither it nor `accrue_type` is shown.
    pub(crate) eligible_at: Option<i64>,
}

impl StatusFilter {
    pub fn new(filter: &[String], privilege: Privilege) -> StatusFilter {
        let table = ObjectKind::Job.attributes();
        let mut bases = vec![false; table.len()];
        let mut fulls = Vec::new();
        for name in filter {
            let (base, resource) = split_name(name);
            if let Some((index, _)) = ObjectKind::Job.find(base) {
                match resource {
                    None => bases[index] = true,
                    Some(r) => fulls.push((u8::try_from(index).unwrap_or(u8::MAX), r.to_string())),
                }
            }
        }
        let computed = [job_idx!("job_state"), job_idx!("queue"), job_idx!("server"), job_idx!("substate")];
        StatusFilter { all: filter.is_empty(), bases, fulls, privilege, computed, eligible_at: None }
    }

    /// Shows eligible time as at `now` when the server keeps it (`eligible_time_enable`).
    pub fn with_eligible_time(mut self, state: &State, now: i64) -> StatusFilter {
        self.eligible_at = crate::state::accrual::enabled(state).then_some(now);
        self
    }

    pub(crate) fn wants(&self, def: u8, resource: Option<&str>) -> bool {
        self.all
            || self.bases.get(def as usize).copied().unwrap_or(false)
            || resource.is_some_and(|r| self.fulls.iter().any(|(d, name)| *d == def && name == r))
    }
}

pub(crate) fn filtered(
    list: &AttrList,
    kind: ObjectKind,
    privilege: Privilege,
    filter: &[String],
    computed: Vec<(&str, String)>,
    hidden: &[String],
) -> Vec<Attr> {
    let table = kind.attributes();
    let mut entries: Vec<(u8, Option<String>, String)> =
        list.iter().map(|a| (a.def, a.resource.as_deref().map(str::to_string), a.value.to_string())).collect();
    for (name, value) in computed {
        if let Some((def, resource)) = resolve(kind, name) {
            entries.push((def, resource.map(str::to_string), value));
        }
    }
    entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    entries
        .into_iter()
        .filter_map(|(def, resource, value)| {
            let d = table.get(def as usize)?;
            if !d.readable_by(privilege) || resource.as_ref().is_some_and(|r| hidden.contains(r)) {
                return None;
            }
            let full = match resource {
                Some(r) => format!("{}.{}", d.name, r),
                None => d.name.to_string(),
            };
            wanted(filter, &full).then_some(Attr(full, value))
        })
        .collect()
}

impl StatusFilter {
    /// The status object of one job, attributes in report order, filtered by read privilege
    /// and the requested names.
    pub fn job_status(&self, state: &State, job: &Job) -> StatusObject {
        let filter = self;
        let table = ObjectKind::Job.attributes();
        let [state_idx, queue_idx, server_idx, _] = filter.computed;
        let computed = |def: u8| -> String {
            if def == state_idx {
                job.state.letter().to_string()
            } else if def == queue_idx {
                job.queue.to_string()
            } else if def == server_idx {
                state.server_name.clone()
            } else {
                job.substate.to_string()
            }
        };
        let hidden = crate::privilege::hidden_resources(state, filter.privilege);
        let mut sorted_computed = filter.computed;
        sorted_computed.sort_unstable();
        let mut attrs = Vec::with_capacity(if filter.all { job.attrs.len() + 4 } else { 8 });
        let mut push = |def: u8, resource: Option<&str>, value: &dyn Fn() -> String| {
            let Some(d) = table.get(def as usize) else { return };
            if !d.readable_by(filter.privilege) || !filter.wants(def, resource) {
                return;
            }
            if resource.is_some_and(|r| hidden.iter().any(|h| h == r)) {
                return;
            }
            let full = match resource {
                Some(r) => format!("{}.{}", d.name, r),
                None => d.name.to_string(),
            };
            attrs.push(Attr(full, value()));
        };
        // A job others wait on shows them as `before` entries its record does not hold.
        let depend_def = job_idx!("depend");
        let mut depend_shown = state.dependents.names(job.seq).then(|| depend_shown(state, job));
        let mut pending = sorted_computed.iter().peekable();
        for stored in job.attrs.iter() {
            while let Some(&&def) = pending.peek() {
                if def > stored.def {
                    break;
                }
                push(def, None, &|| computed(def));
                pending.next();
            }
            if stored.def >= depend_def
                && let Some(shown) = depend_shown.take()
            {
                if let Some(value) = shown {
                    push(depend_def, None, &|| value.clone());
                }
                if stored.def == depend_def {
                    continue;
                }
            }
            if stored.def == job_idx!("eligible_time") || stored.def == job_idx!("accrue_type") {
                let Some(now) = filter.eligible_at else { continue };
                if stored.def == job_idx!("eligible_time") {
                    let shown = crate::state::accrual::shown(job, now).unwrap_or_default();
                    push(stored.def, None, &|| shown.clone());
                    continue;
                }
            }
            push(stored.def, stored.resource.as_deref(), &|| stored.value.to_string());
        }
        if let Some(Some(value)) = depend_shown {
            push(depend_def, None, &|| value.clone());
        }
        for &def in pending {
            push(def, None, &|| computed(def));
        }
        StatusObject { name: job.id(&state.server_name), attrs }
    }
}

/// A job's `depend` as OpenPBS shows it: its own list, then a `before` entry for each job
/// that waits or waited on it, added to the item of that kind (`beforeok:12.s@s:13.s@s`).
pub fn depend_shown(state: &State, job: &Job) -> Option<String> {
    let own = job.depend_list();
    if !state.dependents.names(job.seq) {
        return own.map(ToString::to_string);
    }
    let mut list = own.cloned().unwrap_or(pbs_core::depend::DependList(Vec::new()));
    for (child, kind) in state.dependents.named_by(job.seq) {
        // A child purged from the server is no longer named.
        let Some(child) = state.jobs.get(&child) else { continue };
        let target = format!("{}@{}", child.id(&state.server_name), state.server_name);
        let kind = crate::state::depends::before_of(kind);
        match list.0.iter_mut().find(|d| d.kind == kind) {
            // A job that named it with a `before` kind has the entry in its own list.
            Some(item) if item.targets.contains(&target) => {}
            Some(item) => item.targets.push(target),
            None => list.0.push(pbs_core::depend::Dependency { kind, targets: vec![target] }),
        }
    }
    if list.0.is_empty() { None } else { Some(list.to_string()) }
}
