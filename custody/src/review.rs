//! Re-verification and the review model (ARCHITECTURE.md: "Re-verification of
//! a consent request" and "What the review shows").
//!
//! Every request an agent sends is checked here before a human sees it. A
//! request that fails becomes a [`Rejection`] (answered `REJECTED`, logged,
//! never shown). One that passes becomes a [`ReviewedConsent`] or
//! [`ReviewedGrant`]: the only inputs the signer accepts, each carrying the
//! [`Review`] the human is shown, built from the proposal itself (effects,
//! cost, risk, undo, expiry) and never from the service's summary alone.

use crate::display::{has_non_ascii, safe, MAX_FIELD_CHARS};
use crate::ipc::peer::PeerInfo;
use parley_core::caveat::Caveat;
use parley_core::consent::{self, CheckedConsent, ConsentError, ConsentRequest};
use parley_core::money::Money;
use parley_core::proposal::EffectOp;
use parley_core::quantity::describe_use;
use parley_core::{code, lens, Dialect, PublicKey};
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

/// The most effects a consent may list. A bulk operation (500 e-mails
/// deleted) is still shown whole, counted, with its decisive facts repeated
/// next to the buttons; beyond this custody refuses rather than ask for a yes
/// to a list nobody can check (and the frame bound keeps it finite anyway).
pub const MAX_EFFECTS: usize = 1000;

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

/// The measures of a YEA `uses`, in words, display-safe.
fn use_views(uses: Option<&parley_core::quantity::Uses>) -> Vec<UseView> {
    uses.map(|u| {
        u.0.iter()
            .map(|(name, q)| UseView {
                measure: safe(name),
                words: safe(&describe_use(name, q)),
                money: q.as_money(),
            })
            .collect()
    })
    .unwrap_or_default()
}

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
    /// The process chain from `pid` up to the program that opened its
    /// session ([`crate::ipc::process_chain`]), each link checked again when
    /// the review is built and when it is shown. Unverified.
    pub chain: Vec<ChainLinkView>,
    /// The chain in one line, `claude (4242) ← node (4200) ← bash (4100) ←
    /// kitty (3900)`; empty when no link could be read.
    pub chain_line: String,
}

/// One process of [`Requester::chain`], display-safe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainLinkView {
    /// Its pid.
    pub pid: u32,
    /// Its name as the kernel reports it (the process chose it).
    pub name: String,
    /// Its executable path, when readable.
    pub exe: Option<String>,
    /// Whether the pid still runs the same process (start time unchanged)
    /// when last checked.
    pub same: bool,
}

impl From<&PeerInfo> for Requester {
    fn from(p: &PeerInfo) -> Requester {
        let mut r = Requester {
            user: safe(p.user.as_deref().unwrap_or(&p.uid.to_string())),
            uid: p.uid,
            pid: p.pid,
            exe: p.exe.as_ref().map(|e| safe(&e.to_string_lossy())),
            chain: Vec::new(),
            chain_line: String::new(),
        };
        r.set_chain(&p.chain.rechecked());
        r
    }
}

impl Requester {
    /// Shows `chain` (already checked by the caller) as this requester's.
    pub fn set_chain(&mut self, chain: &crate::ipc::process_chain::ProcessChain) {
        self.chain = chain
            .links
            .iter()
            .map(|l| ChainLinkView {
                pid: l.pid,
                name: safe(&l.name),
                exe: l.exe.as_ref().map(|e| safe(&e.to_string_lossy())),
                same: l.same,
            })
            .collect();
        self.chain_line = self
            .chain
            .iter()
            .map(|l| {
                if l.same {
                    format!("{} ({})", l.name, l.pid)
                } else {
                    format!("{} ({}, exited or replaced)", l.name, l.pid)
                }
            })
            .collect::<Vec<_>>()
            .join(" ← ");
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
    /// Four words from a hash of the whole key ([`crate::fingerprint`]),
    /// the same wherever this key is shown.
    pub phrase: String,
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

/// One measure of a YEA proposal's `uses`, as the review shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UseView {
    /// The measure name (`spend`, `emails`; display-safe).
    pub measure: String,
    /// In words: money as money (`22.87 USD`), counts as `3 emails`,
    /// other measures as `5 GB of storage` (display-safe).
    pub words: String,
    /// The quantity as money, when it is a currency at its minor-unit scale.
    pub money: Option<Money>,
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
    /// The cost in minor units, for notifications and the audit log (YEA:
    /// the `spend` measure, when it is money).
    pub cost_money: Option<Money>,
    /// The protocol the proposal was read under.
    pub dialect: Dialect,
    /// YEA: every measure the proposal reports in `uses`, in canonical
    /// order (empty for Parley, and when it reports none).
    pub uses: Vec<UseView>,
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
    /// The human's label for that principal (display-safe), if any.
    pub principal_label: Option<String>,
    /// Its short form (`ed25519:` plus 10 characters).
    pub principal_short: String,
    /// The caveats that will be signed.
    pub caveats: Vec<CaveatView>,
    /// A plain-language sentence of what the grant allows (grant).
    pub preview: String,
    /// Things the human should notice (look-alike characters, per without spend, …).
    pub warnings: Vec<String>,
    /// high risk or irreversible: the UI asks for a second confirmation.
    pub needs_second_confirmation: bool,
    /// What custody's audit log finds unusual about this request
    /// ([`crate::unusual`]); each reason is also in `warnings`.
    pub unusual: Vec<crate::unusual::Unusual>,
    /// What this agent has done so far ([`crate::activity`]), when known.
    pub activity: Option<crate::activity::AgentActivity>,
}

impl Review {
    /// Adds what custody's own records say: each unusual finding joins the
    /// warnings (once: a reason already there is not repeated).
    fn add_insight(
        &mut self,
        unusual: Vec<crate::unusual::Unusual>,
        activity: Option<crate::activity::AgentActivity>,
    ) {
        for u in &unusual {
            if !self.warnings.contains(&u.reason) {
                self.warnings.push(u.reason.clone());
            }
        }
        self.unusual = unusual;
        self.activity = activity;
    }
}

/// What the review needs to know about this custody.
pub struct ReviewContext<'a> {
    /// Unix seconds.
    pub now: i64,
    /// The principal keys this custody holds.
    pub principals: &'a [PublicKey],
    /// The human's labels for them (from the keystore list); a key missing
    /// here is shown by its short form alone.
    pub principal_labels: &'a [(PublicKey, String)],
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
    /// Adds what custody's records say to the review ([`Review::unusual`],
    /// [`Review::activity`]).
    pub fn add_insight(
        &mut self,
        unusual: Vec<crate::unusual::Unusual>,
        activity: Option<crate::activity::AgentActivity>,
    ) {
        self.review.add_insight(unusual, activity);
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

/// A grant as the human's form sends it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FormGrant {
    /// The caveats the form built.
    pub caveats: Value,
    /// The caveats the form showed as "exactly what will be signed" (the
    /// engine's own preview of `caveats`). `None` only for callers with no
    /// screen (tests, scripts); the desktop app always sends it.
    pub shown: Option<Value>,
    /// The widenings the form showed and the human confirmed on purpose,
    /// word for word.
    pub confirmed_widenings: Vec<String>,
}

impl From<Value> for FormGrant {
    fn from(caveats: Value) -> FormGrant {
        FormGrant {
            caveats,
            ..FormGrant::default()
        }
    }
}

impl From<&Value> for FormGrant {
    fn from(caveats: &Value) -> FormGrant {
        FormGrant::from(caveats.clone())
    }
}

/// What is about to be signed must be what the form showed, and any way it
/// allows more than `requested` must be exactly what the human confirmed.
pub fn check_form(
    g: &ReviewedGrant,
    requested: Option<&ReviewedGrant>,
    form: &FormGrant,
) -> Result<(), Rejection> {
    if let Some(shown) = &form.shown {
        if *shown != g.caveats_value() {
            return Err(Rejection::new(
                "not_what_was_shown",
                "what would be signed differs from what the form showed; \
                 look at the form again and issue once its preview is up to date",
            ));
        }
    }
    let widened = requested.map(|r| r.widenings(g)).unwrap_or_default();
    if widened != form.confirmed_widenings {
        return Err(if widened.is_empty() {
            Rejection::new(
                "widening_not_made",
                "the form confirmed widenings that this grant does not make; look at the form again",
            )
        } else {
            Rejection::new(
                "widening_not_confirmed",
                format!(
                    "this edit allows more than the agent asked for ({}); \
                     the form must show it and you must confirm it on purpose",
                    widened.join("; ")
                ),
            )
        });
    }
    Ok(())
}

/// Refuses a field custody would have to cut to show: nothing is approved
/// unseen.
fn fits(what: &str, text: &str) -> Result<(), Rejection> {
    let n = text.chars().count();
    if n > MAX_FIELD_CHARS {
        return Err(Rejection::new(
            "too_large_to_review",
            format!(
                "the {what} has {n} characters; custody shows at most {MAX_FIELD_CHARS} per \
                 field and does not ask a human to approve what it cannot show in full"
            ),
        ));
    }
    Ok(())
}

fn principal_label(pk: &PublicKey, ctx: &ReviewContext) -> Option<String> {
    ctx.principal_labels
        .iter()
        .find(|(k, l)| k == pk && !l.trim().is_empty())
        .map(|(_, l)| safe(l))
}

fn agent_view(agent: &PublicKey, ctx: &ReviewContext) -> AgentView {
    AgentView {
        key: agent.to_string(),
        short: agent.short(),
        phrase: crate::fingerprint::phrase(agent),
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
            words: safe(&c.describe_with(crate::local_time::when)),
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
    fits("reason", reason.unwrap_or(""))?;
    for c in &parsed {
        fits("caveat", &c.describe())?;
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
                crate::local_time::when(latest)
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
    let services = services.join(" ∩ ");
    let preview_text = preview(&parsed);
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

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::proposal::proposal_hash;
    use parley_core::SecretKey;
    use serde_json::json;
    use zeroize::Zeroizing;

    const NOW: i64 = 1_800_000_000;

    fn key(seed: u8) -> PublicKey {
        SecretKey::from_seed(&Zeroizing::new([seed; 32])).public()
    }

    fn ctx<'a>(
        principals: &'a [PublicKey],
        labels: &'a [(PublicKey, String)],
    ) -> ReviewContext<'a> {
        ReviewContext {
            now: NOW,
            principals,
            principal_labels: labels,
            limits: ReviewLimits::default(),
            requester: Requester {
                user: "agent".into(),
                uid: 1001,
                pid: Some(42),
                exe: None,
                chain: Vec::new(),
                chain_line: String::new(),
            },
            agent_label: None,
            agent_known: false,
        }
    }

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

    fn grant(caveats: Value, reason: Option<&str>) -> Result<ReviewedGrant, Rejection> {
        let principals = [key(1)];
        let labels = [(key(1), "household".to_string())];
        review_grant(
            &key(2).to_string(),
            &caveats,
            reason,
            None,
            &ctx(&principals, &labels),
        )
    }

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

    #[test]
    fn a_widening_edit_is_signed_only_when_confirmed_word_for_word() {
        let principals = [key(1)];
        let c = ctx(&principals, &[]);
        let requested = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK"]}, {"can": []},
            {"per": {"max": 4000, "currency": "USD"}}, {"exp": NOW + 3600}]);
        let g = grant(requested.clone(), Some("groceries")).expect("reviewed");
        let narrower = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK"]}, {"can": []},
            {"per": {"max": 1000, "currency": "USD"}}, {"exp": NOW + 600}]);
        let wider = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK", "COMMIT"]},
            {"per": {"max": 8000, "currency": "USD"}}, {"exp": NOW + 3600}]);
        let said = vec![
            "adds COMMIT".to_string(),
            "allows every capability".to_string(),
            "raises the per-action cap from 40.00 USD to 80.00 USD".to_string(),
        ];
        let shown = |v: &Value| grant(v.clone(), None).expect("reviewed").caveats_value();
        let form = |caveats: &Value, shown: Option<Value>, confirmed: Vec<String>| FormGrant {
            caveats: caveats.clone(),
            shown,
            confirmed_widenings: confirmed,
        };
        let cases: Vec<(&str, FormGrant, Result<(), &str>)> = vec![
            (
                "the request unchanged",
                form(&requested, Some(shown(&requested)), vec![]),
                Ok(()),
            ),
            (
                "narrower, nothing to confirm",
                form(&narrower, Some(shown(&narrower)), vec![]),
                Ok(()),
            ),
            (
                "wider, not confirmed",
                form(&wider, Some(shown(&wider)), vec![]),
                Err("widening_not_confirmed"),
            ),
            (
                "wider, confirmed in part",
                form(&wider, Some(shown(&wider)), said[..1].to_vec()),
                Err("widening_not_confirmed"),
            ),
            (
                "wider, confirmed word for word",
                form(&wider, Some(shown(&wider)), said.clone()),
                Ok(()),
            ),
            (
                "narrower, but widenings confirmed",
                form(&narrower, None, said.clone()),
                Err("widening_not_made"),
            ),
            (
                "signed differs from shown",
                form(&wider, Some(shown(&narrower)), said.clone()),
                Err("not_what_was_shown"),
            ),
        ];
        for (name, f, want) in cases {
            let got = g.narrowed(&f, &c).map(|n| {
                assert_eq!(
                    n.review().their_words,
                    "groceries",
                    "{name}: the reason stays"
                );
            });
            match (got, want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(code)) => assert_eq!(e.code, code, "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}
