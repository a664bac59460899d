//! Fitting a reply to a token budget (§8, reference fitting algorithm).
//!
//! While `est(render_reply(reply))` is over the budget, the largest elidable
//! value is shortened and the rest parked behind an `EXPAND` handle, with a
//! More entry (`{"handle","path","remaining","est"}`) appended to the
//! reply's `more`:
//!
//! 1. **Deep roots** first: anything inside `ANSWER.data`, a proposal's
//!    `data` and `RECEIPT.receipt.result` (the roots themselves included).
//!    Candidates are every non-empty array (halved, keeping the first
//!    ⌊n/2⌋ items) and every string over 200 characters (cut to
//!    max(200, ⌊len/2⌋) characters, then `…` appended). The largest candidate
//!    by serialized size (code points of its compact JSON) is cut; on a tie
//!    the first in document order wins.
//! 2. Only when no deep candidate remains, the largest **list root** —
//!    `PROPOSALS.proposals` or `BRIEF.capabilities` — loses its trailing half.
//!    Nothing else in a proposal or capability is ever touched (§8), so the
//!    proposal hashes of what remains stay valid.
//! 3. Stop when the reply fits, nothing can be elided, or after
//!    [`MAX_STEPS`] cuts.
//!
//! Details, matching the published reference implementation:
//!
//! * `path` is the dotted path in the reply body, array indices as numbers:
//!   `data`, `data.events`, `data.rows.3.notes`, `proposals.1.data.items`,
//!   `receipt.result`, `proposals`. Keys are written as they are (a key that
//!   contains `.` makes the path ambiguous to read; the handle is what
//!   `EXPAND` uses).
//! * Cutting the same value again keeps its handle and its one More entry,
//!   whose `remaining` then covers everything after what is still shown.
//! * A More entry disappears when an enclosing array is cut so that the value
//!   is no longer shown: the enclosing remainder carries it, unshortened.
//! * `remaining` counts array items or characters; `est` is `est(text)` of a
//!   string remainder and `est(lean(items))` of an array remainder.
//! * Remainders always come from the input frame, so a remainder never
//!   contains an earlier cut.
//! * Handles are made by the caller's generator when a value is first cut,
//!   so their order is deterministic (`h_1`, `h_2`, … in tests).
//!
//! Where this deliberately differs from the reference (none of it changes a
//! well-formed reply that fits, nor the conformance vectors):
//!
//! * Characters are Unicode code points (the spec's unit), not UTF-16 units.
//! * A string already cut down to 200 characters is no longer a candidate;
//!   the reference picks it again and then gives up on the whole reply.
//! * Sizes are serialized sizes for strings too (the spec's words); the
//!   reference compares a string's length with an array's JSON length.
//! * A service-written `lens` field is removed once anything is elided: it
//!   would describe the unfitted reply.
//!
//! **Bounds.** At most [`MAX_STEPS`] (200) cuts, as in the reference. Each
//! step renders and estimates the reply once and walks the elidable values
//! once, all linear in the frame, so the whole fit is O(200 × frame size)
//! whatever the input: a hostile reply cannot make it spin.

use crate::estimate::est;
use crate::lens::{lean_items, number, render_reply};
use serde_json::{json, Map, Number, Value};

/// The most cuts one fit makes (the reference implementation's guard).
pub const MAX_STEPS: usize = 200;

/// Strings longer than this many characters may be shortened, never below it.
pub const MIN_STRING: usize = 200;

/// A §8 More entry: where a value was elided and how to get the rest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct More {
    /// The `EXPAND` handle.
    pub handle: String,
    /// Dotted path of the elided array or string within the reply body.
    pub path: String,
    /// Elided array items, or characters (code points) of an elided string.
    pub remaining: usize,
    /// `est` of the remainder: of the text, or of `lean` of the items.
    pub est: usize,
}

impl More {
    /// The entry as it appears in a reply's `more` array.
    pub fn to_value(&self) -> Value {
        json!({
            "handle": self.handle,
            "path": self.path,
            "remaining": self.remaining,
            "est": self.est,
        })
    }
}

/// One elided remainder, to park behind its handle.
#[derive(Debug, Clone, PartialEq)]
pub struct Elided {
    /// The More entry that announces it in the reply.
    pub more: More,
    /// What `EXPAND` of the handle answers as `data` (§8): `{"items": [...]}`
    /// for an array, `{"text": "..."}` for a string.
    pub rest: Value,
}

/// A fitted reply and what was elided from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The reply to send: the input with values cut and More entries added.
    pub reply: Value,
    /// One remainder per More entry added, in the same order.
    pub elided: Vec<Elided>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, Copy)]
enum SegRef<'a> {
    Key(&'a str),
    Index(usize),
}

impl SegRef<'_> {
    fn owned(self) -> Seg {
        match self {
            SegRef::Key(k) => Seg::Key(k.to_owned()),
            SegRef::Index(i) => Seg::Index(i),
        }
    }
    fn is(self, seg: &Seg) -> bool {
        match (self, seg) {
            (SegRef::Key(a), Seg::Key(b)) => a == b,
            (SegRef::Index(a), Seg::Index(b)) => a == *b,
            _ => false,
        }
    }
}

/// A value shortened to its first `kept` items or characters.
struct Cut {
    path: Vec<Seg>,
    kept: usize,
    handle: String,
    remaining: usize,
    est: usize,
}

impl Cut {
    fn more(&self) -> More {
        More {
            handle: self.handle.clone(),
            path: dotted(&self.path),
            remaining: self.remaining,
            est: self.est,
        }
    }
}

fn dotted(path: &[Seg]) -> String {
    let mut s = String::new();
    for (i, seg) in path.iter().enumerate() {
        if i > 0 {
            s.push('.');
        }
        match seg {
            Seg::Key(k) => s.push_str(k),
            Seg::Index(n) => s.push_str(&n.to_string()),
        }
    }
    s
}

fn get<'v>(mut v: &'v Value, path: &[Seg]) -> Option<&'v Value> {
    for seg in path {
        v = match (v, seg) {
            (Value::Object(m), Seg::Key(k)) => m.get(k)?,
            (Value::Array(a), Seg::Index(i)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn get_mut<'v>(mut v: &'v mut Value, path: &[Seg]) -> Option<&'v mut Value> {
    for seg in path {
        v = match (v, seg) {
            (Value::Object(m), Seg::Key(k)) => m.get_mut(k)?,
            (Value::Array(a), Seg::Index(i)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Code points of `s`.
fn chars(s: &str) -> usize {
    s.as_bytes().iter().filter(|&&b| (b as i8) >= -0x40).count()
}

/// Byte offset of the `n`th code point of `s` (its length if shorter).
fn char_offset(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// Code points each byte adds to a string's JSON text (§10 escapes).
const JSON_CHAR_LEN: [u8; 256] = {
    let mut t = [1u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 6;
        b += 1;
    }
    t[0x08] = 2;
    t[0x09] = 2;
    t[0x0A] = 2;
    t[0x0C] = 2;
    t[0x0D] = 2;
    t[b'"' as usize] = 2;
    t[b'\\' as usize] = 2;
    b = 0x80;
    while b < 0xC0 {
        t[b] = 0;
        b += 1;
    }
    t
};

fn json_string_len(s: &str) -> usize {
    2 + s
        .as_bytes()
        .iter()
        .map(|&b| usize::from(JSON_CHAR_LEN[b as usize]))
        .sum::<usize>()
}

fn json_number_len(n: &Number) -> usize {
    // ASCII, so bytes are code points.
    number(n).len()
}

/// Serialized size of `v` in code points of its compact JSON. (Key order
/// does not change a size.)
fn json_len(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => json_number_len(n),
        Value::String(s) => json_string_len(s),
        Value::Array(a) => 2 + a.len().saturating_sub(1) + a.iter().map(json_len).sum::<usize>(),
        Value::Object(m) => {
            2 + m.len().saturating_sub(1)
                + m.iter()
                    .map(|(k, v)| json_string_len(k) + 1 + json_len(v))
                    .sum::<usize>()
        }
    }
}

/// Whether `size` beats the best so far (strictly: ties keep the first).
fn bigger(best: &Option<(usize, Vec<Seg>)>, size: usize) -> bool {
    match best {
        Some((b, _)) => size > *b,
        None => true,
    }
}

/// The search for the largest candidate.
struct Search<'c> {
    cuts: &'c [Cut],
    best: Option<(usize, Vec<Seg>)>,
}

impl Search<'_> {
    fn consider(&mut self, size: usize, path: &[SegRef<'_>]) {
        if bigger(&self.best, size) {
            self.best = Some((size, path.iter().map(|s| s.owned()).collect()));
        }
    }

    /// Whether the string at `path` is one of our cuts already at the minimum.
    fn at_minimum(&self, path: &[SegRef<'_>]) -> bool {
        self.cuts.iter().any(|c| {
            c.kept <= MIN_STRING
                && c.path.len() == path.len()
                && path.iter().zip(&c.path).all(|(a, b)| a.is(b))
        })
    }

    /// Visits `v` at `path`, recording candidates; returns its serialized size.
    /// Children are visited before their array is considered; since an array
    /// is strictly larger than anything inside it, ties still go to the first
    /// candidate in document order.
    fn visit<'a>(&mut self, v: &'a Value, path: &mut Vec<SegRef<'a>>) -> usize {
        match v {
            Value::String(s) => {
                let size = json_string_len(s);
                let n = chars(s);
                if n > MIN_STRING
                    && !(n == MIN_STRING + 1 && s.ends_with('…') && self.at_minimum(path))
                {
                    self.consider(size, path);
                }
                size
            }
            Value::Array(items) => {
                let mut size = 2 + items.len().saturating_sub(1);
                for (i, item) in items.iter().enumerate() {
                    path.push(SegRef::Index(i));
                    size += self.visit(item, path);
                    path.pop();
                }
                if !items.is_empty() {
                    self.consider(size, path);
                }
                size
            }
            Value::Object(map) => {
                let mut size = 2 + map.len().saturating_sub(1);
                // Document (insertion) order, as Lens renders it (§9.1).
                for (k, item) in map {
                    path.push(SegRef::Key(k));
                    size += json_string_len(k) + 1 + self.visit(item, path);
                    path.pop();
                }
                size
            }
            _ => json_len(v),
        }
    }
}

/// Deep roots and list roots of a reply, by kind (§8).
fn roots(r: &Map<String, Value>, kind: &str) -> (Vec<Vec<Seg>>, Vec<Vec<Seg>>) {
    let key = |k: &str| Seg::Key(k.to_owned());
    match kind {
        "ANSWER" => (vec![vec![key("data")]], vec![]),
        "RECEIPT" => (vec![vec![key("receipt"), key("result")]], vec![]),
        "BRIEF" => (vec![], vec![vec![key("capabilities")]]),
        "PROPOSALS" => {
            let deep = match r.get("proposals") {
                Some(Value::Array(ps)) => ps
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.get("data").is_some())
                    .map(|(i, _)| vec![key("proposals"), Seg::Index(i), key("data")])
                    .collect(),
                _ => vec![],
            };
            (deep, vec![vec![key("proposals")]])
        }
        _ => (vec![], vec![]),
    }
}

/// The path of the value to cut next, if any.
fn pick(r: &Value, kind: &str, cuts: &[Cut]) -> Option<Vec<Seg>> {
    let map = r.as_object()?;
    let (deep, list) = roots(map, kind);
    let mut search = Search { cuts, best: None };
    for root in &deep {
        if let Some(v) = get(r, root) {
            let mut path: Vec<SegRef<'_>> = root
                .iter()
                .map(|s| match s {
                    Seg::Key(k) => SegRef::Key(k),
                    Seg::Index(i) => SegRef::Index(*i),
                })
                .collect();
            search.visit(v, &mut path);
        }
    }
    if search.best.is_none() {
        for root in &list {
            if let Some(v @ Value::Array(items)) = get(r, root) {
                if !items.is_empty() {
                    let size = json_len(v);
                    if bigger(&search.best, size) {
                        search.best = Some((size, root.clone()));
                    }
                }
            }
        }
    }
    search.best.map(|(_, path)| path)
}

/// `remaining` and `est` of what the input frame holds at `path` after `kept`.
fn remainder_stats(original: &Value, path: &[Seg], kept: usize) -> (usize, usize) {
    match get(original, path) {
        Some(Value::String(s)) => {
            let rest = &s[char_offset(s, kept)..];
            (chars(rest), est(rest))
        }
        Some(Value::Array(items)) => {
            let rest = &items[kept.min(items.len())..];
            (rest.len(), est(&lean_items(rest)))
        }
        _ => (0, 0),
    }
}

/// What `EXPAND` answers for a cut (§8).
fn remainder(original: &Value, cut: &Cut) -> Value {
    match get(original, &cut.path) {
        Some(Value::String(s)) => json!({ "text": &s[char_offset(s, cut.kept)..] }),
        Some(Value::Array(items)) => json!({ "items": &items[cut.kept.min(items.len())..] }),
        _ => json!({ "items": [] }),
    }
}

/// Shortens the value at `path`. Returns false if it could not.
fn halve(
    r: &mut Value,
    original: &Value,
    path: Vec<Seg>,
    cuts: &mut Vec<Cut>,
    next_handle: &mut dyn FnMut() -> String,
) -> bool {
    let existing = cuts.iter().position(|c| c.path == path);
    let Some(cur) = get_mut(r, &path) else {
        return false;
    };
    let kept = match cur {
        Value::String(s) => {
            // Our own earlier cut ends in the `…` we appended.
            let body = match existing {
                Some(_) => s.strip_suffix('…').unwrap_or(s.as_str()),
                None => s.as_str(),
            };
            let len = chars(body);
            let kept = MIN_STRING.max(len / 2);
            if kept >= len {
                return false;
            }
            let mut short = String::with_capacity(char_offset(body, kept) + 3);
            short.push_str(&body[..char_offset(body, kept)]);
            short.push('…');
            *s = short;
            kept
        }
        Value::Array(items) if !items.is_empty() => {
            let kept = items.len() / 2;
            items.truncate(kept);
            kept
        }
        _ => return false,
    };
    let (remaining, est) = remainder_stats(original, &path, kept);
    match existing {
        Some(i) => {
            let cut = &mut cuts[i];
            cut.kept = kept;
            cut.remaining = remaining;
            cut.est = est;
        }
        None => cuts.push(Cut {
            path,
            kept,
            handle: next_handle(),
            remaining,
            est,
        }),
    }
    true
}

/// The cuts whose value is still shown (no enclosing array dropped it).
fn live<'a>(r: &'a Value, cuts: &'a [Cut]) -> impl Iterator<Item = &'a Cut> + 'a {
    cuts.iter().filter(move |c| get(r, &c.path).is_some())
}

/// Sets `more` to the frame's own entries followed by one per live cut.
fn set_more(r: &mut Value, base: &[Value], cuts: &[Cut]) {
    let mut more = base.to_vec();
    more.extend(live(r, cuts).map(|c| c.more().to_value()));
    if let Value::Object(map) = r {
        map.insert("more".to_owned(), Value::Array(more));
    }
}

/// Fits `frame` (a reply) to `budget` estimated tokens of Lens by the §8
/// reference algorithm (see the module docs). `next_handle` names each newly
/// elided value; pass a counter in tests and a random id in services.
///
/// The input is not modified. A reply that already fits, a value that is not
/// an object with a string `kind`, and a kind without elidable roots come
/// back unchanged with nothing elided. If the frame's `more` is not a list,
/// it is replaced once something is elided.
pub fn fit_reply(frame: &Value, budget: usize, next_handle: &mut dyn FnMut() -> String) -> Fitted {
    let mut r = frame.clone();
    let Some(kind) = frame.get("kind").and_then(Value::as_str) else {
        return Fitted {
            reply: r,
            elided: Vec::new(),
        };
    };
    let base: Vec<Value> = match frame.get("more") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let mut cuts: Vec<Cut> = Vec::new();
    for _ in 0..MAX_STEPS {
        if !cuts.is_empty() {
            set_more(&mut r, &base, &cuts);
        }
        if est(&render_reply(&r)) <= budget {
            break;
        }
        let Some(path) = pick(&r, kind, &cuts) else {
            break;
        };
        if !halve(&mut r, frame, path, &mut cuts, next_handle) {
            break;
        }
    }
    if cuts.is_empty() {
        return Fitted {
            reply: r,
            elided: Vec::new(),
        };
    }
    set_more(&mut r, &base, &cuts);
    if let Value::Object(map) = &mut r {
        map.shift_remove("lens");
    }
    let elided = live(&r, &cuts)
        .map(|c| Elided {
            more: c.more(),
            rest: remainder(frame, c),
        })
        .collect();
    Fitted { reply: r, elided }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("h_{n}")
        }
    }

    #[test]
    fn sizes_are_compact_json_code_points() {
        let v = json!({"a": [1, "é\n", null, true, 1.5e300], "\"": {}});
        assert_eq!(json_len(&v), crate::lens::compact_json(&v).chars().count());
        assert_eq!(chars("aé東🎉"), 4);
        assert_eq!(char_offset("aé東", 2), 3);
        assert_eq!(char_offset("ab", 5), 2);
    }

    #[test]
    fn fits_unchanged_when_small() {
        let f = json!({"parley": 1, "id": "s", "re": "c", "kind": "ANSWER", "data": {"x": [1, 2, 3]}, "lens": "mine"});
        let out = fit_reply(&f, 100, &mut counter());
        assert_eq!(out.reply, f);
        assert!(out.elided.is_empty());
    }

    #[test]
    fn halves_the_largest_array_and_reports_the_rest() {
        let items: Vec<Value> = (0..40)
            .map(|i| json!({"id": i, "name": format!("item number {i}")}))
            .collect();
        let f = json!({"kind": "ANSWER", "data": {"small": [1], "items": items}, "lens": "x"});
        let out = fit_reply(&f, 120, &mut counter());
        let text = render_reply(&out.reply);
        assert!(est(&text) <= 120, "{text}");
        assert!(out.reply.get("lens").is_none());
        assert_eq!(out.elided.len(), 1);
        let e = &out.elided[0];
        assert_eq!(e.more.path, "data.items");
        assert_eq!(e.more.handle, "h_1");
        let kept = out.reply["data"]["items"].as_array().unwrap().len();
        assert_eq!(e.more.remaining, 40 - kept);
        assert_eq!(e.rest["items"].as_array().unwrap().len(), 40 - kept);
        assert_eq!(e.rest["items"][0]["id"], json!(kept));
        assert_eq!(out.reply["more"], json!([e.more.to_value()]));
    }

    #[test]
    fn strings_are_cut_by_code_points_and_keep_their_handle() {
        let s: String = "é".repeat(1000);
        let f = json!({"kind": "ANSWER", "data": {"t": s}});
        let out = fit_reply(&f, 0, &mut counter());
        let t = out.reply["data"]["t"].as_str().unwrap();
        assert_eq!(chars(t), MIN_STRING + 1);
        assert!(t.ends_with('…'));
        assert_eq!(out.elided.len(), 1);
        assert_eq!(out.elided[0].more.handle, "h_1");
        assert_eq!(out.elided[0].more.remaining, 800);
        assert_eq!(out.elided[0].rest, json!({"text": "é".repeat(800)}));
    }

    #[test]
    fn hostile_input_is_bounded() {
        // 2,000 one-item arrays, budget 0: at most MAX_STEPS cuts, then stop.
        let data: Vec<Value> = (0..2000).map(|i| json!([i])).collect();
        let f = json!({"kind": "ANSWER", "data": {"a": data, "s": "x".repeat(300_000)}});
        let mut made = 0;
        let out = fit_reply(&f, 0, &mut || {
            made += 1;
            format!("h_{made}")
        });
        assert!(made <= MAX_STEPS);
        assert!(!out.elided.is_empty());
        // Non-objects and unknown kinds come back as they are.
        for v in [
            json!(1),
            json!({"kind": "NOPE", "data": [1, 2, 3]}),
            json!({"kind": 3}),
        ] {
            assert_eq!(fit_reply(&v, 0, &mut counter()).reply, v);
        }
    }
}
