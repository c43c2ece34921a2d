//! Whom the mom lets a job run as: the owner the server named must exist here with the uid
//! the server resolved, and uid 0 only when the server's `acl_roots` allowed it.
//!
//! The shepherd checks this with the same password entry it then runs the job as, so no
//! second lookup can disagree with the one that was checked.

use nix::unistd::User;
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

/// Looks the launch's owner up on this host and checks it ([`check`]).
pub fn resolve(launch: &JobLaunch) -> Result<User, OwnerError> {
    let user = match User::from_name(&launch.user) {
        Ok(Some(user)) => user,
        _ => return Err(OwnerError::Unknown(launch.user.clone())),
    };
    check(launch, &user)?;
    Ok(user)
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
        let unknown = JobLaunch { user: "no_such_user_here".into(), uid: Some(5), ..JobLaunch::default() };
        assert_eq!(resolve(&unknown).err(), Some(OwnerError::Unknown("no_such_user_here".into())));
    }
}
