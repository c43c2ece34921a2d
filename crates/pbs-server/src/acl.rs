//! Access control as OpenPBS applies it: who may send requests at all (server
//! `acl_host_enable`/`acl_hosts`, `acl_user_enable`/`acl_users`), who may own a job as root
//! (`acl_roots`), who may put a job in a queue (queue host, user and group ACLs,
//! `from_route_only`), and how qmgr edits an ACL (sorted, no duplicates). The matching
//! itself is `pbs_core::acl`.

use pbs_core::Pbse;
use pbs_core::acl::{self, AclKind};
use pbs_core::attr::{ObjectKind, Privilege, parse_bool};
use pbs_proto::{IdError, MgrOp, Reply, ReplyBody, Request};

use crate::error::ReqError;
use crate::identity::Identity;
use crate::request::Ctx;
use crate::state::State;

/// The server ACLs every request passes (OpenPBS's `process_request` and
/// `authenticate_user`): a host outside an enabled `acl_hosts` gets PBSE_BADHOST (the
/// server's own host is always let in), a user outside an enabled `acl_users` PBSE_PERM
/// unless an operator or manager. Daemons are not clients and pass.
pub fn check_request(state: &State, who: &Identity, privilege: Privilege) -> Result<(), ReqError> {
    if who.daemon {
        return Ok(());
    }
    // On every request: the attributes by their fixed indices, not by name.
    let attr = |index: u8| state.server.get(index, None);
    let flag = |index: u8| attr(index).and_then(parse_bool).unwrap_or(false);
    if flag(const { ObjectKind::Server.index_of("acl_host_enable") })
        && !who.host.eq_ignore_ascii_case(&state.host)
        && !acl::check_host(attr(const { ObjectKind::Server.index_of("acl_hosts") }), &who.host, &state.host)
    {
        return Err(ReqError::new(Pbse::BADHOST));
    }
    if flag(const { ObjectKind::Server.index_of("acl_user_enable") })
        && privilege < Privilege::Operator
        && !acl::check_user(attr(const { ObjectKind::Server.index_of("acl_users") }), &who.user_at_host())
    {
        return Err(ReqError::new(Pbse::PERM));
    }
    Ok(())
}

/// The reply to a request [`check_request`] refused: for requests over job ids, the error
/// for each id, as OpenPBS's commands, sending one request per job, print it per job.
pub fn refusal(id: u64, request: &Request, e: ReqError) -> Reply {
    let Some(ids) = request.per_job_ids() else { return Reply::error(id, e.code.0, e.message) };
    let errors =
        ids.iter().map(|job| IdError { id: job.clone(), code: e.code.0, message: e.message.clone() }).collect();
    Reply { id, code: e.code.0, message: e.message, body: ReplyBody::PerId(errors), more: false }
}

/// Whether root may own a job: only if `acl_roots` lets `root@host` in.
pub fn root_allowed(state: &State, who: &Identity) -> bool {
    acl::check_user(state.server_attr("acl_roots", None), &who.user_at_host())
}

/// The queue checks a new job passes (OpenPBS's `svr_chkque` for a job that did not come
/// from a routing queue), in its order: `from_route_only` (PBSE_QACESS), the host ACL
/// against the submitting host (PBSE_BADHOST), the user ACL against the job owner and the
/// group ACL against every group of the job's user (PBSE_PERM). Managers are held to them
/// too, as in OpenPBS (only a manager's qmove passes them).
pub fn check_queue(state: &State, queue_index: usize, ctx: &Ctx<'_>) -> Result<(), ReqError> {
    let who = ctx.who;
    let Some(queue) = state.queues.get(queue_index) else {
        return Err(ReqError::new(Pbse::UNKQUE));
    };
    let attr = |index: u8| queue.attrs.get(index, None);
    let flag = |index: u8| attr(index).and_then(parse_bool).unwrap_or(false);
    if flag(const { ObjectKind::Queue.index_of("from_route_only") }) {
        return Err(ReqError::new(Pbse::QACESS));
    }
    if flag(const { ObjectKind::Queue.index_of("acl_host_enable") })
        && !acl::check_host(attr(const { ObjectKind::Queue.index_of("acl_hosts") }), &who.host, &state.host)
    {
        return Err(ReqError::new(Pbse::BADHOST));
    }
    if flag(const { ObjectKind::Queue.index_of("acl_user_enable") })
        && !acl::check_user(attr(const { ObjectKind::Queue.index_of("acl_users") }), &who.user_at_host())
    {
        return Err(ReqError::new(Pbse::PERM));
    }
    if flag(const { ObjectKind::Queue.index_of("acl_group_enable") })
        && !acl::check_group(
            attr(const { ObjectKind::Queue.index_of("acl_groups") }),
            if ctx.groups.is_empty() { std::slice::from_ref(&who.group) } else { ctx.groups },
        )
    {
        return Err(ReqError::new(Pbse::PERM));
    }
    Ok(())
}

/// Groups by user name, reused as long as the names of connecting peers.
static GROUPS: crate::identity::TtlCache<String, Vec<String>> =
    crate::identity::TtlCache::new(crate::identity::NAME_TTL);

/// Every group `who` is in (its primary group first), through a short-lived cache: read
/// from the system databases, which may be a directory service, so never under the state
/// lock (the dispatch looks them up before it, for a submission).
pub fn groups_of(who: &Identity) -> Vec<String> {
    if let Some(groups) = GROUPS.get(who.user.as_str()) {
        return groups;
    }
    let mut groups = vec![who.group.clone()];
    let Ok(Some(entry)) = nix::unistd::User::from_name(&who.user) else {
        return groups;
    };
    let Ok(name) = std::ffi::CString::new(who.user.as_str()) else {
        return groups;
    };
    for gid in nix::unistd::getgrouplist(&name, entry.gid).unwrap_or_default() {
        if let Ok(Some(group)) = nix::unistd::Group::from_gid(gid) {
            if !groups.contains(&group.name) {
                groups.push(group.name);
            }
        }
    }
    GROUPS.insert(who.user.clone(), groups.clone());
    groups
}

/// Whether the server or queue attribute `name` is an ACL that qmgr edits as one.
pub fn acl_kind(object: ObjectKind, name: &str) -> Option<AclKind> {
    matches!(object, ObjectKind::Server | ObjectKind::Queue).then(|| acl::kind_of(name)).flatten()
}

/// qmgr's `=`, `+=` and `-=` on an ACL: entries are inserted in OpenPBS's order, a
/// duplicate refuses the change (PBSE_DUPLIST), `-=` removes exact entries. `None` when
/// the list ends up empty (the attribute is unset).
pub fn edit(kind: AclKind, current: Option<&str>, op: MgrOp, value: &str) -> Result<Option<String>, ReqError> {
    let given: Vec<&str> = acl::entries(value).collect();
    let mut list: Vec<String> = match op {
        MgrOp::Set => Vec::new(),
        MgrOp::Incr | MgrOp::Decr => current.map(acl::entries).into_iter().flatten().map(str::to_string).collect(),
    };
    if op == MgrOp::Decr {
        let removed: std::collections::HashSet<&str> = given.iter().copied().collect();
        list.retain(|entry| !removed.contains(entry.as_str()));
    } else {
        acl::insert(kind, &mut list, &given).map_err(|e| match e {
            acl::AclError::Duplicate(_) => ReqError::new(Pbse::DUPLIST),
            acl::AclError::TooLong => ReqError::new(Pbse::BADATVAL),
        })?;
    }
    Ok((!list.is_empty()).then(|| list.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qmgr_edits_keep_the_order_and_refuse_duplicates() {
        let set = edit(AclKind::User, Some("x"), MgrOp::Set, "bob@*,alice").unwrap();
        assert_eq!(set.as_deref(), Some("alice,bob@*"));
        let added = edit(AclKind::User, set.as_deref(), MgrOp::Incr, "-bob@h.example.com").unwrap();
        assert_eq!(added.as_deref(), Some("alice,-bob@h.example.com,bob@*"));
        assert_eq!(edit(AclKind::User, added.as_deref(), MgrOp::Incr, "alice").map_err(|e| e.code), Err(Pbse::DUPLIST));
        let removed = edit(AclKind::User, added.as_deref(), MgrOp::Decr, "alice,bob@*").unwrap();
        assert_eq!(removed.as_deref(), Some("-bob@h.example.com"));
        assert_eq!(edit(AclKind::User, removed.as_deref(), MgrOp::Decr, "-bob@h.example.com").unwrap(), None);
    }
}
