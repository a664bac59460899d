//! The fast path of [`parse`](super::parse) and
//! [`parse_node`](super::parse_node) (see the module docs): a small
//! recursive-descent parser that builds a `Value` or a [`Node`] directly, and
//! gives up, never errs, on anything unusual.

use super::{unique_keys, Arena, Node};
use crate::canonical::literal_run;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// The fast path of [`parse`](super::parse) (see the module docs). Every method returns
/// `None` to hand the document to the reference path: on a syntax error, a
/// duplicate key, nesting beyond the limit, and on the rare forms it leaves
/// to `serde_json` (lone surrogate escapes, integers of 19 or more digits,
/// floats that underflow to zero or overflow). Whatever it returns `Some`
/// for is a document the reference path accepts, as the identical tree.
pub(super) struct Fast<'a, T: Tree<'a>> {
    /// Where the tree's containers go (nothing for a `Value`).
    arena: T::Arena,
    /// The whole input, checked to be UTF-8 once up front: JSON outside
    /// strings is ASCII, so every string's bytes can then be sliced as `str`.
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Elements of the arrays being parsed, innermost last; each array takes
    /// its own off the end, so it is allocated once at its final length.
    items: T::Items,
    /// The same for object entries.
    entries: T::Entries,
}

/// A list [`Fast`] keeps the elements or entries of open containers in: a
/// `Vec` for a `Value`, a `Vec` in the arena for a [`Node`] (so a caller
/// that parses many documents into one arena, reset between them, pays no
/// heap allocation for it, nor a regrowth per document).
pub(super) trait Pending<X> {
    fn push(&mut self, x: X);
    fn len(&self) -> usize;
}

impl<X> Pending<X> for Vec<X> {
    #[inline(always)]
    fn push(&mut self, x: X) {
        Vec::push(self, x);
    }
    #[inline(always)]
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

impl<X> Pending<X> for bumpalo::collections::Vec<'_, X> {
    #[inline(always)]
    fn push(&mut self, x: X) {
        bumpalo::collections::Vec::push(self, x);
    }
    #[inline(always)]
    fn len(&self) -> usize {
        bumpalo::collections::Vec::len(self)
    }
}

/// What [`Fast`] builds: a `serde_json::Value`, or a borrowed [`Node`].
pub(super) trait Tree<'a>: Sized {
    /// Where containers are allocated.
    type Arena: Copy;
    /// An object key as the tree holds it.
    type Key;
    /// [`Fast`]'s lists of elements and entries of open containers.
    type Items: Pending<Self>;
    type Entries: Pending<(Self::Key, Self)>;
    /// Empty lists with room for typical nesting.
    fn scratch(arena: Self::Arena) -> (Self::Items, Self::Entries);
    fn key(arena: Self::Arena, s: Cow<'a, str>) -> Self::Key;
    fn null() -> Self;
    fn bool(b: bool) -> Self;
    fn number(n: Number) -> Self;
    fn string(arena: Self::Arena, s: Cow<'a, str>) -> Self;
    /// An array of `items[start..]`, which it takes off `items`.
    fn array(arena: Self::Arena, items: &mut Self::Items, start: usize) -> Self;
    /// An object of `entries[start..]`, in order, which it takes off
    /// `entries`; `None` if a key repeats.
    fn object(arena: Self::Arena, entries: &mut Self::Entries, start: usize) -> Option<Self>;
}

impl<'a> Tree<'a> for Value {
    type Arena = ();
    type Key = String;
    type Items = Vec<Value>;
    type Entries = Vec<(String, Value)>;
    fn scratch((): ()) -> (Self::Items, Self::Entries) {
        // Under 1 KiB each, where the allocator's fast paths are.
        (
            Vec::with_capacity(SCRATCH_BYTES / size_of::<Value>()),
            Vec::with_capacity(SCRATCH_BYTES / size_of::<(String, Value)>()),
        )
    }
    fn key((): (), s: Cow<'a, str>) -> String {
        s.into_owned()
    }
    fn null() -> Self {
        Value::Null
    }
    fn bool(b: bool) -> Self {
        Value::Bool(b)
    }
    fn number(n: Number) -> Self {
        Value::Number(n)
    }
    fn string((): (), s: Cow<'a, str>) -> Self {
        Value::String(s.into_owned())
    }
    fn array((): (), items: &mut Vec<Value>, start: usize) -> Self {
        Value::Array(items.drain(start..).collect())
    }
    fn object((): (), entries: &mut Vec<(String, Value)>, start: usize) -> Option<Self> {
        let mut map = Map::with_capacity(entries.len() - start);
        for (k, v) in entries.drain(start..) {
            if map.insert(k, v).is_some() {
                return None; // A duplicate key: refused by the reference path.
            }
        }
        Some(Value::Object(map))
    }
}

impl<'a> Tree<'a> for Node<'a> {
    type Arena = &'a Arena;
    type Key = &'a str;
    type Items = bumpalo::collections::Vec<'a, Node<'a>>;
    type Entries = bumpalo::collections::Vec<'a, (&'a str, Node<'a>)>;
    fn scratch(arena: &'a Arena) -> (Self::Items, Self::Entries) {
        (
            bumpalo::collections::Vec::with_capacity_in(NODE_SCRATCH, arena),
            bumpalo::collections::Vec::with_capacity_in(NODE_SCRATCH, arena),
        )
    }
    fn key(arena: &'a Arena, s: Cow<'a, str>) -> &'a str {
        in_arena(arena, s)
    }
    fn null() -> Self {
        Node::Null
    }
    fn bool(b: bool) -> Self {
        Node::Bool(b)
    }
    fn number(n: Number) -> Self {
        Node::Number(n)
    }
    fn string(arena: &'a Arena, s: Cow<'a, str>) -> Self {
        Node::String(in_arena(arena, s))
    }
    // `split_off` moves the tail into a new arena slice with one copy of
    // memory, where draining it moved one element at a time.
    fn array(_: &'a Arena, items: &mut Self::Items, start: usize) -> Self {
        Node::Array(items.split_off(start).into_bump_slice())
    }
    fn object(_: &'a Arena, entries: &mut Self::Entries, start: usize) -> Option<Self> {
        let entries = entries.split_off(start).into_bump_slice();
        unique_keys(entries).then_some(Node::Object(entries))
    }
}

/// A string the input holds as it is (borrowed), or an unescaped copy moved
/// into the arena.
fn in_arena<'a>(arena: &'a Arena, s: Cow<'a, str>) -> &'a str {
    match s {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => arena.alloc_str(&s),
    }
}

/// Initial size of each of [`Fast`]'s scratch lists for a `Value`, in bytes.
const SCRATCH_BYTES: usize = 512;

/// Initial length of each of [`Fast`]'s scratch lists for a [`Node`]: in
/// the arena, so room for any real frame's open containers costs nothing.
const NODE_SCRATCH: usize = 64;

/// Nesting the fast path handles; deeper documents (never real frames) go to
/// the reference path, which also owns `serde_json`'s own limit of 128.
const FAST_MAX_DEPTH: usize = 100;

impl<'a, T: Tree<'a>> Fast<'a, T> {
    pub(super) fn parse(bytes: &'a [u8], max_depth: usize, arena: T::Arena) -> Option<T> {
        let text = std::str::from_utf8(bytes).ok()?;
        // Room for typical nesting up front: growing these one doubling at
        // a time cost more than the rest of a small document.
        let (items, entries) = T::scratch(arena);
        let mut p = Fast {
            arena,
            text,
            bytes,
            pos: 0,
            items,
            entries,
        };
        let v = p.value(max_depth.min(FAST_MAX_DEPTH))?;
        p.skip_ws();
        (p.pos == bytes.len()).then_some(v)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// Skips whitespace and returns the next byte without consuming it.
    /// (Inlined with one comparison for the usual case, compact JSON: every
    /// byte JSON allows between tokens is at most a space.)
    #[inline(always)]
    fn peek(&mut self) -> Option<u8> {
        match self.bytes.get(self.pos) {
            Some(&b) if b > b' ' => Some(b),
            _ => self.peek_after_ws(),
        }
    }

    #[inline(never)]
    fn peek_after_ws(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.pos += 1)
    }

    fn literal(&mut self, word: &[u8], v: T) -> Option<T> {
        let end = self.pos + word.len();
        (self.bytes.get(self.pos..end)? == word).then(|| {
            self.pos = end;
            v
        })
    }

    /// A value; `depth_left` arrays/objects may still open (as in the reference path).
    fn value(&mut self, depth_left: usize) -> Option<T> {
        match self.peek()? {
            b'{' => self.object(depth_left.checked_sub(1)?),
            b'[' => self.array(depth_left.checked_sub(1)?),
            b'"' => {
                let s = self.string()?;
                Some(T::string(self.arena, s))
            }
            b't' => self.literal(b"true", T::bool(true)),
            b'f' => self.literal(b"false", T::bool(false)),
            b'n' => self.literal(b"null", T::null()),
            b'-' | b'0'..=b'9' => self.number().map(T::number),
            _ => None,
        }
    }

    fn array(&mut self, depth_left: usize) -> Option<T> {
        self.pos += 1;
        let start = self.items.len();
        if self.peek()? != b']' {
            loop {
                let v = self.value(depth_left)?;
                self.items.push(v);
                match self.peek()? {
                    b',' => self.pos += 1,
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.pos += 1;
        Some(T::array(self.arena, &mut self.items, start))
    }

    fn object(&mut self, depth_left: usize) -> Option<T> {
        self.pos += 1;
        let start = self.entries.len();
        if self.peek()? != b'}' {
            loop {
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                let key = T::key(self.arena, key);
                self.eat(b':')?;
                let v = self.value(depth_left)?;
                self.entries.push((key, v));
                match self.peek()? {
                    b',' => self.pos += 1,
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        self.pos += 1;
        T::object(self.arena, &mut self.entries, start)
    }

    /// A string starting at the opening quote: borrowed from the input
    /// unless it has escapes. (Inlined: most values and all keys are strings,
    /// and the call itself would cost as much as scanning a short one.)
    #[inline(always)]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos + 1;
        self.pos = literal_run(self.bytes, start);
        match self.bytes.get(self.pos)? {
            b'"' => {
                self.pos += 1;
                return self.slice(start, self.pos - 1).map(Cow::Borrowed);
            }
            b'\\' => {}
            _ => return None, // A control character.
        }
        self.escaped(start).map(Cow::Owned)
    }

    /// `text[start..end]`, where both ends are next to an ASCII byte (so
    /// `None` never happens). Written with `split_at_checked`, which inlines
    /// to two byte comparisons: the range index did not inline, and its
    /// call cost as much as scanning a short string.
    #[inline(always)]
    fn slice(&self, start: usize, end: usize) -> Option<&'a str> {
        let (head, _) = self.text.split_at_checked(end)?;
        let (_, s) = head.split_at_checked(start)?;
        Some(s)
    }

    /// A string with escapes, from its first character at `start`; `pos`
    /// is at the first escape.
    #[cold]
    fn escaped(&mut self, start: usize) -> Option<String> {
        let mut out = String::with_capacity(self.pos - start + 16);
        out.push_str(&self.text[start..self.pos]);
        self.escaped_rest(&mut out)?;
        Some(out)
    }

    /// The rest of a string from its first `\\` or control character.
    fn escaped_rest(&mut self, out: &mut String) -> Option<()> {
        loop {
            match *self.bytes.get(self.pos)? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => {
                    let esc = *self.bytes.get(self.pos + 1)?;
                    self.pos += 2;
                    out.push(match esc {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    });
                }
                b if b < 0x20 => return None,
                _ => {
                    let start = self.pos;
                    self.pos = literal_run(self.bytes, start);
                    out.push_str(&self.text[start..self.pos]);
                }
            }
        }
    }

    /// The code point of `\uXXXX` (after the `u`), combining a surrogate
    /// pair; a lone surrogate is left to the reference path.
    fn unicode_escape(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        if !(0xD800..0xE000).contains(&hi) {
            return char::from_u32(hi);
        }
        if hi >= 0xDC00 || self.bytes.get(self.pos..self.pos + 2)? != b"\\u" {
            return None;
        }
        self.pos += 2;
        let lo = self.hex4()?;
        if !(0xDC00..0xE000).contains(&lo) {
            return None;
        }
        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.pos..self.pos + 4)?;
        let mut n = 0;
        for &d in digits {
            n = n * 16 + char::from(d).to_digit(16)?;
        }
        self.pos += 4;
        Some(n)
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, represented as
    /// `serde_json` does: `u64` for non-negative integers, `i64` for negative
    /// ones, `-0` and anything with a fraction or exponent as `f64` (both
    /// parsers round correctly, so they agree on every double).
    fn number(&mut self) -> Option<Number> {
        let b = self.bytes;
        let start = self.pos;
        let negative = b[self.pos] == b'-';
        self.pos += usize::from(negative);
        let int_start = self.pos;
        match b.get(self.pos)? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let int_end = self.pos;
        let mut float = false;
        if b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            let from = self.pos;
            self.digits();
            if self.pos == from {
                return None;
            }
            float = true;
        }
        if let Some(b'e' | b'E') = b.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = b.get(self.pos) {
                self.pos += 1;
            }
            let from = self.pos;
            self.digits();
            if self.pos == from {
                return None;
            }
            float = true;
        }
        if b.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return None; // `01`: a leading zero.
        }
        if !float {
            if int_end - int_start > 18 {
                return None;
            }
            let mut n = 0u64;
            for &d in &b[int_start..int_end] {
                n = n * 10 + u64::from(d - b'0');
            }
            return Some(match (negative, n) {
                (false, n) => Number::from(n),
                (true, 0) => Number::from_f64(-0.0)?,
                // n < 10^18, so the negation is exact.
                (true, n) => Number::from(-(n as i64)),
            });
        }
        let f: f64 = self.text[start..self.pos].parse().ok()?;
        let nonzero_digit = b[int_start..self.pos]
            .iter()
            .take_while(|c| !matches!(c, b'e' | b'E'))
            .any(|c| matches!(c, b'1'..=b'9'));
        if f == 0.0 && nonzero_digit {
            return None; // Underflow: left to the reference path.
        }
        Number::from_f64(f)
    }

    fn digits(&mut self) {
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
    }
}
