//! Process hardening at start: the service's memory is its own (issue 27).
//!
//! The service holds the principal key in its memory while it signs. Without
//! these settings any process of the same desktop user could read that memory
//! (`/proc/PID/mem`, `ptrace`) on a system without Yama's ptrace restriction,
//! and a crash would write it into a core file. So, before any key is loaded,
//! [`harden_process`]:
//! - clears the dumpable flag (`prctl(PR_SET_DUMPABLE, 0)`): the kernel then
//!   refuses same-user `ptrace` attach and `/proc/PID/mem`, `environ`, `maps`
//!   (they belong to root), and writes no core dump. This one is required:
//!   start fails without it, since it is what keeps a same-user process out;
//! - sets the core-dump size limit (`RLIMIT_CORE`) to 0, soft and hard, so
//!   a core is not written even if something sets the process dumpable again
//!   (the limit is also inherited by the processes it starts);
//! - probes whether a page can be locked in RAM (`mlock`, under
//!   `RLIMIT_MEMLOCK`): the key is loaded into a page of its own, locked while
//!   it signs ([`crate::keystore`]), so it is never written to swap. Failing
//!   that is reported, not fatal: many systems have no swap.
//!
//! What this cannot stop (root, a replaced binary, a kernel exploit,
//! hibernation images, the Secret Service itself) is in docs/SECURITY.md.
//! Everything here goes through safe wrappers (nix, region): this crate
//! forbids `unsafe`.

use std::fmt;

/// Why start is refused: the one setting the service cannot run without.
#[derive(Debug, thiserror::Error)]
pub enum HardeningError {
    /// `prctl(PR_SET_DUMPABLE, 0)` failed.
    #[error("cannot make the custody service non-dumpable (prctl PR_SET_DUMPABLE 0: {0}); without it any process of this user could read the key from its memory. Run it on Linux with /proc mounted, outside a sandbox that blocks prctl")]
    Dumpable(String),
}

/// What one setting came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// In effect; the text says what it is (shown in the log).
    Done(String),
    /// Not in effect, and why.
    Failed(String),
}

impl Outcome {
    /// Whether the setting took effect.
    pub fn is_done(&self) -> bool {
        matches!(self, Outcome::Done(_))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Done(what) => write!(f, "{what}"),
            Outcome::Failed(why) => write!(f, "NOT in effect ({why})"),
        }
    }
}

/// What [`harden_process`] achieved, logged once at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The dumpable flag cleared (same-user ptrace and /proc/PID/mem refused).
    pub not_dumpable: Outcome,
    /// RLIMIT_CORE 0.
    pub no_core_dumps: Outcome,
    /// Whether the key's page can be kept out of swap.
    pub key_page_locked: Outcome,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "process hardening: not dumpable: {}; core dumps: {}; key page locked in RAM: {}",
            self.not_dumpable, self.no_core_dumps, self.key_page_locked
        )
    }
}

/// Applies the settings in this module's header to the calling process.
/// Errors only when the dumpable flag cannot be cleared; everything else is
/// in the [`Report`].
pub fn harden_process() -> Result<Report, HardeningError> {
    let not_dumpable = set_not_dumpable()?;
    Ok(Report {
        not_dumpable,
        no_core_dumps: no_core_dumps(),
        key_page_locked: crate::keystore::probe_memory_lock(),
    })
}

#[cfg(target_os = "linux")]
fn set_not_dumpable() -> Result<Outcome, HardeningError> {
    use nix::sys::prctl;
    prctl::set_dumpable(false).map_err(|e| HardeningError::Dumpable(e.to_string()))?;
    // Read back: a kernel that ignored the call must not pass for one that did.
    match prctl::get_dumpable() {
        Ok(false) => Ok(Outcome::Done(
            "yes (same-user ptrace, /proc/PID/mem and core dumps refused)".into(),
        )),
        Ok(true) => Err(HardeningError::Dumpable(
            "the flag reads back as set".into(),
        )),
        Err(e) => Err(HardeningError::Dumpable(format!("reading it back: {e}"))),
    }
}

/// Elsewhere there is no such flag: macOS has no `/proc`, and ptrace of a
/// same-user process needs the debugger entitlement there; Windows guards
/// process memory by its own ACLs. Said in the log, not refused.
#[cfg(not(target_os = "linux"))]
fn set_not_dumpable() -> Result<Outcome, HardeningError> {
    Ok(Outcome::Failed(
        "no PR_SET_DUMPABLE on this platform".into(),
    ))
}

#[cfg(unix)]
fn no_core_dumps() -> Outcome {
    use nix::sys::resource::{setrlimit, Resource};
    match setrlimit(Resource::RLIMIT_CORE, 0, 0) {
        Ok(()) => Outcome::Done("off (RLIMIT_CORE 0)".into()),
        Err(e) => Outcome::Failed(format!("setrlimit RLIMIT_CORE: {e}")),
    }
}

#[cfg(not(unix))]
fn no_core_dumps() -> Outcome {
    Outcome::Failed("no RLIMIT_CORE on this platform".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings are process-wide, so they are checked in a child: this
    /// test binary runs itself again with `HARDENING_CHILD` set, the child
    /// hardens itself and prints what the kernel then says about it.
    #[cfg(target_os = "linux")]
    #[test]
    fn hardening_clears_dumpable_and_the_core_limit() {
        if std::env::var_os("HARDENING_CHILD").is_some() {
            let report = harden_process().expect("hardening");
            let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
            let core = limits
                .lines()
                .find(|l| l.starts_with("Max core file size"))
                .unwrap()
                .to_string();
            println!(
                "dumpable={} core=[{core}] report=[{report}]",
                nix::sys::prctl::get_dumpable().unwrap()
            );
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "hardening::tests::hardening_clears_dumpable_and_the_core_limit",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("HARDENING_CHILD", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        let line = text
            .lines()
            .find_map(|l| l.find("dumpable=").map(|i| &l[i..]))
            .unwrap_or_else(|| panic!("the child said nothing: {text}"));
        assert!(line.starts_with("dumpable=false "), "{line}");
        let core: Vec<&str> = line
            .split("core=[")
            .nth(1)
            .unwrap()
            .split(']')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        // "Max core file size  0  0  bytes": soft and hard both 0.
        assert_eq!(&core[4..6], ["0", "0"], "{line}");
        assert!(line.contains("not dumpable: yes"), "{line}");
        assert!(line.contains("core dumps: off"), "{line}");
        // And this test process itself was left as it was.
        assert!(nix::sys::prctl::get_dumpable().unwrap());
    }

    #[test]
    fn the_report_says_what_failed() {
        let r = Report {
            not_dumpable: Outcome::Done("yes".into()),
            no_core_dumps: Outcome::Done("off".into()),
            key_page_locked: Outcome::Failed("RLIMIT_MEMLOCK 0 KiB".into()),
        };
        assert_eq!(
            r.to_string(),
            "process hardening: not dumpable: yes; core dumps: off; key page locked in RAM: NOT in effect (RLIMIT_MEMLOCK 0 KiB)"
        );
    }
}
