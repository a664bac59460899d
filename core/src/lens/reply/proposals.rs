//! PROPOSALS (§9.2): the count line with the attributes every proposal
//! shares, then each proposal with its effects and its own attributes; and
//! the attribute values themselves (cost, YEA `uses`, money, risk, undo,
//! expires).

use super::effects::effect_lines;
use super::fields::{maps, objects, scalar_or_dash, text};
use super::{dialect_of, Rendered};
use crate::canonical::{digit_pair, write_u64, MAX_SAFE_INTEGER};
use crate::dialect::{Dialect, UsageField};
use crate::lens::lean::{write_entry, Lines};
use crate::lens::time::{
    write_duration_strict, write_duration_value, write_time_strict, write_time_value,
};
use crate::lens::view::{Json, JsonObject, View};
use crate::money::is_zero_decimal;
use crate::quantity::{is_measure_name, read_members, Member, Quantity};
use std::cell::Cell;

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
pub(super) fn write_cost<J: Json>(v: Option<&J>, out: &mut String) {
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
pub(super) fn write_money(amount: i64, currency: &str, out: &mut String) {
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

pub(super) fn proposals<O: JsonObject + ?Sized>(f: &O, lines: &mut Lines) -> Rendered {
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
