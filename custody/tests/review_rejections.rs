//! Re-verification, attack by attack (ARCHITECTURE.md, "Re-verification of a
//! consent request"): every request here is one a hostile agent or service
//! could send, and each must be answered `REJECTED` with the check that
//! caught it, logged as a `request_rejected` audit row with that reason, and
//! never shown to the human (the scripted approver is never notified).
//!
//! Real parts, as in `engine_e2e.rs`: gnome-keyring in a private D-Bus
//! session, the real socket, the real SQLite audit file. To keep the number
//! of keyring sessions low, each `#[test]` runs a table of named cases in one
//! session; every case is checked and every failing case is reported by name.
//! Each table starts with a well-formed control request that must reach the
//! human, so a rejection can never be blamed on a broken setup.

mod support;

use parley_core::code;
use parley_core::consent::ConsentRequest;
use parley_core::{PublicKey, SecretKey};
use parley_custody::approver::Verdict;
use parley_custody::audit::{Audit, EventKind, Query};
use parley_custody::engine::{unix_now, Engine};
use serde_json::{json, Value};
use std::time::Duration;
use support::agent::Agent;
use support::custody::{no_step_up, Keys, TestCustody};
use support::requests::{agent_key, consent_for, consent_request, rehash};
use support::{in_session, rt_per_core, Session};
use zeroize::Zeroizing;

/// The consent horizon configured for these tests (the default is a day).
const HORIZON: i64 = 3600;

async fn start() -> TestCustody {
    let mut config = no_step_up();
    config.review.max_consent_horizon = HORIZON;
    // Every case must reach re-verification, not the rate limiter.
    config.queue.per_minute = 10_000;
    // Every case's row is checked, so none may be summarized.
    config.retention.rejections_per_hour = 10_000;
    let mut c = TestCustody::start(Keys::Keychain, config).await;
    c.serve();
    c
}

/// Replies in these tests come at once or not at all.
const WAIT: Duration = Duration::from_secs(20);

fn stranger_key() -> PublicKey {
    SecretKey::from_seed(&Zeroizing::new([9u8; 32])).public()
}

/// A well-formed proposal, hashed.
fn proposal(id: &str, amount: i64) -> Value {
    let mut p = json!({
        "id": id, "capability": "shop.order", "summary": "Order 3 items",
        "effects": [
            {"op": "create", "target": "order"},
            {"op": "update", "target": "cart", "field": "items", "from": 3, "to": 0},
            {"op": "charge", "target": "card ••42", "detail": format!("{}.{:02} USD", amount / 100, amount % 100)}
        ],
        "cost": {"amount": amount, "currency": "USD"}, "risk": "medium",
        "undo": {"window": 1800}, "expires": unix_now() + 600
    });
    rehash(&mut p);
    p
}

/// A consent request for a variant of the good proposal: `edit` changes the
/// proposal (and says whether to recompute its hash); the consent is then
/// built to match it, so the edit is the only defect.
fn edited(id: &str, principal: &PublicKey, rehashed: bool, edit: impl FnOnce(&mut Value)) -> Value {
    let mut p = proposal("p_1", 7136);
    edit(&mut p);
    if rehashed {
        rehash(&mut p);
    }
    let consent = consent_for(&p, principal);
    consent_request(id, consent, p)
}

/// One attack and what must stop it.
struct Case {
    /// Named after the attack it stops (also the request id).
    name: &'static str,
    /// The expected `REJECTED` code.
    code: &'static str,
    /// Text the rejection's message must contain (which check fired).
    says: &'static str,
    request: Value,
}

fn case(name: &'static str, code: &'static str, says: &'static str, request: Value) -> Case {
    Case {
        name,
        code,
        says,
        request,
    }
}

fn rejected_rows(engine: &Engine) -> Vec<parley_custody::audit::Event> {
    engine.with_audit(|a| {
        a.query(&Query {
            kinds: vec![EventKind::RequestRejected],
            limit: Some(10_000),
            ..Default::default()
        })
        .unwrap()
    })
}

/// Sends a control request that must reach the human, then denies it.
async fn control(c: &mut TestCustody, agent: &mut Agent) {
    let p = proposal("p_control", 100);
    let req = consent_request("control", consent_for(&p, &c.principal), p);
    agent.w.send(&req).await.unwrap();
    let shown = tokio::time::timeout(Duration::from_secs(20), c.shown.recv())
        .await
        .expect("the well-formed control request reaches the human")
        .unwrap();
    c.engine
        .decide(&shown.id, Verdict::Deny(Some("control".into())))
        .await
        .unwrap();
    let fin = agent
        .ask(
            &json!({"custody": 1, "id": "control-status", "op": "status", "request": "control"}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(fin["state"], "denied", "{fin}");
}

/// Runs every case; returns one line per failed check, naming the case.
async fn run_cases(c: &mut TestCustody, agent: &mut Agent, cases: Vec<Case>) -> Vec<String> {
    let me = nix::unistd::getuid().as_raw();
    let mut failures = Vec::new();
    let mut names = std::collections::HashSet::new();
    for case in cases {
        assert!(names.insert(case.name), "duplicate case name {}", case.name);
        let mut fail = |what: String| failures.push(format!("{}: {what}", case.name));
        let before = rejected_rows(&c.engine).len();
        let reply = match agent.ask(&case.request, WAIT).await {
            Ok(r) => r,
            Err(e) => {
                fail(e);
                continue;
            }
        };
        if reply["kind"] != "REJECTED" {
            fail(format!("expected REJECTED, got {reply}"));
        } else {
            if reply["code"] != case.code {
                fail(format!(
                    "expected code {:?}, got {} ({})",
                    case.code, reply["code"], reply["message"]
                ));
            }
            let message = reply["message"].as_str().unwrap_or("");
            if !message.contains(case.says) {
                fail(format!(
                    "the message should say {:?}, it says {message:?}",
                    case.says
                ));
            }
        }
        // The approver is told before any PENDING is sent, so by the time a
        // final reply arrives a notification would already be in the channel.
        if let Ok(shown) = c.shown.try_recv() {
            fail(format!("the human was shown it (pending id {})", shown.id));
            let _ = c.engine.decide(&shown.id, Verdict::Deny(None)).await;
        }
        let rows = rejected_rows(&c.engine);
        if rows.len() != before + 1 {
            fail(format!(
                "expected one new request_rejected row, found {}",
                rows.len() as i64 - before as i64
            ));
            continue;
        }
        let row = &rows[0];
        let reason = row.reason.as_deref().unwrap_or("");
        if !reason.starts_with(&format!("{}: ", case.code)) || !reason.contains(case.says) {
            fail(format!(
                "the audit row's reason should be \"{}: …{}…\", it is {reason:?}",
                case.code, case.says
            ));
        }
        if row.peer_uid != Some(me) {
            fail(format!(
                "the audit row names peer uid {:?}, not {me}",
                row.peer_uid
            ));
        }
        if row.agent.as_deref() != case.request["agent"].as_str() {
            fail(format!(
                "the audit row names agent {:?}, not the requesting one",
                row.agent
            ));
        }
    }
    failures
}

/// After a table: nothing else reached the human, nothing was signed, and
/// the log verifies.
async fn finish(c: &mut TestCustody, failures: Vec<String>, cases: usize) {
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(c.shown.try_recv().is_err(), "no late prompt");
    let audit = Audit::open(&c.audit_path).unwrap();
    let signed = audit
        .query(&Query {
            kinds: vec![EventKind::ConsentApproved, EventKind::GrantIssued],
            ..Default::default()
        })
        .unwrap();
    assert!(signed.is_empty(), "nothing was signed: {signed:?}");
    assert!(audit.verify().unwrap().ok);
    assert!(
        failures.is_empty(),
        "{} of {cases} attacks were not stopped as expected:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
    println!("{cases} attacks rejected, logged and never shown");
}

/// §6.6 checks 1–4: every field of the consent swapped, the proposal changed
/// after hashing, the consent for a key this custody does not hold, expiry
/// and the consent horizon.
#[test]
fn consents_that_do_not_match_the_proposal_are_rejected_unseen() {
    if !in_session(
        "consents_that_do_not_match_the_proposal_are_rejected_unseen",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start().await;
        let mut agent = Agent::connect(&c.socket).await;
        control(&mut c, &mut agent).await;
        let pk = c.principal.clone();
        let good = proposal("p_1", 7136);
        let swap = |name: &'static str, field: &str, v: Value| {
            let mut consent = consent_for(&good, &pk);
            consent[field] = v;
            consent_request(name, consent, good.clone())
        };
        let bigger = proposal("p_1", 999_900);
        let now = unix_now();
        let cases = vec![
            case(
                "swapped_proposal_id",
                "proposal_id_mismatch",
                "names proposal \"p_other\"",
                swap("swapped_proposal_id", "proposal", json!("p_other")),
            ),
            case(
                "swapped_hash_of_a_bigger_purchase",
                "hash_mismatch",
                "asks to approve hash",
                swap(
                    "swapped_hash_of_a_bigger_purchase",
                    "hash",
                    bigger["hash"].clone(),
                ),
            ),
            case(
                "swapped_service_in_the_consent",
                "service_mismatch",
                "for service \"bank.example\"",
                swap(
                    "swapped_service_in_the_consent",
                    "service",
                    json!("bank.example"),
                ),
            ),
            case(
                "swapped_service_the_agent_talked_to",
                "service_mismatch",
                "received the proposal from \"bank.example\"",
                {
                    let mut r = consent_request(
                        "swapped_service_the_agent_talked_to",
                        consent_for(&good, &pk),
                        good.clone(),
                    );
                    r["service"] = json!("bank.example");
                    r
                },
            ),
            case(
                "swapped_service_look_alike_unicode",
                "service_mismatch",
                "for service",
                swap(
                    "swapped_service_look_alike_unicode",
                    "service",
                    json!("shop.exаmple"),
                ),
            ),
            case(
                "swapped_capability",
                "capability_mismatch",
                "capability \"bank.transfer\"",
                swap("swapped_capability", "capability", json!("bank.transfer")),
            ),
            case(
                "principal_this_custody_does_not_hold",
                "unknown_principal",
                "which this custody does not hold",
                swap(
                    "principal_this_custody_does_not_hold",
                    "principal",
                    json!(stranger_key().to_string()),
                ),
            ),
            case(
                "principal_that_is_not_a_key",
                "malformed",
                "principal",
                swap(
                    "principal_that_is_not_a_key",
                    "principal",
                    json!("ed25519:AAAA"),
                ),
            ),
            case(
                "consent_without_a_hash",
                "malformed",
                "hash must be a string",
                {
                    let mut consent = consent_for(&good, &pk);
                    consent.as_object_mut().unwrap().remove("hash");
                    consent_request("consent_without_a_hash", consent, good.clone())
                },
            ),
            case(
                "cost_lowered_after_hashing",
                "proposal_hash",
                "hashes to",
                edited("cost_lowered_after_hashing", &pk, false, |p| {
                    p["cost"]["amount"] = json!(1)
                }),
            ),
            case(
                "effect_target_changed_after_hashing",
                "proposal_hash",
                "hashes to",
                edited("effect_target_changed_after_hashing", &pk, false, |p| {
                    p["effects"][2]["target"] = json!("card ••99")
                }),
            ),
            case(
                "effect_hidden_after_hashing",
                "proposal_hash",
                "hashes to",
                edited("effect_hidden_after_hashing", &pk, false, |p| {
                    p["effects"].as_array_mut().unwrap().pop();
                }),
            ),
            case(
                "undo_window_extended_after_hashing",
                "proposal_hash",
                "hashes to",
                edited("undo_window_extended_after_hashing", &pk, false, |p| {
                    p["undo"]["window"] = json!(86_400)
                }),
            ),
            case(
                "claimed_hash_is_not_base64",
                "proposal_hash",
                "hashes to",
                {
                    let mut p = good.clone();
                    p["hash"] = json!("not-the-hash");
                    let consent = consent_for(&p, &pk);
                    consent_request("claimed_hash_is_not_base64", consent, p)
                },
            ),
            case(
                "proposal_already_expired",
                "expired",
                "expired at",
                edited("proposal_already_expired", &pk, true, |p| {
                    p["expires"] = json!(now - 5)
                }),
            ),
            case("consent_already_expired", "expired", "expired at", {
                let mut consent = consent_for(&good, &pk);
                consent["expires"] = json!(now - 5);
                consent_request("consent_already_expired", consent, good.clone())
            }),
            case(
                "proposal_beyond_the_consent_horizon",
                "horizon",
                "consents are limited to",
                edited("proposal_beyond_the_consent_horizon", &pk, true, |p| {
                    p["expires"] = json!(now + 2 * HORIZON)
                }),
            ),
            case(
                "proposal_expiring_in_a_century",
                "horizon",
                "consents are limited to",
                edited("proposal_expiring_in_a_century", &pk, true, |p| {
                    p["expires"] = json!(now + 100 * 365 * 86_400)
                }),
            ),
        ];
        let n = cases.len();
        let failures = run_cases(&mut c, &mut agent, cases).await;
        finish(&mut c, failures, n).await;
    });
}

/// Checks 1, 5 and 6 and the code path: floats in hashed fields, malformed
/// effects, cost, risk and undo, bad agent keys, `pc1.` codes without (or
/// with a tampered) proposal, and wildcard capabilities.
#[test]
fn malformed_proposals_keys_codes_and_wildcards_are_rejected_unseen() {
    if !in_session(
        "malformed_proposals_keys_codes_and_wildcards_are_rejected_unseen",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start().await;
        let mut agent = Agent::connect(&c.socket).await;
        control(&mut c, &mut agent).await;
        let pk = c.principal.clone();
        let good = proposal("p_1", 7136);
        let me = agent_key().to_string();
        let code_req = |name: &'static str, code: String| {
            json!({"custody": 1, "id": name, "op": "approve_code", "code": code, "agent": me})
        };
        let request = ConsentRequest::from_value(&consent_for(&good, &pk)).unwrap();
        let mut tampered = good.clone();
        tampered["cost"]["amount"] = json!(1);
        let with_agent = |name: &'static str, key: &str| {
            let mut r = consent_request(name, consent_for(&good, &pk), good.clone());
            r["agent"] = json!(key);
            r
        };
        let cases = vec![
            case(
                "float_in_a_hashed_effect_value",
                "proposal_malformed",
                "cannot be hashed",
                edited("float_in_a_hashed_effect_value", &pk, false, |p| {
                    p["effects"][1]["to"] = json!(0.5)
                }),
            ),
            case(
                "integral_float_in_a_hashed_effect_value",
                "proposal_malformed",
                "cannot be hashed",
                edited("integral_float_in_a_hashed_effect_value", &pk, false, |p| {
                    p["effects"][1]["from"] = json!(3.0)
                }),
            ),
            case(
                "unsafe_integer_in_a_hashed_effect_value",
                "proposal_malformed",
                "cannot be hashed",
                edited("unsafe_integer_in_a_hashed_effect_value", &pk, false, |p| {
                    p["effects"][1]["to"] = json!(1_i64 << 60)
                }),
            ),
            case(
                "float_cost_amount",
                "proposal_malformed",
                "cost must be null or",
                edited("float_cost_amount", &pk, false, |p| {
                    p["cost"]["amount"] = json!(71.36)
                }),
            ),
            case(
                "float_expiry",
                "proposal_malformed",
                "expires must be an integer",
                {
                    // The consent's own expiry stays an integer: only the
                    // proposal carries the float.
                    let mut p = good.clone();
                    p["expires"] = json!(p["expires"].as_i64().unwrap() as f64 + 0.5);
                    consent_request("float_expiry", consent_for(&good, &pk), p)
                },
            ),
            case(
                "effect_op_outside_the_enum",
                "proposal_malformed",
                "op must be one of create, update, delete, send, charge, other in Parley v1",
                edited("effect_op_outside_the_enum", &pk, true, |p| {
                    p["effects"][2]["op"] = json!("transfer")
                }),
            ),
            case(
                "effect_from_is_an_object",
                "proposal_malformed",
                "from must be a scalar",
                edited("effect_from_is_an_object", &pk, true, |p| {
                    p["effects"][1]["from"] = json!({"items": 3})
                }),
            ),
            case(
                "effect_to_is_a_list",
                "proposal_malformed",
                "to must be a scalar",
                edited("effect_to_is_a_list", &pk, true, |p| {
                    p["effects"][1]["to"] = json!([0])
                }),
            ),
            case(
                "effect_with_an_unknown_field",
                "proposal_malformed",
                "unknown field \"payee\"",
                edited("effect_with_an_unknown_field", &pk, true, |p| {
                    p["effects"][2]["payee"] = json!("attacker")
                }),
            ),
            case(
                "proposal_with_an_unknown_hashed_field",
                "proposal_malformed",
                "unknown field \"also_charge\"",
                edited("proposal_with_an_unknown_hashed_field", &pk, true, |p| {
                    p["also_charge"] = json!({"amount": 100_000, "currency": "USD"})
                }),
            ),
            case(
                "cost_amount_as_text",
                "proposal_malformed",
                "cost must be null or",
                edited("cost_amount_as_text", &pk, true, |p| {
                    p["cost"]["amount"] = json!("71.36")
                }),
            ),
            case(
                "cost_currency_not_iso",
                "proposal_malformed",
                "cost must be null or",
                edited("cost_currency_not_iso", &pk, true, |p| {
                    p["cost"]["currency"] = json!("usd")
                }),
            ),
            case(
                "cost_with_a_hidden_extra_amount",
                "proposal_malformed",
                "cost must be null or",
                edited("cost_with_a_hidden_extra_amount", &pk, true, |p| {
                    p["cost"]["tax"] = json!(90_000)
                }),
            ),
            case(
                "cost_as_a_bare_number",
                "proposal_malformed",
                "cost must be null or",
                edited("cost_as_a_bare_number", &pk, true, |p| {
                    p["cost"] = json!(7136)
                }),
            ),
            case(
                "risk_outside_the_enum",
                "proposal_malformed",
                "risk must be low, medium or high",
                edited("risk_outside_the_enum", &pk, true, |p| {
                    p["risk"] = json!("negligible")
                }),
            ),
            case(
                "risk_in_another_case",
                "proposal_malformed",
                "risk must be low, medium or high",
                edited("risk_in_another_case", &pk, true, |p| {
                    p["risk"] = json!("LOW")
                }),
            ),
            case(
                "undo_window_as_text",
                "proposal_malformed",
                "undo.window must be a non-negative integer",
                edited("undo_window_as_text", &pk, true, |p| {
                    p["undo"] = json!({"window": "30m"})
                }),
            ),
            case(
                "undo_window_negative",
                "proposal_malformed",
                "undo.window must be a non-negative integer",
                edited("undo_window_negative", &pk, true, |p| {
                    p["undo"] = json!({"window": -1})
                }),
            ),
            case(
                "agent_key_too_short",
                "agent_key",
                "the agent key is not usable",
                with_agent("agent_key_too_short", "ed25519:AAAA"),
            ),
            case(
                "agent_key_of_another_algorithm",
                "agent_key",
                "the agent key is not usable",
                with_agent(
                    "agent_key_of_another_algorithm",
                    &format!("rsa:{}", &agent_key().to_string()["ed25519:".len()..]),
                ),
            ),
            case(
                "agent_key_with_control_characters",
                "agent_key",
                "the agent key is not usable",
                with_agent("agent_key_with_control_characters", "ed25519:\u{202e}\u{0}xyz"),
            ),
            case(
                "code_without_the_proposal",
                "code_without_proposal",
                "carries no proposal",
                code_req(
                    "code_without_the_proposal",
                    code::encode(&request, None).unwrap(),
                ),
            ),
            case(
                "code_with_a_tampered_proposal",
                "proposal_hash",
                "hashes to",
                code_req(
                    "code_with_a_tampered_proposal",
                    code::encode(&request, Some(&tampered)).unwrap(),
                ),
            ),
            case(
                "code_that_is_not_a_code",
                "code",
                "pc1.",
                code_req("code_that_is_not_a_code", "pc2.eyJ9".into()),
            ),
            case(
                "code_with_a_bad_agent_key",
                "agent_key",
                "the agent key is not usable",
                json!({"custody": 1, "id": "code_with_a_bad_agent_key", "op": "approve_code",
                       "code": code::encode(&request, Some(&good)).unwrap(), "agent": "ed25519:AAAA"}),
            ),
            case(
                "wildcard_capability",
                "unscopable",
                "not a plain name",
                edited("wildcard_capability", &pk, true, |p| {
                    p["capability"] = json!("*")
                }),
            ),
            case(
                "prefix_wildcard_capability",
                "unscopable",
                "not a plain name",
                edited("prefix_wildcard_capability", &pk, true, |p| {
                    p["capability"] = json!("shop.*")
                }),
            ),
        ];
        let n = cases.len();
        let failures = run_cases(&mut c, &mut agent, cases).await;
        finish(&mut c, failures, n).await;
    });
}
