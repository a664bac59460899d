//! INTENT (§4.3): plans become proposals (§5.1), or the app asks to CLARIFY;
//! with `auto` (§4.3.1) the first proposal is committed in the same round
//! trip when a grant authorizes its COMMIT outright and it is undoable.

use super::auth::Presented;
use super::commit::CommitAuth;
use super::error::ParleyError;
use super::request::{Request, Verb};
use super::store::ProposalRecord;
use super::{App, Caller, CapabilityKind, Plan, Planned, Service};
use crate::ids::random_id;
use parley_core::dialect::UsageField;
use parley_core::money::Money;
use parley_core::proof::Target;
use parley_core::proposal::{proposal_hash, EffectOp, Proposal};
use parley_core::quantity::Uses;
use parley_core::{Dialect, PublicKey};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// §4.3.1: the replay memory outlives every proof that could carry the
/// same frame id: 900 s after the later of arrival and `proof.ts`.
pub const AUTO_MEMORY: i64 = 900;

/// One INTENT, authorized and ready to plan.
struct Asked<'a> {
    req: &'a Request,
    cap: &'a str,
    params: &'a Map<String, Value>,
    /// The verified proof and grants, if any.
    presented: Option<&'a Presented>,
    /// The principal of the grant that authorized the INTENT, if any.
    principal: Option<PublicKey>,
    now: i64,
}

/// §5.1: `expires` in whole minutes, rounded up (ceil(t/60)*60).
pub fn round_up_to_minute(t: i64) -> i64 {
    t.div_euclid(60) * 60 + if t.rem_euclid(60) == 0 { 0 } else { 60 }
}

impl<A: App> Service<A> {
    pub(super) async fn intent(
        &self,
        req: &Request,
        events: &mut Vec<Value>,
    ) -> Result<Value, ParleyError> {
        let name = req.field("capability")?;
        let cap = self.capability(name, CapabilityKind::Intent)?.name.clone();
        let params = req.params()?;
        let now = self.clock.now();
        let target = if req.auto {
            Target::AutoIntent {
                capability: &cap,
                frame_id: &req.id,
            }
        } else {
            Target::Intent { capability: &cap }
        };
        let presented = self.presented(req, &target, now)?;
        let principal = self.authorize_read(presented.as_ref(), Verb::Intent, &cap, now)?;

        // §4.3.1 replay memory: one answer per (proof.key, frame id).
        if let (true, Some(p)) = (req.auto, presented.as_ref()) {
            let keep_until = now.max(p.ts) + AUTO_MEMORY;
            let slot = self.store.auto_slot(&p.key, &req.id, keep_until, now)?;
            let mut remembered = slot.lock().await;
            if let Some(previous) = remembered.as_ref() {
                return previous.clone().map(as_replay);
            }
            let asked = Asked {
                req,
                cap: &cap,
                params: &params,
                presented: Some(p),
                principal,
                now,
            };
            let result = self.plan(asked, events).await;
            *remembered = Some(result.clone());
            return result;
        }
        let asked = Asked {
            req,
            cap: &cap,
            params: &params,
            presented: presented.as_ref(),
            principal,
            now,
        };
        self.plan(asked, events).await
    }

    async fn plan(&self, asked: Asked<'_>, events: &mut Vec<Value>) -> Result<Value, ParleyError> {
        let Asked {
            req,
            cap,
            params,
            presented,
            principal,
            now,
        } = asked;
        let caller = Caller {
            principal: principal.as_ref(),
            now,
            dialect: self.dialect,
        };
        let plans = match self.app.plan(cap, params, &caller)? {
            Planned::Clarify { question, options } => {
                let options: Vec<Value> = options
                    .into_iter()
                    .map(|o| json!({"label": o.label, "params": o.params}))
                    .collect();
                return Ok(json!({"kind": "CLARIFY", "question": question, "options": options}));
            }
            Planned::Proposals(plans) if plans.is_empty() => {
                return Err(
                    ParleyError::not_found("there is no way to satisfy this intent")
                        .fix("relax the constraints and send INTENT again"),
                )
            }
            Planned::Proposals(plans) => plans,
        };
        let holder = presented.map(|p| p.key.clone());
        let records = plans
            .into_iter()
            .map(|plan| self.proposal(cap, plan, holder.clone(), principal.clone(), now))
            .collect::<Result<Vec<_>, _>>()?;
        self.store.add_proposals(&records, now)?;

        if req.auto {
            let first = &records[0];
            if let Some(receipt) = self
                .auto_commit(first, presented, req.budget, events)
                .await?
            {
                return Ok(receipt);
            }
        }
        let proposals: Vec<Value> = records.iter().map(|r| r.value.clone()).collect();
        Ok(self.fit(
            json!({"kind": "PROPOSALS", "proposals": proposals}),
            req.budget,
            holder.as_ref(),
            cap,
        ))
    }

    /// §4.3.1: commits `first` if and only if it is undoable and a grant
    /// authorizes its COMMIT outright (no consent). The check and the spend
    /// reservation are one atomic step, as for COMMIT.
    async fn auto_commit(
        &self,
        first: &Arc<ProposalRecord<A::Action>>,
        presented: Option<&Presented>,
        budget: usize,
        events: &mut Vec<Value>,
    ) -> Result<Option<Value>, ParleyError> {
        let Some(p) = presented.filter(|p| p.has_grants()) else {
            return Ok(None);
        };
        if first.undo_window.is_none() {
            return Ok(None);
        }
        let mut committed = first.committed.lock().await;
        let now = self.clock.now();
        if committed.is_some() || now >= first.expires {
            return Ok(None);
        }
        let (principal, reservation) = match self.authorize_commit(first, p, now) {
            CommitAuth::Ok {
                principal,
                reservation,
            } => (principal, reservation),
            _ => return Ok(None),
        };
        let receipt = self.execute(first, principal, p.key.clone(), reservation, events)?;
        *committed = Some(receipt.clone());
        Ok(Some(self.receipt_reply(&receipt, true, false, budget)))
    }

    /// Turns a plan into a stored proposal with its §5.1 hash. The result is
    /// read back with parley-core's strict reader, so a service can never
    /// send a proposal that custody would refuse to show.
    fn proposal(
        &self,
        cap: &str,
        plan: Plan<A::Action>,
        holder: Option<PublicKey>,
        principal: Option<PublicKey>,
        now: i64,
    ) -> Result<Arc<ProposalRecord<A::Action>>, ParleyError> {
        let id = random_id("p");
        let expires = round_up_to_minute(now.saturating_add(plan.ttl.max(60)));
        let cost = plan.cost();
        let effects = effects_in(plan.effects, self.dialect);
        let undo = plan
            .undo_window
            .map_or(Value::Null, |w| json!({"window": w}));
        let mut p = Map::new();
        p.insert("id".into(), json!(id));
        p.insert("capability".into(), json!(cap));
        p.insert("summary".into(), json!(plan.summary));
        p.insert("effects".into(), Value::Array(effects.clone()));
        if let Some((field, usage)) = usage_field(self.dialect, cost.as_ref(), &plan.uses) {
            p.insert(field.into(), usage);
        }
        p.insert("risk".into(), json!(plan.risk.as_str()));
        p.insert("undo".into(), undo);
        p.insert("expires".into(), json!(expires));
        if let Some(data) = plan.data {
            p.insert("data".into(), data);
        }
        let mut value = Value::Object(p);
        let hash = proposal_hash(&value).map_err(|e| {
            ParleyError::internal(format!("the service made an unhashable proposal: {e}"))
        })?;
        value["hash"] = json!(hash);
        Proposal::from_value_in(&value, self.dialect).map_err(|e| {
            ParleyError::internal(format!("the service made a malformed proposal: {e}"))
        })?;
        Ok(Arc::new(ProposalRecord {
            id,
            hash,
            capability: cap.to_string(),
            summary: plan.summary,
            effects,
            cost,
            uses: plan.uses,
            risk: plan.risk,
            undo_window: plan.undo_window,
            expires,
            value,
            holder,
            principal,
            action: plan.action,
            committed: tokio::sync::Mutex::new(None),
        }))
    }
}

/// What a proposal or receipt reports it uses up, in `dialect` (§5.1):
/// Parley's `cost` (always present, `null` when free), or YEA's `uses`
/// (present only when something is used: "absent or empty means nothing").
pub(super) fn usage_field(
    dialect: Dialect,
    cost: Option<&Money>,
    uses: &Uses,
) -> Option<(&'static str, Value)> {
    match dialect.usage_field() {
        UsageField::Cost => Some((
            "cost",
            cost.map_or(
                Value::Null,
                |c| json!({"amount": c.amount, "currency": c.currency}),
            ),
        )),
        UsageField::Uses if uses.is_empty() => None,
        UsageField::Uses => Some(("uses", uses.to_value())),
    }
}

/// The effects as `dialect` writes them. Apps write a payment as Parley's
/// `charge`; YEA has no such op ("a charge is a `create`", §5.1), so there
/// it becomes a `create` whose detail says it is a charge. Every other op is
/// the same in both.
pub(super) fn effects_in(effects: Vec<Value>, dialect: Dialect) -> Vec<Value> {
    if dialect.effect_ops().contains(&EffectOp::Charge) {
        return effects;
    }
    effects
        .into_iter()
        .map(|mut e| {
            if e["op"] == EffectOp::Charge.as_str() {
                e["op"] = json!(EffectOp::Create.as_str());
                let detail = match e.get("detail").and_then(Value::as_str) {
                    Some(d) if !d.is_empty() => format!("charge {d}"),
                    _ => "charge".to_string(),
                };
                e["detail"] = json!(detail);
            }
            e
        })
        .collect()
}

/// The original reply to an auto INTENT, answered again (§4.3.1): receipts
/// say `"replay": true`; anything else is repeated as it was.
fn as_replay(mut reply: Value) -> Value {
    if reply["kind"] == "RECEIPT" {
        reply["replay"] = json!(true);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_is_a_create_in_yea_and_stays_a_charge_in_parley() {
        let e = vec![
            json!({"op": "charge", "target": "card", "detail": "22.87 USD"}),
            json!({"op": "send", "target": "a@b"}),
        ];
        assert_eq!(effects_in(e.clone(), Dialect::ParleyV1), e);
        let y = effects_in(e, Dialect::YeaV1);
        assert_eq!(
            y[0],
            json!({"op": "create", "target": "card", "detail": "charge 22.87 USD"})
        );
        assert_eq!(y[1], json!({"op": "send", "target": "a@b"}));
    }

    #[test]
    fn usage_is_cost_in_parley_and_uses_in_yea() {
        let uses =
            Uses::from_value(&json!({"spend": {"amount": 5, "scale": 2, "unit": "USD"}})).unwrap();
        let cost = uses.get("spend").and_then(|q| q.as_money());
        assert_eq!(
            usage_field(Dialect::ParleyV1, cost.as_ref(), &uses),
            Some(("cost", json!({"amount": 5, "currency": "USD"})))
        );
        assert_eq!(
            usage_field(Dialect::ParleyV1, None, &Uses::default()),
            Some(("cost", Value::Null))
        );
        assert_eq!(
            usage_field(Dialect::YeaV1, cost.as_ref(), &uses),
            Some((
                "uses",
                json!({"spend": {"amount": 5, "scale": 2, "unit": "USD"}})
            ))
        );
        assert_eq!(usage_field(Dialect::YeaV1, None, &Uses::default()), None);
    }

    #[test]
    fn expiry_is_rounded_up_to_whole_minutes() {
        assert_eq!(round_up_to_minute(1_790_000_000), 1_790_000_040);
        assert_eq!(round_up_to_minute(1_790_000_040), 1_790_000_040);
        assert_eq!(round_up_to_minute(1_790_000_041), 1_790_000_100);
        assert_eq!(round_up_to_minute(-59), 0);
    }
}
