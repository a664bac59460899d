//! The consent review: the checklist for a `consent` or `approve_code` op
//! (ARCHITECTURE.md 1–6), which turns a request into a [`ReviewedConsent`]
//! or a [`Rejection`].

use super::view::{agent_view, caveat_views, fits, principal_label, use_views};
use super::{parse_agent, EffectView, Rejection, Review, ReviewContext, ReviewKind, MAX_EFFECTS};
use crate::display::{has_non_ascii, safe};
use parley_core::consent::{self, CheckedConsent, ConsentRequest};
use parley_core::money::Money;
use parley_core::proposal::EffectOp;
use parley_core::quantity::Uses;
use parley_core::{code, lens, Dialect, PublicKey};
use serde_json::Value;

/// What the cost says when the proposal states none but an effect charges.
pub const COST_NOT_STATED: &str = "not stated (an effect charges)";

/// The warning for a proposal that states no cost while an effect charges
/// (also the reason of [`crate::unusual`]'s `charge_without_cost` rule, so
/// the review shows it once).
pub const SAYS_FREE_BUT_CHARGES: &str = "SAYS FREE BUT CHARGES: the proposal states no cost, \
     yet an effect charges. Nothing limits what it charges; deny unless you know the amount.";

/// What the cost line says for a YEA proposal whose `uses` is absent or
/// empty: the commit uses nothing the service measures (§5.1).
pub const NOTHING_MEASURED: &str = "nothing measured";

/// A proposal in the other dialect than the request says fails with a
/// field the review cannot show; say which dialect it looks like instead.
fn wrong_dialect(proposal: &Value, dialect: Dialect) -> Result<(), Rejection> {
    let has = |k: &str| proposal.get(k).is_some();
    let (other, field) = match dialect {
        Dialect::ParleyV1 if has("uses") => (Dialect::YeaV1, "uses"),
        Dialect::YeaV1 if has("cost") => (Dialect::ParleyV1, "cost"),
        _ => return Ok(()),
    };
    Err(Rejection::new(
        "dialect",
        format!(
            "the proposal reports `{field}`, a {other} field, but the request is in {dialect}: \
             send it with \"dialect\": \"{}\"",
            other.name()
        ),
    ))
}

/// The money a consent would spend, as the step-up policy weighs it
/// (`above:AMOUNT`): every amount that is money, and whether something it
/// uses may be money custody cannot weigh.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoneySpent {
    /// Parley: the proposal's `cost`. YEA: every `uses` measure that is
    /// money by the conventions (an ISO 4217 code at its minor-unit
    /// scale), whatever the measure is called: the spec gives names no
    /// meaning, and a service may report a payment as `payment` or `fee`
    /// rather than `spend`.
    pub amounts: Vec<Money>,
    /// A measure whose unit is a currency code at another scale, or a
    /// `spend` that is not money: it may be money, so the policy asks.
    pub unclear: bool,
}

/// What a YEA proposal's `uses` spends as money ([`MoneySpent`]).
pub fn money_in_uses(uses: Option<&Uses>) -> MoneySpent {
    let mut spent = MoneySpent::default();
    for (name, q) in uses.iter().flat_map(|u| u.0.iter()) {
        match q.as_money() {
            Some(m) => spent.amounts.push(m),
            None if name == "spend" || q.unit.as_deref().is_some_and(currency_shaped) => {
                spent.unclear = true
            }
            None => {}
        }
    }
    spent
}

/// A unit that reads as an ISO 4217 code (three capital letters).
fn currency_shaped(unit: &str) -> bool {
    unit.len() == 3 && unit.bytes().all(|b| b.is_ascii_uppercase())
}

/// A consent that passed every check; the signer takes only this.
#[derive(Debug, Clone)]
pub struct ReviewedConsent {
    checked: CheckedConsent,
    agent: PublicKey,
    review: Review,
    /// A job's phrase to type (`Some` only for a job code).
    phrase: Option<String>,
}

impl ReviewedConsent {
    /// What the human sees.
    pub fn review(&self) -> &Review {
        &self.review
    }
    /// The checked consent.
    pub fn checked(&self) -> &CheckedConsent {
        &self.checked
    }
    /// The phrase the human must type to approve, for a job code.
    pub fn job_phrase(&self) -> Option<&str> {
        self.phrase.as_deref()
    }
    /// Makes this the review of a job: the job's part of the review, and
    /// the phrase the engine will require.
    pub(super) fn set_job(&mut self, view: super::job::JobView, phrase: String) {
        self.review.job = Some(view);
        self.phrase = Some(phrase);
    }
    /// The agent that will hold the consent grant.
    pub fn agent(&self) -> &PublicKey {
        &self.agent
    }
    /// The money this consent would spend ([`MoneySpent`]): Parley's cost,
    /// or every YEA measure that is money.
    pub fn money_spent(&self) -> MoneySpent {
        let p = self.checked.proposal();
        match self.review.dialect {
            Dialect::ParleyV1 => MoneySpent {
                amounts: p.cost.iter().cloned().collect(),
                unclear: false,
            },
            Dialect::YeaV1 => money_in_uses(p.uses.as_ref()),
        }
    }
    /// Adds what custody's records say to the review ([`Review::unusual`],
    /// [`Review::activity`]).
    pub fn add_insight(
        &mut self,
        unusual: Vec<crate::unusual::Unusual>,
        activity: Option<crate::activity::AgentActivity>,
    ) {
        self.review.add_insight(unusual, activity);
    }
    /// Sets why custody asks ([`Review::why`]).
    pub fn set_why(&mut self, why: Option<super::WhyAsked>) {
        self.review.why = why;
    }
}

/// Checklist for a `consent` op (ARCHITECTURE.md 1–6).
pub fn review_consent(
    consent_obj: &Value,
    proposal: &Value,
    service: &str,
    agent: &str,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    review_consent_in(
        consent_obj,
        proposal,
        service,
        agent,
        Dialect::ParleyV1,
        ctx,
    )
}

/// [`review_consent`] with the proposal read under `dialect` (the custody
/// request's `dialect` field).
pub fn review_consent_in(
    consent_obj: &Value,
    proposal: &Value,
    service: &str,
    agent: &str,
    dialect: Dialect,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    let request = ConsentRequest::from_value(consent_obj)?;
    review_request(request, proposal, service, agent, dialect, ctx)
}

/// Checklist for an `approve_code` op: the `pc1.` code must carry the
/// proposal (`detail`), since the review shows effects, not summaries; its
/// service is the one the consent names (the code has no other witness).
pub fn review_code(
    code_text: &str,
    agent: &str,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    review_code_in(code_text, agent, Dialect::ParleyV1, ctx)
}

/// [`review_code`] with the code's proposal read under `dialect`. A code
/// that names its agent (the YEA tooling's do) must name the requesting one.
pub fn review_code_in(
    code_text: &str,
    agent: &str,
    dialect: Dialect,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    let decoded = code::decode(code_text).map_err(|e| Rejection::new("code", e.to_string()))?;
    // A YEA job code (SPEC-approval §6): its own checklist, whatever the
    // request's dialect says (a job code is YEA's by construction).
    if parley_core::job::is_job_code(&decoded) {
        return super::job::review_job(code_text, ctx);
    }
    let Some(mut detail) = decoded.detail else {
        return Err(Rejection::new(
            "code_without_proposal",
            "this consent code carries no proposal, so its effects cannot be shown; \
             send a `consent` request with the proposal the agent received",
        ));
    };
    // The detail omits `hash` in some tooling: the consent's hash is then the
    // claim, and it is still recomputed from the content.
    if detail.get("hash").is_none() {
        detail["hash"] = Value::String(decoded.consent.hash.clone());
    }
    if let Some(named) = &decoded.agent {
        if named.to_string() != agent {
            return Err(Rejection::new(
                "agent_mismatch",
                format!(
                    "the consent code is for agent {}, but the request comes for {}",
                    named.short(),
                    safe(&agent.chars().take(60).collect::<String>())
                ),
            ));
        }
    }
    let service = decoded.consent.service.clone();
    review_request(decoded.consent, &detail, &service, agent, dialect, ctx)
}

fn review_request(
    request: ConsentRequest,
    proposal: &Value,
    service: &str,
    agent: &str,
    dialect: Dialect,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    let agent = parse_agent(agent)?;
    wrong_dialect(proposal, dialect)?;
    if !ctx.principals.contains(&request.principal) {
        return Err(Rejection::new(
            "unknown_principal",
            format!(
                "the consent is for principal {}, which this custody does not hold",
                request.principal
            ),
        ));
    }
    let checked = consent::check_in(request, proposal, service, ctx.now, dialect)?;
    reviewed_from_checked(checked, agent, dialect, ctx)
}

/// The review of a checked consent (limits, what fits, warnings, the
/// model), for `agent` (the consent's holder: a job's server key).
pub(super) fn reviewed_from_checked(
    checked: CheckedConsent,
    agent: PublicKey,
    dialect: Dialect,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    let service = checked.request().service.clone();
    let service = service.as_str();
    let p = checked.proposal();
    if p.expires > ctx.now.saturating_add(ctx.limits.max_consent_horizon) {
        return Err(Rejection::new(
            "horizon",
            format!(
                "the proposal expires {} from now; consents are limited to {}",
                lens::duration(p.expires - ctx.now),
                lens::duration(ctx.limits.max_consent_horizon)
            ),
        ));
    }
    if p.effects.len() > MAX_EFFECTS {
        return Err(Rejection::new(
            "too_large_to_review",
            format!(
                "the proposal lists {} effects; custody asks a human about at most {MAX_EFFECTS}",
                p.effects.len()
            ),
        ));
    }
    let lines: Vec<String> = p
        .effects
        .iter()
        .map(|e| lens::effect_line(&e.raw))
        .collect();
    fits("service id", service)?;
    fits("capability", &p.capability)?;
    fits("consent summary", &checked.request().summary)?;
    for (i, line) in lines.iter().enumerate() {
        fits(&format!("effect {}", i + 1), line)?;
    }
    let caveats = checked.caveats();
    for c in &caveats {
        fits("caveat", &c.describe())?;
    }
    let charges = p.effects.iter().any(|e| e.op == EffectOp::Charge);
    let says_free_but_charges = p.cost.is_none() && charges;
    let mut warnings = Vec::new();
    if says_free_but_charges {
        warnings.push(SAYS_FREE_BUT_CHARGES.into());
    }
    let uses = use_views(p.uses.as_ref());
    // What is spent, as money: Parley's cost, or YEA's `spend` when it is money.
    let spend_money = match dialect {
        Dialect::ParleyV1 => p.cost.clone(),
        Dialect::YeaV1 => uses
            .iter()
            .find(|u| u.measure == "spend")
            .and_then(|u| u.money.clone()),
    };
    if let Some(q) = p.uses.as_ref().and_then(|u| u.get("spend")) {
        if q.as_money().is_none() {
            warnings.push(format!(
                "SPEND IS NOT MONEY AS AGREED: the proposal reports spend as {}, not as a currency \
                 in its minor units; check what it means before you approve.",
                safe(&q.to_string())
            ));
        }
    }
    if let Some(w) = crate::summary_cost::mismatch(&checked.request().summary, spend_money.as_ref())
    {
        warnings.push(w);
    }
    if has_non_ascii(service) {
        warnings.push(
            "The service id contains non-ASCII characters: check it for look-alike letters.".into(),
        );
    }
    if checked.summary_differs() {
        warnings
            .push("The service's consent summary differs from the proposal's own summary.".into());
    }
    let cost = match (dialect, &p.cost) {
        (Dialect::YeaV1, _) if uses.is_empty() => NOTHING_MEASURED.to_string(),
        (Dialect::YeaV1, _) => uses
            .iter()
            .map(|u| u.words.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        (Dialect::ParleyV1, Some(m)) => safe(&m.to_string()),
        (Dialect::ParleyV1, None) if charges => COST_NOT_STATED.to_string(),
        (Dialect::ParleyV1, None) => "free".to_string(),
    };
    let irreversible = p.irreversible();
    let principal = checked.request().principal.clone();
    let review = Review {
        kind: ReviewKind::Consent,
        service: safe(service),
        capability: safe(&p.capability),
        cost,
        cost_money: spend_money,
        dialect,
        uses,
        risk: p.risk.to_string(),
        undo: match p.undo {
            Some(w) if !irreversible => lens::duration(w),
            _ => "irreversible".to_string(),
        },
        irreversible,
        effects: p
            .effects
            .iter()
            .zip(&lines)
            .map(|(e, line)| EffectView {
                op: serde_json::to_value(e.op)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                line: safe(line),
            })
            .collect(),
        expires: checked.exp(),
        requester: ctx.requester.clone(),
        agent: agent_view(&agent, ctx),
        their_words: safe(&checked.request().summary),
        summary_differs: checked.summary_differs(),
        hash: p.hash.clone(),
        hash_short: p.hash.chars().take(12).collect(),
        principal: principal.to_string(),
        principal_label: principal_label(&principal, ctx),
        principal_short: principal.short(),
        caveats: caveat_views(&caveats),
        preview: String::new(),
        warnings,
        needs_second_confirmation: p.risk == parley_core::RiskLevel::High
            || irreversible
            || says_free_but_charges,
        unusual: Vec::new(),
        activity: None,
        job: None,
        why: None,
    };
    Ok(ReviewedConsent {
        checked,
        agent,
        review,
        phrase: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::MAX_FIELD_CHARS;
    use crate::review::test_support::{ctx, key, NOW};
    use parley_core::proposal::proposal_hash;
    use serde_json::json;

    /// A proposal with `over` merged in, its hash recomputed, and the consent for it.
    fn request(over: Value, summary: &str) -> (Value, Value) {
        let mut p = json!({
            "id": "p1", "capability": "shop.order", "summary": "Order 3 items",
            "effects": [{"op": "create", "target": "order"},
                        {"op": "charge", "target": "card ••42", "detail": "71.36 USD"}],
            "cost": {"amount": 7136, "currency": "USD"}, "risk": "medium",
            "undo": {"window": 1800}, "expires": NOW + 600
        });
        for (k, v) in over.as_object().expect("an object") {
            p[k] = v.clone();
        }
        p["summary"] = json!(summary);
        p["hash"] = json!(proposal_hash(&p).expect("hash"));
        let consent = json!({"proposal": "p1", "hash": p["hash"], "service": "shop.example",
            "capability": "shop.order", "principal": key(1).to_string(),
            "summary": summary, "expires": NOW + 600});
        (consent, p)
    }

    fn review(over: Value, summary: &str) -> Result<Review, Rejection> {
        let (consent, p) = request(over, summary);
        let principals = [key(1)];
        let labels = [(key(1), "household \u{202e} key".to_string())];
        review_consent(
            &consent,
            &p,
            "shop.example",
            &key(2).to_string(),
            &ctx(&principals, &labels),
        )
        .map(|c| c.review().clone())
    }

    /// A YEA proposal: `uses` instead of `cost`, no charge op.
    fn yea_request(uses: Option<Value>, summary: &str) -> (Value, Value) {
        let (consent, mut p) = request(json!({}), summary);
        let obj = p.as_object_mut().expect("an object");
        obj.remove("cost");
        obj.remove("hash");
        p["effects"] = json!([{"op": "create", "target": "order"},
                              {"op": "send", "target": "ana@example.com", "detail": "receipt"}]);
        if let Some(u) = uses {
            p["uses"] = u;
        }
        p["hash"] = json!(proposal_hash(&p).expect("hash"));
        let mut consent = consent;
        consent["hash"] = p["hash"].clone();
        (consent, p)
    }

    fn yea_review(uses: Option<Value>, summary: &str) -> Result<Review, Rejection> {
        let (consent, p) = yea_request(uses, summary);
        let principals = [key(1)];
        review_consent_in(
            &consent,
            &p,
            "shop.example",
            &key(2).to_string(),
            Dialect::YeaV1,
            &ctx(&principals, &[]),
        )
        .map(|c| c.review().clone())
    }

    /// `above:50USD` on a YEA consent: money counts under any measure name.
    fn above_50_usd_asks(uses: Value) -> bool {
        let (consent, p) = yea_request(Some(uses), "Order");
        let principals = [key(1)];
        let c = review_consent_in(
            &consent,
            &p,
            "shop.example",
            &key(2).to_string(),
            Dialect::YeaV1,
            &ctx(&principals, &[]),
        )
        .expect("a valid YEA consent");
        let spent = c.money_spent();
        let policy = crate::stepup::StepUpPolicy::parse_flag("above:50USD").unwrap();
        policy
            .need(crate::stepup::Subject::Consent {
                money: &spent.amounts,
                unclear: spent.unclear,
                charges: false,
            })
            .required
    }

    #[test]
    fn above_an_amount_counts_yea_money_that_is_not_under_spend() {
        let usd = |a: u64| json!({"amount": a, "scale": 2, "unit": "USD"});
        // 99.00 USD as `payment`, nothing under `spend`: asked.
        assert!(above_50_usd_asks(json!({"payment": usd(9900)})));
        // Two measures of money, each under the line, together over it: asked.
        assert!(above_50_usd_asks(
            json!({"fee": usd(2000), "spend": usd(4000)})
        ));
        // Under the line in all: not asked (counts are not money).
        assert!(!above_50_usd_asks(
            json!({"spend": usd(1000), "emails": {"amount": 5000}})
        ));
        // Money in another currency, whatever its name: asked.
        assert!(above_50_usd_asks(
            json!({"payment": {"amount": 100, "scale": 2, "unit": "EUR"}})
        ));
        // A currency code at another scale may be money: asked.
        assert!(above_50_usd_asks(
            json!({"credit": {"amount": 1, "scale": 3, "unit": "USD"}})
        ));
        // `spend` that is not money: asked.
        assert!(above_50_usd_asks(json!({"spend": {"amount": 1}})));
        // Nothing that could be money: not asked.
        assert!(!above_50_usd_asks(
            json!({"storage": {"amount": 5, "unit": "GB"}})
        ));
    }

    #[test]
    fn yea_review_shows_every_measure_of_uses() {
        let uses = json!({"spend": {"amount": 2287, "scale": 2, "unit": "USD"},
                          "emails": {"amount": 3}, "storage": {"amount": 5, "unit": "GB"}});
        let r = yea_review(Some(uses), "Order for 22.87 USD").unwrap();
        assert_eq!(r.dialect, Dialect::YeaV1);
        let words: Vec<&str> = r.uses.iter().map(|u| u.words.as_str()).collect();
        assert_eq!(words, ["3 emails", "22.87 USD", "5 GB of storage"]);
        assert_eq!(r.cost, "3 emails, 22.87 USD, 5 GB of storage");
        assert_eq!(r.cost_money.as_ref().unwrap().to_string(), "22.87 USD");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        // The summary check is the same as for `cost`.
        let uses = json!({"spend": {"amount": 9999, "scale": 2, "unit": "USD"}});
        let r = yea_review(Some(uses), "Order for 22.87 USD").unwrap();
        assert!(
            !r.warnings.is_empty(),
            "a summary naming another amount is flagged"
        );
        // None reported.
        let r = yea_review(None, "Order").unwrap();
        assert_eq!((r.cost.as_str(), r.uses.len()), (NOTHING_MEASURED, 0));
        // spend that is not money by the conventions is shown as a quantity, and flagged.
        let uses = json!({"spend": {"amount": 22870, "scale": 3, "unit": "USD"}});
        let r = yea_review(Some(uses), "Order").unwrap();
        assert_eq!(
            (r.cost.as_str(), r.cost_money.is_none()),
            ("22.870 USD of spend", true)
        );
        assert!(
            r.warnings[0].starts_with("SPEND IS NOT MONEY"),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn yea_review_refuses_malformed_quantities_floats_and_the_wrong_dialect() {
        for uses in [
            json!({"spend": {"amount": -1, "unit": "USD"}}),
            json!({"spend": {"amount": 1, "scale": 19}}),
            json!({"Spend": {"amount": 1}}),
            json!({"spend": {"amount": 1, "currency": "USD"}}),
            json!(null),
        ] {
            let r = yea_review(Some(uses.clone()), "Order");
            assert!(
                matches!(&r, Err(e) if e.message.contains("uses is malformed")),
                "{uses}: {r:?}"
            );
        }
        // A float amount has no canonical form: the proposal cannot be hashed,
        // so its claimed hash cannot match.
        let (consent, mut p) = yea_request(Some(json!({"spend": {"amount": 1}})), "Order");
        p["uses"] = json!({"spend": {"amount": 22.87, "unit": "USD"}});
        let principals = [key(1)];
        let r = review_consent_in(
            &consent,
            &p,
            "shop.example",
            &key(2).to_string(),
            Dialect::YeaV1,
            &ctx(&principals, &[]),
        );
        assert!(r.is_err());
        // A YEA proposal sent as Parley (no dialect field) is refused with the fix.
        let (consent, p) = yea_request(Some(json!({"emails": {"amount": 1}})), "Order");
        let e = review_consent(
            &consent,
            &p,
            "shop.example",
            &key(2).to_string(),
            &ctx(&principals, &[]),
        )
        .unwrap_err();
        assert_eq!(e.code, "dialect");
        assert!(e.message.contains("\"dialect\": \"yea1\""), "{}", e.message);
        // And a Parley proposal sent as YEA.
        let (consent, p) = request(json!({}), "Order");
        let e = review_consent_in(
            &consent,
            &p,
            "shop.example",
            &key(2).to_string(),
            Dialect::YeaV1,
            &ctx(&principals, &[]),
        )
        .unwrap_err();
        assert_eq!(e.code, "dialect");
    }

    #[test]
    fn yea_codes_must_name_the_requesting_agent() {
        let (consent, p) = yea_request(Some(json!({"emails": {"amount": 1}})), "Order");
        let request = ConsentRequest::from_value(&consent).unwrap();
        let principals = [key(1)];
        let code = code::encode_for(&request, Some(&key(2)), Some(&p)).unwrap();
        let ok = review_code_in(
            &code,
            &key(2).to_string(),
            Dialect::YeaV1,
            &ctx(&principals, &[]),
        );
        assert_eq!(ok.unwrap().review().uses[0].words, "1 emails");
        let e = review_code_in(
            &code,
            &key(3).to_string(),
            Dialect::YeaV1,
            &ctx(&principals, &[]),
        )
        .unwrap_err();
        assert_eq!(e.code, "agent_mismatch");
    }

    #[test]
    fn consent_review_rules() {
        let big = "x".repeat(MAX_FIELD_CHARS + 1);
        let many: Vec<Value> = (0..=MAX_EFFECTS)
            .map(|i| json!({"op": "create", "target": format!("item {i}")}))
            .collect();
        let at_most: Vec<Value> = many[..MAX_EFFECTS].to_vec();
        type Check = fn(&Result<Review, Rejection>) -> bool;
        let cases: Vec<(&str, Value, &str, Check)> = vec![
            (
                "an ordinary proposal is reversible and priced",
                json!({}),
                "Order 3 items, 71.36 USD",
                |r| {
                    r.as_ref().is_ok_and(|r| {
                        !r.irreversible
                            && r.undo == "30m"
                            && r.cost == "71.36 USD"
                            && r.warnings.is_empty()
                            && !r.needs_second_confirmation
                    })
                },
            ),
            (
                "undo window 0 is irreversible",
                json!({"undo": {"window": 0}}),
                "Order 3 items, 71.36 USD",
                |r| {
                    r.as_ref().is_ok_and(|r| {
                        r.irreversible && r.undo == "irreversible" && r.needs_second_confirmation
                    })
                },
            ),
            (
                "undo null is irreversible",
                json!({"undo": null}),
                "Order 3 items, 71.36 USD",
                |r| {
                    r.as_ref()
                        .is_ok_and(|r| r.irreversible && r.needs_second_confirmation)
                },
            ),
            (
                "cost null with a charge effect: says free but charges",
                json!({"cost": null}),
                "Order 3 items",
                |r| {
                    r.as_ref().is_ok_and(|r| {
                        r.cost == COST_NOT_STATED
                            && r.warnings
                                .first()
                                .is_some_and(|w| w.starts_with("SAYS FREE BUT CHARGES"))
                            && r.needs_second_confirmation
                    })
                },
            ),
            (
                "cost null with no charge effect is free",
                json!({"cost": null, "effects": [{"op": "create", "target": "list"}]}),
                "Make a list",
                |r| {
                    r.as_ref()
                        .is_ok_and(|r| r.cost == "free" && r.warnings.is_empty())
                },
            ),
            (
                "a summary naming another amount is flagged",
                json!({}),
                "Order 3 items for 7.13 USD",
                |r| {
                    r.as_ref().is_ok_and(|r| {
                        r.warnings
                            .iter()
                            .any(|w| w.contains("says 7.13 USD, but the proposal costs 71.36 USD"))
                    })
                },
            ),
            (
                "the signing principal is named by label and short key",
                json!({}),
                "Order 3 items, 71.36 USD",
                |r| {
                    r.as_ref().is_ok_and(|r| {
                        r.principal_label.as_deref() == Some("household \\u{202e} key")
                            && r.principal_short == key(1).short()
                            && r.principal == key(1).to_string()
                    })
                },
            ),
            (
                "an effect line that would be cut is refused",
                json!({"effects": [{"op": "send", "target": big}]}),
                "x",
                |r| matches!(r, Err(e) if e.code == "too_large_to_review" && e.message.contains("effect 1")),
            ),
            (
                "a summary that would be cut is refused",
                json!({}),
                "LONG",
                |r| matches!(r, Err(e) if e.code == "too_large_to_review" && e.message.contains("consent summary")),
            ),
            (
                "more effects than a human reads is refused",
                json!({"effects": many}),
                "x",
                |r| matches!(r, Err(e) if e.code == "too_large_to_review" && e.message.contains(&format!("{} effects", MAX_EFFECTS + 1))),
            ),
            (
                "the most effects allowed are all shown",
                json!({"effects": at_most, "cost": null}),
                "x",
                |r| r.as_ref().is_ok_and(|r| r.effects.len() == MAX_EFFECTS),
            ),
        ];
        for (name, over, summary, check) in cases {
            let summary = if summary == "LONG" {
                big.as_str()
            } else {
                summary
            };
            let got = review(over, summary);
            assert!(check(&got), "{name}: {got:#?}");
        }
    }
}
