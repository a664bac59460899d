//! The live approve-for-a-while grants ([`Audit::live_short_grants`]):
//! what freeze and the session's lock end, asking nobody.
//!
//! A short grant is recognised by its own column, `for_a_while` (format 4),
//! which only the engine's short-grant path sets, never by its `reason`:
//! that column can carry what an agent wrote in a grant request, and an
//! agent must not be able to make its grant look like a short grant (to
//! have it ended, or to have it shown as one).

use super::{Audit, AuditError, EventKind};
use rusqlite::params;

/// A short grant that is still live: signed (its `grant_issued` row has
/// `for_a_while`), not expired, not revoked. Only
/// [`Audit::live_short_grants`] makes one, so holding one is evidence that
/// custody's log records it as a short grant: what custody's own unasked
/// revocation (`Approval::unasked_revocation`, crate-private) needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveShortGrant {
    token_id: String,
    expires: i64,
}

impl LiveShortGrant {
    /// The grant's id (`token_id`).
    pub fn token_id(&self) -> &str {
        &self.token_id
    }

    /// When it ends at the latest (unix seconds).
    pub fn expires(&self) -> i64 {
        self.expires
    }
}

impl Audit {
    /// Every approve-for-a-while grant live at `now`: `grant_issued` rows
    /// with `for_a_while` set, `expires > now`, and no revocation. No limit:
    /// a short grant lasts at most an hour and each one needs a human's
    /// yes, so this is all of them, however many (an index on the short
    /// grants' `expires` keeps it cheap). Oldest first.
    pub fn live_short_grants(&self, now: i64) -> Result<Vec<LiveShortGrant>, AuditError> {
        let mut stmt = self.conn.prepare(
            "SELECT token_id, expires FROM events \
             WHERE for_a_while IS NOT NULL AND kind = ?1 AND expires > ?2 \
             AND token_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM revoked_grants r WHERE r.token_id = events.token_id) \
             ORDER BY seq",
        )?;
        let mut rows = stmt.query(params![EventKind::GrantIssued.as_str(), now])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(LiveShortGrant {
                token_id: r.get(0)?,
                expires: r.get(1)?,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::prepare;
    use super::super::store::append_in;
    use super::super::NewEvent;
    use super::*;

    fn grant(id: &str, at: i64, expires: i64, for_a_while: Option<i64>) -> NewEvent {
        NewEvent {
            token_id: Some(id.into()),
            expires: Some(expires),
            for_a_while,
            ..NewEvent::new(EventKind::GrantIssued, at)
        }
    }

    /// More live short grants than the old cap (the newest 1000 grants of
    /// the last two hours) are all found, written in one transaction; an
    /// ordinary grant whose reason says "approve for a while: " is not one.
    #[test]
    fn every_live_short_grant_is_found_however_many_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        let now = 1_800_000_000;
        let tx = a.conn.transaction().unwrap();
        let mut rows = Vec::new();
        for n in 0..1500 {
            rows.push(grant(&format!("short-{n}"), now - 60, now + 600, Some(15)));
            // Ordinary grants in between, newer than many short ones.
            rows.push(grant(&format!("plain-{n}"), now - 30, now + 600, None));
        }
        let mut fake = grant("agent-words", now - 10, now + 600, None);
        fake.reason = Some(format!(
            "{}and let it spend without asking",
            crate::for_a_while::REASON_PREFIX
        ));
        rows.push(fake);
        rows.push(grant("short-expired", now - 4000, now, Some(60)));
        rows.push(grant("short-revoked", now - 60, now + 600, Some(5)));
        for ev in &rows {
            let (ev, cut) = prepare(ev).unwrap();
            append_in(&tx, &ev, cut).unwrap();
        }
        tx.commit().unwrap();
        a.record_revocation("short-revoked", "ed25519:x", "r", "{}", "os-auth", now)
            .unwrap();
        let live = a.live_short_grants(now).unwrap();
        let ids: Vec<&str> = live.iter().map(LiveShortGrant::token_id).collect();
        assert_eq!(ids.len(), 1500);
        assert!(ids.iter().all(|id| id.starts_with("short-")), "{ids:?}");
        assert!(!ids.contains(&"short-expired") && !ids.contains(&"short-revoked"));
        assert_eq!(live[0].expires(), now + 600);
    }
}
