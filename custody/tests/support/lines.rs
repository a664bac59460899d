//! JSON lines read on a thread of their own: custody's agent socket and the
//! UI channel both speak one JSON value a line, and a test waits on what
//! came with a bound (`recv_timeout`) instead of blocking on a read that a
//! hung service would never end.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Every line `from` writes, parsed, in order; a line that is not JSON
/// arrives as `{"garbled": line}` (for the test to show, never to skip).
/// When the stream ends, `end` is sent last (if given), so that a test can
/// tell "closed" from "silent".
pub fn json_lines(from: impl Read + Send + 'static, end: Option<Value>) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line).unwrap_or(json!({"garbled": line}));
            if tx.send(v).is_err() {
                return;
            }
        }
        if let Some(end) = end {
            let _ = tx.send(end);
        }
    });
    rx
}

/// The final reply (anything but `PENDING`) that came on `rx` within
/// `wait`, if any: `None` is what "nothing was decided" looks like.
pub fn final_within(rx: &mpsc::Receiver<Value>, wait: Duration) -> Option<Value> {
    let end = Instant::now() + wait;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(v) if v["kind"] == "PENDING" => continue,
            Ok(v) => return Some(v),
            Err(_) => return None,
        }
    }
    None
}
