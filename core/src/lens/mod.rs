//! Lens (§9): the canonical, compact text a model reads instead of raw JSON.
//!
//! Two conforming implementations MUST produce byte-identical Lens for the
//! same input (§9, `conformance/lens*.json`), so every rule here is exact:
//! number formatting is ECMAScript `Number::toString`, quoted strings use the
//! §10 escape set, object entries are in insertion order (also integer-like
//! keys, which a JavaScript object would move first), and text that §9.2
//! interpolates verbatim is written as it is.
//!
//! Everything here accepts any `serde_json::Value` and never panics: replies
//! come from services, and a service is untrusted. In particular:
//!
//! * A reply frame's own `lens` string (§5) is **ignored**: we always render
//!   locally, because text written by the service could say anything.
//! * Text that §9.2 interpolates verbatim (summaries, ids, messages, labels,
//!   effect targets…) is written exactly as the service wrote it, hidden
//!   characters and line breaks included: that is the Lens every conforming
//!   implementation writes, and what a program (a model's pipe) must get.
//!   A human's screen is another matter: [`render_lines`] gives the lines
//!   Lens made, so that a screen can escape each one (a service's own line
//!   break included) with `parley_custody_client::display::safe`, as
//!   `parley lens` does on a terminal and custody's review does for effect
//!   lines.
//! * A frame whose kind is unknown, or whose structure the §9.2 rendering
//!   needs is malformed (a list that is not a list of objects, a `receipt`
//!   that is not an object, …), is rendered as the lean notation of the frame
//!   without its envelope keys (`parley`, `id`, `re`) and without `lens`. So
//!   nothing is hidden and nothing is invented. Malformed *leaf* fields (a
//!   numeric summary, a cost without a currency, a string `expires`) render
//!   their value as it is instead (see [`render_reply`]).

mod lean;
mod number;
mod reply;
mod time;
mod view;

pub use lean::{lean, lean_into, lean_lines, scalar};
pub use number::{compact_json, number};
pub use reply::{effect_line, effect_line_in, render, render_into, render_lines, render_reply};
pub use time::{duration, time};
pub use view::{Json, JsonObject, View};

pub(crate) use lean::lean_items;
