//! §2 framing, §4.1 HELLO, §4.2 ASK, §7 errors that need no grant:
//! bad_frame, unknown_capability, invalid_params; budgets and EXPAND (§8);
//! CLARIFY (§4.3); multiplexed replies (§2.2).

mod harness;

use harness::{code, req, World, SHOP};
use serde_json::{json, Value};

#[tokio::test]
async fn an_oversized_frame_is_refused_and_the_connection_stays_usable() {
    let w = World::start().await;
    let mut c = w.shop().await;
    let pad = "x".repeat((1 << 20) + 100);
    let big = format!("{{\"parley\":1,\"id\":\"big\",\"verb\":\"HELLO\",\"pad\":\"{pad}\"}}\n");
    c.send_raw(big.as_bytes()).await;
    let e = c.recv().await;
    assert_eq!(code(&e), "bad_frame");
    assert_eq!(e["re"], Value::Null, "the id of an unread frame is unknown");
    assert!(e["message"].as_str().unwrap().contains("limit"), "{e}");
    let hello = c.reply(req("HELLO", json!({}))).await;
    assert_eq!(hello["kind"], "BRIEF");
    assert_eq!(hello["service"]["id"], SHOP);
}

#[tokio::test]
async fn malformed_frames_are_bad_frame_and_reading_goes_on() {
    let w = World::start().await;
    let mut c = w.cal().await;
    for raw in [
        &b"{\"parley\":1,\"id\":\"d\",\"id\":\"e\",\"verb\":\"HELLO\"}\n"[..],
        b"not json\n",
        b"[1,2,3]\n",
        b"{\"parley\":1,\"id\":\"u\",\"verb\":\"\xff\"}\n",
    ] {
        c.send_raw(raw).await;
        let e = c.recv().await;
        assert_eq!(
            (code(&e), &e["re"]),
            ("bad_frame", &Value::Null),
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
    for (frame, re) in [
        (json!({"parley": 1, "id": "v", "verb": "PATCH"}), "v"),
        (json!({"id": "p", "verb": "HELLO"}), "p"),
        (
            json!({"parley": 1, "id": "k", "verb": "ASK", "budget": -1, "capability": "calendar.find"}),
            "k",
        ),
        (
            json!({"parley": 1, "id": "g", "verb": "ASK", "capability": "calendar.find", "grants": "pg1.x"}),
            "g",
        ),
        (json!({"parley": 1, "id": "c", "verb": "COMMIT"}), "c"),
    ] {
        let e = c.reply(frame.clone()).await;
        assert_eq!(
            (code(&e), e["re"].as_str()),
            ("bad_frame", Some(re)),
            "{frame}"
        );
    }
    // Unknown fields are ignored (§2.1).
    let a = c
        .reply(req(
            "ASK",
            json!({"capability": "calendar.find", "x-trace": {"a": 1}}),
        ))
        .await;
    assert_eq!(a["kind"], "ANSWER");
}

#[tokio::test]
async fn replies_are_multiplexed_and_correlated_by_re() {
    let w = World::start().await;
    let mut c = w.shop().await;
    let frames = [
        req("HELLO", json!({})),
        req(
            "ASK",
            json!({"capability": "shop.search", "params": {"tag": "vegan"}}),
        ),
        req("ASK", json!({"capability": "shop.nope"})),
        req(
            "INTENT",
            json!({"capability": "shop.order", "params": {"items": [{"sku": "m01", "qty": 1}], "deliver": "2026-09-22"}}),
        ),
    ];
    for f in &frames {
        c.send(f).await;
    }
    let mut got = std::collections::BTreeMap::new();
    let mut reply_ids = std::collections::BTreeSet::new();
    while got.len() < frames.len() {
        let v = c.recv().await;
        assert!(
            reply_ids.insert(v["id"].as_str().unwrap().to_string()),
            "reply ids are unique"
        );
        got.insert(
            v["re"].as_str().unwrap().to_string(),
            v["kind"].as_str().unwrap().to_string(),
        );
    }
    let kinds: Vec<&str> = frames
        .iter()
        .map(|f| got[f["id"].as_str().unwrap()].as_str())
        .collect();
    assert_eq!(kinds, ["BRIEF", "ANSWER", "ERROR", "PROPOSALS"]);
}

#[tokio::test]
async fn unknown_capabilities_teach_the_right_name_or_verb() {
    let w = World::start().await;
    let mut c = w.shop().await;
    for (verb, cap, say) in [
        ("ASK", "shop.serch", "did you mean shop.search?"),
        ("ASK", "shop.order", "send it with INTENT"),
        ("INTENT", "shop.search", "send it with ASK"),
        (
            "INTENT",
            "bank.transfer",
            "send HELLO to list the 4 capabilities",
        ),
    ] {
        let e = c.reply(req(verb, json!({"capability": cap}))).await;
        assert_eq!(code(&e), "unknown_capability");
        assert_eq!(e["fix"][0]["say"], say, "{e}");
    }
}

#[tokio::test]
async fn invalid_params_say_what_would_work() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    let e = shop
        .reply(req("INTENT", json!({"capability": "shop.order", "params": {"items": [{"sku": "m99", "qty": 1}], "deliver": "2026-09-22"}})))
        .await;
    assert_eq!(code(&e), "invalid_params");
    assert_eq!(e["fix"][0]["say"], "ASK shop.search to find skus");
    let e = shop
        .reply(req(
            "ASK",
            json!({"capability": "shop.search", "params": [1]}),
        ))
        .await;
    assert_eq!(code(&e), "invalid_params");
    let e = shop
        .reply(req(
            "ASK",
            json!({"capability": "shop.search", "params": {"tag": "keto"}}),
        ))
        .await;
    assert_eq!(e["fix"][0]["params"], json!({"tag": "vegan"}));

    // A time in the past: the fix is a params patch that works.
    let mut cal = w.cal().await;
    let mut params = json!({"event": "e1", "to": "2026-09-20T09:00:00Z"});
    let e = cal
        .reply(req(
            "INTENT",
            json!({"capability": "calendar.reschedule", "params": params}),
        ))
        .await;
    assert_eq!(code(&e), "invalid_params");
    let patch = e["fix"][0]["params"].clone();
    params["to"] = patch["to"].clone();
    let ok = cal
        .reply(req(
            "INTENT",
            json!({"capability": "calendar.reschedule", "params": params}),
        ))
        .await;
    assert_eq!(ok["kind"], "PROPOSALS", "{ok}");
}

#[tokio::test]
async fn ambiguous_names_get_clarify_and_an_option_resolves_them() {
    let w = World::start().await;
    let mut cal = w.cal().await;
    let params = json!({"event": "Ana", "to": "2026-09-23T09:00:00Z"});
    let c = cal
        .reply(req(
            "INTENT",
            json!({"capability": "calendar.reschedule", "params": params}),
        ))
        .await;
    assert_eq!(c["kind"], "CLARIFY", "{c}");
    assert!(
        c["question"].as_str().unwrap().contains("Ana Ruiz, Ana Li"),
        "{c}"
    );
    let options = c["options"].as_array().unwrap();
    assert_eq!(options.len(), 3);
    assert_eq!(options[0]["params"], json!({"event": "e1"}));
    let picked = json!({"event": "e1", "to": "2026-09-23T09:00:00Z"});
    let p = cal
        .reply(req(
            "INTENT",
            json!({"capability": "calendar.reschedule", "params": picked}),
        ))
        .await;
    assert_eq!(p["kind"], "PROPOSALS");
    let prop = &p["proposals"][0];
    assert_eq!(prop["risk"], "low");
    assert_eq!(prop["undo"], json!({"window": 3600}));
    assert_eq!(prop["cost"], Value::Null);
    assert_eq!(prop["effects"][0]["from"], "2026-09-22T14:00:00Z");
    // Expiry in whole minutes (§5.1), and the hash is the §5.1 hash.
    let expires = prop["expires"].as_i64().unwrap();
    assert_eq!(expires % 60, 0);
    assert!(expires >= w.now() + 600 && expires < w.now() + 660);
    assert_eq!(
        prop["hash"],
        json!(parley_core::proposal::proposal_hash(prop).unwrap())
    );
    // INTENT changed nothing.
    assert_eq!(
        w.pg.cal_service.app().event("e1").unwrap().start,
        1_790_085_600
    );
}

#[tokio::test]
async fn small_budgets_elide_behind_handles_that_expand() {
    let w = World::start().await;
    let mut shop = w.shop().await;
    // A BRIEF loses whole trailing capabilities only (§8).
    let brief = shop.reply(req("HELLO", json!({"budget": 40}))).await;
    let caps = brief["capabilities"].as_array().unwrap();
    assert!(caps.len() < 4, "{brief}");
    let more = &brief["more"][0];
    assert_eq!(more["path"], "capabilities");
    let rest = shop
        .reply(req("EXPAND", json!({"handle": more["handle"]})))
        .await;
    assert_eq!(rest["kind"], "ANSWER");
    assert_eq!(
        caps.len() + rest["data"]["items"].as_array().unwrap().len(),
        4
    );

    // An ANSWER fits its budget; the rest is one EXPAND away.
    let a = shop
        .reply(req(
            "ASK",
            json!({"capability": "shop.search", "budget": 120}),
        ))
        .await;
    let lens = parley_core::lens::render_reply(&a);
    assert!(parley_core::estimate::est(&lens) <= 120, "{lens}");
    let more = &a["more"][0];
    assert_eq!(more["path"], "data");
    let shown = a["data"].as_array().unwrap().len();
    assert_eq!(more["remaining"], json!(20 - shown));
    let rest = shop
        .reply(req(
            "EXPAND",
            json!({"handle": more["handle"], "budget": 5000}),
        ))
        .await;
    assert_eq!(rest["data"]["items"].as_array().unwrap().len(), 20 - shown);
    assert_eq!(
        rest["data"]["items"][0]["sku"],
        format!("m{:02}", shown + 1)
    );
}
