//! Runs every upstream YEA v1 vector file in `conformance/yea/` (where they
//! come from: `conformance/yea/SOURCE.md`) through the library, read under
//! [`Dialect::YeaV1`]. Adding a case to a file needs no new code; adding a
//! file needs a runner here, and `every_yea_vector_file_has_a_runner` fails
//! until it has one.

use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::quantity::{Exact, Quantity, Used, Uses};
use parley_core::{
    canonical, code, consent, grant, json, lens, proof, proposal, Dialect, PublicKey, SecretKey,
};
use serde_json::Value;
use std::path::PathBuf;
use vectors::{cases, name};

mod vectors;

fn dir() -> PathBuf {
    vectors::dir("yea")
}

/// `conformance/yea/<file>`, parsed.
fn load(file: &str) -> Value {
    vectors::load(&format!("yea/{file}"))
}

const RUNNERS: &[&str] = &[
    // Runs in `conformance_approval.rs` (hash, consentCode, consents),
    // custody-client's `approval_vectors.rs` (phrases, phraseChecks,
    // fileStore's consent) and the playground's job server (the rest).
    "approval.json",
    "canonical.json",
    "grants.json",
    "hash.json",
    "keys.json",
    "lens.json",
    "proof.json",
    "uses.json",
];

#[test]
fn every_yea_vector_file_has_a_runner() {
    let mut found = 0;
    for entry in std::fs::read_dir(dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".json") {
            assert!(RUNNERS.contains(&name.as_str()), "no runner for {name}");
            found += 1;
        }
    }
    assert_eq!(found, RUNNERS.len(), "a vector file is missing");
    assert!(dir().join("SOURCE.md").exists());
}

/// The raw JSON text of each member of the top-level array, then of each
/// member of an object: the canonical vectors hold lone surrogates, which
/// no Rust string (so no `serde_json::Value`) can hold, so they are cut out
/// of the file as text and given to the strict parser as they are.
fn split_top(text: &str, open: u8) -> Vec<(Option<String>, String)> {
    let b = text.trim().as_bytes();
    assert_eq!(b[0], open, "unexpected top-level value");
    let mut out = Vec::new();
    let (mut i, mut depth, mut in_str) = (1, 0usize, false);
    let mut start = 1;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => depth -= 1,
                b',' | b'}' | b']' if depth == 0 => {
                    let item = std::str::from_utf8(&b[start..i]).unwrap().trim();
                    if !item.is_empty() {
                        out.push(key_value(item, open));
                    }
                    start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    out
}

fn key_value(item: &str, open: u8) -> (Option<String>, String) {
    if open == b'[' {
        return (None, item.to_string());
    }
    let colon = item.find("\":").expect("a key") + 1;
    let key: String = serde_json::from_str(&item[..colon]).unwrap();
    (Some(key), item[colon + 1..].trim().to_string())
}

#[test]
fn canonical_vectors() {
    let (mut errors, mut ok) = (0, 0);
    for (_, case) in split_top(&vectors::text("yea/canonical.json"), b'[') {
        let members = split_top(&case, b'{');
        let get = |k: &str| {
            members
                .iter()
                .find(|(key, _)| key.as_deref() == Some(k))
                .map(|(_, v)| v.clone())
        };
        let case_name = get("name").unwrap_or_default();
        let input = get("input").expect("input");
        let result = json::parse(input.as_bytes(), json::Limits::FRAME)
            .map_err(|e| e.to_string())
            .and_then(|v| canonical::canonical(&v).map_err(|e| e.to_string()));
        match get("error") {
            Some(e) if e == "true" => {
                assert!(result.is_err(), "case {case_name}: {result:?}");
                errors += 1;
            }
            _ => {
                let want: String =
                    serde_json::from_str(&get("canonical").expect("canonical")).unwrap();
                assert_eq!(result.unwrap(), want, "case {case_name}");
                ok += 1;
            }
        }
    }
    assert_eq!((ok, errors), (7, 5));
}

#[test]
fn key_vectors() {
    let v = load("keys.json");
    for c in cases(&v) {
        let seed = c["seed"].as_str().unwrap();
        match c.get("valid") {
            Some(Value::Bool(false)) => {
                assert!(
                    SecretKey::from_seed_b64(seed).is_err(),
                    "seed {seed} must be refused"
                )
            }
            _ => {
                let k = SecretKey::from_seed_b64(seed).unwrap();
                assert_eq!(k.public().to_string(), c["public"].as_str().unwrap());
                assert_eq!(k.to_seed_b64().as_str(), seed);
            }
        }
    }
}

#[test]
fn hash_vectors() {
    let v = load("hash.json");
    for c in cases(&v) {
        assert_eq!(
            proposal::proposal_hash(&c["proposal"]).unwrap(),
            c["hash"].as_str().unwrap(),
            "case {}",
            name(c)
        );
        // A proposal with its hash set reads strictly under YEA.
        let mut p = c["proposal"].clone();
        p["hash"] = c["hash"].clone();
        let read = proposal::Proposal::from_value_in(&p, Dialect::YeaV1)
            .unwrap_or_else(|e| panic!("case {}: {e}", name(c)));
        assert_eq!(read.uses.is_some(), p.get("uses").is_some());
    }
}

#[test]
fn proof_vectors() {
    let v = load("proof.json");
    for c in cases(&v) {
        let s = |k: &str| c[k].as_str().unwrap();
        let ts = c["ts"].as_i64().unwrap();
        let given = proof::Proof::from_value(
            &serde_json::json!({"key": s("key"), "ts": ts, "sig": s("sig")}),
        );
        let verified = given
            .ok()
            .map(|p| proof::check_raw(&p, s("aud"), s("verb"), s("target"), ts).is_ok())
            .unwrap_or(false);
        let valid = c.get("valid").and_then(Value::as_bool).unwrap_or(true);
        assert_eq!(verified, valid, "proof case {}", c);
        if valid {
            let k = SecretKey::from_seed_b64(s("seed")).unwrap();
            let p = proof::sign_raw(&k, s("aud"), s("verb"), s("target"), ts);
            assert_eq!(p.sig.to_string(), s("sig"));
        }
    }
}

#[test]
fn uses_vectors() {
    let v = load("uses.json");
    let quantities = v["quantities"].as_array().unwrap();
    for c in quantities {
        let q = Quantity::from_value(&c["quantity"], "q").unwrap();
        assert_eq!(
            q.to_string(),
            c["lens"].as_str().unwrap(),
            "{}",
            c["quantity"]
        );
    }
    let cases = v["wellFormed"].as_array().unwrap();
    for c in cases {
        let valid = c["valid"].as_bool().unwrap();
        assert_eq!(
            Uses::from_value(&c["uses"]).is_ok(),
            valid,
            "case {}",
            name(c)
        );
        // A malformed `uses` makes the whole proposal invalid (§5.1).
        let mut p = serde_json::json!({
            "id": "p", "capability": "x.y", "summary": "s", "effects": [],
            "risk": "low", "undo": null, "expires": 1790000000, "uses": c["uses"].clone()
        });
        match proposal::proposal_hash(&p) {
            Ok(h) => {
                p["hash"] = Value::String(h);
                let read = proposal::Proposal::from_value_in(&p, Dialect::YeaV1);
                assert_eq!(
                    read.is_ok(),
                    valid,
                    "proposal with case {}: {read:?}",
                    name(c)
                );
            }
            // A float amount has no canonical form: the proposal cannot even be hashed.
            Err(_) => assert!(!valid, "case {}", name(c)),
        }
    }
    assert_eq!((quantities.len(), cases.len()), (8, 22));
}

fn used(ctx: &Value) -> Used {
    let mut out = Used::new();
    if let Some(m) = ctx.get("used").and_then(Value::as_object) {
        for (block, measures) in m {
            let row = out.entry(block.clone()).or_default();
            for (measure, q) in measures.as_object().unwrap() {
                let q: Exact = Quantity::from_value(q, measure).unwrap().exact();
                row.insert(measure.clone(), q);
            }
        }
    }
    out
}

fn request_context(ctx: &Value) -> RequestContext {
    let s = |k: &str| ctx[k].as_str().unwrap_or_default().to_string();
    RequestContext {
        service: s("service"),
        verb: s("verb"),
        capability: s("capability"),
        now: ctx["now"].as_i64().unwrap(),
        proposal: ctx
            .get("proposal")
            .filter(|p| !p.is_null())
            .map(|p| CommitFacts {
                hash: p["hash"].as_str().unwrap_or_default().to_string(),
                uses: p.get("uses").cloned(),
                risk: p["risk"].as_str().unwrap_or_default().to_string(),
                ..Default::default()
            }),
        used: used(ctx),
        dialect: Dialect::YeaV1,
        ..Default::default()
    }
}

#[test]
fn grant_vectors() {
    let v = load("grants.json");
    let cases = cases(&v);
    let root = |case: &str| {
        let c = cases.iter().find(|c| name(c).starts_with(case)).unwrap();
        grant::UnverifiedGrant::decode(c["token"].as_str().unwrap())
            .unwrap()
            .id()
    };
    assert_eq!(root("root:"), v["rootTotalBlockId"].as_str().unwrap());
    assert_eq!(root("counts:"), v["countsTotalBlockId"].as_str().unwrap());
    let mut tally = std::collections::BTreeMap::<&str, usize>::new();
    for c in cases {
        let trusted: Vec<PublicKey> = c["trusted"]
            .as_array()
            .unwrap()
            .iter()
            // A key we cannot read is trusted by no one: the case is about it.
            .filter_map(|k| k.as_str().unwrap().parse().ok())
            .collect();
        let Ok(proof_key) = c["proofKey"].as_str().unwrap().parse::<PublicKey>() else {
            assert_eq!(c["expect"]["code"], "unauthorized", "case {}", name(c));
            *tally.entry("unauthorized").or_default() += 1;
            continue;
        };
        let d = grant::authorize(
            c["token"].as_str().unwrap(),
            &trusted,
            &proof_key,
            &request_context(&c["ctx"]),
        );
        let want = if c["expect"]["ok"] == Value::Bool(true) {
            "ok"
        } else {
            c["expect"]["code"].as_str().unwrap()
        };
        assert_eq!(d.code(), want, "case {:?}: {d:?}", name(c));
        *tally.entry(d.code()).or_default() += 1;
    }
    let tally: Vec<_> = tally.into_iter().collect();
    assert_eq!(
        tally,
        [
            ("consent_required", 10),
            ("forbidden", 28),
            ("ok", 12),
            ("unauthorized", 35)
        ]
    );
}

#[test]
fn consent_code_vector() {
    let v = load("grants.json");
    let c = &v["consentCode"];
    let request = consent::ConsentRequest::from_value(&c["consent"]).unwrap();
    let agent: PublicKey = c["agent"].as_str().unwrap().parse().unwrap();
    let encoded = code::encode_for(&request, Some(&agent), Some(&c["detail"])).unwrap();
    assert_eq!(encoded, c["code"].as_str().unwrap());
    let decoded = code::decode(&encoded).unwrap();
    assert_eq!(decoded.agent, Some(agent));
    assert_eq!(decoded.consent, request);
    // The detail is the proposal the consent is for, read under YEA.
    let detail = decoded.detail.unwrap();
    let checked = consent::check_in(
        decoded.consent,
        &detail,
        c["consent"]["service"].as_str().unwrap(),
        0,
        Dialect::YeaV1,
    )
    .unwrap();
    assert_eq!(
        checked.proposal().hash,
        c["consent"]["hash"].as_str().unwrap()
    );
}

#[test]
fn lens_vectors() {
    let v = load("lens.json");
    let mut failures = Vec::new();
    for c in cases(&v) {
        let input = &c["input"];
        let want = c["lens"].as_str().unwrap();
        let got = match c["type"].as_str() {
            Some("value") => lens::lean(input),
            _ => lens::render_reply(input),
        };
        // The arena tree renders the same.
        let bytes = serde_json::to_vec(input).unwrap();
        let arena = json::Arena::new();
        let node = json::parse_node(&bytes, json::Limits::FRAME, &arena).unwrap();
        let mut from_node = String::new();
        if c["type"] == "reply" && !input["kind"].is_string() {
            // `render_into` reads a frame without a string kind as a plain
            // value; `render_reply` (above) is the reply rendering.
            from_node = got.clone();
        } else if c["type"] == "value" {
            lens::lean_into(&node, &mut from_node);
        } else {
            lens::render_into(&node, &mut from_node);
        }
        if got != want || from_node != want {
            failures.push(format!(
                "{}:\n--- expected\n{want}\n--- got\n{got}\n--- node\n{from_node}\n",
                name(c)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        cases(&v).len(),
        failures.join("\n")
    );
}
