//! The limits the review enforces (set by the custody configuration) and
//! what the review needs to know about this custody.

use super::Requester;
use parley_core::PublicKey;

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
