//! §9.2 effect lines, in proposals and auto receipts, and on their own
//! ([`effect_line`]).

use super::fields::{maps, scalar_or_dash, text, truthy};
use crate::dialect::Dialect;
use crate::lens::lean::Lines;
use crate::lens::view::{Json, JsonObject};
use serde_json::Value;

/// §9.2 effect line: `SYM op target[.field][: from → to][ — detail]`, with
/// SYM `+` create, `~` update, `-` delete, `>` send, `$` charge and `*` for
/// `other` or an unknown op. `from → to` appears when either key is present
/// (a missing side renders as `-`); both sides use the §9.1 scalar rule.
/// `op`, `target`, `field` and `detail` are verbatim text, as they are:
/// escape the line before showing it to a human.
/// Something that is not an object renders as `? ` and its compact JSON.
pub fn effect_line(effect: &Value) -> String {
    let mut s = String::new();
    match effect {
        Value::Object(e) => write_effect_map(e, Dialect::ParleyV1, &mut s),
        _ => {
            s.push_str("? ");
            text(Some(effect), &mut s);
        }
    }
    s
}

/// [`effect_line`] of an effect in a frame of `dialect`, written in place.
pub fn effect_line_in(effect: &Value, dialect: Dialect) -> String {
    let mut s = String::new();
    match effect {
        Value::Object(e) => write_effect_map(e, dialect, &mut s),
        _ => {
            s.push_str("? ");
            text(Some(effect), &mut s);
        }
    }
    s
}

pub(super) fn effect_lines<J: Json>(effects: &[J], dialect: Dialect, lines: &mut Lines) {
    for e in maps(effects) {
        let out = lines.line();
        out.push_str("  ");
        write_effect_map(e, dialect, out);
    }
}

/// The fields of an effect, found in one pass over its entries.
struct EffectFields<'a, J> {
    op: Option<&'a J>,
    target: Option<&'a J>,
    field: Option<&'a J>,
    from: Option<&'a J>,
    to: Option<&'a J>,
    detail: Option<&'a J>,
}

impl<'a, J: Json> EffectFields<'a, J> {
    fn of<O: JsonObject<Value = J> + ?Sized>(e: &'a O) -> Self {
        let mut f = EffectFields {
            op: None,
            target: None,
            field: None,
            from: None,
            to: None,
            detail: None,
        };
        for (k, v) in e.entries() {
            let slot = match k {
                "op" => &mut f.op,
                "target" => &mut f.target,
                "field" => &mut f.field,
                "from" => &mut f.from,
                "to" => &mut f.to,
                "detail" => &mut f.detail,
                _ => continue,
            };
            *slot = Some(v);
        }
        f
    }
}

fn write_effect_map<O: JsonObject + ?Sized>(e: &O, dialect: Dialect, out: &mut String) {
    let f = EffectFields::of(e);
    let charge = dialect
        .effect_ops()
        .contains(&crate::proposal::EffectOp::Charge);
    out.push(match f.op.and_then(Json::as_str) {
        Some("create") => '+',
        Some("update") => '~',
        Some("delete") => '-',
        Some("send") => '>',
        // Parley's charge op; YEA dropped it, so there it is an unknown op.
        Some("charge") if charge => '$',
        _ => '*',
    });
    out.push(' ');
    text(f.op, out);
    out.push(' ');
    text(f.target, out);
    if truthy(f.field) {
        out.push('.');
        text(f.field, out);
    }
    if f.from.is_some() || f.to.is_some() {
        out.push_str(": ");
        scalar_or_dash(f.from, out);
        out.push_str(" → ");
        scalar_or_dash(f.to, out);
    }
    if truthy(f.detail) {
        out.push_str(" — ");
        text(f.detail, out);
    }
}
