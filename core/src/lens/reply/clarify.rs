//! CLARIFY (§9.2): the question and its numbered options.

use super::fields::{maps, objects, text};
use super::Rendered;
use crate::canonical::write_u64;
use crate::lens::lean::Lines;
use crate::lens::view::JsonObject;

pub(super) fn clarify<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
    let options = objects(f.get("options"))?;
    let out = lines.line();
    out.push_str("? ");
    text(f.get("question"), out);
    for (i, o) in maps(options).enumerate() {
        let out = lines.line();
        out.push_str("  ");
        write_u64(i as u64 + 1, out);
        out.push_str(". ");
        text(o.get("label"), out);
    }
    Ok(())
}
