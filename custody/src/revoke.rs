//! Revoking a live grant (issue 30, item 3). After the OS authenticated the
//! human (polkit's change action; custody running as root is asked
//! nothing and its row says so), custody signs a revocation statement with
//! the grant's principal key ([`parley_core::revocation`], an extension:
//! Parley and YEA v1 have none), publishes it as a file in
//! [`revocations_dir`] (and wherever else the human asks), and records the
//! grant revoked in the audit log (`grant_revoked`, the `revoked_grants`
//! table).
//!
//! Custody also revokes approve-for-a-while grants itself, asking no one,
//! on freeze and when the session locks ([`sign_unasked`]): with its own
//! narrowly typed approval (`Approval::unasked_revocation`), made only
//! from a live short grant, which the audit row names truthfully
//! (`custody, unasked: …`).
//!
//! A revocation binds only services that read it: one that does not check
//! revocations keeps accepting the grant until it expires.

use crate::approval::{Approval, Unasked};
use crate::approver::{Gesture, Yes};
use crate::audit::{Audit, LiveShortGrant};
use crate::keystore::Keystore;
use crate::signer::{self, SignError};
use crate::stepup::{self, PromptDetails, StepUpError, OS_AUTH};
use parley_core::revocation::Revocation;
use parley_core::PublicKey;
use std::path::{Path, PathBuf};

/// Where custody publishes revocation statements: `revocations/` in its
/// data directory, one `<grant id>.json` each.
pub fn revocations_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("revocations")
}

/// Why a grant was not revoked.
#[derive(Debug, thiserror::Error)]
pub enum RevokeError {
    /// Custody's log has no such grant.
    #[error("custody's audit log has no grant or consent with id {0:?}: copy the id from the audit view or `parley audit --jsonl` (token_id)")]
    Unknown(String),
    /// It was revoked before.
    #[error("that grant is revoked already; its statement is in {0}")]
    Already(String),
    /// OS authentication did not succeed.
    #[error("OS authentication did not succeed ({0}): the grant was not revoked")]
    NotAuthenticated(StepUpError),
    /// Signing failed.
    #[error("the revocation could not be signed: {0}")]
    Sign(#[from] SignError),
    /// The audit log could not be read or written.
    #[error("the audit log: {0}")]
    Audit(#[from] crate::audit::AuditError),
    /// The file could not be written.
    #[error("the revocation could not be written to {0}: {1}")]
    Write(String, std::io::Error),
}

/// A published revocation.
#[derive(Debug, Clone)]
pub struct Revoked {
    /// The statement.
    pub revocation: Revocation,
    /// Where it was written (custody's directory first).
    pub files: Vec<PathBuf>,
    /// How the OS confirmed it.
    pub confirmed_by: &'static str,
}

/// Asks polkit (its text agent on this terminal) before revoking: the
/// human's `parley custody revoke`.
pub async fn authenticate_on_terminal(grant: &str) -> Result<&'static str, RevokeError> {
    stepup::confirm_change_on_terminal(&details(grant))
        .await
        .map_err(RevokeError::NotAuthenticated)
}

/// What the OS prompt says.
pub fn details(grant: &str) -> PromptDetails {
    PromptDetails::new().with("change", &format!("revoke grant {grant}"))
}

/// Checks that `grant` is custody's and not yet revoked; returns its principal.
pub fn check(audit: &Audit, data_dir: &Path, grant: &str) -> Result<PublicKey, RevokeError> {
    let issued = audit
        .issued(grant)?
        .ok_or_else(|| RevokeError::Unknown(grant.to_owned()))?;
    if audit.revocation_of(grant)?.is_some() {
        return Err(RevokeError::Already(
            revocations_dir(data_dir).display().to_string(),
        ));
    }
    issued
        .principal
        .as_deref()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| RevokeError::Unknown(grant.to_owned()))
}

/// What to revoke: the grant's id, the human's reason, further
/// directories to publish the statement in, and the time.
#[derive(Debug, Clone, Copy)]
pub struct Revoke<'a> {
    /// The grant id (`token_id`).
    pub grant: &'a str,
    /// Why (signed into the statement).
    pub reason: &'a str,
    /// Directories to publish in besides custody's own.
    pub also: &'a [PathBuf],
    /// Unix seconds.
    pub now: i64,
}

/// A revocation signed and not yet published ([`publish`]). Signing needs
/// the key (the OS keychain, which may ask to be unlocked) and not the
/// audit log, so the log is not held while the key is read: requests keep
/// flowing meanwhile.
#[derive(Debug, Clone)]
pub struct Signed {
    revocation: Revocation,
    also: Vec<PathBuf>,
    confirmed_by: &'static str,
}

/// Signs, publishes and records the revocation of `what.grant`, once the
/// human asked for it (`gesture`: a click in the app, or a command typed at
/// a terminal) and the OS confirmed it (`confirmed_by`, from
/// [`authenticate_on_terminal`] or the engine's
/// [`crate::engine::Engine::authenticate_change`]). For a caller that has
/// the log to itself (the CLI); the service signs with [`sign_confirmed`]
/// outside its lock on the log, then [`publish`]es.
pub fn revoke_confirmed(
    keystore: &Keystore,
    audit: &mut Audit,
    data_dir: &Path,
    what: Revoke<'_>,
    gesture: Gesture,
    confirmed_by: &'static str,
) -> Result<Revoked, RevokeError> {
    let principal = check(audit, data_dir, what.grant)?;
    let signed = sign_confirmed(keystore, &principal, what, gesture, confirmed_by)?;
    publish(audit, data_dir, signed)
}

/// Signs the revocation of `what.grant` with `principal` (from [`check`]),
/// as [`revoke_confirmed`] does, without touching the audit log.
pub fn sign_confirmed(
    keystore: &Keystore,
    principal: &PublicKey,
    what: Revoke<'_>,
    gesture: Gesture,
    confirmed_by: &'static str,
) -> Result<Signed, RevokeError> {
    let approval = Approval::confirmed(
        Yes {
            gesture,
            second_confirmation: true,
        },
        confirmed_by == OS_AUTH,
        Approval::subject_of_revocation(what.grant),
    );
    sign(keystore, principal, what, &approval, confirmed_by)
}

/// Custody ending the live approve-for-a-while grant `grant` itself,
/// asking no one (`why`: freeze, the session's lock): signed with
/// custody's own unasked approval of exactly this revocation, the reason
/// [`Unasked::reason`], the row's `confirmed_by` [`Unasked::confirmed_by`].
/// `principal` is the grant's ([`check`]); [`publish`] it next.
pub fn sign_unasked(
    keystore: &Keystore,
    principal: &PublicKey,
    grant: &LiveShortGrant,
    why: Unasked,
    now: i64,
) -> Result<Signed, RevokeError> {
    let approval = Approval::unasked_revocation(grant, why);
    let what = Revoke {
        grant: grant.token_id(),
        reason: why.reason(),
        also: &[],
        now,
    };
    sign(keystore, principal, what, &approval, why.confirmed_by())
}

fn sign(
    keystore: &Keystore,
    principal: &PublicKey,
    what: Revoke<'_>,
    approval: &Approval,
    confirmed_by: &'static str,
) -> Result<Signed, RevokeError> {
    let reason = match what.reason.trim() {
        "" => "revoked by the human",
        r => r,
    };
    let revocation =
        signer::sign_revocation(keystore, principal, what.grant, reason, approval, what.now)?;
    Ok(Signed {
        revocation,
        also: what.also.to_vec(),
        confirmed_by,
    })
}

/// Writes a signed revocation into custody's directory (and the others
/// asked for) and records it, unless the grant was revoked meanwhile (then
/// nothing is written: [`RevokeError::Already`]).
pub fn publish(audit: &mut Audit, data_dir: &Path, signed: Signed) -> Result<Revoked, RevokeError> {
    let Signed {
        revocation: r,
        also,
        confirmed_by,
    } = signed;
    let own = revocations_dir(data_dir);
    if audit.revocation_of(&r.grant)?.is_some() {
        return Err(RevokeError::Already(own.display().to_string()));
    }
    let text = serde_json::to_string_pretty(&r.to_value()).unwrap_or_default() + "\n";
    let mut files = Vec::new();
    for dir in std::iter::once(&own).chain(&also) {
        std::fs::create_dir_all(dir)
            .map_err(|e| RevokeError::Write(dir.display().to_string(), e))?;
        let path = dir.join(r.file_name());
        std::fs::write(&path, &text)
            .map_err(|e| RevokeError::Write(path.display().to_string(), e))?;
        files.push(path);
    }
    audit.record_revocation(
        &r.grant,
        &r.principal.to_string(),
        &r.reason,
        &text,
        confirmed_by,
        r.revoked_at,
    )?;
    Ok(Revoked {
        revocation: r,
        files,
        confirmed_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{EventKind, NewEvent};
    use crate::keystore::{KdfParams, Passphrase};
    use zeroize::Zeroizing;

    /// Two revocations of one grant signed side by side (the log is not
    /// held while signing): the first is published, the second refused
    /// with nothing written over the first's file or added to the log.
    #[test]
    fn a_grant_revoked_while_another_revocation_was_signed_is_published_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Keystore::file_store_with_params(
            &dir.path().join("keys"),
            Passphrase::new(Zeroizing::new("revoke test".into())),
            KdfParams::new(KdfParams::MIN_M_KIB, 1, 1).unwrap(),
        )
        .unwrap();
        let principal = store.create("principal").unwrap();
        let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        let mut ev = NewEvent::new(EventKind::GrantIssued, 1);
        ev.token_id = Some("g1".into());
        ev.principal = Some(principal.to_string());
        audit.append(&ev).unwrap();

        let what = |reason| Revoke {
            grant: "g1",
            reason,
            also: &[],
            now: 5,
        };
        let found = check(&audit, dir.path(), "g1").unwrap();
        assert_eq!(found, principal);
        let first =
            sign_confirmed(&store, &found, what("lost laptop"), Gesture::Click, OS_AUTH).unwrap();
        let second =
            sign_confirmed(&store, &found, what("second"), Gesture::Terminal, OS_AUTH).unwrap();
        let done = publish(&mut audit, dir.path(), first).unwrap();
        assert_eq!(done.revocation.reason, "lost laptop");
        assert!(matches!(
            publish(&mut audit, dir.path(), second),
            Err(RevokeError::Already(_))
        ));
        let file = std::fs::read_to_string(&done.files[0]).unwrap();
        assert!(
            file.contains("lost laptop") && !file.contains("second"),
            "{file}"
        );
        let revoked = audit
            .query(&crate::audit::Query::default())
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == EventKind::GrantRevoked)
            .count();
        assert_eq!(revoked, 1);
    }
}
