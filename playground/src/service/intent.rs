//! INTENT (§4.3): plans become proposals (§5.1), or the app asks to CLARIFY;
//! with `auto` (§4.3.1) the first proposal is committed in the same round
//! trip when a grant authorizes its COMMIT outright and it is undoable.

use super::auth::{self, Presented};
use super::commit::CommitAuth;
use super::error::ParleyError;
use super::request::{Request, Verb};
use super::store::ProposalRecord;
use super::{App, Caller, CapabilityKind, Plan, Planned, Service};
use crate::ids::random_id;
use parley_core::proof::Target;
use parley_core::proposal::{proposal_hash, Proposal};
use parley_core::PublicKey;
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
        let presented = auth::presented(req, &self.info.id, &target, now, &self.trusted)?;
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
        let cost = plan.cost.as_ref().map_or(
            Value::Null,
            |c| json!({"amount": c.amount, "currency": c.currency}),
        );
        let undo = plan
            .undo_window
            .map_or(Value::Null, |w| json!({"window": w}));
        let mut p = Map::new();
        p.insert("id".into(), json!(id));
        p.insert("capability".into(), json!(cap));
        p.insert("summary".into(), json!(plan.summary));
        p.insert("effects".into(), Value::Array(plan.effects.clone()));
        p.insert("cost".into(), cost);
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
        Proposal::from_value(&value).map_err(|e| {
            ParleyError::internal(format!("the service made a malformed proposal: {e}"))
        })?;
        Ok(Arc::new(ProposalRecord {
            id,
            hash,
            capability: cap.to_string(),
            summary: plan.summary,
            effects: plan.effects,
            cost: plan.cost,
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
    use super::round_up_to_minute;

    #[test]
    fn expiry_is_rounded_up_to_whole_minutes() {
        assert_eq!(round_up_to_minute(1_790_000_000), 1_790_000_040);
        assert_eq!(round_up_to_minute(1_790_000_040), 1_790_000_040);
        assert_eq!(round_up_to_minute(1_790_000_041), 1_790_000_100);
        assert_eq!(round_up_to_minute(-59), 0);
    }
}
