//! The agent side: a Parley connection over TCP ([`conn`]), the verbs with
//! grants and proofs ([`client`]), the agent's key file ([`key`]), the
//! printed transcript ([`transcript`]) and the scripted walk through the
//! scenarios with a grant and a consent from Parley Custody ([`scenario`]).

pub mod client;
pub mod conn;
pub mod key;
pub mod scenario;
pub mod transcript;
