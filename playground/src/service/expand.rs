//! EXPAND (§4.6, §8): the next slice of a value elided to fit a budget.
//!
//! A handle made for a request that carried a verified proof is bound to
//! that key: expanding it needs a proof from the same key (target: the
//! handle). Grants are optional, but presented ones must cover an EXPAND of
//! the capability the handle came from. The slice is fitted to the new
//! budget in turn, possibly with further handles.

use super::error::ParleyError;
use super::request::{Request, Verb};
use super::{App, Service};
use parley_core::lens;
use parley_core::proof::Target;
use serde_json::{json, Value};

impl<A: App> Service<A> {
    pub(super) fn expand(&self, req: &Request) -> Result<Value, ParleyError> {
        let handle = req.field("handle")?;
        let rec = self.store.handle(handle).ok_or_else(|| {
            ParleyError::not_found(format!("{} has no handle {handle:?}", self.info.id))
                .fix("send the original request again")
        })?;
        let now = self.clock.now();
        if now >= rec.expires {
            return Err(ParleyError::expired(format!(
                "handle {handle} expired at {}",
                lens::time(rec.expires)
            ))
            .fix("send the original request again"));
        }
        let target = Target::Expand { handle };
        let presented = self.presented(req, &target, now)?;
        if let Some(bound) = &rec.key {
            match &presented {
                None => {
                    return Err(ParleyError::unauthorized(
                        "this handle belongs to the key that made the request: EXPAND it with a proof from that key (target: the handle)",
                    ))
                }
                Some(p) if &p.key != bound => {
                    return Err(ParleyError::forbidden(
                        "this handle belongs to another agent key",
                    ))
                }
                Some(_) => {}
            }
        }
        // Handles of a BRIEF belong to no capability; there is nothing for
        // `can` to judge.
        if !rec.capability.is_empty() {
            self.authorize_read(presented.as_ref(), Verb::Expand, &rec.capability, now)?;
        }
        let key = presented.as_ref().map(|p| &p.key).or(rec.key.as_ref());
        Ok(self.fit(
            json!({"kind": "ANSWER", "data": rec.rest}),
            req.budget,
            key,
            &rec.capability,
        ))
    }
}
