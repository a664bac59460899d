//! Canonical JSON (§10): the exact bytes that are hashed and signed.
//!
//! Keys sorted by Unicode code point, no whitespace, the §10 escape set, and
//! only safe integers. A float or an integer beyond ±(2^53−1) is an error,
//! never a rounding: two implementations that round differently would hash
//! the same proposal differently.

use serde_json::{Map, Value};
use std::fmt::Write as _;

/// The largest integer every Parley implementation represents exactly (2^53−1).
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// A number with a fraction or exponent appears in a hashed or signed payload.
    #[error("number {number} at {path} is not an integer; hashed and signed payloads allow only integers (§10)")]
    NotAnInteger {
        /// The number as written.
        number: String,
        /// Where it is, as a JSON path (`$.cost.amount`).
        path: String,
    },
    /// An integer outside ±(2^53−1).
    #[error("integer {number} at {path} is outside ±(2^53−1); hashed and signed payloads allow only safe integers (§10)")]
    UnsafeInteger {
        /// The number as written.
        number: String,
        /// Where it is.
        path: String,
    },
}

impl CanonicalError {
    fn prefix_path(mut self, segment: &str) -> Self {
        let path = match &mut self {
            CanonicalError::NotAnInteger { path, .. }
            | CanonicalError::UnsafeInteger { path, .. } => path,
        };
        // Paths are built while unwinding, innermost segment first.
        *path = format!("{segment}{}", path.trim_start_matches('$'));
        path.insert(0, '$');
        self
    }
}

/// The canonical text of `v` (§10).
pub fn canonical(v: &Value) -> Result<String, CanonicalError> {
    let mut out = String::with_capacity(256);
    write_canonical(v, &mut out)?;
    Ok(out)
}

/// Appends the canonical text of `v` to `out`.
pub fn write_canonical(v: &Value, out: &mut String) -> Result<(), CanonicalError> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_safe_integer(n, out)?,
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out).map_err(|e| e.prefix_path(&format!("[{i}]")))?;
            }
            out.push(']');
        }
        Value::Object(map) => write_object(map, out)?,
    }
    Ok(())
}

fn write_object(map: &Map<String, Value>, out: &mut String) -> Result<(), CanonicalError> {
    // `str` ordering is byte-wise on UTF-8, which is exactly code-point order.
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json_string(k, out);
        out.push(':');
        write_canonical(v, out).map_err(|e| e.prefix_path(&path_segment(k)))?;
    }
    out.push('}');
    Ok(())
}

fn path_segment(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        format!(".{key}")
    } else {
        let mut quoted = String::new();
        write_json_string(key, &mut quoted);
        format!("[{quoted}]")
    }
}

fn write_safe_integer(n: &serde_json::Number, out: &mut String) -> Result<(), CanonicalError> {
    if let Some(i) = n.as_i64() {
        if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
            let _ = write!(out, "{i}");
            return Ok(());
        }
        return Err(CanonicalError::UnsafeInteger {
            number: n.to_string(),
            path: "$".into(),
        });
    }
    if n.is_u64() {
        return Err(CanonicalError::UnsafeInteger {
            number: n.to_string(),
            path: "$".into(),
        });
    }
    Err(CanonicalError::NotAnInteger {
        number: n.to_string(),
        path: "$".into(),
    })
}

/// Appends `s` as a JSON string literal with the §10 escape set: `\"`, `\\`,
/// `\b`, `\f`, `\n`, `\r`, `\t`, `\u00XX` (lowercase hex) for the other
/// control characters below U+0020, everything else literal UTF-8. This is
/// also exactly what ECMAScript `JSON.stringify` writes for a Rust string.
pub fn write_json_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_floats_and_unsafe_integers_with_a_path() {
        let err = canonical(&json!({"cost": {"amount": 1.5}})).unwrap_err();
        assert_eq!(
            err,
            CanonicalError::NotAnInteger {
                number: "1.5".into(),
                path: "$.cost.amount".into()
            }
        );
        let err = canonical(&json!({"a": [0, 9007199254740992i64]})).unwrap_err();
        assert!(matches!(err, CanonicalError::UnsafeInteger { ref path, .. } if path == "$.a[1]"));
        assert!(canonical(&json!(u64::MAX)).is_err());
        assert!(canonical(&json!(-9007199254740992i64)).is_err());
        assert_eq!(
            canonical(&json!(-9007199254740991i64)).unwrap(),
            "-9007199254740991"
        );
    }

    #[test]
    fn float_with_integral_value_is_still_refused() {
        // `1.0` on the wire is not an integer in a hashed payload (§5.1).
        let v: Value = serde_json::from_str("{\"n\":1.0}").unwrap();
        assert!(canonical(&v).is_err());
    }

    #[test]
    fn control_characters() {
        let mut s = String::new();
        write_json_string("\u{7f}\u{1}\u{2028}", &mut s);
        assert_eq!(s, "\"\u{7f}\\u0001\u{2028}\"");
    }
}
