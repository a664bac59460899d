//! UNDO (§4.5): reverses a receipt inside its window.
//!
//! Authorized by a grant rooted in the same principal as the original
//! commit, with `can` checked against the receipt's capability (§6.3). An
//! undone receipt answers its original reversal again with `"replay": true`;
//! a closed window (or an irreversible receipt) is `expired`.

use super::auth::Outcome;
use super::error::ParleyError;
use super::request::{Request, Verb};
use super::{App, Service};
use crate::ids::random_id;
use parley_core::lens;
use parley_core::proof::Target;
use serde_json::{json, Value};

impl<A: App> Service<A> {
    pub(super) async fn undo(&self, req: &Request) -> Result<Value, ParleyError> {
        let id = req.field("receipt")?;
        let rec = self.store.receipt(id).ok_or_else(|| {
            ParleyError::not_found(format!("{} has no receipt {id:?}", self.info.id))
        })?;
        if req.grants.is_empty() {
            return Err(ParleyError::unauthorized(
                "UNDO needs a grant from your principal and a proof of possession (§4.5)",
            ));
        }
        let now = self.clock.now();
        let target = Target::Undo { receipt: &rec.id };
        let presented = self
            .presented(req, &target, now)?
            .ok_or_else(|| ParleyError::unauthorized("UNDO needs a proof of possession"))?;
        let ctx = self.context(Verb::Undo, &rec.capability, now);
        let outcome = presented.evaluate(&ctx, Some(&rec.principal));
        if let Some(e) = outcome.refusal("UNDO") {
            return Err(e);
        }
        debug_assert!(matches!(outcome, Outcome::Ok(_)));

        let mut undone = rec.undone.lock().await;
        if let Some(reversal) = undone.as_ref() {
            let body = json!({"kind": "RECEIPT", "receipt": reversal, "replay": true});
            return Ok(self.fit(body, req.budget, Some(&presented.key), &rec.capability));
        }
        match rec.until {
            None => {
                return Err(ParleyError::expired(format!(
                    "receipt {id} cannot be undone: the action was irreversible (undo: null)"
                )))
            }
            Some(until) if now > until => {
                return Err(ParleyError::expired(format!(
                    "the undo window of receipt {id} closed at {}",
                    lens::time(until)
                )))
            }
            Some(_) => {}
        }
        let reversal = self.app.revert(&rec.action, &rec.result)?;
        let mut receipt = json!({
            "id": random_id("r"),
            "undoes": rec.id,
            "proposal": rec.receipt["proposal"],
            "capability": rec.capability,
            "summary": rec.receipt["summary"],
            "at": now,
            "effects": super::intent::effects_in(reversal.effects, self.dialect),
            "undo": null,
        });
        // Parley receipts always say `cost` (null: an undo costs nothing);
        // YEA's omit `uses` when nothing is used (§5.2).
        if let Some((field, usage)) =
            super::intent::usage_field(self.dialect, None, &parley_core::quantity::Uses::default())
        {
            receipt[field] = usage;
        }
        if let Some(result) = reversal.result {
            receipt["result"] = result;
        }
        *undone = Some(receipt.clone());
        let body = json!({"kind": "RECEIPT", "receipt": receipt});
        Ok(self.fit(body, req.budget, Some(&presented.key), &rec.capability))
    }
}
