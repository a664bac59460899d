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
//! (a strict seed on `serde_json`'s deserializer) then parses the document from
//! scratch. So every refusal, and its message, comes from the reference path,
//! and the fast path only has to be right about what it accepts.
//!
//! The files: this one the entry points, the limits and the errors;
//! `fast.rs` the fast path; `reference.rs` the reference path; `keys.rs` the
//! duplicate-key check both the fast path and its fuzz target use.

use serde_json::{Number, Value};

mod fast;
mod keys;
mod reference;

use fast::Fast;
pub(crate) use keys::same_key;
pub use keys::{unique_keys, unique_keys_plain};
use reference::parse_reference;

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

/// Parses untrusted JSON text with the frame limits.
pub fn parse_str(text: &str) -> Result<Value, JsonError> {
    parse(text.as_bytes(), Limits::FRAME)
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
