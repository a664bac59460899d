//! Revoked grants (issue 30, item 3): the `revoked_grants` table (state,
//! outside the chain: which grants custody published a revocation of, with
//! the signed statement) and a chained [`EventKind::GrantRevoked`] row,
//! written in the same transaction.

use super::event::prepare;
use super::store::{append_in, read_event, COLUMNS};
use super::{Audit, AuditError, Event, EventKind, NewEvent};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

impl Audit {
    /// The issued grant or consent whose id is `token_id`, if custody
    /// signed it (its `grant_issued` or `consent_approved` row), however
    /// old: looked up by id in SQL (indexed), never among the newest rows.
    pub fn issued(&self, token_id: &str) -> Result<Option<Event>, AuditError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM events WHERE token_id = ?1 AND kind IN (?2, ?3) \
             ORDER BY seq DESC LIMIT 1"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query(params![
            token_id,
            EventKind::GrantIssued.as_str(),
            EventKind::ConsentApproved.as_str()
        ])?;
        match rows.next()? {
            Some(row) => Ok(Some(read_event(row)?)),
            None => Ok(None),
        }
    }

    /// The published statement revoking `token_id`, if any.
    pub fn revocation_of(&self, token_id: &str) -> Result<Option<String>, AuditError> {
        Ok(self
            .conn
            .query_row(
                "SELECT statement FROM revoked_grants WHERE token_id = ?1",
                params![token_id],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Which of `token_ids` custody revoked, in their order, each looked
    /// up by id (the primary key): what a view of some rows needs, never the
    /// whole table (which grows without bound).
    pub fn revoked_among<'a>(
        &self,
        token_ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<String>, AuditError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT 1 FROM revoked_grants WHERE token_id = ?1")?;
        let mut out = Vec::new();
        for id in token_ids {
            if stmt.exists(params![id])? && !out.iter().any(|o: &String| o == id) {
                out.push(id.to_owned());
            }
        }
        Ok(out)
    }

    /// Records that custody revoked grant `token_id` with `statement` (the
    /// signed file's JSON; its id in the row's `hash`), confirmed as
    /// `confirmed_by`.
    pub fn record_revocation(
        &mut self,
        token_id: &str,
        principal: &str,
        reason: &str,
        statement: &str,
        confirmed_by: &str,
        at: i64,
    ) -> Result<Event, AuditError> {
        let mut ev = NewEvent::new(EventKind::GrantRevoked, at);
        ev.token_id = Some(token_id.to_owned());
        ev.principal = Some(principal.to_owned());
        ev.reason = Some(reason.to_owned());
        ev.confirmed_by = Some(confirmed_by.to_owned());
        if let Some(issued) = self.issued(token_id)? {
            ev.agent = issued.agent.clone();
            ev.service = issued.service.clone();
            ev.expires = issued.expires;
        }
        let (ev, cut) = prepare(&ev)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO revoked_grants (token_id, at, reason, statement) VALUES (?1, ?2, ?3, ?4)",
            params![token_id, at, reason, statement],
        )?;
        let event = append_in(&tx, &ev, cut)?;
        tx.commit()?;
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_older_than_the_newest_ten_thousand_is_still_found() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        let mut old = NewEvent::new(EventKind::GrantIssued, 1);
        old.token_id = Some("the-old-one".into());
        a.append(&old).unwrap();
        // More newer grants than any one query returns, in one transaction.
        let tx = a.conn.transaction().unwrap();
        for n in 0..=super::super::MAX_LIMIT {
            let mut ev = NewEvent::new(EventKind::GrantIssued, 2);
            ev.token_id = Some(format!("new-{n}"));
            let (ev, cut) = prepare(&ev).unwrap();
            append_in(&tx, &ev, cut).unwrap();
        }
        tx.commit().unwrap();
        let found = a.issued("the-old-one").unwrap().expect("the old grant");
        assert_eq!(found.at, 1);
        assert!(a.issued("never-issued").unwrap().is_none());
    }

    /// "Why custody asks" reads each grant with whether it was revoked.
    #[test]
    fn grants_issued_to_an_agent_say_which_were_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        for id in ["g1", "g2"] {
            let mut ev = NewEvent::new(EventKind::GrantIssued, 1);
            ev.token_id = Some(id.into());
            ev.agent = Some("ed25519:agent".into());
            ev.expires = Some(100);
            ev.caveats = Some("[]".into());
            a.append(&ev).unwrap();
        }
        a.record_revocation("g1", "ed25519:x", "lost laptop", "{}", "os-auth", 5)
            .unwrap();
        let rows = a.grants_issued_to("ed25519:agent").unwrap();
        let revoked: Vec<bool> = rows.iter().map(|r| r.revoked).collect();
        assert_eq!(revoked, [false, true], "newest (g2) first: {rows:?}");
    }

    #[test]
    fn revoked_among_names_only_the_revoked_ids_asked_about() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        for id in ["g1", "g2"] {
            let mut ev = NewEvent::new(EventKind::GrantIssued, 1);
            ev.token_id = Some(id.into());
            a.append(&ev).unwrap();
        }
        a.record_revocation("g2", "ed25519:x", "lost laptop", "{}", "os-auth", 5)
            .unwrap();
        assert_eq!(
            a.revoked_among(["g1", "g2", "g2", "g3"]).unwrap(),
            vec!["g2"]
        );
        assert!(a.revoked_among(["g1"]).unwrap().is_empty());
    }
}
