//! Reading a capability's params: each helper names the param and what it
//! must be, so an app's `invalid_params` errors teach (§7).

use super::error::ParleyError;
use serde_json::{Map, Value};

fn missing(name: &str, what: &str) -> ParleyError {
    ParleyError::invalid_params(format!("`{name}` is required: {what}"))
}

fn wrong(name: &str, what: &str) -> ParleyError {
    ParleyError::invalid_params(format!("`{name}` must be {what}"))
}

/// A required string.
pub fn string<'a>(p: &'a Map<String, Value>, name: &str) -> Result<&'a str, ParleyError> {
    match p.get(name) {
        None | Some(Value::Null) => Err(missing(name, "a string")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(wrong(name, "a string")),
    }
}

/// An optional string.
pub fn opt_string<'a>(
    p: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, ParleyError> {
    match p.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(wrong(name, "a string")),
    }
}

/// An optional integer within `range`.
pub fn opt_int(
    p: &Map<String, Value>,
    name: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, ParleyError> {
    match p.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(i) if range.contains(&i) => Ok(Some(i)),
            _ => Err(wrong(
                name,
                &format!("an integer from {} to {}", range.start(), range.end()),
            )),
        },
    }
}

/// A required number within `range`.
pub fn number(
    p: &Map<String, Value>,
    name: &str,
    range: std::ops::RangeInclusive<f64>,
) -> Result<f64, ParleyError> {
    match p.get(name) {
        None | Some(Value::Null) => Err(missing(name, "a number")),
        Some(v) => match v.as_f64() {
            Some(x) if range.contains(&x) => Ok(x),
            _ => Err(wrong(
                name,
                &format!("a number from {} to {}", range.start(), range.end()),
            )),
        },
    }
}

/// A required list.
pub fn list<'a>(p: &'a Map<String, Value>, name: &str) -> Result<&'a [Value], ParleyError> {
    match p.get(name) {
        None | Some(Value::Null) => Err(missing(name, "a list")),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(wrong(name, "a list")),
    }
}

/// A required date, `YYYY-MM-DD`; returns unix seconds of its midnight UTC.
pub fn date(p: &Map<String, Value>, name: &str) -> Result<(String, i64), ParleyError> {
    let s = string(p, name)?;
    parse_date(s)
        .map(|t| (s.to_string(), t))
        .ok_or_else(|| wrong(name, "a date like 2026-09-24"))
}

/// An optional date.
pub fn opt_date(p: &Map<String, Value>, name: &str) -> Result<Option<(String, i64)>, ParleyError> {
    match p.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => date(p, name).map(Some),
    }
}

/// A required datetime, `YYYY-MM-DDTHH:MM[:SS]Z` (UTC); returns unix seconds.
pub fn datetime(p: &Map<String, Value>, name: &str) -> Result<i64, ParleyError> {
    let s = string(p, name)?;
    parse_datetime(s).ok_or_else(|| wrong(name, "a UTC datetime like 2026-09-24T15:00:00Z"))
}

/// `YYYY-MM-DD` → unix seconds at 00:00 UTC.
pub fn parse_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400)
}

/// `YYYY-MM-DDTHH:MM[:SS]Z` → unix seconds.
pub fn parse_datetime(s: &str) -> Option<i64> {
    let day = parse_date(s.get(..10)?)?;
    let rest = s.get(10..)?.strip_prefix('T')?.strip_suffix('Z')?;
    let parts: Vec<&str> = rest.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let mut vals = [0i64; 3];
    for (i, p) in parts.iter().enumerate() {
        if !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        vals[i] = p.parse().ok()?;
    }
    if vals[0] > 23 || vals[1] > 59 || vals[2] > 59 {
        return None;
    }
    Some(day + vals[0] * 3600 + vals[1] * 60 + vals[2])
}

/// Unix seconds → `YYYY-MM-DD`.
pub fn format_date(t: i64) -> String {
    let (y, m, d) = civil_from_days(t.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Unix seconds → `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_datetime(t: i64) -> String {
    let secs = t.rem_euclid(86_400);
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        format_date(t),
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_datetime("2026-09-24T15:00:00Z"), Some(1_790_262_000));
        assert_eq!(parse_datetime("2026-09-24T15:00Z"), Some(1_790_262_000));
        assert_eq!(format_datetime(1_790_262_000), "2026-09-24T15:00:00Z");
        assert_eq!(format_date(1_790_262_000), "2026-09-24");
        for bad in ["2026-02-30", "2026-13-01", "26-01-01", "2026-01-1x"] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        for bad in [
            "2026-09-24T25:00:00Z",
            "2026-09-24 15:00Z",
            "2026-09-24T15:00:00",
            "2026-09-24T15:00:00+01:00",
        ] {
            assert_eq!(parse_datetime(bad), None, "{bad}");
        }
        for t in [0, 951_782_400, 1_790_262_123, -86_400] {
            assert_eq!(parse_datetime(&format_datetime(t)), Some(t));
        }
    }
}
