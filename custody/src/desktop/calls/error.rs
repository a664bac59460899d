//! Why a call from the UI was refused, as the window receives it: a stable
//! `code` a window can act on (a request that is gone closes its review, a
//! busy custody can be asked again) and a sentence for the human. Sent as
//! `{"id": …, "err": {"code": "gone", "message": "…"}}` on the UI channel.

use crate::admin::{ExportError, KeyChangeError};
use crate::engine::{DecideError, PauseError};
use serde::Serialize;

/// What kind of refusal: the UI acts on the code, never on the sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The window's request was not one custody understands (unknown call,
    /// missing or mistyped arguments, an id that is not an id).
    BadRequest,
    /// This window may not make this call (see `permissions`).
    NotPermitted,
    /// The request the call is about is no longer waiting: decided,
    /// expired, or withdrawn by the agent.
    Gone,
    /// Custody is still busy with this window's earlier calls.
    Busy,
    /// The call did not finish in time (a locked keychain, a slow disk).
    Timeout,
    /// Custody's core did not start (the key store or the audit log could
    /// not be opened); Settings says why.
    NotRunning,
    /// Custody refused or could not do what was asked; the message says why.
    Refused,
    /// The change loosens custody and the OS did not authenticate the human
    /// for it (no polkit or no authentication agent here, a wrong password,
    /// a cancelled or unanswered prompt): nothing changed; the message says
    /// why and how to make the change otherwise.
    NotAuthenticated,
}

/// A refused call: its [`ErrorCode`] and a sentence for the human
/// (display-safe where it quotes anything from outside).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    /// What kind of refusal.
    pub code: ErrorCode,
    /// What happened, for the human.
    pub message: String,
}

impl CallError {
    /// A refusal of kind `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> CallError {
        CallError {
            code,
            message: message.into(),
        }
    }
}

/// Custody's own sentences (the engine's, the key store's, the audit
/// log's) are refusals unless a call says otherwise.
impl From<String> for CallError {
    fn from(message: String) -> CallError {
        CallError::new(ErrorCode::Refused, message)
    }
}

/// A decision the engine could not carry out: `gone` when the request was
/// decided, expired or withdrawn meanwhile (the review closes), else
/// `refused` with the engine's sentence.
impl From<DecideError> for CallError {
    fn from(e: DecideError) -> CallError {
        let code = match e {
            DecideError::NotPending => ErrorCode::Gone,
            // Another decision's OS prompt is open; this request still waits.
            DecideError::StepUp(crate::stepup::StepUpError::Busy) => ErrorCode::Busy,
            // The OS could not ask for the password at all: the review says
            // what happened and what to do, in the human's words.
            DecideError::StepUp(ref s @ crate::stepup::StepUpError::NoAgent)
            | DecideError::StepUp(ref s @ crate::stepup::StepUpError::Unavailable(_))
            | DecideError::StepUp(ref s @ crate::stepup::StepUpError::NotInstalled) => {
                return CallError::new(ErrorCode::NotAuthenticated, cannot_ask(s));
            }
            _ => ErrorCode::Refused,
        };
        CallError::new(code, e.to_string())
    }
}

/// What the review says when the OS could not ask for the password: what
/// happened, that nothing was signed and the request still waits, and what
/// the human can do (sentence case, whole sentences).
pub fn cannot_ask(e: &crate::stepup::StepUpError) -> String {
    use crate::stepup::StepUpError;
    let what = match e {
        StepUpError::NoAgent => {
            "Custody could not ask for your password: no authentication agent is running in \
             this session."
                .to_string()
        }
        StepUpError::NotInstalled => "Custody could not ask for your password: its polkit \
             actions are not installed (reinstall Parley Custody)."
            .to_string(),
        other => format!("Custody could not ask for your password: {other}."),
    };
    format!(
        "{what} Nothing was signed, and the request still waits. Start your desktop's \
         authentication agent (for example polkit-gnome-authentication-agent-1, lxpolkit or \
         polkit-kde-authentication-agent-1) and approve again, or decide at a terminal: quit \
         the app and run parley-custodyd --approver terminal, which asks for your password \
         there."
    )
}

/// A pause (or deny-and-pause) the engine could not carry out, coded as
/// for [`DecideError`].
impl From<PauseError> for CallError {
    fn from(e: PauseError) -> CallError {
        let code = match e {
            PauseError::NotPending => ErrorCode::Gone,
            _ => ErrorCode::Refused,
        };
        CallError::new(code, e.to_string())
    }
}

/// A key change custody could not make (the key store's reason: a locked
/// keychain, a wrong confirmation, a key already there) or made without
/// its audit row (the sentence says the change stands): both `refused`,
/// no other code fits, and the sentence says what to do.
impl From<KeyChangeError> for CallError {
    fn from(e: KeyChangeError) -> CallError {
        CallError::new(ErrorCode::Refused, e.to_string())
    }
}

/// An export not written: a format other than `csv` and `jsonl` is the
/// window's mistake (`bad_request`); a folder or file that cannot be
/// written is `refused`, with the path.
impl From<ExportError> for CallError {
    fn from(e: ExportError) -> CallError {
        let code = match e {
            ExportError::Format(_) => ErrorCode::BadRequest,
            _ => ErrorCode::Refused,
        };
        CallError::new(code, e.to_string())
    }
}

/// Custody's own error as a refusal (for `map_err`).
pub fn refused(e: impl std::fmt::Display) -> CallError {
    CallError::new(ErrorCode::Refused, e.to_string())
}

impl From<&str> for CallError {
    fn from(message: &str) -> CallError {
        CallError::new(ErrorCode::Refused, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_sent_as_code_and_message() {
        let e = CallError::new(ErrorCode::NotRunning, "custody is not running: locked");
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"code": "not_running", "message": "custody is not running: locked"})
        );
        assert_eq!(e.to_string(), "custody is not running: locked");
        let from: CallError = String::from("no").into();
        assert_eq!(from.code, ErrorCode::Refused);
        assert_eq!(
            CallError::from(DecideError::NotPending).code,
            ErrorCode::Gone
        );
        assert_eq!(
            CallError::from(PauseError::NotPending).code,
            ErrorCode::Gone
        );
        assert_eq!(
            CallError::from(DecideError::NotAGrant).code,
            ErrorCode::Refused
        );
    }

    #[test]
    fn no_authentication_agent_says_what_happened_and_what_to_do() {
        let e = CallError::from(DecideError::StepUp(crate::stepup::StepUpError::NoAgent));
        assert_eq!(e.code, ErrorCode::NotAuthenticated);
        assert!(
            e.message
                .starts_with("Custody could not ask for your password: no authentication agent"),
            "{}",
            e.message
        );
        for what in [
            "Nothing was signed",
            "still waits",
            "lxpolkit",
            "--approver terminal",
        ] {
            assert!(e.message.contains(what), "{what}: {}", e.message);
        }
        let busy = CallError::from(DecideError::StepUp(crate::stepup::StepUpError::Busy));
        assert_eq!(busy.code, ErrorCode::Busy);
    }

    #[test]
    fn a_key_change_custody_could_not_make_is_refused_with_its_sentence() {
        let store = KeyChangeError::Store(crate::keystore::KeystoreError::ConfirmationMismatch(
            "ed25519:A".into(),
        ));
        let sentence = store.to_string();
        let e = CallError::from(store);
        assert_eq!((e.code, e.message), (ErrorCode::Refused, sentence));
    }

    #[test]
    fn an_export_in_an_unknown_format_is_a_bad_request() {
        let format = "xml".parse::<crate::admin::ExportFormat>().unwrap_err();
        let sentence = format.to_string();
        let e = CallError::from(format);
        assert_eq!((e.code, e.message), (ErrorCode::BadRequest, sentence));
        let folder = ExportError::Folder {
            dir: "/nowhere".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert_eq!(CallError::from(folder).code, ErrorCode::Refused);
    }
}
