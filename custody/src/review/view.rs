//! The review model: what the human is shown, in ARCHITECTURE.md's order,
//! every string display-safe ([`crate::display`]); and the checks that refuse
//! a field custody would have to cut to show.

use super::{Rejection, ReviewContext};
use crate::display::{safe, MAX_FIELD_CHARS};
use crate::ipc::peer::PeerInfo;
use parley_core::caveat::Caveat;
use parley_core::money::Money;
use parley_core::quantity::describe_use;
use parley_core::{Dialect, PublicKey};
use serde::Serialize;
use serde_json::Value;

/// Who asked, as the kernel reported it. `exe` is not verified (pid reuse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requester {
    /// User name, if known; else the uid as text.
    pub user: String,
    /// Effective uid.
    pub uid: u32,
    /// Process id, if the platform reports one.
    pub pid: Option<u32>,
    /// Executable path as read at connect time (display-safe), unverified.
    pub exe: Option<String>,
    /// The process chain from `pid` up to the program that opened its
    /// session ([`crate::ipc::process_chain`]), each link checked again when
    /// the review is built and when it is shown. Unverified.
    pub chain: Vec<ChainLinkView>,
    /// The chain in one line, `claude (4242) ← node (4200) ← bash (4100) ←
    /// kitty (3900)`; empty when no link could be read.
    pub chain_line: String,
}

/// One process of [`Requester::chain`], display-safe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainLinkView {
    /// Its pid.
    pub pid: u32,
    /// What it runs ([`crate::ipc::process_chain::ProcessLink::name`]:
    /// the executable, with its script for an interpreter), display-safe.
    pub name: String,
    /// Its executable path, when readable.
    pub exe: Option<String>,
    /// Whether the pid still runs the same process (start time unchanged)
    /// when last checked.
    pub same: bool,
}

impl From<&PeerInfo> for Requester {
    fn from(p: &PeerInfo) -> Requester {
        let mut r = Requester {
            user: safe(p.user.as_deref().unwrap_or(&p.uid.to_string())),
            uid: p.uid,
            pid: p.pid,
            exe: p.exe.as_ref().map(|e| safe(&e.to_string_lossy())),
            chain: Vec::new(),
            chain_line: String::new(),
        };
        r.set_chain(&p.chain.rechecked());
        r
    }
}

impl Requester {
    /// Shows `chain` (already checked by the caller) as this requester's.
    pub fn set_chain(&mut self, chain: &crate::ipc::process_chain::ProcessChain) {
        self.chain = chain
            .links
            .iter()
            .map(|l| ChainLinkView {
                pid: l.pid,
                name: safe(&l.name),
                exe: l.exe.as_ref().map(|e| safe(&e.to_string_lossy())),
                same: l.same,
            })
            .collect();
        self.chain_line = self
            .chain
            .iter()
            .map(|l| {
                if l.same {
                    format!("{} ({})", l.name, l.pid)
                } else {
                    format!("{} ({}, exited or replaced)", l.name, l.pid)
                }
            })
            .collect::<Vec<_>>()
            .join(" ← ");
    }
}

/// The agent key as shown: short form, the human's label if any, and whether
/// this principal has granted to it before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentView {
    /// Full key text.
    pub key: String,
    /// `ed25519:` plus 10 characters.
    pub short: String,
    /// Four words from a hash of the whole key ([`crate::fingerprint`]),
    /// the same wherever this key is shown.
    pub phrase: String,
    /// The human's label for this agent, if known (display-safe).
    pub label: Option<String>,
    /// The one name every view shows ([`crate::fingerprint::agent_name`]):
    /// the label, else the four words.
    pub name: String,
    /// Whether the audit log shows an earlier grant or consent to this key.
    pub known: bool,
}

impl AgentView {
    /// Shows the label the human gives this agent now (named, renamed or
    /// unnamed since the view was made): the label and the one name move
    /// together, so the tray and notifications never show a stale name.
    pub fn relabel(&mut self, label: Option<&str>) {
        let label = label.filter(|l| !l.trim().is_empty());
        self.label = label.map(safe);
        self.name = crate::fingerprint::agent_name_of_text(&self.key, label);
    }
}

/// One effect line, §9.2 form, display-safe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectView {
    /// `create`, `update`, `delete`, `send`, `charge`, `other`.
    pub op: String,
    /// The §9.2 line: `$ charge card ••42 — 71.36 USD`.
    pub line: String,
}

/// One measure of a YEA proposal's `uses`, as the review shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UseView {
    /// The measure name (`spend`, `emails`; display-safe).
    pub measure: String,
    /// In words: money as money (`22.87 USD`), counts as `3 emails`,
    /// other measures as `5 GB of storage` (display-safe).
    pub words: String,
    /// The quantity as money, when it is a currency at its minor-unit scale.
    pub money: Option<Money>,
}

/// A caveat as shown in a grant review.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaveatView {
    /// The exact caveat that will be signed.
    pub json: Value,
    /// In plain words (display-safe).
    pub words: String,
}

/// Consent or grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// A one-shot consent for one proposal hash.
    Consent,
    /// A time-boxed grant.
    Grant,
}

/// What the human is shown, in ARCHITECTURE.md's order. Every string that
/// came from an agent or a service is display-safe ([`crate::display`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    /// Consent or grant.
    pub kind: ReviewKind,
    /// The service id (consent), or the services a grant covers.
    pub service: String,
    /// The capability (consent).
    pub capability: String,
    /// §9.2 money, or `free` (consent).
    pub cost: String,
    /// The cost in minor units, for notifications and the audit log (YEA:
    /// the `spend` measure, when it is money).
    pub cost_money: Option<Money>,
    /// The protocol the proposal was read under.
    pub dialect: Dialect,
    /// YEA: every measure the proposal reports in `uses`, in canonical
    /// order (empty for Parley, and when it reports none).
    pub uses: Vec<UseView>,
    /// low / medium / high (consent).
    pub risk: String,
    /// The undo window (`30m`) or `irreversible` (consent).
    pub undo: String,
    /// True when the proposal cannot be undone.
    pub irreversible: bool,
    /// Every effect line.
    pub effects: Vec<EffectView>,
    /// When the request (and the consent grant) expires, unix seconds.
    pub expires: i64,
    /// Who asked.
    pub requester: Requester,
    /// The agent key.
    pub agent: AgentView,
    /// The service's own summary (consent) or the agent's stated reason
    /// (grant), shown labelled as their words.
    pub their_words: String,
    /// The consent's summary differs from the proposal's own.
    pub summary_differs: bool,
    /// The proposal hash (consent).
    pub hash: String,
    /// Its first 12 characters.
    pub hash_short: String,
    /// The principal key that will sign.
    pub principal: String,
    /// The human's label for that principal (display-safe), if any.
    pub principal_label: Option<String>,
    /// Its short form (`ed25519:` plus 10 characters).
    pub principal_short: String,
    /// The caveats that will be signed.
    pub caveats: Vec<CaveatView>,
    /// A plain-language sentence of what the grant allows (grant).
    pub preview: String,
    /// Things the human should notice (look-alike characters, per without spend, …).
    pub warnings: Vec<String>,
    /// high risk or irreversible: the UI asks for a second confirmation.
    pub needs_second_confirmation: bool,
    /// What custody's audit log finds unusual about this request
    /// ([`crate::unusual`]); each reason is also in `warnings`.
    pub unusual: Vec<crate::unusual::Unusual>,
    /// What this agent has done so far ([`crate::activity`]), when known.
    pub activity: Option<crate::activity::AgentActivity>,
    /// A YEA job approval (SPEC-approval §6): the tool, its input and the
    /// phrase to type. `agent` is then the job server's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<super::job::JobView>,
    /// Why custody asks (consent): which grant it issued to this agent the
    /// proposal falls outside of, and by how much ([`super::why_asked()`]);
    /// `None` until the engine has read the grants, and for a grant review.
    pub why: Option<super::WhyAsked>,
}

impl Review {
    /// Adds what custody's own records say: each unusual finding joins the
    /// warnings (once: a reason already there is not repeated).
    pub(super) fn add_insight(
        &mut self,
        unusual: Vec<crate::unusual::Unusual>,
        activity: Option<crate::activity::AgentActivity>,
    ) {
        for u in &unusual {
            if !self.warnings.contains(&u.reason) {
                self.warnings.push(u.reason.clone());
            }
        }
        self.unusual = unusual;
        self.activity = activity;
    }
}

/// The measures of a YEA `uses`, in words, display-safe.
pub(super) fn use_views(uses: Option<&parley_core::quantity::Uses>) -> Vec<UseView> {
    uses.map(|u| {
        u.0.iter()
            .map(|(name, q)| UseView {
                measure: safe(name),
                words: safe(&describe_use(name, q)),
                money: q.as_money(),
            })
            .collect()
    })
    .unwrap_or_default()
}

pub(super) fn caveat_views(caveats: &[Caveat]) -> Vec<CaveatView> {
    caveats
        .iter()
        .map(|c| CaveatView {
            json: c.to_value(),
            words: safe(&c.describe_with(crate::local_time::when)),
        })
        .collect()
}

/// Refuses a field custody would have to cut to show: nothing is approved
/// unseen.
pub(super) fn fits(what: &str, text: &str) -> Result<(), Rejection> {
    let n = text.chars().count();
    if n > MAX_FIELD_CHARS {
        return Err(Rejection::new(
            "too_large_to_review",
            format!(
                "the {what} has {n} characters; custody shows at most {MAX_FIELD_CHARS} per \
                 field and does not ask a human to approve what it cannot show in full"
            ),
        ));
    }
    Ok(())
}

pub(super) fn principal_label(pk: &PublicKey, ctx: &ReviewContext) -> Option<String> {
    ctx.principal_labels
        .iter()
        .find(|(k, l)| k == pk && !l.trim().is_empty())
        .map(|(_, l)| safe(l))
}

pub(super) fn agent_view(agent: &PublicKey, ctx: &ReviewContext) -> AgentView {
    AgentView {
        key: agent.to_string(),
        short: agent.short(),
        phrase: crate::fingerprint::phrase(agent),
        label: ctx.agent_label.as_deref().map(safe),
        name: crate::fingerprint::agent_name(agent, ctx.agent_label.as_deref()),
        known: ctx.agent_known,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::SecretKey;
    use zeroize::Zeroizing;

    #[test]
    fn a_rename_changes_the_name_with_the_label() {
        let key = SecretKey::from_seed(&Zeroizing::new([9u8; 32])).public();
        let phrase = crate::fingerprint::phrase(&key);
        let mut v = AgentView {
            key: key.to_string(),
            short: key.short(),
            phrase: phrase.clone(),
            label: Some("old name".into()),
            name: "old name".into(),
            known: false,
        };
        v.relabel(Some("mail bot"));
        assert_eq!(
            (v.label.as_deref(), v.name.as_str()),
            (Some("mail bot"), "mail bot")
        );
        v.relabel(None);
        assert_eq!((v.label, v.name), (None, phrase));
    }
}
