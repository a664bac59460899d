//! Checking a consent from the store before a plan runs on it (SPEC-approval §6).
//!
//! A consent counts only if it is a single root block, signed by the pinned
//! principal, issued to this server's key, that itself carries `only` = the
//! plan hash and an `exp`, and that passes the grant check as a COMMIT of the
//! tool at this server. So neither a copied policy grant nor a block the
//! server's key appended to one ever counts.

use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::grant::{Decision, GrantError, UnverifiedGrant};
use parley_core::{Caveat, Dialect, PublicKey};
use serde_json::Value;

/// A consent that may run one plan: consume `id` once, before `exp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableConsent {
    /// The consent grant's id (what `consumeOnce` takes).
    pub id: String,
    /// Its expiry (unix seconds).
    pub exp: i64,
}

/// Checks `token` as the consent for the plan `hash` of `tool`; why not, in words.
#[allow(clippy::too_many_arguments)]
pub fn check_consent(
    token: &str,
    principal: &PublicKey,
    server: &PublicKey,
    tool: &str,
    hash: &str,
    uses: Option<&Value>,
    risk: &str,
    now: i64,
) -> Result<UsableConsent, String> {
    const NOT_FOR_THIS: &str = "not a consent for this plan";
    let decoded = UnverifiedGrant::decode(token).map_err(|_| NOT_FOR_THIS.to_string())?;
    let grant = decoded
        .verify(std::slice::from_ref(principal), server)
        .map_err(|e| match e {
            GrantError::Untrusted(_) => {
                "grant is issued by a principal this service does not trust".to_string()
            }
            GrantError::NotHolder => "proof key is not the grant holder".to_string(),
            other => format!("the consent does not verify: {other}"),
        })?;
    let blocks = grant.grant().blocks();
    let [root] = blocks else {
        return Err(NOT_FOR_THIS.into());
    };
    let only = root
        .caveats()
        .iter()
        .any(|c| matches!(c, Caveat::Only(h) if h == hash));
    let exp = root.caveats().iter().find_map(|c| match c {
        Caveat::Exp(t) => Some(*t),
        _ => None,
    });
    let (true, Some(exp)) = (only, exp) else {
        return Err(NOT_FOR_THIS.into());
    };
    if now >= exp {
        return Err("grant has expired".into());
    }
    let ctx = RequestContext {
        service: server.to_string(),
        verb: "COMMIT".into(),
        capability: tool.into(),
        now,
        proposal: Some(CommitFacts {
            hash: hash.into(),
            cost: None,
            uses: uses.cloned(),
            risk: risk.into(),
        }),
        dialect: Dialect::YeaV1,
        ..RequestContext::default()
    };
    match grant.evaluate(&ctx) {
        Decision::Ok => Ok(UsableConsent {
            id: grant.grant().id(),
            exp,
        }),
        other => Err(format!(
            "the consent does not cover this call ({})",
            other.code()
        )),
    }
}
