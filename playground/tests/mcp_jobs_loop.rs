//! The MCP job server's approval loop over real stdio, with the real MCP SDK
//! on both sides: `mcp-client` starts `mcp-jobs` as its child and calls it.
//! Within the signed policy → RAN; a refund → an approval code; a consent
//! written into the store → the call again RAN; the same call again →
//! refused (the consent was used once).
//!
//! Here the test plays the person's side with a principal key of its own
//! (what custody does is tested in custody/tests/mcp_jobs_pty.rs): it reads
//! the code the agent was handed, and signs and stores the consent the way
//! `parley approve` does. Everything else is the real thing.

use parley_core::grant::UnverifiedGrant;
use parley_core::job::{check_code, decode_code, issue_job_consent};
use parley_core::quantity::Limit;
use parley_core::{Caveat, RiskLevel, SecretKey};
use parley_custody_client::yea_store::write_consent;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn key(seed: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([seed; 32]))
}

/// The person's policy: store credit may run unasked up to 25.00 USD each.
fn policy(principal: &SecretKey, server: &SecretKey) -> String {
    let each = Limit::from_value(
        &serde_json::json!({"of": "spend", "max": 2500, "scale": 2, "unit": "USD"}),
        "each",
    )
    .unwrap();
    let total = Limit::from_value(
        &serde_json::json!({"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}),
        "total",
    )
    .unwrap();
    let caveats = [
        Caveat::Can(vec!["store_credit".into(), "refund".into()]),
        Caveat::Risk(RiskLevel::Low),
        Caveat::Each(each),
        Caveat::Total(total),
        Caveat::Exp(now() + 3600),
    ];
    UnverifiedGrant::issue_root(principal, &server.public(), &caveats, now(), "policy-1")
        .unwrap()
        .encode()
}

/// What `parley approve CODE` does once the person has typed the phrase:
/// the code checked and the consent signed by parley-core's job module,
/// written where the server looks.
fn approve(code: &str, principal: &SecretKey, server: &SecretKey, store: &Path) -> String {
    let checked = check_code(decode_code(code).unwrap(), &principal.public(), now()).unwrap();
    assert_eq!(checked.server(), &server.public());
    assert_eq!(checked.code().phrase, "A-1001");
    let token = issue_job_consent(principal, &checked, now(), "c-1")
        .unwrap()
        .encode();
    let hash = checked.plan().hash.clone();
    write_consent(store, &hash, &token).unwrap();
    hash
}

#[test]
fn within_policy_runs_a_refund_asks_the_consent_runs_once_and_a_replay_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let principal = key(1);
    let server = key(5);
    let key_file = dir.path().join("server.key");
    std::fs::write(&key_file, format!("{}\n", &*server.to_seed_b64())).unwrap();
    let pub_file = dir.path().join("principal.pub");
    std::fs::write(&pub_file, principal.public().to_string()).unwrap();
    let policy_file = dir.path().join("policy.grant");
    std::fs::write(&policy_file, policy(&principal, &server)).unwrap();

    let bin = env!("CARGO_BIN_EXE_parley-playground");
    let mut child = Command::new(bin)
        .args(["mcp-client", "--wait", "60", "--store"])
        .arg(&store)
        .arg("--")
        .arg(bin)
        .args(["mcp-jobs", "--principal-pub-unchecked", "--key"])
        .arg(&key_file)
        .arg("--principal-pub")
        .arg(&pub_file)
        .arg("--policy")
        .arg(&policy_file)
        .arg("--policy-json")
        .arg(dir.path().join("no-policy.json"))
        .arg("--store")
        .arg(&store)
        .env("HOME", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut transcript = Vec::new();
    let mut approved = None;
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(code) = line.strip_prefix("server: code: ") {
            if approved.is_none() {
                approved = Some(approve(code, &principal, &server, &store));
            }
        }
        transcript.push(line);
    }
    let status = child.wait().unwrap();
    let text = transcript.join("\n");
    assert!(status.success(), "the client failed:\n{text}");
    let ran: Vec<&String> = transcript
        .iter()
        .filter(|l| l.starts_with("server: RAN: "))
        .collect();
    assert_eq!(ran.len(), 2, "{text}");
    assert!(
        ran[0].contains("Give Chen 10.00 USD store credit"),
        "{text}"
    );
    assert!(ran[1].contains("Refund 30.00 USD to Chen"), "{text}");
    assert!(text.contains("yea approve pc1."), "{text}");
    assert!(text.contains("already used once; nothing ran"), "{text}");
    // The consent was consumed once, and two receipts were stored.
    let hash = approved.expect("no code was handed out");
    assert!(store.join("consents").join(&hash).exists());
    assert_eq!(
        std::fs::read_dir(store.join("consumed")).unwrap().count(),
        1
    );
    assert_eq!(
        std::fs::read_dir(store.join("receipts")).unwrap().count(),
        2
    );
}
