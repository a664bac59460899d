//! Proposals (§5.1): the hash that binds what a human is shown, and a
//! strict reading of everything that hash covers.

use crate::b64;
use crate::canonical::{write_object_without, CanonicalError, MAX_SAFE_INTEGER};
use crate::caveat::RiskLevel;
use crate::dialect::{Dialect, UsageField};
use crate::money::Money;
use crate::quantity::Uses;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Why a proposal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    /// Not a JSON object.
    #[error("a proposal must be a JSON object")]
    NotAnObject,
    /// The hashed part has no canonical form (a float or unsafe integer).
    #[error("the proposal cannot be hashed: {0}")]
    Canonical(#[from] CanonicalError),
    /// A field is missing, ill-typed or out of its enum.
    #[error("the proposal is malformed: {0}")]
    Malformed(String),
    /// The recomputed hash differs from the one the proposal carries.
    #[error("the proposal's content hashes to {computed}, not to the hash it claims ({claimed})")]
    HashMismatch {
        /// Our §5.1 hash.
        computed: String,
        /// The `hash` field.
        claimed: String,
    },
}

/// b64url(sha256(canonical(proposal without "hash" and "data"))) (§5.1).
pub fn proposal_hash(proposal: &Value) -> Result<String, ProposalError> {
    let obj = proposal.as_object().ok_or(ProposalError::NotAnObject)?;
    // Canonicalized in place, skipping the two keys: no copy of the proposal.
    let mut text = String::with_capacity(512);
    write_object_without(obj, &["hash", "data"], &mut text)?;
    Ok(b64::encode(Sha256::digest(text.as_bytes())))
}

/// An effect's `op` (§5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EffectOp {
    /// `+`
    Create,
    /// `~`
    Update,
    /// `-`
    Delete,
    /// `>`
    Send,
    /// `$` (Parley only: YEA dropped it, a charge is a `create`)
    Charge,
    /// `*`
    Other,
}

impl EffectOp {
    fn parse(s: &str, dialect: Dialect) -> Option<EffectOp> {
        let op = match s {
            "create" => EffectOp::Create,
            "update" => EffectOp::Update,
            "delete" => EffectOp::Delete,
            "send" => EffectOp::Send,
            "charge" => EffectOp::Charge,
            "other" => EffectOp::Other,
            _ => return None,
        };
        dialect.effect_ops().contains(&op).then_some(op)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectOp::Create => "create",
            EffectOp::Update => "update",
            EffectOp::Delete => "delete",
            EffectOp::Send => "send",
            EffectOp::Charge => "charge",
            EffectOp::Other => "other",
        }
    }
}

/// One principal-observable change (§5.1).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Effect {
    /// What kind of change.
    pub op: EffectOp,
    /// What it changes.
    pub target: String,
    /// Which field, for updates.
    pub field: Option<String>,
    /// The old value (a scalar).
    pub from: Option<Value>,
    /// The new value (a scalar).
    pub to: Option<Value>,
    /// Free text from the service.
    pub detail: Option<String>,
    /// The effect's JSON, for rendering its Lens line.
    #[serde(skip)]
    pub raw: Value,
}

/// A proposal read strictly: every hashed field known and well formed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Proposal {
    /// `id`.
    pub id: String,
    /// `capability`.
    pub capability: String,
    /// The service's own words. Untrusted.
    pub summary: String,
    /// Every change the commit will cause.
    pub effects: Vec<Effect>,
    /// Parley: `None` when free. Always `None` in YEA.
    pub cost: Option<Money>,
    /// YEA: what the commit uses up; `None` when absent (empty is `Some`
    /// of an empty map). Always `None` in Parley.
    pub uses: Option<Uses>,
    /// The service's risk assessment.
    pub risk: RiskLevel,
    /// Undo window in seconds; `None` = irreversible.
    pub undo: Option<i64>,
    /// Unix seconds after which it cannot be committed.
    pub expires: i64,
    /// The §5.1 hash, recomputed and equal to the claimed one.
    pub hash: String,
}

const EFFECT_FIELDS: &[&str] = &["op", "target", "field", "from", "to", "detail"];

impl Proposal {
    /// Whether the proposal cannot be undone: no undo window, or a window of
    /// zero seconds (an undo that must arrive within 0 s never can).
    pub fn irreversible(&self) -> bool {
        matches!(self.undo, None | Some(0))
    }
}

impl Proposal {
    /// Reads and checks a Parley v1 proposal as received: shape, enums,
    /// integers, and that its content hashes to its `hash` (§5.1;
    /// ARCHITECTURE.md checklist 1 and 5).
    pub fn from_value(v: &Value) -> Result<Proposal, ProposalError> {
        Proposal::from_value_in(v, Dialect::ParleyV1)
    }

    /// [`from_value`](Self::from_value) under `dialect`: its fields and
    /// effect ops ([`Dialect::proposal_fields`], [`Dialect::effect_ops`]),
    /// and `cost` (Parley) or `uses` (YEA, where a malformed `uses` makes
    /// the proposal invalid). A hashed field the review cannot show would let
    /// a service bind the human's signature to something unseen, so unknown
    /// hashed fields are refused rather than ignored.
    pub fn from_value_in(v: &Value, dialect: Dialect) -> Result<Proposal, ProposalError> {
        let obj = v.as_object().ok_or(ProposalError::NotAnObject)?;
        let bad = |m: String| ProposalError::Malformed(m);
        let fields = dialect.proposal_fields();
        if let Some(k) = obj.keys().find(|k| !fields.contains(&k.as_str())) {
            return Err(bad(format!(
                "unknown field {:?} is hashed but cannot be shown to the human",
                k.chars().take(40).collect::<String>()
            )));
        }
        let string = |k: &str| -> Result<String, ProposalError> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(format!("{k} must be a string")))
        };
        let id = string("id")?;
        let capability = string("capability")?;
        let summary = string("summary")?;
        let claimed = string("hash")?;
        let effects = obj
            .get("effects")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("effects must be a list".into()))?
            .iter()
            .enumerate()
            .map(|(i, e)| parse_effect(e, dialect).map_err(|m| bad(format!("effects[{i}]: {m}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let uses = match (dialect.usage_field(), obj.get("uses")) {
            (UsageField::Uses, Some(u)) => {
                Some(Uses::from_value(u).map_err(|e| bad(format!("uses is malformed: {e}")))?)
            }
            _ => None,
        };
        let cost = match obj.get("cost") {
            _ if dialect.usage_field() != UsageField::Cost => None,
            Some(Value::Null) => None,
            Some(Value::Object(c)) => {
                let amount = c.get("amount").and_then(Value::as_i64);
                let currency = c.get("currency").and_then(Value::as_str);
                match (amount, currency, c.len()) {
                    (Some(a), Some(cur), 2)
                        if a.unsigned_abs() <= MAX_SAFE_INTEGER as u64
                            && cur.len() == 3
                            && cur.bytes().all(|b| b.is_ascii_uppercase()) =>
                    {
                        Some(Money {
                            amount: a,
                            currency: cur.to_string(),
                        })
                    }
                    _ => {
                        return Err(bad(
                            "cost must be null or {\"amount\": int, \"currency\": \"ABC\"}".into(),
                        ))
                    }
                }
            }
            _ => {
                return Err(bad(
                    "cost must be null or {\"amount\": int, \"currency\": \"ABC\"}".into(),
                ))
            }
        };
        let risk = obj
            .get("risk")
            .and_then(Value::as_str)
            .and_then(RiskLevel::parse)
            .ok_or_else(|| bad("risk must be low, medium or high".into()))?;
        let undo = match obj.get("undo") {
            Some(Value::Null) => None,
            Some(Value::Object(u)) if u.len() == 1 => Some(
                u.get("window")
                    .and_then(Value::as_i64)
                    .filter(|w| (0..=MAX_SAFE_INTEGER).contains(w))
                    .ok_or_else(|| bad("undo.window must be a non-negative integer".into()))?,
            ),
            _ => return Err(bad("undo must be null or {\"window\": seconds}".into())),
        };
        let expires = obj
            .get("expires")
            .and_then(Value::as_i64)
            .filter(|t| t.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
            .ok_or_else(|| bad("expires must be an integer (unix seconds)".into()))?;
        let computed = proposal_hash(v)?;
        if computed != claimed {
            return Err(ProposalError::HashMismatch { computed, claimed });
        }
        Ok(Proposal {
            id,
            capability,
            summary,
            effects,
            cost,
            uses,
            risk,
            undo,
            expires,
            hash: computed,
        })
    }
}

fn parse_effect(v: &Value, dialect: Dialect) -> Result<Effect, String> {
    let obj = v.as_object().ok_or("an effect must be an object")?;
    if let Some(k) = obj.keys().find(|k| !EFFECT_FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "unknown field {:?} cannot be shown to the human",
            k.chars().take(40).collect::<String>()
        ));
    }
    let op = obj
        .get("op")
        .and_then(Value::as_str)
        .and_then(|s| EffectOp::parse(s, dialect))
        .ok_or_else(|| {
            let ops: Vec<&str> = dialect.effect_ops().iter().map(|o| o.as_str()).collect();
            format!("op must be one of {} in {dialect}", ops.join(", "))
        })?;
    let target = obj
        .get("target")
        .and_then(Value::as_str)
        .ok_or("target must be a string")?
        .to_string();
    let opt_str = |k: &str| -> Result<Option<String>, String> {
        match obj.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{k} must be a string")),
        }
    };
    let scalar = |k: &str| -> Result<Option<Value>, String> {
        match obj.get(k) {
            None => Ok(None),
            Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null)) => {
                Ok(Some(v.clone()))
            }
            Some(_) => Err(format!("{k} must be a scalar")),
        }
    };
    Ok(Effect {
        op,
        target,
        field: opt_str("field")?,
        from: scalar("from")?,
        to: scalar("to")?,
        detail: opt_str("detail")?,
        raw: v.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        let mut p = json!({
            "id": "p_1", "capability": "shop.order", "summary": "Order",
            "effects": [{"op": "charge", "target": "card", "detail": "12.50 USD"}],
            "cost": {"amount": 1250, "currency": "USD"}, "risk": "low",
            "undo": null, "expires": 1790000600, "data": {"n": 1.5}
        });
        let h = proposal_hash(&p).unwrap();
        p["hash"] = json!(h);
        p
    }

    #[test]
    fn strict_reading() {
        let p = Proposal::from_value(&sample()).unwrap();
        assert_eq!(p.cost.unwrap().amount, 1250);
        assert_eq!(p.undo, None);
    }

    #[test]
    fn every_hashed_field_is_checked() {
        let cases: Vec<(&str, Value)> = vec![
            ("/risk", json!("extreme")),
            ("/cost", json!({"amount": 12.5, "currency": "USD"})),
            ("/cost", json!({"amount": 1, "currency": "USD", "tax": 900})),
            ("/undo", json!({"window": "1h"})),
            ("/expires", json!(1.5)),
            ("/effects/0/op", json!("transfer")),
            ("/effects/0/detail", json!({"nested": 1})),
        ];
        for (ptr, v) in cases {
            let mut p = sample();
            *p.pointer_mut(ptr).unwrap() = v.clone();
            assert!(Proposal::from_value(&p).is_err(), "{ptr} = {v}");
        }
        let mut p = sample();
        p["effects"][0]["to"] = json!({"nested": 1});
        assert!(Proposal::from_value(&p).is_err());
        let mut p = sample();
        p["hidden"] = json!("x");
        assert!(Proposal::from_value(&p).is_err());
        let mut p = sample();
        p["effects"][0]["secret"] = json!("x");
        assert!(Proposal::from_value(&p).is_err());
    }

    fn yea(uses: Value, op: &str) -> Value {
        let mut p = json!({
            "id": "p_1", "capability": "shop.order", "summary": "Order",
            "effects": [{"op": op, "target": "order"}],
            "uses": uses, "risk": "low", "undo": null, "expires": 1790000600
        });
        let h = proposal_hash(&p).unwrap();
        p["hash"] = json!(h);
        p
    }

    #[test]
    fn yea_proposals_report_uses_not_cost_and_never_charge() {
        let uses =
            json!({"spend": {"amount": 2287, "scale": 2, "unit": "USD"}, "emails": {"amount": 1}});
        let p = Proposal::from_value_in(&yea(uses.clone(), "create"), Dialect::YeaV1).unwrap();
        assert_eq!(p.uses.as_ref().unwrap().lens(), "emails 1, spend 22.87 USD");
        assert_eq!(p.cost, None);
        // The same proposal is not a Parley one: `uses` is an unknown hashed field.
        assert!(Proposal::from_value(&yea(uses.clone(), "create")).is_err());
        let err = Proposal::from_value_in(&yea(uses, "charge"), Dialect::YeaV1).unwrap_err();
        assert!(
            err.to_string()
                .contains("op must be one of create, update, delete, send, other"),
            "{err}"
        );
        let err = Proposal::from_value_in(
            &yea(json!({"emails": {"amount": 1, "unit": ""}}), "create"),
            Dialect::YeaV1,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("uses is malformed: emails: the unit"),
            "{err}"
        );
        // A Parley proposal with `cost` is not a YEA one.
        assert!(Proposal::from_value_in(&sample(), Dialect::YeaV1).is_err());
    }

    #[test]
    fn hash_must_match() {
        let mut p = sample();
        p["summary"] = json!("Order (cheap!)");
        assert!(matches!(
            Proposal::from_value(&p),
            Err(ProposalError::HashMismatch { .. })
        ));
        // data is not hashed: changing it keeps the hash.
        let mut p = sample();
        p["data"] = json!({"anything": true});
        assert!(Proposal::from_value(&p).is_ok());
    }
}
