//! What has been committed or reserved per grant block: Parley's `spend`
//! (minor units) and YEA's `total` (exact quantities per block id and
//! measure), §6.3.
//!
//! "The service MUST reserve the cost against every spend block of the
//! authorizing grant atomically with the check, before executing, so that
//! concurrent or overlapping commits can't together exceed a cap. A
//! reservation is released if execution fails. Totals are not reduced on
//! UNDO in v1." YEA says the same of `total`, keyed by block id and `of`.
//! [`Ledger::check_and_reserve`] runs the caveat check and the reservation
//! under one lock, so two commits can never both see the same total.

use parley_core::quantity::{Exact, Used};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// What one commit reserved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reservation {
    /// Parley: the block ids charged.
    pub blocks: Vec<String>,
    /// Parley: the amount added to each (minor units).
    pub amount: i64,
    /// YEA: (block id, measure, exact quantity) per `total` caveat.
    pub uses: Vec<(String, String, Exact)>,
}

/// The totals the check sees: only those of the blocks asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Totals {
    /// Parley spend per block id.
    pub spent: BTreeMap<String, i64>,
    /// YEA use per block id and measure.
    pub used: Used,
}

#[derive(Debug, Default)]
struct Books {
    spent: BTreeMap<String, i64>,
    used: Used,
}

/// Committed (and in-flight) spend and use per block id.
#[derive(Debug, Default)]
pub struct Ledger {
    books: Mutex<Books>,
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, Books> {
        // A panic elsewhere cannot leave the books half-updated: every
        // update is a single insert per entry.
        self.books.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `check` with the current totals of `blocks`; if it returns a
    /// reservation, that reservation is added before the lock is released.
    pub fn check_and_reserve<R>(
        &self,
        blocks: &[String],
        check: impl FnOnce(Totals) -> (R, Option<Reservation>),
    ) -> (R, Option<Reservation>) {
        let mut books = self.lock();
        let totals = Totals {
            spent: blocks
                .iter()
                .filter_map(|b| books.spent.get(b).map(|v| (b.clone(), *v)))
                .collect(),
            used: blocks
                .iter()
                .filter_map(|b| books.used.get(b).map(|m| (b.clone(), m.clone())))
                .collect(),
        };
        let (result, reservation) = check(totals);
        if let Some(r) = &reservation {
            for b in &r.blocks {
                let total = books.spent.entry(b.clone()).or_insert(0);
                *total = total.saturating_add(r.amount);
            }
            for (block, measure, q) in &r.uses {
                let total = books
                    .used
                    .entry(block.clone())
                    .or_default()
                    .entry(measure.clone())
                    .or_default();
                // Past u128 is over every limit (quantity.rs): saturate.
                *total = total.checked_add(*q).unwrap_or(Exact(u128::MAX));
            }
        }
        (result, reservation)
    }

    /// Gives a reservation back (execution failed).
    pub fn release(&self, r: &Reservation) {
        let mut books = self.lock();
        for b in &r.blocks {
            if let Some(total) = books.spent.get_mut(b) {
                *total = total.saturating_sub(r.amount);
            }
        }
        for (block, measure, q) in &r.uses {
            if let Some(total) = books.used.get_mut(block).and_then(|m| m.get_mut(measure)) {
                total.0 = total.0.saturating_sub(q.0);
            }
        }
    }

    /// The spend reserved against one block (Parley).
    pub fn spent(&self, block: &str) -> i64 {
        self.lock().spent.get(block).copied().unwrap_or(0)
    }

    /// The use of `measure` reserved against one block (YEA).
    pub fn used(&self, block: &str, measure: &str) -> Exact {
        self.lock()
            .used
            .get(block)
            .and_then(|m| m.get(measure))
            .copied()
            .unwrap_or_default()
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
            assert_eq!(t, Totals::default());
            (
                (),
                Some(Reservation {
                    blocks: b.clone(),
                    amount: 700,
                    ..Default::default()
                }),
            )
        });
        assert_eq!(l.spent("b1"), 700);
        let (seen, none) = l.check_and_reserve(&b, |t| (t.spent.get("b1").copied(), None));
        assert_eq!((seen, none), (Some(700), None));
        l.release(&r.unwrap());
        assert_eq!(l.spent("b1"), 0);
    }

    #[test]
    fn yea_use_is_kept_per_block_and_measure() {
        let l = Ledger::default();
        let b = vec!["b1".to_string(), "b2".to_string()];
        let r = Reservation {
            uses: vec![
                ("b1".into(), "spend".into(), Exact(5)),
                ("b1".into(), "emails".into(), Exact(1)),
            ],
            ..Default::default()
        };
        let ((), r) = l.check_and_reserve(&b, |_| ((), Some(r)));
        let (seen, _) = l.check_and_reserve(&b, |t| (t.used, None));
        assert_eq!(seen["b1"]["spend"], Exact(5));
        assert_eq!(seen["b1"]["emails"], Exact(1));
        assert!(!seen.contains_key("b2"));
        assert_eq!(l.used("b2", "spend"), Exact(0));
        l.release(&r.unwrap());
        assert_eq!(l.used("b1", "spend"), Exact(0));
    }
}
