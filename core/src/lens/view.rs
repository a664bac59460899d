//! What the Lens renderers read: any JSON tree that shows itself as a [`View`].
//!
//! Lens is defined on JSON values, not on one Rust type. Two trees implement
//! [`Json`]: `serde_json::Value`, which the rest of the crate and its users
//! hold, and the borrowed [`Node`] that `parley lens --ndjson` parses each
//! line into (a fraction of the allocations, no hashing of keys). Both go
//! through the very same rendering code, so they render byte-identically.

pub(crate) use crate::json::same_key;
use crate::json::Node;
use serde_json::{Map, Number, Value};

/// A JSON value the Lens renderers can read.
pub trait Json: Sized {
    /// Its objects.
    type Object: JsonObject<Value = Self> + ?Sized;

    /// The value, one level deep.
    fn view(&self) -> View<'_, Self>;

    /// The object, if this is one.
    fn as_object(&self) -> Option<&Self::Object> {
        match self.view() {
            View::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The string, if this is one.
    fn as_str(&self) -> Option<&str> {
        match self.view() {
            View::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is an object.
    fn is_object(&self) -> bool {
        matches!(self.view(), View::Object(_))
    }
}

/// One level of a JSON value.
pub enum View<'v, J: Json> {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number.
    Number(&'v Number),
    /// A string.
    String(&'v str),
    /// An array.
    Array(&'v [J]),
    /// An object.
    Object(&'v J::Object),
}

/// A JSON object: entries in document order, unique keys.
pub trait JsonObject {
    /// The values of its entries.
    type Value: Json;

    /// Number of entries.
    fn len(&self) -> usize;

    /// Whether it has no entries.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries in document (insertion) order.
    fn entries(&self) -> impl Iterator<Item = (&str, &Self::Value)>;

    /// The value of `key`.
    fn get(&self, key: &str) -> Option<&Self::Value>;

    /// The values in document order.
    fn values(&self) -> impl Iterator<Item = &Self::Value> {
        self.entries().map(|(_, v)| v)
    }
}

impl Json for Value {
    type Object = Map<String, Value>;

    fn view(&self) -> View<'_, Self> {
        match self {
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Number(n) => View::Number(n),
            Value::String(s) => View::String(s),
            Value::Array(items) => View::Array(items),
            Value::Object(map) => View::Object(map),
        }
    }
}

impl JsonObject for Map<String, Value> {
    type Value = Value;

    fn len(&self) -> usize {
        Map::len(self)
    }

    fn entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Objects of up to 16 entries (every object of a real frame) are
    /// scanned, which is several times cheaper than hashing `key` with
    /// SipHash as `Map::get` does.
    fn get(&self, key: &str) -> Option<&Value> {
        if Map::len(self) > 16 {
            return Map::get(self, key);
        }
        self.iter().find(|(k, _)| same_key(k, key)).map(|(_, v)| v)
    }
}

impl<'a> Json for Node<'a> {
    type Object = [(&'a str, Node<'a>)];

    fn view(&self) -> View<'_, Self> {
        match self {
            Node::Null => View::Null,
            Node::Bool(b) => View::Bool(*b),
            Node::Number(n) => View::Number(n),
            Node::String(s) => View::String(s),
            Node::Array(items) => View::Array(items),
            Node::Object(entries) => View::Object(*entries),
        }
    }
}

impl<'a> JsonObject for [(&'a str, Node<'a>)] {
    type Value = Node<'a>;

    fn len(&self) -> usize {
        <[_]>::len(self)
    }

    fn entries(&self) -> impl Iterator<Item = (&str, &Node<'a>)> {
        self.iter().map(|(k, v)| (*k, v))
    }

    /// A scan: the renderers look up a bounded number of keys per object,
    /// so this stays linear in the size of the document.
    /// Inlined: at each call the key is a literal, so the comparison of a
    /// key of the right length becomes a load and a compare. (The same for
    /// `Map` measured slower: its entries are wider.)
    #[inline(always)]
    fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.iter()
            .find(|(k, _)| k.len() == key.len() && k.as_bytes() == key.as_bytes())
            .map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::same_key;

    #[test]
    fn keys_compare_like_strings() {
        let keys = [
            "",
            "a",
            "b",
            "ab",
            "ba",
            "abc",
            "abd",
            "xbc",
            "abcd",
            "abce",
            "abcde",
            "abcdf",
            "bbcde",
            "abcdefg",
            "abcdefgh",
            "abcdefgi",
            "bbcdefgh",
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "abcdefghijklmnopq",
            "abcdefghijklmnopr",
            "é",
            "東京",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(same_key(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }
}
