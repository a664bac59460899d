//! Agents as the human deals with them: pausing and resuming, the agents
//! known from the audit log, and the human's labels for them.

use super::refused;
use super::{blocking, change_auth, CallError, Caller, ErrorCode, R};
use crate::admin::{self, KnownAgent};
use crate::desktop::events::UiEvent;
use crate::desktop::permissions::WindowKind;
use crate::desktop::service::Desktop;
use crate::engine::unix_now;
use crate::stepup::PromptDetails;
use parley_core::PublicKey;
use serde::Serialize;

/// A paused agent, for the audit view (display-safe).
#[derive(Debug, Serialize)]
pub struct PauseView {
    /// The agent key.
    pub agent: String,
    /// Its short form.
    pub short: String,
    /// Its four words ([`crate::fingerprint`]).
    pub phrase: String,
    /// The human's label.
    pub label: Option<String>,
    /// The one name shown for it ([`crate::fingerprint::agent_name`]).
    pub name: String,
    /// Until when (unix seconds); `None`: until resumed.
    pub until: Option<i64>,
    /// Why (display-safe).
    pub reason: String,
    /// When it was paused.
    pub at: i64,
}

/// The paused agents, and the agents that could be paused.
#[derive(Debug, Serialize)]
pub struct PausesView {
    /// The pauses in force now.
    pub paused: Vec<PauseView>,
    /// Every agent the human has dealt with (the paused ones included).
    pub agents: Vec<KnownAgent>,
    /// When this was read.
    pub now: i64,
}

/// The longest pause with an end custody sets from the app (30 days);
/// longer is "until resumed".
const MAX_PAUSE_SECS: i64 = 30 * 24 * 3600;

/// Tells every window and the tray that the paused agents changed.
pub(super) fn paused_changed(state: &Desktop) {
    state.hub.send(UiEvent::PendingChanged);
    state.hub.send(UiEvent::PausesChanged);
    state.refresh_tray();
}

fn agent_key(agent: &str) -> R<PublicKey> {
    agent
        .trim()
        .parse()
        .map_err(|e| refuse!("not an agent key: {e}"))
}

/// Pauses an agent from the audit view: its requests
/// are refused without a prompt, and it is told why, for `secs` (none:
/// until resumed); its requests waiting now are denied.
pub async fn agent_pause(state: &Desktop, agent: String, secs: Option<i64>) -> R<PausesView> {
    let key = agent_key(&agent)?;
    if let Some(s) = secs {
        if !(1..=MAX_PAUSE_SECS).contains(&s) {
            return Err(refuse!(
                "a pause lasts from 1 second to {}; longer is \"until resumed\"",
                parley_core::lens::duration(MAX_PAUSE_SECS)
            ));
        }
    }
    // A new pause replaces the one in force: one that ends sooner would
    // loosen it, so that is a resume (which asks the OS) and a new pause.
    let e = state.core()?.engine.clone();
    let k = key.to_string();
    let pause = blocking("reading the pause", move || e.pause_of(&k).map_err(refused)).await?;
    if let Some(p) = pause {
        let new_until = secs.map(|s| unix_now().saturating_add(s));
        let sooner = match (p.until, new_until) {
            (None, Some(_)) => true,
            (Some(old), Some(new)) => new < old,
            (_, None) => false,
        };
        if sooner {
            return Err(refuse!(
                "That agent is paused for longer already. To end its pause sooner, resume it (your system asks for your password) and pause it again."
            ));
        }
    }
    let e = state.core()?.engine.clone();
    blocking("pausing the agent", move || {
        e.pause_agent(&key.to_string(), secs, "paused by the human in the app")
            .map_err(refused)
    })
    .await?;
    paused_changed(state);
    pauses_view(state).await
}

/// The agent in words for an OS prompt: by its one name, as every view
/// names it (the human's name for it, else its four words):
/// `agent "shopper"`, `agent "cactus orbit lemon frost"`.
fn agent_words(state: &Desktop, key: &PublicKey) -> String {
    named(key, state.agent_label(&key.to_string()).as_deref())
}

fn named(key: &PublicKey, label: Option<&str>) -> String {
    format!("agent \"{}\"", crate::fingerprint::agent_name(key, label))
}

/// Ends an agent's pause; its requests are shown again. A pause in force
/// ends only once the OS authenticated the human for it: resuming lets the
/// agent ask again (`agent_resumed`, `confirmed_by` says how).
pub async fn agent_resume(state: &Desktop, agent: String) -> R<PausesView> {
    let key = agent_key(&agent)?;
    let e = state.core()?.engine.clone();
    let k = key.to_string();
    let pause = blocking("reading the pause", move || e.pause_of(&k).map_err(refused)).await?;
    let confirmed_by = match pause {
        Some(_) => {
            let details = PromptDetails::new()
                .with("change", &format!("resume {}", agent_words(state, &key)));
            Some(
                change_auth::authenticate(
                    &state.core()?.engine,
                    &details,
                    "wait until its pause ends (a pause with an end lifts itself), or install and start polkit (polkitd) with your desktop's authentication agent",
                )
                .await?,
            )
        }
        None => None,
    };
    let e = state.core()?.engine.clone();
    let was = blocking("resuming the agent", move || {
        e.resume_agent_confirmed(&key.to_string(), confirmed_by)
            .map_err(refused)
    })
    .await?;
    if !was {
        return Err("That agent is not paused (its pause may have ended already).".into());
    }
    paused_changed(state);
    pauses_view(state).await
}

/// The paused agents and the agents that could be paused.
pub async fn agent_pauses(state: &Desktop) -> R<PausesView> {
    pauses_view(state).await
}

async fn pauses_view(state: &Desktop) -> R<PausesView> {
    let e = state.core()?.engine.clone();
    let pauses = blocking("reading the paused agents", move || {
        e.pauses().map_err(refused)
    })
    .await?;
    let paused = pauses
        .into_iter()
        .filter_map(|p| {
            let key: PublicKey = p.agent.parse().ok()?;
            let label = state.agent_label(&p.agent);
            Some(PauseView {
                short: key.short(),
                phrase: crate::fingerprint::phrase(&key),
                name: crate::fingerprint::agent_name(&key, label.as_deref()),
                label,
                agent: key.to_string(),
                until: p.until,
                reason: crate::display::bounded(&p.reason, 200),
                at: p.at,
            })
        })
        .collect();
    Ok(PausesView {
        paused,
        agents: known_agents(state).await?,
        now: unix_now(),
    })
}

/// Every agent key the human has dealt with ([`admin::known_agents`]):
/// waiting now, named in the audit log's decisions, or labelled.
pub(super) async fn known_agents(state: &Desktop) -> R<Vec<KnownAgent>> {
    let e = state.core()?.engine.clone();
    let waiting: Vec<String> = e
        .pending()
        .into_iter()
        .map(|p| p.review.agent.key)
        .collect();
    let labels = state.agent_labels();
    blocking("reading the audit log", move || {
        e.with_audit(|a| admin::known_agents(a, &waiting, &labels))
            .map_err(refused)
    })
    .await
}

/// Whether `window` may name `agent`: the main window any agent (its
/// audit view lists them all); a request's window (`review-<id>`, its
/// review or its grant form) only the agent of its own request, as custody served it
/// while the request waited, so a window shown for one request cannot
/// rename another agent to look like one the human trusts.
fn may_label(state: &Desktop, window: &Caller, agent: &str) -> R<()> {
    match WindowKind::of(window.label()) {
        Some(WindowKind::Main) => return Ok(()),
        Some(WindowKind::Review(_)) => {}
        None => {
            return Err(CallError::new(
                ErrorCode::NotPermitted,
                "This window may not name agents.",
            ))
        }
    }
    let asked = agent_key(agent)?;
    let Some(own) = window.request_agent(state) else {
        return Err(CallError::new(
            ErrorCode::Gone,
            "This request is no longer waiting: name its agent in the audit view.",
        ));
    };
    if own.parse::<PublicKey>().ok().as_ref() == Some(&asked) {
        Ok(())
    } else {
        Err(CallError::new(
            ErrorCode::NotPermitted,
            "A request's window names only its own request's agent; name other agents in the audit view.",
        ))
    }
}

/// Sets (or, with no label, removes) the human's label for an agent key;
/// a request's window only for its own request's agent ([`may_label`]).
pub async fn agent_label_set(
    window: &Caller,
    state: &Desktop,
    agent: String,
    label: Option<String>,
) -> R<()> {
    may_label(state, window, &agent)?;
    let e = state.core()?.engine.clone();
    blocking("naming the agent", move || {
        e.set_agent_label(&agent, label.as_deref()).map_err(refused)
    })
    .await?;
    state.reload_labels()?;
    state.hub.send(UiEvent::PendingChanged);
    state.refresh_tray();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::keys::SecretKey;
    use zeroize::Zeroizing;

    #[test]
    fn the_resume_prompt_names_the_agent_by_its_one_name() {
        let key = SecretKey::from_seed(&Zeroizing::new([7; 32])).public();
        let phrase = crate::fingerprint::phrase(&key);
        assert_eq!(named(&key, None), format!("agent \"{phrase}\""));
        assert_eq!(named(&key, Some("  ")), format!("agent \"{phrase}\""));
        let n = named(&key, Some("shopper"));
        assert_eq!(n, "agent \"shopper\"");
        assert!(!n.contains(&phrase), "one name only: {n}");
        assert!(!named(&key, Some("a\u{202e}b")).contains('\u{202e}'));
    }
}
