//! What an audit row records: the event kinds, the event to append
//! ([`NewEvent`]) and the stored row ([`Event`]), and the field bounds every
//! event passes before it is written (see "Bounds" in the [`crate::audit`]
//! docs).
//!
//! Kept apart from the chain and the store so the shape of a row, and the
//! one place that decides which fields are refused and which are cut, can be
//! read without any SQL or hashing around it.

use super::AuditError;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The largest text field of a signed or key event, in bytes (64 KiB);
/// larger is refused (see the [`crate::audit`] docs).
pub const MAX_FIELD_BYTES: usize = 64 * 1024;
/// The longest text field of any other event, in bytes (2 KiB), marker
/// included: longer is cut and its original size recorded.
pub const CUT_FIELD_BYTES: usize = 2 * 1024;
/// Ends a field that was cut (the `cut` column says by how much).
pub const CUT_MARK: &str = "…[cut]";

/// Integers are hashed as canonical JSON, which allows only ±(2^53−1).
const MAX_SAFE: i64 = parley_core::canonical::MAX_SAFE_INTEGER;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A root grant was signed.
    GrantIssued,
    /// The human denied a grant request.
    GrantDenied,
    /// A consent grant was signed.
    ConsentApproved,
    /// The human denied a consent request.
    ConsentDenied,
    /// Re-verification refused a request; it never reached the human.
    RequestRejected,
    /// A request expired while pending.
    RequestExpired,
    /// The agent cancelled a pending request.
    RequestCancelled,
    /// A principal key was created.
    KeyCreated,
    /// A principal key was imported.
    KeyImported,
    /// A principal key was deleted.
    KeyDeleted,
    /// Rejections of one peer in one hour beyond the retention policy's
    /// per-hour rows, counted into one row (`count`, `span_start..span_end`).
    RejectionsSummarized,
    /// The retention policy in effect changed (the new one is in `reason`).
    RetentionChanged,
    /// Cancelled requests (withdrawn, or the agent disconnected while they
    /// were pending) of one peer in one hour beyond the retention policy's
    /// per-hour rows, counted into one row (`count`, `span_start..span_end`).
    CancellationsSummarized,
    /// Old rejected, expired and cancelled rows (and old summaries) were
    /// compacted: `count` rows, `hash` = the digest of what they were (see
    /// [`compact`](super::Audit::compact)).
    AuditCompacted,
    /// The human approved, but OS authentication did not succeed: nothing
    /// was signed and the request stayed pending.
    StepUpFailed,
    /// The human paused an agent (`agent`; `expires` = until when, `None` =
    /// until resumed; `reason`): its requests are refused unseen.
    AgentPaused,
    /// The human resumed a paused agent.
    AgentResumed,
    /// The human named an agent key (`agent`; `reason` = the label, or
    /// `None` when the label was removed).
    AgentLabelled,
    /// The human saved settings that loosen custody (`reason`: every such
    /// change, in words); `confirmed_by` says how the OS vouched for it
    /// (`os-auth`, or that running as root nothing was asked).
    SettingsLoosened,
    /// The human froze custody ("Stop all agents"; `reason`): every pending
    /// request was denied and every new one is refused unseen.
    CustodyFrozen,
    /// The human unfroze custody after OS authentication (`confirmed_by`;
    /// `count` = the requests refused while frozen).
    CustodyUnfrozen,
    /// A live grant was revoked (`token_id`; `reason`; `hash` = the
    /// signed revocation statement's id): by the human after OS
    /// authentication, or, for an approve-for-a-while grant only, by custody
    /// itself on freeze or lock (`confirmed_by` = `custody, unasked: …`).
    GrantRevoked,
    /// An "approve for a while" choice was refused (`reason`: why; the
    /// request's own fields): nothing was signed.
    ShortGrantRefused,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 23] = [
        EventKind::GrantIssued,
        EventKind::GrantDenied,
        EventKind::ConsentApproved,
        EventKind::ConsentDenied,
        EventKind::RequestRejected,
        EventKind::RequestExpired,
        EventKind::RequestCancelled,
        EventKind::KeyCreated,
        EventKind::KeyImported,
        EventKind::KeyDeleted,
        EventKind::RejectionsSummarized,
        EventKind::RetentionChanged,
        EventKind::CancellationsSummarized,
        EventKind::AuditCompacted,
        EventKind::StepUpFailed,
        EventKind::AgentPaused,
        EventKind::AgentResumed,
        EventKind::AgentLabelled,
        EventKind::SettingsLoosened,
        EventKind::CustodyFrozen,
        EventKind::CustodyUnfrozen,
        EventKind::GrantRevoked,
        EventKind::ShortGrantRefused,
    ];

    /// The stored (and `--json`) name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::GrantIssued => "grant_issued",
            EventKind::GrantDenied => "grant_denied",
            EventKind::ConsentApproved => "consent_approved",
            EventKind::ConsentDenied => "consent_denied",
            EventKind::RequestRejected => "request_rejected",
            EventKind::RequestExpired => "request_expired",
            EventKind::RequestCancelled => "request_cancelled",
            EventKind::KeyCreated => "key_created",
            EventKind::KeyImported => "key_imported",
            EventKind::KeyDeleted => "key_deleted",
            EventKind::RejectionsSummarized => "rejections_summarized",
            EventKind::RetentionChanged => "retention_changed",
            EventKind::CancellationsSummarized => "cancellations_summarized",
            EventKind::AuditCompacted => "audit_compacted",
            EventKind::StepUpFailed => "step_up_failed",
            EventKind::AgentPaused => "agent_paused",
            EventKind::AgentResumed => "agent_resumed",
            EventKind::AgentLabelled => "agent_labelled",
            EventKind::SettingsLoosened => "settings_loosened",
            EventKind::CustodyFrozen => "custody_frozen",
            EventKind::CustodyUnfrozen => "custody_unfrozen",
            EventKind::GrantRevoked => "grant_revoked",
            EventKind::ShortGrantRefused => "short_grant_refused",
        }
    }

    /// Rows that record a signature or a key: stored exactly or not at all
    /// (never cut, never summarized, never compacted).
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            EventKind::GrantIssued
                | EventKind::ConsentApproved
                | EventKind::KeyCreated
                | EventKind::KeyImported
                | EventKind::KeyDeleted
                | EventKind::GrantRevoked
        )
    }

    /// Rows the retention policy may compact once they are old: what an
    /// agent caused without a signature. Never a signed, key, denial,
    /// policy or compaction row.
    pub fn is_compactable(self) -> bool {
        matches!(
            self,
            EventKind::RequestRejected
                | EventKind::RequestExpired
                | EventKind::RequestCancelled
                | EventKind::RejectionsSummarized
                | EventKind::CancellationsSummarized
        )
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown event kind name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind {0:?}; known kinds: grant_issued, grant_denied, consent_approved, consent_denied, request_rejected, request_expired, request_cancelled, key_created, key_imported, key_deleted, rejections_summarized, retention_changed, cancellations_summarized, audit_compacted, step_up_failed, agent_paused, agent_resumed, agent_labelled, settings_loosened, custody_frozen, custody_unfrozen, grant_revoked, short_grant_refused")]
pub struct UnknownKind(pub String);

impl FromStr for EventKind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Self, UnknownKind> {
        EventKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// What a row says: the event to append, and (inside [`Event`]) what every
/// stored row holds besides its place in the chain. The fields are defined
/// here only; the chain hash, the CSV columns, the insert and the app's view
/// all take them from this struct's serialization. Every field but `kind`
/// and `at` is optional; text is stored exactly as given (bounded to
/// [`MAX_FIELD_BYTES`]). Build one with
/// `NewEvent { agent: Some(..), ..NewEvent::new(kind, now) }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewEvent {
    /// When (unix seconds).
    pub at: i64,
    /// What happened.
    pub kind: EventKind,
    /// The requesting peer's uid (from the socket).
    pub peer_uid: Option<u32>,
    /// The requesting peer's pid.
    pub peer_pid: Option<i64>,
    /// The requesting peer's executable path (not verified).
    pub peer_exe: Option<String>,
    /// The agent key (`ed25519:…`).
    pub agent: Option<String>,
    /// The service id.
    pub service: Option<String>,
    /// The capability.
    pub capability: Option<String>,
    /// The proposal hash.
    pub hash: Option<String>,
    /// Cost amount in minor units.
    pub cost_amount: Option<i64>,
    /// Cost currency.
    pub cost_currency: Option<String>,
    /// Risk (low/medium/high).
    pub risk: Option<String>,
    /// Undo window in seconds; `None` = irreversible (or not applicable).
    pub undo: Option<i64>,
    /// When the grant or request expires (unix seconds).
    pub expires: Option<i64>,
    /// The grant id: b64url(SHA-256(root block signature)), computed by the caller.
    pub token_id: Option<String>,
    /// The caveats, as JSON text.
    pub caveats: Option<String>,
    /// Why (a rejection reason, a denial note, a key label).
    pub reason: Option<String>,
    /// The principal key.
    pub principal: Option<String>,
    /// How the human confirmed a signed decision, set by the engine (free
    /// text: `click`, `click+second`, `click+os-auth`, `terminal`,
    /// `terminal+os-auth`; for a failed step-up, why it failed; for
    /// custody's own revocation of a short grant, `custody, unasked: ` and
    /// why, [`crate::approval::Unasked::confirmed_by`]).
    pub confirmed_by: Option<String>,
    /// How many requests this row stands for (summary rows; `None` = one).
    pub count: Option<i64>,
    /// Start of the period a summary row covers (unix seconds, inclusive).
    pub span_start: Option<i64>,
    /// End of that period (unix seconds, exclusive).
    pub span_end: Option<i64>,
    /// The requesting peer's process chain, as JSON (format 3; see
    /// [`crate::ipc::process_chain::ProcessChain::to_audit_text`]).
    pub peer_chain: Option<String>,
    /// Set only on the `grant_issued` row of an approve-for-a-while grant
    /// (format 4): the minutes the human chose. Written by the engine's
    /// short-grant path alone, never from anything an agent sent, and the
    /// only way custody recognises a short grant (to end it on freeze or
    /// lock, to label it): never the `reason`, which can carry an agent's
    /// words.
    pub for_a_while: Option<i64>,
}

impl NewEvent {
    /// An event with only a kind and a time.
    pub fn new(kind: EventKind, at: i64) -> NewEvent {
        NewEvent {
            at,
            kind,
            peer_uid: None,
            peer_pid: None,
            peer_exe: None,
            agent: None,
            service: None,
            capability: None,
            hash: None,
            cost_amount: None,
            cost_currency: None,
            risk: None,
            undo: None,
            expires: None,
            token_id: None,
            caveats: None,
            reason: None,
            principal: None,
            confirmed_by: None,
            count: None,
            span_start: None,
            span_end: None,
            peer_chain: None,
            for_a_while: None,
        }
    }
}

/// The columns of a stored row, in the order every export writes them: the
/// CSV header, the keys of a JSON Lines export and of `parley audit --json`.
/// It is the order in which the columns joined the log, kept so that an
/// export reads the same from one version to the next (the fields
/// themselves are defined once, in [`NewEvent`] and [`Event`]; a test keeps
/// this list complete).
pub const COLUMNS: &str = "seq,at,kind,peer_uid,peer_pid,peer_exe,agent,service,capability,hash,cost_amount,cost_currency,risk,undo,expires,token_id,caveats,reason,principal,prev,row_hash,confirmed_by,cut,count,span_start,span_end,compacted_by,peer_chain,for_a_while";

/// A stored event: what it says ([`NewEvent`]) and its place in the chain.
/// Serializes as one flat object, its keys in [`COLUMNS`] order (`--json`
/// and JSONL export).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Position in the log, from 1, without gaps.
    pub seq: i64,
    /// What the row says.
    pub event: NewEvent,
    /// The previous row's `row_hash` ([`super::GENESIS`] for row 1).
    pub prev: String,
    /// This row's hash (see [`Event::compute_row_hash`]).
    pub row_hash: String,
    /// The fields that were cut for length and their original sizes in
    /// bytes, as canonical JSON (`{"hash":900000}`); `None` when nothing was.
    pub cut: Option<String>,
    /// Set when the row was compacted: the `seq` of the
    /// [`EventKind::AuditCompacted`] row that did it. Its text fields are
    /// gone; `seq, at, kind, peer_uid, count, span_*, prev, row_hash` stay.
    /// Not part of the row's hash (it is set afterwards); the compaction
    /// row's digest vouches for it.
    pub compacted_by: Option<i64>,
}

/// A stored event reads as what it says: `row.kind`, `row.agent`. The
/// event's fields are not copied into `Event` (they are defined once, in
/// [`NewEvent`]), so this is how code gets at them without naming the
/// nesting.
impl std::ops::Deref for Event {
    type Target = NewEvent;
    fn deref(&self) -> &NewEvent {
        &self.event
    }
}

impl std::ops::DerefMut for Event {
    fn deref_mut(&mut self) -> &mut NewEvent {
        &mut self.event
    }
}

impl Event {
    /// The row as one JSON object under its column names, in [`COLUMNS`]
    /// order (what JSONL export writes), from which the hash, the CSV row
    /// and the insert take their fields, so none of them lists the fields
    /// again.
    pub fn columns(&self) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::Value;
        let mut fields = match serde_json::to_value(&self.event) {
            Ok(Value::Object(m)) => m,
            // Plain fields with string keys: serializing cannot fail or be
            // anything but an object.
            _ => unreachable!("an audit event serializes to a JSON object"),
        };
        fields.insert("seq".into(), self.seq.into());
        fields.insert("prev".into(), self.prev.clone().into());
        fields.insert("row_hash".into(), self.row_hash.clone().into());
        fields.insert("cut".into(), self.cut.clone().into());
        fields.insert("compacted_by".into(), self.compacted_by.into());
        let mut ordered = serde_json::Map::with_capacity(fields.len());
        for name in COLUMNS.split(',') {
            if let Some(value) = fields.remove(name) {
                ordered.insert(name.to_string(), value);
            }
        }
        // Nothing is left while COLUMNS is complete (a test checks it); a
        // field added without its column still leaves custody, last.
        ordered.extend(fields);
        ordered
    }
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.columns().serialize(s)
    }
}

/// Applies the field bounds of the [`crate::audit`] docs: refuses out-of-range
/// integers and oversized fields of exact kinds, cuts the oversized fields of
/// every other kind. Returns the event to store and its `cut` record.
pub(super) fn prepare(ev: &NewEvent) -> Result<(NewEvent, Option<String>), AuditError> {
    check_ints(ev)?;
    let mut ev = ev.clone();
    let exact = ev.kind.is_exact();
    let mut cut = serde_json::Map::new();
    let texts: [(&'static str, &mut Option<String>); 13] = [
        ("peer_exe", &mut ev.peer_exe),
        ("agent", &mut ev.agent),
        ("service", &mut ev.service),
        ("capability", &mut ev.capability),
        ("hash", &mut ev.hash),
        ("cost_currency", &mut ev.cost_currency),
        ("risk", &mut ev.risk),
        ("token_id", &mut ev.token_id),
        ("caveats", &mut ev.caveats),
        ("reason", &mut ev.reason),
        ("principal", &mut ev.principal),
        ("confirmed_by", &mut ev.confirmed_by),
        ("peer_chain", &mut ev.peer_chain),
    ];
    for (field, value) in texts {
        let Some(v) = value else { continue };
        if exact {
            if v.len() > MAX_FIELD_BYTES {
                return Err(AuditError::FieldTooLong {
                    field,
                    len: v.len(),
                });
            }
        } else if v.len() > CUT_FIELD_BYTES {
            cut.insert(field.into(), v.len().into());
            *v = cut_text(v);
        }
    }
    let cut = if cut.is_empty() {
        None
    } else {
        Some(
            parley_core::canonical::canonical(&serde_json::Value::Object(cut)).map_err(|e| {
                AuditError::OutOfRange {
                    field: "cut",
                    detail: e.to_string(),
                }
            })?,
        )
    };
    Ok((ev, cut))
}

/// The first bytes of `v` (at a character boundary) and [`CUT_MARK`], at
/// most [`CUT_FIELD_BYTES`] in all.
fn cut_text(v: &str) -> String {
    let mut end = CUT_FIELD_BYTES - CUT_MARK.len();
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT_MARK}", &v[..end])
}

/// Integer bounds (canonical JSON hashes only ±(2^53−1)).
fn check_ints(ev: &NewEvent) -> Result<(), AuditError> {
    let ints: [(&'static str, Option<i64>); 9] = [
        ("at", Some(ev.at)),
        ("peer_pid", ev.peer_pid),
        ("cost_amount", ev.cost_amount),
        ("undo", ev.undo),
        ("expires", ev.expires),
        ("count", ev.count),
        ("span_start", ev.span_start),
        ("span_end", ev.span_end),
        ("for_a_while", ev.for_a_while),
    ];
    for (field, value) in ints {
        if let Some(v) = value {
            if !(-MAX_SAFE..=MAX_SAFE).contains(&v) {
                return Err(AuditError::OutOfRange {
                    field,
                    detail: format!("{v} is outside ±(2^53−1)"),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in EventKind::ALL {
            assert_eq!(k.as_str().parse::<EventKind>().unwrap(), k);
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::String(k.as_str().into())
            );
        }
        assert!("grant".parse::<EventKind>().is_err());
    }

    #[test]
    fn cuts_end_on_a_character_boundary_with_the_mark() {
        let long = "é".repeat(CUT_FIELD_BYTES);
        let c = cut_text(&long);
        assert!(c.len() <= CUT_FIELD_BYTES && c.ends_with(CUT_MARK));
        let (ev, cut) = prepare(&NewEvent {
            hash: Some(long.clone()),
            ..NewEvent::new(EventKind::RequestRejected, 1)
        })
        .unwrap();
        assert_eq!(ev.hash.as_deref(), Some(c.as_str()));
        assert_eq!(
            cut.as_deref(),
            Some(format!("{{\"hash\":{}}}", long.len()).as_str())
        );
    }
}
