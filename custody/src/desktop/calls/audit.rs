//! The audit view: events, live grants, the chain's state, and export.

use super::refused;
use super::{blocking, R};
use crate::admin::{self, ExportFormat};
use crate::audit::{self, EventKind, Query, VerifyReport};
use crate::desktop::service::Desktop;
use crate::desktop::views::EventView;
use crate::engine::unix_now;
use serde::{Deserialize, Serialize};

/// Audit view filters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditFilter {
    /// Kinds (names as stored); empty: all.
    pub kinds: Vec<String>,
    /// Exactly this agent key.
    pub agent: Option<String>,
    /// Exactly this service.
    pub service: Option<String>,
    /// From (unix seconds, inclusive).
    pub since: Option<i64>,
    /// Until (inclusive).
    pub until: Option<i64>,
    /// At most this many rows.
    pub limit: Option<u32>,
}

impl AuditFilter {
    fn query(&self) -> R<Query> {
        let kinds = self
            .kinds
            .iter()
            .map(|k| k.parse::<EventKind>().map_err(refused))
            .collect::<R<Vec<_>>>()?;
        let text = |o: &Option<String>| {
            o.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        Ok(Query {
            since: self.since,
            until: self.until,
            agent: text(&self.agent),
            service: text(&self.service),
            kinds,
            live_at: None,
            limit: Some(self.limit.unwrap_or(500).clamp(1, audit::MAX_LIMIT)),
        })
    }
}

/// The audit view.
#[derive(Debug, Serialize)]
pub struct AuditView {
    /// Matching events, newest first.
    pub events: Vec<EventView>,
    /// Whether more matched than were returned.
    pub truncated: bool,
    /// Grants and consents still live now, newest first.
    pub live: Vec<EventView>,
    /// Which of the grants in `events` and `live` custody revoked (a revoked
    /// grant is still accepted by services that do not check revocations
    /// until it expires).
    pub revoked: Vec<String>,
    /// The chain check from the last verified row (the checkpoint) on.
    pub verify: VerifyReport,
    /// When this was read.
    pub now: i64,
}

/// Events, live grants and the chain's state.
pub async fn audit_query(state: &Desktop, filter: AuditFilter) -> R<AuditView> {
    let core = state.core()?;
    let mut q = filter.query()?;
    let limit = q.limit.unwrap_or(500);
    q.limit = Some((limit + 1).min(audit::MAX_LIMIT));
    let e = core.engine.clone();
    let now = unix_now();
    let (mut rows, live, verify, revoked) = blocking("reading the audit log", move || {
        e.with_audit(|a| {
            let rows = a.query(&q)?;
            let live = a.query(&Query {
                live_at: Some(now),
                limit: Some(1000),
                ..Default::default()
            })?;
            // From the checkpoint on: opening the view does not re-hash
            // the whole log (a full verify is `parley audit --verify --full`).
            let verify = a.verify_incremental()?;
            // Only the ids on screen: the table grows without bound.
            let revoked = a.revoked_among(
                rows.iter()
                    .chain(&live)
                    .filter_map(|r| r.token_id.as_deref()),
            )?;
            Ok::<_, audit::AuditError>((rows, live, verify, revoked))
        })
        .map_err(refused)
    })
    .await?;
    let truncated = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let label = |k: &str| state.agent_label(k);
    Ok(AuditView {
        events: rows.iter().map(|r| EventView::new(r, label)).collect(),
        truncated,
        live: live.iter().map(|r| EventView::new(r, label)).collect(),
        revoked,
        verify,
        now,
    })
}

/// Where an export went.
#[derive(Debug, Serialize)]
pub struct ExportView {
    /// The file written.
    pub path: String,
    /// Events in it.
    pub rows: usize,
}

/// Exports the filtered events, exactly as stored, to a new file in the
/// Downloads folder (else the data directory): JSON Lines or CSV
/// ([`admin::export_to_new_file`]).
pub async fn audit_export(state: &Desktop, format: String, filter: AuditFilter) -> R<ExportView> {
    let core = state.core()?;
    let format: ExportFormat = format.parse()?;
    let mut q = filter.query()?;
    q.limit = Some(audit::MAX_LIMIT);
    let dir = admin::default_export_dir(&core.data_dir);
    let e = core.engine.clone();
    let (rows, path) = blocking("exporting the audit log", move || {
        let rows = e.with_audit(|a| a.query(&q)).map_err(refused)?;
        let path = admin::export_to_new_file(&dir, format, &rows, unix_now())?;
        Ok((rows.len(), path))
    })
    .await?;
    Ok(ExportView {
        path: path.display().to_string(),
        rows,
    })
}
