//! The value that proves a human decided, and how, or (for one narrow
//! case) that custody itself restricted something unasked.
//!
//! The signer takes nothing else. Only the engine makes one, after it has
//! checked the approver's [`Yes`] against the review (the second
//! confirmation that high-risk or irreversible requests need) and, where the
//! step-up policy asks, after the operating system authenticated the human.
//! No approver (desktop, terminal, a test) can hand the signer a yes that
//! skipped a check: the constructors are private to this crate.
//!
//! The one approval no human gave is `Approval::unasked_revocation`:
//! custody ending an approve-for-a-while grant on freeze or when the
//! session locks ([`Unasked`]). It is made only from a
//! [`LiveShortGrant`] (which only the audit log's short-grant query
//! makes), covers only that grant's revocation, and the signer refuses it
//! for any grant or consent. The audit row says so truthfully
//! ([`Approval::confirmed_by`]: `custody, unasked: …`), never a gesture.

use crate::approver::{Gesture, Yes};
use crate::audit::LiveShortGrant;

/// Why custody ended an approve-for-a-while grant without asking anyone:
/// a revocation only restricts, like the freeze or the lock that caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unasked {
    /// The human froze custody ("Stop all agents", the app or `parley
    /// custody freeze`).
    Frozen,
    /// The session locked, and the human's setting ends short grants then.
    SessionLocked,
}

impl Unasked {
    /// The reason signed into the revocation statement (services show it).
    pub fn reason(self) -> &'static str {
        match self {
            Unasked::Frozen => "custody was frozen (all agents stopped)",
            Unasked::SessionLocked => "the session was locked",
        }
    }

    /// The audit row's `confirmed_by`: who decided (custody, asking no
    /// one) and why.
    pub fn confirmed_by(self) -> &'static str {
        match self {
            Unasked::Frozen => "custody, unasked: custody was frozen",
            Unasked::SessionLocked => "custody, unasked: the session locked",
        }
    }
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    /// A human, as the approver observed and the engine checked.
    Human { yes: Yes, os_authenticated: bool },
    /// Custody itself, asking no one: only ever a short grant's revocation.
    Custody(Unasked),
}

/// A checked decision to sign one thing: a human's, or custody's own
/// unasked revocation of a short grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    by: By,
    /// What was approved: the signer refuses an approval of anything else.
    subject: String,
}

impl Approval {
    /// Made by the engine only, after its checks, for the request whose
    /// [`Approval::subject_of_consent`] / [`Approval::subject_of_grant`] is `subject`.
    pub(crate) fn confirmed(yes: Yes, os_authenticated: bool, subject: String) -> Approval {
        Approval {
            by: By::Human {
                yes,
                os_authenticated,
            },
            subject,
        }
    }

    /// Custody's own approval to revoke `grant`, a live approve-for-a-while
    /// grant, asking no one (`why`). It covers that revocation only; the
    /// signer refuses it for any grant or consent.
    pub(crate) fn unasked_revocation(grant: &LiveShortGrant, why: Unasked) -> Approval {
        Approval {
            by: By::Custody(why),
            subject: Approval::subject_of_revocation(grant.token_id()),
        }
    }

    /// A consent is identified by its proposal hash and its agent.
    pub(crate) fn subject_of_consent(hash: &str, agent: &str) -> String {
        format!("consent|{hash}|{agent}")
    }

    /// A grant by its holder and the exact caveats to be signed.
    pub(crate) fn subject_of_grant(agent: &str, caveats: &[parley_core::Caveat]) -> String {
        let caveats: Vec<serde_json::Value> = caveats.iter().map(|c| c.to_value()).collect();
        format!("grant|{agent}|{}", serde_json::Value::Array(caveats))
    }

    /// A revocation by the grant's id.
    pub(crate) fn subject_of_revocation(grant: &str) -> String {
        format!("revoke|{grant}")
    }

    /// Whether this approval is for `subject`.
    pub(crate) fn covers(&self, subject: &str) -> bool {
        self.subject == subject
    }

    /// Whether a human decided (else custody did, unasked: only a short
    /// grant's revocation).
    pub(crate) fn by_a_human(&self) -> bool {
        matches!(self.by, By::Human { .. })
    }

    /// Whether the OS authenticated the human for this decision.
    pub fn os_authenticated(&self) -> bool {
        matches!(
            self.by,
            By::Human {
                os_authenticated: true,
                ..
            }
        )
    }

    /// How it was confirmed, as the audit log records it: `click`, `hold`
    /// or `terminal`, then `+second` and `+os-auth` when given; or, for
    /// custody's own revocation, `custody, unasked: ` and why.
    pub fn confirmed_by(&self) -> String {
        let (yes, os_authenticated) = match self.by {
            By::Human {
                yes,
                os_authenticated,
            } => (yes, os_authenticated),
            By::Custody(why) => return why.confirmed_by().to_string(),
        };
        let mut s = match yes.gesture {
            Gesture::Click => "click",
            Gesture::Hold => "hold",
            Gesture::Terminal => "terminal",
        }
        .to_string();
        if yes.second_confirmation {
            s.push_str("+second");
        }
        if os_authenticated {
            s.push_str("+os-auth");
        }
        s
    }

    /// Test only: custody's unasked approval with any subject, to show the
    /// signer refuses it for a grant or a consent even if one were made.
    #[cfg(test)]
    pub(crate) fn unasked_for_test(why: Unasked, subject: String) -> Approval {
        Approval {
            by: By::Custody(why),
            subject,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audit_words_name_every_step() {
        let yes = |gesture, second_confirmation| Yes {
            gesture,
            second_confirmation,
        };
        let a = |y, os| Approval::confirmed(y, os, "consent|h|a".into());
        assert_eq!(a(yes(Gesture::Click, false), false).confirmed_by(), "click");
        assert_eq!(
            a(yes(Gesture::Hold, true), true).confirmed_by(),
            "hold+second+os-auth"
        );
        assert_eq!(
            a(yes(Gesture::Terminal, false), true).confirmed_by(),
            "terminal+os-auth"
        );
    }

    #[test]
    fn an_approval_covers_only_what_was_approved() {
        let yes = Yes {
            gesture: Gesture::Click,
            second_confirmation: false,
        };
        let a = Approval::confirmed(yes, false, Approval::subject_of_consent("h1", "ed25519:a"));
        assert!(a.covers(&Approval::subject_of_consent("h1", "ed25519:a")));
        assert!(!a.covers(&Approval::subject_of_consent("h2", "ed25519:a")));
        assert!(!a.covers(&Approval::subject_of_consent("h1", "ed25519:b")));
    }

    #[test]
    fn custodys_own_revocation_says_so_and_why() {
        let a = Approval::unasked_for_test(Unasked::SessionLocked, "revoke|g".into());
        assert_eq!(a.confirmed_by(), "custody, unasked: the session locked");
        assert!(!a.by_a_human() && !a.os_authenticated());
        assert_eq!(
            Approval::unasked_for_test(Unasked::Frozen, "revoke|g".into()).confirmed_by(),
            "custody, unasked: custody was frozen"
        );
    }
}
