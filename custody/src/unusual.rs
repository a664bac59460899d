//! What is unusual about a request, judged against custody's own audit log
//! and shown as warnings above the Approve button, each with its reason in
//! words (issue 15, part 3).
//!
//! Why: a human sees one request at a time. An order 12× larger than
//! anything this agent bought at this service, a first purchase from a
//! service id that looks like one they use every week, a charge with no
//! stated cost: each looks like any other request unless someone compares
//! it with what came before. Custody has the record, so custody compares.
//!
//! How: [`Facts::gather`] reads what the log says (a few bounded queries,
//! [`crate::audit::Audit`]'s history methods), then every rule of [`RULES`],
//! a pure function of the request and those facts, says in one sentence
//! whether it applies. A rule never refuses anything: it only tells the
//! human. The table is the one place where the rules live; each has a named
//! test (`tests/unusual_rules.rs`).

use crate::audit::{Audit, AuditError};
use crate::display::safe;
use crate::review::{ReviewKind, ReviewedConsent, ReviewedGrant};
use parley_core::caveat::Caveat;
use parley_core::money::{is_zero_decimal, Money};
use parley_core::proposal::EffectOp;
use serde::Serialize;

/// A cost at least this many times the agent's largest at the service is
/// "far above".
pub const FAR_ABOVE: i64 = 3;
/// An irreversible cost of at least this many major units (100.00 USD,
/// 100 JPY… by the currency's own unit) is "costly".
pub const COSTLY_MAJOR_UNITS: i64 = 100;

/// One rule that applies, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unusual {
    /// The rule's stable name (for tests, logs and the UI).
    pub rule: &'static str,
    /// Why, in words (display-safe).
    pub reason: String,
}

/// What a rule looks at in the request. Strings are as the request gave
/// them (the rules make their reasons display-safe).
#[derive(Debug, Clone)]
pub struct Subject<'a> {
    /// Consent or grant.
    pub kind: ReviewKind,
    /// The agent key, as stored in the audit log.
    pub agent: String,
    /// The service (consent) or the services a grant names.
    pub services: Vec<&'a str>,
    /// What the proposal spends, as money (consent): Parley's `cost`, YEA's `spend`.
    pub cost: Option<&'a Money>,
    /// Whether an effect charges (consent).
    pub charges: bool,
    /// Whether the proposal cannot be undone (consent).
    pub irreversible: bool,
    /// The service's own summary (consent).
    pub summary: Option<&'a str>,
    /// Whether the human has named this agent key.
    pub labelled: bool,
    /// The key's four-word phrase ([`crate::fingerprint`]).
    pub phrase: &'a str,
    /// The OS user (uid) the request came from, when known ([`Subject::asked_by`]).
    pub uid: Option<u32>,
    /// The executable the request came from (as read at connect time), when known.
    pub exe: Option<&'a str>,
}

impl<'a> Subject<'a> {
    /// A consent request.
    pub fn of_consent(c: &'a ReviewedConsent) -> Subject<'a> {
        let p = c.checked().proposal();
        Subject {
            kind: ReviewKind::Consent,
            agent: c.agent().to_string(),
            services: vec![c.checked().request().service.as_str()],
            // Parley's cost, or YEA's `spend` when it is money (the review's own reading).
            cost: c.review().cost_money.as_ref(),
            charges: p.effects.iter().any(|e| e.op == EffectOp::Charge),
            irreversible: p.irreversible(),
            summary: Some(c.checked().request().summary.as_str()),
            labelled: c.review().agent.label.is_some(),
            phrase: &c.review().agent.phrase,
            uid: None,
            exe: None,
        }
    }

    /// A grant request.
    pub fn of_grant(g: &'a ReviewedGrant) -> Subject<'a> {
        let services = g
            .caveats()
            .iter()
            .filter_map(|c| match c {
                Caveat::Svc(l) => Some(l.iter().map(String::as_str)),
                _ => None,
            })
            .flatten()
            .collect();
        Subject {
            kind: ReviewKind::Grant,
            agent: g.agent().to_string(),
            services,
            cost: None,
            charges: false,
            irreversible: false,
            summary: None,
            labelled: g.review().agent.label.is_some(),
            phrase: &g.review().agent.phrase,
            uid: None,
            exe: None,
        }
    }

    /// The same subject, asked by OS user `uid` running `exe`: what the
    /// known-agent rules compare with where the key asked from before.
    pub fn asked_by(mut self, uid: u32, exe: Option<&'a str>) -> Subject<'a> {
        self.uid = Some(uid);
        self.exe = exe;
        self
    }

    fn service(&self) -> &str {
        self.services.first().copied().unwrap_or("")
    }
}

/// What custody's log says, as far as the rules need it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Consents the human approved at the (first) service.
    pub consents_at_service: u64,
    /// Rows naming this agent (any kind).
    pub agent_rows: u64,
    /// This agent's largest approved consent at this service, in the cost's currency.
    pub largest_here: Option<Money>,
    /// The currencies of the spending limits of the grants this agent holds now.
    pub grant_currencies: Vec<String>,
    /// Every service id the human has approved at or granted for.
    pub services_used: Vec<String>,
    /// Whether the human ever signed for this agent (a grant or a consent).
    pub signed_before: bool,
    /// The users and executables this agent asked from when the human signed.
    pub seen: crate::audit::SeenAs,
}

impl Facts {
    /// Reads the facts about `s` from the log, as of `now`.
    pub fn gather(audit: &Audit, s: &Subject, now: i64) -> Result<Facts, AuditError> {
        // Rows custody's own process wrote as the requester (a grant from
        // the form) say nothing about where the agent runs.
        let own_exe = std::env::current_exe()
            .ok()
            .map(|p| p.to_string_lossy().into_owned());
        let mut f = Facts {
            agent_rows: audit.agent_rows(&s.agent)?,
            services_used: audit.services_used()?,
            signed_before: audit.signed_rows(&s.agent)? > 0,
            seen: audit.seen_as(&s.agent, own_exe.as_deref())?,
            ..Facts::default()
        };
        if s.kind == ReviewKind::Consent {
            f.consents_at_service = audit.consents_at_service(s.service())?;
            if let Some(cost) = s.cost {
                f.largest_here = audit
                    .largest_consent(&s.agent, s.service(), &cost.currency)?
                    .map(|amount| Money {
                        amount,
                        currency: cost.currency.clone(),
                    });
            }
            for text in audit.live_grant_caveats(&s.agent, now)? {
                let Ok(serde_json::Value::Array(list)) = serde_json::from_str(&text) else {
                    continue;
                };
                for raw in &list {
                    if let Caveat::Spend(m) | Caveat::Per(m) = Caveat::parse(raw) {
                        if !f.grant_currencies.contains(&m.currency) {
                            f.grant_currencies.push(m.currency);
                        }
                    }
                }
            }
        }
        Ok(f)
    }
}

/// A named rule: `None` when it does not apply, else the reason.
pub struct Rule {
    /// Stable name.
    pub name: &'static str,
    /// The check.
    pub check: fn(&Subject, &Facts) -> Option<String>,
}

/// Every rule, in the order their warnings are shown.
pub const RULES: &[Rule] = &[
    Rule {
        name: "unknown_agent_key",
        check: unknown_agent_key,
    },
    Rule {
        name: "agent_from_other_user",
        check: agent_from_other_user,
    },
    Rule {
        name: "agent_from_other_exe",
        check: agent_from_other_exe,
    },
    Rule {
        name: "charge_without_cost",
        check: charge_without_cost,
    },
    Rule {
        name: "cost_far_above_history",
        check: cost_far_above_history,
    },
    Rule {
        name: "irreversible_and_costly",
        check: irreversible_and_costly,
    },
    Rule {
        name: "confusable_service",
        check: confusable_service,
    },
    Rule {
        name: "currency_unlike_grants",
        check: currency_unlike_grants,
    },
    Rule {
        name: "summary_without_amount",
        check: summary_without_amount,
    },
    Rule {
        name: "first_consent_at_service",
        check: first_consent_at_service,
    },
    Rule {
        name: "first_request_from_agent",
        check: first_request_from_agent,
    },
];

/// Every rule that applies to `s` given `facts`.
pub fn assess(s: &Subject, facts: &Facts) -> Vec<Unusual> {
    RULES
        .iter()
        .filter_map(|r| {
            (r.check)(s, facts).map(|reason| Unusual {
                rule: r.name,
                reason,
            })
        })
        .collect()
}

fn first_consent_at_service(s: &Subject, f: &Facts) -> Option<String> {
    (s.kind == ReviewKind::Consent && f.consents_at_service == 0).then(|| {
        format!(
            "First consent at {}: you have never approved a request from this service.",
            safe(s.service())
        )
    })
}

fn first_request_from_agent(_s: &Subject, f: &Facts) -> Option<String> {
    (f.agent_rows == 0)
        .then(|| "First request from this agent: custody has no record of this key.".to_owned())
}

fn unknown_agent_key(s: &Subject, f: &Facts) -> Option<String> {
    // A key custody never heard of has its own rule (first request).
    (f.agent_rows > 0 && !f.signed_before && !s.labelled).then(|| {
        format!(
            "Unknown agent key (words: {}): you have never approved anything for it and have not named it. Make sure it is the agent you expect.",
            safe(s.phrase)
        )
    })
}

fn agent_from_other_user(s: &Subject, f: &Facts) -> Option<String> {
    let uid = s.uid?;
    if !f.signed_before || f.seen.users.is_empty() || f.seen.users.contains(&uid) {
        return None;
    }
    let before: Vec<String> = f.seen.users.iter().map(u32::to_string).collect();
    Some(format!(
        "Known agent, other OS user: you approved this key for requests from uid {}; this one comes from uid {uid}. Its key may have been copied.",
        before.join(", ")
    ))
}

fn agent_from_other_exe(s: &Subject, f: &Facts) -> Option<String> {
    let exe = s.exe?;
    if !f.signed_before || f.seen.exes.is_empty() || f.seen.exes.iter().any(|e| e == exe) {
        return None;
    }
    let before: Vec<String> = f.seen.exes.iter().take(3).map(|e| safe(e)).collect();
    let more = if f.seen.exes.len() > 3 { ", …" } else { "" };
    Some(format!(
        "Known agent, other program: you approved this key for requests from {}{more}; this one comes from {} (not verified).",
        before.join(", "),
        safe(exe)
    ))
}

/// `12×`, `3.5×`: how many times `a` is `b` (both positive).
fn times(a: i64, b: i64) -> String {
    let tenths = (i128::from(a) * 10) / i128::from(b);
    if tenths >= 100 {
        format!("{}×", (tenths + 5) / 10)
    } else {
        format!("{}.{}×", tenths / 10, tenths % 10)
    }
}

fn cost_far_above_history(s: &Subject, f: &Facts) -> Option<String> {
    let cost = s.cost?;
    let largest = f.largest_here.as_ref()?;
    if largest.amount <= 0 || cost.amount < largest.amount.saturating_mul(FAR_ABOVE) {
        return None;
    }
    Some(format!(
        "Costs {cost}, {} this agent's largest at {} ({largest}).",
        times(cost.amount, largest.amount),
        safe(s.service())
    ))
}

fn irreversible_and_costly(s: &Subject, _f: &Facts) -> Option<String> {
    let cost = s.cost?;
    let major = if is_zero_decimal(&cost.currency) {
        cost.amount
    } else {
        cost.amount / 100
    };
    (s.irreversible && major >= COSTLY_MAJOR_UNITS)
        .then(|| format!("Irreversible and costly: {cost} that cannot be undone."))
}

fn charge_without_cost(s: &Subject, _f: &Facts) -> Option<String> {
    (s.kind == ReviewKind::Consent && s.cost.is_none() && s.charges)
        .then(|| crate::review::SAYS_FREE_BUT_CHARGES.to_owned())
}

fn currency_unlike_grants(s: &Subject, f: &Facts) -> Option<String> {
    let cost = s.cost?;
    if f.grant_currencies.is_empty() || f.grant_currencies.contains(&cost.currency) {
        return None;
    }
    Some(format!(
        "Costs {}, a currency none of this agent's grants is in ({}).",
        safe(&cost.currency),
        safe(&f.grant_currencies.join(", "))
    ))
}

/// The UTS #39 skeleton of an id, case folded: equal skeletons are confusable.
fn skeleton(id: &str) -> String {
    unicode_security::confusable_detection::skeleton(&id.to_lowercase()).collect()
}

fn confusable_service(s: &Subject, f: &Facts) -> Option<String> {
    let found: Vec<String> = s
        .services
        .iter()
        .filter(|svc| !f.services_used.iter().any(|u| u == *svc))
        .filter_map(|svc| {
            let sk = skeleton(svc);
            f.services_used
                .iter()
                .find(|u| skeleton(u) == sk)
                .map(|u| format!("{} looks like {}", safe(svc), safe(u)))
        })
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "Look-alike service id: {}, which you have used before. Check every character.",
            found.join("; ")
        )
    })
}

fn summary_without_amount(s: &Subject, _f: &Facts) -> Option<String> {
    let summary = s.summary?;
    crate::summary_cost::mismatch(summary, s.cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_people_say_them() {
        assert_eq!(times(6000, 500), "12×");
        assert_eq!(times(1750, 500), "3.5×");
        assert_eq!(times(1500, 500), "3.0×");
    }

    #[test]
    fn look_alike_ids_share_a_skeleton_and_others_do_not() {
        assert_eq!(skeleton("shop.examp1e"), skeleton("shop.example"));
        assert_eq!(skeleton("shop.\u{0435}xample"), skeleton("shop.example"));
        assert_ne!(skeleton("shop.example"), skeleton("shop.exampel"));
    }
}
