//! Bounds on what untrusted input can make parley-core do, each test named
//! for what it stops (docs/SECURITY.md, "Bounds" and "Known attacks").
//! Bounds already tested elsewhere are listed there with their test names.

use parley_core::b64;
use parley_core::canonical::canonical;
use parley_core::caveat::{Caveat, CommitFacts, RequestContext};
use parley_core::code::{self, CodeError, MAX_CODE_BYTES};
use parley_core::grant::{
    authorize, block_id, Decision, GrantError, UnverifiedGrant, MAX_BLOCKS, MAX_CAVEATS_PER_BLOCK,
};
use parley_core::json::{self, JsonError, Limits};
use parley_core::money::Money;
use parley_core::SecretKey;
use serde_json::{json, Map, Value};
use zeroize::Zeroizing;

const NOW: i64 = 1_790_000_000;

fn key(b: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([b; 32]))
}

/// Signs a chain by hand (principal = key(1), then key(2), key(3), …), with
/// any caveat JSON and any number of blocks: what a hostile holder could
/// send, which the library's own `delegate` refuses to build.
fn hand_signed(blocks: &[Value]) -> String {
    let mut list = Vec::new();
    let mut prev: Option<String> = None;
    for (i, caveats) in blocks.iter().enumerate() {
        let signer = key(i as u8 + 1);
        let mut p = Map::new();
        match &prev {
            None => {
                p.insert("iss".into(), json!(signer.public().to_string()));
                p.insert("nonce".into(), json!("n"));
            }
            Some(s) => {
                p.insert("prev".into(), json!(block_id(s)));
            }
        }
        p.insert("sub".into(), json!(key(i as u8 + 2).public().to_string()));
        p.insert("caveats".into(), caveats.clone());
        p.insert("iat".into(), json!(NOW - 10));
        let p = Value::Object(p);
        let sig = signer
            .sign(canonical(&p).expect("canonical payload").as_bytes())
            .to_string();
        list.push(json!({"p": p, "s": sig}));
        prev = Some(sig);
    }
    format!(
        "pg1.{}",
        b64::encode(canonical(&Value::Array(list)).unwrap())
    )
}

fn contexts() -> Vec<RequestContext> {
    ["ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"]
        .iter()
        .map(|verb| RequestContext {
            service: "shop.example".into(),
            verb: verb.to_string(),
            capability: "shop.order".into(),
            now: NOW,
            proposal: (*verb == "COMMIT").then(|| CommitFacts {
                hash: "h".into(),
                cost: Some(Money {
                    amount: 100,
                    currency: "USD".into(),
                }),
                risk: "low".into(),
                ..Default::default()
            }),
            spent: Default::default(),
            ..Default::default()
        })
        .collect()
}

#[test]
fn grant_chain_longer_than_16_blocks_is_refused() {
    let ok = hand_signed(&vec![json!([]); MAX_BLOCKS]);
    let g = UnverifiedGrant::decode(&ok).expect("16 blocks decode");
    assert_eq!(g.blocks().len(), MAX_BLOCKS);
    assert!(g.verify_chain().is_ok());
    let over = hand_signed(&vec![json!([]); MAX_BLOCKS + 1]);
    assert!(matches!(
        UnverifiedGrant::decode(&over),
        Err(GrantError::Malformed(m)) if m.contains("at most 16 blocks")
    ));
    // And the library never builds one.
    let holder = key(MAX_BLOCKS as u8 + 1);
    assert!(matches!(
        g.delegate(&holder, &key(99).public(), &[], NOW),
        Err(GrantError::Unsignable(_))
    ));
}

#[test]
fn grant_block_with_more_than_64_caveats_is_refused() {
    let many = |n: usize| Value::Array(vec![json!({"verbs": ["ASK"]}); n]);
    let ok = hand_signed(&[many(MAX_CAVEATS_PER_BLOCK)]);
    assert!(UnverifiedGrant::decode(&ok).is_ok());
    let over = hand_signed(&[many(MAX_CAVEATS_PER_BLOCK + 1)]);
    assert!(matches!(
        UnverifiedGrant::decode(&over),
        Err(GrantError::Malformed(m)) if m.contains("more than 64 caveats")
    ));
}

#[test]
fn grant_token_nested_deeper_than_16_is_refused() {
    let deep = (0..20).fold(json!("x"), |v, _| json!([v]));
    let token = hand_signed(&[json!([{ "svc": deep }])]);
    assert!(matches!(
        UnverifiedGrant::decode(&token),
        Err(GrantError::Json(JsonError::Invalid(m))) if m.contains("too deep")
    ));
}

#[test]
fn consent_code_longer_than_256_kib_is_refused_before_decoding() {
    let long = format!("pc1.{}", "A".repeat(MAX_CODE_BYTES));
    assert!(matches!(code::decode(&long), Err(CodeError::TooLong(_))));
}

#[test]
fn consent_code_nested_deeper_than_32_is_refused() {
    let deep = (0..40).fold(json!(1), |v, _| json!([v]));
    let body = json!({"proposal":"p","hash":"h","service":"s","capability":"c",
        "principal": key(1).public().to_string(),"summary":"x","expires":NOW,
        "detail": {"id": "p", "x": deep}});
    let text = format!("pc1.{}", b64::encode(canonical(&body).unwrap()));
    assert!(matches!(code::decode(&text), Err(CodeError::Json(_))));
}

#[test]
fn strict_json_refuses_over_64_levels_and_over_1_mib_on_the_frame_path() {
    let deep = "[".repeat(65) + &"]".repeat(65);
    assert!(json::parse(deep.as_bytes(), Limits::FRAME).is_err());
    let big = format!("\"{}\"", "x".repeat(Limits::FRAME.max_bytes));
    assert!(matches!(
        json::parse(big.as_bytes(), Limits::FRAME),
        Err(JsonError::TooLarge { .. })
    ));
}

/// L10/L15: caveat values a JavaScript verifier might look up on a
/// prototype, nulls, nested objects and huge numbers are malformed caveats:
/// they fail closed (`forbidden`) on every verb, and nothing panics.
#[test]
fn odd_caveat_values_fail_closed_without_panic() {
    let odd = [
        json!({"risk": "toString"}),
        json!({"risk": "__proto__"}),
        json!({"risk": "constructor"}),
        json!({"risk": null}),
        json!({"risk": {"low": true}}),
        json!({"risk": ["low"]}),
        json!(null),
        json!({}),
        json!({"svc": null}),
        json!({"svc": "shop.example"}),
        json!({"svc": [{"id": "shop.example"}]}),
        json!({"svc": [["shop.example"]]}),
        json!({"verbs": [null]}),
        json!({"can": {"0": "*"}}),
        json!({"exp": 9007199254740992u64}),
        json!({"exp": u64::MAX}),
        json!({"exp": i64::MIN}),
        json!({"nbf": i64::MIN}),
        json!({"exp": "1790000600"}),
        json!({"per": {"max": i64::MIN, "currency": "USD"}}),
        json!({"per": {"max": u64::MAX, "currency": "USD"}}),
        json!({"spend": {"max": 1, "currency": null}}),
        json!({"spend": {"max": 1, "currency": "USD", "extra": 1}}),
        json!({"only": null}),
        json!({"only": {"hash": "h"}}),
        json!({"hasOwnProperty": ["x"]}),
        json!({"svc": ["shop.example"], "verbs": ["ASK"]}),
    ];
    for raw in &odd {
        let c = Caveat::parse(raw);
        assert!(!c.is_well_formed(), "{raw} was taken as a caveat: {c:?}");
        for ctx in contexts() {
            assert!(
                matches!(c.check(&ctx, "b"), parley_core::caveat::Verdict::Hard(_)),
                "{raw} on {}",
                ctx.verb
            );
        }
        let _ = c.describe();
        // Inside a correctly signed grant, where canonical JSON allows it.
        let caveats = json!([{"svc": ["shop.example"]}, raw]);
        if canonical(&caveats).is_ok() {
            let token = hand_signed(&[caveats]);
            for ctx in contexts() {
                let d = authorize(&token, &[key(1).public()], &key(2).public(), &ctx);
                assert!(
                    matches!(d, Decision::Forbidden { .. }),
                    "{raw} on {}: {d:?}",
                    ctx.verb
                );
            }
        }
    }
    // Numbers past what any parser represents are refused as JSON, not panics.
    for text in ["{\"exp\":1e400}", "{\"exp\":-1e400}"] {
        assert!(json::parse(text.as_bytes(), Limits::FRAME).is_err());
    }
}

/// Found while writing the fuzz targets: `i64::MIN.abs()` overflows, so an
/// integer field of -9223372036854775808 panicked in debug builds (and
/// passed the ±(2^53−1) check in release builds). Every such check now uses
/// `unsigned_abs`; the conformance files carry the same cases for caveats,
/// `iat`, consent and proposal `expires`, and proposal `cost`.
#[test]
fn integers_at_i64_min_are_refused_without_overflow() {
    use parley_core::{lens, proof};
    let p = proof::sign_raw(&key(2), "shop.example", "ASK", "shop.search", NOW);
    let mut v = p.to_value();
    v["ts"] = json!(i64::MIN);
    if let Ok(p) = proof::Proof::from_value(&v) {
        assert!(proof::check_raw(&p, "shop.example", "ASK", "shop.search", NOW).is_err());
    }
    for raw in [
        json!({"exp": i64::MIN}),
        json!({"nbf": i64::MIN}),
        json!({"spend": {"max": i64::MIN, "currency": "USD"}}),
    ] {
        assert!(!Caveat::parse(&raw).is_well_formed(), "{raw}");
    }
    let reply = json!({"parley": 1, "id": "s1", "re": "c1", "kind": "PROPOSALS", "proposals": [
        {"id": "p_1", "capability": "shop.order", "summary": "x", "effects": [],
         "cost": {"amount": i64::MIN, "currency": "USD"}, "risk": "low", "undo": null,
         "expires": i64::MIN, "hash": "h"}]});
    let text = lens::render_reply(&reply);
    // Not a safe integer, so not money: shown as the number ECMAScript reads.
    assert!(text.contains("\"amount\":-9223372036854776000"), "{text}");
}
