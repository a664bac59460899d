//! The secret key while it signs: in a page of its own, locked in RAM.
//!
//! [`LockedKey`] holds the key in a heap allocation that is exactly one page
//! (4 KiB, page-aligned), so locking it (`mlock`) keeps no one else's data
//! resident and unlocking it unlocks no one else's. The page is locked
//! *before* the key is written into it, so the key is never in a page the
//! kernel may swap out; on drop the key is zeroized (ed25519-dalek's
//! `zeroize` feature) before the page is unlocked and freed.
//!
//! Locking is best effort: it needs `RLIMIT_MEMLOCK` room for one page
//! (usually 8 MiB, or 64 KiB on older systems). When it fails the key still
//! signs and is still zeroized; the service said at start whether locking
//! works ([`probe_memory_lock`], in its hardening line).
//!
//! What this does not cover: short-lived copies the curve library makes on
//! the signing thread's stack (the stack of a running thread is resident, but
//! not locked), and the keychain's own copies (see keychain.rs).

use crate::hardening::Outcome;
use parley_core::keys::SecretKey;
use zeroize::Zeroizing;

/// The assumed page size: 4 KiB on x86-64 and most ARM Linux. On a system
/// with larger pages the allocation still gets locked whole (region rounds to
/// the real page), it just may share that page with other heap data.
const PAGE: usize = 4096;

#[repr(C, align(4096))]
struct Page {
    key: SecretKey,
}

// Exactly one page, so nothing else is ever allocated in it.
const _: () = assert!(std::mem::size_of::<Page>() == PAGE);

/// A secret key in its own locked page. Derefs to the [`SecretKey`].
pub(crate) struct LockedKey {
    // Drop order is declaration order: the key is zeroized (and the page
    // freed) before the lock guard unlocks the page.
    page: Box<Page>,
    _lock: Option<region::LockGuard>,
}

impl LockedKey {
    /// The key of `seed`, written into a page locked beforehand.
    pub(crate) fn new(seed: &Zeroizing<[u8; 32]>) -> LockedKey {
        // A placeholder key first (from an all-zero seed), so the real one is
        // only ever written into a page that is already locked.
        let mut page = Box::new(Page {
            key: SecretKey::from_seed(&Zeroizing::new([0u8; 32])),
        });
        let lock = match region::lock(&*page as *const Page, PAGE) {
            Ok(guard) => Some(guard),
            Err(e) => {
                tracing::debug!(error = %e, "the key's page could not be locked in RAM");
                None
            }
        };
        page.key = SecretKey::from_seed(seed);
        LockedKey { page, _lock: lock }
    }

    /// Whether the page is locked (kept out of swap).
    #[cfg(test)]
    fn is_locked(&self) -> bool {
        self._lock.is_some()
    }
}

impl std::ops::Deref for LockedKey {
    type Target = SecretKey;
    fn deref(&self) -> &SecretKey {
        &self.page.key
    }
}

impl std::fmt::Debug for LockedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LockedKey(<redacted>)")
    }
}

/// Whether a key page can be locked here, said once at start: tries one
/// page, and names the limit that decides it.
pub fn probe_memory_lock() -> Outcome {
    let limit = memlock_limit();
    let page = Box::new([0u8; PAGE]);
    match region::lock(page.as_ptr(), PAGE) {
        Ok(guard) => {
            drop(guard);
            Outcome::Done(format!("yes (RLIMIT_MEMLOCK {limit})"))
        }
        Err(e) => Outcome::Failed(format!(
            "mlock: {e}; RLIMIT_MEMLOCK {limit}; the key may be written to swap"
        )),
    }
}

#[cfg(unix)]
fn memlock_limit() -> String {
    use nix::sys::resource::{getrlimit, Resource};
    match getrlimit(Resource::RLIMIT_MEMLOCK) {
        Ok((soft, _)) if soft == nix::sys::resource::RLIM_INFINITY => "unlimited".into(),
        Ok((soft, _)) => format!("{} KiB", soft / 1024),
        Err(e) => format!("unknown ({e})"),
    }
}

#[cfg(not(unix))]
fn memlock_limit() -> String {
    "n/a".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Locked pages of this process, from the kernel (`VmLck`, in kB).
    #[cfg(target_os = "linux")]
    fn vm_lck() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmLck:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn the_key_signs_as_the_plain_key_does() {
        let seed = Zeroizing::new([9u8; 32]);
        let locked = LockedKey::new(&seed);
        let plain = SecretKey::from_seed(&seed);
        assert_eq!(locked.public(), plain.public());
        assert_eq!(locked.sign(b"m").to_string(), plain.sign(b"m").to_string());
        assert_eq!(format!("{locked:?}"), "LockedKey(<redacted>)");
    }

    /// The kernel counts the key's page as locked while the key is held.
    /// (Other tests in this process may lock pages too, so only a rise of at
    /// least one page is asserted, never an exact count.)
    #[cfg(target_os = "linux")]
    #[test]
    fn the_key_page_is_locked_while_held() {
        if !probe_memory_lock().is_done() {
            eprintln!(
                "skipped: mlock is not allowed here ({})",
                probe_memory_lock()
            );
            return;
        }
        let keys: Vec<LockedKey> = (0..8)
            .map(|i| LockedKey::new(&Zeroizing::new([i; 32])))
            .collect();
        assert!(keys.iter().all(LockedKey::is_locked));
        assert!(vm_lck() >= 4 * 8, "VmLck {} kB with 8 keys held", vm_lck());
    }
}
