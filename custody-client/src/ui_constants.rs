//! The facts the desktop UI (`ui/`) and custody must agree on, in one place:
//! the currencies without minor units (from `parley_core::money`), how long a
//! review window or grant form must have been in front before Approve or
//! Issue counts ([`APPROVE_DELAY`]), and the longest field shown
//! ([`MAX_FIELD_CHARS`](crate::display::MAX_FIELD_CHARS)), the words
//! for each verb ([`VERB_WORDS`]), and how long a window waits for a call
//! that may wait for OS authentication ([`DECIDE_WAIT`]).
//!
//! The UI does not keep its own copies: it imports them from
//! `ui/src/custody-constants.ts`, generated here ([`ui_constants`]; run
//! `cargo run -p parley-custody-client --example custody_constants > ui/src/custody-constants.ts`),
//! and a unit test fails while the file in the tree differs.

use crate::display::MAX_FIELD_CHARS;
use parley_core::money::ZERO_DECIMAL;
use std::fmt::Write as _;
use std::time::Duration;

/// How long a review window or grant form must have been on screen, and
/// focused, before Approve or Issue counts (anti-clickjacking). Custody
/// enforces it (`parley_custody::desktop::permissions::APPROVE_DELAY` is
/// this constant); the UI arms its buttons after the same delay.
pub const APPROVE_DELAY: Duration = Duration::from_millis(1500);

/// How long a window waits for the answer to a call that may ask for OS
/// authentication (a decision, a change that loosens custody): longer than
/// custody can take on it, which is polkit's time limit for the password
/// (`parley_custody::stepup::DEFAULT_TIMEOUT`, 120 s) plus the service's own
/// margin for signing, the audit row and the answer (its `DECIDE_TIMEOUT`,
/// 150 s in all), so that a decision custody carried out never reads "no
/// answer" in its window. A test in custody holds the order.
pub const DECIDE_WAIT: Duration = Duration::from_secs(210);

/// Each protocol verb in the words a person reads: the grant form's check
/// boxes and custody's grant in one sentence ([`verb_words`]) say a verb
/// the same way.
pub const VERB_WORDS: [(&str, &str); 6] = [
    ("HELLO", "connect"),
    ("ASK", "ask for offers"),
    ("INTENT", "state intents"),
    ("COMMIT", "commit (place orders, book, pay)"),
    ("UNDO", "undo"),
    ("EXPAND", "expand results"),
];

/// A verb in words ([`VERB_WORDS`]); one we do not know is given as sent.
pub fn verb_words(verb: &str) -> &str {
    VERB_WORDS
        .iter()
        .find(|(v, _)| *v == verb)
        .map_or(verb, |(_, words)| words)
}

/// The TypeScript module `ui/src/custody-constants.ts` the UI imports these
/// facts from.
pub fn ui_constants() -> String {
    let mut out = String::new();
    out.push_str(
        "// Generated from the Rust constants by custody-client/src/ui_constants.rs (`ui_constants`): do not edit.\n\
         // Regenerate: cargo run -p parley-custody-client --example custody_constants > ui/src/custody-constants.ts\n\n",
    );
    let list: Vec<String> = ZERO_DECIMAL.iter().map(|c| format!("'{c}'")).collect();
    let _ = writeln!(
        out,
        "/** Currencies without minor units: amounts are whole units (parley-core's money::ZERO_DECIMAL). */\n\
         export const ZERO_DECIMAL: readonly string[] = [{}]\n",
        list.join(", ")
    );
    let _ = writeln!(
        out,
        "/** How long a review window or grant form must have been in front, focused, before Approve or Issue counts (custody's APPROVE_DELAY). */\n\
         export const APPROVE_DELAY_MS = {}\n",
        APPROVE_DELAY.as_millis()
    );
    let _ = writeln!(
        out,
        "/** How long a window waits for a call that may ask for OS authentication: longer than custody can take on it (polkit's limit plus custody's margin; custody's DECIDE_WAIT). */\n\
         export const DECIDE_WAIT_MS = {}\n",
        DECIDE_WAIT.as_millis()
    );
    let words: Vec<String> = VERB_WORDS
        .iter()
        .map(|(v, w)| format!("  {v}: '{w}',"))
        .collect();
    let _ = writeln!(
        out,
        "/** Each protocol verb in the words a person reads (custody's grant sentence uses the same). */\n\
         export const VERB_WORDS: Readonly<Record<string, string>> = {{\n{}\n}}\n",
        words.join("\n")
    );
    let _ = writeln!(
        out,
        "/** The most characters of one field shown; the rest is summarized visibly (display::MAX_FIELD_CHARS). */\n\
         export const MAX_FIELD_CHARS = {MAX_FIELD_CHARS}"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ui_constants_are_generated_from_these_and_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../ui/src/custody-constants.ts"
        );
        let file = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            file == ui_constants(),
            "ui/src/custody-constants.ts is stale or missing: regenerate it with \
             `cargo run -p parley-custody-client --example custody_constants > ui/src/custody-constants.ts`"
        );
    }

    #[test]
    fn the_generated_file_holds_every_value() {
        let ts = ui_constants();
        for c in ZERO_DECIMAL {
            assert!(ts.contains(&format!("'{c}'")), "{c} missing");
        }
        assert!(ts.contains("export const APPROVE_DELAY_MS = 1500\n"));
        assert!(ts.contains("export const DECIDE_WAIT_MS = 210000\n"));
        for (v, w) in VERB_WORDS {
            assert!(ts.contains(&format!("  {v}: '{w}',\n")), "{v} missing");
            assert!(
                !w.contains('\''),
                "{w}: a quote would end the TypeScript string"
            );
        }
        assert!(ts.contains(&format!(
            "export const MAX_FIELD_CHARS = {MAX_FIELD_CHARS}\n"
        )));
    }
}
