//! Access control lists as OpenPBS reads and keeps them (`acl_users`, `acl_hosts`,
//! `acl_groups`, `acl_roots`, `managers`, `operators`): entry matching, the first-match
//! rule with `+`/`-` entries, and the order entries are kept in.
//!
//! An entry is `[+|-]name`. User entries are `user[@host]` (no host matches any host); host
//! parts and host entries match from their end, and a leading `*` matches any prefix
//! (`*.example.com`); names are compared exactly, hosts without regard to case. The list is
//! scanned in its kept order and the first matching entry decides: allowed unless it
//! starts with `-`. A lone `+` or `-` sets the answer when nothing matches (refused
//! otherwise). An empty list refuses everyone, except that a host list lets the server's
//! own host in. Entries are kept sorted (most specific host first), as OpenPBS inserts them,
//! so a first match is the most specific one.

use std::cmp::Ordering;

/// What an ACL's entries name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AclKind {
    /// `user[@host]` entries (`acl_users`, `acl_roots`, `managers`, `operators`).
    User,
    /// Host entries (`acl_hosts`).
    Host,
    /// Group names (`acl_groups`), matched against every group the user is in.
    Group,
}

/// The kind of the ACL attribute `name` of a server or queue, `None` if it is not one.
pub fn kind_of(name: &str) -> Option<AclKind> {
    match name {
        "acl_users" | "acl_roots" | "managers" | "operators" => Some(AclKind::User),
        "acl_hosts" => Some(AclKind::Host),
        "acl_groups" => Some(AclKind::Group),
        _ => None,
    }
}

/// The entries of a stored list value (comma-separated).
pub fn entries(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|e| !e.is_empty())
}

fn strip_sign(entry: &str) -> &str {
    entry.strip_prefix(['+', '-']).unwrap_or(entry)
}

/// The first-match scan shared by every kind: `matches` says whether an entry (sign
/// stripped) names the candidate.
fn scan<'a>(list: impl Iterator<Item = &'a str>, matches: impl Fn(&str) -> bool) -> bool {
    let mut default = false;
    for entry in list {
        match entry {
            "+" => default = true,
            "-" => default = false,
            _ => {}
        }
        if matches(strip_sign(entry)) {
            return !entry.starts_with('-');
        }
    }
    default
}

/// Whether `user@host` (or a bare `user`) is allowed by a user ACL; an unset or empty list
/// allows nobody.
pub fn check_user(list: Option<&str>, candidate: &str) -> bool {
    list.is_some_and(|l| scan(entries(l), |entry| user_matches(candidate, entry)))
}

/// Whether `host` is allowed by a host ACL; an unset or empty list allows only
/// `server_host`.
pub fn check_host(list: Option<&str>, host: &str, server_host: &str) -> bool {
    match list {
        Some(l) if entries(l).next().is_some() => scan(entries(l), |entry| host_matches(host, entry)),
        _ => host_matches(host, server_host),
    }
}

/// Whether a user in `groups` is allowed by a group ACL; an unset or empty list allows
/// nobody.
pub fn check_group(list: Option<&str>, groups: &[String]) -> bool {
    list.is_some_and(|l| scan(entries(l), |entry| groups.iter().any(|g| g == entry)))
}

/// Whether user entry `entry` (`user[@host]`, sign stripped) names `candidate`
/// (`user@host` or `user`).
pub fn user_matches(candidate: &str, entry: &str) -> bool {
    let (cand_user, cand_host) = match candidate.split_once('@') {
        Some((u, h)) => (u, Some(h)),
        None => (candidate, None),
    };
    match entry.split_once('@') {
        None => !entry.is_empty() && entry == cand_user,
        Some((user, host)) => !user.is_empty() && user == cand_user && cand_host.is_some_and(|h| host_matches(h, host)),
    }
}

/// Whether host entry `entry` names `host`: equal from the end without regard to case, a
/// leading `*` in the entry standing for any (possibly empty) prefix.
pub fn host_matches(host: &str, entry: &str) -> bool {
    if entry.is_empty() || host.is_empty() {
        return false;
    }
    match entry.strip_prefix('*') {
        // The `*` stands for at least one character.
        Some(suffix) => {
            host.len() > suffix.len()
                && host.as_bytes()[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
        }
        None => host.eq_ignore_ascii_case(entry),
    }
}

/// OpenPBS's order of host entries (`host_order`), kept exactly, quirks included: compared
/// from the end; where one name runs out first it sorts after (less specific); where both
/// run out together a `*` sorts after; at a differing character the entry whose character is
/// smaller sorts after.
fn host_order(a: &[u8], b: &[u8]) -> Ordering {
    let (Some(mut i), Some(mut j)) = (a.len().checked_sub(1), b.len().checked_sub(1)) else {
        // An empty name covers nothing: after any other.
        return match (a.is_empty(), b.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            _ => Ordering::Less,
        };
    };
    loop {
        let (x, y) = (a[i], b[j]);
        if i > 0 && j > 0 {
            if x != y {
                return y.cmp(&x);
            }
            i -= 1;
            j -= 1;
        } else if i == 0 && j == 0 {
            return if x == b'*' {
                Ordering::Greater
            } else if y == b'*' {
                Ordering::Less
            } else {
                y.cmp(&x)
            };
        } else if i == 0 {
            return Ordering::Greater;
        } else {
            return Ordering::Less;
        }
    }
}

/// OpenPBS's order of user entries (`user_order`): by user name up to the `@`, then the
/// hosts by [`host_order`].
fn user_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (strip_sign(a).as_bytes(), strip_sign(b).as_bytes());
    let mut k = 0;
    loop {
        let (x, y) = (a.get(k).copied().unwrap_or(0), b.get(k).copied().unwrap_or(0));
        if x != y {
            return x.cmp(&y);
        }
        if x == b'@' || x == 0 {
            let rest = |s: &[u8]| s.get(k + 1..).unwrap_or_default().to_vec();
            return host_order(&rest(a), &rest(b));
        }
        k += 1;
    }
}

fn order(kind: AclKind, a: &str, b: &str) -> Ordering {
    match kind {
        AclKind::User => user_order(a, b),
        AclKind::Host => host_order(strip_sign(a).as_bytes(), strip_sign(b).as_bytes()),
        AclKind::Group => strip_sign(a).cmp(strip_sign(b)),
    }
}

/// Most entries an ACL may hold: each insertion scans the list (OpenPBS's order is not one
/// a binary search can use), and every request may scan the server's `acl_users`.
pub const MAX_ENTRIES: usize = 4096;

/// Why entries cannot be added.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// An entry given twice, in the new entries or between them and the list: OpenPBS
    /// refuses the whole change (PBSE_DUPLIST).
    #[error("duplicate entry in list {0}")]
    Duplicate(String),
    /// More than [`MAX_ENTRIES`] entries.
    #[error("more than {MAX_ENTRIES} entries")]
    TooLong,
}

/// Adds `new` entries to `list` (`+=`, or `=` on an empty list), each where OpenPBS puts
/// it: before the first kept entry that sorts after it.
pub fn insert(kind: AclKind, list: &mut Vec<String>, new: &[&str]) -> Result<(), AclError> {
    if list.len().saturating_add(new.len()) > MAX_ENTRIES {
        return Err(AclError::TooLong);
    }
    let mut seen: std::collections::HashSet<&str> = list.iter().map(String::as_str).collect();
    for entry in new {
        if !seen.insert(entry) {
            return Err(AclError::Duplicate((*entry).to_string()));
        }
    }
    for entry in new {
        let at = list.iter().position(|e| order(kind, e, entry) == Ordering::Greater).unwrap_or(list.len());
        list.insert(at, (*entry).to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_entries_match_user_then_host() {
        assert!(user_matches("alice@h1.example.com", "alice"));
        assert!(user_matches("alice@h1.example.com", "alice@*"));
        assert!(user_matches("alice@h1.example.com", "alice@*.example.com"));
        assert!(user_matches("alice@H1.Example.COM", "alice@h1.example.com"));
        assert!(!user_matches("alice@h1.example.com", "alice@*.other.com"));
        assert!(!user_matches("alice@h1.example.com", "alicia"));
        assert!(!user_matches("alice@h1.example.com", "ali"));
        assert!(!user_matches("Alice@h1", "alice"));
        // The user part is never a wildcard.
        assert!(!user_matches("alice@h1", "*@h1"));
        assert!(!user_matches("alice", "alice@h1"));
        assert!(!user_matches("alice@h1", ""));
    }

    #[test]
    fn host_entries_match_from_the_end() {
        assert!(host_matches("h1.example.com", "*.example.com"));
        assert!(host_matches("h1.example.com", "*"));
        assert!(host_matches("h1.example.com", "*1.example.com"));
        assert!(!host_matches("example.com", "*.example.com"));
        assert!(!host_matches("h1.example.com", "example.com"));
        assert!(!host_matches("h1.example.com", "h1.example"));
        assert!(!host_matches("h1.example.com", ""));
    }

    #[test]
    fn first_match_decides_and_signs_set_the_default() {
        let list = Some("-bob@bad.example.com,bob@*.example.com");
        assert!(!check_user(list, "bob@bad.example.com"));
        assert!(check_user(list, "bob@good.example.com"));
        assert!(!check_user(list, "carol@good.example.com"));
        assert!(check_user(Some("-bob,+"), "carol@h"));
        assert!(!check_user(Some("-bob,+"), "bob@h"));
        assert!(!check_user(Some("+,-"), "carol@h"));
        assert!(!check_user(None, "carol@h"));
        assert!(!check_user(Some(""), "carol@h"));
    }

    #[test]
    fn an_empty_host_list_lets_only_the_server_host_in() {
        assert!(check_host(None, "srv.example.com", "SRV.example.com"));
        assert!(!check_host(None, "other", "srv"));
        assert!(!check_host(Some("*.example.com"), "other", "other"));
        assert!(check_host(Some("*.example.com"), "h.example.com", "srv"));
        assert!(!check_host(Some("-h.example.com,*.example.com"), "h.example.com", "srv"));
    }

    #[test]
    fn groups_match_any_group_of_the_user() {
        let groups = vec!["users".to_string(), "wheel".to_string()];
        assert!(check_group(Some("staff,wheel"), &groups));
        // The first group that matches decides.
        assert!(!check_group(Some("-wheel,users"), &groups));
        assert!(check_group(Some("users,-wheel"), &groups));
        assert!(!check_group(Some("-wheel"), &groups));
        assert!(!check_group(Some("staff"), &groups));
        assert!(!check_group(None, &groups));
    }

    #[test]
    fn entries_are_kept_most_specific_first() {
        let mut list = Vec::new();
        insert(AclKind::User, &mut list, &["bob@*.example.com", "alice", "-bob@bad.example.com"]).unwrap();
        assert_eq!(list, ["alice", "-bob@bad.example.com", "bob@*.example.com"]);
        // With the wildcard first, the exception still comes before it.
        let mut hosts = vec!["*.example.com".to_string()];
        insert(AclKind::Host, &mut hosts, &["-h1.example.com"]).unwrap();
        assert_eq!(hosts, ["-h1.example.com", "*.example.com"]);
        assert!(check_host(Some(&hosts.join(",")), "h2.example.com", "srv"));
        assert!(!check_host(Some(&hosts.join(",")), "h1.example.com", "srv"));
        assert_eq!(insert(AclKind::User, &mut list, &["alice"]), Err(AclError::Duplicate("alice".into())));
        assert_eq!(insert(AclKind::Group, &mut Vec::new(), &["g", "g"]), Err(AclError::Duplicate("g".into())));
        let mut groups = Vec::new();
        insert(AclKind::Group, &mut groups, &["staff", "-admin"]).unwrap();
        assert_eq!(groups, ["-admin", "staff"]);
        let many: Vec<String> = (0..MAX_ENTRIES).map(|i| format!("u{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(insert(AclKind::User, &mut vec!["x".to_string()], &many), Err(AclError::TooLong));
    }

    proptest::proptest! {
        /// No list or name makes a check panic; an insertion keeps every entry once; a
        /// user named by an exact `user@host` entry (and no `-` entry) is let in.
        #[test]
        fn any_input_is_answered(
            list in proptest::collection::vec("[-+]?[a-z*@.]{0,6}", 0..12),
            name in "[a-z@.]{0,8}",
        ) {
            let joined = list.join(",");
            let _ = check_user(Some(&joined), &name);
            let _ = check_host(Some(&joined), &name, "srv");
            let _ = check_group(Some(&joined), std::slice::from_ref(&name));
            let mut kept = Vec::new();
            let given: Vec<&str> = entries(&joined).collect();
            if insert(AclKind::User, &mut kept, &given).is_ok() {
                proptest::prop_assert_eq!(kept.len(), given.len());
                if !given.iter().any(|e| e.starts_with('-')) && !name.is_empty() {
                    let mut with = kept.clone();
                    let entry = format!("{name}@h");
                    if insert(AclKind::User, &mut with, &[entry.as_str()]).is_ok() && !name.contains('@') {
                        proptest::prop_assert!(check_user(Some(&with.join(",")), &entry));
                    }
                }
            }
        }
    }
}
