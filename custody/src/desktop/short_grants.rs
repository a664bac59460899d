//! The session's lock and approve-for-a-while grants (issue 30, item 4):
//! the one call the lock watcher makes when the session locks. With the
//! human's setting *End approve-for-a-while grants when the screen locks*
//! on (the default), every live one is revoked
//! ([`crate::engine::Engine::end_short_grants`], asking nothing: a
//! revocation only restricts; the rows say `custody, unasked: the session
//! locked`).

use super::events::UiEvent;
use super::service::Desktop;
use super::settings::Settings;

impl Desktop {
    /// Called when the session locks. Ends every live approve-for-a-while
    /// grant when the setting says so (an unreadable setting counts as on:
    /// ending restricts); returns the grant ids ended. Blocking (SQLite, the
    /// keystore): call it from a blocking task.
    pub fn end_short_grants_on_lock(&self) -> Vec<String> {
        let on = ends_on_lock(self.settings.lock().ok().as_deref());
        let Ok(core) = self.core() else {
            return Vec::new();
        };
        if !on {
            return Vec::new();
        }
        let ended = core
            .engine
            .end_short_grants(crate::approval::Unasked::SessionLocked);
        if !ended.is_empty() {
            tracing::warn!(
                "the session locked: {} approve-for-a-while grant(s) revoked",
                ended.len()
            );
            self.hub.send(UiEvent::StatusChanged);
        }
        ended
    }
}

/// Whether the lock ends them under `settings` (unreadable: yes, since
/// ending only restricts).
fn ends_on_lock(settings: Option<&Settings>) -> bool {
    settings.is_none_or(|s| s.end_short_grants_on_lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_ends_them_unless_the_human_turned_it_off() {
        let mut s = Settings::default();
        assert!(ends_on_lock(Some(&s)), "on by default");
        s.end_short_grants_on_lock = false;
        assert!(!ends_on_lock(Some(&s)));
        assert!(ends_on_lock(None), "unreadable settings: ended");
    }
}
