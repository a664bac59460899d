//! What the service tells the UI process, and where the UI should go.
//!
//! Shared by the channel (which sends them), the tray and the notifications
//! (which ask for windows), and the UI spawner (which turns an [`OpenTarget`]
//! into `--open` for a UI that is not running yet). The wire form is in
//! docs/ui-channel.md.

use serde::Serialize;

/// A view of the main window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// Pending requests, first run, status.
    Home,
    /// The grant form.
    Grant,
    /// The audit log.
    Audit,
    /// Settings.
    Settings,
}

impl View {
    /// The name used on the wire and in `--open main:<view>`.
    pub fn name(self) -> &'static str {
        match self {
            View::Home => "home",
            View::Grant => "grant",
            View::Audit => "audit",
            View::Settings => "settings",
        }
    }
}

/// A window the UI should show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenTarget {
    /// The main window at a view; `fragment` is the view's own state
    /// (`request=q7`, `agent=<key>`), built by the service, never by an agent.
    Main {
        /// Which view.
        view: View,
        /// The view's state, if any.
        fragment: Option<String>,
    },
    /// The review window of request `id` (`q` + digits).
    Review(String),
}

impl OpenTarget {
    /// The value of the UI's `--open` flag: `main:<view>[#<fragment>]` or `review-<id>`.
    pub fn as_arg(&self) -> String {
        match self {
            OpenTarget::Main { view, fragment } => match fragment {
                Some(f) => format!("main:{}#{f}", view.name()),
                None => format!("main:{}", view.name()),
            },
            OpenTarget::Review(id) => format!("review-{id}"),
        }
    }
}

/// One message from the service to every connected UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiEvent {
    /// The pending list changed: pages reload it.
    PendingChanged,
    /// Request `id` left the queue.
    PendingWithdrawn(String),
    /// Something the home and settings views show changed (keys, settings,
    /// start at login, notifications found missing): pages reload status.
    StatusChanged,
    /// An agent was paused or resumed: the audit view reloads its pauses.
    PausesChanged,
    /// Show a window (focus it if open).
    Open(OpenTarget),
    /// Close a window (e.g. the review of a request answered from the grant form).
    Close(String),
    /// The service is stopping: close everything and exit.
    Quit,
}

impl UiEvent {
    /// The message as sent on the channel (one line of JSON).
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            UiEvent::PendingChanged => serde_json::json!({"event": "pending-changed"}),
            UiEvent::PendingWithdrawn(id) => {
                serde_json::json!({"event": "pending-withdrawn", "id": id})
            }
            UiEvent::StatusChanged => serde_json::json!({"event": "status-changed"}),
            UiEvent::PausesChanged => serde_json::json!({"event": "pauses-changed"}),
            UiEvent::Open(OpenTarget::Main { view, fragment }) => serde_json::json!({
                "event": "open", "window": "main", "view": view.name(), "fragment": fragment,
            }),
            UiEvent::Open(OpenTarget::Review(id)) => {
                serde_json::json!({"event": "open", "window": format!("review-{id}")})
            }
            UiEvent::Close(label) => serde_json::json!({"event": "close", "window": label}),
            UiEvent::Quit => serde_json::json!({"event": "quit"}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_targets_become_the_uis_open_flag() {
        let t = OpenTarget::Main {
            view: View::Grant,
            fragment: Some("request=q7".into()),
        };
        assert_eq!(t.as_arg(), "main:grant#request=q7");
        assert_eq!(OpenTarget::Review("q7".into()).as_arg(), "review-q7");
    }

    #[test]
    fn events_are_one_json_line_each() {
        let line = UiEvent::PendingWithdrawn("q3\nx".into())
            .to_value()
            .to_string();
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["id"], "q3\nx");
        let open = UiEvent::Open(OpenTarget::Main {
            view: View::Home,
            fragment: None,
        });
        assert_eq!(
            open.to_value().to_string(),
            r#"{"event":"open","window":"main","view":"home","fragment":null}"#
        );
    }
}
