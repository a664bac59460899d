//! The SQLite store: opening the file (0600, WAL, `synchronous=FULL`), the
//! schema and its migrations, appending a row to the chain
//! ([`Audit::append`], [`Audit::record`]) and reading a row back.
//!
//! Everything that knows the table layout of `audit.sqlite3` is here. A new
//! column is a field of [`NewEvent`] (the one definition of what a row says:
//! the hash, the exports and the app's view take it from there), its column
//! here (schema, migration, [`COLUMNS`], [`read_event`]) and, since it must
//! not change old rows' hashes, a name in `chain`'s later columns. The tests
//! below fail while the column lists and the struct disagree.

use super::event::prepare;
use super::{retention, space, Audit, AuditError, Event, NewEvent, Recorded, UnknownKind, GENESIS};
use parley_custody_client::private_fs;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use std::path::Path;

/// The schema version in `PRAGMA user_version`.
pub(super) const SCHEMA_VERSION: i64 = 4;

/// The columns of `events`, in the order [`read_event`] reads them.
pub(super) const COLUMNS: &str =
    "seq, at, kind, peer_uid, peer_pid, peer_exe, agent, service, capability, \
     hash, cost_amount, cost_currency, risk, undo, expires, token_id, caveats, reason, principal, \
     prev, row_hash, confirmed_by, cut, count, span_start, span_end, compacted_by, peer_chain, \
     for_a_while";

/// The columns a new row is written with: all but `compacted_by`.
const INSERT_COLUMNS: &str = "seq, at, kind, peer_uid, peer_pid, peer_exe, agent, service, \
     capability, hash, cost_amount, cost_currency, risk, undo, expires, token_id, caveats, reason, \
     principal, prev, row_hash, confirmed_by, cut, count, span_start, span_end, peer_chain, \
     for_a_while";

/// The columns formats 2, 3 and 4 added, with their types (the migration
/// adds them to an older table).
const ADDED_COLUMNS: [(&str, &str); 8] = [
    ("confirmed_by", "TEXT"),
    ("cut", "TEXT"),
    ("count", "INTEGER"),
    ("span_start", "INTEGER"),
    ("span_end", "INTEGER"),
    ("compacted_by", "INTEGER"),
    ("peer_chain", "TEXT"),
    ("for_a_while", "INTEGER"),
];

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    peer_uid INTEGER,
    peer_pid INTEGER,
    peer_exe TEXT,
    agent TEXT,
    service TEXT,
    capability TEXT,
    hash TEXT,
    cost_amount INTEGER,
    cost_currency TEXT,
    risk TEXT,
    undo INTEGER,
    expires INTEGER,
    token_id TEXT,
    caveats TEXT,
    reason TEXT,
    principal TEXT,
    prev TEXT NOT NULL,
    row_hash TEXT NOT NULL,
    confirmed_by TEXT,
    cut TEXT,
    count INTEGER,
    span_start INTEGER,
    span_end INTEGER,
    compacted_by INTEGER,
    peer_chain TEXT,
    for_a_while INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS events_at ON events(at);
CREATE INDEX IF NOT EXISTS events_agent ON events(agent);
CREATE INDEX IF NOT EXISTS events_kind_expires ON events(kind, expires);
CREATE TABLE IF NOT EXISTS chain_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    count INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    head TEXT NOT NULL
) STRICT;
";

/// Tables of format 2 that are not part of the chain (created after the
/// migration of `events`).
const SCHEMA_V2: &str = "
CREATE INDEX IF NOT EXISTS events_kind_uid_at ON events(kind, peer_uid, at);
CREATE INDEX IF NOT EXISTS events_compacted_by ON events(compacted_by) WHERE compacted_by IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_token_id ON events(token_id) WHERE token_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_for_a_while ON events(expires) WHERE for_a_while IS NOT NULL;
CREATE TABLE IF NOT EXISTS checkpoint (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    row_hash TEXT NOT NULL,
    at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS rejection_tally (
    peer_uid INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    logged INTEGER NOT NULL,
    counted INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    first_at INTEGER,
    last_at INTEGER,
    PRIMARY KEY (peer_uid, hour)
) STRICT;
CREATE TABLE IF NOT EXISTS cancel_tally (
    peer_uid INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    logged INTEGER NOT NULL,
    counted INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    first_at INTEGER,
    last_at INTEGER,
    PRIMARY KEY (peer_uid, hour)
) STRICT;
CREATE TABLE IF NOT EXISTS paused_agents (
    agent TEXT PRIMARY KEY,
    until INTEGER,
    reason TEXT NOT NULL,
    at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS agent_labels (
    agent TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS custody_frozen (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL,
    reason TEXT NOT NULL,
    refused INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE TABLE IF NOT EXISTS revoked_grants (
    token_id TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    reason TEXT NOT NULL,
    statement TEXT NOT NULL
) STRICT;
";

/// The connection's durability settings, as SQLite reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbSettings {
    /// `PRAGMA journal_mode` (expected `wal`).
    pub journal_mode: String,
    /// `PRAGMA synchronous` (expected 2 = FULL).
    pub synchronous: i64,
}

impl Audit {
    /// Opens (creating if needed, mode 0600) the log at `path`, sets WAL and
    /// `synchronous=FULL` and checks they took effect, and prepares the schema.
    pub fn open(path: &Path) -> Result<Audit, AuditError> {
        create_private_file(path)?;
        let open_err = |source| AuditError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_err)?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(AuditError::NoWal {
                path: path.to_path_buf(),
                mode,
            });
        }
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(open_err)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(open_err)?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(open_err)?;
        if version > SCHEMA_VERSION {
            return Err(AuditError::NewerFormat {
                path: path.to_path_buf(),
                version,
            });
        }
        tx.execute_batch(SCHEMA).map_err(open_err)?;
        migrate_events(&tx).map_err(open_err)?;
        tx.execute_batch(SCHEMA_V2).map_err(open_err)?;
        let has_head: bool = tx
            .query_row("SELECT EXISTS(SELECT 1 FROM chain_head)", [], |r| r.get(0))
            .map_err(open_err)?;
        let has_rows: bool = tx
            .query_row("SELECT EXISTS(SELECT 1 FROM events)", [], |r| r.get(0))
            .map_err(open_err)?;
        // A fresh log gets its head; a log with rows but no head was tampered
        // with and keeps no head (verify reports it, append refuses).
        if !has_head && !has_rows {
            tx.execute(
                "INSERT INTO chain_head (id, count, last_seq, head) VALUES (1, 0, 0, ?1)",
                params![GENESIS],
            )
            .map_err(open_err)?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(open_err)?;
        tx.commit().map_err(open_err)?;
        let retention = retention::load(&conn)?.unwrap_or_default();
        Ok(Audit {
            conn,
            path: path.to_path_buf(),
            retention,
            compacted_hour: None,
        })
    }

    /// Empties this connection's page cache. SQLite keeps up to 2 MiB of
    /// the file's pages, and the log only grows, so a long-lived service's
    /// memory rose with each decision (issue 28). For quiet moments: the next
    /// query reads its pages again, from the OS's file cache.
    pub fn release_cache(&self) -> Result<(), AuditError> {
        self.conn.release_memory()?;
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The durability settings in effect on this connection.
    pub fn settings(&self) -> Result<DbSettings, AuditError> {
        Ok(DbSettings {
            journal_mode: self
                .conn
                .pragma_query_value(None, "journal_mode", |r| r.get(0))?,
            synchronous: self
                .conn
                .pragma_query_value(None, "synchronous", |r| r.get(0))?,
        })
    }

    /// Appends one event, chained to the recorded head, in one `BEGIN
    /// IMMEDIATE` transaction (the head read, the insert and the head update
    /// commit together or not at all). Fields are bounded first (see the
    /// [`crate::audit`] docs): a signed or key event with an oversized field, or any
    /// event with an out-of-range integer, is refused before anything is
    /// written; any other event's oversized fields are cut. No retention:
    /// the engine writes through [`Audit::record`].
    pub fn append(&mut self, ev: &NewEvent) -> Result<Event, AuditError> {
        let (ev, cut) = prepare(ev)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let event = append_in(&tx, &ev, cut)?;
        tx.commit()?;
        Ok(event)
    }

    /// Writes one event under the [`super::RetentionPolicy`]: a rejection (or
    /// a cancelled request) beyond the policy's rows for its peer and hour is
    /// counted instead of written
    /// (the count is committed before this returns, and becomes part of one
    /// summary row when the hour is over); everything else is appended.
    /// Hours that are over are summarized first, in the same transaction.
    pub fn record(&mut self, ev: &NewEvent) -> Result<Recorded, AuditError> {
        let (ev, cut) = prepare(ev)?;
        let policy = self.retention;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        retention::close_hours(&tx, ev.at, policy, false)?;
        let out = if let Some(what) = retention::Tallied::of(ev.kind) {
            let mut tally = retention::Tally::load(&tx, what, ev.peer_uid, ev.at)?;
            if tally.logged < u64::from(policy.rejections_per_hour) {
                let event = append_in(&tx, &ev, cut)?;
                tally.logged += 1;
                tally.store(&tx)?;
                Recorded::Logged(Box::new(event))
            } else {
                tally.count(ev.reason.as_deref(), ev.at);
                tally.store(&tx)?;
                Recorded::Counted {
                    peer_uid: ev.peer_uid,
                    hour_start: tally.hour * 3600,
                }
            }
        } else {
            Recorded::Logged(Box::new(append_in(&tx, &ev, cut)?))
        };
        tx.commit()?;
        let hour = ev.at.div_euclid(3600);
        if policy.compact_after_days.is_some() && self.compacted_hour != Some(hour) {
            self.compacted_hour = Some(hour);
            // The event is written; a failed compaction is retried next hour.
            if let Err(e) = self.compact(ev.at) {
                tracing::error!("audit compaction failed: {e}");
            }
        }
        Ok(out)
    }

    /// Whether one more row can be written: the filesystem holding the log
    /// has at least [`super::MIN_FREE_BYTES`] available and neither the file nor
    /// the filesystem is read-only. The engine calls this right before it
    /// signs, so a full disk refuses the decision instead of producing a
    /// signature no row records.
    pub fn ready_to_record(&self) -> Result<(), AuditError> {
        if self.conn.is_readonly(rusqlite::DatabaseName::Main)? {
            return Err(AuditError::ReadOnly {
                path: self.path.clone(),
                why: "SQLite opened it read-only",
            });
        }
        space::check(&self.path)
    }
}

/// Adds the columns of formats 2 to 4 to an older `events` table (existing
/// rows get `NULL`, which leaves their hashes as they were).
fn migrate_events(tx: &rusqlite::Transaction<'_>) -> Result<(), rusqlite::Error> {
    let mut have = Vec::new();
    {
        let mut stmt = tx.prepare("SELECT name FROM pragma_table_info('events')")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            have.push(r.get::<_, String>(0)?);
        }
    }
    for (name, ty) in ADDED_COLUMNS {
        if !have.iter().any(|h| h == name) {
            tx.execute_batch(&format!("ALTER TABLE events ADD COLUMN {name} {ty}"))?;
        }
    }
    Ok(())
}

/// Appends inside `tx` (the caller commits): checks the tail against the
/// head, chains, inserts and moves the head.
pub(super) fn append_in(
    tx: &rusqlite::Transaction<'_>,
    ev: &NewEvent,
    cut: Option<String>,
) -> Result<Event, AuditError> {
    let (last_seq, head): (i64, String) = tx
        .query_row(
            "SELECT last_seq, head FROM chain_head WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .ok_or(AuditError::HeadMissing)?;
    // The last row must be the one the head records. Anything else (rows
    // deleted from the end, a row forged after the head, the last row
    // replaced) is tampering: refuse to write on top of it, so the break
    // stays where verify can name it and the caller learns at once.
    let tail: Option<(i64, String)> = tx
        .query_row(
            "SELECT seq, row_hash FROM events ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let consistent = match &tail {
        None => last_seq == 0,
        Some((seq, hash)) => *seq == last_seq && *hash == head,
    };
    if !consistent {
        return Err(AuditError::HeadMismatch { last_seq });
    }
    let seq = last_seq + 1;
    let mut event = Event {
        seq,
        event: ev.clone(),
        prev: head,
        row_hash: String::new(),
        cut,
        compacted_by: None,
    };
    event.row_hash = event.compute_row_hash()?;
    let columns = event.columns();
    let values = INSERT_COLUMNS
        .split(", ")
        .map(|name| match columns.get(name) {
            Some(serde_json::Value::String(t)) => Ok(SqlValue::Text(t.clone())),
            Some(serde_json::Value::Number(n)) => {
                n.as_i64()
                    .map(SqlValue::Integer)
                    .ok_or(AuditError::OutOfRange {
                        field: "an integer field",
                        detail: format!("{name} = {n} is not an integer"),
                    })
            }
            Some(serde_json::Value::Null) => Ok(SqlValue::Null),
            _ => Err(AuditError::OutOfRange {
                field: "a column",
                detail: format!("{name} is not a field of the event"),
            }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    tx.execute(&insert_sql(), rusqlite::params_from_iter(values))?;
    tx.execute(
        "UPDATE chain_head SET count = count + 1, last_seq = ?1, head = ?2 WHERE id = 1",
        params![seq, event.row_hash],
    )?;
    Ok(event)
}

/// Reads a row selected with [`COLUMNS`]; anything unreadable (a value of
/// the wrong type or range, an unknown kind) is reported as `Corrupt`.
pub(super) fn read_event(row: &rusqlite::Row<'_>) -> Result<Event, AuditError> {
    let seq: i64 = row.get(0)?;
    let corrupt = |e: rusqlite::Error| AuditError::Corrupt {
        seq,
        reason: e.to_string(),
    };
    let kind_text: String = row.get(2).map_err(corrupt)?;
    let kind = kind_text
        .parse()
        .map_err(|e: UnknownKind| AuditError::Corrupt {
            seq,
            reason: e.to_string(),
        })?;
    Ok(Event {
        seq,
        event: NewEvent {
            at: row.get(1).map_err(corrupt)?,
            kind,
            peer_uid: row.get(3).map_err(corrupt)?,
            peer_pid: row.get(4).map_err(corrupt)?,
            peer_exe: row.get(5).map_err(corrupt)?,
            agent: row.get(6).map_err(corrupt)?,
            service: row.get(7).map_err(corrupt)?,
            capability: row.get(8).map_err(corrupt)?,
            hash: row.get(9).map_err(corrupt)?,
            cost_amount: row.get(10).map_err(corrupt)?,
            cost_currency: row.get(11).map_err(corrupt)?,
            risk: row.get(12).map_err(corrupt)?,
            undo: row.get(13).map_err(corrupt)?,
            expires: row.get(14).map_err(corrupt)?,
            token_id: row.get(15).map_err(corrupt)?,
            caveats: row.get(16).map_err(corrupt)?,
            reason: row.get(17).map_err(corrupt)?,
            principal: row.get(18).map_err(corrupt)?,
            confirmed_by: row.get(21).map_err(corrupt)?,
            count: row.get(23).map_err(corrupt)?,
            span_start: row.get(24).map_err(corrupt)?,
            span_end: row.get(25).map_err(corrupt)?,
            peer_chain: row.get(27).map_err(corrupt)?,
            for_a_while: row.get(28).map_err(corrupt)?,
        },
        prev: row.get(19).map_err(corrupt)?,
        row_hash: row.get(20).map_err(corrupt)?,
        cut: row.get(22).map_err(corrupt)?,
        compacted_by: row.get(26).map_err(corrupt)?,
    })
}

/// `INSERT INTO events (INSERT_COLUMNS) VALUES (?1, …)`, one parameter per column.
fn insert_sql() -> String {
    let n = INSERT_COLUMNS.split(", ").count();
    let params: Vec<String> = (1..=n).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO events ({INSERT_COLUMNS}) VALUES ({})",
        params.join(", ")
    )
}

/// Creates the database file 0600 before SQLite opens it (SQLite would use
/// the umask, often 0644), or tightens an existing one, with a warning in the
/// log if others had access. SQLite gives its `-wal` and `-shm` files the
/// main file's permissions.
fn create_private_file(path: &Path) -> Result<(), AuditError> {
    let (_, tightened) = private_fs::open_or_create(path).map_err(|source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(t) = tightened.filter(|t| t.was_exposed()) {
        tracing::warn!(file = %path.display(), mode = format!("{:o}", t.was), "audit log was accessible to other users; setting it to 0600");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{EventKind, Query};

    fn names(list: &str) -> Vec<String> {
        let mut v: Vec<String> = list.split(',').map(|n| n.trim().to_owned()).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn the_column_lists_name_every_field_of_an_event() {
        let e = Event {
            seq: 1,
            event: NewEvent::new(EventKind::KeyCreated, 1),
            prev: String::new(),
            row_hash: String::new(),
            cut: None,
            compacted_by: None,
        };
        let mut fields: Vec<String> = e.columns().keys().cloned().collect();
        fields.sort_unstable();
        assert_eq!(names(COLUMNS), fields, "COLUMNS");
        fields.retain(|f| f != "compacted_by");
        assert_eq!(names(INSERT_COLUMNS), fields, "INSERT_COLUMNS");
    }

    /// Emptying the page cache at a quiet moment loses nothing: the log
    /// reads, verifies and takes the next row as before.
    #[test]
    fn an_emptied_page_cache_leaves_the_log_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        for t in 0..200 {
            a.append(&NewEvent::new(EventKind::GrantDenied, t)).unwrap();
        }
        assert_eq!(a.query(&Query::default()).unwrap().len(), 200);
        a.release_cache().unwrap();
        assert!(a.verify().unwrap().ok);
        a.append(&NewEvent::new(EventKind::GrantDenied, 200))
            .unwrap();
        assert_eq!(a.query(&Query::default()).unwrap().len(), 201);
    }

    /// A format 3 file (no `for_a_while` column) opens: the column is
    /// added, its rows keep their hashes, and a short grant written after
    /// it is found live.
    #[test]
    fn a_format_3_log_opens_and_takes_short_grants() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.sqlite3");
        {
            let mut a = Audit::open(&path).unwrap();
            let mut ev = NewEvent::new(EventKind::GrantIssued, 10);
            ev.token_id = Some("old".into());
            ev.expires = Some(i64::from(u32::MAX));
            a.append(&ev).unwrap();
        }
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "DROP INDEX events_for_a_while; ALTER TABLE events DROP COLUMN for_a_while; \
                 PRAGMA user_version = 3;",
            )
            .unwrap();
        }
        let mut a = Audit::open(&path).unwrap();
        assert!(a.verify().unwrap().ok);
        assert!(a.live_short_grants(20).unwrap().is_empty());
        let mut ev = NewEvent::new(EventKind::GrantIssued, 20);
        ev.token_id = Some("short".into());
        ev.expires = Some(1000);
        ev.for_a_while = Some(15);
        a.append(&ev).unwrap();
        assert!(a.verify().unwrap().ok);
        let live = a.live_short_grants(30).unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].token_id(), "short");
        let version: i64 = a
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }
}
