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

use crate::b64;
use crate::canonical::{canonical, canonical_object, MAX_SAFE_INTEGER};
use crate::caveat::{Caveat, RequestContext, Verdict};
use crate::json::{self, Limits};
use crate::keys::{PublicKey, SecretKey, Signature, KEY_PREFIX};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

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

/// A key as written in a block: kept as text (what was signed) and raw
/// bytes; decompressed to a curve point only when a signature needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyText {
    text: String,
    bytes: [u8; 32],
}

impl KeyText {
    fn parse(v: Option<&Value>, field: &str, index: usize) -> Result<KeyText, GrantError> {
        let text = v.and_then(Value::as_str).ok_or_else(|| {
            GrantError::Malformed(format!(
                "block {index}: {field} must be a public key string"
            ))
        })?;
        let bytes = text
            .strip_prefix(KEY_PREFIX)
            .and_then(|rest| b64::decode_array::<32>(rest).ok())
            .ok_or_else(|| {
                GrantError::Malformed(format!("block {index}: {field} is not an ed25519: key"))
            })?;
        Ok(KeyText {
            text: text.to_string(),
            bytes,
        })
    }

    fn point(&self, index: usize) -> Result<PublicKey, GrantError> {
        PublicKey::from_bytes(&self.bytes).map_err(|_| {
            GrantError::Malformed(format!("block {index}: key is not a valid Ed25519 point"))
        })
    }
}

/// One block `{"p": payload, "s": signature}` (§6.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    payload: Map<String, Value>,
    signed: String,
    sig_text: String,
    sig: Signature,
    iss: Option<KeyText>,
    sub: KeyText,
    prev: Option<String>,
    iat: i64,
    caveats: Vec<Caveat>,
}

impl Block {
    /// The payload exactly as signed.
    pub fn payload(&self) -> &Map<String, Value> {
        &self.payload
    }
    /// The caveats of this block, parsed (invalid ones kept as [`Caveat::Invalid`]).
    pub fn caveats(&self) -> &[Caveat] {
        &self.caveats
    }
    /// `iss` (root block only).
    pub fn issuer(&self) -> Option<&str> {
        self.iss.as_ref().map(|k| k.text.as_str())
    }
    /// `sub`: whom this block delegates to.
    pub fn subject(&self) -> &str {
        &self.sub.text
    }
    /// `iat`.
    pub fn issued_at(&self) -> i64 {
        self.iat
    }
    /// The signature as written.
    pub fn signature(&self) -> &str {
        &self.sig_text
    }
    /// The block id: b64url(sha256(utf8(s))) (§6.2).
    pub fn id(&self) -> String {
        block_id(&self.sig_text)
    }
    /// The earliest `exp` caveat of this block, if any.
    pub fn expiry(&self) -> Option<i64> {
        self.caveats
            .iter()
            .filter_map(|c| match c {
                Caveat::Exp(t) => Some(*t),
                _ => None,
            })
            .min()
    }

    /// Reads one block, taking ownership of its JSON so that the payload and
    /// the signature text move into the block instead of being copied.
    fn parse(v: Value, index: usize) -> Result<Block, GrantError> {
        let mal = |m: &str| GrantError::Malformed(format!("block {index}: {m}"));
        let Value::Object(obj) = v else {
            return Err(mal("must be an object"));
        };
        if obj.len() != 2 {
            return Err(mal("must have exactly the fields p and s"));
        }
        if !matches!(obj.get("p"), Some(Value::Object(_))) {
            return Err(mal("p must be an object"));
        }
        if !matches!(obj.get("s"), Some(Value::String(_))) {
            return Err(mal("s must be a signature string"));
        }
        // Exactly `p` and `s`, checked above: take both out without copies.
        let (mut payload, mut sig_text) = (Map::new(), String::new());
        for (k, v) in obj {
            match (k.as_str(), v) {
                ("p", Value::Object(p)) => payload = p,
                ("s", Value::String(s)) => sig_text = s,
                _ => {}
            }
        }
        let sig: Signature = sig_text
            .parse()
            .map_err(|_| mal("s is not a 64-byte signature"))?;
        let expected: &[&str] = if index == 0 {
            &["caveats", "iat", "iss", "nonce", "sub"]
        } else {
            &["caveats", "iat", "prev", "sub"]
        };
        if payload.len() != expected.len() || !expected.iter().all(|k| payload.contains_key(*k)) {
            return Err(mal(&format!(
                "payload must have exactly the fields {}",
                expected.join(", ")
            )));
        }
        let (iss, prev) = if index == 0 {
            payload
                .get("nonce")
                .and_then(Value::as_str)
                .ok_or_else(|| mal("nonce must be a string"))?;
            (
                Some(KeyText::parse(payload.get("iss"), "iss", index)?),
                None,
            )
        } else {
            let prev = payload
                .get("prev")
                .and_then(Value::as_str)
                .ok_or_else(|| mal("prev must be a string"))?;
            (None, Some(prev.to_string()))
        };
        let sub = KeyText::parse(payload.get("sub"), "sub", index)?;
        let iat = payload
            .get("iat")
            .and_then(Value::as_i64)
            .filter(|t| t.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
            .ok_or_else(|| mal("iat must be an integer"))?;
        let raw_caveats = payload
            .get("caveats")
            .and_then(Value::as_array)
            .ok_or_else(|| mal("caveats must be a list"))?;
        if raw_caveats.len() > MAX_CAVEATS_PER_BLOCK {
            return Err(mal(&format!("more than {MAX_CAVEATS_PER_BLOCK} caveats")));
        }
        let caveats = raw_caveats.iter().map(Caveat::parse).collect();
        // The signed bytes: canonicalized once, straight from the parsed map.
        let signed = canonical_object(&payload).map_err(|e| mal(&e.to_string()))?;
        Ok(Block {
            payload,
            signed,
            sig_text,
            sig,
            iss,
            sub,
            prev,
            iat,
            caveats,
        })
    }

    fn sign(
        payload: Map<String, Value>,
        signer: &SecretKey,
        index: usize,
    ) -> Result<Block, GrantError> {
        let signed =
            canonical_object(&payload).map_err(|e| GrantError::Unsignable(e.to_string()))?;
        let sig = signer.sign(signed.as_bytes());
        let block = json!({"p": Value::Object(payload), "s": sig.to_string()});
        Block::parse(block, index).map_err(|e| GrantError::Unsignable(e.to_string()))
    }

    fn to_value(&self) -> Value {
        json!({"p": Value::Object(self.payload.clone()), "s": self.sig_text})
    }
}

/// b64url(sha256(utf8(signature))) (§6.2): a block's id, and the `prev` of the next block.
pub fn block_id(signature: &str) -> String {
    b64::encode(Sha256::digest(signature.as_bytes()))
}

/// A decoded grant whose signatures have not been checked. It can be
/// inspected and re-encoded, never evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnverifiedGrant {
    blocks: Vec<Block>,
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
    fn into_verified(
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

/// A grant whose signatures and `prev` links check out from its root issuer
/// to its holder, with no trust decision made: what
/// [`UnverifiedGrant::verify_chain`] returns.
///
/// A well-signed chain proves only that its keys signed it; the issuer may be
/// a key anyone made a minute ago. So this type has no `evaluate` and does
/// not turn into a [`VerifiedGrant`]: the one way to a grant that
/// authorizes is [`UnverifiedGrant::verify`], against the trusted
/// principals and the proof key.
///
/// ```compile_fail
/// use parley_core::caveat::RequestContext;
/// use parley_core::grant::UnverifiedGrant;
///
/// fn authorize_any_signer(g: &UnverifiedGrant, ctx: &RequestContext) {
///     let chain = g.verify_chain().expect("signed");
///     // Does not compile: a chain with no trusted root is never evaluated.
///     let _ = chain.evaluate(ctx);
/// }
/// ```
///
/// What compiles instead names whom it trusts:
///
/// ```
/// use parley_core::caveat::RequestContext;
/// use parley_core::grant::{Decision, UnverifiedGrant};
/// use parley_core::PublicKey;
///
/// fn authorize(
///     g: &UnverifiedGrant,
///     trusted: &[PublicKey],
///     proof_key: &PublicKey,
///     ctx: &RequestContext,
/// ) -> Decision {
///     match g.verify(trusted, proof_key) {
///         Ok(v) => v.evaluate(ctx),
///         Err(e) => Decision::Unauthorized { reason: e.to_string() },
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedChain<'g> {
    grant: &'g UnverifiedGrant,
    ids: Vec<String>,
}

impl<'g> SignedChain<'g> {
    /// The chain as decoded (blocks, issuer, holder).
    pub fn grant(&self) -> &'g UnverifiedGrant {
        self.grant
    }

    /// Block ids, root first, as checked against each `prev` link.
    pub fn block_ids(&self) -> &[String] {
        &self.ids
    }
}

/// A grant whose chain verified under a trusted root, held by the proof key
/// (§6.4). The only type caveats are evaluated on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedGrant {
    grant: UnverifiedGrant,
    ids: Vec<String>,
}

/// The outcome of authorizing a request (§6.3, §6.6, §7).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Decision {
    /// Authorized.
    Ok,
    /// Authorized except for `per`, `spend`, `each`, `total` or `risk`: the human may consent.
    ConsentRequired {
        /// The caveats that asked for consent.
        caveats: Vec<Value>,
        /// Why, in words.
        reasons: Vec<String>,
    },
    /// A valid grant that does not cover the request.
    Forbidden {
        /// The caveats that blocked it (§7 `need`).
        need: Vec<Value>,
        /// Why, in words.
        reasons: Vec<String>,
    },
    /// Not a usable grant or proof.
    Unauthorized {
        /// Why.
        reason: String,
    },
}

impl Decision {
    /// The §7 error code, or `ok`.
    pub fn code(&self) -> &'static str {
        match self {
            Decision::Ok => "ok",
            Decision::ConsentRequired { .. } => "consent_required",
            Decision::Forbidden { .. } => "forbidden",
            Decision::Unauthorized { .. } => "unauthorized",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Decision::Ok => 3,
            Decision::ConsentRequired { .. } => 2,
            Decision::Forbidden { .. } => 1,
            Decision::Unauthorized { .. } => 0,
        }
    }

    /// §6.6: a request with several grants is authorized if any one grant
    /// authorizes it alone; otherwise the most useful refusal is reported.
    pub fn best(decisions: impl IntoIterator<Item = Decision>) -> Decision {
        decisions
            .into_iter()
            .max_by_key(Decision::rank)
            .unwrap_or(Decision::Unauthorized {
                reason: "no grant was presented".into(),
            })
    }
}

impl VerifiedGrant {
    /// The chain as decoded.
    pub fn grant(&self) -> &UnverifiedGrant {
        &self.grant
    }

    /// Block ids, root first (spend is attributed per block id).
    pub fn block_ids(&self) -> &[String] {
        &self.ids
    }

    /// What a COMMIT authorized by this grant must reserve (YEA §6.3): for
    /// every `total` caveat of every block whose measure `uses` reports, the
    /// block id, the measure and the quantity's exact value. A service adds
    /// these to its [`Used`](crate::quantity::Used) atomically with the
    /// check and before executing, and releases them if execution fails.
    pub fn total_reservations(
        &self,
        uses: &crate::quantity::Uses,
    ) -> Vec<(String, String, crate::quantity::Exact)> {
        let mut out = Vec::new();
        for (block, id) in self.grant.blocks.iter().zip(&self.ids) {
            for caveat in &block.caveats {
                if let Caveat::Total(limit) = caveat {
                    if let Some(q) = uses.get(&limit.of) {
                        let row = (id.clone(), limit.of.clone(), q.exact());
                        if !out.contains(&row) {
                            out.push(row);
                        }
                    }
                }
            }
        }
        out
    }

    /// Evaluates every caveat of every block (§6.3). Hard failures win
    /// (`forbidden`); if only `per`/`spend`/`risk` fail, `consent_required`.
    pub fn evaluate(&self, ctx: &RequestContext) -> Decision {
        let mut hard = (Vec::new(), Vec::new());
        let mut soft = (Vec::new(), Vec::new());
        for (block, id) in self.grant.blocks.iter().zip(&self.ids) {
            for caveat in &block.caveats {
                match caveat.check(ctx, id) {
                    Verdict::Pass => {}
                    Verdict::Soft(why) => {
                        soft.0.push(caveat.to_value());
                        soft.1.push(why);
                    }
                    Verdict::Hard(why) => {
                        hard.0.push(caveat.to_value());
                        hard.1.push(why);
                    }
                }
            }
        }
        if !hard.0.is_empty() {
            Decision::Forbidden {
                need: hard.0,
                reasons: hard.1,
            }
        } else if !soft.0.is_empty() {
            Decision::ConsentRequired {
                caveats: soft.0,
                reasons: soft.1,
            }
        } else {
            Decision::Ok
        }
    }
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
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    fn key(b: u8) -> SecretKey {
        SecretKey::from_seed(&Zeroizing::new([b; 32]))
    }

    #[test]
    fn issue_delegate_verify() {
        let (p, a, s) = (key(1), key(2), key(3));
        let g =
            UnverifiedGrant::issue_root(&p, &a.public(), &[Caveat::Svc(vec!["x".into()])], 10, "n")
                .unwrap();
        let d = g
            .delegate(&a, &s.public(), &[Caveat::Verbs(vec!["ASK".into()])], 11)
            .unwrap();
        let back = UnverifiedGrant::decode(&d.encode()).unwrap();
        assert_eq!(back, d);
        let v = back.verify(&[p.public()], &s.public()).unwrap();
        let ctx = RequestContext {
            service: "x".into(),
            verb: "ASK".into(),
            now: 12,
            ..Default::default()
        };
        assert_eq!(v.evaluate(&ctx), Decision::Ok);
        assert_eq!(
            back.verify(&[p.public()], &a.public()),
            Err(GrantError::NotHolder)
        );
        assert!(matches!(
            back.verify(&[a.public()], &s.public()),
            Err(GrantError::Untrusted(_))
        ));
        // Only the holder may delegate.
        assert!(g.delegate(&s, &s.public(), &[], 1).is_err());
    }

    #[test]
    fn a_signed_chain_is_not_a_trusted_grant() {
        // A stranger's key signs a well-formed chain to the agent.
        let (p, stranger, a, s) = (key(1), key(7), key(2), key(3));
        let caveats = [Caveat::Svc(vec!["x".into()])];
        let g = UnverifiedGrant::issue_root(&stranger, &a.public(), &caveats, 10, "n")
            .unwrap()
            .delegate(&a, &s.public(), &[], 11)
            .unwrap();
        let chain = g.verify_chain().expect("its signatures check out");
        assert_eq!(chain.grant(), &g);
        assert_eq!(chain.block_ids().len(), 2);
        assert_eq!(chain.block_ids()[0], g.id());
        // Only the principals decide whether it authorizes anything.
        assert_eq!(
            g.verify(&[p.public()], &s.public()),
            Err(GrantError::Untrusted(stranger.public().to_string()))
        );
        let v = g.verify(&[stranger.public()], &s.public()).unwrap();
        assert_eq!(v.block_ids(), chain.block_ids());

        // A block spliced from another chain breaks the link.
        let other = UnverifiedGrant::issue_root(&stranger, &a.public(), &caveats, 10, "m")
            .unwrap()
            .delegate(&a, &s.public(), &[], 11)
            .unwrap();
        let spliced = UnverifiedGrant {
            blocks: vec![g.blocks[0].clone(), other.blocks[1].clone()],
        };
        assert_eq!(
            spliced.verify_chain(),
            Err(GrantError::BrokenChain { index: 1 })
        );
    }

    fn yea_commit(uses: Value, used: crate::quantity::Used) -> RequestContext {
        RequestContext {
            service: "shop.example".into(),
            verb: "COMMIT".into(),
            capability: "shop.order".into(),
            now: 5,
            proposal: Some(crate::caveat::CommitFacts {
                hash: "h".into(),
                uses: Some(uses),
                risk: "low".into(),
                ..Default::default()
            }),
            used,
            dialect: crate::Dialect::YeaV1,
            ..Default::default()
        }
    }

    #[test]
    fn totals_reserve_per_block_and_measure_and_count_what_was_used() {
        let (p, a) = (key(1), key(2));
        let limit = |v: Value| Caveat::parse(&json!({ "total": v }));
        let g = UnverifiedGrant::issue_root(
            &p,
            &a.public(),
            &[
                limit(json!({"of": "emails", "max": 3})),
                limit(json!({"of": "spend", "max": 40, "unit": "USD"})),
            ],
            1,
            "n",
        )
        .unwrap()
        .verify(&[p.public()], &a.public())
        .unwrap();
        let uses =
            json!({"emails": {"amount": 2}, "spend": {"amount": 2287, "scale": 2, "unit": "USD"}});
        let parsed = crate::quantity::Uses::from_value(&uses).unwrap();
        let reserved = g.total_reservations(&parsed);
        let root = g.block_ids()[0].clone();
        assert_eq!(
            reserved
                .iter()
                .map(|(b, m, _)| (b.as_str(), m.as_str()))
                .collect::<Vec<_>>(),
            [(root.as_str(), "emails"), (root.as_str(), "spend")]
        );
        assert_eq!(
            g.evaluate(&yea_commit(uses.clone(), Default::default())),
            Decision::Ok
        );
        // After the reservations, the same commit again passes 3 emails in total.
        let mut used = crate::quantity::Used::new();
        for (b, m, v) in reserved {
            used.entry(b).or_default().insert(m, v);
        }
        assert_eq!(
            g.evaluate(&yea_commit(uses, used)).code(),
            "consent_required"
        );
    }

    #[test]
    fn yea_limits_mismatched_units_ask_malformed_quantities_and_floats_forbid() {
        let (p, a) = (key(1), key(2));
        let each = Caveat::parse(
            &json!({"each": {"of": "spend", "max": 4000, "scale": 2, "unit": "USD"}}),
        );
        let g = UnverifiedGrant::issue_root(&p, &a.public(), &[each], 1, "n")
            .unwrap()
            .verify(&[p.public()], &a.public())
            .unwrap();
        let d = g.evaluate(&yea_commit(
            json!({"spend": {"amount": 100, "scale": 2, "unit": "EUR"}}),
            Default::default(),
        ));
        let Decision::ConsentRequired { reasons, .. } = d else {
            panic!("{d:?}")
        };
        assert_eq!(
            reasons,
            ["spend is in EUR, but the per-commit limit is in USD"]
        );
        for (uses, why) in [
            (
                json!({"spend": {"amount": 12.5, "unit": "USD"}}),
                "amount must be an integer",
            ),
            (
                json!({"spend": {"amount": -1, "unit": "USD"}}),
                "amount must be an integer",
            ),
            (
                json!({"spend": {"amount": 1, "scale": 19, "unit": "USD"}}),
                "scale must be",
            ),
            (json!({"Spend": {"amount": 1}}), "not a measure name"),
        ] {
            let d = g.evaluate(&yea_commit(uses.clone(), Default::default()));
            let Decision::Forbidden { reasons, .. } = &d else {
                panic!("{uses}: {d:?}")
            };
            assert!(reasons[0].contains(why), "{uses}: {reasons:?}");
        }
        // The same limit under Parley is an unknown caveat.
        let mut ctx = yea_commit(json!({}), Default::default());
        ctx.dialect = crate::Dialect::ParleyV1;
        assert_eq!(g.evaluate(&ctx).code(), "forbidden");
    }

    #[test]
    fn never_signs_a_block_mixing_the_dialects_limits() {
        let p = key(1);
        let per = Caveat::parse(&json!({"per": {"max": 1, "currency": "USD"}}));
        let each = Caveat::parse(&json!({"each": {"of": "emails", "max": 1}}));
        assert!(matches!(
            UnverifiedGrant::issue_root(&p, &p.public(), &[per, each], 1, "n"),
            Err(GrantError::Unsignable(_))
        ));
    }

    #[test]
    fn refuses_to_sign_malformed_caveats() {
        let p = key(1);
        let bad = Caveat::parse(&json!({"risk": "extreme"}));
        assert!(matches!(
            UnverifiedGrant::issue_root(&p, &p.public(), &[bad], 1, "n"),
            Err(GrantError::Unsignable(_))
        ));
    }

    #[test]
    fn malformed_tokens_have_clear_errors() {
        assert_eq!(UnverifiedGrant::decode("pg2.xx"), Err(GrantError::Prefix));
        assert!(matches!(
            UnverifiedGrant::decode("pg1.!!"),
            Err(GrantError::Encoding(_))
        ));
        let enc = |s: &str| format!("pg1.{}", b64::encode(s));
        assert!(matches!(
            UnverifiedGrant::decode(&enc("[]")),
            Err(GrantError::Malformed(_))
        ));
        assert!(matches!(
            UnverifiedGrant::decode(&enc("{}")),
            Err(GrantError::Malformed(_))
        ));
        assert!(matches!(
            UnverifiedGrant::decode(&enc("[1]")),
            Err(GrantError::Malformed(_))
        ));
        assert!(matches!(
            UnverifiedGrant::decode(&enc("[{\"p\":{},\"s\":\"x\"}]")),
            Err(GrantError::Malformed(_))
        ));
        let huge = format!("pg1.{}", "A".repeat(MAX_TOKEN_BYTES + 1));
        assert!(matches!(
            UnverifiedGrant::decode(&huge),
            Err(GrantError::TooLong(_))
        ));
        let g = UnverifiedGrant::issue_root(&key(1), &key(2).public(), &[], 1, "n").unwrap();
        let token = g.encode();
        for cut in [5, token.len() / 2, token.len() - 1] {
            assert!(
                UnverifiedGrant::decode(&token[..cut]).is_err(),
                "truncated at {cut}"
            );
        }
    }
}
