//! OS authentication before signing ("step-up").
//!
//! A click can be synthesized by any client of the same X display, and a
//! terminal answer by anyone at the unlocked desk. For the decisions the
//! [`StepUpPolicy`] names, the engine therefore asks the operating system to
//! authenticate the human *after* they said yes and *before* the signer runs:
//! polkit's `CheckAuthorization` for custody's own process, with user
//! interaction, on an action installed with `auth_self` (never `_keep`, so
//! nothing is cached). The desktop's own authentication agent asks for the
//! password or fingerprint; custody never sees either. The headless daemon
//! registers polkit's text agent (`pkttyagent`) on its terminal for the
//! duration of one check ([`TextAgent`]). The prompt's message names the
//! request ([`PromptDetails`], built by the engine), and the engine asks
//! one check at a time ([`StepUpError::Busy`] for a second).
//!
//! What it stops: another display client, or another person at the unlocked
//! desktop, approving in the human's name. What it does not stop: malware
//! running as custody's own user, which could skip the check altogether.

use parley_core::money::Money;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The polkit action custody asks for before it signs (see
/// `packaging/polkit/org.parley.custody.policy`).
pub const ACTION_ID: &str = "org.parley.custody.sign";

/// The polkit action custody asks for before a change that widens what can
/// be signed or who can ask (a weaker step-up rule, more users, a paused
/// agent resumed, a key deleted, imported or replaced). Same policy file.
pub const CHANGE_ACTION_ID: &str = "org.parley.custody.change";

/// Which of custody's two polkit actions a check is for. Each has its own
/// message in the policy file, filled from the check's [`PromptDetails`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A signature: a consent or a grant (message: "… sign $(decision) …").
    Sign,
    /// A change that loosens custody (message: "… $(change) …").
    Change,
}

impl Action {
    /// The polkit action id.
    pub fn id(self) -> &'static str {
        match self {
            Action::Sign => ACTION_ID,
            Action::Change => CHANGE_ACTION_ID,
        }
    }
}

/// Longest value of one prompt detail, in shown characters: an OS dialog
/// is no place for a page of text, and a long value could push the part
/// that matters out of it. The engine's sentences cut each of their parts
/// first (`engine/prompt.rs`), so a whole decision fits.
pub const DETAIL_MAX_CHARS: usize = 190;

/// What the OS prompt says is being decided. polkit fills `$(key)` in the
/// action's message from these (as pkexec does with `$(program)`), so the
/// password dialog, drawn by the desktop and not by us, names the very
/// decision the password is for: a password typed for request A cannot
/// silently sign request B. Every value passes the display rule and is cut
/// to [`DETAIL_MAX_CHARS`]; keys are ours (never `polkit.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptDetails {
    entries: Vec<(&'static str, String)>,
}

impl PromptDetails {
    /// No details (the message's `$(…)` then read empty).
    pub fn new() -> PromptDetails {
        PromptDetails::default()
    }

    /// Adds `key` = `value`, made display-safe and bounded. A key given
    /// twice keeps its last value.
    pub fn with(mut self, key: &'static str, value: &str) -> PromptDetails {
        let shown = parley_custody_client::display::bounded(value, DETAIL_MAX_CHARS);
        self.entries.retain(|(k, _)| *k != key);
        self.entries.push((key, shown));
        self
    }

    /// The value of `key`, as it will be shown.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every entry, in the order added.
    pub fn entries(&self) -> &[(&'static str, String)] {
        &self.entries
    }
}

/// What custody logs when polkit refuses the prompt's details. polkit
/// accepts details (and so fills `$(decision)` / `$(change)`) only from
/// root or from a user the action names as its owner
/// (`org.freedesktop.policykit.owner`): a custody running as a desktop user
/// needs that user named there, or its OS prompt shows the placeholder
/// instead of the decision. The password is asked all the same.
pub const DETAILS_REFUSED: &str = "polkit refused the OS prompt's details: this user is not an \
     owner of custody's polkit actions, so the prompt cannot name what is signed (it shows \
     $(decision)). An administrator adds the user with `scripts/start-polkit.sh USER`, or \
     with <annotate key=\"org.freedesktop.policykit.owner\">unix-user:USER</annotate> in \
     each action of /usr/share/polkit-1/actions/org.parley.custody.policy";

/// What Settings, the review and `scripts/run.sh` say when custody runs as
/// root: polkit authorizes uid 0 without asking anything, so no step-up
/// rule protects an approval there.
pub const AS_ROOT: &str = "Custody runs as root (uid 0). OS authentication cannot protect \
     anything for root: the system authorizes root without asking for a password, so whatever \
     rule is chosen here, your click alone signs. Run custody as your normal desktop user for \
     real keys.";

/// `confirmed_by` of a change (or revocation) the OS authenticated.
pub const OS_AUTH: &str = "os-auth";

/// `confirmed_by` of a change made by custody running as root: polkit asks
/// root nothing, so no OS authentication protected it.
pub const ROOT_UNASKED: &str = "root: no OS authentication (polkit asks root nothing)";

/// Asks the OS, through polkit's text agent on this terminal, to
/// authenticate the human for the change `details` names: the human's own
/// commands (`parley custody unfreeze`, `parley custody revoke`). Returns
/// what the change's audit row records as `confirmed_by`; as root, polkit
/// would say yes unasked, and the row says so ([`ROOT_UNASKED`]).
pub async fn confirm_change_on_terminal(
    details: &PromptDetails,
) -> Result<&'static str, StepUpError> {
    if nix::unistd::Uid::effective().is_root() {
        return Ok(ROOT_UNASKED);
    }
    Polkit::terminal(TextAgent::pkttyagent())
        .authenticate(Action::Change, details)
        .await
        .map(|()| OS_AUTH)
}

/// [`AS_ROOT`] when custody's user is `uid` 0, else nothing.
pub fn as_root_warning(uid: u32) -> Option<&'static str> {
    (uid == 0).then_some(AS_ROOT)
}

/// How long the human has to authenticate before the check is cancelled.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Which approvals need OS authentication. The default is the safe one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum StepUpPolicy {
    /// Every consent, and every grant that allows COMMIT or UNDO.
    #[default]
    Committing,
    /// Grants that allow COMMIT or UNDO, and consents whose money reaches
    /// `amount` (minor units) of `currency`: every amount of money the
    /// proposal spends, added up. A consent with money in another currency,
    /// money custody cannot read as such, or no cost stated while an effect
    /// charges, still asks.
    Above {
        /// Minor units, e.g. 5000 for 50.00 USD.
        amount: i64,
        /// ISO currency code.
        currency: String,
    },
    /// Never. Every review then says plainly that nothing but the click
    /// stands between an approval and a signature.
    Never,
}

/// What a request is, as far as the policy cares.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A consent: every amount of money it would spend, whether some of
    /// what it uses may be money custody cannot read as such, and whether
    /// an effect charges.
    Consent {
        /// Each amount of money the proposal spends: Parley's `cost`, or
        /// every YEA `uses` measure that is money by the conventions (not
        /// only `spend`: a service may name its own).
        money: &'a [Money],
        /// Something the proposal uses may be money custody cannot weigh
        /// (a currency code at the wrong scale, a `spend` that is not money).
        unclear: bool,
        /// Whether any effect has op `charge` (Parley).
        charges: bool,
    },
    /// A grant, with whether it allows COMMIT or UNDO.
    Grant {
        /// No `verbs` caveat, or one listing COMMIT or UNDO.
        commits: bool,
    },
}

/// Whether a request needs OS authentication, with the sentence the human
/// sees before deciding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepUpNeed {
    /// Authentication is asked after Approve.
    pub required: bool,
    /// One sentence for the review.
    pub words: String,
}

impl StepUpPolicy {
    /// Parses the daemon's flag form: `committing`, `never`, or `above:50USD`.
    pub fn parse_flag(s: &str) -> Result<StepUpPolicy, String> {
        match s.trim() {
            "committing" | "default" => Ok(StepUpPolicy::Committing),
            "never" => Ok(StepUpPolicy::Never),
            other => match other.strip_prefix("above:") {
                Some(m) => Money::parse_flag(m)
                    .map(|m| StepUpPolicy::Above {
                        amount: m.amount,
                        currency: m.currency,
                    })
                    .map_err(|e| format!("--step-up above:AMOUNT: {e}")),
                None => Err(format!(
                    "--step-up takes committing, never or above:AMOUNT (e.g. above:50USD), not {other:?}"
                )),
            },
        }
    }

    /// The policy in words, for settings and start-up messages.
    pub fn describe(&self) -> String {
        match self {
            StepUpPolicy::Committing => {
                "OS authentication for every consent and every grant that allows COMMIT or UNDO"
                    .into()
            }
            StepUpPolicy::Above { amount, currency } => format!(
                "OS authentication for grants that allow COMMIT or UNDO and for consents from {}",
                Money {
                    amount: *amount,
                    currency: currency.clone()
                }
            ),
            StepUpPolicy::Never => "no OS authentication: a click or a typed answer signs".into(),
        }
    }

    /// Whether `subject` needs OS authentication under this policy.
    pub fn need(&self, subject: Subject<'_>) -> StepUpNeed {
        let required = match (self, subject) {
            (StepUpPolicy::Never, _) => false,
            (_, Subject::Grant { commits }) => commits,
            (StepUpPolicy::Committing, Subject::Consent { .. }) => true,
            (
                StepUpPolicy::Above { amount, currency },
                Subject::Consent {
                    money,
                    unclear,
                    charges,
                },
            ) => {
                if unclear || money.iter().any(|m| &m.currency != currency) {
                    true
                } else if money.is_empty() {
                    charges
                } else {
                    money
                        .iter()
                        .fold(0i64, |sum, m| sum.saturating_add(m.amount))
                        >= *amount
                }
            }
        };
        let words = match (required, self) {
            (true, _) => "After you approve, your system asks for your password (OS authentication) before anything is signed.".to_string(),
            (false, StepUpPolicy::Never) => "No OS authentication protects this approval (step-up is off in the settings): your click alone signs.".to_string(),
            (false, _) => "Your settings ask for no OS authentication for this one: your click alone signs.".to_string(),
        };
        StepUpNeed { required, words }
    }
}

/// Why OS authentication did not succeed. Nothing is signed in every case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepUpError {
    /// The system has no polkit (no system bus, or polkitd not running).
    #[error("OS authentication is not available ({0}); nothing was signed. Install and start polkit (polkitd), or turn step-up off in the settings")]
    Unavailable(String),
    /// Custody's action is not installed.
    #[error("OS authentication is not set up: custody's polkit actions ({ACTION_ID}, {CHANGE_ACTION_ID}) are not installed (reinstall Parley Custody); nothing was signed")]
    NotInstalled,
    /// No authentication agent could ask the human.
    #[error("no authentication agent could ask for your password (on a desktop, its polkit agent; for the terminal daemon, pkttyagent); nothing was signed")]
    NoAgent,
    /// The human cancelled, or the password was wrong.
    #[error("OS authentication failed or was cancelled; nothing was signed")]
    Refused,
    /// Nobody authenticated in time.
    #[error("OS authentication was not completed within {0} s; nothing was signed")]
    Timeout(u64),
    /// Another decision's OS prompt is open: one at a time, so a password
    /// typed for one request can never be taken for another.
    #[error("Another approval is waiting for your password; finish or cancel it first. This request still waits.")]
    Busy,
    /// The session is locked or going to sleep: no OS prompt starts, and
    /// one in flight is cancelled ([`crate::session`]).
    #[error("{0}")]
    Held(crate::session::Hold),
}

impl StepUpError {
    /// A short tag for the audit log.
    pub fn tag(&self) -> &'static str {
        match self {
            StepUpError::Unavailable(_) => "unavailable",
            StepUpError::NotInstalled => "not-installed",
            StepUpError::NoAgent => "no-agent",
            StepUpError::Refused => "refused",
            StepUpError::Timeout(_) => "timeout",
            StepUpError::Busy => "busy",
            StepUpError::Held(crate::session::Hold::Locked) => "session-locked",
            StepUpError::Held(crate::session::Hold::Asleep) => "going-to-sleep",
        }
    }
}

/// Asks polkit whether the human at custody's own process authenticates
/// now. One call, one prompt: the action is `auth_self`, never kept.
#[derive(Debug, Clone)]
pub struct Polkit {
    timeout: Duration,
    text_agent: Option<TextAgent>,
}

impl Polkit {
    /// Polkit through the desktop's own authentication agent.
    pub fn desktop() -> Polkit {
        Polkit {
            timeout: DEFAULT_TIMEOUT,
            text_agent: None,
        }
    }

    /// Polkit through `pkttyagent` on custody's controlling terminal,
    /// started for each check (the headless daemon).
    pub fn terminal(agent: TextAgent) -> Polkit {
        Polkit {
            timeout: DEFAULT_TIMEOUT,
            text_agent: Some(agent),
        }
    }

    /// A different time limit for the human (tests, settings).
    pub fn with_timeout(mut self, timeout: Duration) -> Polkit {
        self.timeout = timeout;
        self
    }

    /// The time limit for the human.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs one check of `action`, the prompt filled from `details`; `Ok`
    /// only when polkit says the human authenticated.
    pub async fn authenticate(
        &self,
        action: Action,
        details: &PromptDetails,
    ) -> Result<(), StepUpError> {
        self.authenticate_unless(action, details, std::future::pending())
            .await
    }

    /// [`Polkit::authenticate`], cancelled (polkit's
    /// `CancelCheckAuthorization`, the text agent stopped) as soon as
    /// `stop` resolves, with its error: the session locked, or sleep.
    pub async fn authenticate_unless(
        &self,
        action: Action,
        details: &PromptDetails,
        stop: impl std::future::Future<Output = StepUpError>,
    ) -> Result<(), StepUpError> {
        #[cfg(target_os = "linux")]
        {
            linux::authenticate(
                action,
                details,
                self.timeout,
                self.text_agent.as_ref(),
                stop,
            )
            .await
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (action, details, stop);
            Err(StepUpError::Unavailable(
                "OS authentication is implemented for Linux (polkit) only so far".into(),
            ))
        }
    }
}

/// polkit's text agent, `pkttyagent`, registered for custody's own process
/// on its controlling terminal for the length of one check.
#[derive(Debug, Clone)]
pub struct TextAgent {
    program: std::path::PathBuf,
}

impl TextAgent {
    /// `pkttyagent` from `PATH` (Debian: package `polkitd`).
    pub fn pkttyagent() -> TextAgent {
        TextAgent {
            program: "pkttyagent".into(),
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{Action, PromptDetails, StepUpError, TextAgent};
    use std::collections::HashMap;
    use std::io::Read;
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;
    use zbus_polkit::policykit1::{AuthorityProxy, CheckAuthorizationFlags, Subject};

    /// A running `pkttyagent`, stopped when dropped. It turns echo off while
    /// it asks; stopped mid-prompt (time limit) it could leave the terminal
    /// silent, so the terminal's settings from before are put back.
    struct Running {
        child: Child,
        tty: Option<(std::fs::File, nix::sys::termios::Termios)>,
    }

    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            if let Some((tty, saved)) = &self.tty {
                let _ =
                    nix::sys::termios::tcsetattr(tty, nix::sys::termios::SetArg::TCSANOW, saved);
            }
        }
    }

    /// The controlling terminal and its settings now, if there is one.
    fn terminal_settings() -> Option<(std::fs::File, nix::sys::termios::Termios)> {
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let saved = nix::sys::termios::tcgetattr(&tty).ok()?;
        Some((tty, saved))
    }

    /// How long connecting to polkit, or a text agent's registration, may take.
    const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

    /// Starts the text agent for our own pid. It closes its notify fd (here
    /// its stdout, a pipe) once it is registered: the pipe is returned to
    /// wait on.
    fn spawn(agent: &TextAgent) -> Result<(Running, std::process::ChildStdout), StepUpError> {
        let mut child = Command::new(&agent.program)
            .arg("--process")
            .arg(std::process::id().to_string())
            .arg("--notify-fd")
            .arg("1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                StepUpError::Unavailable(format!(
                    "{} could not start: {e}",
                    agent.program.display()
                ))
            })?;
        let notify = child.stdout.take().ok_or_else(|| {
            StepUpError::Unavailable("pkttyagent's notify pipe is missing".into())
        })?;
        Ok((
            Running {
                child,
                tty: terminal_settings(),
            },
            notify,
        ))
    }

    /// Starts the text agent and waits, bounded, until it is registered.
    /// EOF on the pipe means registered (or exited; 10–40 ms); an agent that
    /// exited early, or never closes the pipe, failed to register. Dropping
    /// the agent kills it, which also ends the blocked read.
    async fn start(agent: &TextAgent) -> Result<Running, StepUpError> {
        let (mut running, mut notify) = spawn(agent)?;
        let read = tokio::task::spawn_blocking(move || {
            let mut sink = Vec::new();
            let _ = (&mut notify).take(4096).read_to_end(&mut sink);
        });
        if tokio::time::timeout(SETUP_TIMEOUT, read).await.is_err() {
            return Err(StepUpError::Unavailable(format!(
                "pkttyagent did not register within {} s",
                SETUP_TIMEOUT.as_secs()
            )));
        }
        match running.child.try_wait() {
            Ok(Some(status)) => Err(StepUpError::Unavailable(format!(
                "pkttyagent could not register as the authentication agent ({status})"
            ))),
            _ => Ok(running),
        }
    }

    pub(super) async fn authenticate(
        action: Action,
        prompt: &PromptDetails,
        timeout: Duration,
        text_agent: Option<&TextAgent>,
        stop: impl std::future::Future<Output = StepUpError>,
    ) -> Result<(), StepUpError> {
        tokio::pin!(stop);
        let slow = || {
            StepUpError::Unavailable(format!(
                "the system bus did not answer within {} s",
                SETUP_TIMEOUT.as_secs()
            ))
        };
        let conn = tokio::time::timeout(SETUP_TIMEOUT, zbus::Connection::system())
            .await
            .map_err(|_| slow())?
            .map_err(|e| StepUpError::Unavailable(format!("no system bus: {e}")))?;
        let authority = tokio::time::timeout(SETUP_TIMEOUT, AuthorityProxy::new(&conn))
            .await
            .map_err(|_| slow())?
            .map_err(|e| StepUpError::Unavailable(format!("no polkit authority: {e}")))?;
        let subject = Subject::new_for_pid(std::process::id(), None, None)
            .map_err(|e| StepUpError::Unavailable(format!("custody's own process: {e}")))?;
        let agent = match text_agent {
            Some(a) => Some(start(a).await?),
            None => None,
        };
        let mut id = [0u8; 12];
        getrandom::getrandom(&mut id).map_err(|e| StepUpError::Unavailable(e.to_string()))?;
        let cancellation = format!("parley-custody-{}", parley_core::b64::encode(id));
        let details: HashMap<&str, &str> = prompt
            .entries()
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        let none = HashMap::new();
        let mut sent = &details;
        let deadline = tokio::time::Instant::now() + timeout;
        let result = loop {
            let check = authority.check_authorization(
                &subject,
                action.id(),
                sent,
                CheckAuthorizationFlags::ALLOW_USER_INTERACTION,
                &cancellation,
            );
            let answer = tokio::select! {
                a = tokio::time::timeout_at(deadline, check) => a,
                why = &mut stop => {
                    // Locked or going to sleep: the prompt goes away and
                    // nothing is signed (polkit forgets the check too).
                    let cancel = authority.cancel_check_authorization(&cancellation);
                    let _ = tokio::time::timeout(SETUP_TIMEOUT, cancel).await;
                    drop(agent);
                    return Err(why);
                }
            };
            match answer {
                Ok(Err(e)) if !sent.is_empty() && refuses_details(&e.to_string()) => {
                    // polkit takes details only from root or an owner of
                    // the action; asked without them, the prompt cannot
                    // name the decision, but the password is still asked.
                    tracing::warn!("{}", super::DETAILS_REFUSED);
                    sent = &none;
                }
                Ok(r) => break r,
                Err(_) => {
                    let _ = authority.cancel_check_authorization(&cancellation).await;
                    drop(agent);
                    return Err(StepUpError::Timeout(timeout.as_secs()));
                }
            }
        };
        drop(agent);
        match result {
            Ok(r) if r.is_authorized => Ok(()),
            Ok(r) if r.is_challenge => Err(StepUpError::NoAgent),
            Ok(_) => Err(StepUpError::Refused),
            Err(e) => {
                let text = e.to_string();
                if text.contains("not registered") {
                    Err(StepUpError::NotInstalled)
                } else if text.contains("ServiceUnknown") || text.contains("was not provided") {
                    Err(StepUpError::Unavailable("polkitd is not running".into()))
                } else {
                    Err(StepUpError::Unavailable(text))
                }
            }
        }
    }

    /// polkit's refusal of a check's details from a caller that is neither
    /// root nor an owner of the action (polkitd's
    /// `may_identity_check_authorization`, polkit 0.106 to 126 at least).
    fn refuses_details(error: &str) -> bool {
        error.contains("Only trusted callers") && error.contains("pass details")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(amount: i64) -> Money {
        Money {
            amount,
            currency: "USD".into(),
        }
    }

    #[test]
    fn the_default_asks_for_every_consent_and_committing_grant() {
        let p = StepUpPolicy::default();
        assert!(
            p.need(Subject::Consent {
                money: &[],
                unclear: false,
                charges: false
            })
            .required
        );
        assert!(p.need(Subject::Grant { commits: true }).required);
        let g = p.need(Subject::Grant { commits: false });
        assert!(!g.required);
        assert!(g.words.contains("click alone"));
    }

    #[test]
    fn above_an_amount_asks_at_and_over_it_and_for_other_currencies() {
        let p = StepUpPolicy::parse_flag("above:50USD").unwrap();
        let c = |m: &[Money], charges| {
            p.need(Subject::Consent {
                money: m,
                unclear: false,
                charges,
            })
        };
        assert!(!c(&[usd(4999)], false).required);
        assert!(c(&[usd(5000)], false).required);
        assert!(c(&[usd(2500), usd(2500)], false).required, "added up");
        let eur = Money {
            amount: 1,
            currency: "EUR".into(),
        };
        assert!(c(std::slice::from_ref(&eur), false).required);
        assert!(c(&[usd(1), eur], false).required, "one in another currency");
        assert!(!c(&[], false).required);
        assert!(c(&[], true).required, "says free but charges");
        let unclear = p.need(Subject::Consent {
            money: &[usd(1)],
            unclear: true,
            charges: false,
        });
        assert!(unclear.required, "may be money custody cannot weigh");
        assert!(p.need(Subject::Grant { commits: true }).required);
    }

    #[test]
    fn prompt_details_are_display_safe_bounded_and_keyed_once() {
        let d = PromptDetails::new()
            .with("decision", "pay \u{202e}evil\x1b[2J")
            .with("decision", &"x".repeat(500));
        assert_eq!(d.entries().len(), 1);
        let v = d.get("decision").unwrap();
        assert!(v.chars().count() < DETAIL_MAX_CHARS + 20, "{v}");
        let d = PromptDetails::new().with("decision", "pay \u{202e}evil\x1b[2J");
        let v = d.get("decision").unwrap();
        assert!(!v.contains('\u{202e}') && !v.contains('\x1b'), "{v:?}");
        assert_eq!(Action::Change.id(), CHANGE_ACTION_ID);
    }

    #[test]
    fn as_root_it_says_os_authentication_protects_nothing_and_why() {
        let w = as_root_warning(0).expect("root is warned");
        assert!(w.contains("cannot protect anything for root"), "{w}");
        assert!(w.contains("without asking for a password"), "why: {w}");
        assert!(w.contains("normal desktop user"), "{w}");
        assert_eq!(as_root_warning(1000), None);
    }

    #[test]
    fn never_says_so_plainly() {
        let n = StepUpPolicy::Never.need(Subject::Grant { commits: true });
        assert!(!n.required);
        assert!(n.words.starts_with("No OS authentication protects"));
    }

    #[test]
    fn flags_parse_or_say_what_is_expected() {
        assert_eq!(StepUpPolicy::parse_flag("never"), Ok(StepUpPolicy::Never));
        assert_eq!(
            StepUpPolicy::parse_flag("committing"),
            Ok(StepUpPolicy::Committing)
        );
        let e = StepUpPolicy::parse_flag("sometimes").unwrap_err();
        assert!(e.contains("committing, never or above:AMOUNT"));
        assert!(StepUpPolicy::parse_flag("above:lots").is_err());
    }

    #[test]
    fn policies_round_trip_as_settings() {
        for p in [
            StepUpPolicy::Committing,
            StepUpPolicy::Never,
            StepUpPolicy::Above {
                amount: 5000,
                currency: "USD".into(),
            },
        ] {
            let v = serde_json::to_value(&p).unwrap();
            assert_eq!(serde_json::from_value::<StepUpPolicy>(v).unwrap(), p);
        }
    }
}
