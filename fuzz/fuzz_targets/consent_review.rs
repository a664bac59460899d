//! The consent re-verification (ARCHITECTURE.md checklist 1–6): core
//! `consent::check`, custody `review_consent`, and `review_code` of the same
//! request carried in a `pc1.` code. Input: strict JSON
//! `{"consent":{…}, "proposal":{…}, "service":"…", "agent":"…", "now":int}`.
//!
//! Asserts: a consent passes only if it names exactly the proposal received
//! (recomputed hash, id, capability, service) and is unexpired; the caveats
//! are exactly the §6.6 five; the signed consent grant authorizes that one
//! COMMIT and nothing else; custody accepts only what core accepts, shows
//! the proposal's effects, and its review is display-safe; the code path
//! agrees with the object path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::consent::{self, consent_caveats, ConsentRequest};
use parley_core::grant::{authorize, Decision};
use parley_core::proposal::proposal_hash;
use parley_core::{b64, canonical::canonical};
use parley_custody::review::{review_code, review_consent};
use parley_fuzz::{agent, assert_review_safe, parse, principal, review_context, NOW};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some(v) = parse(data, 32) else { return };
    let empty = Value::Null;
    let consent_obj = v.get("consent").unwrap_or(&empty);
    let proposal = v.get("proposal").unwrap_or(&empty);
    let service = v
        .get("service")
        .and_then(Value::as_str)
        .unwrap_or("shop.example");
    let agent_key = v
        .get("agent")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| agent().public().to_string());
    let now = v.get("now").and_then(Value::as_i64).unwrap_or(NOW);

    // Core.
    let core = ConsentRequest::from_value(consent_obj)
        .and_then(|r| consent::check(r, proposal, service, now));
    if let Ok(c) = &core {
        let p = c.proposal();
        let req = c.request();
        assert_eq!(proposal_hash(proposal).as_deref(), Ok(p.hash.as_str()));
        assert_eq!(req.hash, p.hash);
        assert_eq!(req.proposal, p.id);
        assert_eq!(req.capability, p.capability);
        assert_eq!(req.service, service);
        assert!(!p.capability.contains('*') && !p.capability.is_empty());
        assert_eq!(c.exp(), req.expires.min(p.expires));
        assert!(c.exp() > now);
        assert_eq!(
            c.caveats(),
            consent_caveats(service, &p.capability, &p.hash, c.exp())
        );
        if req.principal == principal().public() {
            let g = consent::issue_consent(principal(), &agent().public(), c, now, "n")
                .expect("a checked consent is signable");
            let token = g.encode();
            let trusted = [principal().public()];
            let holder = agent().public();
            let facts = CommitFacts {
                hash: p.hash.clone(),
                cost: p.cost.clone(),
                risk: p.risk.as_str().into(),
                ..Default::default()
            };
            let ctx = |svc: &str, verb: &str, cap: &str, hash: &str| RequestContext {
                service: svc.into(),
                verb: verb.into(),
                capability: cap.into(),
                now,
                proposal: Some(CommitFacts {
                    hash: hash.into(),
                    ..facts.clone()
                }),
                ..Default::default()
            };
            let ok = authorize(
                &token,
                &trusted,
                &holder,
                &ctx(service, "COMMIT", &p.capability, &p.hash),
            );
            assert_eq!(
                ok,
                Decision::Ok,
                "the consent grant does not authorize its COMMIT"
            );
            for other in [
                ctx(&format!("{service}x"), "COMMIT", &p.capability, &p.hash),
                ctx(service, "UNDO", &p.capability, &p.hash),
                ctx(service, "ASK", &p.capability, &p.hash),
                ctx(service, "COMMIT", &format!("{}x", p.capability), &p.hash),
                ctx(service, "COMMIT", &p.capability, "another"),
            ] {
                let d = authorize(&token, &trusted, &holder, &other);
                assert_ne!(d, Decision::Ok, "the consent grant authorizes {other:?}");
            }
        }
    }

    // Custody, object path.
    let ctx = review_context(now);
    let custody = review_consent(consent_obj, proposal, service, &agent_key, &ctx);
    if let Ok(r) = &custody {
        let c = core.as_ref().expect("custody accepted what core refuses");
        assert_eq!(r.review().hash, c.proposal().hash);
        assert_eq!(r.review().effects.len(), c.proposal().effects.len());
        assert_eq!(r.review().expires, c.exp());
        assert!(ctx.principals.contains(&c.request().principal));
        assert_review_safe(r.review());
    }

    // Custody, code path: the same consent with the proposal as `detail`.
    if let (Value::Object(cons), Value::Object(_)) = (consent_obj, proposal) {
        let mut body = cons.clone();
        body.insert("detail".into(), proposal.clone());
        if let Ok(text) = canonical(&Value::Object(body)) {
            let code = format!("pc1.{}", b64::encode(text));
            let via_code = review_code(&code, &agent_key, &ctx);
            if let Ok(r) = &via_code {
                let svc = cons
                    .get("service")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                assert!(
                    core.is_ok() || svc != service || proposal.get("hash").is_none(),
                    "the code path accepted what the object path refuses"
                );
                assert_review_safe(r.review());
            }
            if custody.is_ok() {
                assert!(
                    via_code.is_ok(),
                    "the code path refused {:?}",
                    via_code.err()
                );
            }
        }
    }
});
