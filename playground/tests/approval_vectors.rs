//! YEA's approval vectors (`conformance/yea/approval.json`, SPEC-approval)
//! through the playground job server's side: the policy decision
//! (`decide`), the unsigned policy (`tightening`) and the file store's
//! format for the server's own files (`fileStore`: consumed, ledger).
//! `hash`, `consentCode`, `consents`, `phrases`, `phraseChecks` and the
//! consent file run against parley-core's `job` module and custody-client's
//! store, which this server uses (core/tests/conformance_approval.rs,
//! custody-client/tests/approval_vectors.rs).
//!
//! `forms` (the in-chat approval form), `states` (the state that goes
//! round the client), `judge` (the answer checked against the plans
//! recomputed) and `undo` run through the server's `form`,
//! `request_state` and `undo` modules.

use parley_core::job::JobPlan;
use parley_core::quantity::{Exact, Quantity, Uses};
use parley_core::{PublicKey, RiskLevel};
use parley_custody_client::phrase::phrase_for;
use parley_playground::jobs::form::{approval_form, judge, Answer, AskPolicy, AskedPlan, Verdict};
use parley_playground::jobs::policy::{decide, read_tightening, Candidate, Decision, Policy};
use parley_playground::jobs::request_state::RequestState;
use parley_playground::jobs::store::FileStore;
use parley_playground::jobs::undo::{undo, Undo};
use serde_json::{json, Value};
use std::path::PathBuf;

fn vectors() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/yea/approval.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn key(v: &Value) -> PublicKey {
    v.as_str().unwrap().parse().unwrap()
}

/// A vector's `{tool, plan, planHash, risk, undoable}` as the decision reads it.
fn candidate(p: &Value) -> Candidate {
    Candidate {
        tool: p["tool"].as_str().unwrap().into(),
        hash: p["planHash"].as_str().unwrap().into(),
        risk: p["risk"].as_str().unwrap().into(),
        undoable: p["undoable"].as_bool().unwrap(),
        uses: p["plan"].get("uses").cloned(),
    }
}

#[test]
fn decide_vectors_give_upstreams_decision_and_words() {
    let v = vectors();
    let cases = v["decide"].as_array().unwrap();
    assert_eq!(cases.len(), 28);
    let mut failures = Vec::new();
    for c in cases {
        let p = &c["policy"];
        let policy = Policy {
            grant: p["grant"].as_str().map(str::to_string),
            principal: key(&p["principal"]),
            server: key(&p["server"]),
            deny: p["deny"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_string())
                .collect(),
            out_of_band: RiskLevel::parse(p["outOfBand"].as_str().unwrap()).unwrap(),
        };
        let plans: Vec<Candidate> = c["plans"]
            .as_array()
            .unwrap()
            .iter()
            .map(candidate)
            .collect();
        // `used` names a measure; the cases' policies have one block with totals.
        let used_map = c["used"].as_object().unwrap().clone();
        let used = |_block: &str, of: &str| {
            used_map
                .get(of)
                .map(|q| Quantity::from_value(q, of).unwrap().exact())
                .unwrap_or(Exact(0))
        };
        let got = decide(&plans, &policy, used, c["now"].as_i64().unwrap());
        let e = &c["expect"];
        let want_why = e["why"].as_str().unwrap_or("");
        let ok = match (&got, e["kind"].as_str().unwrap()) {
            (Decision::Nothing, "nothing") => true,
            (Decision::Denied { why }, "denied")
            | (Decision::OutOfBand { why }, "out-of-band")
            | (Decision::Ask { why }, "ask") => why == want_why,
            (Decision::Run { hash, reserve }, "run") => {
                let want: Vec<(String, String, String, String)> = e["reserve"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        (
                            r["key"]["block"].as_str().unwrap().into(),
                            r["key"]["of"].as_str().unwrap().into(),
                            r["amount"].as_str().unwrap().into(),
                            r["max"].as_str().unwrap().into(),
                        )
                    })
                    .collect();
                let have: Vec<(String, String, String, String)> = reserve
                    .iter()
                    .map(|r| {
                        (
                            r.block.clone(),
                            r.of.clone(),
                            r.amount.0.to_string(),
                            r.max.0.to_string(),
                        )
                    })
                    .collect();
                hash == e["planHash"].as_str().unwrap() && have == want
            }
            _ => false,
        };
        if !ok {
            failures.push(format!("{}: got {got:?}, want {e}", c["name"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tightening_vectors_only_tighten_and_warn() {
    let v = vectors();
    for c in v["tightening"].as_array().unwrap() {
        let t = read_tightening(&c["file"]);
        let e = &c["expect"];
        let deny: Vec<&str> = e["deny"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        let warnings: Vec<&str> = e["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        assert_eq!(t.deny.tools(), deny, "{}", c["name"]);
        assert_eq!(
            t.out_of_band.as_str(),
            e["outOfBand"].as_str().unwrap(),
            "{}",
            c["name"]
        );
        assert_eq!(t.warnings, warnings, "{}", c["name"]);
    }
}

#[test]
fn file_store_vectors_lay_out_the_servers_files_as_upstream() {
    let v = vectors();
    let files = v["fileStore"]["files"].as_object().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path());
    let now = v["now"].as_i64().unwrap();
    // The server's ops: consumeOnce("n_1", now + 600); reserve 5 of 10
    // emails on the policy block, then settle it; claimUndo, then
    // markUndone (the undo path). (putConsent is `parley approve`'s.)
    assert!(store.consume_once("n_1", now + 600).unwrap());
    let block = v["policyBlockId"].as_str().unwrap();
    let rid = store.reserve(block, "emails", 5, 10).unwrap().unwrap();
    store.settle(block, "emails", &rid).unwrap();
    assert!(store.claim_undo("r_AAAAAAAAAAAA").unwrap());
    store.mark_undone("r_AAAAAAAAAAAA").unwrap();
    assert!(!store.claim_undo("r_AAAAAAAAAAAA").unwrap());
    for name in [
        "consumed/WDKSoRuiQ4FKzxcrRUH-G1gXsfj5_6UGiyP1fzmW1Ac".to_string(),
        format!("ledger/{block}/emails.json"),
        "undo/r_AAAAAAAAAAAA.claim".to_string(),
        "undo/r_AAAAAAAAAAAA.done".to_string(),
    ] {
        let want = files[&name].as_str().unwrap();
        let have = std::fs::read_to_string(dir.path().join(&name)).unwrap();
        assert_eq!(have, want, "{name}");
    }
    // Nothing else was left behind (no lock, no temp file).
    let ledger: Vec<_> = std::fs::read_dir(dir.path().join("ledger").join(block))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(ledger, vec!["emails.json".to_string()]);
}

/// A vector's `{tool, plan, planHash, risk}` as a recomputed plan with its
/// tool's phrase from `phrases` (absent: empty, which means `approve`).
fn asked(p: &Value, phrases: &Value) -> AskedPlan {
    let plan = &p["plan"];
    let hash = p["planHash"].as_str().unwrap().to_string();
    AskedPlan {
        plan: JobPlan {
            tool: p["tool"].as_str().unwrap().into(),
            input: json!({}),
            summary: plan["summary"].as_str().unwrap().into(),
            effects: plan["effects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_object().unwrap().clone())
                .collect(),
            uses: plan.get("uses").map(|u| Uses::from_value(u).unwrap()),
            risk: RiskLevel::parse(p["risk"].as_str().unwrap()).unwrap(),
            undo_window: plan["undoWindow"].as_i64(),
            hash: hash.clone(),
        },
        phrase: phrases[&hash].as_str().unwrap_or("").into(),
    }
}

fn ask_policy(p: &Value) -> AskPolicy {
    AskPolicy {
        deny: p["deny"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().into())
            .collect(),
        out_of_band: RiskLevel::parse(p["outOfBand"].as_str().unwrap()).unwrap(),
    }
}

#[test]
fn form_vectors_offer_what_the_policy_lets_the_chat_approve_shown_safely() {
    let v = vectors();
    let cases = v["forms"].as_array().unwrap();
    assert!(cases.len() >= 7);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let plans: Vec<AskedPlan> = c["plans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| asked(p, &c["phrases"]))
            .collect();
        let form = approval_form(
            &plans,
            c["why"].as_str().unwrap(),
            &ask_policy(&c["policy"]),
        );
        let e = &c["expect"];
        let Some(form) = form else {
            assert!(e.is_null(), "{name}: no form, but the vector expects one");
            continue;
        };
        assert!(!e.is_null(), "{name}: a form, but the vector expects none");
        assert_eq!(
            form.message,
            e["message"].as_str().unwrap(),
            "{name}: message"
        );
        assert_eq!(
            form.requested_schema, e["requestedSchema"],
            "{name}: requestedSchema"
        );
        let offered: Vec<&str> = e["offered"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        assert_eq!(form.offered, offered, "{name}: offered");
        // The spec's first line of defense (§3): before any form is built,
        // the server refuses a phrase that is not typeable. The escaping
        // case's `approve\u{202e}` is such a phrase: the vector pins the
        // form's escaping (the second line), and the call itself never
        // reaches the form.
        for p in &plans {
            let typeable = phrase_for(&p.phrase).is_ok();
            let hidden = p.phrase.chars().any(|ch| ch == '\u{202e}');
            assert_eq!(typeable, !hidden, "{name}: phrase {:?}", p.phrase);
        }
    }
}

#[test]
fn state_vectors_bind_the_state_to_its_call_until_it_expires() {
    let v = vectors();
    let cases = v["states"].as_array().unwrap();
    assert!(cases.len() >= 8);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let e = &c["expect"];
        let checked = RequestState::from_value(&c["state"]).and_then(|s| {
            s.check(
                e["tool"].as_str().unwrap(),
                e["inputHash"].as_str().unwrap(),
                e["sub"].as_str().unwrap(),
                e["now"].as_i64().unwrap(),
            )
            .map(|()| s)
        });
        let valid = c["valid"].as_bool().unwrap();
        assert_eq!(checked.is_ok(), valid, "{name}: {checked:?}");
        if let Ok(s) = checked {
            // What the server writes reads back the same.
            assert_eq!(s.to_value(), c["state"], "{name}: round trip");
        }
    }
}

#[test]
fn judge_vectors_run_only_the_offered_plan_with_its_phrase_typed() {
    let v = vectors();
    let cases = v["judge"].as_array().unwrap();
    assert!(cases.len() >= 15);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let state = RequestState::from_value(&c["state"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let recomputed: Vec<AskedPlan> = c["recomputed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| asked(p, &c["phrases"]))
            .collect();
        let verdict = judge(
            &state,
            &Answer::from_value(&c["answer"]),
            &recomputed,
            &ask_policy(&c["policy"]),
        );
        let e = &c["expect"];
        let text = |k: &str| e[k].as_str().unwrap().to_string();
        let want = match e["kind"].as_str().unwrap() {
            "run" => Verdict::Run { plan: text("plan") },
            "not-approved" => Verdict::NotApproved,
            "ask-again" => Verdict::AskAgain {
                why: text("why"),
                round: u32::try_from(e["round"].as_u64().unwrap()).unwrap(),
            },
            "refuse" => Verdict::Refuse { why: text("why") },
            "denied" => Verdict::Denied { why: text("why") },
            "out-of-band" => Verdict::OutOfBand { plan: text("plan") },
            other => panic!("{name}: unknown kind {other}"),
        };
        assert_eq!(verdict, want, "{name}");
    }
}

#[test]
fn undo_vectors_undo_only_this_servers_receipt_for_its_principal_in_time_once() {
    let v = vectors();
    let u = &v["undo"];
    let service = u["service"].as_str().unwrap();
    let cases = u["cases"].as_array().unwrap();
    assert!(cases.len() >= 9);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        // A fresh store per case holding the vector's receipts.
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path());
        for r in u["receipts"].as_array().unwrap() {
            store.put_receipt(r["id"].as_str().unwrap(), r).unwrap();
        }
        let id = c["id"].as_str().unwrap();
        if c["undoneBefore"].as_bool().unwrap() {
            assert!(store.claim_undo(id).unwrap(), "{name}");
            store.mark_undone(id).unwrap();
        }
        let mut reverted = Vec::new();
        let got = undo(
            &store,
            service,
            id,
            c["sub"].as_str().unwrap(),
            c["now"].as_i64().unwrap(),
            |receipt| {
                reverted.push(receipt["id"].as_str().unwrap().to_string());
                Ok(())
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let e = &c["expect"];
        match e["kind"].as_str().unwrap() {
            "undone" => {
                assert_eq!(got, Undo::Undone, "{name}");
                assert_eq!(reverted, vec![id.to_string()], "{name}: reverted once");
                // Only once: a second undo is refused and reverts nothing.
                let again = undo(
                    &store,
                    service,
                    id,
                    c["sub"].as_str().unwrap(),
                    c["now"].as_i64().unwrap(),
                    |_| panic!("{name}: reverted twice"),
                )
                .unwrap();
                assert_eq!(
                    again,
                    Undo::Refused {
                        why: "this job was already undone".into()
                    },
                    "{name}: again"
                );
            }
            "refused" => {
                let why = e["why"].as_str().unwrap().to_string();
                assert_eq!(got, Undo::Refused { why }, "{name}");
                assert!(reverted.is_empty(), "{name}: reverted {reverted:?}");
            }
            other => panic!("{name}: unknown kind {other}"),
        }
    }
}

#[test]
fn a_failed_revert_releases_the_claim_so_undo_can_be_tried_again() {
    let v = vectors();
    let u = &v["undo"];
    let service = u["service"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path());
    let r = &u["receipts"][1];
    let id = r["id"].as_str().unwrap();
    store.put_receipt(id, r).unwrap();
    let failed = undo(&store, service, id, "client-1", 1_790_000_010, |_| {
        Err("the calendar is down".into())
    })
    .unwrap();
    assert!(
        matches!(failed, Undo::Refused { ref why } if why.contains("the calendar is down")),
        "{failed:?}"
    );
    let retried = undo(&store, service, id, "client-1", 1_790_000_010, |_| Ok(())).unwrap();
    assert_eq!(retried, Undo::Undone);
}
