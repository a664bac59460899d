//! RECEIPT (§9.2): plain, auto, replay and undo receipts.

use super::effects::effect_lines;
use super::fields::{objects, text, truthy};
use super::{dialect_of, Malformed, Rendered};
use crate::lens::lean::{write_entry, write_scalar, Lines};
use crate::lens::time::{write_time_strict, write_time_value};
use crate::lens::view::{Json, JsonObject};

pub(super) fn receipt<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
    let rc = f
        .get("receipt")
        .and_then(Json::as_object)
        .ok_or(Malformed)?;
    // Effects are shown only for auto-commits (§9.2): otherwise the model
    // already read them in the proposal.
    let effects = if truthy(f.get("auto")) {
        objects(rc.get("effects"))?
    } else {
        &[]
    };
    let replay = truthy(f.get("replay"));
    let tag = |out: &mut String| {
        out.push_str("(receipt ");
        text(rc.get("id"), out);
        out.push(')');
        if replay {
            out.push_str(" (replay)");
        }
    };
    let out = lines.line();
    let undoes = rc.get("undoes");
    if truthy(undoes) {
        out.push_str("↶ undid ");
        text(undoes, out);
        out.push_str(": ");
        text(rc.get("summary"), out);
        out.push(' ');
        tag(out);
    } else {
        out.push_str("✓ ");
        text(rc.get("summary"), out);
        out.push(' ');
        tag(out);
        out.push_str(" · ");
        let undo = rc.get("undo");
        let strict_until = rc
            .get("undo")
            .and_then(Json::as_object)
            .and_then(|u| u.get("until"));
        if dialect_of(f).lens_strict_leaves() {
            match strict_until {
                Some(until) => {
                    out.push_str("undo until ");
                    write_time_strict(Some(until), out, |o| write_scalar(until, o));
                }
                None => out.push_str("irreversible"),
            }
        } else if truthy(undo) {
            out.push_str("undo until ");
            match undo.and_then(Json::as_object) {
                Some(u) => {
                    let until = u.get("until");
                    write_time_value(until, out, |o| text(until, o));
                }
                None => text(undo, out),
            }
        } else {
            out.push_str("irreversible");
        }
    }
    effect_lines(effects, dialect_of(f), lines);
    if let Some(result) = rc.get("result") {
        write_entry(lines, "result", result, 1, false, 1);
    }
    Ok(())
}
