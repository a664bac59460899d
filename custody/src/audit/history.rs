//! What custody's own log says about an agent and the services the human has
//! dealt with: the facts behind "what is unusual" ([`crate::unusual`]) and
//! "what it has done" ([`crate::activity`]).
//!
//! Only signed rows (`consent_approved`, `grant_issued`) count as the human's
//! history: a rejection or a denial is not something the human agreed to.
//! The one exception is [`Audit::agent_rows`], which counts every row naming
//! the agent, so "first request" means custody never heard of the key.
//! Every query is parameterized and bounded (aggregates, or a `LIMIT`).

use super::{Audit, AuditError, EventKind};
use rusqlite::params;

/// The most distinct services [`Audit::services_used`] returns.
pub const MAX_SERVICES: u32 = 10_000;
/// The most live grants [`Audit::live_grant_caveats`] returns.
pub const MAX_LIVE_GRANTS: u32 = 1_000;

/// A grant custody issued, as [`Audit::grants_issued_to`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRow {
    /// When it was issued (unix seconds).
    pub issued_at: i64,
    /// When it ends (unix seconds).
    pub expires: i64,
    /// Its caveats, as signed (JSON text).
    pub caveats: String,
    /// Whether custody revoked it since.
    pub revoked: bool,
}

/// One currency's total, in minor units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Total {
    /// ISO 4217 code, as stored.
    pub currency: String,
    /// The sum of the costs, minor units.
    pub amount: i64,
    /// How many consents it adds up.
    pub consents: u64,
}

impl Audit {
    /// How many consents the human approved at `service` (any agent).
    pub fn consents_at_service(&self, service: &str) -> Result<u64, AuditError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM events WHERE kind = ?1 AND service = ?2",
            params![EventKind::ConsentApproved.as_str(), service],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// How many rows of any kind name `agent` (requests it made, signed or not).
    pub fn agent_rows(&self, agent: &str) -> Result<u64, AuditError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM events WHERE agent = ?1",
            params![agent],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// How many grants and consents the human signed for `agent`.
    pub fn signed_rows(&self, agent: &str) -> Result<u64, AuditError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM events WHERE agent = ?1 AND kind IN (?2, ?3)",
            params![
                agent,
                EventKind::GrantIssued.as_str(),
                EventKind::ConsentApproved.as_str()
            ],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The largest cost (minor units) of a consent the human approved for
    /// `agent` at `service` in `currency`, if any.
    pub fn largest_consent(
        &self,
        agent: &str,
        service: &str,
        currency: &str,
    ) -> Result<Option<i64>, AuditError> {
        Ok(self.conn.query_row(
            "SELECT MAX(cost_amount) FROM events WHERE kind = ?1 AND agent = ?2 \
             AND service = ?3 AND cost_currency = ?4",
            params![
                EventKind::ConsentApproved.as_str(),
                agent,
                service,
                currency
            ],
            |r| r.get(0),
        )?)
    }

    /// The caveats (JSON text) of the grants to `agent` still live at `now`,
    /// newest first, at most [`MAX_LIVE_GRANTS`].
    pub fn live_grant_caveats(&self, agent: &str, now: i64) -> Result<Vec<String>, AuditError> {
        let mut stmt = self.conn.prepare(
            "SELECT caveats FROM events WHERE kind = ?1 AND agent = ?2 AND expires > ?3 \
             AND caveats IS NOT NULL ORDER BY seq DESC LIMIT ?4",
        )?;
        let rows = stmt.query_map(
            params![EventKind::GrantIssued.as_str(), agent, now, MAX_LIVE_GRANTS],
            |r| r.get::<_, String>(0),
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The grants issued to `agent` (newest first, at most
    /// [`MAX_LIVE_GRANTS`]), live or not, each with whether custody revoked
    /// it, for "why custody asks" ([`crate::review::why_asked()`]).
    pub fn grants_issued_to(&self, agent: &str) -> Result<Vec<GrantRow>, AuditError> {
        let mut stmt = self.conn.prepare(
            "SELECT at, expires, caveats, EXISTS(SELECT 1 FROM revoked_grants r \
             WHERE r.token_id = events.token_id) FROM events WHERE kind = ?1 AND agent = ?2 \
             AND expires IS NOT NULL AND caveats IS NOT NULL ORDER BY seq DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            params![EventKind::GrantIssued.as_str(), agent, MAX_LIVE_GRANTS],
            |r| {
                Ok(GrantRow {
                    issued_at: r.get(0)?,
                    expires: r.get(1)?,
                    caveats: r.get(2)?,
                    revoked: r.get(3)?,
                })
            },
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every service id the human approved a consent at or named in a grant
    /// (a grant's `svc` list is stored comma-joined and is split here), at
    /// most [`MAX_SERVICES`] rows.
    pub fn services_used(&self) -> Result<Vec<String>, AuditError> {
        let mut stmt = self.conn.prepare(
            "SELECT DISTINCT service FROM events WHERE kind IN (?1, ?2) \
             AND service IS NOT NULL LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            params![
                EventKind::ConsentApproved.as_str(),
                EventKind::GrantIssued.as_str(),
                MAX_SERVICES
            ],
            |r| r.get::<_, String>(0),
        )?;
        let mut out: Vec<String> = Vec::new();
        for row in rows {
            for s in row?.split(',') {
                let s = s.trim();
                if !s.is_empty() && !out.iter().any(|o| o == s) {
                    out.push(s.to_owned());
                }
            }
        }
        Ok(out)
    }

    /// How many consents the human approved for `agent` at or after `since`.
    pub fn consents_of_agent(&self, agent: &str, since: i64) -> Result<u64, AuditError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM events WHERE kind = ?1 AND agent = ?2 AND at >= ?3",
            params![EventKind::ConsentApproved.as_str(), agent, since],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The costs of the consents approved for `agent` at or after `since`,
    /// summed per currency (in currency order). A sum beyond what SQLite's
    /// integers hold is an error, not a wrong number.
    pub fn spent_by_agent(&self, agent: &str, since: i64) -> Result<Vec<Total>, AuditError> {
        let mut stmt = self.conn.prepare(
            "SELECT cost_currency, SUM(cost_amount), COUNT(*) FROM events WHERE kind = ?1 \
             AND agent = ?2 AND at >= ?3 AND cost_amount IS NOT NULL \
             AND cost_currency IS NOT NULL GROUP BY cost_currency ORDER BY cost_currency",
        )?;
        let rows = stmt.query_map(
            params![EventKind::ConsentApproved.as_str(), agent, since],
            |r| {
                Ok(Total {
                    currency: r.get(0)?,
                    amount: r.get(1)?,
                    consents: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                })
            },
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many grants to `agent` are live at `now`.
    pub fn live_grants_of_agent(&self, agent: &str, now: i64) -> Result<u64, AuditError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM events WHERE kind = ?1 AND agent = ?2 AND expires > ?3",
            params![EventKind::GrantIssued.as_str(), agent, now],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
