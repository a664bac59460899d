//! Why custody asks the human about a consent: which of the grants custody
//! issued to this agent for this service the proposal falls outside of, and
//! by how much (issue 28, finding 2).
//!
//! Why: a review that says "58.30 USD" leaves the human to remember what
//! they allowed. Custody signed every grant it issued and the audit log
//! records each one (`grant_issued`, with its caveats), so custody compares
//! the proposal with them and says it in one sentence: "your grant allows
//! 40.00 USD per order; this is 58.30 USD (18.30 USD over)".
//!
//! What custody cannot see: what the service counted under a grant (the
//! agent spends there directly). "Spent" here is what custody itself
//! approved for this agent since the grant was issued, and the sentence says
//! so. The function is pure: the engine reads the grants from the log
//! ([`crate::audit::Audit::grants_issued_to`]) and passes them in.

use crate::display::safe;
use parley_core::caveat::{pattern_matches, Caveat, RiskLevel};
use parley_core::money::Money;
use serde::Serialize;

/// A grant custody issued to the agent, as the audit log recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuedGrant {
    /// Its caveats, as signed.
    pub caveats: Vec<Caveat>,
    /// When it was issued (unix seconds).
    pub issued_at: i64,
    /// When it ends (unix seconds).
    pub expires: i64,
    /// Whether the human revoked it (a revoked grant covers nothing).
    pub revoked: bool,
    /// What custody approved for this agent since the grant was issued, per
    /// currency (consents: custody does not see the service's own count).
    pub counted: Vec<Money>,
}

/// What the proposal asks for, as the review read it.
#[derive(Debug, Clone, Copy)]
pub struct Proposed<'a> {
    /// The service id.
    pub service: &'a str,
    /// The capability.
    pub capability: &'a str,
    /// What it costs as money, when stated.
    pub cost: Option<&'a Money>,
    /// Its risk.
    pub risk: RiskLevel,
}

/// The reason, as shown: a stable rule name and one display-safe sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyAsked {
    /// Which case applies (stable, for tests and the UI): `no_grant`,
    /// `grant_expired`, `grant_revoked`, `grant_not_yet`, `capability_not_granted`,
    /// `per_exceeded`, `per_currency`, `spend_exceeded`, `spend_currency`,
    /// `risk_above`, `one_proposal_only`, `limit_exceeded`, `covered`.
    pub rule: &'static str,
    /// The sentence (display-safe), starting with a capital letter.
    pub words: String,
}

impl WhyAsked {
    fn new(rule: &'static str, words: String) -> WhyAsked {
        let mut c = words.chars();
        let words = match c.next() {
            Some(f) => f.to_uppercase().chain(c).collect(),
            None => words,
        };
        WhyAsked {
            rule,
            words: safe(&words),
        }
    }
}

/// Why custody asks about `p`, given every grant it issued to the agent
/// (newest first) and the time `now`.
pub fn why_asked(p: &Proposed, grants: &[IssuedGrant], now: i64) -> WhyAsked {
    let here: Vec<&IssuedGrant> = grants.iter().filter(|g| names(g, p.service)).collect();
    if here.is_empty() {
        return WhyAsked::new(
            "no_grant",
            format!(
                "no grant of yours covers this: custody never gave this agent a grant for {}",
                p.service
            ),
        );
    }
    let live: Vec<&&IssuedGrant> = here
        .iter()
        .filter(|g| g.expires > now && !g.revoked)
        .collect();
    let Some(newest) = live.first() else {
        if here.iter().any(|g| g.expires > now) {
            return WhyAsked::new(
                "grant_revoked",
                format!(
                    "you revoked your grant for {}; no grant of yours covers this now",
                    p.service
                ),
            );
        }
        let ended = here.iter().map(|g| g.expires).max().unwrap_or(0);
        return WhyAsked::new(
            "grant_expired",
            format!(
                "your grant for {} ended {}; no grant of yours covers this now",
                p.service,
                crate::local_time::when(ended)
            ),
        );
    };
    // The first live grant that lets this capability through says why; if
    // none does, the newest one says which capabilities it allows.
    let Some(g) = live.iter().find(|g| allows_capability(g, p.capability)) else {
        let allowed: Vec<String> = newest
            .caveats
            .iter()
            .filter_map(|c| match c {
                Caveat::Can(l) => Some(l.join(", ")),
                _ => None,
            })
            .collect();
        return WhyAsked::new(
            "capability_not_granted",
            format!(
                "your grant for {} does not allow {} (it allows {})",
                p.service,
                p.capability,
                allowed.join("; ")
            ),
        );
    };
    if let Some(t) = g.caveats.iter().find_map(|c| match c {
        Caveat::Nbf(t) if *t > now => Some(*t),
        _ => None,
    }) {
        return WhyAsked::new(
            "grant_not_yet",
            format!(
                "your grant for {} starts only {}",
                p.service,
                crate::local_time::when(t)
            ),
        );
    }
    let spend = g.caveats.iter().find_map(|c| match c {
        Caveat::Spend(m) => Some(m),
        _ => None,
    });
    let counted = |currency: &str| {
        g.counted
            .iter()
            .filter(|m| m.currency == currency)
            .map(|m| m.amount)
            .sum::<i64>()
    };
    let spent_words = spend
        .map(|limit| {
            let c = money(counted(&limit.currency), &limit.currency);
            format!("; custody approved {c} of its {limit} since it was issued")
        })
        .unwrap_or_default();
    for c in &g.caveats {
        match (c, p.cost) {
            (Caveat::Per(limit), Some(cost)) if cost.currency != limit.currency => {
                return WhyAsked::new(
                    "per_currency",
                    format!(
                        "your grant allows {limit} per order; this is {cost}, another currency"
                    ),
                )
            }
            (Caveat::Per(limit), Some(cost)) if cost.amount > limit.amount => {
                let over = money(cost.amount.saturating_sub(limit.amount), &cost.currency);
                return WhyAsked::new(
                    "per_exceeded",
                    format!(
                        "your grant allows {limit} per order; this is {cost} ({over} over){spent_words}"
                    ),
                );
            }
            _ => {}
        }
    }
    if let (Some(limit), Some(cost)) = (spend, p.cost) {
        if cost.currency != limit.currency {
            return WhyAsked::new(
                "spend_currency",
                format!("your grant allows {limit} in all; this is {cost}, another currency"),
            );
        }
        let so_far = counted(&limit.currency);
        let after = so_far.saturating_add(cost.amount);
        if after > limit.amount {
            return WhyAsked::new(
                "spend_exceeded",
                format!(
                    "your grant allows {limit} in all; custody approved {} of it since it was \
                     issued, and this {cost} would make {} ({} over)",
                    money(so_far, &limit.currency),
                    money(after, &limit.currency),
                    money(after.saturating_sub(limit.amount), &limit.currency)
                ),
            );
        }
    }
    for c in &g.caveats {
        match c {
            Caveat::Risk(ceiling) if p.risk > *ceiling => {
                return WhyAsked::new(
                    "risk_above",
                    format!(
                        "your grant allows risk up to {ceiling}; this is {} risk",
                        p.risk
                    ),
                )
            }
            Caveat::Only(_) => {
                return WhyAsked::new(
                    "one_proposal_only",
                    "your grant for this service was for one other proposal only".to_owned(),
                )
            }
            Caveat::Each(_) | Caveat::Total(_) => {
                return WhyAsked::new(
                    "limit_exceeded",
                    format!(
                        "your grant limits what this agent uses ({}); the service asks you, so \
                         this is likely beyond that limit",
                        c.describe_with(crate::local_time::when)
                    ),
                )
            }
            _ => {}
        }
    }
    WhyAsked::new(
        "covered",
        format!(
            "your grant seems to cover this{spent_words}, yet the service asks you: it may \
             count spending custody does not see"
        ),
    )
}

/// Whether `g` names `service` (a grant with no `svc` caveat names every one).
fn names(g: &IssuedGrant, service: &str) -> bool {
    g.caveats.iter().all(|c| match c {
        Caveat::Svc(list) => list.iter().any(|s| s == service),
        _ => true,
    })
}

fn allows_capability(g: &IssuedGrant, capability: &str) -> bool {
    g.caveats.iter().all(|c| match c {
        Caveat::Can(list) => list.iter().any(|p| pattern_matches(p, capability)),
        _ => true,
    })
}

fn money(amount: i64, currency: &str) -> Money {
    Money {
        amount,
        currency: currency.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn usd(amount: i64) -> Money {
        money(amount, "USD")
    }

    /// A grant as custody issues it: parsed from the JSON it signs.
    fn grant(caveats: serde_json::Value, expires: i64, counted: Vec<Money>) -> IssuedGrant {
        IssuedGrant {
            caveats: caveats
                .as_array()
                .unwrap()
                .iter()
                .map(Caveat::parse)
                .collect(),
            issued_at: NOW - 3600,
            expires,
            revoked: false,
            counted,
        }
    }

    fn shop_grant(counted: Vec<Money>) -> IssuedGrant {
        grant(
            json!([
                {"svc": ["shop.example"]},
                {"can": ["shop.order.*"]},
                {"exp": NOW + 86_400},
                {"per": {"max": 4000, "currency": "USD"}},
                {"spend": {"max": 10000, "currency": "USD"}},
                {"risk": "medium"}
            ]),
            NOW + 86_400,
            counted,
        )
    }

    fn order(cost: &Money) -> Proposed<'_> {
        Proposed {
            service: "shop.example",
            capability: "shop.order.place",
            cost: Some(cost),
            risk: RiskLevel::Low,
        }
    }

    #[test]
    fn the_grant_parses_as_custody_signs_it() {
        let g = shop_grant(vec![]);
        assert!(
            g.caveats.iter().all(Caveat::is_well_formed),
            "{:?}",
            g.caveats
        );
    }

    #[test]
    fn per_order_limit_says_by_how_much_and_what_is_spent() {
        let cost = usd(5830);
        let w = why_asked(&order(&cost), &[shop_grant(vec![])], NOW);
        assert_eq!(w.rule, "per_exceeded");
        assert_eq!(
            w.words,
            "Your grant allows 40.00 USD per order; this is 58.30 USD (18.30 USD over); \
             custody approved 0.00 USD of its 100.00 USD since it was issued"
        );
    }

    #[test]
    fn total_limit_counts_what_custody_approved_since() {
        let cost = usd(3000);
        let w = why_asked(&order(&cost), &[shop_grant(vec![usd(8000)])], NOW);
        assert_eq!(w.rule, "spend_exceeded");
        assert_eq!(
            w.words,
            "Your grant allows 100.00 USD in all; custody approved 80.00 USD of it since it \
             was issued, and this 30.00 USD would make 110.00 USD (10.00 USD over)"
        );
    }

    #[test]
    fn no_grant_for_the_service() {
        let cost = usd(500);
        let mut other = shop_grant(vec![]);
        other.caveats[0] = Caveat::Svc(vec!["cal.example.com".into()]);
        for grants in [vec![], vec![other]] {
            let w = why_asked(&order(&cost), &grants, NOW);
            assert_eq!(w.rule, "no_grant");
            assert!(
                w.words.starts_with("No grant of yours covers this"),
                "{}",
                w.words
            );
            assert!(w.words.contains("shop.example"));
        }
    }

    #[test]
    fn expired_grant_says_it_ended() {
        let cost = usd(500);
        let mut g = shop_grant(vec![]);
        g.expires = NOW - 60;
        let w = why_asked(&order(&cost), &[g], NOW);
        assert_eq!(w.rule, "grant_expired");
        assert!(
            w.words.starts_with("Your grant for shop.example ended "),
            "{}",
            w.words
        );
    }

    /// A revoked grant covers nothing: custody says the human revoked it,
    /// never what it would have allowed; a live grant beside it still says.
    #[test]
    fn revoked_grant_says_it_was_revoked() {
        let cost = usd(5830);
        let mut g = shop_grant(vec![]);
        g.revoked = true;
        let w = why_asked(&order(&cost), std::slice::from_ref(&g), NOW);
        assert_eq!(w.rule, "grant_revoked");
        assert_eq!(
            w.words,
            "You revoked your grant for shop.example; no grant of yours covers this now"
        );
        let w = why_asked(&order(&cost), &[g, shop_grant(vec![])], NOW);
        assert_eq!(w.rule, "per_exceeded", "{}", w.words);
    }

    #[test]
    fn capability_not_granted_names_what_is() {
        let cost = usd(500);
        let p = Proposed {
            capability: "shop.account.delete",
            ..order(&cost)
        };
        let w = why_asked(&p, &[shop_grant(vec![])], NOW);
        assert_eq!(w.rule, "capability_not_granted");
        assert_eq!(
            w.words,
            "Your grant for shop.example does not allow shop.account.delete (it allows shop.order.*)"
        );
    }

    #[test]
    fn risk_above_the_ceiling() {
        let cost = usd(500);
        let p = Proposed {
            risk: RiskLevel::High,
            ..order(&cost)
        };
        let w = why_asked(&p, &[shop_grant(vec![])], NOW);
        assert_eq!(w.rule, "risk_above");
        assert_eq!(
            w.words,
            "Your grant allows risk up to medium; this is high risk"
        );
    }

    #[test]
    fn other_currency() {
        let cost = money(500, "EUR");
        let w = why_asked(&order(&cost), &[shop_grant(vec![])], NOW);
        assert_eq!(w.rule, "per_currency");
        assert!(
            w.words.contains("5.00 EUR, another currency"),
            "{}",
            w.words
        );
    }

    #[test]
    fn covered_says_custody_cannot_see_the_services_count() {
        let cost = usd(500);
        let w = why_asked(&order(&cost), &[shop_grant(vec![usd(1000)])], NOW);
        assert_eq!(w.rule, "covered");
        assert!(
            w.words
                .contains("custody approved 10.00 USD of its 100.00 USD"),
            "{}",
            w.words
        );
    }

    #[test]
    fn a_live_grant_wins_over_an_expired_one() {
        let cost = usd(5830);
        let mut old = shop_grant(vec![]);
        old.expires = NOW - 1;
        let w = why_asked(&order(&cost), &[old, shop_grant(vec![])], NOW);
        assert_eq!(w.rule, "per_exceeded");
    }

    #[test]
    fn hostile_service_names_are_made_display_safe() {
        let cost = usd(500);
        let p = Proposed {
            service: "evil\u{202e}moc.example",
            ..order(&cost)
        };
        let w = why_asked(&p, &[], NOW);
        assert!(!w.words.contains('\u{202e}'), "{}", w.words);
    }
}
