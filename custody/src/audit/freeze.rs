//! Custody frozen (issue 30, item 1): "Stop all agents". While frozen, every
//! request from an agent is refused unseen; only the human's OS-authenticated
//! unfreeze ends it.
//!
//! Like a pause, the freeze is state outside the chain (the one-row
//! `custody_frozen` table, so it survives a restart and the human's `parley
//! custody freeze` can set it with the service running) and an event in the
//! chain ([`EventKind::CustodyFrozen`], [`EventKind::CustodyUnfrozen`]),
//! written in the same transaction. Each refusal meanwhile is a
//! `request_rejected` row under the retention policy like any other
//! rejection (bounded per peer and hour) and is counted in the table, so the
//! unfreeze can say how many were refused even when not every one has a row.

use super::event::prepare;
use super::store::append_in;
use super::{Audit, AuditError, Event, EventKind, NewEvent, Query};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::Serialize;

/// The code (and `reason` prefix in the log) of a request refused because
/// custody is frozen.
pub const FROZEN_CODE: &str = "custody_frozen";

/// A freeze in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Freeze {
    /// Since when (unix seconds).
    pub at: i64,
    /// Why, in the human's words.
    pub reason: String,
    /// How many requests were refused since.
    pub refused: i64,
}

/// What an unfreeze ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unfrozen {
    /// The freeze that ended.
    pub freeze: Freeze,
    /// The refusals the log kept row by row (newest first, at most 200);
    /// `freeze.refused` counts them all.
    pub refused_rows: Vec<Event>,
}

impl Audit {
    /// Freezes custody, recording it. Freezing while frozen changes nothing
    /// and writes nothing (the first freeze's time stays). Returns the
    /// freeze in force.
    pub fn freeze(&mut self, reason: &str, at: i64) -> Result<Freeze, AuditError> {
        if let Some(f) = self.frozen()? {
            return Ok(f);
        }
        let mut ev = NewEvent::new(EventKind::CustodyFrozen, at);
        ev.reason = Some(reason.to_owned());
        let (ev, cut) = prepare(&ev)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let added = tx.execute(
            "INSERT OR IGNORE INTO custody_frozen (id, at, reason, refused) VALUES (1, ?1, ?2, 0)",
            params![at, ev.reason],
        )?;
        if added > 0 {
            append_in(&tx, &ev, cut)?;
        }
        tx.commit()?;
        Ok(self.frozen()?.unwrap_or(Freeze {
            at,
            reason: reason.to_owned(),
            refused: 0,
        }))
    }

    /// The freeze in force, if any.
    pub fn frozen(&self) -> Result<Option<Freeze>, AuditError> {
        Ok(self
            .conn
            .query_row(
                "SELECT at, reason, refused FROM custody_frozen WHERE id = 1",
                [],
                |r| {
                    Ok(Freeze {
                        at: r.get(0)?,
                        reason: r.get(1)?,
                        refused: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// Counts one request refused because custody is frozen (its row, if
    /// any, is written by [`Audit::record`] under the retention policy).
    pub fn count_frozen_refusal(&mut self) -> Result<(), AuditError> {
        self.conn.execute(
            "UPDATE custody_frozen SET refused = refused + 1 WHERE id = 1",
            [],
        )?;
        Ok(())
    }

    /// Ends the freeze, recording how the human's unfreeze was confirmed
    /// (`confirmed_by`, e.g. `os-auth`) and how many requests were refused.
    /// Returns what it ended, or `None` when custody was not frozen.
    pub fn unfreeze(
        &mut self,
        at: i64,
        confirmed_by: Option<&str>,
    ) -> Result<Option<Unfrozen>, AuditError> {
        let Some(freeze) = self.frozen()? else {
            return Ok(None);
        };
        let q = Query {
            kinds: vec![EventKind::RequestRejected],
            since: Some(freeze.at),
            limit: Some(200),
            ..Default::default()
        };
        let refused_rows: Vec<Event> = self
            .query(&q)?
            .into_iter()
            .filter(|e| {
                e.reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with(FROZEN_CODE))
            })
            .collect();
        let mut ev = NewEvent::new(EventKind::CustodyUnfrozen, at);
        ev.confirmed_by = confirmed_by.map(str::to_owned);
        ev.count = Some(freeze.refused);
        let (ev, cut) = prepare(&ev)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let removed = tx.execute("DELETE FROM custody_frozen WHERE id = 1", [])?;
        if removed > 0 {
            append_in(&tx, &ev, cut)?;
        }
        tx.commit()?;
        Ok((removed > 0).then_some(Unfrozen {
            freeze,
            refused_rows,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freeze_is_kept_across_a_reopen_and_ends_only_by_unfreeze() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.sqlite3");
        {
            let mut a = Audit::open(&path).unwrap();
            assert!(a.frozen().unwrap().is_none());
            let f = a.freeze("stop", 100).unwrap();
            assert_eq!((f.at, f.refused), (100, 0));
            // A second freeze keeps the first one's time and writes nothing.
            assert_eq!(a.freeze("again", 200).unwrap().at, 100);
            a.count_frozen_refusal().unwrap();
        }
        let mut a = Audit::open(&path).unwrap();
        let f = a.frozen().unwrap().expect("still frozen after reopening");
        assert_eq!((f.at, f.reason.as_str(), f.refused), (100, "stop", 1));
        let u = a.unfreeze(300, Some("os-auth")).unwrap().unwrap();
        assert_eq!(u.freeze.refused, 1);
        assert!(a.frozen().unwrap().is_none());
        assert!(a.unfreeze(301, None).unwrap().is_none());
        let kinds: Vec<EventKind> = a
            .query(&Query::default())
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            kinds
                .iter()
                .filter(|k| matches!(k, EventKind::CustodyFrozen | EventKind::CustodyUnfrozen))
                .count(),
            2
        );
        assert!(a.verify().unwrap().ok);
    }
}
