//! Reading a frame: the lists of objects a rendering walks (a malformed one
//! makes the whole frame fall back to lean), ECMAScript truthiness, and the
//! verbatim and scalar leaves.

use super::Malformed;
use crate::lens::lean::write_scalar;
use crate::lens::number::{as_f64, write_compact, write_number};
use crate::lens::view::{Json, View};

/// A required list of objects.
pub(super) fn objects<J: Json>(v: Option<&J>) -> Result<&[J], Malformed> {
    match v.map(J::view) {
        Some(View::Array(items)) if items.iter().all(J::is_object) => Ok(items),
        _ => Err(Malformed),
    }
}

/// An optional list of objects: absent and `null` are empty.
pub(super) fn optional_objects<J: Json>(v: Option<&J>) -> Result<&[J], Malformed> {
    match v.map(J::view) {
        None | Some(View::Null) => Ok(&[]),
        _ => objects(v),
    }
}

/// The objects of a list checked by [`objects`].
pub(super) fn maps<J: Json>(items: &[J]) -> impl Iterator<Item = &J::Object> {
    items.iter().filter_map(J::as_object)
}

/// ECMAScript truthiness, which decides whether optional parts show (§9.2:
/// "a missing service summary omits its line", "[ (replay)]", …).
pub(super) fn truthy<J: Json>(v: Option<&J>) -> bool {
    match v.map(J::view) {
        None | Some(View::Null) => false,
        Some(View::Bool(b)) => b,
        Some(View::Number(n)) => {
            let f = as_f64(n);
            f != 0.0 && !f.is_nan()
        }
        Some(View::String(s)) => !s.is_empty(),
        Some(View::Array(_) | View::Object(_)) => true,
    }
}

/// A verbatim text field: see [`render_reply`](super::render_reply). (Inlined: it is called for
/// nearly every field, and its call cost more than its usual work, a copy.)
#[inline(always)]
pub(super) fn text<J: Json>(v: Option<&J>, out: &mut String) {
    match v {
        None => out.push('-'),
        Some(v) => match v.view() {
            View::Null => out.push('-'),
            View::String(s) => out.push_str(s),
            View::Number(n) => write_number(n, out),
            View::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            View::Array(_) | View::Object(_) => write_compact(v, out, 0),
        },
    }
}

/// A scalar by the §9.1 rule; a missing one as `null` (`-`).
pub(super) fn scalar_or_dash<J: Json>(v: Option<&J>, out: &mut String) {
    match v {
        Some(v) => write_scalar(v, out),
        None => out.push('-'),
    }
}
