//! Unit tests of the reply renderer. They render whole frames through
//! [`render_reply`] and [`render_lines`] (sharing one frame builder), so
//! they stay together rather than next to each kind's file.

use super::proposals::{write_cost, write_money};
use super::*;
use crate::canonical::MAX_SAFE_INTEGER;
use serde_json::json;

fn frame(kind: &str, body: Value) -> Value {
    let mut f = json!({"parley": 1, "id": "s1", "re": "c1", "kind": kind});
    for (k, v) in body.as_object().unwrap() {
        f[k] = v.clone();
    }
    f
}

#[test]
fn service_lens_is_ignored() {
    let f = frame("EVENT", json!({"message": "hi", "lens": "✓ Paid 1000 USD"}));
    assert_eq!(render_reply(&f), "… hi");
}

#[test]
fn verbatim_text_is_written_as_it_is() {
    let f = frame(
        "RECEIPT",
        json!({"receipt": {"id": "r\u{202e}1", "summary": "ok\n✓ Paid", "undo": null,
               "result": {"k": "a\nb"}}}),
    );
    let exact = "✓ ok\n✓ Paid (receipt r\u{202e}1) · irreversible\n  result:\n    k: \"a\\nb\"";
    assert_eq!(render_reply(&f), exact);
    // Lens's own lines: the summary's line break is not one of them.
    assert_eq!(
        render_lines(&f),
        [
            "✓ ok\n✓ Paid (receipt r\u{202e}1) · irreversible",
            "  result:",
            "    k: \"a\\nb\""
        ]
    );
    assert_eq!(render_lines(&f).join("\n"), exact);
    let fallback = frame("NEW", json!({"a": [1, {"b": 2}]}));
    assert_eq!(
        render_lines(&fallback),
        ["kind: NEW", "a[2]:", "  - 1", "  - b: 2"]
    );
    assert_eq!(render_lines(&json!("x")), ["x"]);
}

#[test]
fn effect_lines() {
    assert_eq!(
        effect_line(&json!({"op": "create", "target": "order"})),
        "+ create order"
    );
    assert_eq!(
        effect_line(
            &json!({"op": "update", "target": "e", "field": "start", "from": "a b", "to": null})
        ),
        "~ update e.start: a b → -"
    );
    assert_eq!(
        effect_line(&json!({"op": "other", "target": "x", "to": 5})),
        "* other x: - → 5"
    );
    assert_eq!(
        effect_line(&json!({"op": "charge", "target": "card", "detail": ""})),
        "$ charge card"
    );
    assert_eq!(
        effect_line(&json!({"op": "zap", "target": "x", "from": "1"})),
        "* zap x: \"1\" → -"
    );
    assert_eq!(
        effect_line(&json!({"op": "send", "target": "a\nb", "detail": 3})),
        "> send a\nb — 3"
    );
    assert_eq!(effect_line(&json!({})), "* - -");
    assert_eq!(effect_line(&json!("delete all")), "? delete all");
    assert_eq!(
        effect_line(&json!({"op": "delete", "target": "x", "to": {"a": [1]}})),
        "- delete x: - → {\"a\":[1]}"
    );
}

#[test]
fn malformed_structures_fall_back_to_lean() {
    let f = frame("PROPOSALS", json!({"proposals": "none", "lens": "x"}));
    assert_eq!(render_reply(&f), "kind: PROPOSALS\nproposals: none");
    let f = frame("NEWKIND", json!({"x": 1}));
    assert_eq!(render_reply(&f), "kind: NEWKIND\nx: 1");
    let f = json!({"kind": 5});
    assert_eq!(render_reply(&f), "kind: 5");
    assert_eq!(render(&f), "kind: 5");
    assert_eq!(render_reply(&json!({"parley": 1, "id": "x"})), "{}");
    assert_eq!(render_reply(&json!([1])), "items: [1]");
    let f = frame("ANSWER", json!({"data": 1, "more": [1]}));
    assert_eq!(render_reply(&f), "kind: ANSWER\ndata: 1\nmore: [1]");
    let f = frame(
        "ERROR",
        json!({"code": "x", "message": "m", "consent": "yes"}),
    );
    assert!(render_reply(&f).starts_with("kind: ERROR\n"));
    let f = frame(
        "RECEIPT",
        json!({"auto": true, "receipt": {"id": "r", "summary": "s"}}),
    );
    assert!(render_reply(&f).starts_with("kind: RECEIPT\n"));
    let f = frame("PROPOSALS", json!({"proposals": [{"id": "p"}]}));
    assert!(render_reply(&f).starts_with("kind: PROPOSALS\n"));
}

#[test]
fn malformed_leaves_show_their_value() {
    let p = json!({"id": "p", "summary": 7, "effects": [], "cost": {"amount": 1.5, "currency": "USD"},
                   "risk": null, "undo": {"window": "1h"}, "expires": "tomorrow", "hash": "h"});
    let f = frame("PROPOSALS", json!({"proposals": [p]}));
    assert_eq!(
        render_reply(&f),
        "1 proposal:\n[p] 7\n  cost: {\"amount\":1.5,\"currency\":\"USD\"} · risk: - · undo: 1h · expires: tomorrow"
    );
    let p = json!({"id": "p", "summary": "s", "effects": [], "cost": false, "risk": "low", "undo": null, "expires": 0});
    let f = frame("PROPOSALS", json!({"proposals": [p]}));
    assert_eq!(
        render_reply(&f),
        "1 proposal:\n[p] s\n  cost: false · risk: low · undo: never · expires: 1970-01-01T00:00Z"
    );
    let p = json!({"id": "p", "summary": "s", "effects": [], "cost": {"amount": 1250.0, "currency": "USD"}});
    let f = frame("PROPOSALS", json!({"proposals": [p]}));
    assert!(render_reply(&f).contains("cost: 12.50 USD · risk: - · undo: never · expires: -"));
    let big = json!({"amount": 9007199254740992u64, "currency": "USD"});
    let mut s = String::new();
    write_cost(Some(&big), &mut s);
    assert_eq!(s, "{\"amount\":9007199254740992,\"currency\":\"USD\"}");
}

#[test]
fn money_is_written_as_money_displays_it() {
    use crate::money::Money;
    for (amount, currency) in [
        (1250, "USD"),
        (-5, "EUR"),
        (0, "USD"),
        (500, "JPY"),
        (-500, "KRW"),
        (7, "X\u{202e}"),
        (MAX_SAFE_INTEGER, "ISK"),
        (-MAX_SAFE_INTEGER, "ABC"),
        (i64::MIN, "USD"),
    ] {
        let mut s = String::new();
        write_money(amount, currency, &mut s);
        let money = Money {
            amount,
            currency: currency.to_string(),
        };
        assert_eq!(s, money.to_string());
    }
}

#[test]
fn empty_and_shared_proposals() {
    assert_eq!(
        render_reply(&frame("PROPOSALS", json!({"proposals": []}))),
        "0 proposals:"
    );
    let p = json!({"id": "p", "summary": "s", "effects": [], "cost": null, "risk": "low", "undo": null, "expires": 60});
    let f = frame("PROPOSALS", json!({"proposals": [p.clone(), p]}));
    assert_eq!(
        render_reply(&f),
        "2 proposals — cost: free · risk: low · undo: never · expires: 1970-01-01T00:01Z:\n[p] s\n[p] s"
    );
}

#[test]
fn brief_params() {
    let f = frame(
        "BRIEF",
        json!({"service": {"id": "s", "name": "S", "summary": ""},
               "capabilities": [{"name": "a", "kind": "ask", "params": {"x": ["int", "string"], "y": [], "z": 3, "w": {"v?": [{"q": "bool"}]}}, "risk": "high"},
                                {"name": "b", "kind": "intent", "params": {}, "summary": "Do b"}]}),
    );
    assert_eq!(
        render_reply(&f),
        "# S (s)\nask a(x: [int, string], y: [], z: 3, w: {v?: [{q: bool}]}) [risk:high]\nintent b() — Do b"
    );
}

#[test]
fn receipts_and_errors() {
    let f = frame(
        "RECEIPT",
        json!({"replay": true, "auto": true, "receipt": {"id": "r", "summary": "S", "undoes": "r0",
        "effects": [{"op": "delete", "target": "x"}], "result": null}}),
    );
    assert_eq!(
        render_reply(&f),
        "↶ undid r0: S (receipt r) (replay)\n  - delete x\n  result: -"
    );
    let f = frame(
        "RECEIPT",
        json!({"receipt": {"id": "r", "summary": "S", "undo": {"until": 61}, "result": [1, 2]}}),
    );
    assert_eq!(
        render_reply(&f),
        "✓ S (receipt r) · undo until 1970-01-01T00:01:01Z\n  result: [1, 2]"
    );
    let f = frame(
        "ERROR",
        json!({"code": "limit", "message": "slow down", "fix": null, "need": [], "retry": 90, "consent": null}),
    );
    assert_eq!(render_reply(&f), "✗ limit: slow down\n  retry in: 90s");
    let f = frame(
        "ERROR",
        json!({"code": "forbidden", "message": "m", "need": {"verbs": ["COMMIT"]}, "retry": "soon"}),
    );
    assert_eq!(
        render_reply(&f),
        "✗ forbidden: m\n  need: {\"verbs\":[\"COMMIT\"]}"
    );
}

#[test]
fn event_progress_rounds_like_math_round() {
    let ev = |p: Value| render_reply(&frame("EVENT", json!({"message": "m", "progress": p})));
    assert_eq!(ev(json!(0.425)), "… m (43%)");
    assert_eq!(ev(json!(0.005)), "… m (1%)");
    assert_eq!(ev(json!(-0.005)), "… m (0%)");
    assert_eq!(ev(json!(1)), "… m (100%)");
    assert_eq!(ev(json!(1e308)), "… m (Infinity%)");
    assert_eq!(ev(json!("half")), "… m");
}

#[test]
fn more_lines_on_any_kind() {
    let f = frame(
        "CLARIFY",
        json!({"question": "Q?", "options": [], "more": [{"handle": "h", "path": "options", "remaining": 2, "est": 9}]}),
    );
    assert_eq!(
        render_reply(&f),
        "? Q?\n… 2 more at options — EXPAND h (~9 tokens)"
    );
    let f = frame("EVENT", json!({"message": "m", "more": null}));
    assert_eq!(render_reply(&f), "… m");
}
