//! Lens (§9.1) of arbitrary values, and the helpers the review uses on
//! untrusted text. Input: JSON (strict) or, if it is not JSON, the bytes as
//! one string value.
//!
//! Asserts: no control character but `\n` in lean output (its strings are
//! quoted with the §10 escapes) or in a string made safe; lean's lines join to it;
//! an effect line (verbatim text, as it is) made safe hides nothing; compact
//! JSON parses back; the token estimate of the output is consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::estimate::est;
use parley_core::lens::{compact_json, effect_line, lean, lean_lines, render, scalar};
use parley_custody::display::safe;
use parley_fuzz::{assert_display_safe, one_line_per_line, parse};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let v = parse(data, 64).unwrap_or_else(|| Value::String(String::from_utf8_lossy(data).into()));
    let l = lean(&v);
    assert!(one_line_per_line(&l), "{l:?}");
    assert_eq!(lean_lines(&v).join("\n"), l);
    assert!(!render(&v).is_empty());
    let c = compact_json(&v);
    assert!(serde_json::from_str::<Value>(&c).is_ok(), "{c}");
    let _ = scalar(&v);
    let e = effect_line(&v);
    assert_display_safe("an effect line shown to a human", &safe(&e));
    let _ = est(&l);
    if let Value::String(s) = &v {
        assert_display_safe("a string made safe", &safe(s));
        let _ = est(s);
    }
});
