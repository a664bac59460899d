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
//! after the OS authenticated the human). Only this shape also takes
//! custody's own unasked approval
//! ([`Approval::unasked_revocation`]: an approve-for-a-while grant ended by
//! freeze or the session's lock); a grant or a consent never does.

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
    /// Custody's own unasked approval offered for a grant or a consent: a
    /// bug, nothing signed (it only ever revokes a short grant).
    #[error("internal check failed: no human approved this (custody's own unasked approval only ends an approve-for-a-while grant); nothing was signed")]
    NoHuman,
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
/// approval of exactly that revocation: a human's, or custody's own
/// unasked one, which only a live short grant can yield.
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
    if !approved.by_a_human() {
        return Err(SignError::NoHuman);
    }
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
    if !approved.by_a_human() {
        return Err(SignError::NoHuman);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Unasked;
    use crate::approver::{Gesture, Yes};
    use crate::keystore::{KdfParams, Passphrase};
    use crate::review::{review_consent, review_grant, Requester, ReviewContext, ReviewLimits};
    use parley_core::proposal::proposal_hash;
    use parley_core::PublicKey;
    use serde_json::json;
    use zeroize::Zeroizing;

    const NOW: i64 = 1_800_000_000;

    fn keystore(dir: &std::path::Path) -> (Keystore, PublicKey) {
        let ks = Keystore::file_store_with_params(
            &dir.join("keys"),
            Passphrase::new(Zeroizing::new("signer test".into())),
            KdfParams::new(KdfParams::MIN_M_KIB, 1, 1).unwrap(),
        )
        .unwrap();
        let p = ks.create("me").unwrap();
        (ks, p)
    }

    fn ctx(principals: &[PublicKey]) -> ReviewContext<'_> {
        ReviewContext {
            now: NOW,
            principals,
            principal_labels: &[],
            limits: ReviewLimits::default(),
            requester: Requester {
                user: "agent".into(),
                uid: 1001,
                pid: None,
                exe: None,
                chain: Vec::new(),
                chain_line: String::new(),
            },
            agent_label: None,
            agent_known: false,
        }
    }

    fn agent() -> PublicKey {
        parley_core::SecretKey::from_seed(&Zeroizing::new([7; 32])).public()
    }

    /// Custody's unasked approval ends a short grant and nothing else: even
    /// one whose subject named exactly this grant or consent (which the
    /// crate never makes) is refused, and nothing is signed.
    #[test]
    fn custodys_unasked_approval_signs_no_grant_and_no_consent() {
        let dir = tempfile::tempdir().unwrap();
        let (ks, principal) = keystore(dir.path());
        let principals = [principal.clone()];

        let g = review_grant(
            &agent().to_string(),
            &json!([{"svc": ["shop.example"]}, {"exp": NOW + 600}]),
            None,
            Some(&principal),
            &ctx(&principals),
        )
        .unwrap();
        let subject = Approval::subject_of_grant(&g.agent().to_string(), g.caveats());
        for why in [Unasked::Frozen, Unasked::SessionLocked] {
            let unasked = Approval::unasked_for_test(why, subject.clone());
            assert!(matches!(
                sign_grant(&ks, &g, &unasked, NOW),
                Err(SignError::NoHuman)
            ));
        }
        // The same subject from a human signs (the refusal is the approval's
        // kind, not the grant).
        let yes = Yes {
            gesture: Gesture::Click,
            second_confirmation: false,
        };
        sign_grant(&ks, &g, &Approval::confirmed(yes, false, subject), NOW).unwrap();

        let mut p = json!({"id": "p1", "capability": "shop.order", "summary": "Order",
            "effects": [{"op": "create", "target": "order"}],
            "cost": {"amount": 700, "currency": "USD"}, "risk": "low",
            "undo": {"window": 600}, "expires": NOW + 600});
        p["hash"] = json!(proposal_hash(&p).unwrap());
        let consent = json!({"proposal": "p1", "hash": p["hash"], "service": "shop.example",
            "capability": "shop.order", "principal": principal.to_string(),
            "summary": "Order", "expires": NOW + 600});
        let c = review_consent(
            &consent,
            &p,
            "shop.example",
            &agent().to_string(),
            &ctx(&principals),
        )
        .unwrap();
        let subject =
            Approval::subject_of_consent(&c.checked().proposal().hash, &c.agent().to_string());
        let unasked = Approval::unasked_for_test(Unasked::Frozen, subject.clone());
        assert!(matches!(
            sign_consent(&ks, &c, &unasked, NOW),
            Err(SignError::NoHuman)
        ));
        sign_consent(&ks, &c, &Approval::confirmed(yes, false, subject), NOW).unwrap();

        // A revocation it does sign.
        let unasked = Approval::unasked_for_test(
            Unasked::SessionLocked,
            Approval::subject_of_revocation("g1"),
        );
        let r = sign_revocation(
            &ks,
            &principal,
            "g1",
            "the session was locked",
            &unasked,
            NOW,
        )
        .unwrap();
        assert_eq!(r.reason, "the session was locked");
        assert!(matches!(
            sign_revocation(&ks, &principal, "g2", "x", &unasked, NOW),
            Err(SignError::NotApproved)
        ));
    }
}
