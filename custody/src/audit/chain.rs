//! The hash chain: the canonical fields of a row and its hash, the digest a
//! compaction row carries, and verification ([`Audit::verify`],
//! [`Audit::verify_incremental`]) with its [`VerifyReport`].
//!
//! This is the part of the log that makes it tamper-evident (see "The chain"
//! in the [`crate::audit`] docs). It lives on its own because every row hash
//! ever written depends on it byte for byte: a change here is a change of the
//! file format, and should be impossible to make by accident while editing
//! the store or an export.

use super::store::{read_event, COLUMNS};
use super::{Audit, AuditError, Event, EventKind};
use parley_core::b64;
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The `prev` of the first row.
pub const GENESIS: &str = "parley-custody/audit/v1/genesis";

/// The columns formats 2, 3 and 4 added: they enter a row's hash only when
/// they hold a value, so rows written before them keep their hash.
const LATER_COLUMNS: [&str; 7] = [
    "confirmed_by",
    "cut",
    "count",
    "span_start",
    "span_end",
    "peer_chain",
    "for_a_while",
];

impl Event {
    /// `C` of the [`crate::audit`] docs: the canonical JSON of all columns except
    /// `row_hash`. Fails only for an integer outside ±(2^53−1), which
    /// `append` never stores.
    pub fn canonical_fields(&self) -> Result<String, AuditError> {
        let mut m = self.columns();
        m.remove("row_hash");
        // Set after the row was hashed; the compaction row vouches for it.
        m.remove("compacted_by");
        // Format 2, 3 and 4 columns: only when set, so older rows keep their hash.
        for later in LATER_COLUMNS {
            if m.get(later).is_some_and(serde_json::Value::is_null) {
                m.remove(later);
            }
        }
        parley_core::canonical::canonical(&serde_json::Value::Object(m)).map_err(|e| {
            AuditError::OutOfRange {
                field: "an integer field",
                detail: e.to_string(),
            }
        })
    }

    /// What `row_hash` should be: b64url(SHA-256(prev ‖ canonical_fields)).
    pub fn compute_row_hash(&self) -> Result<String, AuditError> {
        let fields = self.canonical_fields()?;
        let mut h = Sha256::new();
        h.update(self.prev.as_bytes());
        h.update(fields.as_bytes());
        Ok(b64::encode(h.finalize()))
    }
}

/// The result of [`Audit::verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Rows in the log.
    pub rows: u64,
    /// Whether the whole chain and its head check out.
    pub ok: bool,
    /// The first `seq` that is wrong, missing or extra (if one can be named).
    pub first_bad_seq: Option<i64>,
    /// What is wrong, for a human.
    pub problem: Option<String>,
    /// Whether every row was re-hashed (else only those from `checked_from`).
    pub full: bool,
    /// The first row this check re-hashed (rows before it were verified
    /// earlier, up to the checkpoint).
    pub checked_from: i64,
    /// The verified end of the chain `(seq, row_hash)`, when `ok`.
    #[serde(skip)]
    pub head: Option<(i64, String)>,
}

impl Audit {
    /// Recomputes the whole chain from row 1 and checks it against the
    /// recorded head. Reports the first problem: an edited row (its hash no
    /// longer matches), a missing row (a gap in `seq`), a row that does not
    /// link to its predecessor (one of the two was replaced), rows deleted
    /// from the end or added after the head. On success the last row becomes
    /// the checkpoint of [`Audit::verify_incremental`].
    pub fn verify(&self) -> Result<VerifyReport, AuditError> {
        let report = self.walk(None)?;
        self.store_checkpoint(&report);
        Ok(report)
    }

    /// Like [`Audit::verify`], but re-hashes only the rows after the
    /// checkpoint (the last row a successful verify saw), once it has
    /// checked that the checkpoint row still carries the recorded hash.
    /// What it cannot see: a row before the checkpoint edited together with
    /// its stored hash and its successors' links. [`Audit::verify`] (full)
    /// finds that. With no checkpoint yet this is a full verify.
    pub fn verify_incremental(&self) -> Result<VerifyReport, AuditError> {
        let checkpoint: Option<(i64, String)> = self
            .conn
            .query_row(
                "SELECT seq, row_hash FROM checkpoint WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let report = self.walk(checkpoint)?;
        self.store_checkpoint(&report);
        Ok(report)
    }

    /// The row the next incremental verify starts after, if any.
    pub fn checkpoint(&self) -> Result<Option<i64>, AuditError> {
        Ok(self
            .conn
            .query_row("SELECT seq FROM checkpoint WHERE id = 1", [], |r| r.get(0))
            .optional()?)
    }

    /// Moves the checkpoint to the end of a chain that verified. A failure
    /// (a read-only copy of the log) only means the next verify starts
    /// earlier.
    fn store_checkpoint(&self, report: &VerifyReport) {
        let (true, Some((seq, hash))) = (report.ok, report.head.clone()) else {
            return;
        };
        let stored = self.conn.execute(
            "INSERT INTO checkpoint (id, seq, row_hash, at) VALUES (1, ?1, ?2, unixepoch()) \
             ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, row_hash = excluded.row_hash, at = excluded.at",
            params![seq, hash],
        );
        if let Err(e) = stored {
            tracing::debug!("the audit checkpoint was not moved: {e}");
        }
    }

    /// Verifies from `from` (a checkpoint `(seq, row_hash)`; `None` = row
    /// 1), in one read transaction so a concurrent append cannot look like
    /// tampering.
    fn walk(&self, from: Option<(i64, String)>) -> Result<VerifyReport, AuditError> {
        let tx = self.conn.unchecked_transaction()?;
        let rows: i64 = tx.query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))?;
        let rows = u64::try_from(rows).unwrap_or(0);
        let full = from.is_none();
        let (start_seq, start_prev) = from.clone().unwrap_or((0, GENESIS.to_owned()));
        let bad = |seq: Option<i64>, problem: String| VerifyReport {
            rows,
            ok: false,
            first_bad_seq: seq,
            problem: Some(problem),
            full,
            checked_from: start_seq + 1,
            head: None,
        };
        if let Some((seq, hash)) = &from {
            let stored: Option<String> = tx
                .query_row("SELECT row_hash FROM events WHERE seq = ?1", [seq], |r| {
                    r.get(0)
                })
                .optional()?;
            if stored.as_ref() != Some(hash) {
                return Ok(bad(
                    Some(*seq),
                    format!(
                        "row {seq}, the last verified row (checkpoint), was changed or deleted since it was verified; run a full verify"
                    ),
                ));
            }
        }
        let head: Option<(i64, i64, String)> = tx
            .query_row(
                "SELECT count, last_seq, head FROM chain_head WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let mut stmt = tx.prepare(&format!(
            "SELECT {COLUMNS} FROM events WHERE seq > ?1 ORDER BY seq ASC"
        ))?;
        let mut cursor = stmt.query([start_seq])?;
        let mut expected_seq: i64 = start_seq + 1;
        let mut expected_prev = start_prev;
        // Compaction rows named by compacted rows, not reached yet.
        let mut vouched = std::collections::BTreeSet::new();
        while let Some(row) = cursor.next()? {
            let seq: i64 = row.get(0)?;
            if seq != expected_seq {
                let problem = if seq > expected_seq {
                    format!("row {expected_seq} is missing (deleted): the next row is {seq}")
                } else {
                    format!("row {seq} is out of order")
                };
                return Ok(bad(Some(expected_seq), problem));
            }
            let event = match read_event(row) {
                Ok(e) => e,
                Err(e) => return Ok(bad(Some(seq), format!("row {seq} was edited: {e}"))),
            };
            if event.prev != expected_prev {
                let problem = if seq == 1 {
                    "row 1 does not start from the genesis value: it was replaced".to_owned()
                } else {
                    format!(
                        "row {seq} does not link to row {}: one of them was replaced",
                        seq - 1
                    )
                };
                return Ok(bad(Some(seq), problem));
            }
            if let Some(by) = event.compacted_by {
                // A compacted row: its contents are gone, so its hash is
                // taken as stored; the compaction row `by` (later in the
                // chain, itself hashed) vouches for it with its digest.
                if by <= seq || !event.kind.is_compactable() {
                    return Ok(bad(
                        Some(seq),
                        format!(
                            "row {seq} ({}) is marked compacted by row {by}, which it cannot be",
                            event.kind
                        ),
                    ));
                }
                vouched.insert(by);
            } else {
                match event.compute_row_hash() {
                    Ok(h) if h == event.row_hash => {}
                    _ => {
                        return Ok(bad(
                            Some(seq),
                            format!("row {seq} was edited: its contents do not match its hash"),
                        ))
                    }
                }
            }
            if event.kind == EventKind::AuditCompacted {
                let (digest, n) = compaction_digest(&tx, seq)?;
                if event.hash.as_deref() != Some(digest.as_str()) || event.count != Some(n) {
                    return Ok(bad(
                        Some(seq),
                        format!("row {seq} (a compaction) does not match the rows marked as compacted by it: a row was compacted behind its back, or restored"),
                    ));
                }
                vouched.remove(&seq);
            }
            expected_prev = event.row_hash;
            expected_seq += 1;
        }
        if let Some(by) = vouched.first() {
            return Ok(bad(
                Some(*by),
                format!("rows are marked compacted by row {by}, which is no compaction row"),
            ));
        }
        let last_seq = expected_seq - 1;
        let Some((count, head_seq, head_hash)) = head else {
            return Ok(bad(
                None,
                "the chain head record is missing (deleted)".to_owned(),
            ));
        };
        if head_seq > last_seq {
            return Ok(bad(
                Some(last_seq + 1),
                format!(
                    "rows {}..={head_seq} were deleted from the end of the log",
                    last_seq + 1
                ),
            ));
        }
        if head_seq < last_seq {
            return Ok(bad(
                Some(head_seq + 1),
                format!(
                    "row {} and later were added after the recorded head (forged)",
                    head_seq + 1
                ),
            ));
        }
        if head_hash != expected_prev || u64::try_from(count).ok() != Some(rows) {
            return Ok(bad(
                Some(last_seq),
                format!("the chain head does not match row {last_seq}: the head or that row was replaced"),
            ));
        }
        Ok(VerifyReport {
            rows,
            ok: true,
            first_bad_seq: None,
            problem: None,
            full,
            checked_from: start_seq + 1,
            head: (last_seq > 0).then_some((last_seq, expected_prev)),
        })
    }
}

/// The digest a compaction row carries, over the rows marked as compacted
/// by it and everything they keep: b64url(SHA-256 of the canonical JSON
/// array of `[seq, at, kind, peer_uid, count, span_start, span_end,
/// row_hash]` per row, in `seq` order), and their number. So a kept field
/// changed afterwards (a lowered count) breaks the compaction row too.
pub(super) fn compaction_digest(conn: &Connection, by: i64) -> Result<(String, i64), AuditError> {
    let mut stmt = conn.prepare(
        "SELECT seq, at, kind, peer_uid, count, span_start, span_end, row_hash \
         FROM events WHERE compacted_by = ?1 ORDER BY seq ASC",
    )?;
    let mut rows = stmt.query([by])?;
    let mut kept = Vec::new();
    while let Some(r) = rows.next()? {
        let int = |i: usize| -> Result<serde_json::Value, rusqlite::Error> {
            Ok(r.get::<_, Option<i64>>(i)?
                .map_or(serde_json::Value::Null, Into::into))
        };
        kept.push(serde_json::Value::Array(vec![
            int(0)?,
            int(1)?,
            r.get::<_, String>(2)?.into(),
            int(3)?,
            int(4)?,
            int(5)?,
            int(6)?,
            r.get::<_, String>(7)?.into(),
        ]));
    }
    let n = kept.len() as i64;
    let text = parley_core::canonical::canonical(&serde_json::Value::Array(kept)).map_err(|e| {
        AuditError::OutOfRange {
            field: "a compacted row",
            detail: e.to_string(),
        }
    })?;
    Ok((b64::encode(Sha256::digest(text.as_bytes())), n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::NewEvent;

    #[test]
    fn canonical_encoding_is_the_documented_one() {
        let e = Event {
            seq: 1,
            event: NewEvent {
                cost_amount: Some(-5),
                reason: Some("é\u{0}\"".into()),
                ..NewEvent::new(EventKind::KeyCreated, 10)
            },
            prev: GENESIS.into(),
            row_hash: String::new(),
            cut: None,
            compacted_by: None,
        };
        assert_eq!(
            e.canonical_fields().unwrap(),
            "{\"agent\":null,\"at\":10,\"capability\":null,\"caveats\":null,\"cost_amount\":-5,\
             \"cost_currency\":null,\"expires\":null,\"hash\":null,\"kind\":\"key_created\",\
             \"peer_exe\":null,\"peer_pid\":null,\"peer_uid\":null,\
             \"prev\":\"parley-custody/audit/v1/genesis\",\"principal\":null,\
             \"reason\":\"é\\u0000\\\"\",\"risk\":null,\"seq\":1,\"service\":null,\
             \"token_id\":null,\"undo\":null}"
        );
        let mut h = Sha256::new();
        h.update(GENESIS.as_bytes());
        h.update(e.canonical_fields().unwrap().as_bytes());
        assert_eq!(e.compute_row_hash().unwrap(), b64::encode(h.finalize()));
    }

    #[test]
    fn format_2_columns_enter_the_hash_only_when_set() {
        let mut e = Event {
            seq: 1,
            event: NewEvent::new(EventKind::GrantIssued, 10),
            prev: GENESIS.into(),
            row_hash: String::new(),
            cut: None,
            compacted_by: Some(9),
        };
        let v1 = e.canonical_fields().unwrap();
        assert!(!v1.contains("confirmed_by") && !v1.contains("compacted_by"));
        e.event.confirmed_by = Some("click".into());
        e.event.count = Some(3);
        let v2 = e.canonical_fields().unwrap();
        assert!(v2.contains("\"confirmed_by\":\"click\"") && v2.contains("\"count\":3"));
        assert_ne!(v1, v2);
    }
}
