//! [`AuditError`]: every way an audit operation fails, with what to do about
//! it.
//!
//! One error type for the whole log, so the engine can refuse to sign on any
//! of them the same way; it has its own file because every other audit module
//! returns it.

use super::store::SCHEMA_VERSION;
use super::{human_bytes, MAX_FIELD_BYTES, MAX_LIMIT};
use std::path::PathBuf;

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
    /// needs; checked before anything is signed ([`super::Audit::ready_to_record`]).
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
