//! The home view's status, the pending list, reviews and the decisions made
//! in review windows, and opening windows.

use super::agents::paused_changed;
use super::setup::{autostart_view, AutostartView};
use super::{blocking, pending, request_id, timed, Caller, APPROVE_DELAY, R};
use super::{refused, CallError};
use crate::approver::{Gesture, PendingView, Verdict, Yes};
use crate::desktop::events::{OpenTarget, View};
use crate::desktop::in_flight::Decision;
use crate::desktop::notify::NotifyStatus;
use crate::desktop::permissions::review_label;
use crate::desktop::service::{Desktop, SocketStatus};
use crate::desktop::views::{self, KeyView};
use crate::engine::{unix_now, DENY_AND_PAUSE_SECS};
use crate::queue::Outcome;
use serde::Serialize;

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
    /// The tray icon.
    pub tray: TrayStatus,
    /// Saved settings that wait for a restart.
    pub restart_needed: Vec<&'static str>,
    /// The app version.
    pub version: &'static str,
    /// The Approve delay, milliseconds.
    pub approve_delay_ms: u64,
    /// Start at login.
    pub autostart: AutostartView,
    /// `locked` or `asleep` while nothing may be approved (windows show
    /// "Approve is off while the screen is locked"); `null` otherwise.
    pub session: Option<&'static str>,
}

/// Everything the home window shows.
pub async fn status(state: &Desktop) -> R<StatusView> {
    let (keys, keys_error) = match state.core() {
        Ok(core) => {
            let e = core.engine.clone();
            match blocking("listing keys", move || e.keystore().list().map_err(refused)).await {
                Ok(k) => (k.into_iter().map(KeyView::from).collect(), None),
                Err(e) => (Vec::new(), Some(e.message)),
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
        tray: tray_status(state),
        restart_needed,
        version: env!("CARGO_PKG_VERSION"),
        approve_delay_ms: APPROVE_DELAY.as_millis() as u64,
        autostart: autostart_view(state),
        session: state
            .core
            .as_ref()
            .ok()
            .and_then(|c| c.engine.session().hold())
            .map(|h| h.tag()),
    })
}

/// Whether a tray host shows the icon, for the home view.
#[derive(Debug, Serialize)]
pub struct TrayStatus {
    /// A tray host shows it.
    pub available: bool,
    /// What that means when it does not.
    pub message: Option<String>,
}

fn tray_status(state: &Desktop) -> TrayStatus {
    let available = state.tray.get().is_some_and(|t| t.available());
    TrayStatus {
        available,
        message: (!available).then(|| {
            "No tray icon: this desktop has no tray host (a StatusNotifierItem host, such as \
             GNOME's AppIndicator extension). Parley Custody still works: requests are notified \
             and, without notifications, open their review window directly."
                .to_string()
        }),
    }
}

/// Requests waiting for the human, oldest first.
pub async fn pending_list(state: &Desktop) -> R<Vec<PendingView>> {
    state.core()?;
    Ok(state.pending_labelled())
}

/// One pending request's review, or `null` when it is no longer waiting.
pub async fn review_get(state: &Desktop, id: String) -> R<Option<PendingView>> {
    request_id(&id)?;
    Ok(pending(state, &id).ok())
}

/// Whether `window` may sign now: focused, in front for the arming delay,
/// and the human used the pointer. `what` names the button.
pub(super) fn may_sign(window: &Caller, gesture: Option<Gesture>, what: &str) -> R<Gesture> {
    let Some(gesture) = gesture else {
        return Err(refuse!(
            "{what} needs a click or press-and-hold with the pointer; the keyboard alone cannot {}.",
            what.to_lowercase()
        ));
    };
    // How the human pressed Approve or Issue: a trusted pointer click or a
    // press-and-hold (the UI ignores keyboard-made clicks). A window cannot
    // claim to be the terminal.
    if gesture == Gesture::Terminal {
        return Err(refuse!("{what} is given with the pointer in this window."));
    }
    // Locked, or going to sleep: no window is armed (the engine refuses too).
    if let Some(h) = window.session_hold() {
        return Err(refuse!(
            "{what} is off while the {}.",
            match h {
                crate::session::Hold::Locked => "screen is locked: unlock it first",
                crate::session::Hold::Asleep => "computer goes to sleep",
            }
        ));
    }
    if !window.focused() {
        return Err(refuse!(
            "{what} counts only while its window is in front and focused."
        ));
    }
    if !window.ready() {
        return Err(refuse!("{what} came too soon after the window appeared or regained focus. Read it, then try again."));
    }
    Ok(gesture)
}

/// Whether `window` may deny a request: any review window may (denying
/// signs nothing, so it needs no arming delay, gesture or step-up).
fn may_deny(window: &Caller) -> R<()> {
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

/// The human's decision on a pending request. `running` counts it as in
/// flight ([`crate::desktop::in_flight`]) until the engine is done with it.
#[allow(clippy::too_many_arguments)] // the call's own arguments, as sent
pub async fn review_decide(
    window: &Caller,
    state: &Desktop,
    id: String,
    approve: bool,
    confirmed: bool,
    gesture: Option<Gesture>,
    reason: Option<String>,
    typed: Option<String>,
    for_a_while: Option<crate::for_a_while::ForAWhile>,
    running: Option<Decision>,
) -> R<DecisionView> {
    request_id(&id)?;
    let reviewed = pending(state, &id)?;
    let own = window.label() == review_label(&id);
    let verdict = if approve {
        if !own {
            return Err(
                "An approval is accepted only from the request's own review window.".into(),
            );
        }
        // The one place this command builds an approval. The engine checks
        // the second confirmation against the review, then asks the OS.
        let gesture = may_sign(window, gesture, "Approve")?;
        let yes = Yes {
            gesture,
            second_confirmation: confirmed,
        };
        // A job's phrase as typed in the window: the engine checks it.
        // Approve for a while: the engine checks the choice against its offer.
        match (typed, for_a_while) {
            (Some(t), _) => Verdict::ApproveTyped(yes, t.chars().take(400).collect()),
            (None, Some(w)) => Verdict::ApproveForAWhile(yes, w),
            (None, None) => Verdict::Approve(yes),
        }
    } else {
        may_deny(window)?;
        let reason = reason
            .map(|r| r.trim().chars().take(200).collect::<String>())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "denied in the review window".into());
        Verdict::Deny(Some(reason))
    };
    let engine = state.core()?.engine.clone();
    // The decision is counted as running for as long as the engine works on
    // it, even if this call stops waiting (Quit waits for it).
    let work = tokio::spawn(async move {
        let _running = running;
        engine.decide(&id, verdict).await
    });
    let outcome = timed("the decision", work)
        .await?
        .map_err(|e| refuse!("the decision failed: {e}"))??;
    if matches!(outcome, Outcome::Approved(..) | Outcome::Issued(..)) {
        // The window closes a moment after; the notification stays.
        state.notifier.approved(state, &reviewed);
    }
    Ok(match outcome {
        Outcome::Approved(_, Some(short)) => DecisionView {
            outcome: "approved",
            message: format!(
                "Approved: the consent was signed for exactly this proposal, {}; both were sent to the agent.",
                short.words
            ),
        },
        Outcome::Approved(..) => DecisionView {
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
pub async fn review_deny_and_pause(
    window: &Caller,
    state: &Desktop,
    id: String,
) -> R<DecisionView> {
    request_id(&id)?;
    pending(state, &id)?;
    may_deny(window)?;
    let e = state.core()?.engine.clone();
    let denied = blocking("denying and pausing", move || {
        e.deny_and_pause(&id, DENY_AND_PAUSE_SECS)
            .map_err(CallError::from)
    })
    .await?;
    paused_changed(state);
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
            crate::local_time::when(unix_now().saturating_add(DENY_AND_PAUSE_SECS)),
        ),
    })
}

/// The other requests waiting now that are alike to `id` (the same agent,
/// OS user, service and capability; [`crate::engine::Engine::alike`]),
/// for its review window to list.
pub async fn review_alike(window: &Caller, state: &Desktop, id: String) -> R<Vec<PendingView>> {
    request_id(&id)?;
    own_review(window, &id)?;
    let e = state.core()?.engine.clone();
    let alike = blocking("listing alike requests", move || Ok(e.alike(&id))).await?;
    Ok(alike.into_iter().map(|p| state.label(p)).collect())
}

/// Denies `id` and every request alike to it waiting now, from `id`'s own
/// review window (which lists them). Approving stays one at a time.
pub async fn review_deny_alike(
    window: &Caller,
    state: &Desktop,
    id: String,
    reason: Option<String>,
) -> R<DecisionView> {
    request_id(&id)?;
    pending(state, &id)?;
    own_review(window, &id)?;
    let reason = reason
        .map(|r| r.trim().chars().take(200).collect::<String>())
        .filter(|r| !r.is_empty());
    let e = state.core()?.engine.clone();
    let denied = blocking("denying alike requests", move || {
        e.deny_alike(&id, reason.as_deref())
            .map_err(CallError::from)
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
fn own_review(window: &Caller, id: &str) -> R<()> {
    if window.label() == review_label(id) {
        Ok(())
    } else {
        Err("Only the request's own review window can do this.".into())
    }
}

/// Opens (or focuses) a window: `main`, `review` (with `id`), `grant`
/// (optionally with `id` of a pending grant request, or `agent`), `audit`,
/// `settings`. The fragment of the grant view is built here from checked
/// values, never passed through from the window.
pub async fn open_window(
    state: &Desktop,
    kind: String,
    id: Option<String>,
    agent: Option<String>,
) -> R<()> {
    let main = |view, fragment| OpenTarget::Main { view, fragment };
    let target = match kind.as_str() {
        "main" => main(View::Home, None),
        "review" => {
            let id = id.unwrap_or_default();
            request_id(&id)?;
            OpenTarget::Review(id)
        }
        "grant" => match (id, agent) {
            (Some(id), _) => {
                request_id(&id)?;
                main(View::Grant, Some(format!("request={id}")))
            }
            (None, Some(key)) => {
                let key: parley_core::PublicKey =
                    key.parse().map_err(|_| "not an agent key".to_string())?;
                main(View::Grant, Some(format!("agent={key}")))
            }
            (None, None) => main(View::Grant, None),
        },
        "audit" => main(View::Audit, None),
        "settings" => main(View::Settings, None),
        _ => return Err("unknown window".into()),
    };
    state.opener.open(target);
    Ok(())
}
