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

/// One audit row, display-safe, with words for its caveats.
#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    /// Position in the log.
    pub seq: i64,
    /// When.
    pub at: i64,
    /// What happened.
    pub kind: EventKind,
    /// The requesting peer.
    pub peer_uid: Option<u32>,
    /// Its pid.
    pub peer_pid: Option<i64>,
    /// Its executable (not verified).
    pub peer_exe: Option<String>,
    /// The agent key.
    pub agent: Option<String>,
    /// Its short form (when it is a key).
    pub agent_short: Option<String>,
    /// Its four words (when it is a key).
    pub agent_phrase: Option<String>,
    /// The human's label for it.
    pub agent_label: Option<String>,
    /// The service.
    pub service: Option<String>,
    /// The capability.
    pub capability: Option<String>,
    /// The proposal hash.
    pub hash: Option<String>,
    /// The cost, §9.2 form.
    pub cost: Option<String>,
    /// The risk.
    pub risk: Option<String>,
    /// The undo window, or `irreversible` for consents without one.
    pub undo: Option<String>,
    /// When the grant or request expires.
    pub expires: Option<i64>,
    /// The grant id.
    pub token_id: Option<String>,
    /// The caveats as stored (JSON text).
    pub caveats: Option<String>,
    /// The caveats in words.
    pub caveat_words: Vec<String>,
    /// The grant in one sentence.
    pub preview: Option<String>,
    /// Why.
    pub reason: Option<String>,
    /// The principal key.
    pub principal: Option<String>,
    /// How the human confirmed a signed decision (`click`, `click+os-auth`,
    /// `terminal`, …), or why a step-up failed.
    pub confirmed_by: Option<String>,
    /// Fields cut for length and their original sizes in bytes (JSON text,
    /// e.g. `{"hash":900000}`): the stored text ends in a cut mark.
    pub cut: Option<String>,
    /// How many requests a summary row stands for.
    pub count: Option<i64>,
    /// The period a summary row covers (unix seconds, end exclusive).
    pub span: Option<(i64, i64)>,
}

impl EventView {
    /// Builds the view; `label` finds the human's label for an agent key.
    pub fn new(e: &Event, label: impl Fn(&str) -> Option<String>) -> EventView {
        let s = |o: &Option<String>| o.as_deref().map(safe);
        let (caveat_words, preview) = match e.caveats.as_deref().map(serde_json::from_str::<Value>)
        {
            Some(Ok(v)) => {
                let (w, p) = caveat_words(&v);
                (w, Some(p))
            }
            Some(Err(_)) => (vec!["(caveats not readable as JSON)".into()], None),
            None => (Vec::new(), None),
        };
        let agent_key = e
            .agent
            .as_deref()
            .and_then(|a| a.parse::<parley_core::PublicKey>().ok());
        let agent_short = agent_key.as_ref().map(|k| k.short());
        let agent_phrase = agent_key.as_ref().map(crate::fingerprint::phrase);
        let consent = matches!(
            e.kind,
            EventKind::ConsentApproved | EventKind::ConsentDenied
        );
        EventView {
            seq: e.seq,
            at: e.at,
            kind: e.kind,
            peer_uid: e.peer_uid,
            peer_pid: e.peer_pid,
            peer_exe: s(&e.peer_exe),
            agent: s(&e.agent),
            agent_short,
            agent_phrase,
            agent_label: e.agent.as_deref().and_then(&label),
            service: s(&e.service),
            capability: s(&e.capability),
            hash: s(&e.hash),
            cost: match (e.cost_amount, &e.cost_currency) {
                (Some(amount), Some(c)) => Some(safe(
                    &Money {
                        amount,
                        currency: c.clone(),
                    }
                    .to_string(),
                )),
                _ => None,
            },
            risk: s(&e.risk),
            undo: match (e.undo, consent && e.hash.is_some()) {
                (Some(u), _) => Some(parley_core::lens::duration(u)),
                (None, true) => Some("irreversible".into()),
                (None, false) => None,
            },
            expires: e.expires,
            token_id: s(&e.token_id),
            caveats: s(&e.caveats),
            caveat_words,
            preview,
            reason: s(&e.reason),
            principal: s(&e.principal),
            confirmed_by: s(&e.confirmed_by),
            cut: s(&e.cut),
            count: e.count,
            span: e.span_start.zip(e.span_end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 1,
            at: 1_790_000_000,
            kind,
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
            undo: None,
            expires: Some(1_790_000_600),
            token_id: Some("t".into()),
            caveats: Some(
                r#"[{"svc":["shop.example"]},{"per":{"max":4000,"currency":"USD"}}]"#.into(),
            ),
            reason: Some("a\u{200b}b".into()),
            principal: None,
            prev: String::new(),
            row_hash: String::new(),
            confirmed_by: Some("click+os-auth".into()),
            cut: None,
            count: None,
            span_start: None,
            span_end: None,
            compacted_by: None,
            peer_chain: None,
        }
    }

    #[test]
    fn rows_are_display_safe_and_in_words() {
        let v = EventView::new(&event(EventKind::ConsentApproved), |_| Some("bot".into()));
        assert_eq!(v.peer_exe.as_deref(), Some("/usr/bin/py\\u{202e}nohtyp"));
        assert_eq!(v.reason.as_deref(), Some("a\\u{200b}b"));
        assert_eq!(v.cost.as_deref(), Some("71.36 USD"));
        assert_eq!(v.undo.as_deref(), Some("irreversible"));
        assert_eq!(v.agent_label.as_deref(), Some("bot"));
        assert_eq!(v.agent_short.as_deref(), Some("ed25519:gTl3Dqh9F1…"));
        assert_eq!(v.caveat_words.len(), 2);
        assert!(v.preview.unwrap().contains("up to 40.00 USD each"));
        let g = EventView::new(&event(EventKind::GrantIssued), |_| None);
        assert_eq!(g.undo, None, "grants have no undo window");
    }

    #[test]
    fn unreadable_caveats_are_said_so() {
        let mut e = event(EventKind::GrantIssued);
        e.caveats = Some("{not json".into());
        let v = EventView::new(&e, |_| None);
        assert_eq!(v.caveat_words, ["(caveats not readable as JSON)"]);
    }
}
