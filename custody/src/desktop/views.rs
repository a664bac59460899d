//! What the UI receives: plain serializable views. Public data only (keys'
//! public halves, tokens for agents, audit rows); never a secret. Audit rows
//! are evidence and stored exactly as received, so every text field is made
//! display-safe here ([`safe`]) before it reaches a window.

use crate::audit::{Event, EventKind};
use crate::display::safe;
use crate::keystore::{KeyInfo, KeySource, KeyStatus, StoreKind};
use crate::review;
use parley_core::caveat::Caveat;
use parley_core::money::Money;
use serde::Serialize;
use serde_json::Value;

/// A principal key as listed.
#[derive(Debug, Clone, Serialize)]
pub struct KeyView {
    /// The full public key, which services must trust.
    pub public: String,
    /// Its short form.
    pub short: String,
    /// The user's label (display-safe).
    pub label: String,
    /// When it entered the store.
    pub created_at: i64,
    /// Created here or imported.
    pub source: KeySource,
    /// Whether its secret is still in the store.
    pub status: KeyStatus,
}

impl From<KeyInfo> for KeyView {
    fn from(k: KeyInfo) -> KeyView {
        KeyView {
            public: k.public.to_string(),
            short: k.public.short(),
            label: safe(&k.label),
            created_at: k.created_at,
            source: k.source,
            status: k.status,
        }
    }
}

/// The key store, described for a human.
pub fn store_words(kind: &StoreKind) -> String {
    match kind {
        StoreKind::Keychain { service } => {
            format!("the OS keychain (Secret Service), entries under \"{service}\"")
        }
        StoreKind::File { dir } => format!(
            "a passphrase-encrypted file store in {} (weaker than the keychain)",
            dir.display()
        ),
    }
}

/// A caveat list (JSON) in plain words, one line per caveat, display-safe.
pub fn caveat_words(caveats: &Value) -> (Vec<String>, String) {
    let Some(list) = caveats.as_array() else {
        return (
            vec![safe(&format!("not a caveat list: {caveats}"))],
            String::new(),
        );
    };
    let parsed: Vec<Caveat> = list.iter().map(Caveat::parse).collect();
    caveat_list_words(&parsed)
}

/// Caveats already parsed (a grant just signed) in plain words, one line per
/// caveat, display-safe, and the preview sentence.
pub fn caveat_list_words(caveats: &[Caveat]) -> (Vec<String>, String) {
    (
        caveats
            .iter()
            .map(|c| safe(&c.describe_with(crate::local_time::when)))
            .collect(),
        safe(&review::preview(caveats)),
    )
}

/// One audit row for a window: every stored column under its name (see
/// [`Event`]), each text display-safe, and what custody works out for the
/// human (the agent's short form, phrase and label, the cost and undo window
/// in words, the caveats in words). The row's fields are not listed again
/// here: they come from [`Event::columns`], so a new column reaches the
/// window without a change to this view.
#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    /// The stored columns, text made display-safe ([`safe`]); `undo` is
    /// left out (it is the field below, in words).
    #[serde(flatten)]
    pub row: serde_json::Map<String, Value>,
    /// The agent key's short form (when it is a key).
    pub agent_short: Option<String>,
    /// Its four words (when it is a key).
    pub agent_phrase: Option<String>,
    /// The human's label for it.
    pub agent_label: Option<String>,
    /// The one name shown for it ([`crate::fingerprint::agent_name`]).
    pub agent_name: Option<String>,
    /// The cost, §9.2 form.
    pub cost: Option<String>,
    /// The undo window in words, or `irreversible` for consents without one.
    pub undo: Option<String>,
    /// The caveats in words.
    pub caveat_words: Vec<String>,
    /// The grant in one sentence.
    pub preview: Option<String>,
    /// The period a summary row covers (unix seconds, end exclusive).
    pub span: Option<(i64, i64)>,
}

impl EventView {
    /// Builds the view; `label` finds the human's label for an agent key.
    pub fn new(e: &Event, label: impl Fn(&str) -> Option<String>) -> EventView {
        let mut row = e.columns();
        row.remove("undo");
        for value in row.values_mut() {
            if let Value::String(text) = value {
                *text = safe(text);
            }
        }
        let ev = &e.event;
        let (caveat_words, preview) = match ev.caveats.as_deref().map(serde_json::from_str::<Value>)
        {
            Some(Ok(v)) => {
                let (w, p) = caveat_words(&v);
                (w, Some(p))
            }
            Some(Err(_)) => (vec!["(caveats not readable as JSON)".into()], None),
            None => (Vec::new(), None),
        };
        let agent_key = ev
            .agent
            .as_deref()
            .and_then(|a| a.parse::<parley_core::PublicKey>().ok());
        let consent = matches!(
            ev.kind,
            EventKind::ConsentApproved | EventKind::ConsentDenied
        );
        let agent_label = ev.agent.as_deref().and_then(&label);
        EventView {
            row,
            agent_short: agent_key.as_ref().map(|k| k.short()),
            agent_phrase: agent_key.as_ref().map(crate::fingerprint::phrase),
            agent_name: ev
                .agent
                .as_deref()
                .map(|a| crate::fingerprint::agent_name_of_text(a, agent_label.as_deref())),
            agent_label,
            cost: match (ev.cost_amount, &ev.cost_currency) {
                (Some(amount), Some(c)) => Some(safe(
                    &Money {
                        amount,
                        currency: c.clone(),
                    }
                    .to_string(),
                )),
                _ => None,
            },
            undo: match (ev.undo, consent && ev.hash.is_some()) {
                (Some(u), _) => Some(parley_core::lens::duration(u)),
                (None, true) => Some("irreversible".into()),
                (None, false) => None,
            },
            caveat_words,
            preview,
            span: ev.span_start.zip(ev.span_end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::NewEvent;

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 1,
            event: NewEvent {
                peer_uid: Some(1000),
                peer_pid: Some(42),
                peer_exe: Some("/usr/bin/py\u{202e}nohtyp".into()),
                agent: Some("ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q".into()),
                service: Some("shop.example".into()),
                capability: Some("shop.order".into()),
                hash: Some("h".into()),
                cost_amount: Some(7136),
                cost_currency: Some("USD".into()),
                risk: Some("medium".into()),
                expires: Some(1_790_000_600),
                token_id: Some("t".into()),
                caveats: Some(
                    r#"[{"svc":["shop.example"]},{"per":{"max":4000,"currency":"USD"}}]"#.into(),
                ),
                reason: Some("a\u{200b}b".into()),
                confirmed_by: Some("click+os-auth".into()),
                ..NewEvent::new(kind, 1_790_000_000)
            },
            prev: String::new(),
            row_hash: String::new(),
            cut: None,
            compacted_by: None,
        }
    }

    #[test]
    fn rows_are_display_safe_and_in_words() {
        let v = EventView::new(&event(EventKind::ConsentApproved), |_| Some("bot".into()));
        assert_eq!(v.row["peer_exe"], "/usr/bin/py\\u{202e}nohtyp");
        assert_eq!(v.row["reason"], "a\\u{200b}b");
        assert_eq!(v.row["seq"], 1);
        assert_eq!(v.row["confirmed_by"], "click+os-auth");
        assert_eq!(v.cost.as_deref(), Some("71.36 USD"));
        assert_eq!(v.undo.as_deref(), Some("irreversible"));
        assert_eq!(v.agent_label.as_deref(), Some("bot"));
        assert_eq!(v.agent_short.as_deref(), Some("ed25519:gTl3Dqh9F1…"));
        assert_eq!(v.caveat_words.len(), 2);
        assert!(v
            .preview
            .as_deref()
            .unwrap()
            .contains("up to 40.00 USD each"));
        let g = EventView::new(&event(EventKind::GrantIssued), |_| None);
        assert_eq!(g.undo, None, "grants have no undo window");
        // One flat object for the window: the stored `undo` (seconds) gives
        // way to the words, never a second `undo` key.
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text.matches("\"undo\":").count(), 1, "{text}");
        assert!(text.contains("\"undo\":\"irreversible\""), "{text}");
    }

    #[test]
    fn unreadable_caveats_are_said_so() {
        let mut e = event(EventKind::GrantIssued);
        e.event.caveats = Some("{not json".into());
        let v = EventView::new(&e, |_| None);
        assert_eq!(v.caveat_words, ["(caveats not readable as JSON)"]);
    }
}
