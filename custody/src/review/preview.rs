//! The grant in one sentence, as the review and the grant form show it.

use parley_core::caveat::Caveat;

/// "may ASK, INTENT at shop.example for shop.* up to 40.00 USD each, 100.00 USD
/// in total, risk up to medium, until 2026-…": the grant in one sentence.
pub fn preview(caveats: &[Caveat]) -> String {
    let mut verbs = None;
    let mut parts = Vec::new();
    for c in caveats {
        match c {
            Caveat::Verbs(l) => verbs = Some(l.join(", ")),
            Caveat::Svc(l) => parts.push(format!("at {}", l.join(", "))),
            Caveat::Can(l) => parts.push(format!("for {}", l.join(", "))),
            Caveat::Per(m) => parts.push(format!("up to {m} each")),
            Caveat::Spend(m) => parts.push(format!("{m} in total")),
            Caveat::Each(l) => parts.push(format!("up to {} each", l.describe())),
            Caveat::Total(l) => parts.push(format!("at most {} in total", l.describe())),
            Caveat::Risk(r) => parts.push(format!("risk up to {r}")),
            Caveat::Only(h) => parts.push(format!("only proposal {h}")),
            Caveat::Nbf(t) => parts.push(format!("from {}", crate::local_time::when(*t))),
            Caveat::Exp(t) => parts.push(format!("until {}", crate::local_time::when(*t))),
            Caveat::Invalid { .. } => parts.push("(invalid caveat)".into()),
        }
    }
    let verbs = verbs.unwrap_or_else(|| "do anything".into());
    if parts.is_empty() {
        format!("may {verbs}")
    } else {
        format!("may {verbs} {}", parts.join(", "))
    }
}
