//! Strict JSON (core::json) and canonical JSON (§10) of arbitrary input.
//!
//! Asserts: what the strict parser accepts, serde_json reads the same; what
//! it refuses but serde_json reads has a duplicate key or is too deep;
//! canonical succeeds exactly when every number is a safe integer; and
//! canonical output is a fixed point (parse → canonical gives it back).
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::canonical::{canonical, MAX_SAFE_INTEGER};
use parley_core::json::{self, Limits};
use serde_json::Value;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn all_safe_ints(v: &Value) -> bool {
    match v {
        Value::Number(n) => n
            .as_i64()
            .is_some_and(|i| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i)),
        Value::Array(a) => a.iter().all(all_safe_ints),
        Value::Object(o) => o.values().all(all_safe_ints),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let strict = json::parse(data, Limits::FRAME);
    let lenient = serde_json::from_slice::<Value>(data);
    match (&strict, &lenient) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "strict and serde_json disagree"),
        (Ok(_), Err(e)) => panic!("strict accepted what serde_json refuses: {e}"),
        (Err(e), Ok(b)) => {
            let msg = e.to_string();
            assert!(
                depth(b) > Limits::FRAME.max_depth
                    || msg.contains("duplicate key")
                    || matches!(e, json::JsonError::TooLarge { .. }),
                "strict refused a valid document without a reason: {msg}"
            );
        }
        (Err(_), Err(_)) => {}
    }
    let Ok(v) = strict else { return };
    match canonical(&v) {
        Ok(text) => {
            assert!(all_safe_ints(&v), "canonical accepted an unsafe number");
            assert!(
                !text.bytes().any(|b| b < 0x20),
                "raw control byte in {text:?}"
            );
            let back = json::parse(text.as_bytes(), Limits::FRAME).expect("canonical parses");
            assert_eq!(
                canonical(&back).as_deref(),
                Ok(text.as_str()),
                "not a fixed point"
            );
            // Same value, whatever the key order.
            let mut a = v.clone();
            let mut b = back;
            a.sort_all_objects();
            b.sort_all_objects();
            assert_eq!(a, b);
        }
        Err(e) => {
            assert!(!all_safe_ints(&v), "canonical refused safe integers: {e}");
            assert!(e.to_string().contains('$'), "no path in {e}");
        }
    }
});
