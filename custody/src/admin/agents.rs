//! The agents the human has dealt with, for choosing one (the grant form)
//! or pausing one (the audit view): custody has no registry of agents, so
//! they are the keys found where the human met them — a request waiting
//! now, a decision in the audit log, a label the human gave.

use crate::audit::{Audit, AuditError, EventKind, Query};
use parley_core::PublicKey;
use serde::Serialize;
use std::collections::BTreeMap;

/// How many of the newest decisions are read: enough for every agent a
/// person deals with, bounded so the list is quick to build on a long log.
const DECISIONS_READ: u32 = 2000;

/// An agent key the human has dealt with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KnownAgent {
    /// The key.
    pub key: String,
    /// Its short form.
    pub short: String,
    /// Its four words ([`crate::fingerprint`]).
    pub phrase: String,
    /// The human's label.
    pub label: Option<String>,
    /// The one name shown for it ([`crate::fingerprint::agent_name`]).
    pub name: String,
    /// The latest audit event naming it.
    pub last_seen: Option<i64>,
    /// Whether it has a request waiting now.
    pub waiting: bool,
}

/// Every agent key the human has dealt with: those with a request in
/// `waiting` (the agent keys of the engine's pending list), those named in
/// the audit log's decisions (issued, approved or denied), and those with a
/// label in `labels` (key → label). Waiting ones first, then newest seen
/// first; each key once; a text that is not a key is left out.
pub fn known_agents(
    audit: &Audit,
    waiting: &[String],
    labels: &BTreeMap<String, String>,
) -> Result<Vec<KnownAgent>, AuditError> {
    let decisions = audit.query(&Query {
        kinds: vec![
            EventKind::GrantIssued,
            EventKind::ConsentApproved,
            EventKind::GrantDenied,
            EventKind::ConsentDenied,
        ],
        limit: Some(DECISIONS_READ),
        ..Default::default()
    })?;
    let mut agents: Vec<KnownAgent> = Vec::new();
    let mut add = |key: &str, at: Option<i64>, waiting: bool| {
        let Ok(pk) = key.parse::<PublicKey>() else {
            return;
        };
        if let Some(a) = agents.iter_mut().find(|a| a.key == key) {
            a.waiting |= waiting;
            a.last_seen = a.last_seen.max(at);
            return;
        }
        agents.push(KnownAgent {
            key: pk.to_string(),
            short: pk.short(),
            phrase: crate::fingerprint::phrase(&pk),
            label: labels.get(key).cloned(),
            name: crate::fingerprint::agent_name(&pk, labels.get(key).map(String::as_str)),
            last_seen: at,
            waiting,
        });
    };
    for key in waiting {
        add(key, None, true);
    }
    for row in &decisions {
        if let Some(a) = &row.agent {
            add(a, Some(row.at), false);
        }
    }
    for key in labels.keys() {
        add(key, None, false);
    }
    Ok(agents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::NewEvent;
    use parley_core::SecretKey;
    use zeroize::Zeroizing;

    fn key(seed: u8) -> String {
        SecretKey::from_seed(&Zeroizing::new([seed; 32]))
            .public()
            .to_string()
    }

    fn decision(audit: &mut Audit, kind: EventKind, agent: &str, at: i64) {
        audit
            .append(&NewEvent {
                agent: Some(agent.into()),
                ..NewEvent::new(kind, at)
            })
            .expect("a row");
    }

    #[test]
    fn agents_come_from_waiting_requests_decisions_and_labels_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        let (waiting, decided, labelled, other) = (key(1), key(2), key(3), key(4));
        decision(&mut audit, EventKind::GrantIssued, &decided, 100);
        decision(&mut audit, EventKind::ConsentDenied, &decided, 300);
        decision(&mut audit, EventKind::ConsentApproved, &waiting, 200);
        // Not a decision: an agent that only knocked is not one the human dealt with.
        decision(&mut audit, EventKind::RequestRejected, &other, 400);
        let labels = BTreeMap::from([
            (labelled.clone(), "backup".to_string()),
            (decided.clone(), "shopper".to_string()),
            ("not a key".to_string(), "junk".to_string()),
        ]);

        let agents = known_agents(&audit, std::slice::from_ref(&waiting), &labels).unwrap();
        let seen: Vec<(&str, Option<i64>, bool, Option<&str>)> = agents
            .iter()
            .map(|a| (a.key.as_str(), a.last_seen, a.waiting, a.label.as_deref()))
            .collect();
        assert_eq!(
            seen,
            [
                (waiting.as_str(), Some(200), true, None),
                (decided.as_str(), Some(300), false, Some("shopper")),
                (labelled.as_str(), None, false, Some("backup")),
            ]
        );
        let pk: PublicKey = decided.parse().unwrap();
        assert_eq!(agents[1].short, pk.short());
        assert_eq!(agents[1].phrase, crate::fingerprint::phrase(&pk));
    }
}
