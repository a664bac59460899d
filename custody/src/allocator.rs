//! Giving the memory a UI session freed back to the OS.
//!
//! The service lives for the whole login. glibc's malloc keeps memory it
//! has freed in its per-thread arenas for reuse, and returns only the top
//! of the main heap on its own, so each UI session (a review, a signature,
//! its notifications, the channel's buffers) left the service's resident
//! memory ~0.1 MiB higher than before while its live heap stayed flat
//! (heaptrack: 0.6–0.8 MB across twelve sessions; issue 28).
//! The service keeps one arena and no per-thread caches ([`TUNABLES`],
//! [`start_with_tunables`]; [`one_arena`] where those could not be set),
//! and at its quiet moments
//! (the UI process has exited), where it stalls nobody, `malloc_trim(0)`
//! returns the free pages, the middle of the heap included.
//! `scripts/bench-app.sh` measures the effect.
#![allow(unsafe_code)]

/// glibc's own settings for the service's allocator, as `GLIBC_TUNABLES`
/// (read once, when the process starts): one arena (see [`one_arena`]) and
/// no per-thread cache. The per-thread cache keeps up to seven freed
/// blocks of each small size in every thread that lives on (the service's
/// worker threads do), so the pages those blocks sit on can never be
/// returned: with it the heap rose with each UI session (0.9 → 1.6 MiB over
/// fourteen, app profile), without it it stayed at 0.6–0.7 MiB.
pub const TUNABLES: &str = "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1";

/// The environment variable glibc reads its settings from.
pub const TUNABLES_VAR: &str = "GLIBC_TUNABLES";

/// Whether this process already runs with [`TUNABLES`] (set by
/// [`start_with_tunables`], or by whoever started it).
pub fn has_tunables() -> bool {
    std::env::var_os(TUNABLES_VAR).is_some_and(|v| v.to_string_lossy().contains(TUNABLES))
}

/// The long-lived service, started again by itself with [`TUNABLES`]
/// added to the environment (glibc reads them only when a process
/// starts): replaces this process with the same program and arguments.
/// Returns only if that could not be done (the service then runs with
/// glibc's defaults, which costs memory, nothing else). Only where glibc
/// is the C library; elsewhere it returns at once.
pub fn start_with_tunables() -> Option<std::io::Error> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if has_tunables() {
            return None;
        }
        let value = match std::env::var_os(TUNABLES_VAR) {
            Some(v) if !v.is_empty() => {
                let mut v = v;
                v.push(":");
                v.push(TUNABLES);
                v
            }
            _ => TUNABLES.into(),
        };
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_default();
        // The running program's file by its path (not /proc/self/exe, which
        // would make the process's name "exe" for ps, pgrep and the logs).
        let exe = match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => return Some(e),
        };
        Some(
            std::process::Command::new(exe)
                .arg0(arg0)
                .args(args)
                .env(TUNABLES_VAR, value)
                .exec(),
        )
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// The value of `GLIBC_TUNABLES` a child of the service should get: none if
/// the service set it only for itself ([`TUNABLES`] alone), else what it
/// was given. The UI and the web engine keep glibc's defaults.
pub fn tunables_for_children() -> Option<std::ffi::OsString> {
    std::env::var_os(TUNABLES_VAR).filter(|v| v.to_string_lossy() != TUNABLES)
}

/// Makes every thread allocate from one glibc arena. By default glibc gives
/// threads that meet in malloc arenas of their own (up to eight per core),
/// and each keeps its own freed memory and its own half-used pages; the
/// service does little at a time, so one arena costs it nothing, and what
/// one thread frees the next reuses. Call first in `main`, before any
/// thread starts. Whether it took effect.
pub fn one_arena() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt takes two integers and changes only the
        // allocator's own settings; M_ARENA_MAX is read when a thread first
        // needs an arena, so setting it early is all that matters.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Returns the memory glibc keeps after it was freed to the OS; whether
/// anything was returned. Nothing to do off glibc: the other C libraries'
/// allocators have no such call and no such habit.
pub fn give_back_freed() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes a plain byte count (the padding to keep
        // at the top of the heap), touches no memory of the caller's, and
        // is thread-safe (it takes each arena's lock in turn).
        unsafe { libc::malloc_trim(0) != 0 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A freed block in the middle of a heap comes back: the process's
    /// resident memory drops after the trim, though the blocks around it
    /// stay allocated (what glibc does not do by itself).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_memory_in_the_middle_of_the_heap_is_returned() {
        fn resident_kib() -> u64 {
            let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .expect("VmRSS in /proc/self/status")
        }
        // 64 KiB blocks (below the mmap threshold, so on the heap), every
        // other one freed: 16 MiB free in 64 KiB holes, none of it at the top.
        let mut blocks: Vec<Vec<u8>> = (0..512).map(|_| vec![1u8; 64 * 1024]).collect();
        for b in blocks.iter_mut().step_by(2) {
            *b = Vec::new();
        }
        let before = resident_kib();
        assert!(give_back_freed(), "glibc said it returned nothing");
        let after = resident_kib();
        assert!(
            before.saturating_sub(after) >= 12 * 1024,
            "resident memory went from {before} KiB to {after} KiB"
        );
        drop(blocks);
    }
}
