//! Revoking a live grant (issue 30, item 3) with real parts: custody issues
//! a real grant (engine, SQLite audit file, the scripted human), the human's
//! own `parley custody revoke` (the real binary) signs and publishes the
//! revocation, the playground's shop on a real TCP socket reads it from its
//! revocations directory, and `parley verify --revocations` reads the file.
//!
//! What it stops: a revoked grant still being honoured by a service that
//! checks revocations (it is refused `forbidden`, `need` naming the
//! revocation and its reason), and `parley verify` passing a revoked grant.

// Here rather than in playground/tests: the playground links no key store.
mod support;

use parley_core::grant::UnverifiedGrant;
use parley_core::Dialect;
use parley_custody::approver::{Gesture, Verdict, Yes};
use parley_custody::audit::{Audit, EventKind, Query};
use parley_custody::engine::unix_now;
use parley_custody::ipc::peer::PeerInfo;
use parley_custody::protocol::Request;
use parley_playground::agent::client::Session;
use parley_playground::apps::Playground;
use parley_playground::clock::{Clock, SystemClock};
use parley_playground::ids::random_key;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use support::custody::{next_reply, no_step_up, Keys, TestCustody};
use support::{parley_cli, rt_per_core};

const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};

fn verify(token: &str, principal: &str, revocations: &[&Path]) -> (i32, Value) {
    let mut cmd = Command::new(parley_cli());
    cmd.args(["--json", "verify", token, "--trust", principal])
        .args([
            "--svc",
            "shop.example",
            "--verb",
            "ASK",
            "--cap",
            "shop.orders",
        ]);
    if !revocations.is_empty() {
        cmd.arg("--revocations").args(revocations);
    }
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn a_revoked_grant_is_refused_by_the_playground_and_by_parley_verify_with_the_reason() {
    rt_per_core().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let agent = Arc::new(random_key());
        let req = Request::from_value(&json!({"custody": 1, "id": "g", "op": "grant",
            "agent": agent.public().to_string(),
            "caveats": [{"svc": ["shop.example"]}, {"verbs": ["ASK", "INTENT"]}, {"exp": unix_now() + 3600}]}))
        .unwrap();
        let mut rx = c.submit(&PeerInfo::from_creds(4242, 4242, None), req);
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let shown = c.shown.recv().await.unwrap();
        c.engine.decide(&shown.id, Verdict::Approve(YES)).await.unwrap();
        let issued = next_reply(&mut rx).await;
        assert_eq!(issued["kind"], "ISSUED", "{issued}");
        let token = issued["grant"].as_str().unwrap().to_string();
        let grant_id = UnverifiedGrant::decode(&token).unwrap().id();
        let principal = c.principal.to_string();

        // The shop reads revocations from a directory of its own.
        let published = tempfile::tempdir().unwrap();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let playground = Playground::start_revocable(
            "127.0.0.1:0",
            "127.0.0.1:0",
            vec![c.principal.clone()],
            clock.clone(),
            Dialect::ParleyV1,
            Some(published.path().to_path_buf()),
        )
        .await
        .unwrap();
        let shop = playground.shop.addr.to_string();
        let (mut session, _) =
            Session::open(&shop, agent.clone(), clock.clone(), 4000, Dialect::ParleyV1)
                .await
                .unwrap();
        session.grants = vec![token.clone()];
        let before = session.ask("shop.orders", json!({}), 4000).await.unwrap();
        assert_ne!(before.kind(), "ERROR", "the live grant works: {}", before.reply());
        assert_eq!(verify(&token, &principal, &[]).0, 0, "parley verify passes it");

        // The human revokes it with their own command (as root polkit asks
        // nothing; the row says so), publishing to the shop's directory.
        let data = c.audit_path.parent().unwrap().to_path_buf();
        let out = Command::new(parley_cli())
            .args(["--json", "custody", "revoke", &grant_id, "--reason", "the agent went rogue"])
            .arg("--publish")
            .arg(published.path())
            .args(["--file-store", "--data-dir"])
            .arg(&data)
            .env("PARLEY_CUSTODY_PASSPHRASE", "test custody")
            .output()
            .unwrap();
        assert!(out.status.success(), "revoke: {}", String::from_utf8_lossy(&out.stderr));
        let revoked: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(revoked["statement"]["statement"]["grant"], grant_id.as_str());
        let file = published.path().join(format!("{grant_id}.json"));
        assert!(file.exists(), "published: {revoked}");
        assert!(data.join("revocations").join(format!("{grant_id}.json")).exists());

        // The shop refuses it: forbidden, need naming the revocation.
        let after = session.ask("shop.orders", json!({}), 4000).await.unwrap();
        let r = after.reply();
        assert_eq!(r["kind"], "ERROR", "{r}");
        assert_eq!(r["code"], "forbidden", "{r}");
        let need = &r["need"][0]["revoked"];
        assert_eq!(need["grant"], grant_id.as_str(), "{r}");
        assert_eq!(need["reason"], "the agent went rogue", "{r}");
        assert_eq!(need["principal"], principal.as_str(), "{r}");

        // parley verify with the file fails it (and the same file again
        // for a service that trusts another principal changes nothing).
        let (code, v) = verify(&token, &principal, &[&file]);
        assert_eq!(code, 1, "{v}");
        assert_eq!(v["outcome"], "forbidden", "{v}");
        assert!(v.to_string().contains("the agent went rogue"), "{v}");

        // The audit log says it is revoked, and a second revoke is refused.
        let rows = Audit::open(&c.audit_path)
            .unwrap()
            .query(&Query { kinds: vec![EventKind::GrantRevoked], ..Default::default() })
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].token_id.as_deref(), Some(grant_id.as_str()));
        assert!(Audit::open(&c.audit_path).unwrap().verify().unwrap().ok);
        let again = Command::new(parley_cli())
            .args(["custody", "revoke", &grant_id, "--file-store", "--data-dir"])
            .arg(&data)
            .env("PARLEY_CUSTODY_PASSPHRASE", "test custody")
            .output()
            .unwrap();
        assert!(!again.status.success());
        assert!(String::from_utf8_lossy(&again.stderr).contains("revoked already"));
        playground.stop().await;
    });
}
