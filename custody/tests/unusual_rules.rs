//! What is unusual (issue 15, part 3) and what an agent has done (part 5):
//! one named test per rule of `parley_custody::unusual::RULES`, each over a
//! real SQLite audit file whose history the test writes, and requests that
//! pass the real review; then the engine end to end, showing the warnings
//! and the agent's record in the pending review and recording the process
//! chain in the audit row.

mod support;

use parley_core::proposal::proposal_hash;
use parley_core::{PublicKey, SecretKey};
use parley_custody::activity::AgentActivity;
use parley_custody::approver::{Gesture, Verdict, Yes};
use parley_custody::audit::{Audit, EventKind, NewEvent};
use parley_custody::engine::unix_now;
use parley_custody::ipc::peer::PeerInfo;
use parley_custody::protocol::Request;
use parley_custody::review::{self, Requester, ReviewContext, ReviewLimits, ReviewedConsent};
use parley_custody::unusual::{self, Facts, Subject, RULES};
use serde_json::{json, Value};
use std::time::Duration;
use support::custody::{no_step_up, Keys, TestCustody};
use support::rt;
use tokio::sync::mpsc;
use zeroize::Zeroizing;

fn key(seed: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([seed; 32]))
}

fn principal() -> PublicKey {
    key(1).public()
}

fn agent() -> String {
    key(2).public().to_string()
}

fn other_agent() -> String {
    key(3).public().to_string()
}

/// A request's proposal: `cost` in minor units (`None`: states none),
/// `charge` adds a charge effect, `undo` `None` = irreversible.
struct Ask<'a> {
    service: &'a str,
    cost: Option<(i64, &'a str)>,
    charge: bool,
    undo: Option<i64>,
    summary: &'a str,
}

impl Default for Ask<'_> {
    fn default() -> Self {
        Ask {
            service: "shop.example",
            cost: Some((500, "USD")),
            charge: true,
            undo: Some(1800),
            summary: "Order for 5.00 USD",
        }
    }
}

fn proposal(a: &Ask, now: i64) -> Value {
    let mut effects = vec![json!({"op": "create", "target": "order"})];
    if a.charge {
        effects.push(json!({"op": "charge", "target": "card ••42", "detail": "card"}));
    }
    let mut p = json!({
        "id": format!("p-{}-{:?}", a.service, a.cost), "capability": "shop.order", "summary": a.summary,
        "effects": effects, "risk": "low", "expires": now + 600
    });
    p["cost"] = match a.cost {
        Some((amount, currency)) => json!({"amount": amount, "currency": currency}),
        None => Value::Null,
    };
    p["undo"] = match a.undo {
        Some(w) => json!({"window": w}),
        None => Value::Null,
    };
    p["hash"] = json!(proposal_hash(&p).unwrap());
    p
}

fn consent_obj(a: &Ask, p: &Value, principal: &PublicKey) -> Value {
    json!({"proposal": p["id"], "hash": p["hash"], "service": a.service,
           "capability": p["capability"], "principal": principal.to_string(),
           "summary": a.summary, "expires": p["expires"]})
}

/// The request as the real review passes it.
fn reviewed(a: &Ask, agent: &str) -> ReviewedConsent {
    let now = unix_now();
    let principals = [principal()];
    let ctx = ReviewContext {
        now,
        principals: &principals,
        principal_labels: &[],
        limits: ReviewLimits::default(),
        requester: Requester::from(&PeerInfo::from_creds(0, 0, None)),
        agent_label: None,
        agent_known: false,
    };
    let p = proposal(a, now);
    review::review_consent(
        &consent_obj(a, &p, &principal()),
        &p,
        a.service,
        agent,
        &ctx,
    )
    .expect("the request passes review")
}

struct Log {
    audit: Audit,
    _dir: tempfile::TempDir,
}

impl Log {
    fn new() -> Log {
        let dir = tempfile::tempdir().unwrap();
        Log {
            audit: Audit::open(&dir.path().join("audit.sqlite3")).unwrap(),
            _dir: dir,
        }
    }

    /// A consent the human approved `ago` seconds ago.
    fn approved(&mut self, agent: &str, service: &str, amount: i64, currency: &str, ago: i64) {
        let now = unix_now();
        self.audit
            .append(&NewEvent {
                agent: Some(agent.into()),
                service: Some(service.into()),
                cost_amount: Some(amount),
                cost_currency: Some(currency.into()),
                expires: Some(now - ago + 600),
                ..NewEvent::new(EventKind::ConsentApproved, now - ago)
            })
            .unwrap();
    }

    /// A grant to `agent` with `caveats`, expiring `expires_in` from now.
    fn granted(&mut self, agent: &str, services: &str, caveats: Value, expires_in: i64) {
        let now = unix_now();
        self.audit
            .append(&NewEvent {
                agent: Some(agent.into()),
                service: Some(services.into()),
                caveats: Some(caveats.to_string()),
                expires: Some(now + expires_in),
                ..NewEvent::new(EventKind::GrantIssued, now - 10)
            })
            .unwrap();
    }

    /// What the rules find for `a` from `agent`: (rule, reason).
    fn findings(&self, a: &Ask, agent: &str) -> Vec<(&'static str, String)> {
        let c = reviewed(a, agent);
        let s = Subject::of_consent(&c);
        let facts = Facts::gather(&self.audit, &s, unix_now()).unwrap();
        unusual::assess(&s, &facts)
            .into_iter()
            .map(|u| (u.rule, u.reason))
            .collect()
    }

    fn rule(&self, a: &Ask, agent: &str, rule: &str) -> Option<String> {
        assert!(RULES.iter().any(|r| r.name == rule), "no rule {rule}");
        self.findings(a, agent)
            .into_iter()
            .find(|(r, _)| *r == rule)
            .map(|(_, why)| why)
    }
}

#[test]
fn first_consent_at_this_service() {
    let mut log = Log::new();
    let why = log
        .rule(&Ask::default(), &agent(), "first_consent_at_service")
        .expect("nothing approved at shop.example yet");
    assert!(why.contains("First consent at shop.example"), "{why}");
    log.approved(&other_agent(), "other.example", 500, "USD", 60);
    assert!(log
        .rule(&Ask::default(), &agent(), "first_consent_at_service")
        .is_some());
    // Any agent's approved consent at the service makes it known.
    log.approved(&other_agent(), "shop.example", 500, "USD", 60);
    assert_eq!(
        log.rule(&Ask::default(), &agent(), "first_consent_at_service"),
        None
    );
}

#[test]
fn first_request_from_this_agent() {
    let mut log = Log::new();
    assert!(log
        .rule(&Ask::default(), &agent(), "first_request_from_agent")
        .is_some());
    // Even a refused request means custody has heard of the key.
    log.audit
        .append(&NewEvent {
            agent: Some(agent()),
            reason: Some("proposal_hash: tampered".into()),
            ..NewEvent::new(EventKind::RequestRejected, unix_now() - 5)
        })
        .unwrap();
    assert_eq!(
        log.rule(&Ask::default(), &agent(), "first_request_from_agent"),
        None
    );
    assert!(log
        .rule(&Ask::default(), &other_agent(), "first_request_from_agent")
        .is_some());
}

#[test]
fn cost_far_above_this_agents_history_at_the_service_says_by_how_much() {
    let mut log = Log::new();
    log.approved(&agent(), "shop.example", 500, "USD", 3600);
    log.approved(&agent(), "shop.example", 300, "USD", 7200);
    // A larger order elsewhere or by another agent is not this history.
    log.approved(&agent(), "other.example", 90_000, "USD", 60);
    log.approved(&other_agent(), "shop.example", 90_000, "USD", 60);
    let big = Ask {
        cost: Some((6000, "USD")),
        summary: "Order for 60.00 USD",
        ..Ask::default()
    };
    let why = log
        .rule(&big, &agent(), "cost_far_above_history")
        .expect("60.00 is 12× 5.00");
    assert!(
        why.contains("12× this agent's largest at shop.example (5.00 USD)"),
        "{why}"
    );
    let usual = Ask {
        cost: Some((1000, "USD")),
        summary: "Order for 10.00 USD",
        ..Ask::default()
    };
    assert_eq!(log.rule(&usual, &agent(), "cost_far_above_history"), None);
    // History in another currency is no yardstick.
    let euros = Ask {
        cost: Some((6000, "EUR")),
        summary: "Order for 60.00 EUR",
        ..Ask::default()
    };
    assert_eq!(log.rule(&euros, &agent(), "cost_far_above_history"), None);
}

#[test]
fn irreversible_and_costly() {
    let log = Log::new();
    let costly = Ask {
        cost: Some((25_000, "USD")),
        undo: None,
        summary: "Order for 250.00 USD",
        ..Ask::default()
    };
    let why = log
        .rule(&costly, &agent(), "irreversible_and_costly")
        .expect("250.00 USD that cannot be undone");
    assert!(why.contains("250.00 USD"), "{why}");
    let undoable = Ask {
        undo: Some(1800),
        ..costly
    };
    assert_eq!(
        log.rule(&undoable, &agent(), "irreversible_and_costly"),
        None
    );
    let cheap = Ask {
        undo: None,
        ..Ask::default()
    };
    assert_eq!(log.rule(&cheap, &agent(), "irreversible_and_costly"), None);
}

#[test]
fn a_charge_effect_with_no_cost_is_warned_once() {
    let log = Log::new();
    let free = Ask {
        cost: None,
        summary: "Order",
        ..Ask::default()
    };
    let why = log
        .rule(&free, &agent(), "charge_without_cost")
        .expect("a charge with cost null");
    assert_eq!(why, review::SAYS_FREE_BUT_CHARGES);
    let no_charge = Ask {
        charge: false,
        ..free
    };
    assert_eq!(log.rule(&no_charge, &agent(), "charge_without_cost"), None);
    // The review already says it; with the insight added it says it once.
    let mut c = reviewed(
        &Ask {
            cost: None,
            summary: "Order",
            ..Ask::default()
        },
        &agent(),
    );
    let s = Subject::of_consent(&c);
    let found = unusual::assess(&s, &Facts::gather(&log.audit, &s, unix_now()).unwrap());
    c.add_insight(found, None);
    let times = c
        .review()
        .warnings
        .iter()
        .filter(|w| w.as_str() == review::SAYS_FREE_BUT_CHARGES)
        .count();
    assert_eq!(times, 1, "{:#?}", c.review().warnings);
    assert!(c
        .review()
        .unusual
        .iter()
        .any(|u| u.rule == "charge_without_cost"));
}

#[test]
fn a_currency_unlike_every_grant_this_agent_holds() {
    let mut log = Log::new();
    let euros = Ask {
        cost: Some((500, "EUR")),
        summary: "Order for 5.00 EUR",
        ..Ask::default()
    };
    assert_eq!(
        log.rule(&euros, &agent(), "currency_unlike_grants"),
        None,
        "no grant, nothing to compare with"
    );
    log.granted(
        &agent(),
        "shop.example",
        json!([{"svc": ["shop.example"]}, {"spend": {"max": 10_000, "currency": "USD"}}]),
        3600,
    );
    // An expired grant in EUR does not count.
    log.granted(
        &agent(),
        "shop.example",
        json!([{"per": {"max": 10_000, "currency": "EUR"}}]),
        -60,
    );
    let why = log
        .rule(&euros, &agent(), "currency_unlike_grants")
        .expect("EUR, but the live grant is in USD");
    assert!(why.contains("EUR") && why.contains("(USD)"), "{why}");
    assert_eq!(
        log.rule(&Ask::default(), &agent(), "currency_unlike_grants"),
        None
    );
    assert_eq!(
        log.rule(&euros, &other_agent(), "currency_unlike_grants"),
        None,
        "another agent's grants are not this agent's"
    );
}

#[test]
fn a_service_id_confusable_with_one_used_before() {
    let mut log = Log::new();
    log.approved(&other_agent(), "shop.example", 500, "USD", 86_400);
    for lookalike in ["shop.examp1e", "shop.\u{0435}xample"] {
        let a = Ask {
            service: lookalike,
            ..Ask::default()
        };
        let why = log
            .rule(&a, &agent(), "confusable_service")
            .unwrap_or_else(|| panic!("{lookalike:?} looks like shop.example"));
        assert!(why.contains("looks like shop.example"), "{why}");
    }
    assert_eq!(
        log.rule(&Ask::default(), &agent(), "confusable_service"),
        None,
        "the very service used before"
    );
    let other = Ask {
        service: "shop.exampel",
        ..Ask::default()
    };
    assert_eq!(log.rule(&other, &agent(), "confusable_service"), None);
    // A grant's services count as used too.
    log.granted(&agent(), "pay.example,mail.example", json!([]), 3600);
    let a = Ask {
        service: "rnail.example",
        ..Ask::default()
    };
    let why = log
        .rule(&a, &agent(), "confusable_service")
        .expect("rn for m is in the confusables data");
    assert!(
        why.contains("rnail.example looks like mail.example"),
        "{why}"
    );
}

#[test]
fn the_summary_does_not_mention_the_amount() {
    let log = Log::new();
    let vague = Ask {
        summary: "Order 3 items",
        ..Ask::default()
    };
    let why = log
        .rule(&vague, &agent(), "summary_without_amount")
        .expect("the summary names no amount");
    assert!(
        why.contains("names no amount") && why.contains("5.00 USD"),
        "{why}"
    );
    assert_eq!(
        log.rule(&Ask::default(), &agent(), "summary_without_amount"),
        None,
        "it says 5.00 USD"
    );
}

#[test]
fn every_rule_in_the_table_has_a_test_here() {
    let src = include_str!("unusual_rules.rs");
    for r in RULES {
        assert!(
            src.matches(&format!("\"{}\"", r.name)).count() >= 2,
            "rule {} has no test",
            r.name
        );
    }
}

#[test]
fn the_agents_record_counts_signed_consents_per_currency_and_live_grants() {
    let mut log = Log::new();
    log.approved(&agent(), "shop.example", 10_000, "USD", 3600);
    log.approved(&agent(), "shop.example", 8_420, "USD", 3 * 86_400);
    log.approved(&agent(), "shop.example", 1_000, "EUR", 2 * 86_400);
    log.approved(&agent(), "shop.example", 99_999, "USD", 30 * 86_400);
    log.approved(&other_agent(), "shop.example", 777, "USD", 60);
    log.granted(&agent(), "shop.example", json!([]), 3600);
    log.granted(&agent(), "shop.example", json!([]), -3600);
    let a = AgentActivity::of_agent(&log.audit, &agent(), unix_now()).unwrap();
    assert_eq!(a.consents, 4);
    assert_eq!(a.consents_week, 3);
    assert_eq!(a.spent_week, ["10.00 EUR", "184.20 USD"]);
    assert_eq!(a.spent_day, ["100.00 USD"]);
    assert_eq!(a.live_grants, 1);
    assert_eq!(
        a.words,
        "this agent: 4 consents signed, 3 consents this week, 10.00 EUR + 184.20 USD \
         (100.00 USD in the last 24 h), 1 grant live now"
    );
    let none =
        AgentActivity::of_agent(&log.audit, &key(9).public().to_string(), unix_now()).unwrap();
    assert_eq!(
        none.words,
        "this agent: 0 consents signed, 0 grants live now"
    );
}

// ---- through the engine ----

async fn custody() -> TestCustody {
    TestCustody::start(Keys::File, no_step_up()).await
}

fn frame(id: &str, a: &Ask, principal: &PublicKey) -> Request {
    let p = proposal(a, unix_now());
    let v = json!({"custody": 1, "id": id, "op": "consent", "service": a.service,
                   "agent": agent(), "proposal": p, "consent": consent_obj(a, &p, principal)});
    Request::from_value(&v).unwrap()
}

fn this_process() -> PeerInfo {
    PeerInfo::from_creds(
        nix::unistd::Uid::effective().as_raw(),
        nix::unistd::Gid::effective().as_raw(),
        Some(std::process::id()),
    )
}

/// Submits `a`; returns the review shown and the channel of replies.
async fn ask(
    c: &mut TestCustody,
    id: &str,
    a: &Ask<'_>,
) -> (parley_custody::approver::PendingView, mpsc::Receiver<Value>) {
    let mut rx = c.submit(&this_process(), frame(id, a, &c.principal));
    tokio::select! {
        shown = c.shown.recv() => (shown.expect("shown"), rx),
        reply = rx.recv() => match reply {
            Some(r) if r["kind"] == "PENDING" => {
                let shown = tokio::time::timeout(Duration::from_secs(30), c.shown.recv())
                    .await
                    .expect("shown in time")
                    .expect("shown");
                (shown, rx)
            }
            other => panic!("{id} was not shown: {other:?}"),
        },
        _ = tokio::time::sleep(Duration::from_secs(30)) => panic!("{id} was not shown in 30 s"),
    }
}

#[test]
fn the_engine_warns_of_a_tenfold_cost_and_a_look_alike_service_and_shows_the_record() {
    rt().block_on(async {
        let mut c = custody().await;
        let (first, _rx) = ask(&mut c, "r1", &Ask::default()).await;
        let rules: Vec<&str> = first.review.unusual.iter().map(|u| u.rule).collect();
        assert_eq!(
            rules,
            ["first_consent_at_service", "first_request_from_agent"]
        );
        assert!(first
            .review
            .warnings
            .iter()
            .any(|w| w.starts_with("First consent at shop.example")));
        assert!(!first.review.requester.chain_line.is_empty());
        let yes = Yes {
            gesture: Gesture::Click,
            second_confirmation: true,
        };
        c.engine
            .decide(&first.id, Verdict::Approve(yes))
            .await
            .unwrap();

        let big = Ask {
            cost: Some((5000, "USD")),
            summary: "Order for 50.00 USD",
            ..Ask::default()
        };
        let (second, _rx2) = ask(&mut c, "r2", &big).await;
        let rules: Vec<&str> = second.review.unusual.iter().map(|u| u.rule).collect();
        assert_eq!(rules, ["cost_far_above_history"]);
        assert!(
            second
                .review
                .warnings
                .iter()
                .any(|w| w.contains("10× this agent's largest at shop.example (5.00 USD)")),
            "{:#?}",
            second.review.warnings
        );
        let record = second.review.activity.as_ref().expect("the agent's record");
        assert_eq!(record.consents, 1);
        assert!(record.words.contains("5.00 USD"), "{}", record.words);
        c.engine
            .decide(&second.id, Verdict::Deny(None))
            .await
            .unwrap();

        let lookalike = Ask {
            service: "shop.examp1e",
            ..Ask::default()
        };
        let (third, _rx3) = ask(&mut c, "r3", &lookalike).await;
        let rules: Vec<&str> = third.review.unusual.iter().map(|u| u.rule).collect();
        assert_eq!(rules, ["confusable_service", "first_consent_at_service"]);

        // The approved consent's row holds the process chain, this test at its head.
        let rows = c.rows(EventKind::ConsentApproved);
        let chain: Value = serde_json::from_str(rows[0].peer_chain.as_deref().unwrap()).unwrap();
        assert_eq!(chain[0]["pid"], json!(std::process::id()));
        assert_eq!(chain[0]["same"], json!(true));
        assert!(Audit::open(&c.audit_path).unwrap().verify().unwrap().ok);
    });
}

/// What the rules find for `a` from `agent`, asked by `uid` running `exe`,
/// with the human's `label` for the key (if any).
fn findings_as(
    log: &Log,
    a: &Ask,
    agent: &str,
    uid: u32,
    exe: &str,
    label: Option<&str>,
) -> Vec<(&'static str, String)> {
    let now = unix_now();
    let principals = [principal()];
    let ctx = ReviewContext {
        now,
        principals: &principals,
        principal_labels: &[],
        limits: ReviewLimits::default(),
        requester: Requester::from(&PeerInfo::from_creds(uid, uid, None)),
        agent_label: label.map(str::to_owned),
        agent_known: false,
    };
    let p = proposal(a, now);
    let c = review::review_consent(
        &consent_obj(a, &p, &principal()),
        &p,
        a.service,
        agent,
        &ctx,
    )
    .expect("the request passes review");
    let s = Subject::of_consent(&c).asked_by(uid, Some(exe));
    let facts = Facts::gather(&log.audit, &s, now).unwrap();
    unusual::assess(&s, &facts)
        .into_iter()
        .map(|u| (u.rule, u.reason))
        .collect()
}

fn has(found: &[(&'static str, String)], rule: &str) -> Option<String> {
    assert!(RULES.iter().any(|r| r.name == rule), "no rule {rule}");
    found
        .iter()
        .find(|(r, _)| *r == rule)
        .map(|(_, w)| w.clone())
}

impl Log {
    /// A consent approved for `agent` asked by `uid` running `exe`.
    fn approved_from(&mut self, agent: &str, uid: u32, exe: &str) {
        let now = unix_now();
        self.audit
            .append(&NewEvent {
                agent: Some(agent.into()),
                service: Some("shop.example".into()),
                cost_amount: Some(500),
                cost_currency: Some("USD".into()),
                peer_uid: Some(uid),
                peer_exe: Some(exe.into()),
                expires: Some(now + 600),
                ..NewEvent::new(EventKind::ConsentApproved, now - 60)
            })
            .unwrap();
    }
}

#[test]
fn an_unknown_agent_key_says_so_with_its_words_until_approved_or_named() {
    let mut log = Log::new();
    // Custody heard of it (a denied request) but the human never signed for it.
    log.audit
        .append(&NewEvent {
            agent: Some(agent()),
            ..NewEvent::new(EventKind::ConsentDenied, unix_now() - 5)
        })
        .unwrap();
    let found = findings_as(
        &log,
        &Ask::default(),
        &agent(),
        1001,
        "/usr/bin/python3",
        None,
    );
    let why = has(&found, "unknown_agent_key").expect("never approved, never named");
    let words = parley_custody::fingerprint::phrase(&key(2).public());
    assert!(why.contains(&words), "{why} names the key's words {words}");
    // A key custody never heard of is the first-request rule, not both.
    let fresh = findings_as(&log, &Ask::default(), &other_agent(), 1001, "/x", None);
    assert!(has(&fresh, "first_request_from_agent").is_some());
    assert_eq!(has(&fresh, "unknown_agent_key"), None);
    // Named by the human: known.
    let named = findings_as(&log, &Ask::default(), &agent(), 1001, "/x", Some("shopper"));
    assert_eq!(has(&named, "unknown_agent_key"), None);
    // Approved once: known.
    log.approved_from(&agent(), 1001, "/usr/bin/python3");
    let approved = findings_as(
        &log,
        &Ask::default(),
        &agent(),
        1001,
        "/usr/bin/python3",
        None,
    );
    assert_eq!(has(&approved, "unknown_agent_key"), None);
}

#[test]
fn a_known_agent_key_from_another_os_user_is_flagged() {
    let mut log = Log::new();
    log.approved_from(&agent(), 1001, "/usr/bin/python3");
    let same = findings_as(
        &log,
        &Ask::default(),
        &agent(),
        1001,
        "/usr/bin/python3",
        None,
    );
    assert_eq!(has(&same, "agent_from_other_user"), None);
    let other = findings_as(
        &log,
        &Ask::default(),
        &agent(),
        1002,
        "/usr/bin/python3",
        None,
    );
    let why = has(&other, "agent_from_other_user").expect("uid 1002 is not 1001");
    assert!(
        why.contains("uid 1001") && why.contains("uid 1002"),
        "{why}"
    );
    // Another agent's history is no yardstick.
    let stranger = findings_as(&log, &Ask::default(), &other_agent(), 1002, "/x", None);
    assert_eq!(has(&stranger, "agent_from_other_user"), None);
}

#[test]
fn a_known_agent_key_from_another_program_is_flagged_and_shown_safely() {
    let mut log = Log::new();
    log.approved_from(&agent(), 1001, "/usr/bin/python3");
    let same = findings_as(
        &log,
        &Ask::default(),
        &agent(),
        1001,
        "/usr/bin/python3",
        None,
    );
    assert_eq!(has(&same, "agent_from_other_exe"), None);
    let odd = "/tmp/\u{202e}3nohtyp";
    let other = findings_as(&log, &Ask::default(), &agent(), 1001, odd, None);
    let why = has(&other, "agent_from_other_exe").expect("another executable");
    assert!(why.contains("/usr/bin/python3"), "{why}");
    assert!(
        why.contains("\\u{202e}") && !why.contains('\u{202e}'),
        "{why}"
    );
}
