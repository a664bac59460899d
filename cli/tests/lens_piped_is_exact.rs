//! `parley lens` piped to a program writes the exact Lens of §9, byte for
//! byte (issue 14: it escaped hidden characters such as U+202E even into a
//! pipe, so a model behind the pipe read text no other implementation
//! writes). Only a terminal gets the display-safe form, and a note on stderr
//! says so once.
//!
//! Everything runs the real binary: stdout a pipe, or a real pty (`script`).

mod support;

use parley_core::lens;
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{conformance_dir, parley};

/// Every Lens vector file in `conformance/`: `lens.json` (the public
/// vectors) and ours (`lens-*.json`).
fn lens_vector_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(conformance_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("lens") && name.ends_with(".json")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    files
}

fn cases(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    match serde_json::from_str(&text).unwrap() {
        Value::Array(cases) => cases,
        _ => panic!("{} is not a list", path.display()),
    }
}

#[test]
fn piped_lens_is_byte_identical_to_every_conformance_vector() {
    for file in lens_vector_files() {
        let all = cases(&file);
        for kind in ["value", "reply"] {
            let mine: Vec<&Value> = all.iter().filter(|c| c["type"] == kind).collect();
            let mode: &[&str] = if kind == "value" { &["--value"] } else { &[] };
            // One process per case, as a program would pipe one reply.
            for case in &mine {
                let input = serde_json::to_vec(&case["input"]).unwrap();
                let o = parley(&[&["lens"], mode].concat(), &input);
                let want = format!("{}\n", case["lens"].as_str().unwrap());
                assert_eq!(o.status.code(), Some(0), "{}", case["name"]);
                assert_eq!(
                    String::from_utf8(o.stdout).unwrap(),
                    want,
                    "{}: {}",
                    file.display(),
                    case["name"]
                );
                assert!(o.stderr.is_empty(), "a pipe gets no note");
                // --exact changes nothing when piped.
                let o = parley(&[&["lens", "--exact"], mode].concat(), &input);
                assert_eq!(String::from_utf8(o.stdout).unwrap(), want);
            }
            // All of them through --ndjson: each line the JSON string of it.
            let mut input = Vec::new();
            for case in &mine {
                input.extend(serde_json::to_vec(&case["input"]).unwrap());
                input.push(b'\n');
            }
            let o = parley(&[&["lens", "--ndjson"], mode].concat(), &input);
            assert_eq!(o.status.code(), Some(0));
            let text = String::from_utf8(o.stdout).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), mine.len());
            for (line, case) in lines.iter().zip(&mine) {
                let s: String = serde_json::from_str(line).unwrap();
                assert_eq!(s, case["lens"].as_str().unwrap(), "{}", case["name"]);
            }
        }
    }
}

#[test]
fn json_output_carries_the_exact_lens() {
    let input = br#"{"kind":"EVENT","message":"pay \u202eereh"}"#;
    let o = parley(&["--json", "lens"], input);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["lens"], "… pay \u{202e}ereh");
}

// ---- random values with hidden characters, against the library ----

/// Characters that hide, reorder or break text, and some that look like
/// numbers or JSON syntax, mixed with ordinary text.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z0-9 ]{0,6}",
        1 => prop::sample::select(vec![
            "\u{202e}", "\u{202d}", "\u{2066}", "\u{2069}", "\u{200b}", "\u{200f}", "\u{feff}",
            "\u{85}", "\u{9b}", "\u{1b}[2J", "\r", "\n", "\t", "\u{7f}", "\u{2028}", "\u{e0041}",
            "\u{ad}", "\u{34f}", "\u{fe0f}", "é", "東", "\"", "\\", ",", "1e5", "-1", "01", "7",
        ])
        .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|p| p.concat())
}

fn value(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Reply frames whose verbatim fields (summaries, messages, labels, effect
/// targets, ids…) carry the hidden characters.
fn frame() -> impl Strategy<Value = Value> {
    let t = || text().prop_map(Value::String);
    let effect = (t(), t(), t(), t()).prop_map(|(target, field, to, detail)| {
        serde_json::json!({"op": "update", "target": target, "field": field, "to": to, "detail": detail})
    });
    prop_oneof![
        (t(), t()).prop_map(|(m, _)| serde_json::json!({"kind": "EVENT", "message": m})),
        (t(), t(), value(2)).prop_map(|(c, m, p)| serde_json::json!(
            {"kind": "ERROR", "code": c, "message": m, "fix": [{"say": m, "params": {"x": p}}]})),
        (t(), prop::collection::vec(t(), 0..3)).prop_map(|(q, labels)| {
            let options: Vec<Value> = labels.into_iter().map(|l| serde_json::json!({"label": l})).collect();
            serde_json::json!({"kind": "CLARIFY", "question": q, "options": options})
        }),
        (t(), t(), prop::collection::vec(effect, 0..3), value(2)).prop_map(|(id, s, effects, data)| {
            // Marked: a PROPOSALS frame without a marker reads differently
            // in Parley v1 (`cost: free`) and YEA v1, so `parley lens` refuses it.
            serde_json::json!({"parley": 1, "kind": "PROPOSALS", "proposals": [
                {"id": id, "summary": s, "effects": effects, "risk": "low", "undo": null,
                 "expires": 60, "hash": "h", "data": data}]})
        }),
        (t(), t(), value(2)).prop_map(|(id, s, result)| serde_json::json!(
            {"kind": "RECEIPT", "receipt": {"id": id, "summary": s, "undo": null, "result": result}})),
        (t(), t(), t()).prop_map(|(name, cap, ty)| serde_json::json!(
            {"kind": "BRIEF", "service": {"id": name, "name": name, "summary": cap},
             "capabilities": [{"name": cap, "kind": "ask", "summary": name, "params": {cap.as_str().unwrap_or("p"): ty}}]})),
        value(3).prop_map(|data| serde_json::json!({"kind": "ANSWER", "data": data})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Piped, the binary writes exactly what the library renders: one
    /// process for a whole batch (`--ndjson`), and one for the first item.
    #[test]
    fn piped_lens_of_random_values_is_the_library_render(
        values in prop::collection::vec(value(4), 1..24),
        frames in prop::collection::vec(frame(), 1..24),
    ) {
        for (items, mode, render) in [
            (&values, &["--value"][..], lens::lean as fn(&Value) -> String),
            (&frames, &[][..], lens::render as fn(&Value) -> String),
        ] {
            let mut input = Vec::new();
            for v in items.iter() {
                input.extend(serde_json::to_vec(v).unwrap());
                input.push(b'\n');
            }
            let o = parley(&[&["lens", "--ndjson"], mode].concat(), &input);
            prop_assert_eq!(o.status.code(), Some(0));
            let text = String::from_utf8(o.stdout).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            prop_assert_eq!(lines.len(), items.len());
            for (line, v) in lines.iter().zip(items.iter()) {
                let s: String = serde_json::from_str(line).unwrap();
                prop_assert_eq!(s, render(v));
            }
            let first = &items[0];
            let o = parley(&[&["lens"], mode].concat(), &serde_json::to_vec(first).unwrap());
            prop_assert_eq!(o.status.code(), Some(0));
            prop_assert_eq!(String::from_utf8(o.stdout).unwrap(), format!("{}\n", render(first)));
            prop_assert!(o.stderr.is_empty());
        }
    }
}

// ---- a real terminal ----

/// Runs `parley ARGS FILE` with stdout on a pty (util-linux `script`) and
/// stderr to a file; returns (what the terminal received, stderr).
fn on_a_terminal(args: &str, input: &[u8]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(&file, input).unwrap();
    let err = dir.path().join("err.txt");
    let cmd = format!(
        "'{}' {args} '{}' 2>'{}'",
        env!("CARGO_BIN_EXE_parley"),
        file.display(),
        err.display()
    );
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("util-linux script");
    assert!(o.status.success(), "{o:?}");
    // The terminal turns each \n into \r\n.
    let screen = String::from_utf8(o.stdout).unwrap().replace("\r\n", "\n");
    (screen, std::fs::read_to_string(err).unwrap())
}

const NOTE: &str = "not the exact Lens";

#[test]
fn a_terminal_gets_the_display_safe_form_and_one_note() {
    let input =
        br#"{"kind":"RECEIPT","receipt":{"id":"r\u202e1","summary":"ok\n\u2713 Paid","undo":null,
        "result":{"a":"x\u200by","b":"\u001b[2Jz"}}}"#;
    let (screen, err) = on_a_terminal("lens", input);
    assert_eq!(
        screen,
        "✓ ok\\u{a}✓ Paid (receipt r\\u{202e}1) · irreversible\n  result:\n    a: \"x\\u{200b}y\"\n    b: \"\\u001b[2Jz\"\n"
    );
    assert!(
        !screen.contains(['\u{202e}', '\u{200b}', '\u{1b}']),
        "{screen:?}"
    );
    assert_eq!(err.matches(NOTE).count(), 1, "{err}");
    assert!(err.contains("--exact"), "{err}");

    // --exact on a terminal: the exact text, no note.
    let (screen, err) = on_a_terminal("lens --exact", input);
    let v: Value = serde_json::from_slice(input).unwrap();
    assert_eq!(screen, format!("{}\n", lens::render(&v)));
    assert!(err.is_empty(), "{err}");

    // --ndjson is for programs: exact even on a terminal.
    let one_line = serde_json::to_vec(&v).unwrap();
    let (screen, err) = on_a_terminal("lens --ndjson", &one_line);
    let s: String = serde_json::from_str(screen.trim_end()).unwrap();
    assert_eq!(s, lens::render(&v));
    assert!(err.is_empty(), "{err}");
}

#[test]
fn a_terminal_shows_clean_lens_as_it_is_without_a_note() {
    let input = br#"{"kind":"EVENT","message":"charging card","progress":0.42}"#;
    let (screen, err) = on_a_terminal("lens", input);
    assert_eq!(screen, "… charging card (42%)\n");
    assert!(err.is_empty(), "{err}");
}
