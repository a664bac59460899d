//! The Tauri command layer: thin, over the engine (the broker). Each command
//! checks its arguments, calls the engine, keystore or audit log with a
//! timeout, and returns a view. Decisions are made by the engine; the UI never
//! sees key material (tokens for agents are not key material).
//!
//! Which window may call which command is set by `capabilities/*.json`; the
//! commands that sign also check the calling window themselves: an approval
//! is accepted only from the request's own review window, a grant only from
//! the grant form; either only while that window is focused, after it has
//! been in front for [`windows::APPROVE_DELAY`], and only from a pointer
//! gesture on the button ([`Gesture`]: the keyboard alone cannot approve).
//! A grant form's caveats are signed only if they are what the form showed,
//! and a widened request only if the human confirmed each widening.

use crate::autostart::Autostart;
use crate::notify::NotifyStatus;
use crate::settings::Settings;
use crate::state::{AppState, PolicyView, SocketStatus};
use crate::views::{self, EventView, KeyView};
use crate::windows;
use parley_core::PublicKey;
use parley_custody::approver::{Gesture, PendingView, Verdict, Yes};
use parley_custody::audit::{self, EventKind, NewEvent, Query, VerifyReport};
use parley_custody::engine::{unix_now, DecideError, IssueError, DENY_AND_PAUSE_SECS};
use parley_custody::queue::Outcome;
use parley_custody::review::{FormGrant, ReviewKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;
use tauri::{AppHandle, Emitter, Manager, State, Window};

/// Keychain and audit calls (a locked keychain may wait for an unlock prompt).
const BLOCKING_TIMEOUT: Duration = Duration::from_secs(60);
/// A decision: OS authentication (the human types a password, bounded by
/// the engine), signing, the audit row, handing the token to the agent. The
/// engine finishes a decision even when this wait gives up.
const DECIDE_TIMEOUT: Duration =
    Duration::from_secs(parley_custody::stepup::DEFAULT_TIMEOUT.as_secs() + 30);

type R<T> = Result<T, String>;

async fn blocking<T: Send + 'static>(
    what: &'static str,
    f: impl FnOnce() -> R<T> + Send + 'static,
) -> R<T> {
    match tokio::time::timeout(BLOCKING_TIMEOUT, tauri::async_runtime::spawn_blocking(f)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(format!("{what} failed: {e}")),
        Err(_) => Err(format!(
            "{what} did not finish within {} s (is the keychain locked and waiting for you?)",
            BLOCKING_TIMEOUT.as_secs()
        )),
    }
}

async fn timed<T>(what: &'static str, f: impl Future<Output = T>) -> R<T> {
    tokio::time::timeout(DECIDE_TIMEOUT, f).await.map_err(|_| {
        format!(
            "{what} did not finish within {} s",
            DECIDE_TIMEOUT.as_secs()
        )
    })
}

fn request_id(id: &str) -> R<()> {
    if windows::valid_request_id(id) {
        Ok(())
    } else {
        Err("not a request id".into())
    }
}

fn pending(state: &AppState, id: &str) -> R<PendingView> {
    let core = state.core()?;
    core.engine
        .pending()
        .into_iter()
        .find(|p| p.id == id)
        .map(|p| state.label(p))
        .ok_or_else(|| {
            "This request is no longer waiting: it was decided, expired, or the agent withdrew it."
                .to_string()
        })
}

/// The home window's status.
#[derive(Debug, Serialize)]
pub struct StatusView {
    /// Whether custody runs.
    pub running: bool,
    /// Why not.
    pub error: Option<String>,
    /// Start-up problems to show.
    pub warnings: Vec<String>,
    /// The socket.
    pub socket: Option<SocketStatus>,
    /// The data directory.
    pub data_dir: Option<String>,
    /// Where keys are.
    pub store: Option<String>,
    /// The principal keys.
    pub keys: Vec<KeyView>,
    /// Why the keys could not be listed.
    pub keys_error: Option<String>,
    /// Requests waiting.
    pub pending: usize,
    /// Desktop notifications.
    pub notifications: NotifyStatus,
    /// Saved settings that wait for a restart.
    pub restart_needed: Vec<&'static str>,
    /// The app version.
    pub version: &'static str,
    /// The Approve delay, milliseconds.
    pub approve_delay_ms: u64,
    /// Start at login.
    pub autostart: AutostartView,
}

/// Everything the home window shows.
#[tauri::command(rename_all = "snake_case")]
pub async fn status(state: State<'_, AppState>) -> R<StatusView> {
    let (keys, keys_error) = match state.core() {
        Ok(core) => {
            let e = core.engine.clone();
            match blocking("listing keys", move || {
                e.keystore().list().map_err(|e| e.to_string())
            })
            .await
            {
                Ok(k) => (k.into_iter().map(KeyView::from).collect(), None),
                Err(e) => (Vec::new(), Some(e)),
            }
        }
        Err(_) => (Vec::new(), None),
    };
    let restart_needed = match (&state.core, state.settings.lock()) {
        (Ok(core), Ok(s)) => s.restart_needed(&core.running),
        _ => Vec::new(),
    };
    Ok(StatusView {
        running: state.core.is_ok(),
        error: state.core.as_ref().err().cloned(),
        warnings: state.warnings.clone(),
        socket: state.core.as_ref().ok().map(|c| c.socket.clone()),
        data_dir: state
            .core
            .as_ref()
            .ok()
            .map(|c| c.data_dir.display().to_string()),
        store: state
            .core
            .as_ref()
            .ok()
            .map(|c| views::store_words(&c.store)),
        keys,
        keys_error,
        pending: state.pending_labelled().len(),
        notifications: state.notifier.status(),
        restart_needed,
        version: env!("CARGO_PKG_VERSION"),
        approve_delay_ms: windows::APPROVE_DELAY.as_millis() as u64,
        autostart: autostart_view(&state),
    })
}

/// Requests waiting for the human, oldest first.
#[tauri::command(rename_all = "snake_case")]
pub async fn pending_list(state: State<'_, AppState>) -> R<Vec<PendingView>> {
    state.core()?;
    Ok(state.pending_labelled())
}

/// One pending request's review, or `null` when it is no longer waiting.
#[tauri::command(rename_all = "snake_case")]
pub async fn review_get(state: State<'_, AppState>, id: String) -> R<Option<PendingView>> {
    request_id(&id)?;
    Ok(pending(&state, &id).ok())
}

/// Whether `window` may sign now: focused, in front for the arming delay,
/// and the human used the pointer. `what` names the button.
fn may_sign(window: &Window, state: &AppState, gesture: Option<Gesture>, what: &str) -> R<Gesture> {
    let Some(gesture) = gesture else {
        return Err(format!(
            "{what} needs a click or press-and-hold with the pointer; the keyboard alone cannot {}.",
            what.to_lowercase()
        ));
    };
    // How the human pressed Approve or Issue: a trusted pointer click or a
    // press-and-hold (the UI ignores keyboard-made clicks). A window cannot
    // claim to be the terminal.
    if gesture == Gesture::Terminal {
        return Err(format!("{what} is given with the pointer in this window."));
    }
    if !window.is_focused().unwrap_or(false) {
        return Err(format!(
            "{what} counts only while its window is in front and focused."
        ));
    }
    if !state.armed.ready(window.label()) {
        return Err(format!("{what} came too soon after the window appeared or regained focus. Read it, then try again."));
    }
    Ok(gesture)
}

/// Whether `window` may deny a request: any review window may (denying
/// signs nothing, so it needs no arming delay, gesture or step-up).
fn may_deny(window: &Window) -> R<()> {
    if window.label().starts_with("review-") {
        Ok(())
    } else {
        Err("Decisions are made in the review windows.".into())
    }
}

/// The result of a decision.
#[derive(Debug, Serialize)]
pub struct DecisionView {
    /// `approved`, `issued` or `denied`.
    pub outcome: &'static str,
    /// One sentence for the window.
    pub message: String,
}

/// The human's decision on a pending request.
#[tauri::command(rename_all = "snake_case")]
pub async fn review_decide(
    window: Window,
    state: State<'_, AppState>,
    id: String,
    approve: bool,
    confirmed: bool,
    gesture: Option<Gesture>,
    reason: Option<String>,
) -> R<DecisionView> {
    request_id(&id)?;
    pending(&state, &id)?;
    let own = window.label() == windows::review_label(&id);
    let verdict = if approve {
        if !own {
            return Err(
                "An approval is accepted only from the request's own review window.".into(),
            );
        }
        // The one place this command builds an approval. The engine checks
        // the second confirmation against the review, then asks the OS.
        let gesture = may_sign(&window, &state, gesture, "Approve")?;
        Verdict::Approve(Yes {
            gesture,
            second_confirmation: confirmed,
        })
    } else {
        may_deny(&window)?;
        let reason = reason
            .map(|r| r.trim().chars().take(200).collect::<String>())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "denied in the review window".into());
        Verdict::Deny(Some(reason))
    };
    let core = state.core()?;
    let outcome = timed("the decision", core.engine.decide(&id, verdict))
        .await?
        .map_err(|e| e.to_string())?;
    Ok(match outcome {
        Outcome::Approved(_) => DecisionView {
            outcome: "approved",
            message:
                "Approved: the consent was signed for exactly this proposal and sent to the agent."
                    .into(),
        },
        Outcome::Issued(..) => DecisionView {
            outcome: "issued",
            message: "Issued: the grant was signed as shown and sent to the agent.".into(),
        },
        Outcome::Denied(_) => DecisionView {
            outcome: "denied",
            message: "Denied: nothing was signed; the agent was told.".into(),
        },
        Outcome::Expired => DecisionView {
            outcome: "expired",
            message: "The request expired before the decision.".into(),
        },
        Outcome::Cancelled => DecisionView {
            outcome: "cancelled",
            message: "The agent withdrew the request.".into(),
        },
    })
}

/// "Deny and pause this agent for 1 hour" from a review window: denies
/// the request (through the same checks as a deny in [`review_decide`]) and
/// pauses its agent for [`DENY_AND_PAUSE_SECS`], so that its next requests
/// are refused without a prompt; its other pending requests are denied too.
#[tauri::command(rename_all = "snake_case")]
pub async fn review_deny_and_pause(
    app: AppHandle,
    window: Window,
    state: State<'_, AppState>,
    id: String,
) -> R<DecisionView> {
    request_id(&id)?;
    pending(&state, &id)?;
    may_deny(&window)?;
    let e = state.core()?.engine.clone();
    let denied = blocking("denying and pausing", move || {
        e.deny_and_pause(&id, DENY_AND_PAUSE_SECS)
            .map_err(|e| e.to_string())
    })
    .await?;
    paused_changed(&app);
    let others = denied.len().saturating_sub(1);
    let also = match others {
        0 => String::new(),
        1 => " Its other waiting request was denied too.".to_string(),
        n => format!(" Its {n} other waiting requests were denied too."),
    };
    Ok(DecisionView {
        outcome: "denied",
        message: format!(
            "Denied, and this agent is paused for {}: its requests are refused without being \
             shown until {}. Nothing was signed; the agent was told.{also} Resume it in the \
             audit view.",
            parley_core::lens::duration(DENY_AND_PAUSE_SECS),
            parley_core::lens::time(unix_now().saturating_add(DENY_AND_PAUSE_SECS)),
        ),
    })
}

/// The other requests waiting now that are alike to `id` (the same agent,
/// OS user, service and capability; [`parley_custody::engine::Engine::alike`]),
/// for its review window to list.
#[tauri::command(rename_all = "snake_case")]
pub async fn review_alike(
    window: Window,
    state: State<'_, AppState>,
    id: String,
) -> R<Vec<PendingView>> {
    request_id(&id)?;
    own_review(&window, &id)?;
    let e = state.core()?.engine.clone();
    let alike = blocking("listing alike requests", move || Ok(e.alike(&id))).await?;
    Ok(alike.into_iter().map(|p| state.label(p)).collect())
}

/// Denies `id` and every request alike to it waiting now, from `id`'s own
/// review window (which lists them). Approving stays one at a time.
#[tauri::command(rename_all = "snake_case")]
pub async fn review_deny_alike(
    window: Window,
    state: State<'_, AppState>,
    id: String,
    reason: Option<String>,
) -> R<DecisionView> {
    request_id(&id)?;
    pending(&state, &id)?;
    own_review(&window, &id)?;
    let reason = reason
        .map(|r| r.trim().chars().take(200).collect::<String>())
        .filter(|r| !r.is_empty());
    let e = state.core()?.engine.clone();
    let denied = blocking("denying alike requests", move || {
        e.deny_alike(&id, reason.as_deref())
            .map_err(|e| e.to_string())
    })
    .await?;
    Ok(DecisionView {
        outcome: "denied",
        message: format!(
            "Denied {} requests: nothing was signed; each agent was told.",
            denied.len()
        ),
    })
}

/// Only the request's own review window lists or denies its alike requests.
fn own_review(window: &Window, id: &str) -> R<()> {
    if window.label() == windows::review_label(id) {
        Ok(())
    } else {
        Err("Only the request's own review window can do this.".into())
    }
}

/// A paused agent, for the audit view (display-safe).
#[derive(Debug, Serialize)]
pub struct PauseView {
    /// The agent key.
    pub agent: String,
    /// Its short form.
    pub short: String,
    /// Its four words ([`parley_custody::fingerprint`]).
    pub phrase: String,
    /// The human's label.
    pub label: Option<String>,
    /// Until when (unix seconds); `None`: until resumed.
    pub until: Option<i64>,
    /// Why (display-safe).
    pub reason: String,
    /// When it was paused.
    pub at: i64,
}

/// The paused agents, and the agents that could be paused.
#[derive(Debug, Serialize)]
pub struct PausesView {
    /// The pauses in force now.
    pub paused: Vec<PauseView>,
    /// Every agent the human has dealt with (the paused ones included).
    pub agents: Vec<KnownAgent>,
    /// When this was read.
    pub now: i64,
}

/// The longest pause with an end custody sets from the app (30 days);
/// longer is "until resumed".
const MAX_PAUSE_SECS: i64 = 30 * 24 * 3600;

/// Tells every window and the tray that the paused agents changed.
fn paused_changed(app: &AppHandle) {
    let _ = app.emit("pending-changed", ());
    let _ = app.emit("pauses-changed", ());
    crate::tray::refresh(app);
}

fn agent_key(agent: &str) -> R<PublicKey> {
    agent
        .trim()
        .parse()
        .map_err(|e| format!("not an agent key: {e}"))
}

/// Pauses an agent from the audit view: its requests
/// are refused without a prompt, and it is told why, for `secs` (none:
/// until resumed); its requests waiting now are denied.
#[tauri::command(rename_all = "snake_case")]
pub async fn agent_pause(
    app: AppHandle,
    state: State<'_, AppState>,
    agent: String,
    secs: Option<i64>,
) -> R<PausesView> {
    let key = agent_key(&agent)?;
    if let Some(s) = secs {
        if !(1..=MAX_PAUSE_SECS).contains(&s) {
            return Err(format!(
                "a pause lasts from 1 second to {}; longer is \"until resumed\"",
                parley_core::lens::duration(MAX_PAUSE_SECS)
            ));
        }
    }
    let e = state.core()?.engine.clone();
    blocking("pausing the agent", move || {
        e.pause_agent(&key.to_string(), secs, "paused by the human in the app")
            .map_err(|e| e.to_string())
    })
    .await?;
    paused_changed(&app);
    pauses_view(&state).await
}

/// Ends an agent's pause; its requests are shown again.
#[tauri::command(rename_all = "snake_case")]
pub async fn agent_resume(
    app: AppHandle,
    state: State<'_, AppState>,
    agent: String,
) -> R<PausesView> {
    let key = agent_key(&agent)?;
    let e = state.core()?.engine.clone();
    let was = blocking("resuming the agent", move || {
        e.resume_agent(&key.to_string()).map_err(|e| e.to_string())
    })
    .await?;
    if !was {
        return Err("That agent is not paused (its pause may have ended already).".into());
    }
    paused_changed(&app);
    pauses_view(&state).await
}

/// The paused agents and the agents that could be paused.
#[tauri::command(rename_all = "snake_case")]
pub async fn agent_pauses(state: State<'_, AppState>) -> R<PausesView> {
    pauses_view(&state).await
}

async fn pauses_view(state: &AppState) -> R<PausesView> {
    let e = state.core()?.engine.clone();
    let pauses = blocking("reading the paused agents", move || {
        e.pauses().map_err(|e| e.to_string())
    })
    .await?;
    let paused = pauses
        .into_iter()
        .filter_map(|p| {
            let key: PublicKey = p.agent.parse().ok()?;
            Some(PauseView {
                short: key.short(),
                phrase: parley_custody::fingerprint::phrase(&key),
                label: state.agent_label(&p.agent),
                agent: key.to_string(),
                until: p.until,
                reason: parley_custody::display::bounded(&p.reason, 200),
                at: p.at,
            })
        })
        .collect();
    Ok(PausesView {
        paused,
        agents: known_agents(state).await?,
        now: unix_now(),
    })
}

/// Opens (or focuses) a window: `main`, `review` (with `id`), `grant`
/// (optionally with `id` of a pending grant request, or `agent`), `audit`, `settings`.
#[tauri::command(rename_all = "snake_case")]
pub async fn open_window(
    app: AppHandle,
    kind: String,
    id: Option<String>,
    agent: Option<String>,
) -> R<()> {
    match kind.as_str() {
        "main" => windows::open_main(&app),
        "review" => windows::open_review(&app, id.as_deref().unwrap_or_default()),
        "grant" => windows::open_grant(&app, id.as_deref(), agent.as_deref()),
        "audit" => windows::open_audit(&app),
        "settings" => windows::open_settings(&app),
        _ => Err("unknown window".into()),
    }
}

/// Closes the calling window.
#[tauri::command(rename_all = "snake_case")]
pub async fn window_close(window: Window) -> R<()> {
    window.close().map_err(|e| e.to_string())
}

/// An agent key the human has dealt with.
#[derive(Debug, Serialize)]
pub struct KnownAgent {
    /// The key.
    pub key: String,
    /// Its short form.
    pub short: String,
    /// Its four words ([`parley_custody::fingerprint`]).
    pub phrase: String,
    /// The human's label.
    pub label: Option<String>,
    /// The latest audit event naming it.
    pub last_seen: Option<i64>,
    /// Whether it has a request waiting now.
    pub waiting: bool,
}

/// What the grant form needs.
#[derive(Debug, Serialize)]
pub struct GrantContext {
    /// Keys that can sign.
    pub principals: Vec<KeyView>,
    /// Agents to pick from.
    pub known_agents: Vec<KnownAgent>,
    /// The longest grant custody signs (seconds).
    pub max_grant_lifetime_secs: i64,
    /// The pending grant request the form answers, if any.
    pub request: Option<PendingView>,
}

/// Every agent key the human has dealt with: waiting now, named in the
/// audit log's decisions, or labelled (waiting ones first, then newest
/// seen first).
async fn known_agents(state: &AppState) -> R<Vec<KnownAgent>> {
    let e = state.core()?.engine.clone();
    let seen = blocking("reading the audit log", move || {
        e.with_audit(|a| {
            a.query(&Query {
                kinds: vec![
                    EventKind::GrantIssued,
                    EventKind::ConsentApproved,
                    EventKind::GrantDenied,
                    EventKind::ConsentDenied,
                ],
                limit: Some(2000),
                ..Default::default()
            })
        })
        .map_err(|e| e.to_string())
    })
    .await?;
    let mut agents: Vec<KnownAgent> = Vec::new();
    let mut add = |key: &str, at: Option<i64>, waiting: bool| {
        let Ok(pk) = key.parse::<PublicKey>() else {
            return;
        };
        if let Some(a) = agents.iter_mut().find(|a| a.key == key) {
            a.waiting |= waiting;
            a.last_seen = a.last_seen.max(at);
            return;
        }
        agents.push(KnownAgent {
            key: pk.to_string(),
            short: pk.short(),
            phrase: parley_custody::fingerprint::phrase(&pk),
            label: state.agent_label(key),
            last_seen: at,
            waiting,
        });
    };
    for p in state.pending_labelled() {
        add(&p.review.agent.key, None, true);
    }
    for row in &seen {
        if let Some(a) = &row.agent {
            add(a, Some(row.at), false);
        }
    }
    for key in state.labelled_agents() {
        add(&key, None, false);
    }
    Ok(agents)
}

/// The grant form's context (principals, known agents, limits, the request).
#[tauri::command(rename_all = "snake_case")]
pub async fn grant_context(state: State<'_, AppState>, request: Option<String>) -> R<GrantContext> {
    let core = state.core()?;
    let request = match request {
        Some(id) => {
            request_id(&id)?;
            let p = pending(&state, &id)?;
            if p.review.kind != ReviewKind::Grant {
                return Err("That request is a consent, not a grant request.".into());
            }
            Some(p)
        }
        None => None,
    };
    let e = core.engine.clone();
    let keys = blocking("reading keys", move || {
        e.keystore().list().map_err(|e| e.to_string())
    })
    .await?;
    let agents = known_agents(&state).await?;
    Ok(GrantContext {
        principals: keys
            .into_iter()
            .filter(|k| k.status == parley_custody::keystore::KeyStatus::Present)
            .map(KeyView::from)
            .collect(),
        known_agents: agents,
        max_grant_lifetime_secs: core.running.max_grant_lifetime_secs,
        request,
    })
}

/// A grant issued from the form.
#[derive(Debug, Serialize)]
pub struct IssuedView {
    /// Whether the token went to the waiting agent (then it is not returned).
    pub sent_to_agent: bool,
    /// The token, for the human to copy to the agent (no request pending).
    pub token: Option<String>,
    /// The caveats as signed.
    pub caveats: Value,
    /// In plain words.
    pub caveat_words: Vec<String>,
    /// In one sentence.
    pub preview: String,
    /// What custody noticed.
    pub warnings: Vec<String>,
}

/// What the grant form's caveats would sign, for the form to show before
/// Issue: the caveats exactly as signed, in words, and every way they widen
/// the request the form answers.
#[derive(Debug, Serialize)]
pub struct GrantPreviewView {
    /// The caveats as they would be signed (sent back as `shown` on Issue).
    pub caveats: Value,
    /// In plain words.
    pub caveat_words: Vec<String>,
    /// In one sentence.
    pub preview: String,
    /// What custody noticed.
    pub warnings: Vec<String>,
    /// How this widens the agent's request, in words (sent back, word for
    /// word, once the human confirmed them).
    pub widenings: Vec<String>,
    /// The principal key that would sign.
    pub principal: String,
    /// Its label.
    pub principal_label: Option<String>,
    /// Its short form.
    pub principal_short: String,
}

fn form_principal(principal: Option<&str>) -> R<Option<PublicKey>> {
    match principal.filter(|p| !p.is_empty()) {
        Some(p) => p
            .parse()
            .map(Some)
            .map_err(|e| format!("the principal key is not usable: {e}")),
        None => Ok(None),
    }
}

/// Previews the grant form's caveats (nothing is signed).
#[tauri::command(rename_all = "snake_case")]
pub async fn grant_preview(
    window: Window,
    state: State<'_, AppState>,
    agent: String,
    caveats: Value,
    principal: Option<String>,
    request: Option<String>,
) -> R<GrantPreviewView> {
    if !windows::is_grant_form(window.label()) {
        return Err("Grants are previewed in the grant form.".into());
    }
    if let Some(id) = &request {
        request_id(id)?;
    }
    let core = state.core()?;
    let principal = form_principal(principal.as_deref())?;
    let p = timed(
        "the preview",
        core.engine.preview_grant(
            agent.trim(),
            &caveats,
            principal.as_ref(),
            request.as_deref(),
        ),
    )
    .await?
    .map_err(|e| match e {
        IssueError::Rejected(r) => format!("The grant is not valid: {}", r.message),
        e => e.to_string(),
    })?;
    let (caveat_words, _) = views::caveat_words(&p.caveats);
    Ok(GrantPreviewView {
        caveats: p.caveats,
        caveat_words,
        preview: p.review.preview,
        warnings: p.review.warnings,
        widenings: p.widenings,
        principal: p.review.principal,
        principal_label: p.review.principal_label,
        principal_short: p.review.principal_short,
    })
}

/// Issues a grant from the form: to the waiting agent (`request`), or for
/// the human to copy. `shown` is the preview's caveats the form displayed
/// (what is signed must equal them); `widenings` the preview's widenings
/// the human confirmed on purpose (they must be exactly the edit's).
#[tauri::command(rename_all = "snake_case")]
#[allow(clippy::too_many_arguments)]
pub async fn grant_issue(
    window: Window,
    state: State<'_, AppState>,
    agent: String,
    caveats: Value,
    shown: Value,
    widenings: Vec<String>,
    gesture: Option<Gesture>,
    principal: Option<String>,
    note: Option<String>,
    request: Option<String>,
) -> R<IssuedView> {
    if !windows::is_grant_form(window.label()) {
        return Err("Grants are issued from the grant form.".into());
    }
    let gesture = may_sign(&window, &state, gesture, "Issue")?;
    let core = state.core()?;
    let principal = form_principal(principal.as_deref())?;
    let agent = agent.trim().to_string();
    // The one place this command builds what it signs.
    let form = FormGrant {
        caveats,
        shown: Some(shown),
        confirmed_widenings: widenings,
    };
    if let Some(id) = request {
        request_id(&id)?;
        let p = pending(&state, &id)?;
        if p.review.kind != ReviewKind::Grant {
            return Err("That request is a consent, not a grant request.".into());
        }
        if p.review.agent.key != agent {
            return Err("This request came from another agent key; to grant a different key, issue a separate grant.".into());
        }
        if principal
            .as_ref()
            .is_some_and(|pk| pk.to_string() != p.review.principal)
        {
            return Err(format!(
                "This request is answered with the principal {}; issue a separate grant to use another key.",
                p.review.principal
            ));
        }
        let outcome = timed(
            "issuing the grant",
            core.engine.decide(
                &id,
                Verdict::ApproveWith(
                    form,
                    Yes {
                        gesture,
                        second_confirmation: false,
                    },
                ),
            ),
        )
        .await?
        .map_err(|e| match e {
            DecideError::Narrowed(r) => format!("The grant is not valid: {}", r.message),
            e => e.to_string(),
        })?;
        return match outcome {
            Outcome::Issued(_, signed) => {
                // Answered here: its review window has nothing left to say.
                if let Some(w) = window
                    .app_handle()
                    .get_webview_window(&windows::review_label(&id))
                {
                    let _ = w.close();
                }
                let signed: Value = serde_json::from_str(&signed).unwrap_or(Value::Null);
                let (caveat_words, preview) = views::caveat_words(&signed);
                Ok(IssuedView {
                    sent_to_agent: true,
                    token: None,
                    caveats: signed,
                    caveat_words,
                    preview,
                    warnings: Vec::new(),
                })
            }
            _ => Err("The request was not issued.".into()),
        };
    }
    let issued = timed(
        "issuing the grant",
        core.engine.issue_grant(
            &agent,
            form,
            principal.as_ref(),
            note.as_deref(),
            Yes {
                gesture,
                second_confirmation: false,
            },
        ),
    )
    .await?
    .map_err(|e| match e {
        IssueError::Rejected(r) => format!("The grant is not valid: {}", r.message),
        e => e.to_string(),
    })?;
    let (caveat_words, _) = views::caveat_words(&issued.caveats);
    let _ = window.emit("status-changed", ());
    Ok(IssuedView {
        sent_to_agent: false,
        token: Some(issued.token),
        caveats: issued.caveats,
        caveat_words,
        preview: issued.review.preview,
        warnings: issued.review.warnings,
    })
}

/// Audit view filters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditFilter {
    /// Kinds (names as stored); empty: all.
    pub kinds: Vec<String>,
    /// Exactly this agent key.
    pub agent: Option<String>,
    /// Exactly this service.
    pub service: Option<String>,
    /// From (unix seconds, inclusive).
    pub since: Option<i64>,
    /// Until (inclusive).
    pub until: Option<i64>,
    /// At most this many rows.
    pub limit: Option<u32>,
}

impl AuditFilter {
    fn query(&self) -> R<Query> {
        let kinds = self
            .kinds
            .iter()
            .map(|k| k.parse::<EventKind>().map_err(|e| e.to_string()))
            .collect::<R<Vec<_>>>()?;
        let text = |o: &Option<String>| {
            o.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        Ok(Query {
            since: self.since,
            until: self.until,
            agent: text(&self.agent),
            service: text(&self.service),
            kinds,
            live_at: None,
            limit: Some(self.limit.unwrap_or(500).clamp(1, audit::MAX_LIMIT)),
        })
    }
}

/// The audit view.
#[derive(Debug, Serialize)]
pub struct AuditView {
    /// Matching events, newest first.
    pub events: Vec<EventView>,
    /// Whether more matched than were returned.
    pub truncated: bool,
    /// Grants and consents still live now, newest first.
    pub live: Vec<EventView>,
    /// The chain check from the last verified row (the checkpoint) on.
    pub verify: VerifyReport,
    /// When this was read.
    pub now: i64,
}

/// Events, live grants and the chain's state.
#[tauri::command(rename_all = "snake_case")]
pub async fn audit_query(state: State<'_, AppState>, filter: AuditFilter) -> R<AuditView> {
    let core = state.core()?;
    let mut q = filter.query()?;
    let limit = q.limit.unwrap_or(500);
    q.limit = Some((limit + 1).min(audit::MAX_LIMIT));
    let e = core.engine.clone();
    let now = unix_now();
    let (mut rows, live, verify) = blocking("reading the audit log", move || {
        e.with_audit(|a| {
            let rows = a.query(&q)?;
            let live = a.query(&Query {
                live_at: Some(now),
                limit: Some(1000),
                ..Default::default()
            })?;
            // From the checkpoint on: opening the view does not re-hash
            // the whole log (a full verify is `parley audit --verify --full`).
            let verify = a.verify_incremental()?;
            Ok::<_, audit::AuditError>((rows, live, verify))
        })
        .map_err(|e| e.to_string())
    })
    .await?;
    let truncated = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let label = |k: &str| state.agent_label(k);
    Ok(AuditView {
        events: rows.iter().map(|r| EventView::new(r, label)).collect(),
        truncated,
        live: live.iter().map(|r| EventView::new(r, label)).collect(),
        verify,
        now,
    })
}

/// Where an export went.
#[derive(Debug, Serialize)]
pub struct ExportView {
    /// The file written.
    pub path: String,
    /// Events in it.
    pub rows: usize,
}

/// Exports the filtered events, exactly as stored, to a new file in the
/// Downloads folder (else the data directory): JSON Lines or CSV.
#[tauri::command(rename_all = "snake_case")]
pub async fn audit_export(
    app: AppHandle,
    state: State<'_, AppState>,
    format: String,
    filter: AuditFilter,
) -> R<ExportView> {
    use tauri::Manager;
    let core = state.core()?;
    let csv = match format.as_str() {
        "csv" => true,
        "jsonl" => false,
        _ => return Err("export as jsonl or csv".into()),
    };
    let mut q = filter.query()?;
    q.limit = Some(audit::MAX_LIMIT);
    let dir = app
        .path()
        .download_dir()
        .ok()
        .filter(|d| d.is_absolute())
        .unwrap_or_else(|| core.data_dir.join("exports"));
    let stamp = parley_core::lens::time(unix_now()).replace(':', "-");
    let ext = if csv { "csv" } else { "jsonl" };
    let e = core.engine.clone();
    let (rows, path) = blocking("exporting the audit log", move || {
        let rows = e.with_audit(|a| a.query(&q)).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // A new file every time (never overwritten), readable by the user only.
        let mut n = 1;
        let (file, out) = loop {
            let name = match n {
                1 => format!("parley-audit-{stamp}.{ext}"),
                n => format!("parley-audit-{stamp}-{n}.{ext}"),
            };
            let out: PathBuf = dir.join(name);
            match parley_custody::paths::create_private_file(&out) {
                Ok(f) => break (f, out),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(format!("{}: {e}", out.display())),
            }
        };
        let w = std::io::BufWriter::new(file);
        if csv {
            audit::export_csv(&rows, w)
        } else {
            audit::export_jsonl(&rows, w)
        }
        .map_err(|e| format!("{}: {e}", out.display()))?;
        Ok((rows.len(), out))
    })
    .await?;
    Ok(ExportView {
        path: path.display().to_string(),
        rows,
    })
}

/// The key list.
#[derive(Debug, Serialize)]
pub struct KeysView {
    /// Where the keys are.
    pub store: String,
    /// The keys.
    pub keys: Vec<KeyView>,
}

/// The principal keys (public halves only).
#[tauri::command(rename_all = "snake_case")]
pub async fn keys_list(state: State<'_, AppState>) -> R<KeysView> {
    let core = state.core()?;
    let e = core.engine.clone();
    let keys = blocking("listing keys", move || {
        e.keystore().list().map_err(|e| e.to_string())
    })
    .await?;
    Ok(KeysView {
        store: views::store_words(&core.store),
        keys: keys.into_iter().map(KeyView::from).collect(),
    })
}

async fn log_key_event(state: &AppState, kind: EventKind, key: &str, reason: String) -> R<()> {
    let e = state.core()?.engine.clone();
    let mut ev = NewEvent::new(kind, unix_now());
    ev.principal = Some(key.to_string());
    ev.reason = Some(reason);
    blocking("writing the audit log", move || {
        e.with_audit(|a| a.append(&ev).map(|_| ())).map_err(|e| {
            format!("the key operation was done, but the audit log could not record it: {e}")
        })
    })
    .await
}

async fn key_view(state: &AppState, public: String) -> R<KeyView> {
    let core = state.core()?;
    let e = core.engine.clone();
    let keys = blocking("listing keys", move || {
        e.keystore().list().map_err(|e| e.to_string())
    })
    .await?;
    keys.into_iter()
        .find(|k| k.public.to_string() == public)
        .map(KeyView::from)
        .ok_or_else(|| "the key was stored but is not listed; check the keychain".into())
}

/// Creates a principal key in the OS keychain.
#[tauri::command(rename_all = "snake_case")]
pub async fn key_create(app: AppHandle, state: State<'_, AppState>, label: String) -> R<KeyView> {
    let core = state.core()?;
    let e = core.engine.clone();
    let l = label.clone();
    let public = blocking("creating the key", move || {
        e.keystore().create(l.trim()).map_err(|e| e.to_string())
    })
    .await?
    .to_string();
    log_key_event(
        &state,
        EventKind::KeyCreated,
        &public,
        format!("created in the app: {}", label.trim()),
    )
    .await?;
    let _ = app.emit("status-changed", ());
    key_view(&state, public).await
}

fn expand_home(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(rest))
            .unwrap_or_else(|| PathBuf::from(path)),
        None => PathBuf::from(path),
    }
}

/// Imports an upstream `principal.key` into the keychain (once).
#[tauri::command(rename_all = "snake_case")]
pub async fn key_import(
    app: AppHandle,
    state: State<'_, AppState>,
    path: String,
    label: String,
) -> R<KeyView> {
    let core = state.core()?;
    let file = expand_home(path.trim());
    if !file.is_absolute() {
        return Err(
            "give the full path of the key file (for example ~/.parley/principal.key)".into(),
        );
    }
    let e = core.engine.clone();
    let (f, l) = (file.clone(), label.clone());
    let public = blocking("importing the key", move || {
        e.keystore()
            .import_seed_file(&f, l.trim())
            .map_err(|e| e.to_string())
    })
    .await?
    .to_string();
    if let Ok(mut m) = state.imported.lock() {
        m.insert(file.clone(), public.clone());
    }
    log_key_event(
        &state,
        EventKind::KeyImported,
        &public,
        format!("imported in the app from {}", file.display()),
    )
    .await?;
    let _ = app.emit("status-changed", ());
    key_view(&state, public).await
}

/// Overwrites and deletes a seed file imported in this session.
#[tauri::command(rename_all = "snake_case")]
pub async fn key_shred(state: State<'_, AppState>, path: String) -> R<()> {
    let file = expand_home(path.trim());
    let known = state
        .imported
        .lock()
        .map(|m| m.contains_key(&file))
        .unwrap_or(false);
    if !known {
        return Err("only a key file imported in this session can be shredded here".into());
    }
    let f = file.clone();
    blocking("shredding the key file", move || {
        parley_custody::keystore::shred_file(&f).map_err(|e| e.to_string())
    })
    .await?;
    if let Ok(mut m) = state.imported.lock() {
        m.remove(&file);
    }
    Ok(())
}

/// Deletes a principal key for good; `confirm` must repeat the full key.
#[tauri::command(rename_all = "snake_case")]
pub async fn key_delete(
    app: AppHandle,
    state: State<'_, AppState>,
    public: String,
    confirm: String,
) -> R<()> {
    let core = state.core()?;
    let pk: PublicKey = public.parse().map_err(|e| format!("not a key: {e}"))?;
    let e = core.engine.clone();
    let (p, c) = (pk.clone(), confirm.trim().to_string());
    blocking("deleting the key", move || {
        e.keystore().delete(&p, &c).map_err(|e| e.to_string())
    })
    .await?;
    log_key_event(
        &state,
        EventKind::KeyDeleted,
        &pk.to_string(),
        "deleted in the app".into(),
    )
    .await?;
    let _ = app.emit("status-changed", ());
    Ok(())
}

/// The settings view.
#[derive(Debug, Serialize)]
pub struct SettingsView {
    /// As saved.
    pub settings: Settings,
    /// Start at login (not in settings.json: the autostart entry is the truth).
    pub autostart: AutostartView,
    /// In force (the socket was started with these).
    pub running: Option<Settings>,
    /// Saved changes that wait for a restart.
    pub restart_needed: Vec<&'static str>,
    /// The data directory (settings.json is there).
    pub data_dir: Option<String>,
    /// The socket.
    pub socket: Option<SocketStatus>,
    /// The peer policy in force.
    pub policy: Option<PolicyView>,
}

fn settings_view(state: &AppState) -> SettingsView {
    let settings = state.settings.lock().map(|s| s.clone()).unwrap_or_default();
    let core = state.core.as_ref().ok();
    SettingsView {
        restart_needed: core
            .map(|c| settings.restart_needed(&c.running))
            .unwrap_or_default(),
        running: core.map(|c| c.running.clone()),
        data_dir: core.map(|c| c.data_dir.display().to_string()),
        socket: core.map(|c| c.socket.clone()),
        policy: core.map(|c| c.policy.clone()),
        autostart: autostart_view(state),
        settings,
    }
}

/// The settings.
#[tauri::command(rename_all = "snake_case")]
pub async fn settings_get(state: State<'_, AppState>) -> R<SettingsView> {
    Ok(settings_view(&state))
}

/// Saves the settings; the view says which changes wait for a restart.
#[tauri::command(rename_all = "snake_case")]
pub async fn settings_save(
    app: AppHandle,
    state: State<'_, AppState>,
    settings: Settings,
) -> R<SettingsView> {
    let core = state.core()?;
    // Agent labels are changed one at a time (agent_label_set), never by a
    // settings form that may have been open since before a label was added.
    let mut settings = settings;
    if let Ok(cur) = state.settings.lock() {
        settings.agent_labels = cur.agent_labels.clone();
        // Changed only by autostart_set, like the labels.
        settings.autostart_offered = cur.autostart_offered;
    }
    settings.validate().map_err(|e| e.to_string())?;
    persist(&state, core, settings).await?;
    let _ = app.emit("status-changed", ());
    Ok(settings_view(&state))
}

/// Sets (or, with no label, removes) the human's label for an agent key.
#[tauri::command(rename_all = "snake_case")]
pub async fn agent_label_set(
    app: AppHandle,
    state: State<'_, AppState>,
    agent: String,
    label: Option<String>,
) -> R<()> {
    let e = state.core()?.engine.clone();
    blocking("naming the agent", move || {
        e.set_agent_label(&agent, label.as_deref())
            .map_err(|e| e.to_string())
    })
    .await?;
    state.reload_labels()?;
    let _ = app.emit("pending-changed", ());
    crate::tray::refresh(&app);
    Ok(())
}

/// Restarts the app so that saved settings take effect (pending requests are
/// dropped; their agents see the connection close and may ask again).
#[tauri::command(rename_all = "snake_case")]
pub async fn app_restart(app: AppHandle, state: State<'_, AppState>) -> R<()> {
    state.stop().await;
    app.restart()
}

/// Start at login: whether it is on, whether the home window has offered it.
#[derive(Debug, Clone, Serialize)]
pub struct AutostartView {
    /// The autostart entry exists and starts this binary hidden.
    pub enabled: bool,
    /// The human has answered the first-run offer (either way).
    pub offered: bool,
    /// Where the entry is (or why it cannot be made).
    pub entry: String,
    /// Why start-at-login cannot be offered here, if it cannot.
    pub error: Option<String>,
}

fn autostart_view(state: &AppState) -> AutostartView {
    let offered = state
        .settings
        .lock()
        .map(|s| s.autostart_offered)
        .unwrap_or(true);
    match Autostart::for_this_app() {
        Ok(a) => AutostartView {
            enabled: a.is_enabled(),
            offered,
            entry: a.path().display().to_string(),
            error: None,
        },
        Err(e) => AutostartView {
            enabled: false,
            offered,
            entry: String::new(),
            error: Some(e.to_string()),
        },
    }
}

/// Turns start-at-login on or off (the human's answer to the first-run
/// offer too: either answer means it is not offered again).
#[tauri::command(rename_all = "snake_case")]
pub async fn autostart_set(
    app: AppHandle,
    state: State<'_, AppState>,
    enabled: bool,
) -> R<AutostartView> {
    let core = state.core()?;
    blocking("changing start at login", move || {
        let a = Autostart::for_this_app().map_err(|e| e.to_string())?;
        if enabled { a.enable() } else { a.disable() }.map_err(|e| e.to_string())
    })
    .await?;
    let mut next = state
        .settings
        .lock()
        .map(|s| s.clone())
        .map_err(|_| "settings unavailable".to_string())?;
    if !next.autostart_offered {
        next.autostart_offered = true;
        persist(&state, core, next).await?;
    }
    let _ = app.emit("status-changed", ());
    Ok(autostart_view(&state))
}

/// What letting another OS user's agents connect would change, for the human
/// to read before the administrator's password is asked.
#[derive(Debug, Clone, Serialize)]
pub struct AgentUserPlanView {
    /// The agents' OS user, as checked.
    pub user: String,
    /// The agents group.
    pub group: String,
    /// Every change, one per line (or that nothing needs to change).
    pub steps: Vec<String>,
    /// The socket custody then listens on.
    pub socket: String,
}

fn agent_user_plan_for(user: &str) -> R<parley_custody::agent_access::Plan> {
    use parley_custody::agent_access::{self, Request};
    let custody_user = nix::unistd::User::from_uid(nix::unistd::Uid::current())
        .ok()
        .flatten()
        .map(|u| u.name)
        .ok_or_else(|| "cannot tell which OS user runs custody".to_string())?;
    agent_access::plan(
        Request {
            agent_user: user.trim().to_string(),
            custody_user,
            group: agent_access::DEFAULT_GROUP.to_string(),
            socket_dir: None,
        },
        None,
    )
    .map_err(|e| e.to_string())
}

fn plan_view(plan: &parley_custody::agent_access::Plan) -> AgentUserPlanView {
    AgentUserPlanView {
        user: plan.request.agent_user.clone(),
        group: plan.request.group.clone(),
        steps: plan.describe().lines().map(str::to_string).collect(),
        socket: plan.socket_path().display().to_string(),
    }
}

/// Plans "let USER's agents connect" (no change yet).
#[tauri::command(rename_all = "snake_case")]
pub async fn agent_user_plan(user: String) -> R<AgentUserPlanView> {
    blocking("planning", move || {
        agent_user_plan_for(&user).map(|p| plan_view(&p))
    })
    .await
}

/// Carries it out: plans again (nothing the window sent is trusted beyond
/// the user name), runs the privileged helper through polkit, then saves the
/// agents group and the socket path; the view says a restart switches to it.
#[tauri::command(rename_all = "snake_case")]
pub async fn agent_user_apply(
    app: AppHandle,
    state: State<'_, AppState>,
    user: String,
    shown: Vec<String>,
) -> R<SettingsView> {
    let core = state.core()?;
    let plan = blocking("planning", move || agent_user_plan_for(&user)).await?;
    if plan_view(&plan).steps != shown {
        return Err("what would change is no longer what you were shown: read it again".into());
    }
    if !plan.steps.is_empty() {
        let p = plan.clone();
        blocking("waiting for the administrator's password", move || {
            run_helper(&p)
        })
        .await?;
    }
    let mut next = state
        .settings
        .lock()
        .map(|s| s.clone())
        .map_err(|_| "settings unavailable".to_string())?;
    next.agents_group = Some(plan.request.group.clone());
    next.socket_path = Some(plan.socket_path().display().to_string());
    persist(&state, core, next).await?;
    let _ = app.emit("status-changed", ());
    Ok(settings_view(&state))
}

/// How long the helper may wait at polkit's password dialog (within the
/// command layer's own limit); then it is stopped and nothing more changes.
const HELPER_WAIT: Duration = Duration::from_secs(120);

fn run_helper(plan: &parley_custody::agent_access::Plan) -> R<()> {
    use std::io::Read;
    let helper = parley_custody::agent_access::helper_path();
    let root = nix::unistd::Uid::effective().is_root();
    let mut child = parley_custody::agent_access::helper_command(plan, &helper, root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run {} through pkexec: {e}", helper.display()))?;
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < HELPER_WAIT => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "no answer at the password dialog within {} s: nothing more was changed",
                    HELPER_WAIT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for the set-up helper failed: {e}")),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.by_ref().take(4096).read_to_string(&mut said);
    }
    Err(match status.code() {
        Some(126) => "the administrator's password was not given: nothing changed".to_string(),
        Some(127) => "polkit refused (no authentication agent, or not authorized): nothing changed"
            .to_string(),
        _ => format!(
            "the set-up helper failed: {}",
            parley_custody::display::bounded(said.trim(), 400)
        ),
    })
}

/// Saves the settings file (off the async threads) and then makes it the
/// settings in force for the commands: the one way every command changes them.
async fn persist(state: &AppState, core: &crate::state::Core, next: Settings) -> R<()> {
    let dir = core.data_dir.clone();
    let s = next.clone();
    blocking("saving the settings", move || {
        s.save(&dir).map_err(|e| e.to_string())
    })
    .await?;
    if let Ok(mut cur) = state.settings.lock() {
        *cur = next;
    }
    Ok(())
}
