//! Revoking a live grant from the audit view (issue 30, item 3): asks the
//! OS first ([`change_auth`]), then custody signs, publishes and records
//! the revocation ([`crate::revoke`]). Services that do not read
//! revocations still accept the grant until it expires; the answer says so.

use super::change_auth;
use super::error::refused;
use super::{blocking, R};
use crate::approver::Gesture;
use crate::desktop::events::UiEvent;
use crate::desktop::service::Desktop;
use crate::engine::unix_now;
use crate::revoke;
use serde::Serialize;

/// A published revocation.
#[derive(Debug, Serialize)]
pub struct RevokedView {
    /// The revoked grant's id.
    pub grant: String,
    /// Where the signed statement was written.
    pub files: Vec<String>,
    /// What it does and does not stop, in words.
    pub note: String,
}

/// Revokes grant `grant` (its id, `token_id` in the log) after OS
/// authentication.
pub async fn grant_revoke(
    state: &Desktop,
    grant: String,
    reason: Option<String>,
) -> R<RevokedView> {
    let grant = grant.trim().to_string();
    if grant.is_empty() || grant.len() > 128 {
        return Err("That is not a grant id.".into());
    }
    let core = state.core()?;
    let (e, dir) = (core.engine.clone(), core.data_dir.clone());
    let g = grant.clone();
    let principal = blocking("reading the grant", move || {
        e.with_audit(|a| revoke::check(a, &dir, &g))
            .map_err(refused)
    })
    .await?;
    let confirmed_by = change_auth::authenticate(
        &core.engine,
        &revoke::details(&grant),
        "run `parley custody revoke` on a terminal (it asks through polkit's text agent)",
    )
    .await?;
    let (e, dir) = (core.engine.clone(), core.data_dir.clone());
    let reason = reason.unwrap_or_default();
    let done = blocking("revoking the grant", move || {
        // Signed first, the audit log not held while the key is read.
        let signed = revoke::sign_confirmed(
            e.keystore(),
            &principal,
            revoke::Revoke {
                grant: &grant,
                reason: &reason,
                also: &[],
                now: unix_now(),
            },
            // Revoke clicked in the audit view.
            Gesture::Click,
            confirmed_by,
        )
        .map_err(refused)?;
        e.with_audit(|a| revoke::publish(a, &dir, signed))
            .map_err(refused)
    })
    .await?;
    state.hub.send(UiEvent::StatusChanged);
    Ok(RevokedView {
        grant: done.revocation.grant.clone(),
        files: done.files.iter().map(|p| p.display().to_string()).collect(),
        note:
            "Services that read custody's revocations now refuse this grant; services that do not \
               check revocations still accept it until it expires. Copy the file to the services \
               you use (or `parley custody revoke --publish DIR`)."
                .into(),
    })
}
