//! What the review's unit tests share: a fixed clock, keys from a seed and
//! a review context.

use super::{review_grant, Rejection, Requester, ReviewContext, ReviewLimits, ReviewedGrant};
use parley_core::{PublicKey, SecretKey};
use serde_json::Value;
use zeroize::Zeroizing;

pub(super) const NOW: i64 = 1_800_000_000;

pub(super) fn key(seed: u8) -> PublicKey {
    SecretKey::from_seed(&Zeroizing::new([seed; 32])).public()
}

pub(super) fn ctx<'a>(
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

pub(super) fn grant(caveats: Value, reason: Option<&str>) -> Result<ReviewedGrant, Rejection> {
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

/// A review to shape by hand (tests of what is made from a review).
pub(crate) fn consent_review() -> super::Review {
    grant(serde_json::json!([{"svc": ["shop.example"]}]), None)
        .expect("a well-formed grant")
        .review()
        .clone()
}
