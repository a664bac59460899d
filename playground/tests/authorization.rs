//! §6 on the wire: grants and proofs (`unauthorized`), caveats that do not
//! cover a request (`forbidden` with `need`), consent (`consent_required`
//! with the exact §6.6 consent object, then a COMMIT with the consent
//! grant), and §4.4 "who may commit".

mod harness;

use harness::{code, commit, order, prove, prove_target, req, World, CAL, SHOP};
use parley_core::consent;
use parley_core::proof::Target;
use serde_json::json;

#[tokio::test]
async fn commits_need_a_usable_grant_and_a_proof() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let now = w.now();

    // No grant at all.
    let e = shop.reply(commit(&p)).await;
    assert_eq!(code(&e), "unauthorized");
    // A grant without a proof.
    let mut f = commit(&p);
    f["grants"] = json!([g]);
    assert_eq!(code(&shop.reply(f).await), "unauthorized");
    // A malformed proof.
    let mut f = commit(&p);
    f["grants"] = json!([g]);
    f["proof"] = json!({"key": "ed25519:nope", "ts": now, "sig": "x"});
    assert_eq!(code(&shop.reply(f).await), "unauthorized");
    // Not a grant; a grant from a principal the shop does not trust; a
    // grant whose signature was tampered with; a grant held by another key.
    let untrusted = w.grant_from(&w.stranger, &w.agent, harness::policy_caveats(now));
    let tampered = harness::tamper(&g);
    let others = w.policy(&w.other);
    for bad in [
        "pg1.garbage",
        untrusted.as_str(),
        tampered.as_str(),
        others.as_str(),
    ] {
        let e = shop.signed(commit(&p), &w.agent, &[bad]).await;
        assert_eq!(code(&e), "unauthorized", "{bad}: {e}");
    }
    assert!(w.pg.shop_service.app().orders().is_empty());
    // The good grant works.
    let r = shop.signed(commit(&p), &w.agent, &[&g]).await;
    assert_eq!(r["kind"], "RECEIPT", "{r}");
}

#[tokio::test]
async fn proofs_are_bound_to_service_verb_target_and_time() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let now = w.now();
    let f = || req("ASK", json!({"capability": "shop.search"}));
    for (what, frame) in [
        ("another service", prove(f(), &w.agent, CAL, now, &[&g])),
        (
            "another target",
            prove_target(
                f(),
                &w.agent,
                SHOP,
                &Target::Ask {
                    capability: "shop.orders",
                },
                now,
                &[&g],
            ),
        ),
        (
            "another verb",
            prove_target(
                f(),
                &w.agent,
                SHOP,
                &Target::Intent {
                    capability: "shop.search",
                },
                now,
                &[&g],
            ),
        ),
        ("301 s old", prove(f(), &w.agent, SHOP, now - 301, &[&g])),
        ("301 s ahead", prove(f(), &w.agent, SHOP, now + 301, &[&g])),
    ] {
        let e = shop.reply(frame).await;
        assert_eq!(code(&e), "unauthorized", "{what}: {e}");
    }
    for skew in [-300, 300] {
        let a = shop
            .reply(prove(f(), &w.agent, SHOP, now + skew, &[&g]))
            .await;
        assert_eq!(a["kind"], "ANSWER", "{skew}: {a}");
    }
}

#[tokio::test]
async fn a_grant_that_does_not_cover_the_request_is_forbidden_with_need() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let exp = w.now() + 600;
    let read_only = w.grant(&w.agent, json!([{"verbs": ["ASK"]}, {"exp": exp}]));
    let calendar_only = w.grant(&w.agent, json!([{"svc": [CAL]}, {"exp": exp}]));
    let no_shop = w.grant(&w.agent, json!([{"can": ["calendar.*"]}]));
    let expired = w.grant(&w.agent, json!([{"exp": w.now() - 1}]));
    for (grant, frame, need) in [
        (&read_only, order("m01", 1), json!([{"verbs": ["ASK"]}])),
        (
            &calendar_only,
            req("ASK", json!({"capability": "shop.search"})),
            json!([{"svc": [CAL]}]),
        ),
        (
            &no_shop,
            req("ASK", json!({"capability": "shop.search"})),
            json!([{"can": ["calendar.*"]}]),
        ),
        (
            &expired,
            req("ASK", json!({"capability": "shop.orders"})),
            json!([{"exp": w.now() - 1}]),
        ),
    ] {
        let e = shop.signed(frame, &w.agent, &[grant]).await;
        assert_eq!(code(&e), "forbidden", "{e}");
        assert_eq!(e["need"], need);
    }
    // Read-only still reads.
    let a = shop
        .signed(
            req("ASK", json!({"capability": "shop.search"})),
            &w.agent,
            &[&read_only],
        )
        .await;
    assert_eq!(a["kind"], "ANSWER");
    // Several grants: any one that authorizes is enough (§6.6).
    let p = shop
        .signed(
            order("m01", 1),
            &w.agent,
            &[&read_only, &w.policy(&w.agent)],
        )
        .await;
    assert_eq!(p["kind"], "PROPOSALS");
}

#[tokio::test]
async fn over_the_limit_the_service_asks_for_consent_and_a_consent_grant_commits() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let ps = shop.signed(order("m06", 3), &w.agent, &[&g]).await;
    let p = ps["proposals"][0].clone();
    assert_eq!(p["cost"], json!({"amount": 3 * 1964, "currency": "USD"}));

    let e = shop.signed(commit(&p), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "consent_required", "{e}");
    assert_eq!(
        e["consent"],
        json!({"proposal": p["id"], "hash": p["hash"], "service": SHOP, "capability": "shop.order",
               "principal": w.principal.public().to_string(), "summary": p["summary"], "expires": p["expires"]})
    );
    assert!(e.get("need").is_none());
    // Risk is a consent caveat too: the express proposal is medium, over a low ceiling.
    let low = w.grant(&w.agent, json!([{"risk": "low"}]));
    let express = shop.signed(order("m01", 1), &w.agent, &[&low]).await["proposals"][1].clone();
    assert_eq!(express["risk"], "medium");
    assert_eq!(
        code(&shop.signed(commit(&express), &w.agent, &[&low]).await),
        "consent_required"
    );

    // The principal approves this exact proposal (§6.6).
    let req_ = consent::ConsentRequest::from_value(&e["consent"]).unwrap();
    let checked = consent::check(req_, &p, SHOP, w.now()).unwrap();
    let grant = consent::issue_consent(&w.principal, &w.agent.public(), &checked, w.now(), "c1")
        .unwrap()
        .encode();
    let (events, r) = shop
        .call(prove(commit(&p), &w.agent, SHOP, w.now(), &[&grant]))
        .await;
    assert_eq!(r["kind"], "RECEIPT", "{r}");
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["authorizing card ••4242", "order sent to the kitchen"]
    );
    assert_eq!(r["receipt"]["undo"], json!({"until": w.now() + 7200}));
    // The consent authorizes nothing else: not the express proposal, not an UNDO.
    let other = shop.signed(order("m06", 3), &w.agent, &[&g]).await["proposals"][0].clone();
    assert_eq!(
        code(&shop.signed(commit(&other), &w.agent, &[&grant]).await),
        "forbidden"
    );
    let undo = req("UNDO", json!({"receipt": r["receipt"]["id"]}));
    assert_eq!(
        code(&shop.signed(undo, &w.agent, &[&grant]).await),
        "forbidden"
    );
}

#[tokio::test]
async fn only_the_key_that_asked_may_commit() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let mine = w.policy(&w.agent);
    let theirs = w.policy(&w.other);
    let p = shop.signed(order("m01", 1), &w.agent, &[&mine]).await["proposals"][0].clone();
    // Another agent of the same principal, with its own valid grant.
    let e = shop.signed(commit(&p), &w.other, &[&theirs]).await;
    assert_eq!(code(&e), "forbidden", "{e}");
    assert!(e["message"].as_str().unwrap().contains("another agent key"));
    // A proposal from an anonymous INTENT can be looked at, never committed.
    let anon = shop.reply(order("m01", 1)).await["proposals"][0].clone();
    let e = shop.signed(commit(&anon), &w.agent, &[&mine]).await;
    assert_eq!(code(&e), "forbidden");
    assert!(
        e["message"].as_str().unwrap().contains("never committed"),
        "{e}"
    );
    assert!(w.pg.shop_service.app().orders().is_empty());
    // A grant from another (untrusted) principal cannot commit mine either.
    let stranger = w.grant_from(&w.stranger, &w.agent, json!([]));
    assert_eq!(
        code(&shop.signed(commit(&p), &w.agent, &[&stranger]).await),
        "unauthorized"
    );
    assert_eq!(
        shop.signed(commit(&p), &w.agent, &[&mine]).await["kind"],
        "RECEIPT"
    );
}

#[tokio::test]
async fn expand_handles_belong_to_the_key_that_asked() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let a = shop
        .signed(
            req("ASK", json!({"capability": "shop.search", "budget": 100})),
            &w.agent,
            &[&g],
        )
        .await;
    let h = a["more"][0]["handle"].as_str().unwrap().to_string();
    let ex = || req("EXPAND", json!({"handle": h}));
    assert_eq!(code(&shop.reply(ex()).await), "unauthorized");
    let theirs = w.policy(&w.other);
    assert_eq!(
        code(&shop.signed(ex(), &w.other, &[&theirs]).await),
        "forbidden"
    );
    assert_eq!(code(&shop.signed(ex(), &w.other, &[]).await), "forbidden");
    let ok = shop.signed(ex(), &w.agent, &[]).await;
    assert_eq!(ok["kind"], "ANSWER", "{ok}");
    let ok = shop.signed(ex(), &w.agent, &[&g]).await;
    assert_eq!(ok["kind"], "ANSWER", "{ok}");
    // A grant that does not allow EXPAND is refused even for the owner.
    let no_expand = w.grant(&w.agent, json!([{"verbs": ["ASK"]}]));
    let e = shop.signed(ex(), &w.agent, &[&no_expand]).await;
    assert_eq!(
        (code(&e), &e["need"]),
        ("forbidden", &json!([{"verbs": ["ASK"]}]))
    );
}
