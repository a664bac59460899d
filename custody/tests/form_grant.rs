//! A grant the human issues from the app's form (no agent request pending):
//! `Engine::issue_grant` against a real gnome-keyring (private D-Bus
//! session) and a real SQLite audit file. The token must verify under the
//! principal for exactly the agent and caveats the human saw, the audit row
//! must be written before the token is returned, and caveats that an agent's
//! request could not get past review are refused here too.

mod support;

use parley_core::caveat::RequestContext;
use parley_core::grant::{Decision, UnverifiedGrant};
use parley_core::{PublicKey, SecretKey};
use parley_custody::approver::ScriptedApprover;
use parley_custody::approver::{Gesture, Yes};
use parley_custody::audit::{Audit, EventKind, Query};
use parley_custody::engine::{unix_now, Engine, IssueError};
use parley_custody::keystore::Keystore;
use parley_custody::review;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::custody::no_step_up;
use support::{in_session, rt_per_core, scratch, Session};
use zeroize::Zeroizing;

fn agent() -> PublicKey {
    SecretKey::from_seed(&Zeroizing::new([7u8; 32])).public()
}

fn engine(with_key: bool) -> (Engine, Option<PublicKey>, PathBuf) {
    let ks = Keystore::keychain_namespaced(Some("test")).unwrap();
    let principal = with_key.then(|| ks.create("me").unwrap());
    let audit_path = scratch().join("audit.sqlite3");
    let audit = Audit::open(&audit_path).unwrap();
    let (approver, _shown) = ScriptedApprover::new();
    let engine = Engine::new(ks, audit, Arc::new(approver), no_step_up());
    (engine, principal, audit_path)
}

fn rows(path: &Path, kind: EventKind) -> Vec<parley_custody::audit::Event> {
    Audit::open(path)
        .unwrap()
        .query(&Query {
            kinds: vec![kind],
            ..Default::default()
        })
        .unwrap()
}

#[test]
fn form_grant_is_signed_as_shown_and_logged_before_it_is_returned() {
    if !in_session(
        "form_grant_is_signed_as_shown_and_logged_before_it_is_returned",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let (engine, principal, audit_path) = engine(true);
        let principal = principal.unwrap();
        let exp = unix_now() + 3600;
        let caveats = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK", "INTENT", "COMMIT"]},
            {"can": ["shop.*"]}, {"per": {"max": 4000, "currency": "USD"}},
            {"spend": {"max": 10000, "currency": "USD"}}, {"risk": "medium"}, {"exp": exp}]);
        let issued = engine
            .issue_grant(
                &agent().to_string(),
                &caveats,
                Some(&principal),
                Some("groceries"),
                YES,
            )
            .await
            .unwrap();
        assert_eq!(
            review::caveats_value(&issued.caveats),
            caveats,
            "signed exactly as shown"
        );
        assert_eq!(issued.exp, exp);
        assert!(
            issued.review.preview.contains("up to 40.00 USD each"),
            "{}",
            issued.review.preview
        );
        assert!(
            issued.review.warnings.is_empty(),
            "{:?}",
            issued.review.warnings
        );

        // The token verifies under the principal, for this agent only.
        let g = UnverifiedGrant::decode(&issued.token).unwrap();
        assert_eq!(g.id(), issued.id);
        let v = g
            .verify(std::slice::from_ref(&principal), &agent())
            .unwrap();
        let ask = RequestContext {
            service: "shop.example".into(),
            verb: "ASK".into(),
            capability: "shop.order".into(),
            now: unix_now(),
            ..Default::default()
        };
        assert_eq!(v.evaluate(&ask), Decision::Ok);
        let elsewhere = RequestContext {
            service: "bank.example".into(),
            ..ask.clone()
        };
        assert!(matches!(v.evaluate(&elsewhere), Decision::Forbidden { .. }));
        let late = RequestContext { now: exp, ..ask };
        assert!(matches!(v.evaluate(&late), Decision::Forbidden { .. }));
        let someone_else = SecretKey::from_seed(&Zeroizing::new([8u8; 32])).public();
        assert!(UnverifiedGrant::decode(&issued.token)
            .unwrap()
            .verify(std::slice::from_ref(&principal), &someone_else)
            .is_err());

        // The audit log has the row, with the requester being this process.
        let logged = rows(&audit_path, EventKind::GrantIssued);
        assert_eq!(logged.len(), 1);
        let row = &logged[0];
        assert_eq!(row.token_id.as_deref(), Some(issued.id.as_str()));
        assert_eq!(row.agent, Some(agent().to_string()));
        assert_eq!(row.principal, Some(principal.to_string()));
        assert_eq!(row.service.as_deref(), Some("shop.example"));
        assert_eq!(row.expires, Some(exp));
        assert_eq!(row.caveats, Some(caveats.to_string()));
        assert_eq!(row.peer_uid, Some(nix::unistd::getuid().as_raw()));
        assert_eq!(row.peer_pid, Some(i64::from(std::process::id())));
        assert_eq!(
            row.reason.as_deref(),
            Some("issued from the grant form: groceries")
        );
        let audit = Audit::open(&audit_path).unwrap();
        assert!(audit.verify().unwrap().ok);
        let live = audit
            .query(&Query {
                live_at: Some(unix_now()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(live.len(), 1);
    });
}

#[test]
fn form_grant_expiry_is_clamped_and_a_missing_one_is_added() {
    if !in_session(
        "form_grant_expiry_is_clamped_and_a_missing_one_is_added",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        let (engine, _, _) = engine(true);
        let far = unix_now() + 365 * 86400;
        let issued = engine
            .issue_grant(
                &agent().to_string(),
                &json!([{"svc": ["a.example"]}, {"exp": far}]),
                None,
                None,
                YES,
            )
            .await
            .unwrap();
        let lifetime = issued.exp - unix_now();
        assert!(
            (7 * 86400 - 5..=7 * 86400).contains(&lifetime),
            "{lifetime}"
        );
        assert!(issued
            .review
            .warnings
            .iter()
            .any(|w| w.contains("limited to")));
        let none = engine
            .issue_grant(
                &agent().to_string(),
                &json!([{"svc": ["a.example"]}]),
                None,
                None,
                YES,
            )
            .await
            .unwrap();
        assert!(review::caveats_value(&none.caveats)
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.get("exp").is_some()));
        assert!(none.exp <= unix_now() + 7 * 86400);
    });
}

#[test]
fn form_grant_refuses_what_review_refuses_and_logs_nothing() {
    if !in_session(
        "form_grant_refuses_what_review_refuses_and_logs_nothing",
        Session::Keyring,
    ) {
        return;
    }
    rt_per_core().block_on(async {
        // No principal key yet: nothing to sign with.
        let (engine, _, audit_path) = engine(false);
        let ok_caveats = json!([{"svc": ["a.example"]}, {"exp": unix_now() + 60}]);
        match engine
            .issue_grant(&agent().to_string(), &ok_caveats, None, None, YES)
            .await
        {
            Err(IssueError::Rejected(r)) => assert_eq!(r.code, "no_principal"),
            other => panic!("expected no_principal, got {other:?}"),
        }
        let principal = engine.keystore().create("me").unwrap();
        for (what, agent_text, caveats, code) in [
            (
                "a malformed caveat",
                agent().to_string(),
                json!([{"risk": "toString"}]),
                "caveat_malformed",
            ),
            (
                "an unknown caveat",
                agent().to_string(),
                json!([{"sign": "bytes"}]),
                "caveat_malformed",
            ),
            (
                "an expired grant",
                agent().to_string(),
                json!([{"exp": unix_now() - 1}]),
                "expired",
            ),
            (
                "a bad agent key",
                "ed25519:not-a-key".to_string(),
                ok_caveats.clone(),
                "agent_key",
            ),
            (
                "not a list",
                agent().to_string(),
                json!({"svc": ["a.example"]}),
                "caveats",
            ),
        ] {
            match engine
                .issue_grant(&agent_text, &caveats, Some(&principal), None, YES)
                .await
            {
                Err(IssueError::Rejected(r)) => assert_eq!(r.code, code, "{what}"),
                other => panic!("{what}: expected {code}, got {other:?}"),
            }
        }
        let stranger = SecretKey::from_seed(&Zeroizing::new([9u8; 32])).public();
        match engine
            .issue_grant(
                &agent().to_string(),
                &ok_caveats,
                Some(&stranger),
                None,
                YES,
            )
            .await
        {
            Err(IssueError::Rejected(r)) => assert_eq!(r.code, "unknown_principal"),
            other => panic!("expected unknown_principal, got {other:?}"),
        }
        assert!(
            rows(&audit_path, EventKind::GrantIssued).is_empty(),
            "nothing signed, nothing logged"
        );
    });
}

/// The scripted human's yes: a click, with the second confirmation given.
const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};
