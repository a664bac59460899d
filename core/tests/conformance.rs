//! Runs every conformance vector file in `conformance/` (the upstream Parley
//! set and our own). Adding a case to a file needs no new code; adding a file
//! needs a runner here, and `every_vector_file_has_a_runner` fails until it has one.

use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::money::Money;
use parley_core::{b64, canonical, code, consent, grant, proof, proposal, PublicKey, SecretKey};
use serde_json::Value;
use std::path::PathBuf;
use vectors::{cases, load, name};

mod vectors;

fn dir() -> PathBuf {
    vectors::dir("")
}

/// Files handled by the runners in this file and in `conformance_text.rs`.
const RUNNERS: &[&str] = &[
    "canonical.json",
    "keys.json",
    "hash.json",
    "proof.json",
    "grants.json",
    "grants-narrowing.json",
    "consent.json",
    "codes.json",
    "lens.json",
    "lens-key-order.json",
    "lens-verbatim.json",
    "estimate.json",
    "fit.json",
    "money.json",
];

/// Files whose runners live beside the code they test, outside core.
const ELSEWHERE: &[(&str, &str)] = &[
    (
        "display-safety.json",
        "custody-client/src/display.rs (vectors test) and ui/tests/display.test.mjs",
    ),
    (
        "local-time.json",
        "custody/src/local_time.rs (vectors test) and ui/tests/time.test.mjs",
    ),
];

#[test]
fn every_vector_file_has_a_runner() {
    for entry in std::fs::read_dir(dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".json") {
            assert!(
                RUNNERS.contains(&name.as_str()) || ELSEWHERE.iter().any(|(f, _)| *f == name),
                "no runner for conformance/{name}"
            );
        }
    }
}

#[test]
fn canonical_vectors() {
    let v = load("canonical.json");
    for c in cases(&v) {
        let got = canonical::canonical(&c["input"]).unwrap();
        assert_eq!(got, c["canonical"].as_str().unwrap(), "case {}", name(c));
        // Canonical output parses back to the same value.
        let back: Value = serde_json::from_str(&got).unwrap();
        assert_eq!(canonical::canonical(&back).unwrap(), got);
    }
}

/// Ours: the money format and the reading of a typed amount, which the UI's
/// `money` and `parseAmount` pass too (ui/tests/money.test.mjs).
#[test]
fn money_vectors() {
    let v = load("money.json");
    let display = v["display"].as_array().expect("display cases");
    assert!(
        display.len() >= 15,
        "the vector file lost its display cases"
    );
    for c in display {
        let m = Money {
            amount: c["amount"].as_i64().expect("amount"),
            currency: c["currency"].as_str().expect("currency").into(),
        };
        assert_eq!(
            m.to_string(),
            c["text"].as_str().unwrap(),
            "case {}",
            name(c)
        );
    }
    let typed = v["amount"].as_array().expect("amount cases");
    assert!(typed.len() >= 30, "the vector file lost its amount cases");
    for c in typed {
        let (text, currency) = (c["text"].as_str().unwrap(), c["currency"].as_str().unwrap());
        let want = c["minor"].as_i64();
        assert!(
            want.is_some() || c["minor"].is_null(),
            "case {}: minor",
            name(c)
        );
        let got = Money::parse_amount(text, currency).ok();
        assert_eq!(got, want, "case {}", name(c));
        // The command-line form reads its number by the same rule.
        let flag = Money::parse_flag(&format!("{text}{currency}")).map(|m| m.amount);
        assert_eq!(flag.ok(), want, "case {} as a flag", name(c));
        // A difference of purpose is stated, never silent.
        if c.get("ui_minor").is_some() {
            let why = c["ui_differs_because"].as_str().unwrap_or("");
            assert!(
                !why.trim().is_empty(),
                "case {}: ui_minor without a reason",
                name(c)
            );
        }
    }
}

#[test]
fn key_vectors() {
    let v = load("keys.json");
    for c in cases(&v) {
        let k = SecretKey::from_seed_b64(c["seed"].as_str().unwrap()).unwrap();
        assert_eq!(k.public().to_string(), c["public"].as_str().unwrap());
        let parsed: PublicKey = c["public"].as_str().unwrap().parse().unwrap();
        assert_eq!(parsed, k.public());
        assert_eq!(k.to_seed_b64().as_str(), c["seed"].as_str().unwrap());
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
    }
}

#[test]
fn proof_vectors() {
    let v = load("proof.json");
    for c in cases(&v) {
        let s = |k: &str| c[k].as_str().unwrap();
        let ts = c["ts"].as_i64().unwrap();
        let k = SecretKey::from_seed_b64(s("seed")).unwrap();
        let p = proof::sign_raw(&k, s("aud"), s("verb"), s("target"), ts);
        assert_eq!(p.key.to_string(), s("key"));
        assert_eq!(p.sig.to_string(), s("sig"));
        let given = proof::Proof::from_value(
            &serde_json::json!({"key": s("key"), "ts": ts, "sig": s("sig")}),
        )
        .unwrap();
        assert!(proof::check_raw(&given, s("aud"), s("verb"), s("target"), ts + 300).is_ok());
        assert!(proof::check_raw(&given, s("aud"), s("verb"), s("target"), ts - 300).is_ok());
        assert!(proof::check_raw(&given, s("aud"), s("verb"), s("target"), ts + 301).is_err());
        assert!(proof::check_raw(&given, "other", s("verb"), s("target"), ts).is_err());
        assert!(proof::check_raw(&given, s("aud"), s("verb"), "other", ts).is_err());
    }
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
                cost: p.get("cost").filter(|c| !c.is_null()).map(|c| Money {
                    amount: c["amount"].as_i64().unwrap(),
                    currency: c["currency"].as_str().unwrap().to_string(),
                }),
                risk: p["risk"].as_str().unwrap_or_default().to_string(),
                ..Default::default()
            }),
        spent: ctx
            .get("spent")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
                    .collect()
            })
            .unwrap_or_default(),
        ..Default::default()
    }
}

fn run_grant_file(file: &str) {
    let v = load(file);
    if let Some(id) = v.get("rootSpendBlockId").and_then(Value::as_str) {
        let first =
            grant::UnverifiedGrant::decode(cases(&v)[0]["token"].as_str().unwrap()).unwrap();
        assert_eq!(first.id(), id, "root block id");
    }
    for c in cases(&v) {
        let trusted: Vec<PublicKey> = c["trusted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().parse().unwrap())
            .collect();
        let proof_key: PublicKey = c["proofKey"].as_str().unwrap().parse().unwrap();
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
        assert_eq!(d.code(), want, "{file}: case {:?}: {d:?}", name(c));
    }
}

#[test]
fn grant_vectors() {
    run_grant_file("grants.json");
}

#[test]
fn grant_narrowing_vectors() {
    run_grant_file("grants-narrowing.json");
}

#[test]
fn consent_vectors() {
    let v = load("consent.json");
    for c in cases(&v) {
        let result = consent::ConsentRequest::from_value(&c["consent"]).and_then(|r| {
            consent::check(
                r,
                &c["proposal"],
                c["service"].as_str().unwrap(),
                c["now"].as_i64().unwrap(),
            )
        });
        match (&result, c["expect"]["ok"].as_bool().unwrap()) {
            (Ok(checked), true) => {
                let caveats: Vec<Value> = checked.caveats().iter().map(|k| k.to_value()).collect();
                assert_eq!(
                    Value::Array(caveats),
                    c["expect"]["caveats"],
                    "case {}",
                    name(c)
                );
                // The signed grant authorizes exactly that COMMIT.
                let p = SecretKey::from_seed_b64("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE")
                    .unwrap();
                let agent = SecretKey::from_seed_b64("AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI")
                    .unwrap();
                let g = consent::issue_consent(&p, &agent.public(), checked, 0, "n").unwrap();
                assert_eq!(g.blocks().len(), 1);
                assert_eq!(g.issuer(), p.public().to_string());
            }
            (Err(e), false) => assert_eq!(
                e.kind(),
                c["expect"]["error"].as_str().unwrap(),
                "case {}: {e}",
                name(c)
            ),
            (r, _) => panic!("case {}: expected {}, got {r:?}", name(c), c["expect"]),
        }
    }
}

#[test]
fn code_vectors() {
    let v = load("codes.json");
    for c in cases(&v) {
        let result = code::decode(c["code"].as_str().unwrap());
        match (&result, c["expect"]["ok"].as_bool().unwrap()) {
            (Ok(decoded), true) => {
                assert_eq!(
                    decoded.consent.to_value(),
                    c["expect"]["consent"],
                    "case {}",
                    name(c)
                );
                assert_eq!(
                    decoded.detail.as_ref(),
                    c["expect"].get("detail"),
                    "case {}",
                    name(c)
                );
                let again = code::encode(&decoded.consent, decoded.detail.as_ref()).unwrap();
                assert_eq!(
                    again,
                    c["code"].as_str().unwrap().trim(),
                    "re-encoding is canonical"
                );
            }
            (Err(e), false) => assert_eq!(
                e.kind(),
                c["expect"]["error"].as_str().unwrap(),
                "case {}: {e}",
                name(c)
            ),
            (r, _) => panic!("case {}: expected {}, got {r:?}", name(c), c["expect"]),
        }
    }
}

#[test]
fn b64_of_vectors_is_canonical() {
    // Every seed in keys.json re-encodes to itself (no alternative spellings).
    let v = load("keys.json");
    for c in cases(&v) {
        let s = c["seed"].as_str().unwrap();
        assert_eq!(b64::encode(b64::decode(s).unwrap()), s);
    }
}
