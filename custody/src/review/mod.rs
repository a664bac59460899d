//! Re-verification and the review model (ARCHITECTURE.md: "Re-verification of
//! a consent request" and "What the review shows").
//!
//! Every request an agent sends is checked here before a human sees it. A
//! request that fails becomes a [`Rejection`] (answered `REJECTED`, logged,
//! never shown). One that passes becomes a [`ReviewedConsent`] or
//! [`ReviewedGrant`]: the only inputs the signer accepts, each carrying the
//! [`Review`] the human is shown, built from the proposal itself (effects,
//! cost, risk, undo, expiry) and never from the service's summary alone.
//!
//! The module is split by responsibility:
//!
//! * `limits.rs`: the limits the review enforces and what it needs to know
//!   about this custody ([`ReviewLimits`], [`ReviewContext`]).
//! * `view.rs`: the review model the human is shown ([`Review`] and its
//!   parts) and the display check that refuses what cannot be shown in full.
//! * `consent.rs`: the consent checklist ([`review_consent`], [`review_code`]).
//! * `job.rs`: the job checklist for a YEA job approval code ([`review_job`]).
//! * `grant.rs`: the grant checklist ([`review_grant`], [`ReviewedGrant`]).
//! * `form.rs`: the human's grant form ([`FormGrant`], [`check_form`]).
//! * `preview.rs`: the grant in one sentence ([`preview()`]).
//! * `why_asked.rs`: why custody asks about a consent, from the grants it
//!   issued to the agent ([`why_asked()`]).
//! * `test_support.rs`: what the unit tests share (tests only).

mod consent;
mod form;
mod grant;
mod job;
mod limits;
mod preview;
#[cfg(test)]
pub(crate) mod test_support;
mod view;
mod why_asked;

pub use consent::{
    money_in_uses, review_code, review_code_in, review_consent, review_consent_in, MoneySpent,
    ReviewedConsent, COST_NOT_STATED, NOTHING_MEASURED, SAYS_FREE_BUT_CHARGES,
};
pub use form::{check_form, FormGrant};
pub use grant::{caveats_value, review_grant, ReviewedGrant};
pub use job::{is_job_code, job_server, review_job, JobView, MAX_INPUT_CHARS};
pub use limits::{ReviewContext, ReviewLimits, MAX_EFFECTS};
pub use preview::preview;
pub use view::{
    AgentView, CaveatView, ChainLinkView, EffectView, Requester, Review, ReviewKind, UseView,
};
pub use why_asked::{why_asked, IssuedGrant, Proposed, WhyAsked};

use parley_core::consent::ConsentError;
use parley_core::PublicKey;

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

fn parse_agent(agent: &str) -> Result<PublicKey, Rejection> {
    agent
        .parse()
        .map_err(|e| Rejection::new("agent_key", format!("the agent key is not usable: {e}")))
}
