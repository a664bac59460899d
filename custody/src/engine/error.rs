//! Why a decision, a pause or an issue from the form did not happen: errors
//! with messages a user can act on.

use super::*;

/// Why a decision could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No such pending request (already decided, expired or withdrawn).
    #[error("that request is no longer waiting (decided, expired or withdrawn)")]
    NotPending,
    /// Narrowed caveats did not pass review.
    #[error("the narrowed grant is not valid: {0}")]
    Narrowed(Rejection),
    /// Narrowing applies to grants only.
    #[error("a consent is approved or denied as it is; it cannot be changed")]
    NotAGrant,
    /// High risk or irreversible, and the approver did not report the second confirmation.
    #[error("this request is high risk, cannot be undone or does not state its cost: it needs a second confirmation before it is signed")]
    SecondConfirmation,
    /// A job approval: the phrase typed does not match the plan's (or none
    /// was typed). The request is still pending; type it again.
    #[error("the phrase typed does not match the one the review asks for ({0:?}); nothing was signed, and the request is still waiting")]
    Phrase(String),
    /// A phrase was typed for a request that asks for none.
    #[error("this request has no phrase to type; approve it as it is")]
    NoPhrase,
    /// OS authentication did not succeed; the request is still pending.
    #[error("{0}")]
    StepUp(StepUpError),
    /// Signing failed; nothing was handed out.
    #[error("signing failed: {0}")]
    Sign(#[from] signer::SignError),
    /// The audit row could not be written; nothing was handed out.
    #[error("the audit log could not record this, so nothing was handed out: {0}")]
    Audit(String),
    /// A worker thread failed.
    #[error("internal error: {0}")]
    Internal(String),
    /// Custody is frozen ("Stop all agents"): nothing is signed until the
    /// human unfreezes it.
    #[error("custody is frozen (all agents stopped): nothing is signed until you unfreeze it")]
    Frozen,
    /// The approve-for-a-while choice was refused (logged); nothing was
    /// signed and the request is still waiting.
    #[error("not approved for a while: {0}; nothing was signed, and the request is still waiting")]
    ForAWhile(crate::for_a_while::Refused),
    /// The session is locked or going to sleep ([`crate::session`]):
    /// nothing is signed and no OS prompt starts; the request still waits.
    #[error("{0}")]
    Session(crate::session::Hold),
}

/// Why an agent could not be paused or resumed.
#[derive(Debug, thiserror::Error)]
pub enum PauseError {
    /// The text is not an agent key.
    #[error("that is not an agent key ({0}); copy the key from the review or the audit view")]
    NotAKey(String),
    /// No such pending request.
    #[error("that request is no longer waiting (decided, expired or withdrawn)")]
    NotPending,
    /// The pause could not be recorded, so it is not in force.
    #[error("the audit log could not record the pause, so it is not in force: {0}")]
    Audit(String),
}

/// Why a grant from the human's own form was not issued.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// The caveats did not pass review (the same checks as an agent's request).
    #[error("the grant is not valid: {0}")]
    Rejected(Rejection),
    /// OS authentication did not succeed; nothing was signed.
    #[error("{0}")]
    StepUp(StepUpError),
    /// Signing failed; nothing was handed out.
    #[error("signing failed: {0}")]
    Sign(#[from] signer::SignError),
    /// The audit row could not be written; nothing was handed out.
    #[error("the audit log could not record this, so nothing was handed out: {0}")]
    Audit(String),
    /// A worker thread failed.
    #[error("internal error: {0}")]
    Internal(String),
    /// Custody is frozen ("Stop all agents"), or whether it is cannot be
    /// read: nothing is signed, not even the human's own grant.
    #[error("custody is frozen (all agents stopped): nothing is signed until you unfreeze it")]
    Frozen,
    /// The session is locked or going to sleep ([`crate::session`]):
    /// nothing is signed and no OS prompt starts; the request still waits.
    #[error("{0}")]
    Session(crate::session::Hold),
}
