//! Whether a job holds its nodes exclusively: a node's `sharing` attribute against the
//! job's `place` (OpenPBS's `is_excl` and `do_exclhost`). The one home of the rule: the
//! scheduler places by it, its mirror books pending runs by it, and the server accounts
//! runs by it.

use crate::select::Sharing as PlaceSharing;

/// A node's `sharing` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NodeSharing {
    #[default]
    DefaultShared,
    DefaultExcl,
    DefaultExclhost,
    IgnoreExcl,
    ForceExcl,
    ForceExclhost,
}

impl NodeSharing {
    /// The value of a node's `sharing` (unset or unknown is `default_shared`).
    pub fn parse(text: &str) -> NodeSharing {
        match text.trim() {
            "default_excl" => NodeSharing::DefaultExcl,
            "default_exclhost" => NodeSharing::DefaultExclhost,
            "ignore_excl" => NodeSharing::IgnoreExcl,
            "force_excl" => NodeSharing::ForceExcl,
            "force_exclhost" => NodeSharing::ForceExclhost,
            _ => NodeSharing::DefaultShared,
        }
    }
}

/// Whether a node is used exclusively by a job with this placement (OpenPBS `is_excl`).
pub fn is_excl(place: PlaceSharing, node: NodeSharing) -> bool {
    match node {
        NodeSharing::ForceExcl | NodeSharing::ForceExclhost => return true,
        NodeSharing::IgnoreExcl => return false,
        NodeSharing::DefaultShared | NodeSharing::DefaultExcl | NodeSharing::DefaultExclhost => {}
    }
    match place {
        PlaceSharing::Excl | PlaceSharing::ExclHost => true,
        PlaceSharing::Shared => false,
        PlaceSharing::Default => matches!(node, NodeSharing::DefaultExcl | NodeSharing::DefaultExclhost),
    }
}

/// Whether the whole host goes to the job (OpenPBS's `do_exclhost` in eval_placement).
pub fn is_exclhost(place: PlaceSharing, node: NodeSharing) -> bool {
    node == NodeSharing::ForceExclhost
        || (node == NodeSharing::DefaultExclhost && !matches!(place, PlaceSharing::Excl | PlaceSharing::Shared))
        || place == PlaceSharing::ExclHost
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharing_combines_as_openpbs() {
        use NodeSharing as N;
        use PlaceSharing as P;
        assert!(!is_excl(P::Default, N::DefaultShared));
        assert!(is_excl(P::Excl, N::DefaultShared));
        assert!(is_excl(P::Default, N::DefaultExcl));
        assert!(is_excl(P::Default, N::DefaultExclhost));
        assert!(!is_excl(P::Shared, N::DefaultExcl));
        assert!(is_excl(P::Shared, N::ForceExcl));
        assert!(!is_excl(P::Excl, N::IgnoreExcl));
        assert!(!is_excl(P::ExclHost, N::IgnoreExcl));
        assert!(is_exclhost(P::Default, N::DefaultExclhost));
        assert!(!is_exclhost(P::Excl, N::DefaultExclhost));
        assert!(is_exclhost(P::ExclHost, N::DefaultShared));
        assert_eq!(NodeSharing::parse(" ignore_excl"), N::IgnoreExcl);
        assert_eq!(NodeSharing::parse("nonsense"), N::DefaultShared);
    }
}
