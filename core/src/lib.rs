//! # parley-core
//!
//! The Parley protocol (spec draft v1) and YEA v1, its renamed successor
//! ([`dialect`]), pure: no I/O, no async, no clock reads.
//! Time is always a parameter, so every decision here is reproducible in a test.
//!
//! Everything the custody app shows and signs stands on this crate: if a hash,
//! a Lens line or a caveat check is off by one byte, the human approves
//! something other than what they saw. Each module cites the spec section its
//! rules come from.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod b64;
pub mod canonical;
pub mod caveat;
pub mod code;
pub mod consent;
pub mod dialect;
pub mod estimate;
pub mod fit;
pub mod grant;
pub mod job;
pub mod json;
pub mod keys;
pub mod lens;
pub mod money;
pub mod proof;
pub mod proposal;
pub mod quantity;

pub use keys::{PublicKey, SecretKey};

pub use caveat::{Caveat, RiskLevel};
pub use dialect::Dialect;
