//! Which window of the UI may make which call, and whether a window that
//! signs is armed. Enforced here, in the service, for every call the UI
//! forwards: the UI process is not trusted to keep its own capabilities
//! (a bug in the browser engine could make any page call anything), so the
//! table the Tauri capability files express is checked again by label.
//!
//! A window's label is reported by the UI process from Tauri's own window
//! object, never by page script. A UI that lies about labels or focus gains
//! no more than Deny, Approve needs a pointer gesture, the arming delay of
//! a window this UI says is in front, and (for anything that commits) the
//! OS authentication that runs in this service.

use crate::session::{Hold, SessionGate};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a review window or grant form must have been on screen, and
/// focused, before Approve or Issue counts (anti-clickjacking). Defined in
/// `parley_custody_client::ui_constants`, the one source the UI's generated
/// `ui/src/custody-constants.ts` is made from too (the review reply also
/// carries it as `approve_delay_ms`).
pub use parley_custody_client::ui_constants::APPROVE_DELAY;

/// Slack for the time between the UI's timer and ours.
const DELAY_SLACK: Duration = Duration::from_millis(300);

/// Windows one UI connection may report at once (the UI opens one per
/// request at most; more is a UI gone wrong).
const MAX_WINDOWS: usize = 256;

/// Custody's request ids are `q` + digits; anything else is refused before
/// it becomes part of a label.
pub fn valid_request_id(id: &str) -> bool {
    id.len() <= 24
        && id.len() > 1
        && id.starts_with('q')
        && id[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The label of request `id`'s review window.
pub fn review_label(id: &str) -> String {
    format!("review-{id}")
}

/// Whether `label` may show a grant form: the main window (whose views
/// include the human's own grant form) or `review-<id>`, whose grant
/// request's form is shown in that same window (one window per request).
pub fn is_grant_form(label: &str) -> bool {
    matches!(
        WindowKind::of(label),
        Some(WindowKind::Main | WindowKind::Review(_))
    )
}

/// The kind of window a label names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowKind {
    /// The main window (`main`): home, the human's own grant form, audit and
    /// settings are its views. One window, so one set of calls: what any of
    /// its views may do, the window may do (a page of ours in it is as
    /// trusted as another page of ours in it).
    Main,
    /// A request's window (`review-<id>`), with its request id: its review,
    /// and for a grant request the grant form that answers it (the same
    /// window moves between the two pages; there is no second window).
    Review(String),
}

impl WindowKind {
    /// What `label` is; `None` for a label no window of ours has (the old
    /// `grant`, `audit` and `settings` windows are views of `main` now, and
    /// a request's grant form is shown in its `review-<id>` window, so a
    /// `grant-<id>` window is refused).
    pub fn of(label: &str) -> Option<WindowKind> {
        if label == "main" {
            return Some(WindowKind::Main);
        }
        label
            .strip_prefix("review-")
            .filter(|id| valid_request_id(id))
            .map(|id| WindowKind::Review(id.to_string()))
    }

    /// The calls this kind of window may make (the former capability files).
    fn allowed(&self) -> &'static [&'static str] {
        match self {
            WindowKind::Main => &[
                "status",
                "pending_list",
                "open_window",
                // the own grant form
                "grant_context",
                "grant_preview",
                "grant_issue",
                // audit
                "audit_query",
                "audit_export",
                "agent_pauses",
                "agent_pause",
                "agent_resume",
                "grant_revoke",
                // Stop all agents
                "custody_frozen",
                "custody_freeze",
                "custody_unfreeze",
                // settings
                "settings_get",
                "settings_save",
                "settings_loosenings",
                "keys_list",
                "key_create",
                "key_import",
                "key_shred",
                "key_delete",
                "agent_label_set",
                "app_restart",
                "app_quit",
                "autostart_set",
                "agent_user_plan",
                "agent_user_apply",
                "prompt_owner_apply",
            ],
            WindowKind::Review(_) => &[
                "status",
                "review_get",
                "review_decide",
                "review_for_a_while",
                "review_deny_and_pause",
                "review_alike",
                "review_deny_alike",
                // the grant form of its own grant request, in this window
                "grant_context",
                "grant_preview",
                "grant_issue",
                "agent_label_set",
                "open_window",
            ],
        }
    }
}

/// Refuses a call `label` may not make. `args` are checked where the table
/// depends on them: a request's window acts on its own request only (its
/// review, and its grant form answers that request only, never a grant for
/// the human to copy), and may open only the grant form of that request or
/// home; the main window's own form answers no request (it issues a grant
/// for the human to copy).
pub fn check(label: &str, call: &str, args: &serde_json::Value) -> Result<WindowKind, String> {
    let Some(kind) = WindowKind::of(label) else {
        return Err("This window is not one of Parley Custody's.".into());
    };
    if !kind.allowed().contains(&call) {
        return Err(format!("This window may not do that ({call})."));
    }
    let str_arg = |k: &str| args.get(k).and_then(|v| v.as_str());
    let request = args.get("request").filter(|v| !v.is_null());
    match &kind {
        WindowKind::Review(own) => {
            let id = str_arg("id");
            if call.starts_with("review_") && id != Some(own.as_str()) {
                return Err("A review window acts on its own request only.".into());
            }
            if call.starts_with("grant_") && request.and_then(|v| v.as_str()) != Some(own.as_str())
            {
                return Err("A request's grant form answers that request only.".into());
            }
            // Home lists every request waiting: the review's "N more
            // waiting" goes there; it decides nothing itself.
            let grant_of_own = str_arg("kind") == Some("grant") && id == Some(own.as_str());
            if call == "open_window" && !grant_of_own && str_arg("kind") != Some("main") {
                return Err(
                    "A review window opens only the grant form of its own request, or home.".into(),
                );
            }
        }
        WindowKind::Main if call.starts_with("grant_") && request.is_some() => {
            return Err(
                "A waiting agent's request is answered in its own grant form, not here.".into(),
            );
        }
        _ => {}
    }
    Ok(kind)
}

/// What the UI said about one window.
#[derive(Debug, Clone, Copy)]
struct WindowState {
    /// When it last appeared or came to the front; `None` while in the back.
    armed_at: Option<Instant>,
}

/// The windows of one UI connection, as that UI reports them
/// (`shown`, `focused`, `blurred`, `closed`), and the session they show on:
/// while it is locked or going to sleep no window is armed, and on unlock
/// every window arms from the start ([`crate::session`]).
#[derive(Debug, Default)]
pub struct Windows(Mutex<HashMap<String, WindowState>>, SessionGate);

/// A window report from the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// The window was created and shown (it has focus).
    Shown,
    /// It came to the front.
    Focused,
    /// It lost focus.
    Blurred,
    /// It was closed.
    Closed,
}

impl Note {
    /// The wire name (`shown`, `focused`, `blurred`, `closed`).
    pub fn parse(s: &str) -> Option<Note> {
        match s {
            "shown" => Some(Note::Shown),
            "focused" => Some(Note::Focused),
            "blurred" => Some(Note::Blurred),
            "closed" => Some(Note::Closed),
            _ => None,
        }
    }
}

impl Windows {
    /// The windows of a UI whose session is followed by `session`.
    pub fn following(session: SessionGate) -> Windows {
        Windows(Mutex::default(), session)
    }

    /// Why no window may sign now (the session is locked or going to sleep).
    pub fn session_hold(&self) -> Option<Hold> {
        self.1.hold()
    }

    /// Records a report. Reports for labels no window of ours has are ignored.
    pub fn note(&self, label: &str, note: Note) {
        if WindowKind::of(label).is_none() {
            return;
        }
        let Ok(mut m) = self.0.lock() else {
            return;
        };
        match note {
            Note::Shown | Note::Focused => {
                if m.len() < MAX_WINDOWS || m.contains_key(label) {
                    m.insert(
                        label.to_string(),
                        WindowState {
                            armed_at: Some(Instant::now()),
                        },
                    );
                }
            }
            Note::Blurred => {
                if let Some(w) = m.get_mut(label) {
                    w.armed_at = None;
                }
            }
            Note::Closed => {
                m.remove(label);
            }
        }
    }

    /// Whether `label` is in front now.
    pub fn focused(&self, label: &str) -> bool {
        self.armed_since(label).is_some()
    }

    /// Whether `label` has been in front for [`APPROVE_DELAY`].
    /// On unlock, every window waits the whole delay again.
    pub fn ready(&self, label: &str) -> bool {
        let delay = APPROVE_DELAY.saturating_sub(DELAY_SLACK);
        self.armed_since(label)
            .is_some_and(|t| t.elapsed() >= delay)
            && self.1.armed_since_open(delay)
    }

    fn armed_since(&self, label: &str) -> Option<Instant> {
        self.0
            .lock()
            .ok()
            .and_then(|m| m.get(label).and_then(|w| w.armed_at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_ids_and_labels() {
        assert!(valid_request_id("q1") && valid_request_id("q123"));
        for bad in [
            "",
            "q",
            "1",
            "q1a",
            "q-1",
            "q../x",
            &format!("q{}", "1".repeat(30)),
        ] {
            assert!(!valid_request_id(bad), "{bad}");
        }
        assert!(is_grant_form("main") && is_grant_form("review-q3"));
        for gone in [
            "grant", "audit", "settings", "grant-", "grant-x", "grants", "grant-q3",
        ] {
            assert!(!is_grant_form(gone), "{gone}");
            assert_eq!(WindowKind::of(gone), None, "{gone} is a view of main now");
        }
        assert_eq!(
            WindowKind::of("review-q7"),
            Some(WindowKind::Review("q7".into()))
        );
        assert_eq!(WindowKind::of("review-7"), None);
        assert_eq!(WindowKind::of("evil"), None);
    }

    #[test]
    fn each_window_makes_only_the_calls_its_table_lists() {
        let none = json!({});
        assert!(check("main", "status", &none).is_ok());
        assert!(check("main", "review_decide", &none).is_err());
        assert!(check("main", "review_deny_alike", &json!({"id": "q1"})).is_err());
        assert!(check("main", "grant_issue", &none).is_ok());
        assert!(check("main", "audit_query", &none).is_ok());
        assert!(check("main", "key_delete", &none).is_ok());
        // One window per request: a grant form of its own is no window of ours.
        assert!(check("grant-q2", "grant_issue", &json!({"request": "q2"})).is_err());
        assert!(check("grant-q2", "status", &none).is_err());
        assert!(check("review-q2", "grant_issue", &json!({"request": "q2"})).is_ok());
        assert!(check("review-q2", "key_delete", &none).is_err());
        assert!(check("review-q2", "audit_export", &none).is_err());
        assert!(check("audit", "status", &none).is_err());
        assert!(check("nowhere", "status", &none).is_err());
        assert!(check("main", "no_such_call", &none).is_err());
    }

    #[test]
    fn a_review_window_acts_on_its_own_request_only() {
        assert!(check("review-q3", "review_decide", &json!({"id": "q3"})).is_ok());
        assert!(check("review-q3", "review_decide", &json!({"id": "q4"})).is_err());
        assert!(check("review-q3", "review_decide", &json!({})).is_err());
        assert!(check("review-q3", "review_deny_alike", &json!({"id": "q4"})).is_err());
        assert!(check(
            "review-q3",
            "open_window",
            &json!({"kind": "grant", "id": "q3"})
        )
        .is_ok());
        assert!(check(
            "review-q3",
            "open_window",
            &json!({"kind": "grant", "id": "q4"})
        )
        .is_err());
        assert!(check("review-q3", "open_window", &json!({"kind": "settings"})).is_err());
        assert!(check("review-q3", "open_window", &json!({"kind": "main"})).is_ok());
        assert!(check("review-q3", "key_delete", &json!({})).is_err());
    }

    #[test]
    fn a_grant_request_is_answered_only_in_its_own_window() {
        for call in ["grant_context", "grant_preview", "grant_issue"] {
            assert!(check("review-q5", call, &json!({"request": "q5"})).is_ok());
            assert!(check("review-q5", call, &json!({"request": "q6"})).is_err());
            assert!(check("review-q5", call, &json!({})).is_err(), "no request");
            assert!(
                check("review-q5", call, &json!({"request": null})).is_err(),
                "a request's window issues no grant for the human to copy"
            );
            assert!(check("review-q5", call, &json!({"request": 5})).is_err());
            assert!(check("grant-q5", call, &json!({"request": "q5"})).is_err());
            assert!(check("main", call, &json!({"request": "q5"})).is_err());
            assert!(check("main", call, &json!({"request": null})).is_ok());
            assert!(check("main", call, &json!({})).is_ok());
        }
    }

    #[test]
    fn a_window_is_ready_only_after_the_delay_in_front_and_not_after_blur() {
        let w = Windows::default();
        assert!(!w.focused("review-q1") && !w.ready("review-q1"));
        w.note("review-q1", Note::Shown);
        assert!(w.focused("review-q1"));
        assert!(!w.ready("review-q1"), "too soon");
        std::thread::sleep(APPROVE_DELAY - DELAY_SLACK + Duration::from_millis(50));
        assert!(w.ready("review-q1"));
        w.note("review-q1", Note::Blurred);
        assert!(!w.ready("review-q1") && !w.focused("review-q1"));
        w.note("review-q1", Note::Focused);
        assert!(!w.ready("review-q1"), "re-armed from the new focus");
        w.note("review-q1", Note::Closed);
        assert!(!w.focused("review-q1"));
        w.note("bogus", Note::Shown);
        assert!(!w.focused("bogus"));
    }

    #[test]
    fn no_window_is_ready_while_locked_and_each_waits_the_whole_delay_after_unlock() {
        let gate = SessionGate::new();
        let w = Windows::following(gate.clone());
        w.note("review-q1", Note::Shown);
        std::thread::sleep(APPROVE_DELAY);
        assert!(w.ready("review-q1"));
        gate.set_locked(true);
        assert_eq!(w.session_hold(), Some(Hold::Locked));
        assert!(!w.ready("review-q1"), "disarmed while locked");
        gate.set_locked(false);
        assert_eq!(w.session_hold(), None);
        assert!(w.focused("review-q1"), "still in front");
        assert!(!w.ready("review-q1"), "the whole delay again after unlock");
        std::thread::sleep(APPROVE_DELAY);
        assert!(w.ready("review-q1"));
        gate.set_asleep(true);
        assert_eq!(w.session_hold(), Some(Hold::Asleep));
        assert!(!w.ready("review-q1"), "disarmed while going to sleep");
    }
}
