//! OR-ed resource requests: `select="A||B"` with `job_wide="walltime=720+place=scatter||..."`,
//! parsed once into alternatives (each a [`Select`] and its job-wide resources), the
//! `Resource_List` a chosen alternative gives a job, and the per-resource maximum and minimum
//! over the alternatives (`max_resc_req`, `min_resc_req`). Read alike by the server and the
//! scheduler; see docs/job-sets.md, "OR-ed resource requests".

use crate::capacity::checked_total;
use crate::resource::{ResourceRegistry, ResourceType};
pub use crate::select::{MAX_ALTERNATIVES, OR, is_ored};
use crate::select::{Select, SelectError};
use crate::{Duration, Size};

/// Resources the server derives from a select (`Resource_List.ncpus`...): an alternative
/// has its own, so they are never carried over from another one.
pub const DERIVED: [&str; 6] = ["ncpus", "ngpus", "mpiprocs", "mem", "vmem", "nodect"];

/// Resources that can never be job-wide resources of an alternative.
const NOT_JOB_WIDE: [&str; 4] = ["select", "job_wide", "nodes", "nodect"];

/// An OR-ed request that cannot be taken, with the text OpenPBS's design prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrSelectError {
    /// One of the select specifications does not parse.
    #[error("illegal select specification")]
    Select(SelectError),
    /// More than [`MAX_ALTERNATIVES`] alternatives.
    #[error("too many OR-ed select specifications, at most {MAX_ALTERNATIVES}")]
    TooMany,
    /// `job_wide` OR-ed beside a single select.
    #[error("multiple job_wide resource can only be used when multiple select specifications are specified")]
    JobWideNotOred,
    /// As many job_wide alternatives as selects are needed.
    #[error("job_wide resources and select specifications do not match")]
    Mismatch,
    /// A chunk-level (or unknown) resource in `job_wide`.
    #[error("Resource invalid in \"job_wide\" specification: {0}")]
    InvalidJobWide(String),
    /// `job_wide` text that is not `res=value[+res=value]...`, or a value its resource refuses.
    #[error("illegal job_wide specification")]
    JobWideSyntax,
}

/// `(resource, value)` pairs, in a resource list's order.
pub type Pairs = Vec<(String, String)>;

/// One alternative: its select and the job-wide resources that go with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    pub select: Select,
    pub job_wide: Vec<(String, String)>,
}

/// A request of one or more alternatives, tried in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrSelect {
    alternatives: Vec<Alternative>,
    /// Whether job_wide was given (it names the resources each alternative replaces).
    has_job_wide: bool,
}

fn split_bounded(text: &str) -> Result<Vec<&str>, OrSelectError> {
    crate::select::alternatives(text).ok_or(OrSelectError::TooMany)
}

fn parse_job_wide_part(part: &str) -> Result<Vec<(String, String)>, OrSelectError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in part.split('+') {
        let (name, value) = item.split_once('=').ok_or(OrSelectError::JobWideSyntax)?;
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || value.is_empty() || pairs.iter().any(|(n, _)| n == name) {
            return Err(OrSelectError::JobWideSyntax);
        }
        pairs.push((name.to_string(), value.to_string()));
    }
    Ok(pairs)
}

impl OrSelect {
    /// Reads a select (`None`: the job has none, one alternative of whatever the server
    /// makes) and a job_wide text, with the design's rules between them.
    pub fn parse(select: &str, job_wide: Option<&str>) -> Result<OrSelect, OrSelectError> {
        let selects = split_bounded(select)?
            .into_iter()
            .map(|s| s.parse::<Select>().map_err(OrSelectError::Select))
            .collect::<Result<Vec<_>, _>>()?;
        let job_wide = match job_wide {
            None => vec![Vec::new(); selects.len()],
            Some(text) => {
                let parts = split_bounded(text)?;
                if parts.len() > 1 && selects.len() == 1 {
                    return Err(OrSelectError::JobWideNotOred);
                }
                if parts.len() != selects.len() {
                    return Err(OrSelectError::Mismatch);
                }
                parts.into_iter().map(parse_job_wide_part).collect::<Result<Vec<_>, _>>()?
            }
        };
        let has_job_wide = job_wide.iter().any(|j| !j.is_empty());
        let alternatives =
            selects.into_iter().zip(job_wide).map(|(select, job_wide)| Alternative { select, job_wide }).collect();
        Ok(OrSelect { alternatives, has_job_wide })
    }

    pub fn alternatives(&self) -> &[Alternative] {
        &self.alternatives
    }

    /// More than one alternative: the job's `Resource_List` is chosen when it runs.
    pub fn is_ored(&self) -> bool {
        self.alternatives.len() > 1
    }

    /// Checks every job_wide resource against the definitions (known, not chunk-level,
    /// a value its type takes) and puts its values in canonical form.
    pub fn check_job_wide(&mut self, registry: &ResourceRegistry) -> Result<(), OrSelectError> {
        for alternative in &mut self.alternatives {
            for (name, value) in &mut alternative.job_wide {
                let def = registry.get(name).ok_or_else(|| OrSelectError::InvalidJobWide(name.clone()))?;
                if def.flags.host_level || NOT_JOB_WIDE.contains(&name.as_str()) {
                    return Err(OrSelectError::InvalidJobWide(name.clone()));
                }
                *value = def.normalize(value).map_err(|_| OrSelectError::JobWideSyntax)?;
            }
        }
        Ok(())
    }

    /// The selects, OR-ed again (`2:ncpus=3||1:ncpus=4`).
    pub fn select_text(&self) -> String {
        let parts: Vec<String> = self.alternatives.iter().map(|a| a.select.to_string()).collect();
        parts.join(OR)
    }

    /// Replaces alternative `k`'s select (with its defaults applied).
    pub fn set_select(&mut self, k: usize, select: Select) {
        if let Some(alternative) = self.alternatives.get_mut(k) {
            alternative.select = select;
        }
    }

    /// The `Resource_List` alternative `k` gives a job whose request is `queued`: the
    /// queued list without the select, the derived sums and every resource some
    /// alternative's job_wide names, then alternative `k`'s select, job_wide resources and
    /// sums (`place` `free` when none is left, as the server gives a select without one).
    pub fn resource_list<'a>(
        &self,
        k: usize,
        queued: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Option<Vec<(String, String)>> {
        let alternative = self.alternatives.get(k)?;
        let replaced = |name: &str| {
            name == "select"
                || DERIVED.contains(&name)
                || (self.has_job_wide && self.alternatives.iter().any(|a| a.job_wide.iter().any(|(n, _)| n == name)))
        };
        let mut list: Vec<(String, String)> =
            queued.into_iter().filter(|(n, _)| !replaced(n)).map(|(n, v)| (n.to_string(), v.to_string())).collect();
        for (name, value) in &alternative.job_wide {
            list.retain(|(n, _)| n != name);
            list.push((name.clone(), value.clone()));
        }
        if !list.iter().any(|(n, _)| n == "place") {
            list.push(("place".to_string(), "free".to_string()));
        }
        list.push(("select".to_string(), alternative.select.to_string()));
        list.extend(derived_totals(&alternative.select).ok()?);
        list.sort();
        Some(list)
    }
}

/// The sums the server derives from a select, as it derives them for any job: `nodect`,
/// `ncpus` (always), `ngpus` and `mpiprocs` (when above 0), `mem` and `vmem` (when asked).
pub fn derived_totals(select: &Select) -> Result<Vec<(String, String)>, crate::capacity::Overflow> {
    let mut out = vec![("nodect".to_string(), select.nodect().to_string())];
    for summed in ["ncpus", "ngpus", "mpiprocs"] {
        if let Some(total) = checked_total(select, summed, |v| v.parse().ok())? {
            if total > 0 || summed == "ncpus" {
                out.push((summed.to_string(), total.to_string()));
            }
        }
    }
    for sized in ["mem", "vmem"] {
        let bytes = |v: &str| v.parse::<Size>().ok().map(|s| s.to_bytes());
        if let Some(total) = checked_total(select, sized, bytes)? {
            out.push((sized.to_string(), Size::from_bytes(total).to_string()));
        }
    }
    Ok(out)
}

/// A value's place in its resource's order, for the numeric types only.
fn magnitude(rtype: ResourceType, value: &str) -> Option<f64> {
    match rtype {
        ResourceType::Long => value.trim().parse::<i64>().ok().map(|n| n as f64),
        ResourceType::Float => value.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        ResourceType::Size => value.parse::<Size>().ok().map(|s| s.to_bytes() as f64),
        ResourceType::Duration => value.parse::<Duration>().ok().map(|d| d.as_secs() as f64),
        _ => None,
    }
}

/// `max_resc_req` and `min_resc_req`: for each numeric resource any alternative's
/// `Resource_List` asks for, the largest and the smallest amount over the alternatives
/// that ask for it (each alternative's total, so `2:mem=100mb` counts as `200mb`), sorted
/// by name. Non-numeric resources (`place`, strings) have no order and are left out.
pub fn extremes(lists: &[Vec<(String, String)>], registry: &ResourceRegistry) -> (Pairs, Pairs) {
    let mut max: Vec<(String, String, f64)> = Vec::new();
    let mut min: Vec<(String, String, f64)> = Vec::new();
    for list in lists {
        for (name, value) in list {
            let Some(def) = registry.get(name) else { continue };
            let Some(amount) = magnitude(def.rtype, value) else { continue };
            match max.iter_mut().find(|(n, _, _)| n == name) {
                Some(entry) if amount > entry.2 => *entry = (name.clone(), value.clone(), amount),
                Some(_) => {}
                None => max.push((name.clone(), value.clone(), amount)),
            }
            match min.iter_mut().find(|(n, _, _)| n == name) {
                Some(entry) if amount < entry.2 => *entry = (name.clone(), value.clone(), amount),
                Some(_) => {}
                None => min.push((name.clone(), value.clone(), amount)),
            }
        }
    }
    let done = |mut v: Vec<(String, String, f64)>| {
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.into_iter().map(|(n, v, _)| (n, v)).collect()
    };
    (done(max), done(min))
}

/// Joins job-wide resources per alternative as the `job_wide` text writes them.
pub fn job_wide_text(alternatives: &[Vec<(String, String)>]) -> String {
    let parts: Vec<String> = alternatives
        .iter()
        .map(|pairs| pairs.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join("+"))
        .collect();
    parts.join(OR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn parses_alternatives_with_their_job_wide_resources() {
        let mut or = OrSelect::parse(
            "2:ncpus=3:mem=2gb||2:ncpus=4:mem=1gb",
            Some("walltime=720+place=scatter||walltime=480+place=pack"),
        )
        .unwrap();
        or.check_job_wide(&ResourceRegistry::new()).unwrap();
        assert!(or.is_ored());
        assert_eq!(or.select_text(), "2:ncpus=3:mem=2gb||2:ncpus=4:mem=1gb");
        assert_eq!(or.alternatives()[1].job_wide, pairs(&[("walltime", "00:08:00"), ("place", "pack")]));
        let plain = OrSelect::parse("1:ncpus=1", None).unwrap();
        assert!(!plain.is_ored());
    }

    #[test]
    fn the_designs_errors_word_for_word() {
        let err = |s: &str, j: Option<&str>| OrSelect::parse(s, j).unwrap_err().to_string();
        assert_eq!(
            err("1:ncpus=1", Some("walltime=1||walltime=2")),
            "multiple job_wide resource can only be used when multiple select specifications are specified"
        );
        assert_eq!(
            err("1:ncpus=1||1:ncpus=2", Some("walltime=1")),
            "job_wide resources and select specifications do not match"
        );
        assert_eq!(
            err("1:ncpus=1||1:ncpus=2", Some("walltime=1||walltime=2||walltime=3")),
            "job_wide resources and select specifications do not match"
        );
        let mut or = OrSelect::parse("1:ncpus=1||1:ncpus=2", Some("walltime=1||ncpus=2")).unwrap();
        assert_eq!(
            or.check_job_wide(&ResourceRegistry::new()).unwrap_err().to_string(),
            "Resource invalid in \"job_wide\" specification: ncpus"
        );
        assert_eq!(err("1:ncpus=1||", None), "illegal select specification");
        assert_eq!(err("1:ncpus=1||1:ncpus=2", Some("walltime||x=1")), "illegal job_wide specification");
    }

    #[test]
    fn a_thousand_alternatives_are_refused_before_parsing() {
        let many = vec!["1:ncpus=1"; 1000].join("||");
        assert_eq!(OrSelect::parse(&many, None), Err(OrSelectError::TooMany));
        let many_wide = vec!["walltime=1"; 1000].join("||");
        assert_eq!(OrSelect::parse("1:ncpus=1||1:ncpus=2", Some(&many_wide)), Err(OrSelectError::TooMany));
        let most = vec!["1:ncpus=1"; MAX_ALTERNATIVES].join("||");
        assert_eq!(OrSelect::parse(&most, None).map(|o| o.alternatives().len()), Ok(MAX_ALTERNATIVES));
    }

    #[test]
    fn a_chosen_alternative_gives_its_own_resource_list() {
        let mut or =
            OrSelect::parse("1:ncpus=8||1:ncpus=2:mem=1gb", Some("walltime=720+place=scatter||walltime=480")).unwrap();
        or.check_job_wide(&ResourceRegistry::new()).unwrap();
        let queued = [
            ("select", "x"),
            ("ncpus", "8"),
            ("nodect", "1"),
            ("walltime", "00:12:00"),
            ("place", "scatter"),
            ("cput", "10"),
        ];
        let second = or.resource_list(1, queued.iter().copied()).unwrap();
        assert_eq!(
            second,
            pairs(&[
                ("cput", "10"),
                ("mem", "1gb"),
                ("ncpus", "2"),
                ("nodect", "1"),
                ("place", "free"),
                ("select", "1:ncpus=2:mem=1gb"),
                ("walltime", "00:08:00")
            ])
        );
        // Without job_wide, the job-wide resources given outside select apply to every one.
        let or = OrSelect::parse("1:ncpus=8||2:ncpus=2", None).unwrap();
        let list = or.resource_list(1, queued.iter().copied()).unwrap();
        assert!(
            list.contains(&("walltime".into(), "00:12:00".into()))
                && list.contains(&("place".into(), "scatter".into()))
        );
        assert!(list.contains(&("ncpus".into(), "4".into())) && list.contains(&("nodect".into(), "2".into())));
    }

    /// The seed's examples. Its max example prints `nodect = 1` and `walltime = 00:08:00`,
    /// which are the minimum's values, against its own rule ("the maximum amount requested
    /// for each resource"); its min example (`mem = 200mb`, `ncpus = 8`, `nodect = 1`) is
    /// each alternative's total, the smallest. The rule is kept: see docs/job-sets.md.
    #[test]
    fn max_and_min_over_the_alternatives_totals() {
        let registry = ResourceRegistry::new();
        let a = pairs(&[("mem", "2gb"), ("ncpus", "23"), ("nodect", "1"), ("place", "free"), ("walltime", "00:12:00")]);
        let b =
            pairs(&[("mem", "200mb"), ("ncpus", "8"), ("nodect", "2"), ("place", "free"), ("walltime", "00:08:00")]);
        let (max, min) = extremes(&[a, b], &registry);
        assert_eq!(max, pairs(&[("mem", "2gb"), ("ncpus", "23"), ("nodect", "2"), ("walltime", "00:12:00")]));
        assert_eq!(min, pairs(&[("mem", "200mb"), ("ncpus", "8"), ("nodect", "1"), ("walltime", "00:08:00")]));
        let totals = derived_totals(&"2:ncpus=4:mem=100mb".parse().unwrap()).unwrap();
        assert_eq!(totals, pairs(&[("nodect", "2"), ("ncpus", "8"), ("mem", "200mb")]));
    }
}
