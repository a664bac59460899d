//! One block of a grant (§6.2): its payload exactly as signed, the fields
//! read from it, and its id.

use super::{GrantError, MAX_CAVEATS_PER_BLOCK};
use crate::b64;
use crate::canonical::{canonical_object, MAX_SAFE_INTEGER};
use crate::caveat::Caveat;
use crate::keys::{PublicKey, SecretKey, Signature, KEY_PREFIX};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// A key as written in a block: kept as text (what was signed) and raw
/// bytes; decompressed to a curve point only when a signature needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeyText {
    pub(super) text: String,
    pub(super) bytes: [u8; 32],
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

    pub(super) fn point(&self, index: usize) -> Result<PublicKey, GrantError> {
        PublicKey::from_bytes(&self.bytes).map_err(|_| {
            GrantError::Malformed(format!("block {index}: key is not a valid Ed25519 point"))
        })
    }
}

/// One block `{"p": payload, "s": signature}` (§6.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    payload: Map<String, Value>,
    pub(super) signed: String,
    sig_text: String,
    pub(super) sig: Signature,
    pub(super) iss: Option<KeyText>,
    pub(super) sub: KeyText,
    pub(super) prev: Option<String>,
    iat: i64,
    pub(super) caveats: Vec<Caveat>,
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
    pub(super) fn parse(v: Value, index: usize) -> Result<Block, GrantError> {
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

    pub(super) fn sign(
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

    pub(super) fn to_value(&self) -> Value {
        json!({"p": Value::Object(self.payload.clone()), "s": self.sig_text})
    }
}

/// b64url(sha256(utf8(signature))) (§6.2): a block's id, and the `prev` of the next block.
pub fn block_id(signature: &str) -> String {
    b64::encode(Sha256::digest(signature.as_bytes()))
}
