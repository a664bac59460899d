//! The playground speaking YEA v1 (`--dialect yea`): the same engine, with
//! the dialect as data. What these stop: a Parley frame or marker slipping
//! into YEA, a `cost` or `charge` in a YEA proposal, limits checked other
//! than by YEA's rules (§6.3: exact values, a unit mismatch is soft and asks
//! for consent, a malformed limit is hard and forbidden, a Parley `per` is
//! unknown), `total` reservations not kept per block id and measure, a
//! consent not verified under YEA, and a float amount being guessed at.

mod harness;

use harness::{code, commit_in, order_in, req_in, root_block, World, CAL, SHOP};
use parley_core::canonical::canonical;
use parley_core::proposal::Proposal;
use parley_core::{Dialect, SecretKey};
use serde_json::{json, Value};

const YEA: Dialect = Dialect::YeaV1;
/// 10^18: one unit of a quantity, in the ledger's exact units.
const UNIT: u128 = 1_000_000_000_000_000_000;

fn req(verb: &str, fields: Value) -> Value {
    req_in(YEA, verb, fields)
}

fn order(sku: &str, qty: i64) -> Value {
    order_in(YEA, sku, qty)
}

fn commit(p: &Value) -> Value {
    commit_in(YEA, p)
}

/// The YEA playground policy with `limits` in place of the usual ones.
fn policy_with(w: &World, limits: Value) -> String {
    let mut caveats = vec![
        json!({"svc": [SHOP, CAL]}),
        json!({"verbs": ["ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"]}),
        json!({"can": ["shop.*", "calendar.*"]}),
    ];
    caveats.extend(limits.as_array().unwrap().iter().cloned());
    caveats.push(json!({"risk": "medium"}));
    caveats.push(json!({"exp": w.now() + 3600}));
    w.grant(&w.agent, Value::Array(caveats))
}

/// The scripted agent's YEA grant: 40.00 USD each, 100.00 USD and 3 emails in total.
fn policy(w: &World) -> String {
    policy_with(
        w,
        json!([
            {"each": {"of": "spend", "max": 4000, "scale": 2, "unit": "USD"}},
            {"total": {"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}},
            {"total": {"of": "emails", "max": 3}},
        ]),
    )
}

/// A root grant signed by hand, for caveats `issue_root` rightly refuses
/// to sign (a malformed limit): the service must still fail them closed.
fn hand_signed(issuer: &SecretKey, holder: &SecretKey, caveats: Value, iat: i64) -> String {
    let p = json!({"iss": issuer.public().to_string(), "sub": holder.public().to_string(),
        "caveats": caveats, "iat": iat, "nonce": "hand"});
    let sig = issuer.sign(canonical(&p).unwrap().as_bytes());
    let blocks = json!([{"p": p, "s": sig.to_string()}]);
    format!(
        "pg1.{}",
        parley_core::b64::encode(canonical(&blocks).unwrap())
    )
}

#[tokio::test]
async fn yea_services_answer_in_yea_and_refuse_parley_frames() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    // `call` asserts the YEA marker on every reply.
    let brief = shop.reply(req("HELLO", json!({}))).await;
    assert_eq!(brief["kind"], "BRIEF", "{brief}");
    assert!(brief.get("parley").is_none(), "{brief}");
    let e = shop
        .reply(req_in(Dialect::ParleyV1, "HELLO", json!({})))
        .await;
    assert_eq!(code(&e), "bad_frame");
    assert!(e["message"].as_str().unwrap().contains("\"yea\": 1"), "{e}");
    // The BRIEF teaches exact amounts: no float params under YEA.
    let tip = brief["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "shop.tip")
        .unwrap();
    assert!(tip["params"].get("usd").is_none(), "{tip}");
    assert_eq!(tip["params"]["tip"]["unit"], "USD");
}

#[tokio::test]
async fn yea_proposals_report_uses_and_no_charge_op() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    let g = policy(&w);
    let r = shop.signed(order("m01", 1), &w.agent, &[&g]).await;
    assert_eq!(r["kind"], "PROPOSALS", "{r}");
    for p in r["proposals"].as_array().unwrap() {
        Proposal::from_value_in(p, YEA).unwrap_or_else(|e| panic!("{e}: {p}"));
        assert!(p.get("cost").is_none(), "{p}");
        assert_eq!(p["uses"]["emails"], json!({"amount": 1}));
        let ops: Vec<&str> = p["effects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["op"].as_str().unwrap())
            .collect();
        assert!(!ops.contains(&"charge"), "{ops:?}");
    }
    // Standard: 10.99 + 4.99 delivery, in cents at scale 2 (conventions).
    assert_eq!(
        r["proposals"][0]["uses"]["spend"],
        json!({"amount": 1598, "scale": 2, "unit": "USD"})
    );
    // Prices are exact quantities in words, never floats.
    let a = shop
        .reply(req(
            "ASK",
            json!({"capability": "shop.search", "params": {"query": "tofu"}}),
        ))
        .await;
    assert_eq!(a["data"][0]["price"], "10.99 USD", "{a}");
    // The calendar counts the invitations a move sends.
    let mut cal = w.cal().await;
    let p = cal
        .signed(
            req(
                "INTENT",
                json!({"capability": "calendar.reschedule", "params": {"event": "e1", "to": "2026-09-23T09:00:00Z"}}),
            ),
            &w.agent,
            &[&g],
        )
        .await;
    assert_eq!(
        p["proposals"][0]["uses"]["invites"],
        json!({"amount": 1}),
        "{p}"
    );
}

#[tokio::test]
async fn a_commit_reserves_every_total_per_block_id_and_measure() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    let g = policy(&w);
    let root = root_block(&g);
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let r = shop.signed(commit(&p), &w.agent, &[&g]).await;
    assert_eq!(r["kind"], "RECEIPT", "{r}");
    // §5.2: the receipt carries the proposal's uses.
    assert_eq!(r["receipt"]["uses"], p["uses"]);
    assert!(r["receipt"].get("cost").is_none());
    assert_eq!(w.pg.shop_service.used(&root, "spend"), 1598 * UNIT / 100);
    assert_eq!(w.pg.shop_service.used(&root, "emails"), UNIT);
    // A replay is the original receipt and reserves nothing again (§4.4).
    let again = shop.signed(commit(&p), &w.agent, &[&g]).await;
    assert_eq!(again["replay"], true, "{again}");
    assert_eq!(w.pg.shop_service.used(&root, "emails"), UNIT);
    assert_eq!(w.pg.shop_service.app().orders().len(), 1);
}

#[tokio::test]
async fn a_total_that_would_be_exceeded_asks_for_consent_with_the_exact_consent_object() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    let g = policy_with(&w, json!([{"total": {"of": "emails", "max": 1}}]));
    let p1 = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let r = shop.signed(commit(&p1), &w.agent, &[&g]).await;
    assert_eq!(r["kind"], "RECEIPT", "{r}");
    // The second order's email would be the second of at most one.
    let p2 = shop.signed(order("m02", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let e = shop.signed(commit(&p2), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "consent_required", "{e}");
    let consent = e["consent"].as_object().unwrap();
    let mut keys: Vec<&str> = consent.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "capability",
            "expires",
            "hash",
            "principal",
            "proposal",
            "service",
            "summary"
        ]
    );
    assert_eq!(e["consent"]["hash"], p2["hash"]);
    assert_eq!(e["consent"]["service"], SHOP);
    assert_eq!(e["consent"]["principal"], w.principal.public().to_string());
    // The refused commit reserved nothing.
    assert_eq!(w.pg.shop_service.used(&root_block(&g), "emails"), UNIT);

    // The human's consent grant (§6.6) commits exactly that proposal.
    let consent_grant = w.grant(
        &w.agent,
        json!([{"svc": [SHOP]}, {"verbs": ["COMMIT"]}, {"can": ["shop.order"]},
               {"only": p2["hash"]}, {"exp": e["consent"]["expires"]}]),
    );
    let r = shop.signed(commit(&p2), &w.agent, &[&consent_grant]).await;
    assert_eq!(r["kind"], "RECEIPT", "{r}");
    assert_eq!(w.pg.shop_service.app().orders().len(), 2);
    // …and nothing else: not another proposal.
    let p3 = shop.signed(order("m03", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let e = shop.signed(commit(&p3), &w.agent, &[&consent_grant]).await;
    assert_eq!(code(&e), "forbidden", "{e}");
}

#[tokio::test]
async fn a_spend_limit_in_another_unit_asks_for_consent_never_converts() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    // 1000.00 EUR would cover 15.98 USD at any rate, but units never convert.
    let g = policy_with(
        &w,
        json!([{"each": {"of": "spend", "max": 100000, "scale": 2, "unit": "EUR"}}]),
    );
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let e = shop.signed(commit(&p), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "consent_required", "{e}");
    assert_eq!(e["consent"]["hash"], p["hash"]);
    // A count limit with a unit does not match a unitless count either.
    let g = policy_with(
        &w,
        json!([{"total": {"of": "emails", "max": 5, "unit": "msg"}}]),
    );
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let e = shop.signed(commit(&p), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "consent_required", "{e}");
    assert!(w.pg.shop_service.app().orders().is_empty());
}

#[tokio::test]
async fn limits_compare_as_exact_decimals_whatever_their_scale() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    // 15.98 USD against 15.98 USD written at scale 3 (15.980): passes; at
    // 15.979 USD it does not.
    let at = |max: u64| {
        policy_with(
            &w,
            json!([{"each": {"of": "spend", "max": max, "scale": 3, "unit": "USD"}}]),
        )
    };
    let (exact, under) = (at(15980), at(15979));
    let p = shop.signed(order("m01", 1), &w.agent, &[&under]).await["proposals"][0].clone();
    let e = shop.signed(commit(&p), &w.agent, &[&under]).await;
    assert_eq!(code(&e), "consent_required", "{e}");
    let p = shop.signed(order("m01", 1), &w.agent, &[&exact]).await["proposals"][0].clone();
    let r = shop.signed(commit(&p), &w.agent, &[&exact]).await;
    assert_eq!(r["kind"], "RECEIPT", "{r}");
}

#[tokio::test]
async fn a_malformed_limit_is_forbidden_and_no_consent_can_fix_it() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    let caveats = json!([{"svc": [SHOP]}, {"verbs": ["INTENT", "COMMIT"]}, {"can": ["shop.*"]},
        {"each": {"of": "spend", "max": 4000, "scale": 19, "unit": "USD"}},
        {"exp": w.now() + 3600}]);
    let g = hand_signed(&w.principal, &w.agent, caveats, w.now());
    // The INTENT is refused already: a malformed caveat fails every verb.
    let e = shop.signed(order("m01", 1), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "forbidden", "{e}");
    assert!(e.get("consent").is_none());
    // A Parley `per` is no YEA caveat: it fails closed too.
    let g = policy_with(&w, json!([{"per": {"max": 4000, "currency": "USD"}}]));
    let e = shop.signed(order("m01", 1), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "forbidden", "{e}");
    assert_eq!(
        e["need"],
        json!([{"per": {"max": 4000, "currency": "USD"}}])
    );
    assert!(w.pg.shop_service.app().orders().is_empty());
}

#[tokio::test]
async fn a_float_amount_in_a_request_is_invalid_params_with_the_exact_form() {
    let w = World::start_in(YEA).await;
    let mut shop = w.shop().await;
    let g = policy(&w);
    for (cap, params) in [
        (
            "shop.tip",
            json!({"order": "o1001", "tip": {"amount": 2.5, "scale": 2, "unit": "USD"}}),
        ),
        ("shop.tip", json!({"order": "o1001", "tip": 2.5})),
        // Parley's float param is not read under YEA.
        ("shop.tip", json!({"order": "o1001", "usd": 2.5})),
    ] {
        let e = shop
            .signed(
                req("INTENT", json!({"capability": cap, "params": params})),
                &w.agent,
                &[&g],
            )
            .await;
        assert_eq!(code(&e), "invalid_params", "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("exact USD quantity"),
            "{e}"
        );
        assert_eq!(
            e["fix"][0]["params"]["tip"],
            json!({"amount": 250, "scale": 2, "unit": "USD"}),
            "{e}"
        );
    }
    let e = shop
        .reply(req(
            "ASK",
            json!({"capability": "shop.search", "params": {"max_price": {"amount": 12.5, "unit": "USD"}}}),
        ))
        .await;
    assert_eq!(code(&e), "invalid_params", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("never floats"),
        "{e}"
    );
    // The exact form works.
    let a = shop
        .reply(req(
            "ASK",
            json!({"capability": "shop.search", "params": {"max_price": {"amount": 1100, "scale": 2, "unit": "USD"}}}),
        ))
        .await;
    assert_eq!(a["data"].as_array().map(Vec::len), Some(1), "{a}");
}
