//! What the checks of a chain give: a [`SignedChain`] (signatures only,
//! never evaluated) or a [`VerifiedGrant`] (a trusted root, held by the proof
//! key), and the evaluation of a request against the latter ([`Decision`]).

use super::UnverifiedGrant;
use crate::caveat::{Caveat, RequestContext, Verdict};
use serde_json::Value;

/// A grant whose signatures and `prev` links check out from its root issuer
/// to its holder, with no trust decision made: what
/// [`UnverifiedGrant::verify_chain`] returns.
///
/// A well-signed chain proves only that its keys signed it; the issuer may be
/// a key anyone made a minute ago. So this type has no `evaluate` and does
/// not turn into a [`VerifiedGrant`]: the one way to a grant that
/// authorizes is [`UnverifiedGrant::verify`], against the trusted
/// principals and the proof key.
///
/// ```compile_fail
/// use parley_core::caveat::RequestContext;
/// use parley_core::grant::UnverifiedGrant;
///
/// fn authorize_any_signer(g: &UnverifiedGrant, ctx: &RequestContext) {
///     let chain = g.verify_chain().expect("signed");
///     // Does not compile: a chain with no trusted root is never evaluated.
///     let _ = chain.evaluate(ctx);
/// }
/// ```
///
/// What compiles instead names whom it trusts:
///
/// ```
/// use parley_core::caveat::RequestContext;
/// use parley_core::grant::{Decision, UnverifiedGrant};
/// use parley_core::PublicKey;
///
/// fn authorize(
///     g: &UnverifiedGrant,
///     trusted: &[PublicKey],
///     proof_key: &PublicKey,
///     ctx: &RequestContext,
/// ) -> Decision {
///     match g.verify(trusted, proof_key) {
///         Ok(v) => v.evaluate(ctx),
///         Err(e) => Decision::Unauthorized { reason: e.to_string() },
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedChain<'g> {
    pub(super) grant: &'g UnverifiedGrant,
    pub(super) ids: Vec<String>,
}

impl<'g> SignedChain<'g> {
    /// The chain as decoded (blocks, issuer, holder).
    pub fn grant(&self) -> &'g UnverifiedGrant {
        self.grant
    }

    /// Block ids, root first, as checked against each `prev` link.
    pub fn block_ids(&self) -> &[String] {
        &self.ids
    }
}

/// A grant whose chain verified under a trusted root, held by the proof key
/// (§6.4). The only type caveats are evaluated on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedGrant {
    pub(super) grant: UnverifiedGrant,
    pub(super) ids: Vec<String>,
}

/// The outcome of authorizing a request (§6.3, §6.6, §7).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Decision {
    /// Authorized.
    Ok,
    /// Authorized except for `per`, `spend`, `each`, `total` or `risk`: the human may consent.
    ConsentRequired {
        /// The caveats that asked for consent.
        caveats: Vec<Value>,
        /// Why, in words.
        reasons: Vec<String>,
    },
    /// A valid grant that does not cover the request.
    Forbidden {
        /// The caveats that blocked it (§7 `need`).
        need: Vec<Value>,
        /// Why, in words.
        reasons: Vec<String>,
    },
    /// Not a usable grant or proof.
    Unauthorized {
        /// Why.
        reason: String,
    },
}

impl Decision {
    /// The §7 error code, or `ok`.
    pub fn code(&self) -> &'static str {
        match self {
            Decision::Ok => "ok",
            Decision::ConsentRequired { .. } => "consent_required",
            Decision::Forbidden { .. } => "forbidden",
            Decision::Unauthorized { .. } => "unauthorized",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Decision::Ok => 3,
            Decision::ConsentRequired { .. } => 2,
            Decision::Forbidden { .. } => 1,
            Decision::Unauthorized { .. } => 0,
        }
    }

    /// §6.6: a request with several grants is authorized if any one grant
    /// authorizes it alone; otherwise the most useful refusal is reported.
    pub fn best(decisions: impl IntoIterator<Item = Decision>) -> Decision {
        decisions
            .into_iter()
            .max_by_key(Decision::rank)
            .unwrap_or(Decision::Unauthorized {
                reason: "no grant was presented".into(),
            })
    }
}

impl VerifiedGrant {
    /// The chain as decoded.
    pub fn grant(&self) -> &UnverifiedGrant {
        &self.grant
    }

    /// Block ids, root first (spend is attributed per block id).
    pub fn block_ids(&self) -> &[String] {
        &self.ids
    }

    /// What a COMMIT authorized by this grant must reserve (YEA §6.3): for
    /// every `total` caveat of every block whose measure `uses` reports, the
    /// block id, the measure and the quantity's exact value. A service adds
    /// these to its [`Used`](crate::quantity::Used) atomically with the
    /// check and before executing, and releases them if execution fails.
    pub fn total_reservations(
        &self,
        uses: &crate::quantity::Uses,
    ) -> Vec<(String, String, crate::quantity::Exact)> {
        let mut out = Vec::new();
        for (block, id) in self.grant.blocks.iter().zip(&self.ids) {
            for caveat in &block.caveats {
                if let Caveat::Total(limit) = caveat {
                    if let Some(q) = uses.get(&limit.of) {
                        let row = (id.clone(), limit.of.clone(), q.exact());
                        if !out.contains(&row) {
                            out.push(row);
                        }
                    }
                }
            }
        }
        out
    }

    /// Evaluates every caveat of every block (§6.3). Hard failures win
    /// (`forbidden`); if only `per`/`spend`/`risk` fail, `consent_required`.
    pub fn evaluate(&self, ctx: &RequestContext) -> Decision {
        let mut hard = (Vec::new(), Vec::new());
        let mut soft = (Vec::new(), Vec::new());
        for (block, id) in self.grant.blocks.iter().zip(&self.ids) {
            for caveat in &block.caveats {
                match caveat.check(ctx, id) {
                    Verdict::Pass => {}
                    Verdict::Soft(why) => {
                        soft.0.push(caveat.to_value());
                        soft.1.push(why);
                    }
                    Verdict::Hard(why) => {
                        hard.0.push(caveat.to_value());
                        hard.1.push(why);
                    }
                }
            }
        }
        if !hard.0.is_empty() {
            Decision::Forbidden {
                need: hard.0,
                reasons: hard.1,
            }
        } else if !soft.0.is_empty() {
            Decision::ConsentRequired {
                caveats: soft.0,
                reasons: soft.1,
            }
        } else {
            Decision::Ok
        }
    }
}
