//! A job tool's plan and the hashes that bind approval to it
//! (SPEC-approval §1).
//!
//! A plan is what a job tool returns instead of acting: a summary, its
//! effects, what it uses, its risk and its undo window. Approval binds to the
//! plan hash, which covers the tool and its validated input too, so an
//! approval to refund one order can never refund another.

use parley_core::b64;
use parley_core::canonical::canonical;
use parley_core::quantity::Uses;
use parley_core::RiskLevel;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Why a plan has no plan hash: the call fails closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The input holds a number that is not an integer (canonical JSON has none).
    #[error("the input of {tool} holds a number that is not an integer: use a string or an integer instead")]
    NonInteger {
        /// The tool.
        tool: String,
    },
    /// A risk other than low, medium or high.
    #[error("the plan's risk {0:?} is not low, medium or high")]
    Risk(String),
    /// `uses` is not well formed (YEA §5.1).
    #[error("the plan's uses is malformed: {0}")]
    Uses(String),
    /// The preimage could not be made canonical.
    #[error("the plan cannot be hashed: {0}")]
    Canonical(String),
}

/// One plan of a job tool, as the tool computed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The job tool's registered name.
    pub tool: String,
    /// The tool's validated input.
    pub input: Value,
    /// One line for people (service text: untrusted when shown).
    pub summary: String,
    /// What it changes (SPEC.md's effect objects).
    pub effects: Vec<Value>,
    /// What it uses up; empty when nothing limited.
    pub uses: Map<String, Value>,
    /// The risk, resolved: the plan's, else the tool's, else `medium`.
    pub risk: String,
    /// Seconds in which it can be undone; `None` when irreversible.
    pub undo_window: Option<i64>,
}

impl Plan {
    /// The plan-hash preimage: `{tool, input, summary, effects, uses?, risk,
    /// undoWindow?}`, absent fields and an empty `uses` left out. This is
    /// also the `detail.job` of an approval code (§6).
    pub fn preimage(&self) -> Value {
        let mut m = Map::new();
        m.insert("tool".into(), Value::String(self.tool.clone()));
        m.insert("input".into(), self.input.clone());
        m.insert("summary".into(), Value::String(self.summary.clone()));
        m.insert("effects".into(), Value::Array(self.effects.clone()));
        if !self.uses.is_empty() {
            m.insert("uses".into(), Value::Object(self.uses.clone()));
        }
        m.insert("risk".into(), Value::String(self.risk.clone()));
        if let Some(w) = self.undo_window {
            m.insert("undoWindow".into(), Value::from(w));
        }
        Value::Object(m)
    }

    /// The plan hash (§1), or why this plan gets none (then nothing runs).
    pub fn hash(&self) -> Result<String, PlanError> {
        if has_non_integer(&self.input) {
            return Err(PlanError::NonInteger {
                tool: self.tool.clone(),
            });
        }
        if RiskLevel::parse(&self.risk).is_none() {
            return Err(PlanError::Risk(self.risk.clone()));
        }
        if !self.uses.is_empty() {
            Uses::from_value(&Value::Object(self.uses.clone()))
                .map_err(|e| PlanError::Uses(e.to_string()))?;
        }
        sha256_b64(&self.preimage())
    }

    /// Whether it may ever run unasked: it has an undo window and its tool a revert (§2.3).
    pub fn undoable(&self, tool_has_revert: bool) -> bool {
        self.undo_window.is_some() && tool_has_revert
    }
}

/// `b64url(sha256(canonical(input)))`, the request state's `inputHash` (§4).
pub fn input_hash(input: &Value) -> Result<String, PlanError> {
    sha256_b64(input)
}

fn sha256_b64(v: &Value) -> Result<String, PlanError> {
    let text = canonical(v).map_err(|e| PlanError::Canonical(e.to_string()))?;
    Ok(b64::encode(Sha256::digest(text.as_bytes())))
}

/// True if any number in `v` is not an integer (canonical JSON refuses them).
pub fn has_non_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => !(n.is_i64() || n.is_u64()),
        Value::Array(a) => a.iter().any(has_non_integer),
        Value::Object(m) => m.values().any(has_non_integer),
        _ => false,
    }
}

/// The risk a plan resolves to: its own, else its tool's, else `medium` (§ terms).
pub fn resolve_risk(plan_risk: Option<&str>, tool_risk: Option<&str>) -> String {
    plan_risk.or(tool_risk).unwrap_or("medium").to_string()
}
