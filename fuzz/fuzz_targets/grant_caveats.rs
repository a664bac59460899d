//! Arbitrary caveat JSON inside correctly signed grants, so evaluation (not
//! just signature checking) is reached. Input: a JSON list of caveats (one
//! root block), or `{"blocks":[[caveat…],…], "ctx":{…}, "reason":…}`.
//!
//! Asserts: a chain we signed verifies; a malformed caveat fails closed
//! (`forbidden`) on every request; a delegation never authorizes more than
//! its parent; `Ok` means every caveat passed; and custody's grant review
//! accepts only caveats that sign into a grant whose caveats are exactly the
//! ones shown.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::caveat::{Caveat, Verdict};
use parley_core::grant::{block_id, Decision, UnverifiedGrant};
use parley_core::{b64, canonical::canonical};
use parley_custody::review::review_grant;
use parley_fuzz::{
    agent, assert_review_safe, context_from, contexts, key, parse, principal, review_context, NOW,
};
use serde_json::{json, Map, Value};

fn rank(d: &Decision) -> u8 {
    match d {
        Decision::Ok => 3,
        Decision::ConsentRequired { .. } => 2,
        Decision::Forbidden { .. } => 1,
        Decision::Unauthorized { .. } => 0,
    }
}

/// Signs a chain: principal → key(2) → key(3) → key(4) …
fn sign_chain(blocks: &[Value]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut list = Vec::new();
    let mut prev_sig: Option<String> = None;
    for (i, caveats) in blocks.iter().enumerate() {
        let signer = if i == 0 {
            principal()
        } else {
            key(i as u8 + 1)
        };
        let sub = key(i as u8 + 2).public();
        let mut p = Map::new();
        if let Some(s) = &prev_sig {
            p.insert("prev".into(), Value::String(block_id(s)));
        } else {
            p.insert("iss".into(), Value::String(signer.public().to_string()));
            p.insert("nonce".into(), Value::String("n".into()));
        }
        p.insert("sub".into(), Value::String(sub.to_string()));
        p.insert("caveats".into(), caveats.clone());
        p.insert("iat".into(), json!(NOW - 10));
        let p = Value::Object(p);
        let signed = canonical(&p).ok()?;
        let sig = signer.sign(signed.as_bytes()).to_string();
        list.push(json!({"p": p, "s": sig}));
        prev_sig = Some(sig);
        out.push(format!(
            "pg1.{}",
            b64::encode(canonical(&Value::Array(list.clone())).ok()?)
        ));
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let Some(v) = parse(data, 12) else { return };
    let (blocks, ctx_json, reason) = match &v {
        Value::Array(_) => (vec![v.clone()], None, None),
        Value::Object(o) => match o.get("blocks").and_then(Value::as_array) {
            Some(b) if !b.is_empty() && b.len() <= 8 => (
                b.clone(),
                o.get("ctx"),
                o.get("reason").and_then(Value::as_str),
            ),
            _ => return,
        },
        _ => return,
    };
    let mut ctxs: Vec<_> = contexts().to_vec();
    ctxs.push(context_from(ctx_json));

    // Caveats one by one: parse never fails, well-formed ones round-trip,
    // malformed ones are a hard failure everywhere.
    for list in &blocks {
        for raw in list.as_array().into_iter().flatten() {
            let c = Caveat::parse(raw);
            let _ = c.describe();
            if c.is_well_formed() {
                assert_eq!(Caveat::parse(&c.to_value()), c);
            } else {
                assert_eq!(&c.to_value(), raw);
                for ctx in &ctxs {
                    assert!(matches!(c.check(ctx, "b"), Verdict::Hard(_)));
                }
            }
        }
    }

    // The signed chain, and each of its prefixes.
    if let Some(tokens) = sign_chain(&blocks) {
        let mut parent: Option<Vec<Decision>> = None;
        for token in &tokens {
            let Ok(g) = UnverifiedGrant::decode(token) else {
                // Only the size bounds may refuse what we signed.
                parent = None;
                continue;
            };
            let chain = g.verify_chain().expect("a chain signed correctly verifies");
            let holder = g.holder().parse().expect("holder");
            let v = g
                .verify(&[principal().public()], &holder)
                .expect("trusted root and holder");
            assert_eq!(v.block_ids(), chain.block_ids());
            let any_invalid = g
                .blocks()
                .iter()
                .any(|b| b.caveats().iter().any(|c| !c.is_well_formed()));
            let decisions: Vec<Decision> = ctxs.iter().map(|c| v.evaluate(c)).collect();
            for (i, d) in decisions.iter().enumerate() {
                if any_invalid {
                    assert!(matches!(d, Decision::Forbidden { .. }), "{d:?}");
                }
                if *d == Decision::Ok {
                    for (b, id) in g.blocks().iter().zip(v.block_ids()) {
                        for c in b.caveats() {
                            assert_eq!(c.check(&ctxs[i], id), Verdict::Pass);
                        }
                    }
                }
                if let Some(p) = &parent {
                    assert!(
                        rank(d) <= rank(&p[i]),
                        "a delegation authorizes more than its parent: {d:?} vs {:?}",
                        p[i]
                    );
                }
            }
            parent = Some(decisions);
        }
    }

    // Custody's grant review of the root caveats as an agent's request.
    let ctx = review_context(NOW);
    let agent_key = agent().public().to_string();
    if let Ok(r) = review_grant(&agent_key, &blocks[0], reason, None, &ctx) {
        assert_review_safe(r.review());
        assert!(r.caveats().iter().all(Caveat::is_well_formed));
        let exp = r.review().expires;
        assert!(exp > NOW && exp <= NOW + ctx.limits.max_grant_lifetime);
        let g = UnverifiedGrant::issue_root(principal(), r.agent(), r.caveats(), NOW, "n")
            .expect("a reviewed grant is signable");
        let shown: Vec<Value> = r.review().caveats.iter().map(|c| c.json.clone()).collect();
        let back = UnverifiedGrant::decode(&g.encode()).expect("decodes");
        let signed: Vec<Value> = back.blocks()[0]
            .caveats()
            .iter()
            .map(Caveat::to_value)
            .collect();
        assert_eq!(shown, signed, "the caveats shown are not the ones signed");
    }
});
