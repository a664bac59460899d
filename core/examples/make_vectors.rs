//! Writes this project's own conformance vectors (`conformance/*.json` that
//! are not in `SOURCE.md`). The expected outcomes below are written by hand
//! from the spec, not computed by the evaluator, so the vectors test it.
//!
//! Run: `cargo run -p parley-core --example make_vectors -- conformance/`

use parley_core::b64;
use parley_core::caveat::Caveat;
use parley_core::code;
use parley_core::consent::ConsentRequest;
use parley_core::grant::UnverifiedGrant;
use parley_core::money::Money;
use parley_core::proposal::proposal_hash;
use parley_core::{PublicKey, SecretKey};
use serde_json::{json, Value};
use std::path::Path;

const P: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE";
const A: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI";
const S: &str = "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM";
const M: &str = "BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ";
const NOW: i64 = 1_790_000_000;

fn key(seed: &str) -> SecretKey {
    SecretKey::from_seed_b64(seed).expect("seed")
}

fn usd(amount: i64) -> Money {
    Money {
        amount,
        currency: "USD".into(),
    }
}

fn case(name: &str, token: &str, proof_key: &PublicKey, ctx: Value, expect: &str) -> Value {
    let expect = if expect == "ok" {
        json!({"ok": true})
    } else {
        json!({"ok": false, "code": expect})
    };
    json!({"name": name, "token": token, "trusted": [key(P).public().to_string()],
           "proofKey": proof_key.to_string(), "ctx": ctx, "expect": expect})
}

fn ctx(service: &str, verb: &str, cap: &str) -> Value {
    json!({"service": service, "verb": verb, "capability": cap, "now": NOW})
}

fn commit(cap: &str, amount: i64, risk: &str) -> Value {
    json!({"service": "shop.example", "verb": "COMMIT", "capability": cap, "now": NOW,
           "proposal": {"hash": "HASH_X", "cost": {"amount": amount, "currency": "USD"}, "risk": risk}})
}

fn grants() -> Value {
    let (p, a, s, m) = (key(P), key(A), key(S), key(M));
    let root = UnverifiedGrant::issue_root(
        &p,
        &a.public(),
        &[
            Caveat::Svc(vec!["shop.example".into(), "cal.example".into()]),
            Caveat::Can(vec!["shop.*".into(), "calendar.*".into()]),
            Caveat::Exp(NOW + 3600),
            Caveat::Spend(usd(5000)),
            Caveat::Per(usd(3000)),
        ],
        NOW - 100,
        "v1",
    )
    .unwrap();
    let sub = root
        .delegate(
            &a,
            &s.public(),
            &[
                Caveat::Svc(vec!["shop.example".into()]),
                Caveat::Can(vec!["*".into()]),
                Caveat::Spend(usd(1000)),
                Caveat::Exp(NOW + 60),
            ],
            NOW - 50,
        )
        .unwrap();
    let third = sub
        .delegate(
            &s,
            &m.public(),
            &[Caveat::Verbs(vec!["ASK".into()])],
            NOW - 10,
        )
        .unwrap();
    let not_yet = root
        .delegate(&a, &s.public(), &[Caveat::Nbf(NOW + 10)], NOW - 50)
        .unwrap();
    let sub_block = sub.blocks()[1].id();

    // A chain whose middle block is dropped: block 2's prev no longer matches.
    let mut list: Vec<Value> =
        serde_json::from_slice(&b64::decode(third.encode().strip_prefix("pg1.").unwrap()).unwrap())
            .unwrap();
    list.remove(1);
    let dropped = format!("pg1.{}", b64::encode(serde_json::to_string(&list).unwrap()));
    // The last block re-signed by someone who is not the previous holder.
    let forged_tail = {
        let mut list: Vec<Value> = serde_json::from_slice(
            &b64::decode(third.encode().strip_prefix("pg1.").unwrap()).unwrap(),
        )
        .unwrap();
        let payload = list[2]["p"].clone();
        let sig = m.sign(
            parley_core::canonical::canonical(&payload)
                .unwrap()
                .as_bytes(),
        );
        list[2]["s"] = json!(sig.to_string());
        format!("pg1.{}", b64::encode(serde_json::to_string(&list).unwrap()))
    };
    let raw = |s: &str| format!("pg1.{}", b64::encode(s));
    let root_json =
        String::from_utf8(b64::decode(root.encode().strip_prefix("pg1.").unwrap()).unwrap())
            .unwrap();
    let dup_key = root_json.replacen("\"iat\":", "\"iat\":1,\"iat\":", 1);
    let float_iat = root_json.replacen(
        &format!("\"iat\":{}", NOW - 100),
        &format!("\"iat\":{}.5", NOW - 100),
        1,
    );
    let extra_field = root_json.replacen("{\"p\":", "{\"x\":1,\"p\":", 1);
    let t = root.encode();

    let mut spent = commit("shop.order", 500, "low");
    spent["spent"] = json!({ sub_block.clone(): 600 });
    let cases = vec![
        case(
            "narrowing: sub-agent keeps what both blocks allow",
            &sub.encode(),
            &s.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "ok",
        ),
        case(
            "narrowing: sub-agent loses a service the parent allowed",
            &sub.encode(),
            &s.public(),
            ctx("cal.example", "ASK", "calendar.find"),
            "forbidden",
        ),
        case(
            "narrowing: a wider can in the delegation does not widen",
            &sub.encode(),
            &s.public(),
            ctx("shop.example", "ASK", "bank.transfer"),
            "forbidden",
        ),
        case(
            "narrowing: the earlier exp of the delegation wins",
            &sub.encode(),
            &s.public(),
            json!({"service": "shop.example", "verb": "ASK", "capability": "shop.search", "now": NOW + 60}),
            "forbidden",
        ),
        case(
            "narrowing: the parent still works where the delegation expired",
            &root.encode(),
            &a.public(),
            json!({"service": "shop.example", "verb": "ASK", "capability": "shop.search", "now": NOW + 60}),
            "ok",
        ),
        case(
            "narrowing: the delegation's smaller spend asks for consent",
            &sub.encode(),
            &s.public(),
            commit("shop.order", 2000, "low"),
            "consent_required",
        ),
        case(
            "narrowing: spend is counted per block id",
            &sub.encode(),
            &s.public(),
            spent,
            "consent_required",
        ),
        case(
            "narrowing: nbf in the future",
            &not_yet.encode(),
            &s.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "forbidden",
        ),
        case(
            "three blocks: ok",
            &third.encode(),
            &m.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "ok",
        ),
        case(
            "three blocks: verbs narrowed",
            &third.encode(),
            &m.public(),
            ctx("shop.example", "INTENT", "shop.order"),
            "forbidden",
        ),
        case(
            "three blocks: the middle holder cannot use the final grant",
            &third.encode(),
            &s.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "three blocks: a dropped middle block breaks the chain",
            &dropped,
            &m.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "three blocks: a tail signed by the new holder itself",
            &forged_tail,
            &m.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: truncated token",
            &t[..t.len() - 7],
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: wrong prefix",
            &t.replacen("pg1.", "pg2.", 1),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: padded base64",
            &format!("{t}="),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: not a list",
            &raw("{\"p\":{},\"s\":\"\"}"),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: empty chain",
            &raw("[]"),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: duplicate key in a payload",
            &raw(&dup_key),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: float iat",
            &raw(&float_iat),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: extra field in a block",
            &raw(&extra_field),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: deep nesting",
            &raw(&("[".repeat(5000) + &"]".repeat(5000))),
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
        case(
            "malformed: empty token",
            "",
            &a.public(),
            ctx("shop.example", "ASK", "shop.search"),
            "unauthorized",
        ),
    ];
    json!({"seeds": {"principal": P, "agent": A, "subagent": S, "mallory": M}, "cases": cases})
}

fn proposal() -> Value {
    let mut p = json!({
        "id": "p_ord1", "capability": "shop.order", "summary": "Order 3 items",
        "effects": [
            {"op": "create", "target": "order"},
            {"op": "charge", "target": "card ••42", "detail": "71.36 USD"}
        ],
        "cost": {"amount": 7136, "currency": "USD"}, "risk": "medium",
        "undo": {"window": 1800}, "expires": NOW + 600
    });
    p["hash"] = json!(proposal_hash(&p).unwrap());
    p["data"] = json!({"eta": "tomorrow"});
    p
}

fn consent_for(p: &Value) -> Value {
    json!({"proposal": p["id"], "hash": p["hash"], "service": "shop.example",
           "capability": p["capability"], "principal": key(P).public().to_string(),
           "summary": p["summary"], "expires": p["expires"]})
}

fn consents() -> Value {
    let p = proposal();
    let c = consent_for(&p);
    let ok_caveats = |exp: i64| json!([{"svc": ["shop.example"]}, {"verbs": ["COMMIT"]}, {"can": ["shop.order"]}, {"only": p["hash"]}, {"exp": exp}]);
    let with = |f: &dyn Fn(&mut Value, &mut Value)| {
        let (mut c, mut p) = (c.clone(), p.clone());
        f(&mut c, &mut p);
        (c, p)
    };
    let case = |name: &str, (c, p): (Value, Value), service: &str, now: i64, expect: Value| json!({"name": name, "consent": c, "proposal": p, "service": service, "now": now, "expect": expect});
    let err = |e: &str| json!({"ok": false, "error": e});
    let rehash = |p: &mut Value| {
        let h = proposal_hash(p).unwrap();
        p["hash"] = json!(h);
    };
    let cases = vec![
        case(
            "matching consent",
            (c.clone(), p.clone()),
            "shop.example",
            NOW,
            json!({"ok": true, "caveats": ok_caveats(NOW + 600)}),
        ),
        case(
            "consent expires before the proposal: exp is the earlier",
            with(&|c, _| c["expires"] = json!(NOW + 60)),
            "shop.example",
            NOW,
            json!({"ok": true, "caveats": ok_caveats(NOW + 60)}),
        ),
        case(
            "friendly summary in the consent only: still bound to the real proposal",
            with(&|c, _| c["summary"] = json!("Free sample")),
            "shop.example",
            NOW,
            json!({"ok": true, "caveats": ok_caveats(NOW + 600)}),
        ),
        case(
            "data is not hashed and does not matter",
            with(&|_, p| p["data"] = json!({"note": 1.5})),
            "shop.example",
            NOW,
            json!({"ok": true, "caveats": ok_caveats(NOW + 600)}),
        ),
        case(
            "consent for another hash",
            with(&|c, _| c["hash"] = json!("3YBSE3lWje0kWnzf3PaGMr3CI3aoO1qdYRLxUkmOJVU")),
            "shop.example",
            NOW,
            err("hash_mismatch"),
        ),
        case(
            "consent for another proposal id",
            with(&|c, _| c["proposal"] = json!("p_other")),
            "shop.example",
            NOW,
            err("proposal_id_mismatch"),
        ),
        case(
            "consent for another capability",
            with(&|c, _| c["capability"] = json!("bank.transfer")),
            "shop.example",
            NOW,
            err("capability_mismatch"),
        ),
        case(
            "consent for another service",
            with(&|c, _| c["service"] = json!("evil.example")),
            "shop.example",
            NOW,
            err("service_mismatch"),
        ),
        case(
            "agent talked to another service",
            (c.clone(), p.clone()),
            "shop.example.evil",
            NOW,
            err("service_mismatch"),
        ),
        case(
            "proposal content changed after hashing",
            with(&|_, p| p["cost"]["amount"] = json!(136)),
            "shop.example",
            NOW,
            err("proposal_hash"),
        ),
        case(
            "proposal with an effect hidden behind a stale hash",
            with(&|_, p| {
                p["effects"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"op": "send", "target": "attacker@example"}))
            }),
            "shop.example",
            NOW,
            err("proposal_hash"),
        ),
        case(
            "float in a hashed field",
            with(&|_, p| p["cost"]["amount"] = json!(71.36)),
            "shop.example",
            NOW,
            err("proposal_malformed"),
        ),
        case(
            "unknown hashed field the review cannot show",
            with(&|c, p| {
                p["fine_print"] = json!("also subscribe");
                rehash(p);
                c["hash"] = p["hash"].clone();
            }),
            "shop.example",
            NOW,
            err("proposal_malformed"),
        ),
        case(
            "effect op outside the enum",
            with(&|c, p| {
                p["effects"][0]["op"] = json!("transfer");
                rehash(p);
                c["hash"] = p["hash"].clone();
            }),
            "shop.example",
            NOW,
            err("proposal_malformed"),
        ),
        case(
            "wildcard capability would widen the grant",
            with(&|c, p| {
                p["capability"] = json!("shop.*");
                rehash(p);
                c["hash"] = p["hash"].clone();
                c["capability"] = json!("shop.*");
            }),
            "shop.example",
            NOW,
            err("unscopable"),
        ),
        case(
            "expired proposal",
            (c.clone(), p.clone()),
            "shop.example",
            NOW + 600,
            err("expired"),
        ),
        case(
            "expired consent request",
            with(&|c, _| c["expires"] = json!(NOW - 1)),
            "shop.example",
            NOW,
            err("expired"),
        ),
        case(
            "principal is not a key",
            with(&|c, _| c["principal"] = json!("alice")),
            "shop.example",
            NOW,
            err("malformed"),
        ),
        case(
            "expires is not an integer",
            with(&|c, _| c["expires"] = json!("soon")),
            "shop.example",
            NOW,
            err("malformed"),
        ),
    ];
    json!(cases)
}

fn codes() -> Value {
    let p = proposal();
    let c = ConsentRequest::from_value(&consent_for(&p)).unwrap();
    let full = code::encode(&c, Some(&p)).unwrap();
    let bare = code::encode(&c, None).unwrap();
    let raw = |s: &str| format!("pc1.{}", b64::encode(s));
    // A base64url text of length 4k+1 can never be valid.
    let mut cut = bare.len() - 10;
    while (cut - 4) % 4 != 1 {
        cut -= 1;
    }
    let mut no_service = consent_for(&p);
    no_service.as_object_mut().unwrap().remove("service");
    let mut soon = consent_for(&p);
    soon["expires"] = json!("soon");
    let mut detail_str = consent_for(&p);
    detail_str["detail"] = json!("p_ord1");
    let mut detail_no_data = p.clone();
    detail_no_data.as_object_mut().unwrap().remove("data");
    let ok = |detail: Option<Value>| {
        let mut e = json!({"ok": true, "consent": consent_for(&p)});
        if let Some(d) = detail {
            e["detail"] = d;
        }
        e
    };
    let err = |e: &str| json!({"ok": false, "error": e});
    let case = |name: &str, code: &str, expect: Value| json!({"name": name, "code": code, "expect": expect});
    json!([
        case(
            "code with the proposal (data stripped)",
            &full,
            ok(Some(detail_no_data))
        ),
        case("code without detail", &bare, ok(None)),
        case(
            "surrounding whitespace is ignored",
            &format!("  {bare}\n"),
            ok(None)
        ),
        case(
            "wrong prefix",
            &bare.replacen("pc1.", "pc2.", 1),
            err("prefix")
        ),
        case("not base64url", "pc1.!!", err("encoding")),
        case("truncated", &bare[..cut], err("encoding")),
        case("not JSON", &raw("consent please"), err("json")),
        case(
            "duplicate keys",
            &raw(r#"{"hash":"a","hash":"b"}"#),
            err("json")
        ),
        case(
            "expires is not an integer",
            &raw(&serde_json::to_string(&soon).unwrap()),
            err("consent")
        ),
        case(
            "service missing",
            &raw(&serde_json::to_string(&no_service).unwrap()),
            err("consent")
        ),
        case(
            "detail is not an object",
            &raw(&serde_json::to_string(&detail_str).unwrap()),
            err("detail")
        ),
        case("a list instead of an object", &raw("[1,2]"), err("consent")),
    ])
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "conformance".into());
    let dir = Path::new(&dir);
    let write = |name: &str, v: Value| {
        let text = serde_json::to_string_pretty(&v).unwrap() + "\n";
        std::fs::write(dir.join(name), text).unwrap();
        println!("wrote {}", dir.join(name).display());
    };
    write("grants-narrowing.json", grants());
    write("consent.json", consents());
    write("codes.json", codes());
}
