//! Grants (§6): signed delegation chains.
//!
//! A token decodes into an [`UnverifiedGrant`]. Only [`UnverifiedGrant::verify`]
//! (signatures, `prev` links, a trusted issuer, the holder = the proof key)
//! turns it into a [`VerifiedGrant`], and only a `VerifiedGrant` can be
//! evaluated against a request. So no code path can evaluate caveats of a
//! chain whose signatures were never checked, or whose root nobody trusts.
//! [`UnverifiedGrant::verify_chain`] checks the signatures alone, for tools
//! that show or extend a chain; what it returns, a [`SignedChain`], has no
//! way to be evaluated.
//!
//! The files, by responsibility: `block.rs` one signed block and its id;
//! `unverified.rs` a decoded chain (decode, encode, the signature and trust
//! checks, issuing and delegating); `verified.rs` what the checks give
//! ([`SignedChain`], [`VerifiedGrant`]) and the evaluation of a request
//! ([`Decision`]).

use crate::b64;
use crate::caveat::RequestContext;
use crate::json;
use crate::keys::PublicKey;

mod block;
mod unverified;
mod verified;

pub use block::{block_id, Block};
pub use unverified::UnverifiedGrant;
pub use verified::{Decision, SignedChain, VerifiedGrant};

/// The token prefix (§6.2).
pub const TOKEN_PREFIX: &str = "pg1.";
/// Longest token accepted, in bytes. Real grants are well under 4 KiB; the
/// bound keeps decoding cheap whatever an agent sends.
pub const MAX_TOKEN_BYTES: usize = 64 * 1024;
/// Longest chain accepted. Each block costs one signature check.
pub const MAX_BLOCKS: usize = 16;
/// Most caveats accepted in one block.
pub const MAX_CAVEATS_PER_BLOCK: usize = 64;

/// Why a token is not a usable grant. Every variant maps to `unauthorized`
/// (§7), except [`GrantError::Unsignable`], which is raised before signing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// Missing `pg1.` prefix.
    #[error("a grant token starts with \"pg1.\"")]
    Prefix,
    /// Over [`MAX_TOKEN_BYTES`].
    #[error("the grant token is {0} bytes; the limit is {MAX_TOKEN_BYTES}")]
    TooLong(usize),
    /// Not base64url.
    #[error("the grant token is not valid: {0}")]
    Encoding(b64::B64Error),
    /// Not strict JSON.
    #[error("the grant token does not hold valid JSON: {0}")]
    Json(json::JsonError),
    /// Valid JSON, wrong shape.
    #[error("the grant token is malformed: {0}")]
    Malformed(String),
    /// A block's signature does not verify.
    #[error("block {index}: the signature does not verify")]
    BadSignature {
        /// 0 is the root block.
        index: usize,
    },
    /// A delegation block's `prev` does not name the block before it.
    #[error("block {index}: prev does not match the previous block")]
    BrokenChain {
        /// The block whose `prev` is wrong.
        index: usize,
    },
    /// The root issuer is not among the trusted principals.
    #[error("the issuer {0} is not a trusted principal")]
    Untrusted(String),
    /// The proof key is not the grant's holder.
    #[error("the proof key is not this grant's holder")]
    NotHolder,
    /// Refused to sign: the input would make a grant services reject.
    #[error("cannot sign this grant: {0}")]
    Unsignable(String),
}

/// Decodes, verifies and evaluates a token in one step, mapping every
/// decode or verification failure to `unauthorized` (§6.4).
pub fn authorize(
    token: &str,
    trusted: &[PublicKey],
    proof_key: &PublicKey,
    ctx: &RequestContext,
) -> Decision {
    match UnverifiedGrant::decode(token).and_then(|g| g.into_verified(trusted, proof_key)) {
        Ok(g) => g.evaluate(ctx),
        Err(e) => Decision::Unauthorized {
            reason: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
