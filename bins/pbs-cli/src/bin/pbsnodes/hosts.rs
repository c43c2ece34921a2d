//! Hosts made from vnodes, as OpenPBS's `pbs_stathost` makes them on the client side: a
//! host is the set of vnodes sharing a `resources_available.host` value. A host with one
//! vnode is that vnode, unchanged; a host with several is one object named after the host,
//! whose attributes are the vnodes' common values (`<various>` where they differ, `jobs`
//! joined), whose consumable resources (those that appear in `resources_assigned`
//! anywhere) are summed, sizes in kb.

use pbs_proto::{Attr, StatusObject};

const AVAILABLE: &str = "resources_available";
const ASSIGNED: &str = "resources_assigned";

/// What differing values across a host's vnodes show as.
const VARIOUS: &str = "<various>";

/// The attributes of a multi-vnode host, in the order OpenPBS lists them (`attr_names` of
/// pbs_stathost.c); `priority` is this suite's spelling of OpenPBS's `Priority`.
const HOST_ATTRS: &[&str] = &[
    "Mom",
    "Port",
    "pbs_version",
    "ntype",
    "state",
    "pcpus",
    "Priority",
    "priority",
    "jobs",
    "max_running",
    "max_user_run",
    "max_group_run",
    "no_tasks",
    "pnames",
    "resv",
    "queue",
    "comment",
    "resv_enable",
    "no_multinode_jobs",
    "sharing",
    "provision_enable",
    "current_aoe",
    "license",
    "license_info",
    "topology_info",
    "vnode_pool",
    "power_provisioning",
    "current_eoe",
    "poweroff_eligible",
    "last_state_change_time",
    "last_used_time",
];

/// A resource seen in `resources_available` or `resources_assigned` of any vnode.
#[derive(Debug)]
struct Consumable {
    resource: String,
    /// Seen in `resources_assigned`: summed rather than compared.
    consumable: bool,
    /// Some value is a size: sums are in kb and printed with `kb`.
    kb: bool,
    /// Some host had a value. Like OpenPBS, never cleared from one host to the next.
    set: bool,
    /// This host's value of a non-consumable resource.
    available_text: Option<String>,
    available_sum: i64,
    assigned_sum: i64,
}

/// The vnodes, and what is known across them.
pub(crate) struct Hosts {
    vnodes: Vec<StatusObject>,
    /// Host names in order of first appearance, with their vnodes' indexes.
    hosts: Vec<(String, Vec<usize>)>,
    consumables: Vec<Consumable>,
}

fn split(name: &str) -> (&str, Option<&str>) {
    match name.split_once('.') {
        Some((base, resource)) => (base, Some(resource)),
        None => (name, None),
    }
}

/// The value of `base.resource` on a vnode, names compared without case as OpenPBS does.
fn resource_value<'a>(vnode: &'a StatusObject, base: &str, resource: &str) -> Option<&'a str> {
    vnode.attrs.iter().find_map(|a| match split(&a.0) {
        (b, Some(r)) if b.eq_ignore_ascii_case(base) && r.eq_ignore_ascii_case(resource) => Some(a.1.as_str()),
        _ => None,
    })
}

/// Whether a value carries a size unit letter (`strpbrk(value, "kKmMgGtTpPbBwW")`).
fn has_size_letter(text: &str) -> bool {
    text.contains(|c: char| "kKmMgGtTpPbBwW".contains(c))
}

/// `strtol(text, &rest, 10)`: the leading integer (0 if none) and what follows it.
fn strtol(text: &str) -> (i64, &str) {
    let trimmed = text.trim_start();
    let bytes = trimmed.as_bytes();
    let mut end = usize::from(matches!(bytes.first(), Some(b'-' | b'+')));
    let digits_start = end;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    if end == digits_start {
        return (0, text);
    }
    let value = trimmed[..end].parse::<i64>().unwrap_or(if bytes[0] == b'-' { i64::MIN } else { i64::MAX });
    (value, &trimmed[end..])
}

impl Hosts {
    /// Groups `vnodes` (all of the server's, in its order) into hosts.
    pub(crate) fn new(vnodes: Vec<StatusObject>) -> Hosts {
        let mut hosts: Vec<(String, Vec<usize>)> = Vec::new();
        let mut consumables: Vec<Consumable> = Vec::new();
        for (index, vnode) in vnodes.iter().enumerate() {
            if let Some(host) = resource_value(vnode, AVAILABLE, "host") {
                match hosts.iter_mut().find(|(name, _)| name.eq_ignore_ascii_case(host)) {
                    Some((_, members)) => members.push(index),
                    None => hosts.push((host.to_string(), vec![index])),
                }
            }
            for attr in &vnode.attrs {
                let (base, Some(resource)) = split(&attr.0) else { continue };
                let assigned = match base {
                    AVAILABLE => false,
                    ASSIGNED => true,
                    _ => continue,
                };
                // Indirect resources (`@vnode`) count for nothing.
                if attr.1.contains('@') {
                    continue;
                }
                let at = match consumables.iter().position(|c| c.resource.eq_ignore_ascii_case(resource)) {
                    Some(at) => at,
                    None => {
                        consumables.push(Consumable {
                            resource: resource.to_string(),
                            consumable: false,
                            kb: false,
                            set: false,
                            available_text: None,
                            available_sum: 0,
                            assigned_sum: 0,
                        });
                        consumables.len() - 1
                    }
                };
                let entry = &mut consumables[at];
                entry.consumable |= assigned;
                entry.kb |= has_size_letter(&attr.1);
            }
        }
        Hosts { vnodes, hosts, consumables }
    }

    /// Every host, in order of first appearance.
    pub(crate) fn all(&mut self) -> Vec<StatusObject> {
        let names: Vec<String> = self.hosts.iter().map(|(name, _)| name.clone()).collect();
        names.iter().filter_map(|name| self.host(name)).collect()
    }

    /// The host named `name` (without regard to case), or `None` if no vnode is on it.
    pub(crate) fn host(&mut self, name: &str) -> Option<StatusObject> {
        let members = self.hosts.iter().find(|(host, _)| host.eq_ignore_ascii_case(name))?.1.clone();
        if let [only] = members.as_slice() {
            return self.vnodes.get(*only).cloned();
        }
        self.sum_resources(&members);
        let mut attrs = self.collective(&members);
        for c in self.consumables.iter().filter(|c| c.set) {
            let value = if c.consumable { Some(sized(c.available_sum, c.kb)) } else { c.available_text.clone() };
            if let Some(value) = value {
                attrs.push(Attr(format!("{AVAILABLE}.{}", c.resource), value));
            }
        }
        for c in self.consumables.iter().filter(|c| c.set && c.consumable) {
            attrs.push(Attr(format!("{ASSIGNED}.{}", c.resource), sized(c.assigned_sum, c.kb)));
        }
        Some(StatusObject { name: name.to_string(), attrs })
    }

    /// Sums (or compares) each resource over the host's vnodes.
    fn sum_resources(&mut self, members: &[usize]) {
        for c in &mut self.consumables {
            c.available_text = None;
            c.available_sum = 0;
            c.assigned_sum = 0;
        }
        for &index in members {
            let Some(vnode) = self.vnodes.get(index) else { continue };
            for c in &mut self.consumables {
                if let Some(value) = resource_value(vnode, AVAILABLE, &c.resource) {
                    add(c, true, value);
                }
                if let Some(value) = resource_value(vnode, ASSIGNED, &c.resource) {
                    add(c, false, value);
                }
            }
        }
    }

    /// The host's other attributes from its vnodes'.
    fn collective(&self, members: &[usize]) -> Vec<Attr> {
        let mut values: Vec<Option<String>> = vec![None; HOST_ATTRS.len()];
        for &index in members {
            let Some(vnode) = self.vnodes.get(index) else { continue };
            for attr in &vnode.attrs {
                let Some(at) = HOST_ATTRS.iter().position(|n| *n == attr.0) else { continue };
                let slot = &mut values[at];
                match slot {
                    None => *slot = Some(attr.1.clone()),
                    Some(jobs) if attr.0 == "jobs" => {
                        jobs.push_str(", ");
                        jobs.push_str(&attr.1);
                    }
                    Some(current) if current != VARIOUS && *current != attr.1 => *current = VARIOUS.to_string(),
                    Some(_) => {}
                }
            }
        }
        HOST_ATTRS.iter().zip(values).filter_map(|(name, value)| Some(Attr(name.to_string(), value?))).collect()
    }
}

/// Adds one vnode's value into a resource's totals (OpenPBS's `sum_a_resource`).
fn add(c: &mut Consumable, available: bool, value: &str) {
    if !c.consumable {
        if !available {
            return;
        }
        match &c.available_text {
            None => c.available_text = Some(value.to_string()),
            Some(text) if !text.eq_ignore_ascii_case(value) => c.available_text = Some(VARIOUS.to_string()),
            Some(_) => {}
        }
        c.set = true;
        return;
    }
    if value.contains('@') {
        return;
    }
    let (mut amount, rest) = strtol(value);
    if has_size_letter(rest) {
        // To kb; `p` shifts like `t`, as in OpenPBS.
        amount = match rest.chars().next() {
            Some('m' | 'M') => amount << 10,
            Some('g' | 'G') => amount << 20,
            Some('t' | 'T' | 'p' | 'P') => amount << 30,
            Some('k' | 'K') => amount,
            _ => amount >> 10,
        };
        if !c.kb {
            c.available_sum <<= 10;
            c.assigned_sum <<= 10;
            c.kb = true;
        }
    }
    if available {
        c.available_sum = c.available_sum.saturating_add(amount);
    } else {
        c.assigned_sum = c.assigned_sum.saturating_add(amount);
    }
    c.set = true;
}

fn sized(amount: i64, kb: bool) -> String {
    if kb { format!("{amount}kb") } else { amount.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vnode(name: &str, attrs: &[(&str, &str)]) -> StatusObject {
        StatusObject { name: name.into(), attrs: attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect() }
    }

    #[test]
    fn a_single_vnode_host_is_the_vnode() {
        let v = vnode("n1", &[("Mom", "h"), ("state", "free"), ("resources_available.host", "n1")]);
        let mut hosts = Hosts::new(vec![v.clone()]);
        assert_eq!(hosts.all(), vec![v.clone()]);
        assert_eq!(hosts.host("N1"), Some(v));
        assert_eq!(hosts.host("n2"), None);
    }

    #[test]
    fn vnodes_without_a_host_are_no_host() {
        let mut hosts = Hosts::new(vec![vnode("n1", &[("state", "free")])]);
        assert!(hosts.all().is_empty());
    }

    #[test]
    fn several_vnodes_make_one_host() {
        let a = vnode(
            "big[0]",
            &[
                ("Mom", "big"),
                ("ntype", "PBS"),
                ("state", "free"),
                ("jobs", "1.s/0"),
                ("resources_available.arch", "linux"),
                ("resources_available.host", "big"),
                ("resources_available.mem", "1gb"),
                ("resources_available.ncpus", "2"),
                ("resources_available.vnode", "big[0]"),
                ("resources_assigned.mem", "512mb"),
                ("resources_assigned.ncpus", "1"),
                ("sharing", "default_shared"),
            ],
        );
        let b = vnode(
            "big[1]",
            &[
                ("Mom", "big"),
                ("ntype", "PBS"),
                ("state", "job-busy"),
                ("jobs", "2.s/0, 2.s/1"),
                ("resources_available.arch", "linux"),
                ("resources_available.host", "big"),
                ("resources_available.mem", "2097152kb"),
                ("resources_available.ncpus", "2"),
                ("resources_available.vnode", "big[1]"),
                ("resources_assigned.ncpus", "2"),
                ("sharing", "default_shared"),
            ],
        );
        let mut hosts = Hosts::new(vec![a, b]);
        let host = hosts.host("big").unwrap();
        let attrs: Vec<(&str, &str)> = host.attrs.iter().map(|a| (a.0.as_str(), a.1.as_str())).collect();
        assert_eq!(host.name, "big");
        assert_eq!(
            attrs,
            vec![
                ("Mom", "big"),
                ("ntype", "PBS"),
                ("state", "<various>"),
                ("jobs", "1.s/0, 2.s/0, 2.s/1"),
                ("sharing", "default_shared"),
                ("resources_available.arch", "linux"),
                ("resources_available.host", "big"),
                ("resources_available.mem", "3145728kb"),
                ("resources_available.ncpus", "4"),
                ("resources_available.vnode", "<various>"),
                ("resources_assigned.mem", "524288kb"),
                ("resources_assigned.ncpus", "3"),
            ]
        );
    }

    #[test]
    fn strtol_reads_like_c() {
        assert_eq!(strtol("512mb"), (512, "mb"));
        assert_eq!(strtol("  -3x"), (-3, "x"));
        assert_eq!(strtol("kb"), (0, "kb"));
    }
}
