//! Text conformance: every case of `conformance/lens.json` (§9) and of our
//! own `conformance/lens-*.json` (key order, verbatim text),
//! `conformance/estimate.json` (§8) and `conformance/fit.json` (§8 fitting),
//! read at test time, so adding a case to a file needs no new code.
//!
//! Each test runs all cases and then reports every failure with the case
//! name and a readable line diff, instead of stopping at the first.

use parley_core::estimate::est;
use parley_core::fit::fit_reply;
use parley_core::json;
use parley_core::lens::{lean, lean_into, render, render_into, render_reply};
use serde_json::Value;
use std::fmt::Write as _;

mod vectors;

fn load(file: &str) -> Vec<Value> {
    match vectors::load(file) {
        Value::Array(cases) => cases,
        _ => panic!("{} is not a list of cases", vectors::dir(file).display()),
    }
}

/// A line diff of two texts (±3 lines of context), with invisible
/// characters made visible.
fn diff(expected: &str, actual: &str) -> String {
    const CONTEXT: usize = 3;
    let e: Vec<&str> = expected.split('\n').collect();
    let a: Vec<&str> = actual.split('\n').collect();
    let n = e.len().max(a.len());
    let differs: Vec<bool> = (0..n).map(|i| e.get(i) != a.get(i)).collect();
    let near = |i: usize| (i.saturating_sub(CONTEXT)..(i + CONTEXT + 1).min(n)).any(|j| differs[j]);
    let mut out = String::new();
    let mut skipped = false;
    for i in 0..n {
        if !near(i) {
            skipped = true;
            continue;
        }
        if skipped {
            out.push_str("    ...\n");
            skipped = false;
        }
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => {
                let _ = writeln!(out, "    {:>4}   {x:?}", i + 1);
            }
            (x, y) => {
                if let Some(x) = x {
                    let _ = writeln!(out, "    {:>4} - {x:?}", i + 1);
                }
                if let Some(y) = y {
                    let _ = writeln!(out, "    {:>4} + {y:?}", i + 1);
                }
            }
        }
    }
    if skipped {
        out.push_str("    ...\n");
    }
    out
}

fn name_of(case: &Value, i: usize) -> String {
    match case.get("name").and_then(Value::as_str) {
        Some(n) => format!("#{i} {n:?}"),
        None => format!("#{i}"),
    }
}

fn finish(file: &str, total: usize, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{} of {total} cases of {file} failed (- expected, + actual):\n\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    assert!(total > 0, "{file} has no cases");
}

#[test]
fn lens_vectors() {
    check_lens_file("lens.json");
}

#[test]
fn lens_key_order_vectors() {
    check_lens_file("lens-key-order.json");
}

#[test]
fn lens_verbatim_vectors() {
    check_lens_file("lens-verbatim.json");
}

/// Every case of a Lens vector file, through the `Value` renderers and
/// through the arena tree `parley lens --ndjson` parses lines into.
fn check_lens_file(file: &str) {
    let cases = load(file);
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let name = name_of(case, i);
        let input = &case["input"];
        let Some(expected) = case["lens"].as_str() else {
            failures.push(format!("{name}: no string `lens`\n"));
            continue;
        };
        let actual = match case["type"].as_str() {
            Some("value") => lean(input),
            Some("reply") => render_reply(input),
            other => {
                failures.push(format!("{name}: unknown type {other:?}\n"));
                continue;
            }
        };
        if actual != expected {
            failures.push(format!(
                "{name} ({}):\n{}",
                case["type"],
                diff(expected, &actual)
            ));
        }
        // `render` dispatches to the same rendering.
        if render(input) != actual {
            failures.push(format!(
                "{name}: render() differs from the {} rendering\n",
                case["type"]
            ));
        }
        // The same through the strict parser's arena tree (`--ndjson`).
        let text = serde_json::to_vec(input).unwrap();
        let arena = json::Arena::new();
        match json::parse_node(&text, json::Limits::FRAME, &arena) {
            Ok(node) => {
                let mut out = String::new();
                if case["type"] == "value" {
                    lean_into(&node, &mut out);
                } else {
                    render_into(&node, &mut out);
                }
                if out != actual {
                    failures.push(format!("{name}: the Node rendering differs\n"));
                }
            }
            Err(e) => failures.push(format!("{name}: the strict parser refused it: {e}\n")),
        }
    }
    finish(file, cases.len(), failures);
}

#[test]
fn estimate_vectors() {
    let cases = load("estimate.json");
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let (Some(text), Some(want)) = (case["text"].as_str(), case["est"].as_u64()) else {
            failures.push(format!(
                "#{i}: needs a string `text` and an integer `est`\n"
            ));
            continue;
        };
        let got = est(text) as u64;
        if got != want {
            failures.push(format!("#{i} {text:?}: expected est {want}, got {got}\n"));
        }
    }
    finish("estimate.json", cases.len(), failures);
}

/// Each case: `input` frame, `budget`, expected `output` frame, and
/// `elided`: `[{"handle", "data"}]`, the EXPAND `data` of each handle in
/// order. Handles are generated as `h_1`, `h_2`, …
#[test]
fn fit_vectors() {
    let cases = load("fit.json");
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let name = name_of(case, i);
        let Some(budget) = case["budget"].as_u64() else {
            failures.push(format!("{name}: no integer `budget`\n"));
            continue;
        };
        let mut n = 0;
        let fitted = fit_reply(&case["input"], budget as usize, &mut || {
            n += 1;
            format!("h_{n}")
        });
        let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
        let expected = &case["output"];
        if &fitted.reply != expected {
            failures.push(format!(
                "{name}: output frame differs:\n{}",
                diff(&pretty(expected), &pretty(&fitted.reply))
            ));
        }
        let got: Vec<Value> = fitted
            .elided
            .iter()
            .map(|e| serde_json::json!({"handle": e.more.handle, "data": e.rest}))
            .collect();
        let got = Value::Array(got);
        if got != case["elided"] {
            failures.push(format!(
                "{name}: elided remainders differ:\n{}",
                diff(&pretty(&case["elided"]), &pretty(&got))
            ));
        }
        // Every remainder is announced by exactly its More entry.
        let more = fitted
            .reply
            .get("more")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for e in &fitted.elided {
            if !more.contains(&e.more.to_value()) {
                failures.push(format!("{name}: no More entry for {}\n", e.more.handle));
            }
        }
        // It fits, unless the case says it cannot.
        let fits = est(&render_reply(&fitted.reply)) <= budget as usize;
        let expect_fit = case.get("fits").and_then(Value::as_bool).unwrap_or(true);
        if fits != expect_fit {
            failures.push(format!("{name}: fits = {fits}, expected {expect_fit}\n"));
        }
    }
    finish("fit.json", cases.len(), failures);
}
