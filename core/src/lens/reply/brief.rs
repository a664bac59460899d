//! BRIEF (§9.2): the service line, its summary and one line per capability
//! with its params.

use super::fields::{maps, objects, text, truthy};
use super::{Malformed, Rendered};
use crate::lens::lean::Lines;
use crate::lens::number::MAX_DEPTH;
use crate::lens::view::{Json, JsonObject, View};

pub(super) fn brief<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
    let service = f
        .get("service")
        .and_then(Json::as_object)
        .ok_or(Malformed)?;
    let caps = objects(f.get("capabilities"))?;
    let out = lines.line();
    out.push_str("# ");
    text(service.get("name"), out);
    out.push_str(" (");
    text(service.get("id"), out);
    out.push(')');
    let summary = service.get("summary");
    if truthy(summary) {
        text(summary, lines.line());
    }
    for c in maps(caps) {
        let out = lines.line();
        text(c.get("kind"), out);
        out.push(' ');
        text(c.get("name"), out);
        write_params(c.get("params"), out);
        let summary = c.get("summary");
        if truthy(summary) {
            out.push_str(" — ");
            text(summary, out);
        }
        let risk = c.get("risk");
        if truthy(risk) {
            out.push_str(" [risk:");
            text(risk, out);
            out.push(']');
        }
    }
    Ok(())
}

/// `(p1: type1, p2?: type2)` from a §4.1.1 params object; `()` when absent.
fn write_params<J: Json>(params: Option<&J>, out: &mut String) {
    out.push('(');
    if let Some(params) = params {
        match params.view() {
            View::Null => {}
            View::Object(m) => write_param_entries(m, out, 0),
            _ => text(Some(params), out),
        }
    }
    out.push(')');
}

fn write_param_entries<O: JsonObject + ?Sized>(m: &O, out: &mut String, depth: usize) {
    for (i, (k, t)) in m.entries().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(k);
        out.push_str(": ");
        write_type(t, out, depth + 1);
    }
}

/// A §4.1.1 type: a type string verbatim, a nested params object as
/// `{k: type, …}`, an array of objects as `[{…}]`.
fn write_type<J: Json>(t: &J, out: &mut String, depth: usize) {
    match t.view() {
        View::String(s) => out.push_str(s),
        View::Array(_) | View::Object(_) if depth >= MAX_DEPTH => out.push('…'),
        View::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_type(item, out, depth + 1);
            }
            out.push(']');
        }
        View::Object(m) => {
            out.push('{');
            write_param_entries(m, out, depth);
            out.push('}');
        }
        _ => text(Some(t), out),
    }
}
