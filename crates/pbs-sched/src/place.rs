//! Where a job's chunks go: the quick test against the sums of a node set (OpenPBS's
//! `resresv_can_fit_nodepart`, which gives the `(R: A: T:)` comments and tells "Not
//! Running" from "Can Never Run"), and the node search by `place` (free, pack, scatter,
//! vscatter, excl/exclhost/shared, group=RES) with the node's `sharing`.
//!
//! The search only reads the cycle state; the caller books what it returns, so a failed
//! search needs no undo.

use pbs_core::select::Arrangement;
use pbs_core::sharing::{is_excl, is_exclhost};

use crate::condition::Cond;
use crate::mirror::{Node, Request, Wanted};
use crate::reason::{Failure, Reason};
use crate::resources::{ResId, UNSET, amount_of, format_amount};
use crate::world::{Alloc, World};

/// The sums of a node set, as the quick test reads them.
pub(crate) struct SetView<'a> {
    pub(crate) nodes: &'a [u32],
    pub(crate) free_nodes: u32,
    pub(crate) avail: &'a [i64],
    pub(crate) assigned: &'a [i64],
}

fn zero_if_unset(value: i64) -> i64 {
    if value == UNSET { 0 } else { value }
}

/// Checks one consumable against a set's sums: `(R: .. A: .. T: ..)` on failure.
fn check_amount(w: &World<'_>, set: &SetView<'_>, id: ResId, wanted: i64, total: bool) -> Result<(), Reason> {
    if wanted == 0 {
        return Ok(());
    }
    let avail_sum = zero_if_unset(amount_of(set.avail, id));
    let assigned_sum = zero_if_unset(amount_of(set.assigned, id));
    let avail = if total { avail_sum } else { (avail_sum - assigned_sum).max(0) };
    if avail >= wanted {
        return Ok(());
    }
    let kind = w.m.res.kind(id);
    let detail = format!(
        "(R: {} A: {} T: {})",
        format_amount(kind, wanted),
        format_amount(kind, avail),
        format_amount(kind, avail_sum)
    );
    Err(Reason::InsufficientResource(w.m.res.name(id).to_string(), detail))
}

/// OpenPBS's `resresv_can_fit_nodepart`: enough (free) nodes, enough of each consumable
/// over the set for the whole job and for each chunk, and every non-consumable asked for
/// present somewhere. With `total`, compares with what the set has at all.
pub(crate) fn can_fit_set(w: &World<'_>, set: &SetView<'_>, req: &Request, total: bool) -> Result<(), Reason> {
    let no_nodes = || if total { Reason::NoTotalNodes } else { Reason::NoFreeNodes };
    let count = if total { u32::try_from(set.nodes.len()).unwrap_or(u32::MAX) } else { set.free_nodes };
    if count == 0 {
        return Err(no_nodes());
    }
    if matches!(req.arrangement, Arrangement::Scatter | Arrangement::VScatter) && u64::from(count) < req.counts.chunks {
        return Err(no_nodes());
    }
    for &(id, wanted) in &req.select_totals {
        check_amount(w, set, id, wanted, total)?;
    }
    for chunk in &req.chunks {
        for (id, wanted) in &chunk.noncons {
            let name = || w.m.res.name(*id).to_string();
            match wanted {
                Wanted::Str(value) => {
                    let values = w.set_strs(set.nodes, *id);
                    if !values.contains(value) {
                        return Err(Reason::InsufficientResource(name(), format!("({value} != {})", values.join(","))));
                    }
                }
                Wanted::Bool(value) => {
                    let (has_true, has_false) = w.set_bools(set.nodes, *id);
                    if (*value && !has_true) || (!*value && !has_false) {
                        let (asked, have) = if *value { ("True", "False") } else { ("False", "True") };
                        return Err(Reason::InsufficientResource(name(), format!("({asked} != {have})")));
                    }
                }
            }
        }
        for &(id, wanted) in &chunk.cons {
            check_amount(w, set, id, wanted, total)?;
        }
        for cond in &chunk.conds {
            if !set.nodes.iter().any(|&slot| w.m.node(slot).is_some_and(|node| meets(node, cond))) {
                let asked = cond.asked(|id, amount| format_amount(w.m.res.kind(id), amount));
                let have = w.set_strs(set.nodes, cond.id).join(",");
                let detail = if have.is_empty() { format!("(R: {asked})") } else { format!("(R: {asked} A: {have})") };
                return Err(Reason::InsufficientResource(w.m.res.name(cond.id).to_string(), detail));
            }
        }
    }
    // An `nfilter` no vnode of the set passes: with `total`, the job can never run here.
    if let Some(filter) = &req.filter
        && !set.nodes.iter().any(|&slot| w.m.node(slot).is_some_and(|node| filter.passes(|c| meets(node, c))))
    {
        return Err(Reason::NoNodeResources);
    }
    // Against what the set has at all, once the resources passed (their shortfall is the
    // better reason): counts past it can never run, and no chunk of them is placed.
    let ncpus = w.ncpus.map_or(0, |id| zero_if_unset(amount_of(set.avail, id)));
    check_counts(req, u64::try_from(set.nodes.len()).unwrap_or(u64::MAX), u64::try_from(ncpus).unwrap_or(0))
}

/// Whether `vnodes` vnodes with `ncpus` cpus between them can ever hold the request's
/// chunks and processes (`pbs_core::capacity`).
fn check_counts(req: &Request, vnodes: u64, ncpus: u64) -> Result<(), Reason> {
    let slots = pbs_core::capacity::Slots::of(vnodes, ncpus);
    match req.counts.check(slots) {
        Ok(()) => Ok(()),
        Err(pbs_core::capacity::Exceeds::Chunks { .. }) => Err(Reason::NoTotalNodes),
        Err(pbs_core::capacity::Exceeds::Mpiprocs { asked, slots }) => {
            Err(Reason::InsufficientResource("mpiprocs".into(), format!("(R: {asked} A: {slots} T: {slots})")))
        }
    }
}

/// Whether a vnode meets one condition of a chunk or of an `nfilter`.
fn meets(node: &Node, cond: &Cond) -> bool {
    cond.holds(amount_of(&node.avail, cond.id), node.str_values(cond.id))
}

/// What this job has already taken in the search (not yet booked in the world).
#[derive(Default)]
struct Local {
    taken: Vec<(u32, ResId, i64)>,
}

impl Local {
    fn get(&self, slot: u32, id: ResId) -> i64 {
        self.taken.iter().filter(|(s, r, _)| *s == slot && *r == id).map(|(_, _, a)| *a).sum()
    }
}

/// OpenPBS's `is_vnode_eligible`: exclusivity first, then the node state.
fn eligible(w: &World<'_>, slot: u32, req: &Request) -> Result<(), Reason> {
    match ineligible(w, slot, req) {
        None => Ok(()),
        Some(Ineligible::Missing) => Err(Reason::NoNodeResources),
        Some(Ineligible::NotExcl) => Err(Reason::NodeNotExcl),
        Some(Ineligible::State) => {
            let node = w.m.node(slot);
            let state = match node {
                Some(node) if node.free => {
                    if w.exclusive[slot as usize] {
                        "job-exclusive"
                    } else {
                        "job-busy"
                    }
                }
                Some(node) => &node.state,
                None => "",
            };
            Err(Reason::InvalidNodeState(state.to_string()))
        }
    }
}

/// Why a node may not take a chunk of the job, as [`eligible`] says it without building
/// the reason's text: a search passes over every full node before a free one.
enum Ineligible {
    Missing,
    NotExcl,
    State,
}

fn ineligible(w: &World<'_>, slot: u32, req: &Request) -> Option<Ineligible> {
    let Some(node) = w.m.node(slot) else { return Some(Ineligible::Missing) };
    if is_excl(req.sharing, node.sharing) {
        let busy = if w.multi_vnode && is_exclhost(req.sharing, node.sharing) {
            w.hosts.get(node.host.as_str()).is_some_and(|v| v.iter().any(|s| w.njobs[*s as usize] > 0))
        } else {
            w.njobs[slot as usize] > 0
        };
        if busy {
            return Some(Ineligible::NotExcl);
        }
    }
    (!w.free[slot as usize]).then_some(Ineligible::State)
}

/// Whether one chunk fits on a node, as `is_vnode_eligible_chunk` then
/// `resources_avail_on_vnode` decide. The reason names the resource only: OpenPBS drops
/// the amounts for a single node's shortfall.
fn fits(w: &World<'_>, slot: u32, chunk: &crate::mirror::ChunkReq, local: &Local) -> Result<(), Reason> {
    let Some(node) = w.m.node(slot) else { return Err(Reason::NoNodeResources) };
    let short = |id: ResId| Reason::InsufficientResource(w.m.res.name(id).to_string(), String::new());
    for (id, wanted) in &chunk.noncons {
        let ok = match wanted {
            Wanted::Str(value) => node.str_values(*id).is_some_and(|values| values.contains(value)),
            Wanted::Bool(value) => (amount_of(&node.avail, *id) == 1) == *value,
        };
        if !ok {
            return Err(short(*id));
        }
    }
    for cond in &chunk.conds {
        if !meets(node, cond) {
            return Err(short(cond.id));
        }
    }
    for &(id, wanted) in &chunk.cons {
        if wanted == 0 {
            continue;
        }
        let avail = zero_if_unset(amount_of(&node.avail, id));
        if avail - w.assigned(slot, id) - local.get(slot, id) < wanted {
            return Err(short(id));
        }
    }
    Ok(())
}

/// How scatter keeps chunks apart.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Apart {
    No,
    Host,
    Vnode,
}

/// Places every chunk on `nodes` in order (OpenPBS's `eval_complex_selspec`): each chunk
/// on the first node that can hold it. On failure, the reason of the last node looked at.
fn place_chunks(w: &World<'_>, req: &Request, nodes: &[u32], apart: Apart) -> Result<Vec<Alloc>, Option<Reason>> {
    // Chunks that take no cpu could be placed without end: no more are placed than the
    // nodes have slots (`pbs_core::capacity`), whatever count the job asks for.
    // Summed only once the chunks placed reach the node count: the slots are at least
    // that many, so a job of few chunks (nearly all) never walks every node for it.
    let slots = || {
        let ncpus: i64 = w.ncpus.map_or(0, |id| {
            nodes
                .iter()
                .filter_map(|&slot| w.m.node(slot))
                .map(|n| zero_if_unset(amount_of(&n.avail, id)))
                .fold(0, i64::saturating_add)
        });
        pbs_core::capacity::Slots::of(nodes.len() as u64, u64::try_from(ncpus).unwrap_or(0))
    };
    let mut total_slots: Option<u64> = None;
    let mut local = Local::default();
    let mut allocs: Vec<Alloc> = Vec::new();
    let mut used_hosts: Vec<&str> = Vec::new();
    for chunk in &req.chunks {
        // Nodes before the last one used for this chunk could not hold it; resources only
        // shrink during a search, so they still cannot.
        let mut start = 0;
        for _ in 0..chunk.count {
            if allocs.len() as u64 >= nodes.len() as u64
                && allocs.len() as u64 >= *total_slots.get_or_insert_with(|| slots().0)
            {
                return Err(Some(Reason::NoTotalNodes));
            }
            let mut last_err: Option<Reason> = None;
            let mut found = None;
            for (i, &slot) in nodes.iter().enumerate().skip(start) {
                let Some(node) = w.m.node(slot) else { continue };
                match apart {
                    Apart::Vnode if allocs.iter().any(|a| a.node == slot) => continue,
                    Apart::Host if used_hosts.contains(&node.host.as_str()) => continue,
                    _ => {}
                }
                if ineligible(w, slot, req).is_some() {
                    continue;
                }
                match fits(w, slot, chunk, &local) {
                    Ok(()) => {
                        found = Some((i, slot));
                        break;
                    }
                    Err(reason) => last_err = Some(reason),
                }
            }
            let Some((i, slot)) = found else { return Err(last_err) };
            start = i;
            let taken: Vec<(ResId, i64)> = chunk.cons.clone();
            for &(id, amount) in &taken {
                local.taken.push((slot, id, amount));
            }
            if let Some(node) = w.m.node(slot) {
                used_hosts.push(node.host.as_str());
            }
            allocs.push(Alloc { node: slot, taken });
        }
    }
    Ok(allocs)
}

/// A placement: chunk allocations plus every node the job holds exclusively.
#[derive(Clone, Debug)]
pub(crate) struct Placed {
    pub(crate) allocs: Vec<Alloc>,
    pub(crate) exclusive: Vec<u32>,
}

/// The first node the job may not use, and why (OpenPBS's `check_node_array_eligibility`
/// error, reported when the search itself gives none).
fn first_ineligible(w: &World<'_>, req: &Request, nodes: &[u32]) -> Option<Reason> {
    nodes.iter().find_map(|&slot| eligible(w, slot, req).err())
}

/// Searches `nodes` for the job according to its place.
fn search(w: &World<'_>, req: &Request, nodes: &[u32]) -> Result<Vec<Alloc>, Option<Reason>> {
    match req.arrangement {
        Arrangement::Pack if req.counts.chunks > 1 => {
            // All chunks on one host: try the hosts in node order, keep the first failure.
            let mut hosts: Vec<(&str, Vec<u32>)> = Vec::new();
            for &slot in nodes {
                let Some(node) = w.m.node(slot) else { continue };
                match hosts.iter_mut().find(|(h, _)| *h == node.host) {
                    Some((_, list)) => list.push(slot),
                    None => hosts.push((node.host.as_str(), vec![slot])),
                }
            }
            let mut first_err: Option<Reason> = None;
            for (_, host_nodes) in &hosts {
                match place_chunks(w, req, host_nodes, Apart::No) {
                    Ok(allocs) => return Ok(allocs),
                    Err(err) => {
                        if first_err.is_none() {
                            first_err = err;
                        }
                    }
                }
            }
            Err(first_err)
        }
        Arrangement::Scatter => place_chunks(w, req, nodes, Apart::Host),
        Arrangement::VScatter => place_chunks(w, req, nodes, Apart::Vnode),
        Arrangement::Free | Arrangement::Pack => place_chunks(w, req, nodes, Apart::No),
    }
}

/// Finds nodes for a job among `nodes` (its pool), `group=RES` placement sets included.
/// An `nfilter` takes out the vnodes it does not pass first, so like-node groups are made
/// of the vnodes it passes only.
pub(crate) fn find_nodes(w: &World<'_>, req: &Request, nodes: &[u32]) -> Result<Placed, Failure> {
    let passed: Vec<u32>;
    let nodes = match &req.filter {
        None => nodes,
        Some(filter) => {
            passed = nodes
                .iter()
                .copied()
                .filter(|&slot| w.m.node(slot).is_some_and(|node| filter.passes(|c| meets(node, c))))
                .collect();
            &passed
        }
    };
    let found = match req.group {
        None => search(w, req, nodes),
        Some(group) => search_groups(w, req, nodes, group),
    };
    match found {
        Ok(allocs) => {
            let mut exclusive: Vec<u32> = Vec::new();
            for alloc in &allocs {
                let Some(node) = w.m.node(alloc.node) else { continue };
                if !is_excl(req.sharing, node.sharing) {
                    continue;
                }
                if w.multi_vnode && is_exclhost(req.sharing, node.sharing) {
                    for &slot in w.hosts.get(node.host.as_str()).map(Vec::as_slice).unwrap_or(&[]) {
                        if !exclusive.contains(&slot) {
                            exclusive.push(slot);
                        }
                    }
                } else if !exclusive.contains(&alloc.node) {
                    exclusive.push(alloc.node);
                }
            }
            Ok(Placed { allocs, exclusive })
        }
        Err(reason) => {
            let reason = reason.or_else(|| first_ineligible(w, req, nodes)).unwrap_or(Reason::NoNodeResources);
            Err(Failure::not_run(reason))
        }
    }
}

/// `place=group=RES`: all chunks in one set of nodes sharing a value of RES, trying the
/// sets in node order; a job no set could ever hold may span them (OpenPBS's default,
/// `do_not_span_psets` False).
fn search_groups(w: &World<'_>, req: &Request, nodes: &[u32], group: ResId) -> Result<Vec<Alloc>, Option<Reason>> {
    let mut sets: Vec<(&str, Vec<u32>)> = Vec::new();
    for &slot in nodes {
        let Some(node) = w.m.node(slot) else { continue };
        let Some(value) = node.str_values(group).and_then(|v| v.first()) else { continue };
        match sets.iter_mut().find(|(v, _)| *v == value.as_str()) {
            Some((_, list)) => list.push(slot),
            None => sets.push((value.as_str(), vec![slot])),
        }
    }
    let name = w.m.res.name(group);
    let mut last_err: Option<Reason> = None;
    let mut can_ever_fit = false;
    for (value, set_nodes) in &sets {
        let mut avail: Vec<i64> = Vec::new();
        let mut assigned: Vec<i64> = Vec::new();
        let mut free_nodes = 0u32;
        for &slot in set_nodes {
            let Some(node) = w.m.node(slot) else { continue };
            let free = w.free[slot as usize];
            free_nodes += u32::from(free);
            for &(id, _) in &req.select_totals {
                let node_avail = zero_if_unset(amount_of(&node.avail, id));
                let node_assigned = w.assigned(slot, id);
                let contributed = if free { node_avail } else { node_assigned };
                crate::resources::add_amounts(&mut avail, &[(id, contributed)], 1);
                crate::resources::add_amounts(&mut assigned, &[(id, node_assigned)], 1);
            }
        }
        let view = SetView { nodes: set_nodes, free_nodes, avail: &avail, assigned: &assigned };
        match can_fit_set(w, &view, req, false) {
            Ok(()) => match search(w, req, set_nodes) {
                Ok(allocs) => return Ok(allocs),
                Err(err) => last_err = err.or(last_err),
            },
            Err(_) => last_err = Some(Reason::SetTooSmall("Placement", format!("{name}={value}"))),
        }
        if !can_ever_fit && can_fit_set(w, &view, req, true).is_ok() {
            can_ever_fit = true;
        }
    }
    if !can_ever_fit {
        return search(w, req, nodes);
    }
    Err(last_err)
}
