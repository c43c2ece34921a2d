//! Resource names interned to small ids, the kind of each resource, and amounts in the
//! units OpenPBS's scheduler reckons in (sizes in kilobytes, times in seconds), with the
//! text it prints for them in comments (`4gb`, `512mb`, `3`).
//!
//! A resource's kind is its definition's type, as the server sends them (the snapshot's
//! and `SchedChange::Resources`' definitions), so a string resource whose values read as
//! numbers still compares as a string, as OpenPBS's scheduler, which reads the server's
//! definitions, does. Without a definition (a mirror built by hand, a name the server has
//! not defined) the built-in table decides, and then the first value seen, exactly as
//! OpenPBS's `res_to_num` classifies a value: `True`/`False` is boolean, a number, size or
//! time is consumable, anything else is a string.

use std::collections::HashMap;

use pbs_core::{Duration, Size};

/// Index of a resource in a [`ResourceTable`].
pub(crate) type ResId = u16;

/// Marks an amount that is not set (on a node, a queue...).
pub(crate) const UNSET: i64 = i64::MIN;

/// How a resource's values are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A count (`ncpus`).
    Count,
    /// A float, kept in thousandths.
    Float,
    /// A size, kept in kilobytes (rounded up), as OpenPBS's scheduler does.
    SizeKb,
    /// A duration in seconds.
    Seconds,
    /// A string or string array: must match.
    Str,
    /// A boolean: must match (unset is False).
    Bool,
}

impl Kind {
    /// Consumable kinds are compared as amounts (available minus assigned).
    pub(crate) fn consumable(self) -> bool {
        matches!(self, Kind::Count | Kind::Float | Kind::SizeKb | Kind::Seconds)
    }
}

/// The built-in resources whose kind does not depend on values seen.
fn builtin_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "ncpus" | "ngpus" | "naccelerators" | "mpiprocs" | "ompthreads" | "nodect" | "nice" | "cpupercent" => {
            Kind::Count
        }
        "mem" | "vmem" | "pmem" | "pvmem" | "file" | "hbmem" | "accelerator_memory" => Kind::SizeKb,
        "walltime" | "soft_walltime" | "min_walltime" | "max_walltime" | "cput" | "pcput" => Kind::Seconds,
        "arch" | "host" | "vnode" | "aoe" | "eoe" | "accelerator_model" | "software" | "site" | "place" | "select"
        | "nodes" | "preempt_targets" => Kind::Str,
        "accelerator" => Kind::Bool,
        _ => return None,
    })
}

/// OpenPBS's `is_num`: a number, a size (`10gb`, `2w`), a time (`01:00:00`) or a float.
fn classify(value: &str) -> Kind {
    let lower = value.trim().to_ascii_lowercase();
    if lower == "true" || lower == "false" {
        return Kind::Bool;
    }
    let text = lower.strip_prefix(['-', '+']).unwrap_or(&lower);
    let digits = text.bytes().take_while(|b| b.is_ascii_digit() || *b == b':').count();
    if digits == 0 {
        return Kind::Str;
    }
    let rest = &text[digits..];
    let colons = text[..digits].bytes().filter(|b| *b == b':').count();
    if rest.is_empty() {
        return match colons {
            0 => Kind::Count,
            1 | 2 => Kind::Seconds,
            _ => Kind::Str,
        };
    }
    if colons == 0 {
        if matches!(rest, "k" | "m" | "g" | "t" | "kb" | "mb" | "gb" | "tb" | "kw" | "mw" | "gw" | "tw" | "b" | "w") {
            return Kind::SizeKb;
        }
        if let Some(frac) = rest.strip_prefix('.')
            && frac.bytes().all(|b| b.is_ascii_digit())
        {
            return Kind::Float;
        }
    }
    Kind::Str
}

/// The kind a definition's type (`long`, `string_array`... as qmgr names it) compares by;
/// `None` for a type this scheduler does not know.
fn defined_kind(rtype: &str) -> Option<Kind> {
    use pbs_core::resource::ResourceType;
    Some(match rtype.parse::<ResourceType>().ok()? {
        ResourceType::Long => Kind::Count,
        ResourceType::Float => Kind::Float,
        ResourceType::Size => Kind::SizeKb,
        ResourceType::Duration => Kind::Seconds,
        ResourceType::Boolean => Kind::Bool,
        ResourceType::Str | ResourceType::StringArray => Kind::Str,
    })
}

/// Resource names seen so far, with their kinds.
#[derive(Clone, Debug, Default)]
pub(crate) struct ResourceTable {
    names: Vec<String>,
    kinds: Vec<Kind>,
    by_name: HashMap<String, ResId>,
    /// The server's definitions: the kind of each resource it defines.
    defined: HashMap<String, Kind>,
}

impl ResourceTable {
    /// Takes the server's definitions (`(name, type)`, all of them). Returns whether a
    /// resource already seen now has another kind (its type changed, or it was seen
    /// before it was defined); its id keeps its place and takes the new kind.
    pub(crate) fn define(&mut self, defs: &[(String, String)]) -> bool {
        self.defined = defs.iter().filter_map(|(name, rtype)| Some((name.clone(), defined_kind(rtype)?))).collect();
        let mut changed = false;
        for (name, id) in &self.by_name {
            if let (Some(kind), Some(slot)) = (self.defined.get(name), self.kinds.get_mut(usize::from(*id)))
                && *slot != *kind
            {
                *slot = *kind;
                changed = true;
            }
        }
        changed
    }

    /// The id of `name`, adding it if new, with its definition's kind, else the built-in
    /// table's, else the kind `sample` reads as.
    pub(crate) fn intern(&mut self, name: &str, sample: &str) -> ResId {
        if let Some(id) = self.by_name.get(name) {
            return *id;
        }
        let kind = self.defined.get(name).copied().or_else(|| builtin_kind(name)).unwrap_or_else(|| classify(sample));
        // More than 65 535 distinct resource names cannot come from a real site; the last
        // id is reused rather than failing.
        let id = ResId::try_from(self.names.len()).unwrap_or(ResId::MAX);
        if usize::from(id) == self.names.len() {
            self.names.push(name.to_string());
            self.kinds.push(kind);
            self.by_name.insert(name.to_string(), id);
        }
        id
    }

    /// The id of `name` when it is consumable, interning it (as [`Self::intern`] would,
    /// its kind from `sample`) when it is new and `sample` reads as an amount; `None` for
    /// a resource that is not consumable. A new name that does not read as an amount is
    /// left for a value that classifies it.
    pub(crate) fn consumable(&mut self, name: &str, sample: &str) -> Option<ResId> {
        if let Some(&id) = self.by_name.get(name) {
            return self.kind(id).consumable().then_some(id);
        }
        builtin_kind(name).unwrap_or_else(|| classify(sample)).consumable().then(|| self.intern(name, sample))
    }

    pub(crate) fn get(&self, name: &str) -> Option<ResId> {
        self.by_name.get(name).copied()
    }

    pub(crate) fn name(&self, id: ResId) -> &str {
        self.names.get(usize::from(id)).map(String::as_str).unwrap_or("")
    }

    pub(crate) fn kind(&self, id: ResId) -> Kind {
        self.kinds.get(usize::from(id)).copied().unwrap_or(Kind::Str)
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

/// An amount from its text, in the kind's unit; `None` when it does not parse.
pub(crate) fn parse_amount(kind: Kind, text: &str) -> Option<i64> {
    let text = text.trim();
    match kind {
        Kind::Count => text.parse::<i64>().ok().or_else(|| text.parse::<f64>().ok().map(|f| f as i64)),
        Kind::Float => text.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| (f * 1000.0).round() as i64),
        Kind::SizeKb => {
            let size: Size = text.parse().ok()?;
            i64::try_from(size.to_bytes().div_ceil(1024)).ok()
        }
        Kind::Seconds => {
            let duration: Duration = text.parse().ok()?;
            i64::try_from(duration.as_secs()).ok()
        }
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            "true" | "t" | "y" | "1" => Some(1),
            "false" | "f" | "n" | "0" => Some(0),
            _ => None,
        },
        Kind::Str => None,
    }
}

/// An amount as OpenPBS's `res_to_str` prints it: sizes in the largest unit that divides
/// them (`4gb`, `1536mb`, `0kb`), counts as integers, floats without trailing zeros.
pub(crate) fn format_amount(kind: Kind, amount: i64) -> String {
    const MB: i64 = 1024;
    const GB: i64 = 1024 * 1024;
    const TB: i64 = 1024 * 1024 * 1024;
    match kind {
        Kind::SizeKb => {
            if amount == 0 {
                "0kb".to_string()
            } else if amount % TB == 0 {
                format!("{}tb", amount / TB)
            } else if amount % GB == 0 {
                format!("{}gb", amount / GB)
            } else if amount % MB == 0 {
                format!("{}mb", amount / MB)
            } else {
                format!("{amount}kb")
            }
        }
        Kind::Float => {
            let text = format!("{:.3}", amount as f64 / 1000.0);
            let text = text.trim_end_matches('0').trim_end_matches('.');
            text.to_string()
        }
        Kind::Seconds => Duration::from_secs(u64::try_from(amount).unwrap_or(0)).to_string(),
        Kind::Bool => if amount != 0 { "True" } else { "False" }.to_string(),
        Kind::Count | Kind::Str => amount.to_string(),
    }
}

/// An amount as `exec_vnode` carries it: sizes in kilobytes (`mem=1048576kb`), as OpenPBS
/// writes them there.
pub(crate) fn exec_amount(kind: Kind, amount: i64) -> String {
    match kind {
        Kind::SizeKb => format!("{amount}kb"),
        _ => format_amount(kind, amount),
    }
}

/// The value of resource `id` in a dense amount vector (missing entries are unset).
pub(crate) fn amount_of(values: &[i64], id: ResId) -> i64 {
    values.get(usize::from(id)).copied().unwrap_or(UNSET)
}

/// Adds `sign` times `amounts` into a dense vector.
pub(crate) fn add_amounts(values: &mut Vec<i64>, amounts: &[(ResId, i64)], sign: i64) {
    for &(id, amount) in amounts {
        let current = amount_of(values, id);
        let base = if current == UNSET { 0 } else { current };
        set_amount(values, id, base.saturating_add(amount.saturating_mul(sign)));
    }
}

/// Sets `values[id]`, growing the vector with unset entries.
pub(crate) fn set_amount(values: &mut Vec<i64>, id: ResId, amount: i64) {
    let index = usize::from(id);
    if values.len() <= index {
        values.resize(index + 1, UNSET);
    }
    values[index] = amount;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_openpbs_classification() {
        assert_eq!(classify("10"), Kind::Count);
        assert_eq!(classify("10gb"), Kind::SizeKb);
        assert_eq!(classify("2w"), Kind::SizeKb);
        assert_eq!(classify("01:00:00"), Kind::Seconds);
        assert_eq!(classify("1.5"), Kind::Float);
        assert_eq!(classify("True"), Kind::Bool);
        assert_eq!(classify("linux"), Kind::Str);
        assert_eq!(classify("a,b"), Kind::Str);
    }

    #[test]
    fn a_definition_decides_the_kind_over_the_values() {
        let mut res = ResourceTable::default();
        assert!(!res.define(&[("build".into(), "string".into()), ("scratch".into(), "size".into())]));
        let build = res.intern("build", "120");
        assert_eq!(res.kind(build), Kind::Str, "a string, though its value reads as a number");
        let kind_of = |res: &mut ResourceTable, name: &str, sample: &str| {
            let id = res.intern(name, sample);
            res.kind(id)
        };
        assert_eq!(kind_of(&mut res, "scratch", "10"), Kind::SizeKb);
        // Undefined: the built-in table, then the value.
        assert_eq!(kind_of(&mut res, "ncpus", "x"), Kind::Count);
        assert_eq!(kind_of(&mut res, "other", "12"), Kind::Count);
        // A type changed (qmgr set resource type): the id stays, its kind follows.
        assert!(res.define(&[("build".into(), "long".into()), ("scratch".into(), "size".into())]));
        assert_eq!((res.intern("build", ""), res.kind(build)), (build, Kind::Count));
        assert!(!res.define(&[("build".into(), "long".into())]));
    }

    #[test]
    fn sizes_print_in_the_largest_exact_unit() {
        let kb = |t: &str| parse_amount(Kind::SizeKb, t).unwrap();
        assert_eq!(format_amount(Kind::SizeKb, kb("4gb")), "4gb");
        assert_eq!(format_amount(Kind::SizeKb, kb("2048mb")), "2gb");
        assert_eq!(format_amount(Kind::SizeKb, kb("1536mb")), "1536mb");
        assert_eq!(format_amount(Kind::SizeKb, kb("100b")), "1kb");
        assert_eq!(format_amount(Kind::SizeKb, 0), "0kb");
        assert_eq!(format_amount(Kind::SizeKb, kb("2tb")), "2tb");
        assert_eq!(exec_amount(Kind::SizeKb, kb("1gb")), "1048576kb");
        assert_eq!(format_amount(Kind::Float, parse_amount(Kind::Float, "1.50").unwrap()), "1.5");
        assert_eq!(format_amount(Kind::Count, 8), "8");
    }
}
