//! What the OS password prompt says is being signed: the reviewed request
//! in one short sentence (`decision`, which the policy's message quotes:
//! "Parley Custody will sign $(decision). …"), and each fact on its own key
//! (`kind`, `amount`, `service`, `agent`, `hash`) for graphical agents that
//! list details. The prompt is drawn by the desktop, not by custody: the
//! human reads there which request the password is for, so a password typed
//! for one request cannot quietly sign another.
//!
//! Every value is display-safe and short ([`PromptDetails::with`]); each
//! part of the sentence is cut on its own first, so a long service id or
//! label can never push the amount, the agent's name or the hash out of
//! the sentence. The agent is named as every other view names it: by its
//! one name (the human's name for it, else its four words).

use super::*;
use crate::display::bounded;
use parley_core::Caveat;

/// Longest amount in the sentence (several YEA measures can be listed).
const AMOUNT_CHARS: usize = 24;
/// Longest service id (or list of services) in the sentence.
const SERVICE_CHARS: usize = 32;
/// Longest capability in the sentence.
const CAPABILITY_CHARS: usize = 16;
/// Longest agent name in the sentence: room for any four words (each list
/// word has at most 8 letters) and for most names a human gives.
const NAME_CHARS: usize = 36;
/// Longest list of grant limits in the sentence.
const LIMITS_CHARS: usize = 36;
/// Characters of the hash shown: enough to compare with the review's.
const HASH_CHARS: usize = 8;

/// `s` display-safe and cut to `max` shown characters, marked with `…` when
/// cut (the display rule's own marker says how many bytes were dropped,
/// which a one-line prompt has no room for).
fn part(s: &str, max: usize) -> String {
    let b = bounded(s, max);
    match b.rfind("…(") {
        Some(i) if b.ends_with(" bytes)") && b.chars().count() > max => format!("{}…", &b[..i]),
        _ => b,
    }
}

/// The agent as the prompt names it: by its one name, the human's name for
/// it when there is one (`agent "Alice's shopper"`), else its four words
/// (`agent "cactus orbit lemon frost"`), as every other view names it
/// ([`crate::fingerprint::agent_name`]).
fn agent_named(r: &review::Review, label: Option<&str>) -> String {
    let name = crate::fingerprint::name_or(label, || r.agent.phrase.clone());
    format!("agent \"{}\"", part(&name, NAME_CHARS))
}

/// The prompt for approving a consent: what it spends, where, for which
/// agent (`label`: the human's name for it, read when the decision is
/// made), and the proposal's hash as the review shows it.
pub(super) fn consent(r: &review::Review, label: Option<&str>) -> PromptDetails {
    let amount = part(&r.cost, AMOUNT_CHARS);
    let service = part(&r.service, SERVICE_CHARS);
    let capability = part(&r.capability, CAPABILITY_CHARS);
    let hash: String = r.hash.chars().take(HASH_CHARS).collect();
    let agent = agent_named(r, label);
    let decision = format!(
        "a consent for {amount} at {service} ({capability}) asked by {agent}, proposal {hash}"
    );
    PromptDetails::new()
        .with("decision", &decision)
        .with("kind", "consent")
        .with("amount", &r.cost)
        .with("service", &r.service)
        .with("capability", &r.capability)
        .with("agent", &agent)
        .with("hash", &hash)
}

/// The sentence for a consent approved for a while: the consent (its
/// capability left to its own key, and the service cut shorter, so the
/// grant's words always fit) and `grant` ("a grant for up to X at S for N
/// minutes").
pub(super) fn consent_and_grant(r: &review::Review, label: Option<&str>, grant: &str) -> String {
    let hash: String = r.hash.chars().take(HASH_CHARS).collect();
    let grant = part(grant, 64);
    // Tighter until it fits: the amount and service are cut shorter; the
    // agent's one name, the hash and the grant stay.
    let agent = agent_named(r, label);
    let tries = [(AMOUNT_CHARS, 20), (14, 12)];
    let mut s = String::new();
    for (amount_max, service_max) in tries {
        let amount = part(&r.cost, amount_max);
        let service = part(&r.service, service_max);
        s = format!(
            "a consent for {amount} at {service} asked by {agent}, proposal {hash}, and {grant}"
        );
        if s.chars().count() <= crate::stepup::DETAIL_MAX_CHARS {
            break;
        }
    }
    s
}

/// The prompt for issuing a grant: to which agent, at which services, with
/// which verbs and limits, until when.
pub(super) fn grant(r: &review::Review, label: Option<&str>, caveats: &[Caveat]) -> PromptDetails {
    let agent = agent_named(r, label);
    let services = caveats
        .iter()
        .find_map(|c| match c {
            Caveat::Svc(l) => Some(l.join(", ")),
            _ => None,
        })
        .unwrap_or_else(|| "every service".into());
    let verbs = caveats
        .iter()
        .find_map(|c| match c {
            Caveat::Verbs(l) => Some(l.join("/")),
            _ => None,
        })
        .unwrap_or_else(|| "every verb".into());
    let limits: Vec<String> = caveats
        .iter()
        .filter_map(|c| match c {
            Caveat::Per(m) => Some(format!("up to {m} per order")),
            Caveat::Spend(m) => Some(format!("up to {m} in all")),
            Caveat::Each(l) => Some(format!("up to {} each", l.describe())),
            Caveat::Total(l) => Some(format!("up to {} in all", l.describe())),
            _ => None,
        })
        .collect();
    let until = caveats.iter().find_map(|c| match c {
        Caveat::Exp(t) => Some(crate::local_time::when(*t)),
        _ => None,
    });
    let mut decision = format!(
        "a grant to {agent} for {}, {}",
        part(&services, SERVICE_CHARS),
        part(&verbs, CAPABILITY_CHARS)
    );
    if !limits.is_empty() {
        decision.push(' ');
        decision.push_str(&part(&limits.join(", "), LIMITS_CHARS));
    }
    if let Some(u) = &until {
        decision.push_str(&format!(", until {u}"));
    }
    let mut d = PromptDetails::new()
        .with("decision", &decision)
        .with("kind", "grant")
        .with("service", &services)
        .with("verbs", &verbs)
        .with("agent", &agent);
    if !limits.is_empty() {
        d = d.with("amount", &limits.join(", "));
    }
    if let Some(u) = &until {
        d = d.with("until", u);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stepup::DETAIL_MAX_CHARS;

    fn review() -> review::Review {
        crate::review::test_support::consent_review()
    }

    /// A consent of 58.30 USD at shop.example by an unnamed agent.
    fn meal_order() -> review::Review {
        let mut r = review();
        r.cost = "58.30 USD".into();
        r.service = "shop.example".into();
        r.capability = "order".into();
        r.agent.phrase = "cactus orbit lemon frost".into();
        r.hash = "1a2b3c4d5e6f7g8h".into();
        r
    }

    #[test]
    fn a_consents_prompt_names_amount_service_agent_and_hash() {
        let r = meal_order();
        let d = consent(&r, None);
        assert_eq!(
            d.get("decision").unwrap(),
            "a consent for 58.30 USD at shop.example (order) asked by agent \
             \"cactus orbit lemon frost\", proposal 1a2b3c4d"
        );
        assert_eq!(d.get("agent"), Some("agent \"cactus orbit lemon frost\""));
        assert_eq!(d.get("amount"), Some("58.30 USD"));
        assert_eq!(d.get("service"), Some("shop.example"));
        assert_eq!(d.get("hash"), Some("1a2b3c4d"));
        assert_eq!(d.get("kind"), Some("consent"));
    }

    #[test]
    fn the_agent_is_named_by_its_one_name_the_humans_else_its_words() {
        let r = meal_order();
        // Named: the human's name alone, as the review, notifications, tray
        // and home name it; the four words are not a second name here.
        let named = consent(&r, Some(" Alice's shopper "));
        assert_eq!(
            named.get("decision").unwrap(),
            "a consent for 58.30 USD at shop.example (order) asked by agent \
             \"Alice's shopper\", proposal 1a2b3c4d"
        );
        assert_eq!(named.get("agent"), Some("agent \"Alice's shopper\""));
        let both = consent_and_grant(&r, Some("Alice's shopper"), "a grant for up to 1.00 USD");
        let caveats = vec![Caveat::Svc(vec!["shop.example".into()])];
        let granted = grant(&r, Some("Alice's shopper"), &caveats);
        for s in [
            named.get("decision").unwrap(),
            &both,
            granted.get("decision").unwrap(),
        ] {
            assert!(s.contains("agent \"Alice's shopper\""), "{s}");
            assert!(!s.contains("cactus"), "one name only: {s}");
        }
        // A blank name is no name: the four words.
        for blank in [None, Some(""), Some("   ")] {
            let d = consent(&r, blank);
            assert_eq!(d.get("agent"), Some("agent \"cactus orbit lemon frost\""));
        }
        // A name is display-safe and cut like every other part.
        let long = format!("shop\u{202e}per {}", "x".repeat(100));
        let d = consent(&r, Some(&long));
        let agent = d.get("agent").unwrap();
        assert!(!agent.contains('\u{202e}'), "{agent:?}");
        assert!(agent.ends_with("…\""), "{agent}");
        assert!(agent.chars().count() <= NAME_CHARS + 9, "{agent}");
    }

    #[test]
    fn long_or_hostile_parts_never_push_the_agent_or_hash_out() {
        let mut r = review();
        r.cost = "9".repeat(300);
        r.service = format!("shop\u{202e}.example{}", "x".repeat(500));
        r.capability = "c\x1b[2J".repeat(50);
        r.agent.phrase = "cactus orbit lemon frost".into();
        r.hash = "abcdefgh12345".into();
        for label in [None, Some("L\u{2066}".repeat(100))] {
            let d = consent(&r, label.as_deref());
            let s = d.get("decision").unwrap();
            assert!(
                s.chars().count() <= DETAIL_MAX_CHARS,
                "{} chars: {s}",
                s.len()
            );
            assert!(s.ends_with("proposal abcdefgh"), "{s}");
            let name = if label.is_some() {
                "asked by agent \"L"
            } else {
                "asked by agent \"cactus orbit lemon frost\""
            };
            assert!(s.contains(name), "{s}");
            for bad in ['\u{202e}', '\x1b', '\u{2066}'] {
                assert!(!s.contains(bad), "{s:?}");
            }
        }
        let d = consent(&r, Some(&"L\u{2066}".repeat(100)));
        let s = d.get("decision").unwrap();
        for bad in ['\u{202e}', '\x1b', '\u{2066}'] {
            assert!(!s.contains(bad), "{s:?}");
        }
        for (_, v) in d.entries() {
            assert!(v.chars().count() < DETAIL_MAX_CHARS + 20, "{v}");
        }
    }

    #[test]
    fn a_consent_approved_for_a_while_names_both_and_the_grant_always_fits() {
        let mut r = review();
        r.cost = "58.30 USD".into();
        r.service = "shop.example".into();
        r.agent.phrase = "cactus orbit lemon frost".into();
        r.hash = "1a2b3c4d5e6f".into();
        let grant = "a grant for up to 100.00 USD for 15 minutes";
        assert_eq!(
            consent_and_grant(&r, Some("Alice's shopper"), grant),
            "a consent for 58.30 USD at shop.example asked by agent \"Alice's shopper\", \
             proposal 1a2b3c4d, and a grant for up to 100.00 USD for 15 minutes"
        );
        // Every part at its longest: still within the prompt's bound, the
        // grant's words whole.
        r.cost = "9".repeat(300);
        r.service = "s".repeat(300);
        r.agent.phrase = "abcdefgh abcdefgh abcdefgh abcdefgh".into();
        let long = "a grant for up to 99999999999999.99 USD for 60 minutes";
        for label in [Some("L".repeat(100)), None] {
            let s = consent_and_grant(&r, label.as_deref(), long);
            assert!(
                s.chars().count() <= DETAIL_MAX_CHARS,
                "{} chars: {s}",
                s.chars().count()
            );
            assert!(s.ends_with(long), "{s}");
            assert!(s.contains("proposal 1a2b3c4d"), "{s}");
            let name = if label.is_some() {
                "LLLL"
            } else {
                "abcdefgh abcdefgh"
            };
            assert!(s.contains(&format!("asked by agent \"{name}")), "{s}");
        }
    }

    #[test]
    fn a_grants_prompt_names_agent_services_verbs_limits_and_end() {
        let mut r = review();
        r.agent.phrase = "cactus orbit lemon frost".into();
        let caveats = vec![
            Caveat::Svc(vec!["shop.example".into()]),
            Caveat::Verbs(vec!["COMMIT".into()]),
            Caveat::Per(parley_core::money::Money {
                amount: 4000,
                currency: "USD".into(),
            }),
            Caveat::Exp(1_800_000_000),
        ];
        let d = grant(&r, None, &caveats);
        let s = d.get("decision").unwrap();
        assert!(
            s.starts_with(
                "a grant to agent \"cactus orbit lemon frost\" for shop.example, COMMIT up to 40.00 USD per order, until "
            ),
            "{s}"
        );
        assert!(s.contains(&crate::local_time::when(1_800_000_000)), "{s}");
        assert_eq!(d.get("kind"), Some("grant"));
        assert_eq!(d.get("amount"), Some("up to 40.00 USD per order"));
    }
}
