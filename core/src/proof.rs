//! Proof of possession (§6.5).
//!
//! A leaked grant alone is useless: every request that uses one carries a
//! signature by the holder key over the service id, the verb, a per-verb
//! target and a timestamp, and services refuse proofs more than 300 s off.

use crate::canonical::{write_json_string, MAX_SAFE_INTEGER};
use crate::keys::{KeyError, PublicKey, SecretKey, Signature};
use serde_json::{json, Value};

/// How far a proof's timestamp may be from the verifier's clock, in seconds.
pub const PROOF_WINDOW: i64 = 300;

/// What a proof is bound to, per verb (§6.5 table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// `COMMIT`: the proposal hash.
    Commit {
        /// The proposal hash.
        hash: &'a str,
    },
    /// `UNDO`: the receipt id.
    Undo {
        /// The receipt id.
        receipt: &'a str,
    },
    /// `ASK`: the capability name.
    Ask {
        /// The capability.
        capability: &'a str,
    },
    /// `INTENT`: the capability name.
    Intent {
        /// The capability.
        capability: &'a str,
    },
    /// `INTENT` with `auto`: `auto:{capability}:{frame id}`.
    AutoIntent {
        /// The capability.
        capability: &'a str,
        /// The request frame id (unique per agent key for ≥ 600 s).
        frame_id: &'a str,
    },
    /// `EXPAND`: the handle.
    Expand {
        /// The handle.
        handle: &'a str,
    },
}

impl Target<'_> {
    /// The verb this target belongs to.
    pub fn verb(&self) -> &'static str {
        match self {
            Target::Commit { .. } => "COMMIT",
            Target::Undo { .. } => "UNDO",
            Target::Ask { .. } => "ASK",
            Target::Intent { .. } | Target::AutoIntent { .. } => "INTENT",
            Target::Expand { .. } => "EXPAND",
        }
    }

    /// The target string that is signed.
    pub fn target(&self) -> String {
        match self {
            Target::Commit { hash } => hash.to_string(),
            Target::Undo { receipt } => receipt.to_string(),
            Target::Ask { capability } | Target::Intent { capability } => capability.to_string(),
            Target::AutoIntent {
                capability,
                frame_id,
            } => format!("auto:{capability}:{frame_id}"),
            Target::Expand { handle } => handle.to_string(),
        }
    }
}

/// Why a proof was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// Wrong shape.
    #[error("a proof is {{\"key\": \"ed25519:…\", \"ts\": int, \"sig\": \"…\"}}: {0}")]
    Malformed(String),
    /// Outside the ±300 s window.
    #[error("the proof's timestamp is {skew} s from now; at most {PROOF_WINDOW} s is accepted (check the clock)")]
    Stale {
        /// ts − now.
        skew: i64,
    },
    /// Signature does not verify for this service, verb and target.
    #[error("the proof's signature does not verify for this service, verb and target")]
    BadSignature,
}

/// `{"key", "ts", "sig"}` (§6.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The holder key.
    pub key: PublicKey,
    /// Unix seconds when signed.
    pub ts: i64,
    /// The signature.
    pub sig: Signature,
}

impl Proof {
    /// Reads a proof object.
    pub fn from_value(v: &Value) -> Result<Proof, ProofError> {
        let m = |s: &str| ProofError::Malformed(s.to_string());
        let obj = v.as_object().ok_or_else(|| m("not an object"))?;
        let key = obj
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| m("key missing"))?
            .parse()
            .map_err(|e: KeyError| m(&e.to_string()))?;
        let ts = obj
            .get("ts")
            .and_then(Value::as_i64)
            .ok_or_else(|| m("ts must be an integer"))?;
        let sig = obj
            .get("sig")
            .and_then(Value::as_str)
            .ok_or_else(|| m("sig missing"))?
            .parse()
            .map_err(|e: KeyError| m(&e.to_string()))?;
        Ok(Proof { key, ts, sig })
    }

    /// The proof as JSON.
    pub fn to_value(&self) -> Value {
        json!({"key": self.key.to_string(), "ts": self.ts, "sig": self.sig.to_string()})
    }
}

/// The signed bytes: utf8(canonical({"aud", "verb", "target", "ts"})).
///
/// Written directly in canonical key order (aud, target, ts, verb) rather
/// than through a map: it is on every request's path. A test checks it
/// against [`crate::canonical::canonical`].
pub fn payload(aud: &str, verb: &str, target: &str, ts: i64) -> String {
    let mut out = String::with_capacity(48 + aud.len() + verb.len() + target.len());
    out.push_str("{\"aud\":");
    write_json_string(aud, &mut out);
    out.push_str(",\"target\":");
    write_json_string(target, &mut out);
    out.push_str(",\"ts\":");
    out.push_str(&ts.to_string());
    out.push_str(",\"verb\":");
    write_json_string(verb, &mut out);
    out.push('}');
    out
}

/// Signs a proof for a request to service `aud`.
pub fn sign(holder: &SecretKey, aud: &str, target: &Target, ts: i64) -> Proof {
    sign_raw(holder, aud, target.verb(), &target.target(), ts)
}

/// Signs with an explicit verb and target string (for vectors and tools).
pub fn sign_raw(holder: &SecretKey, aud: &str, verb: &str, target: &str, ts: i64) -> Proof {
    Proof {
        key: holder.public(),
        ts,
        sig: holder.sign(payload(aud, verb, target, ts).as_bytes()),
    }
}

/// Checks a proof for a request to service `aud` at time `now`.
pub fn check(proof: &Proof, aud: &str, target: &Target, now: i64) -> Result<(), ProofError> {
    check_raw(proof, aud, target.verb(), &target.target(), now)
}

/// Checks with an explicit verb and target string.
pub fn check_raw(
    proof: &Proof,
    aud: &str,
    verb: &str,
    target: &str,
    now: i64,
) -> Result<(), ProofError> {
    // Unsafe timestamps have no canonical form (§10); i128 keeps the
    // difference exact whatever the inputs.
    let skew = i128::from(proof.ts) - i128::from(now);
    if skew.abs() > i128::from(PROOF_WINDOW) || proof.ts.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
        return Err(ProofError::Stale {
            skew: skew.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        });
    }
    proof
        .key
        .verify(payload(aud, verb, target, proof.ts).as_bytes(), &proof.sig)
        .map_err(|_| ProofError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    #[test]
    fn window_and_binding() {
        let k = SecretKey::from_seed(&Zeroizing::new([2; 32]));
        let t = Target::Commit { hash: "H" };
        let p = sign(&k, "svc", &t, 1000);
        assert!(check(&p, "svc", &t, 1300).is_ok());
        assert!(check(&p, "svc", &t, 700).is_ok());
        assert!(matches!(
            check(&p, "svc", &t, 1301),
            Err(ProofError::Stale { .. })
        ));
        assert!(matches!(
            check(&p, "svc", &t, 699),
            Err(ProofError::Stale { .. })
        ));
        assert_eq!(check(&p, "other", &t, 1000), Err(ProofError::BadSignature));
        assert_eq!(
            check(&p, "svc", &Target::Commit { hash: "G" }, 1000),
            Err(ProofError::BadSignature)
        );
        assert_eq!(
            check(&p, "svc", &Target::Undo { receipt: "H" }, 1000),
            Err(ProofError::BadSignature)
        );
        let back = Proof::from_value(&p.to_value()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn every_verb_has_its_target() {
        let cases = [
            (Target::Commit { hash: "h" }, "COMMIT", "h"),
            (Target::Undo { receipt: "r_1" }, "UNDO", "r_1"),
            (Target::Ask { capability: "c.x" }, "ASK", "c.x"),
            (Target::Intent { capability: "c.x" }, "INTENT", "c.x"),
            (
                Target::AutoIntent {
                    capability: "c.x",
                    frame_id: "f9",
                },
                "INTENT",
                "auto:c.x:f9",
            ),
            (Target::Expand { handle: "h_1" }, "EXPAND", "h_1"),
        ];
        for (t, verb, target) in cases {
            assert_eq!((t.verb(), t.target().as_str()), (verb, target));
        }
    }

    #[test]
    fn payload_is_canonical() {
        for (aud, verb, target, ts) in [("a", "COMMIT", "h", 1), ("\u{1}\"é", "ASK", "x\\y", -5)] {
            let want = crate::canonical::canonical(
                &json!({"aud": aud, "verb": verb, "target": target, "ts": ts}),
            )
            .unwrap();
            assert_eq!(payload(aud, verb, target, ts), want);
        }
    }

    #[test]
    fn extreme_timestamps_do_not_overflow() {
        let k = SecretKey::from_seed(&Zeroizing::new([2; 32]));
        let p = sign(&k, "svc", &Target::Ask { capability: "c" }, i64::MIN);
        assert!(check(&p, "svc", &Target::Ask { capability: "c" }, i64::MAX).is_err());
    }
}
