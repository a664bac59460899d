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
//! A link's name: what the process runs, not what it calls itself. The
//! kernel's `comm` is cut at 15 bytes (`parley-playgrou`) and set by the
//! process, so the name is the file name of `/proc/PID/exe`; where that is
//! an interpreter (`python3`, `bash`, `node`, …) the script it runs, from the
//! command line, follows it (`python3 agent.py`). Where the executable
//! cannot be read (another user's process: it needs ptrace rights) the
//! command line's first word stands in; `comm` only where neither can be
//! read, marked `…` when it may be cut. `comm` is kept beside it as read.
//!
//! Bounds: at most [`MAX_DEPTH`] links; each `/proc` file is read through a
//! [`MAX_STAT_BYTES`] (stat) or [`MAX_CMDLINE_BYTES`] (command line) limit;
//! an executable path longer than [`MAX_EXE_BYTES`] is dropped as unknown; a
//! name is at most [`MAX_NAME_CHARS`] characters. So a hostile process tree
//! costs custody a few dozen small reads per request at most.
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
/// The most bytes read of one `/proc/PID/cmdline` (only its first words are
/// used).
pub const MAX_CMDLINE_BYTES: u64 = 4096;
/// The most characters of a link's name (a longer one ends in `…`).
pub const MAX_NAME_CHARS: usize = 96;

/// Programs that run another file named on their command line: for them the
/// script, not the interpreter, says what runs. Matched on the executable's
/// file name with any version suffix (`python3.11`, `node18`) removed.
const INTERPRETERS: &[&str] = &[
    "python",
    "pypy",
    "bash",
    "sh",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "fish",
    "node",
    "nodejs",
    "bun",
    "deno",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "Rscript",
    "osascript",
];

/// One process of the chain, as read from `/proc`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessLink {
    /// Its pid.
    pub pid: u32,
    /// What it runs (see the module's doc): the executable's file name, with
    /// the script for an interpreter (`python3 agent.py`); at most
    /// [`MAX_NAME_CHARS`]. As read: not display-safe.
    pub name: String,
    /// The kernel's name for it (`comm`, at most 15 bytes, set by the
    /// process itself), as read: not display-safe.
    pub comm: String,
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
            let Some((comm, before)) = os::stat(pid) else {
                break;
            };
            // Kernel threads (children of kthreadd, pid 2) are no requester.
            if before.ppid == 2 || pid == 2 {
                break;
            }
            let exe = os::exe(pid).filter(|e| e.as_os_str().len() <= MAX_EXE_BYTES);
            let cmdline = os::cmdline(pid);
            let Some((_, after)) = os::stat(pid) else {
                break;
            };
            if after.start != before.start || after.dead {
                break;
            }
            let session_leader = before.sid == pid;
            links.push(ProcessLink {
                pid,
                name: program_name(exe.as_deref(), &cmdline, &comm),
                comm,
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

/// A link's name from what was read (the module's doc says why): `exe`'s
/// file name, else the command line's first word, else `comm`; for an
/// interpreter, its script (the first word after it that is no option)
/// follows, or its `-c`/`-m`/`-e`.
fn program_name(exe: Option<&std::path::Path>, cmdline: &[String], comm: &str) -> String {
    let base = |s: &str| -> String {
        s.rsplit('/')
            .find(|p| !p.is_empty())
            .unwrap_or(s)
            .to_owned()
    };
    let program = match (exe, cmdline.first()) {
        (Some(e), _) => base(&e.to_string_lossy()),
        (None, Some(first)) if !first.is_empty() => base(first.split(' ').next().unwrap_or(first)),
        // `comm` is cut at 15 bytes: say it may be.
        _ if comm.len() >= 15 => format!("{comm}…"),
        _ => comm.to_owned(),
    };
    let mut name = program.clone();
    if is_interpreter(&program) {
        let mut args = cmdline.iter().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                // A module runs: name it.
                "-m" => {
                    name = format!("{program} -m {}", args.next().map_or("", |m| m.as_str()));
                    break;
                }
                // The code itself follows on the command line.
                "-c" | "-e" | "-E" | "--eval" | "-r" => {
                    name = format!("{program} {arg}");
                    break;
                }
                a if a.starts_with('-') => continue,
                script => {
                    name = format!("{program} {}", base(script));
                    break;
                }
            }
        }
    }
    if name.chars().count() > MAX_NAME_CHARS {
        name = name.chars().take(MAX_NAME_CHARS - 1).chain(['…']).collect();
    }
    name
}

/// Whether `program` (a file name) is one of [`INTERPRETERS`], any version
/// suffix aside (`python3.11`, `node18`).
fn is_interpreter(program: &str) -> bool {
    let stem = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&stem)
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
    use super::{parse_stat, Stat, MAX_CMDLINE_BYTES, MAX_STAT_BYTES};
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

    /// The command line's words (empty for a zombie, a kernel thread, or
    /// where it cannot be read); a word cut by the bound is dropped.
    pub fn cmdline(pid: u32) -> Vec<String> {
        let Ok(file) = std::fs::File::open(format!("/proc/{pid}/cmdline")) else {
            return Vec::new();
        };
        let mut bytes = Vec::new();
        if file
            .take(MAX_CMDLINE_BYTES)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return Vec::new();
        }
        let whole = bytes.last() == Some(&0);
        let cut = !whole && bytes.len() as u64 >= MAX_CMDLINE_BYTES;
        let mut words: Vec<String> = bytes
            .split(|b| *b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        // After the last NUL: nothing when whole; a cut word at the bound;
        // else a line the process rewrote without NULs (kept).
        if whole || cut {
            words.pop();
        }
        words
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
    pub fn cmdline(_pid: u32) -> Vec<String> {
        Vec::new()
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

    #[test]
    fn a_name_is_what_runs_never_the_cut_comm() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let exe = |p: &str| Some(std::path::PathBuf::from(p));
        let name = |e: Option<std::path::PathBuf>, c: &str, comm: &str| {
            program_name(
                e.as_deref(),
                &if c.is_empty() { vec![] } else { words(c) },
                comm,
            )
        };
        assert_eq!(
            name(
                exe("/opt/x/parley-playground"),
                "parley-playground demo",
                "parley-playgrou"
            ),
            "parley-playground"
        );
        assert_eq!(
            name(
                exe("/usr/bin/python3.11"),
                "python3 -u /home/a/agent.py --x",
                "python3"
            ),
            "python3.11 agent.py"
        );
        assert_eq!(
            name(exe("/usr/bin/bash"), "bash scripts/run.sh", "run.sh"),
            "bash run.sh"
        );
        assert_eq!(name(exe("/usr/bin/dash"), "sh -c exit", "sh"), "dash -c");
        assert_eq!(
            name(exe("/usr/bin/python3"), "python3 -m http.server", "python3"),
            "python3 -m http.server"
        );
        assert_eq!(name(exe("/usr/bin/node"), "node", "node"), "node", "a REPL");
        assert_eq!(
            name(exe("/usr/local/bin/claude"), "claude --flag x.py", "claude"),
            "claude",
            "no interpreter: no script"
        );
        // Another user's process: no exe, the command line's first word.
        assert_eq!(
            name(None, "/usr/lib/x/long-program-name run", "long-program-na"),
            "long-program-name"
        );
        assert_eq!(name(None, "sshd: ann@pts/0", "sshd"), "sshd:");
        // Nothing else readable: comm, marked where it may be cut.
        assert_eq!(name(None, "", "long-program-na"), "long-program-na…");
        assert_eq!(name(None, "", "sh"), "sh");
        let long = format!("python3 {}", "a".repeat(500));
        let n = name(exe("/usr/bin/python3"), &long, "python3");
        assert_eq!(n.chars().count(), MAX_NAME_CHARS);
        assert!(n.ends_with('…'));
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
