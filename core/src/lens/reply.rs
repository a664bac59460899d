//! Reply renderings (§9.2) and the More lines (§8, §9.2).
//!
//! Everything writes into one output buffer: no intermediate strings, no
//! `core::fmt`, no hashing of field names (a frame's objects have a handful
//! of keys, so lookups compare them directly; see [`JsonObject::get`]). The
//! renderers read any [`Json`] tree, so a `serde_json::Value` and a borrowed
//! [`Node`](crate::json::Node) render the same.

use super::lean::{lean, write_entry, write_lean, write_lean_without, write_scalar, Lines};
use super::number::{as_f64, write_compact, write_f64, write_number, MAX_DEPTH};
use super::time::{
    write_duration_strict, write_duration_value, write_time_strict, write_time_value,
};
use super::view::{Json, JsonObject, View};
use crate::canonical::{digit_pair, write_u64, MAX_SAFE_INTEGER};
use crate::dialect::{Dialect, UsageField};
use crate::money::is_zero_decimal;
use crate::quantity::{is_measure_name, read_members, Member, Quantity};
use serde_json::Value;
use std::cell::Cell;

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

/// A required list of objects.
fn objects<J: Json>(v: Option<&J>) -> Result<&[J], Malformed> {
    match v.map(J::view) {
        Some(View::Array(items)) if items.iter().all(J::is_object) => Ok(items),
        _ => Err(Malformed),
    }
}

/// An optional list of objects: absent and `null` are empty.
fn optional_objects<J: Json>(v: Option<&J>) -> Result<&[J], Malformed> {
    match v.map(J::view) {
        None | Some(View::Null) => Ok(&[]),
        _ => objects(v),
    }
}

/// The objects of a list checked by [`objects`].
fn maps<J: Json>(items: &[J]) -> impl Iterator<Item = &J::Object> {
    items.iter().filter_map(J::as_object)
}

/// ECMAScript truthiness, which decides whether optional parts show (§9.2:
/// "a missing service summary omits its line", "[ (replay)]", …).
fn truthy<J: Json>(v: Option<&J>) -> bool {
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

/// A verbatim text field: see [`render_reply`]. (Inlined: it is called for
/// nearly every field, and its call cost more than its usual work, a copy.)
#[inline(always)]
fn text<J: Json>(v: Option<&J>, out: &mut String) {
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

fn effect_lines<J: Json>(effects: &[J], dialect: Dialect, lines: &mut Lines) {
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

/// A scalar by the §9.1 rule; a missing one as `null` (`-`).
fn scalar_or_dash<J: Json>(v: Option<&J>, out: &mut String) {
    match v {
        Some(v) => write_scalar(v, out),
        None => out.push('-'),
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

// ---- BRIEF ----

fn brief<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
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

// ---- PROPOSALS ----

const ATTRS: [&str; 4] = ["cost", "risk", "undo", "expires"];
/// [`ATTRS`] of a YEA frame: `uses` instead of `cost` (§9.2).
const ATTRS_YEA: [&str; 4] = ["uses", "risk", "undo", "expires"];

/// The four §9.2 attribute values of every proposal, rendered once into one
/// buffer: they are compared across proposals, then written.
#[derive(Default)]
struct Attributes {
    text: String,
    /// Per proposal, where each of its four values starts, and the end.
    bounds: Vec<[usize; 5]>,
}

thread_local! {
    /// The buffers of the last [`Attributes`], for the next: a reply with
    /// proposals then costs no allocation for them (two were a tenth of
    /// the time of rendering a small one).
    static SPARE_ATTRIBUTES: Cell<Attributes> = Cell::default();
}

impl Attributes {
    /// The attributes of `ps`, in the spare buffers of this thread.
    fn of<J: Json>(ps: &[J], dialect: Dialect) -> Attributes {
        let Attributes {
            mut text,
            mut bounds,
        } = SPARE_ATTRIBUTES.with(Cell::take);
        text.clear();
        bounds.clear();
        for p in maps(ps) {
            let p = ProposalFields::of(p);
            let mut b = [0; 5];
            for (i, start) in b.iter_mut().take(4).enumerate() {
                *start = text.len();
                write_attribute(&p, i, dialect, &mut text);
            }
            b[4] = text.len();
            bounds.push(b);
        }
        Attributes { text, bounds }
    }

    /// Gives the buffers back for the next [`Attributes::of`] on this thread.
    fn recycle(self) {
        SPARE_ATTRIBUTES.with(|spare| spare.set(self));
    }

    fn get(&self, proposal: usize, attr: usize) -> &str {
        let b = &self.bounds[proposal];
        &self.text[b[attr]..b[attr + 1]]
    }
}

/// The fields of a proposal that §9.2 shows, found in one pass over its
/// entries (a proposal has about ten, and each is read once or twice).
struct ProposalFields<'a, J> {
    id: Option<&'a J>,
    summary: Option<&'a J>,
    effects: Option<&'a J>,
    cost: Option<&'a J>,
    uses: Option<&'a J>,
    risk: Option<&'a J>,
    undo: Option<&'a J>,
    expires: Option<&'a J>,
    data: Option<&'a J>,
}

impl<'a, J: Json> ProposalFields<'a, J> {
    fn of<O: JsonObject<Value = J> + ?Sized>(p: &'a O) -> Self {
        let mut f = ProposalFields {
            id: None,
            summary: None,
            effects: None,
            cost: None,
            uses: None,
            risk: None,
            undo: None,
            expires: None,
            data: None,
        };
        for (k, v) in p.entries() {
            let slot = match k {
                "id" => &mut f.id,
                "summary" => &mut f.summary,
                "effects" => &mut f.effects,
                "cost" => &mut f.cost,
                "uses" => &mut f.uses,
                "risk" => &mut f.risk,
                "undo" => &mut f.undo,
                "expires" => &mut f.expires,
                "data" => &mut f.data,
                _ => continue,
            };
            *slot = Some(v);
        }
        f
    }
}

/// Attribute `i` ([`ATTRS`]) of a proposal.
fn write_attribute<J: Json>(p: &ProposalFields<J>, i: usize, dialect: Dialect, out: &mut String) {
    let strict = dialect.lens_strict_leaves();
    match i {
        0 if dialect.usage_field() == UsageField::Uses => write_uses(p.uses, out),
        0 => write_cost(p.cost, out),
        2 if strict => match p.undo.and_then(Json::as_object) {
            Some(u) if u.get("window").is_some() => {
                let window = u.get("window");
                write_duration_strict(window, out, |out| scalar_or_dash(window, out));
            }
            _ => out.push_str("never"),
        },
        3 if strict => {
            let e = p.expires;
            write_time_strict(e, out, |out| scalar_or_dash(e, out));
        }
        1 => text(p.risk, out),
        2 => match p.undo.map(|u| (u, u.view())) {
            None | Some((_, View::Null)) => out.push_str("never"),
            Some((_, View::Object(u))) => {
                let window = u.get("window");
                write_duration_value(window, out, |out| text(window, out));
            }
            Some((other, _)) => text(Some(other), out),
        },
        _ => {
            let e = p.expires;
            write_time_value(e, out, |out| text(e, out));
        }
    }
}

/// An integer amount a peer holds exactly (|n| ≤ 2^53 − 1), as §5.1 requires.
fn safe_integer<J: Json>(v: Option<&J>) -> Option<i64> {
    let View::Number(n) = v?.view() else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        return (i.unsigned_abs() <= MAX_SAFE_INTEGER as u64).then_some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64).then_some(f as i64)
}

/// `free` for `null`, §9.2 money for a well-formed cost, and the value itself
/// (compact JSON) for anything else: a malformed cost is never `free`.
fn write_cost<J: Json>(v: Option<&J>, out: &mut String) {
    match v.map(J::view) {
        None | Some(View::Null) => out.push_str("free"),
        Some(View::Object(m)) => match (
            safe_integer(m.get("amount")),
            m.get("currency").map(J::view),
        ) {
            (Some(amount), Some(View::String(currency))) => write_money(amount, currency, out),
            _ => text(v, out),
        },
        Some(_) => text(v, out),
    }
}

/// YEA §9.2 `uses`: nothing when absent or empty (the attribute is then
/// omitted), `name quantity` per measure in canonical key order joined with
/// `, `, and `?` for a malformed `uses` (§5.1), never a part of it.
fn write_uses<J: Json>(v: Option<&J>, out: &mut String) {
    let Some(v) = v else { return };
    let Some(m) = v.as_object() else {
        out.push('?');
        return;
    };
    let mut entries: Vec<(&str, Quantity)> = Vec::with_capacity(m.len());
    for (name, q) in m.entries() {
        let q = match q.as_object() {
            Some(q) if is_measure_name(name) => read_members(
                q.entries().map(|(k, v)| {
                    let member = match v.view() {
                        View::Number(n) => Member::Number(n),
                        View::String(s) => Member::Str(s),
                        _ => Member::Other,
                    };
                    (k, member)
                }),
                name,
                "amount",
                &["amount", "scale", "unit"],
            ),
            _ => {
                out.push('?');
                return;
            }
        };
        match q {
            Ok(q) => entries.push((name, q)),
            Err(_) => {
                out.push('?');
                return;
            }
        }
    }
    // Measure names are ASCII: byte order is §10 code-point order.
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (i, (name, q)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
        out.push(' ');
        let _ = std::fmt::Write::write_fmt(out, format_args!("{q}"));
    }
}

/// §9.2 money, as [`Money`](crate::money::Money)'s `Display` writes it
/// (`12.50 USD`, `-0.05 EUR`, `500 JPY`), written in place.
fn write_money(amount: i64, currency: &str, out: &mut String) {
    if amount < 0 {
        out.push('-');
    }
    let abs = amount.unsigned_abs();
    if is_zero_decimal(currency) {
        write_u64(abs, out);
    } else {
        write_u64(abs / 100, out);
        out.push('.');
        out.push_str(digit_pair((abs % 100) as u8));
    }
    out.push(' ');
    out.push_str(currency);
}

/// `attr: value` for the attributes `pick` selects, joined by ` · `. In
/// YEA an attribute that renders empty (no `uses`) is left out (§9.2).
fn write_attrs(
    out: &mut String,
    attrs: &Attributes,
    p: usize,
    usage: UsageField,
    pick: impl Fn(usize) -> bool,
) {
    let mut first = true;
    let names = match usage {
        UsageField::Cost => &ATTRS,
        UsageField::Uses => &ATTRS_YEA,
    };
    for (i, name) in names.iter().enumerate() {
        let shown = usage == UsageField::Cost || !attrs.get(p, i).is_empty();
        if pick(i) && shown {
            if !first {
                out.push_str(" · ");
            }
            first = false;
            out.push_str(name);
            out.push_str(": ");
            out.push_str(attrs.get(p, i));
        }
    }
}

fn proposals<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
    let ps = objects(f.get("proposals"))?;
    // Checked before anything is written, as the fallback replaces it all.
    for p in maps(ps) {
        objects(p.get("effects"))?;
    }
    let dialect = dialect_of(f);
    let usage = dialect.usage_field();
    let attrs = Attributes::of(ps, dialect);
    let n = ps.len();
    let mut shared = [false; 4];
    if n >= 2 {
        for (i, s) in shared.iter_mut().enumerate() {
            *s = (1..n).all(|p| attrs.get(p, i) == attrs.get(0, i));
        }
    }
    let shown = |p: usize, i: usize| shown(&attrs, usage, p, i);
    let out = lines.line();
    write_u64(n as u64, out);
    out.push_str(if n == 1 { " proposal" } else { " proposals" });
    if (0..4).any(|i| shared[i] && shown(0, i)) {
        out.push_str(" — ");
        write_attrs(out, &attrs, 0, usage, |i| shared[i]);
    }
    out.push(':');
    let rendered = proposal_lines(ps, &attrs, &shared, dialect, lines);
    attrs.recycle();
    rendered
}

/// Whether attribute `i` of proposal `p` is written at all (YEA leaves out
/// an empty one).
fn shown(attrs: &Attributes, usage: UsageField, p: usize, i: usize) -> bool {
    usage == UsageField::Cost || !attrs.get(p, i).is_empty()
}

/// Each proposal's lines, after the first line of [`proposals`].
fn proposal_lines<J: Json>(
    ps: &[J],
    attrs: &Attributes,
    shared: &[bool; 4],
    dialect: Dialect,
    lines: &mut Lines,
) -> Rendered {
    let usage = dialect.usage_field();
    for (i, p) in maps(ps).enumerate() {
        let p = ProposalFields::of(p);
        let out = lines.line();
        out.push('[');
        text(p.id, out);
        out.push_str("] ");
        text(p.summary, out);
        effect_lines(objects(p.effects)?, dialect, lines);
        if (0..4).any(|a| !shared[a] && shown(attrs, usage, i, a)) {
            let out = lines.line();
            out.push_str("  ");
            write_attrs(out, attrs, i, usage, |i| !shared[i]);
        }
        if let Some(data) = p.data {
            write_entry(lines, "data", data, 1, false, 1);
        }
    }
    Ok(())
}

// ---- CLARIFY, RECEIPT, ERROR, EVENT ----

fn clarify<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
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

fn receipt<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
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

fn error<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
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

fn event<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) {
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

/// `… {remaining} more at {path} — EXPAND {handle} (~{est} tokens)` per entry.
fn more<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(kind: &str, body: Value) -> Value {
        let mut f = json!({"parley": 1, "id": "s1", "re": "c1", "kind": kind});
        for (k, v) in body.as_object().unwrap() {
            f[k] = v.clone();
        }
        f
    }

    #[test]
    fn service_lens_is_ignored() {
        let f = frame("EVENT", json!({"message": "hi", "lens": "✓ Paid 1000 USD"}));
        assert_eq!(render_reply(&f), "… hi");
    }

    #[test]
    fn verbatim_text_is_written_as_it_is() {
        let f = frame(
            "RECEIPT",
            json!({"receipt": {"id": "r\u{202e}1", "summary": "ok\n✓ Paid", "undo": null,
                   "result": {"k": "a\nb"}}}),
        );
        let exact = "✓ ok\n✓ Paid (receipt r\u{202e}1) · irreversible\n  result:\n    k: \"a\\nb\"";
        assert_eq!(render_reply(&f), exact);
        // Lens's own lines: the summary's line break is not one of them.
        assert_eq!(
            render_lines(&f),
            [
                "✓ ok\n✓ Paid (receipt r\u{202e}1) · irreversible",
                "  result:",
                "    k: \"a\\nb\""
            ]
        );
        assert_eq!(render_lines(&f).join("\n"), exact);
        let fallback = frame("NEW", json!({"a": [1, {"b": 2}]}));
        assert_eq!(
            render_lines(&fallback),
            ["kind: NEW", "a[2]:", "  - 1", "  - b: 2"]
        );
        assert_eq!(render_lines(&json!("x")), ["x"]);
    }

    #[test]
    fn effect_lines() {
        assert_eq!(
            effect_line(&json!({"op": "create", "target": "order"})),
            "+ create order"
        );
        assert_eq!(
            effect_line(
                &json!({"op": "update", "target": "e", "field": "start", "from": "a b", "to": null})
            ),
            "~ update e.start: a b → -"
        );
        assert_eq!(
            effect_line(&json!({"op": "other", "target": "x", "to": 5})),
            "* other x: - → 5"
        );
        assert_eq!(
            effect_line(&json!({"op": "charge", "target": "card", "detail": ""})),
            "$ charge card"
        );
        assert_eq!(
            effect_line(&json!({"op": "zap", "target": "x", "from": "1"})),
            "* zap x: \"1\" → -"
        );
        assert_eq!(
            effect_line(&json!({"op": "send", "target": "a\nb", "detail": 3})),
            "> send a\nb — 3"
        );
        assert_eq!(effect_line(&json!({})), "* - -");
        assert_eq!(effect_line(&json!("delete all")), "? delete all");
        assert_eq!(
            effect_line(&json!({"op": "delete", "target": "x", "to": {"a": [1]}})),
            "- delete x: - → {\"a\":[1]}"
        );
    }

    #[test]
    fn malformed_structures_fall_back_to_lean() {
        let f = frame("PROPOSALS", json!({"proposals": "none", "lens": "x"}));
        assert_eq!(render_reply(&f), "kind: PROPOSALS\nproposals: none");
        let f = frame("NEWKIND", json!({"x": 1}));
        assert_eq!(render_reply(&f), "kind: NEWKIND\nx: 1");
        let f = json!({"kind": 5});
        assert_eq!(render_reply(&f), "kind: 5");
        assert_eq!(render(&f), "kind: 5");
        assert_eq!(render_reply(&json!({"parley": 1, "id": "x"})), "{}");
        assert_eq!(render_reply(&json!([1])), "items: [1]");
        let f = frame("ANSWER", json!({"data": 1, "more": [1]}));
        assert_eq!(render_reply(&f), "kind: ANSWER\ndata: 1\nmore: [1]");
        let f = frame(
            "ERROR",
            json!({"code": "x", "message": "m", "consent": "yes"}),
        );
        assert!(render_reply(&f).starts_with("kind: ERROR\n"));
        let f = frame(
            "RECEIPT",
            json!({"auto": true, "receipt": {"id": "r", "summary": "s"}}),
        );
        assert!(render_reply(&f).starts_with("kind: RECEIPT\n"));
        let f = frame("PROPOSALS", json!({"proposals": [{"id": "p"}]}));
        assert!(render_reply(&f).starts_with("kind: PROPOSALS\n"));
    }

    #[test]
    fn malformed_leaves_show_their_value() {
        let p = json!({"id": "p", "summary": 7, "effects": [], "cost": {"amount": 1.5, "currency": "USD"},
                       "risk": null, "undo": {"window": "1h"}, "expires": "tomorrow", "hash": "h"});
        let f = frame("PROPOSALS", json!({"proposals": [p]}));
        assert_eq!(
            render_reply(&f),
            "1 proposal:\n[p] 7\n  cost: {\"amount\":1.5,\"currency\":\"USD\"} · risk: - · undo: 1h · expires: tomorrow"
        );
        let p = json!({"id": "p", "summary": "s", "effects": [], "cost": false, "risk": "low", "undo": null, "expires": 0});
        let f = frame("PROPOSALS", json!({"proposals": [p]}));
        assert_eq!(
            render_reply(&f),
            "1 proposal:\n[p] s\n  cost: false · risk: low · undo: never · expires: 1970-01-01T00:00Z"
        );
        let p = json!({"id": "p", "summary": "s", "effects": [], "cost": {"amount": 1250.0, "currency": "USD"}});
        let f = frame("PROPOSALS", json!({"proposals": [p]}));
        assert!(render_reply(&f).contains("cost: 12.50 USD · risk: - · undo: never · expires: -"));
        let big = json!({"amount": 9007199254740992u64, "currency": "USD"});
        let mut s = String::new();
        write_cost(Some(&big), &mut s);
        assert_eq!(s, "{\"amount\":9007199254740992,\"currency\":\"USD\"}");
    }

    #[test]
    fn money_is_written_as_money_displays_it() {
        use crate::money::Money;
        for (amount, currency) in [
            (1250, "USD"),
            (-5, "EUR"),
            (0, "USD"),
            (500, "JPY"),
            (-500, "KRW"),
            (7, "X\u{202e}"),
            (MAX_SAFE_INTEGER, "ISK"),
            (-MAX_SAFE_INTEGER, "ABC"),
            (i64::MIN, "USD"),
        ] {
            let mut s = String::new();
            write_money(amount, currency, &mut s);
            let money = Money {
                amount,
                currency: currency.to_string(),
            };
            assert_eq!(s, money.to_string());
        }
    }

    #[test]
    fn empty_and_shared_proposals() {
        assert_eq!(
            render_reply(&frame("PROPOSALS", json!({"proposals": []}))),
            "0 proposals:"
        );
        let p = json!({"id": "p", "summary": "s", "effects": [], "cost": null, "risk": "low", "undo": null, "expires": 60});
        let f = frame("PROPOSALS", json!({"proposals": [p.clone(), p]}));
        assert_eq!(
            render_reply(&f),
            "2 proposals — cost: free · risk: low · undo: never · expires: 1970-01-01T00:01Z:\n[p] s\n[p] s"
        );
    }

    #[test]
    fn brief_params() {
        let f = frame(
            "BRIEF",
            json!({"service": {"id": "s", "name": "S", "summary": ""},
                   "capabilities": [{"name": "a", "kind": "ask", "params": {"x": ["int", "string"], "y": [], "z": 3, "w": {"v?": [{"q": "bool"}]}}, "risk": "high"},
                                    {"name": "b", "kind": "intent", "params": {}, "summary": "Do b"}]}),
        );
        assert_eq!(
            render_reply(&f),
            "# S (s)\nask a(x: [int, string], y: [], z: 3, w: {v?: [{q: bool}]}) [risk:high]\nintent b() — Do b"
        );
    }

    #[test]
    fn receipts_and_errors() {
        let f = frame(
            "RECEIPT",
            json!({"replay": true, "auto": true, "receipt": {"id": "r", "summary": "S", "undoes": "r0",
            "effects": [{"op": "delete", "target": "x"}], "result": null}}),
        );
        assert_eq!(
            render_reply(&f),
            "↶ undid r0: S (receipt r) (replay)\n  - delete x\n  result: -"
        );
        let f = frame(
            "RECEIPT",
            json!({"receipt": {"id": "r", "summary": "S", "undo": {"until": 61}, "result": [1, 2]}}),
        );
        assert_eq!(
            render_reply(&f),
            "✓ S (receipt r) · undo until 1970-01-01T00:01:01Z\n  result: [1, 2]"
        );
        let f = frame(
            "ERROR",
            json!({"code": "limit", "message": "slow down", "fix": null, "need": [], "retry": 90, "consent": null}),
        );
        assert_eq!(render_reply(&f), "✗ limit: slow down\n  retry in: 90s");
        let f = frame(
            "ERROR",
            json!({"code": "forbidden", "message": "m", "need": {"verbs": ["COMMIT"]}, "retry": "soon"}),
        );
        assert_eq!(
            render_reply(&f),
            "✗ forbidden: m\n  need: {\"verbs\":[\"COMMIT\"]}"
        );
    }

    #[test]
    fn event_progress_rounds_like_math_round() {
        let ev = |p: Value| render_reply(&frame("EVENT", json!({"message": "m", "progress": p})));
        assert_eq!(ev(json!(0.425)), "… m (43%)");
        assert_eq!(ev(json!(0.005)), "… m (1%)");
        assert_eq!(ev(json!(-0.005)), "… m (0%)");
        assert_eq!(ev(json!(1)), "… m (100%)");
        assert_eq!(ev(json!(1e308)), "… m (Infinity%)");
        assert_eq!(ev(json!("half")), "… m");
    }

    #[test]
    fn more_lines_on_any_kind() {
        let f = frame(
            "CLARIFY",
            json!({"question": "Q?", "options": [], "more": [{"handle": "h", "path": "options", "remaining": 2, "est": 9}]}),
        );
        assert_eq!(
            render_reply(&f),
            "? Q?\n… 2 more at options — EXPAND h (~9 tokens)"
        );
        let f = frame("EVENT", json!({"message": "m", "more": null}));
        assert_eq!(render_reply(&f), "… m");
    }
}
