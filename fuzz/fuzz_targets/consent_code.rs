//! `pc1.` consent codes as pasted into `parley approve`: decode, re-encode,
//! and custody's `review_code` with a fixed review context.
//!
//! Asserts: a decoded code re-encodes to a code that decodes to the same
//! consent (detail without `data`); a code custody accepts decodes, carries
//! the proposal, and its review is display-safe and names the code's hash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::code;
use parley_custody::review::review_code;
use parley_fuzz::{agent, assert_review_safe, review_context, NOW};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let decoded = code::decode(&text);
    if let Ok(c) = &decoded {
        let _ = c.consent.to_value();
        if let Ok(again) = code::encode(&c.consent, c.detail.as_ref()) {
            let back = code::decode(&again).expect("a re-encoded code decodes");
            assert_eq!(back.consent, c.consent);
            let mut want = c.detail.clone();
            if let Some(serde_json::Value::Object(m)) = &mut want {
                m.remove("data");
            }
            assert_eq!(back.detail, want);
        }
    }
    let ctx = review_context(NOW);
    if let Ok(r) = review_code(&text, &agent().public().to_string(), &ctx) {
        let c = decoded.expect("custody accepted a code core cannot decode");
        assert!(c.detail.is_some());
        assert_eq!(r.review().hash, c.consent.hash);
        assert_eq!(r.checked().request(), &c.consent);
        assert_review_safe(r.review());
    }
});
