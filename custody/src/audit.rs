//! The audit log: one SQLite row per event, hash-chained.
//!
//! Everything custody signs or refuses is written here, so the human can see
//! afterwards what was issued, which grants are live and who asked
//! (ARCHITECTURE.md, "audit"). The file is `audit.sqlite3` in the data
//! directory, mode 0600, `journal_mode=WAL` (readers never block the writer)
//! and `synchronous=FULL` (an event reported as written survives a power cut).
//!
//! # The chain
//! Each row carries `prev` (the previous row's `row_hash`; [`GENESIS`] for
//! row 1) and `row_hash = b64url(SHA-256(prev ‖ C))`, where `prev` is taken as
//! its UTF-8 bytes and `C` is the canonical JSON (§10,
//! `parley_core::canonical`) of one object holding **every column except
//! `row_hash`**, under the column names: `seq, at, kind, peer_uid, peer_pid,
//! peer_exe, agent, service, capability, hash, cost_amount, cost_currency,
//! risk, undo, expires, token_id, caveats, reason, principal, prev`; absent
//! values are JSON `null`, integers are JSON integers, text is a JSON string
//! (so `C` has sorted keys, no whitespace, and the §10 escapes). See
//! [`Event::canonical_fields`].
//!
//! A one-row table `chain_head(count, last_seq, head)` is updated in the same
//! transaction as every append, so deleting the *last* rows (which leaves a
//! chain that is intact, only shorter) is detected too. `append` also checks
//! that the last row is the one the head records and refuses to write on a
//! tampered tail ([`AuditError::HeadMismatch`]), so the caller learns at once.
//!
//! # What this does and does not protect against
//! It is tamper-*evidence* against partial edits: a changed field, a deleted
//! or inserted row, truncation, each shows up in [`Audit::verify`] with the
//! first affected `seq`. It is **not** protection against an attacker who can
//! write the file as the custody user: such an attacker can recompute the
//! whole chain (the hash is unkeyed) and the head, or simply delete the
//! file. Defending against that needs the log shipped elsewhere (or the
//! head periodically signed and published), which is outside this module.
//! The agent runs as another OS user (ARCHITECTURE.md) and cannot open the
//! 0600 file at all.
//!
//! Text fields are stored exactly as given, hostile Unicode included: the
//! log is evidence, so it is never "cleaned"; whoever renders it must show
//! control and bidi characters visibly. Each field is bounded to
//! [`MAX_FIELD_BYTES`], refused (not truncated) beyond that.

use parley_core::b64;
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The `prev` of the first row.
pub const GENESIS: &str = "parley-custody/audit/v1/genesis";
/// The largest text field accepted, in bytes (64 KiB).
pub const MAX_FIELD_BYTES: usize = 64 * 1024;
/// Rows returned when a query names no limit.
pub const DEFAULT_LIMIT: u32 = 500;
/// The largest limit a query may ask for.
pub const MAX_LIMIT: u32 = 10_000;
/// The schema version in `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 1;
/// Integers are hashed as canonical JSON, which allows only ±(2^53−1).
const MAX_SAFE: i64 = parley_core::canonical::MAX_SAFE_INTEGER;

const COLUMNS: &str = "seq, at, kind, peer_uid, peer_pid, peer_exe, agent, service, capability, \
     hash, cost_amount, cost_currency, risk, undo, expires, token_id, caveats, reason, principal, \
     prev, row_hash";

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
    row_hash TEXT NOT NULL
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

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A root grant was signed.
    GrantIssued,
    /// The human denied a grant request.
    GrantDenied,
    /// A consent grant was signed.
    ConsentApproved,
    /// The human denied a consent request.
    ConsentDenied,
    /// Re-verification refused a request; it never reached the human.
    RequestRejected,
    /// A request expired while pending.
    RequestExpired,
    /// The agent cancelled a pending request.
    RequestCancelled,
    /// A principal key was created.
    KeyCreated,
    /// A principal key was imported.
    KeyImported,
    /// A principal key was deleted.
    KeyDeleted,
    /// The human approved, but OS authentication did not succeed: nothing
    /// was signed and the request stayed pending.
    StepUpFailed,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 11] = [
        EventKind::GrantIssued,
        EventKind::GrantDenied,
        EventKind::ConsentApproved,
        EventKind::ConsentDenied,
        EventKind::RequestRejected,
        EventKind::RequestExpired,
        EventKind::RequestCancelled,
        EventKind::KeyCreated,
        EventKind::KeyImported,
        EventKind::KeyDeleted,
        EventKind::StepUpFailed,
    ];

    /// The stored (and `--json`) name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::GrantIssued => "grant_issued",
            EventKind::GrantDenied => "grant_denied",
            EventKind::ConsentApproved => "consent_approved",
            EventKind::ConsentDenied => "consent_denied",
            EventKind::RequestRejected => "request_rejected",
            EventKind::RequestExpired => "request_expired",
            EventKind::RequestCancelled => "request_cancelled",
            EventKind::KeyCreated => "key_created",
            EventKind::KeyImported => "key_imported",
            EventKind::KeyDeleted => "key_deleted",
            EventKind::StepUpFailed => "step_up_failed",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown event kind name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind {0:?}; known kinds: grant_issued, grant_denied, consent_approved, consent_denied, request_rejected, request_expired, request_cancelled, key_created, key_imported, key_deleted, step_up_failed")]
pub struct UnknownKind(pub String);

impl FromStr for EventKind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Self, UnknownKind> {
        EventKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// An event to append. Every field but `kind` and `at` is optional; text is
/// stored exactly as given (bounded to [`MAX_FIELD_BYTES`]). Build one with
/// `NewEvent { agent: Some(..), ..NewEvent::new(kind, now) }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// What happened.
    pub kind: EventKind,
    /// When (unix seconds).
    pub at: i64,
    /// The requesting peer's uid (from the socket).
    pub peer_uid: Option<u32>,
    /// The requesting peer's pid.
    pub peer_pid: Option<i64>,
    /// The requesting peer's executable path.
    pub peer_exe: Option<String>,
    /// The agent key (`ed25519:…`).
    pub agent: Option<String>,
    /// The service id.
    pub service: Option<String>,
    /// The capability.
    pub capability: Option<String>,
    /// The proposal hash.
    pub hash: Option<String>,
    /// Cost amount in minor units.
    pub cost_amount: Option<i64>,
    /// Cost currency.
    pub cost_currency: Option<String>,
    /// Risk (low/medium/high).
    pub risk: Option<String>,
    /// Undo window in seconds; `None` = irreversible (or not applicable).
    pub undo: Option<i64>,
    /// When the grant or request expires (unix seconds).
    pub expires: Option<i64>,
    /// The grant id: b64url(SHA-256(root block signature)), computed by the caller.
    pub token_id: Option<String>,
    /// The caveats, as JSON text.
    pub caveats: Option<String>,
    /// Why (a rejection reason, a denial note, a key label).
    pub reason: Option<String>,
    /// The principal key.
    pub principal: Option<String>,
}

impl NewEvent {
    /// An event with only a kind and a time.
    pub fn new(kind: EventKind, at: i64) -> NewEvent {
        NewEvent {
            kind,
            at,
            peer_uid: None,
            peer_pid: None,
            peer_exe: None,
            agent: None,
            service: None,
            capability: None,
            hash: None,
            cost_amount: None,
            cost_currency: None,
            risk: None,
            undo: None,
            expires: None,
            token_id: None,
            caveats: None,
            reason: None,
            principal: None,
        }
    }
}

/// A stored event: the fields of [`NewEvent`] plus its place in the chain.
/// `Serialize` for `--json` and JSONL export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Position in the log, from 1, without gaps.
    pub seq: i64,
    /// When (unix seconds).
    pub at: i64,
    /// What happened.
    pub kind: EventKind,
    /// The requesting peer's uid.
    pub peer_uid: Option<u32>,
    /// The requesting peer's pid.
    pub peer_pid: Option<i64>,
    /// The requesting peer's executable path.
    pub peer_exe: Option<String>,
    /// The agent key.
    pub agent: Option<String>,
    /// The service id.
    pub service: Option<String>,
    /// The capability.
    pub capability: Option<String>,
    /// The proposal hash.
    pub hash: Option<String>,
    /// Cost amount in minor units.
    pub cost_amount: Option<i64>,
    /// Cost currency.
    pub cost_currency: Option<String>,
    /// Risk.
    pub risk: Option<String>,
    /// Undo window in seconds; `None` = irreversible.
    pub undo: Option<i64>,
    /// Expiry (unix seconds).
    pub expires: Option<i64>,
    /// The grant id.
    pub token_id: Option<String>,
    /// The caveats, as JSON text.
    pub caveats: Option<String>,
    /// Why.
    pub reason: Option<String>,
    /// The principal key.
    pub principal: Option<String>,
    /// The previous row's `row_hash` ([`GENESIS`] for row 1).
    pub prev: String,
    /// This row's hash (see the module docs).
    pub row_hash: String,
}

impl Event {
    /// `C` of the module docs: the canonical JSON of all columns except
    /// `row_hash`. Fails only for an integer outside ±(2^53−1), which
    /// `append` never stores.
    pub fn canonical_fields(&self) -> Result<String, AuditError> {
        let text = |v: &Option<String>| v.clone().map_or(serde_json::Value::Null, Into::into);
        let int = |v: Option<i64>| v.map_or(serde_json::Value::Null, Into::into);
        let mut m = serde_json::Map::new();
        m.insert("seq".into(), self.seq.into());
        m.insert("at".into(), self.at.into());
        m.insert("kind".into(), self.kind.as_str().into());
        m.insert("peer_uid".into(), int(self.peer_uid.map(i64::from)));
        m.insert("peer_pid".into(), int(self.peer_pid));
        m.insert("peer_exe".into(), text(&self.peer_exe));
        m.insert("agent".into(), text(&self.agent));
        m.insert("service".into(), text(&self.service));
        m.insert("capability".into(), text(&self.capability));
        m.insert("hash".into(), text(&self.hash));
        m.insert("cost_amount".into(), int(self.cost_amount));
        m.insert("cost_currency".into(), text(&self.cost_currency));
        m.insert("risk".into(), text(&self.risk));
        m.insert("undo".into(), int(self.undo));
        m.insert("expires".into(), int(self.expires));
        m.insert("token_id".into(), text(&self.token_id));
        m.insert("caveats".into(), text(&self.caveats));
        m.insert("reason".into(), text(&self.reason));
        m.insert("principal".into(), text(&self.principal));
        m.insert("prev".into(), self.prev.clone().into());
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

    /// One CSV record (no line terminator), columns as in [`CSV_HEADER`].
    /// Text is always quoted (`"` doubled); a text cell starting with
    /// `= + - @`, tab or CR gets a leading `'` so a spreadsheet shows it
    /// instead of evaluating it as a formula (hostile services choose
    /// these strings). Absent values are empty cells. Numbers are ours and
    /// written bare.
    pub fn to_csv_row(&self) -> String {
        let mut out = String::new();
        let mut first = true;
        let mut cell = |s: String| {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&s);
        };
        let int = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
        let text = |v: &Option<String>| v.as_deref().map(csv_text).unwrap_or_default();
        cell(self.seq.to_string());
        cell(self.at.to_string());
        cell(csv_text(self.kind.as_str()));
        cell(int(self.peer_uid.map(i64::from)));
        cell(int(self.peer_pid));
        cell(text(&self.peer_exe));
        cell(text(&self.agent));
        cell(text(&self.service));
        cell(text(&self.capability));
        cell(text(&self.hash));
        cell(int(self.cost_amount));
        cell(text(&self.cost_currency));
        cell(text(&self.risk));
        cell(int(self.undo));
        cell(int(self.expires));
        cell(text(&self.token_id));
        cell(text(&self.caveats));
        cell(text(&self.reason));
        cell(text(&self.principal));
        cell(csv_text(&self.prev));
        cell(csv_text(&self.row_hash));
        out
    }
}

/// The CSV header row, in column order.
pub const CSV_HEADER: &str = "seq,at,kind,peer_uid,peer_pid,peer_exe,agent,service,capability,hash,cost_amount,cost_currency,risk,undo,expires,token_id,caveats,reason,principal,prev,row_hash";

/// A quoted CSV cell, neutralized against formula injection.
fn csv_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    out.push('"');
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        out.push('\'');
    }
    out.push_str(&s.replace('"', "\"\""));
    out.push('"');
    out
}

/// Writes events as CSV (RFC 4180: header, CRLF line ends, quoted text).
pub fn export_csv(events: &[Event], mut w: impl Write) -> std::io::Result<()> {
    w.write_all(CSV_HEADER.as_bytes())?;
    w.write_all(b"\r\n")?;
    for e in events {
        w.write_all(e.to_csv_row().as_bytes())?;
        w.write_all(b"\r\n")?;
    }
    w.flush()
}

/// Writes events as JSON Lines, one object per line.
pub fn export_jsonl(events: &[Event], mut w: impl Write) -> std::io::Result<()> {
    for e in events {
        serde_json::to_writer(&mut w, e)?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

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
}

/// The connection's durability settings, as SQLite reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbSettings {
    /// `PRAGMA journal_mode` (expected `wal`).
    pub journal_mode: String,
    /// `PRAGMA synchronous` (expected 2 = FULL).
    pub synchronous: i64,
}

/// Why an audit operation failed. Nothing was written when `append` fails.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Opening or preparing the database failed.
    #[error("cannot open the audit log {path}: {source} (check the file and its directory belong to this user, and the disk is not full)")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A file permission operation failed.
    #[error("audit log {path}: {source}")]
    Io {
        /// The database file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The filesystem does not support WAL (e.g. some network filesystems).
    #[error("audit log {path}: SQLite could not switch to WAL journaling (it reports {mode:?}); keep the data directory on a local filesystem")]
    NoWal {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// A file written by a newer program.
    #[error("audit log {path} has format {version}, newer than this program understands ({SCHEMA_VERSION}); upgrade Parley Custody")]
    NewerFormat {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        version: i64,
    },
    /// Any other SQLite failure.
    #[error("audit log: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A field too large to store.
    #[error("audit field {field} is {len} bytes; at most {MAX_FIELD_BYTES} are stored (nothing was written)")]
    FieldTooLong {
        /// The column.
        field: &'static str,
        /// Its size in bytes.
        len: usize,
    },
    /// An integer outside ±(2^53−1), which canonical JSON cannot hash.
    #[error("audit field {field} is out of range: {detail} (nothing was written)")]
    OutOfRange {
        /// The column.
        field: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A query limit outside 1..=MAX_LIMIT.
    #[error("query limit {0} is out of range (1 to {MAX_LIMIT}); narrow the query with since/until instead")]
    Limit(u32),
    /// The chain head record is gone.
    #[error("the audit log's chain head record is missing, so the log was tampered with: keep this file as evidence (run verify) and start a new log elsewhere")]
    HeadMissing,
    /// The last row is not the one the chain head records.
    #[error("the audit log's last row does not match its recorded head (row {last_seq}), so it was tampered with: nothing was written; keep this file as evidence (run verify) and start a new log elsewhere")]
    HeadMismatch {
        /// The last `seq` the head records.
        last_seq: i64,
    },
    /// A stored row that cannot be read back (edited outside this program).
    #[error("audit row {seq} is malformed ({reason}); run verify")]
    Corrupt {
        /// The row.
        seq: i64,
        /// What was wrong.
        reason: String,
    },
}

/// An open audit log. One writer process at a time is assumed (appends are
/// also safe across processes: each is one `BEGIN IMMEDIATE` transaction).
pub struct Audit {
    conn: Connection,
    path: PathBuf,
}

impl fmt::Debug for Audit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Audit").field("path", &self.path).finish()
    }
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
        Ok(Audit {
            conn,
            path: path.to_path_buf(),
        })
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
    /// commit together or not at all). Oversized or out-of-range fields are
    /// refused before anything is written.
    pub fn append(&mut self, ev: &NewEvent) -> Result<Event, AuditError> {
        check_new_event(ev)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
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
            at: ev.at,
            kind: ev.kind,
            peer_uid: ev.peer_uid,
            peer_pid: ev.peer_pid,
            peer_exe: ev.peer_exe.clone(),
            agent: ev.agent.clone(),
            service: ev.service.clone(),
            capability: ev.capability.clone(),
            hash: ev.hash.clone(),
            cost_amount: ev.cost_amount,
            cost_currency: ev.cost_currency.clone(),
            risk: ev.risk.clone(),
            undo: ev.undo,
            expires: ev.expires,
            token_id: ev.token_id.clone(),
            caveats: ev.caveats.clone(),
            reason: ev.reason.clone(),
            principal: ev.principal.clone(),
            prev: head,
            row_hash: String::new(),
        };
        event.row_hash = event.compute_row_hash()?;
        let inserted = tx.execute(
            &format!(
                "INSERT INTO events ({COLUMNS}) VALUES \
                 (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)"
            ),
            params![
                event.seq,
                event.at,
                event.kind.as_str(),
                event.peer_uid,
                event.peer_pid,
                event.peer_exe,
                event.agent,
                event.service,
                event.capability,
                event.hash,
                event.cost_amount,
                event.cost_currency,
                event.risk,
                event.undo,
                event.expires,
                event.token_id,
                event.caveats,
                event.reason,
                event.principal,
                event.prev,
                event.row_hash,
            ],
        );
        inserted?;
        tx.execute(
            "UPDATE chain_head SET count = count + 1, last_seq = ?1, head = ?2 WHERE id = 1",
            params![seq, event.row_hash],
        )?;
        tx.commit()?;
        Ok(event)
    }

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

    /// Recomputes the chain from row 1 and checks it against the recorded
    /// head. Reports the first problem: an edited row (its hash no longer
    /// matches), a missing row (a gap in `seq`), a row that does not link to
    /// its predecessor (one of the two was replaced), rows deleted from the
    /// end or added after the head.
    pub fn verify(&self) -> Result<VerifyReport, AuditError> {
        let rows: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))?;
        let rows = u64::try_from(rows).unwrap_or(0);
        let bad = |seq: Option<i64>, problem: String| VerifyReport {
            rows,
            ok: false,
            first_bad_seq: seq,
            problem: Some(problem),
        };
        let head: Option<(i64, i64, String)> = self
            .conn
            .query_row(
                "SELECT count, last_seq, head FROM chain_head WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {COLUMNS} FROM events ORDER BY seq ASC"))?;
        let mut cursor = stmt.query([])?;
        let mut expected_seq: i64 = 1;
        let mut expected_prev = GENESIS.to_owned();
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
            match event.compute_row_hash() {
                Ok(h) if h == event.row_hash => {}
                _ => {
                    return Ok(bad(
                        Some(seq),
                        format!("row {seq} was edited: its contents do not match its hash"),
                    ))
                }
            }
            expected_prev = event.row_hash;
            expected_seq += 1;
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
        })
    }
}

/// Field bounds, checked before the transaction starts.
fn check_new_event(ev: &NewEvent) -> Result<(), AuditError> {
    let texts: [(&'static str, &Option<String>); 11] = [
        ("peer_exe", &ev.peer_exe),
        ("agent", &ev.agent),
        ("service", &ev.service),
        ("capability", &ev.capability),
        ("hash", &ev.hash),
        ("cost_currency", &ev.cost_currency),
        ("risk", &ev.risk),
        ("token_id", &ev.token_id),
        ("caveats", &ev.caveats),
        ("reason", &ev.reason),
        ("principal", &ev.principal),
    ];
    for (field, value) in texts {
        if let Some(v) = value {
            if v.len() > MAX_FIELD_BYTES {
                return Err(AuditError::FieldTooLong {
                    field,
                    len: v.len(),
                });
            }
        }
    }
    let ints: [(&'static str, Option<i64>); 5] = [
        ("at", Some(ev.at)),
        ("peer_pid", ev.peer_pid),
        ("cost_amount", ev.cost_amount),
        ("undo", ev.undo),
        ("expires", ev.expires),
    ];
    for (field, value) in ints {
        if let Some(v) = value {
            if !(-MAX_SAFE..=MAX_SAFE).contains(&v) {
                return Err(AuditError::OutOfRange {
                    field,
                    detail: format!("{v} is outside ±(2^53−1)"),
                });
            }
        }
    }
    Ok(())
}

/// Reads a row selected with [`COLUMNS`]; anything unreadable (a value of
/// the wrong type or range, an unknown kind) is reported as `Corrupt`.
fn read_event(row: &rusqlite::Row<'_>) -> Result<Event, AuditError> {
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
        prev: row.get(19).map_err(corrupt)?,
        row_hash: row.get(20).map_err(corrupt)?,
    })
}

/// Creates the database file 0600 before SQLite opens it (SQLite would use
/// the umask, often 0644), or tightens an existing one. SQLite gives its
/// `-wal` and `-shm` files the main file's permissions.
#[cfg(unix)]
fn create_private_file(path: &Path) -> Result<(), AuditError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    let mode = file.metadata().map_err(io)?.permissions().mode() & 0o777;
    if mode != 0o600 {
        if mode & 0o077 != 0 {
            tracing::warn!(file = %path.display(), mode = format!("{mode:o}"), "audit log was accessible to other users; setting it to 0600");
        }
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(io)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn create_private_file(_path: &Path) -> Result<(), AuditError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in EventKind::ALL {
            assert_eq!(k.as_str().parse::<EventKind>().unwrap(), k);
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::String(k.as_str().into())
            );
        }
        assert!("grant".parse::<EventKind>().is_err());
    }

    #[test]
    fn csv_cells_are_quoted_and_neutralized() {
        assert_eq!(csv_text("plain"), "\"plain\"");
        assert_eq!(csv_text("a\"b,c\nd"), "\"a\"\"b,c\nd\"");
        for f in ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"] {
            assert!(csv_text(f).starts_with("\"'"), "{f:?}");
        }
    }

    #[test]
    fn canonical_encoding_is_the_documented_one() {
        let e = Event {
            seq: 1,
            at: 10,
            kind: EventKind::KeyCreated,
            peer_uid: None,
            peer_pid: None,
            peer_exe: None,
            agent: None,
            service: None,
            capability: None,
            hash: None,
            cost_amount: Some(-5),
            cost_currency: None,
            risk: None,
            undo: None,
            expires: None,
            token_id: None,
            caveats: None,
            reason: Some("é\u{0}\"".into()),
            principal: None,
            prev: GENESIS.into(),
            row_hash: String::new(),
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
}
