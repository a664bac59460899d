//! Lean notation (§9.1): the Lens rendering of any JSON value.

use super::number::{write_compact, write_number, MAX_DEPTH};
use super::view::{same_key, Json, JsonObject, View};
use crate::canonical::{write_json_string, write_u64};
use serde_json::Value;

/// Output made of lines joined by `\n`, with no trailing newline.
pub(crate) struct Lines {
    pub(crate) buf: String,
    started: bool,
    /// Where each line after the first starts in `buf`, when the caller
    /// asked for them ([`lean_lines`], [`render_lines`](super::render_lines)).
    starts: Option<Vec<usize>>,
}

impl Lines {
    pub(crate) fn new() -> Lines {
        // Most renderings fit (the longest reference reply's is about 700
        // bytes); at most 1 KiB so that the allocation stays on the
        // allocator's fast path (glibc's per-thread cache ends at 1032).
        Lines::reuse(String::with_capacity(1024))
    }

    /// Output written into `buf`, which is cleared: its allocation is reused.
    pub(crate) fn reuse(mut buf: String) -> Lines {
        buf.clear();
        Lines {
            buf,
            started: false,
            starts: None,
        }
    }

    /// Output that also records where its lines start.
    pub(crate) fn recording() -> Lines {
        Lines {
            starts: Some(Vec::new()),
            ..Lines::new()
        }
    }

    /// Starts over, discarding what was written (keeps the recording).
    pub(crate) fn restart(&mut self) {
        self.buf.clear();
        self.started = false;
        if let Some(starts) = &mut self.starts {
            starts.clear();
        }
    }

    /// Starts a new line and returns the buffer to write it into.
    pub(crate) fn line(&mut self) -> &mut String {
        if self.started {
            self.buf.push('\n');
            if let Some(starts) = &mut self.starts {
                starts.push(self.buf.len());
            }
        }
        self.started = true;
        &mut self.buf
    }

    /// The lines written, each without its `\n` separator.
    pub(crate) fn into_lines(self) -> Vec<String> {
        let starts = self.starts.unwrap_or_default();
        let mut lines = Vec::with_capacity(starts.len() + 1);
        let mut from = 0;
        for &at in &starts {
            lines.push(self.buf[from..at - 1].to_string());
            from = at;
        }
        lines.push(self.buf[from..].to_string());
        lines
    }
}

/// Bytes allowed in a bare string: `[A-Za-z0-9_@./+\-:() '!?&%$#*=<>~^]`.
const BARE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = b'0';
    while c <= b'9' {
        t[c as usize] = true;
        c += 1;
    }
    c = b'A';
    while c <= b'Z' {
        t[c as usize] = true;
        t[(c + 32) as usize] = true;
        c += 1;
    }
    let extra = b"_@./+-:() '!?&%$#*=<>~^";
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
};

/// Whether `s` matches the JSON number grammar
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(s: &[u8]) -> bool {
    fn digits(s: &[u8], mut i: usize) -> usize {
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        i
    }
    let mut i = usize::from(s.first() == Some(&b'-'));
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(s, i + 1),
        _ => return false,
    }
    if s.get(i) == Some(&b'.') {
        let j = digits(s, i + 1);
        if j == i + 1 {
            return false;
        }
        i = j;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let j = digits(s, i);
        if j == i {
            return false;
        }
        i = j;
    }
    i == s.len()
}

/// §9.1: a string is bare when it matches `^[A-Za-z0-9_@./+\-:() '!?&%$#*=<>~^]+$`,
/// does not start or end with a space, is not `-`, `true`, `false` or `null`,
/// and does not match the JSON number grammar.
fn is_bare(s: &str) -> bool {
    let b = s.as_bytes();
    let first = match (b.first(), b.last()) {
        (Some(&first), Some(&last)) if first != b' ' && last != b' ' => first,
        _ => return false,
    };
    all_bare(b)
        // The exceptions all start with `-`, a digit, `t`, `f` or `n`.
        && !(matches!(first, b'-' | b'0'..=b'9' | b't' | b'f' | b'n')
            && (matches!(s, "-" | "true" | "false" | "null") || is_json_number(b)))
}

/// Whether every byte is in [`BARE`]; eight at a time without a branch per
/// byte, as names and ids are most of a table's text.
fn all_bare(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(8);
    for chunk in &mut chunks {
        if !chunk.iter().fold(true, |ok, &c| ok & BARE[usize::from(c)]) {
            return false;
        }
    }
    chunks.remainder().iter().all(|&c| BARE[usize::from(c)])
}

/// Writes a string (value or object key) by the §9.1 string rule: bare, or
/// quoted with the §10 escape set.
pub(crate) fn write_str_scalar(s: &str, out: &mut String) {
    if is_bare(s) {
        out.push_str(s);
    } else {
        write_json_string(s, out);
    }
}

/// The §9.1 scalar rule: `null` → `-`, `true`/`false`, numbers per ECMAScript
/// `Number::toString`, strings bare when safe (see below) and otherwise quoted
/// with the §10 escape set.
///
/// A string is bare only if it consists of `[A-Za-z0-9_@./+\-:() '!?&%$#*=<>~^]`,
/// does not start or end with a space, is not `-`, `true`, `false` or `null`
/// and is not a JSON number: so `"1e5"`, `"-0"`, `"123"`, `" 1"`, `"a, b"` and
/// `"café"` are quoted while `"0x10"`, `"01"` and `"2026-09-24T15:00:00Z"`
/// stay bare.
///
/// Arrays and objects are not scalars; given one, this returns its compact
/// JSON (as §9.1 renders non-scalar list items) rather than failing.
pub fn scalar(v: &Value) -> String {
    let mut s = String::new();
    write_scalar(v, &mut s);
    s
}

pub(crate) fn write_scalar<J: Json>(v: &J, out: &mut String) {
    match v.view() {
        View::Null => out.push('-'),
        View::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        View::Number(n) => write_number(n, out),
        View::String(s) => write_str_scalar(s, out),
        View::Array(_) | View::Object(_) => write_compact(v, out, 0),
    }
}

fn is_scalar<J: Json>(v: &J) -> bool {
    !matches!(v.view(), View::Array(_) | View::Object(_))
}

fn indent(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push_str("  ");
    }
}

/// Starts a line at indent `n`; with `dash`, the last indent level is
/// replaced by `- ` (the first entry of an object list item, §9.1).
fn start(lines: &mut Lines, n: usize, dash: bool) -> &mut String {
    let out = lines.line();
    if dash && n > 0 {
        indent(out, n - 1);
        out.push_str("- ");
    } else {
        indent(out, n);
    }
    out
}

/// `[a, b, c]`: a list of scalars.
fn write_scalar_list<J: Json>(items: &[J], out: &mut String) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_scalar(item, out);
    }
    out.push(']');
}

/// The first row if `items` qualifies for the §9.1 table form: every
/// element a non-empty object with the same keys in the same order and only
/// scalar values. The columns are the first row's keys.
fn table_first_row<J: Json>(items: &[J]) -> Option<&J::Object> {
    let first = items.first()?.as_object()?;
    if first.is_empty() {
        return None;
    }
    let same = |obj: &J::Object| {
        obj.len() == first.len()
            && obj
                .entries()
                .zip(first.entries())
                .all(|((k, v), (col, _))| same_key(k, col) && is_scalar(v))
    };
    items
        .iter()
        .all(|item| item.as_object().is_some_and(same))
        .then_some(first)
}

/// One `key: …` entry at indent `n` (plus the lines it owns).
pub(crate) fn write_entry<J: Json>(
    lines: &mut Lines,
    key: &str,
    v: &J,
    n: usize,
    dash: bool,
    depth: usize,
) {
    let out = start(lines, n, dash);
    write_str_scalar(key, out);
    match v.view() {
        View::Array(_) | View::Object(_) if depth >= MAX_DEPTH => out.push_str(": …"),
        View::Array(items) => write_array_body(lines, items, n, depth),
        View::Object(map) if map.is_empty() => out.push_str(": {}"),
        View::Object(map) => {
            out.push(':');
            write_entries(lines, map, n + 1, false, depth + 1);
        }
        _ => {
            out.push_str(": ");
            write_scalar(v, out);
        }
    }
}

/// The rest of an array entry whose key has just been written (§9.1 arrays).
fn write_array_body<J: Json>(lines: &mut Lines, items: &[J], n: usize, depth: usize) {
    let out = &mut lines.buf;
    if items.iter().all(is_scalar) {
        // Also the empty array: `k: []`.
        out.push_str(": ");
        write_scalar_list(items, out);
        return;
    }
    out.push('[');
    write_u64(items.len() as u64, out);
    out.push(']');
    if let Some(first) = table_first_row(items) {
        out.push('{');
        for (i, (col, _)) in first.entries().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str_scalar(col, out);
        }
        out.push_str("}:");
        for obj in items.iter().filter_map(J::as_object) {
            let out = start(lines, n + 1, false);
            for (i, v) in obj.values().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_scalar(v, out);
            }
        }
        return;
    }
    out.push(':');
    for item in items {
        write_list_item(lines, item, n + 1, depth + 1);
    }
}

/// One `- item` line (and its continuation lines) at indent `n`.
fn write_list_item<J: Json>(lines: &mut Lines, item: &J, n: usize, depth: usize) {
    match item.view() {
        View::Object(map) if !map.is_empty() && depth < MAX_DEPTH => {
            write_entries(lines, map, n + 1, true, depth + 1);
        }
        view => {
            let out = start(lines, n, false);
            out.push_str("- ");
            match view {
                View::Object(_) if depth >= MAX_DEPTH => out.push('…'),
                View::Object(_) => out.push_str("{}"),
                View::Array(a) if a.iter().all(is_scalar) => write_scalar_list(a, out),
                View::Array(_) => write_compact(item, out, depth),
                _ => write_scalar(item, out),
            }
        }
    }
}

/// The entries of a non-empty object at indent `n`; with `dash`, the first
/// one goes on a `- ` line (an object inside a list).
fn write_entries<O: JsonObject + ?Sized>(
    lines: &mut Lines,
    map: &O,
    n: usize,
    dash: bool,
    depth: usize,
) {
    for (i, (k, v)) in map.entries().enumerate() {
        write_entry(lines, k, v, n, dash && i == 0, depth);
    }
}

/// Lean rendering (§9.1) of any value: a top-level object renders its entries
/// at indent 0 (`{}` when empty), a top-level array renders as if under the
/// key `items`, and a top-level scalar renders as a scalar.
pub fn lean(v: &Value) -> String {
    let mut lines = Lines::new();
    write_lean(&mut lines, v);
    lines.buf
}

/// [`lean`] of any [`Json`] tree into `out`, replacing its contents and
/// reusing its allocation (for callers that render many values, such as
/// `parley lens --ndjson`).
pub fn lean_into<J: Json>(v: &J, out: &mut String) {
    let mut lines = Lines::reuse(std::mem::take(out));
    write_lean(&mut lines, v);
    *out = lines.buf;
}

/// [`lean`] as its lines: the exact text is `lean_lines(v).join("\n")`.
/// A line can itself hold a `\n` only inside a quoted string, where it is
/// already escaped (§10); see [`render_lines`](super::render_lines) for
/// reply frames, where verbatim text can hold one.
pub fn lean_lines<J: Json>(v: &J) -> Vec<String> {
    let mut lines = Lines::recording();
    write_lean(&mut lines, v);
    lines.into_lines()
}

pub(crate) fn write_lean<J: Json>(lines: &mut Lines, v: &J) {
    match v.view() {
        View::Object(map) if map.is_empty() => lines.line().push_str("{}"),
        View::Object(map) => write_entries(lines, map, 0, false, 1),
        View::Array(items) => write_items(lines, items),
        _ => write_scalar(v, lines.line()),
    }
}

/// Lean rendering of an object's entries except the keys in `skip` (`{}`
/// when nothing is left): the fallback rendering of a malformed reply.
pub(crate) fn write_lean_without<O: JsonObject + ?Sized>(
    lines: &mut Lines,
    map: &O,
    skip: &[&str],
) {
    let mut any = false;
    for (k, v) in map.entries().filter(|(k, _)| !skip.contains(k)) {
        write_entry(lines, k, v, 0, false, 1);
        any = true;
    }
    if !any {
        lines.line().push_str("{}");
    }
}

fn write_items<J: Json>(lines: &mut Lines, items: &[J]) {
    let out = lines.line();
    out.push_str("items");
    write_array_body(lines, items, 0, 1);
}

/// `lean` of an array given as a slice (the remainder of an elided array,
/// §8), without copying it into a `Value`.
pub(crate) fn lean_items(items: &[Value]) -> String {
    let mut lines = Lines::new();
    write_items(&mut lines, items);
    lines.buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bare_and_quoted_strings() {
        let q = |s: &str| scalar(&json!(s));
        for bare in [
            "hello world",
            "0x10",
            "01",
            "1.",
            ".5",
            "+1",
            "a-b",
            "x:y",
            "(ok)",
            "1e",
            "--",
            "True",
            "NULL",
            "~^",
        ] {
            assert_eq!(q(bare), bare, "{bare:?} should be bare");
        }
        for (s, want) in [
            ("1e5", "\"1e5\""),
            ("-0", "\"-0\""),
            ("0", "\"0\""),
            ("1.5E-3", "\"1.5E-3\""),
            ("123", "\"123\""),
            (" 1", "\" 1\""),
            ("1 ", "\"1 \""),
            (" ", "\" \""),
            ("-", "\"-\""),
            ("true", "\"true\""),
            ("false", "\"false\""),
            ("null", "\"null\""),
            ("a, b", "\"a, b\""),
            ("a,b", "\"a,b\""),
            ("", "\"\""),
            ("café", "\"café\""),
            ("東京", "\"東京\""),
            ("tab\there", "\"tab\\there\""),
            ("a\u{1}", "\"a\\u0001\""),
            ("rlo\u{202e}x", "\"rlo\u{202e}x\""),
            ("back\\slash", "\"back\\\\slash\""),
            ("[x]", "\"[x]\""),
            ("{x}", "\"{x}\""),
            ("semi;", "\"semi;\""),
            ("`tick`", "\"`tick`\""),
            ("say \"hi\"", "\"say \\\"hi\\\"\""),
        ] {
            assert_eq!(q(s), want, "{s:?}");
        }
    }

    #[test]
    fn json_number_grammar() {
        for yes in [
            "0", "-0", "1", "10", "1.5", "-1.5e10", "1E+2", "0.0", "1e-7",
        ] {
            assert!(is_json_number(yes.as_bytes()), "{yes}");
        }
        for no in [
            "", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "1.5.2", "Infinity", "NaN",
            "1_000",
        ] {
            assert!(!is_json_number(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn scalars_and_non_scalars() {
        assert_eq!(scalar(&json!(null)), "-");
        assert_eq!(scalar(&json!(false)), "false");
        assert_eq!(scalar(&json!([1, {"a": null}])), "[1,{\"a\":null}]");
        assert_eq!(lean(&json!(null)), "-");
        assert_eq!(lean(&json!("")), "\"\"");
        assert_eq!(lean(&json!([])), "items: []");
        assert_eq!(lean(&json!({})), "{}");
    }

    #[test]
    fn list_items() {
        let v = json!({"l": [{"a": {"b": [1, {"c": 2}]}, "d": []}, [], [[1]], {}]});
        assert_eq!(
            lean(&v),
            "l[4]:\n  - a:\n      b[2]:\n        - 1\n        - c: 2\n    d: []\n  - []\n  - [[1]]\n  - {}"
        );
    }

    #[test]
    fn table_needs_same_keys_in_same_order_and_scalars() {
        assert_eq!(
            lean(&json!({"t": [{"a": 1, "b": 2}, {"b": 3, "a": 4}]})),
            "t[2]:\n  - a: 1\n    b: 2\n  - b: 3\n    a: 4"
        );
        assert_eq!(
            lean(&json!({"t": [{"a": 1}, {"a": [2]}]})),
            "t[2]:\n  - a: 1\n  - a: [2]"
        );
        assert_eq!(
            lean(&json!({"t": [{"a": 1}, {"a": 2, "b": 3}]})),
            "t[2]:\n  - a: 1\n  - a: 2\n    b: 3"
        );
        assert_eq!(
            lean(&json!({"t": [{"a": null}, {"a": "x,y"}]})),
            "t[2]{a}:\n  -\n  \"x,y\""
        );
        assert_eq!(lean(&json!({"t": [{}, {}]})), "t[2]:\n  - {}\n  - {}");
    }

    #[test]
    fn integer_like_keys_keep_insertion_order() {
        let v: Value = serde_json::from_str(r#"{"b":1,"2":2,"1":3}"#).unwrap();
        assert_eq!(lean(&v), "b: 1\n\"2\": 2\n\"1\": 3");
    }

    #[test]
    fn deep_values_do_not_overflow_the_stack() {
        let mut v = json!(1);
        for _ in 0..(MAX_DEPTH + 50) {
            v = json!({ "k": [v] });
        }
        let text = std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || {
                let t = lean(&v);
                // Unwind the nesting iteratively so dropping `v` is cheap too.
                let mut cur = v;
                loop {
                    let next = match &mut cur {
                        Value::Object(m) => m.remove("k"),
                        Value::Array(a) => a.pop(),
                        _ => None,
                    };
                    match next {
                        Some(n) => cur = n,
                        None => break,
                    }
                }
                t
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(text.contains('…'));
    }
}
