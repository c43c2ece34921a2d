//! What a hook's attributes may be (`qmgr set hook NAME attr=value`): the events a hook can
//! run at, each attribute's canonical form, and OpenPBS's refusal texts.

use std::fmt;
use std::str::FromStr;

/// An event a hook runs at. Only the events this suite runs are accepted, so a hook is
/// never set for an event at which it would silently never run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// A job is submitted (qsub), before it exists: the hook may change or refuse it.
    QueueJob,
    /// A job is altered (qalter), before the change: the hook may change or refuse it.
    ModifyJob,
    /// A run is about to be sent to the moms (scheduler or qrun): the hook may refuse it.
    RunJob,
    /// Every `freq` seconds, on the server.
    Periodic,
    /// On each node of a job, before it starts there: a refusal requeues the job.
    ExecjobBegin,
    /// On the mother superior, just before the job's script.
    ExecjobPrologue,
    /// On the mother superior, after the script, with its exit status and usage.
    ExecjobEpilogue,
    /// On each node of a job, once it has ended there.
    ExecjobEnd,
    /// On a mom when it starts and when it is sent SIGHUP, with no job: a failure may
    /// offline its node (`offline_vnodes`), a later success clear that
    /// (`clear_vnodes_upon_recovery`).
    ExechostStartup,
}

impl HookEvent {
    /// Every event, in OpenPBS's order.
    pub const ALL: [HookEvent; 9] = [
        HookEvent::QueueJob,
        HookEvent::ModifyJob,
        HookEvent::RunJob,
        HookEvent::Periodic,
        HookEvent::ExecjobBegin,
        HookEvent::ExecjobPrologue,
        HookEvent::ExecjobEpilogue,
        HookEvent::ExecjobEnd,
        HookEvent::ExechostStartup,
    ];

    /// Whether the event happens on the moms (the server sends such hooks to every mom).
    pub fn on_mom(self) -> bool {
        matches!(
            self,
            HookEvent::ExecjobBegin
                | HookEvent::ExecjobPrologue
                | HookEvent::ExecjobEpilogue
                | HookEvent::ExecjobEnd
                | HookEvent::ExechostStartup
        )
    }

    /// Whether a hook with `user=pbsuser` runs as the job's owner at this event: OpenPBS's
    /// `USER_MOM_EVENTS` (`execjob_prologue`, `execjob_epilogue`, and `execjob_preterm`,
    /// which this suite does not run). At every other event such a hook runs as root.
    pub fn runs_as_owner(self) -> bool {
        matches!(self, HookEvent::ExecjobPrologue | HookEvent::ExecjobEpilogue)
    }

    /// Its name in `qmgr` and in `pbs.event().type`'s text.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::QueueJob => "queuejob",
            HookEvent::ModifyJob => "modifyjob",
            HookEvent::RunJob => "runjob",
            HookEvent::Periodic => "periodic",
            HookEvent::ExecjobBegin => "execjob_begin",
            HookEvent::ExecjobPrologue => "execjob_prologue",
            HookEvent::ExecjobEpilogue => "execjob_epilogue",
            HookEvent::ExecjobEnd => "execjob_end",
            HookEvent::ExechostStartup => "exechost_startup",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for HookEvent {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        HookEvent::ALL.into_iter().find(|e| e.name() == s).ok_or(())
    }
}

/// The events of an `event` value (`queuejob,modifyjob`; empty or `""` is none).
pub fn events(value: &str) -> Vec<HookEvent> {
    value.split(',').filter_map(|e| e.trim().parse().ok()).collect()
}

/// A hook attribute value qmgr may not set, with OpenPBS's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookValueError(pub String);

/// `user=pbsadmin`: the hook runs as root (the default).
pub const USER_ADMIN: &str = "pbsadmin";
/// `user=pbsuser`: the hook runs as the job's owner at the events that allow it.
pub const USER_OWNER: &str = "pbsuser";

/// `fail_action=none`: a failing hook fails its event and nothing more (the default).
pub const FAIL_NONE: &str = "none";
/// `fail_action=offline_vnodes`: the node where an execjob_begin, execjob_prologue or
/// exechost_startup hook failed is marked offline.
pub const FAIL_OFFLINE_VNODES: &str = "offline_vnodes";
/// `fail_action=clear_vnodes_upon_recovery`: once a mom's exechost_startup hooks run
/// without an error, the offline a hook's failure set on its node is cleared.
pub const FAIL_CLEAR_VNODES: &str = "clear_vnodes_upon_recovery";
/// `fail_action=scheduler_restart_cycle`: the scheduler is asked for a new cycle when an
/// execjob_begin or execjob_prologue hook failed.
pub const FAIL_RESTART_CYCLE: &str = "scheduler_restart_cycle";

const FAIL_ACTION_VALUES: &str = "fail_action value of a hook must be \"none\" or one or more of \
                                  \"offline_vnodes\",\"clear_vnodes_upon_recovery\", \"scheduler_restart_cycle\"";

/// Checks a hook's `fail_action` against its `events` after a request (OpenPBS's
/// `set_hook_fail_action` with `strict`, and `mgr_hook_set`), whichever of the two the
/// request set. When the request set `fail_action` (`fail_action_set`): `offline_vnodes`
/// needs an execjob_begin, execjob_prologue or exechost_startup event,
/// `scheduler_restart_cycle` an execjob_begin or execjob_prologue one, and
/// `clear_vnodes_upon_recovery` an exechost_startup one, with OpenPBS's texts. When it only
/// changed the events, what they no longer allow goes (`Some`, the new value): all of it,
/// back to `none`, when none of the three is left (as OpenPBS's `mgr_hook_set`), and
/// otherwise `scheduler_restart_cycle` or `clear_vnodes_upon_recovery` whose event went.
pub fn check_fail_action(
    fail_action: &str,
    events: &[HookEvent],
    fail_action_set: bool,
) -> Result<Option<String>, HookValueError> {
    let has = |event: HookEvent| events.contains(&event);
    let restarts = has(HookEvent::ExecjobBegin) || has(HookEvent::ExecjobPrologue);
    let starts_up = has(HookEvent::ExechostStartup);
    let may_fail_over = restarts || starts_up;
    if !fail_action_set {
        if fail_action == FAIL_NONE {
            return Ok(None);
        }
        if !may_fail_over {
            return Ok(Some(FAIL_NONE.to_string()));
        }
        let kept: Vec<&str> = fail_action
            .split(',')
            .map(str::trim)
            .filter(|w| match *w {
                FAIL_RESTART_CYCLE => restarts,
                FAIL_CLEAR_VNODES => starts_up,
                _ => true,
            })
            .collect();
        let kept = if kept.is_empty() { FAIL_NONE.to_string() } else { kept.join(",") };
        return Ok((kept != fail_action).then_some(kept));
    }
    for word in fail_action.split(',').map(str::trim) {
        let refused = |needs: &str| {
            Err(HookValueError(format!(
                "Can't set hook fail_action value to '{word}': hook event must contain {needs}"
            )))
        };
        match word {
            FAIL_OFFLINE_VNODES if !may_fail_over => {
                return refused("at least one of execjob_begin, exechost_startup, execjob_prologue");
            }
            FAIL_RESTART_CYCLE if !restarts => return refused("at least one of execjob_begin, execjob_prologue"),
            FAIL_CLEAR_VNODES if !starts_up => return refused("at least an exechost_startup value"),
            _ => {}
        }
    }
    Ok(None)
}

/// What a hook's `user` becomes once a request has set its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserOutcome {
    /// It stays as it is.
    Keep,
    /// Its events no longer include one that runs as the owner: it goes back to
    /// `pbsadmin`, as OpenPBS's `set hook event` does.
    Reset,
}

/// Checks a hook's `user` against its `events` after a request (OpenPBS's `set_hook_user`
/// with `strict`, and `mgr_hook_set`), whichever of the two the request set: `pbsuser` is
/// refused with any `periodic` event, and, when the request set `user` (`user_set`), unless
/// an event runs as the owner; a request that only changed the events of a `pbsuser` hook
/// so that none runs as the owner resets it to `pbsadmin`.
pub fn check_user(user: &str, events: &[HookEvent], user_set: bool) -> Result<UserOutcome, HookValueError> {
    if user != USER_OWNER {
        return Ok(UserOutcome::Keep);
    }
    if events.contains(&HookEvent::Periodic) {
        return Err(HookValueError(format!("user value of a server periodic hook must be {USER_ADMIN}")));
    }
    if events.iter().any(|e| e.runs_as_owner()) {
        return Ok(UserOutcome::Keep);
    }
    if user_set {
        // OpenPBS names its three events, execjob_preterm included.
        return Err(HookValueError(format!(
            "Can't set hook user value to '{USER_OWNER}': hook event must contain at least \
             execjob_prologue,execjob_epilogue,execjob_preterm"
        )));
    }
    Ok(UserOutcome::Reset)
}

fn flag(value: &str) -> Result<&'static str, HookValueError> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "t" | "y" | "1" => Ok("true"),
        "false" | "f" | "n" | "0" => Ok("false"),
        _ => Err(HookValueError(format!(
            "unexpected value '{value}', must be (not case sensitive) true|t|y|1|false|f|n|0"
        ))),
    }
}

fn positive(name: &str, value: &str) -> Result<String, HookValueError> {
    match value.trim().parse::<i64>() {
        Ok(n) if n > 0 => Ok(n.to_string()),
        _ => Err(HookValueError(format!("set_hook_{name}: {name} value '{value}' of a hook must be > 0"))),
    }
}

/// The canonical value of hook attribute `name` set to `value` (as `qmgr list hook`
/// shows it), or OpenPBS's refusal.
pub fn normalize(name: &str, value: &str) -> Result<String, HookValueError> {
    match name {
        "enabled" | "debug" => flag(value).map(str::to_string),
        "type" => match value.to_ascii_lowercase().as_str() {
            "site" => Ok("site".into()),
            _ => Err(HookValueError("invalid argument to type, must be \"site\"".into())),
        },
        "user" => match value {
            "pbsadmin" | "pbsuser" => Ok(value.into()),
            _ => Err(HookValueError("user value of a hook must be pbsadmin,pbsuser".into())),
        },
        "alarm" | "freq" => positive(name, value),
        "order" => match value.trim().parse::<i64>() {
            Ok(n) if (1..=1000).contains(&n) => Ok(n.to_string()),
            _ => Err(HookValueError(format!("order value '{value}' of a site hook must be in the range 1..1000"))),
        },
        "event" => {
            let mut chosen: Vec<HookEvent> = Vec::new();
            for word in value.split(',').map(str::trim) {
                if word.is_empty() || word == "\"\"" || word == "none" {
                    continue;
                }
                let Ok(event) = word.parse::<HookEvent>() else {
                    let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
                    return Err(HookValueError(format!(
                        "invalid argument ({value}) to event. Should be one or more of: {} or \"\" for no event",
                        known.join(",")
                    )));
                };
                if !chosen.contains(&event) {
                    chosen.push(event);
                }
            }
            chosen.sort();
            Ok(chosen.iter().map(|e| e.name()).collect::<Vec<_>>().join(","))
        }
        "fail_action" => {
            let mut chosen = Vec::new();
            for word in value.split(',').map(str::trim) {
                match word {
                    FAIL_NONE | FAIL_OFFLINE_VNODES | FAIL_CLEAR_VNODES | FAIL_RESTART_CYCLE => {
                        if !chosen.contains(&word) {
                            chosen.push(word);
                        }
                    }
                    _ => return Err(HookValueError(FAIL_ACTION_VALUES.into())),
                }
            }
            if chosen.len() > 1 && chosen.contains(&FAIL_NONE) {
                // OpenPBS's set_hook_fail_action: `none` goes with nothing else.
                return Err(HookValueError(FAIL_ACTION_VALUES.into()));
            }
            Ok(if chosen.is_empty() { FAIL_NONE.to_string() } else { chosen.join(",") })
        }
        _ => Ok(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_openpbs_forms() {
        assert_eq!(normalize("enabled", "T").unwrap(), "true");
        assert_eq!(normalize("debug", "0").unwrap(), "false");
        assert!(normalize("enabled", "maybe").unwrap_err().0.starts_with("unexpected value 'maybe'"));
        assert_eq!(normalize("event", "modifyjob, queuejob").unwrap(), "queuejob,modifyjob");
        assert_eq!(normalize("event", "\"\"").unwrap(), "");
        assert!(normalize("event", "bogus").unwrap_err().0.starts_with("invalid argument (bogus) to event."));
        assert_eq!(normalize("alarm", "3").unwrap(), "3");
        assert!(normalize("alarm", "0").is_err());
        assert!(normalize("order", "1001").is_err());
        assert!(normalize("user", "root").is_err());
        assert_eq!(
            normalize("fail_action", "scheduler_restart_cycle,offline_vnodes").unwrap(),
            "scheduler_restart_cycle,offline_vnodes"
        );
        for combined in ["none,offline_vnodes", "offline_vnodes,none"] {
            assert!(
                normalize("fail_action", combined).unwrap_err().0.starts_with("fail_action value of a hook must be")
            );
        }
        assert_eq!(events("queuejob,modifyjob"), vec![HookEvent::QueueJob, HookEvent::ModifyJob]);
        assert_eq!(events(""), vec![]);
    }

    #[test]
    fn fail_actions_need_the_events_they_act_at_and_go_back_to_none_without_them() {
        use HookEvent::*;
        assert_eq!(check_fail_action("offline_vnodes,scheduler_restart_cycle", &[ExecjobPrologue], true), Ok(None));
        assert_eq!(
            check_fail_action("offline_vnodes", &[ExecjobEnd], true).unwrap_err().0,
            "Can't set hook fail_action value to 'offline_vnodes': hook event must contain at least one of \
             execjob_begin, exechost_startup, execjob_prologue"
        );
        assert_eq!(
            check_fail_action("scheduler_restart_cycle", &[QueueJob], true).unwrap_err().0,
            "Can't set hook fail_action value to 'scheduler_restart_cycle': hook event must contain at least one of \
             execjob_begin, execjob_prologue"
        );
        assert_eq!(
            check_fail_action("clear_vnodes_upon_recovery", &[ExecjobBegin], true).unwrap_err().0,
            "Can't set hook fail_action value to 'clear_vnodes_upon_recovery': hook event must contain at least an \
             exechost_startup value"
        );
        assert_eq!(check_fail_action("clear_vnodes_upon_recovery,offline_vnodes", &[ExechostStartup], true), Ok(None));
        assert_eq!(
            check_fail_action("scheduler_restart_cycle", &[ExechostStartup], true).unwrap_err().0,
            "Can't set hook fail_action value to 'scheduler_restart_cycle': hook event must contain at least one of \
             execjob_begin, execjob_prologue"
        );
        // Only the events changed: a fail_action they no longer allow goes, none stays.
        assert_eq!(check_fail_action("offline_vnodes", &[ExecjobEnd], false), Ok(Some("none".into())));
        assert_eq!(
            check_fail_action("offline_vnodes,clear_vnodes_upon_recovery", &[ExecjobBegin], false),
            Ok(Some("offline_vnodes".into()))
        );
        assert_eq!(
            check_fail_action("scheduler_restart_cycle,offline_vnodes", &[ExechostStartup], false),
            Ok(Some("offline_vnodes".into()))
        );
        assert_eq!(check_fail_action("clear_vnodes_upon_recovery", &[ExecjobBegin], false), Ok(Some("none".into())));
        assert_eq!(check_fail_action("offline_vnodes", &[ExecjobBegin], false), Ok(None));
        assert_eq!(check_fail_action("none", &[QueueJob], true), Ok(None));
        assert_eq!(check_fail_action("none", &[], false), Ok(None));
    }

    #[test]
    fn pbsuser_needs_an_owner_event_and_never_goes_with_periodic() {
        use HookEvent::*;
        let periodic = "user value of a server periodic hook must be pbsadmin";
        assert_eq!(check_user("pbsuser", &[Periodic], true).unwrap_err().0, periodic);
        // Whichever is set last: events set on a pbsuser hook are refused the same way.
        assert_eq!(check_user("pbsuser", &[Periodic, ExecjobEpilogue], false).unwrap_err().0, periodic);
        assert!(
            check_user("pbsuser", &[QueueJob], true).unwrap_err().0.starts_with(
                "Can't set hook user value to 'pbsuser': hook event must contain at least execjob_prologue"
            )
        );
        assert_eq!(check_user("pbsuser", &[QueueJob, ExecjobPrologue], true), Ok(UserOutcome::Keep));
        assert_eq!(check_user("pbsuser", &[ExecjobEnd], false), Ok(UserOutcome::Reset));
        assert_eq!(check_user("pbsadmin", &[Periodic], true), Ok(UserOutcome::Keep));
        assert!(ExecjobEpilogue.runs_as_owner() && !ExecjobBegin.runs_as_owner() && !ExecjobEnd.runs_as_owner());
    }
}
