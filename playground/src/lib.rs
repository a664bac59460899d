//! # parley-playground
//!
//! Two small Parley services that keep their state in memory — `shop.example`
//! (a meal shop) and `cal.example.com` (a calendar) — and a scripted agent
//! that uses them with a grant and a consent from Parley Custody. It exists
//! for demos (`parley-playground demo`) and for end-to-end tests of custody
//! with real sockets.
//!
//! * [`service`]: just enough of a Parley service to be honest: NDJSON frames
//!   over TCP (§2), every verb (§4), proposals and receipts (§5), grants,
//!   proofs, spend reservations and consent (§6), errors (§7), budgets and
//!   `EXPAND` (§8).
//! * [`apps`]: the shop and the calendar, written against [`service::App`].
//! * [`agent`]: a Parley client over TCP and the scripted scenarios.
//! * [`jobs`]: a local MCP job server (YEA job-tool approvals) and its client.
//! * [`clock`]: time is injected, so the tests are deterministic.
//! * [`cli`], [`commands`]: `parley-playground serve | agent | demo`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod agent;
pub mod apps;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod ids;
pub mod jobs;
pub mod service;
