//! # parley-custody
//!
//! The custody engine: the only code that holds the principal key and the
//! only way an agent can get anything signed (ARCHITECTURE.md). No GUI.
#![forbid(unsafe_code)]
pub mod activity;
pub mod agent_access;
pub mod approval;
pub mod approver;
pub mod audit;
pub mod client;
pub mod desktop;
pub mod display;
pub mod engine;
pub mod fingerprint;
pub mod ipc;
pub mod keystore;
pub mod logging;
pub mod paths;
pub mod protocol;
pub mod queue;
pub mod review;
pub mod server;
mod signer;
pub mod stepup;
pub mod summary_cost;
pub mod terminal;
pub mod unusual;
pub mod widening;
