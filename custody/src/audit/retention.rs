//! The retention policy: how many rejections (and, the same way, how many
//! cancelled requests) of one peer are written row by row, and how the rest
//! are still accounted for.
//!
//! An agent can send a rejected request as often as the queue's rate limit
//! lets it, each one a row whose fields it chose. Per peer (uid) and clock
//! hour (UTC), the first [`RetentionPolicy::rejections_per_hour`] rejections
//! are written as rows; every further one adds one to that peer's tally for
//! the hour (the `rejection_tally` table, updated in the same transaction as
//! the count is made, so a crash loses none). When the hour is over, the
//! next write summarizes the tally as one chained
//! [`EventKind::RejectionsSummarized`] row: how many, the period, the most
//! common reasons. Nothing is ever deleted or rewritten, so signed events are
//! never touched and the chain stays verifiable as it is.
//!
//! The tally table is not part of the chain until it is summarized: someone
//! who can write the file could lower a count of the current hour. That is
//! the same attacker who could rewrite the whole chain (see the module docs
//! of [`crate::audit`]).

use super::chain::compaction_digest;
use super::event::prepare;
use super::store::append_in;
use super::{Audit, AuditError, Event, EventKind, NewEvent};
use parley_core::lens;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The `settings` key the policy is stored under.
const KEY: &str = "retention";
/// Distinct reason codes kept per tally; more are counted as `other`.
const MAX_REASONS: usize = 32;
/// Reasons named in a summary row.
const NAMED_REASONS: usize = 3;

/// What the log keeps of rejected requests. A settings value: the daemon
/// takes it from its flags, the app from its settings, and the log stores
/// the one in effect so every reader shows the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionPolicy {
    /// Rejected requests of one peer (uid) written row by row per clock
    /// hour; the rest of that hour are counted into one summary row.
    /// `0` summarizes every rejection.
    pub rejections_per_hour: u32,
    /// Compact rejected, expired and cancelled rows (and rejection
    /// summaries) older than this many days: their details go, their count
    /// and place in the chain stay ([`super::Audit::compact`]). `None`:
    /// never. Signed, key and denial rows are never compacted.
    #[serde(default)]
    pub compact_after_days: Option<u32>,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        RetentionPolicy {
            rejections_per_hour: 20,
            compact_after_days: None,
        }
    }
}

impl fmt::Display for RetentionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at most {} rejected requests, and as many cancelled ones, per peer and hour are logged one by one, the rest of that hour are counted in one summary row each; ",
            self.rejections_per_hour
        )?;
        match self.compact_after_days {
            None => write!(f, "nothing is compacted"),
            Some(d) => write!(
                f,
                "rejected, expired and cancelled rows older than {d} days are compacted (details removed; counts and the chain kept)"
            ),
        }?;
        write!(
            f,
            "; signed and key events are always logged in full, and no signed, key or denial event is ever compacted"
        )
    }
}

/// What [`super::Audit::record`] did with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// Written as its own row.
    Logged(Box<Event>),
    /// A rejection beyond the policy's rows: counted for its peer and hour.
    Counted {
        /// The peer.
        peer_uid: Option<u32>,
        /// The hour it is counted in (unix seconds of its start).
        hour_start: i64,
    },
}

/// Rejections counted but not yet summarized in a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenTally {
    /// The peer (`None`: its uid was unknown).
    pub peer_uid: Option<u32>,
    /// Start of the hour (unix seconds).
    pub hour_start: i64,
    /// Rejections of this hour written as rows.
    pub logged: u64,
    /// Rejections counted, not written as rows (yet summarized in none).
    pub counted: u64,
    /// Counted rejections by reason code.
    pub reasons: BTreeMap<String, u64>,
}

/// What a tally counts: rejected requests, or requests the agent withdrew
/// (a `cancel`, or a disconnect while pending). Both are what an agent can
/// cause as often as the rate limit lets it, each a row it chose the moment
/// of, so both are bounded per peer and hour the same way, each in its own
/// table and with its own summary kind, with the same per-hour number
/// ([`RetentionPolicy::rejections_per_hour`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tallied {
    /// `request_rejected` rows, summarized as `rejections_summarized`.
    Rejections,
    /// `request_cancelled` rows, summarized as `cancellations_summarized`.
    Cancellations,
}

impl Tallied {
    const BOTH: [Tallied; 2] = [Tallied::Rejections, Tallied::Cancellations];

    /// The tally of an event kind, if it has one.
    pub(super) fn of(kind: EventKind) -> Option<Tallied> {
        match kind {
            EventKind::RequestRejected => Some(Tallied::Rejections),
            EventKind::RequestCancelled => Some(Tallied::Cancellations),
            _ => None,
        }
    }

    fn table(self) -> &'static str {
        match self {
            Tallied::Rejections => "rejection_tally",
            Tallied::Cancellations => "cancel_tally",
        }
    }

    fn row_kind(self) -> EventKind {
        match self {
            Tallied::Rejections => EventKind::RequestRejected,
            Tallied::Cancellations => EventKind::RequestCancelled,
        }
    }

    fn summary_kind(self) -> EventKind {
        match self {
            Tallied::Rejections => EventKind::RejectionsSummarized,
            Tallied::Cancellations => EventKind::CancellationsSummarized,
        }
    }

    /// The code a counted event is grouped under in its summary.
    fn code(self, reason: Option<&str>) -> String {
        match (self, reason) {
            (Tallied::Rejections, r) => reason_code(r),
            // The engine writes no reason for a `cancel` request, and says
            // "the agent disconnected" for a connection closed while pending.
            (Tallied::Cancellations, None) => "cancel_request".into(),
            (Tallied::Cancellations, Some(r)) if r.contains("disconnect") => "disconnected".into(),
            (Tallied::Cancellations, r) => reason_code(r),
        }
    }
}

/// `logged, counted, reasons, first_at, last_at` of a stored tally.
type StoredTally = (i64, i64, String, Option<i64>, Option<i64>);

/// One peer's tally for one hour, as stored.
pub(super) struct Tally {
    what: Tallied,
    uid: i64,
    pub(super) hour: i64,
    pub(super) logged: u64,
    counted: u64,
    reasons: BTreeMap<String, u64>,
    first_at: Option<i64>,
    last_at: Option<i64>,
}

/// The tally key of a peer: its uid, or -1 when unknown.
fn uid_key(uid: Option<u32>) -> i64 {
    uid.map_or(-1, i64::from)
}

fn uid_of(key: i64) -> Option<u32> {
    u32::try_from(key).ok()
}

/// The code of a rejection reason (`"bad_hash: …"` → `bad_hash`). The
/// engine writes our own code first; anything else is `other`.
fn reason_code(reason: Option<&str>) -> String {
    let code = reason
        .and_then(|r| r.split_once(':'))
        .map(|(c, _)| c)
        .filter(|c| {
            !c.is_empty() && c.len() <= 32 && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        });
    code.unwrap_or("other").to_owned()
}

impl Tally {
    pub(super) fn load(
        conn: &Connection,
        what: Tallied,
        uid: Option<u32>,
        at: i64,
    ) -> Result<Tally, AuditError> {
        let uid = uid_key(uid);
        let hour = at.div_euclid(3600);
        let row: Option<StoredTally> = conn
            .query_row(
                &format!(
                    "SELECT logged, counted, reasons, first_at, last_at FROM {} \
                     WHERE peer_uid = ?1 AND hour = ?2",
                    what.table()
                ),
                params![uid, hour],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()?;
        Ok(match row {
            None => Tally {
                what,
                uid,
                hour,
                logged: 0,
                counted: 0,
                reasons: BTreeMap::new(),
                first_at: None,
                last_at: None,
            },
            Some((logged, counted, reasons, first_at, last_at)) => Tally {
                what,
                uid,
                hour,
                logged: u64::try_from(logged).unwrap_or(0),
                counted: u64::try_from(counted).unwrap_or(0),
                reasons: serde_json::from_str(&reasons).unwrap_or_default(),
                first_at,
                last_at,
            },
        })
    }

    /// Counts one more rejection with this reason at `at`.
    pub(super) fn count(&mut self, reason: Option<&str>, at: i64) {
        self.counted += 1;
        let mut code = self.what.code(reason);
        if !self.reasons.contains_key(&code) && self.reasons.len() >= MAX_REASONS {
            code = "other".into();
        }
        *self.reasons.entry(code).or_insert(0) += 1;
        self.first_at = Some(self.first_at.map_or(at, |f| f.min(at)));
        self.last_at = Some(self.last_at.map_or(at, |l| l.max(at)));
    }

    pub(super) fn store(&self, conn: &Connection) -> Result<(), AuditError> {
        let reasons = serde_json::to_string(&self.reasons).unwrap_or_else(|_| "{}".into());
        conn.execute(
            &format!(
                "INSERT INTO {} (peer_uid, hour, logged, counted, reasons, first_at, last_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                 ON CONFLICT(peer_uid, hour) DO UPDATE SET logged = excluded.logged, \
                 counted = excluded.counted, reasons = excluded.reasons, \
                 first_at = excluded.first_at, last_at = excluded.last_at",
                self.what.table()
            ),
            params![
                self.uid,
                self.hour,
                i64::try_from(self.logged).unwrap_or(i64::MAX),
                i64::try_from(self.counted).unwrap_or(i64::MAX),
                reasons,
                self.first_at,
                self.last_at,
            ],
        )?;
        Ok(())
    }

    /// The summary row of the counted rejections, the period ending at `end`.
    fn summary(&self, now: i64, end: i64, policy: RetentionPolicy) -> NewEvent {
        let start = self.hour * 3600;
        let mut by_count: Vec<(&String, &u64)> = self.reasons.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let named: Vec<String> = by_count
            .iter()
            .take(NAMED_REASONS)
            .map(|(code, n)| format!("{code} ({n})"))
            .collect();
        let who = match uid_of(self.uid) {
            Some(uid) => format!("uid {uid}"),
            None => "a peer of unknown uid".to_owned(),
        };
        let mut ev = NewEvent::new(self.what.summary_kind(), now);
        ev.peer_uid = uid_of(self.uid);
        ev.count = i64::try_from(self.counted).ok();
        ev.span_start = Some(start);
        ev.span_end = Some(end);
        let (what, how) = match self.what {
            Tallied::Rejections => ("rejected", "most common reasons"),
            Tallied::Cancellations => ("cancelled (withdrawn by the agent)", "how they ended"),
        };
        ev.reason = Some(format!(
            "{} more {what} requests from {who} between {} and {} (the retention policy logs {} per peer and hour one by one); {how}: {}",
            self.counted,
            lens::time(start),
            lens::time(end),
            policy.rejections_per_hour,
            named.join(", ")
        ));
        ev
    }
}

/// Writes a summary row for every tally whose hour is over at `now` (and,
/// with `include_open`, for the current hour's, which then keeps counting
/// from zero), and drops the finished tallies. Inside the caller's
/// transaction.
pub(super) fn close_hours(
    tx: &rusqlite::Transaction<'_>,
    now: i64,
    policy: RetentionPolicy,
    include_open: bool,
) -> Result<Vec<Event>, AuditError> {
    let mut written = Vec::new();
    for what in Tallied::BOTH {
        written.extend(close_hours_of(tx, what, now, policy, include_open)?);
    }
    Ok(written)
}

/// [`close_hours`] for one kind of tally.
fn close_hours_of(
    tx: &rusqlite::Transaction<'_>,
    what: Tallied,
    now: i64,
    policy: RetentionPolicy,
    include_open: bool,
) -> Result<Vec<Event>, AuditError> {
    let current = now.div_euclid(3600);
    let limit = if include_open { current + 1 } else { current };
    let mut due: Vec<(i64, i64)> = Vec::new();
    {
        let mut stmt = tx.prepare(&format!(
            "SELECT peer_uid, hour FROM {} WHERE hour < ?1 ORDER BY hour, peer_uid",
            what.table()
        ))?;
        let mut rows = stmt.query([limit])?;
        while let Some(r) = rows.next()? {
            due.push((r.get(0)?, r.get(1)?));
        }
    }
    let mut written = Vec::new();
    for (uid, hour) in due {
        let mut tally = Tally::load(tx, what, uid_of(uid), hour * 3600)?;
        tally.uid = uid;
        if tally.counted > 0 {
            let end = if hour == current {
                now + 1
            } else {
                (hour + 1) * 3600
            };
            let ev = tally.summary(now, end, policy);
            written.push(append_in(tx, &ev, None)?);
        }
        if hour < current {
            tx.execute(
                &format!(
                    "DELETE FROM {} WHERE peer_uid = ?1 AND hour = ?2",
                    what.table()
                ),
                params![uid, hour],
            )?;
        } else {
            tally.counted = 0;
            tally.reasons.clear();
            tally.first_at = None;
            tally.last_at = None;
            tally.store(tx)?;
        }
    }
    Ok(written)
}

/// Tallies with counts no summary row holds yet.
pub(super) fn open_tallies(conn: &Connection) -> Result<Vec<OpenTally>, AuditError> {
    let mut stmt = conn.prepare(
        "SELECT peer_uid, hour, logged, counted, reasons FROM rejection_tally \
         WHERE counted > 0 ORDER BY hour, peer_uid",
    )?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let reasons: String = r.get(4)?;
        out.push(OpenTally {
            peer_uid: uid_of(r.get(0)?),
            hour_start: r.get::<_, i64>(1)? * 3600,
            logged: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
            counted: u64::try_from(r.get::<_, i64>(3)?).unwrap_or(0),
            reasons: serde_json::from_str(&reasons).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Rejected (or cancelled) requests accounted for: rows, summary counts
/// and open tallies.
pub(super) fn accounted(
    conn: &Connection,
    what: Tallied,
    uid: Option<u32>,
) -> Result<u64, AuditError> {
    let uid = uid.map(i64::from);
    let (row, summary) = (what.row_kind().as_str(), what.summary_kind().as_str());
    let in_rows: i64 = conn.query_row(
        &format!(
            "SELECT COALESCE(SUM(CASE kind WHEN '{summary}' THEN count ELSE 1 END), 0) \
             FROM events WHERE kind IN ('{row}', '{summary}') \
             AND (?1 IS NULL OR peer_uid = ?1)"
        ),
        [uid],
        |r| r.get(0),
    )?;
    let open: i64 = conn.query_row(
        &format!(
            "SELECT COALESCE(SUM(counted), 0) FROM {} WHERE (?1 IS NULL OR peer_uid = ?1)",
            what.table()
        ),
        [uid],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(in_rows).unwrap_or(0) + u64::try_from(open).unwrap_or(0))
}

/// The stored policy, if one was stored.
pub(super) fn load(conn: &Connection) -> Result<Option<RetentionPolicy>, AuditError> {
    let text: Option<String> = conn
        .query_row("SELECT value FROM settings WHERE key = ?1", [KEY], |r| {
            r.get(0)
        })
        .optional()?;
    text.map(|t| serde_json::from_str(&t).map_err(|e| AuditError::Policy(e.to_string())))
        .transpose()
}

pub(super) fn store(conn: &Connection, policy: RetentionPolicy) -> Result<(), AuditError> {
    let text = serde_json::to_string(&policy).map_err(|e| AuditError::Policy(e.to_string()))?;
    conn.execute(
        "INSERT INTO settings (key, value) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![KEY, text],
    )?;
    Ok(())
}

impl Audit {
    /// Writes the summary rows of every hour that is over at `now`; with
    /// `include_open_hour`, also of the hour still running (at shutdown, or
    /// to show a complete count), whose row then covers up to `now`.
    /// Returns the summary rows written.
    pub fn flush_tallies(
        &mut self,
        now: i64,
        include_open_hour: bool,
    ) -> Result<Vec<Event>, AuditError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let written = close_hours(&tx, now, self.retention, include_open_hour)?;
        tx.commit()?;
        Ok(written)
    }

    /// The retention policy in effect.
    pub fn retention(&self) -> RetentionPolicy {
        self.retention
    }

    /// Makes `policy` the one in effect and stores it in the log, so every
    /// reader (`parley audit`, the app) shows the same. A change is itself
    /// an event ([`EventKind::RetentionChanged`]); setting the policy
    /// already in effect (or the default on a fresh log) writes nothing.
    pub fn set_retention(&mut self, policy: RetentionPolicy, at: i64) -> Result<bool, AuditError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored = load(&tx)?;
        let before = stored.unwrap_or_default();
        if stored.is_some() && before == policy {
            self.retention = policy;
            return Ok(false);
        }
        store(&tx, policy)?;
        let changed = before != policy;
        if changed {
            let mut ev = NewEvent::new(EventKind::RetentionChanged, at);
            ev.reason = Some(format!("retention policy now: {policy} (was: {before})"));
            let (ev, cut) = prepare(&ev)?;
            append_in(&tx, &ev, cut)?;
        }
        tx.commit()?;
        self.retention = policy;
        Ok(changed)
    }

    /// Compacts the rows the policy's `compact_after_days` has made old
    /// (rejected, expired, cancelled requests and rejection summaries older
    /// than that; never a signed, key or denial row): one
    /// [`EventKind::AuditCompacted`] row is appended with how many rows of
    /// each kind it compacted and, in `hash`, the digest of their `(seq,
    /// kind, row_hash)`; then their text fields are cleared and their
    /// `compacted_by` set to that row, all in one transaction. What stays of
    /// each (`seq, at, kind, peer_uid, count, span_*, prev, row_hash`) keeps
    /// the chain linked and every request counted. Verification takes a
    /// compacted row's hash as stored, and checks the compaction row's digest
    /// against the rows marked as compacted by it, so marking a signed row
    /// compacted (or unmarking one) breaks the chain like any edit. Returns
    /// the compaction row, or `None` when there was nothing to compact (or
    /// the policy compacts nothing). The freed pages are reused by new rows;
    /// the file does not shrink.
    pub fn compact(&mut self, now: i64) -> Result<Option<Event>, AuditError> {
        let Some(days) = self.retention.compact_after_days else {
            return Ok(None);
        };
        let cutoff = now.saturating_sub(i64::from(days) * 86_400);
        let kinds: Vec<String> = EventKind::ALL
            .into_iter()
            .filter(|k| k.is_compactable())
            .map(|k| format!("'{}'", k.as_str()))
            .collect();
        let which = format!(
            "compacted_by IS NULL AND at < ?1 AND kind IN ({})",
            kinds.join(", ")
        );
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut by_kind: std::collections::BTreeMap<String, i64> = Default::default();
        let mut requests = 0i64;
        let mut span: Option<(i64, i64)> = None;
        {
            let mut stmt = tx.prepare(&format!(
                "SELECT kind, count, at FROM events WHERE {which} ORDER BY seq"
            ))?;
            let mut rows = stmt.query([cutoff])?;
            while let Some(r) = rows.next()? {
                let (kind, count, at): (String, Option<i64>, i64) =
                    (r.get(0)?, r.get(1)?, r.get(2)?);
                *by_kind.entry(kind).or_insert(0) += 1;
                requests = requests.saturating_add(count.unwrap_or(1));
                span = Some(span.map_or((at, at), |(a, b)| (a.min(at), b.max(at))));
            }
        }
        let Some((first, last)) = span else {
            return Ok(None);
        };
        let rows: i64 = by_kind.values().sum();
        let (last_seq,): (i64,) =
            tx.query_row("SELECT last_seq FROM chain_head WHERE id = 1", [], |r| {
                Ok((r.get(0)?,))
            })?;
        let by = last_seq + 1;
        let marked = tx.execute(
            &format!(
                "UPDATE events SET compacted_by = ?2, peer_pid = NULL, peer_exe = NULL, agent = NULL, \
                 service = NULL, capability = NULL, hash = NULL, cost_amount = NULL, \
                 cost_currency = NULL, risk = NULL, undo = NULL, expires = NULL, token_id = NULL, \
                 caveats = NULL, reason = NULL, principal = NULL, confirmed_by = NULL, cut = NULL, \
                 peer_chain = NULL \
                 WHERE {which}"
            ),
            params![cutoff, by],
        )?;
        if i64::try_from(marked).ok() != Some(rows) {
            return Err(AuditError::Policy(format!(
                "compaction found {rows} rows but marked {marked}; nothing was changed"
            )));
        }
        let (digest, n) = compaction_digest(&tx, by)?;
        let parts: Vec<String> = by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let mut ev = NewEvent::new(EventKind::AuditCompacted, now);
        ev.count = Some(n);
        ev.span_start = Some(first);
        ev.span_end = Some(last + 1);
        ev.hash = Some(digest);
        ev.reason = Some(format!(
            "compacted {n} rows older than {days} days, standing for {requests} requests ({}), between {} and {}: their details are gone, their place in the chain and their count stay",
            parts.join(", "),
            parley_core::lens::time(first),
            parley_core::lens::time(last + 1),
        ));
        let (ev, cut) = prepare(&ev)?;
        let event = append_in(&tx, &ev, cut)?;
        debug_assert_eq!(event.seq, by);
        tx.commit()?;
        Ok(Some(event))
    }

    /// Rejections counted this hour (or earlier) that no summary row holds
    /// yet, per peer and hour.
    pub fn open_tallies(&self) -> Result<Vec<OpenTally>, AuditError> {
        open_tallies(&self.conn)
    }

    /// Every rejected request the log accounts for, of one peer or of all:
    /// rejection rows, plus the counts of summary rows, plus the counts not
    /// yet summarized. A flood is bounded in rows but never in this number.
    pub fn rejections_accounted(&self, peer_uid: Option<u32>) -> Result<u64, AuditError> {
        accounted(&self.conn, Tallied::Rejections, peer_uid)
    }

    /// Every cancelled request (withdrawn, or its agent disconnected while
    /// it was pending) the log accounts for, as
    /// [`Audit::rejections_accounted`] does for rejections.
    pub fn cancellations_accounted(&self, peer_uid: Option<u32>) -> Result<u64, AuditError> {
        accounted(&self.conn, Tallied::Cancellations, peer_uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancellations_are_grouped_by_how_they_ended() {
        let c = Tallied::Cancellations;
        assert_eq!(c.code(None), "cancel_request");
        assert_eq!(c.code(Some("the agent disconnected")), "disconnected");
        assert_eq!(Tallied::of(EventKind::RequestCancelled), Some(c));
        assert_eq!(Tallied::of(EventKind::RequestExpired), None);
    }

    #[test]
    fn reason_codes_are_ours_or_other() {
        assert_eq!(reason_code(Some("bad_hash: the hash is wrong")), "bad_hash");
        assert_eq!(reason_code(Some("BAD: x")), "other");
        assert_eq!(reason_code(Some("no colon")), "other");
        assert_eq!(reason_code(None), "other");
        assert_eq!(
            reason_code(Some(&format!("{}: x", "a".repeat(33)))),
            "other"
        );
    }
}
