//! Grant revocation statements: an **extension** of ours (issue 30). Parley
//! v1 and YEA v1 define no way to revoke a grant before its `exp`; a
//! service that does not read these statements keeps accepting a revoked
//! grant until it expires.
//!
//! A statement names one grant by its id (the root block's id, what
//! `parley inspect` prints as the grant id and custody's audit log keeps
//! as `token_id`) and is signed by that grant's principal:
//!
//! ```json
//! {"statement": {"kind": "parley-revocation/ext-1", "grant": "<grant id>",
//!                "principal": "ed25519:…", "revoked_at": 1764900000,
//!                "reason": "…"},
//!  "sig": "<b64url Ed25519 signature>"}
//! ```
//!
//! `sig` is Ed25519 by `principal` over the bytes of [`DOMAIN`] followed by
//! the canonical JSON (§10, [`crate::canonical`]) of `statement`. A
//! statement revokes a grant for a verifier only when its signature checks,
//! its principal is one the verifier trusts, and it names that grant; a
//! grant whose root issuer differs from the statement's principal is not
//! revoked by it (a principal revokes only its own grants).
//!
//! Pure: no I/O, no clock.

use crate::canonical::canonical;
use crate::grant::Decision;
use crate::keys::{PublicKey, SecretKey, Signature};
use serde_json::{json, Value};

/// The statement's `kind`.
pub const KIND: &str = "parley-revocation/ext-1";

/// Signed before the canonical statement, so the signature can never be
/// read as one over a grant block or a proof.
pub const DOMAIN: &[u8] = b"parley-revocation/ext-1\n";

/// Longest `reason`, in bytes.
pub const MAX_REASON_BYTES: usize = 512;

/// Largest statement file accepted, in bytes.
pub const MAX_FILE_BYTES: usize = 8 * 1024;

/// Why a revocation statement was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevocationError {
    /// Not the shape above.
    #[error("not a revocation statement: {0}")]
    Malformed(String),
    /// The signature does not check.
    #[error("the revocation's signature does not verify for its principal")]
    BadSignature,
}

/// A revocation statement whose signature checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    /// The revoked grant's id.
    pub grant: String,
    /// Who signed it: the grant's principal.
    pub principal: PublicKey,
    /// When (unix seconds).
    pub revoked_at: i64,
    /// Why, in the human's words (untrusted text: show it display-safe).
    pub reason: String,
    /// `sig`, b64url.
    pub sig: String,
}

fn statement(grant: &str, principal: &PublicKey, revoked_at: i64, reason: &str) -> Value {
    json!({
        "kind": KIND,
        "grant": grant,
        "principal": principal.to_string(),
        "revoked_at": revoked_at,
        "reason": reason,
    })
}

fn message(statement: &Value) -> Result<Vec<u8>, RevocationError> {
    let c = canonical(statement).map_err(|e| RevocationError::Malformed(e.to_string()))?;
    let mut m = DOMAIN.to_vec();
    m.extend_from_slice(c.as_bytes());
    Ok(m)
}

/// Signs a statement revoking grant `grant` with `principal`'s key
/// (`reason` cut to [`MAX_REASON_BYTES`] at a character boundary).
pub fn sign(principal: &SecretKey, grant: &str, revoked_at: i64, reason: &str) -> Revocation {
    let mut cut = reason.len().min(MAX_REASON_BYTES);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let reason = &reason[..cut];
    let public = principal.public();
    let st = statement(grant, &public, revoked_at, reason);
    // A statement of strings and an integer always canonicalizes.
    let sig = principal.sign(&message(&st).unwrap_or_default());
    Revocation {
        grant: grant.to_owned(),
        principal: public,
        revoked_at,
        reason: reason.to_owned(),
        sig: sig.to_string(),
    }
}

impl Revocation {
    /// The statement file's JSON.
    pub fn to_value(&self) -> Value {
        json!({
            "statement": statement(&self.grant, &self.principal, self.revoked_at, &self.reason),
            "sig": self.sig,
        })
    }

    /// Parses a statement file and checks its signature.
    pub fn parse(text: &str) -> Result<Revocation, RevocationError> {
        if text.len() > MAX_FILE_BYTES {
            return Err(RevocationError::Malformed(format!(
                "over {MAX_FILE_BYTES} bytes"
            )));
        }
        let v: Value = serde_json::from_str(text)
            .map_err(|e| RevocationError::Malformed(format!("not JSON: {e}")))?;
        let bad = |m: &str| RevocationError::Malformed(m.to_owned());
        let st = v.get("statement").ok_or_else(|| bad("no statement"))?;
        let sig = v
            .get("sig")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no sig"))?;
        let obj = st
            .as_object()
            .ok_or_else(|| bad("statement is not an object"))?;
        if obj.len() != 5 {
            return Err(bad(
                "the statement has other fields than kind, grant, principal, revoked_at, reason",
            ));
        }
        if st.get("kind").and_then(Value::as_str) != Some(KIND) {
            return Err(bad("kind is not parley-revocation/ext-1"));
        }
        let text = |k: &str| {
            st.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| bad(&format!("{k} is missing or not a string")))
        };
        let grant = text("grant")?;
        let principal: PublicKey = text("principal")?
            .parse()
            .map_err(|e| RevocationError::Malformed(format!("principal: {e}")))?;
        let reason = text("reason")?;
        let revoked_at = st
            .get("revoked_at")
            .and_then(Value::as_i64)
            .ok_or_else(|| bad("revoked_at is missing or not an integer"))?;
        let signature: Signature = sig.parse().map_err(|_| RevocationError::BadSignature)?;
        principal
            .verify(&message(st)?, &signature)
            .map_err(|_| RevocationError::BadSignature)?;
        Ok(Revocation {
            grant: grant.to_owned(),
            principal,
            revoked_at,
            reason: reason.to_owned(),
            sig: sig.to_owned(),
        })
    }

    /// Whether this statement revokes the grant `grant_id` issued by
    /// `issuer` (the root block's `iss`, `ed25519:…`) for a verifier that
    /// trusts `trusted`.
    pub fn revokes(&self, grant_id: &str, issuer: &str, trusted: &[PublicKey]) -> bool {
        self.grant == grant_id
            && self.principal.to_string() == issuer
            && trusted.iter().any(|t| t == &self.principal)
    }

    /// What a service answers to a request under a revoked grant: §7
    /// `forbidden`, its `need` naming the revocation (`{"revoked": {grant,
    /// principal, revoked_at, reason}}`, an extension like the statement).
    pub fn forbidden(&self) -> Decision {
        Decision::Forbidden {
            need: vec![json!({"revoked": {
                "grant": self.grant,
                "principal": self.principal.to_string(),
                "revoked_at": self.revoked_at,
                "reason": self.reason,
            }})],
            reasons: vec![format!(
                "the grant {} was revoked by its principal at {} ({})",
                self.grant,
                crate::lens::time(self.revoked_at),
                self.reason
            )],
        }
    }

    /// The file name a statement is published under: the grant id, which is
    /// b64url (safe in a path), and `.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    fn key(n: u8) -> SecretKey {
        SecretKey::from_seed(&Zeroizing::new([n; 32]))
    }

    #[test]
    fn a_signed_statement_parses_back_and_revokes_only_its_grant_for_its_principal() {
        let k = key(1);
        let r = sign(&k, "gid", 100, "lost laptop");
        let text = r.to_value().to_string();
        let back = Revocation::parse(&text).unwrap();
        assert_eq!(back, r);
        let iss = k.public().to_string();
        assert!(back.revokes("gid", &iss, &[k.public()]));
        assert!(!back.revokes("other", &iss, &[k.public()]));
        assert!(
            !back.revokes("gid", &iss, &[key(2).public()]),
            "untrusted principal"
        );
        assert!(
            !back.revokes(
                "gid",
                &key(2).public().to_string(),
                &[k.public(), key(2).public()]
            ),
            "another issuer's grant"
        );
    }

    #[test]
    fn an_edited_or_foreign_statement_is_refused() {
        let r = sign(&key(1), "gid", 100, "x");
        let mut v = r.to_value();
        v["statement"]["grant"] = json!("another");
        assert_eq!(
            Revocation::parse(&v.to_string()),
            Err(RevocationError::BadSignature)
        );
        let mut v = r.to_value();
        v["statement"]["principal"] = json!(key(2).public().to_string());
        assert_eq!(
            Revocation::parse(&v.to_string()),
            Err(RevocationError::BadSignature)
        );
        let mut v = r.to_value();
        v["statement"]["extra"] = json!(1);
        assert!(matches!(
            Revocation::parse(&v.to_string()),
            Err(RevocationError::Malformed(_))
        ));
        assert!(matches!(
            Revocation::parse("[]"),
            Err(RevocationError::Malformed(_))
        ));
        let long = sign(&key(1), "gid", 1, &"é".repeat(600));
        assert!(long.reason.len() <= MAX_REASON_BYTES);
        assert!(Revocation::parse(&long.to_value().to_string()).is_ok());
    }
}
