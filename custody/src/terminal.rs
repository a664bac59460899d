//! The terminal approver of the headless daemon: prints each review on the
//! daemon's controlling terminal and asks `approve? [y/N]`.
//!
//! It needs a TTY (`/dev/tty`) and refuses to start without one: an approver
//! that cannot ask a human must not exist. Deny is the default; a high-risk
//! or irreversible consent needs the word `approve` typed in full.

use crate::approver::{Approver, Gesture, PendingView, Verdict, Yes};
use crate::engine::Engine;
use crate::review::{Review, ReviewKind};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::sync::Mutex;

/// The terminal approver. Create it with [`TerminalApprover::open`], give it
/// to the engine, then [`TerminalApprover::run`] it with that engine.
pub struct TerminalApprover {
    tx: Mutex<mpsc::Sender<Event>>,
    rx: Mutex<Option<mpsc::Receiver<Event>>>,
    tty: Mutex<Option<File>>,
}

enum Event {
    New(Box<PendingView>),
    Gone(String),
}

/// No terminal to ask on.
#[derive(Debug, thiserror::Error)]
#[error("the terminal approver needs a terminal (/dev/tty: {0}); run parley-custodyd in a terminal, or use the desktop app")]
pub struct NoTty(std::io::Error);

impl TerminalApprover {
    /// Opens the controlling terminal.
    pub fn open() -> Result<TerminalApprover, NoTty> {
        let tty = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .map_err(NoTty)?;
        let (tx, rx) = mpsc::channel();
        Ok(TerminalApprover {
            tx: Mutex::new(tx),
            rx: Mutex::new(Some(rx)),
            tty: Mutex::new(Some(tty)),
        })
    }

    /// Asks about requests one at a time, on a dedicated thread, until the
    /// engine goes away. Call once.
    pub fn run(
        &self,
        engine: Engine,
        rt: tokio::runtime::Handle,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let rx = self.rx.lock().ok().and_then(|mut r| r.take());
        let tty = self.tty.lock().ok().and_then(|mut t| t.take());
        let (Some(rx), Some(tty)) = (rx, tty) else {
            return Err(std::io::Error::other(
                "the terminal approver is already running",
            ));
        };
        std::thread::Builder::new()
            .name("terminal-approver".into())
            .spawn(move || {
                let mut out = match tty.try_clone() {
                    Ok(o) => o,
                    Err(_) => return,
                };
                let mut input = BufReader::new(tty);
                let mut gone: Vec<String> = Vec::new();
                while let Ok(ev) = rx.recv() {
                    let p = match ev {
                        Event::Gone(id) => {
                            gone.push(id);
                            if gone.len() > 256 {
                                gone.remove(0);
                            }
                            continue;
                        }
                        Event::New(p) => p,
                    };
                    // Drain withdrawals that arrived meanwhile.
                    while let Ok(Event::Gone(id)) = rx.try_recv() {
                        gone.push(id);
                    }
                    if gone.contains(&p.id) {
                        continue;
                    }
                    // A failed OS authentication leaves the request pending:
                    // it is asked again, never silently left behind.
                    loop {
                        let verdict = ask(&mut input, &mut out, &p);
                        match rt.block_on(engine.decide(&p.id, verdict)) {
                            Ok(o) => {
                                let _ = writeln!(out, "→ {}\n", describe(&o));
                            }
                            Err(crate::engine::DecideError::StepUp(e)) => {
                                let _ = writeln!(out, "→ not signed: {e}. The request is still waiting; answer again.\n");
                                continue;
                            }
                            Err(e) => {
                                let _ = writeln!(out, "→ not done: {e}\n");
                            }
                        }
                        break;
                    }
                }
            })
    }
}

fn describe(o: &crate::queue::Outcome) -> &'static str {
    use crate::queue::Outcome::*;
    match o {
        Approved(_) => "approved: the consent was signed and sent to the agent",
        Issued(..) => "issued: the grant was signed and sent to the agent",
        Denied(_) => "denied",
        Expired => "expired",
        Cancelled => "cancelled",
    }
}

fn read_answer(input: &mut impl BufRead) -> String {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => String::new(),
        Ok(_) => line.trim().to_ascii_lowercase(),
    }
}

fn ask(input: &mut impl BufRead, out: &mut impl Write, p: &PendingView) -> Verdict {
    let _ = write!(out, "{}", render(&p.review, p.closes_at));
    let _ = write!(out, "approve? [y/N] ");
    let _ = out.flush();
    let a = read_answer(input);
    if a != "y" && a != "yes" {
        return Verdict::Deny(Some("denied at the terminal".into()));
    }
    let second_confirmation = if p.review.needs_second_confirmation {
        let _ = write!(
            out,
            "This is high risk or cannot be undone. Type \"approve\" to confirm: "
        );
        let _ = out.flush();
        if read_answer(input) != "approve" {
            return Verdict::Deny(Some("second confirmation not given".into()));
        }
        true
    } else {
        false
    };
    if p.step_up.required {
        let _ = writeln!(out, "Now authenticate (your system password) to sign it:");
        let _ = out.flush();
    }
    Verdict::Approve(Yes {
        gesture: Gesture::Terminal,
        second_confirmation,
    })
}

/// The review as terminal text, in ARCHITECTURE.md's order. All untrusted
/// strings in a [`Review`] are already display-safe.
pub fn render(r: &Review, closes_at: i64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let left = (closes_at - crate::engine::unix_now()).max(0);
    let _ = writeln!(
        s,
        "\n──────── Parley Custody: a request needs your decision ────────"
    );
    match r.kind {
        ReviewKind::Consent => {
            let _ = writeln!(s, "service     {}", r.service);
            let _ = writeln!(s, "capability  {}", r.capability);
            let _ = writeln!(s, "COST        {}", r.cost);
            let _ = writeln!(s, "risk        {}", r.risk);
            let _ = writeln!(
                s,
                "undo        {}",
                if r.irreversible {
                    "IRREVERSIBLE".to_string()
                } else {
                    format!("within {}", r.undo)
                }
            );
            let _ = writeln!(s, "effects:");
            for e in &r.effects {
                let _ = writeln!(s, "  {}", e.line);
            }
        }
        ReviewKind::Grant => {
            let _ = writeln!(s, "GRANT       {}", r.preview);
            let _ = writeln!(s, "caveats:");
            for c in &r.caveats {
                let _ = writeln!(s, "  {}  {}", c.words, c.json);
            }
        }
    }
    let _ = writeln!(s, "closes in   {}", parley_core::lens::duration(left));
    let exe = r.requester.exe.as_deref().unwrap_or("unknown");
    let pid = r.requester.pid.map_or("?".to_string(), |p| p.to_string());
    let _ = writeln!(
        s,
        "asked by    user {} (uid {}), pid {pid}, {exe} (not verified)",
        r.requester.user, r.requester.uid
    );
    let label = r
        .agent
        .label
        .as_deref()
        .map(|l| format!(" \"{l}\""))
        .unwrap_or_default();
    let known = if r.agent.known {
        ""
    } else {
        " — never granted to before"
    };
    let _ = writeln!(s, "agent       {}{label}{known}", r.agent.short);
    if !r.their_words.is_empty() {
        let whose = if r.kind == ReviewKind::Consent {
            "the service says"
        } else {
            "the agent says"
        };
        let _ = writeln!(s, "{whose}: \"{}\"", r.their_words);
    }
    if !r.hash_short.is_empty() {
        let _ = writeln!(s, "hash        {}…", r.hash_short);
    }
    for w in &r.warnings {
        let _ = writeln!(s, "WARNING     {w}");
    }
    s
}

impl Approver for TerminalApprover {
    fn notify(&self, pending: &PendingView) {
        if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(Event::New(Box::new(pending.clone())));
        }
    }
    fn withdrawn(&self, id: &str) {
        if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(Event::Gone(id.to_string()));
        }
    }
}
