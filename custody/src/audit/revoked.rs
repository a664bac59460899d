//! Revoked grants (issue 30, item 3): the `revoked_grants` table (state,
//! outside the chain: which grants custody published a revocation of, with
//! the signed statement) and a chained [`EventKind::GrantRevoked`] row,
//! written in the same transaction.

use super::event::prepare;
use super::store::append_in;
use super::{Audit, AuditError, Event, EventKind, NewEvent, Query};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

impl Audit {
    /// The issued grant or consent whose id is `token_id`, if custody
    /// signed it (its `grant_issued` or `consent_approved` row).
    pub fn issued(&self, token_id: &str) -> Result<Option<Event>, AuditError> {
        let q = Query {
            kinds: vec![EventKind::GrantIssued, EventKind::ConsentApproved],
            limit: Some(super::MAX_LIMIT),
            ..Default::default()
        };
        Ok(self
            .query(&q)?
            .into_iter()
            .find(|e| e.token_id.as_deref() == Some(token_id)))
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

    /// Every revoked grant id.
    pub fn revoked_ids(&self) -> Result<Vec<String>, AuditError> {
        let mut stmt = self
            .conn
            .prepare("SELECT token_id FROM revoked_grants ORDER BY at DESC LIMIT 100000")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
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
