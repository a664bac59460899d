//! The grant module's tests: issuing, delegating, the checks and evaluation.

use super::*;
use crate::caveat::Caveat;
use crate::keys::SecretKey;
use serde_json::{json, Value};
use zeroize::Zeroizing;

fn key(b: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([b; 32]))
}

#[test]
fn issue_delegate_verify() {
    let (p, a, s) = (key(1), key(2), key(3));
    let g = UnverifiedGrant::issue_root(&p, &a.public(), &[Caveat::Svc(vec!["x".into()])], 10, "n")
        .unwrap();
    let d = g
        .delegate(&a, &s.public(), &[Caveat::Verbs(vec!["ASK".into()])], 11)
        .unwrap();
    let back = UnverifiedGrant::decode(&d.encode()).unwrap();
    assert_eq!(back, d);
    let v = back.verify(&[p.public()], &s.public()).unwrap();
    let ctx = RequestContext {
        service: "x".into(),
        verb: "ASK".into(),
        now: 12,
        ..Default::default()
    };
    assert_eq!(v.evaluate(&ctx), Decision::Ok);
    assert_eq!(
        back.verify(&[p.public()], &a.public()),
        Err(GrantError::NotHolder)
    );
    assert!(matches!(
        back.verify(&[a.public()], &s.public()),
        Err(GrantError::Untrusted(_))
    ));
    // Only the holder may delegate.
    assert!(g.delegate(&s, &s.public(), &[], 1).is_err());
}

#[test]
fn a_signed_chain_is_not_a_trusted_grant() {
    // A stranger's key signs a well-formed chain to the agent.
    let (p, stranger, a, s) = (key(1), key(7), key(2), key(3));
    let caveats = [Caveat::Svc(vec!["x".into()])];
    let g = UnverifiedGrant::issue_root(&stranger, &a.public(), &caveats, 10, "n")
        .unwrap()
        .delegate(&a, &s.public(), &[], 11)
        .unwrap();
    let chain = g.verify_chain().expect("its signatures check out");
    assert_eq!(chain.grant(), &g);
    assert_eq!(chain.block_ids().len(), 2);
    assert_eq!(chain.block_ids()[0], g.id());
    // Only the principals decide whether it authorizes anything.
    assert_eq!(
        g.verify(&[p.public()], &s.public()),
        Err(GrantError::Untrusted(stranger.public().to_string()))
    );
    let v = g.verify(&[stranger.public()], &s.public()).unwrap();
    assert_eq!(v.block_ids(), chain.block_ids());

    // A block spliced from another chain breaks the link.
    let other = UnverifiedGrant::issue_root(&stranger, &a.public(), &caveats, 10, "m")
        .unwrap()
        .delegate(&a, &s.public(), &[], 11)
        .unwrap();
    let spliced = UnverifiedGrant {
        blocks: vec![g.blocks[0].clone(), other.blocks[1].clone()],
    };
    assert_eq!(
        spliced.verify_chain(),
        Err(GrantError::BrokenChain { index: 1 })
    );
}

fn yea_commit(uses: Value, used: crate::quantity::Used) -> RequestContext {
    RequestContext {
        service: "shop.example".into(),
        verb: "COMMIT".into(),
        capability: "shop.order".into(),
        now: 5,
        proposal: Some(crate::caveat::CommitFacts {
            hash: "h".into(),
            uses: Some(uses),
            risk: "low".into(),
            ..Default::default()
        }),
        used,
        dialect: crate::Dialect::YeaV1,
        ..Default::default()
    }
}

#[test]
fn totals_reserve_per_block_and_measure_and_count_what_was_used() {
    let (p, a) = (key(1), key(2));
    let limit = |v: Value| Caveat::parse(&json!({ "total": v }));
    let g = UnverifiedGrant::issue_root(
        &p,
        &a.public(),
        &[
            limit(json!({"of": "emails", "max": 3})),
            limit(json!({"of": "spend", "max": 40, "unit": "USD"})),
        ],
        1,
        "n",
    )
    .unwrap()
    .verify(&[p.public()], &a.public())
    .unwrap();
    let uses =
        json!({"emails": {"amount": 2}, "spend": {"amount": 2287, "scale": 2, "unit": "USD"}});
    let parsed = crate::quantity::Uses::from_value(&uses).unwrap();
    let reserved = g.total_reservations(&parsed);
    let root = g.block_ids()[0].clone();
    assert_eq!(
        reserved
            .iter()
            .map(|(b, m, _)| (b.as_str(), m.as_str()))
            .collect::<Vec<_>>(),
        [(root.as_str(), "emails"), (root.as_str(), "spend")]
    );
    assert_eq!(
        g.evaluate(&yea_commit(uses.clone(), Default::default())),
        Decision::Ok
    );
    // After the reservations, the same commit again passes 3 emails in total.
    let mut used = crate::quantity::Used::new();
    for (b, m, v) in reserved {
        used.entry(b).or_default().insert(m, v);
    }
    assert_eq!(
        g.evaluate(&yea_commit(uses, used)).code(),
        "consent_required"
    );
}

#[test]
fn yea_limits_mismatched_units_ask_malformed_quantities_and_floats_forbid() {
    let (p, a) = (key(1), key(2));
    let each =
        Caveat::parse(&json!({"each": {"of": "spend", "max": 4000, "scale": 2, "unit": "USD"}}));
    let g = UnverifiedGrant::issue_root(&p, &a.public(), &[each], 1, "n")
        .unwrap()
        .verify(&[p.public()], &a.public())
        .unwrap();
    let d = g.evaluate(&yea_commit(
        json!({"spend": {"amount": 100, "scale": 2, "unit": "EUR"}}),
        Default::default(),
    ));
    let Decision::ConsentRequired { reasons, .. } = d else {
        panic!("{d:?}")
    };
    assert_eq!(
        reasons,
        ["spend is in EUR, but the per-commit limit is in USD"]
    );
    for (uses, why) in [
        (
            json!({"spend": {"amount": 12.5, "unit": "USD"}}),
            "amount must be an integer",
        ),
        (
            json!({"spend": {"amount": -1, "unit": "USD"}}),
            "amount must be an integer",
        ),
        (
            json!({"spend": {"amount": 1, "scale": 19, "unit": "USD"}}),
            "scale must be",
        ),
        (json!({"Spend": {"amount": 1}}), "not a measure name"),
    ] {
        let d = g.evaluate(&yea_commit(uses.clone(), Default::default()));
        let Decision::Forbidden { reasons, .. } = &d else {
            panic!("{uses}: {d:?}")
        };
        assert!(reasons[0].contains(why), "{uses}: {reasons:?}");
    }
    // The same limit under Parley is an unknown caveat.
    let mut ctx = yea_commit(json!({}), Default::default());
    ctx.dialect = crate::Dialect::ParleyV1;
    assert_eq!(g.evaluate(&ctx).code(), "forbidden");
}

#[test]
fn never_signs_a_block_mixing_the_dialects_limits() {
    let p = key(1);
    let per = Caveat::parse(&json!({"per": {"max": 1, "currency": "USD"}}));
    let each = Caveat::parse(&json!({"each": {"of": "emails", "max": 1}}));
    assert!(matches!(
        UnverifiedGrant::issue_root(&p, &p.public(), &[per, each], 1, "n"),
        Err(GrantError::Unsignable(_))
    ));
}

#[test]
fn refuses_to_sign_malformed_caveats() {
    let p = key(1);
    let bad = Caveat::parse(&json!({"risk": "extreme"}));
    assert!(matches!(
        UnverifiedGrant::issue_root(&p, &p.public(), &[bad], 1, "n"),
        Err(GrantError::Unsignable(_))
    ));
}

#[test]
fn malformed_tokens_have_clear_errors() {
    assert_eq!(UnverifiedGrant::decode("pg2.xx"), Err(GrantError::Prefix));
    assert!(matches!(
        UnverifiedGrant::decode("pg1.!!"),
        Err(GrantError::Encoding(_))
    ));
    let enc = |s: &str| format!("pg1.{}", b64::encode(s));
    assert!(matches!(
        UnverifiedGrant::decode(&enc("[]")),
        Err(GrantError::Malformed(_))
    ));
    assert!(matches!(
        UnverifiedGrant::decode(&enc("{}")),
        Err(GrantError::Malformed(_))
    ));
    assert!(matches!(
        UnverifiedGrant::decode(&enc("[1]")),
        Err(GrantError::Malformed(_))
    ));
    assert!(matches!(
        UnverifiedGrant::decode(&enc("[{\"p\":{},\"s\":\"x\"}]")),
        Err(GrantError::Malformed(_))
    ));
    let huge = format!("pg1.{}", "A".repeat(MAX_TOKEN_BYTES + 1));
    assert!(matches!(
        UnverifiedGrant::decode(&huge),
        Err(GrantError::TooLong(_))
    ));
    let g = UnverifiedGrant::issue_root(&key(1), &key(2).public(), &[], 1, "n").unwrap();
    let token = g.encode();
    for cut in [5, token.len() / 2, token.len() - 1] {
        assert!(
            UnverifiedGrant::decode(&token[..cut]).is_err(),
            "truncated at {cut}"
        );
    }
}
