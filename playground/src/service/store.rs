//! What a service remembers between requests, in memory: proposals (§5.1),
//! receipts (§5.2), EXPAND handles (§4.6, §8) and the auto-commit replay
//! memory (§4.3.1).
//!
//! Each proposal and receipt carries its own async lock, so a COMMIT (or an
//! UNDO) of one proposal runs at most once at a time: a concurrent retry
//! waits, then finds the receipt and answers it as a replay (§4.4).
//!
//! Memory is bounded: expired entries are swept once a map grows past
//! [`SWEEP_AT`], and new proposals or auto requests beyond the caps are
//! refused with `limit` rather than growing without end.

use super::error::{ErrorCode, ParleyError};
use parley_core::money::Money;
use parley_core::{PublicKey, RiskLevel};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Maps are swept of expired entries once they hold this many.
pub const SWEEP_AT: usize = 1_000;
/// The most live proposals (and, separately, auto requests) remembered.
pub const MAX_ENTRIES: usize = 20_000;
/// How long after its expiry a proposal or handle is still known (so that
/// late requests get `expired`, not `not_found`).
pub const GRACE: i64 = 3_600;

/// A proposal as offered, and what committing it does.
#[derive(Debug)]
pub struct ProposalRecord<A> {
    /// `id`.
    pub id: String,
    /// The §5.1 hash.
    pub hash: String,
    /// The capability.
    pub capability: String,
    /// The service's summary.
    pub summary: String,
    /// The declared effects.
    pub effects: Vec<Value>,
    /// The Parley cost, `None` when free.
    pub cost: Option<Money>,
    /// What it uses up, as YEA quantities (empty: nothing measured).
    pub uses: parley_core::quantity::Uses,
    /// The risk.
    pub risk: RiskLevel,
    /// The undo window in seconds, `None` when irreversible.
    pub undo_window: Option<i64>,
    /// Unix seconds; committable strictly before.
    pub expires: i64,
    /// The proposal exactly as sent.
    pub value: Value,
    /// The key whose verified proof was on the INTENT (§4.4 "who may
    /// commit"); `None` for an anonymous INTENT: never committable.
    pub holder: Option<PublicKey>,
    /// The principal of the grant that authorized the INTENT, if one did.
    pub principal: Option<PublicKey>,
    /// What to do on commit.
    pub action: A,
    /// The receipt once committed; the lock serializes commits.
    pub committed: tokio::sync::Mutex<Option<Arc<ReceiptRecord<A>>>>,
}

/// A committed proposal.
#[derive(Debug)]
pub struct ReceiptRecord<A> {
    /// `id`.
    pub id: String,
    /// The capability (UNDO checks `can` against it, §6.3).
    pub capability: String,
    /// The principal of the authorizing grant (UNDO and replays must match).
    pub principal: PublicKey,
    /// The key that committed.
    pub holder: PublicKey,
    /// Undo deadline, `None` when irreversible.
    pub until: Option<i64>,
    /// The receipt object (§5.2) as first sent.
    pub receipt: Value,
    /// What was applied, for revert.
    pub action: A,
    /// The apply result, for revert.
    pub result: Value,
    /// The undo receipt once undone; the lock serializes undos.
    pub undone: tokio::sync::Mutex<Option<Value>>,
}

/// An elided remainder behind an EXPAND handle.
#[derive(Debug, Clone)]
pub struct HandleRecord {
    /// The `data` that EXPAND answers (§8: `{items}` or `{text}`).
    pub rest: Value,
    /// Set when the request that made it carried a verified proof: only
    /// that key may expand it (§4.6).
    pub key: Option<PublicKey>,
    /// The capability of the request that made it (`can` for EXPAND).
    pub capability: String,
    /// Unix seconds; expandable strictly before.
    pub expires: i64,
}

/// The remembered outcome of one auto INTENT (§4.3.1).
pub type AutoSlot = Arc<tokio::sync::Mutex<Option<Result<Value, ParleyError>>>>;

struct AutoEntry {
    slot: AutoSlot,
    keep_until: i64,
}

/// All of a service's memory.
pub struct Store<A> {
    proposals: Mutex<HashMap<String, Arc<ProposalRecord<A>>>>,
    receipts: Mutex<HashMap<String, Arc<ReceiptRecord<A>>>>,
    handles: Mutex<HashMap<String, HandleRecord>>,
    auto: Mutex<HashMap<(String, String), AutoEntry>>,
}

impl<A> Default for Store<A> {
    fn default() -> Self {
        Store {
            proposals: Mutex::default(),
            receipts: Mutex::default(),
            handles: Mutex::default(),
            auto: Mutex::default(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn full(what: &str) -> ParleyError {
    ParleyError::new(
        ErrorCode::Limit,
        format!("this service holds too many open {what}; try again later"),
    )
    .retry(60)
}

impl<A> Store<A> {
    /// Remembers new proposals; `limit` if too many are open.
    pub fn add_proposals(
        &self,
        records: &[Arc<ProposalRecord<A>>],
        now: i64,
    ) -> Result<(), ParleyError> {
        let mut map = lock(&self.proposals);
        if map.len() + records.len() > SWEEP_AT {
            map.retain(|_, p| {
                p.expires + GRACE > now || p.committed.try_lock().map_or(true, |c| c.is_some())
            });
        }
        if map.len() + records.len() > MAX_ENTRIES {
            return Err(full("proposals"));
        }
        for r in records {
            map.insert(r.id.clone(), r.clone());
        }
        Ok(())
    }

    /// A proposal by id.
    pub fn proposal(&self, id: &str) -> Option<Arc<ProposalRecord<A>>> {
        lock(&self.proposals).get(id).cloned()
    }

    /// Remembers a receipt.
    pub fn add_receipt(&self, r: Arc<ReceiptRecord<A>>) {
        lock(&self.receipts).insert(r.id.clone(), r);
    }

    /// A receipt by id.
    pub fn receipt(&self, id: &str) -> Option<Arc<ReceiptRecord<A>>> {
        lock(&self.receipts).get(id).cloned()
    }

    /// Remembers a handle. When the map is full even after sweeping, the
    /// handle closest to expiry is forgotten (its EXPAND then answers
    /// `not_found`, which the agent recovers from by asking again).
    pub fn add_handle(&self, handle: String, record: HandleRecord, now: i64) {
        let mut map = lock(&self.handles);
        if map.len() >= SWEEP_AT {
            map.retain(|_, h| h.expires + GRACE > now);
        }
        if map.len() >= MAX_ENTRIES {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, h)| h.expires)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(handle, record);
    }

    /// A handle by id.
    pub fn handle(&self, handle: &str) -> Option<HandleRecord> {
        lock(&self.handles).get(handle).cloned()
    }

    /// The replay slot of the auto INTENT (proof key, frame id), made if
    /// new and kept until at least `keep_until` (§4.3.1).
    pub fn auto_slot(
        &self,
        key: &PublicKey,
        frame_id: &str,
        keep_until: i64,
        now: i64,
    ) -> Result<AutoSlot, ParleyError> {
        let mut map = lock(&self.auto);
        let k = (key.to_string(), frame_id.to_string());
        if let Some(e) = map.get_mut(&k) {
            e.keep_until = e.keep_until.max(keep_until);
            return Ok(e.slot.clone());
        }
        if map.len() >= SWEEP_AT {
            map.retain(|_, e| e.keep_until >= now);
        }
        if map.len() >= MAX_ENTRIES {
            return Err(full("auto-commit requests"));
        }
        let slot = AutoSlot::default();
        map.insert(
            k,
            AutoEntry {
                slot: slot.clone(),
                keep_until,
            },
        );
        Ok(slot)
    }
}
