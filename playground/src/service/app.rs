//! What a service does, apart from the protocol: the [`App`] trait.
//!
//! The protocol engine ([`super::Service`]) owns everything the spec
//! requires of every service — framing, authorization, hashes, expiry, spend,
//! idempotency, undo bookkeeping, budgets. An app only describes itself
//! (§4.1), answers ASKs (§4.2), plans INTENTs into [`Plan`]s or a
//! clarification (§4.3), and applies or reverts a plan's action when the
//! engine says so (§4.4, §4.5). An app never sees a grant or a proof.

use super::error::ParleyError;
use parley_core::money::Money;
use parley_core::quantity::Uses;
use parley_core::{Dialect, PublicKey, RiskLevel};
use serde_json::{json, Map, Value};

/// The service's identity (§4.1 `service`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceInfo {
    /// The audience id; stable, proofs are bound to it (§6.5).
    pub id: String,
    /// A human name.
    pub name: String,
    /// One or two sentences for the model.
    pub summary: String,
}

/// `ask` or `intent` (§1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapabilityKind {
    /// Read-only.
    Ask,
    /// Produces proposals.
    Intent,
}

impl CapabilityKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CapabilityKind::Ask => "ask",
            CapabilityKind::Intent => "intent",
        }
    }
}

/// One capability entry of a BRIEF (§4.1), params in the compact schema (§4.1.1).
#[derive(Debug, Clone, PartialEq)]
pub struct Capability {
    /// The name, e.g. `shop.order`.
    pub name: String,
    /// Ask or intent.
    pub kind: CapabilityKind,
    /// What it does.
    pub summary: String,
    /// The compact parameter schema (an object).
    pub params: Value,
    /// The typical risk of an intent.
    pub risk: Option<RiskLevel>,
}

impl Capability {
    /// The BRIEF entry.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("kind".into(), json!(self.kind.as_str()));
        m.insert("summary".into(), json!(self.summary));
        m.insert("params".into(), self.params.clone());
        if let Some(r) = self.risk {
            m.insert("risk".into(), json!(r.as_str()));
        }
        Value::Object(m)
    }
}

/// One way to achieve an intent; the engine turns it into a proposal (§5.1).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<A> {
    /// What it does, in the service's words.
    pub summary: String,
    /// Every principal-observable change (§5.1 effects; `from`/`to` scalars).
    pub effects: Vec<Value>,
    /// What a commit uses up, as YEA quantities (§5.1 `uses`): money under
    /// `spend` (minor units of an ISO 4217 code), counts like `emails`.
    /// Written once for both dialects: under YEA it is the proposal's
    /// `uses`; under Parley the `spend` entry is its `cost` (see
    /// [`Plan::cost`]) and counts have no place on the wire.
    pub uses: Uses,
    /// The service's risk assessment.
    pub risk: RiskLevel,
    /// Undo window in seconds from commit; `None` when irreversible.
    pub undo_window: Option<i64>,
    /// How long the proposal may be committed, in seconds from now (the
    /// expiry is then rounded up to a whole minute, §5.1).
    pub ttl: i64,
    /// Extra detail, not hashed; never describes effects (§5.1).
    pub data: Option<Value>,
    /// What to do on COMMIT; only the app reads it.
    pub action: A,
}

impl<A> Plan<A> {
    /// The Parley `cost`: the `spend` quantity as money, `None` when the
    /// plan spends nothing (or nothing Parley can say as money).
    pub fn cost(&self) -> Option<Money> {
        self.uses.get("spend").and_then(|q| q.as_money())
    }
}

/// One option of a CLARIFY (§4.3).
#[derive(Debug, Clone, PartialEq)]
pub struct ClarifyOption {
    /// What the option means.
    pub label: String,
    /// The params merge patch that picks it.
    pub params: Value,
}

/// An app's answer to an INTENT.
#[derive(Debug, Clone, PartialEq)]
pub enum Planned<A> {
    /// One or more proposals; nothing has changed yet.
    Proposals(Vec<Plan<A>>),
    /// The intent is ambiguous.
    Clarify {
        /// The question.
        question: String,
        /// The ways to resolve it.
        options: Vec<ClarifyOption>,
    },
}

/// What reverting an action changed (the undo receipt, §4.5).
#[derive(Debug, Clone, PartialEq)]
pub struct Reversal {
    /// The effects of the reversal.
    pub effects: Vec<Value>,
    /// A result for the receipt, if any.
    pub result: Option<Value>,
}

/// Who is asking, as far as the engine verified it.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The principal of the grant that authorized the request, if any.
    pub principal: Option<&'a PublicKey>,
    /// Unix seconds.
    pub now: i64,
    /// The dialect the service speaks: what an app may report (YEA counts
    /// such as `emails`) and how amounts in params are written.
    pub dialect: Dialect,
}

/// Progress reports made while applying (sent as EVENTs before the receipt, §5).
#[derive(Debug, Default)]
pub struct Progress {
    events: Vec<(String, f64)>,
}

impl Progress {
    /// Reports progress; `fraction` is clamped to 0–1.
    pub fn report(&mut self, message: &str, fraction: f64) {
        self.events
            .push((message.to_string(), fraction.clamp(0.0, 1.0)));
    }

    /// The reports, in order.
    pub fn into_events(self) -> Vec<(String, f64)> {
        self.events
    }
}

/// A service's own behaviour. Calls are synchronous and must not block for
/// long: the state lives in memory.
pub trait App: Send + Sync + 'static {
    /// What a COMMIT of a plan does; opaque to the engine.
    type Action: Clone + Send + Sync + 'static;

    /// The service's identity.
    fn info(&self) -> ServiceInfo;

    /// Its capabilities, in BRIEF order, as they are written in `dialect`
    /// (a YEA amount param is an exact quantity, never a float).
    fn capabilities(&self, dialect: Dialect) -> Vec<Capability>;

    /// Answers an ASK of one of its `ask` capabilities. Must not change
    /// anything the principal could observe (§4.2).
    fn ask(
        &self,
        capability: &str,
        params: &Map<String, Value>,
        caller: &Caller<'_>,
    ) -> Result<Value, ParleyError>;

    /// Plans an INTENT of one of its `intent` capabilities. Must not change
    /// anything the principal could observe (§4.3).
    fn plan(
        &self,
        capability: &str,
        params: &Map<String, Value>,
        caller: &Caller<'_>,
    ) -> Result<Planned<Self::Action>, ParleyError>;

    /// Performs exactly the declared effects of a committed plan and returns
    /// the receipt's `result`. An error undoes nothing the engine did: the
    /// engine releases the spend reservation (§6.3) and reports the error.
    fn apply(&self, action: &Self::Action, progress: &mut Progress) -> Result<Value, ParleyError>;

    /// Reverses an applied action inside its undo window.
    fn revert(&self, action: &Self::Action, result: &Value) -> Result<Reversal, ParleyError>;
}
