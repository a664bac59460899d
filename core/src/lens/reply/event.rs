//! EVENT (§9.2): the message and its progress, rounded as ECMAScript rounds.

use super::dialect_of;
use super::fields::text;
use crate::lens::lean::Lines;
use crate::lens::number::{as_f64, write_f64};
use crate::lens::view::{Json, JsonObject, View};

/// ECMAScript `Math.round`: halves round towards +∞.
fn js_round(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let fl = x.floor();
    if x - fl >= 0.5 {
        fl + 1.0
    } else {
        fl
    }
}

pub(super) fn event<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) {
    let out = lines.line();
    out.push_str("… ");
    text(f.get("message"), out);
    if let Some(View::Number(p)) = f.get("progress").map(Json::view) {
        if dialect_of(f).lens_strict_leaves() && !(0.0..=1.0).contains(&as_f64(p)) {
            return;
        }
        out.push_str(" (");
        write_f64(js_round(as_f64(p) * 100.0), out);
        out.push_str("%)");
    }
}
