//! Known agents (issue 15, part 2): the human's own names for agent keys,
//! and where each key has asked from before.
//!
//! Labels live in the `agent_labels` table of the audit file, next to the
//! pauses: state, not history, but every change is also an event in the
//! chain ([`EventKind::AgentLabelled`], same transaction), so the log says
//! when a key got the name the review now shows. Keeping them here rather
//! than in the app's settings means the desktop app, the terminal approver
//! and the audit view all read the one name.

use super::event::prepare;
use super::store::append_in;
use super::{Audit, AuditError, Event, EventKind, NewEvent};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

/// The longest label, in characters (labels are shown in every review).
pub const MAX_LABEL_CHARS: usize = 64;
/// The most labels kept.
pub const MAX_LABELS: u32 = 1024;
/// The most distinct users or executables [`Audit::seen_as`] returns.
pub const MAX_SEEN: u32 = 64;

/// A label custody will not keep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// Empty, blank, or longer than [`MAX_LABEL_CHARS`].
    #[error("a label has 1 to {MAX_LABEL_CHARS} characters")]
    Length,
    /// Control, bidi or invisible characters (a label is shown as written).
    #[error("a label cannot contain control, bidi or invisible characters")]
    Hidden,
    /// [`MAX_LABELS`] keys are named already.
    #[error("at most {MAX_LABELS} agents can be named; remove a label first")]
    TooMany,
    /// The store failed.
    #[error("{0}")]
    Audit(String),
}

/// Checks a label the human typed: short visible text, shown as written
/// (so it must not hide or reorder anything).
pub fn check_label(label: &str) -> Result<(), LabelError> {
    let n = label.chars().count();
    if label.trim().is_empty() || n > MAX_LABEL_CHARS {
        return Err(LabelError::Length);
    }
    if label
        .chars()
        .any(|c| c.is_control() || crate::display::is_hidden(c))
    {
        return Err(LabelError::Hidden);
    }
    Ok(())
}

/// Where a key asked from when the human signed for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeenAs {
    /// The OS users (uids) of its signed requests.
    pub users: Vec<u32>,
    /// The executables (as read at connect time) of its signed requests.
    pub exes: Vec<String>,
}

impl Audit {
    /// Names `agent` `label` (replacing its name), or removes its name with
    /// `None`; records the change. Returns the event, or `None` when there
    /// was nothing to remove.
    pub fn set_agent_label(
        &mut self,
        agent: &str,
        label: Option<&str>,
        at: i64,
    ) -> Result<Option<Event>, LabelError> {
        let label = label.map(str::trim).filter(|l| !l.is_empty());
        if let Some(l) = label {
            check_label(l)?;
        }
        let store = |e: AuditError| LabelError::Audit(e.to_string());
        let sql = |e: rusqlite::Error| LabelError::Audit(AuditError::from(e).to_string());
        let mut ev = NewEvent::new(EventKind::AgentLabelled, at);
        ev.agent = Some(agent.to_owned());
        ev.reason = label.map(str::to_owned);
        let (ev, cut) = prepare(&ev).map_err(store)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let changed = match label {
            Some(l) => {
                let n: i64 = tx
                    .query_row(
                        "SELECT COUNT(*) FROM agent_labels WHERE agent != ?1",
                        params![agent],
                        |r| r.get(0),
                    )
                    .map_err(sql)?;
                if n >= i64::from(MAX_LABELS) {
                    return Err(LabelError::TooMany);
                }
                tx.execute(
                    "INSERT INTO agent_labels (agent, label, at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT(agent) DO UPDATE SET label = excluded.label, at = excluded.at",
                    params![agent, l, at],
                )
                .map_err(sql)?
            }
            None => tx
                .execute("DELETE FROM agent_labels WHERE agent = ?1", params![agent])
                .map_err(sql)?,
        };
        let event = if changed > 0 {
            Some(append_in(&tx, &ev, cut).map_err(store)?)
        } else {
            None
        };
        tx.commit().map_err(sql)?;
        Ok(event)
    }

    /// The human's label for `agent`, if any (as typed; make it display-safe
    /// before showing it, like everything else).
    pub fn agent_label(&self, agent: &str) -> Result<Option<String>, AuditError> {
        Ok(self
            .conn
            .query_row(
                "SELECT label FROM agent_labels WHERE agent = ?1",
                params![agent],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Every label, `(agent, label)`, by agent key.
    pub fn agent_labels(&self) -> Result<Vec<(String, String)>, AuditError> {
        let mut stmt = self
            .conn
            .prepare("SELECT agent, label FROM agent_labels ORDER BY agent LIMIT ?1")?;
        let rows = stmt.query_map(params![MAX_LABELS], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The OS users and executables `agent` asked from when the human
    /// signed for it (grants issued, consents approved), at most
    /// [`MAX_SEEN`] of each. Rows written for custody's own process
    /// (`own_exe`: a grant issued from the form records the human's side as
    /// its requester) say nothing about the agent and are left out.
    pub fn seen_as(&self, agent: &str, own_exe: Option<&str>) -> Result<SeenAs, AuditError> {
        let own = own_exe.unwrap_or("");
        let signed = [
            EventKind::GrantIssued.as_str(),
            EventKind::ConsentApproved.as_str(),
        ];
        let mut users = self.conn.prepare(
            "SELECT DISTINCT peer_uid FROM events WHERE agent = ?1 AND kind IN (?2, ?3) \
             AND peer_uid IS NOT NULL AND COALESCE(peer_exe, '') != ?5 \
             ORDER BY peer_uid LIMIT ?4",
        )?;
        let users = users
            .query_map(params![agent, signed[0], signed[1], MAX_SEEN, own], |r| {
                r.get::<_, i64>(0)
            })?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter_map(|u| u32::try_from(u).ok())
            .collect();
        let mut exes = self.conn.prepare(
            "SELECT DISTINCT peer_exe FROM events WHERE agent = ?1 AND kind IN (?2, ?3) \
             AND peer_exe IS NOT NULL AND peer_exe != ?5 ORDER BY peer_exe LIMIT ?4",
        )?;
        let exes = exes
            .query_map(params![agent, signed[0], signed[1], MAX_SEEN, own], |r| {
                r.get(0)
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SeenAs { users, exes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit() -> (tempfile::TempDir, Audit) {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Audit::open(&dir.path().join("audit.sqlite3")).expect("open");
        (dir, a)
    }

    #[test]
    fn a_label_is_set_replaced_removed_and_each_change_is_in_the_chain() {
        let (_d, mut a) = audit();
        let k = "ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q";
        assert!(a
            .set_agent_label(k, Some(" shopping bot "), 10)
            .expect("set")
            .is_some());
        assert_eq!(
            a.agent_label(k).expect("get").as_deref(),
            Some("shopping bot")
        );
        a.set_agent_label(k, Some("groceries"), 11)
            .expect("replace");
        assert_eq!(
            a.agent_labels().expect("all"),
            vec![(k.to_owned(), "groceries".to_owned())]
        );
        assert!(a.set_agent_label(k, None, 12).expect("remove").is_some());
        assert!(a.set_agent_label(k, None, 13).expect("again").is_none());
        assert_eq!(a.agent_label(k).expect("get"), None);
        let q = super::super::Query {
            kinds: vec![EventKind::AgentLabelled],
            ..Default::default()
        };
        let rows = a.query(&q).expect("query");
        assert_eq!(rows.len(), 3);
        assert!(a.verify().expect("verify").ok);
    }

    #[test]
    fn labels_that_hide_or_overflow_are_refused() {
        let (_d, mut a) = audit();
        let k = "ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q";
        assert_eq!(check_label("   "), Err(LabelError::Length));
        assert_eq!(check_label(&"x".repeat(65)), Err(LabelError::Length));
        assert_eq!(check_label("bot\u{202e}gnippohs"), Err(LabelError::Hidden));
        assert_eq!(check_label("bot\nline"), Err(LabelError::Hidden));
        assert_eq!(check_label("bot\u{200b}"), Err(LabelError::Hidden));
        assert!(check_label("Einkäufe 🛒").is_ok());
        assert!(a.set_agent_label(k, Some("a\u{2066}b"), 1).is_err());
        assert_eq!(a.agent_label(k).expect("get"), None);
    }
}
