//! Grants and proofs on a request (§6.4, §6.5, §6.6).
//!
//! [`presented`] checks what a request carries: the proof of possession
//! (signature over the service id, verb, target and a timestamp, at most
//! 300 s off) and, for every grant token, the chain (signatures, `prev`
//! links, a trusted root issuer, the holder = the proof key). Only then is
//! anything evaluated: [`Presented::evaluate`] runs every caveat of every
//! grant against one request and keeps the most useful outcome (§6.6: a
//! request is authorized if any single grant authorizes it).

use super::error::ParleyError;
use super::request::Request;
use parley_core::caveat::{Caveat, RequestContext};
use parley_core::grant::{Decision, UnverifiedGrant, VerifiedGrant};
use parley_core::proof::{self, Proof, ProofError, Target};
use parley_core::revocation::Revocation;
use parley_core::PublicKey;
use serde_json::Value;

/// What a request proved: its holder key, and each grant's chain check.
#[derive(Debug)]
pub struct Presented {
    /// The proof key (verified: it signed this request's target).
    pub key: PublicKey,
    /// The proof's timestamp.
    pub ts: i64,
    /// One entry per grant token, in order: the verified chain, or why not.
    pub grants: Vec<Result<VerifiedGrant, String>>,
    /// Per grant, in the same order: the revocation that revokes it (an
    /// extension, [`parley_core::revocation`]), if this service has one.
    pub revoked: Vec<Option<Revocation>>,
}

/// How the presented grants judged one request.
#[derive(Debug)]
pub enum Outcome<'p> {
    /// Authorized by this grant.
    Ok(&'p VerifiedGrant),
    /// Authorized by this grant except for `per`, `spend` or `risk` (§6.6).
    Consent(&'p VerifiedGrant, Vec<String>),
    /// Valid grants, none covering the request.
    Forbidden {
        /// The caveats that blocked it (§7 `need`).
        need: Vec<Value>,
        /// Why, in words.
        reasons: Vec<String>,
    },
    /// No usable grant.
    Unauthorized(String),
}

/// Checks the proof and decodes and verifies every grant chain of `req`
/// for a request to `audience` with this proof `target`, at `now`.
///
/// `Ok(None)` when the request carries neither grants nor a proof.
/// `revocations` is asked for only when the request presents a grant.
/// Grants without a proof, a malformed, stale or wrong proof: `unauthorized`.
/// A grant that fails its chain check is kept as a failure: another grant
/// may still authorize the request (§6.6).
pub fn presented(
    req: &Request,
    audience: &str,
    target: &Target<'_>,
    now: i64,
    trusted: &[PublicKey],
    revocations: impl FnOnce() -> Result<Vec<Revocation>, ParleyError>,
) -> Result<Option<Presented>, ParleyError> {
    let Some(raw) = &req.proof else {
        if req.grants.is_empty() {
            return Ok(None);
        }
        return Err(ParleyError::unauthorized(
            "a request with grants must carry a proof of possession (§6.5)",
        )
        .fix(proof_fix(audience, target)));
    };
    let proof = Proof::from_value(raw)
        .map_err(|e| ParleyError::unauthorized(e.to_string()).fix(proof_fix(audience, target)))?;
    proof::check(&proof, audience, target, now).map_err(|e| match e {
        ProofError::Stale { .. } => ParleyError::unauthorized(e.to_string()).fix(format!(
            "sign a fresh proof; this service's clock reads {now}"
        )),
        _ => ParleyError::unauthorized(e.to_string()).fix(proof_fix(audience, target)),
    })?;
    let grants: Vec<Result<VerifiedGrant, String>> = req
        .grants
        .iter()
        .map(|token| {
            UnverifiedGrant::decode(token)
                .and_then(|g| g.verify(trusted, &proof.key))
                .map_err(|e| e.to_string())
        })
        .collect();
    // Read only when there is a grant to check them against.
    let revocations = if grants.is_empty() {
        Vec::new()
    } else {
        revocations()?
    };
    let revoked = grants
        .iter()
        .map(|g| {
            let g = g.as_ref().ok()?.grant();
            revocations
                .iter()
                .find(|r| r.revokes(&g.id(), g.issuer(), trusted))
                .cloned()
        })
        .collect();
    Ok(Some(Presented {
        key: proof.key,
        ts: proof.ts,
        grants,
        revoked,
    }))
}

fn proof_fix(audience: &str, target: &Target<'_>) -> String {
    format!(
        "sign canonical {{aud: {audience:?}, verb: {:?}, target: {:?}, ts}} with the grant holder's key",
        target.verb(),
        target.target()
    )
}

/// The principal (root issuer) of a verified grant.
pub fn principal_of(grant: &VerifiedGrant) -> Option<PublicKey> {
    grant.grant().issuer().parse().ok()
}

/// Ids of the blocks of `grant` that carry a `spend` caveat: the totals a
/// commit authorized by it is reserved against (§6.3).
pub fn spend_blocks(grant: &VerifiedGrant) -> Vec<String> {
    grant
        .grant()
        .blocks()
        .iter()
        .zip(grant.block_ids())
        .filter(|(b, _)| b.caveats().iter().any(|c| matches!(c, Caveat::Spend(_))))
        .map(|(_, id)| id.clone())
        .collect()
}

impl Presented {
    /// Whether any grant was presented (a proof alone only proves a key).
    pub fn has_grants(&self) -> bool {
        !self.grants.is_empty()
    }

    /// Every block id of every verified grant (to look up spend totals).
    pub fn block_ids(&self) -> Vec<String> {
        self.grants
            .iter()
            .filter_map(|g| g.as_ref().ok())
            .flat_map(|g| g.block_ids().iter().cloned())
            .collect()
    }

    /// Evaluates every grant against `ctx` (§6.3). With `principal`, only a
    /// grant rooted in that principal can authorize (§4.4, §4.5); others
    /// are `forbidden`. The best outcome wins: ok, then consent, then
    /// forbidden, then unauthorized.
    pub fn evaluate(&self, ctx: &RequestContext, principal: Option<&PublicKey>) -> Outcome<'_> {
        let mut best: Option<Outcome<'_>> = None;
        for (i, g) in self.grants.iter().enumerate() {
            let revoked = self.revoked.get(i).and_then(Option::as_ref);
            let outcome = match (g, revoked) {
                (Err(reason), _) => Outcome::Unauthorized(reason.clone()),
                // Revoked by its principal: forbidden, `need` naming the
                // revocation, whatever its caveats say.
                (Ok(grant), Some(r)) => Outcome::of(grant, r.forbidden()),
                (Ok(grant), None) => {
                    let same = principal.map_or(true, |p| principal_of(grant).as_ref() == Some(p));
                    if !same {
                        Outcome::Forbidden {
                            need: Vec::new(),
                            reasons: vec![
                                "this grant is from another principal than the one the proposal or receipt belongs to".into(),
                            ],
                        }
                    } else {
                        Outcome::of(grant, grant.evaluate(ctx))
                    }
                }
            };
            if best.as_ref().map_or(true, |b| outcome.rank() > b.rank()) {
                best = Some(outcome);
            }
        }
        best.unwrap_or_else(|| Outcome::Unauthorized("no grant was presented".into()))
    }
}

impl<'p> Outcome<'p> {
    /// What `grant`'s decision means for this request.
    fn of(grant: &'p VerifiedGrant, decision: Decision) -> Outcome<'p> {
        match decision {
            Decision::Ok => Outcome::Ok(grant),
            Decision::ConsentRequired { reasons, .. } => Outcome::Consent(grant, reasons),
            Decision::Forbidden { need, reasons } => Outcome::Forbidden { need, reasons },
            Decision::Unauthorized { reason } => Outcome::Unauthorized(reason),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Outcome::Ok(_) => 3,
            Outcome::Consent(..) => 2,
            Outcome::Forbidden { .. } => 1,
            Outcome::Unauthorized(_) => 0,
        }
    }

    /// The §7 error for an outcome that does not authorize a request that
    /// needs no consent (everything but COMMIT). `Consent` cannot arise for
    /// those verbs (§6.3: per, spend and risk are ignored), and is refused
    /// as `forbidden` if it ever did.
    pub fn refusal(&self, verb: &str) -> Option<ParleyError> {
        match self {
            Outcome::Ok(_) => None,
            Outcome::Consent(_, reasons) => Some(ParleyError::forbidden(reasons.join("; "))),
            Outcome::Forbidden { need, reasons } => Some(forbidden(verb, need, reasons)),
            Outcome::Unauthorized(reason) => Some(unauthorized(reason)),
        }
    }
}

/// `forbidden` with `need` (§7).
pub fn forbidden(verb: &str, need: &[Value], reasons: &[String]) -> ParleyError {
    let message = if reasons.is_empty() {
        format!("no presented grant allows this {verb}")
    } else {
        format!(
            "the grant does not allow this {verb}: {}",
            reasons.join("; ")
        )
    };
    let e = ParleyError::forbidden(message)
        .fix("ask your principal for a grant that covers this request");
    if need.is_empty() {
        e
    } else {
        e.need(need.to_vec())
    }
}

/// `unauthorized` for a grant that is not usable.
pub fn unauthorized(reason: &str) -> ParleyError {
    ParleyError::unauthorized(format!("no usable grant: {reason}"))
        .fix("present a grant from a principal this service trusts, held by the proof key")
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::Dialect;
    use serde_json::json;

    #[test]
    fn revocations_are_read_only_for_a_request_with_grants() {
        let req = Request::parse(
            &json!({"parley": 1, "id": "1", "verb": "ASK", "capability": "shop.search"}),
            Dialect::ParleyV1,
        )
        .unwrap();
        let target = Target::Ask {
            capability: "shop.search",
        };
        let got = presented(&req, "svc", &target, 1_790_000_000, &[], || {
            Err(ParleyError::internal("the revocations were read"))
        });
        assert!(matches!(got, Ok(None)), "{got:?}");
    }
}
