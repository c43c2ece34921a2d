//! Whom the mom lets a job run as: the owner the server named must exist here with the uid
//! the server resolved, uid 0 only when the server's `acl_roots` allowed it, and the group
//! (`egroup`) only if it is the owner's primary group or lists the owner as a member.
//!
//! The shepherd checks this with the same password entry it then runs the job as, so no
//! second lookup can disagree with the one that was checked. A `user=pbsuser` hook runs as
//! the owner this gives too ([`hook_owner`]).

use nix::unistd::{Gid, Group, User};
use pbs_proto::mom::JobLaunch;

/// Why a launch's owner is refused (reported as `JOB_EXEC_FAILUID`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OwnerError {
    /// No password entry for the name.
    #[error("user {0} does not exist on this host")]
    Unknown(String),
    /// The server sent no uid to check against.
    #[error("the launch names no uid for user {0}")]
    NoUid(String),
    /// The name has another uid here than on the server.
    #[error("user {user} has uid {here} on this host but the server named uid {named}")]
    Mismatch {
        /// The user name.
        user: String,
        /// Its uid on this host.
        here: u32,
        /// The uid in the launch.
        named: u32,
    },
    /// The group named is not one of the owner's.
    #[error("user {user} is not a member of group {group}")]
    NotMember {
        /// The user name.
        user: String,
        /// The group name.
        group: String,
    },
    /// A uid 0 job the server did not allow by `acl_roots`.
    #[error("user {0} is root on this host and the server's acl_roots did not allow the job")]
    RootNotAllowed(String),
}

/// Checks that `user` (the password entry found for `launch.user`) may run the job.
pub fn check(launch: &JobLaunch, user: &User) -> Result<(), OwnerError> {
    let here = user.uid.as_raw();
    let named = launch.uid.ok_or_else(|| OwnerError::NoUid(launch.user.clone()))?;
    if here != named {
        return Err(OwnerError::Mismatch { user: launch.user.clone(), here, named });
    }
    if user.uid.is_root() && !launch.root_allowed {
        return Err(OwnerError::RootNotAllowed(launch.user.clone()));
    }
    Ok(())
}

/// The gid to run the job with: the launch's group if it is one of `user`'s, the user's
/// primary group if the launch names none or one this host does not know.
pub fn group(launch: &JobLaunch, user: &User) -> Result<Gid, OwnerError> {
    if launch.group.is_empty() {
        return Ok(user.gid);
    }
    let Ok(Some(group)) = Group::from_name(&launch.group) else { return Ok(user.gid) };
    if group.gid == user.gid || group.mem.contains(&user.name) {
        return Ok(group.gid);
    }
    Err(OwnerError::NotMember { user: user.name.clone(), group: group.name })
}

/// Looks the launch's owner up on this host and checks it ([`check`]).
pub fn resolve(launch: &JobLaunch) -> Result<User, OwnerError> {
    let user = match User::from_name(&launch.user) {
        Ok(Some(user)) => user,
        _ => return Err(OwnerError::Unknown(launch.user.clone())),
    };
    check(launch, &user)?;
    Ok(user)
}

/// Whom a `user=pbsuser` hook of the job runs as: the owner [`resolve`] finds and checks
/// (uid 0 only with `root_allowed`), with the job's group ([`group`]) and home.
pub fn hook_owner(launch: &JobLaunch) -> Result<pbs_hooks::Owner, OwnerError> {
    let user = resolve(launch)?;
    let gid = group(launch, &user)?;
    Ok(pbs_hooks::Owner { uid: user.uid.as_raw(), gid: gid.as_raw(), name: user.name, home: user.dir })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> User {
        User::from_uid(nix::unistd::Uid::from_raw(0)).ok().flatten().unwrap_or_else(|| panic!("no root entry"))
    }

    #[test]
    fn uid_zero_needs_the_servers_permission_and_the_uid_must_match() {
        let mut launch = JobLaunch { user: "root".into(), uid: Some(0), ..JobLaunch::default() };
        assert_eq!(check(&launch, &root()), Err(OwnerError::RootNotAllowed("root".into())));
        launch.root_allowed = true;
        assert_eq!(check(&launch, &root()), Ok(()));
        launch.uid = Some(1000);
        assert!(matches!(check(&launch, &root()), Err(OwnerError::Mismatch { here: 0, named: 1000, .. })));
        launch.uid = None;
        assert_eq!(check(&launch, &root()), Err(OwnerError::NoUid("root".into())));
        // root's primary group is its own; a group it does not know falls back to it.
        launch.group = "root".into();
        assert_eq!(group(&launch, &root()), Ok(Gid::from_raw(0)));
        launch.group = "no_such_group_here".into();
        assert_eq!(group(&launch, &root()), Ok(root().gid));
        let unknown = JobLaunch { user: "no_such_user_here".into(), uid: Some(5), ..JobLaunch::default() };
        assert_eq!(resolve(&unknown).err(), Some(OwnerError::Unknown("no_such_user_here".into())));
        assert_eq!(hook_owner(&unknown).err(), Some(OwnerError::Unknown("no_such_user_here".into())));
    }

    #[test]
    fn a_hook_runs_as_the_owner_the_shepherd_would_run_the_job_as() {
        let mut launch = JobLaunch { user: "root".into(), uid: Some(0), group: "root".into(), ..JobLaunch::default() };
        assert_eq!(hook_owner(&launch).err(), Some(OwnerError::RootNotAllowed("root".into())));
        launch.root_allowed = true;
        let owner = hook_owner(&launch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((owner.uid, owner.gid, owner.name.as_str()), (0, 0, "root"));
        assert_eq!(owner.home, root().dir);
    }
}
