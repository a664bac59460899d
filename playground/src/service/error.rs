//! Parley errors (§7): a code, one sentence, and what to do about it.
//!
//! Every refusal a service makes is a [`ParleyError`]; [`ParleyError::to_body`]
//! turns it into the body of an `ERROR` reply frame. `fix` entries carry
//! merge patches for the request's params when one is known to work,
//! `need` names the caveats that made a request `forbidden`, and `consent`
//! is the §6.6 object of a `consent_required`.

use serde_json::{json, Map, Value};
use std::fmt;

/// The §7 error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The frame is not a Parley request (§2.1): not JSON, too large,
    /// duplicate keys, no `parley: 1` or `id`, an unknown verb.
    BadFrame,
    /// No such capability, or the wrong verb for it.
    UnknownCapability,
    /// The capability's params are wrong.
    InvalidParams,
    /// Missing or invalid grant or proof.
    Unauthorized,
    /// A valid grant that does not cover the request.
    Forbidden,
    /// The commit needs the principal's consent (§6.6).
    ConsentRequired,
    /// No such proposal, receipt, handle or thing named in params.
    NotFound,
    /// A proposal, handle or undo window has expired.
    Expired,
    /// The world changed, or the hash does not match: re-run INTENT.
    Conflict,
    /// A service limit was reached.
    Limit,
    /// The service cannot answer now.
    Unavailable,
    /// The service failed.
    Internal,
}

impl ErrorCode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::UnknownCapability => "unknown_capability",
            ErrorCode::InvalidParams => "invalid_params",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::ConsentRequired => "consent_required",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Expired => "expired",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Limit => "limit",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One §7 `fix` entry: what to say, and optionally a params merge patch.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    /// What to do, in words.
    pub say: String,
    /// A merge patch (RFC 7396) for the failed request's params.
    pub params: Option<Value>,
}

/// A refusal, as the `ERROR` reply will carry it (§7).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ParleyError {
    /// The code.
    pub code: ErrorCode,
    /// One sentence.
    pub message: String,
    /// The optional fields, boxed so a `Result` stays small.
    pub details: Box<Details>,
}

/// The optional fields of an error (§7).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Details {
    /// What would work instead.
    pub fix: Vec<Fix>,
    /// For `forbidden`: the caveats that blocked the request.
    pub need: Option<Vec<Value>>,
    /// For `consent_required`: the §6.6 consent object.
    pub consent: Option<Value>,
    /// Seconds after which a retry may succeed.
    pub retry: Option<i64>,
}

impl ParleyError {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ParleyError {
        ParleyError {
            code,
            message: message.into(),
            details: Box::default(),
        }
    }

    /// Adds a fix in words.
    pub fn fix(mut self, say: impl Into<String>) -> ParleyError {
        self.details.fix.push(Fix {
            say: say.into(),
            params: None,
        });
        self
    }

    /// Adds a fix with a params merge patch.
    pub fn fix_params(mut self, say: impl Into<String>, params: Value) -> ParleyError {
        self.details.fix.push(Fix {
            say: say.into(),
            params: Some(params),
        });
        self
    }

    /// Sets `need` (forbidden).
    pub fn need(mut self, need: Vec<Value>) -> ParleyError {
        self.details.need = Some(need);
        self
    }

    /// Sets `consent` (consent_required).
    pub fn consent(mut self, consent: Value) -> ParleyError {
        self.details.consent = Some(consent);
        self
    }

    /// Sets `retry`.
    pub fn retry(mut self, secs: i64) -> ParleyError {
        self.details.retry = Some(secs);
        self
    }

    /// `bad_frame`.
    pub fn bad_frame(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::BadFrame, message)
    }

    /// `invalid_params`.
    pub fn invalid_params(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::InvalidParams, message)
    }

    /// `unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::Unauthorized, message)
    }

    /// `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::Forbidden, message)
    }

    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::NotFound, message)
    }

    /// `expired`.
    pub fn expired(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::Expired, message)
    }

    /// `conflict`.
    pub fn conflict(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::Conflict, message)
    }

    /// `internal`.
    pub fn internal(message: impl Into<String>) -> ParleyError {
        ParleyError::new(ErrorCode::Internal, message)
    }

    /// The `ERROR` reply body (§7), without the envelope (`parley`, `id`, `re`).
    pub fn to_body(&self) -> Value {
        let mut body = Map::new();
        body.insert("kind".into(), json!("ERROR"));
        body.insert("code".into(), json!(self.code.as_str()));
        body.insert("message".into(), json!(self.message));
        let d = &self.details;
        if !d.fix.is_empty() {
            let fixes = d
                .fix
                .iter()
                .map(|f| match &f.params {
                    Some(p) => json!({"say": f.say, "params": p}),
                    None => json!({"say": f.say}),
                })
                .collect();
            body.insert("fix".into(), Value::Array(fixes));
        }
        if let Some(need) = &d.need {
            body.insert("need".into(), Value::Array(need.clone()));
        }
        if let Some(consent) = &d.consent {
            body.insert("consent".into(), consent.clone());
        }
        body.insert("retry".into(), d.retry.map_or(Value::Null, |r| json!(r)));
        Value::Object(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_carries_only_what_is_set() {
        let e = ParleyError::forbidden("no COMMIT").need(vec![json!({"verbs": ["ASK"]})]);
        assert_eq!(
            e.to_body(),
            json!({"kind": "ERROR", "code": "forbidden", "message": "no COMMIT",
                   "need": [{"verbs": ["ASK"]}], "retry": null})
        );
        let e = ParleyError::invalid_params("bad")
            .fix_params("use this", json!({"to": "x"}))
            .retry(5);
        assert_eq!(
            e.to_body()["fix"],
            json!([{"say": "use this", "params": {"to": "x"}}])
        );
        assert_eq!(e.to_body()["retry"], json!(5));
        assert_eq!(e.to_string(), "invalid_params: bad");
    }
}
