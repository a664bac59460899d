//! The job server's logic, apart from MCP: a small refund desk with two job
//! tools, and the server side of the approval contract (SPEC-approval):
//! stored consents first, then the policy decision, reservations, apply,
//! receipts, and approval codes when the person must decide.
//!
//! * `store_credit` gives store credit on an order. It can be taken back
//!   within an hour, so a signed policy may let it run unasked.
//! * `refund` sends money back to the card. It cannot be undone, so it
//!   always asks (decision 7): the agent gets an approval code.

use super::approval_code;
use super::form::{AskPolicy, AskedPlan};
use super::policy::{decide, Candidate, Decision, DenyList, Policy};
use super::store::{new_id, FileStore, StoreError};
use crate::clock::Clock;
use parley_core::job::{check_job_consent, plan_of, JobPlan};
use parley_core::quantity::Exact;
use parley_core::{PublicKey, SecretKey};
use parley_custody_client::phrase::phrase_for;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The job tools this server offers, with their MCP descriptions.
pub const TOOLS: &[(&str, &str)] = &[
    (
        "store_credit",
        "Give store credit on an order (a job tool: it returns a plan; within the person's policy it runs and returns a receipt). Input: {order, amount} with amount a decimal string in USD, e.g. \"10.00\".",
    ),
    (
        "refund",
        "Refund an order to the customer's card (a job tool; refunds cannot be undone, so each one needs the person's approval: the result then holds an approval code). Input: {order, amount} with amount a decimal string in USD, e.g. \"30.00\".",
    ),
];

/// What a job call answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The plan ran: its receipt.
    Ran {
        /// The receipt as stored.
        receipt: Value,
    },
    /// The person must approve it: the plans and their approval codes.
    NeedsApproval {
        /// Why, in words.
        why: String,
        /// `(summary, plan hash, phrase, code)` per plan.
        codes: Vec<(String, String, String, String)>,
    },
    /// Refused: nothing ran.
    Refused {
        /// Why, in words.
        why: String,
    },
    /// A receipt was undone.
    Undone {
        /// The receipt's id.
        id: String,
    },
}

impl Outcome {
    /// The outcome as text for the agent (and so for the person).
    pub fn text(&self) -> String {
        match self {
            Outcome::Ran { receipt } => format!(
                "RAN: {} (receipt {}, undo: {})",
                receipt["summary"].as_str().unwrap_or(""),
                receipt["id"].as_str().unwrap_or(""),
                receipt["undo"]
            ),
            Outcome::NeedsApproval { why, codes } => {
                let mut s = format!("NOT RUN: this needs the person's approval ({why}).\n");
                for (summary, hash, phrase, code) in codes {
                    s.push_str(&format!(
                        "plan {hash}: {summary:?}; the person will type {phrase:?}\ncode: {code}\n{}\n",
                        approval_code::ask_line(code)
                    ));
                }
                s
            }
            Outcome::Refused { why } => format!("REFUSED: {why}"),
            Outcome::Undone { id } => format!("UNDONE: {id}"),
        }
    }
}

/// One order the desk knows.
#[derive(Debug, Clone)]
struct Order {
    customer: &'static str,
    card: &'static str,
}

/// The server: its key, the person's pinned key and policy, the store.
pub struct JobServer {
    key: SecretKey,
    principal: PublicKey,
    policy_grant: Option<String>,
    deny: DenyList,
    out_of_band: parley_core::RiskLevel,
    store: FileStore,
    clock: Arc<dyn Clock>,
    orders: BTreeMap<&'static str, Order>,
    lock: Mutex<()>,
}

/// How a job server is set up.
pub struct Setup {
    /// The server's own key (its public key is its service id).
    pub key: SecretKey,
    /// The pinned principal key.
    pub principal: PublicKey,
    /// The signed policy grant, if any.
    pub policy_grant: Option<String>,
    /// The unsigned tightening.
    pub tightening: super::policy::Tightening,
    /// The store.
    pub store: FileStore,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

impl JobServer {
    /// A server with the playground's orders.
    pub fn new(s: Setup) -> JobServer {
        let orders = BTreeMap::from([
            (
                "A-1001",
                Order {
                    customer: "Chen",
                    card: "card \u{2022}\u{2022}42",
                },
            ),
            (
                "A-1002",
                Order {
                    customer: "Ana",
                    card: "card \u{2022}\u{2022}17",
                },
            ),
        ]);
        JobServer {
            key: s.key,
            principal: s.principal,
            policy_grant: s.policy_grant,
            deny: s.tightening.deny,
            out_of_band: s.tightening.out_of_band,
            store: s.store,
            clock: s.clock,
            orders,
            lock: Mutex::new(()),
        }
    }

    /// This server's service id (its public key).
    pub fn service_id(&self) -> PublicKey {
        self.key.public()
    }

    /// The plans of `tool` for `input`, each with whether the tool can
    /// revert it and the phrase the person types (the handler: it never
    /// changes anything). The plan hash is parley-core's.
    fn plans(&self, tool: &str, input: &Value) -> Result<Vec<(JobPlan, bool, String)>, String> {
        let obj = input
            .as_object()
            .ok_or("the input must be an object {order, amount}")?;
        if let Some(extra) = obj.keys().find(|k| *k != "order" && *k != "amount") {
            return Err(format!("unknown input field {extra:?}"));
        }
        let order_id = obj
            .get("order")
            .and_then(Value::as_str)
            .ok_or("order must be a string, e.g. \"A-1001\"")?;
        let (order_key, order) = self
            .orders
            .get_key_value(order_id)
            .ok_or_else(|| format!("no order {order_id:?}"))?;
        let cents = obj
            .get("amount")
            .and_then(Value::as_str)
            .and_then(parse_usd)
            .ok_or("amount must be a decimal string in USD with two digits, e.g. \"30.00\"")?;
        let amount = format!("{}.{:02} USD", cents / 100, cents % 100);
        let uses = json!({"spend": {"amount": cents, "scale": 2, "unit": "USD"}});
        let (plan, revert) = match tool {
            "refund" => (
                json!({
                    "summary": format!("Refund {amount} to {} for order {order_key}", order.customer),
                    "effects": [{"op": "create", "target": "refund", "detail": format!("{amount} to {}", order.card)}],
                    "uses": uses,
                    "risk": "low",
                }),
                false,
            ),
            "store_credit" => (
                json!({
                    "summary": format!("Give {} {amount} store credit for order {order_key}", order.customer),
                    "effects": [{"op": "create", "target": "credit", "detail": format!("{amount} for {}", order.customer)}],
                    "uses": uses,
                    "risk": "low",
                    "undoWindow": 3600,
                }),
                true,
            ),
            other => return Err(format!("no job tool {other:?}")),
        };
        let plan = plan_of(tool, None, input, &plan).map_err(|e| e.to_string())?;
        // The phrase the person types: the order, which the plan hash covers.
        Ok(vec![(plan, revert, (*order_key).to_string())])
    }

    /// The plans of `tool` for `input` that may run at all, or the refusal
    /// to answer with: a denied tool has none, whatever was approved.
    fn runnable_plans(
        &self,
        tool: &str,
        input: &Value,
    ) -> Result<Vec<(JobPlan, bool, String)>, Outcome> {
        if self.deny.denies(tool) {
            return Err(refused(DenyList::why(tool)));
        }
        self.plans(tool, input).map_err(refused)
    }

    /// The plans of `tool` for `input` as the in-chat form shows them,
    /// each phrase checked typeable first (§3: no form for a phrase no one
    /// could be sure of typing).
    pub fn asked_plans(&self, tool: &str, input: &Value) -> Result<Vec<AskedPlan>, String> {
        self.plans(tool, input)?
            .into_iter()
            .map(|(plan, _, phrase)| {
                phrase_for(&phrase).map_err(|e| format!("the tool's phrase is refused: {e}"))?;
                Ok(AskedPlan { plan, phrase })
            })
            .collect()
    }

    /// What the policy says about asking in the chat.
    pub fn ask_policy(&self) -> AskPolicy {
        AskPolicy {
            deny: self.deny.clone(),
            out_of_band: self.out_of_band,
        }
    }

    /// Runs the plan with hash `hash` of `tool` for `input`, which the
    /// person approved in the chat: the plans are recomputed, so only a
    /// plan the hash still names runs, and never a denied tool's.
    pub fn run_approved(&self, tool: &str, input: &Value, hash: &str) -> Outcome {
        let _one_at_a_time = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let hashed = match self.runnable_plans(tool, input) {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        match hashed.iter().find(|(p, ..)| p.hash == hash) {
            Some((plan, ..)) => {
                self.apply(plan, "the person's answer in the chat", self.clock.now())
            }
            None => refused("the plans changed; nothing ran".into()),
        }
    }

    /// `undo {receipt}` (§7): reverts one of this server's receipts within
    /// its window, once. The desk's revert, like its apply, only records:
    /// the receipt is marked undone in the store.
    pub fn undo(&self, input: &Value) -> Outcome {
        let Some(id) = input.get("receipt").and_then(Value::as_str) else {
            return refused("undo takes {receipt}: a receipt id, e.g. \"r_…\"".into());
        };
        let service = self.service_id().to_string();
        let now = self.clock.now();
        match super::undo::undo(&self.store, &service, id, "", now, |_| Ok(())) {
            Ok(super::undo::Undo::Undone) => Outcome::Undone { id: id.to_string() },
            Ok(super::undo::Undo::Refused { why }) => refused(why),
            Err(e) => refused(e.to_string()),
        }
    }

    /// Now, on the server's clock.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// `consumeOnce` on the server's store (a form's nonce).
    pub fn consume_once(&self, id: &str, exp: i64) -> Result<bool, StoreError> {
        self.store.consume_once(id, exp)
    }

    /// Runs one job call: a stored consent, else the policy, else a code.
    pub fn call(&self, tool: &str, input: &Value) -> Outcome {
        let _one_at_a_time = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let hashed = match self.runnable_plans(tool, input) {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        let now = self.clock.now();
        match self.run_with_consent(&hashed, now) {
            Ok(Some(outcome)) => return outcome,
            Ok(None) => {}
            Err(e) => return refused(e.to_string()),
        }
        let candidates: Vec<Candidate> = hashed
            .iter()
            .map(|(p, revert, _)| Candidate {
                tool: p.tool.clone(),
                hash: p.hash.clone(),
                risk: p.risk.as_str().to_string(),
                undoable: p.undoable() && *revert,
                uses: p.uses.as_ref().map(|u| u.to_value()),
            })
            .collect();
        let policy = Policy {
            grant: self.policy_grant.clone(),
            principal: self.principal.clone(),
            server: self.service_id(),
            deny: self.deny.clone(),
            out_of_band: self.out_of_band,
        };
        let store = &self.store;
        let used = |block: &str, of: &str| Exact(store.used(block, of).unwrap_or(u128::MAX));
        match decide(&candidates, &policy, used, now) {
            Decision::Nothing => refused("the tool has no plan for this input".into()),
            Decision::Denied { why } => refused(why),
            Decision::Run { hash, reserve } => {
                let Some((plan, ..)) = hashed.iter().find(|(p, ..)| p.hash == hash) else {
                    return refused("the plan to run is gone".into());
                };
                let mut made = Vec::new();
                for r in &reserve {
                    match self.store.reserve(&r.block, &r.of, r.amount.0, r.max.0) {
                        Ok(Some(rid)) => made.push((r.block.clone(), r.of.clone(), rid)),
                        Ok(None) | Err(_) => {
                            for (b, o, rid) in &made {
                                let _ = self.store.release(b, o, rid);
                            }
                            return self.needs_approval(
                                &hashed,
                                format!("{} would pass a total limit", r.of),
                                now,
                            );
                        }
                    }
                }
                let outcome = self.apply(plan, "your signed policy", now);
                for (b, o, rid) in &made {
                    let _ = match &outcome {
                        Outcome::Ran { .. } => self.store.settle(b, o, rid),
                        _ => self.store.release(b, o, rid),
                    };
                }
                outcome
            }
            Decision::Ask { why } | Decision::OutOfBand { why } => {
                self.needs_approval(&hashed, why, now)
            }
        }
    }

    /// Runs the first plan that has a usable consent in the store, consuming it.
    fn run_with_consent(
        &self,
        hashed: &[(JobPlan, bool, String)],
        now: i64,
    ) -> Result<Option<Outcome>, StoreError> {
        let mut used_up = false;
        for (plan, ..) in hashed {
            let hash = &plan.hash;
            let Some(token) = self.store.get_consent(hash)? else {
                continue;
            };
            let id = match check_job_consent(
                token.trim_end(),
                hash,
                &plan.tool,
                &self.service_id(),
                &self.principal,
                now,
            ) {
                Ok(id) => id,
                Err(why) => {
                    eprintln!("mcp-jobs: the consent for {hash} is not used: {why}");
                    continue;
                }
            };
            // The marker lives as long as a consent can (10 minutes from now at most).
            let exp = now + parley_core::job::MAX_CONSENT_SECS;
            if !self.store.consume_once(&id, exp)? {
                // Consumed or replayed: counts as absent, a fresh code follows.
                used_up = true;
                continue;
            }
            return Ok(Some(self.apply(plan, "the person's consent", now)));
        }
        if used_up {
            return Ok(Some(self.needs_approval(
                hashed,
                "the person's consent for this plan was already used once; nothing ran".into(),
                now,
            )));
        }
        Ok(None)
    }

    fn needs_approval(&self, hashed: &[(JobPlan, bool, String)], why: String, now: i64) -> Outcome {
        let mut codes = Vec::new();
        for (plan, _, phrase) in hashed {
            if self.deny.denies(&plan.tool) {
                continue;
            }
            match approval_code::encode(plan, &self.service_id(), &self.principal, phrase, now) {
                Ok(c) => codes.push((plan.summary.clone(), plan.hash.clone(), phrase.clone(), c)),
                Err(e) => return refused(format!("cannot make an approval code: {e}")),
            }
        }
        Outcome::NeedsApproval { why, codes }
    }

    /// Applies a plan (the playground's desk only records it) and stores the receipt.
    fn apply(&self, plan: &JobPlan, authorized_by: &str, now: i64) -> Outcome {
        let hash = &plan.hash;
        let id = new_id("r_");
        let undo = match plan.undo_window {
            Some(w) => json!({"until": now + w}),
            None => json!("never"),
        };
        let receipt = json!({
            "id": id,
            "status": "done",
            "summary": plan.summary,
            "effects": plan.effects,
            "uses": plan.uses.as_ref().map(|u| u.to_value()),
            "undo": undo,
            "at": now,
            "proposal": hash,
            "capability": plan.tool,
            "authorizedBy": authorized_by,
            "service": self.service_id().to_string(),
            "tool": plan.tool,
            "input": plan.input,
            "planHash": hash,
            "sub": "",
        });
        match self.store.put_receipt(&id, &receipt) {
            Ok(()) => Outcome::Ran { receipt },
            Err(e) => refused(format!(
                "the receipt could not be stored, so nothing ran: {e}"
            )),
        }
    }
}

fn refused(why: String) -> Outcome {
    Outcome::Refused { why }
}

/// `"30.00"` → 3000 cents; exactly two decimals, at most 1,000,000.00.
fn parse_usd(s: &str) -> Option<u64> {
    let (whole, frac) = s.split_once('.')?;
    if whole.is_empty()
        || whole.len() > 7
        || frac.len() != 2
        || !whole
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let cents = whole.parse::<u64>().ok()? * 100 + frac.parse::<u64>().ok()?;
    (cents > 0 && cents <= 100_000_000).then_some(cents)
}

#[cfg(test)]
mod tests {
    use super::parse_usd;

    #[test]
    fn amounts_are_decimal_strings_with_two_digits() {
        assert_eq!(parse_usd("30.00"), Some(3000));
        assert_eq!(parse_usd("0.05"), Some(5));
        for bad in [
            "30",
            "30.0",
            "-1.00",
            "1e3.00",
            "0.00",
            ".50",
            "99999999.00",
        ] {
            assert_eq!(parse_usd(bad), None, "{bad}");
        }
    }
}
