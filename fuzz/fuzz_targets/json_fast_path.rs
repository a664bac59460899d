//! The hand-written fast paths that `parley lens --ndjson` runs, against
//! their plain twins, on arbitrary input:
//!
//! * the strict parser's fast path (`json::parse`, and `json::parse_node`
//!   into an arena) against the reference path alone
//!   (`json::parse_strict_reference`): the same documents accepted, the same
//!   errors, the same tree, keys in the same order;
//! * the key-uniqueness filter (`json::unique_keys`) against the plain
//!   pairwise check (`json::unique_keys_plain`), on the keys of the document
//!   and on keys cut from the raw input;
//! * Lens of the arena tree against Lens of the `Value` (reply and lean),
//!   and the renderers' lines joining to their text;
//! * the byte writer of JSON strings that `parley lens --ndjson` writes each
//!   Lens with (`canonical::write_json_string_bytes`) against `serde_json`,
//!   on the input as text and on each Lens.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::canonical::write_json_string_bytes;
use parley_core::json::{self, Arena, Limits, Node};
use parley_core::lens::{lean, lean_into, render, render_into, render_lines};
use serde_json::Value;

fn object_keys<'v>(v: &'v Value, out: &mut Vec<Vec<&'v str>>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| object_keys(i, out)),
        Value::Object(map) => {
            out.push(map.keys().map(String::as_str).collect());
            map.values().for_each(|i| object_keys(i, out));
        }
        _ => {}
    }
}

/// `write_json_string_bytes(s)` is what `serde_json` writes for `s`.
fn check_json_string(s: &str) {
    let mut ours = Vec::new();
    write_json_string_bytes(s, &mut ours);
    assert_eq!(Some(ours), serde_json::to_vec(s).ok(), "{s:?}");
}

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_depth: 64,
        max_bytes: 1 << 20,
    };
    let reference = json::parse_strict_reference(data, limits);
    let fast = json::parse(data, limits);
    assert_eq!(fast.as_ref().err(), reference.as_ref().err());
    let arena = Arena::new();
    let node = json::parse_node(data, limits, &arena);
    assert_eq!(node.as_ref().err(), reference.as_ref().err());

    if let (Ok(v), Ok(r), Ok(n)) = (&fast, &reference, &node) {
        // `Value`'s `==` ignores key order; the serialized text does not.
        assert_eq!(serde_json::to_string(v).ok(), serde_json::to_string(r).ok());
        assert_eq!(*n, Node::from_value(r, &arena));
        let mut text = String::new();
        render_into(n, &mut text);
        assert_eq!(text, render(r));
        check_json_string(&text);
        assert_eq!(render_lines(n).join("\n"), text);
        lean_into(n, &mut text);
        assert_eq!(text, lean(r));
        let mut keys = Vec::new();
        object_keys(r, &mut keys);
        for k in keys {
            let entries: Vec<(&str, ())> = k.into_iter().map(|k| (k, ())).collect();
            assert!(json::unique_keys(&entries), "{entries:?}");
        }
    }

    // Keys cut from the raw input (duplicates likely): filter = plain check.
    let text = String::from_utf8_lossy(data);
    check_json_string(&text);
    let entries: Vec<(&str, ())> = text.split(',').take(20).map(|k| (k, ())).collect();
    assert_eq!(
        json::unique_keys(&entries),
        json::unique_keys_plain(&entries),
        "{entries:?}"
    );
});
