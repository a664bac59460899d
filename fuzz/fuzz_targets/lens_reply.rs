//! Lens (§9.2) of arbitrary reply frames, and budget fitting (§8). Input:
//! strict JSON; a frame's own `lens` is replaced by a marker that must never
//! reach the output (we always render locally). The first byte also picks a
//! token budget for `fit_reply`.
//!
//! Lens writes a service's text as it is (§9.2), so the exact text may hold
//! any character; what must hold is that its lines (`render_lines`) join to
//! it, and that those lines, made safe as a terminal shows them, hide nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::fit::{fit_reply, MAX_STEPS};
use parley_core::lens::{render, render_lines, render_reply};
use parley_custody::display::safe;
use parley_fuzz::{assert_display_safe, parse};
use serde_json::Value;

const MARKER: &str = "SERVICE-WROTE-THIS-LENS";

fuzz_target!(|data: &[u8]| {
    let Some(mut v) = parse(data, 64) else { return };
    // An input that carries the marker itself (the fuzzer learns it from the
    // assertion below) would make that assertion fail on correct output.
    if serde_json::to_string(&v).is_ok_and(|s| s.contains(MARKER)) {
        return;
    }
    if let Value::Object(m) = &mut v {
        if m.contains_key("lens") {
            m.insert("lens".into(), Value::String(MARKER.into()));
        }
    }
    let text = render_reply(&v);
    assert!(!text.contains(MARKER), "the service's lens was shown");
    let lines = render_lines(&v);
    if v.get("kind").and_then(Value::as_str).is_some() {
        assert_eq!(lines.join("\n"), text);
    } else {
        assert_eq!(lines.join("\n"), render(&v));
    }
    for line in &lines {
        assert_display_safe("a Lens line shown on a terminal", &safe(line));
    }
    let budget = usize::from(data.first().copied().unwrap_or(0)) * 4;
    let mut n = 0usize;
    let out = fit_reply(&v, budget, &mut || {
        n += 1;
        format!("h_{n}")
    });
    assert!(n <= MAX_STEPS, "{n} handles");
    if out.elided.is_empty() {
        assert_eq!(out.reply, v);
    }
    let again = render_reply(&out.reply);
    assert!(!again.contains(MARKER));
});
