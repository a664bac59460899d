//! Strict JSON input (RFC 8259) for everything that arrives from outside.
//!
//! `serde_json` silently keeps the last of duplicate keys; two parsers that
//! disagree on which duplicate wins let an attacker show the human one value
//! and have a service read another. So every untrusted document is parsed
//! here: duplicate keys are an error, nesting depth and size are bounded, and
//! object key order is preserved (Lens renders keys in insertion order).
//!
//! Two parsers share the work. [`Fast`] is a small recursive-descent parser
//! for the documents that actually arrive (valid UTF-8, ordinary numbers,
//! no duplicate keys): it builds the same `Value` the reference path would,
//! roughly four times faster, because it allocates each array and object once
//! at its final size and never goes through serde's visitor machinery. It
//! gives up — never errs — on anything unusual, and the reference path
//! ([`Strict`] on `serde_json`'s deserializer) then parses the document from
//! scratch. So every refusal, and its message, comes from the reference path,
//! and the fast path only has to be right about what it accepts.

use crate::canonical::literal_run;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt;

/// Bounds applied while parsing untrusted JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting depth of arrays and objects (the top level is depth 1).
    pub max_depth: usize,
    /// Maximum input size in bytes.
    pub max_bytes: usize,
}

impl Limits {
    /// The default for frames: §2.1 caps a frame at 1 MiB; 64 levels is far
    /// beyond any real reply and keeps recursive renderers' stacks small.
    pub const FRAME: Limits = Limits {
        max_depth: 64,
        max_bytes: 1 << 20,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::FRAME
    }
}

/// Why a document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// The input is larger than the limit.
    #[error("input is {size} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// Input size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// Syntax errors, duplicate keys, excessive depth.
    #[error("invalid JSON: {0}")]
    Invalid(String),
}

/// Parses untrusted JSON text strictly (see the module docs).
pub fn parse(text: &[u8], limits: Limits) -> Result<Value, JsonError> {
    if text.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            size: text.len(),
            limit: limits.max_bytes,
        });
    }
    match Fast::parse(text, limits.max_depth, ()) {
        Some(value) => Ok(value),
        None => parse_reference(text, limits.max_depth),
    }
}

/// Where a [`Node`] document lives: its arrays, objects and escaped strings
/// are allocated in this arena, one bump of a pointer each, and freed all at
/// once by [`Arena::reset`] (so a caller that reads many documents, such as
/// `parley lens --ndjson`, reuses the same memory for every one).
pub use bumpalo::Bump as Arena;

/// A JSON document whose strings borrow from the text it was parsed from
/// (only strings with escapes are copied, into the [`Arena`]) and whose
/// arrays and objects are slices in the arena, objects as plain lists of
/// entries. [`parse_node`] builds it without a heap allocation per
/// container and without hashing keys, for callers that only read a
/// document once, such as `parley lens --ndjson`. The Lens renderers accept
/// it as they accept a `Value` (see [`crate::lens::Json`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, represented exactly as in a `serde_json::Value`.
    Number(Number),
    /// A string.
    String(&'a str),
    /// An array.
    Array(&'a [Node<'a>]),
    /// An object's entries in document order (keys are unique).
    Object(&'a [(&'a str, Node<'a>)]),
}

impl<'a> Node<'a> {
    /// The same document as `v`, in `arena`.
    pub fn from_value(v: &Value, arena: &'a Arena) -> Node<'a> {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(arena.alloc_str(s)),
            Value::Array(items) => Node::Array(
                arena.alloc_slice_fill_iter(items.iter().map(|v| Node::from_value(v, arena))),
            ),
            Value::Object(map) => Node::Object(
                arena.alloc_slice_fill_iter(
                    map.iter()
                        .map(|(k, v)| (&*arena.alloc_str(k), Node::from_value(v, arena))),
                ),
            ),
        }
    }
}

/// [`parse`] into a borrowed [`Node`] in `arena`: the same checks, the same
/// errors, and the same document (`parse_node(t, l, a)` is
/// `parse(t, l).map(|v| Node::from_value(&v, a))`).
pub fn parse_node<'a>(
    text: &'a [u8],
    limits: Limits,
    arena: &'a Arena,
) -> Result<Node<'a>, JsonError> {
    if text.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            size: text.len(),
            limit: limits.max_bytes,
        });
    }
    match Fast::parse(text, limits.max_depth, arena) {
        Some(node) => Ok(node),
        None => parse_reference(text, limits.max_depth).map(|v| Node::from_value(&v, arena)),
    }
}

/// The reference path alone (see the module docs), without the fast path:
/// for differential tests of the fast path (`fuzz/`), which must accept
/// only what this accepts, as the same document.
pub fn parse_strict_reference(text: &[u8], limits: Limits) -> Result<Value, JsonError> {
    if text.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            size: text.len(),
            limit: limits.max_bytes,
        });
    }
    parse_reference(text, limits.max_depth)
}

/// The reference path: `serde_json`'s deserializer with the [`Strict`] seed.
fn parse_reference(text: &[u8], max_depth: usize) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let value = Strict {
        depth_left: max_depth,
    }
    .deserialize(&mut de)
    .map_err(|e| JsonError::Invalid(e.to_string()))?;
    de.end().map_err(|e| JsonError::Invalid(e.to_string()))?;
    Ok(value)
}

/// Parses untrusted JSON text with the frame limits.
pub fn parse_str(text: &str) -> Result<Value, JsonError> {
    parse(text.as_bytes(), Limits::FRAME)
}

/// A seed that builds a `Value`, refusing duplicate keys and deep nesting.
#[derive(Clone, Copy)]
struct Strict {
    depth_left: usize,
}

impl Strict {
    fn nested<E: serde::de::Error>(self) -> Result<Strict, E> {
        match self.depth_left.checked_sub(1) {
            Some(depth_left) => Ok(Strict { depth_left }),
            None => Err(E::custom("nesting is too deep")),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is out of range"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let shown: String = key.chars().take(64).collect();
                return Err(A::Error::custom(format!("duplicate key {shown:?}")));
            }
            let v = map.next_value_seed(inner)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The fast path of [`parse`] (see the module docs). Every method returns
/// `None` to hand the document to the reference path: on a syntax error, a
/// duplicate key, nesting beyond the limit, and on the rare forms it leaves
/// to `serde_json` (lone surrogate escapes, integers of 19 or more digits,
/// floats that underflow to zero or overflow). Whatever it returns `Some`
/// for is a document the reference path accepts, as the identical tree.
struct Fast<'a, T: Tree<'a>> {
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
trait Pending<X> {
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
trait Tree<'a>: Sized {
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

/// Whether no key of `entries` repeats.
///
/// Objects of up to 16 entries (every object of a real frame) are checked
/// with a 64-bit filter first: each key sets one bit picked from its length
/// and its first and last bytes, and only a key whose bit is already set is
/// compared with the keys before it. Equal keys always pick the same bit, so
/// the answer is exactly [`unique_keys_plain`]'s; the filter only skips
/// comparisons that could not match (`fuzz/fuzz_targets/json_fast_path.rs`
/// checks the two against each other).
pub fn unique_keys<V>(entries: &[(&str, V)]) -> bool {
    if entries.len() > 16 {
        return unique_keys_plain(entries);
    }
    let mut seen = 0u64;
    for (i, (k, _)) in entries.iter().enumerate() {
        let bit = 1u64 << key_bucket(k);
        if seen & bit != 0 && entries[..i].iter().any(|(prev, _)| same_key(prev, k)) {
            return false;
        }
        seen |= bit;
    }
    true
}

/// The filter bit of a key for [`unique_keys`], in `0..64`.
fn key_bucket(k: &str) -> u32 {
    let b = k.as_bytes();
    let (first, last) = match b {
        [] => (0, 0),
        [.., last] => (u32::from(b[0]), u32::from(*last)),
    };
    (b.len() as u32)
        .wrapping_mul(7)
        .wrapping_add(first.wrapping_mul(3))
        .wrapping_add(last)
        % 64
}

/// [`unique_keys`] without the filter: every pair of keys compared for
/// small objects, a sort for larger ones.
pub fn unique_keys_plain<V>(entries: &[(&str, V)]) -> bool {
    if entries.len() <= 16 {
        entries
            .iter()
            .enumerate()
            .all(|(i, (k, _))| entries[..i].iter().all(|(prev, _)| !same_key(prev, k)))
    } else {
        let mut keys: Vec<&str> = entries.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        keys.windows(2).all(|w| w[0] != w[1])
    }
}

/// `a == b` for object keys, without a `memcmp` call for short keys (the
/// duplicate check and the renderers' lookups compare many short keys). Two
/// overlapping loads cover all the bytes.
pub(crate) fn same_key(a: &str, b: &str) -> bool {
    fn word<const N: usize>(s: &[u8]) -> [u8; N] {
        let mut w = [0; N];
        w.copy_from_slice(&s[..N]);
        w
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => word::<4>(a) == word::<4>(b) && word::<4>(&a[n - 4..]) == word::<4>(&b[n - 4..]),
        8..=16 => word::<8>(a) == word::<8>(b) && word::<8>(&a[n - 8..]) == word::<8>(&b[n - 8..]),
        _ => a == b,
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
    fn parse(bytes: &'a [u8], max_depth: usize, arena: T::Arena) -> Option<T> {
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

    /// A value; `depth_left` arrays/objects may still open (as in [`Strict`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        assert!(parse_str(r#"{"a":1,"a":2}"#).is_err());
        assert!(parse_str(r#"{"x":[{"b":1,"b":1}]}"#).is_err());
        assert!(parse_str(r#"{"a":1,"b":{"a":2}}"#).is_ok());
    }

    #[test]
    fn keeps_insertion_order() {
        let v = parse_str(r#"{"b":1,"a":2}"#).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["b", "a"]);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(parse_str(&deep).is_err());
        let ok = "[".repeat(64) + &"]".repeat(64);
        assert!(parse_str(&ok).is_ok());
        let over = "[".repeat(65) + &"]".repeat(65);
        assert!(parse_str(&over).is_err());
    }

    #[test]
    fn size_limit() {
        let big = format!("\"{}\"", "x".repeat(100));
        let limits = Limits {
            max_depth: 4,
            max_bytes: 50,
        };
        assert!(matches!(
            parse(big.as_bytes(), limits),
            Err(JsonError::TooLarge { .. })
        ));
    }

    /// The fast path either defers or builds exactly the reference value.
    #[test]
    fn fast_path_agrees_with_the_reference() {
        let docs = [
            r#"{"a":[1,-2,0,-0,1.5,-1e-7,1E+21,0.1,18446744073709551615,-9223372036854775808]}"#,
            r#"{"s":"plain","e":"q\"b\\s\/\b\f\n\r\t\u00e9\u2028\ud83d\ude00","k\u0041":null}"#,
            r#" [ true , false , null , "" , {} , [] ] "#,
            "\"caf\u{e9} \u{1f389}\"",
            "123456789012345678",
            "1234567890123456789",
            "-123456789012345678",
            "9007199254740993.0",
            "1e400",
            "1e-400",
            "0e-400",
            "-0.0",
            "2.2250738585072011e-308",
            "4.9e-324",
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\uD83D\uDE00""#,
            r#""\x""#,
            "\"tab\there\"",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "1e+",
            "[1,]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":1,"a":1}"#,
            r#"{"a":{"b":1,"b":1}}"#,
            "{1:2}",
            "tru",
            "nul",
            "[",
            "",
            " ",
            "\u{feff}1",
        ];
        for doc in docs {
            for depth in [0, 1, 2, 64, 500] {
                let reference = parse_reference(doc.as_bytes(), depth);
                let arena = Arena::new();
                let node = Fast::<Node>::parse(doc.as_bytes(), depth, &arena);
                match Fast::<Value>::parse(doc.as_bytes(), depth, ()) {
                    Some(v) => {
                        assert_eq!(node, Some(Node::from_value(&v, &arena)), "{doc:?}");
                        let r = reference.unwrap_or_else(|e| panic!("{doc:?}: {e}"));
                        assert_eq!(format!("{v:?}"), format!("{r:?}"), "{doc:?}");
                    }
                    None => assert!(
                        node.is_none() && reference.is_err()
                            || doc.contains("e-400")
                            || doc.contains("1234567890123456789")
                            || doc.contains("18446744073709551615")
                            || doc.contains(r"\ud800"),
                        "{doc:?} at depth {depth} should take the fast path"
                    ),
                }
            }
        }
    }

    #[test]
    fn trailing_garbage_and_invalid_utf8() {
        assert!(parse_str("{} x").is_err());
        assert!(parse(b"\"\xff\"", Limits::FRAME).is_err());
    }
}
