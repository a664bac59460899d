//! Undo of a job's receipt (SPEC-approval §7): only this server's
//! receipts, only for the principal that ran the job, only within the undo
//! window (through `until` itself), and only once.
//!
//! Undo needs no approval: it restores what the person already approved
//! changing. The receipt stores what the tool's revert needs (tool, input,
//! plan hash), so any process sharing the store can undo it.

use super::store::{is_id, FileStore, StoreError};
use serde_json::Value;

/// What an undo call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// Reverted; the receipt is marked undone for good.
    Undone,
    /// Nothing changed, for this reason (said to the caller as is).
    Refused {
        /// Why, for the caller.
        why: String,
    },
}

fn refused(why: &str) -> Undo {
    Undo::Refused { why: why.into() }
}

/// Undoes receipt `id` for principal `sub` at `now`, at the server whose
/// service id is `service`: checks it, claims it atomically, calls
/// `revert` with the stored receipt, then marks it undone, or releases the
/// claim when the revert fails so it can be tried again.
pub fn undo(
    store: &FileStore,
    service: &str,
    id: &str,
    sub: &str,
    now: i64,
    revert: impl FnOnce(&Value) -> Result<(), String>,
) -> Result<Undo, StoreError> {
    const NOT_FOUND: &str = "no such receipt";
    // The id is checked against the generated format before any lookup.
    if !is_id(id, "r_") {
        return Ok(refused(NOT_FOUND));
    }
    let Some(receipt) = store.get_receipt(id)? else {
        return Ok(refused(NOT_FOUND));
    };
    let field = |k: &str| receipt.get(k).and_then(Value::as_str);
    // Servers may share a store; another principal's receipt is not theirs to see.
    if field("service") != Some(service) || field("sub") != Some(sub) || field("id") != Some(id) {
        return Ok(refused(NOT_FOUND));
    }
    let Some(until) = receipt
        .get("undo")
        .and_then(|u| u.get("until"))
        .and_then(Value::as_i64)
    else {
        return Ok(refused("this job can never be undone"));
    };
    if now > until {
        return Ok(refused("the undo window has closed"));
    }
    if !store.claim_undo(id)? {
        return Ok(refused("this job was already undone"));
    }
    match revert(&receipt) {
        Ok(()) => {
            store.mark_undone(id)?;
            Ok(Undo::Undone)
        }
        Err(why) => {
            store.release_undo(id)?;
            Ok(Undo::Refused {
                why: format!("undoing failed: {why}; nothing changed, try again"),
            })
        }
    }
}
