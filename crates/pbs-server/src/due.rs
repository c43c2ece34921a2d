//! What the server does at a time: one domain function, [`due`], handles every entry of
//! the state's timers whose time has come (`state::timers`), and returns the effects like
//! a request's handler. The server's one timer (`run.rs`) calls it and carries the effects
//! out through `apply_effects`. Periodic work sets its own next entry.
//!
//! Also periodic hooks (`hooks::periodic`). Later users: reservations' start and end,
//! dependency releases.

use crate::effects::Effects;
use crate::state::State;
use crate::state::timers::Due;

/// Seconds between two node watches.
pub const NODE_WATCH_EVERY: i64 = 1;
/// Seconds between two history purges.
pub const HISTORY_PURGE_EVERY: i64 = 30;
/// Seconds between two looks for periodic hooks due (their `freq` is in seconds).
pub const PERIODIC_HOOKS_EVERY: i64 = 1;

/// Sets the entries a server starts with: its periodic work, and every waiting job's
/// execution time (one passed while the server was down falls due at the first tick).
pub fn start(state: &mut State, now: i64) {
    state.timers.set(Due::NodeWatch, now + NODE_WATCH_EVERY);
    state.timers.set(Due::HistoryPurge, now + HISTORY_PURGE_EVERY);
    state.timers.set(Due::PeriodicHooks, now + PERIODIC_HOOKS_EVERY);
    crate::job::deferred::arm_all(state);
}

/// Handles every entry due at `now`, earliest first.
pub fn due(state: &mut State, now: i64) -> Effects {
    let mut effects = Effects::default();
    for what in state.timers.take_due(now) {
        match what {
            Due::ExecutionTime(seq) => {
                crate::job::deferred::reached(state, seq, now, crate::job::parts::LIFE, &mut effects)
            }
            Due::NodeWatch => {
                effects.merge(crate::job::nodefail::requeue_from_failed_nodes(state, now));
                state.timers.set(Due::NodeWatch, now + NODE_WATCH_EVERY);
            }
            Due::HistoryPurge => {
                let ops = crate::job::status::purge_history(state, now);
                if !ops.is_empty() {
                    tracing::info!(n_jobs = ops.len(), "Purged expired job history");
                }
                effects.ops.extend(ops);
                state.timers.set(Due::HistoryPurge, now + HISTORY_PURGE_EVERY);
            }
            Due::PeriodicHooks => {
                effects.periodic_hooks.extend(crate::hooks::periodic::due(state, now));
                state.timers.set(Due::PeriodicHooks, now + PERIODIC_HOOKS_EVERY);
            }
        }
    }
    effects
}
