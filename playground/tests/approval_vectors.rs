//! YEA's approval vectors (`conformance/yea/approval.json`, SPEC-approval)
//! through the playground job server's side: the policy decision
//! (`decide`), the unsigned policy (`tightening`) and the file store's
//! format for the server's own files (`fileStore`: consumed, ledger).
//! `hash`, `consentCode`, `consents`, `phrases`, `phraseChecks` and the
//! consent file run against parley-core's `job` module and custody-client's
//! store, which this server uses (core/tests/conformance_approval.rs,
//! custody-client/tests/approval_vectors.rs).
//!
//! Not run here, and why: `states` and `judge` check the form-mode
//! elicitation round (sealed request state, typed answers in the form); this
//! server never elicits, it fails closed with approval codes (§6), so it has
//! no request state to judge. `forms` builds that form. `undo` needs the
//! server's undo path, which the refund desk does not offer yet.

use parley_core::quantity::{Exact, Quantity};
use parley_core::{PublicKey, RiskLevel};
use parley_playground::jobs::policy::{decide, read_tightening, Candidate, Decision, Policy};
use parley_playground::jobs::store::FileStore;
use serde_json::Value;
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
        assert_eq!(t.deny, deny, "{}", c["name"]);
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
    // emails on the policy block, then settle it. (putConsent is `parley
    // approve`'s, and claimUndo/markUndone the undo path's: not the server's.)
    assert!(store.consume_once("n_1", now + 600).unwrap());
    let block = v["policyBlockId"].as_str().unwrap();
    let rid = store.reserve(block, "emails", 5, 10).unwrap().unwrap();
    store.settle(block, "emails", &rid).unwrap();
    for name in [
        "consumed/WDKSoRuiQ4FKzxcrRUH-G1gXsfj5_6UGiyP1fzmW1Ac".to_string(),
        format!("ledger/{block}/emails.json"),
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
