//! Spend totals per grant block (§6.3 `spend`).
//!
//! "The service MUST reserve the cost against every spend block of the
//! authorizing grant atomically with the check, before executing, so that
//! concurrent or overlapping commits can't together exceed a cap. A
//! reservation is released if execution fails. Totals are not reduced on
//! UNDO in v1." [`Ledger::check_and_reserve`] runs the caveat check and the
//! reservation under one lock, so two commits can never both see the same
//! total.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// Cost reserved against some blocks (minor units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The block ids charged.
    pub blocks: Vec<String>,
    /// The amount added to each.
    pub amount: i64,
}

/// Committed (and in-flight) spend per block id.
#[derive(Debug, Default)]
pub struct Ledger {
    spent: Mutex<BTreeMap<String, i64>>,
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, i64>> {
        // A panic elsewhere cannot leave the map half-updated: every update
        // is a single insert.
        self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `check` with the current totals of `blocks`; if it returns a
    /// reservation, that reservation is added before the lock is released.
    pub fn check_and_reserve<R>(
        &self,
        blocks: &[String],
        check: impl FnOnce(BTreeMap<String, i64>) -> (R, Option<Reservation>),
    ) -> (R, Option<Reservation>) {
        let mut spent = self.lock();
        let totals = blocks
            .iter()
            .filter_map(|b| spent.get(b).map(|v| (b.clone(), *v)))
            .collect();
        let (result, reservation) = check(totals);
        if let Some(r) = &reservation {
            for b in &r.blocks {
                let total = spent.entry(b.clone()).or_insert(0);
                *total = total.saturating_add(r.amount);
            }
        }
        (result, reservation)
    }

    /// Gives a reservation back (execution failed).
    pub fn release(&self, r: &Reservation) {
        let mut spent = self.lock();
        for b in &r.blocks {
            if let Some(total) = spent.get_mut(b) {
                *total = total.saturating_sub(r.amount);
            }
        }
    }

    /// The total reserved against one block.
    pub fn spent(&self, block: &str) -> i64 {
        self.lock().get(block).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_and_release() {
        let l = Ledger::default();
        let b = vec!["b1".to_string()];
        let ((), r) = l.check_and_reserve(&b, |t| {
            assert!(t.is_empty());
            (
                (),
                Some(Reservation {
                    blocks: b.clone(),
                    amount: 700,
                }),
            )
        });
        assert_eq!(l.spent("b1"), 700);
        let (seen, none) = l.check_and_reserve(&b, |t| (t.get("b1").copied(), None));
        assert_eq!((seen, none), (Some(700), None));
        l.release(&r.unwrap());
        assert_eq!(l.spent("b1"), 0);
    }
}
