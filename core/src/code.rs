//! The `pc1.` consent code of the public Parley tooling:
//! `"pc1." + b64url(canonical(body))`, where body is the §6.6 consent
//! request plus an optional `detail`: the proposal as the agent saw it,
//! without `data`. An agent's tooling prints it; `parley approve` takes it.
//! The YEA tooling's codes are the same, plus the agent's key (`agent`),
//! which is the `sub` the consent grant is for.

use crate::b64;
use crate::canonical::{canonical, CanonicalError};
use crate::consent::{ConsentError, ConsentRequest};
use crate::json::{self, Limits};
use serde_json::Value;

/// The code prefix.
pub const CODE_PREFIX: &str = "pc1.";
/// Longest code accepted, in bytes (a proposal with many effects fits easily).
pub const MAX_CODE_BYTES: usize = 256 * 1024;

/// Why a code could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// Missing prefix.
    #[error("a consent code starts with \"pc1.\"")]
    Prefix,
    /// Too long.
    #[error("the consent code is {0} bytes; the limit is {MAX_CODE_BYTES}")]
    TooLong(usize),
    /// Not base64url.
    #[error("the consent code is not valid: {0}")]
    Encoding(b64::B64Error),
    /// Not strict JSON.
    #[error("the consent code does not hold valid JSON: {0}")]
    Json(json::JsonError),
    /// Not a consent request.
    #[error("the consent code does not hold a consent request: {0}")]
    Consent(#[from] ConsentError),
    /// `agent` present but not a public key.
    #[error("the consent code's agent must be an ed25519: public key")]
    Agent,
    /// `detail` present but not a proposal object.
    #[error("the consent code's detail must be the proposal object")]
    Detail,
    /// Cannot be encoded (a float in the detail).
    #[error("cannot encode the consent code: {0}")]
    Canonical(#[from] CanonicalError),
}

impl CodeError {
    /// A stable name for the failure (vectors, logs).
    pub fn kind(&self) -> &'static str {
        match self {
            CodeError::Prefix => "prefix",
            CodeError::TooLong(_) => "too_long",
            CodeError::Encoding(_) => "encoding",
            CodeError::Json(_) => "json",
            CodeError::Consent(_) => "consent",
            CodeError::Detail => "detail",
            CodeError::Agent => "agent",
            CodeError::Canonical(_) => "canonical",
        }
    }
}

/// A decoded consent code.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsentCode {
    /// The consent request (unchecked).
    pub consent: ConsentRequest,
    /// The proposal as the agent saw it, without `data`, if the code carries it.
    pub detail: Option<Value>,
    /// The agent's key, when the code names it (YEA codes do).
    pub agent: Option<crate::PublicKey>,
}

/// Encodes a code. `detail`, if given, has its `data` removed.
pub fn encode(consent: &ConsentRequest, detail: Option<&Value>) -> Result<String, CodeError> {
    encode_for(consent, None, detail)
}

/// [`encode`] naming the agent the consent is for, as YEA codes do.
pub fn encode_for(
    consent: &ConsentRequest,
    agent: Option<&crate::PublicKey>,
    detail: Option<&Value>,
) -> Result<String, CodeError> {
    let mut body = consent.to_value();
    if let Some(a) = agent {
        body["agent"] = Value::String(a.to_string());
    }
    if let Some(d) = detail {
        let mut d = d.as_object().ok_or(CodeError::Detail)?.clone();
        d.remove("data");
        body["detail"] = Value::Object(d);
    }
    Ok(format!("{CODE_PREFIX}{}", b64::encode(canonical(&body)?)))
}

/// Decodes a code, checking the consent request's shape.
pub fn decode(code: &str) -> Result<ConsentCode, CodeError> {
    let code = code.trim();
    if code.len() > MAX_CODE_BYTES {
        return Err(CodeError::TooLong(code.len()));
    }
    let body = code.strip_prefix(CODE_PREFIX).ok_or(CodeError::Prefix)?;
    let bytes = b64::decode(body).map_err(CodeError::Encoding)?;
    let limits = Limits {
        max_depth: 32,
        max_bytes: MAX_CODE_BYTES,
    };
    let value = json::parse(&bytes, limits).map_err(CodeError::Json)?;
    let consent = ConsentRequest::from_value(&value)?;
    let detail = match value.get("detail") {
        None => None,
        Some(d @ Value::Object(_)) => Some(d.clone()),
        Some(_) => return Err(CodeError::Detail),
    };
    let agent = match value.get("agent") {
        None => None,
        Some(Value::String(a)) => Some(a.parse().map_err(|_| CodeError::Agent)?),
        Some(_) => return Err(CodeError::Agent),
    };
    Ok(ConsentCode {
        consent,
        detail,
        agent,
    })
}
