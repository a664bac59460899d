//! The life of a principal key, recorded: every creation, import and
//! deletion of a key is the key store's operation followed by one audit row
//! of one shape, whether the app, the `parley` command or the daemon's first
//! start did it.
//!
//! A key that signs for the human and appears in no audit row is a key the
//! human cannot account for. So the order is fixed here, for every caller:
//!
//! 1. the audit log is open before the store is touched: each function takes
//!    the log ([`KeyLog`]) as an argument, so a caller that cannot open it
//!    never gets as far as changing a key;
//! 2. the key store's operation; if it fails, no row is written and the
//!    error is [`KeyChangeError::Store`];
//! 3. the row, with the words of the caller (`reason`); if it cannot be
//!    written, the change stands and the error is
//!    [`KeyChangeError::Unrecorded`], which says so.

use crate::audit::{Audit, AuditError, EventKind, NewEvent};
use crate::engine::{unix_now, Engine};
use crate::keystore::{Keystore, KeystoreError};
use parley_core::PublicKey;
use std::path::Path;

/// What happened to a principal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyChange {
    /// A key was created in the store.
    Created,
    /// An upstream seed file was imported into the store.
    Imported,
    /// A key was deleted from the store.
    Deleted,
}

impl KeyChange {
    /// The audit event kind of this change.
    pub fn kind(self) -> EventKind {
        match self {
            KeyChange::Created => EventKind::KeyCreated,
            KeyChange::Imported => EventKind::KeyImported,
            KeyChange::Deleted => EventKind::KeyDeleted,
        }
    }

    /// The change in words ("created").
    fn done(self) -> &'static str {
        match self {
            KeyChange::Created => "created",
            KeyChange::Imported => "imported",
            KeyChange::Deleted => "deleted",
        }
    }
}

/// The change was made but is not in the audit log.
#[derive(Debug, thiserror::Error)]
#[error("principal key {key} was {}, but the audit log could not record it ({source}); the change stands: note it yourself, and fix the audit log before changing keys again", .change.done())]
pub struct Unrecorded {
    /// What was done.
    pub change: KeyChange,
    /// To which key.
    pub key: PublicKey,
    /// Why the row could not be written.
    #[source]
    pub source: AuditError,
}

/// Why a key change failed: before the change (the store refused or
/// failed; no row), or after it (the row is missing).
#[derive(Debug, thiserror::Error)]
pub enum KeyChangeError {
    /// The key store refused or failed (its message says what to do); no
    /// audit row was written.
    #[error(transparent)]
    Store(#[from] KeystoreError),
    /// The change was made, but its audit row could not be written.
    #[error(transparent)]
    Unrecorded(#[from] Box<Unrecorded>),
}

impl KeyChangeError {
    /// The key the store did change despite this error (its row is
    /// missing), if any: callers that track keys (the app's imported seed
    /// files) still need to know about it.
    pub fn changed_key(&self) -> Option<&PublicKey> {
        match self {
            KeyChangeError::Store(_) => None,
            KeyChangeError::Unrecorded(u) => Some(&u.key),
        }
    }
}

/// An open audit log a key change is recorded in.
///
/// Implemented for an [`Audit`] the caller opened (`parley custody keys`,
/// the daemon's first start) and for a running [`Engine`] (the app), whose
/// log is locked only to write the row, never while the keychain may be
/// waiting for the human to unlock it.
pub trait KeyLog {
    /// Appends `row`.
    fn append_row(self, row: &NewEvent) -> Result<(), AuditError>;
}

impl KeyLog for &mut Audit {
    fn append_row(self, row: &NewEvent) -> Result<(), AuditError> {
        self.append(row).map(drop)
    }
}

impl KeyLog for &Engine {
    fn append_row(self, row: &NewEvent) -> Result<(), AuditError> {
        self.with_audit(|a| a.append(row)).map(drop)
    }
}

/// A log whose key rows say how the human confirmed the change
/// (`confirmed_by`, e.g. `os-auth`: the app asks the OS before a key is
/// deleted, imported or added next to another).
pub struct Confirmed<L> {
    /// The log the row goes to.
    pub log: L,
    /// What the row's `confirmed_by` says.
    pub by: String,
}

impl<L: KeyLog> KeyLog for Confirmed<L> {
    fn append_row(self, row: &NewEvent) -> Result<(), AuditError> {
        let mut row = row.clone();
        row.confirmed_by = Some(self.by);
        self.log.append_row(&row)
    }
}

/// Appends the row of a key change that was just made: the key in
/// `principal`, `reason` in the words of whoever made the change.
fn record(
    log: impl KeyLog,
    change: KeyChange,
    key: PublicKey,
    reason: &str,
) -> Result<PublicKey, Box<Unrecorded>> {
    let row = NewEvent {
        principal: Some(key.to_string()),
        reason: Some(reason.to_string()),
        ..NewEvent::new(change.kind(), unix_now())
    };
    match log.append_row(&row) {
        Ok(()) => Ok(key),
        Err(source) => Err(Box::new(Unrecorded {
            change,
            key,
            source,
        })),
    }
}

/// Creates a principal key labelled `label` in `store` and records it
/// (`key_created`, `reason` in the caller's words).
pub fn create_key(
    store: &Keystore,
    log: impl KeyLog,
    label: &str,
    reason: &str,
) -> Result<PublicKey, KeyChangeError> {
    let key = store.create(label)?;
    Ok(record(log, KeyChange::Created, key, reason)?)
}

/// Imports an upstream seed file (`principal.key`) into `store` as `label`
/// and records it (`key_imported`). The file is left as it is: shredding it
/// is the caller's offer to the human.
pub fn import_key(
    store: &Keystore,
    log: impl KeyLog,
    seed_file: &Path,
    label: &str,
    reason: &str,
) -> Result<PublicKey, KeyChangeError> {
    let key = store.import_seed_file(seed_file, label)?;
    Ok(record(log, KeyChange::Imported, key, reason)?)
}

/// Deletes `key` from `store` for good and records it (`key_deleted`).
/// `confirm` must repeat the full public key (surrounding whitespace, as
/// from a paste, is ignored): deleting a principal key cannot be undone.
pub fn delete_key(
    store: &Keystore,
    log: impl KeyLog,
    key: &PublicKey,
    confirm: &str,
    reason: &str,
) -> Result<(), KeyChangeError> {
    store.delete(key, confirm.trim())?;
    record(log, KeyChange::Deleted, key.clone(), reason)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Event, Query, MAX_FIELD_BYTES};
    use crate::keystore::{KdfParams, Passphrase};
    use zeroize::Zeroizing;

    struct Parts {
        dir: tempfile::TempDir,
        audit: Audit,
        store: Keystore,
    }

    fn parts() -> Parts {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let audit = Audit::open(&dir.path().join("audit.sqlite3")).expect("the audit file");
        let store = Keystore::file_store_with_params(
            &dir.path().join("keys"),
            Passphrase::new(Zeroizing::new("admin test".into())),
            KdfParams::new(KdfParams::MIN_M_KIB, 1, 1).expect("KDF parameters"),
        )
        .expect("the file store");
        Parts { dir, audit, store }
    }

    fn rows(audit: &Audit) -> Vec<Event> {
        audit.query(&Query::default()).expect("the rows")
    }

    fn only_row(audit: &Audit, kind: EventKind, key: &PublicKey, reason: &str) {
        let rows = rows(audit);
        assert_eq!(rows.len(), 1, "one row: {rows:?}");
        let r = &rows[0];
        assert_eq!(r.kind, kind);
        assert_eq!(r.principal.as_deref(), Some(key.to_string().as_str()));
        assert_eq!(r.reason.as_deref(), Some(reason));
        assert!(r.agent.is_none() && r.service.is_none());
    }

    #[test]
    fn a_created_key_is_in_the_store_and_in_one_row() {
        let mut p = parts();
        let key = create_key(&p.store, &mut p.audit, "Ana", "created in a test").unwrap();
        let listed = p.store.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!((&listed[0].public, listed[0].label.as_str()), (&key, "Ana"));
        only_row(&p.audit, EventKind::KeyCreated, &key, "created in a test");
    }

    #[test]
    fn an_imported_seed_file_is_that_key_in_one_row() {
        let mut p = parts();
        let seed = Zeroizing::new([7u8; 32]);
        let file = p.dir.path().join("principal.key");
        std::fs::write(&file, format!("{}\n", parley_core::b64::encode(*seed))).unwrap();
        let key = import_key(&p.store, &mut p.audit, &file, "old", "imported in a test").unwrap();
        assert_eq!(key, parley_core::SecretKey::from_seed(&seed).public());
        assert!(file.exists(), "shredding is the caller's offer");
        only_row(&p.audit, EventKind::KeyImported, &key, "imported in a test");

        let again = import_key(&p.store, &mut p.audit, &file, "old", "again").unwrap_err();
        assert!(matches!(
            again,
            KeyChangeError::Store(KeystoreError::AlreadyPresent(_))
        ));
        assert_eq!(rows(&p.audit).len(), 1, "a refused import writes no row");
    }

    #[test]
    fn a_delete_needs_the_full_key_and_is_recorded_once_done() {
        let mut p = parts();
        let key = p.store.create("Ana").unwrap();
        let refused = delete_key(&p.store, &mut p.audit, &key, "Ana", "deleted").unwrap_err();
        assert!(
            matches!(
                refused,
                KeyChangeError::Store(KeystoreError::ConfirmationMismatch(_))
            ),
            "{refused}"
        );
        assert!(refused.changed_key().is_none());
        assert_eq!(p.store.list().unwrap().len(), 1, "still there");
        assert!(rows(&p.audit).is_empty(), "nothing done, nothing recorded");

        let pasted = format!(" {key}\n");
        delete_key(&p.store, &mut p.audit, &key, &pasted, "deleted in a test").unwrap();
        assert!(p.store.list().unwrap().is_empty());
        only_row(&p.audit, EventKind::KeyDeleted, &key, "deleted in a test");
    }

    #[test]
    fn a_confirmed_change_says_how_in_its_row() {
        let mut p = parts();
        let key = p.store.create("Ana").unwrap();
        let log = Confirmed {
            log: &mut p.audit,
            by: "os-auth".into(),
        };
        delete_key(&p.store, log, &key, &key.to_string(), "deleted in a test").unwrap();
        let rows = rows(&p.audit);
        assert_eq!(rows[0].kind, EventKind::KeyDeleted);
        assert_eq!(rows[0].confirmed_by.as_deref(), Some("os-auth"));
    }

    #[test]
    fn a_change_the_log_refuses_stands_and_says_so() {
        let mut p = parts();
        // Key rows are exact: a reason over the field bound is refused, not cut.
        let reason = "x".repeat(MAX_FIELD_BYTES + 1);
        let e = create_key(&p.store, &mut p.audit, "Ana", &reason).unwrap_err();
        let KeyChangeError::Unrecorded(u) = &e else {
            panic!("not unrecorded: {e}");
        };
        assert_eq!(u.change, KeyChange::Created);
        assert_eq!(e.changed_key(), Some(&u.key));
        assert_eq!(p.store.list().unwrap()[0].public, u.key, "the key stands");
        assert!(rows(&p.audit).is_empty());
        let text = e.to_string();
        assert!(
            text.contains("was created, but the audit log could not record it")
                && text.contains(&u.key.to_string()),
            "{text}"
        );
    }
}
