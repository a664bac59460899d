//! The `parley` binary, end to end: output, `--json`, exit codes, bad input.

mod support;

use serde_json::Value;
use support::{expected_outcome, parley, stdout, vectors, verify_args};

#[test]
fn lens_prints_every_vector_exactly() {
    for case in vectors("lens.json").as_array().unwrap() {
        let input = serde_json::to_vec(&case["input"]).unwrap();
        let args: &[&str] = if case["type"] == "value" {
            &["lens", "--value"]
        } else {
            &["lens"]
        };
        let o = parley(args, &input);
        assert_eq!(o.status.code(), Some(0), "{}", case["name"]);
        assert_eq!(
            stdout(&o),
            format!("{}\n", case["lens"].as_str().unwrap()),
            "case {}",
            case["name"]
        );
    }
}

#[test]
fn lens_ndjson_keeps_lines_aligned_and_reports_bad_ones() {
    let cases = vectors("lens.json");
    let replies: Vec<&Value> = cases
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "reply")
        .collect();
    let mut input = Vec::new();
    for c in &replies {
        input.extend(serde_json::to_vec(&c["input"]).unwrap());
        input.push(b'\n');
    }
    input.extend(b"{\"kind\":\"EVENT\",\"kind\":\"ERROR\"}\n"); // duplicate key
    input.extend(vec![b'x'; (1 << 20) + 10]); // oversized line
    input.extend(b"\n{\"kind\":\"EVENT\",\"message\":\"after\"}\n");
    let o = parley(&["lens", "--ndjson"], &input);
    assert_eq!(o.status.code(), Some(2));
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), replies.len() + 3);
    for (line, c) in lines.iter().zip(&replies) {
        let s: String = serde_json::from_str(line).unwrap();
        assert_eq!(s, c["lens"].as_str().unwrap());
    }
    assert_eq!(lines[replies.len()], "null");
    assert_eq!(lines[replies.len() + 1], "null");
    assert_eq!(lines[replies.len() + 2], "\"… after\"");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("duplicate key"), "{err}");
    assert!(err.contains("limit"), "{err}");
}

#[test]
fn hash_matches_vectors_and_refuses_floats() {
    for case in vectors("hash.json").as_array().unwrap() {
        let o = parley(
            &["hash", "-"],
            &serde_json::to_vec(&case["proposal"]).unwrap(),
        );
        assert_eq!(
            stdout(&o).lines().next().unwrap(),
            case["hash"].as_str().unwrap()
        );
    }
    let o = parley(
        &["hash"],
        br#"{"id":"p","cost":{"amount":12.5,"currency":"USD"}}"#,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("$.cost.amount"));
}

#[test]
fn est_matches_vectors() {
    for case in vectors("estimate.json").as_array().unwrap() {
        let o = parley(
            &["est", "--json"],
            case["text"].as_str().unwrap().as_bytes(),
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["est"], case["est"]);
    }
}

#[test]
fn verify_outcomes_and_exit_codes() {
    let grants = vectors("grants.json");
    for case in grants["cases"].as_array().unwrap() {
        let ctx = &case["ctx"];
        let mut args = verify_args(case);
        if let Some(p) = ctx.get("proposal") {
            args.extend(["--hash".into(), p["hash"].as_str().unwrap().into()]);
            args.extend(["--risk".into(), p["risk"].as_str().unwrap().into()]);
            let cost = &p["cost"];
            let amount = cost["amount"].as_i64().unwrap();
            args.extend([
                "--cost".into(),
                format!(
                    "{}.{:02}{}",
                    amount / 100,
                    amount % 100,
                    cost["currency"].as_str().unwrap()
                ),
            ]);
        }
        if let Some(spent) = ctx.get("spent").and_then(Value::as_object) {
            for (id, cents) in spent {
                args.extend(["--spent".into(), format!("{id}={cents}")]);
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = parley(&args, b"");
        let want = expected_outcome(case);
        if o.status.code() == Some(2) {
            // Only a token that is not even a grant may be bad input.
            assert_eq!(
                want,
                "unauthorized",
                "case {}: {}",
                case["name"],
                String::from_utf8_lossy(&o.stderr)
            );
            continue;
        }
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("case {}: {}", case["name"], stdout(&o)));
        assert_eq!(v["outcome"], want, "case {}", case["name"]);
        assert_eq!(
            o.status.code(),
            Some(if want == "ok" { 0 } else { 1 }),
            "case {}",
            case["name"]
        );
    }
}

#[test]
fn inspect_shows_the_chain_in_words() {
    let grants = vectors("grants-narrowing.json");
    let three = grants["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "three blocks: ok")
        .unwrap();
    let o = parley(&["inspect", three["token"].as_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(text.contains("valid chain of 3 block(s)"), "{text}");
    assert!(text.contains("only the verbs \"ASK\""), "{text}");
    assert!(text.contains("at most 10.00 USD in total"), "{text}");
    let o = parley(
        &["inspect", "--json", "-"],
        three["token"].as_str().unwrap().as_bytes(),
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["blocks"].as_array().unwrap().len(), 3);
    assert_eq!(v["chain_valid"], true);
}

#[test]
fn bad_input_is_a_clear_error_never_a_panic() {
    let deep = "[".repeat(100_000);
    let cases: Vec<(Vec<&str>, Vec<u8>)> = vec![
        (vec!["inspect", "pg1.AAAA"], vec![]),
        (vec!["inspect", "garbage"], vec![]),
        (vec!["inspect", "-"], b"pg1.".to_vec()),
        (vec!["lens"], deep.as_bytes().to_vec()),
        (vec!["lens"], b"{\"a\":".to_vec()),
        (vec!["lens"], vec![0xff, 0xfe]),
        (vec!["hash"], b"[1,2]".to_vec()),
        (vec!["est"], vec![0xff]),
        (
            vec![
                "verify", "pg1.x", "--trust", "nope", "--svc", "s", "--verb", "ASK",
            ],
            vec![],
        ),
        (
            vec![
                "verify",
                "pg1.x",
                "--trust",
                "ed25519:iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w",
                "--svc",
                "s",
                "--verb",
                "FLY",
            ],
            vec![],
        ),
    ];
    for (args, input) in cases {
        let o = parley(&args, &input);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("parley: ") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    // A huge string renders in linear time and does not crash.
    let big = format!("{{\"s\":\"{}\"}}", "é".repeat(300_000));
    let o = parley(&["lens"], big.as_bytes());
    assert_eq!(o.status.code(), Some(0));
}
