//! The state that goes round the client with an approval form
//! (SPEC-approval §4): which call it belongs to, which plans were offered,
//! which round it is, a nonce to consume once and an expiry.
//!
//! It holds hashes, a counter and a nonce only (never secrets or personal
//! data), and it is signed with HMAC-SHA256 under a key the server process
//! draws at start: the client carries it but cannot forge or alter it.

use hmac::{Hmac, Mac};
use parley_core::{b64, canonical};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// How long a form's state is good for: 10 minutes.
pub const STATE_SECS: i64 = 600;

/// Why a state is refused. The call is refused with one message whatever
/// the reason (§5 step 1); the reason is for the server's log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not the `{v:1, …}` object this server writes.
    #[error("the approval state is malformed: {0}")]
    Malformed(&'static str),
    /// The signature does not check under this process's key.
    #[error("the approval state was not signed by this server")]
    BadSeal,
    /// Issued for another tool, input or principal.
    #[error("the approval state belongs to another call ({0})")]
    OtherCall(&'static str),
    /// Past its `exp`.
    #[error("the approval state has expired; call again")]
    Expired,
}

/// The plaintext of the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestState {
    /// The job tool called.
    pub tool: String,
    /// `b64url(sha256(canonical(input)))` of the call's input.
    pub input_hash: String,
    /// The authenticated principal; `""` over stdio.
    pub sub: String,
    /// The plan hashes offered in the form.
    pub plans: Vec<String>,
    /// Forms shown for this call, from 1.
    pub round: u32,
    /// Consumed once on the retry.
    pub nonce: String,
    /// Unix seconds; the state is refused from `exp` on.
    pub exp: i64,
}

/// `b64url(sha256(canonical(input)))`; `None` for input canonical JSON refuses.
pub fn input_hash(input: &Value) -> Option<String> {
    let text = canonical::canonical(input).ok()?;
    Some(b64::encode(Sha256::digest(text.as_bytes())))
}

impl RequestState {
    /// The plaintext `{v, tool, inputHash, sub, plans, round, nonce, exp}`.
    pub fn to_value(&self) -> Value {
        json!({
            "v": 1, "tool": self.tool, "inputHash": self.input_hash, "sub": self.sub,
            "plans": self.plans, "round": self.round, "nonce": self.nonce, "exp": self.exp,
        })
    }

    /// Reads the plaintext strictly: version 1 and every field present
    /// with its type (a missing nonce could never be consumed).
    pub fn from_value(v: &Value) -> Result<RequestState, StateError> {
        let o = v
            .as_object()
            .ok_or(StateError::Malformed("not an object"))?;
        if o.get("v").and_then(Value::as_u64) != Some(1) {
            return Err(StateError::Malformed("not version 1"));
        }
        let text = |k: &'static str| {
            o.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(StateError::Malformed(k))
        };
        let plans = o
            .get("plans")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .map(|p| p.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            })
            .filter(|p| !p.is_empty())
            .ok_or(StateError::Malformed("plans"))?;
        let round = o
            .get("round")
            .and_then(Value::as_u64)
            .and_then(|r| u32::try_from(r).ok())
            .filter(|r| *r >= 1)
            .ok_or(StateError::Malformed("round"))?;
        let nonce = text("nonce")?;
        if nonce.is_empty() {
            return Err(StateError::Malformed("nonce"));
        }
        Ok(RequestState {
            tool: text("tool")?,
            input_hash: text("inputHash")?,
            sub: text("sub")?,
            plans,
            round,
            nonce,
            exp: o
                .get("exp")
                .and_then(Value::as_i64)
                .ok_or(StateError::Malformed("exp"))?,
        })
    }

    /// §5 step 1 after the seal: the same tool, input and principal, and
    /// not expired (good strictly before `exp`).
    pub fn check(
        &self,
        tool: &str,
        input_hash: &str,
        sub: &str,
        now: i64,
    ) -> Result<(), StateError> {
        if self.tool != tool {
            return Err(StateError::OtherCall("tool"));
        }
        if self.input_hash != input_hash {
            return Err(StateError::OtherCall("input"));
        }
        if self.sub != sub {
            return Err(StateError::OtherCall("principal"));
        }
        if now >= self.exp {
            return Err(StateError::Expired);
        }
        Ok(())
    }
}

/// Signs and checks states under one process's key (§4 "Keys").
pub struct StateCodec {
    key: [u8; 32],
}

impl StateCodec {
    /// A codec with a fresh random key; `None` without OS randomness.
    pub fn random() -> Option<StateCodec> {
        let mut key = [0u8; 32];
        getrandom::getrandom(&mut key).ok()?;
        Some(StateCodec { key })
    }

    fn mac(&self, body: &str) -> Hmac<Sha256> {
        // HMAC takes a key of any length; 32 bytes never fails.
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        m.update(body.as_bytes());
        m
    }

    /// `b64url(plaintext JSON) "." b64url(HMAC-SHA256)`.
    pub fn seal(&self, state: &RequestState) -> String {
        let body = b64::encode(state.to_value().to_string().as_bytes());
        let tag = b64::encode(self.mac(&body).finalize().into_bytes());
        format!("{body}.{tag}")
    }

    /// Checks the signature (in constant time) and reads the plaintext.
    pub fn open(&self, sealed: &str) -> Result<RequestState, StateError> {
        let (body, tag) = sealed.split_once('.').ok_or(StateError::BadSeal)?;
        let tag = b64::decode(tag).map_err(|_| StateError::BadSeal)?;
        self.mac(body)
            .verify_slice(&tag)
            .map_err(|_| StateError::BadSeal)?;
        let bytes = b64::decode(body).map_err(|_| StateError::BadSeal)?;
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|_| StateError::Malformed("not JSON"))?;
        RequestState::from_value(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> RequestState {
        RequestState {
            tool: "refund".into(),
            input_hash: input_hash(&json!({"order": "A-1001"})).unwrap(),
            sub: String::new(),
            plans: vec!["H1".into()],
            round: 1,
            nonce: "n_x".into(),
            exp: 1_790_000_600,
        }
    }

    #[test]
    fn a_sealed_state_opens_only_unaltered_and_under_its_key() {
        let codec = StateCodec::random().unwrap();
        let sealed = codec.seal(&state());
        assert_eq!(codec.open(&sealed).unwrap(), state());
        let mut other = state();
        other.round = 2;
        let forged_body = codec.seal(&other);
        let forged = format!(
            "{}.{}",
            forged_body.split_once('.').unwrap().0,
            sealed.split_once('.').unwrap().1
        );
        assert_eq!(codec.open(&forged), Err(StateError::BadSeal));
        let stranger = StateCodec::random().unwrap();
        assert_eq!(stranger.open(&sealed), Err(StateError::BadSeal));
        assert_eq!(codec.open("x"), Err(StateError::BadSeal));
    }
}
