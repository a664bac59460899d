//! The signer: the only code that touches a principal's secret key.
//!
//! It signs exactly two shapes, each only from a reviewed input: a root grant
//! whose caveats a human saw ([`ReviewedGrant`]) and the §6.6 consent grant
//! ([`ReviewedConsent`]), and each only with an [`Approval`], the value only
//! the engine makes once a human decided (and, where the policy asks, the
//! OS authenticated them). There is no "sign these bytes", and nothing
//! outside this crate can reach this module. Before a token is
//! handed out it is decoded and verified again, and the consent is checked to
//! authorize exactly the COMMIT that was shown.
//!
//! A third shape grants nothing: a revocation statement naming one grant
//! custody issued ([`parley_core::revocation`], an extension), signed only
//! with an approval of exactly that revocation ([`crate::revoke`] makes it
//! after the OS authenticated the human).

use crate::approval::Approval;
use crate::keystore::{Keystore, KeystoreError};
use crate::review::{ReviewedConsent, ReviewedGrant};
use parley_core::b64;
use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::consent;
use parley_core::grant::{Decision, GrantError, UnverifiedGrant};

/// A signed token and what the audit log records of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The `pg1.` token.
    pub token: String,
    /// The grant id (root block id).
    pub id: String,
    /// Its expiry.
    pub exp: i64,
}

/// Why nothing was signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The key could not be loaded.
    #[error("the principal key could not be used: {0}")]
    Key(#[from] KeystoreError),
    /// The grant could not be built.
    #[error("{0}")]
    Grant(#[from] GrantError),
    /// No entropy for the nonce.
    #[error("the system random generator failed: {0}")]
    Random(String),
    /// The approval was for something else: a bug, nothing signed.
    #[error("internal check failed: the approval does not cover this request; nothing was signed")]
    NotApproved,
    /// The self-check after signing failed: a bug, never handed out.
    #[error("internal check failed after signing ({0}); nothing was handed out")]
    SelfCheck(String),
}

fn nonce() -> Result<String, SignError> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| SignError::Random(e.to_string()))?;
    Ok(b64::encode(bytes))
}

/// Signs a statement revoking grant `grant` (an extension,
/// [`parley_core::revocation`]) with `principal`'s key, only with an
/// approval of exactly that revocation.
pub(crate) fn sign_revocation(
    keys: &Keystore,
    principal: &parley_core::PublicKey,
    grant: &str,
    reason: &str,
    approved: &Approval,
    now: i64,
) -> Result<parley_core::revocation::Revocation, SignError> {
    if !approved.covers(&Approval::subject_of_revocation(grant)) {
        return Err(SignError::NotApproved);
    }
    let secret = keys.load(principal)?;
    let r = parley_core::revocation::sign(&secret, grant, now, reason);
    drop(secret);
    // Checked again before it is published.
    parley_core::revocation::Revocation::parse(&r.to_value().to_string())
        .map_err(|e| SignError::SelfCheck(e.to_string()))?;
    Ok(r)
}

/// Signs the §6.6 consent grant for a reviewed consent at time `now`.
pub(crate) fn sign_consent(
    keys: &Keystore,
    reviewed: &ReviewedConsent,
    approved: &Approval,
    now: i64,
) -> Result<Signed, SignError> {
    let checked = reviewed.checked();
    let subject =
        Approval::subject_of_consent(&checked.proposal().hash, &reviewed.agent().to_string());
    if !approved.covers(&subject) {
        return Err(SignError::NotApproved);
    }
    let principal = &checked.request().principal;
    let secret = keys.load(principal)?;
    let grant = consent::issue_consent(&secret, reviewed.agent(), checked, now, &nonce()?)?;
    drop(secret);
    // The token must authorize exactly that COMMIT, and not after exp.
    let p = checked.proposal();
    let ctx = RequestContext {
        service: checked.request().service.clone(),
        verb: "COMMIT".into(),
        capability: p.capability.clone(),
        now,
        proposal: Some(CommitFacts {
            hash: p.hash.clone(),
            cost: p.cost.clone(),
            uses: p.uses.as_ref().map(|u| u.to_value()),
            risk: p.risk.to_string(),
        }),
        ..Default::default()
    };
    let token = grant.encode();
    let verified = UnverifiedGrant::decode(&token)
        .and_then(|g| g.verify(std::slice::from_ref(principal), reviewed.agent()))
        .map_err(|e| SignError::SelfCheck(e.to_string()))?;
    if verified.evaluate(&ctx) != Decision::Ok {
        return Err(SignError::SelfCheck(
            "the consent does not authorize its own COMMIT".into(),
        ));
    }
    let late = RequestContext {
        now: checked.exp(),
        ..ctx
    };
    if verified.evaluate(&late) == Decision::Ok {
        return Err(SignError::SelfCheck(
            "the consent outlives its expiry".into(),
        ));
    }
    Ok(Signed {
        id: grant.id(),
        exp: checked.exp(),
        token,
    })
}

/// Signs a root grant with exactly the reviewed caveats at time `now`.
pub(crate) fn sign_grant(
    keys: &Keystore,
    reviewed: &ReviewedGrant,
    approved: &Approval,
    now: i64,
) -> Result<Signed, SignError> {
    let subject = Approval::subject_of_grant(&reviewed.agent().to_string(), reviewed.caveats());
    if !approved.covers(&subject) {
        return Err(SignError::NotApproved);
    }
    let secret = keys.load(reviewed.principal())?;
    let grant = UnverifiedGrant::issue_root(
        &secret,
        reviewed.agent(),
        reviewed.caveats(),
        now,
        &nonce()?,
    )?;
    drop(secret);
    let token = grant.encode();
    let back = UnverifiedGrant::decode(&token)
        .and_then(|g| g.verify(std::slice::from_ref(reviewed.principal()), reviewed.agent()))
        .map_err(|e| SignError::SelfCheck(e.to_string()))?;
    let exp = back
        .grant()
        .expiry()
        .ok_or_else(|| SignError::SelfCheck("a grant without exp".into()))?;
    Ok(Signed {
        id: grant.id(),
        exp,
        token,
    })
}
