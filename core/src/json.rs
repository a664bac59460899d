//! Strict JSON input (RFC 8259) for everything that arrives from outside.
//!
//! `serde_json` silently keeps the last of duplicate keys; two parsers that
//! disagree on which duplicate wins let an attacker show the human one value
//! and have a service read another. So every untrusted document is parsed
//! here: duplicate keys are an error, nesting depth and size are bounded, and
//! object key order is preserved (Lens renders keys in insertion order).

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
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
    let mut de = serde_json::Deserializer::from_slice(text);
    let value = Strict {
        depth_left: limits.max_depth,
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

    #[test]
    fn trailing_garbage_and_invalid_utf8() {
        assert!(parse_str("{} x").is_err());
        assert!(parse(b"\"\xff\"", Limits::FRAME).is_err());
    }
}
