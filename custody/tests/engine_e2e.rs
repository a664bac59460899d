//! The custody engine end to end: a real gnome-keyring (private D-Bus
//! session), a real Unix socket, a real SQLite audit file, the scripted
//! approver in place of the human. The returned consent grants are checked
//! with parley-core: they authorize exactly the COMMIT that was shown.

mod support;

use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::grant::{authorize, Decision, UnverifiedGrant};
use parley_custody::approver::Verdict;
use parley_custody::approver::{Gesture, Yes};
use parley_custody::audit::{Audit, EventKind, Query};
use parley_custody::engine::{unix_now, DecideError, EngineConfig};
use parley_custody::review::FormGrant;
use serde_json::{json, Value};
use std::time::Duration;
use support::agent::Agent;
use support::custody::{no_step_up, Keys, TestCustody};
use support::requests::{agent_key, consent_req, rehash};
use support::{in_session, rt_per_core, Session};

async fn start(config: EngineConfig) -> TestCustody {
    let mut c = TestCustody::start(Keys::Keychain, config).await;
    c.serve();
    c
}

fn proposal(id: &str, amount: i64, expires_in: i64, risk: &str) -> Value {
    let mut p = json!({
        "id": id, "capability": "shop.order", "summary": "Order 3 items",
        "effects": [
            {"op": "create", "target": "order"},
            {"op": "charge", "target": "card ••42", "detail": format!("{}.{:02} USD", amount / 100, amount % 100)}
        ],
        "cost": {"amount": amount, "currency": "USD"}, "risk": risk,
        "undo": {"window": 1800}, "expires": unix_now() + expires_in
    });
    rehash(&mut p);
    p
}

fn commit_ctx(p: &Value, service: &str, capability: &str, verb: &str, now: i64) -> RequestContext {
    RequestContext {
        service: service.into(),
        verb: verb.into(),
        capability: capability.into(),
        now,
        proposal: Some(CommitFacts {
            hash: p["hash"].as_str().unwrap().into(),
            cost: Some(parley_core::money::Money {
                amount: p["cost"]["amount"].as_i64().unwrap(),
                currency: "USD".into(),
            }),
            risk: p["risk"].as_str().unwrap().into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn approved_consent_authorizes_exactly_that_commit_and_nothing_else() {
    if !in_session(
        "approved_consent_authorizes_exactly_that_commit_and_nothing_else",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start(no_step_up()).await;
        let mut agent = Agent::connect(&c.socket).await;
        let p = proposal("p_1", 7136, 600, "medium");
        agent.send(consent_req("c1", &c.principal, &p)).await;
        let pending = agent.recv().await;
        assert_eq!(pending["kind"], "PENDING");
        assert_eq!(pending["request"], "c1");

        // What the human sees comes from the proposal itself.
        let shown = c.shown.recv().await.unwrap();
        let r = &shown.review;
        assert_eq!(
            (
                r.service.as_str(),
                r.capability.as_str(),
                r.cost.as_str(),
                r.risk.as_str()
            ),
            ("shop.example", "shop.order", "71.36 USD", "medium")
        );
        assert_eq!(r.undo, "30m");
        assert_eq!(
            r.effects
                .iter()
                .map(|e| e.line.as_str())
                .collect::<Vec<_>>(),
            ["+ create order", "$ charge card ••42 — 71.36 USD"]
        );
        assert_eq!(r.requester.uid, nix::unistd::getuid().as_raw());
        assert_eq!(r.requester.pid, Some(std::process::id()));
        assert_eq!(r.hash, p["hash"].as_str().unwrap());
        assert!(!r.agent.known, "never granted to before");

        c.engine
            .decide(&shown.id, Verdict::Approve(YES))
            .await
            .unwrap();
        let fin = agent.final_for("c1").await;
        assert_eq!(fin["kind"], "APPROVED", "{fin}");
        let token = fin["grant"].as_str().unwrap();

        let now = unix_now();
        let trust = [c.principal.clone()];
        let me = agent_key();
        let ok = |ctx: &RequestContext| authorize(token, &trust, &me, ctx);
        assert_eq!(
            ok(&commit_ctx(&p, "shop.example", "shop.order", "COMMIT", now)),
            Decision::Ok
        );
        for (what, ctx) in [
            (
                "another service",
                commit_ctx(&p, "evil.example", "shop.order", "COMMIT", now),
            ),
            (
                "another capability",
                commit_ctx(&p, "shop.example", "shop.refund", "COMMIT", now),
            ),
            (
                "UNDO",
                commit_ctx(&p, "shop.example", "shop.order", "UNDO", now),
            ),
            (
                "ASK",
                commit_ctx(&p, "shop.example", "shop.order", "ASK", now),
            ),
            (
                "after exp",
                commit_ctx(
                    &p,
                    "shop.example",
                    "shop.order",
                    "COMMIT",
                    p["expires"].as_i64().unwrap(),
                ),
            ),
        ] {
            assert!(matches!(ok(&ctx), Decision::Forbidden { .. }), "{what}");
        }
        let mut other = commit_ctx(&p, "shop.example", "shop.order", "COMMIT", now);
        other.proposal.as_mut().unwrap().hash =
            "3YBSE3lWje0kWnzf3PaGMr3CI3aoO1qdYRLxUkmOJVU".into();
        assert!(
            matches!(ok(&other), Decision::Forbidden { .. }),
            "another hash"
        );
        let g = UnverifiedGrant::decode(token).unwrap();
        assert_eq!(g.blocks()[0].caveats().len(), 5);

        // Idempotent: asking again returns the same token, with no new prompt.
        agent.send(consent_req("c2", &c.principal, &p)).await;
        let again = agent.final_for("c2").await;
        assert_eq!(again["grant"], fin["grant"]);
        assert!(c.shown.try_recv().is_err(), "no second prompt");

        // The audit log has the approval, chained and verifiable.
        let audit = Audit::open(&c.audit_path).unwrap();
        let rows = audit
            .query(&Query {
                kinds: vec![EventKind::ConsentApproved],
                ..Default::default()
            })
            .unwrap();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.hash.as_deref(), p["hash"].as_str());
        assert_eq!(row.cost_amount, Some(7136));
        assert_eq!(row.token_id.as_deref(), Some(g.id().as_str()));
        assert_eq!(row.peer_uid, Some(nix::unistd::getuid().as_raw()));
        assert!(audit.verify().unwrap().ok);
        let live = audit
            .query(&Query {
                live_at: Some(now),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(live.len(), 1);
    });
}

/// A YEA v1 proposal: `uses` (spend and emails) instead of `cost`.
fn yea_proposal(id: &str, uses: Value) -> Value {
    let mut p = json!({
        "id": id, "capability": "shop.order", "summary": "Order 3 items",
        "effects": [
            {"op": "create", "target": "order"},
            {"op": "send", "target": "ana@example.com", "detail": "receipt"}
        ],
        "uses": uses, "risk": "medium",
        "undo": {"window": 1800}, "expires": unix_now() + 600
    });
    rehash(&mut p);
    p
}

#[test]
fn a_yea_consent_is_reviewed_with_every_measure_and_authorizes_that_commit_under_yea() {
    if !in_session(
        "a_yea_consent_is_reviewed_with_every_measure_and_authorizes_that_commit_under_yea",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start(no_step_up()).await;
        let mut agent = Agent::connect(&c.socket).await;
        let uses =
            json!({"spend": {"amount": 2287, "scale": 2, "unit": "USD"}, "emails": {"amount": 1}});
        let p = yea_proposal("p_y", uses.clone());
        // Without the dialect, the YEA proposal is refused with the fix.
        agent.send(consent_req("y0", &c.principal, &p)).await;
        let fin = agent.final_for("y0").await;
        assert_eq!(
            (fin["kind"].as_str(), fin["code"].as_str()),
            (Some("REJECTED"), Some("dialect")),
            "{fin}"
        );
        // Malformed quantities and float amounts are refused with their reasons.
        for (id, bad, why) in [
            (
                "y1",
                json!({"spend": {"amount": -1, "unit": "USD"}}),
                "uses is malformed",
            ),
            ("y2", json!({"Spend": {"amount": 1}}), "not a measure name"),
        ] {
            let mut req = consent_req(id, &c.principal, &yea_proposal(id, bad));
            req["dialect"] = json!("yea1");
            agent.send(req).await;
            let fin = agent.final_for(id).await;
            assert_eq!(fin["kind"], "REJECTED", "{fin}");
            assert!(fin["message"].as_str().unwrap().contains(why), "{fin}");
        }
        let mut float = yea_proposal("y3", json!({}));
        float["uses"] = json!({"spend": {"amount": 22.87, "unit": "USD"}});
        let mut req = consent_req("y3", &c.principal, &float);
        req["dialect"] = json!("yea1");
        agent.send(req).await;
        let fin = agent.final_for("y3").await;
        assert_eq!(fin["kind"], "REJECTED", "{fin}");

        let mut req = consent_req("y4", &c.principal, &p);
        req["dialect"] = json!("yea1");
        agent.send(req).await;
        let shown = c.shown.recv().await.unwrap();
        let r = &shown.review;
        let words: Vec<&str> = r.uses.iter().map(|u| u.words.as_str()).collect();
        assert_eq!(words, ["1 emails", "22.87 USD"]);
        assert_eq!(r.cost_money.as_ref().map(|m| m.amount), Some(2287));
        c.engine
            .decide(&shown.id, Verdict::Approve(YES))
            .await
            .unwrap();
        let fin = agent.final_for("y4").await;
        assert_eq!(fin["kind"], "APPROVED", "{fin}");
        let token = fin["grant"].as_str().unwrap();
        let trust = [c.principal.clone()];
        let me = agent_key();
        let ctx = |hash: &str| RequestContext {
            service: "shop.example".into(),
            verb: "COMMIT".into(),
            capability: "shop.order".into(),
            now: unix_now(),
            proposal: Some(CommitFacts {
                hash: hash.into(),
                uses: Some(uses.clone()),
                risk: "medium".into(),
                ..Default::default()
            }),
            dialect: parley_core::Dialect::YeaV1,
            ..Default::default()
        };
        assert_eq!(
            authorize(token, &trust, &me, &ctx(p["hash"].as_str().unwrap())),
            Decision::Ok
        );
        assert_eq!(
            authorize(token, &trust, &me, &ctx("another")).code(),
            "forbidden"
        );
    });
}

#[test]
fn deny_expire_cancel_dedupe_and_rejection() {
    if !in_session("deny_expire_cancel_dedupe_and_rejection", Session::Keyring) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start(no_step_up()).await;
        let mut agent = Agent::connect(&c.socket).await;

        // Deny.
        let p1 = proposal("p_1", 500, 600, "low");
        agent.send(consent_req("d1", &c.principal, &p1)).await;
        let shown = c.shown.recv().await.unwrap();
        c.engine
            .decide(&shown.id, Verdict::Deny(Some("too expensive".into())))
            .await
            .unwrap();
        let fin = agent.final_for("d1").await;
        assert_eq!(
            (fin["kind"].as_str(), fin["reason"].as_str()),
            (Some("DENIED"), Some("too expensive"))
        );
        assert!(
            c.engine
                .decide(&shown.id, Verdict::Approve(YES))
                .await
                .is_err(),
            "decided once"
        );

        // Dedupe: two identical requests, one prompt, one answer for both.
        let p2 = proposal("p_2", 900, 600, "low");
        agent.send(consent_req("u1", &c.principal, &p2)).await;
        let shown = c.shown.recv().await.unwrap();
        agent.send(consent_req("u2", &c.principal, &p2)).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            c.shown.try_recv().is_err(),
            "one prompt for the same agent and hash"
        );
        c.engine
            .decide(&shown.id, Verdict::Approve(YES))
            .await
            .unwrap();
        let (a, b) = (agent.final_for("u1").await, agent.final_for("u2").await);
        assert_eq!(a["kind"], "APPROVED");
        assert_eq!(a["grant"], b["grant"]);
        // The same proposal with anything the review shows changed (here the
        // service's summary) is a request of its own: asked again, never
        // answered with the earlier approval.
        let mut other = consent_req("u3", &c.principal, &p2);
        other["consent"]["summary"] = json!("Order 3 items, gift-wrapped");
        agent.send(other).await;
        let again = tokio::time::timeout(Duration::from_secs(10), c.shown.recv())
            .await
            .expect("a changed request is shown again, not joined to the approved one")
            .unwrap();
        assert_ne!(again.id, shown.id);
        c.engine
            .decide(&again.id, Verdict::Deny(None))
            .await
            .unwrap();
        assert_eq!(agent.final_for("u3").await["kind"], "DENIED");

        // Expiry: the request closes itself when the proposal expires.
        let p3 = proposal("p_3", 100, 2, "low");
        agent.send(consent_req("e1", &c.principal, &p3)).await;
        let shown = c.shown.recv().await.unwrap();
        let fin = agent.final_for("e1").await;
        assert_eq!(fin["kind"], "EXPIRED");
        assert!(c.approver.withdrawn_ids().contains(&shown.id));
        assert!(
            c.engine
                .decide(&shown.id, Verdict::Approve(YES))
                .await
                .is_err(),
            "too late to approve"
        );

        // Status and cancel.
        let p4 = proposal("p_4", 100, 600, "low");
        agent.send(consent_req("k1", &c.principal, &p4)).await;
        let _ = c.shown.recv().await.unwrap();
        agent
            .send(json!({"custody": 1, "id": "s1", "op": "status", "request": "k1"}))
            .await;
        let st = agent.final_for("s1").await;
        assert_eq!(st["state"], "pending");
        agent
            .send(json!({"custody": 1, "id": "x1", "op": "cancel", "request": "k1"}))
            .await;
        assert_eq!(agent.final_for("x1").await["kind"], "CANCELLED");
        assert_eq!(agent.final_for("k1").await["kind"], "CANCELLED");
        agent
            .send(json!({"custody": 1, "id": "s2", "op": "status", "request": "k1"}))
            .await;
        assert_eq!(agent.final_for("s2").await["state"], "cancelled");
        agent
            .send(json!({"custody": 1, "id": "s3", "op": "status", "request": "never"}))
            .await;
        assert_eq!(agent.final_for("s3").await["state"], "unknown");

        // A mismatched consent is rejected, logged, and never shown.
        let p5 = proposal("p_5", 100, 600, "low");
        let mut bad = consent_req("r1", &c.principal, &p5);
        bad["consent"]["capability"] = json!("bank.transfer");
        agent.send(bad).await;
        let fin = agent.final_for("r1").await;
        assert_eq!(
            (fin["kind"].as_str(), fin["code"].as_str()),
            (Some("REJECTED"), Some("capability_mismatch"))
        );
        let mut tampered = consent_req("r2", &c.principal, &p5);
        tampered["proposal"]["cost"]["amount"] = json!(1);
        agent.send(tampered).await;
        assert_eq!(agent.final_for("r2").await["code"], "proposal_hash");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            c.shown.try_recv().is_err(),
            "rejected requests never reach the human"
        );

        let audit = Audit::open(&c.audit_path).unwrap();
        let count = |k: EventKind| {
            audit
                .query(&Query {
                    kinds: vec![k],
                    ..Default::default()
                })
                .unwrap()
                .len()
        };
        assert_eq!(count(EventKind::ConsentDenied), 2); // d1 and u3
        assert_eq!(count(EventKind::ConsentApproved), 1);
        assert_eq!(count(EventKind::RequestExpired), 1);
        assert_eq!(count(EventKind::RequestCancelled), 1);
        assert_eq!(count(EventKind::RequestRejected), 2);
        assert!(audit.verify().unwrap().ok);
    });
}

/// The grant form's attack: an edit that widens the agent's request (adds
/// COMMIT, drops the capability list) must not be signed unless the caller
/// passes back exactly the widenings the engine names; and what is signed
/// must be what the form showed.
#[test]
fn a_widening_form_edit_is_refused_unless_each_widening_is_confirmed() {
    if !in_session(
        "a_widening_form_edit_is_refused_unless_each_widening_is_confirmed",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start(EngineConfig::default()).await;
        let mut agent = Agent::connect(&c.socket).await;
        let me = agent_key().to_string();
        let exp = unix_now() + 3600;
        agent
            .send(json!({"custody": 1, "id": "w1", "op": "grant", "agent": me,
            "caveats": [{"svc": ["shop.example"]}, {"verbs": ["ASK"]}, {"can": []}, {"exp": exp}]}))
            .await;
        let shown = c.shown.recv().await.unwrap();
        let wider = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK", "COMMIT"]}, {"exp": exp}]);
        let preview = c
            .engine
            .preview_grant(&me, &wider, None, Some(&shown.id))
            .await
            .unwrap();
        assert_eq!(
            preview.widenings,
            ["adds COMMIT", "allows every capability"]
        );
        assert_eq!(preview.caveats, wider);
        let form = |confirmed: &[&str], shown_caveats: &Value| FormGrant {
            caveats: wider.clone(),
            shown: Some(shown_caveats.clone()),
            confirmed_widenings: confirmed.iter().map(|w| w.to_string()).collect(),
        };
        for (what, f, code) in [
            ("not confirmed", form(&[], &wider), "widening_not_confirmed"),
            (
                "confirmed in part",
                form(&["adds COMMIT"], &wider),
                "widening_not_confirmed",
            ),
            (
                "shown something else",
                form(&["adds COMMIT", "allows every capability"], &json!([])),
                "not_what_was_shown",
            ),
        ] {
            match c
                .engine
                .decide(&shown.id, Verdict::ApproveWith(f, YES))
                .await
            {
                Err(DecideError::Narrowed(r)) => assert_eq!(r.code, code, "{what}: {r}"),
                other => panic!("{what}: {other:?}"),
            }
        }
        assert!(
            c.engine.pending().iter().any(|p| p.id == shown.id),
            "still waiting, nothing signed"
        );
        c.engine
            .decide(
                &shown.id,
                Verdict::ApproveWith(
                    form(&["adds COMMIT", "allows every capability"], &wider),
                    YES,
                ),
            )
            .await
            .unwrap();
        let fin = agent.final_for("w1").await;
        assert_eq!(fin["kind"], "ISSUED", "{fin}");
        assert_eq!(fin["caveats"], wider);
    });
}

#[test]
fn grants_are_reviewed_narrowed_and_time_boxed() {
    if !in_session(
        "grants_are_reviewed_narrowed_and_time_boxed",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start(no_step_up()).await;
        let mut agent = Agent::connect(&c.socket).await;
        let me = agent_key().to_string();
        // A malformed caveat is rejected before the human sees it.
        agent.send(json!({"custody": 1, "id": "g0", "op": "grant", "agent": me, "caveats": [{"risk": "toString"}]})).await;
        assert_eq!(agent.final_for("g0").await["code"], "caveat_malformed");

        let far = unix_now() + 365 * 86400;
        agent.send(json!({"custody": 1, "id": "g1", "op": "grant", "agent": me, "reason": "buy groceries",
            "caveats": [{"svc": ["shop.example"]}, {"per": {"max": 4000, "currency": "USD"}}, {"exp": far}]})).await;
        let shown = c.shown.recv().await.unwrap();
        let r = &shown.review;
        assert!(r.warnings.iter().any(|w| w.contains("splitting")), "per without spend is flagged");
        assert!(r.warnings.iter().any(|w| w.contains("limited to")), "exp clamped: {:?}", r.warnings);
        assert_eq!(r.their_words, "buy groceries");
        // The human narrows it: adds a total and verbs.
        let exp = unix_now() + 3600;
        let narrowed = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK", "INTENT", "COMMIT"]},
            {"per": {"max": 4000, "currency": "USD"}}, {"spend": {"max": 10000, "currency": "USD"}}, {"exp": exp}]);
        c.engine.decide(&shown.id, Verdict::ApproveWith(narrowed.clone().into(), YES)).await.unwrap();
        let fin = agent.final_for("g1").await;
        assert_eq!(fin["kind"], "ISSUED", "{fin}");
        assert_eq!(fin["caveats"], narrowed);
        let g = UnverifiedGrant::decode(fin["grant"].as_str().unwrap()).unwrap();
        assert_eq!(g.expiry(), Some(exp));
        let v = g.verify(&[c.principal.clone()], &agent_key()).unwrap();
        let ctx = RequestContext { service: "shop.example".into(), verb: "UNDO".into(), capability: "shop.order".into(), now: unix_now(), ..Default::default() };
        assert!(matches!(v.evaluate(&ctx), Decision::Forbidden { .. }), "UNDO was narrowed away");

        // A grant request with no exp gets the longest allowed one, and says so.
        agent.send(json!({"custody": 1, "id": "g2", "op": "grant", "agent": me, "caveats": [{"svc": ["a.example"]}]})).await;
        let shown = c.shown.recv().await.unwrap();
        assert!(shown.review.warnings.iter().any(|w| w.contains("no expiry")));
        c.engine.decide(&shown.id, Verdict::Approve(YES)).await.unwrap();
        let fin = agent.final_for("g2").await;
        let g = UnverifiedGrant::decode(fin["grant"].as_str().unwrap()).unwrap();
        let lifetime = g.expiry().unwrap() - unix_now();
        assert!((7 * 86400 - 5..=7 * 86400).contains(&lifetime), "{lifetime}");

        // Disconnecting withdraws the prompt.
        let mut gone = Agent::connect(&c.socket).await;
        gone.send(json!({"custody": 1, "id": "g3", "op": "grant", "agent": me, "caveats": [{"svc": ["b.example"]}, {"exp": exp}]})).await;
        let shown = c.shown.recv().await.unwrap();
        drop(gone);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !c.approver.withdrawn_ids().contains(&shown.id) {
            assert!(std::time::Instant::now() < deadline, "prompt withdrawn after disconnect");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Bad frames get clear errors and the connection stays usable.
        agent.send(json!({"custody": 1, "id": "z1", "op": "sign_bytes"})).await;
        assert_eq!(agent.final_for("z1").await["code"], "unknown_op");
        agent.send(json!({"custody": 1, "id": "h1", "op": "hello"})).await;
        let hello = agent.final_for("h1").await;
        assert_eq!(hello["principals"][0]["key"], c.principal.to_string());
    });
}

/// The scripted human's yes: a click, with the second confirmation given.
const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};

#[test]
fn a_missing_second_confirmation_is_refused_by_the_engine() {
    if !in_session(
        "a_missing_second_confirmation_is_refused_by_the_engine",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start(no_step_up()).await;
        let mut agent = Agent::connect(&c.socket).await;
        let p = proposal("p_high", 9900, 600, "high");
        agent.send(consent_req("h1", &c.principal, &p)).await;
        let shown = c.shown.recv().await.unwrap();
        assert!(shown.review.needs_second_confirmation);
        assert!(!shown.step_up.required);
        assert!(
            shown
                .step_up
                .words
                .starts_with("No OS authentication protects"),
            "the review says plainly that only the click protects it: {}",
            shown.step_up.words
        );
        // An approver that skipped the second confirmation gets nothing signed.
        let once = Yes {
            gesture: Gesture::Click,
            second_confirmation: false,
        };
        let err = c
            .engine
            .decide(&shown.id, Verdict::Approve(once))
            .await
            .unwrap_err();
        assert!(
            matches!(err, parley_custody::engine::DecideError::SecondConfirmation),
            "{err}"
        );
        assert!(err.to_string().contains("second confirmation"), "{err}");
        let still: Vec<String> = c.engine.pending().into_iter().map(|p| p.id).collect();
        assert_eq!(still, vec![shown.id.clone()], "still pending, not dropped");
        // With it, the same request is signed, and the row says how.
        c.engine
            .decide(&shown.id, Verdict::Approve(YES))
            .await
            .unwrap();
        let fin = agent.final_for("h1").await;
        assert_eq!(fin["kind"], "APPROVED", "{fin}");
        let rows = c.rows(EventKind::ConsentApproved);
        assert_eq!(rows.len(), 1);
        assert!(
            format!("{:?}", rows[0]).contains("click+second"),
            "{:?}",
            rows[0]
        );
    });
}

#[test]
fn a_decision_whose_caller_gave_up_still_finishes_and_never_sticks() {
    if !in_session(
        "a_decision_whose_caller_gave_up_still_finishes_and_never_sticks",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start(no_step_up()).await;
        let mut agent = Agent::connect(&c.socket).await;
        let p = proposal("p_gave_up", 1200, 600, "low");
        agent.send(consent_req("g1", &c.principal, &p)).await;
        let shown = c.shown.recv().await.unwrap();
        // The window's command gives up at once (as the app's 60 s wait
        // once did while the keychain was slow): the decision goes on.
        let _ = tokio::time::timeout(
            Duration::from_micros(1),
            c.engine.decide(&shown.id, Verdict::Approve(YES)),
        )
        .await;
        let fin = agent.final_for("g1").await;
        assert_eq!(
            fin["kind"], "APPROVED",
            "the agent still gets its answer: {fin}"
        );
        assert!(c.engine.pending().is_empty(), "nothing left half-decided");

        // A decision that fails leaves the request decidable again.
        let grant = json!({"custody": 1, "id": "g2", "op": "grant",
            "agent": agent_key().to_string(),
            "caveats": [{"svc": ["shop.example"]}, {"verbs": ["ASK"]}]});
        agent.send(grant).await;
        let shown = c.shown.recv().await.unwrap();
        let bad = c
            .engine
            .decide(
                &shown.id,
                Verdict::ApproveWith(json!([{"svc": "not a list"}]).into(), YES),
            )
            .await;
        assert!(bad.is_err(), "{bad:?}");
        c.engine
            .decide(&shown.id, Verdict::Deny(Some("changed my mind".into())))
            .await
            .expect("the request is not stuck as being decided");
        let fin = agent.final_for("g2").await;
        assert_eq!(fin["kind"], "DENIED", "{fin}");
    });
}
