//! The custody socket: how agents reach custody (ARCHITECTURE.md, "ipc";
//! wire reference in `docs/custody-protocol.md`).
//!
//! One responsibility per module:
//! - [`frame`]: NDJSON framing with bounded memory (§2.1, §2.3), shared with
//!   agents and re-exported from `parley_custody_client::frame`;
//! - [`peer`]: who the peer is (kernel credentials) and the peer policy;
//! - [`process_chain`]: the peer's parents up to its session's opener (a hint);
//! - [`socket`]: the socket path (resolved by the client crate's rule), its
//!   permissions, stale-socket handling and admission (policy, then
//!   connection caps) before any byte is read.
//!
//! The request/reply types live in [`crate::protocol`] (also agent-side,
//! from `parley_custody_client`).

/// The NDJSON frame reader/writer, agent-side code used by both ends: custody
/// reads agents' frames with it, agents read custody's.
pub use parley_custody_client::frame;
pub mod peer;
pub mod process_chain;
pub mod socket;

pub use frame::{Frame, FrameError, FrameReader, FrameWriter, MAX_FRAME};
pub use peer::{PeerInfo, PeerPolicy, Refusal};
pub use socket::{BindOptions, ConnLimits, Listener, SocketError, SocketPath, Stream};
