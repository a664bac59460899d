//! Consent (§6.6): checking a service's `consent_required` request against
//! the proposal the agent actually received, and the one-shot consent grant.
//!
//! The consent request is written by the service, which is not trusted: it
//! may name another proposal, service, capability or hash behind a friendly
//! summary. [`check`] turns a [`ConsentRequest`] into a [`CheckedConsent`]
//! only when everything matches the proposal received (whose hash is
//! recomputed), and only a `CheckedConsent` can be signed.

use crate::caveat::Caveat;
use crate::grant::{GrantError, UnverifiedGrant};
use crate::keys::{PublicKey, SecretKey};
use crate::proposal::{Proposal, ProposalError};
use serde_json::{json, Value};

/// The `consent` object of an `ERROR consent_required` (§6.6). Unchecked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentRequest {
    /// The proposal id.
    pub proposal: String,
    /// The proposal hash to approve.
    pub hash: String,
    /// The service id.
    pub service: String,
    /// The capability.
    pub capability: String,
    /// The principal who must approve.
    pub principal: PublicKey,
    /// The service's own words. Untrusted; never the only thing shown.
    pub summary: String,
    /// Unix seconds; the consent grant expires then at the latest.
    pub expires: i64,
}

/// Why a consent request was refused. Each mismatch has its own variant so
/// logs and tests can tell which check caught an attack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsentError {
    /// The consent object is not of the §6.6 shape.
    #[error("the consent request is malformed: {0}")]
    Malformed(String),
    /// The proposal received is malformed or does not hash to its `hash`.
    #[error("the proposal received is not acceptable: {0}")]
    Proposal(#[from] ProposalError),
    /// The consent asks for another hash than the proposal's.
    #[error(
        "the consent asks to approve hash {consent}, but the proposal received has hash {proposal}"
    )]
    HashMismatch {
        /// In the consent request.
        consent: String,
        /// Of the proposal received.
        proposal: String,
    },
    /// The consent names another proposal id.
    #[error("the consent names proposal {consent:?}, but the proposal received is {proposal:?}")]
    ProposalIdMismatch {
        /// In the consent request.
        consent: String,
        /// Of the proposal received.
        proposal: String,
    },
    /// The consent names another capability.
    #[error(
        "the consent is for capability {consent:?}, but the proposal received is for {proposal:?}"
    )]
    CapabilityMismatch {
        /// In the consent request.
        consent: String,
        /// Of the proposal received.
        proposal: String,
    },
    /// The consent names another service than the one the agent talked to.
    #[error("the consent is for service {consent:?}, but the agent received the proposal from {service:?}")]
    ServiceMismatch {
        /// In the consent request.
        consent: String,
        /// The service id the agent learned at HELLO.
        service: String,
    },
    /// A capability or service name that would widen the consent grant.
    #[error("{0}")]
    Unscopable(String),
    /// The proposal or the consent request has expired.
    #[error("the proposal expired at {expires} (now {now}); ask the service for a new one")]
    Expired {
        /// The earlier of the two expiries.
        expires: i64,
        /// The time of the check.
        now: i64,
    },
}

impl ConsentError {
    /// A stable name for the check that failed (logs, vectors, the custody protocol).
    pub fn kind(&self) -> &'static str {
        match self {
            ConsentError::Malformed(_) => "malformed",
            ConsentError::Proposal(ProposalError::HashMismatch { .. }) => "proposal_hash",
            ConsentError::Proposal(_) => "proposal_malformed",
            ConsentError::HashMismatch { .. } => "hash_mismatch",
            ConsentError::ProposalIdMismatch { .. } => "proposal_id_mismatch",
            ConsentError::CapabilityMismatch { .. } => "capability_mismatch",
            ConsentError::ServiceMismatch { .. } => "service_mismatch",
            ConsentError::Unscopable(_) => "unscopable",
            ConsentError::Expired { .. } => "expired",
        }
    }
}

impl ConsentRequest {
    /// Reads the §6.6 consent object. Unknown fields are ignored (§2.1).
    pub fn from_value(v: &Value) -> Result<ConsentRequest, ConsentError> {
        let obj = v
            .as_object()
            .ok_or_else(|| ConsentError::Malformed("the consent must be an object".into()))?;
        let string = |k: &str| -> Result<String, ConsentError> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| ConsentError::Malformed(format!("{k} must be a string")))
        };
        let principal = string("principal")?
            .parse()
            .map_err(|e| ConsentError::Malformed(format!("principal: {e}")))?;
        let expires = obj
            .get("expires")
            .and_then(Value::as_i64)
            .filter(|t| t.unsigned_abs() <= crate::canonical::MAX_SAFE_INTEGER as u64)
            .ok_or_else(|| ConsentError::Malformed("expires must be an integer".into()))?;
        Ok(ConsentRequest {
            proposal: string("proposal")?,
            hash: string("hash")?,
            service: string("service")?,
            capability: string("capability")?,
            principal,
            summary: string("summary")?,
            expires,
        })
    }

    /// The consent object as JSON.
    pub fn to_value(&self) -> Value {
        json!({
            "proposal": self.proposal, "hash": self.hash, "service": self.service,
            "capability": self.capability, "principal": self.principal.to_string(),
            "summary": self.summary, "expires": self.expires,
        })
    }
}

/// A consent request that matches the proposal received (§6.6). Only
/// [`check`] makes one.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedConsent {
    request: ConsentRequest,
    proposal: Proposal,
    exp: i64,
}

impl CheckedConsent {
    /// The request as the service sent it.
    pub fn request(&self) -> &ConsentRequest {
        &self.request
    }
    /// The proposal, read strictly; its effects, cost, risk and undo are what the human sees.
    pub fn proposal(&self) -> &Proposal {
        &self.proposal
    }
    /// The consent grant's `exp`: min(consent.expires, proposal.expires).
    pub fn exp(&self) -> i64 {
        self.exp
    }
    /// Whether the service's consent summary differs from the proposal's own
    /// summary: worth flagging to the human, since summaries are unverified.
    pub fn summary_differs(&self) -> bool {
        self.request.summary != self.proposal.summary
    }
    /// The exact caveats the consent grant will carry.
    pub fn caveats(&self) -> Vec<Caveat> {
        consent_caveats(
            &self.request.service,
            &self.proposal.capability,
            &self.proposal.hash,
            self.exp,
        )
    }
}

impl CheckedConsent {
    /// A job code's consent ([`crate::job::CheckedJob::consent`]): the
    /// checks were the job's, and `proposal` is its plan read as a proposal
    /// whose hash is the plan hash.
    pub(crate) fn for_job(request: ConsentRequest, proposal: Proposal, exp: i64) -> CheckedConsent {
        CheckedConsent {
            request,
            proposal,
            exp,
        }
    }
}

/// §6.6: checks a consent request against the proposal the agent actually
/// received from `service`, at time `now`. The proposal's hash is recomputed.
pub fn check(
    request: ConsentRequest,
    proposal: &Value,
    service: &str,
    now: i64,
) -> Result<CheckedConsent, ConsentError> {
    check_in(request, proposal, service, now, crate::Dialect::ParleyV1)
}

/// [`check`] with the proposal read under `dialect` (the consent request and
/// the consent grant are the same in both).
pub fn check_in(
    request: ConsentRequest,
    proposal: &Value,
    service: &str,
    now: i64,
    dialect: crate::Dialect,
) -> Result<CheckedConsent, ConsentError> {
    let proposal = Proposal::from_value_in(proposal, dialect)?;
    if request.hash != proposal.hash {
        return Err(ConsentError::HashMismatch {
            consent: request.hash,
            proposal: proposal.hash,
        });
    }
    if request.proposal != proposal.id {
        return Err(ConsentError::ProposalIdMismatch {
            consent: request.proposal,
            proposal: proposal.id,
        });
    }
    if request.capability != proposal.capability {
        return Err(ConsentError::CapabilityMismatch {
            consent: request.capability,
            proposal: proposal.capability,
        });
    }
    if request.service != service {
        return Err(ConsentError::ServiceMismatch {
            consent: request.service,
            service: service.to_string(),
        });
    }
    // A `can` of "*" or "x.*" would widen the grant past this one capability.
    if proposal.capability.is_empty() || proposal.capability.contains('*') {
        return Err(ConsentError::Unscopable(format!(
            "the capability {:?} is not a plain name; a consent grant must name exactly one capability",
            proposal.capability
        )));
    }
    if service.is_empty() {
        return Err(ConsentError::Unscopable("the service id is empty".into()));
    }
    let exp = request.expires.min(proposal.expires);
    if exp <= now {
        return Err(ConsentError::Expired { expires: exp, now });
    }
    Ok(CheckedConsent {
        request,
        proposal,
        exp,
    })
}

/// The exact §6.6 caveats: `[{"svc":[service]},{"verbs":["COMMIT"]},{"can":[capability]},{"only":hash},{"exp":exp}]`.
pub fn consent_caveats(service: &str, capability: &str, hash: &str, exp: i64) -> Vec<Caveat> {
    vec![
        Caveat::Svc(vec![service.to_string()]),
        Caveat::Verbs(vec!["COMMIT".to_string()]),
        Caveat::Can(vec![capability.to_string()]),
        Caveat::Only(hash.to_string()),
        Caveat::Exp(exp),
    ]
}

/// Signs the consent grant: a root grant from the principal to the agent
/// with exactly the §6.6 caveats.
pub fn issue_consent(
    principal: &SecretKey,
    agent: &PublicKey,
    checked: &CheckedConsent,
    iat: i64,
    nonce: &str,
) -> Result<UnverifiedGrant, GrantError> {
    if principal.public() != checked.request.principal {
        return Err(GrantError::Unsignable(
            "this key is not the principal the consent names".into(),
        ));
    }
    UnverifiedGrant::issue_root(principal, agent, &checked.caveats(), iat, nonce)
}
