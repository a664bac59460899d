//! Time, injectable: the services read the clock only through [`Clock`], so
//! tests move it by hand (proof windows §6.5, proposal expiry §5.1, undo
//! windows §4.5, handle lifetimes §4.6).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of unix seconds.
pub trait Clock: Send + Sync + 'static {
    /// The current time in unix seconds.
    fn now(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (tests).
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: i64) -> ManualClock {
        ManualClock {
            now: AtomicI64::new(now),
        }
    }

    /// Sets the time.
    pub fn set(&self, now: i64) {
        self.now.store(now, Ordering::SeqCst);
    }

    /// Moves the time forward (or back, with a negative `secs`).
    pub fn advance(&self, secs: i64) {
        self.now.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(100);
        assert_eq!(c.now(), 100);
        c.advance(5);
        assert_eq!(c.now(), 105);
        c.set(7);
        assert_eq!(c.now(), 7);
        assert!(SystemClock.now() > 1_700_000_000);
    }
}
