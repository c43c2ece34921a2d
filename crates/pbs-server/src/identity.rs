//! Who a request comes from: the kernel's word for local clients (SO_PEERCRED), never a
//! name the client claims, and the privilege that identity has on this server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    /// A command on another host, proven by MUNGE: its uid 0 is no root here, and it is a
    /// manager or an operator only as the lists name `user@host`.
    pub remote: bool,
}

impl Identity {
    /// Looks a local peer up by uid; an unknown uid gets its number as its name.
    pub fn from_uid(uid: u32, gid: u32, host: &str) -> Identity {
        let (user, group) = lookup_names(uid, gid);
        Identity { user, group, uid, host: host.to_string(), daemon: false, remote: false }
    }

    /// [`Identity::from_uid`] through a cache of the names of recent peers: looking them up
    /// reads nsswitch.conf and the password and group files (some ten system calls, on the
    /// connection's worker thread), or asks a directory service, for every connection.
    /// Entries live [`NAME_TTL`], so a renamed or deleted account is seen within seconds,
    /// as with nscd. The uid and gid still come from the kernel for every connection.
    pub fn from_uid_cached(uid: u32, gid: u32, host: &str) -> Identity {
        let (user, group) = match NAMES.get(&(uid, gid)) {
            Some(names) => names,
            None => {
                // Looked up without the lock held: a slow directory service delays only
                // this connection. Only names actually found are kept: a failed lookup
                // (a directory service hiccup) must not name the uid by its number for
                // every connection of the next seconds.
                let names = match found_names(uid, gid) {
                    (Some(user), Some(group)) => (user, group),
                    (user, group) => {
                        let user = user.unwrap_or_else(|| uid.to_string());
                        let group = group.unwrap_or_else(|| gid.to_string());
                        return Identity { user, group, uid, host: host.to_string(), daemon: false, remote: false };
                    }
                };
                NAMES.insert((uid, gid), names.clone());
                names
            }
        };
        Identity { user, group, uid, host: host.to_string(), daemon: false, remote: false }
    }

    /// A daemon authenticated with the cluster key.
    pub fn daemon(host: &str) -> Identity {
        Identity {
            user: "root".into(),
            group: "root".into(),
            uid: 0,
            host: host.to_string(),
            daemon: true,
            remote: false,
        }
    }

    /// `user@host`, the form of `Job_Owner` and of ACL entries.
    pub fn user_at_host(&self) -> String {
        format!("{}@{}", self.user, self.host)
    }

    /// The privilege of this identity given the server's `managers` and `operators` lists
    /// (comma-separated `user@host` entries where host may be `*`).
    pub fn privilege(&self, managers: Option<&str>, operators: Option<&str>) -> Privilege {
        if (self.uid == 0 && !self.remote) || self.daemon {
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

/// How long a uid's user and group names are reused before the databases are read again.
pub const NAME_TTL: Duration = Duration::from_secs(5);

/// Most entries a [`TtlCache`] keeps; past this, expired entries (or all) are dropped.
const CACHE_MAX: usize = 4096;

/// (user, group) names by (uid, gid).
static NAMES: TtlCache<(u32, u32), (String, String)> = TtlCache::new(NAME_TTL);

/// Recent answers of the system databases, each reused for `ttl`, at most [`CACHE_MAX`]
/// of them. Callers look up without holding the cache's lock, so a slow directory service
/// delays only the caller, and keep only what was found.
pub(crate) struct TtlCache<K, V> {
    map: Mutex<Option<HashMap<K, (V, Instant)>>>,
    ttl: Duration,
}

impl<K: std::hash::Hash + Eq, V: Clone> TtlCache<K, V> {
    /// An empty cache whose entries live `ttl`.
    pub(crate) const fn new(ttl: Duration) -> Self {
        TtlCache { map: Mutex::new(None), ttl }
    }

    /// The value kept for `key`, unless it has expired.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        // A poisoned lock only means another thread panicked mid-insert: the map holds
        // complete entries or none, so it is still usable.
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let (value, expires) = map.as_ref()?.get(key)?;
        (Instant::now() < *expires).then(|| value.clone())
    }

    /// Keeps `value` for `key` for the cache's `ttl`.
    pub(crate) fn insert(&self, key: K, value: V) {
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let map = map.get_or_insert_with(HashMap::new);
        if map.len() >= CACHE_MAX {
            map.retain(|_, (_, expires)| now < *expires);
            if map.len() >= CACHE_MAX {
                map.clear();
            }
        }
        map.insert(key, (value, now + self.ttl));
    }
}

/// The user name of `uid` and group name of `gid` from the system databases, the numbers
/// themselves where there is no entry.
fn lookup_names(uid: u32, gid: u32) -> (String, String) {
    let (user, group) = found_names(uid, gid);
    (user.unwrap_or_else(|| uid.to_string()), group.unwrap_or_else(|| gid.to_string()))
}

/// The names the system databases have for `uid` and `gid` (`None` where a lookup found
/// nothing or failed).
fn found_names(uid: u32, gid: u32) -> (Option<String>, Option<String>) {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten().map(|u| u.name);
    let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)).ok().flatten().map(|g| g.name);
    (user, group)
}

/// Whether `user@host` is let in by a comma-separated user ACL (`managers`, `operators`),
/// with OpenPBS's rules (`pbs_core::acl`): `user[@host]` entries, `*` host wildcards, the
/// first matching entry decides and a `-` entry refuses.
pub fn acl_matches(list: &str, user: &str, host: &str) -> bool {
    pbs_core::acl::check_user(Some(list), &format!("{user}@{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(user: &str, uid: u32) -> Identity {
        Identity {
            user: user.into(),
            group: "g".into(),
            uid,
            host: "h1.example.com".into(),
            daemon: false,
            remote: false,
        }
    }

    #[test]
    fn cached_lookup_matches_the_databases() {
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let direct = Identity::from_uid(uid, gid, "h");
        assert_eq!(Identity::from_uid_cached(uid, gid, "h"), direct);
        assert_eq!(Identity::from_uid_cached(uid, gid, "h"), direct);
        // A uid with no entry is named by its number, cached or not.
        let unknown = Identity::from_uid_cached(4_000_000_123, 4_000_000_321, "h");
        assert_eq!((unknown.user.as_str(), unknown.group.as_str()), ("4000000123", "4000000321"));
    }

    #[test]
    fn root_is_manager_and_lists_grant_privilege() {
        assert_eq!(who("root", 0).privilege(None, None), Privilege::Manager);
        assert_eq!(who("alice", 1000).privilege(None, None), Privilege::User);
        assert_eq!(who("alice", 1000).privilege(Some("bob@*,alice@*"), None), Privilege::Manager);
        assert_eq!(who("alice", 1000).privilege(None, Some("alice@h1.example.com")), Privilege::Operator);
        assert_eq!(who("alice", 1000).privilege(Some("alice@other"), None), Privilege::User);
        assert_eq!(who("alice", 1000).privilege(Some("alice@*.example.com"), None), Privilege::Manager);
        // A `-` entry refuses, as in every OpenPBS ACL, and the user part is no wildcard.
        assert_eq!(who("alice", 1000).privilege(Some("-alice@h1.example.com,alice@*"), None), Privilege::User);
        assert_eq!(who("alice", 1000).privilege(None, Some("*@h1.example.com")), Privilege::User);
    }
}
