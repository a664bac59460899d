//! A decoded grant before any check ([`UnverifiedGrant`]): decoding and
//! encoding the token, the signature and trust checks that lead to a
//! [`SignedChain`] or a [`VerifiedGrant`], and issuing and delegating.

use super::block::Block;
use super::{
    GrantError, SignedChain, VerifiedGrant, MAX_BLOCKS, MAX_CAVEATS_PER_BLOCK, MAX_TOKEN_BYTES,
    TOKEN_PREFIX,
};
use crate::b64;
use crate::canonical::canonical;
use crate::caveat::Caveat;
use crate::json::{self, Limits};
use crate::keys::{PublicKey, SecretKey};
use serde_json::{json, Map, Value};

/// A decoded grant whose signatures have not been checked. It can be
/// inspected and re-encoded, never evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnverifiedGrant {
    pub(super) blocks: Vec<Block>,
}

impl UnverifiedGrant {
    /// Decodes a `pg1.` token (§6.2), checking its structure only.
    pub fn decode(token: &str) -> Result<UnverifiedGrant, GrantError> {
        let token = token.trim();
        if token.len() > MAX_TOKEN_BYTES {
            return Err(GrantError::TooLong(token.len()));
        }
        let body = token.strip_prefix(TOKEN_PREFIX).ok_or(GrantError::Prefix)?;
        let bytes = b64::decode(body).map_err(GrantError::Encoding)?;
        let limits = Limits {
            max_depth: 16,
            max_bytes: MAX_TOKEN_BYTES,
        };
        let value = json::parse(&bytes, limits).map_err(GrantError::Json)?;
        let Value::Array(list) = value else {
            return Err(GrantError::Malformed("a grant is a list of blocks".into()));
        };
        if list.is_empty() {
            return Err(GrantError::Malformed(
                "a grant has at least one block".into(),
            ));
        }
        if list.len() > MAX_BLOCKS {
            return Err(GrantError::Malformed(format!(
                "a grant has at most {MAX_BLOCKS} blocks"
            )));
        }
        let blocks = list
            .into_iter()
            .enumerate()
            .map(|(i, b)| Block::parse(b, i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(UnverifiedGrant { blocks })
    }

    /// The token: `"pg1." + b64url(utf8(canonical(blocks)))`.
    pub fn encode(&self) -> String {
        let list = Value::Array(self.blocks.iter().map(Block::to_value).collect());
        // Every payload was canonicalized when the block was built or decoded.
        let text = canonical(&list).unwrap_or_default();
        format!("{TOKEN_PREFIX}{}", b64::encode(text))
    }

    /// The blocks, root first.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The root issuer (the principal).
    pub fn issuer(&self) -> &str {
        self.blocks[0]
            .iss
            .as_ref()
            .map(|k| k.text.as_str())
            .unwrap_or("")
    }

    /// The holder: `sub` of the last block.
    pub fn holder(&self) -> &str {
        &self.blocks[self.blocks.len() - 1].sub.text
    }

    /// The grant id: the root block's id.
    pub fn id(&self) -> String {
        self.blocks[0].id()
    }

    /// The earliest expiry over all blocks, if any block has one.
    pub fn expiry(&self) -> Option<i64> {
        self.blocks.iter().filter_map(Block::expiry).min()
    }

    /// §6.4: checks the signatures and `prev` links, that the root issuer is
    /// trusted, and that `holder` (the proof key) is the grant's holder.
    pub fn verify(
        &self,
        trusted: &[PublicKey],
        holder: &PublicKey,
    ) -> Result<VerifiedGrant, GrantError> {
        let ids = self.verified_ids(trusted, holder)?;
        Ok(VerifiedGrant {
            grant: self.clone(),
            ids,
        })
    }

    /// [`verify`](Self::verify) for a grant that is not needed afterwards:
    /// the same checks, without copying the chain into the `VerifiedGrant`.
    pub(super) fn into_verified(
        self,
        trusted: &[PublicKey],
        holder: &PublicKey,
    ) -> Result<VerifiedGrant, GrantError> {
        let ids = self.verified_ids(trusted, holder)?;
        Ok(VerifiedGrant { grant: self, ids })
    }

    /// The checks of [`verify`](Self::verify); the block ids on success.
    fn verified_ids(
        &self,
        trusted: &[PublicKey],
        holder: &PublicKey,
    ) -> Result<Vec<String>, GrantError> {
        let root = &self.blocks[0];
        let iss = root
            .iss
            .as_ref()
            .ok_or(GrantError::Malformed("root has no iss".into()))?;
        if !trusted.iter().any(|t| t.as_bytes() == &iss.bytes) {
            return Err(GrantError::Untrusted(iss.text.clone()));
        }
        if self.blocks[self.blocks.len() - 1].sub.bytes != *holder.as_bytes() {
            return Err(GrantError::NotHolder);
        }
        self.chain_ids()
    }

    /// Checks signatures and links without a trust decision; for tools that
    /// show a chain (`parley inspect`) and for delegation. Anyone can sign a
    /// chain with a key of their own, so the result is a [`SignedChain`],
    /// which cannot be evaluated: a request is authorized only through
    /// [`verify`](Self::verify).
    pub fn verify_chain(&self) -> Result<SignedChain<'_>, GrantError> {
        let ids = self.chain_ids()?;
        Ok(SignedChain { grant: self, ids })
    }

    /// The checks of [`verify_chain`](Self::verify_chain): each block's
    /// signature by the key the previous block delegated to (the root's by
    /// its issuer) and its `prev` link. The block ids on success.
    fn chain_ids(&self) -> Result<Vec<String>, GrantError> {
        let mut ids: Vec<String> = Vec::with_capacity(self.blocks.len());
        for (i, block) in self.blocks.iter().enumerate() {
            let signer = match (&block.iss, i) {
                (Some(iss), 0) => iss.point(0)?,
                _ => self.blocks[i - 1].sub.point(i)?,
            };
            if i > 0 && block.prev.as_deref() != Some(ids[i - 1].as_str()) {
                return Err(GrantError::BrokenChain { index: i });
            }
            signer
                .verify(block.signed.as_bytes(), &block.sig)
                .map_err(|_| GrantError::BadSignature { index: i })?;
            ids.push(block.id());
        }
        Ok(ids)
    }

    /// Issues a root grant (§6.2) from the principal to `holder`. Refuses
    /// caveats that are not well formed and a grant without an `exp`
    /// when `require_exp` is set by the caller's policy.
    pub fn issue_root(
        principal: &SecretKey,
        holder: &PublicKey,
        caveats: &[Caveat],
        iat: i64,
        nonce: &str,
    ) -> Result<UnverifiedGrant, GrantError> {
        check_signable(caveats)?;
        if nonce.is_empty() {
            return Err(GrantError::Unsignable("the nonce must not be empty".into()));
        }
        let mut p = Map::new();
        p.insert("iss".into(), Value::String(principal.public().to_string()));
        p.insert("sub".into(), Value::String(holder.to_string()));
        p.insert("caveats".into(), caveats_value(caveats));
        p.insert("iat".into(), json!(iat));
        p.insert("nonce".into(), Value::String(nonce.to_string()));
        Ok(UnverifiedGrant {
            blocks: vec![Block::sign(p, principal, 0)?],
        })
    }

    /// Appends a delegation block (§6.2): the current holder passes a
    /// narrower grant to `to`. Caveats only accumulate, so the result can
    /// never authorize more than this grant.
    pub fn delegate(
        &self,
        holder: &SecretKey,
        to: &PublicKey,
        caveats: &[Caveat],
        iat: i64,
    ) -> Result<UnverifiedGrant, GrantError> {
        check_signable(caveats)?;
        if self.blocks.len() >= MAX_BLOCKS {
            return Err(GrantError::Unsignable(format!(
                "a grant has at most {MAX_BLOCKS} blocks"
            )));
        }
        let last = &self.blocks[self.blocks.len() - 1];
        if holder.public().as_bytes() != &last.sub.bytes {
            return Err(GrantError::Unsignable(
                "only the grant's holder can delegate it: this key is not the holder".into(),
            ));
        }
        let mut p = Map::new();
        p.insert("prev".into(), Value::String(last.id()));
        p.insert("sub".into(), Value::String(to.to_string()));
        p.insert("caveats".into(), caveats_value(caveats));
        p.insert("iat".into(), json!(iat));
        let mut blocks = self.blocks.clone();
        blocks.push(Block::sign(p, holder, self.blocks.len())?);
        Ok(UnverifiedGrant { blocks })
    }
}

fn caveats_value(caveats: &[Caveat]) -> Value {
    Value::Array(caveats.iter().map(Caveat::to_value).collect())
}

fn check_signable(caveats: &[Caveat]) -> Result<(), GrantError> {
    if caveats.len() > MAX_CAVEATS_PER_BLOCK {
        return Err(GrantError::Unsignable(format!(
            "more than {MAX_CAVEATS_PER_BLOCK} caveats"
        )));
    }
    if let Some(Caveat::Invalid { why, .. }) = caveats.iter().find(|c| !c.is_well_formed()) {
        return Err(GrantError::Unsignable(format!("malformed caveat: {why}")));
    }
    // A block mixing Parley limits (per/spend) with YEA ones (each/total)
    // fails closed in both dialects: never sign one.
    if !crate::Dialect::ALL
        .iter()
        .any(|d| caveats.iter().all(|c| c.is_well_formed_in(*d)))
    {
        return Err(GrantError::Unsignable(
            "the caveats mix Parley limits (per, spend) with YEA limits (each, total); \
             no service of either dialect would accept them"
                .into(),
        ));
    }
    Ok(())
}
