//! Reply renderings (§9.2) and the More lines (§8, §9.2).
//!
//! Everything writes into one output buffer: no intermediate strings, no
//! `core::fmt`, no hashing of field names (a frame's objects have a handful
//! of keys, so lookups compare them directly; see [`JsonObject::get`]). The
//! renderers read any [`Json`] tree, so a `serde_json::Value` and a borrowed
//! [`Node`](crate::json::Node) render the same.
//!
//! The renderers are split by the part of a frame they write:
//!
//! * this file: the entry points ([`render`], [`render_reply`], …), the
//!   dispatch on `kind` and the lean fallback for a malformed frame;
//! * `fields.rs`: reading a frame's structures and verbatim leaves;
//! * `effects.rs`: effect lines ([`effect_line`]);
//! * `brief.rs`, `proposals.rs`, `clarify.rs`, `receipt.rs`, `error.rs`,
//!   `event.rs`: one reply kind each (`proposals.rs` also writes costs,
//!   `uses` and money);
//! * `more.rs`: the More lines (§8) any kind can end with;
//! * `tests.rs`: unit tests of the whole renderer (they render frames).

mod brief;
mod clarify;
mod effects;
mod error;
mod event;
mod fields;
mod more;
mod proposals;
mod receipt;
#[cfg(test)]
mod tests;

pub use effects::{effect_line, effect_line_in};

use super::lean::{lean, write_lean, write_lean_without, Lines};
use super::view::{Json, JsonObject, View};
use crate::dialect::Dialect;
use brief::brief;
use clarify::clarify;
use error::error;
use event::event;
use more::more;
use proposals::proposals;
use receipt::receipt;
use serde_json::Value;

/// A frame whose structure §9.2 cannot render; see [`render_reply`].
struct Malformed;

type Rendered = Result<(), Malformed>;

/// Keys left out of the fallback rendering: the envelope (§2.1), which says
/// nothing about the content, and the service's own `lens` text (§5), which
/// we never show.
const FALLBACK_SKIP: &[&str] = &["parley", "id", "re", "lens"];
/// [`FALLBACK_SKIP`] of a YEA frame: its own marker, and `more`, which YEA
/// renders as More lines after a frame of unknown kind too.
const FALLBACK_SKIP_YEA: &[&str] = &["yea", "id", "re", "lens", "more"];

/// The dialect a frame declares ([`Dialect::of_frame`]), on any tree.
fn dialect_of<O: JsonObject + ?Sized>(f: &O) -> Dialect {
    let yea =
        matches!(f.get("yea").map(Json::view), Some(View::Number(n)) if n.as_u64() == Some(1));
    if yea && f.get("parley").is_none() {
        Dialect::YeaV1
    } else {
        Dialect::ParleyV1
    }
}

/// Lens of anything: a reply frame (an object with a string `kind`) renders
/// with [`render_reply`], any other value with [`lean`](super::lean).
pub fn render(v: &Value) -> String {
    let mut out = String::new();
    render_into(v, &mut out);
    out
}

/// [`render`] of any [`Json`] tree into `out`, replacing its contents and
/// reusing its allocation (for callers that render many frames, such as
/// `parley lens --ndjson`).
pub fn render_into<J: Json>(v: &J, out: &mut String) {
    let mut lines = Lines::reuse(std::mem::take(out));
    match v.as_object() {
        Some(f) if f.get("kind").and_then(J::as_str).is_some() => write_reply(f, &mut lines),
        _ => write_lean(&mut lines, v),
    }
    *out = lines.buf;
}

/// [`render`] as its lines, the ones Lens itself makes: the exact text is
/// `render_lines(v).join("\n")`. A line can also hold a `\n` of its own,
/// written by the service in a verbatim field (§9.2 interpolates text as it
/// is). So a screen can make each line safe to show (escaping that `\n` too)
/// without losing the lines that are Lens's.
pub fn render_lines<J: Json>(v: &J) -> Vec<String> {
    let mut lines = Lines::recording();
    match v.as_object() {
        Some(f) if f.get("kind").and_then(J::as_str).is_some() => write_reply(f, &mut lines),
        _ => write_lean(&mut lines, v),
    }
    lines.into_lines()
}

/// §9.2 Lens of a reply frame: BRIEF, PROPOSALS, CLARIFY, RECEIPT (plain,
/// auto, replay and undo receipts), ANSWER, ERROR and EVENT, followed by one
/// More line (§8) per entry of `more` on any kind.
///
/// * A string `lens` field (the service's own rendering, §5) is ignored: the
///   text is always computed here, because a service's text is untrusted.
/// * Verbatim text (ids, summaries, messages, labels, effect fields, param
///   names and types, currencies) is written as it is, as §9.2 says: a line
///   break or a U+202E in it reaches the Lens unchanged (two implementations
///   must agree byte for byte). Showing Lens to a human is a separate step
///   that escapes such characters (see [`render_lines`]). A missing or
///   `null` text field renders as `-`; a number or boolean as itself; an
///   array or object as its compact JSON.
/// * Malformed leaf fields render as the value they hold: a `cost` that is
///   not `null` or `{amount: safe integer, currency: string}` is shown as
///   JSON (never as `free`), a non-numeric `expires` or `window` as its value.
/// * If the kind is unknown (or not a string), or a structure the rendering
///   has to walk is malformed — `service`/`receipt`/`consent` not an object,
///   `capabilities`/`proposals`/`options` (required), a proposal's `effects`
///   (required), an auto receipt's `effects`, `fix` or `more` (when present
///   and not `null`) not a list of objects — the whole frame is rendered in
///   lean notation instead, without `parley`, `id`, `re` and `lens`. Nothing
///   is then hidden and nothing is made up.
///
/// Never panics, and runs in time linear in the size of the frame.
pub fn render_reply(frame: &Value) -> String {
    let Value::Object(f) = frame else {
        return lean(frame);
    };
    let mut lines = Lines::new();
    write_reply(f, &mut lines);
    lines.buf
}

fn write_reply<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) {
    let rendered = match f.get("kind").map(Json::view) {
        Some(View::String(kind)) => render_kind(f, kind, lines),
        _ => Err(Malformed),
    };
    if let Err(Malformed) = rendered {
        // Whatever was written is discarded: the fallback replaces it all.
        lines.restart();
        let known = matches!(
            f.get("kind").map(Json::view),
            Some(View::String(
                "BRIEF" | "ANSWER" | "PROPOSALS" | "CLARIFY" | "RECEIPT" | "ERROR" | "EVENT"
            ))
        );
        // YEA (§9.2): a frame of unknown kind shows its other members, then
        // its More lines; if those are malformed too, everything in lean.
        if dialect_of(f) == Dialect::YeaV1 && !known {
            write_lean_without(lines, f, FALLBACK_SKIP_YEA);
            if more(f, lines).is_ok() {
                return;
            }
            lines.restart();
            write_lean_without(lines, f, &FALLBACK_SKIP_YEA[..4]);
        } else {
            write_lean_without(lines, f, FALLBACK_SKIP);
        }
    }
}

fn render_kind<O: JsonObject + ?Sized>(f: &O, kind: &str, lines: &mut Lines) -> Rendered {
    match kind {
        "BRIEF" => brief(f, lines)?,
        "ANSWER" => match f.get("data") {
            Some(data) => write_lean(lines, data),
            None => lines.line().push('-'), // As `null` renders.
        },
        "PROPOSALS" => proposals(f, lines)?,
        "CLARIFY" => clarify(f, lines)?,
        "RECEIPT" => receipt(f, lines)?,
        "ERROR" => error(f, lines)?,
        "EVENT" => event(f, lines),
        _ => return Err(Malformed),
    }
    more(f, lines)
}
