//! "Approve for a while" at the headless daemon's terminal (issue 30, item
//! 4): the real `parley-custodyd` on a real pty (tmux), a real client on
//! its socket. The prompt offers it beside yes (answer `w`), then asks how
//! much and how long from bounded choices, says the grant in words before
//! anything is signed, and the agent's APPROVED carries the short grant.
//! A plain `y` approves the order alone, as before.
//!
//! What it stops: the terminal approving for a while without being asked,
//! or signing a grant other than the one it showed in words.

mod support;

use parley_core::grant::UnverifiedGrant;
use parley_core::proposal::proposal_hash;
use parley_core::SecretKey;
use parley_custody::terminal::ANSWER_DELAY;
use serde_json::{json, Value};
use support::terminal::{Term, PROMPT};
use zeroize::Zeroizing;

fn agent() -> String {
    SecretKey::from_seed(&Zeroizing::new([7u8; 32]))
        .public()
        .to_string()
}

/// An order of 58.30 USD at shop.example, its consent matching it.
fn order(t: &Term, id: &str) -> Value {
    let expires = parley_custody::engine::unix_now() + 1800;
    let mut p = json!({
        "id": format!("p_{id}"), "capability": "shop.order", "summary": "Order 3 meals",
        "effects": [{"op": "charge", "target": "card", "detail": "paid"}],
        "cost": {"amount": 5830, "currency": "USD"}, "risk": "low",
        "undo": {"window": 1800}, "expires": expires
    });
    p["hash"] = json!(proposal_hash(&p).unwrap());
    json!({"custody": 1, "id": id, "op": "consent", "service": "shop.example", "agent": agent(),
           "proposal": p,
           "consent": {"proposal": p["id"], "hash": p["hash"], "service": "shop.example",
                       "capability": "shop.order", "principal": t.principal,
                       "summary": "Order 3 meals", "expires": expires}})
}

#[test]
fn w_at_the_prompt_approves_for_a_while_after_saying_it_in_words_and_y_approves_the_order_alone() {
    let t = Term::start();
    // A plain yes: the order alone, no short grant.
    let a = t.submit(order(&t, "A"));
    a.pending();
    let at = t.wait_raw(PROMPT, 0);
    let review = String::from_utf8_lossy(&t.raw()[..at]).into_owned();
    assert!(
        review.contains("  for a while answer \"w\" to approve and also let "),
        "offered beside yes:\n{review}"
    );
    std::thread::sleep(ANSWER_DELAY);
    t.keys(&["y", "Enter"]);
    let fin = a.wait();
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    assert!(fin.get("for_a_while").is_none(), "{fin}");

    // `w`: how much, how long, the words, then signed.
    let b = t.submit(order(&t, "B"));
    b.pending();
    let at = t.wait_raw(PROMPT, at);
    std::thread::sleep(ANSWER_DELAY);
    t.keys(&["w", "Enter"]);
    let asked = t.wait_raw("(Enter: none, this order only): ", at);
    let question = String::from_utf8_lossy(&t.raw()[at..asked]).into_owned();
    assert!(
        question.contains("[1] 50.00 USD [2] 100.00 USD [3] 200.00 USD [4] 500.00 USD"),
        "{question}"
    );
    t.keys(&["2", "Enter"]);
    let how_long = t.wait_raw(
        "For how long? [1] 5 [2] 15 [3] 30 [4] 60 minutes (Enter: no): ",
        asked,
    );
    t.keys(&["2", "Enter"]);
    t.wait_raw(
        "spend up to 100.00 USD more at shop.example in the next 15 minutes without asking",
        how_long,
    );
    let fin = b.wait();
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    let short = fin["for_a_while"]["grant"]
        .as_str()
        .expect("the short grant");
    let g = UnverifiedGrant::decode(short).unwrap();
    assert_eq!(g.holder(), agent());
    assert_eq!(
        fin["for_a_while"]["caveats"][2],
        json!({"per": {"max": 10000, "currency": "USD"}})
    );
    assert_eq!(
        fin["for_a_while"]["caveats"][3],
        json!({"spend": {"max": 10000, "currency": "USD"}})
    );
}
