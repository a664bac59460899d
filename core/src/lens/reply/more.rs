//! The More lines (§8, §9.2): one per entry of `more`, on any kind.

use super::fields::{maps, optional_objects, text};
use super::Rendered;
use crate::lens::lean::Lines;
use crate::lens::view::JsonObject;

/// `… {remaining} more at {path} — EXPAND {handle} (~{est} tokens)` per entry.
pub(super) fn more<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
    for m in maps(optional_objects(f.get("more"))?) {
        let out = lines.line();
        out.push_str("… ");
        text(m.get("remaining"), out);
        out.push_str(" more at ");
        text(m.get("path"), out);
        out.push_str(" — EXPAND ");
        text(m.get("handle"), out);
        out.push_str(" (~");
        text(m.get("est"), out);
        out.push_str(" tokens)");
    }
    Ok(())
}
