//! "Approve for a while" (issue 30, item 4): beside Approve, a consent
//! review may offer "and let this agent spend up to X more at this service
//! in the next N minutes without asking". Approved that way, custody also
//! issues a short grant with exactly these caveats: this service, the
//! proposal's capability, a per-order and a total cap of X (Parley
//! `per`/`spend`, YEA `each`/`total` of `spend`), and an `exp` N minutes
//! away. Its holder is the agent that asked.
//!
//! This module is the rule: what may be offered ([`offer`]), which choices
//! the engine accepts ([`Offer::check`]), the caveats ([`Offer::caveats`],
//! then reviewed by the same [`crate::review::review_grant`] every grant
//! passes and signed by the same signer), and the words the human reads
//! before the OS asks ([`Offer::words`]). The engine decides; the windows
//! and the terminal only offer.
//!
//! The bounds: minutes ∈ [`MINUTES`] (never more than an hour), an amount
//! above zero and at most [`CEILING_TIMES`] × the order just approved. The
//! ceiling follows the order the human is looking at, in its currency: a
//! fixed amount would mean nothing across currencies, and ten orders like
//! this one is what "a stream of small purchases" asks for, no more.
//!
//! Ended by freeze, by the session's lock (a setting) and by revoke, all
//! through the signed revocations of [`crate::revoke`]: a service that does
//! not read revocations keeps accepting the grant until its `exp`.

use crate::review::{Review, ReviewKind, ReviewedConsent};
use parley_core::money::is_zero_decimal;
use parley_core::money::Money;
use parley_core::{Caveat, Dialect};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The minutes a human may choose.
pub const MINUTES: [u32; 4] = [5, 15, 30, 60];
/// The amount is at most this many times the order approved.
pub const CEILING_TIMES: i64 = 10;
/// How many amounts the windows and the terminal offer.
const CHOICES: usize = 4;
/// The audit `reason` of a `short_grant_refused` row starts with this. A
/// short grant itself is known by its row's `for_a_while` column, never by
/// any reason text (an agent's grant request can say anything there).
pub const REASON_PREFIX: &str = "approve for a while: ";

/// What the human chose: at most `amount` (minor units of the order's
/// currency) more, for `minutes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForAWhile {
    /// Minor units of the order's currency.
    pub amount: i64,
    /// One of [`MINUTES`].
    pub minutes: u32,
}

/// Why a choice or an offer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Minutes not offered ([`MINUTES`], within the longest grant).
    #[error("{0} minutes is not offered: choose 5, 15, 30 or 60 (at most the longest grant the settings allow)")]
    Minutes(u32),
    /// Zero or negative.
    #[error("the amount must be more than zero")]
    Amount,
    /// Above the ceiling.
    #[error("{asked} is above the most custody allows for this order ({ceiling}, ten times it)")]
    AboveCeiling {
        /// What was asked, in words.
        asked: String,
        /// The ceiling, in words.
        ceiling: String,
    },
    /// A job approval code (YEA): typed phrase, one plan, never for a while.
    #[error("a job approval is never approved for a while: each plan is approved with its phrase")]
    JobCode,
    /// A grant request is already a grant.
    #[error("only a consent review offers approve-for-a-while, not a grant request")]
    GrantRequest,
    /// Nothing to cap in money.
    #[error("this order states no amount of money custody can cap, so it cannot be approved for a while")]
    NoMoney,
    /// Frozen.
    #[error("custody is frozen: nothing is approved for a while")]
    Frozen,
    /// No such pending request.
    #[error("that request is no longer waiting (decided, expired or withdrawn)")]
    NotPending,
    /// The settings' longest grant is shorter than every choice.
    #[error(
        "grants are limited to under 5 minutes in the settings (Longest grant), so none is offered"
    )]
    Lifetime,
}

/// What a consent review may offer, computed by custody.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offer {
    /// The order approved now.
    pub order: Money,
    /// The most the human may choose (minor units).
    pub ceiling: i64,
    /// Round amounts up to the ceiling (minor units), smallest first.
    pub amounts: Vec<i64>,
    /// [`MINUTES`].
    pub minutes: Vec<u32>,
    /// The service id (display-safe, from the review).
    pub service: String,
    /// The capability (display-safe).
    pub capability: String,
    /// The dialect, which says which caveats cap it.
    #[serde(skip)]
    pub dialect: Dialect,
    /// YEA: the scale the proposal's `spend` is written in.
    #[serde(skip)]
    spend_scale: u8,
}

/// The offer for consent `c`, or why there is none. `max_lifetime`: the
/// longest grant custody signs (seconds); longer choices are not offered.
pub fn offer(c: &ReviewedConsent, max_lifetime: i64) -> Result<Offer, Refused> {
    if c.job_phrase().is_some() || c.review().job.is_some() {
        return Err(Refused::JobCode);
    }
    let mut o = offer_for(c.review(), spend_scale(c))?;
    o.minutes.retain(|m| i64::from(*m) * 60 <= max_lifetime);
    if o.minutes.is_empty() {
        return Err(Refused::Lifetime);
    }
    Ok(o)
}

fn spend_scale(c: &ReviewedConsent) -> u8 {
    c.checked()
        .proposal()
        .uses
        .as_ref()
        .and_then(|u| u.get("spend"))
        .map(|q| q.scale)
        .unwrap_or(2)
}

fn offer_for(r: &Review, spend_scale: u8) -> Result<Offer, Refused> {
    if r.kind != ReviewKind::Consent {
        return Err(Refused::GrantRequest);
    }
    let order = r
        .cost_money
        .clone()
        .filter(|m| m.amount > 0)
        .ok_or(Refused::NoMoney)?;
    let ceiling = order.amount.saturating_mul(CEILING_TIMES);
    Ok(Offer {
        amounts: round_amounts(&order.currency, ceiling),
        order,
        ceiling,
        minutes: MINUTES.to_vec(),
        service: r.service.clone(),
        capability: r.capability.clone(),
        dialect: r.dialect,
        spend_scale,
    })
}

/// Up to [`CHOICES`] amounts of the 1-2-5 series in whole units, the
/// largest not above `ceiling` (minor units).
fn round_amounts(currency: &str, ceiling: i64) -> Vec<i64> {
    let unit: i64 = if is_zero_decimal(currency) { 1 } else { 100 };
    let mut all = Vec::new();
    let mut decade: i64 = 1;
    while decade <= ceiling / unit {
        for m in [1, 2, 5] {
            let v = decade.saturating_mul(m).saturating_mul(unit);
            if v <= ceiling {
                all.push(v);
            }
        }
        decade = decade.saturating_mul(10);
    }
    if all.is_empty() {
        all.push(ceiling);
    }
    let skip = all.len().saturating_sub(CHOICES);
    all.split_off(skip)
}

impl Offer {
    /// The engine's check of the human's choice.
    pub fn check(&self, w: &ForAWhile) -> Result<(), Refused> {
        if !self.minutes.contains(&w.minutes) {
            return Err(Refused::Minutes(w.minutes));
        }
        if w.amount <= 0 {
            return Err(Refused::Amount);
        }
        if w.amount > self.ceiling {
            return Err(Refused::AboveCeiling {
                asked: self.money(w.amount).to_string(),
                ceiling: self.money(self.ceiling).to_string(),
            });
        }
        Ok(())
    }

    /// `amount` in the order's currency.
    pub fn money(&self, amount: i64) -> Money {
        Money {
            amount,
            currency: self.order.currency.clone(),
        }
    }

    /// What the human reads before Approve and before the OS asks:
    /// "and let “<agent>” spend up to 20.00 USD more at shop.example in the
    /// next 15 minutes without asking". `agent` is already display-safe.
    pub fn words(&self, agent: &str, w: &ForAWhile) -> String {
        format!(
            "and let “{agent}” spend up to {} more at {} in the next {} minutes without asking",
            self.money(w.amount),
            self.service,
            w.minutes
        )
    }

    /// The OS prompt's words for the grant (the service is the consent's,
    /// named beside it): "a grant for up to 100.00 USD for 15 minutes".
    pub fn prompt_words(&self, w: &ForAWhile) -> String {
        format!(
            "a grant for up to {} for {} minutes",
            self.money(w.amount),
            w.minutes
        )
    }

    /// The short grant's caveats, exactly: this service, this capability,
    /// the per-order and total caps in this dialect, and `exp`.
    /// `service`/`capability` are the proposal's own (not display copies).
    pub fn caveats(&self, service: &str, capability: &str, w: &ForAWhile, now: i64) -> Value {
        let exp = now + i64::from(w.minutes) * 60;
        let currency = &self.order.currency;
        let limits = match self.dialect {
            Dialect::ParleyV1 => {
                let m = json!({"max": w.amount, "currency": currency});
                vec![json!({"per": m}), json!({"spend": m})]
            }
            Dialect::YeaV1 => {
                let l = json!({"of": "spend", "max": w.amount, "scale": self.spend_scale, "unit": currency});
                vec![json!({"each": l}), json!({"total": l})]
            }
        };
        let mut caveats = vec![json!({"svc": [service]}), json!({"can": [capability]})];
        caveats.extend(limits);
        caveats.push(json!({"exp": exp}));
        Value::Array(caveats)
    }
}

/// A short grant custody issued beside a consent: what the agent is sent
/// (the protocol reply's `for_a_while`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortGrant {
    /// The `pg1.` token.
    pub token: String,
    /// Its caveats, as signed.
    pub caveats: Vec<Caveat>,
    /// When it ends at the latest.
    pub exp: i64,
    /// In words (the same the human read).
    pub words: String,
}

/// An offer for an order of `cost` minor units at shop.example (tests).
#[cfg(test)]
pub(crate) fn test_offer(cost: i64, currency: &str, dialect: Dialect) -> Offer {
    tests::offer(cost, currency, dialect)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn offer(cost: i64, currency: &str, dialect: Dialect) -> Offer {
        let order = Money {
            amount: cost,
            currency: currency.into(),
        };
        let ceiling = cost * CEILING_TIMES;
        Offer {
            amounts: round_amounts(currency, ceiling),
            order,
            ceiling,
            minutes: MINUTES.to_vec(),
            service: "shop.example".into(),
            capability: "shop.order".into(),
            dialect,
            spend_scale: 2,
        }
    }

    #[test]
    fn the_amounts_offered_are_round_and_never_above_ten_orders() {
        assert_eq!(
            offer(5830, "USD", Dialect::ParleyV1).amounts,
            [5000, 10000, 20000, 50000]
        );
        assert_eq!(
            offer(300, "JPY", Dialect::ParleyV1).amounts,
            [200, 500, 1000, 2000]
        );
        assert_eq!(offer(1, "USD", Dialect::ParleyV1).amounts, [10]);
    }

    #[test]
    fn the_engine_refuses_minutes_and_amounts_out_of_bounds() {
        let o = offer(5830, "USD", Dialect::ParleyV1);
        let w = |amount, minutes| ForAWhile { amount, minutes };
        assert_eq!(o.check(&w(10000, 0)), Err(Refused::Minutes(0)));
        assert_eq!(o.check(&w(10000, 600)), Err(Refused::Minutes(600)));
        assert_eq!(o.check(&w(0, 15)), Err(Refused::Amount));
        assert!(matches!(
            o.check(&w(58301, 15)),
            Err(Refused::AboveCeiling { .. })
        ));
        for m in MINUTES {
            assert_eq!(o.check(&w(58300, m)), Ok(()));
        }
    }

    #[test]
    fn the_caveats_are_exactly_service_capability_caps_and_exp_in_each_dialect() {
        let w = ForAWhile {
            amount: 2000,
            minutes: 15,
        };
        let p =
            offer(5830, "USD", Dialect::ParleyV1).caveats("shop.example", "shop.order", &w, 100);
        assert_eq!(
            p,
            json!([{"svc": ["shop.example"]}, {"can": ["shop.order"]},
                {"per": {"max": 2000, "currency": "USD"}}, {"spend": {"max": 2000, "currency": "USD"}},
                {"exp": 1000}])
        );
        let y = offer(5830, "USD", Dialect::YeaV1).caveats("shop.example", "shop.order", &w, 100);
        let l = json!({"of": "spend", "max": 2000, "scale": 2, "unit": "USD"});
        assert_eq!(
            y,
            json!([{"svc": ["shop.example"]}, {"can": ["shop.order"]}, {"each": l}, {"total": l}, {"exp": 1000}])
        );
        for c in y.as_array().unwrap() {
            assert!(!matches!(Caveat::parse(c), Caveat::Invalid { .. }), "{c}");
        }
        assert_eq!(
            offer(5830, "USD", Dialect::ParleyV1).words("Alice's shopper", &w),
            "and let “Alice's shopper” spend up to 20.00 USD more at shop.example in the next 15 minutes without asking"
        );
    }
}
