//! The scripted agent: what an AI agent with a Parley grant does, step by
//! step, printing each reply's Lens.
//!
//! 1. Ask custody for a grant (custody protocol `grant`): the human sees
//!    the caveats in the grant form (or the daemon's prompt) and approves.
//! 2. Calendar: "move my 1:1 with Ana" → CLARIFY (two Anas) → pick one →
//!    auto-commit within policy (§4.3.1) → UNDO it (§4.5).
//! 3. Shop: search the menu with a small token budget → EXPAND the rest (§8).
//! 4. Order over the per-commit limit → `consent_required` (§6.6) → the
//!    agent checks the consent request against the proposal it received,
//!    asks custody (`consent`), the human approves → COMMIT with the consent
//!    grant → EVENTs → RECEIPT.
//! 5. A sub-agent with a delegated read-only grant (verbs ASK) can search
//!    but is `forbidden` to order.

use super::client::{Session, Step};
use super::conn::ConnError;
use super::transcript::Transcript;
use crate::apps::{calendar, shop};
use crate::clock::Clock;
use crate::ids::random_key;
use crate::service::params::{format_date, format_datetime};
use parley_core::caveat::Caveat;
use parley_core::consent::{self, ConsentError, ConsentRequest};
use parley_core::grant::{GrantError, UnverifiedGrant};
use parley_core::{Dialect, SecretKey};
use parley_custody_client::client::{Client, ClientError};
use parley_custody_client::protocol::Reply;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where the agent finds everything.
pub struct Config {
    /// The custody socket (`None`: `$PARLEY_CUSTODY_SOCKET`, else the default).
    pub custody_socket: Option<PathBuf>,
    /// The shop's address (`host:port`).
    pub shop: String,
    /// The calendar's address.
    pub cal: String,
    /// The agent's key.
    pub key: Arc<SecretKey>,
    /// The clock proofs are signed with.
    pub clock: Arc<dyn Clock>,
    /// How long to wait for the human on each request.
    pub human_deadline: Duration,
    /// The dialect the agent speaks to the services and asks custody in:
    /// its frames, the grant's caveats and the consent request follow it.
    pub dialect: Dialect,
}

/// Why the scenario stopped.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Custody could not be reached or failed.
    #[error("custody: {0}")]
    Custody(#[from] ClientError),
    /// Custody (or the human) said no.
    #[error("custody did not sign the {what}: {reply}")]
    NotSigned {
        /// `grant` or `consent`.
        what: &'static str,
        /// Its final reply.
        reply: String,
    },
    /// A Parley service could not be reached or failed.
    #[error("{0}")]
    Service(#[from] ConnError),
    /// A step got another reply than the scenario expects.
    #[error("{step}: expected {expected}, got: {got}")]
    Unexpected {
        /// The step.
        step: &'static str,
        /// What was expected.
        expected: &'static str,
        /// The reply's Lens.
        got: String,
    },
    /// The service's consent request does not match the proposal (§6.6).
    #[error("the service's consent request does not match its proposal: {0}")]
    Consent(#[from] ConsentError),
    /// Delegating the grant failed.
    #[error("cannot delegate the grant: {0}")]
    Grant(#[from] GrantError),
}

/// What the scenario ended with (the end-to-end test checks it).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The principal key custody reported.
    pub principal: String,
    /// The grant the human approved.
    pub grant: String,
    /// The auto-commit RECEIPT of the reschedule.
    pub reschedule: Value,
    /// The undo RECEIPT.
    pub undo: Value,
    /// The first ASK's ANSWER (with its More entry).
    pub search: Value,
    /// The EXPAND ANSWER.
    pub expand: Value,
    /// The COMMIT's `consent_required` ERROR.
    pub consent_required: Value,
    /// The consent grant the human signed.
    pub consent_grant: String,
    /// The order's final RECEIPT.
    pub order: Value,
    /// The sub-agent's `forbidden` ERROR.
    pub sub_agent: Value,
}

/// The grant the agent asks for: both services, the five verbs it uses,
/// their capabilities, 40 USD per commit, 100 USD in total, up to medium
/// risk, for an hour. Under YEA the limits are `each`/`total` of `spend`
/// (exact quantities, §6.3), plus at most 3 emails in total; under Parley
/// they are `per`/`spend`, as they always were.
pub fn requested_caveats(now: i64, dialect: Dialect) -> Value {
    let limits = match dialect {
        Dialect::ParleyV1 => json!([
            {"per": {"max": 4000, "currency": "USD"}},
            {"spend": {"max": 10000, "currency": "USD"}},
        ]),
        Dialect::YeaV1 => json!([
            {"each": {"of": "spend", "max": 4000, "scale": 2, "unit": "USD"}},
            {"total": {"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}},
            {"total": {"of": "emails", "max": 3}},
        ]),
    };
    let mut caveats = vec![
        json!({"svc": [shop::ID, calendar::ID]}),
        json!({"verbs": ["ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"]}),
        json!({"can": ["shop.*", "calendar.*"]}),
    ];
    caveats.extend(limits.as_array().into_iter().flatten().cloned());
    caveats.push(json!({"risk": "medium"}));
    caveats.push(json!({"exp": now + 3600}));
    Value::Array(caveats)
}

/// The first characters of a token, for the transcript.
fn short(token: &str) -> String {
    token.chars().take(24).collect()
}

fn unexpected(step: &'static str, expected: &'static str, s: &Step) -> ScenarioError {
    ScenarioError::Unexpected {
        step,
        expected,
        got: parley_core::lens::render_reply(s.reply()),
    }
}

fn expect(step: &'static str, kind: &'static str, s: &Step) -> Result<(), ScenarioError> {
    if s.kind() == kind {
        Ok(())
    } else {
        Err(unexpected(step, kind, s))
    }
}

/// RFC 7396 merge patch (objects only; the scenario's patches are flat).
fn merge(target: &mut Value, patch: &Value) {
    if let (Some(t), Some(p)) = (target.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Runs every scenario, writing the transcript to `out`.
pub async fn run(cfg: &Config, out: &mut (dyn Write + Send)) -> Result<Summary, ScenarioError> {
    let mut t = Transcript::new(out);
    let clock = cfg.clock.clone();
    let me = cfg.key.public().to_string();

    // 1. The grant.
    let mut custody = Client::connect(cfg.custody_socket.as_deref()).await?;
    custody.set_human_deadline(cfg.human_deadline);
    let principal =
        match custody.hello().await? {
            Reply::Hello { principals, .. } => principals
                .first()
                .map(|p| p.key.clone())
                .ok_or_else(|| ScenarioError::NotSigned {
                    what: "grant",
                    reply: "custody holds no principal key yet; create one first".into(),
                })?,
            other => {
                return Err(ScenarioError::NotSigned {
                    what: "grant",
                    reply: other.sentence(),
                })
            }
        };
    t.step("The agent asks custody for a grant; the human reviews its caveats and approves");
    t.note(&format!("agent key {me}\nprincipal {principal}"));
    let caveats = requested_caveats(clock.now(), cfg.dialect);
    for c in caveats.as_array().into_iter().flatten() {
        t.note(&format!("  asks: {}", Caveat::parse(c).describe()));
    }
    let issued = custody
        .grant(
            &me,
            caveats,
            Some("parley-playground agent"),
            Some("playground: move a meeting and order meals"),
            |p| {
                if let Reply::Pending { request, .. } = p {
                    t.note(&format!(
                        "… waiting for the human to decide in Parley Custody (request {request})"
                    ));
                }
            },
        )
        .await?;
    let grant = match issued {
        Reply::Issued { grant, caveats } => {
            t.note(&format!(
                "✓ grant {}… ({} bytes), caveats as signed: {}",
                short(&grant),
                grant.len(),
                parley_core::lens::compact_json(&caveats)
            ));
            grant
        }
        other => {
            return Err(ScenarioError::NotSigned {
                what: "grant",
                reply: other.sentence(),
            })
        }
    };

    // 2. Calendar: reschedule within policy, then undo.
    t.step("The agent discovers the calendar");
    let (mut cal, brief) =
        Session::open(&cfg.cal, cfg.key.clone(), clock.clone(), 600, cfg.dialect).await?;
    t.exchange(&brief);
    cal.grants = vec![grant.clone()];

    t.step(
        "\"Move my 1:1 with Ana to the day after tomorrow, 09:00\", said as an INTENT with auto",
    );
    let day = clock.now().div_euclid(86_400) * 86_400;
    let mut params = json!({"event": "Ana", "to": format_datetime(day + 2 * 86_400 + 9 * 3600)});
    let mut s = cal
        .intent("calendar.reschedule", params.clone(), true, 400)
        .await?;
    t.exchange(&s);
    if s.kind() == "CLARIFY" {
        let patch = s.reply()["options"][0]["params"].clone();
        t.note(&format!(
            "the agent picks option 1: {}",
            parley_core::lens::compact_json(&patch)
        ));
        merge(&mut params, &patch);
        s = cal
            .intent("calendar.reschedule", params.clone(), true, 400)
            .await?;
        t.exchange(&s);
    }
    if s.kind() == "ERROR" && s.reply()["code"] == "invalid_params" {
        // Errors teach (§7): apply the service's own fix once.
        if let Some(patch) = s.reply()["fix"][0].get("params").cloned() {
            t.note(&format!(
                "the agent applies the service's fix: {}",
                parley_core::lens::compact_json(&patch)
            ));
            merge(&mut params, &patch);
            s = cal
                .intent("calendar.reschedule", params.clone(), true, 400)
                .await?;
            t.exchange(&s);
        }
    }
    expect("reschedule", "RECEIPT", &s)?;
    t.note("low risk, undoable and inside the grant: committed in the same round trip");
    let reschedule = s.reply().clone();
    let receipt = reschedule["receipt"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    t.step("\"Wait, not that day\": the agent undoes it inside the undo window");
    let s = cal.undo(&receipt).await?;
    t.exchange(&s);
    expect("undo", "RECEIPT", &s)?;
    let undo = s.reply().clone();

    // 3. Shop: search within a small budget, expand.
    t.step("The agent discovers the shop");
    let (mut shop, brief) =
        Session::open(&cfg.shop, cfg.key.clone(), clock.clone(), 600, cfg.dialect).await?;
    t.exchange(&brief);
    shop.grants = vec![grant.clone()];

    t.step(
        "The agent searches the whole menu with a 150-token budget; the rest waits behind a handle",
    );
    let s = shop.ask("shop.search", json!({}), 150).await?;
    t.exchange(&s);
    expect("search", "ANSWER", &s)?;
    let search = s.reply().clone();
    let handle = search["more"][0]["handle"].as_str().map(str::to_string);
    let Some(handle) = handle else {
        return Err(unexpected("search", "an ANSWER with a More handle", &s));
    };
    let s = shop.expand(&handle, 800).await?;
    t.exchange(&s);
    expect("expand", "ANSWER", &s)?;
    let expand = s.reply().clone();

    // 4. An order over the limit: consent.
    t.step(match cfg.dialect {
        Dialect::ParleyV1 => {
            "The agent orders 3 meals: over the 40 USD per-commit limit, so auto does not commit"
        }
        Dialect::YeaV1 => {
            "The agent orders 3 meals: over the each limit of 40.00 USD of spend, so auto does not commit"
        }
    });
    let deliver = format_date(clock.now() + 86_400);
    let order =
        json!({"items": [{"sku": "m06", "qty": 2}, {"sku": "m12", "qty": 1}], "deliver": deliver});
    let s = shop.intent("shop.order", order, true, 800).await?;
    t.exchange(&s);
    expect("order", "PROPOSALS", &s)?;
    let proposal = s.reply()["proposals"][0].clone();

    t.step("The agent commits the standard proposal with its grant");
    let s = shop.commit(&proposal, vec![grant.clone()]).await?;
    t.exchange(&s);
    if !(s.kind() == "ERROR" && s.reply()["code"] == "consent_required") {
        return Err(unexpected("commit", "consent_required", &s));
    }
    let consent_required = s.reply().clone();
    let consent_obj = consent_required["consent"].clone();

    t.step("The agent checks the consent request against the proposal it received, then asks custody; the human reviews the real effects and approves");
    let request = ConsentRequest::from_value(&consent_obj)?;
    consent::check_in(request, &proposal, shop.service(), clock.now(), cfg.dialect)?;
    t.note("consent request matches the proposal (id, hash, service, capability); hash recomputed");
    let decided = custody
        .consent_in(
            consent_obj,
            proposal.clone(),
            shop.service(),
            &me,
            cfg.dialect,
            |p| {
                if let Reply::Pending { request, .. } = p {
                    t.note(&format!(
                        "… waiting for the human to decide in Parley Custody (request {request})"
                    ));
                }
            },
        )
        .await?;
    let consent_grant = match decided {
        Reply::Approved { grant, .. } => {
            t.note(&format!(
                "✓ one-shot consent grant {}… : COMMIT of this hash only",
                short(&grant)
            ));
            grant
        }
        other => {
            return Err(ScenarioError::NotSigned {
                what: "consent",
                reply: other.sentence(),
            })
        }
    };

    t.step("The agent commits again with the consent grant");
    let s = shop.commit(&proposal, vec![consent_grant.clone()]).await?;
    t.exchange(&s);
    expect("commit with consent", "RECEIPT", &s)?;
    let order_receipt = s.reply().clone();

    // 5. A read-only sub-agent.
    t.step(
        "The agent delegates a read-only slice of its grant to a sub-agent, offline (verbs: ASK)",
    );
    let sub_key = Arc::new(random_key());
    let delegated = UnverifiedGrant::decode(&grant)?
        .delegate(
            &cfg.key,
            &sub_key.public(),
            &[
                Caveat::Verbs(vec!["ASK".into()]),
                Caveat::Exp(clock.now() + 600),
            ],
            clock.now(),
        )?
        .encode();
    t.note(&format!("sub-agent key {}", sub_key.public()));
    let (mut sub, _) = Session::open(&cfg.shop, sub_key, clock.clone(), 300, cfg.dialect).await?;
    sub.grants = vec![delegated];
    let s = sub.ask("shop.search", json!({"tag": "spicy"}), 200).await?;
    t.exchange(&s);
    expect("sub-agent search", "ANSWER", &s)?;

    t.step("The sub-agent tries to order anyway");
    let order =
        json!({"items": [{"sku": "m02", "qty": 1}], "deliver": format_date(clock.now() + 86_400)});
    let s = sub.intent("shop.order", order, false, 300).await?;
    t.exchange(&s);
    if !(s.kind() == "ERROR" && s.reply()["code"] == "forbidden") {
        return Err(unexpected("sub-agent order", "forbidden", &s));
    }
    let sub_agent = s.reply().clone();
    t.finish("✔ done: every reply above is exactly what a model would read.");

    Ok(Summary {
        principal,
        grant,
        reschedule,
        undo,
        search,
        expand,
        consent_required,
        consent_grant,
        order: order_receipt,
        sub_agent,
    })
}
