//! Paused agents (issue 15, part 4): an agent the human paused has its
//! requests refused without a prompt until it is resumed or the pause ends.
//!
//! The pause itself lives in the `paused_agents` table of the audit file
//! (outside the chain, like `settings`: it is state, not history), and every
//! pause and resume is also an event in the chain
//! ([`EventKind::AgentPaused`], [`EventKind::AgentResumed`]), written in the
//! same transaction, so the log says who was paused when and why.

use super::event::prepare;
use super::store::append_in;
use super::{Audit, AuditError, Event, EventKind, NewEvent};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::Serialize;

/// A pause in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pause {
    /// The agent key.
    pub agent: String,
    /// Until when (unix seconds); `None` = until resumed.
    pub until: Option<i64>,
    /// Why, in the human's (or custody's) words.
    pub reason: String,
    /// When it was set.
    pub at: i64,
}

impl Audit {
    /// Pauses `agent` until `until` (`None`: until resumed), replacing any
    /// earlier pause of it, and records it.
    pub fn pause_agent(
        &mut self,
        agent: &str,
        until: Option<i64>,
        reason: &str,
        at: i64,
    ) -> Result<Event, AuditError> {
        let mut ev = NewEvent::new(EventKind::AgentPaused, at);
        ev.agent = Some(agent.to_owned());
        ev.expires = until;
        ev.reason = Some(reason.to_owned());
        let (ev, cut) = prepare(&ev)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO paused_agents (agent, until, reason, at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(agent) DO UPDATE SET until = excluded.until, \
             reason = excluded.reason, at = excluded.at",
            params![agent, until, ev.reason, at],
        )?;
        let event = append_in(&tx, &ev, cut)?;
        tx.commit()?;
        Ok(event)
    }

    /// Ends `agent`'s pause; records it when there was one, with how the
    /// human's resume was confirmed (`confirmed_by`: `os-auth` when the OS
    /// authenticated it). Returns whether there was.
    pub fn resume_agent(
        &mut self,
        agent: &str,
        at: i64,
        confirmed_by: Option<&str>,
    ) -> Result<bool, AuditError> {
        let mut ev = NewEvent::new(EventKind::AgentResumed, at);
        ev.agent = Some(agent.to_owned());
        ev.confirmed_by = confirmed_by.map(str::to_owned);
        let (ev, cut) = prepare(&ev)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let removed = tx.execute("DELETE FROM paused_agents WHERE agent = ?1", params![agent])?;
        if removed > 0 {
            append_in(&tx, &ev, cut)?;
        }
        tx.commit()?;
        Ok(removed > 0)
    }

    /// `agent`'s pause, if one is in force at `now`.
    pub fn pause_of(&self, agent: &str, now: i64) -> Result<Option<Pause>, AuditError> {
        Ok(self
            .conn
            .query_row(
                "SELECT agent, until, reason, at FROM paused_agents \
                 WHERE agent = ?1 AND (until IS NULL OR until > ?2)",
                params![agent, now],
                |r| {
                    Ok(Pause {
                        agent: r.get(0)?,
                        until: r.get(1)?,
                        reason: r.get(2)?,
                        at: r.get(3)?,
                    })
                },
            )
            .optional()?)
    }

    /// Every pause in force at `now` (for the tray and the audit view).
    pub fn pauses(&self, now: i64) -> Result<Vec<Pause>, AuditError> {
        let mut stmt = self.conn.prepare(
            "SELECT agent, until, reason, at FROM paused_agents \
             WHERE until IS NULL OR until > ?1 ORDER BY at DESC LIMIT 10000",
        )?;
        let rows = stmt.query_map(params![now], |r| {
            Ok(Pause {
                agent: r.get(0)?,
                until: r.get(1)?,
                reason: r.get(2)?,
                at: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
