//! Requests as an agent sends them, and how tests read the replies: the
//! test agent's key, a well-formed consent request for a shop order, and the
//! pieces (hash, consent object) tests edit to make a bad one.

use parley_core::proposal::proposal_hash;
use parley_core::{PublicKey, SecretKey};
use parley_custody::engine::unix_now;
use parley_custody::protocol::Request;
use serde_json::{json, Value};
use zeroize::Zeroizing;

/// The service every test request names.
pub const SERVICE: &str = "shop.example";

/// The test agent's key (seed 2: the key every custody test calls "the
/// agent").
pub fn agent_key() -> PublicKey {
    SecretKey::from_seed(&Zeroizing::new([2u8; 32])).public()
}

/// Sets `p["hash"]` to the hash of `p` as it now is (after an edit the hash
/// is meant to cover).
pub fn rehash(p: &mut Value) {
    p["hash"] = json!(proposal_hash(p).unwrap());
}

/// A well-formed, hashed proposal: an order of `amount` USD cents, charged
/// to a card, low risk, undoable for 30 minutes, expiring in 10.
pub fn proposal(id: &str, amount: i64) -> Value {
    let mut p = json!({
        "id": id, "capability": "shop.order", "summary": "Order",
        "effects": [{"op": "charge", "target": "card ••42", "detail": "USD"}],
        "cost": {"amount": amount, "currency": "USD"}, "risk": "low",
        "undo": {"window": 1800}, "expires": unix_now() + 600
    });
    rehash(&mut p);
    p
}

/// The §6.6 consent object that matches `p` exactly, at [`SERVICE`] under
/// `principal`.
pub fn consent_for(p: &Value, principal: &PublicKey) -> Value {
    json!({"proposal": p["id"], "hash": p["hash"], "service": SERVICE,
           "capability": p["capability"], "principal": principal.to_string(),
           "summary": p["summary"], "expires": p["expires"]})
}

/// A consent request from the test agent at [`SERVICE`] carrying `consent`
/// and `proposal` as given (matching or not).
pub fn consent_request(id: &str, consent: Value, proposal: Value) -> Value {
    json!({"custody": 1, "id": id, "op": "consent", "service": SERVICE,
           "agent": agent_key().to_string(), "proposal": proposal, "consent": consent})
}

/// A consent request for `p` whose consent matches it exactly.
pub fn consent_req(id: &str, principal: &PublicKey, p: &Value) -> Value {
    consent_request(id, consent_for(p, principal), p.clone())
}

/// A reply's `KIND:code`, or its `KIND` alone when it has no code.
pub fn kind_code(v: &Value) -> String {
    match v["code"].as_str() {
        Some(code) => format!("{}:{code}", v["kind"].as_str().unwrap_or("?")),
        None => v["kind"].as_str().unwrap_or("?").to_string(),
    }
}

/// Agent `seed`'s key, as an agent names itself in a request.
pub fn seeded_agent(seed: u8) -> String {
    SecretKey::from_seed(&Zeroizing::new([seed; 32]))
        .public()
        .to_string()
}

/// Agent `agent`'s consent request `id` for order `p<n>` of 5.00 USD at
/// `service`, its consent matching the proposal exactly.
pub fn order_request(
    id: &str,
    n: i64,
    agent: &str,
    principal: &PublicKey,
    service: &str,
) -> Request {
    let mut p = json!({
        "id": format!("p{n}"), "capability": "shop.order", "summary": "Order for 5.00 USD",
        "effects": [{"op": "create", "target": "order"}],
        "cost": {"amount": 500, "currency": "USD"}, "risk": "low",
        "undo": {"window": 60}, "expires": unix_now() + 600
    });
    rehash(&mut p);
    let v = json!({"custody": 1, "id": id, "op": "consent", "service": service,
                   "agent": agent, "proposal": p,
                   "consent": {"proposal": p["id"], "hash": p["hash"], "service": service,
                               "capability": "shop.order", "principal": principal.to_string(),
                               "summary": "Order for 5.00 USD", "expires": p["expires"]}});
    Request::from_value(&v).expect("a well-formed request")
}

/// The meal order the UI and OS-prompt tests ask for, as a line-protocol
/// request: agent `seed`'s consent `id` for "Order 3 meals" of `cents` USD
/// at `service`, under `principal` (as the UI shows it), expiring in 30
/// minutes.
pub fn meal_order(seed: u8, id: &str, service: &str, cents: i64, principal: &str) -> Value {
    let expires = unix_now() + 1800;
    let mut p = json!({
        "id": format!("p_{id}"), "capability": "shop.order", "summary": "Order 3 meals",
        "effects": [{"op": "charge", "target": "card ••42", "detail": "paid"}],
        "cost": {"amount": cents, "currency": "USD"}, "risk": "low",
        "undo": {"window": 1800}, "expires": expires
    });
    rehash(&mut p);
    json!({"custody": 1, "id": id, "op": "consent", "service": service,
        "agent": seeded_agent(seed), "proposal": p,
        "consent": {"proposal": p["id"], "hash": p["hash"], "service": service,
                    "capability": "shop.order", "principal": principal,
                    "summary": "Order 3 meals", "expires": expires}})
}
