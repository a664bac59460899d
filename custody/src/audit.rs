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
//! [`crate::ipc::process_chain`]), enters `C` only when set, and so does
//! format 4's `for_a_while` (the minutes of an approve-for-a-while grant,
//! the one mark of a short grant, [`Audit::live_short_grants`]). See
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
//! Cancelled requests (an agent's `cancel`, or its disconnect while the
//! request was pending) are bounded the same way, with the same number per
//! hour, in their own `cancel_tally` and
//! [`EventKind::CancellationsSummarized`] rows: a valid request followed by
//! a disconnect is as cheap to repeat as a rejected one.
//!
//! # Incremental verification
//! [`Audit::verify`] re-hashes every row. [`Audit::verify_incremental`] starts
//! at the `checkpoint` row (the last row a successful verify saw, stored with
//! its hash) and re-hashes only the rows after it, after checking that the
//! checkpoint row still carries the recorded hash. The checkpoint is not a
//! trust anchor for the rows before it: an edit of an old row is found by a
//! full verify, which ignores the checkpoint (the app and `parley audit`
//! offer it).
//!
//! # Where things are
//! One module per concern, all private; their items are re-exported here.
//! - `event`: the event kinds, [`NewEvent`] and [`Event`], field bounds.
//! - `chain`: canonical fields, row hashes, verification ([`VerifyReport`]).
//! - `store`: the SQLite file, schema and migrations, append and record.
//! - `query`: reading events back ([`Query`]).
//! - `export`: CSV and JSON Lines ([`export_csv`], [`export_jsonl`]).
//! - `error`: [`AuditError`].
//! - `retention`, `pause`, `agents`, `history`, `space`: the retention policy
//!   and compaction, paused agents, agent labels, what the log says about an
//!   agent, room on the disk.

use rusqlite::Connection;
use std::fmt;
use std::path::PathBuf;

mod agents;
mod chain;
mod error;
mod event;
mod export;
mod freeze;
mod history;
mod pause;
mod query;
mod retention;
mod revoked;
mod short_grants;
mod space;
mod store;

pub use agents::{check_label, LabelError, SeenAs, MAX_LABELS, MAX_LABEL_CHARS, MAX_SEEN};
pub use chain::{VerifyReport, GENESIS};
pub use error::AuditError;
pub use event::{
    Event, EventKind, NewEvent, UnknownKind, CUT_FIELD_BYTES, CUT_MARK, MAX_FIELD_BYTES,
};
pub use export::{export_csv, export_jsonl, CSV_HEADER};
pub use freeze::{Freeze, Unfrozen, FROZEN_CODE};
pub use history::{GrantRow, Total, MAX_LIVE_GRANTS, MAX_SERVICES};
pub use pause::Pause;
pub use query::{Query, DEFAULT_LIMIT, MAX_LIMIT};
pub use retention::{OpenTally, Recorded, RetentionPolicy};
pub use short_grants::LiveShortGrant;
pub use space::{human_bytes, MIN_FREE_BYTES};
pub use store::DbSettings;

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
