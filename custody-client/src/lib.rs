//! # parley-custody-client
//!
//! The agent side of the custody protocol v1 (`docs/custody-protocol.md`):
//! everything an untrusted agent, the `parley` CLI or the playground needs to
//! ask custody for something, and nothing more.
//!
//! - [`protocol`]: the messages, requests and replies, and how each side
//!   validates what the other sent;
//! - [`frame`]: NDJSON frames with bounded memory (both ends use it);
//! - [`client`]: the async client, one request at a time, every wait bounded;
//! - [`socket`]: where the custody socket is, and connecting to it;
//! - [`display`]: the display-safety rule for untrusted text shown to a human;
//! - [`phrase`]: the confirmation phrase of a YEA job approval;
//! - [`yea_store`]: YEA's approval store on disk (the consent files);
//! - [`private_fs`]: files (0600) and directories (0700) only this user may
//!   read, for custody and agents alike;
//! - [`ui_constants`]: the values the desktop UI shares with custody (the
//!   approve delay, zero-decimal currencies, the field cut), and the
//!   TypeScript file generated from them.
//!
//! Why a crate of its own: the trust boundary is then visible in the tree.
//! This crate has no key store, signer, audit log or SQLite in its
//! dependency tree, so code that links only it cannot hold or reach the
//! principal key even by mistake (`scripts/test.sh` checks the playground's
//! tree). The custody engine (`parley-custody`) depends on this crate and
//! re-exports these modules under its old paths.
#![forbid(unsafe_code)]

pub mod client;
pub mod display;
pub mod frame;
pub mod phrase;
pub mod private_fs;
pub mod protocol;
pub mod socket;
pub mod ui_constants;
pub mod yea_store;
