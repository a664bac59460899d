//! The requester as a chain of processes: the peer the kernel named, its
//! parent, and so on up to the program that opened its session
//! (`claude (4242) ← node (4200) ← bash (4100) ← kitty (3900)`).
//!
//! Why: one pid and one executable path say little ("python3"); the chain
//! says which terminal, editor or service manager the request came out of,
//! the way an SSH agent or a password manager names the app behind a
//! request. Like the executable path of [`super::peer`], it is a hint and
//! never an authority: every process can rename itself (`comm`), exec
//! another program, or exit and have its pid reused. So each link carries
//! its start time (`/proc/PID/stat`, field 22), read once when the chain is
//! read and again whenever the chain is shown or recorded
//! ([`ProcessChain::rechecked`]); a link whose pid now has another start time
//! (or none, or it has exited and waits to be reaped) is marked as no longer
//! the same process. Reviews still label
//! the chain "not verified".
//!
//! Where the chain ends: after the session leader (`pid == sid`), the chain
//! takes one more link, its parent: the program that opened the session (a
//! terminal emulator, `sshd`, `tmux`, the desktop's launcher). It never
//! includes pid 1 (init) or the kernel's threads, and it stops early where
//! `/proc` cannot be read.
//!
//! Bounds: at most [`MAX_DEPTH`] links; each `/proc` file is read through a
//! [`MAX_STAT_BYTES`] (stat) limit; an executable path longer than
//! [`MAX_EXE_BYTES`] is dropped as unknown. So a hostile process tree costs
//! custody a few dozen small reads per request at most.
//!
//! Linux only (`/proc`); elsewhere the chain is empty.

use serde::Serialize;
use std::path::PathBuf;

/// The most links a chain has.
pub const MAX_DEPTH: usize = 12;
/// The most bytes read of one `/proc/PID/stat` (a real one is ~300 bytes;
/// `comm` is at most 16).
pub const MAX_STAT_BYTES: u64 = 4096;
/// An executable path longer than this is not kept (shown as unknown).
pub const MAX_EXE_BYTES: usize = 1024;

/// One process of the chain, as read from `/proc`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessLink {
    /// Its pid.
    pub pid: u32,
    /// The kernel's name for it (`comm`, at most 16 bytes, set by the
    /// process itself), as read: not display-safe.
    pub name: String,
    /// `/proc/PID/exe` when readable (another user's needs ptrace rights).
    pub exe: Option<PathBuf>,
    /// Start time in clock ticks after boot (`/proc/PID/stat` field 22): what
    /// tells this process from a later one with the same pid.
    pub start: u64,
    /// Whether it leads its session.
    pub session_leader: bool,
    /// Whether, when last checked, the pid still ran the process with this
    /// start time.
    pub same: bool,
}

/// The chain, from the peer up. Empty where `/proc` is not available or the
/// peer's pid is unknown.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct ProcessChain {
    /// The links, the peer first.
    pub links: Vec<ProcessLink>,
}

/// What `/proc/PID/stat` says that the chain uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    /// Exited, not yet reaped (`Z`, `X`): no longer the process that asked.
    dead: bool,
    ppid: u32,
    sid: u32,
    start: u64,
}

impl ProcessChain {
    /// Reads the chain of `pid` now. Each link's stat is read before and
    /// after its executable: a link whose start time changed in between (the
    /// pid was reused while we looked) ends the chain.
    pub fn read(pid: u32) -> ProcessChain {
        let mut links = Vec::new();
        let mut next = Some(pid);
        let mut after_leader = false;
        while let Some(pid) = next.take() {
            if links.len() >= MAX_DEPTH || pid <= 1 {
                break;
            }
            let Some((name, before)) = os::stat(pid) else {
                break;
            };
            // Kernel threads (children of kthreadd, pid 2) are no requester.
            if before.ppid == 2 || pid == 2 {
                break;
            }
            let exe = os::exe(pid).filter(|e| e.as_os_str().len() <= MAX_EXE_BYTES);
            let Some((_, after)) = os::stat(pid) else {
                break;
            };
            if after.start != before.start || after.dead {
                break;
            }
            let session_leader = before.sid == pid;
            links.push(ProcessLink {
                pid,
                name,
                exe,
                start: before.start,
                session_leader,
                same: true,
            });
            if after_leader {
                break;
            }
            after_leader = session_leader;
            next = Some(before.ppid);
        }
        ProcessChain { links }
    }

    /// The same chain with every link's `same` checked again now: a pid that
    /// is gone, or now has another start time, is no longer that process.
    pub fn rechecked(&self) -> ProcessChain {
        ProcessChain {
            links: self
                .links
                .iter()
                .map(|l| ProcessLink {
                    same: l.same
                        && os::stat(l.pid).is_some_and(|(_, s)| s.start == l.start && !s.dead),
                    ..l.clone()
                })
                .collect(),
        }
    }

    /// Whether there is no link.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The chain as JSON text for the audit log (`peer_chain`), or `None`
    /// when empty. Names and paths are stored as read (the log is evidence).
    pub fn to_audit_text(&self) -> Option<String> {
        if self.links.is_empty() {
            return None;
        }
        serde_json::to_string(&self.links).ok()
    }
}

/// Parses the text of `/proc/PID/stat`: `pid (comm) state ppid pgrp session
/// … starttime …`. `comm` may hold spaces and parentheses, so it ends at the
/// last `)`.
fn parse_stat(text: &str) -> Option<(String, Stat)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state): field N is rest[N - 3].
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some((
        name,
        Stat {
            dead: matches!(rest.first().copied(), Some("Z" | "X" | "x")),
            ppid: u32::try_from(field(4)?).ok()?,
            sid: u32::try_from(field(6)?).ok()?,
            start: field(22)?,
        },
    ))
}

#[cfg(target_os = "linux")]
mod os {
    use super::{parse_stat, Stat, MAX_STAT_BYTES};
    use std::io::Read;
    use std::path::PathBuf;

    pub fn stat(pid: u32) -> Option<(String, Stat)> {
        let file = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
        let mut bytes = Vec::new();
        file.take(MAX_STAT_BYTES).read_to_end(&mut bytes).ok()?;
        parse_stat(&String::from_utf8_lossy(&bytes))
    }

    pub fn exe(pid: u32) -> Option<PathBuf> {
        std::fs::read_link(format!("/proc/{pid}/exe")).ok()
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use super::Stat;
    use std::path::PathBuf;

    pub fn stat(_pid: u32) -> Option<(String, Stat)> {
        None
    }
    pub fn exe(_pid: u32) -> Option<PathBuf> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_names_with_spaces_and_parentheses_parse() {
        let text = "4242 (we (ird) name) S 4200 4242 4100 34816 4242 4194304 1 2 3 4 5 6 7 8 20 0 1 0 987654 1000 10";
        let (name, s) = parse_stat(text).unwrap();
        assert_eq!(name, "we (ird) name");
        assert_eq!(
            s,
            Stat {
                dead: false,
                ppid: 4200,
                sid: 4100,
                start: 987654
            }
        );
        assert!(
            parse_stat("4242 (x) S 1").is_none(),
            "a cut stat is refused"
        );
        let zombie = text.replace(") S ", ") Z ");
        assert!(parse_stat(&zombie).unwrap().1.dead);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_heads_its_own_chain_and_stays_the_same() {
        let chain = ProcessChain::read(std::process::id());
        let me = chain.links.first().expect("this process can read itself");
        assert_eq!(me.pid, std::process::id());
        assert!(chain.links.len() <= MAX_DEPTH);
        assert!(chain.links.iter().all(|l| l.pid > 1));
        assert!(chain.rechecked().links.iter().all(|l| l.same));
        let gone = ProcessChain {
            links: vec![ProcessLink {
                start: me.start + 1,
                ..me.clone()
            }],
        };
        assert!(
            !gone.rechecked().links[0].same,
            "another start time is another process"
        );
    }
}
