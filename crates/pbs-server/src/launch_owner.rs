//! Whom a launch tells the mom to run a job as: the uid this server resolves for the job's
//! `euser`, and whether `acl_roots` allows the job to run as root. The mom refuses a launch
//! whose owner has another uid on its host, and runs nothing as uid 0 without the
//! permission (see `pbs_mom`'s `owner` module).
//!
//! Under the state lock a run only notes whether `acl_roots` names the owner; the uid is
//! looked up once the run is committed, off the lock ([`resolve`]), since the password
//! database may be a directory service.

use crate::identity::{NAME_TTL, TtlCache};
use crate::state::{Job, State};

/// Uids by user name, reused as long as the names of connecting peers ([`NAME_TTL`]).
static UIDS: TtlCache<String, u32> = TtlCache::new(NAME_TTL);

/// Whether `acl_roots` names the job's owner: the launch's `root_allowed` until
/// [`resolve`] also knows the owner is uid 0. No lookup: called under the state lock.
pub fn root_named(state: &State, job: &Job) -> bool {
    root_allowed(state, job.get("Job_Owner", None).unwrap_or(""))
}

/// Fills a launch's owner uid from its user, and keeps `root_allowed` only for uid 0.
/// Reads the password database: never under the state lock.
pub fn resolve(launch: &mut pbs_proto::mom::JobLaunch) {
    set_uid(launch, uid_of(&launch.user));
}

/// [`resolve`] from the cache alone; whether it could (a miss needs [`resolve`], on a
/// thread that may block).
pub fn resolve_cached(launch: &mut pbs_proto::mom::JobLaunch) -> bool {
    match UIDS.get(launch.user.as_str()) {
        Some(uid) => {
            set_uid(launch, Some(uid));
            true
        }
        None => false,
    }
}

fn set_uid(launch: &mut pbs_proto::mom::JobLaunch, uid: Option<u32>) {
    launch.uid = uid;
    launch.root_allowed = launch.root_allowed && uid == Some(0);
}

/// Whether `acl_roots` names the owner (`user@host`), as it did when the server accepted
/// root's job at submission; checked again at each run, so a manager who removes the
/// entry stops root's queued jobs from running as root.
fn root_allowed(state: &State, job_owner: &str) -> bool {
    let (user, host) = job_owner.split_once('@').unwrap_or((job_owner, ""));
    state.server_attr("acl_roots", None).is_some_and(|list| crate::identity::acl_matches(list, user, host))
}

/// The uid of user `name` on this host, through a short-lived cache: runs start under the
/// state lock, and the password database may be a directory service.
fn uid_of(name: &str) -> Option<u32> {
    if name.is_empty() {
        return None;
    }
    if let Some(uid) = UIDS.get(name) {
        return Some(uid);
    }
    // A name without an entry is not cached: a directory-service hiccup must not refuse
    // the user's jobs for the next seconds, and the mom refuses a launch without a uid.
    let uid = nix::unistd::User::from_name(name).ok().flatten()?.uid.as_raw();
    UIDS.insert(name.to_string(), uid);
    Some(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_come_from_the_password_database() {
        assert_eq!(uid_of("root"), Some(0));
        assert_eq!(uid_of("root"), Some(0));
        let me = nix::unistd::User::from_uid(nix::unistd::getuid()).ok().flatten();
        if let Some(me) = me {
            assert_eq!(uid_of(&me.name), Some(me.uid.as_raw()));
        }
        assert_eq!(uid_of("no_such_user_here"), None);
        assert_eq!(uid_of(""), None);
    }
}
