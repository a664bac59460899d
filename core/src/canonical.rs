//! Canonical JSON (§10): the exact bytes that are hashed and signed.
//!
//! Keys sorted by Unicode code point, no whitespace, the §10 escape set, and
//! only safe integers. A float or an integer beyond ±(2^53−1) is an error,
//! never a rounding: two implementations that round differently would hash
//! the same proposal differently.

use serde_json::{Map, Value};

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

/// The canonical text of an object, without wrapping it in a `Value` (which
/// would mean copying it).
pub fn canonical_object(map: &Map<String, Value>) -> Result<String, CanonicalError> {
    let mut out = String::with_capacity(256);
    write_object(map, &mut out)?;
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
    write_object_without(map, &[], out)
}

/// Objects with at most this many entries sort their keys on the stack.
const STACK_ENTRIES: usize = 16;

/// Appends the canonical text of `map` without the entries whose key is in
/// `skip`, as if they had been removed first: the proposal hash (§5.1)
/// leaves out `hash` and `data` this way, without copying the proposal.
pub(crate) fn write_object_without(
    map: &Map<String, Value>,
    skip: &[&str],
    out: &mut String,
) -> Result<(), CanonicalError> {
    static NULL: Value = Value::Null;
    let kept = map.iter().filter(|(k, _)| !skip.contains(&k.as_str()));
    if map.len() <= STACK_ENTRIES {
        // Payloads and proposals have a handful of keys: sorting references
        // to them in a stack array costs no allocation.
        let mut entries = [("", &NULL); STACK_ENTRIES];
        let mut n = 0;
        for (k, v) in kept {
            entries[n] = (k.as_str(), v);
            n += 1;
        }
        write_sorted_entries(&mut entries[..n], out)
    } else {
        let mut entries: Vec<(&str, &Value)> = kept.map(|(k, v)| (k.as_str(), v)).collect();
        write_sorted_entries(&mut entries, out)
    }
}

fn write_sorted_entries(
    entries: &mut [(&str, &Value)],
    out: &mut String,
) -> Result<(), CanonicalError> {
    // `str` ordering is byte-wise on UTF-8, which is exactly code-point
    // order. Keys mostly differ in their first byte: compare it inline.
    entries.sort_unstable_by(|a, b| {
        let (x, y) = (a.0.as_bytes(), b.0.as_bytes());
        match (x.first(), y.first()) {
            (Some(p), Some(q)) if p != q => p.cmp(q),
            _ => x.cmp(y),
        }
    });
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
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
            write_i64(i, out);
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

/// Appends the decimal digits of `n`. Integers are everywhere in hashed
/// payloads and Lens text; this skips `core::fmt`'s formatter machinery,
/// which costs several times more than the digits themselves.
pub(crate) fn write_u64(mut n: u64, out: &mut String) {
    if n < 10 {
        out.push(char::from(b'0' + n as u8));
        return;
    }
    // Two digits per division, from the last; written first to last as
    // slices of a static table (no UTF-8 check, no per-digit push).
    let mut pairs = [0u8; 10];
    let mut count = 0;
    while n >= 100 {
        pairs[count] = (n % 100) as u8;
        count += 1;
        n /= 100;
    }
    if n >= 10 {
        out.push_str(digit_pair(n as u8));
    } else {
        out.push(char::from(b'0' + n as u8));
    }
    for &pair in pairs[..count].iter().rev() {
        out.push_str(digit_pair(pair));
    }
}

/// `"00"` to `"99"`.
pub(crate) fn digit_pair(n: u8) -> &'static str {
    const PAIRS: &str = "00010203040506070809101112131415161718192021222324252627282930313233343536373839\
                         40414243444546474849505152535455565758596061626364656667686970717273747576777879\
                         8081828384858687888990919293949596979899";
    let i = 2 * usize::from(n % 100);
    &PAIRS[i..i + 2]
}

/// Appends ASCII bytes (digits, signs, a point) one by one: for a handful of
/// bytes that is several times cheaper than `str::from_utf8` and a copy.
pub(crate) fn push_ascii(bytes: &[u8], out: &mut String) {
    out.reserve(bytes.len());
    for &b in bytes {
        out.push(char::from(b));
    }
}

/// Appends `n` in decimal, with a `-` when negative (as `{n}` formats it).
pub(crate) fn write_i64(n: i64, out: &mut String) {
    if n < 0 {
        out.push('-');
    }
    write_u64(n.unsigned_abs(), out);
}

/// Appends `s` as a JSON string literal with the §10 escape set: `\"`, `\\`,
/// `\b`, `\f`, `\n`, `\r`, `\t`, `\u00XX` (lowercase hex) for the other
/// control characters below U+0020, everything else literal UTF-8. This is
/// also exactly what ECMAScript `JSON.stringify` writes for a Rust string.
pub fn write_json_string(s: &str, out: &mut String) {
    // Most strings need no escape: one scan, one copy.
    let run = literal_run(s.as_bytes(), 0);
    out.reserve(s.len() + 2);
    out.push('"');
    out.push_str(&s[..run]);
    if run < s.len() {
        write_escaped(s, run, out);
    }
    out.push('"');
}

/// [`write_json_string`] into bytes: the same text, for output that is
/// bytes anyway (`parley lens --ndjson` writes one per line), without
/// building a `String` first.
pub fn write_json_string_bytes(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut i = 0;
    loop {
        let end = literal_run(bytes, i);
        out.extend_from_slice(&bytes[i..end]);
        let Some(&b) = bytes.get(end) else { break };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
        }
        i = end + 1;
    }
    out.push(b'"');
}

/// The rest of [`write_json_string`] from the first byte that needs an escape.
#[cold]
fn write_escaped(s: &str, mut i: usize, out: &mut String) {
    let bytes = s.as_bytes();
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
        let end = literal_run(bytes, i + 1);
        out.push_str(&s[i + 1..end]);
        i = end;
    }
}

/// The end of the run of bytes from `i` that a JSON string holds literally:
/// the index of the next `"`, `\\` or control character below U+0020, or
/// the length of `bytes`. Strings are most of the bytes of a frame or a
/// payload, so this scans a word at a time (the parser in [`crate::json`]
/// uses it too).
#[inline]
pub(crate) fn literal_run(bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if let Some(stop) = first_stop(word) {
            return i + stop;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if b < 0x20 || b == b'"' || b == b'\\' {
            break;
        }
        i += 1;
    }
    i
}

/// The index of the first byte of `word` that is `"`, `\\` or below 0x20.
fn first_stop(word: [u8; 8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // High bit of each byte of `v` that is zero; exact for the lowest such
    // byte (borrows only reach the bytes above it), which is all we read.
    let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let x = u64::from_le_bytes(word);
    // Bytes below 0x20 (bytes of 0x80 and above are excluded by `!x`).
    let control = x.wrapping_sub(LO * 0x20) & !x & HI;
    let quote = zero(x ^ (LO * u64::from(b'"')));
    let backslash = zero(x ^ (LO * u64::from(b'\\')));
    let stops = control | quote | backslash;
    (stops != 0).then(|| (stops.trailing_zeros() / 8) as usize)
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
    fn integers_are_written_as_display_writes_them() {
        let mut n = 1u64;
        for _ in 0..64 {
            for m in [n - 1, n, n.wrapping_add(1), n / 7, u64::MAX - n] {
                let mut s = String::new();
                write_u64(m, &mut s);
                assert_eq!(s, m.to_string());
            }
            n = n.wrapping_mul(3) | 1;
        }
        for i in [0, -1, 9, -10, 99, -100, i64::MIN, i64::MAX] {
            let mut s = String::new();
            write_i64(i, &mut s);
            assert_eq!(s, i.to_string());
        }
    }

    #[test]
    fn control_characters() {
        let mut s = String::new();
        write_json_string("\u{7f}\u{1}\u{2028}", &mut s);
        assert_eq!(s, "\"\u{7f}\\u0001\u{2028}\"");
    }

    /// The byte writer writes exactly what the `String` writer writes, for
    /// every character below U+0800 in every position of an 8-byte word.
    #[test]
    fn json_string_bytes_are_the_same_text() {
        let all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        for pad in 0..9 {
            let s = format!("{}{all}\"\\\n{}é\u{1}", "x".repeat(pad), "y".repeat(pad));
            let mut text = String::new();
            write_json_string(&s, &mut text);
            let mut bytes = Vec::new();
            write_json_string_bytes(&s, &mut bytes);
            assert_eq!(bytes, text.as_bytes());
        }
    }
}
