//! Times for people: the one format of every absolute time a human reads on
//! a screen of custody (review windows, the grant form, the audit view,
//! notifications, the terminal prompt).
//!
//! A grant that ends "2026-11-30T05:21:48Z" in one line and "06:21" in the
//! next makes the human do time-zone arithmetic at the moment of a decision.
//! So custody says every time in the user's own zone, as the web view does
//! (both read the system's `TZ` and `/etc/localtime`), in one shape:
//! `2026-11-30 06:21`, with a no-break space so that a time never breaks
//! across lines. `conformance/local-time.json` pins the shape for this
//! module and for the UI's `when` (ui/src/format.ts) alike.
//!
//! Protocol output (Lens, `parley inspect`, exports, logs) keeps §9.2's UTC
//! form (`parley_core::lens::time`): that is for programs and for comparing
//! across machines, not for a decision.

use jiff::tz::TimeZone;
use jiff::Timestamp;

/// `2026-11-30 06:21`: a unix time in the system's time zone, to the minute
/// (seconds are cut, never rounded up, so a grant never looks longer).
pub fn when(unix: i64) -> String {
    when_in(unix, &TimeZone::system(), false)
}

/// `2026-11-30 06:21:48`: the same with seconds, where they matter (when an
/// audit event happened).
pub fn when_exact(unix: i64) -> String {
    when_in(unix, &TimeZone::system(), true)
}

/// The format in a given zone. A time outside what a calendar can say
/// (beyond year 9999) falls back to §9.2's UTC form, which can.
fn when_in(unix: i64, tz: &TimeZone, seconds: bool) -> String {
    let Ok(ts) = Timestamp::from_second(unix) else {
        return parley_core::lens::time(unix);
    };
    let shape = if seconds {
        "%Y-%m-%d\u{a0}%H:%M:%S"
    } else {
        "%Y-%m-%d\u{a0}%H:%M"
    };
    ts.to_zoned_datetime(tz.clone()).strftime(shape).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn vectors() -> Vec<Value> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../conformance/local-time.json"
        );
        let text = std::fs::read_to_string(path).expect("conformance/local-time.json");
        let doc: Value = serde_json::from_str(&text).expect("valid JSON");
        doc["cases"].as_array().expect("cases").clone()
    }

    #[test]
    fn conformance_vectors_pass() {
        let cases = vectors();
        assert!(cases.len() >= 12, "the vector file lost its cases");
        for c in cases {
            let name = c["name"].as_str().unwrap_or("?");
            let tz = TimeZone::get(c["tz"].as_str().expect("tz")).expect("a known zone");
            let unix = c["unix"].as_i64().expect("unix");
            assert_eq!(when_in(unix, &tz, false), c["minutes"], "{name}: minutes");
            assert_eq!(when_in(unix, &tz, true), c["seconds"], "{name}: seconds");
        }
    }

    #[test]
    fn a_time_beyond_the_calendar_falls_back_to_utc_iso() {
        let far = 253_402_300_800; // 10000-01-01T00:00Z, past what jiff holds
        assert_eq!(when_in(far, &TimeZone::UTC, false), "+010000-01-01T00:00Z");
        assert_eq!(
            when_in(i64::MAX, &TimeZone::UTC, true),
            parley_core::lens::time(i64::MAX)
        );
    }

    #[test]
    fn never_breaks_and_never_names_utc_with_a_z() {
        let s = when(1_796_016_108);
        assert!(
            !s.contains(' ') && s.contains('\u{a0}') && !s.ends_with('Z'),
            "{s}"
        );
    }
}
