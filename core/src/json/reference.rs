//! The reference path of [`parse`](super::parse): `serde_json`'s
//! deserializer with a seed that refuses duplicate keys and deep nesting.
//! Every refusal, and its message, comes from here.

use super::JsonError;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// The reference path: `serde_json`'s deserializer with the [`Strict`] seed.
pub(super) fn parse_reference(text: &[u8], max_depth: usize) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let value = Strict {
        depth_left: max_depth,
    }
    .deserialize(&mut de)
    .map_err(|e| JsonError::Invalid(e.to_string()))?;
    de.end().map_err(|e| JsonError::Invalid(e.to_string()))?;
    Ok(value)
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
