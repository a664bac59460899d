//! Re-verification and the review model (ARCHITECTURE.md: "Re-verification of
//! a consent request" and "What the review shows").
//!
//! Every request an agent sends is checked here before a human sees it. A
//! request that fails becomes a [`Rejection`] (answered `REJECTED`, logged,
//! never shown). One that passes becomes a [`ReviewedConsent`] or
//! [`ReviewedGrant`]: the only inputs the signer accepts, each carrying the
//! [`Review`] the human is shown, built from the proposal itself (effects,
//! cost, risk, undo, expiry) and never from the service's summary alone.

use crate::display::{has_non_ascii, safe};
use crate::ipc::peer::PeerInfo;
use parley_core::caveat::Caveat;
use parley_core::consent::{self, CheckedConsent, ConsentError, ConsentRequest};
use parley_core::money::Money;
use parley_core::{code, lens, PublicKey};
use serde::Serialize;
use serde_json::Value;

/// Limits the review enforces; set by the custody configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewLimits {
    /// A consent may be asked for a proposal expiring at most this far ahead (seconds).
    pub max_consent_horizon: i64,
    /// A grant expires at most this long after it is issued (seconds).
    pub max_grant_lifetime: i64,
    /// The most caveats a requested grant may carry.
    pub max_caveats: usize,
}

impl Default for ReviewLimits {
    fn default() -> Self {
        ReviewLimits {
            max_consent_horizon: 24 * 3600,
            max_grant_lifetime: 7 * 24 * 3600,
            max_caveats: 32,
        }
    }
}

/// Why a request was refused before reaching the human.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Rejection {
    /// Which check failed (stable, for logs and tests).
    pub code: &'static str,
    /// One sentence for the agent's operator.
    pub message: String,
}

impl Rejection {
    fn new(code: &'static str, message: impl Into<String>) -> Rejection {
        Rejection {
            code,
            message: message.into(),
        }
    }
}

impl From<ConsentError> for Rejection {
    fn from(e: ConsentError) -> Rejection {
        Rejection::new(e.kind(), e.to_string())
    }
}

/// Who asked, as the kernel reported it. `exe` is not verified (pid reuse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requester {
    /// User name, if known; else the uid as text.
    pub user: String,
    /// Effective uid.
    pub uid: u32,
    /// Process id, if the platform reports one.
    pub pid: Option<u32>,
    /// Executable path as read at connect time (display-safe), unverified.
    pub exe: Option<String>,
}

impl From<&PeerInfo> for Requester {
    fn from(p: &PeerInfo) -> Requester {
        Requester {
            user: safe(p.user.as_deref().unwrap_or(&p.uid.to_string())),
            uid: p.uid,
            pid: p.pid,
            exe: p.exe.as_ref().map(|e| safe(&e.to_string_lossy())),
        }
    }
}

/// The agent key as shown: short form, the human's label if any, and whether
/// this principal has granted to it before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentView {
    /// Full key text.
    pub key: String,
    /// `ed25519:` plus 10 characters.
    pub short: String,
    /// The human's label for this agent, if known (display-safe).
    pub label: Option<String>,
    /// Whether the audit log shows an earlier grant or consent to this key.
    pub known: bool,
}

/// One effect line, §9.2 form, display-safe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectView {
    /// `create`, `update`, `delete`, `send`, `charge`, `other`.
    pub op: String,
    /// The §9.2 line: `$ charge card ••42 — 71.36 USD`.
    pub line: String,
}

/// A caveat as shown in a grant review.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaveatView {
    /// The exact caveat that will be signed.
    pub json: Value,
    /// In plain words (display-safe).
    pub words: String,
}

/// Consent or grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// A one-shot consent for one proposal hash.
    Consent,
    /// A time-boxed grant.
    Grant,
}

/// What the human is shown, in ARCHITECTURE.md's order. Every string that
/// came from an agent or a service is display-safe ([`crate::display`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    /// Consent or grant.
    pub kind: ReviewKind,
    /// The service id (consent), or the services a grant covers.
    pub service: String,
    /// The capability (consent).
    pub capability: String,
    /// §9.2 money, or `free` (consent).
    pub cost: String,
    /// The cost in minor units, for notifications and the audit log.
    pub cost_money: Option<Money>,
    /// low / medium / high (consent).
    pub risk: String,
    /// The undo window (`30m`) or `irreversible` (consent).
    pub undo: String,
    /// True when the proposal cannot be undone.
    pub irreversible: bool,
    /// Every effect line.
    pub effects: Vec<EffectView>,
    /// When the request (and the consent grant) expires, unix seconds.
    pub expires: i64,
    /// Who asked.
    pub requester: Requester,
    /// The agent key.
    pub agent: AgentView,
    /// The service's own summary (consent) or the agent's stated reason
    /// (grant), shown labelled as their words.
    pub their_words: String,
    /// The consent's summary differs from the proposal's own.
    pub summary_differs: bool,
    /// The proposal hash (consent).
    pub hash: String,
    /// Its first 12 characters.
    pub hash_short: String,
    /// The principal key that will sign.
    pub principal: String,
    /// The caveats that will be signed.
    pub caveats: Vec<CaveatView>,
    /// A plain-language sentence of what the grant allows (grant).
    pub preview: String,
    /// Things the human should notice (look-alike characters, per without spend, …).
    pub warnings: Vec<String>,
    /// high risk or irreversible: the UI asks for a second confirmation.
    pub needs_second_confirmation: bool,
}

/// What the review needs to know about this custody.
pub struct ReviewContext<'a> {
    /// Unix seconds.
    pub now: i64,
    /// The principal keys this custody holds.
    pub principals: &'a [PublicKey],
    /// The limits in force.
    pub limits: ReviewLimits,
    /// Who asked.
    pub requester: Requester,
    /// The human's label for an agent key, if any.
    pub agent_label: Option<String>,
    /// Whether this principal granted to the agent before.
    pub agent_known: bool,
}

/// A consent that passed every check; the signer takes only this.
#[derive(Debug, Clone)]
pub struct ReviewedConsent {
    checked: CheckedConsent,
    agent: PublicKey,
    review: Review,
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
    /// The agent that will hold the consent grant.
    pub fn agent(&self) -> &PublicKey {
        &self.agent
    }
}

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

    /// The human narrowed the request (the grant form): re-review the new
    /// caveats, which must pass the same checks.
    pub fn narrowed(
        &self,
        caveats: &Value,
        ctx: &ReviewContext,
    ) -> Result<ReviewedGrant, Rejection> {
        review_grant(
            &self.agent.to_string(),
            caveats,
            None,
            Some(&self.principal),
            ctx,
        )
        .map(|mut g| {
            g.review.their_words = self.review.their_words.clone();
            g
        })
    }
}

fn agent_view(agent: &PublicKey, ctx: &ReviewContext) -> AgentView {
    AgentView {
        key: agent.to_string(),
        short: agent.short(),
        label: ctx.agent_label.as_deref().map(safe),
        known: ctx.agent_known,
    }
}

fn parse_agent(agent: &str) -> Result<PublicKey, Rejection> {
    agent
        .parse()
        .map_err(|e| Rejection::new("agent_key", format!("the agent key is not usable: {e}")))
}

/// Checklist for a `consent` op (ARCHITECTURE.md 1–6).
pub fn review_consent(
    consent_obj: &Value,
    proposal: &Value,
    service: &str,
    agent: &str,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    let request = ConsentRequest::from_value(consent_obj)?;
    review_request(request, proposal, service, agent, ctx)
}

/// Checklist for an `approve_code` op: the `pc1.` code must carry the
/// proposal (`detail`), since the review shows effects, not summaries; its
/// service is the one the consent names (the code has no other witness).
pub fn review_code(
    code_text: &str,
    agent: &str,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    let decoded = code::decode(code_text).map_err(|e| Rejection::new("code", e.to_string()))?;
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
    let service = decoded.consent.service.clone();
    review_request(decoded.consent, &detail, &service, agent, ctx)
}

fn review_request(
    request: ConsentRequest,
    proposal: &Value,
    service: &str,
    agent: &str,
    ctx: &ReviewContext,
) -> Result<ReviewedConsent, Rejection> {
    let agent = parse_agent(agent)?;
    if !ctx.principals.contains(&request.principal) {
        return Err(Rejection::new(
            "unknown_principal",
            format!(
                "the consent is for principal {}, which this custody does not hold",
                request.principal
            ),
        ));
    }
    let checked = consent::check(request, proposal, service, ctx.now)?;
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
    let mut warnings = Vec::new();
    if has_non_ascii(service) {
        warnings.push(
            "The service id contains non-ASCII characters: check it for look-alike letters.".into(),
        );
    }
    if checked.summary_differs() {
        warnings
            .push("The service's consent summary differs from the proposal's own summary.".into());
    }
    let cost = p
        .cost
        .as_ref()
        .map_or_else(|| "free".to_string(), |m| safe(&m.to_string()));
    let review = Review {
        kind: ReviewKind::Consent,
        service: safe(service),
        capability: safe(&p.capability),
        cost,
        cost_money: p.cost.clone(),
        risk: p.risk.to_string(),
        undo: p
            .undo
            .map_or_else(|| "irreversible".to_string(), lens::duration),
        irreversible: p.undo.is_none(),
        effects: p
            .effects
            .iter()
            .map(|e| EffectView {
                op: serde_json::to_value(e.op)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                line: safe(&lens::effect_line(&e.raw)),
            })
            .collect(),
        expires: checked.exp(),
        requester: ctx.requester.clone(),
        agent: agent_view(&agent, ctx),
        their_words: safe(&checked.request().summary),
        summary_differs: checked.summary_differs(),
        hash: p.hash.clone(),
        hash_short: p.hash.chars().take(12).collect(),
        principal: checked.request().principal.to_string(),
        caveats: caveat_views(&checked.caveats()),
        preview: String::new(),
        warnings,
        needs_second_confirmation: p.risk == parley_core::RiskLevel::High || p.undo.is_none(),
    };
    Ok(ReviewedConsent {
        checked,
        agent,
        review,
    })
}

fn caveat_views(caveats: &[Caveat]) -> Vec<CaveatView> {
    caveats
        .iter()
        .map(|c| CaveatView {
            json: c.to_value(),
            words: safe(&c.describe()),
        })
        .collect()
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
    let mut warnings = Vec::new();
    let latest = ctx.now.saturating_add(ctx.limits.max_grant_lifetime);
    let exps: Vec<i64> = parsed
        .iter()
        .filter_map(|c| {
            if let Caveat::Exp(t) = c {
                Some(*t)
            } else {
                None
            }
        })
        .collect();
    match exps.iter().min() {
        None => {
            parsed.push(Caveat::Exp(latest));
            warnings.push(format!(
                "The agent asked for no expiry; this grant expires at the longest allowed, {}.",
                lens::time(latest)
            ));
        }
        Some(&t) if t <= ctx.now => {
            return Err(Rejection::new(
                "expired",
                "the requested grant has already expired",
            ))
        }
        Some(&t) if t > latest => {
            parsed.retain(|c| !matches!(c, Caveat::Exp(_)));
            parsed.push(Caveat::Exp(latest));
            warnings.push(format!(
                "The agent asked for a grant until {}; it is limited to {}.",
                lens::time(t),
                lens::time(latest)
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
    let exp = parsed
        .iter()
        .filter_map(|c| {
            if let Caveat::Exp(t) = c {
                Some(*t)
            } else {
                None
            }
        })
        .min()
        .unwrap_or(latest);
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
    let review = Review {
        kind: ReviewKind::Grant,
        service: safe(&services.join(" ∩ ")),
        capability: String::new(),
        cost: String::new(),
        cost_money: None,
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
        caveats: caveat_views(&parsed),
        preview: safe(&preview(&parsed)),
        warnings,
        needs_second_confirmation: false,
    };
    Ok(ReviewedGrant {
        agent,
        principal,
        caveats: parsed,
        review,
    })
}

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
            Caveat::Risk(r) => parts.push(format!("risk up to {r}")),
            Caveat::Only(h) => parts.push(format!("only proposal {h}")),
            Caveat::Nbf(t) => parts.push(format!("from {}", lens::time(*t))),
            Caveat::Exp(t) => parts.push(format!("until {}", lens::time(*t))),
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
