//! The life of a principal key, recorded: every creation, import and
//! deletion of a key becomes one audit row of one shape, whether the app,
//! the `parley` command or the daemon's first start did it.
//!
//! A key that signs for the human and appears in no audit row is a key the
//! human cannot account for; so each path that changes the key store records
//! the change here, with the words of the path that did it (`reason`).

use crate::audit::{Audit, AuditError, EventKind, NewEvent};
use parley_core::PublicKey;

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
}

/// The change was made but is not in the audit log.
#[derive(Debug, thiserror::Error)]
#[error("{kind} {key} was done, but the audit log could not record it: {source}")]
pub struct Unrecorded {
    /// What was done.
    pub kind: EventKind,
    /// To which key (`ed25519:…`).
    pub key: String,
    /// Why the row could not be written.
    #[source]
    pub source: Box<AuditError>,
}

/// The audit row of a key change at `at` (unix seconds): the key in
/// `principal`, `reason` in the words of whoever made the change.
pub fn key_row(change: KeyChange, key: &PublicKey, reason: &str, at: i64) -> NewEvent {
    NewEvent {
        principal: Some(key.to_string()),
        reason: Some(reason.to_string()),
        ..NewEvent::new(change.kind(), at)
    }
}

/// Appends the row of a key change that was just made.
pub fn record_key_change(
    audit: &mut Audit,
    change: KeyChange,
    key: &PublicKey,
    reason: &str,
    at: i64,
) -> Result<(), Unrecorded> {
    audit
        .append(&key_row(change, key, reason, at))
        .map(|_| ())
        .map_err(|source| Unrecorded {
            kind: change.kind(),
            key: key.to_string(),
            source: Box::new(source),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Query;
    use parley_core::SecretKey;
    use zeroize::Zeroizing;

    #[test]
    fn each_change_is_one_row_with_the_key_and_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        let key = SecretKey::from_seed(&Zeroizing::new([5; 32])).public();
        for (i, change) in [KeyChange::Created, KeyChange::Imported, KeyChange::Deleted]
            .into_iter()
            .enumerate()
        {
            record_key_change(
                &mut audit,
                change,
                &key,
                "from a test",
                1_800_000_000 + i as i64,
            )
            .unwrap();
        }
        let rows = audit.query(&Query::default()).unwrap();
        let kinds: Vec<_> = rows.iter().map(|r| r.kind).collect();
        assert_eq!(kinds.len(), 3);
        for k in [
            EventKind::KeyCreated,
            EventKind::KeyImported,
            EventKind::KeyDeleted,
        ] {
            assert!(kinds.contains(&k), "{k} recorded");
        }
        for r in &rows {
            assert_eq!(r.principal.as_deref(), Some(key.to_string().as_str()));
            assert_eq!(r.reason.as_deref(), Some("from a test"));
            assert!(r.agent.is_none() && r.service.is_none());
        }
    }
}
