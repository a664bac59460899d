//! Times and durations (§9.2).

use super::number::{as_f64, write_f64};
use super::view::{Json, View};
use crate::canonical::{digit_pair, write_i64, write_u64};

/// §9.2 time: UTC `YYYY-MM-DDTHH:MMZ`, with `:SS` inserted when the seconds
/// are not zero (`2026-09-21T14:23:20Z`).
///
/// Matches ECMAScript `Date.prototype.toISOString` (minus milliseconds) for
/// every time it accepts: years 0–9999 use four digits, other years are
/// written `+YYYYYY` / `-YYYYYY` (at least six digits). Times beyond
/// ECMAScript's ±8.64e12 s range, where `toISOString` throws, keep the same
/// format instead of failing. Total for every `i64`.
pub fn time(unix: i64) -> String {
    let mut s = String::with_capacity(20);
    write_time(unix, &mut s);
    s
}

/// Appends [`time`] of `unix` to `out`, digit by digit (no `core::fmt`).
pub(crate) fn write_time(unix: i64, out: &mut String) {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    out.reserve(20);
    if (0..=9999).contains(&y) {
        // Four digits as two pairs (every time a frame really holds).
        out.push_str(digit_pair((y / 100) as u8));
        out.push_str(digit_pair((y % 100) as u8));
    } else {
        out.push(if y < 0 { '-' } else { '+' });
        write_padded(y.unsigned_abs(), 6, out);
    }
    let (hh, mm, ss) = (secs / 3600, secs / 60 % 60, secs % 60);
    out.push('-');
    write_padded(u64::from(m), 2, out);
    out.push('-');
    write_padded(u64::from(d), 2, out);
    out.push('T');
    write_padded(hh.unsigned_abs(), 2, out);
    out.push(':');
    write_padded(mm.unsigned_abs(), 2, out);
    if ss != 0 {
        out.push(':');
        write_padded(ss.unsigned_abs(), 2, out);
    }
    out.push('Z');
}

/// `n` with leading zeros to at least `width` digits (`{n:0width$}`).
fn write_padded(n: u64, width: u32, out: &mut String) {
    if width == 2 && n < 100 {
        // Months, days, hours, minutes and seconds.
        out.push_str(digit_pair(n as u8));
        return;
    }
    let mut digits = 1;
    let mut rest = n / 10;
    while rest > 0 {
        digits += 1;
        rest /= 10;
    }
    for _ in digits..width {
        out.push('0');
    }
    write_u64(n, out);
}

/// Proleptic Gregorian (year, month, day) of a count of days since
/// 1970-01-01 (H. Hinnant's `civil_from_days`). No overflow for any day
/// count `i64` seconds can produce (|days| < 1.1e14).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// §9.2 duration: the largest of `d`/`h`/`m`/`s` that divides `secs` exactly
/// (`172800` → `2d`, `3600` → `1h`, `90` → `90s`, `0` → `0s`; negative
/// values keep their sign: `-3600` → `-1h`).
pub fn duration(secs: i64) -> String {
    let mut s = String::new();
    write_duration(secs, &mut s);
    s
}

/// Appends [`duration`] of `secs` to `out`.
pub(crate) fn write_duration(secs: i64, out: &mut String) {
    for (unit, name) in [(86_400, 'd'), (3_600, 'h'), (60, 'm')] {
        if secs != 0 && secs % unit == 0 {
            write_i64(secs / unit, out);
            out.push(name);
            return;
        }
    }
    write_i64(secs, out);
    out.push('s');
}

/// A time field of a frame. Integers use [`time`]; a fractional number uses
/// its floor (as `new Date(t * 1000)` does); anything else, or a number
/// outside `i64`, is shown as the value itself by `fallback`.
pub(crate) fn write_time_value<J: Json>(
    v: Option<&J>,
    out: &mut String,
    fallback: impl FnOnce(&mut String),
) {
    if let Some(View::Number(n)) = v.map(J::view) {
        if let Some(i) = n.as_i64() {
            write_time(i, out);
            return;
        }
        let f = as_f64(n).floor();
        // The range check is on the double: both bounds are exact doubles.
        if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
            write_time(f as i64, out);
            return;
        }
    }
    fallback(out)
}

/// A duration field of a frame. Integers use [`duration`]; other numbers
/// follow the same rule in double arithmetic, exactly as the ECMAScript
/// reference computes it (`1.5` → `1.5s`); non-numbers go to `fallback`.
pub(crate) fn write_duration_value<J: Json>(
    v: Option<&J>,
    out: &mut String,
    fallback: impl FnOnce(&mut String),
) {
    let Some(View::Number(n)) = v.map(J::view) else {
        return fallback(out);
    };
    if let Some(i) = n.as_i64() {
        write_duration(i, out);
        return;
    }
    let f = as_f64(n);
    for (unit, name) in [(86_400.0, 'd'), (3_600.0, 'h'), (60.0, 'm')] {
        if f != 0.0 && f % unit == 0.0 {
            write_f64(f / unit, out);
            out.push(name);
            return;
        }
    }
    write_f64(f, out);
    out.push('s');
}

/// The last second a four-digit year can show (9999-12-31T23:59:59Z).
const MAX_STRICT_TIME: i64 = 253_402_300_799;

/// A time field of a YEA frame (§9.2 as its reference renders it): only an
/// integer in [0, 9999-12-31T23:59:59Z] is a time; anything else goes to
/// `fallback` (its lean scalar).
pub(crate) fn write_time_strict<J: Json>(
    v: Option<&J>,
    out: &mut String,
    fallback: impl FnOnce(&mut String),
) {
    match v.map(J::view) {
        Some(View::Number(n)) => match n.as_i64() {
            Some(i) if (0..=MAX_STRICT_TIME).contains(&i) => write_time(i, out),
            _ => fallback(out),
        },
        _ => fallback(out),
    }
}

/// A duration field of a YEA frame: only a safe integer is a duration;
/// anything else goes to `fallback` (its lean scalar).
pub(crate) fn write_duration_strict<J: Json>(
    v: Option<&J>,
    out: &mut String,
    fallback: impl FnOnce(&mut String),
) {
    match v.map(J::view) {
        Some(View::Number(n)) => match n.as_i64() {
            Some(i) if i.unsigned_abs() <= crate::canonical::MAX_SAFE_INTEGER as u64 => {
                write_duration(i, out)
            }
            _ => fallback(out),
        },
        _ => fallback(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times() {
        assert_eq!(time(0), "1970-01-01T00:00Z");
        assert_eq!(time(1), "1970-01-01T00:00:01Z");
        assert_eq!(time(-1), "1969-12-31T23:59:59Z");
        assert_eq!(time(-86_400), "1969-12-31T00:00Z");
        assert_eq!(time(1_790_000_600), "2026-09-21T14:23:20Z");
        assert_eq!(time(1_790_003_700), "2026-09-21T15:15Z");
        assert_eq!(time(951_782_400), "2000-02-29T00:00Z");
        assert_eq!(time(4_107_542_400), "2100-03-01T00:00Z");
        assert_eq!(time(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(time(253_402_300_800), "+010000-01-01T00:00Z");
        assert_eq!(time(-62_167_219_200), "0000-01-01T00:00Z");
        assert_eq!(time(-62_198_755_200), "-000001-01-01T00:00Z");
        assert_eq!(time(8_640_000_000_000), "+275760-09-13T00:00Z");
        assert_eq!(time(-8_640_000_000_000), "-271821-04-20T00:00Z");
        // Total: no panic at the extremes.
        assert!(time(i64::MAX).starts_with('+'));
        assert!(time(i64::MIN).starts_with('-'));
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(45), "45s");
        assert_eq!(duration(90), "90s");
        assert_eq!(duration(120), "2m");
        assert_eq!(duration(3600), "1h");
        assert_eq!(duration(5400), "90m");
        assert_eq!(duration(86_400), "1d");
        assert_eq!(duration(172_800), "2d");
        assert_eq!(duration(-3600), "-1h");
        assert_eq!(duration(-1), "-1s");
        assert_eq!(duration(i64::MIN), "-9223372036854775808s");
        assert_eq!(duration(i64::MAX), "9223372036854775807s");
    }

    fn tv(v: serde_json::Value) -> String {
        let mut s = String::new();
        write_time_value(Some(&v), &mut s, |o| o.push('?'));
        s
    }

    fn dv(v: serde_json::Value) -> String {
        let mut s = String::new();
        write_duration_value(Some(&v), &mut s, |o| o.push('?'));
        s
    }

    #[test]
    fn field_values() {
        assert_eq!(tv(json!(1_790_000_600.9)), "2026-09-21T14:23:20Z");
        assert_eq!(tv(json!(-0.5)), "1969-12-31T23:59:59Z");
        assert_eq!(tv(json!(1e300)), "?");
        assert_eq!(tv(json!(u64::MAX)), "?");
        assert_eq!(tv(json!("soon")), "?");
        assert_eq!(dv(json!(3600.0)), "1h");
        assert_eq!(dv(json!(1.5)), "1.5s");
        assert_eq!(dv(json!(u64::MAX)), "18446744073709552000s");
        assert_eq!(dv(json!(1e300)), "1.6666666666666668e+298m");
        assert_eq!(dv(json!(null)), "?");
    }
}
