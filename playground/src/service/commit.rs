//! COMMIT (§4.4): the only verb that changes the world.
//!
//! In order: the proposal exists (`not_found`); the hash is the one offered
//! (`conflict`, never revealing the right one); grants and a proof are
//! present and the proof verifies (`unauthorized`); the proof key is the one
//! that asked for the proposal (§4.4 "who may commit", `forbidden`); then,
//! holding the proposal's lock, either the original receipt is answered again
//! (`"replay": true`, per/spend/risk not re-evaluated), or the proposal must
//! not have expired (`expired`) and a grant from the same principal must
//! authorize it outright — checked and reserved against every `spend` block
//! in one atomic step (§6.3) — else `consent_required` with the §6.6 consent
//! object, `forbidden` with `need`, or `unauthorized`. Progress EVENTs come
//! before the receipt; a failed execution releases the reservation.

use super::auth::{self, Outcome, Presented};
use super::error::{ErrorCode, ParleyError};
use super::intent::usage_field;
use super::ledger::Reservation;
use super::request::Request;
use super::store::{ProposalRecord, ReceiptRecord};
use super::{App, Progress, Service};
use crate::ids::random_id;
use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::dialect::UsageField;
use parley_core::lens;
use parley_core::proof::Target;
use parley_core::PublicKey;
use serde_json::{json, Value};
use std::sync::Arc;

/// The result of authorizing a COMMIT (or an auto-commit).
pub(super) enum CommitAuth {
    /// Authorized outright; the cost is reserved.
    Ok {
        principal: PublicKey,
        reservation: Option<Reservation>,
    },
    /// Would be authorized with the principal's consent (§6.6).
    Consent {
        principal: PublicKey,
        reasons: Vec<String>,
    },
    /// Refused.
    Refused(ParleyError),
}

impl<A: App> Service<A> {
    pub(super) async fn commit(
        &self,
        req: &Request,
        events: &mut Vec<Value>,
    ) -> Result<Value, ParleyError> {
        let id = req.field("proposal")?;
        let hash = req.field("hash")?;
        let rec = self.store.proposal(id).ok_or_else(|| {
            ParleyError::not_found(format!("{} has no proposal {id:?}", self.info.id))
                .fix("send INTENT again to get fresh proposals")
        })?;
        if hash != rec.hash {
            return Err(ParleyError::conflict(format!(
                "the hash does not match proposal {id}: you would commit something other than what was proposed"
            ))
            .fix("re-read the proposal as the service sent it, or send INTENT again"));
        }
        let now = self.clock.now();
        if req.grants.is_empty() {
            return Err(ParleyError::unauthorized(
                "COMMIT needs a grant from your principal and a proof of possession (§6.4, §6.5)",
            )
            .fix("ask your principal for a grant (for example `parley grant`) and send it in `grants` with a `proof`"));
        }
        let target = Target::Commit { hash: &rec.hash };
        let presented = self
            .presented(req, &target, now)?
            .ok_or_else(|| ParleyError::unauthorized("COMMIT needs a proof of possession"))?;
        self.check_holder(&rec, &presented.key)?;

        let mut committed = rec.committed.lock().await;
        if let Some(receipt) = committed.as_ref() {
            return self.replay(req, &rec, receipt, &presented, now);
        }
        if now >= rec.expires {
            return Err(ParleyError::expired(format!(
                "proposal {id} expired at {}",
                lens::time(rec.expires)
            ))
            .fix("send INTENT again to get a fresh proposal"));
        }
        let (principal, reservation) = match self.authorize_commit(&rec, &presented, now) {
            CommitAuth::Ok {
                principal,
                reservation,
            } => (principal, reservation),
            CommitAuth::Consent { principal, reasons } => {
                return Err(self.consent_required(&rec, &principal, &reasons))
            }
            CommitAuth::Refused(e) => return Err(e),
        };
        let receipt = self.execute(&rec, principal, presented.key.clone(), reservation, events)?;
        *committed = Some(receipt.clone());
        Ok(self.receipt_reply(&receipt, false, false, req.budget))
    }

    /// §4.4 "who may commit": only the key whose verified proof was on the
    /// INTENT; an INTENT without one made a proposal to look at, never to
    /// commit.
    fn check_holder(
        &self,
        rec: &ProposalRecord<A::Action>,
        key: &PublicKey,
    ) -> Result<(), ParleyError> {
        match &rec.holder {
            Some(holder) if holder == key => Ok(()),
            Some(_) => Err(ParleyError::forbidden(format!(
                "proposal {} was prepared for another agent key; only the key that sent the INTENT may commit it",
                rec.id
            ))
            .fix("send the INTENT yourself, with your grant and proof, and commit your own proposal")),
            None => Err(ParleyError::forbidden(format!(
                "proposal {} came from an INTENT without grants and proof: it can be viewed but never committed",
                rec.id
            ))
            .fix("send the INTENT again with your grant and proof")),
        }
    }

    /// §6.3, §6.6: evaluates the presented grants for a COMMIT of `rec` and
    /// reserves its cost against every spend block of the authorizing grant,
    /// all under the ledger's lock. Only a grant rooted in the principal of
    /// the INTENT (if one authorized it) can authorize (§4.4).
    pub(super) fn authorize_commit(
        &self,
        rec: &ProposalRecord<A::Action>,
        presented: &Presented,
        now: i64,
    ) -> CommitAuth {
        let blocks = presented.block_ids();
        let (auth, _) = self.ledger.check_and_reserve(&blocks, |totals| {
            let ctx = RequestContext {
                service: self.info.id.clone(),
                verb: "COMMIT".into(),
                capability: rec.capability.clone(),
                now,
                proposal: Some(self.facts(rec)),
                spent: totals.spent,
                used: totals.used,
                dialect: self.dialect,
            };
            match presented.evaluate(&ctx, rec.principal.as_ref()) {
                Outcome::Ok(grant) => {
                    let Some(principal) = auth::principal_of(grant) else {
                        return (
                            CommitAuth::Refused(auth::unauthorized(
                                "the grant's issuer is not a key",
                            )),
                            None,
                        );
                    };
                    let reservation = self.reservation(rec, grant);
                    (
                        CommitAuth::Ok {
                            principal,
                            reservation: reservation.clone(),
                        },
                        reservation,
                    )
                }
                Outcome::Consent(grant, reasons) => match auth::principal_of(grant) {
                    Some(principal) => (CommitAuth::Consent { principal, reasons }, None),
                    None => (
                        CommitAuth::Refused(auth::unauthorized("the grant's issuer is not a key")),
                        None,
                    ),
                },
                Outcome::Forbidden { need, reasons } => (
                    CommitAuth::Refused(auth::forbidden("COMMIT", &need, &reasons)),
                    None,
                ),
                Outcome::Unauthorized(reason) => {
                    (CommitAuth::Refused(auth::unauthorized(&reason)), None)
                }
            }
        });
        auth
    }

    /// The facts the COMMIT-only caveats judge (§6.3), in this dialect:
    /// Parley's cost, or YEA's `uses` exactly as the proposal reported it.
    fn facts(&self, rec: &ProposalRecord<A::Action>) -> CommitFacts {
        let uses = match self.dialect.usage_field() {
            UsageField::Uses if !rec.uses.is_empty() => Some(rec.uses.to_value()),
            _ => None,
        };
        CommitFacts {
            hash: rec.hash.clone(),
            cost: rec.cost.clone(),
            uses,
            risk: rec.risk.as_str().into(),
        }
    }

    /// What an authorized commit reserves (§6.3): Parley, the cost against
    /// every `spend` block; YEA, each reported measure against every `total`
    /// caveat naming it, keyed by block id and measure.
    fn reservation(
        &self,
        rec: &ProposalRecord<A::Action>,
        grant: &parley_core::grant::VerifiedGrant,
    ) -> Option<Reservation> {
        match self.dialect.usage_field() {
            UsageField::Cost => rec.cost.as_ref().map(|c| Reservation {
                blocks: auth::spend_blocks(grant),
                amount: c.amount,
                ..Default::default()
            }),
            UsageField::Uses => {
                let uses = grant.total_reservations(&rec.uses);
                (!uses.is_empty()).then(|| Reservation {
                    uses,
                    ..Default::default()
                })
            }
        }
    }

    /// `consent_required` with exactly the §6.6 consent object.
    fn consent_required(
        &self,
        rec: &ProposalRecord<A::Action>,
        principal: &PublicKey,
        reasons: &[String],
    ) -> ParleyError {
        ParleyError::new(
            ErrorCode::ConsentRequired,
            format!(
                "{}; your principal must approve this exact proposal",
                reasons.join("; ")
            ),
        )
        .fix("ask your principal to approve it (for example through Parley Custody), then COMMIT again with the consent grant")
        .consent(json!({
            "proposal": rec.id,
            "hash": rec.hash,
            "service": self.info.id,
            "capability": rec.capability,
            "principal": principal.to_string(),
            "summary": rec.summary,
            "expires": rec.expires,
        }))
    }

    /// §4.4 idempotency: the original receipt, `"replay": true`, never a
    /// second execution. Authorized like a commit by the same requester and
    /// principal, but per, spend and risk are not evaluated again (so a
    /// retry after a lost response never becomes a consent prompt).
    fn replay(
        &self,
        req: &Request,
        rec: &ProposalRecord<A::Action>,
        receipt: &ReceiptRecord<A::Action>,
        presented: &Presented,
        now: i64,
    ) -> Result<Value, ParleyError> {
        if presented.key != receipt.holder {
            return Err(ParleyError::forbidden(
                "this proposal was committed by another agent key",
            ));
        }
        let ctx = RequestContext {
            service: self.info.id.clone(),
            verb: "COMMIT".into(),
            capability: rec.capability.clone(),
            now,
            proposal: Some(self.facts(rec)),
            dialect: self.dialect,
            ..Default::default()
        };
        match presented.evaluate(&ctx, Some(&receipt.principal)) {
            Outcome::Ok(_) | Outcome::Consent(..) => {
                Ok(self.receipt_reply(receipt, false, true, req.budget))
            }
            Outcome::Forbidden { need, reasons } => Err(auth::forbidden("COMMIT", &need, &reasons)),
            Outcome::Unauthorized(reason) => Err(auth::unauthorized(&reason)),
        }
    }

    /// Applies the proposal's action and records the receipt (§5.2). On
    /// failure the spend reservation is released (§6.3).
    pub(super) fn execute(
        &self,
        rec: &ProposalRecord<A::Action>,
        principal: PublicKey,
        holder: PublicKey,
        reservation: Option<Reservation>,
        events: &mut Vec<Value>,
    ) -> Result<Arc<ReceiptRecord<A::Action>>, ParleyError> {
        let mut progress = Progress::default();
        let applied = self.app.apply(&rec.action, &mut progress);
        events.extend(
            progress
                .into_events()
                .into_iter()
                .map(|(message, p)| json!({"kind": "EVENT", "message": message, "progress": p})),
        );
        let result = match applied {
            Ok(result) => result,
            Err(e) => {
                if let Some(r) = &reservation {
                    self.ledger.release(r);
                }
                return Err(e);
            }
        };
        let at = self.clock.now();
        let until = rec.undo_window.map(|w| at.saturating_add(w));
        let id = random_id("r");
        let mut receipt = json!({
            "id": id,
            "proposal": rec.id,
            "capability": rec.capability,
            "summary": rec.summary,
            "at": at,
            "effects": rec.effects,
            "undo": until.map_or(Value::Null, |u| json!({"until": u})),
            "result": result.clone(),
        });
        // §5.2: a receipt carries what the proposal reported it uses.
        if let Some((field, usage)) = usage_field(self.dialect, rec.cost.as_ref(), &rec.uses) {
            receipt[field] = usage;
        }
        let record = Arc::new(ReceiptRecord {
            id,
            capability: rec.capability.clone(),
            principal,
            holder,
            until,
            receipt,
            action: rec.action.clone(),
            result,
            undone: tokio::sync::Mutex::new(None),
        });
        self.store.add_receipt(record.clone());
        Ok(record)
    }

    /// A RECEIPT reply for a receipt record, fitted to `budget`.
    pub(super) fn receipt_reply(
        &self,
        r: &ReceiptRecord<A::Action>,
        auto: bool,
        replay: bool,
        budget: usize,
    ) -> Value {
        let mut body = json!({"kind": "RECEIPT", "receipt": r.receipt});
        if auto {
            body["auto"] = json!(true);
        }
        if replay {
            body["replay"] = json!(true);
        }
        self.fit(body, budget, Some(&r.holder), &r.capability)
    }
}
