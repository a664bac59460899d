//! "Approve for a while" in a review window (issue 30, item 4): what the
//! engine offers for this request (bounds, amounts, words), or `null` when
//! nothing is offered (a grant request, a job code, no money, frozen). The
//! choice itself travels with `review_decide` (`for_a_while`), where the
//! engine checks it again: the window only offers.

use super::{request_id, R};
use crate::desktop::service::Desktop;
use crate::engine::OfferView;

/// The offer for pending request `id`, or `None`.
pub async fn review_for_a_while(state: &Desktop, id: String) -> R<Option<OfferView>> {
    request_id(&id)?;
    let core = state.core()?;
    Ok(core.engine.for_a_while_offer(&id).ok())
}
