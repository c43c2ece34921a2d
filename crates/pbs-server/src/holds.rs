//! Who may set or clear which hold letter (`Hold_Types`), for qhold, qrls and qalter alike.

use pbs_core::Pbse;
use pbs_core::attr::Privilege;

use crate::error::ReqError;

/// The hold letters a privilege may set or clear: `u` for owners, `o` for operators, `s`
/// (and `p`) for managers.
pub fn allowed(privilege: Privilege, letter: char) -> bool {
    match letter {
        'u' => true,
        'o' => privilege >= Privilege::Operator,
        's' | 'p' => privilege >= Privilege::Manager,
        _ => false,
    }
}

/// Checks a qalter of `Hold_Types` from `old` to `new`: every letter set on one side only
/// is being set or cleared and needs its privilege, as OpenPBS's `chk_hold_priv` checks the
/// bits that differ. `n` (none) is no letter. Refused with PBSE_PERM.
pub fn check_alter(privilege: Privilege, old: &str, new: &str) -> Result<(), ReqError> {
    let changed = old.chars().filter(|c| !new.contains(*c)).chain(new.chars().filter(|c| !old.contains(*c)));
    for letter in changed.filter(|c| *c != 'n') {
        if !allowed(privilege, letter) {
            return Err(ReqError::new(Pbse::PERM));
        }
    }
    Ok(())
}

/// A hold list as OpenPBS writes it: its letters in the order `s o u p`, `n` when none.
pub fn written(letters: impl Fn(char) -> bool) -> String {
    let held: String = "soup".chars().filter(|c| letters(*c)).collect();
    if held.is_empty() { "n".to_string() } else { held }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_letters_need_their_privilege() {
        use Privilege::{Manager, Operator, User};
        assert!(check_alter(User, "n", "u").is_ok());
        assert!(check_alter(User, "u", "n").is_ok());
        // Letters kept as they are need nothing.
        assert!(check_alter(User, "os", "uos").is_ok());
        assert!(check_alter(User, "os", "n").is_err());
        assert!(check_alter(User, "os", "u").is_err());
        assert!(check_alter(User, "n", "s").is_err());
        assert!(check_alter(Operator, "os", "s").is_ok());
        assert!(check_alter(Operator, "os", "o").is_err());
        assert!(check_alter(Manager, "os", "n").is_ok());
        assert_eq!(check_alter(User, "o", "n").map_err(|e| e.code), Err(Pbse::PERM));
    }
}
