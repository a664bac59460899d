//! YEA job approvals through custody (SPEC-approval §6): an `approve_code`
//! whose code carries `detail.job` is checked against its job, shown with
//! the phrase to type, approved only with that phrase typed, and signed into
//! exactly the consent a job server accepts. Bad codes are refused before
//! anything is shown, each with a `request_rejected` row naming the check.
//!
//! Real parts, as in `review_rejections.rs`: gnome-keyring in a private
//! D-Bus session, the real socket, the real SQLite audit file.

mod support;

use parley_core::job;
use parley_core::{PublicKey, SecretKey};
use parley_custody::approver::{Gesture, Verdict, Yes};
use parley_custody::audit::{EventKind, Query};
use parley_custody::engine::{unix_now, DecideError};
use serde_json::{json, Value};
use std::time::Duration;
use support::agent::Agent;
use support::custody::{no_step_up, Keys, TestCustody};
use support::requests::agent_key;
use support::{in_session, rt_per_core, Session};
use zeroize::Zeroizing;

const WAIT: Duration = Duration::from_secs(20);

const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};

fn server_key() -> PublicKey {
    SecretKey::from_seed(&Zeroizing::new([5u8; 32])).public()
}

fn stranger_key() -> PublicKey {
    SecretKey::from_seed(&Zeroizing::new([6u8; 32])).public()
}

/// The refund plan of upstream's vectors.
fn refund_plan() -> Value {
    json!({
        "summary": "Refund 30.00 USD to Chen",
        "effects": [{"op": "create", "target": "refund", "detail": "30.00 USD to card ••42"}],
        "uses": {"spend": {"amount": 3000, "scale": 2, "unit": "USD"}},
        "risk": "low", "undoWindow": 60
    })
}

/// A job code as a job server hands it out, for `principal`.
fn job_code(principal: &PublicKey, input: Value, phrase: &str) -> (String, job::JobPlan) {
    let plan = job::plan_of("refund", None, &input, &refund_plan()).unwrap();
    let request = job::consent_request(&plan, &server_key(), principal, unix_now());
    (job::encode_code(&request, &plan, phrase).unwrap(), plan)
}

/// A code whose body was edited after encoding (what a hostile server or
/// agent can send).
fn edited(code: &str, edit: impl FnOnce(&mut Value)) -> String {
    let bytes = parley_core::b64::decode(&code[4..]).unwrap();
    let mut body: Value = serde_json::from_slice(&bytes).unwrap();
    edit(&mut body);
    format!(
        "pc1.{}",
        parley_core::b64::encode(parley_core::canonical::canonical(&body).unwrap())
    )
}

fn request(id: &str, code: &str) -> Value {
    json!({"custody": 1, "id": id, "op": "approve_code", "code": code,
           "agent": agent_key().to_string(), "dialect": "yea1"})
}

async fn start() -> TestCustody {
    let mut config = no_step_up();
    config.queue.per_minute = 10_000;
    config.retention.rejections_per_hour = 10_000;
    let mut c = TestCustody::start(Keys::Keychain, config).await;
    c.serve();
    c
}

#[test]
fn a_job_code_is_shown_approved_only_with_its_phrase_and_signed_for_the_server() {
    if !in_session(
        "a_job_code_is_shown_approved_only_with_its_phrase_and_signed_for_the_server",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start().await;
        let mut agent = Agent::connect(&c.socket).await;
        let input = json!({"charge": "ch_1", "who": "Chen \u{202e}evil"});
        let (code, plan) = job_code(&c.principal, input, "ch_1");
        agent.send(&request("job1", &code)).await;
        let shown = tokio::time::timeout(WAIT, c.shown.recv())
            .await
            .expect("the job reaches the human")
            .unwrap();
        let r = &shown.review;
        let j = r.job.as_ref().expect("a job review");
        assert_eq!(j.tool, "refund");
        assert_eq!(j.phrase, "ch_1");
        assert_eq!(j.plan_hash, plan.hash);
        // Hostile text in the input is shown escaped, never raw.
        let input = j.input.join("\n");
        assert!(input.contains("\\u{202e}"), "{input}");
        assert!(!input.contains('\u{202e}'), "{input}");
        assert_eq!(
            r.agent.key,
            server_key().to_string(),
            "the holder is the server"
        );
        assert_eq!(r.agent.phrase.split(' ').count(), 4, "four words");
        assert_eq!(r.capability, "refund");
        assert_eq!(r.hash, plan.hash);
        assert_eq!(r.undo, "1m");
        assert_eq!(r.uses[0].words, "30.00 USD");
        assert_eq!(r.their_words, "Refund 30.00 USD to Chen");
        assert!(r.effects[0].line.contains("refund"), "{:?}", r.effects);

        // Approve without the phrase, or with the wrong one: nothing signed, still pending.
        let e = c
            .engine
            .decide(&shown.id, Verdict::Approve(YES))
            .await
            .unwrap_err();
        assert!(matches!(e, DecideError::Phrase(_)), "{e}");
        let e = c
            .engine
            .decide(&shown.id, Verdict::ApproveTyped(YES, "approve".into()))
            .await
            .unwrap_err();
        assert!(matches!(e, DecideError::Phrase(_)), "{e}");
        // Typed as a person would: case and edge spaces do not matter.
        c.engine
            .decide(&shown.id, Verdict::ApproveTyped(YES, "  CH_1 ".into()))
            .await
            .unwrap();
        let fin = agent.final_for("job1").await;
        assert_eq!(fin["kind"], "APPROVED", "{fin}");
        let token = fin["grant"].as_str().unwrap();
        // Exactly the consent the server accepts, once, for this plan only.
        let id = job::check_job_consent(
            token,
            &plan.hash,
            "refund",
            &server_key(),
            &c.principal,
            unix_now(),
        )
        .expect("the server accepts it");
        let g = parley_core::grant::UnverifiedGrant::decode(token).unwrap();
        assert_eq!(g.blocks().len(), 1);
        assert_eq!(g.blocks()[0].caveats().len(), 5);
        assert!(g.expiry().unwrap() <= unix_now() + 600);
        let rows = c.rows(EventKind::ConsentApproved);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].hash.as_deref(), Some(plan.hash.as_str()));
        assert_eq!(rows[0].capability.as_deref(), Some("refund"));
        assert_eq!(rows[0].token_id.as_deref(), Some(id.as_str()));
        assert_eq!(
            rows[0].agent.as_deref(),
            Some(server_key().to_string().as_str())
        );
    });
}

struct Case {
    name: &'static str,
    code: &'static str,
    request: Value,
}

#[test]
fn bad_job_codes_are_refused_before_anything_is_shown() {
    if !in_session(
        "bad_job_codes_are_refused_before_anything_is_shown",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start().await;
        let mut agent = Agent::connect(&c.socket).await;
        let pk = c.principal.clone();
        let (good, _) = job_code(&pk, json!({"charge": "ch_1"}), "approve");
        let (untypeable, _) = job_code(&pk, json!({"charge": "ch_1"}), "ch_1\u{85}");
        let (tab_inside, _) = job_code(&pk, json!({"charge": "ch_1"}), "ch\t1");
        let (stranger, _) = job_code(&stranger_key(), json!({"charge": "ch_1"}), "approve");
        let cases = vec![
            Case {
                name: "a_code_whose_job_does_not_hash_to_its_hash",
                code: "hash_mismatch",
                request: request(
                    "h",
                    &edited(&good, |b| {
                        b["detail"]["job"]["input"]["charge"] = "ch_2".into()
                    }),
                ),
            },
            Case {
                name: "a_code_whose_tool_is_not_its_capability",
                code: "capability_mismatch",
                request: request(
                    "cap",
                    &edited(&good, |b| b["capability"] = "refund_all".into()),
                ),
            },
            Case {
                name: "a_code_whose_summary_is_not_its_jobs",
                code: "summary_mismatch",
                request: request(
                    "sum",
                    &edited(&good, |b| b["summary"] = "Refund 1 USD to a friend".into()),
                ),
            },
            Case {
                name: "an_expired_code",
                code: "expired",
                request: request(
                    "exp",
                    &edited(&good, |b| b["expires"] = (unix_now() - 1).into()),
                ),
            },
            Case {
                name: "a_code_for_another_principal",
                code: "other_principal",
                request: request("other", &stranger),
            },
            Case {
                name: "a_code_whose_input_holds_a_float",
                code: "non_integer",
                request: request(
                    "float",
                    &format!(
                        "pc1.{}",
                        parley_core::b64::encode(
                            String::from_utf8(parley_core::b64::decode(&good[4..]).unwrap())
                                .unwrap()
                                .replace("\"charge\":\"ch_1\"", "\"charge\":1.5")
                        )
                    ),
                ),
            },
            Case {
                name: "a_phrase_that_cannot_be_typed",
                code: "phrase_untypeable",
                request: request("phrase", &untypeable),
            },
            Case {
                name: "a_phrase_with_a_tab_inside",
                code: "phrase_untypeable",
                request: request("tab", &tab_inside),
            },
        ];
        let mut failures = Vec::new();
        for case in &cases {
            let before = c.rows(EventKind::RequestRejected).len();
            let reply = agent.ask(&case.request, WAIT).await.unwrap();
            if reply["kind"] != "REJECTED" || reply["code"] != case.code {
                failures.push(format!(
                    "{}: expected REJECTED {}, got {reply}",
                    case.name, case.code
                ));
            }
            if let Ok(shown) = c.shown.try_recv() {
                failures.push(format!("{}: shown to the human", case.name));
                let _ = c.engine.decide(&shown.id, Verdict::Deny(None)).await;
            }
            let rows = c.rows(EventKind::RequestRejected);
            if rows.len() != before + 1 {
                failures.push(format!("{}: no audit row", case.name));
                continue;
            }
            let reason = rows[0].reason.clone().unwrap_or_default();
            if !reason.starts_with(&format!("{}: ", case.code)) {
                failures.push(format!("{}: audit reason {reason:?}", case.name));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let signed = c.engine.with_audit(|a| {
            a.query(&Query {
                kinds: vec![EventKind::ConsentApproved],
                ..Default::default()
            })
            .unwrap()
        });
        assert!(signed.is_empty());
    });
}

#[test]
fn a_paused_agent_cannot_ask_through_a_job_code() {
    if !in_session(
        "a_paused_agent_cannot_ask_through_a_job_code",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let mut c = start().await;
        let mut agent = Agent::connect(&c.socket).await;
        let (code, _) = job_code(&c.principal, json!({"charge": "ch_1"}), "approve");
        // The asking agent is paused; the job server is not.
        c.engine
            .pause_agent(&agent_key().to_string(), Some(3600), "test")
            .unwrap();
        let reply = agent.ask(&request("p1", &code), WAIT).await.unwrap();
        assert_eq!(reply["kind"], "REJECTED", "{reply}");
        assert_eq!(reply["code"], "agent_paused", "{reply}");
        assert!(c.shown.try_recv().is_err(), "shown to the human");
        let rows = c.rows(EventKind::RequestRejected);
        assert_eq!(
            rows[0].agent.as_deref(),
            Some(agent_key().to_string().as_str())
        );
        // The server paused instead: refused too (its consents are the server's).
        c.engine.resume_agent(&agent_key().to_string()).unwrap();
        c.engine
            .pause_agent(&server_key().to_string(), None, "test")
            .unwrap();
        let reply = agent.ask(&request("p2", &code), WAIT).await.unwrap();
        assert_eq!(reply["code"], "agent_paused", "{reply}");
        assert!(c.shown.try_recv().is_err(), "shown to the human");
    });
}
