//! The execution hooks the moms run, as data: the set every mom holds (enabled hooks with a
//! mom event and a body), the frames that give it to the moms whose links are up when it
//! changes, and the frame a mom gets when its link comes up. No I/O: the frames leave
//! through `Effects`.

use pbs_core::attr::{ObjectKind, parse_bool};
use pbs_core::hookattr::{self, HookEvent};
use pbs_proto::mom::{MomHook, ToMom};

use crate::effects::MomFrames;
use crate::state::State;

/// The hooks every mom runs, by name: enabled, with at least one mom event and a body.
pub fn mom_hooks(state: &State) -> Vec<MomHook> {
    let mut hooks: Vec<MomHook> = Vec::new();
    for hook in &state.hooks {
        let attr = |name: &str| hook.attrs.get_named(ObjectKind::Hook, name, None);
        if !attr("enabled").and_then(parse_bool).unwrap_or(true) {
            continue;
        }
        let events: Vec<HookEvent> =
            hookattr::events(attr("event").unwrap_or("")).into_iter().filter(|e| e.on_mom()).collect();
        if events.is_empty() {
            continue;
        }
        let Some(body) = state.hook_bodies.get(&hook.name).filter(|b| !b.python.trim().is_empty()) else {
            continue;
        };
        hooks.push(MomHook {
            name: hook.name.clone(),
            events: events.iter().map(|e| e.name().to_string()).collect(),
            order: attr("order").and_then(|o| o.parse().ok()).unwrap_or(1),
            alarm: attr("alarm").and_then(|a| a.parse().ok()).unwrap_or(30),
            fail_action: attr("fail_action").unwrap_or("none").to_string(),
            debug: attr("debug").and_then(parse_bool).unwrap_or(false),
            user: attr("user").unwrap_or("pbsadmin").to_string(),
            script: body.python.to_string(),
        });
    }
    hooks.sort_by(|a, b| a.name.cmp(&b.name));
    hooks
}

/// The frame a mom gets when its link comes up: the whole current set, which replaces
/// whatever it kept (an empty set clears hooks deleted while it was away).
pub fn link_up(state: &State, node: &str) -> (String, ToMom) {
    (node.to_string(), ToMom::Hooks { hooks: mom_hooks(state) })
}

/// The frames for every mom whose link is up when the set changed from `before` (nothing
/// when it did not). A mom whose link is down gets the set when its link comes up.
pub fn changed(state: &State, before: &[MomHook]) -> MomFrames {
    let hooks = mom_hooks(state);
    if hooks == before {
        return Vec::new();
    }
    let mut up: Vec<&String> = state.node_rt.iter().filter(|(_, rt)| rt.up).map(|(name, _)| name).collect();
    up.sort();
    up.into_iter().map(|node| (node.clone(), ToMom::Hooks { hooks: hooks.clone() })).collect()
}

/// The comment OpenPBS gives a node a failing hook offlined.
pub fn offline_comment(hook: &str) -> String {
    format!("offlined by hook '{hook}' due to hook error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comment_is_openpbs() {
        assert_eq!(offline_comment("h"), "offlined by hook 'h' due to hook error");
    }
}
