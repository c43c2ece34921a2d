//! qmgr's requests (create, delete, set, unset of server, queue, node, scheduler, resource
//! and hook objects) and the status of those objects.

use pbs_core::attr::{AttrType, ObjectKind, Privilege, Write};
use pbs_core::resource::ResourceDef;
use pbs_core::{Pbse, defaults};
use pbs_proto::{Attr, MgrAttr, MgrCommand, MgrObject, MgrOp, StatusObject};

use crate::attrlist::{AttrList, resolve};
use crate::effects::Effects;
use crate::error::ReqError;
use crate::request::Ctx;
use crate::request::attrs::normalize_value;
use crate::request::filter::{filtered, wanted};
use crate::state::{Named, PBS_VERSION, State, set_named, store_kind};
use crate::store::StoreOp;

/// One kind of named object qmgr manages: everything that differs between queues, nodes,
/// schedulers and hooks, in one entry. A new kind (reservations next) is an entry here, its
/// attribute table and initial attributes in pbs-core (`ObjectKind`, `defaults`), its list
/// in [`State::named`], and its own module for what it does beyond qmgr.
pub struct NamedKind {
    /// Its attribute table and store kind.
    pub kind: ObjectKind,
    /// The answer to a name that does not exist.
    pub unknown: fn(&str) -> ReqError,
    /// The answer to creating a name that exists.
    pub exists: Pbse,
    /// The object a request naming none means (`default` for schedulers).
    pub implied: Option<&'static str>,
    /// Refuses to delete an object something still depends on.
    pub may_delete: fn(&State, &str) -> Result<(), ReqError>,
    /// What deleting it changes elsewhere, and the writes that takes.
    pub deleted: fn(&mut State, &str) -> Vec<StoreOp>,
    /// What setting or unsetting `attrs` on it changes elsewhere, and the writes.
    pub changed: fn(&mut State, &str, &[MgrAttr]) -> Vec<StoreOp>,
    /// Attributes its status computes rather than stores, for the names asked for.
    pub computed: fn(&State, &str, &[String]) -> Computed,
}

/// Attribute names and values computed for a status.
pub type Computed = Vec<(String, String)>;

/// The named kinds, in qmgr's order.
pub const NAMED_KINDS: [NamedKind; 4] = [
    NamedKind {
        kind: ObjectKind::Queue,
        unknown: |_| ReqError::new(Pbse::UNKQUE),
        exists: Pbse::QUEEXIST,
        implied: None,
        may_delete: |state, name| {
            if state.jobs.values().any(|j| *j.queue == *name) {
                return Err(ReqError::new(Pbse::OBJBUSY));
            }
            Ok(())
        },
        deleted: |state, name| {
            crate::node::assigned::forget_queue(state, name);
            if state.server_attr("default_queue", None) != Some(name) {
                return Vec::new();
            }
            state.server.unset(const { ObjectKind::Server.index_of("default_queue") }, None);
            vec![state.server_op()]
        },
        changed: |_, _, _| Vec::new(),
        computed: |state, name, filter| {
            let mut computed = crate::node::assigned::status(state, Some(name));
            if wanted(filter, "total_jobs") || wanted(filter, "state_count") {
                let counts = state.state_counts(Some(name));
                computed
                    .extend([("total_jobs".into(), counts.total.to_string()), ("state_count".into(), counts.text())]);
            }
            computed
        },
    },
    NamedKind {
        kind: ObjectKind::Node,
        unknown: |_| ReqError::new(Pbse::UNKNODE),
        exists: Pbse::NODEEXIST,
        implied: None,
        may_delete: |state, name| {
            let running = state.node_rt.get(name).is_some_and(|rt| !rt.jobs.is_empty());
            if running || crate::job::faults::holds_suspended(state, name) {
                return Err(ReqError::new(Pbse::OBJBUSY));
            }
            Ok(())
        },
        deleted: |_, _| Vec::new(),
        changed: |_, _, _| Vec::new(),
        computed: |_, _, _| Vec::new(),
    },
    NamedKind {
        kind: ObjectKind::Sched,
        unknown: |_| ReqError::new(Pbse::UNKSCHED),
        exists: Pbse::SCHEDEXIST,
        implied: Some("default"),
        may_delete: |_, name| {
            if name == "default" {
                return Err(ReqError::new(Pbse::SCHED_NO_DEL));
            }
            Ok(())
        },
        deleted: |_, _| Vec::new(),
        changed: |state, name, attrs| {
            if name != "default" {
                return Vec::new();
            }
            sync_scheduling(state, ObjectKind::Sched, attrs)
        },
        computed: |_, _, _| Vec::new(),
    },
    NamedKind {
        kind: ObjectKind::Hook,
        unknown: crate::hooks::admin::unknown,
        exists: Pbse::HOOKERROR,
        implied: None,
        may_delete: |_, _| Ok(()),
        deleted: crate::hooks::admin::deleted,
        changed: crate::hooks::admin::changed,
        computed: |_, _, _| Vec::new(),
    },
];

/// The entry of a named kind.
pub fn named_kind(kind: ObjectKind) -> Option<&'static NamedKind> {
    NAMED_KINDS.iter().find(|k| k.kind == kind)
}

fn unknown_object(kind: ObjectKind, name: &str) -> ReqError {
    match named_kind(kind) {
        Some(named) => (named.unknown)(name),
        None => ReqError::new(Pbse::UNKRESC),
    }
}

/// Handles a Manager request. A change to hooks that changes the set of execution hooks
/// sends the new set to the moms whose links are up.
pub fn manager(
    state: &mut State,
    ctx: &Ctx<'_>,
    command: MgrCommand,
    object: MgrObject,
    names: &[String],
    attrs: &[MgrAttr],
) -> Result<Effects, ReqError> {
    let kind = object.kind();
    if kind != ObjectKind::Hook {
        return manage(state, ctx, command, object, names, attrs).map(Effects::ops);
    }
    crate::hooks::admin::check_admin(state, ctx)?;
    let before = crate::hooks::mom::mom_hooks(state);
    let ops = manage(state, ctx, command, object, names, attrs)?;
    Ok(Effects { ops, to_moms: crate::hooks::mom::changed(state, &before), ..Effects::default() })
}

fn manage(
    state: &mut State,
    ctx: &Ctx<'_>,
    command: MgrCommand,
    object: MgrObject,
    names: &[String],
    attrs: &[MgrAttr],
) -> Result<Vec<StoreOp>, ReqError> {
    let kind = object.kind();
    // Whatever qmgr changes, the scheduler gets every object's new view and a cycle.
    state.changes.objects = true;
    state.changes.cycle = true;
    // Operators may set a few attributes; everything else needs a manager.
    let structural = matches!(command, MgrCommand::Create | MgrCommand::Delete);
    if ctx.privilege < Privilege::Operator || (structural && ctx.privilege < Privilege::Manager) {
        return Err(ReqError::new(Pbse::PERM));
    }
    if kind == ObjectKind::Resource {
        // Resource definitions decide who may set what on every job: managers' alone.
        if ctx.privilege < Privilege::Manager {
            return Err(ReqError::new(Pbse::PERM));
        }
        return manage_resource(state, command, names, attrs);
    }
    if kind == ObjectKind::Server {
        if structural {
            return Err(ReqError::new(Pbse::IVALREQ));
        }
        let mut list = state.server.clone();
        apply_attrs(state, ctx, kind, &mut list, command, attrs)?;
        if let Some(queue) = list.get_named(ObjectKind::Server, "default_queue", None) {
            if state.queue_index(queue).is_none() {
                return Err(ReqError::new(Pbse::UNKQUE));
            }
        }
        if let Some(max) = list.get_named(ObjectKind::Server, "max_job_sequence_id", None) {
            if !max.parse::<u64>().is_ok_and(|m| (9_999_999..=999_999_999_999).contains(&m)) {
                return Err(ReqError::new(Pbse::INVALID_MAX_JOB_SEQUENCE_ID));
            }
        }
        let eligible_before = crate::state::accrual::enabled(state);
        state.server = list;
        let mut ops = vec![state.server_op()];
        ops.extend(sync_scheduling(state, ObjectKind::Server, attrs));
        if !eligible_before && crate::state::accrual::enabled(state) {
            ops.extend(crate::state::accrual::enable_all(state, ctx.now));
        }
        return Ok(ops);
    }
    let Some(named) = named_kind(kind) else { return Err(ReqError::new(Pbse::IVALREQ)) };
    let implied: Vec<String> = named.implied.iter().map(|n| n.to_string()).collect();
    let names = if names.is_empty() { &implied } else { names };
    if names.is_empty() {
        return Err(ReqError::new(Pbse::IVALREQ));
    }
    let mut ops = Vec::new();
    for name in names {
        let position = state.named(kind).iter().position(|n| n.name == *name);
        match command {
            MgrCommand::Create => {
                if position.is_some() {
                    if kind == ObjectKind::Hook {
                        return Err(ReqError::with_message(
                            named.exists,
                            format!("hook name '{name}' already registered, try another name"),
                        ));
                    }
                    return Err(ReqError::new(named.exists));
                }
                crate::size_limits::check_object_name(kind, name)?;
                if !valid_object_name(name) {
                    return Err(ReqError::new(Pbse::IVAL_OBJ_NAME));
                }
                let mut list = AttrList::new();
                // The attributes OpenPBS gives a new object of this kind.
                for (attr, value) in defaults::new_object(kind, name, &state.host) {
                    set_named(&mut list, kind, attr, &value, &mut state.interner);
                }
                apply_attrs(state, ctx, kind, &mut list, MgrCommand::Set, attrs)?;
                if kind == ObjectKind::Hook {
                    crate::hooks::admin::settle(&mut list, command, attrs)?;
                }
                named_list(state, kind)?.push(Named { name: name.clone(), attrs: list });
                ops.push(state.named_op(kind, state.named(kind).len() - 1));
                if kind == ObjectKind::Hook {
                    crate::hooks::admin::log_request(name, "created", ctx);
                }
            }
            MgrCommand::Delete => {
                let index = position.ok_or_else(|| (named.unknown)(name))?;
                (named.may_delete)(state, name)?;
                named_list(state, kind)?.remove(index);
                ops.extend((named.deleted)(state, name));
                ops.push(StoreOp::DeleteObject { kind: store_kind(kind), name: name.clone() });
                if kind == ObjectKind::Hook {
                    crate::hooks::admin::log_request(name, "deleted", ctx);
                }
            }
            MgrCommand::Set | MgrCommand::Unset => {
                let index = position.ok_or_else(|| (named.unknown)(name))?;
                let mut list = state.named(kind)[index].attrs.clone();
                apply_attrs(state, ctx, kind, &mut list, command, attrs)?;
                if kind == ObjectKind::Hook {
                    crate::hooks::admin::settle(&mut list, command, attrs)?;
                }
                if let Some(object) = named_list(state, kind)?.get_mut(index) {
                    object.attrs = list;
                }
                ops.push(state.named_op(kind, index));
                ops.extend((named.changed)(state, name, attrs));
            }
        }
    }
    Ok(ops)
}

fn valid_object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 236
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// Applies set/unset attributes to a copy of an object's list, checking each one.
fn apply_attrs(
    state: &mut State,
    ctx: &Ctx<'_>,
    kind: ObjectKind,
    list: &mut AttrList,
    command: MgrCommand,
    attrs: &[MgrAttr],
) -> Result<(), ReqError> {
    for attr in attrs {
        crate::size_limits::check_value(kind, &attr.name, &attr.value)?;
        let (base, resource) = pbs_core::attr::split_name(&attr.name);
        let Some((index, def)) = kind.find(base) else {
            return Err(ReqError::attr(Pbse::NOATTR, &attr.name));
        };
        let index = u8::try_from(index).map_err(|_| ReqError::new(Pbse::INTERNAL))?;
        if !def.writable_by(ctx.privilege) {
            return Err(match def.write {
                Write::ReadOnly => ReqError::attr(Pbse::ATTRRO, &attr.name),
                Write::AtLeast(_) => ReqError::new(Pbse::PERM),
            });
        }
        let resource_name = match (def.atype, resource) {
            (AttrType::Resources, Some(r)) => {
                if state.resources.get(r).is_none() {
                    return Err(ReqError::attr(Pbse::UNKRESC, &attr.name));
                }
                Some(state.interner.intern(r))
            }
            (AttrType::Resources, None) if command == MgrCommand::Unset => {
                list.unset_all(index);
                continue;
            }
            (AttrType::Resources, None) | (_, Some(_)) => {
                return Err(ReqError::attr(Pbse::NOATTR, &attr.name));
            }
            (_, None) => None,
        };
        if command == MgrCommand::Unset {
            // Preemption's settings fall back to OpenPBS's defaults, which qmgr then shows.
            match pbs_core::preempt::default_of(def.name).filter(|_| kind == ObjectKind::Sched) {
                Some(default) => list.set(index, None, default),
                None => {
                    list.unset(index, resource_name.as_deref());
                }
            }
            continue;
        }
        if kind == ObjectKind::Sched {
            pbs_core::preempt::check_sched_value(def.name, &attr.value)
                .map_err(|_| ReqError::attr(Pbse::BADATVAL, &attr.name))?;
        }
        let current = list.get(index, resource_name.as_deref());
        if let Some(value) = crate::entity_limits::manager_value(
            state,
            kind,
            def.name,
            resource_name.as_deref(),
            attr.op,
            current,
            &attr.value,
        ) {
            let value = value?;
            if value.is_empty() {
                list.unset(index, resource_name.as_deref());
            } else {
                list.set(index, resource_name, value);
            }
            continue;
        }
        let canonical = match (&resource_name, def.atype) {
            (Some(r), _) => state
                .resources
                .get(r)
                .ok_or_else(|| ReqError::attr(Pbse::UNKRESC, &attr.name))?
                .normalize(&attr.value)
                .map_err(|_| ReqError::attr(Pbse::BADATVAL, &attr.name))?,
            (None, _) if kind == ObjectKind::Hook => crate::hooks::admin::normalize(def.name, &attr.value)?,
            (None, atype) => {
                normalize_value(atype, &attr.value).ok_or_else(|| ReqError::attr(Pbse::BADATVAL, &attr.name))?
            }
        };
        let canonical = if kind == ObjectKind::Queue && def.name == "queue_type" {
            match canonical.to_ascii_lowercase().as_str() {
                "e" | "execution" => "Execution".to_string(),
                "r" | "route" => "Route".to_string(),
                _ => return Err(ReqError::attr(Pbse::BADATVAL, &attr.name)),
            }
        } else {
            canonical
        };
        // OpenPBS's `verify_value_zero_or_positive` for these two scheduler attributes.
        if kind == ObjectKind::Sched
            && matches!(def.name, "attr_update_period" | "server_dyn_res_alarm")
            && canonical.parse::<i64>().is_ok_and(|n| n < 0)
        {
            return Err(ReqError::attr(Pbse::BADATVAL, &attr.name));
        }
        // OpenPBS's `action_check_res_to_release`: every name a defined resource.
        if kind == ObjectKind::Server
            && def.name == "restrict_res_to_release_on_suspend"
            && canonical.split(',').any(|r| state.resources.get(r.trim()).is_none())
        {
            return Err(ReqError::attr(Pbse::UNKRESC, &attr.name));
        }
        if kind == ObjectKind::Node && def.name == "state" {
            // Only the offline flag is the manager's to set; the rest comes from the mom.
            let words: Vec<&str> = canonical.split(',').map(str::trim).collect();
            if words.iter().any(|w| !matches!(*w, "offline" | "free")) {
                return Err(ReqError::attr(Pbse::BADATVAL, &attr.name));
            }
            // What was stored: the manager's offline and a hook's (`offline_by_mom`).
            let stored: Vec<String> =
                list.get(index, None).map(|s| s.split(',').map(|w| w.trim().to_string()).collect()).unwrap_or_default();
            let by_mom = stored.iter().any(|w| w == crate::node::OFFLINE_BY_MOM);
            let offline = match attr.op {
                MgrOp::Set => words.contains(&"offline"),
                MgrOp::Incr => words.contains(&"offline") || stored.iter().any(|w| w == crate::node::OFFLINE),
                MgrOp::Decr => !words.contains(&"offline") && stored.iter().any(|w| w == crate::node::OFFLINE),
            };
            // As OpenPBS's: clearing offline (`pbsnodes -r`) clears a hook's too, and a
            // set replaces the whole state; adding offline keeps a hook's.
            let by_mom = by_mom && attr.op == MgrOp::Incr;
            match (offline, by_mom) {
                (true, true) => list.set(index, None, "offline,offline_by_mom"),
                (true, false) => list.set(index, None, crate::node::OFFLINE),
                (false, true) => list.set(index, None, crate::node::OFFLINE_BY_MOM),
                (false, false) => {
                    list.unset(index, None);
                }
            }
            continue;
        }
        let current = list.get(index, resource_name.as_deref()).map(str::to_string);
        if let Some(acl_kind) = crate::acl::acl_kind(kind, def.name) {
            match crate::acl::edit(acl_kind, current.as_deref(), attr.op, &canonical)? {
                Some(value) => list.set(index, None, value),
                None => {
                    list.unset(index, None);
                }
            }
            continue;
        }
        let value = match (attr.op, def.atype) {
            (MgrOp::Set, _) => canonical,
            (MgrOp::Incr, AttrType::List) => {
                let mut items: Vec<String> = current.iter().flat_map(|c| c.split(',')).map(str::to_string).collect();
                for item in canonical.split(',') {
                    if !items.iter().any(|i| i == item) {
                        items.push(item.to_string());
                    }
                }
                items.join(",")
            }
            (MgrOp::Decr, AttrType::List) => {
                let remove: Vec<&str> = canonical.split(',').collect();
                let items: Vec<&str> = current
                    .as_deref()
                    .unwrap_or("")
                    .split(',')
                    .filter(|i| !i.is_empty() && !remove.contains(i))
                    .collect();
                items.join(",")
            }
            (op, _) => {
                let old: i64 = current.as_deref().and_then(|c| c.parse().ok()).unwrap_or(0);
                let delta: i64 = canonical.parse().map_err(|_| ReqError::attr(Pbse::BADATVAL, &attr.name))?;
                let sum = if op == MgrOp::Incr { old.checked_add(delta) } else { old.checked_sub(delta) };
                sum.ok_or_else(|| ReqError::attr(Pbse::BADATVAL, &attr.name))?.to_string()
            }
        };
        // `+=` on a list grows it: the result is held to the same limit as a value given.
        crate::size_limits::check_value(kind, &attr.name, &value)?;
        if value.is_empty() && def.atype == AttrType::List {
            list.unset(index, resource_name.as_deref());
        } else {
            list.set(index, resource_name, value);
        }
    }
    Ok(())
}

/// `scheduling` and `scheduler_iteration` are the same setting on the server and on the
/// default scheduler in OpenPBS: changing one changes the other.
fn sync_scheduling(state: &mut State, from: ObjectKind, attrs: &[MgrAttr]) -> Vec<StoreOp> {
    let Some(sched_index) = state.scheds.iter().position(|s| s.name == "default") else {
        return Vec::new();
    };
    let mut changed = false;
    for name in ["scheduling", "scheduler_iteration"] {
        if !attrs.iter().any(|a| a.name.eq_ignore_ascii_case(name)) {
            continue;
        }
        let value = match from {
            ObjectKind::Server => state.server.get_named(ObjectKind::Server, name, None),
            _ => state.scheds[sched_index].attrs.get_named(ObjectKind::Sched, name, None),
        }
        .map(str::to_string);
        let (target_kind, target) = match from {
            ObjectKind::Server => (ObjectKind::Sched, &mut state.scheds[sched_index].attrs),
            _ => (ObjectKind::Server, &mut state.server),
        };
        let Some((def, _)) = resolve(target_kind, name) else { continue };
        match value {
            Some(v) => target.set(def, None, v),
            None => {
                target.unset(def, None);
            }
        }
        changed = true;
    }
    if !changed {
        return Vec::new();
    }
    match from {
        ObjectKind::Server => vec![state.named_op(ObjectKind::Sched, sched_index)],
        _ => vec![state.server_op()],
    }
}

fn manage_resource(
    state: &mut State,
    command: MgrCommand,
    names: &[String],
    attrs: &[MgrAttr],
) -> Result<Vec<StoreOp>, ReqError> {
    let mut ops = Vec::new();
    state.changes.resources = true;
    let value_of = |name: &str| attrs.iter().find(|a| a.name.eq_ignore_ascii_case(name)).map(|a| a.value.clone());
    for attr in attrs {
        if ObjectKind::Resource.find(&attr.name).is_none() {
            return Err(ReqError::attr(Pbse::NOATTR, &attr.name));
        }
    }
    for name in names {
        match command {
            MgrCommand::Create => {
                if state.resources.get(name).is_some() {
                    return Err(ReqError::new(Pbse::DUPLIST));
                }
                let rtype = value_of("type").unwrap_or_else(|| "string".into());
                let flags = value_of("flag").unwrap_or_default();
                let def = ResourceDef::custom(name, &rtype, &flags).map_err(|_| ReqError::new(Pbse::BADATVAL))?;
                ops.push(State::resource_op(&def));
                state.resources.define(def).map_err(|_| ReqError::new(Pbse::DUPLIST))?;
            }
            MgrCommand::Delete => {
                let def = state.resources.get(name).ok_or_else(|| ReqError::new(Pbse::UNKRESC))?;
                if def.builtin {
                    return Err(ReqError::new(Pbse::PERM));
                }
                let in_use =
                    state.jobs.values().any(|j| j.attrs.iter().any(|a| a.resource.as_deref() == Some(name.as_str())));
                if in_use {
                    return Err(ReqError::new(Pbse::RESCBUSY));
                }
                // OpenPBS's own text for a resource the server releases on suspension.
                let released = state.server_attr("restrict_res_to_release_on_suspend", None).unwrap_or_default();
                if released.split(',').any(|r| r.trim() == name) {
                    return Err(ReqError::with_message(Pbse::RESCBUSY, "Resource busy on server".to_string()));
                }
                state.resources.remove(name).map_err(|_| ReqError::new(Pbse::UNKRESC))?;
                ops.push(StoreOp::DeleteObject { kind: "resource", name: name.clone() });
            }
            MgrCommand::Set | MgrCommand::Unset => {
                let current = state.resources.get(name).ok_or_else(|| ReqError::new(Pbse::UNKRESC))?;
                if current.builtin {
                    return Err(ReqError::new(Pbse::IVALREQ));
                }
                let rtype = value_of("type").unwrap_or_else(|| current.rtype.to_string());
                let flags = if command == MgrCommand::Unset && value_of("flag").is_some() {
                    String::new()
                } else {
                    value_of("flag").unwrap_or_else(|| current.flags.to_string())
                };
                let def = ResourceDef::custom(name, &rtype, &flags).map_err(|_| ReqError::new(Pbse::BADATVAL))?;
                state.resources.remove(name).map_err(|_| ReqError::new(Pbse::UNKRESC))?;
                ops.push(State::resource_op(&def));
                state.resources.define(def).map_err(|_| ReqError::new(Pbse::DUPLIST))?;
            }
        }
    }
    Ok(ops)
}

/// Status of the server object.
pub fn server_status(state: &State, privilege: Privilege, filter: &[String]) -> StatusObject {
    let mut computed = vec![("server_state", "Active".to_string()), ("server_host", state.host.clone())];
    // Counting walks every job: every qstat asks for the server's status first, most
    // often without these two.
    if wanted(filter, "total_jobs") || wanted(filter, "state_count") {
        let counts = state.state_counts(None);
        computed.push(("total_jobs", counts.total.to_string()));
        computed.push(("state_count", counts.text()));
    }
    let assigned = crate::node::assigned::status(state, None);
    computed.extend(assigned.iter().map(|(name, value)| (name.as_str(), value.clone())));
    computed.extend([
        ("license_count", "Avail_Global:1000000 Avail_Local:1000000 Used:0 High_Use:0".to_string()),
        ("pbs_version", PBS_VERSION.to_string()),
        ("power_provisioning", "False".to_string()),
    ]);
    StatusObject {
        name: state.server_name.clone(),
        attrs: filtered(
            &state.server,
            ObjectKind::Server,
            privilege,
            filter,
            computed,
            crate::privilege::hidden_resources(state, privilege),
        ),
    }
}

/// The list of a named kind's objects (every kind of `NAMED_KINDS` has one).
fn named_list(state: &mut State, kind: ObjectKind) -> Result<&mut Vec<Named>, ReqError> {
    state.named_mut(kind).ok_or_else(|| ReqError::new(Pbse::IVALREQ))
}

/// Status of queues, nodes, schedulers or hooks by name (all when `names` is empty).
pub fn named_status(
    state: &State,
    kind: ObjectKind,
    names: &[String],
    privilege: Privilege,
    filter: &[String],
) -> Result<Vec<StatusObject>, ReqError> {
    let objects = state.named(kind);
    let selected: Vec<&Named> = if names.is_empty() {
        objects.iter().collect()
    } else {
        let mut out = Vec::new();
        for name in names {
            let found = objects.iter().find(|o| o.name == *name).ok_or_else(|| unknown_object(kind, name))?;
            out.push(found);
        }
        out
    };
    Ok(selected
        .into_iter()
        .map(|object| {
            let computed = named_kind(kind).map(|k| (k.computed)(state, &object.name, filter)).unwrap_or_default();
            let computed: Vec<(&str, String)> =
                computed.iter().map(|(name, value)| (name.as_str(), value.clone())).collect();
            StatusObject {
                name: object.name.clone(),
                attrs: filtered(
                    &object.attrs,
                    kind,
                    privilege,
                    filter,
                    computed,
                    crate::privilege::hidden_resources(state, privilege),
                ),
            }
        })
        .collect())
}

/// Status of resource definitions: the named ones, or every custom one.
pub fn resource_status(state: &State, names: &[String]) -> Result<Vec<StatusObject>, ReqError> {
    let defs: Vec<&ResourceDef> = if names.is_empty() {
        state.resources.customs().collect()
    } else {
        let mut out = Vec::new();
        for name in names {
            out.push(state.resources.get(name).ok_or_else(|| ReqError::new(Pbse::UNKRESC))?);
        }
        out
    };
    Ok(defs
        .into_iter()
        .map(|def| {
            let mut attrs = vec![Attr::new("type", def.rtype.to_string())];
            let flags = def.flags.to_string();
            if !flags.is_empty() {
                attrs.push(Attr::new("flag", flags));
            }
            StatusObject { name: def.name.clone(), attrs }
        })
        .collect())
}

/// The server or a queue as a hook asks for it (`pbs.server()` attributes,
/// `pbs.server().queue(name)`): every attribute a manager may read, as text.
pub fn for_hook(state: &State, query: &pbs_hooks::Query) -> Option<pbs_hooks::ObjectData> {
    let object = match query.what.as_str() {
        "server" => server_status(state, Privilege::Manager, &[]),
        "queue" => {
            let name = query.name.clone()?;
            named_status(state, ObjectKind::Queue, &[name], Privilege::Manager, &[]).ok()?.into_iter().next()?
        }
        _ => return None,
    };
    let attrs = object.attrs.into_iter().map(|Attr(name, value)| (name, value)).collect();
    Some(pbs_hooks::ObjectData { name: object.name, attrs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_kind_the_state_keeps_has_its_entry() {
        let kinds: Vec<ObjectKind> = NAMED_KINDS.iter().map(|k| k.kind).collect();
        assert_eq!(kinds, crate::state::NAMED_KINDS);
    }
}
