//! Where the conformance vectors are and how core's runners read them
//! (`conformance.rs`, `conformance_yea.rs`, `conformance_text.rs`,
//! `conformance_approval.rs`): one reader, so that a vector file that is
//! missing or not JSON fails every runner the same way, naming the file.
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;

/// `conformance/<sub>` of this checkout (`""`: `conformance/` itself).
pub fn dir(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance")
        .join(sub)
}

/// The text of `conformance/<file>`.
pub fn text(file: &str) -> String {
    let path = dir(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `conformance/<file>`, parsed.
pub fn load(file: &str) -> Value {
    serde_json::from_str(&text(file)).unwrap_or_else(|e| panic!("{}: {e}", dir(file).display()))
}

/// A vector file's cases: its `cases` list, or the file itself when it is
/// the list.
pub fn cases(v: &Value) -> &Vec<Value> {
    v.get("cases")
        .unwrap_or(v)
        .as_array()
        .expect("a list of cases")
}

/// A case's name, for the failure message.
pub fn name(c: &Value) -> String {
    c["name"].as_str().unwrap_or("(unnamed)").to_string()
}
