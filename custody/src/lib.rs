//! # parley-custody
//!
//! The custody engine: the only code that holds the principal key and the
//! only way an agent can get anything signed (ARCHITECTURE.md). No GUI.
//!
//! The agent side of the protocol (messages, framing, the client, the
//! display rule, finding and connecting to the socket) is the separate crate
//! `parley-custody-client`, which links no key store, signer, audit log or
//! SQLite; it is re-exported here under its old paths (`protocol`, `client`,
//! `display`, `ipc::frame`), so custody and its tests use one copy.
//!
//! No unsafe code, but for one call into the C library in [`allocator`]
//! (glibc's `malloc_trim`, which has no safe binding); every other module
//! is held to `deny(unsafe_code)`, and that module allows it for that call
//! alone.
#![deny(unsafe_code)]
pub mod activity;
pub mod admin;
pub mod agent_access;
pub mod allocator;
pub mod approval;
pub mod approver;
pub mod audit;
pub use parley_custody_client::client;
pub mod desktop;
pub use parley_custody_client::display;
pub mod engine;
pub mod fingerprint;
pub mod for_a_while;
pub mod hardening;
pub mod ipc;
pub mod keystore;
pub mod local_time;
pub mod logging;
pub mod paths;
pub mod prompt_owners;
pub use parley_custody_client::protocol;
pub mod queue;
pub mod review;
pub mod revoke;
pub mod server;
pub mod session;
mod signer;
pub mod startup;
pub mod stepup;
pub mod summary_cost;
pub mod terminal;
pub mod unusual;
pub mod widening;
