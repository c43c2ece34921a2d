//! Who a request comes from: the kernel's word for local clients (SO_PEERCRED), never a
//! name the client claims, and the privilege that identity has on this server.

use pbs_core::Privilege;

/// The requester of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// User name from the password database.
    pub user: String,
    /// Primary group name.
    pub group: String,
    /// Numeric uid (0 = root).
    pub uid: u32,
    /// The host the request came from.
    pub host: String,
    /// Set for authenticated daemons (scheduler, moms): they act with manager rights.
    pub daemon: bool,
}

impl Identity {
    /// Looks a local peer up by uid; an unknown uid gets its number as its name.
    pub fn from_uid(uid: u32, gid: u32, host: &str) -> Identity {
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|u| u.name)
            .unwrap_or_else(|| uid.to_string());
        let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
            .ok()
            .flatten()
            .map(|g| g.name)
            .unwrap_or_else(|| gid.to_string());
        Identity { user, group, uid, host: host.to_string(), daemon: false }
    }

    /// A daemon authenticated with the cluster key.
    pub fn daemon(host: &str) -> Identity {
        Identity { user: "root".into(), group: "root".into(), uid: 0, host: host.to_string(), daemon: true }
    }

    /// `user@host`, the form of `Job_Owner` and of ACL entries.
    pub fn user_at_host(&self) -> String {
        format!("{}@{}", self.user, self.host)
    }

    /// The privilege of this identity given the server's `managers` and `operators` lists
    /// (comma-separated `user@host` entries where host may be `*`).
    pub fn privilege(&self, managers: Option<&str>, operators: Option<&str>) -> Privilege {
        if self.uid == 0 || self.daemon {
            return Privilege::Manager;
        }
        if managers.is_some_and(|list| acl_matches(list, &self.user, &self.host)) {
            return Privilege::Manager;
        }
        if operators.is_some_and(|list| acl_matches(list, &self.user, &self.host)) {
            return Privilege::Operator;
        }
        Privilege::User
    }
}

/// Whether `user@host` matches an entry of a comma-separated ACL (`u@h`, `u@*`, `u`,
/// `*@h`, with OpenPBS's leading-`*` host wildcard like `u@*.example.com`).
pub fn acl_matches(list: &str, user: &str, host: &str) -> bool {
    list.split(',').map(str::trim).filter(|e| !e.is_empty()).any(|entry| {
        let entry = entry.trim_start_matches(['+', '-']);
        let (entry_user, entry_host) = entry.split_once('@').unwrap_or((entry, "*"));
        let user_ok = entry_user == "*" || entry_user == user;
        let host_ok = entry_host == "*"
            || entry_host.eq_ignore_ascii_case(host)
            || entry_host
                .strip_prefix('*')
                .is_some_and(|suffix| host.to_ascii_lowercase().ends_with(&suffix.to_ascii_lowercase()));
        user_ok && host_ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(user: &str, uid: u32) -> Identity {
        Identity { user: user.into(), group: "g".into(), uid, host: "h1.example.com".into(), daemon: false }
    }

    #[test]
    fn root_is_manager_and_lists_grant_privilege() {
        assert_eq!(who("root", 0).privilege(None, None), Privilege::Manager);
        assert_eq!(who("alice", 1000).privilege(None, None), Privilege::User);
        assert_eq!(who("alice", 1000).privilege(Some("bob@*,alice@*"), None), Privilege::Manager);
        assert_eq!(who("alice", 1000).privilege(None, Some("alice@h1.example.com")), Privilege::Operator);
        assert_eq!(who("alice", 1000).privilege(Some("alice@other"), None), Privilege::User);
        assert_eq!(who("alice", 1000).privilege(Some("alice@*.example.com"), None), Privilege::Manager);
    }
}
