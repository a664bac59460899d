//! The value that proves a human decided, and how.
//!
//! The signer takes nothing else. Only the engine makes one, after it has
//! checked the approver's [`Yes`] against the review (the second
//! confirmation that high-risk or irreversible requests need) and, where the
//! step-up policy asks, after the operating system authenticated the human.
//! No approver (desktop, terminal, a test) can hand the signer a yes that
//! skipped a check: the constructor is private to this crate.

use crate::approver::{Gesture, Yes};

/// A checked human decision to sign one reviewed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    yes: Yes,
    os_authenticated: bool,
    /// What was approved: the signer refuses an approval of anything else.
    subject: String,
}

impl Approval {
    /// Made by the engine only, after its checks, for the request whose
    /// [`Approval::subject_of_consent`] / [`Approval::subject_of_grant`] is `subject`.
    pub(crate) fn confirmed(yes: Yes, os_authenticated: bool, subject: String) -> Approval {
        Approval {
            yes,
            os_authenticated,
            subject,
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

    /// Whether the OS authenticated the human for this decision.
    pub fn os_authenticated(&self) -> bool {
        self.os_authenticated
    }

    /// How the human confirmed, as the audit log records it:
    /// `click`, `hold` or `terminal`, then `+second` and `+os-auth` when given.
    pub fn confirmed_by(&self) -> String {
        let mut s = match self.yes.gesture {
            Gesture::Click => "click",
            Gesture::Hold => "hold",
            Gesture::Terminal => "terminal",
        }
        .to_string();
        if self.yes.second_confirmation {
            s.push_str("+second");
        }
        if self.os_authenticated {
            s.push_str("+os-auth");
        }
        s
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
}
