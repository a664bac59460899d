//! The whole playground end to end: a real custody engine (gnome-keyring in
//! a private D-Bus session, a real Unix socket, a real SQLite audit log,
//! the scripted approver standing in for the human), both services on real
//! TCP sockets, and the scripted agent. The order over the limit must end in
//! a RECEIPT committed with the human's consent, the read-only sub-agent
//! must be forbidden, and the audit log must show the grant and the consent.
//! The story runs once per dialect (Parley v1 and YEA v1), each its own
//! test, so a failure names the dialect that broke.

// Here rather than in playground/tests: the playground is agent-side code
// and links no key store, even for its tests (cargo tree -p parley-playground).
mod support;

use parley_core::grant::UnverifiedGrant;
use parley_core::Dialect;
use parley_custody::approver::{Gesture, Yes};
use parley_custody::approver::{PendingView, Verdict};
use parley_custody::audit::{Audit, EventKind, Query};
use parley_custody::review::ReviewKind;
use parley_playground::agent::scenario::{self, Config};
use parley_playground::apps::Playground;
use parley_playground::clock::{Clock, SystemClock};
use parley_playground::ids::random_key;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::custody::{no_step_up, Keys, TestCustody};
use support::{in_session, rt_per_core, Session};
use tokio::sync::mpsc::UnboundedReceiver;

async fn next(shown: &mut UnboundedReceiver<PendingView>) -> PendingView {
    tokio::time::timeout(Duration::from_secs(30), shown.recv())
        .await
        .expect("a request reaches the human in time")
        .expect("the approver is alive")
}

#[test]
fn parley_order_over_the_limit_is_committed_with_the_humans_consent() {
    if in_session(
        "parley_order_over_the_limit_is_committed_with_the_humans_consent",
        Session::Keyring,
    ) {
        story(Dialect::ParleyV1);
    }
}

#[test]
fn yea_order_over_the_each_limit_is_committed_with_the_humans_consent() {
    if in_session(
        "yea_order_over_the_each_limit_is_committed_with_the_humans_consent",
        Session::Keyring,
    ) {
        story(Dialect::YeaV1);
    }
}

/// The whole story in `dialect`; what differs between the dialects is
/// asserted per dialect, everything else is the same.
fn story(dialect: Dialect) {
    rt_per_core().block_on(async {
        // Custody, as parley-custodyd runs it, with a scripted human.
        let mut custody = TestCustody::start(Keys::Keychain, no_step_up()).await;
        let socket = custody.serve();
        let TestCustody {
            engine,
            principal,
            mut shown,
            audit_path,
            ..
        } = custody;

        // The services trust the principal custody holds.
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let playground = Playground::start_in(
            "127.0.0.1:0",
            "127.0.0.1:0",
            vec![principal.clone()],
            clock.clone(),
            dialect,
        )
        .await
        .unwrap();
        let agent_key = Arc::new(random_key());
        let cfg = Config {
            custody_socket: Some(socket.clone()),
            shop: playground.shop.addr.to_string(),
            cal: playground.cal.addr.to_string(),
            key: agent_key.clone(),
            clock,
            human_deadline: Duration::from_secs(30),
            dialect,
        };
        // The human, on another task: approves the grant as asked, then the
        // consent. (The custody client's futures are not Send, so the agent
        // runs on this task.)
        let human_engine = engine.clone();
        let human = tokio::spawn(async move {
            let grant_view = next(&mut shown).await;
            human_engine
                .decide(&grant_view.id, Verdict::Approve(YES))
                .await
                .unwrap();
            let consent_view = next(&mut shown).await;
            human_engine
                .decide(&consent_view.id, Verdict::Approve(YES))
                .await
                .unwrap();
            (grant_view, consent_view)
        });
        let mut out: Vec<u8> = Vec::new();
        let result = tokio::time::timeout(Duration::from_secs(90), scenario::run(&cfg, &mut out))
            .await
            .expect("the scenario finishes in time");
        let transcript = String::from_utf8_lossy(&out).into_owned();
        println!("{transcript}");
        let summary = result.unwrap_or_else(|e| panic!("scenario failed: {e}\n{transcript}"));
        let (grant_view, consent_view) = human.await.unwrap();

        // What the human saw: the grant's caveats, then the proposal itself.
        assert_eq!(grant_view.review.kind, ReviewKind::Grant);
        assert!(
            grant_view.review.service.contains("shop.example"),
            "{:?}",
            grant_view.review.service
        );
        let r = &consent_view.review;
        assert_eq!(r.kind, ReviewKind::Consent);
        assert_eq!(
            (r.service.as_str(), r.capability.as_str()),
            ("shop.example", "shop.order")
        );
        // Parley shows the cost; YEA every measure it uses, in words.
        let cost = match dialect {
            Dialect::ParleyV1 => "58.30 USD",
            Dialect::YeaV1 => "1 emails, 58.30 USD",
        };
        assert_eq!(r.cost, cost);
        assert_eq!(r.undo, "2h");
        assert_eq!(r.dialect, dialect);
        let uses: Vec<(&str, &str)> = r
            .uses
            .iter()
            .map(|u| (u.measure.as_str(), u.words.as_str()))
            .collect();
        match dialect {
            Dialect::ParleyV1 => assert!(uses.is_empty(), "{uses:?}"),
            Dialect::YeaV1 => assert_eq!(uses, [("emails", "1 emails"), ("spend", "58.30 USD")]),
        }

        // The reschedule auto-committed and was undone.
        assert_eq!(summary.reschedule["auto"], json!(true));
        assert_eq!(
            summary.undo["receipt"]["undoes"],
            summary.reschedule["receipt"]["id"]
        );
        let e1 = playground.cal_service.app().event("e1").unwrap();
        assert_eq!(
            parley_playground::service::params::format_datetime(e1.start),
            summary.reschedule["receipt"]["effects"][0]["from"]
                .as_str()
                .unwrap(),
            "undone: back where it was"
        );
        // Search was fitted to its budget, and EXPAND gave the rest.
        let more = &summary.search["more"][0];
        let shown_items = summary.search["data"].as_array().unwrap().len();
        let rest = summary.expand["data"]["items"].as_array().unwrap().len();
        assert_eq!(shown_items + rest, 20);
        assert_eq!(more["remaining"], json!(rest));

        // The order: consent_required with the exact §6.6 object, then a
        // receipt committed with the human's one-shot consent grant.
        let consent = &summary.consent_required["consent"];
        assert_eq!(consent["service"], "shop.example");
        assert_eq!(consent["principal"], principal.to_string());
        assert_eq!(summary.order["kind"], "RECEIPT");
        assert_eq!(summary.order["receipt"]["proposal"], consent["proposal"]);
        // Every frame carried this dialect's marker and no other.
        let other = Dialect::ALL.into_iter().find(|d| *d != dialect).unwrap();
        for reply in [&summary.reschedule, &summary.order, &summary.sub_agent] {
            assert_eq!(reply[dialect.marker()], json!(1), "{reply}");
            assert!(reply.get(other.marker()).is_none(), "{reply}");
        }
        let receipt = &summary.order["receipt"];
        let ops: Vec<&str> = receipt["effects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["op"].as_str().unwrap())
            .collect();
        match dialect {
            Dialect::ParleyV1 => {
                assert_eq!(receipt["cost"], json!({"amount": 5830, "currency": "USD"}));
                assert!(receipt.get("uses").is_none());
                assert_eq!(ops, ["create", "charge"]);
            }
            Dialect::YeaV1 => {
                assert_eq!(
                    receipt["uses"],
                    json!({"spend": {"amount": 5830, "scale": 2, "unit": "USD"}, "emails": {"amount": 1}})
                );
                assert!(receipt.get("cost").is_none());
                // YEA has no charge op: the payment is a create.
                assert_eq!(ops, ["create", "create", "send"]);
                assert!(
                    transcript.contains("uses: emails 1, spend 58.30 USD"),
                    "YEA quantities in the Lens:\n{transcript}"
                );
            }
        }
        // The grant asked for (and got) this dialect's limits.
        let signed = UnverifiedGrant::decode(&summary.grant).unwrap();
        let names: Vec<&str> = signed.blocks()[0]
            .caveats()
            .iter()
            .filter_map(|c| c.name())
            .collect();
        let limits = match dialect {
            Dialect::ParleyV1 => ["per", "spend"],
            Dialect::YeaV1 => ["each", "total"],
        };
        for l in limits {
            assert!(names.contains(&l), "{names:?}");
        }
        let consent_grant = UnverifiedGrant::decode(&summary.consent_grant).unwrap();
        assert_eq!(consent_grant.issuer(), principal.to_string());
        assert_eq!(consent_grant.holder(), agent_key.public().to_string());
        let orders = playground.shop_service.app().orders();
        assert_eq!(orders.len(), 1, "ordered exactly once: {orders:?}");
        assert!(
            transcript.contains("authorizing card"),
            "progress EVENTs printed:\n{transcript}"
        );

        // The sub-agent's read-only grant cannot order.
        assert_eq!(summary.sub_agent["code"], "forbidden");
        assert_eq!(summary.sub_agent["need"], json!([{"verbs": ["ASK"]}]));

        // The audit log: one grant to this agent, one consent for this hash,
        // and the chain verifies.
        let audit = Audit::open(&audit_path).unwrap();
        let rows = |k: EventKind| {
            audit
                .query(&Query {
                    kinds: vec![k],
                    ..Default::default()
                })
                .unwrap()
        };
        let grants = rows(EventKind::GrantIssued);
        assert_eq!(grants.len(), 1);
        assert_eq!(
            grants[0].agent.as_deref(),
            Some(agent_key.public().to_string().as_str())
        );
        assert_eq!(
            grants[0].token_id.as_deref(),
            Some(
                UnverifiedGrant::decode(&summary.grant)
                    .unwrap()
                    .id()
                    .as_str()
            )
        );
        let consents = rows(EventKind::ConsentApproved);
        assert_eq!(consents.len(), 1);
        assert_eq!(consents[0].hash.as_deref(), consent["hash"].as_str());
        assert_eq!(consents[0].service.as_deref(), Some("shop.example"));
        assert_eq!(consents[0].cost_amount, Some(5830));
        assert!(audit.verify().unwrap().ok);
        playground.stop().await;
    });
}

/// The scripted human's yes: a click, with the second confirmation given.
const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};
