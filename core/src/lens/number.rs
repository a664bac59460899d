//! ECMAScript-exact numbers and compact JSON (§9.1, §9.2).
//!
//! Object entries are written in insertion order, as §9.1 and §9.2 say, for
//! every key: also for integer-like keys such as `"2"`, which a JavaScript
//! object would list first (`conformance/README.md` explains why the
//! TypeScript reference differs there).

use super::view::{Json, JsonObject, View};
use crate::canonical::{push_ascii, write_i64, write_json_string, write_u64};
use serde_json::{Number, Value};

/// Containers nested deeper than this render as `…` instead of recursing.
/// Frames parsed by `serde_json` (128 levels) or [`crate::json`] (64) never
/// get here; it only keeps a programmatically built value from exhausting
/// the stack.
pub(crate) const MAX_DEPTH: usize = 256;

/// The largest integer magnitude an IEEE double holds exactly (2^53).
const EXACT_INT: u64 = 1 << 53;

/// ECMAScript `Number::toString` of a JSON number (§9.1): `1.5`, `1e+21`,
/// `1e-7`, `0.30000000000000004`, and `-0` as `0`.
///
/// Integers beyond 2^53 print as ECMAScript prints the double `JSON.parse`
/// would round them to (`12345678901234567890` → `12345678901234567000`),
/// because that is the value every JavaScript peer sees.
pub fn number(n: &Number) -> String {
    let mut s = String::new();
    write_number(n, &mut s);
    s
}

pub(crate) fn write_number(n: &Number, out: &mut String) {
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= EXACT_INT {
            write_i64(i, out);
        } else {
            write_f64(i as f64, out);
        }
    } else if let Some(u) = n.as_u64() {
        // Only reached above i64::MAX, so always beyond 2^53.
        write_f64(u as f64, out);
    } else {
        write_f64(n.as_f64().unwrap_or(f64::NAN), out);
    }
}

/// ECMAScript `Number::toString` of a double, including `NaN`, `Infinity`
/// and `-Infinity` (which arithmetic on a JSON number can produce).
pub(crate) fn write_f64(f: f64, out: &mut String) {
    if !write_short_decimal(f, out) {
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format(f));
    }
}

/// Powers of ten that [`write_short_decimal`] tries as denominators.
const POW10: [f64; 7] = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];

/// Fast path of [`write_f64`] for the doubles frames are full of (prices
/// like `8.49`, progress like `0.425`, integral values): writes `f` and
/// returns true when it is `m / 10^j` for an integer `m` and `j ≤ 6`, else
/// writes nothing and returns false (Ryū then does the general case).
///
/// Why this is exactly `Number::toString`: take the smallest such `j`. The
/// check `m / 10^j == f` is IEEE division of two exact doubles, so it holds
/// exactly when the decimal `m·10^-j` reads back as `f`. With
/// `m < 2^50`, `f`'s rounding interval is narrower than `10^-j`, so no other
/// decimal with at most `j` fraction digits reads back as `f`, and one with
/// more fraction digits has more significant digits (the integer part is
/// the same). So `m·10^-j` is the unique shortest round-tripping decimal,
/// the one ECMAScript (and Ryū) prints, and `1e-6 ≤ |f| < 2^50` is inside
/// the range printed without an exponent.
fn write_short_decimal(f: f64, out: &mut String) -> bool {
    const LIMIT: f64 = (1u64 << 50) as f64;
    let a = f.abs();
    if a == 0.0 {
        out.push('0'); // Also `-0`, as ECMAScript prints it.
        return true;
    }
    if !(1e-6..LIMIT).contains(&a) {
        return false;
    }
    for (j, &scale) in POW10.iter().enumerate() {
        let scaled = a * scale;
        if scaled >= LIMIT {
            return false;
        }
        // The nearest integer; `i64` conversions are single instructions.
        let m = (scaled + 0.5) as i64;
        if m as f64 / scale != a {
            continue;
        }
        // `m` is not negative: split it at the point with constant divisors.
        let m = m as u64;
        let (int, frac) = match j {
            0 => (m, 0),
            1 => (m / 10, m % 10),
            2 => (m / 100, m % 100),
            3 => (m / 1_000, m % 1_000),
            4 => (m / 10_000, m % 10_000),
            5 => (m / 100_000, m % 100_000),
            _ => (m / 1_000_000, m % 1_000_000),
        };
        if f < 0.0 {
            out.push('-');
        }
        write_u64(int, out);
        if j > 0 {
            // The fraction, zero-padded to `j` digits; its last digit is not
            // zero, or a smaller `j` would have matched.
            out.push('.');
            let mut digits = [b'0'; 6];
            let mut rest = frac;
            for d in digits[..j].iter_mut().rev() {
                *d = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            push_ascii(&digits[..j], out);
        }
        return true;
    }
    false
}

/// The number as a double, the way an ECMAScript peer holds it.
pub(crate) fn as_f64(n: &Number) -> f64 {
    if let Some(i) = n.as_i64() {
        i as f64
    } else if let Some(u) = n.as_u64() {
        u as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    }
}

/// Exactly ECMAScript `JSON.stringify(v)` (§9.2 "Compact JSON"): no
/// whitespace, numbers per `Number::toString`, strings with the §10 escape
/// set (which is what `JSON.stringify` writes for well-formed strings).
///
/// Entries are in insertion order (§9.2 "insertion order, no whitespace"),
/// as in lean notation.
pub fn compact_json(v: &Value) -> String {
    let mut s = String::new();
    write_compact(v, &mut s, 0);
    s
}

pub(crate) fn write_compact<J: Json>(v: &J, out: &mut String, depth: usize) {
    match v.view() {
        View::Null => out.push_str("null"),
        View::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        View::Number(n) => write_number(n, out),
        View::String(s) => write_json_string(s, out),
        View::Array(_) | View::Object(_) if depth >= MAX_DEPTH => out.push('…'),
        View::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(item, out, depth + 1);
            }
            out.push(']');
        }
        View::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.entries().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_compact(item, out, depth + 1);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn n(text: &str) -> String {
        let v: Value = serde_json::from_str(text).unwrap();
        match v {
            Value::Number(n) => number(&n),
            _ => unreachable!(),
        }
    }

    #[test]
    fn ecmascript_number_to_string() {
        assert_eq!(n("1e21"), "1e+21");
        assert_eq!(n("1e20"), "100000000000000000000");
        assert_eq!(n("1e-7"), "1e-7");
        assert_eq!(n("0.000001"), "0.000001");
        assert_eq!(n("1.5"), "1.5");
        assert_eq!(n("0.30000000000000004"), "0.30000000000000004");
        assert_eq!(
            number(&Number::from_f64(0.1 + 0.2).unwrap()),
            "0.30000000000000004"
        );
        assert_eq!(n("-0"), "0");
        assert_eq!(n("-0.0"), "0");
        assert_eq!(n("1.0"), "1");
        assert_eq!(n("-3"), "-3");
        assert_eq!(n("123e-20"), "1.23e-18");
        assert_eq!(n("5e-324"), "5e-324");
        assert_eq!(n("1.7976931348623157e308"), "1.7976931348623157e+308");
        assert_eq!(n("9007199254740993"), "9007199254740992");
        assert_eq!(n("-9007199254740993"), "-9007199254740992");
        assert_eq!(n("9007199254740992"), "9007199254740992");
        assert_eq!(n("12345678901234567890"), "12345678901234567000");
        assert_eq!(n("18446744073709551615"), "18446744073709552000");
        assert_eq!(n("-9223372036854775808"), "-9223372036854776000");
    }

    /// The short-decimal fast path prints exactly what Ryū-js prints.
    #[test]
    fn short_decimals_match_ryu() {
        let ryu = |f: f64| ryu_js::Buffer::new().format(f).to_string();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            8.49,
            0.425,
            0.005,
            1e-6,
            1.5e-6,
            9.99e-7,
            0.1 + 0.2,
            1e15,
            1125899906842623.0,
            1125899906842624.0,
            4503599627370495.5,
            123456.789,
            0.000001,
            -12.19,
            1e21,
            5e-324,
            100.0,
            1234567.125,
            0.3,
            2.675,
            1.005,
        ];
        for _ in 0..200_000 {
            let r = next();
            let denominator = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 3.0][(r % 9) as usize];
            let numerator = (r >> 8) % [100, 100_000, 1 << 40, 1 << 53][((r >> 4) % 4) as usize];
            cases.push(numerator as f64 / denominator);
            cases.push(-(numerator as f64) / denominator);
            cases.push(f64::from_bits(next()));
        }
        for f in cases {
            let mut s = String::new();
            write_f64(f, &mut s);
            assert_eq!(s, ryu(f), "{f:e}");
        }
    }

    #[test]
    fn compact_is_json_stringify() {
        let v: Value =
            serde_json::from_str(r#"{"b":1,"1":[1.0,-0,"x\n\u0001"],"a":{},"0":null,"01":true,"4294967295":2,"4294967294":3}"#)
                .unwrap();
        assert_eq!(
            compact_json(&v),
            r#"{"b":1,"1":[1,0,"x\n\u0001"],"a":{},"0":null,"01":true,"4294967295":2,"4294967294":3}"#
        );
        assert_eq!(compact_json(&json!([])), "[]");
        assert_eq!(compact_json(&json!("\u{2028}é")), "\"\u{2028}é\"");
    }
}
