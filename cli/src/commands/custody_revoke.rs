//! `parley custody revoke <grant id>`: revokes a live grant from the
//! human's own command line, as custody's OS user. Asks the OS first
//! (polkit's change action through `pkttyagent` on this terminal), then
//! custody signs a revocation statement with the grant's principal key
//! (`parley_core::revocation`, an extension), writes it to custody's
//! `revocations/` directory and every `--publish` directory, prints it,
//! and records `grant_revoked` in the audit log.

use super::custody_keys::{data_dir, open_store_with};
use super::Report;
use crate::cli::RevokeArgs;
use crate::error::CliError;
use parley_custody::approver::Gesture;
use parley_custody::audit::Audit;
use parley_custody::engine::unix_now;
use parley_custody::{paths, revoke};
use serde::Serialize;
use std::fmt;

#[derive(Serialize)]
struct RevokedView {
    grant: String,
    files: Vec<String>,
    statement: serde_json::Value,
    confirmed_by: &'static str,
}

impl fmt::Display for RevokedView {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(
            f,
            "revoked grant {} (written to {})",
            self.grant,
            self.files.join(", ")
        )?;
        writeln!(
            f,
            "services that read revocations now refuse it; services that do not still accept it until it expires"
        )?;
        write!(
            f,
            "{}",
            serde_json::to_string_pretty(&self.statement).unwrap_or_default()
        )
    }
}

/// Revokes `a.grant` after OS authentication.
pub fn revoke(a: &RevokeArgs) -> Result<Report, CliError> {
    let dir = data_dir(a.data_dir.as_ref())?;
    let mut audit = Audit::open(&paths::audit_path(&dir)).map_err(CliError::bad)?;
    // Nothing is asked for a grant that cannot be revoked.
    revoke::check(&audit, &dir, &a.grant).map_err(CliError::bad)?;
    let store = open_store_with(a.file_store, a.namespace.clone(), &dir, false)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::bad)?;
    let confirmed_by = rt
        .block_on(revoke::authenticate_on_terminal(&a.grant))
        .map_err(CliError::bad)?;
    let done = revoke::revoke_confirmed(
        &store,
        &mut audit,
        &dir,
        revoke::Revoke {
            grant: &a.grant,
            reason: &a.reason,
            also: &a.publish,
            now: unix_now(),
        },
        // The human typed this command.
        Gesture::Terminal,
        confirmed_by,
    )
    .map_err(CliError::bad)?;
    Ok(Report::new(
        &RevokedView {
            grant: done.revocation.grant.clone(),
            files: done.files.iter().map(|p| p.display().to_string()).collect(),
            statement: done.revocation.to_value(),
            confirmed_by: done.confirmed_by,
        },
        0,
    ))
}
