//! Hooks as root manages them: who may, what an attribute may be set to (alone, and `user`
//! and `fail_action` against `event`), and qmgr's import and export of a hook's body. Only root on the server's host touches hooks, as in
//! OpenPBS: a hook runs as root, so managing one is root's power.

use base64::Engine as _;
use pbs_core::Pbse;
use pbs_core::attr::ObjectKind;
use pbs_core::hookattr::{self, HookValueError, USER_ADMIN, UserOutcome};
use pbs_proto::{MgrAttr, MgrCommand};

use crate::attrlist::AttrList;
use crate::effects::Effects;
use crate::error::ReqError;
use crate::request::Ctx;
use crate::state::{HookBody, State};
use crate::store::StoreOp;

/// The longest hook body or configuration file accepted, decoded.
pub const MAX_HOOK_BODY: usize = 1 << 20;

/// `application/x-python`: a hook's script.
pub const CONTENT_PYTHON: &str = "application/x-python";
/// `application/x-config`: a hook's configuration file.
pub const CONTENT_CONFIG: &str = "application/x-config";

fn hook_error(message: String) -> ReqError {
    ReqError::with_message(Pbse::HOOKERROR, message)
}

/// Refuses anyone but root on this host (daemons included): OpenPBS's text and code.
pub fn check_admin(state: &State, ctx: &Ctx<'_>) -> Result<(), ReqError> {
    if ctx.who.uid == 0 && !ctx.who.daemon && !ctx.who.remote {
        return Ok(());
    }
    Err(hook_error(format!(
        "{} is unauthorized to access hooks data from server {}",
        ctx.who.user_at_host(),
        state.host
    )))
}

/// The answer for a hook name that is not there.
pub fn unknown(name: &str) -> ReqError {
    hook_error(format!("{name} does not exist!"))
}

/// A hook attribute value as qmgr stores it, or OpenPBS's refusal.
pub fn normalize(name: &str, value: &str) -> Result<String, ReqError> {
    pbs_core::hookattr::normalize(name, value).map_err(|HookValueError(message)| hook_error(message))
}

/// Checks `list`, a hook as a create, set or unset (`command` with `attrs`) would leave it,
/// for its `user` against its `event` whichever of them the request set (OpenPBS's texts):
/// `pbsuser` with `periodic` is refused, `pbsuser` set on a hook with no event that runs as
/// the owner is refused, and a `pbsuser` hook whose events no longer include one goes back
/// to `pbsadmin`.
fn settle_user(list: &mut AttrList, command: MgrCommand, attrs: &[MgrAttr]) -> Result<(), ReqError> {
    let user = list.get_named(ObjectKind::Hook, "user", None).unwrap_or(USER_ADMIN);
    let events = hookattr::events(list.get_named(ObjectKind::Hook, "event", None).unwrap_or(""));
    let user_set = command != MgrCommand::Unset && attrs.iter().any(|a| a.name == "user");
    match hookattr::check_user(user, &events, user_set) {
        Ok(UserOutcome::Keep) => Ok(()),
        Ok(UserOutcome::Reset) => {
            let (def, _) = crate::attrlist::resolve(ObjectKind::Hook, "user").ok_or(ReqError::new(Pbse::INTERNAL))?;
            list.set(def, None, USER_ADMIN);
            Ok(())
        }
        Err(HookValueError(message)) => Err(hook_error(message)),
    }
}

/// Checks `list`, a hook as a create, set or unset (`command` with `attrs`) would leave it,
/// for its `user` (see [`settle_user`]) and its `fail_action` against its `event`,
/// whichever of them the request set (`hookattr::check_fail_action`).
pub fn settle(list: &mut AttrList, command: MgrCommand, attrs: &[MgrAttr]) -> Result<(), ReqError> {
    settle_user(list, command, attrs)?;
    let fail_action = list.get_named(ObjectKind::Hook, "fail_action", None).unwrap_or(hookattr::FAIL_NONE);
    let events = hookattr::events(list.get_named(ObjectKind::Hook, "event", None).unwrap_or(""));
    let fail_action_set = command != MgrCommand::Unset && attrs.iter().any(|a| a.name == "fail_action");
    // As OpenPBS's: only a request that sets `fail_action` or `event` looks at them.
    if !fail_action_set && !attrs.iter().any(|a| a.name == "event") {
        return Ok(());
    }
    match hookattr::check_fail_action(fail_action, &events, fail_action_set) {
        Ok(None) => Ok(()),
        Ok(Some(reset)) => {
            let (def, _) =
                crate::attrlist::resolve(ObjectKind::Hook, "fail_action").ok_or(ReqError::new(Pbse::INTERNAL))?;
            list.set(def, None, reset);
            Ok(())
        }
        Err(HookValueError(message)) => Err(hook_error(message)),
    }
}

/// Logs what root did to a hook as OpenPBS's server log says it.
pub fn log_request(name: &str, what: &str, ctx: &Ctx<'_>) {
    tracing::info!(
        event = "0004",
        object_type = "Hook",
        object_name = name,
        "{what} at request of {}",
        ctx.who.user_at_host()
    );
}

/// `qmgr import hook NAME CONTENT-TYPE ENCODING FILE`: replaces the hook's body or
/// configuration file with `content`, decoded; the moms whose links are up get the new set
/// of execution hooks when it changed.
pub fn import(
    state: &mut State,
    ctx: &Ctx<'_>,
    name: &str,
    content_type: &str,
    encoding: &str,
    content: &str,
) -> Result<Effects, ReqError> {
    check_admin(state, ctx)?;
    if !state.hooks.iter().any(|h| h.name == name) {
        return Err(unknown(name));
    }
    log_request(name, "mgr_hook_import", ctx);
    let text = decode(encoding, content)?;
    let mut body = state.hook_bodies.get(name).cloned().unwrap_or_default();
    match content_type {
        CONTENT_PYTHON => body.python = text.into(),
        CONTENT_CONFIG => body.config = text.into(),
        _ => return Err(hook_error(format!("<content-type> must be {CONTENT_PYTHON} or {CONTENT_CONFIG}"))),
    }
    let op = body.op(name);
    let before = crate::hooks::mom::mom_hooks(state);
    state.hook_bodies.insert(name.to_string(), body);
    let to_moms = crate::hooks::mom::changed(state, &before);
    Ok(Effects { ops: vec![op], to_moms, ..Effects::default() })
}

fn decode(encoding: &str, content: &str) -> Result<String, ReqError> {
    let bytes = match encoding {
        "default" => content.as_bytes().to_vec(),
        "base64" => {
            // `print hook` splits base64 over lines; blanks are not part of it.
            let joined: String = content.split_whitespace().collect();
            base64::engine::general_purpose::STANDARD
                .decode(joined)
                .map_err(|_| hook_error("<content-encoding> base64: the content is not valid base64".into()))?
        }
        _ => return Err(hook_error("<content-encoding> must be 'default' or 'base64'".into())),
    };
    if bytes.len() > MAX_HOOK_BODY {
        return Err(hook_error(format!("hook content larger than {MAX_HOOK_BODY} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| hook_error("hook content is not UTF-8 text".into()))
}

/// `qmgr export hook NAME CONTENT-TYPE ENCODING`: the hook's body or configuration file.
pub fn export(
    state: &State,
    ctx: &Ctx<'_>,
    name: &str,
    content_type: &str,
    encoding: &str,
) -> Result<String, ReqError> {
    check_admin(state, ctx)?;
    if !state.hooks.iter().any(|h| h.name == name) {
        return Err(unknown(name));
    }
    log_request(name, "mgr_hook_export", ctx);
    let body = state.hook_bodies.get(name);
    let text: &str = match content_type {
        CONTENT_PYTHON => body.map(|b| &*b.python).unwrap_or(""),
        CONTENT_CONFIG => body.map(|b| &*b.config).unwrap_or(""),
        _ => return Err(hook_error(format!("<content-type> must be {CONTENT_PYTHON}"))),
    };
    match encoding {
        "default" => Ok(text.to_string()),
        "base64" => Ok(base64::engine::general_purpose::STANDARD.encode(text.as_bytes())),
        _ => Err(hook_error("<content-encoding> must be 'default' or 'base64'".into())),
    }
}

/// What deleting hook `name` removes besides its attributes: its body.
pub fn deleted(state: &mut State, name: &str) -> Vec<StoreOp> {
    match state.hook_bodies.remove(name) {
        Some(_) => vec![StoreOp::DeleteObject { kind: crate::state::HOOK_BODY_KIND, name: name.to_string() }],
        None => Vec::new(),
    }
}

/// What setting attributes of hook `name` changes besides them: a new `freq` restarts a
/// periodic hook's count, so its next run is `freq` seconds from now, as OpenPBS's
/// `set hook freq` puts its timer (else a run planned with the old `freq`, the default
/// 120 s when the hook was seen before its `freq` was set, would stand).
pub fn changed(state: &mut State, name: &str, attrs: &[MgrAttr]) -> Vec<StoreOp> {
    if attrs.iter().any(|a| a.name == "freq") {
        state.periodic_hooks.next.remove(name);
    }
    Vec::new()
}

/// A body as the events that run it share it.
pub fn body_of(state: &State, name: &str) -> Option<HookBody> {
    state.hook_bodies.get(name).cloned()
}
