//! COMMIT, UNDO and auto-commit against the spec: not_found, conflict,
//! expired (proposal, handle, undo window), spend caps under concurrent
//! commits (§6.3), idempotent replays (§4.4), reservations released when
//! execution fails, auto-commit only when undoable and authorized outright,
//! with replay memory (§4.3.1), and UNDO (§4.5).

mod harness;

use harness::{code, commit, order, prove, req, root_block, Conn, World};
use serde_json::{json, Value};

fn reschedule(event: &str, to: &str, auto: bool) -> Value {
    let mut f = req(
        "INTENT",
        json!({"capability": "calendar.reschedule", "params": {"event": event, "to": to}}),
    );
    if auto {
        f["auto"] = json!(true);
    }
    f
}

#[tokio::test]
async fn unknown_proposals_receipts_and_handles_are_not_found() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let ghost = json!({"id": "p_nope", "hash": "AAAA"});
    assert_eq!(
        code(&shop.signed(commit(&ghost), &w.agent, &[&g]).await),
        "not_found"
    );
    let undo = req("UNDO", json!({"receipt": "r_nope"}));
    assert_eq!(code(&shop.signed(undo, &w.agent, &[&g]).await), "not_found");
    let ex = req("EXPAND", json!({"handle": "h_nope"}));
    assert_eq!(code(&shop.reply(ex).await), "not_found");
    let tip = req(
        "INTENT",
        json!({"capability": "shop.tip", "params": {"order": "o1", "usd": 2}}),
    );
    let e = shop.signed(tip, &w.agent, &[&g]).await;
    assert_eq!(
        (code(&e), &e["fix"][0]["say"]),
        ("not_found", &json!("ASK shop.orders to list your orders"))
    );
}

#[tokio::test]
async fn a_hash_mismatch_is_a_conflict_that_does_not_reveal_the_hash() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let mut wrong = p.clone();
    wrong["hash"] = json!("3YBSE3lWje0kWnzf3PaGMr3CI3aoO1qdYRLxUkmOJVU");
    let e = shop.signed(commit(&wrong), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "conflict");
    let text = e.to_string();
    assert!(
        !text.contains(p["hash"].as_str().unwrap()),
        "the hash leaked: {text}"
    );
    // Even without any grant, the answer is the same and reveals nothing.
    let e = shop.reply(commit(&wrong)).await;
    assert_eq!(code(&e), "conflict");
    assert!(!e.to_string().contains(p["hash"].as_str().unwrap()));
    assert!(w.pg.shop_service.app().orders().is_empty());
}

#[tokio::test]
async fn proposals_handles_and_undo_windows_expire() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let mut cal = w.cal().await;
    let g = w.policy(&w.agent);

    // A proposal, at its expiry.
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let a = shop
        .signed(
            req("ASK", json!({"capability": "shop.search", "budget": 100})),
            &w.agent,
            &[&g],
        )
        .await;
    let handle = a["more"][0]["handle"].clone();
    w.clock.set(p["expires"].as_i64().unwrap());
    let e = shop.signed(commit(&p), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "expired", "{e}");

    // A handle, 15 minutes on.
    w.clock.set(harness::T0 + 900);
    let e = shop
        .signed(req("EXPAND", json!({"handle": handle})), &w.agent, &[])
        .await;
    assert_eq!(code(&e), "expired");

    // An undo window, one second after it closed.
    let r = cal
        .signed(
            reschedule("e1", "2026-09-23T09:00:00Z", true),
            &w.agent,
            &[&g],
        )
        .await;
    assert_eq!(r["kind"], "RECEIPT", "{r}");
    let until = r["receipt"]["undo"]["until"].as_i64().unwrap();
    assert_eq!(until, w.now() + 3600);
    w.clock.set(until + 1);
    let g2 = w.policy(&w.agent);
    let e = cal
        .signed(
            req("UNDO", json!({"receipt": r["receipt"]["id"]})),
            &w.agent,
            &[&g2],
        )
        .await;
    assert_eq!(code(&e), "expired");
    assert_eq!(
        parley_playground::service::params::format_datetime(
            w.pg.cal_service.app().event("e1").unwrap().start
        ),
        "2026-09-23T09:00:00Z",
        "not undone"
    );
}

#[tokio::test]
async fn twenty_concurrent_commits_never_overshoot_the_spend_cap() {
    let w = World::start().await;
    let g = w.policy(&w.agent);
    let mut shop = w.shop().await;
    // Twenty proposals of 15.98 USD each (10.99 + 4.99 delivery): six fit in 100 USD.
    let mut proposals = Vec::new();
    for _ in 0..20 {
        let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
        assert_eq!(p["cost"]["amount"], 1598);
        proposals.push(p);
    }
    // Four connections, five commits multiplexed on each, all sent before any reply is read.
    let mut conns: Vec<Conn> = Vec::new();
    for _ in 0..4 {
        conns.push(w.shop().await);
    }
    let mut ids = vec![Vec::new(); 4];
    for (i, p) in proposals.iter().enumerate() {
        let f = prove(commit(p), &w.agent, harness::SHOP, w.now(), &[&g]);
        ids[i % 4].push(f["id"].clone());
        conns[i % 4].send(&f).await;
    }
    let tasks: Vec<_> = conns
        .into_iter()
        .zip(ids)
        .map(|(mut c, ids)| {
            tokio::spawn(async move {
                let mut finals = Vec::new();
                while finals.len() < ids.len() {
                    let v = c.recv().await;
                    if v["kind"] != "EVENT" {
                        assert!(ids.contains(&v["re"]));
                        finals.push(v);
                    }
                }
                finals
            })
        })
        .collect();
    let mut receipts = 0;
    let mut consents = 0;
    for t in tasks {
        for v in t.await.unwrap() {
            match (v["kind"].as_str(), v["code"].as_str()) {
                (Some("RECEIPT"), _) => receipts += 1,
                (Some("ERROR"), Some("consent_required")) => consents += 1,
                other => panic!("unexpected {other:?}: {v}"),
            }
        }
    }
    assert_eq!((receipts, consents), (6, 14));
    assert_eq!(w.pg.shop_service.spent(&root_block(&g)), 6 * 1598);
    assert_eq!(w.pg.shop_service.app().orders().len(), 6);
}

#[tokio::test]
async fn a_replayed_commit_returns_the_original_receipt_and_runs_once() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let p = shop.signed(order("m01", 2), &w.agent, &[&g]).await["proposals"][0].clone();
    let (events, first) = shop
        .call(prove(commit(&p), &w.agent, harness::SHOP, w.now(), &[&g]))
        .await;
    assert_eq!(first["kind"], "RECEIPT");
    assert_eq!(events.len(), 2, "progress before the receipt");
    assert!(first.get("replay").is_none());

    // Sequential and concurrent retries, after the spend total moved on.
    let (events, again) = shop
        .call(prove(commit(&p), &w.agent, harness::SHOP, w.now(), &[&g]))
        .await;
    assert!(events.is_empty());
    assert_eq!(again["replay"], json!(true));
    assert_eq!(again["receipt"], first["receipt"]);
    let mut a = w.shop().await;
    let mut b = w.shop().await;
    let fa = prove(commit(&p), &w.agent, harness::SHOP, w.now(), &[&g]);
    let fb = prove(commit(&p), &w.agent, harness::SHOP, w.now(), &[&g]);
    let (ra, rb) = tokio::join!(a.reply(fa), b.reply(fb));
    assert_eq!(
        (ra["replay"].clone(), rb["replay"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(ra["receipt"]["id"], first["receipt"]["id"]);
    assert_eq!(w.pg.shop_service.app().orders().len(), 1, "executed once");
    assert_eq!(w.pg.shop_service.spent(&root_block(&g)), 2 * 1099 + 499);

    // A replay is authorized like a commit: not by another agent, and
    // per/spend/risk are not evaluated again (a tighter per would otherwise
    // turn the retry into a consent prompt).
    let tight = w.grant(&w.agent, json!([{"per": {"max": 100, "currency": "USD"}}]));
    let r = shop.signed(commit(&p), &w.agent, &[&tight]).await;
    assert_eq!(r["replay"], json!(true), "{r}");
    let theirs = w.policy(&w.other);
    assert_eq!(
        code(&shop.signed(commit(&p), &w.other, &[&theirs]).await),
        "forbidden"
    );
    let no_commit = w.grant(&w.agent, json!([{"verbs": ["ASK"]}]));
    assert_eq!(
        code(&shop.signed(commit(&p), &w.agent, &[&no_commit]).await),
        "forbidden"
    );
}

#[tokio::test]
async fn a_failed_execution_releases_its_reservation() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let r = shop.signed(commit(&p), &w.agent, &[&g]).await;
    let order_id = r["receipt"]["result"]["order"].clone();
    let tip = req(
        "INTENT",
        json!({"capability": "shop.tip", "params": {"order": order_id, "usd": 5}}),
    );
    let tip = shop.signed(tip, &w.agent, &[&g]).await["proposals"][0].clone();
    assert_eq!(
        (tip["undo"].clone(), tip["cost"]["amount"].clone()),
        (Value::Null, json!(500))
    );
    // The order is cancelled before the tip is committed: the tip fails.
    let undo = shop
        .signed(
            req("UNDO", json!({"receipt": r["receipt"]["id"]})),
            &w.agent,
            &[&g],
        )
        .await;
    assert_eq!(undo["kind"], "RECEIPT");
    let e = shop.signed(commit(&tip), &w.agent, &[&g]).await;
    assert_eq!(code(&e), "conflict");
    // Undo does not reduce totals (v1); the failed tip's 5 USD were released.
    assert_eq!(w.pg.shop_service.spent(&root_block(&g)), 1598);
}

#[tokio::test]
async fn auto_commits_only_what_is_undoable_and_authorized_outright_and_remembers() {
    let w = World::start().await;
    let mut cal = w.cal().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);

    // Low risk, undoable, inside the grant: one round trip.
    let f = prove(
        reschedule("e1", "2026-09-23T09:00:00Z", true),
        &w.agent,
        harness::CAL,
        w.now(),
        &[&g],
    );
    let (events, r) = cal.call(f.clone()).await;
    assert_eq!(
        (r["kind"].as_str(), r["auto"].clone()),
        (Some("RECEIPT"), json!(true)),
        "{r}"
    );
    assert_eq!(events.len(), 1);
    let lens = parley_core::lens::render_reply(&r);
    assert!(
        lens.contains("~ update event/e1.start: 2026-09-22T14:00:00Z → 2026-09-23T09:00:00Z"),
        "{lens}"
    );

    // The same (key, frame id) again, on this or another connection: the
    // original reply, marked replay, never a second commit — even after the
    // event moved back.
    let undo = cal
        .signed(
            req("UNDO", json!({"receipt": r["receipt"]["id"]})),
            &w.agent,
            &[&g],
        )
        .await;
    assert_eq!(undo["receipt"]["undoes"], r["receipt"]["id"]);
    let mut other_conn = w.cal().await;
    for c in [&mut cal, &mut other_conn] {
        let again = c.reply(f.clone()).await;
        assert_eq!(again["replay"], json!(true));
        assert_eq!(again["receipt"]["id"], r["receipt"]["id"]);
    }
    assert_eq!(
        w.pg.cal_service.app().event("e1").unwrap().start,
        1_790_085_600,
        "still undone"
    );
    // The memory outlives the proof window: 899 s later it still replays
    // (with a fresh proof for the same frame id).
    w.clock.advance(899);
    let late = prove(f.clone(), &w.agent, harness::CAL, w.now(), &[&g]);
    assert_eq!(cal.reply(late).await["replay"], json!(true));

    // The proof of an auto INTENT binds the frame id.
    let mut plain = reschedule("e3", "2026-09-23T13:00:00Z", true);
    plain = harness::prove_target(
        plain,
        &w.agent,
        harness::CAL,
        &parley_core::proof::Target::Intent {
            capability: "calendar.reschedule",
        },
        w.now(),
        &[&g],
    );
    assert_eq!(code(&cal.reply(plain).await), "unauthorized");

    // Over the per-commit limit: proposals, not a consent prompt.
    let mut big = order("m06", 3);
    big["auto"] = json!(true);
    let ps = shop.signed(big, &w.agent, &[&g]).await;
    assert_eq!(ps["kind"], "PROPOSALS", "{ps}");
    // Irreversible, even within every limit: proposals.
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let r = shop.signed(commit(&p), &w.agent, &[&g]).await;
    let mut tip = req(
        "INTENT",
        json!({"capability": "shop.tip", "params": {"order": r["receipt"]["result"]["order"], "usd": 2}}),
    );
    tip["auto"] = json!(true);
    assert_eq!(shop.signed(tip, &w.agent, &[&g]).await["kind"], "PROPOSALS");
    // A grant that may INTENT but not COMMIT: proposals.
    let no_commit = w.grant(&w.agent, json!([{"verbs": ["INTENT"]}]));
    let f = reschedule("e3", "2026-09-23T13:00:00Z", true);
    assert_eq!(
        cal.signed(f, &w.agent, &[&no_commit]).await["kind"],
        "PROPOSALS"
    );
    // Without grants, auto never commits.
    let f = reschedule("e3", "2026-09-23T13:00:00Z", true);
    assert_eq!(cal.reply(f).await["kind"], "PROPOSALS");
    assert_eq!(w.pg.shop_service.app().orders().len(), 1);
}

#[tokio::test]
async fn undo_is_for_the_same_principal_inside_the_window_and_replays() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let g = w.policy(&w.agent);
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let r = shop.signed(commit(&p), &w.agent, &[&g]).await;
    let rid = r["receipt"]["id"].clone();
    let undo = || req("UNDO", json!({"receipt": rid}));

    // No grant; a grant rooted in another principal; a grant without UNDO.
    assert_eq!(code(&shop.reply(undo()).await), "unauthorized");
    let stranger = w.grant_from(&w.stranger, &w.agent, json!([]));
    assert_eq!(
        code(&shop.signed(undo(), &w.agent, &[&stranger]).await),
        "unauthorized"
    );
    let no_undo = w.grant(&w.agent, json!([{"verbs": ["COMMIT"]}]));
    assert_eq!(
        code(&shop.signed(undo(), &w.agent, &[&no_undo]).await),
        "forbidden"
    );
    let calendar_only = w.grant(&w.agent, json!([{"can": ["calendar.*"]}]));
    let e = shop.signed(undo(), &w.agent, &[&calendar_only]).await;
    assert_eq!(
        (code(&e), &e["need"]),
        ("forbidden", &json!([{"can": ["calendar.*"]}])),
        "can is checked against the receipt's capability"
    );

    let u = shop.signed(undo(), &w.agent, &[&g]).await;
    assert_eq!(u["kind"], "RECEIPT", "{u}");
    assert_eq!(
        (u["receipt"]["undoes"].clone(), u["receipt"]["undo"].clone()),
        (rid.clone(), Value::Null)
    );
    assert_eq!(u["receipt"]["effects"][0]["to"], "cancelled");
    let lens = parley_core::lens::render_reply(&u);
    assert!(
        lens.starts_with(&format!("↶ undid {}", rid.as_str().unwrap())),
        "{lens}"
    );
    let again = shop.signed(undo(), &w.agent, &[&g]).await;
    assert_eq!(
        (again["replay"].clone(), again["receipt"].clone()),
        (json!(true), u["receipt"].clone())
    );
    let orders = w.pg.shop_service.app().orders();
    assert_eq!(orders.values().next().unwrap().status, "cancelled");

    // An irreversible receipt has no window at all.
    let p = shop.signed(order("m01", 1), &w.agent, &[&g]).await["proposals"][0].clone();
    let r = shop.signed(commit(&p), &w.agent, &[&g]).await;
    let tip = req(
        "INTENT",
        json!({"capability": "shop.tip", "params": {"order": r["receipt"]["result"]["order"], "usd": 3.5}}),
    );
    let tip = shop.signed(tip, &w.agent, &[&g]).await["proposals"][0].clone();
    let t = shop.signed(commit(&tip), &w.agent, &[&g]).await;
    assert_eq!(t["receipt"]["undo"], Value::Null);
    assert!(parley_core::lens::render_reply(&t).contains("irreversible"));
    let e = shop
        .signed(
            req("UNDO", json!({"receipt": t["receipt"]["id"]})),
            &w.agent,
            &[&g],
        )
        .await;
    assert_eq!(code(&e), "expired");
}
