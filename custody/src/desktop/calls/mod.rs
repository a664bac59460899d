//! What each call from the UI does: thin, over the engine (the broker).
//! Each call checks its arguments, calls the engine, keystore or audit log
//! with a timeout, and returns a view (the same JSON the Tauri commands of
//! the single-process app returned). Decisions are made by the engine; the
//! UI never sees key material (tokens for agents are not key material).
//!
//! Which window may make which call is checked before dispatch
//! ([`super::permissions::check`]); the calls that sign also check the
//! calling window themselves: an approval is accepted only from the
//! request's own review window, a grant only from the grant form; either
//! only while that window is focused, after it has been in front for
//! [`APPROVE_DELAY`], and only from a pointer gesture on the button
//! ([`crate::approver::Gesture`]: the keyboard alone cannot approve). A
//! grant form's caveats are signed only if they are what the form showed,
//! and a widened request only if the human confirmed each widening.
//!
//! | module | calls |
//! |---|---|
//! | [`review`] | status, the pending list, reviews and decisions, opening windows |
//! | [`agents`] | pauses, known agents, agent labels |
//! | [`grant`] | the grant form: context, preview, issue |
//! | [`audit`] | the audit view and its export |
//! | [`keys`] | principal keys: list, create, import, shred, delete |
//! | [`setup`] | settings, restart, start at login, agent users |
//! | [`change_auth`] | OS authentication before a change that loosens custody |
//! | [`revoke`] | revoking a live grant (asks the OS; signs and publishes a revocation) |
//! | [`for_a_while`] | what a consent review may offer beside Approve (approve for a while) |
//! | [`freeze`] | "Stop all agents": freeze, unfreeze (asks the OS), whether frozen |
//!
//! A call that loosens custody (a weaker step-up rule or more agents in
//! `settings_save` and `agent_user_apply`, `agent_resume` of a paused
//! agent, `custody_unfreeze`, `grant_revoke`, `key_delete`, `key_import`, `key_create` next to another key)
//! asks the OS to authenticate the human for that change first
//! ([`change_auth`]); tightening never asks.

/// `format!` as a [`CallError`] of kind `Refused`.
macro_rules! refuse {
    ($($t:tt)*) => {
        $crate::desktop::calls::CallError::from(format!($($t)*))
    };
}

mod agents;
mod audit;
mod change_auth;
mod error;
mod for_a_while;
mod freeze;
mod grant;
mod keys;
mod review;
mod revoke;
mod setup;

use super::permissions::{self, valid_request_id, WindowKind, Windows, APPROVE_DELAY};
use super::service::Desktop;
use crate::approver::PendingView;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use crate::admin::KnownAgent;
pub use agents::{PauseView, PausesView};
pub use audit::{AuditFilter, AuditView, ExportView};
use error::refused;
pub use error::{CallError, ErrorCode};
pub use freeze::{FreezeView, RefusedView};
pub use grant::{GrantContext, GrantPreviewView, IssuedView};
pub use keys::KeysView;
pub use review::{DecisionView, StatusView, TrayStatus};
pub use setup::{AgentUserPlanView, AutostartView, SettingsView};

/// The window a call came from, as the UI process reported it, with what
/// that UI said about its windows (focus, arming).
pub struct Caller {
    label: String,
    windows: Arc<Windows>,
    agents: Arc<WindowAgents>,
}

/// For one UI connection: the agent key of each request window's request,
/// as custody served it while the request waited. A request's window names
/// only that agent, also once the request is decided (the grant form names
/// the agent after issuing).
#[derive(Debug, Default)]
pub struct WindowAgents(std::sync::Mutex<std::collections::HashMap<String, String>>);

impl WindowAgents {
    /// Windows remembered at most (a UI with more is a UI gone wrong).
    const MAX: usize = 256;

    fn remember(&self, label: &str, agent: String) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() < Self::MAX || m.contains_key(label) {
            m.insert(label.to_string(), agent);
        }
    }

    fn of(&self, label: &str) -> Option<String> {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.get(label).cloned()
    }
}

impl Caller {
    /// A call from window `label` of the UI whose window reports are
    /// `windows` and whose request windows' agents are `agents`.
    pub fn new(label: &str, windows: Arc<Windows>, agents: Arc<WindowAgents>) -> Caller {
        Caller {
            label: label.to_string(),
            windows,
            agents,
        }
    }

    /// The agent of this request window's request: while it waits, from
    /// custody (and remembered); after, as remembered. `None` for the main
    /// window, or a request this window was never served while it waited.
    fn request_agent(&self, state: &Desktop) -> Option<String> {
        let WindowKind::Review(id) = WindowKind::of(&self.label)? else {
            return None;
        };
        match pending(state, &id) {
            Ok(p) => {
                self.agents
                    .remember(&self.label, p.review.agent.key.clone());
                Some(p.review.agent.key)
            }
            Err(_) => self.agents.of(&self.label),
        }
    }

    /// The window's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Whether the window is in front.
    fn focused(&self) -> bool {
        self.windows.focused(&self.label)
    }

    /// Why no window may sign now: the session is locked or going to sleep.
    fn session_hold(&self) -> Option<crate::session::Hold> {
        self.windows.session_hold()
    }

    /// Whether the window has been in front for [`APPROVE_DELAY`].
    fn ready(&self) -> bool {
        self.windows.ready(&self.label)
    }
}

/// The arguments of one call, as a tuple (a missing `Option` is `None`).
macro_rules! args {
    ($v:expr; $($f:ident : $t:ty),* $(,)?) => {{
        #[derive(serde::Deserialize)]
        struct A { $($f: $t),* }
        let a: A = serde_json::from_value($v)
            .map_err(|e| CallError::new(
                ErrorCode::BadRequest,
                format!("custody did not understand the window's request: {e}"),
            ))?;
        ($(a.$f,)*)
    }};
}

fn json<T: serde::Serialize>(r: R<T>) -> R<Value> {
    r.and_then(|v| serde_json::to_value(v).map_err(|e| refuse!("cannot send the answer: {e}")))
}

/// Runs call `name` for `caller`: the permission table first, then the call.
pub async fn dispatch(d: &Arc<Desktop>, caller: &Caller, name: &str, args: Value) -> R<Value> {
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    permissions::check(caller.label(), name, &args)
        .map_err(|e| CallError::new(ErrorCode::NotPermitted, e))?;
    // A decision counts as running until its call ends (review_decide: until
    // the engine is done with it), so that Quit and Restart wait for it.
    let decision = if DECISIONS.contains(&name) {
        Some(d.decisions.begin().map_err(refused)?)
    } else {
        None
    };
    let w = caller;
    // A request window's agent is remembered while its request waits.
    let _ = caller.request_agent(d);
    match name {
        "status" => json(review::status(d).await),
        "pending_list" => json(review::pending_list(d).await),
        "review_get" => {
            let (id,) = args!(args; id: String);
            json(review::review_get(d, id).await)
        }
        "review_decide" => {
            let (id, approve, confirmed, gesture, reason, typed, for_a_while) = args!(args;
                id: String, approve: bool, confirmed: bool,
                gesture: Option<crate::approver::Gesture>, reason: Option<String>,
                typed: Option<String>, for_a_while: Option<crate::for_a_while::ForAWhile>);
            json(
                review::review_decide(
                    w,
                    d,
                    id,
                    approve,
                    confirmed,
                    gesture,
                    reason,
                    typed,
                    for_a_while,
                    decision,
                )
                .await,
            )
        }
        "review_for_a_while" => {
            let (id,) = args!(args; id: String);
            json(for_a_while::review_for_a_while(d, id).await)
        }
        "review_deny_and_pause" => {
            let (id,) = args!(args; id: String);
            json(review::review_deny_and_pause(w, d, id).await)
        }
        "review_alike" => {
            let (id,) = args!(args; id: String);
            json(review::review_alike(w, d, id).await)
        }
        "review_deny_alike" => {
            let (id, reason) = args!(args; id: String, reason: Option<String>);
            json(review::review_deny_alike(w, d, id, reason).await)
        }
        "open_window" => {
            let (kind, id, agent) =
                args!(args; kind: String, id: Option<String>, agent: Option<String>);
            json(review::open_window(d, kind, id, agent).await)
        }
        "agent_pause" => {
            let (agent, secs) = args!(args; agent: String, secs: Option<i64>);
            json(agents::agent_pause(d, agent, secs).await)
        }
        "agent_resume" => {
            let (agent,) = args!(args; agent: String);
            json(agents::agent_resume(d, agent).await)
        }
        "agent_pauses" => json(agents::agent_pauses(d).await),
        "grant_revoke" => {
            let (grant, reason) = args!(args; grant: String, reason: Option<String>);
            json(revoke::grant_revoke(d, grant, reason).await)
        }
        "custody_frozen" => json(freeze::custody_frozen(d).await),
        "custody_freeze" => json(freeze::custody_freeze(d).await),
        "custody_unfreeze" => json(freeze::custody_unfreeze(d).await),
        "agent_label_set" => {
            let (agent, label) = args!(args; agent: String, label: Option<String>);
            json(agents::agent_label_set(w, d, agent, label).await)
        }
        "grant_context" => {
            let (request,) = args!(args; request: Option<String>);
            json(grant::grant_context(d, request).await)
        }
        "grant_preview" => {
            let (agent, caveats, principal, request) = args!(args;
                agent: String, caveats: Value, principal: Option<String>, request: Option<String>);
            json(grant::grant_preview(w, d, agent, caveats, principal, request).await)
        }
        "grant_issue" => {
            let (agent, caveats, shown, widenings, gesture, principal, note, request) = args!(args;
                agent: String, caveats: Value, shown: Value, widenings: Vec<String>,
                gesture: Option<crate::approver::Gesture>, principal: Option<String>,
                note: Option<String>, request: Option<String>);
            json(
                grant::grant_issue(
                    w, d, agent, caveats, shown, widenings, gesture, principal, note, request,
                )
                .await,
            )
        }
        "audit_query" => {
            let (filter,) = args!(args; filter: AuditFilter);
            json(audit::audit_query(d, filter).await)
        }
        "audit_export" => {
            let (format, filter) = args!(args; format: String, filter: AuditFilter);
            json(audit::audit_export(d, format, filter).await)
        }
        "keys_list" => json(keys::keys_list(d).await),
        "key_create" => {
            let (label,) = args!(args; label: String);
            json(keys::key_create(d, label).await)
        }
        "key_import" => {
            let (path, label) = args!(args; path: String, label: String);
            json(keys::key_import(d, path, label).await)
        }
        "key_shred" => {
            let (path,) = args!(args; path: String);
            json(keys::key_shred(d, path).await)
        }
        "key_delete" => {
            let (public, confirm) = args!(args; public: String, confirm: String);
            json(keys::key_delete(d, public, confirm).await)
        }
        "settings_get" => json(setup::settings_get(d).await),
        "settings_save" => {
            let (settings,) = args!(args; settings: super::settings::Settings);
            json(setup::settings_save(d, settings).await)
        }
        "settings_loosenings" => {
            let (settings,) = args!(args; settings: super::settings::Settings);
            json(setup::settings_loosenings(d, settings).await)
        }
        "app_restart" => json(setup::app_restart(d).await),
        "app_quit" => json(setup::app_quit(d).await),
        "autostart_set" => {
            let (enabled,) = args!(args; enabled: bool);
            json(setup::autostart_set(d, enabled).await)
        }
        "agent_user_plan" => {
            let (user,) = args!(args; user: String);
            json(setup::agent_user_plan(user).await)
        }
        "prompt_owner_apply" => json(setup::prompt_owner_apply(d).await),
        "agent_user_apply" => {
            let (user, shown) = args!(args; user: String, shown: Vec<String>);
            json(setup::agent_user_apply(d, user, shown).await)
        }
        other => Err(CallError::new(
            ErrorCode::BadRequest,
            format!("custody has no call {other:?}"),
        )),
    }
}

/// The calls that decide a waiting request (counted by
/// [`crate::desktop::in_flight`]).
const DECISIONS: [&str; 4] = [
    "review_decide",
    "review_deny_and_pause",
    "review_deny_alike",
    "grant_issue",
];

/// Keychain and audit calls (a locked keychain may wait for an unlock prompt).
const BLOCKING_TIMEOUT: Duration = Duration::from_secs(60);

/// A decision: OS authentication (the human types a password, bounded by
/// the engine), signing, the audit row, handing the token to the agent. The
/// engine finishes a decision even when this wait gives up. The window waits
/// longer still ([`DECIDE_WAIT`]), so the answer always reaches it.
pub(crate) const DECIDE_TIMEOUT: Duration =
    Duration::from_secs(crate::stepup::DEFAULT_TIMEOUT.as_secs() + 30);

/// How long a window waits for a decision's answer (the UI's constant).
pub use parley_custody_client::ui_constants::DECIDE_WAIT;

type R<T> = Result<T, CallError>;

async fn blocking<T: Send + 'static>(
    what: &'static str,
    f: impl FnOnce() -> R<T> + Send + 'static,
) -> R<T> {
    match tokio::time::timeout(BLOCKING_TIMEOUT, tokio::task::spawn_blocking(f)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(refuse!("{what} failed: {e}")),
        Err(_) => Err(CallError::new(
            ErrorCode::Timeout,
            format!(
                "{what} did not finish within {} s (is the keychain locked and waiting for you?)",
                BLOCKING_TIMEOUT.as_secs()
            ),
        )),
    }
}

async fn timed<T>(what: &'static str, f: impl Future<Output = T>) -> R<T> {
    tokio::time::timeout(DECIDE_TIMEOUT, f).await.map_err(|_| {
        CallError::new(
            ErrorCode::Timeout,
            format!(
                "{what} did not finish within {} s",
                DECIDE_TIMEOUT.as_secs()
            ),
        )
    })
}

fn request_id(id: &str) -> R<()> {
    if valid_request_id(id) {
        Ok(())
    } else {
        Err(CallError::new(ErrorCode::BadRequest, "not a request id"))
    }
}

fn pending(state: &Desktop, id: &str) -> R<PendingView> {
    let core = state.core()?;
    core.engine
        .pending()
        .into_iter()
        .find(|p| p.id == id)
        .map(|p| state.label(p))
        .ok_or_else(|| {
            CallError::new(
                ErrorCode::Gone,
                "This request is no longer waiting: it was decided, expired, or the agent withdrew it.",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uis_decide_timeout_exceeds_the_services_step_up_limit() {
        // polkit's time for the password < custody's limit on a decision
        // (password, signing, audit row, answer) < the window's wait, with
        // room for the answer to cross the channel.
        let polkit = crate::stepup::DEFAULT_TIMEOUT;
        assert!(DECIDE_TIMEOUT > polkit, "{DECIDE_TIMEOUT:?} <= {polkit:?}");
        assert!(
            DECIDE_WAIT >= DECIDE_TIMEOUT + Duration::from_secs(30),
            "the window gives up ({DECIDE_WAIT:?}) before custody can answer ({DECIDE_TIMEOUT:?})"
        );
        // The page imports the same value (the generated file is checked
        // for staleness in parley-custody-client).
        let ts = include_str!("../../../../ui/src/custody-constants.ts");
        assert!(
            ts.contains(&format!(
                "export const DECIDE_WAIT_MS = {}\n",
                DECIDE_WAIT.as_millis()
            )),
            "ui/src/custody-constants.ts does not carry DECIDE_WAIT"
        );
    }
}
