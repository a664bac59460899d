//! The agent's printed transcript: each step's request in one line, then
//! the Lens (§9) of every reply exactly as a model would read it, and its
//! token estimate (§8).

use super::client::Step;
use parley_core::estimate::est;
use parley_core::lens::{compact_json, render_reply};
use serde_json::Value;
use std::io::Write;

/// Writes the transcript; write errors are ignored (a closed stdout must
/// not stop the agent half-way through a commit).
pub struct Transcript<'w> {
    out: &'w mut (dyn Write + Send),
    n: usize,
}

impl<'w> Transcript<'w> {
    /// A transcript written to `out`.
    pub fn new(out: &'w mut (dyn Write + Send)) -> Transcript<'w> {
        Transcript { out, n: 0 }
    }

    /// A numbered step heading.
    pub fn step(&mut self, title: &str) {
        self.n += 1;
        let _ = writeln!(self.out, "\n{}. {}", self.n, shown(title));
    }

    /// An indented note.
    pub fn note(&mut self, text: &str) {
        for line in text.lines() {
            let _ = writeln!(self.out, "   {}", shown(line));
        }
    }

    /// A closing line, after a blank one.
    pub fn finish(&mut self, text: &str) {
        let _ = writeln!(self.out, "\n{}", shown(text));
    }

    /// A request and its replies, as Lens.
    pub fn exchange(&mut self, step: &Step) {
        let _ = writeln!(self.out, "   → {}", shown(&request_line(&step.request)));
        for e in &step.exchange.events {
            self.lens(&render_reply(e));
        }
        let lens = render_reply(&step.exchange.reply);
        self.lens(&lens);
        let _ = writeln!(self.out, "   └ {} tokens", est(&lens));
    }

    fn lens(&mut self, lens: &str) {
        for line in lens.lines() {
            let _ = writeln!(self.out, "   │ {}", shown(line));
        }
    }
}

/// A line of service or agent text as printed for a human: Lens escapes
/// hidden characters already; whatever it leaves that custody's display
/// rule would not show goes through that rule
/// ([`parley_custody_client::display`], the same rule custody applies).
fn shown(line: &str) -> String {
    if parley_custody_client::display::is_display_safe(line) {
        line.to_string()
    } else {
        parley_custody_client::display::safe(line)
    }
}

/// `VERB what` for a request frame.
pub fn request_line(req: &Value) -> String {
    let verb = req["verb"].as_str().unwrap_or("?");
    let budget = req
        .get("budget")
        .and_then(Value::as_u64)
        .map(|b| format!(" budget={b}"))
        .unwrap_or_default();
    let grants = match req.get("grants").and_then(Value::as_array) {
        Some(g) if !g.is_empty() => format!(
            " + {} grant{}",
            g.len(),
            if g.len() == 1 { "" } else { "s" }
        ),
        _ => String::new(),
    };
    let what = match verb {
        "ASK" | "INTENT" => {
            let params = req.get("params").map(compact_json).unwrap_or_default();
            let auto = if req["auto"] == true { " auto" } else { "" };
            format!(
                "{} {params}{auto}",
                req["capability"].as_str().unwrap_or("?")
            )
        }
        "COMMIT" => {
            let hash = req["hash"].as_str().unwrap_or("");
            let short: String = hash.chars().take(10).collect();
            format!("{} #{short}…", req["proposal"].as_str().unwrap_or("?"))
        }
        "UNDO" => req["receipt"].as_str().unwrap_or("?").to_string(),
        "EXPAND" => req["handle"].as_str().unwrap_or("?").to_string(),
        _ => String::new(),
    };
    format!("{verb} {what}{budget}{grants}").replace("  ", " ")
}
