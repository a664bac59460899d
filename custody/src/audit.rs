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
//! (so `C` has sorted keys, no whitespace, and the §10 escapes). The columns
//! added in format 2 (`confirmed_by, cut, count, span_start, span_end`) enter
//! `C` only when they hold a value, so every row written by format 1 keeps
//! its hash and a migrated log verifies unchanged. Likewise the column
//! format 3 added, `peer_chain` (the requester's process chain as JSON,
//! [`crate::ipc::process_chain`]), enters `C` only when set. See
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
//! control and bidi characters visibly.
//!
//! # Bounds: every event is written, none can fill the disk
//! A row that records a signature or a key ([`EventKind::is_exact`]) must hold
//! exactly what was signed: a field over [`MAX_FIELD_BYTES`] is refused and,
//! since the engine releases a token only after its row is written, nothing
//! is handed out. Every other row (rejections above all, whose fields an
//! agent or a service chose) is always written: a text field longer than
//! [`CUT_FIELD_BYTES`] is cut at a character boundary, ends in a visible
//! [`CUT_MARK`], and the row's `cut` column records each cut field's original
//! size in bytes (`{"hash":900000}`), inside the hash chain.
//!
//! Rejections are also bounded in number by the [`RetentionPolicy`]: per
//! peer (uid) and clock hour, the first `rejections_per_hour` are written row
//! by row and the rest are counted (in the `rejection_tally` table, in the
//! same transaction as each count) and written as one
//! [`EventKind::RejectionsSummarized`] row when the hour is over, with the
//! count, the period and the most common reasons. Nothing is deleted: summary
//! rows are appended to the chain like any other, so signed events are never
//! touched and the chain verifies as before. See [`Audit::record`].
//!
//! # Incremental verification
//! [`Audit::verify`] re-hashes every row. [`Audit::verify_incremental`] starts
//! at the `checkpoint` row (the last row a successful verify saw, stored with
//! its hash) and re-hashes only the rows after it, after checking that the
//! checkpoint row still carries the recorded hash. The checkpoint is not a
//! trust anchor for the rows before it: an edit of an old row is found by a
//! full verify, which ignores the checkpoint (the app and `parley audit`
//! offer it).

use parley_core::b64;
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod agents;
mod history;
mod pause;
mod retention;
mod space;

pub use agents::{check_label, LabelError, SeenAs, MAX_LABEL_CHARS};
pub use history::{Total, MAX_LIVE_GRANTS, MAX_SERVICES};
pub use pause::Pause;
pub use retention::{OpenTally, Recorded, RetentionPolicy};
pub use space::MIN_FREE_BYTES;

/// The `prev` of the first row.
pub const GENESIS: &str = "parley-custody/audit/v1/genesis";
/// The largest text field of a signed or key event, in bytes (64 KiB);
/// larger is refused (see the module docs).
pub const MAX_FIELD_BYTES: usize = 64 * 1024;
/// The longest text field of any other event, in bytes (2 KiB), marker
/// included: longer is cut and its original size recorded.
pub const CUT_FIELD_BYTES: usize = 2 * 1024;
/// Ends a field that was cut (the `cut` column says by how much).
pub const CUT_MARK: &str = "…[cut]";
/// Rows returned when a query names no limit.
pub const DEFAULT_LIMIT: u32 = 500;
/// The largest limit a query may ask for.
pub const MAX_LIMIT: u32 = 10_000;
/// The schema version in `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 3;
/// Integers are hashed as canonical JSON, which allows only ±(2^53−1).
const MAX_SAFE: i64 = parley_core::canonical::MAX_SAFE_INTEGER;

const COLUMNS: &str = "seq, at, kind, peer_uid, peer_pid, peer_exe, agent, service, capability, \
     hash, cost_amount, cost_currency, risk, undo, expires, token_id, caveats, reason, principal, \
     prev, row_hash, confirmed_by, cut, count, span_start, span_end, compacted_by, peer_chain";

/// The columns a new row is written with: all but `compacted_by`.
const INSERT_COLUMNS: &str = "seq, at, kind, peer_uid, peer_pid, peer_exe, agent, service, \
     capability, hash, cost_amount, cost_currency, risk, undo, expires, token_id, caveats, reason, \
     principal, prev, row_hash, confirmed_by, cut, count, span_start, span_end, peer_chain";

/// The columns formats 2 and 3 added, with their types (the migration adds
/// them to an older table).
const ADDED_COLUMNS: [(&str, &str); 7] = [
    ("confirmed_by", "TEXT"),
    ("cut", "TEXT"),
    ("count", "INTEGER"),
    ("span_start", "INTEGER"),
    ("span_end", "INTEGER"),
    ("compacted_by", "INTEGER"),
    ("peer_chain", "TEXT"),
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
    peer_chain TEXT
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
    /// Rejections of one peer in one hour beyond the retention policy's
    /// per-hour rows, counted into one row (`count`, `span_start..span_end`).
    RejectionsSummarized,
    /// The retention policy in effect changed (the new one is in `reason`).
    RetentionChanged,
    /// Old rejected, expired and cancelled rows (and old summaries) were
    /// compacted: `count` rows, `hash` = the digest of what they were (see
    /// [`compact`](Audit::compact)).
    AuditCompacted,
    /// The human approved, but OS authentication did not succeed: nothing
    /// was signed and the request stayed pending.
    StepUpFailed,
    /// The human paused an agent (`agent`; `expires` = until when, `None` =
    /// until resumed; `reason`): its requests are refused unseen.
    AgentPaused,
    /// The human resumed a paused agent.
    AgentResumed,
    /// The human named an agent key (`agent`; `reason` = the label, or
    /// `None` when the label was removed).
    AgentLabelled,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 17] = [
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
        EventKind::RejectionsSummarized,
        EventKind::RetentionChanged,
        EventKind::AuditCompacted,
        EventKind::StepUpFailed,
        EventKind::AgentPaused,
        EventKind::AgentResumed,
        EventKind::AgentLabelled,
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
            EventKind::RejectionsSummarized => "rejections_summarized",
            EventKind::RetentionChanged => "retention_changed",
            EventKind::AuditCompacted => "audit_compacted",
            EventKind::StepUpFailed => "step_up_failed",
            EventKind::AgentPaused => "agent_paused",
            EventKind::AgentResumed => "agent_resumed",
            EventKind::AgentLabelled => "agent_labelled",
        }
    }

    /// Rows that record a signature or a key: stored exactly or not at all
    /// (never cut, never summarized, never compacted).
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            EventKind::GrantIssued
                | EventKind::ConsentApproved
                | EventKind::KeyCreated
                | EventKind::KeyImported
                | EventKind::KeyDeleted
        )
    }

    /// Rows the retention policy may compact once they are old: what an
    /// agent caused without a signature. Never a signed, key, denial,
    /// policy or compaction row.
    pub fn is_compactable(self) -> bool {
        matches!(
            self,
            EventKind::RequestRejected
                | EventKind::RequestExpired
                | EventKind::RequestCancelled
                | EventKind::RejectionsSummarized
        )
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown event kind name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind {0:?}; known kinds: grant_issued, grant_denied, consent_approved, consent_denied, request_rejected, request_expired, request_cancelled, key_created, key_imported, key_deleted, rejections_summarized, retention_changed, audit_compacted, step_up_failed, agent_paused, agent_resumed, agent_labelled")]
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
    /// How the human confirmed a signed decision, set by the engine (free
    /// text: `click`, `click+second`, `click+os-auth`, `terminal`,
    /// `terminal+os-auth`; for a failed step-up, why it failed).
    pub confirmed_by: Option<String>,
    /// How many requests this row stands for (summary rows; `None` = one).
    pub count: Option<i64>,
    /// Start of the period a summary row covers (unix seconds, inclusive).
    pub span_start: Option<i64>,
    /// End of that period (unix seconds, exclusive).
    pub span_end: Option<i64>,
    /// The requesting peer's process chain, as JSON (format 3; see
    /// [`crate::ipc::process_chain::ProcessChain::to_audit_text`]).
    pub peer_chain: Option<String>,
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
            confirmed_by: None,
            count: None,
            span_start: None,
            span_end: None,
            peer_chain: None,
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
    /// How the human confirmed (see [`NewEvent::confirmed_by`]).
    pub confirmed_by: Option<String>,
    /// The fields that were cut for length and their original sizes in
    /// bytes, as canonical JSON (`{"hash":900000}`); `None` when nothing was.
    pub cut: Option<String>,
    /// How many requests this row stands for (summary rows); `None` = one.
    pub count: Option<i64>,
    /// Start of the period a summary row covers.
    pub span_start: Option<i64>,
    /// End of that period (exclusive).
    pub span_end: Option<i64>,
    /// Set when the row was compacted: the `seq` of the
    /// [`EventKind::AuditCompacted`] row that did it. Its text fields are
    /// gone; `seq, at, kind, peer_uid, count, span_*, prev, row_hash` stay.
    /// Not part of the row's hash (it is set afterwards); the compaction
    /// row's digest vouches for it.
    pub compacted_by: Option<i64>,
    /// The requesting peer's process chain, as JSON (format 3).
    pub peer_chain: Option<String>,
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
        // Format 2 and 3 columns: only when set, so older rows keep their hash.
        let later: [(&str, serde_json::Value); 6] = [
            ("confirmed_by", text(&self.confirmed_by)),
            ("cut", text(&self.cut)),
            ("count", int(self.count)),
            ("span_start", int(self.span_start)),
            ("span_end", int(self.span_end)),
            ("peer_chain", text(&self.peer_chain)),
        ];
        for (k, v) in later {
            if !v.is_null() {
                m.insert(k.into(), v);
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
        cell(text(&self.confirmed_by));
        cell(text(&self.cut));
        cell(int(self.count));
        cell(int(self.span_start));
        cell(int(self.span_end));
        cell(int(self.compacted_by));
        cell(text(&self.peer_chain));
        out
    }
}

/// The CSV header row, in column order.
pub const CSV_HEADER: &str = "seq,at,kind,peer_uid,peer_pid,peer_exe,agent,service,capability,hash,cost_amount,cost_currency,risk,undo,expires,token_id,caveats,reason,principal,prev,row_hash,confirmed_by,cut,count,span_start,span_end,compacted_by,peer_chain";

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
    /// Whether every row was re-hashed (else only those from `checked_from`).
    pub full: bool,
    /// The first row this check re-hashed (rows before it were verified
    /// earlier, up to the checkpoint).
    pub checked_from: i64,
    /// The verified end of the chain `(seq, row_hash)`, when `ok`.
    #[serde(skip)]
    pub head: Option<(i64, String)>,
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
    /// The filesystem holding the log has less room than one more row
    /// needs; checked before anything is signed ([`Audit::ready_to_record`]).
    #[error("the disk holding the audit log is full ({} free at {}): nothing is signed until there is room", human_bytes(*free), dir.display())]
    DiskFull {
        /// The directory of the database file.
        dir: PathBuf,
        /// Bytes available to this user.
        free: u64,
    },
    /// The log cannot be written (read-only file or filesystem).
    #[error(
        "the audit log {path} is read-only ({why}): nothing is signed until it can be written"
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// What is read-only.
        why: &'static str,
    },
    /// A retention policy that cannot be stored.
    #[error("the stored retention policy is not readable ({0}); set it again")]
    Policy(String),
    /// A stored row that cannot be read back (edited outside this program).
    #[error("audit row {seq} is malformed ({reason}); run verify")]
    Corrupt {
        /// The row.
        seq: i64,
        /// What was wrong.
        reason: String,
    },
}

/// `3 KiB`, `12 MiB`: sizes for people.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if v < 10.0 {
        format!("{:.1} {}", v, UNITS[unit])
    } else {
        format!("{:.0} {}", v, UNITS[unit])
    }
}

/// An open audit log. One writer process at a time is assumed (appends are
/// also safe across processes: each is one `BEGIN IMMEDIATE` transaction).
pub struct Audit {
    conn: Connection,
    path: PathBuf,
    retention: RetentionPolicy,
    /// The hour of the last compaction attempt (one per hour at most).
    compacted_hour: Option<i64>,
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
    /// module docs): a signed or key event with an oversized field, or any
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

    /// Writes one event under the [`RetentionPolicy`]: a rejection beyond
    /// the policy's rows for its peer and hour is counted instead of written
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
        let out = if ev.kind == EventKind::RequestRejected {
            let mut tally = retention::Tally::load(&tx, ev.peer_uid, ev.at)?;
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
        let written = retention::close_hours(&tx, now, self.retention, include_open_hour)?;
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
        let stored = retention::load(&tx)?;
        let before = stored.unwrap_or_default();
        if stored.is_some() && before == policy {
            self.retention = policy;
            return Ok(false);
        }
        retention::store(&tx, policy)?;
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
        retention::open_tallies(&self.conn)
    }

    /// Every rejected request the log accounts for, of one peer or of all:
    /// rejection rows, plus the counts of summary rows, plus the counts not
    /// yet summarized. A flood is bounded in rows but never in this number.
    pub fn rejections_accounted(&self, peer_uid: Option<u32>) -> Result<u64, AuditError> {
        retention::accounted(&self.conn, peer_uid)
    }

    /// Whether one more row can be written: the filesystem holding the log
    /// has at least [`MIN_FREE_BYTES`] available and neither the file nor
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
fn compaction_digest(conn: &Connection, by: i64) -> Result<(String, i64), AuditError> {
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

/// Adds the format 2 columns to a format 1 `events` table (existing rows
/// get `NULL`, which leaves their hashes as they were).
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

/// Applies the field bounds of the module docs: refuses out-of-range
/// integers and oversized fields of exact kinds, cuts the oversized fields of
/// every other kind. Returns the event to store and its `cut` record.
fn prepare(ev: &NewEvent) -> Result<(NewEvent, Option<String>), AuditError> {
    check_ints(ev)?;
    let mut ev = ev.clone();
    let exact = ev.kind.is_exact();
    let mut cut = serde_json::Map::new();
    let texts: [(&'static str, &mut Option<String>); 13] = [
        ("peer_exe", &mut ev.peer_exe),
        ("agent", &mut ev.agent),
        ("service", &mut ev.service),
        ("capability", &mut ev.capability),
        ("hash", &mut ev.hash),
        ("cost_currency", &mut ev.cost_currency),
        ("risk", &mut ev.risk),
        ("token_id", &mut ev.token_id),
        ("caveats", &mut ev.caveats),
        ("reason", &mut ev.reason),
        ("principal", &mut ev.principal),
        ("confirmed_by", &mut ev.confirmed_by),
        ("peer_chain", &mut ev.peer_chain),
    ];
    for (field, value) in texts {
        let Some(v) = value else { continue };
        if exact {
            if v.len() > MAX_FIELD_BYTES {
                return Err(AuditError::FieldTooLong {
                    field,
                    len: v.len(),
                });
            }
        } else if v.len() > CUT_FIELD_BYTES {
            cut.insert(field.into(), v.len().into());
            *v = cut_text(v);
        }
    }
    let cut = if cut.is_empty() {
        None
    } else {
        Some(
            parley_core::canonical::canonical(&serde_json::Value::Object(cut)).map_err(|e| {
                AuditError::OutOfRange {
                    field: "cut",
                    detail: e.to_string(),
                }
            })?,
        )
    };
    Ok((ev, cut))
}

/// The first bytes of `v` (at a character boundary) and [`CUT_MARK`], at
/// most [`CUT_FIELD_BYTES`] in all.
fn cut_text(v: &str) -> String {
    let mut end = CUT_FIELD_BYTES - CUT_MARK.len();
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT_MARK}", &v[..end])
}

/// Appends inside `tx` (the caller commits): checks the tail against the
/// head, chains, inserts and moves the head.
fn append_in(
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
        confirmed_by: ev.confirmed_by.clone(),
        cut,
        count: ev.count,
        span_start: ev.span_start,
        span_end: ev.span_end,
        compacted_by: None,
        peer_chain: ev.peer_chain.clone(),
    };
    event.row_hash = event.compute_row_hash()?;
    tx.execute(
        &format!(
            "INSERT INTO events ({INSERT_COLUMNS}) VALUES \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, \
              ?22, ?23, ?24, ?25, ?26, ?27)"
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
            event.confirmed_by,
            event.cut,
            event.count,
            event.span_start,
            event.span_end,
            event.peer_chain,
        ],
    )?;
    tx.execute(
        "UPDATE chain_head SET count = count + 1, last_seq = ?1, head = ?2 WHERE id = 1",
        params![seq, event.row_hash],
    )?;
    Ok(event)
}

/// Integer bounds (canonical JSON hashes only ±(2^53−1)).
fn check_ints(ev: &NewEvent) -> Result<(), AuditError> {
    let ints: [(&'static str, Option<i64>); 8] = [
        ("at", Some(ev.at)),
        ("peer_pid", ev.peer_pid),
        ("cost_amount", ev.cost_amount),
        ("undo", ev.undo),
        ("expires", ev.expires),
        ("count", ev.count),
        ("span_start", ev.span_start),
        ("span_end", ev.span_end),
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
        confirmed_by: row.get(21).map_err(corrupt)?,
        cut: row.get(22).map_err(corrupt)?,
        count: row.get(23).map_err(corrupt)?,
        span_start: row.get(24).map_err(corrupt)?,
        span_end: row.get(25).map_err(corrupt)?,
        compacted_by: row.get(26).map_err(corrupt)?,
        peer_chain: row.get(27).map_err(corrupt)?,
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
            confirmed_by: None,
            cut: None,
            count: None,
            span_start: None,
            span_end: None,
            compacted_by: None,
            peer_chain: None,
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
            at: 10,
            kind: EventKind::GrantIssued,
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
            prev: GENESIS.into(),
            row_hash: String::new(),
            confirmed_by: None,
            cut: None,
            count: None,
            span_start: None,
            span_end: None,
            compacted_by: Some(9),
            peer_chain: None,
        };
        let v1 = e.canonical_fields().unwrap();
        assert!(!v1.contains("confirmed_by") && !v1.contains("compacted_by"));
        e.confirmed_by = Some("click".into());
        e.count = Some(3);
        let v2 = e.canonical_fields().unwrap();
        assert!(v2.contains("\"confirmed_by\":\"click\"") && v2.contains("\"count\":3"));
        assert_ne!(v1, v2);
    }

    #[test]
    fn cuts_end_on_a_character_boundary_with_the_mark() {
        let long = "é".repeat(CUT_FIELD_BYTES);
        let c = cut_text(&long);
        assert!(c.len() <= CUT_FIELD_BYTES && c.ends_with(CUT_MARK));
        let (ev, cut) = prepare(&NewEvent {
            hash: Some(long.clone()),
            ..NewEvent::new(EventKind::RequestRejected, 1)
        })
        .unwrap();
        assert_eq!(ev.hash.as_deref(), Some(c.as_str()));
        assert_eq!(
            cut.as_deref(),
            Some(format!("{{\"hash\":{}}}", long.len()).as_str())
        );
        assert_eq!(human_bytes(3 * 1024), "3.0 KiB");
        assert_eq!(human_bytes(12), "12 bytes");
    }
}
