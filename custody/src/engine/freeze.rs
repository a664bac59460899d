//! "Stop all agents" (issue 30, item 1): custody frozen. Freezing asks
//! nothing (stopping is never a risk); every pending request is denied and
//! its agent told; every new one is refused unseen with code
//! [`FROZEN_CODE`]; nothing is signed, not even a decision already under
//! way. Unfreezing loosens custody, so the human's app and command ask the
//! OS first (`org.parley.custody.change`), then show what was refused.
//!
//! The freeze is kept in the audit file ([`crate::audit::Freeze`]), so it
//! survives a restart and the human's own `parley custody freeze`, run with
//! the service up, takes effect too: every request reads it, and
//! [`Engine::watch_freeze`] denies what is pending within
//! [`FREEZE_WATCH_EVERY`] of a freeze made by another process.

use super::*;
use crate::audit::{Freeze, Unfrozen, FROZEN_CODE};

/// How often the service looks for a freeze another process (the human's
/// `parley custody freeze`) wrote.
pub const FREEZE_WATCH_EVERY: Duration = Duration::from_millis(500);

/// What the agent of a denied pending request is told.
const DENIED_FROZEN: &str =
    "custody_frozen: the human stopped all agents (custody is frozen); nothing was signed";

impl Engine {
    /// The freeze in force, if any, for showing (a log that cannot be read
    /// shows as not frozen, and says so in the daemon's log). The signing
    /// and submit paths use [`Engine::signing_stopped`] and
    /// [`Engine::frozen_rejection`] instead, which fail closed.
    pub fn frozen(&self) -> Option<Freeze> {
        self.freeze_state().unwrap_or(None)
    }

    /// The freeze in force, or why it could not be read (logged).
    fn freeze_state(&self) -> Result<Option<Freeze>, String> {
        lock(&self.inner.audit).frozen().map_err(|e| {
            tracing::error!("whether custody is frozen could not be read: {e}");
            e.to_string()
        })
    }

    /// Whether nothing may be signed now: custody is frozen, or whether it
    /// is frozen cannot be read (an unreadable freeze counts as frozen).
    pub(super) fn signing_stopped(&self) -> bool {
        !matches!(self.freeze_state(), Ok(None))
    }

    /// The refusal for every request while custody is frozen (or while
    /// whether it is frozen cannot be read: that fails closed); the refusal
    /// is counted for the unfreeze.
    pub(super) fn frozen_rejection(&self) -> Option<Rejection> {
        let f = match self.freeze_state() {
            Ok(f) => f?,
            Err(e) => {
                return Some(Rejection {
                    code: FROZEN_CODE,
                    message: format!(
                        "whether custody is frozen could not be read ({e}); every request is \
                         refused until it can be"
                    ),
                })
            }
        };
        if let Err(e) = lock(&self.inner.audit).count_frozen_refusal() {
            tracing::error!("a refusal while frozen could not be counted: {e}");
        }
        Some(Rejection {
            code: FROZEN_CODE,
            message: format!(
                "custody is frozen: the human stopped all agents at {}; every request is refused \
                 without being shown until the human unfreezes custody",
                parley_core::lens::time(f.at)
            ),
        })
    }

    /// Freezes custody ("Stop all agents"): recorded first, then every
    /// pending request is denied and its agent told. Asks nothing. Returns
    /// the freeze and the ids it denied.
    pub fn freeze(&self, reason: &str) -> Result<(Freeze, Vec<String>), PauseError> {
        let reason = match reason.trim() {
            "" => "all agents stopped by the human",
            r => r,
        };
        let f = lock(&self.inner.audit)
            .freeze(reason, unix_now())
            .map_err(|e| PauseError::Audit(e.to_string()))?;
        let denied = self.deny_all_pending();
        // Approve-for-a-while grants end too (revoked, asking nothing).
        self.end_short_grants(crate::approval::Unasked::Frozen);
        Ok((f, denied))
    }

    /// Denies every pending request not being decided (a decision under
    /// way refuses to sign while frozen and is denied on the next look).
    fn deny_all_pending(&self) -> Vec<String> {
        self.deny_pending(|_| true, DENIED_FROZEN)
    }

    /// Ends the freeze, its `custody_unfrozen` row saying how the OS
    /// confirmed it (`confirmed_by`): the caller asked the OS first
    /// ([`Engine::authenticate_change`]). Returns what was refused
    /// meanwhile, or `None` when custody was not frozen.
    pub fn unfreeze_confirmed(&self, confirmed_by: &str) -> Result<Option<Unfrozen>, PauseError> {
        lock(&self.inner.audit)
            .unfreeze(unix_now(), Some(confirmed_by))
            .map_err(|e| PauseError::Audit(e.to_string()))
    }

    /// Runs until dropped: while custody is frozen, denies whatever is
    /// pending (a freeze written by the human's command, or a decision that
    /// was under way), and calls `changed` whenever custody froze or
    /// unfroze, so the tray and the windows say so.
    pub async fn watch_freeze(&self, changed: impl Fn(bool) + Send) {
        let mut was = None;
        loop {
            let me = self.clone();
            let now = tokio::task::spawn_blocking(move || {
                let frozen = me.frozen().is_some();
                if frozen && !lock(&me.inner.state).queue.pending().is_empty() {
                    me.deny_all_pending();
                }
                // A freeze another process wrote (the human's command) ends
                // the approve-for-a-while grants as one made here does.
                if frozen && was != Some(true) {
                    me.end_short_grants(crate::approval::Unasked::Frozen);
                }
                frozen
            })
            .await
            .unwrap_or(false);
            if was != Some(now) {
                if was.is_some() {
                    tracing::warn!(
                        "custody {}",
                        if now { "was frozen" } else { "was unfrozen" }
                    );
                }
                changed(now);
                was = Some(now);
            }
            tokio::time::sleep(FREEZE_WATCH_EVERY).await;
        }
    }
}
