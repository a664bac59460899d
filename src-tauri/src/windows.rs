//! The app's windows. Each kind is its own page of the UI bundle with its
//! own capability (`capabilities/*.json`): a review window can decide its own
//! request and nothing else, the audit view can read the log but not sign.
//!
//! | window | label | page |
//! |---|---|---|
//! | home (pending list, first run) | `main` | `index.html` |
//! | one per request | `review-<id>` | `review.html#<id>` |
//! | grant form | `grant`, or `grant-<id>` for a request | `grant.html`, `#agent=<key>`, `#request=<id>` |
//! | audit view | `audit` | `audit.html` |
//! | settings | `settings` | `settings.html` |

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder, WindowEvent};

/// How long a review window must have been on screen, and focused, before
/// Approve counts (anti-clickjacking; the UI shows the same delay).
pub const APPROVE_DELAY: Duration = Duration::from_millis(1500);

/// Slack for the time between the UI's timer and ours.
const DELAY_SLACK: Duration = Duration::from_millis(300);

/// A window label for request `id`.
pub fn review_label(id: &str) -> String {
    format!("review-{id}")
}

/// Custody's request ids are `q` + digits; anything else is refused before
/// it becomes part of a label or a URL.
pub fn valid_request_id(id: &str) -> bool {
    id.len() <= 24
        && id.starts_with('q')
        && id.len() > 1
        && id[1..].bytes().all(|b| b.is_ascii_digit())
}

/// When each review window or grant form last appeared or regained focus;
/// approvals that come sooner than [`APPROVE_DELAY`] after it are refused.
#[derive(Default)]
pub struct Armed(Mutex<HashMap<String, Instant>>);

impl Armed {
    fn arm(&self, label: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(label.to_string(), Instant::now());
        }
    }
    fn disarm(&self, label: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(label);
        }
    }
    /// Whether the window `label` has been shown long enough for an approval.
    pub fn ready(&self, label: &str) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|m| m.get(label).copied())
            .is_some_and(|t| t.elapsed() + DELAY_SLACK >= APPROVE_DELAY)
    }
}

/// Window sizes (logical pixels, inside the decorations). Every window fits
/// a 1366×768 laptop screen with a panel and a title bar (at most 680 tall);
/// longer content scrolls inside it.
const MAIN_SIZE: (f64, f64) = (760.0, 640.0);
const REVIEW_SIZE: (f64, f64) = (620.0, 680.0);
const GRANT_SIZE: (f64, f64) = (720.0, 680.0);
const AUDIT_SIZE: (f64, f64) = (1100.0, 680.0);
const SETTINGS_SIZE: (f64, f64) = (780.0, 680.0);

fn show(app: &AppHandle, label: &str) -> bool {
    match app.get_webview_window(label) {
        Some(w) => {
            let _ = w.unminimize();
            let _ = w.show();
            let _ = w.set_focus();
            true
        }
        None => false,
    }
}

fn build(
    app: &AppHandle,
    label: &str,
    page: String,
    title: &str,
    size: (f64, f64),
) -> Result<tauri::WebviewWindow, String> {
    WebviewWindowBuilder::new(app, label, WebviewUrl::App(page.into()))
        .title(parley_custody::display::safe(title))
        .inner_size(size.0, size.1)
        .min_inner_size(420.0, 360.0)
        .center()
        .focused(true)
        .build()
        .map_err(|e| format!("cannot open the window: {e}"))
}

/// The home window.
pub fn open_main(app: &AppHandle) -> Result<(), String> {
    if show(app, "main") {
        return Ok(());
    }
    build(
        app,
        "main",
        "index.html".into(),
        "Parley Custody",
        MAIN_SIZE,
    )
    .map(|_| ())
}

/// The review window of request `id` (one per request).
pub fn open_review(app: &AppHandle, id: &str) -> Result<(), String> {
    if !valid_request_id(id) {
        return Err("not a request id".into());
    }
    let label = review_label(id);
    if show(app, &label) {
        return Ok(());
    }
    let w = build(
        app,
        &label,
        format!("review.html#{id}"),
        "Review request — Parley Custody",
        REVIEW_SIZE,
    )?;
    arm_while_focused(app, &w, &label);
    Ok(())
}

/// Arms `label` now and whenever it regains focus, disarms it when it loses
/// focus: the windows that sign (review, grant form) accept a decision only
/// [`APPROVE_DELAY`] after they came to the front.
fn arm_while_focused(app: &AppHandle, w: &tauri::WebviewWindow, label: &str) {
    app.state::<crate::state::AppState>().armed.arm(label);
    let handle = app.clone();
    let l = label.to_string();
    w.on_window_event(move |e| {
        let armed = &handle.state::<crate::state::AppState>().armed;
        match e {
            WindowEvent::Focused(true) => armed.arm(&l),
            WindowEvent::Focused(false) | WindowEvent::Destroyed => armed.disarm(&l),
            _ => {}
        }
    });
}

/// The grant form: `grant-<id>` answers pending grant request `id` (one
/// window per request); `grant` is the human's own form, optionally with an
/// agent key filled in.
pub fn open_grant(
    app: &AppHandle,
    request: Option<&str>,
    agent: Option<&str>,
) -> Result<(), String> {
    let (label, fragment) = match (request, agent) {
        (Some(id), _) if valid_request_id(id) => (format!("grant-{id}"), format!("#request={id}")),
        (Some(_), _) => return Err("not a request id".into()),
        (None, Some(key)) if key.parse::<parley_core::PublicKey>().is_ok() => {
            ("grant".to_string(), format!("#agent={key}"))
        }
        (None, Some(_)) => return Err("not an agent key".into()),
        (None, None) => ("grant".to_string(), String::new()),
    };
    if show(app, &label) {
        return Ok(());
    }
    let w = build(
        app,
        &label,
        format!("grant.html{fragment}"),
        "Issue a grant — Parley Custody",
        GRANT_SIZE,
    )?;
    arm_while_focused(app, &w, &label);
    Ok(())
}

/// Whether `label` is a grant form window.
pub fn is_grant_form(label: &str) -> bool {
    label == "grant" || label.strip_prefix("grant-").is_some_and(valid_request_id)
}

/// The audit view.
pub fn open_audit(app: &AppHandle) -> Result<(), String> {
    if show(app, "audit") {
        return Ok(());
    }
    build(
        app,
        "audit",
        "audit.html".into(),
        "Audit log — Parley Custody",
        AUDIT_SIZE,
    )
    .map(|_| ())
}

/// The settings.
pub fn open_settings(app: &AppHandle) -> Result<(), String> {
    if show(app, "settings") {
        return Ok(());
    }
    build(
        app,
        "settings",
        "settings.html".into(),
        "Settings — Parley Custody",
        SETTINGS_SIZE,
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_window_fits_a_1366_by_768_screen_with_a_panel_and_title_bar() {
        for (name, (w, h)) in [
            ("main", MAIN_SIZE),
            ("review", REVIEW_SIZE),
            ("grant", GRANT_SIZE),
            ("audit", AUDIT_SIZE),
            ("settings", SETTINGS_SIZE),
        ] {
            assert!(w <= 1366.0 - 40.0 && h <= 768.0 - 88.0, "{name} is {w}×{h}");
            assert!(
                w >= 420.0 && h >= 360.0,
                "{name} is at least the minimum size"
            );
        }
    }

    #[test]
    fn request_ids() {
        assert!(valid_request_id("q1"));
        assert!(valid_request_id("q12345"));
        for bad in ["", "q", "1", "q1a", "q-1", "../q1", "q1#x", "review-q1"] {
            assert!(!valid_request_id(bad), "{bad}");
        }
    }

    #[test]
    fn grant_form_labels() {
        assert!(is_grant_form("grant"));
        assert!(is_grant_form("grant-q7"));
        assert!(!is_grant_form("grant-x"));
        assert!(!is_grant_form("review-q7"));
        assert!(!is_grant_form("main"));
    }

    #[test]
    fn armed_windows_wait_for_the_delay() {
        let a = Armed::default();
        assert!(!a.ready("review-q1"), "never shown");
        a.arm("review-q1");
        assert!(!a.ready("review-q1"), "just shown");
        a.0.lock().unwrap().insert(
            "review-q1".into(),
            Instant::now() - APPROVE_DELAY - Duration::from_millis(1),
        );
        assert!(a.ready("review-q1"));
        a.disarm("review-q1");
        assert!(!a.ready("review-q1"));
    }
}
