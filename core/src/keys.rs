//! Keys and signatures in the Parley text forms (§6.1).
//!
//! A public key is `"ed25519:" + b64url(32 bytes)`, a signature is
//! `b64url(64 bytes)`. Secret keys are made only from a 32-byte seed (this
//! crate never reads a clock or an entropy source); they zeroize on drop,
//! print as `SecretKey(<redacted>)` and are not `Serialize`.

use crate::b64;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use std::fmt;
use std::str::FromStr;
use zeroize::Zeroizing;

/// The prefix of a Parley public key.
pub const KEY_PREFIX: &str = "ed25519:";

/// Why a key or signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text does not start with `ed25519:`.
    #[error("a public key must look like \"ed25519:<43 base64url characters>\"")]
    Prefix,
    /// The base64url part is not 32 bytes.
    #[error("public key: {0}")]
    Encoding(b64::B64Error),
    /// 32 bytes that are not a point on the curve.
    #[error("public key is not a valid Ed25519 point")]
    NotAPoint,
    /// A seed that is not 32 bytes of base64url.
    #[error("secret key seed: {0} (expected the upstream format: base64url of a 32-byte seed)")]
    Seed(b64::B64Error),
    /// A signature that is not 64 bytes of base64url.
    #[error("signature: {0}")]
    SignatureEncoding(b64::B64Error),
    /// A well-formed signature that does not verify.
    #[error("signature does not verify")]
    BadSignature,
}

/// An Ed25519 public key, parsed and checked once.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PublicKey {
    key: VerifyingKey,
}

impl PublicKey {
    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.key.as_bytes()
    }

    /// Builds a key from raw bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, KeyError> {
        VerifyingKey::from_bytes(bytes)
            .map(|key| PublicKey { key })
            .map_err(|_| KeyError::NotAPoint)
    }

    /// Verifies a signature over `msg` with Ed25519's strict rules
    /// (no small-order keys, canonical `S`), so one message has one valid
    /// signature per key and no weak key can forge for many messages.
    pub fn verify(&self, msg: &[u8], sig: &Signature) -> Result<(), KeyError> {
        self.key
            .verify_strict(msg, &ed25519_dalek::Signature::from_bytes(&sig.0))
            .map_err(|_| KeyError::BadSignature)
    }

    /// A short form for display: the first 10 characters after the prefix.
    pub fn short(&self) -> String {
        let full = self.to_string();
        format!("{}…", &full[..KEY_PREFIX.len() + 10])
    }
}

impl FromStr for PublicKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        let rest = s.strip_prefix(KEY_PREFIX).ok_or(KeyError::Prefix)?;
        let bytes = b64::decode_array::<32>(rest).map_err(KeyError::Encoding)?;
        PublicKey::from_bytes(&bytes)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{KEY_PREFIX}{}", b64::encode(self.key.as_bytes()))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl serde::Serialize for PublicKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A 64-byte Ed25519 signature.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature(pub [u8; 64]);

impl FromStr for Signature {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        b64::decode_array::<64>(s)
            .map(Signature)
            .map_err(KeyError::SignatureEncoding)
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&b64::encode(self.0))
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Signature({self})")
    }
}

/// An Ed25519 secret key. Zeroized on drop (ed25519-dalek's `zeroize`
/// feature); never printed, never serialized.
pub struct SecretKey {
    key: SigningKey,
}

impl SecretKey {
    /// Builds a key from a 32-byte seed. The caller's copy should itself be
    /// in a zeroizing container; this one is.
    pub fn from_seed(seed: &Zeroizing<[u8; 32]>) -> Self {
        SecretKey {
            key: SigningKey::from_bytes(seed),
        }
    }

    /// Reads the upstream key-file format: b64url of the 32-byte seed,
    /// surrounding whitespace ignored.
    pub fn from_seed_b64(text: &str) -> Result<Self, KeyError> {
        let seed = Zeroizing::new(b64::decode_array::<32>(text.trim()).map_err(KeyError::Seed)?);
        Ok(SecretKey::from_seed(&seed))
    }

    /// Writes the upstream key-file format (without a newline).
    pub fn to_seed_b64(&self) -> Zeroizing<String> {
        let seed = Zeroizing::new(self.key.to_bytes());
        Zeroizing::new(b64::encode(*seed))
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
        }
    }

    /// Signs `msg` (Ed25519 is deterministic: the same message gives the same signature).
    pub fn sign(&self, msg: &[u8]) -> Signature {
        Signature(self.key.sign(msg).to_bytes())
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("SecretKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let k = SecretKey::from_seed(&Zeroizing::new([7u8; 32]));
        assert_eq!(format!("{k:?}"), "SecretKey(<redacted>)");
    }

    #[test]
    fn bad_keys_have_clear_errors() {
        assert_eq!("ed25519".parse::<PublicKey>(), Err(KeyError::Prefix));
        assert!(matches!(
            "ed25519:abc".parse::<PublicKey>(),
            Err(KeyError::Encoding(_))
        ));
        assert!("x25519:O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"
            .parse::<PublicKey>()
            .is_err());
        assert!(SecretKey::from_seed_b64("short").is_err());
    }

    #[test]
    fn sign_verify() {
        let k = SecretKey::from_seed(&Zeroizing::new([9u8; 32]));
        let sig = k.sign(b"hello");
        assert!(k.public().verify(b"hello", &sig).is_ok());
        assert_eq!(
            k.public().verify(b"hellO", &sig),
            Err(KeyError::BadSignature)
        );
        let text = sig.to_string();
        assert_eq!(text.parse::<Signature>().unwrap(), sig);
    }
}
