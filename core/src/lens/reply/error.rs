//! ERROR (§9.2): the code and message, then fixes, need, consent and retry.

use super::fields::{maps, optional_objects, text, truthy};
use super::{dialect_of, Malformed, Rendered};
use crate::lens::lean::{write_scalar, Lines};
use crate::lens::number::write_compact;
use crate::lens::time::{write_duration_strict, write_duration_value};
use crate::lens::view::{Json, JsonObject, View};

pub(super) fn error<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
    let fixes = optional_objects(f.get("fix"))?;
    let consent = f.get("consent");
    let consent = match consent {
        _ if !truthy(consent) => None,
        Some(c) => Some(c.as_object().ok_or(Malformed)?),
        None => None,
    };
    let out = lines.line();
    out.push_str("✗ ");
    text(f.get("code"), out);
    out.push_str(": ");
    text(f.get("message"), out);
    for fix in maps(fixes) {
        let out = lines.line();
        out.push_str("  fix: ");
        text(fix.get("say"), out);
        if let Some(params) = fix.get("params").filter(|p| truthy(Some(*p))) {
            out.push_str(" → params ");
            write_compact(params, out, 0);
        }
    }
    if let Some(need) = f.get("need") {
        let empty = match need.view() {
            View::Null => true,
            View::Array(a) => a.is_empty(),
            View::String(s) => s.is_empty(),
            _ => false,
        };
        if !empty {
            let out = lines.line();
            out.push_str("  need: ");
            write_compact(need, out, 0);
        }
    }
    if let Some(c) = consent {
        let out = lines.line();
        out.push_str("  consent: principal must approve ");
        text(c.get("hash"), out);
        out.push_str(" (");
        text(c.get("summary"), out);
        out.push(')');
    }
    if let Some(retry) = f.get("retry") {
        if let View::Number(_) = retry.view() {
            let out = lines.line();
            out.push_str("  retry in: ");
            if dialect_of(f).lens_strict_leaves() {
                write_duration_strict(Some(retry), out, |o| write_scalar(retry, o));
            } else {
                write_duration_value(Some(retry), out, |_| {});
            }
        }
    }
    Ok(())
}
