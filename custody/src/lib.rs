//! # parley-custody
//!
//! The custody engine: the only code that holds the principal key and the
//! only way an agent can get anything signed (ARCHITECTURE.md). No GUI.
#![forbid(unsafe_code)]
pub mod audit;
pub mod keystore;
pub mod paths;
pub mod ipc;
pub mod protocol;
