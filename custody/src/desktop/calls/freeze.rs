//! "Stop all agents" from the main window (issue 30, item 1): freezing asks
//! nothing; unfreezing loosens custody, so it asks the OS first
//! ([`change_auth`]) and answers with what was refused meanwhile.

use super::change_auth;
use super::error::refused;
use super::{blocking, R};
use crate::desktop::events::UiEvent;
use crate::desktop::service::Desktop;
use crate::stepup::PromptDetails;
use serde::Serialize;

/// One request refused while frozen (text display-safe).
#[derive(Debug, Serialize)]
pub struct RefusedView {
    /// When (unix seconds).
    pub at: i64,
    /// The asking OS user.
    pub peer_uid: Option<u32>,
    /// The agent key.
    pub agent: Option<String>,
    /// The service it asked about.
    pub service: Option<String>,
}

/// Whether custody is frozen, and what an unfreeze ended.
#[derive(Debug, Default, Serialize)]
pub struct FreezeView {
    /// Frozen now.
    pub frozen: bool,
    /// Since when (unix seconds).
    pub since: Option<i64>,
    /// Why (display-safe).
    pub reason: Option<String>,
    /// Requests refused while frozen (all of them, kept as rows or counted).
    pub refused: i64,
    /// After an unfreeze: the refusals the log kept row by row, newest first.
    pub refused_rows: Vec<RefusedView>,
    /// Pending requests the freeze denied.
    pub denied: usize,
}

fn changed(state: &Desktop, frozen: bool) {
    if let Some(t) = state.tray.get() {
        t.show_frozen(frozen);
    }
    state.hub.send(UiEvent::StatusChanged);
    state.hub.send(UiEvent::PendingChanged);
    state.refresh_tray();
}

/// Whether custody is frozen now.
pub async fn custody_frozen(state: &Desktop) -> R<FreezeView> {
    let e = state.core()?.engine.clone();
    let f = blocking("reading the freeze", move || Ok(e.frozen())).await?;
    Ok(match f {
        Some(f) => FreezeView {
            frozen: true,
            since: Some(f.at),
            reason: Some(crate::display::safe(&f.reason)),
            refused: f.refused,
            ..Default::default()
        },
        None => FreezeView::default(),
    })
}

/// Freezes custody: every pending request denied, every new one refused
/// unseen. Asks nothing.
pub async fn custody_freeze(state: &Desktop) -> R<FreezeView> {
    let e = state.core()?.engine.clone();
    let (f, denied) = blocking("freezing custody", move || {
        e.freeze("all agents stopped from the main window")
            .map_err(refused)
    })
    .await?;
    changed(state, true);
    Ok(FreezeView {
        frozen: true,
        since: Some(f.at),
        reason: Some(crate::display::safe(&f.reason)),
        refused: f.refused,
        denied: denied.len(),
        ..Default::default()
    })
}

/// Unfreezes custody once the OS authenticated the human; answers with
/// what was refused meanwhile.
pub async fn custody_unfreeze(state: &Desktop) -> R<FreezeView> {
    let e = state.core()?.engine.clone();
    if blocking("reading the freeze", move || Ok(e.frozen()))
        .await?
        .is_none()
    {
        return Err("Custody is not frozen.".into());
    }
    let details = PromptDetails::new().with("change", "unfreeze custody (let agents ask again)");
    let confirmed_by = change_auth::authenticate(
        &state.core()?.engine,
        &details,
        "run `parley custody unfreeze` on a terminal (it asks through polkit's text agent); \
         with no polkit at all, only deleting the custody_frozen row of custody's audit file \
         by hand (as yourself, custody stopped) ends it",
    )
    .await?;
    let e = state.core()?.engine.clone();
    let done = blocking("unfreezing custody", move || {
        e.unfreeze_confirmed(confirmed_by).map_err(refused)
    })
    .await?;
    changed(state, false);
    let safe = |s: &Option<String>| s.as_deref().map(crate::display::safe);
    Ok(match done {
        Some(u) => FreezeView {
            frozen: false,
            since: Some(u.freeze.at),
            reason: Some(crate::display::safe(&u.freeze.reason)),
            refused: u.freeze.refused,
            refused_rows: u
                .refused_rows
                .iter()
                .map(|r| RefusedView {
                    at: r.at,
                    peer_uid: r.peer_uid,
                    agent: safe(&r.agent),
                    service: safe(&r.service),
                })
                .collect(),
            denied: 0,
        },
        None => FreezeView::default(),
    })
}
