//! The custody protocol v1: the messages agents and custody exchange over the
//! local socket (ARCHITECTURE.md, "The custody protocol v1";
//! `docs/custody-protocol.md` is the wire reference).
//!
//! Everything here is pure: a [`Request`] is built from a `serde_json::Value`
//! that [`crate::frame`] already parsed strictly (no duplicate keys,
//! bounded depth and size), and replies are built as `serde_json::Value`s for
//! [`crate::frame::FrameWriter`].
//!
//! Validation is hand-written rather than `#[derive(Deserialize)]` so that an
//! agent (untrusted, possibly hostile) gets one precise, bounded error per
//! mistake: which envelope rule or which field, and never an echo of more than
//! a few dozen of its own characters, escaped.
//!
//! Forward compatibility: unknown fields, at the top level and in a body, are
//! ignored (as Parley §2.1 asks of receivers). The payloads a human reviews
//! (`consent`, `proposal`, `caveats`) are kept as raw `Value`s: only their
//! outer type is checked here; the review layer re-verifies their content.

use parley_core::Dialect;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

mod reply;
pub use reply::{
    parse_reply, ForAWhileGrant, Principal, Reply, ReplyError, ReplyFrame, RequestState,
};

/// The protocol version every request carries as `"custody": 1`.
pub const VERSION: u64 = 1;

/// The longest accepted request `id` (and `request` reference), in characters.
pub const MAX_ID_CHARS: usize = 128;

/// How many characters of a peer-supplied string an error message may quote.
const QUOTE_CHARS: usize = 32;

/// A request from an agent, after envelope and field validation.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The sender's id for this request; every reply to it carries it as `re`.
    pub id: String,
    /// What the agent asks for.
    pub op: Op,
}

/// The operations of protocol v1, with their bodies.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Which principals does this custody hold? Answered with `HELLO`.
    Hello,
    /// Ask the human to approve a consent (Parley §6.6).
    Consent {
        /// The `consent` object from the service's `ERROR consent_required`.
        consent: Value,
        /// The proposal as the agent received it, including `hash`.
        proposal: Value,
        /// The service id the agent learned at `HELLO`.
        service: String,
        /// The holder key the agent used on `INTENT` (`ed25519:…`).
        agent: String,
        /// The protocol the proposal is in: `"dialect": "yea1"` or
        /// `"parley1"`, Parley v1 when absent (today's clients).
        dialect: Dialect,
    },
    /// Ask the human to approve an upstream `pc1.` consent code.
    ApproveCode {
        /// The `pc1.…` code.
        code: String,
        /// The protocol of the code's proposal (as for `consent`).
        dialect: Dialect,
        /// The agent's holder key.
        agent: String,
    },
    /// Ask the human for a time-boxed grant.
    Grant {
        /// The agent's holder key (the grant's `sub`).
        agent: String,
        /// The requested caveats (a JSON array); the human may narrow them.
        caveats: Value,
        /// A label the agent suggests for the grant.
        label: Option<String>,
        /// Why the agent asks (shown to the human as the agent's words).
        reason: Option<String>,
    },
    /// What is the state of an earlier request?
    Status {
        /// The `id` of that request.
        request: String,
    },
    /// Withdraw an earlier request that is still pending.
    Cancel {
        /// The `id` of that request.
        request: String,
    },
}

impl Op {
    /// The wire name of the operation.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Hello => "hello",
            Op::Consent { .. } => "consent",
            Op::ApproveCode { .. } => "approve_code",
            Op::Grant { .. } => "grant",
            Op::Status { .. } => "status",
            Op::Cancel { .. } => "cancel",
        }
    }
}

/// Every op name, in the order the docs list them.
pub const OPS: [&str; 6] = [
    "hello",
    "consent",
    "approve_code",
    "grant",
    "status",
    "cancel",
];

/// The `code` of an `ERROR` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The line is not a valid v1 frame: too large, not UTF-8, not JSON, not
    /// an object, or a broken envelope (`custody`, `id`, `op`).
    BadFrame,
    /// The `op` is not one of protocol v1.
    UnknownOp,
    /// A body field is missing or has the wrong type.
    Invalid,
    /// The peer's OS user is not allowed by the peer policy.
    ForbiddenPeer,
    /// The peer sent too many requests; retry later.
    RateLimited,
    /// Too many connections or pending requests; retry later.
    Busy,
    /// A fault inside custody; nothing was signed.
    Internal,
}

impl ErrorCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::UnknownOp => "unknown_op",
            ErrorCode::Invalid => "invalid",
            ErrorCode::ForbiddenPeer => "forbidden_peer",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Busy => "busy",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a frame is not a valid request: the `ERROR` to send back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RequestError {
    /// The request id when the envelope got far enough to have one, so the
    /// agent can correlate the error; `None` means the reply's `re` is null.
    pub id: Option<String>,
    /// The error code.
    pub code: ErrorCode,
    /// One sentence for the agent's developer: what is wrong and what to send.
    pub message: String,
}

impl RequestError {
    fn new(id: Option<&str>, code: ErrorCode, message: impl Into<String>) -> Self {
        RequestError {
            id: id.map(str::to_owned),
            code,
            message: message.into(),
        }
    }

    /// The `ERROR` reply frame for this error.
    pub fn to_reply(&self) -> Value {
        Reply::Error {
            code: self.code,
            message: self.message.clone(),
        }
        .to_frame(self.id.as_deref())
    }
}

impl Request {
    /// Validates a strictly parsed frame as a v1 request.
    ///
    /// Envelope problems (not an object, `custody` ≠ 1, a bad `id` or `op`
    /// type) are `bad_frame`; an op name outside v1 is `unknown_op`; a missing
    /// or ill-typed body field is `invalid` and names the field.
    pub fn from_value(frame: &Value) -> Result<Request, RequestError> {
        let obj = frame.as_object().ok_or_else(|| {
            RequestError::new(None, ErrorCode::BadFrame, "a frame must be a JSON object")
        })?;

        let id = envelope_id(obj)?;
        let id_ref = Some(id.as_str());

        match obj.get("custody") {
            Some(v) if v.as_u64() == Some(VERSION) => {}
            Some(_) => {
                return Err(RequestError::new(
                    id_ref,
                    ErrorCode::BadFrame,
                    "`custody` must be 1: this custody speaks protocol v1 only",
                ))
            }
            None => {
                return Err(RequestError::new(
                    id_ref,
                    ErrorCode::BadFrame,
                    "missing `custody`: every request must carry \"custody\":1",
                ))
            }
        }

        let op_name = match obj.get("op") {
            Some(Value::String(s)) => s.as_str(),
            Some(_) => {
                return Err(RequestError::new(
                    id_ref,
                    ErrorCode::BadFrame,
                    "`op` must be a string",
                ))
            }
            None => {
                return Err(RequestError::new(
                    id_ref,
                    ErrorCode::BadFrame,
                    format!("missing `op`: send one of {}", OPS.join(", ")),
                ))
            }
        };

        let body = Body { obj, id: &id };
        let op = match op_name {
            "hello" => Op::Hello,
            "consent" => Op::Consent {
                consent: body.object("consent")?,
                proposal: body.object("proposal")?,
                service: body.string("service")?,
                agent: body.string("agent")?,
                dialect: body.dialect()?,
            },
            "approve_code" => Op::ApproveCode {
                code: body.string("code")?,
                agent: body.string("agent")?,
                dialect: body.dialect()?,
            },
            "grant" => Op::Grant {
                agent: body.string("agent")?,
                caveats: body.array("caveats")?,
                label: body.optional_string("label")?,
                reason: body.optional_string("reason")?,
            },
            "status" => Op::Status {
                request: body.request_ref()?,
            },
            "cancel" => Op::Cancel {
                request: body.request_ref()?,
            },
            other => {
                return Err(RequestError::new(
                    id_ref,
                    ErrorCode::UnknownOp,
                    format!(
                        "unknown op {}; protocol v1 knows {}",
                        quote(other),
                        OPS.join(", ")
                    ),
                ))
            }
        };
        Ok(Request { id, op })
    }
}

/// Reads and checks the envelope `id`.
fn envelope_id(obj: &Map<String, Value>) -> Result<String, RequestError> {
    match obj.get("id") {
        Some(Value::String(s)) => {
            if s.is_empty() {
                return Err(RequestError::new(
                    None,
                    ErrorCode::BadFrame,
                    "`id` must not be empty",
                ));
            }
            if s.chars().count() > MAX_ID_CHARS {
                return Err(RequestError::new(
                    None,
                    ErrorCode::BadFrame,
                    format!("`id` is longer than {MAX_ID_CHARS} characters"),
                ));
            }
            Ok(s.clone())
        }
        Some(_) => Err(RequestError::new(
            None,
            ErrorCode::BadFrame,
            "`id` must be a string",
        )),
        None => Err(RequestError::new(
            None,
            ErrorCode::BadFrame,
            "missing `id`: every request must carry a string id, unique on its connection",
        )),
    }
}

/// Typed access to a request body, producing `invalid` errors naming fields.
struct Body<'a> {
    obj: &'a Map<String, Value>,
    id: &'a str,
}

impl Body<'_> {
    fn invalid(&self, message: String) -> RequestError {
        RequestError::new(Some(self.id), ErrorCode::Invalid, message)
    }

    fn required(&self, field: &str, what: &str) -> Result<&Value, RequestError> {
        match self.obj.get(field) {
            Some(Value::Null) | None => {
                Err(self.invalid(format!("missing `{field}`: it must be {what}")))
            }
            Some(v) => Ok(v),
        }
    }

    fn string(&self, field: &str) -> Result<String, RequestError> {
        match self.required(field, "a non-empty string")? {
            Value::String(s) if !s.is_empty() => Ok(s.clone()),
            Value::String(_) => Err(self.invalid(format!("`{field}` must not be empty"))),
            other => Err(self.invalid(format!(
                "`{field}` must be a string, not {}",
                type_name(other)
            ))),
        }
    }

    fn optional_string(&self, field: &str) -> Result<Option<String>, RequestError> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.invalid(format!(
                "`{field}` must be a string when present, not {}",
                type_name(other)
            ))),
        }
    }

    /// `dialect`: `parley1` (the default, also when absent or `null`) or
    /// `yea1`. Anything else is refused, never guessed.
    fn dialect(&self) -> Result<Dialect, RequestError> {
        match self.optional_string("dialect")? {
            None => Ok(Dialect::ParleyV1),
            Some(s) => Dialect::parse(&s).ok_or_else(|| {
                self.invalid(format!(
                    "`dialect` must be \"parley1\" or \"yea1\", not {}",
                    quote(&s)
                ))
            }),
        }
    }

    fn object(&self, field: &str) -> Result<Value, RequestError> {
        match self.required(field, "an object")? {
            v @ Value::Object(_) => Ok(v.clone()),
            other => Err(self.invalid(format!(
                "`{field}` must be an object, not {}",
                type_name(other)
            ))),
        }
    }

    fn array(&self, field: &str) -> Result<Value, RequestError> {
        match self.required(field, "an array")? {
            v @ Value::Array(_) => Ok(v.clone()),
            other => Err(self.invalid(format!(
                "`{field}` must be an array, not {}",
                type_name(other)
            ))),
        }
    }

    /// The `request` field of `status`/`cancel`: an id, so the same bounds.
    fn request_ref(&self) -> Result<String, RequestError> {
        let s = self.string("request")?;
        if s.chars().count() > MAX_ID_CHARS {
            return Err(self.invalid(format!(
                "`request` is longer than {MAX_ID_CHARS} characters; it must be the id of an earlier request"
            )));
        }
        Ok(s)
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Quotes untrusted text for an error message: at most [`QUOTE_CHARS`]
/// characters, and everything outside printable ASCII (controls, bidi and
/// zero-width characters, look-alikes) written as `\u{…}`, so a message can
/// neither be long nor show something other than what was sent.
pub fn quote(untrusted: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = untrusted.chars();
    for c in chars.by_ref().take(QUOTE_CHARS) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            other => out.push_str(&format!("\\u{{{:x}}}", other as u32)),
        }
    }
    out.push('"');
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::json::parse_str;
    use serde_json::json;

    fn req(text: &str) -> Result<Request, RequestError> {
        Request::from_value(&parse_str(text).expect("test JSON parses"))
    }

    fn err(text: &str) -> RequestError {
        req(text).expect_err("request must be refused")
    }

    #[test]
    fn dialect_defaults_to_parley_and_is_never_guessed() {
        let consent = |extra: &str| {
            format!(
                r#"{{"custody":1,"id":"c","op":"consent","consent":{{}},"proposal":{{}},
                    "service":"s","agent":"ed25519:A"{extra}}}"#
            )
        };
        let dialect = |r: Request| match r.op {
            Op::Consent { dialect, .. } | Op::ApproveCode { dialect, .. } => dialect,
            other => panic!("wrong op {other:?}"),
        };
        assert_eq!(dialect(req(&consent("")).unwrap()), Dialect::ParleyV1);
        assert_eq!(
            dialect(req(&consent(r#","dialect":null"#)).unwrap()),
            Dialect::ParleyV1
        );
        assert_eq!(
            dialect(req(&consent(r#","dialect":"yea1""#)).unwrap()),
            Dialect::YeaV1
        );
        let code = r#"{"custody":1,"id":"k","op":"approve_code","code":"pc1.x","agent":"ed25519:A","dialect":"yea1"}"#;
        assert_eq!(dialect(req(code).unwrap()), Dialect::YeaV1);
        for bad in [r#","dialect":"yea2""#, r#","dialect":1"#] {
            let e = err(&consent(bad));
            assert_eq!(e.code, ErrorCode::Invalid, "{bad}");
            assert!(e.message.contains("dialect"), "{}", e.message);
        }
    }

    #[test]
    fn hello_parses_and_ignores_unknown_fields() {
        let r = req(r#"{"custody":1,"id":"a1","op":"hello","future":{"x":1}}"#).unwrap();
        assert_eq!(r.id, "a1");
        assert_eq!(r.op, Op::Hello);
    }

    #[test]
    fn consent_keeps_payloads_raw() {
        let r = req(
            r#"{"custody":1,"id":"c","op":"consent","consent":{"hash":"h"},
                "proposal":{"id":"p","hash":"h"},"service":"shop.example","agent":"ed25519:A"}"#,
        )
        .unwrap();
        match r.op {
            Op::Consent {
                consent,
                proposal,
                service,
                agent,
                dialect,
            } => {
                assert_eq!(dialect, Dialect::ParleyV1);
                assert_eq!(consent, json!({"hash":"h"}));
                assert_eq!(proposal, json!({"id":"p","hash":"h"}));
                assert_eq!(service, "shop.example");
                assert_eq!(agent, "ed25519:A");
            }
            other => panic!("wrong op {other:?}"),
        }
    }

    #[test]
    fn every_op_parses() {
        let cases = [
            (
                r#"{"custody":1,"id":"1","op":"approve_code","code":"pc1.x","agent":"ed25519:A"}"#,
                "approve_code",
            ),
            (
                r#"{"custody":1,"id":"2","op":"grant","agent":"ed25519:A","caveats":[{"svc":["a"]}]}"#,
                "grant",
            ),
            (
                r#"{"custody":1,"id":"3","op":"grant","agent":"ed25519:A","caveats":[],"label":"l","reason":null}"#,
                "grant",
            ),
            (
                r#"{"custody":1,"id":"4","op":"status","request":"2"}"#,
                "status",
            ),
            (
                r#"{"custody":1,"id":"5","op":"cancel","request":"2"}"#,
                "cancel",
            ),
        ];
        for (text, name) in cases {
            assert_eq!(req(text).unwrap().op.name(), name, "{text}");
        }
        let g = req(cases[2].0).unwrap();
        assert_eq!(
            g.op,
            Op::Grant {
                agent: "ed25519:A".into(),
                caveats: json!([]),
                label: Some("l".into()),
                reason: None
            }
        );
    }

    #[test]
    fn wrong_version_is_bad_frame() {
        for text in [
            r#"{"custody":2,"id":"a","op":"hello"}"#,
            r#"{"custody":"1","id":"a","op":"hello"}"#,
            r#"{"custody":1.0,"id":"a","op":"hello"}"#,
            r#"{"id":"a","op":"hello"}"#,
        ] {
            let e = err(text);
            assert_eq!(e.code, ErrorCode::BadFrame, "{text}");
            assert_eq!(e.id.as_deref(), Some("a"));
        }
    }

    #[test]
    fn envelope_errors_are_bad_frame() {
        assert_eq!(err(r#"[1]"#).code, ErrorCode::BadFrame);
        assert_eq!(
            err(r#"{"custody":1,"op":"hello"}"#).code,
            ErrorCode::BadFrame
        );
        assert_eq!(
            err(r#"{"custody":1,"id":7,"op":"hello"}"#).code,
            ErrorCode::BadFrame
        );
        assert_eq!(
            err(r#"{"custody":1,"id":"","op":"hello"}"#).code,
            ErrorCode::BadFrame
        );
        assert_eq!(err(r#"{"custody":1,"id":"a"}"#).code, ErrorCode::BadFrame);
        assert_eq!(
            err(r#"{"custody":1,"id":"a","op":5}"#).code,
            ErrorCode::BadFrame
        );
    }

    #[test]
    fn id_length_is_bounded_in_characters() {
        let ok = "é".repeat(MAX_ID_CHARS);
        assert!(req(&format!(r#"{{"custody":1,"id":"{ok}","op":"hello"}}"#)).is_ok());
        let long = "x".repeat(MAX_ID_CHARS + 1);
        let e = err(&format!(r#"{{"custody":1,"id":"{long}","op":"hello"}}"#));
        assert_eq!(e.code, ErrorCode::BadFrame);
        assert_eq!(e.id, None, "an over-long id is not echoed back");
    }

    #[test]
    fn unknown_op_is_named_truncated_and_escaped() {
        let e = err(r#"{"custody":1,"id":"a","op":"sign_bytes"}"#);
        assert_eq!(e.code, ErrorCode::UnknownOp);
        assert!(e.message.contains("\"sign_bytes\""), "{}", e.message);

        let hostile = format!("x\u{202e}\n\"{}", "y".repeat(500));
        let text = serde_json::to_string(&json!({"custody":1,"id":"a","op":hostile})).unwrap();
        let e = err(&text);
        assert_eq!(e.code, ErrorCode::UnknownOp);
        assert!(
            e.message.contains(r#""x\u{202e}\u{a}\"yyy"#),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\u{202e}') && !e.message.contains('\n'));
        assert!(e.message.len() < 200, "message stays short: {}", e.message);
    }

    #[test]
    fn missing_or_ill_typed_fields_are_invalid_and_named() {
        let cases = [
            (
                r#"{"custody":1,"id":"a","op":"consent","proposal":{},"service":"s","agent":"k"}"#,
                "`consent`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"consent","consent":[],"proposal":{},"service":"s","agent":"k"}"#,
                "`consent`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"consent","consent":{},"proposal":"p","service":"s","agent":"k"}"#,
                "`proposal`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"consent","consent":{},"proposal":{},"service":1,"agent":"k"}"#,
                "`service`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"consent","consent":{},"proposal":{},"service":"s"}"#,
                "`agent`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"approve_code","agent":"k"}"#,
                "`code`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"approve_code","code":"","agent":"k"}"#,
                "`code`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"grant","agent":"k","caveats":{}}"#,
                "`caveats`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"grant","agent":"k","caveats":[],"label":3}"#,
                "`label`",
            ),
            (
                r#"{"custody":1,"id":"a","op":"grant","agent":"k","caveats":[],"reason":[]}"#,
                "`reason`",
            ),
            (r#"{"custody":1,"id":"a","op":"status"}"#, "`request`"),
            (
                r#"{"custody":1,"id":"a","op":"cancel","request":null}"#,
                "`request`",
            ),
        ];
        for (text, field) in cases {
            let e = err(text);
            assert_eq!(e.code, ErrorCode::Invalid, "{text}");
            assert!(e.message.contains(field), "{text}: {}", e.message);
            assert_eq!(e.id.as_deref(), Some("a"));
        }
        let long = "r".repeat(MAX_ID_CHARS + 1);
        let e = err(&format!(
            r#"{{"custody":1,"id":"a","op":"status","request":"{long}"}}"#
        ));
        assert_eq!(e.code, ErrorCode::Invalid);
    }

    #[test]
    fn error_reply_frames() {
        let e = err(r#"{"custody":1,"id":"q","op":"nope"}"#);
        let v = e.to_reply();
        assert_eq!(v["re"], "q");
        assert_eq!(v["kind"], "ERROR");
        assert_eq!(v["code"], "unknown_op");
        let v = err("[]").to_reply();
        assert_eq!(v["re"], Value::Null);
        assert_eq!(v["code"], "bad_frame");
    }

    #[test]
    fn quote_escapes_and_truncates() {
        assert_eq!(quote("ok"), "\"ok\"");
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("\u{200b}"), r#""\u{200b}""#);
        let q = quote(&"z".repeat(100));
        assert!(q.ends_with('…') && q.chars().filter(|c| *c == 'z').count() == QUOTE_CHARS);
    }
}
