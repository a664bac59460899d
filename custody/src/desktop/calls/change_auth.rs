//! OS authentication before a change that loosens custody
//! ([`crate::desktop::loosening`]): a weaker step-up rule, more agents who
//! may ask, higher limits, a paused agent resumed, a principal key deleted,
//! imported or added next to another. The UI only shows which changes ask;
//! these calls are where it is enforced.
//!
//! The check is polkit's change action for custody's own process, its
//! prompt naming the change ([`Engine::authenticate_change`]). Only `Ok`
//! lets the change through; every failure is a refusal with code
//! `not_authenticated` and a sentence that says why and, when the system
//! cannot authenticate at all, how to make the change without it (as the
//! human, while custody is stopped). polkit authorizes root without asking,
//! so custody running as root does not ask at all (polkit running or not):
//! the change goes through and its audit row says that nothing protected it.

use super::{CallError, ErrorCode, R};
use crate::engine::Engine;
use crate::stepup::{PromptDetails, StepUpError, OS_AUTH, ROOT_UNASKED};

/// Asks the OS to authenticate the human for `details` (its `change` says
/// what, in words). Returns what the change's audit row records as
/// `confirmed_by`. `without` completes "To make this change without it, …"
/// for a system that cannot authenticate.
pub async fn authenticate(
    engine: &Engine,
    details: &PromptDetails,
    without: &str,
) -> R<&'static str> {
    let what = details.get("change").unwrap_or("this change").to_string();
    if nix::unistd::Uid::effective().is_root() {
        // polkit would say yes without a prompt; without polkit the answer
        // for root is the same: nothing here can protect anything from root.
        tracing::warn!(
            "a change that loosens custody was made as root, with no OS authentication: {what}"
        );
        return Ok(ROOT_UNASKED);
    }
    match engine.authenticate_change(details).await {
        Ok(()) => Ok(OS_AUTH),
        Err(e) => {
            tracing::warn!("a change that loosens custody was refused: {}", e.tag());
            Err(refusal(&what, &e, without))
        }
    }
}

/// The refusal for a change the OS did not authenticate.
fn refusal(what: &str, e: &StepUpError, without: &str) -> CallError {
    let unavailable = |why: &str| {
        format!(
            "To {what}, custody needs OS authentication, which is not available here ({why}); \
             nothing changed. To make this change without it, {without}."
        )
    };
    let message = match e {
        StepUpError::Unavailable(why) => unavailable(why),
        StepUpError::NotInstalled => {
            unavailable("custody's polkit actions are not installed; reinstalling Parley Custody puts them back")
        }
        StepUpError::NoAgent => unavailable("no authentication agent answered to ask for your password"),
        StepUpError::Timeout(secs) => format!(
            "OS authentication was not completed within {secs} s: nothing changed (custody was asked to {what})."
        ),
        StepUpError::Refused => format!(
            "OS authentication failed or was cancelled: nothing changed (custody was asked to {what})."
        ),
        StepUpError::Held(crate::session::Hold::Locked) => format!(
            "No OS authentication starts while the screen is locked: unlock it, then try again. Nothing changed (custody was asked to {what})."
        ),
        StepUpError::Held(crate::session::Hold::Asleep) => format!(
            "OS authentication was cancelled because the computer is going to sleep: nothing changed (custody was asked to {what})."
        ),
        // Another OS prompt is open (one at a time): this change waits for
        // nothing; the human asks again once that one is answered.
        StepUpError::Busy => {
            return CallError::new(
                ErrorCode::Busy,
                format!("Another OS authentication prompt is open: answer it, then try again. Nothing changed (custody was asked to {what})."),
            )
        }
    };
    CallError::new(ErrorCode::NotAuthenticated, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_system_without_polkit_says_how_to_make_the_change_otherwise() {
        let e = refusal(
            "turn OS authentication off for approvals",
            &StepUpError::NoAgent,
            "quit Parley Custody and edit /home/ana/.local/share/parley-custody/settings.json as yourself",
        );
        assert_eq!(e.code, ErrorCode::NotAuthenticated);
        assert!(e.message.starts_with("To turn OS authentication off for approvals, custody needs OS authentication, which is not available here (no authentication agent"), "{}", e.message);
        assert!(
            e.message
                .ends_with("edit /home/ana/.local/share/parley-custody/settings.json as yourself."),
            "{}",
            e.message
        );
        let wrong = refusal("resume agent \"a b c d\"", &StepUpError::Refused, "unused");
        assert_eq!(wrong.code, ErrorCode::NotAuthenticated);
        assert!(wrong.message.contains("nothing changed") && !wrong.message.contains("unused"));
        assert_eq!(
            serde_json::to_value(&wrong).unwrap()["code"],
            "not_authenticated"
        );
    }
}
