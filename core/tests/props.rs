//! Property tests of the protocol core (proptest).

use parley_core::caveat::{Caveat, CommitFacts, RequestContext};
use parley_core::grant::{Decision, UnverifiedGrant};
use parley_core::money::Money;
use parley_core::{canonical, code, consent, json, SecretKey};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use zeroize::Zeroizing;

fn key(b: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([b; 32]))
}

/// Any JSON value that has a canonical form (safe integers only).
fn canonical_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-9_007_199_254_740_991i64..=9_007_199_254_740_991).prop_map(|i| Value::Number(i.into())),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn rank(d: &Decision) -> u8 {
    match d {
        Decision::Ok => 3,
        Decision::ConsentRequired { .. } => 2,
        Decision::Forbidden { .. } => 1,
        Decision::Unauthorized { .. } => 0,
    }
}

const SERVICES: &[&str] = &["shop.example", "cal.example", "bank.example"];
const VERBS: &[&str] = &["ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"];
const CAPS: &[&str] = &[
    "shop.order",
    "shop.search",
    "calendar.find",
    "bank.transfer",
];
const PATTERNS: &[&str] = &[
    "*",
    "shop.*",
    "shop.order",
    "calendar.*",
    "bank.transfer",
    "x.*",
];

fn caveat() -> impl Strategy<Value = Caveat> {
    let names = |pool: &'static [&'static str]| {
        prop::collection::vec(prop::sample::select(pool), 0..3)
            .prop_map(|v| v.into_iter().map(str::to_string).collect::<Vec<_>>())
    };
    let money = (
        0i64..10_000,
        prop::sample::select(&["USD", "EUR", "JPY"][..]),
    )
        .prop_map(|(amount, c)| Money {
            amount,
            currency: c.to_string(),
        });
    prop_oneof![
        names(SERVICES).prop_map(Caveat::Svc),
        names(VERBS).prop_map(Caveat::Verbs),
        names(PATTERNS).prop_map(Caveat::Can),
        (0i64..200).prop_map(Caveat::Exp),
        (0i64..200).prop_map(Caveat::Nbf),
        money.clone().prop_map(Caveat::Per),
        money.prop_map(Caveat::Spend),
        prop::sample::select(&["low", "medium", "high"][..])
            .prop_map(|r| Caveat::Risk(parley_core::RiskLevel::parse(r).unwrap())),
        prop::sample::select(&["H1", "H2"][..]).prop_map(|h| Caveat::Only(h.to_string())),
    ]
}

fn context() -> impl Strategy<Value = RequestContext> {
    (
        prop::sample::select(SERVICES),
        prop::sample::select(VERBS),
        prop::sample::select(CAPS),
        0i64..200,
        prop::option::of((
            prop::sample::select(&["H1", "H2"][..]),
            prop::option::of((
                0i64..20_000,
                prop::sample::select(&["USD", "EUR", "JPY"][..]),
            )),
            prop::sample::select(&["low", "medium", "high", "extreme"][..]),
        )),
        0i64..10_000,
    )
        .prop_map(|(s, v, c, now, p, spent)| RequestContext {
            service: s.into(),
            verb: v.into(),
            capability: c.into(),
            now,
            proposal: p.map(|(h, cost, r)| CommitFacts {
                hash: h.into(),
                cost: cost.map(|(amount, cur)| Money {
                    amount,
                    currency: cur.into(),
                }),
                risk: r.into(),
                ..Default::default()
            }),
            spent: std::iter::once(("unused".to_string(), spent)).collect(),
            ..Default::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn canonical_output_parses_back_to_the_same_value(v in canonical_value()) {
        let text = canonical::canonical(&v).unwrap();
        let back = json::parse_str(&text).unwrap();
        prop_assert_eq!(&back, &v);
        prop_assert_eq!(canonical::canonical(&back).unwrap(), text);
    }

    #[test]
    fn floats_never_canonicalize(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        if let Some(n) = Number::from_f64(f) {
            prop_assert!(canonical::canonical(&Value::Number(n)).is_err());
        }
    }

    #[test]
    fn a_delegation_never_authorizes_more_than_its_parent(
        root in prop::collection::vec(caveat(), 0..5),
        sub in prop::collection::vec(caveat(), 0..5),
        mut ctx in context(),
        spent_root in 0i64..10_000,
    ) {
        let (p, a, s) = (key(1), key(2), key(3));
        let parent = UnverifiedGrant::issue_root(&p, &a.public(), &root, 0, "n").unwrap();
        let child = parent.delegate(&a, &s.public(), &sub, 1).unwrap();
        ctx.spent.insert(parent.id(), spent_root);
        let vp = parent.verify(&[p.public()], &a.public()).unwrap().evaluate(&ctx);
        let vc = child.verify(&[p.public()], &s.public()).unwrap().evaluate(&ctx);
        prop_assert!(rank(&vc) <= rank(&vp), "parent {:?} child {:?}", vp, vc);
    }

    #[test]
    fn grant_tokens_round_trip(root in prop::collection::vec(caveat(), 0..6), iat in 0i64..1_000_000, nonce in "[a-zA-Z0-9]{1,16}") {
        let (p, a) = (key(1), key(2));
        let g = UnverifiedGrant::issue_root(&p, &a.public(), &root, iat, &nonce).unwrap();
        let token = g.encode();
        let back = UnverifiedGrant::decode(&token).unwrap();
        prop_assert_eq!(back.encode(), token);
        prop_assert_eq!(back.blocks()[0].caveats(), &root[..]);
    }

    #[test]
    fn garbage_tokens_are_refused_without_panic(s in ".{0,300}") {
        let _ = UnverifiedGrant::decode(&s);
        let _ = UnverifiedGrant::decode(&format!("pg1.{s}"));
        let _ = code::decode(&format!("pc1.{s}"));
    }

    #[test]
    fn consent_codes_round_trip(summary in any::<String>(), expires in 0i64..9_007_199_254_740_991, hash in "[A-Za-z0-9_-]{43}") {
        let req = consent::ConsentRequest {
            proposal: "p_1".into(), hash, service: "shop.example".into(), capability: "shop.order".into(),
            principal: key(1).public(), summary, expires,
        };
        let c = code::encode(&req, None).unwrap();
        prop_assert_eq!(code::decode(&c).unwrap().consent, req);
    }

    #[test]
    fn any_caveat_json_evaluates_without_panic(v in canonical_value(), ctx in context()) {
        let c = Caveat::parse(&v);
        let _ = c.check(&ctx, "b");
        let _ = c.describe();
    }
}
