//! Reading events back: the [`Query`] filters and [`Audit::query`].
//!
//! Every caller that lists rows (`parley audit`, the app's audit view, the
//! live-grants list) goes through this one bounded, parameterized query, so
//! the limits and the SQL built from a filter are in one place.

use super::store::{read_event, COLUMNS};
use super::{Audit, AuditError, Event, EventKind};
use rusqlite::types::Value;

/// Rows returned when a query names no limit.
pub const DEFAULT_LIMIT: u32 = 500;
/// The largest limit a query may ask for.
pub const MAX_LIMIT: u32 = 10_000;

/// Filters for [`Audit::query`]; all given filters must hold. Results are
/// newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// `at >= since` (unix seconds, inclusive).
    pub since: Option<i64>,
    /// `at <= until` (inclusive).
    pub until: Option<i64>,
    /// Exactly this agent key.
    pub agent: Option<String>,
    /// Exactly this service id.
    pub service: Option<String>,
    /// Any of these kinds (empty: all).
    pub kinds: Vec<EventKind>,
    /// Only grants and consents still live at this time: `grant_issued` or
    /// `consent_approved` rows whose `expires` is after it.
    pub live_at: Option<i64>,
    /// At most this many rows: default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`].
    pub limit: Option<u32>,
}

impl Audit {
    /// Events matching `q`, newest first. Parameterized SQL only.
    pub fn query(&self, q: &Query) -> Result<Vec<Event>, AuditError> {
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(AuditError::Limit(limit));
        }
        let mut sql = format!("SELECT {COLUMNS} FROM events WHERE 1 = 1");
        let mut args: Vec<Value> = Vec::new();
        let mut bind = |sql: &mut String, clause: &str, v: Value| {
            args.push(v);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        };
        if let Some(since) = q.since {
            bind(&mut sql, " AND at >= ?", since.into());
        }
        if let Some(until) = q.until {
            bind(&mut sql, " AND at <= ?", until.into());
        }
        if let Some(agent) = &q.agent {
            bind(&mut sql, " AND agent = ?", agent.clone().into());
        }
        if let Some(service) = &q.service {
            bind(&mut sql, " AND service = ?", service.clone().into());
        }
        if !q.kinds.is_empty() {
            sql.push_str(" AND kind IN (");
            for (i, k) in q.kinds.iter().enumerate() {
                let sep = if i == 0 { "?" } else { ", ?" };
                bind(&mut sql, sep, k.as_str().to_owned().into());
            }
            sql.push(')');
        }
        if let Some(t) = q.live_at {
            bind(
                &mut sql,
                " AND kind IN (?",
                EventKind::GrantIssued.as_str().to_owned().into(),
            );
            bind(
                &mut sql,
                ", ?)",
                EventKind::ConsentApproved.as_str().to_owned().into(),
            );
            bind(&mut sql, " AND expires > ?", t.into());
        }
        bind(
            &mut sql,
            " ORDER BY seq DESC LIMIT ?",
            i64::from(limit).into(),
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(read_event(row)?);
        }
        Ok(out)
    }
}
