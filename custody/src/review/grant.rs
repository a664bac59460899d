//! The grant review: the checklist for a `grant` op, which turns a request
//! into a [`ReviewedGrant`] or a [`Rejection`].

use super::view::{agent_view, caveat_views, fits, principal_label};
use super::{check_form, parse_agent, FormGrant, Rejection, Review, ReviewContext, ReviewKind};
use crate::display::{has_non_ascii, safe};
use parley_core::caveat::Caveat;
use parley_core::{Dialect, PublicKey};
use serde_json::Value;

/// A grant request that passed every check; the signer takes only this.
#[derive(Debug, Clone)]
pub struct ReviewedGrant {
    agent: PublicKey,
    principal: PublicKey,
    caveats: Vec<Caveat>,
    review: Review,
}

impl ReviewedGrant {
    /// What the human sees.
    pub fn review(&self) -> &Review {
        &self.review
    }
    /// The holder.
    pub fn agent(&self) -> &PublicKey {
        &self.agent
    }
    /// The signing principal.
    pub fn principal(&self) -> &PublicKey {
        &self.principal
    }
    /// The caveats, exactly as they will be signed.
    pub fn caveats(&self) -> &[Caveat] {
        &self.caveats
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

    /// The human edited the request (the grant form): re-review the new
    /// caveats, which must pass the same checks, and refuse an edit that
    /// widens the request unless the form showed exactly these widenings and
    /// the human confirmed them ([`check_form`]).
    pub fn narrowed(
        &self,
        form: &FormGrant,
        ctx: &ReviewContext,
    ) -> Result<ReviewedGrant, Rejection> {
        let mut g = review_grant(
            &self.agent.to_string(),
            &form.caveats,
            None,
            Some(&self.principal),
            ctx,
        )?;
        g.review.their_words = self.review.their_words.clone();
        check_form(&g, Some(self), form)?;
        Ok(g)
    }

    /// How the edited grant `edited` widens this request, in words
    /// ([`crate::widening::widenings`]).
    pub fn widenings(&self, edited: &ReviewedGrant) -> Vec<String> {
        crate::widening::widenings(&self.caveats, &edited.caveats)
    }

    /// The caveats as JSON, exactly as they will be signed.
    pub fn caveats_value(&self) -> Value {
        caveats_value(&self.caveats)
    }
}

/// A caveat list as the JSON list a block signs (and the audit row and the
/// agent's reply carry): the one place typed caveats become JSON again.
pub fn caveats_value(caveats: &[Caveat]) -> Value {
    Value::Array(caveats.iter().map(Caveat::to_value).collect())
}

/// When a grant with `caveats` ends: its earliest `exp` (each `exp` must
/// hold, so the first to pass ends it), or `None` when it names none.
fn earliest_exp(caveats: &[Caveat]) -> Option<i64> {
    caveats
        .iter()
        .filter_map(|c| match c {
            Caveat::Exp(t) => Some(*t),
            _ => None,
        })
        .min()
}

/// Checklist for a `grant` op: every caveat well formed (§6.3) before it is
/// shown; an `exp` always present and within the configured lifetime (a
/// missing or later `exp` is clamped, and the review says so).
pub fn review_grant(
    agent: &str,
    caveats: &Value,
    reason: Option<&str>,
    principal: Option<&PublicKey>,
    ctx: &ReviewContext,
) -> Result<ReviewedGrant, Rejection> {
    let agent = parse_agent(agent)?;
    let principal = match principal {
        Some(p) if ctx.principals.contains(p) => p.clone(),
        Some(p) => {
            return Err(Rejection::new(
                "unknown_principal",
                format!("this custody does not hold the principal {p}"),
            ))
        }
        None => ctx.principals.first().cloned().ok_or_else(|| {
            Rejection::new(
                "no_principal",
                "this custody holds no principal key yet; create one first",
            )
        })?,
    };
    let list = caveats
        .as_array()
        .ok_or_else(|| Rejection::new("caveats", "caveats must be a list"))?;
    if list.len() > ctx.limits.max_caveats {
        return Err(Rejection::new(
            "caveats",
            format!("at most {} caveats", ctx.limits.max_caveats),
        ));
    }
    let mut parsed = Vec::with_capacity(list.len() + 1);
    for (i, raw) in list.iter().enumerate() {
        match Caveat::parse(raw) {
            Caveat::Invalid { why, .. } => {
                return Err(Rejection::new(
                    "caveat_malformed",
                    format!("caveat {i} is not one services accept: {}", safe(&why)),
                ))
            }
            c => parsed.push(c),
        }
    }
    fits("reason", reason.unwrap_or(""))?;
    for c in &parsed {
        fits("caveat", &c.describe())?;
    }
    let mut warnings = Vec::new();
    let latest = ctx.now.saturating_add(ctx.limits.max_grant_lifetime);
    match earliest_exp(&parsed) {
        None => {
            parsed.push(Caveat::Exp(latest));
            warnings.push(format!(
                "The agent asked for no expiry; this grant expires at the longest allowed, {}.",
                crate::local_time::when(latest)
            ));
        }
        Some(t) if t <= ctx.now => {
            return Err(Rejection::new(
                "expired",
                "the requested grant has already expired",
            ))
        }
        Some(t) if t > latest => {
            parsed.retain(|c| !matches!(c, Caveat::Exp(_)));
            parsed.push(Caveat::Exp(latest));
            warnings.push(format!(
                "The agent asked for a grant until {}; it is limited to {}.",
                crate::local_time::when(t),
                crate::local_time::when(latest)
            ));
        }
        Some(_) => {}
    }
    let has = |f: fn(&Caveat) -> bool| parsed.iter().any(f);
    if has(|c| matches!(c, Caveat::Per(_))) && !has(|c| matches!(c, Caveat::Spend(_))) {
        warnings.push(
            "A per-action cap without a total (spend) can be dodged by splitting a purchase."
                .into(),
        );
    }
    if !has(|c| matches!(c, Caveat::Svc(_))) {
        warnings.push(
            "No service is named: the grant works at every service that trusts this key.".into(),
        );
    }
    if !has(|c| matches!(c, Caveat::Verbs(_))) {
        warnings.push("No verbs are named: the grant allows COMMIT and UNDO too.".into());
    }
    if parsed
        .iter()
        .any(|c| matches!(c, Caveat::Can(l) if l.iter().any(|p| p == "*")))
    {
        warnings.push("The capability pattern * allows every capability.".into());
    }
    if let Some(Caveat::Svc(l)) = parsed.iter().find(|c| matches!(c, Caveat::Svc(_))) {
        if l.iter().any(|s| has_non_ascii(s)) {
            warnings.push(
                "A service id contains non-ASCII characters: check it for look-alike letters."
                    .into(),
            );
        }
    }
    let exp = earliest_exp(&parsed).unwrap_or(latest);
    let services: Vec<String> = parsed
        .iter()
        .filter_map(|c| {
            if let Caveat::Svc(l) = c {
                Some(l.join(", "))
            } else {
                None
            }
        })
        .collect();
    let services = services.join(" ∩ ");
    let preview_text = super::preview::preview_for(&agent.to_string(), &parsed);
    fits("list of services", &services)?;
    fits("grant in words", &preview_text)?;
    let review = Review {
        kind: ReviewKind::Grant,
        service: safe(&services),
        capability: String::new(),
        cost: String::new(),
        cost_money: None,
        // A grant's limits say which dialect its services speak.
        dialect: if parsed
            .iter()
            .any(|c| matches!(c, Caveat::Each(_) | Caveat::Total(_)))
        {
            Dialect::YeaV1
        } else {
            Dialect::ParleyV1
        },
        uses: Vec::new(),
        risk: String::new(),
        undo: String::new(),
        irreversible: false,
        effects: Vec::new(),
        expires: exp,
        requester: ctx.requester.clone(),
        agent: agent_view(&agent, ctx),
        their_words: safe(reason.unwrap_or("")),
        summary_differs: false,
        hash: String::new(),
        hash_short: String::new(),
        principal: principal.to_string(),
        principal_label: principal_label(&principal, ctx),
        principal_short: principal.short(),
        caveats: caveat_views(&parsed),
        preview: safe(&preview_text),
        warnings,
        needs_second_confirmation: false,
        unusual: Vec::new(),
        activity: None,
        job: None,
        why: None,
    };
    Ok(ReviewedGrant {
        agent,
        principal,
        caveats: parsed,
        review,
    })
}

#[cfg(test)]
mod tests {
    use crate::display::MAX_FIELD_CHARS;
    use crate::review::test_support::{grant, key, NOW};
    use serde_json::json;

    #[test]
    fn grant_review_names_the_principal_and_refuses_what_it_cannot_show() {
        let g =
            grant(json!([{"svc": ["shop.example"]}, {"exp": NOW + 60}]), None).expect("reviewed");
        assert_eq!(g.review().principal_label.as_deref(), Some("household"));
        assert_eq!(g.review().principal_short, key(1).short());
        let long = "s".repeat(MAX_FIELD_CHARS + 1);
        for (name, caveats, reason) in [
            (
                "a service id too long to show",
                json!([{"svc": [long]}]),
                None,
            ),
            (
                "a reason too long to show",
                json!([{"svc": ["a"]}]),
                Some(long.as_str()),
            ),
        ] {
            match grant(caveats, reason) {
                Err(e) => assert_eq!(e.code, "too_large_to_review", "{name}"),
                Ok(_) => panic!("{name}: accepted"),
            }
        }
    }
}
