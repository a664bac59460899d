//! How a decision is obtained from the human.
//!
//! The engine is a broker (the shape of GitButler's askpass broker): it puts
//! each reviewed request in its queue and tells the approver; the approver
//! shows it and later answers by id through [`crate::engine::Engine::decide`].
//! Every wait has a deadline in the engine, so an approver that never answers
//! cannot hold an agent forever.
//!
//! Implementations: the desktop app (`src-tauri`), the terminal prompt of the
//! headless daemon ([`crate::terminal`]), and [`ScriptedApprover`] for tests
//! only (behind the `test-approver` feature, which no binary enables and no
//! flag or environment variable reaches).

use crate::review::{FormGrant, Review};
use crate::stepup::StepUpNeed;
use serde::{Deserialize, Serialize};

/// A request waiting for the human.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingView {
    /// Custody's id for it (used to decide).
    pub id: String,
    /// What the human must see.
    pub review: Review,
    /// Whether OS authentication follows Approve, in words for the review.
    pub step_up: StepUpNeed,
    /// When it arrived (unix seconds).
    pub received_at: i64,
    /// When it closes by itself (unix seconds).
    pub closes_at: i64,
}

/// How the human said yes, as the approver observed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gesture {
    /// A pointer click on Approve (never a key press).
    Click,
    /// Approve pressed and held.
    Hold,
    /// Typed at a terminal: `y` at the daemon's prompt, or a `parley
    /// custody` command (a revocation).
    Terminal,
}

/// An approver's report of a yes: the gesture, and whether the second
/// confirmation that high-risk or irreversible requests need was given.
/// The engine checks it against the review; it is not yet an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Yes {
    /// How Approve was given.
    pub gesture: Gesture,
    /// The second confirmation was given as well.
    pub second_confirmation: bool,
}

/// The human's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Sign it as reviewed.
    Approve(Yes),
    /// A job approval: sign it as reviewed, with the phrase the human typed
    /// (the engine checks it against the review's phrase).
    ApproveTyped(Yes, String),
    /// Grants only: sign the form's caveats instead (the human edited the
    /// request; a widening must be confirmed, see [`FormGrant`]).
    ApproveWith(FormGrant, Yes),
    /// A consent only: sign it as reviewed, and also issue the short grant
    /// the human chose ([`crate::for_a_while`]; the engine checks the
    /// choice against its own offer).
    ApproveForAWhile(Yes, crate::for_a_while::ForAWhile),
    /// Do not sign.
    Deny(Option<String>),
}

/// Receives requests to show. Calls must return quickly (no blocking on the human).
pub trait Approver: Send + Sync + 'static {
    /// A new request awaits a decision.
    fn notify(&self, pending: &PendingView);
    /// A request left the queue (decided, expired, cancelled): stop showing it.
    fn withdrawn(&self, id: &str);
}

#[cfg(any(test, feature = "test-approver"))]
pub use scripted::ScriptedApprover;

#[cfg(any(test, feature = "test-approver"))]
mod scripted {
    use super::{Approver, PendingView};
    use std::sync::Mutex;
    use tokio::sync::mpsc;

    /// Test-only: forwards every request to a channel the test reads and
    /// answers through the engine, like a human would.
    pub struct ScriptedApprover {
        tx: mpsc::UnboundedSender<PendingView>,
        withdrawn: Mutex<Vec<String>>,
    }

    impl ScriptedApprover {
        /// The approver and the receiving end of what it is shown.
        pub fn new() -> (ScriptedApprover, mpsc::UnboundedReceiver<PendingView>) {
            let (tx, rx) = mpsc::unbounded_channel();
            (
                ScriptedApprover {
                    tx,
                    withdrawn: Mutex::new(Vec::new()),
                },
                rx,
            )
        }

        /// Ids withdrawn so far.
        pub fn withdrawn_ids(&self) -> Vec<String> {
            self.withdrawn.lock().map(|w| w.clone()).unwrap_or_default()
        }
    }

    impl Approver for ScriptedApprover {
        fn notify(&self, pending: &PendingView) {
            let _ = self.tx.send(pending.clone());
        }
        fn withdrawn(&self, id: &str) {
            if let Ok(mut w) = self.withdrawn.lock() {
                w.push(id.to_string());
            }
        }
    }
}
