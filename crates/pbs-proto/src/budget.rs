//! Bytes in flight per holder (a local uid): what one user's frames may make a daemon hold
//! at once, across all of that user's connections. A connection takes a frame's length
//! from its holder's budget when the frame's header arrives, before the body is buffered,
//! and gives it back once the frame has been handled; a frame over what is left is refused
//! and its connection closed, so a user's many connections cannot make the server hold
//! their count times the largest frame.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Frames up to this size take nothing from a budget: what they cost is bounded by the
/// connections a holder may have, and a holder whose big frames are in flight can still
/// connect and make small requests.
pub const FREE_FRAME_LEN: usize = 64 << 10;

/// Every holder's bytes in flight, each held to the same limit.
pub struct ByteBudget {
    limit: usize,
    used: Mutex<HashMap<u32, usize>>,
}

/// Bytes taken from a holder's budget; given back when dropped.
pub struct Held {
    budget: Arc<ByteBudget>,
    holder: u32,
    bytes: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = used.get_mut(&self.holder) {
            *n = n.saturating_sub(self.bytes);
            if *n == 0 {
                used.remove(&self.holder);
            }
        }
    }
}

impl ByteBudget {
    /// Budgets of `limit` bytes each.
    pub fn new(limit: usize) -> Arc<ByteBudget> {
        Arc::new(ByteBudget { limit, used: Mutex::default() })
    }

    /// `bytes` of `holder`'s budget, if that much is left.
    pub fn take(self: &Arc<Self>, holder: u32, bytes: usize) -> Option<Held> {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let now = used.get(&holder).copied().unwrap_or(0);
        let after = now.checked_add(bytes).filter(|after| *after <= self.limit)?;
        used.insert(holder, after);
        Some(Held { budget: self.clone(), holder, bytes })
    }

    /// Bytes `holder` has in flight.
    pub fn used(&self, holder: u32) -> usize {
        self.used.lock().unwrap_or_else(PoisonError::into_inner).get(&holder).copied().unwrap_or(0)
    }
}

/// One connection's holder and budget.
pub struct FrameBudget {
    /// The budgets.
    pub budget: Arc<ByteBudget>,
    /// Whose budget this connection's frames take from.
    pub holder: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_gets_its_limit_and_gets_it_back() {
        let budget = ByteBudget::new(100);
        let a = budget.take(7, 60).unwrap();
        assert!(budget.take(7, 41).is_none());
        let b = budget.take(7, 40).unwrap();
        // Another holder has a budget of its own.
        let other = budget.take(8, 100).unwrap();
        assert_eq!(budget.used(7), 100);
        drop((a, other));
        assert_eq!((budget.used(7), budget.used(8)), (40, 0));
        drop(b);
        assert!(budget.take(7, 100).is_some());
        assert!(budget.take(7, usize::MAX).is_none());
    }
}
