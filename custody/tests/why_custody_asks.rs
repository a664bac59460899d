//! Why custody asks (issue 28, finding 2), through the real engine and a
//! real SQLite audit log: a consent from an agent custody never granted to
//! says "no grant of yours covers this"; once the human approved a grant
//! request (the log records the issued grant), a consent above its per-order
//! cap says which cap, by how much, and what custody approved since.

mod support;

use parley_core::proposal::proposal_hash;
use parley_core::{PublicKey, SecretKey};
use parley_custody::approver::{Gesture, PendingView, Verdict, Yes};
use parley_custody::engine::unix_now;
use parley_custody::ipc::peer::PeerInfo;
use parley_custody::protocol::Request;
use serde_json::{json, Value};
use std::time::Duration;
use support::custody::{no_step_up, Keys, TestCustody};
use support::rt;
use tokio::sync::mpsc;
use zeroize::Zeroizing;

fn agent() -> String {
    SecretKey::from_seed(&Zeroizing::new([7; 32]))
        .public()
        .to_string()
}

fn this_process() -> PeerInfo {
    PeerInfo::from_creds(
        nix::unistd::Uid::effective().as_raw(),
        nix::unistd::Gid::effective().as_raw(),
        Some(std::process::id()),
    )
}

/// A consent request for an order of `amount` minor units of USD.
fn consent(id: &str, amount: i64, principal: &PublicKey) -> Request {
    let now = unix_now();
    let mut p = json!({
        "id": format!("p-{id}"), "capability": "shop.order.place",
        "summary": format!("Order for {}.{:02} USD", amount / 100, amount % 100),
        "effects": [{"op": "create", "target": "order"}, {"op": "charge", "target": "card ••42"}],
        "cost": {"amount": amount, "currency": "USD"}, "risk": "low",
        "undo": {"window": 1800}, "expires": now + 600
    });
    p["hash"] = json!(proposal_hash(&p).unwrap());
    let c = json!({"proposal": p["id"], "hash": p["hash"], "service": "shop.example",
                   "capability": p["capability"], "principal": principal.to_string(),
                   "summary": p["summary"], "expires": p["expires"]});
    Request::from_value(&json!({"custody": 1, "id": id, "op": "consent",
        "service": "shop.example", "agent": agent(), "proposal": p, "consent": c}))
    .unwrap()
}

async fn shown(c: &mut TestCustody, req: Request) -> (PendingView, mpsc::Receiver<Value>) {
    let rx = c.submit(&this_process(), req);
    let view = tokio::time::timeout(Duration::from_secs(30), c.shown.recv())
        .await
        .expect("shown in time")
        .expect("shown");
    (view, rx)
}

fn yes() -> Verdict {
    Verdict::Approve(Yes {
        gesture: Gesture::Click,
        second_confirmation: true,
    })
}

#[test]
fn the_review_says_which_grant_the_proposal_exceeds_and_by_how_much() {
    rt().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let principal = c.principal.clone();

        // No grant yet.
        let (first, _rx1) = shown(&mut c, consent("c1", 500, &principal)).await;
        let why = first.review.why.as_ref().expect("a consent says why");
        assert_eq!(why.rule, "no_grant");
        assert_eq!(
            why.words,
            "No grant of yours covers this: custody never gave this agent a grant for shop.example"
        );
        c.engine
            .decide(&first.id, Verdict::Deny(None))
            .await
            .unwrap();

        // The human approves the agent's grant request: the log records it.
        let exp = unix_now() + 3600;
        let grant = Request::from_value(&json!({"custody": 1, "id": "g1", "op": "grant",
            "agent": agent(), "reason": "buy groceries", "caveats": [
                {"svc": ["shop.example"]}, {"can": ["shop.order.*"]},
                {"per": {"max": 4000, "currency": "USD"}},
                {"spend": {"max": 10000, "currency": "USD"}}, {"exp": exp}]}))
        .unwrap();
        let (g, _rxg) = shown(&mut c, grant).await;
        assert!(
            g.review.why.is_none(),
            "a grant review has no consent reason"
        );
        c.engine.decide(&g.id, yes()).await.unwrap();

        // 58.30 USD against a 40.00 USD per-order cap.
        let (over, _rx2) = shown(&mut c, consent("c2", 5830, &principal)).await;
        let why = over.review.why.as_ref().expect("a consent says why");
        assert_eq!(why.rule, "per_exceeded");
        assert_eq!(
            why.words,
            "Your grant allows 40.00 USD per order; this is 58.30 USD (18.30 USD over); \
             custody approved 0.00 USD of its 100.00 USD since it was issued"
        );
        // And the terminal prompt says the same.
        let text = parley_custody::terminal::render(&over.review, unix_now() + 60);
        assert!(
            text.contains(&format!("why asked   {}", why.words)),
            "{text}"
        );
    });
}
