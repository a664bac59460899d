//! "Approve for a while" (issue 30, item 4) with real parts: a real custody
//! engine (the OS keychain in a private keyring session for the playground
//! stories, the file store elsewhere; a SQLite audit file; the scripted
//! human), the
//! playground's shop on a real TCP socket reading custody's own
//! revocations directory, and the agent's session signing real proofs.
//!
//! What it stops: a short grant that does not let the next order through
//! (or lets one past its cap through unasked), a short grant that outlives
//! a freeze, and a choice outside the engine's bounds (minutes, an amount
//! above the ceiling, a job code, a grant request) being signed.

// Here rather than in playground/tests: the playground links no key store.
mod support;

use parley_core::grant::UnverifiedGrant;
use parley_core::Dialect;
use parley_custody::approval::Unasked;
use parley_custody::approver::{Gesture, PendingView, Verdict, Yes};
use parley_custody::audit::EventKind;
use parley_custody::engine::{unix_now, DecideError};
use parley_custody::for_a_while::{ForAWhile, Refused};
use parley_custody::ipc::peer::PeerInfo;
use parley_custody::protocol::{parse_reply, Reply, Request};
use parley_playground::agent::client::Session;
use parley_playground::agent::scenario::requested_caveats;
use parley_playground::apps::Playground;
use parley_playground::clock::{Clock, SystemClock};
use parley_playground::ids::random_key;
use serde_json::{json, Value};
use std::sync::Arc;
use support::custody::{next_reply, no_step_up, Keys, TestCustody};
use support::{in_session, rt_per_core, Session as TestSession};

const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};

fn peer() -> PeerInfo {
    PeerInfo::from_creds(4242, 4242, None)
}

async fn shown(c: &mut TestCustody) -> PendingView {
    tokio::time::timeout(std::time::Duration::from_secs(30), c.shown.recv())
        .await
        .expect("shown in time")
        .expect("the approver is alive")
}

/// The agent's everyday grant, as the playground's agent asks for it
/// (40 USD per order, 100 USD in all): an order of 58.30 USD needs consent.
async fn everyday_grant(c: &mut TestCustody, agent: &str, dialect: Dialect) -> String {
    let req = Request::from_value(&json!({"custody": 1, "id": "g", "op": "grant",
        "agent": agent, "caveats": requested_caveats(unix_now(), dialect)}))
    .unwrap();
    let mut rx = c.submit(&peer(), req);
    assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
    let v = shown(c).await;
    c.engine.decide(&v.id, Verdict::Approve(YES)).await.unwrap();
    let issued = next_reply(&mut rx).await;
    assert_eq!(issued["kind"], "ISSUED", "{issued}");
    issued["grant"].as_str().unwrap().to_string()
}

/// The shop's order of 3 meals (58.30 USD): INTENT, then its proposal.
async fn propose(shop: &mut Session, clock: &Arc<dyn Clock>) -> Value {
    let deliver = parley_playground::service::params::format_date(clock.now() + 86_400);
    let order =
        json!({"items": [{"sku": "m06", "qty": 2}, {"sku": "m12", "qty": 1}], "deliver": deliver});
    let s = shop.intent("shop.order", order, false, 800).await.unwrap();
    assert_eq!(s.kind(), "PROPOSALS", "{}", s.reply());
    s.reply()["proposals"][0].clone()
}

/// The agent's consent request to custody for `consent_required`.
fn consent_request(
    id: &str,
    required: &Value,
    proposal: &Value,
    agent: &str,
    dialect: Dialect,
) -> Request {
    Request::from_value(&json!({"custody": 1, "id": id, "op": "consent",
        "service": "shop.example", "agent": agent, "proposal": proposal,
        "consent": required["consent"], "dialect": dialect.name()}))
    .unwrap()
}

#[test]
fn parley_a_grant_for_a_while_lets_the_next_order_through_unasked_and_the_one_after_the_cap_asks_again(
) {
    if in_session(
        "parley_a_grant_for_a_while_lets_the_next_order_through_unasked_and_the_one_after_the_cap_asks_again",
        TestSession::Keyring,
    ) {
        story(Dialect::ParleyV1);
    }
}

#[test]
fn yea_a_grant_for_a_while_lets_the_next_order_through_unasked_and_the_one_after_the_cap_asks_again(
) {
    if in_session(
        "yea_a_grant_for_a_while_lets_the_next_order_through_unasked_and_the_one_after_the_cap_asks_again",
        TestSession::Keyring,
    ) {
        story(Dialect::YeaV1);
    }
}

fn story(dialect: Dialect) {
    rt_per_core().block_on(async {
        // The principal key in the real OS keychain (a private keyring session).
        let mut c = TestCustody::start(Keys::Keychain, no_step_up()).await;
        let agent_key = Arc::new(random_key());
        let agent = agent_key.public().to_string();
        let everyday = everyday_grant(&mut c, &agent, dialect).await;

        // The shop reads custody's own revocations directory.
        let revocations = c.audit_path.parent().unwrap().join("revocations");
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let playground = Playground::start_revocable(
            "127.0.0.1:0",
            "127.0.0.1:0",
            vec![c.principal.clone()],
            clock.clone(),
            dialect,
            Some(revocations.clone()),
        )
        .await
        .unwrap();
        let shop_addr = playground.shop.addr.to_string();
        let (mut shop, _) = Session::open(&shop_addr, agent_key.clone(), clock.clone(), 4000, dialect)
            .await
            .unwrap();
        shop.grants = vec![everyday.clone()];

        // 1. An order over the everyday grant: consent required; the human
        // approves it and, for 15 minutes, up to 100.00 USD more.
        let p1 = propose(&mut shop, &clock).await;
        let s = shop.commit(&p1, vec![everyday.clone()]).await.unwrap();
        assert_eq!(s.reply()["code"], "consent_required", "{}", s.reply());
        let mut rx = c.submit(&peer(), consent_request("c1", s.reply(), &p1, &agent, dialect));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        let offer = c.engine.for_a_while_offer(&v.id).expect("a consent offers it");
        assert_eq!(offer.offer.order.amount, 5830);
        assert_eq!(offer.offer.ceiling, 58300);
        assert_eq!(offer.amount_words, ["50.00 USD", "100.00 USD", "200.00 USD", "500.00 USD"]);
        let choice = ForAWhile {
            amount: 10000,
            minutes: 15,
        };
        let decided_at = unix_now();
        c.engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, choice))
            .await
            .unwrap();
        let frame = next_reply(&mut rx).await;
        let Reply::Approved {
            grant: consent,
            for_a_while: Some(short),
        } = parse_reply(&frame).unwrap().reply
        else {
            panic!("an APPROVED reply with for_a_while: {frame}");
        };
        // Exactly those caveats, for this agent, ending within 15 minutes.
        let decoded = UnverifiedGrant::decode(&short.grant).unwrap();
        assert_eq!(decoded.holder(), agent);
        assert_eq!(decoded.issuer(), c.principal.to_string());
        let names: Vec<&str> = decoded.blocks()[0]
            .caveats()
            .iter()
            .filter_map(|c| c.name())
            .collect();
        let caps = match dialect {
            Dialect::ParleyV1 => ["per", "spend"],
            Dialect::YeaV1 => ["each", "total"],
        };
        assert_eq!(names, ["svc", "can", caps[0], caps[1], "exp"], "{}", short.caveats);
        assert_eq!(short.caveats[0], json!({"svc": ["shop.example"]}));
        assert_eq!(short.caveats[1], json!({"can": ["shop.order"]}));
        let exp = short.caveats[4]["exp"].as_i64().unwrap();
        assert!(exp <= decided_at + 15 * 60 + 5 && exp > decided_at + 14 * 60, "{exp}");
        let s = shop.commit(&p1, vec![consent]).await.unwrap();
        assert_eq!(s.kind(), "RECEIPT", "{}", s.reply());

        // 2. The next order goes through with the short grant, unasked.
        let p2 = propose(&mut shop, &clock).await;
        let s = shop
            .commit(&p2, vec![everyday.clone(), short.grant.clone()])
            .await
            .unwrap();
        assert_eq!(s.kind(), "RECEIPT", "the next order, unasked: {}", s.reply());
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(200), c.shown.recv())
                .await
                .is_err(),
            "nothing was shown to the human"
        );

        // 3. The one after the cap (58.30 + 58.30 > 100.00) asks again.
        let p3 = propose(&mut shop, &clock).await;
        let s = shop
            .commit(&p3, vec![everyday.clone(), short.grant.clone()])
            .await
            .unwrap();
        assert_eq!(s.reply()["code"], "consent_required", "past the cap: {}", s.reply());
        assert_eq!(playground.shop_service.app().orders().len(), 2);

        // The audit log: the consent, then the short grant, its words and
        // its caveats; the chain verifies.
        let issued = c.rows(EventKind::GrantIssued);
        let row = issued
            .iter()
            .find(|r| r.token_id.as_deref() == Some(decoded.id().as_str()))
            .expect("the short grant's row");
        let reason = row.reason.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("and let ")
                && reason.ends_with("spend up to 100.00 USD more at shop.example in the next 15 minutes without asking"),
            "{reason}"
        );
        // Marked as a short grant by its own column (the minutes chosen).
        assert_eq!(row.for_a_while, Some(15));
        assert_eq!(row.agent.as_deref(), Some(agent.as_str()));
        assert_eq!(c.rows(EventKind::ConsentApproved).len(), 1);

        // 4. Freeze ends it: the shop refuses the short grant, naming the
        // revocation; no authentication was asked (none is configured to
        // answer here, and the freeze asks none).
        let (_, denied) = c.engine.freeze("the agent misbehaved").unwrap();
        assert!(denied.is_empty());
        let p4 = propose(&mut shop, &clock).await;
        let s = shop.commit(&p4, vec![short.grant.clone()]).await.unwrap();
        let r = s.reply();
        assert_eq!(r["code"], "forbidden", "{r}");
        assert_eq!(r["need"][0]["revoked"]["grant"], decoded.id().as_str(), "{r}");
        assert!(
            r["need"][0]["revoked"]["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("frozen"),
            "{r}"
        );
        let revoked = c.rows(EventKind::GrantRevoked);
        assert_eq!(revoked.len(), 1);
        assert_eq!(revoked[0].token_id.as_deref(), Some(decoded.id().as_str()));
        assert!(revocations.join(format!("{}.json", decoded.id())).exists());
        // The everyday grant was not the human's for-a-while: not ended.
        let everyday_id = UnverifiedGrant::decode(&everyday).unwrap().id();
        assert!(revoked.iter().all(|r| r.token_id.as_deref() != Some(everyday_id.as_str())));
        assert!(
            c.engine.end_short_grants(Unasked::Frozen).is_empty(),
            "ended once"
        );
        // Custody's own revocation, and the row says so, not a gesture.
        assert_eq!(
            revoked[0].confirmed_by.as_deref(),
            Some("custody, unasked: custody was frozen")
        );
        assert!(parley_custody::audit::Audit::open(&c.audit_path)
            .unwrap()
            .verify()
            .unwrap()
            .ok);
        playground.stop().await;
    });
}

/// A consent request for order `n` of 58.30 USD from the test agent.
fn order(c: &TestCustody, n: u32) -> Request {
    let mut p = json!({
        "id": format!("p{n}"), "capability": "shop.order", "summary": "Order",
        "effects": [{"op": "charge", "target": "card", "detail": "USD"}],
        "cost": {"amount": 5830, "currency": "USD"}, "risk": "low",
        "undo": {"window": 1800}, "expires": unix_now() + 600
    });
    support::requests::rehash(&mut p);
    Request::from_value(&support::requests::consent_req(
        &format!("c{n}"),
        &c.principal,
        &p,
    ))
    .unwrap()
}

#[test]
fn choices_outside_the_engines_bounds_are_refused_logged_and_sign_nothing() {
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let mut rx = c.submit(&peer(), order(&c, 1));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        let bad = [
            (
                ForAWhile {
                    amount: 10000,
                    minutes: 0,
                },
                Refused::Minutes(0),
            ),
            (
                ForAWhile {
                    amount: 10000,
                    minutes: 600,
                },
                Refused::Minutes(600),
            ),
            (
                ForAWhile {
                    amount: 0,
                    minutes: 15,
                },
                Refused::Amount,
            ),
            (
                ForAWhile {
                    amount: 58301,
                    minutes: 15,
                },
                Refused::AboveCeiling {
                    asked: "583.01 USD".into(),
                    ceiling: "583.00 USD".into(),
                },
            ),
        ];
        for (choice, why) in &bad {
            match c
                .engine
                .decide(&v.id, Verdict::ApproveForAWhile(YES, *choice))
                .await
            {
                Err(DecideError::ForAWhile(r)) => assert_eq!(&r, why),
                other => panic!("{choice:?}: {other:?}"),
            }
        }
        let rows = c.rows(EventKind::ShortGrantRefused);
        assert_eq!(rows.len(), bad.len());
        for (row, (_, why)) in rows.iter().rev().zip(&bad) {
            let reason = row.reason.as_deref().unwrap_or_default();
            assert!(reason.contains(&why.to_string()), "{reason}");
            assert_eq!(row.service.as_deref(), Some("shop.example"));
        }
        assert!(c.rows(EventKind::GrantIssued).is_empty());
        assert!(c.rows(EventKind::ConsentApproved).is_empty());
        // Still waiting: a plain Approve signs the consent alone.
        c.engine.decide(&v.id, Verdict::Approve(YES)).await.unwrap();
        let frame = next_reply(&mut rx).await;
        assert_eq!(frame["kind"], "APPROVED", "{frame}");
        assert!(frame.get("for_a_while").is_none(), "{frame}");
        assert!(c.rows(EventKind::GrantIssued).is_empty());
    });
}

#[test]
fn a_grant_request_is_never_approved_for_a_while() {
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let req = Request::from_value(&json!({"custody": 1, "id": "g", "op": "grant",
            "agent": support::requests::agent_key().to_string(),
            "caveats": [{"svc": ["shop.example"]}, {"exp": unix_now() + 600}]}))
        .unwrap();
        let mut rx = c.submit(&peer(), req);
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        assert_eq!(
            c.engine.for_a_while_offer(&v.id).unwrap_err(),
            Refused::GrantRequest
        );
        let choice = ForAWhile {
            amount: 100,
            minutes: 5,
        };
        match c
            .engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, choice))
            .await
        {
            Err(DecideError::ForAWhile(Refused::GrantRequest)) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(c.rows(EventKind::ShortGrantRefused).len(), 1);
        assert!(c.rows(EventKind::GrantIssued).is_empty());
    });
}

#[test]
fn nothing_is_offered_while_frozen() {
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let mut rx = c.submit(&peer(), order(&c, 1));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        assert!(c.engine.for_a_while_offer(&v.id).is_ok());
        c.engine.freeze("stop").unwrap();
        // The pending consent was denied; a new one is refused unseen.
        assert_eq!(next_reply(&mut rx).await["kind"], "DENIED");
        assert_eq!(
            c.engine.for_a_while_offer(&v.id).unwrap_err(),
            Refused::NotPending
        );
    });
}

#[test]
fn a_job_code_is_never_approved_for_a_while() {
    use parley_core::job;
    use parley_core::SecretKey;
    use zeroize::Zeroizing;
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let server = SecretKey::from_seed(&Zeroizing::new([5u8; 32])).public();
        let plan = job::plan_of(
            "refund",
            None,
            &json!({"charge": "ch_1"}),
            &json!({"summary": "Refund 30.00 USD to Chen",
                "effects": [{"op": "create", "target": "refund", "detail": "30.00 USD"}],
                "uses": {"spend": {"amount": 3000, "scale": 2, "unit": "USD"}},
                "risk": "low", "undoWindow": 60}),
        )
        .unwrap();
        let request = job::consent_request(&plan, &server, &c.principal, unix_now());
        let code = job::encode_code(&request, &plan, "ch_1").unwrap();
        let req = Request::from_value(&json!({"custody": 1, "id": "job1", "op": "approve_code",
            "code": code, "agent": support::requests::agent_key().to_string(), "dialect": "yea1"}))
        .unwrap();
        let mut rx = c.submit(&peer(), req);
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        assert!(v.review.job.is_some());
        assert_eq!(
            c.engine.for_a_while_offer(&v.id).unwrap_err(),
            Refused::JobCode
        );
        let choice = ForAWhile {
            amount: 3000,
            minutes: 5,
        };
        match c
            .engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, choice))
            .await
        {
            Err(DecideError::ForAWhile(Refused::JobCode)) => {}
            other => panic!("{other:?}"),
        }
        let rows = c.rows(EventKind::ShortGrantRefused);
        assert_eq!(rows.len(), 1);
        assert!(rows[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("job"));
        assert!(c.rows(EventKind::ConsentApproved).is_empty());
        assert!(c.rows(EventKind::GrantIssued).is_empty());
    });
}

/// `parley approve` (the real binary, on custody's real socket) saves the
/// approve-for-a-while grant like any grant: `grants/<id>.pg` in
/// `$PARLEY_HOME`, next to the consent it saves as before.
#[test]
fn parley_approve_saves_the_short_grant_like_any_grant() {
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let socket = c.serve();
        let home = tempfile::tempdir().unwrap();
        let mut p = json!({
            "id": "p1", "capability": "shop.order", "summary": "Order",
            "effects": [{"op": "charge", "target": "card", "detail": "USD"}],
            "cost": {"amount": 5830, "currency": "USD"}, "risk": "low",
            "undo": {"window": 1800}, "expires": unix_now() + 600
        });
        support::requests::rehash(&mut p);
        let input = home.path().join("consent.json");
        std::fs::write(
            &input,
            json!({"consent": support::requests::consent_for(&p, &c.principal),
                   "proposal": p, "service": "shop.example"})
            .to_string(),
        )
        .unwrap();
        let agent = support::requests::agent_key().to_string();
        let cli = tokio::process::Command::new(support::parley_cli())
            .args(["--json", "approve"])
            .arg(&input)
            .args(["--agent", &agent, "--socket"])
            .arg(&socket)
            .env("PARLEY_HOME", home.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let v = shown(&mut c).await;
        let choice = ForAWhile {
            amount: 20000,
            minutes: 30,
        };
        c.engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, choice))
            .await
            .unwrap();
        let out = cli.wait_with_output().await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let w = &report["for_a_while"];
        let token = w["grant"].as_str().expect("reported");
        let id = UnverifiedGrant::decode(token).unwrap().id();
        assert_eq!(w["id"], id.as_str());
        let stem: String = id.chars().take(16).collect();
        let saved = home.path().join("grants").join(format!("{stem}.pg"));
        assert_eq!(w["saved_to"], saved.display().to_string(), "{report}");
        assert_eq!(
            std::fs::read_to_string(&saved).unwrap(),
            format!("{token}\n")
        );
        assert!(
            stderr.contains("approve-for-a-while grant was saved to"),
            "{stderr}"
        );
        assert!(
            report["saved_to"].as_str().is_some(),
            "the consent too: {report}"
        );
    });
}

/// The hook the session's lock calls (when the setting says so): every
/// live approve-for-a-while grant is revoked, asking nothing, with the
/// lock's reason signed in; a second call finds none left.
#[test]
fn end_short_grants_revokes_each_live_one_with_the_reason_and_asks_nothing() {
    rt_per_core().block_on(async {
        // Ending never reaches polkit (no agent answers in this test; a
        // prompt would fail it): the rows say nothing was asked.
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let mut ids = Vec::new();
        for n in 1..=2 {
            let mut rx = c.submit(&peer(), order(&c, n));
            assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
            let v = shown(&mut c).await;
            let w = ForAWhile {
                amount: 5000,
                minutes: 5,
            };
            c.engine
                .decide(&v.id, Verdict::ApproveForAWhile(YES, w))
                .await
                .unwrap();
            let frame = next_reply(&mut rx).await;
            let token = frame["for_a_while"]["grant"].as_str().unwrap();
            ids.push(UnverifiedGrant::decode(token).unwrap().id());
        }
        let mut ended = c.engine.end_short_grants(Unasked::SessionLocked);
        ended.sort();
        ids.sort();
        assert_eq!(ended, ids);
        let dir = c.audit_path.parent().unwrap().join("revocations");
        for id in &ids {
            let text = std::fs::read_to_string(dir.join(format!("{id}.json"))).unwrap();
            assert!(text.contains("the session was locked"), "{text}");
        }
        let rows = c.rows(EventKind::GrantRevoked);
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(
                r.confirmed_by.as_deref(),
                Some("custody, unasked: the session locked")
            );
        }
        assert!(c.engine.end_short_grants(Unasked::SessionLocked).is_empty());
        // The consents themselves are not grants for a while: untouched.
        assert_eq!(c.rows(EventKind::ConsentApproved).len(), 2);
    });
}

/// `parley custody freeze` (the human's own command, another process) with
/// the service running: the service's freeze watch ends the live
/// approve-for-a-while grant too, within moments.
#[test]
fn a_freeze_from_the_humans_command_ends_the_grant_too() {
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        c.serve();
        let mut rx = c.submit(&peer(), order(&c, 1));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        let w = ForAWhile {
            amount: 5000,
            minutes: 15,
        };
        c.engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, w))
            .await
            .unwrap();
        let frame = next_reply(&mut rx).await;
        let id = UnverifiedGrant::decode(frame["for_a_while"]["grant"].as_str().unwrap())
            .unwrap()
            .id();
        let dir = c.audit_path.parent().unwrap().to_path_buf();
        let out = tokio::process::Command::new(support::parley_cli())
            .args([
                "--json",
                "custody",
                "freeze",
                "--reason",
                "stop",
                "--data-dir",
            ])
            .arg(&dir)
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = dir.join("revocations").join(format!("{id}.json"));
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !file.exists() {
            assert!(std::time::Instant::now() < until, "not ended within 10 s");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("custody was frozen"), "{text}");
        assert_eq!(c.rows(EventKind::GrantRevoked).len(), 1);
    });
}

/// A shorter "Longest grant" setting bounds the minutes offered and
/// accepted: a grant never outlives what the human allows any grant.
#[test]
fn the_minutes_offered_stay_within_the_longest_grant() {
    rt_per_core().block_on(async {
        let mut config = no_step_up();
        config.review.max_grant_lifetime = 20 * 60;
        let mut c = TestCustody::start(Keys::File, config).await;
        let mut rx = c.submit(&peer(), order(&c, 1));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        assert_eq!(
            c.engine.for_a_while_offer(&v.id).unwrap().offer.minutes,
            [5, 15]
        );
        let long = ForAWhile {
            amount: 5000,
            minutes: 30,
        };
        match c
            .engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, long))
            .await
        {
            Err(DecideError::ForAWhile(Refused::Minutes(30))) => {}
            other => panic!("{other:?}"),
        }
        let ok = ForAWhile {
            amount: 5000,
            minutes: 15,
        };
        c.engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, ok))
            .await
            .unwrap();
        assert!(next_reply(&mut rx).await["for_a_while"]["grant"].is_string());
    });
}

/// Bad choices in a loop (a UI gone wrong) are each refused, but the log
/// keeps at most REFUSALS_PER_AGENT_HOUR rows of them per agent and hour.
#[test]
fn refusals_in_a_loop_are_logged_bounded() {
    use parley_custody::engine::REFUSALS_PER_AGENT_HOUR;
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let mut rx = c.submit(&peer(), order(&c, 1));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        let bad = ForAWhile {
            amount: 5000,
            minutes: 7,
        };
        for _ in 0..REFUSALS_PER_AGENT_HOUR + 5 {
            assert!(matches!(
                c.engine
                    .decide(&v.id, Verdict::ApproveForAWhile(YES, bad))
                    .await,
                Err(DecideError::ForAWhile(Refused::Minutes(7)))
            ));
        }
        assert_eq!(
            c.rows(EventKind::ShortGrantRefused).len(),
            REFUSALS_PER_AGENT_HOUR as usize
        );
        assert!(c.rows(EventKind::GrantIssued).is_empty());
    });
}

/// A short grant is what custody's engine marked as one, never what a
/// reason says: an agent's grant request whose reason begins "approve for
/// a while: ", approved by the human, and a grant row whose reason carries
/// those words, are not ended by the freeze's ending of short grants nor
/// shown as one; the real short grant beside them is.
#[test]
fn a_grant_whose_reason_says_approve_for_a_while_is_not_a_short_grant() {
    use parley_custody::audit::{Audit, NewEvent};
    use parley_custody::desktop::views::EventView;
    use parley_custody::for_a_while::REASON_PREFIX;
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let words = format!("{REASON_PREFIX}and let it spend up to 9999.00 USD without asking");
        // 1. The agent asks for a grant with those words as its reason.
        let req = Request::from_value(&json!({"custody": 1, "id": "g", "op": "grant",
            "agent": support::requests::agent_key().to_string(), "reason": words,
            "caveats": [{"svc": ["shop.example"]}, {"exp": unix_now() + 1800}]}))
        .unwrap();
        let mut rx = c.submit(&peer(), req);
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        c.engine.decide(&v.id, Verdict::Approve(YES)).await.unwrap();
        let issued = next_reply(&mut rx).await;
        assert_eq!(issued["kind"], "ISSUED", "{issued}");
        let asked = UnverifiedGrant::decode(issued["grant"].as_str().unwrap())
            .unwrap()
            .id();
        // 2. A grant row whose reason itself carries the words (as any
        // writer of the reason column could leave it), live, custody's own.
        let forged = "grant-with-those-words";
        Audit::open(&c.audit_path)
            .unwrap()
            .append(&NewEvent {
                token_id: Some(forged.into()),
                principal: Some(c.principal.to_string()),
                agent: Some(support::requests::agent_key().to_string()),
                expires: Some(unix_now() + 1800),
                reason: Some(words.clone()),
                ..NewEvent::new(EventKind::GrantIssued, unix_now())
            })
            .unwrap();
        // 3. A real short grant beside them.
        let mut rx = c.submit(&peer(), order(&c, 1));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let v = shown(&mut c).await;
        let w = ForAWhile {
            amount: 5000,
            minutes: 5,
        };
        c.engine
            .decide(&v.id, Verdict::ApproveForAWhile(YES, w))
            .await
            .unwrap();
        let frame = next_reply(&mut rx).await;
        let short = UnverifiedGrant::decode(frame["for_a_while"]["grant"].as_str().unwrap())
            .unwrap()
            .id();

        // The freeze ends the short grant only.
        c.engine.freeze("stop").unwrap();
        let revoked: Vec<String> = c
            .rows(EventKind::GrantRevoked)
            .into_iter()
            .filter_map(|r| r.token_id.clone())
            .collect();
        assert_eq!(revoked, vec![short.clone()]);
        assert!(c.engine.end_short_grants(Unasked::Frozen).is_empty());

        // Labelled by the column: the view (and the UI, which reads it) marks
        // the short grant alone.
        for row in c.rows(EventKind::GrantIssued) {
            let id = row.token_id.clone().unwrap();
            let view = serde_json::to_value(EventView::new(&row, |_| None)).unwrap();
            if id == short {
                assert_eq!(view["for_a_while"], 5, "{view}");
            } else {
                assert!(id == asked || id == forged, "{id}");
                assert_eq!(row.for_a_while, None);
                assert!(view["for_a_while"].is_null(), "{view}");
            }
        }
    });
}

/// More live short grants than the old cap (the newest 1000 grants of the
/// last two hours) are all ended: custody selects exactly the live short
/// grants, however many. The rows are written straight into the log (one
/// human approval each would take far longer), as the engine writes them.
#[test]
fn ending_short_grants_loses_none_past_a_thousand() {
    use parley_custody::audit::{Audit, NewEvent};
    rt_per_core().block_on(async {
        let c = TestCustody::start(Keys::File, no_step_up()).await;
        let now = unix_now();
        let mut audit = Audit::open(&c.audit_path).unwrap();
        let mut ids = Vec::new();
        for n in 0..1005 {
            let id = format!("short-{n:04}");
            audit
                .append(&NewEvent {
                    token_id: Some(id.clone()),
                    principal: Some(c.principal.to_string()),
                    agent: Some(support::requests::agent_key().to_string()),
                    expires: Some(now + 3000),
                    for_a_while: Some(60),
                    reason: Some("and let it spend without asking".into()),
                    ..NewEvent::new(EventKind::GrantIssued, now - 600)
                })
                .unwrap();
            ids.push(id);
        }
        // Newer ordinary grants, which the old cap counted first.
        for n in 0..20 {
            audit
                .append(&NewEvent {
                    token_id: Some(format!("plain-{n}")),
                    principal: Some(c.principal.to_string()),
                    expires: Some(now + 3000),
                    ..NewEvent::new(EventKind::GrantIssued, now)
                })
                .unwrap();
        }
        drop(audit);
        let engine = c.engine.clone();
        let mut ended =
            tokio::task::spawn_blocking(move || engine.end_short_grants(Unasked::Frozen))
                .await
                .unwrap();
        ended.sort();
        assert_eq!(ended.len(), 1005);
        assert_eq!(ended, ids);
        let revoked = Audit::open(&c.audit_path)
            .unwrap()
            .query(&parley_custody::audit::Query {
                kinds: vec![EventKind::GrantRevoked],
                limit: Some(5000),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(revoked.len(), 1005);
        assert!(Audit::open(&c.audit_path)
            .unwrap()
            .live_short_grants(unix_now())
            .unwrap()
            .is_empty());
    });
}
