//! Conditions on a vnode's values: a chunk's `color!=green` and the terms of a job's
//! `nfilter`, compiled once per distinct request against the resource table and then
//! tested per vnode with no parsing (docs/job-sets.md, "Conditional requests and
//! nfilter").
//!
//! A value compares as the resource's kind says (the same kind `=` matches by): numbers,
//! sizes and times as amounts, strings byte by byte (`ver_12` > `ver_045`), booleans with
//! False below True. A resource a vnode does not have meets no condition, whatever the
//! operator, as it meets no `=`; booleans are the exception, unset being False as for `=`.

use pbs_core::nfilter::NFilter;
use pbs_core::select::Cmp;

use crate::resources::{Kind, ResId, ResourceTable, UNSET, parse_amount};

/// What a condition compares a vnode's value with.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Operand {
    Amount(i64),
    Str(String),
    Bool(bool),
    /// The value cannot be one of the resource's kind: no vnode meets it.
    Never,
}

/// One condition: the vnode's value of `id`, `cmp`, the operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cond {
    pub(crate) id: ResId,
    cmp: Cmp,
    operand: Operand,
}

impl Cond {
    pub(crate) fn compile(res: &mut ResourceTable, name: &str, cmp: Cmp, value: &str) -> Cond {
        let id = res.intern(name, value);
        let kind = res.kind(id);
        let operand = match kind {
            Kind::Str => Operand::Str(value.to_string()),
            Kind::Bool => parse_amount(kind, value).map_or(Operand::Never, |a| Operand::Bool(a != 0)),
            _ => parse_amount(kind, value).map_or(Operand::Never, Operand::Amount),
        };
        Cond { id, cmp, operand }
    }

    /// Whether a vnode meets the condition, given its amount of the resource (`UNSET`
    /// when it has none; 1 or 0 for a boolean) and its string values.
    pub(crate) fn holds(&self, amount: i64, strs: Option<&[String]>) -> bool {
        match &self.operand {
            Operand::Amount(wanted) => amount != UNSET && self.cmp.holds(amount.cmp(wanted)),
            Operand::Bool(wanted) => self.cmp.holds((amount == 1).cmp(wanted)),
            Operand::Str(wanted) => match strs {
                None => false,
                // A string array is unequal only when none of its values is the one named.
                Some(values) if self.cmp == Cmp::Ne => !values.contains(wanted),
                Some(values) => values.iter().any(|v| self.cmp.holds(v.as_str().cmp(wanted))),
            },
            Operand::Never => false,
        }
    }

    /// The condition as the chunk wrote it, less the name: `!=green`, `>=16`.
    pub(crate) fn asked(&self, text: impl Fn(ResId, i64) -> String) -> String {
        let value = match &self.operand {
            Operand::Amount(amount) => text(self.id, *amount),
            Operand::Str(value) => value.clone(),
            Operand::Bool(value) => if *value { "True" } else { "False" }.to_string(),
            Operand::Never => "?".to_string(),
        };
        format!("{}{value}", self.cmp)
    }
}

/// A job's `nfilter`, its terms compiled.
#[derive(Clone, Debug)]
pub(crate) struct NodeFilter {
    filter: NFilter,
    terms: Vec<Cond>,
}

impl NodeFilter {
    /// Compiles a filter text; `None` when it does not parse (the server refuses such a
    /// text, so only a changed grammar could bring one).
    pub(crate) fn compile(res: &mut ResourceTable, text: &str) -> Option<NodeFilter> {
        let filter = NFilter::parse(text).ok()?;
        let terms = filter.terms().iter().map(|t| Cond::compile(res, &t.resource, t.cmp, &t.value)).collect();
        Some(NodeFilter { filter, terms })
    }

    /// Whether a vnode passes, given how to test one condition on it.
    pub(crate) fn passes(&self, holds: impl Fn(&Cond) -> bool) -> bool {
        self.filter.eval(|i| self.terms.get(i).is_some_and(&holds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_compares_as_its_values_do() {
        let mut res = ResourceTable::default();
        let cores = Cond::compile(&mut res, "cores", Cmp::Ge, "16");
        assert!(cores.holds(16, None) && cores.holds(32, None) && !cores.holds(8, None));
        assert!(!cores.holds(UNSET, None), "unset meets no condition");
        let mem = Cond::compile(&mut res, "mem", Cmp::Gt, "1gb");
        assert!(mem.holds(2 * 1024 * 1024, None) && !mem.holds(1024 * 1024, None));
        let ver = Cond::compile(&mut res, "ver", Cmp::Gt, "ver_045");
        let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(ver.holds(UNSET, Some(&strs(&["ver_12"]))), "byte order: ver_12 > ver_045");
        assert!(!ver.holds(UNSET, Some(&strs(&["ver_012"]))));
        assert!(!ver.holds(UNSET, None));
        let color = Cond::compile(&mut res, "color", Cmp::Ne, "green");
        assert!(color.holds(UNSET, Some(&strs(&["blue"]))));
        assert!(!color.holds(UNSET, Some(&strs(&["green"]))));
        assert!(!color.holds(UNSET, Some(&strs(&["blue", "green"]))), "a string array naming it is not unequal");
        assert!(!color.holds(UNSET, None), "unset is not unequal either");
        let fast = Cond::compile(&mut res, "fast", Cmp::Ne, "True");
        assert!(fast.holds(0, None) && fast.holds(UNSET, None) && !fast.holds(1, None));
        let never = Cond::compile(&mut res, "cores", Cmp::Lt, "lots");
        assert!(!never.holds(1, None));
        assert_eq!(color.asked(|_, a| a.to_string()), "!=green");
    }

    #[test]
    fn a_filter_tests_its_terms_on_a_node() {
        let mut res = ResourceTable::default();
        res.intern("os_ver", "rhel7");
        let filter = NodeFilter::compile(
            &mut res,
            "resources_available['os_ver']>=rhel6 and not resources_available['color']=='blue'",
        )
        .unwrap();
        let os = res.get("os_ver").unwrap();
        let node = |os_ver: &str, color: Option<&str>| {
            let values = [os_ver.to_string()];
            let colors: Vec<String> = color.into_iter().map(str::to_string).collect();
            filter.passes(|c| {
                if c.id == os {
                    c.holds(UNSET, Some(&values))
                } else {
                    c.holds(UNSET, color.map(|_| colors.as_slice()))
                }
            })
        };
        assert!(node("rhel7", Some("red")));
        assert!(node("rhel6", None));
        assert!(!node("rhel7", Some("blue")));
        assert!(!node("rhel5", None));
        assert!(NodeFilter::compile(&mut res, "os.system('id')").is_none());
    }
}
