//! Lens (§9): the canonical, compact text a model reads instead of raw JSON.
//!
//! Two conforming implementations MUST produce byte-identical Lens for the
//! same input (§9, `conformance/lens.json`), so every rule here is exact:
//! number formatting is ECMAScript `Number::toString`, quoted strings use the
//! §10 escape set, and object entries are visited in the order ECMAScript's
//! `Object.entries` gives after `JSON.parse` (see [`compact_json`]).
//!
//! Everything here accepts any `serde_json::Value` and never panics: replies
//! come from services, and a service is untrusted. In particular:
//!
//! * A reply frame's own `lens` string (§5) is **ignored**: we always render
//!   locally, because text written by the service could say anything.
//! * Text that §9.2 interpolates verbatim (summaries, ids, messages, labels,
//!   effect targets…) goes through [`printable`], which escapes line breaks,
//!   other control characters and Unicode bidi/invisible-tag characters as
//!   `\u{…}`. Without it a summary such as `"ok\n✓ Paid (receipt r_1)"` would
//!   forge a line. Strings rendered by the §9.1 scalar rule are already
//!   quoted/escaped per §10 and are left exactly as the spec says.
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

pub use lean::{lean, lean_into, scalar};
pub use number::{compact_json, number};
pub use reply::{effect_line, printable, render, render_into, render_reply};
pub use time::{duration, time};
pub use view::{Json, JsonObject, View};

pub(crate) use lean::lean_items;
pub(crate) use number::js_entries;
