//! Every YEA v1 vector in `conformance/yea/` (hash, lens, grants, uses) run
//! through the `parley` binary, as `cli.rs` runs the Parley ones: stops the
//! CLI from drifting from the library (or from the dialect it must detect)
//! on YEA input. Also the dialect rules: YEA detected from the input,
//! ambiguous input refused with a pointer to --dialect, a malformed `uses`
//! refused, and `--each`/`--total` signed in the vectors' shape.

mod support;

use parley_core::grant::UnverifiedGrant;
use parley_core::quantity::Quantity;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{expected_outcome, parley_with, stdout};

/// `parley` with neither `$PARLEY_HOME` nor `$YEA_HOME` from the test's
/// environment, and `env` set.
fn parley_env(args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) -> Output {
    parley_with(args, stdin, |cmd| {
        cmd.env_remove("PARLEY_HOME").env_remove("YEA_HOME");
        for (k, v) in env {
            cmd.env(k, v);
        }
    })
}

fn parley(args: &[&str], stdin: &[u8]) -> Output {
    parley_env(args, stdin, &[])
}

/// A YEA vector file of `conformance/yea/`.
fn vectors(name: &str) -> Value {
    support::vectors(&format!("yea/{name}"))
}

fn cases(v: &Value) -> &Vec<Value> {
    v.get("cases").unwrap_or(v).as_array().unwrap()
}

/// Stderr as text, whatever its bytes.
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn yea_hash_vectors_print_the_vector_hash() {
    let v = vectors("hash.json");
    assert!(!cases(&v).is_empty());
    for case in cases(&v) {
        let input = serde_json::to_vec(&case["proposal"]).unwrap();
        let want = case["hash"].as_str().unwrap();
        // As for Parley: a proposal claiming another hash is refused (exit 1),
        // the computed hash still first.
        let claims_other = case["proposal"]
            .get("hash")
            .is_some_and(|h| h.as_str() != Some(want));
        for args in [&["hash", "-"][..], &["hash", "--dialect", "yea1"][..]] {
            let o = parley(args, &input);
            assert_eq!(
                o.status.code(),
                Some(if claims_other { 1 } else { 0 }),
                "{}: {}",
                case["name"],
                stderr(&o)
            );
            assert_eq!(
                stdout(&o).lines().next(),
                Some(want),
                "case {}",
                case["name"]
            );
        }
    }
}

#[test]
fn yea_lens_vectors_print_exactly() {
    let v = vectors("lens.json");
    for case in cases(&v) {
        let input = serde_json::to_vec(&case["input"]).unwrap();
        let runs: Vec<&[&str]> = if case["type"] == "value" {
            vec![&["lens", "--value"]]
        } else {
            vec![&["lens"], &["lens", "--dialect", "yea1"]]
        };
        for args in runs {
            let o = parley(args, &input);
            assert_eq!(o.status.code(), Some(0), "{}: {}", case["name"], stderr(&o));
            assert_eq!(
                stdout(&o),
                format!("{}\n", case["lens"].as_str().unwrap()),
                "case {} ({args:?})",
                case["name"]
            );
        }
    }
}

#[test]
fn yea_lens_vectors_through_ndjson() {
    let v = vectors("lens.json");
    let replies: Vec<&Value> = cases(&v).iter().filter(|c| c["type"] == "reply").collect();
    let mut input = Vec::new();
    for c in &replies {
        input.extend(serde_json::to_vec(&c["input"]).unwrap());
        input.push(b'\n');
    }
    let o = parley(&["lens", "--ndjson"], &input);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), replies.len());
    for (line, c) in lines.iter().zip(&replies) {
        let s: String = serde_json::from_str(line).unwrap();
        assert_eq!(s, c["lens"].as_str().unwrap(), "case {}", c["name"]);
    }
}

/// A quantity as the `NAME=AMOUNT` flags write it (exact: the scale is the
/// number of digits after the point).
fn flag_amount(q: &Value) -> String {
    let q = Quantity::from_value(q, "q").unwrap();
    let digits = format!("{:0>width$}", q.amount, width = usize::from(q.scale) + 1);
    let (int, frac) = digits.split_at(digits.len() - usize::from(q.scale));
    let mut s = int.to_string();
    if !frac.is_empty() {
        s = format!("{s}.{frac}");
    }
    if let Some(u) = &q.unit {
        s = format!("{s} {u}");
    }
    s
}

/// Every well-formed `uses` of a proposal also as `--uses` flags, when the
/// flags can say it (the conventions' currency scale is at least 2).
fn uses_as_flags(uses: &Value) -> Option<Vec<String>> {
    let obj = uses.as_object()?;
    let mut out = Vec::new();
    for (name, q) in obj {
        if !parley_core::quantity::is_measure_name(name) {
            return None;
        }
        let parsed = Quantity::from_value(q, name).ok()?;
        let currency = parsed
            .unit
            .as_deref()
            .is_some_and(|u| u.len() == 3 && u.bytes().all(|b| b.is_ascii_uppercase()));
        if currency && parsed.scale < 2 {
            return None;
        }
        out.push(format!("{name}={}", flag_amount(q)));
    }
    Some(out)
}

/// The verify command line of a YEA grant case: its `uses` as `--uses`
/// flags (`None` where they cannot say it) or as `--uses-json`.
fn yea_verify_args(case: &Value, uses_flags: bool) -> Option<Vec<String>> {
    let ctx = &case["ctx"];
    let mut args = support::verify_args(case);
    if let Some(p) = ctx.get("proposal").filter(|p| !p.is_null()) {
        args.extend(["--hash".into(), p["hash"].as_str().unwrap().into()]);
        args.extend(["--risk".into(), p["risk"].as_str().unwrap().into()]);
        if let Some(uses) = p.get("uses") {
            if uses_flags {
                for f in uses_as_flags(uses)? {
                    args.extend(["--uses".into(), f]);
                }
            } else {
                args.extend(["--uses-json".into(), uses.to_string()]);
            }
        }
    }
    if let Some(used) = ctx.get("used").and_then(Value::as_object) {
        for (block, measures) in used {
            for (measure, q) in measures.as_object().unwrap() {
                args.extend([
                    "--used".into(),
                    format!("{block}:{measure}={}", flag_amount(q)),
                ]);
            }
        }
    }
    Some(args)
}

#[test]
fn yea_grant_vectors_through_verify() {
    let v = vectors("grants.json");
    let mut tally = std::collections::BTreeMap::<String, usize>::new();
    let mut flag_runs = 0;
    for case in cases(&v) {
        let want = expected_outcome(case);
        *tally.entry(want.to_string()).or_default() += 1;
        for (uses_flags, dialect) in [(false, false), (false, true), (true, false)] {
            let Some(mut args) = yea_verify_args(case, uses_flags) else {
                continue;
            };
            if uses_flags {
                flag_runs += 1;
            }
            if dialect {
                args.extend(["--dialect".into(), "yea1".into()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = parley(&args, b"");
            if o.status.code() == Some(2) {
                // Only a grant or proof key that is not even a key may be bad input.
                assert_eq!(
                    want,
                    "unauthorized",
                    "case {}: {}",
                    case["name"],
                    stderr(&o)
                );
                assert!(stderr(&o).contains("key"), "{}", stderr(&o));
                continue;
            }
            let out: Value = serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|_| panic!("case {}: {} {}", case["name"], stdout(&o), stderr(&o)));
            assert_eq!(out["outcome"], want, "case {} ({args:?})", case["name"]);
            assert_eq!(
                o.status.code(),
                Some(if want == "ok" { 0 } else { 1 }),
                "case {}",
                case["name"]
            );
        }
    }
    let tally: Vec<(String, usize)> = tally.into_iter().collect();
    assert_eq!(
        tally,
        [
            ("consent_required".to_string(), 10),
            ("forbidden".to_string(), 28),
            ("ok".to_string(), 12),
            ("unauthorized".to_string(), 35)
        ]
    );
    assert!(flag_runs > 60, "the --uses flags ran for {flag_runs} cases");
}

fn proposal_with(uses: &Value) -> Value {
    json!({"id": "p", "capability": "x.y", "summary": "s", "effects": [],
           "risk": "low", "undo": null, "expires": 1790000000, "uses": uses})
}

#[test]
fn yea_uses_vectors_well_formed_hash_and_malformed_refused() {
    let v = vectors("uses.json");
    let well = v["wellFormed"].as_array().unwrap();
    assert_eq!(well.len(), 22);
    for c in well {
        let p = proposal_with(&c["uses"]);
        let o = parley(&["hash", "-"], &serde_json::to_vec(&p).unwrap());
        if c["valid"] == true {
            assert_eq!(o.status.code(), Some(0), "{}: {}", c["name"], stderr(&o));
            assert_eq!(
                stdout(&o).trim_end(),
                parley_core::proposal::proposal_hash(&p).unwrap(),
                "case {}",
                c["name"]
            );
        } else {
            assert_eq!(
                o.status.code(),
                Some(2),
                "case {}: {}",
                c["name"],
                stdout(&o)
            );
            let err = stderr(&o);
            // Refused as a malformed `uses`, or (a float) as not hashable at all.
            assert!(
                err.contains("`uses` is malformed") || err.contains("$.uses"),
                "case {}: {err}",
                c["name"]
            );
        }
    }
    // Every quantity renders in a proposal's Lens as the vector says.
    let quantities = v["quantities"].as_array().unwrap();
    assert_eq!(quantities.len(), 8);
    for c in quantities {
        let mut p = proposal_with(&json!({"q": c["quantity"]}));
        p["hash"] = json!("h");
        let frame = json!({"yea": 1, "id": "1", "re": "0", "kind": "PROPOSALS", "proposals": [p]});
        let o = parley(&["lens"], &serde_json::to_vec(&frame).unwrap());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let want = format!("uses: q {}", c["lens"].as_str().unwrap());
        assert!(stdout(&o).contains(&want), "{want} in {}", stdout(&o));
    }
}

#[test]
fn the_dialect_is_never_guessed_where_the_readings_differ() {
    let p = json!({"id": "p", "capability": "x.y", "summary": "s", "effects": [],
                   "risk": "low", "undo": null, "expires": 1790000000, "hash": "h"});
    // No marker and no cost or uses: Parley says `cost: free`, YEA nothing.
    let bare = json!({"kind": "PROPOSALS", "proposals": [p]});
    let o = parley(&["lens"], &serde_json::to_vec(&bare).unwrap());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--dialect"), "{}", stderr(&o));
    let yea = parley(
        &["lens", "--dialect", "yea1"],
        &serde_json::to_vec(&bare).unwrap(),
    );
    assert_eq!(yea.status.code(), Some(0), "{}", stderr(&yea));
    assert!(!stdout(&yea).contains("cost"), "{}", stdout(&yea));
    let parley1 = parley(
        &["lens", "--dialect", "parley1"],
        &serde_json::to_vec(&bare).unwrap(),
    );
    assert!(
        stdout(&parley1).contains("cost: free"),
        "{}",
        stdout(&parley1)
    );
    // A frame that renders the same in both needs no flag.
    let o = parley(&["lens"], br#"{"kind":"EVENT","message":"hi"}"#);
    assert_eq!(
        (o.status.code(), stdout(&o)),
        (Some(0), "… hi\n".to_string())
    );
    // A marker contradicting --dialect is refused.
    let o = parley(
        &["lens", "--dialect", "parley1"],
        br#"{"yea":1,"kind":"EVENT","message":"hi"}"#,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("contradicts"), "{}", stderr(&o));
    // A proposal with `uses` is YEA; read as Parley it is refused, not hashed.
    let mut with_uses = p.clone();
    with_uses["uses"] = json!({"emails": {"amount": 1}});
    let o = parley(
        &["hash", "--dialect", "parley1"],
        &serde_json::to_vec(&with_uses).unwrap(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`uses`"), "{}", stderr(&o));
    with_uses["cost"] = Value::Null;
    let o = parley(&["hash"], &serde_json::to_vec(&with_uses).unwrap());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("mixes dialects"), "{}", stderr(&o));
}

#[test]
fn verify_refuses_mixed_flags_and_floats() {
    let v = vectors("grants.json");
    let case = &cases(&v)[1];
    let mut args = yea_verify_args(case, true).unwrap();
    args.extend(["--cost".into(), "1USD".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = parley(&args, b"");
    assert_eq!(o.status.code(), Some(2));
    let mut args = yea_verify_args(case, false).unwrap();
    args.extend(["--spent".into(), "x=1".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(parley(&args, b"").status.code(), Some(2));
    let mut args = yea_verify_args(case, false).unwrap();
    let at = args.iter().position(|a| a == "--uses-json").unwrap();
    args.drain(at..at + 2);
    args.extend(["--uses".into(), "spend=1e3USD".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = parley(&args, b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("plain decimal"), "{}", stderr(&o));
}

/// `agent.key` holding the vectors' agent seed (the holder of their root
/// grants), mode 0600, in a fresh `$YEA_HOME`.
fn yea_home(tag: &str, seed: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parley-yea-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("agent.key");
    std::fs::write(&key, format!("{seed}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    dir
}

#[test]
fn delegate_signs_each_and_total_in_the_vectors_shape() {
    let v = vectors("grants.json");
    let root = cases(&v)
        .iter()
        .find(|c| c["name"] == "root: ask ok")
        .unwrap();
    let token = root["token"].as_str().unwrap();
    let agent_seed = v["seeds"]["agent"].as_str().unwrap();
    let sub = parley_core::SecretKey::from_seed_b64(v["seeds"]["subagent"].as_str().unwrap())
        .unwrap()
        .public()
        .to_string();
    let home = yea_home("delegate", agent_seed);
    let env = [
        ("YEA_HOME", home.as_path()),
        ("PARLEY_HOME", home.as_path()),
    ];
    let o = parley_env(
        &[
            "delegate",
            token,
            "--to",
            &sub,
            "--each",
            "spend=20USD",
            "--total",
            "spend=25.50USD",
            "--total",
            "emails=3",
            "--json",
        ],
        b"",
        &env,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    let want = json!([
        {"each": {"of": "spend", "max": 2000, "scale": 2, "unit": "USD"}},
        {"total": {"of": "spend", "max": 2550, "scale": 2, "unit": "USD"}},
        {"total": {"of": "emails", "max": 3}}
    ]);
    assert_eq!(out["caveats"], want);
    // Signed as shown: the last block carries exactly those caveats.
    let g = UnverifiedGrant::decode(out["grant"].as_str().unwrap()).unwrap();
    let last = g.blocks().last().unwrap();
    let signed: Vec<Value> = last.caveats().iter().map(|c| c.to_value()).collect();
    assert_eq!(Value::Array(signed), want);
    // The root's own limits have the same shape.
    let root_g = UnverifiedGrant::decode(token).unwrap();
    let each = root_g.blocks()[0]
        .caveats()
        .iter()
        .map(|c| c.to_value())
        .find(|c| c.get("each").is_some())
        .unwrap();
    let keys: Vec<&String> = each["each"].as_object().unwrap().keys().collect();
    let mine: Vec<&String> = want[0]["each"].as_object().unwrap().keys().collect();
    let (mut keys, mut mine) = (keys, mine);
    keys.sort();
    mine.sort();
    assert_eq!(keys, mine);
    // The sub-agent's COMMIT over 20 USD needs consent; within it, it is ok.
    for (uses, want) in [
        ("spend=20.01USD", "consent_required"),
        ("spend=19.99USD", "ok"),
    ] {
        let o = parley(
            &[
                "verify",
                out["grant"].as_str().unwrap(),
                "--json",
                "--trust",
                root["trusted"][0].as_str().unwrap(),
                "--svc",
                "shop.example",
                "--verb",
                "COMMIT",
                "--cap",
                "shop.order",
                "--now",
                "1790000000",
                "--hash",
                "h",
                "--uses",
                uses,
            ],
            b"",
        );
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
        assert_eq!(v["outcome"], want, "{uses}: {v}");
    }
    // Parley limits on a YEA chain are refused before signing.
    let o = parley_env(
        &["delegate", token, "--to", &sub, "--per", "1USD"],
        b"",
        &env,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("mixing"), "{}", stderr(&o));
    // And --each with --per is refused by the flags themselves.
    let o = parley_env(
        &[
            "delegate",
            token,
            "--to",
            &sub,
            "--per",
            "1USD",
            "--each",
            "spend=1USD",
        ],
        b"",
        &env,
    );
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn init_uses_and_imports_the_yea_agent_key() {
    let v = vectors("grants.json");
    let seed = v["seeds"]["agent"].as_str().unwrap();
    let public = parley_core::SecretKey::from_seed_b64(seed)
        .unwrap()
        .public()
        .to_string();
    let yea = yea_home("init", seed);
    let parley_dir = yea.with_extension("parley");
    let _ = std::fs::remove_dir_all(&parley_dir);
    let env = [
        ("YEA_HOME", yea.as_path()),
        ("PARLEY_HOME", parley_dir.as_path()),
    ];
    let o = parley_env(&["init", "--dialect", "yea1", "--json"], b"", &env);
    let out: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(
        (out["public_key"].as_str(), out["created"].as_bool()),
        (Some(public.as_str()), Some(false))
    );
    let o = parley_env(&["init", "--import-yea", "--json"], b"", &env);
    let out: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(out["public_key"], public);
    assert_eq!(out["created"], true);
    let copied = parley_dir.join("agent.key");
    assert_eq!(
        std::fs::read_to_string(&copied).unwrap(),
        format!("{seed}\n")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&copied).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // A different key already in $PARLEY_HOME is never replaced.
    std::fs::remove_file(yea.join("agent.key")).unwrap();
    std::fs::write(
        yea.join("agent.key"),
        format!("{}\n", v["seeds"]["mallory"].as_str().unwrap()),
    )
    .unwrap();
    let o = parley_env(&["init", "--import-yea"], b"", &env);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not replaced"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&copied).unwrap(),
        format!("{seed}\n")
    );
    let _ = std::fs::remove_dir_all(&yea);
    let _ = std::fs::remove_dir_all(&parley_dir);
}

#[test]
fn ndjson_refuses_only_the_ambiguous_lines() {
    let bare = br#"{"kind":"PROPOSALS","proposals":[{"id":"p","summary":"s","effects":[],"risk":"low","undo":null,"expires":60,"hash":"h"}]}"#;
    let mut input = Vec::new();
    input.extend(br#"{"kind":"EVENT","message":"before"}"#);
    input.push(b'\n');
    input.extend(bare);
    input.push(b'\n');
    input.extend(br#"{"yea":1,"kind":"EVENT","message":"after"}"#);
    input.push(b'\n');
    let o = parley(&["lens", "--ndjson"], &input);
    assert_eq!(o.status.code(), Some(2));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines, ["\"… before\"", "null", "\"… after\""]);
    assert!(
        stderr(&o).contains(":2:") && stderr(&o).contains("--dialect"),
        "{}",
        stderr(&o)
    );
    // Told the dialect, every line renders; the YEA proposal has no cost line.
    let o = parley(&["lens", "--ndjson", "--dialect", "yea1"], &input);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    let second: String = serde_json::from_str(&lines[1]).unwrap();
    assert!(second.starts_with("1 proposal"), "{second}");
    assert!(!second.contains("cost"), "{second}");
}

#[test]
fn verify_reads_a_grant_in_the_dialect_of_its_limits() {
    use parley_core::caveat::Caveat;
    let v = vectors("grants.json");
    let seed =
        |n: &str| parley_core::SecretKey::from_seed_b64(v["seeds"][n].as_str().unwrap()).unwrap();
    let (principal, agent) = (seed("principal"), seed("agent"));
    let issue = |caveats: Value| {
        let c: Vec<Caveat> = caveats
            .as_array()
            .unwrap()
            .iter()
            .map(Caveat::parse)
            .collect();
        UnverifiedGrant::issue_root(&principal, &agent.public(), &c, 1789999900, "n")
            .unwrap()
            .encode()
    };
    let trust = principal.public().to_string();
    let ask = |token: &str, extra: &[&str]| {
        let mut args = vec![
            "verify",
            token,
            "--json",
            "--trust",
            &trust,
            "--svc",
            "shop.example",
            "--verb",
            "ASK",
            "--cap",
            "shop.search",
            "--now",
            "1790000000",
        ];
        args.extend(extra);
        parley(&args, b"")
    };
    // A YEA-only limit is a sign of its own: the ASK passes without a flag.
    let yea_only = issue(json!([{"svc": ["shop.example"]}, {"total": {"of": "emails", "max": 1}}]));
    let o = ask(&yea_only, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // And the same grant read as Parley fails closed on the unknown caveat.
    assert_eq!(
        ask(&yea_only, &["--dialect", "parley1"]).status.code(),
        Some(1)
    );
}
