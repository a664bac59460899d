//! Custody's replies: the types, how custody writes them
//! ([`Reply::to_frame`]) and how a client reads them back ([`parse_reply`]).
//!
//! Both directions live side by side so they cannot drift apart: a field
//! custody starts sending and a client does not check (or the other way
//! round) shows up here, in one file, and in the round-trip test below.
//! Custody writes replies; an agent reads them and must treat them like any
//! peer's frame: a reply of a known `kind` with the fields that kind must
//! carry, else an error naming what is wrong, never a guess.

use super::{quote, ErrorCode, VERSION};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A principal key this custody holds, as listed in `HELLO`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The public key, `ed25519:…`.
    pub key: String,
    /// The human's label for it, if any.
    pub label: Option<String>,
}

/// The state of a request, as reported by `STATUS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestState {
    /// Waiting for the human.
    Pending,
    /// A consent was approved and signed.
    Approved,
    /// A grant was issued.
    Issued,
    /// The human said no.
    Denied,
    /// Re-verification failed; it was never shown.
    Rejected,
    /// Nobody decided in time.
    Expired,
    /// The agent withdrew it.
    Cancelled,
    /// No such request on record for this peer.
    Unknown,
}

impl RequestState {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestState::Pending => "pending",
            RequestState::Approved => "approved",
            RequestState::Issued => "issued",
            RequestState::Denied => "denied",
            RequestState::Rejected => "rejected",
            RequestState::Expired => "expired",
            RequestState::Cancelled => "cancelled",
            RequestState::Unknown => "unknown",
        }
    }
}

/// The short grant an `APPROVED` reply may carry (`for_a_while`, an
/// extension): the human let the agent spend up to an amount more at this
/// service for some minutes without asking.
#[derive(Debug, Clone, PartialEq)]
pub struct ForAWhileGrant {
    /// The `pg1.` token.
    pub grant: String,
    /// Its caveats, as signed.
    pub caveats: Value,
}

/// A reply from custody. Every one is final except [`Reply::Pending`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Answer to `hello`.
    Hello {
        /// The protocol version custody speaks ([`VERSION`]).
        version: u64,
        /// The principal keys custody holds.
        principals: Vec<Principal>,
    },
    /// Non-final: the request waits for the human.
    Pending {
        /// The id of the waiting request.
        request: String,
        /// Its place in the review queue (1 = on screen now), when known.
        position: Option<u64>,
    },
    /// A consent was approved; `grant` is the `pg1.` token.
    Approved {
        /// The consent grant token.
        grant: String,
        /// An extension of ours (custody protocol `for_a_while`): the short
        /// grant the human issued beside the consent ("approve for a
        /// while"), if they did.
        for_a_while: Option<ForAWhileGrant>,
    },
    /// The human declined.
    Denied {
        /// The human's reason, if they gave one.
        reason: Option<String>,
    },
    /// Re-verification failed; the request was never shown to the human.
    Rejected {
        /// Which check failed (set by the review layer).
        code: String,
        /// One sentence saying what did not match.
        message: String,
    },
    /// Nobody decided before the request expired.
    Expired,
    /// A grant was issued; `caveats` are the ones signed (maybe narrowed).
    Issued {
        /// The `pg1.` token.
        grant: String,
        /// The caveats the human approved.
        caveats: Value,
    },
    /// Answer to `status`.
    Status {
        /// The request asked about.
        request: String,
        /// Its state.
        state: RequestState,
    },
    /// Answer to `cancel`: the request was withdrawn.
    Cancelled,
    /// The request could not be handled.
    Error {
        /// The error code.
        code: ErrorCode,
        /// One sentence saying what to do.
        message: String,
    },
}

impl Reply {
    /// Shorthand for an `ERROR` reply.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Reply {
        Reply::Error {
            code,
            message: message.into(),
        }
    }

    /// The wire `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Reply::Hello { .. } => "HELLO",
            Reply::Pending { .. } => "PENDING",
            Reply::Approved { .. } => "APPROVED",
            Reply::Denied { .. } => "DENIED",
            Reply::Rejected { .. } => "REJECTED",
            Reply::Expired => "EXPIRED",
            Reply::Issued { .. } => "ISSUED",
            Reply::Status { .. } => "STATUS",
            Reply::Cancelled => "CANCELLED",
            Reply::Error { .. } => "ERROR",
        }
    }

    /// `PENDING` is the only non-final reply: a request gets any number of
    /// them, then exactly one final reply.
    pub fn is_final(&self) -> bool {
        !matches!(self, Reply::Pending { .. })
    }

    /// The reply in one sentence for a person (an agent's log, a CLI's
    /// stderr): never a debug dump. Text that came from custody or a human
    /// goes through the display rule; tokens are shortened.
    pub fn sentence(&self) -> String {
        use crate::display::safe;
        let short = |t: &str| format!("{}…", t.chars().take(16).collect::<String>());
        match self {
            Reply::Hello {
                version,
                principals,
            } => format!(
                "custody speaks protocol v{version} and holds {} principal key(s)",
                principals.len()
            ),
            Reply::Pending { request, position } => match position {
                Some(p) => format!(
                    "request {} waits for the human (place {p} in the queue)",
                    safe(request)
                ),
                None => format!("request {} waits for the human", safe(request)),
            },
            Reply::Approved {
                grant,
                for_a_while: None,
            } => {
                format!("the human approved: consent grant {}", short(grant))
            }
            Reply::Approved {
                grant,
                for_a_while: Some(w),
            } => format!(
                "the human approved: consent grant {}, and for a while grant {}",
                short(grant),
                short(&w.grant)
            ),
            Reply::Denied { reason: Some(r) } => format!("the human denied it: {}", safe(r)),
            Reply::Denied { reason: None } => "the human denied it".to_string(),
            Reply::Rejected { code, message } => format!(
                "custody rejected it without showing it to the human ({}): {}",
                safe(code),
                safe(message)
            ),
            Reply::Expired => "nobody decided before the request expired".to_string(),
            Reply::Issued { grant, .. } => format!("the human issued grant {}", short(grant)),
            Reply::Status { request, state } => {
                format!("request {} is {}", safe(request), state.as_str())
            }
            Reply::Cancelled => "the request was cancelled".to_string(),
            Reply::Error { code, message } => {
                format!("custody refused it ({}): {}", code.as_str(), safe(message))
            }
        }
    }

    /// The reply frame answering request `re` (`None` when the request id is
    /// unknown, e.g. for an unparseable line: `re` is then `null`).
    ///
    /// Replies also carry `"custody":1` so a client can tell the version.
    /// Optional fields that are absent are omitted, not `null`.
    pub fn to_frame(&self, re: Option<&str>) -> Value {
        let mut m = Map::new();
        m.insert("custody".into(), json!(VERSION));
        m.insert("re".into(), re.map_or(Value::Null, |r| json!(r)));
        m.insert("kind".into(), json!(self.kind()));
        match self {
            Reply::Hello {
                version,
                principals,
            } => {
                m.insert("version".into(), json!(version));
                m.insert("principals".into(), json!(principals));
            }
            Reply::Pending { request, position } => {
                m.insert("request".into(), json!(request));
                if let Some(p) = position {
                    m.insert("position".into(), json!(p));
                }
            }
            Reply::Approved { grant, for_a_while } => {
                m.insert("grant".into(), json!(grant));
                if let Some(w) = for_a_while {
                    m.insert(
                        "for_a_while".into(),
                        json!({"grant": w.grant, "caveats": w.caveats}),
                    );
                }
            }
            Reply::Denied { reason } => {
                if let Some(r) = reason {
                    m.insert("reason".into(), json!(r));
                }
            }
            Reply::Rejected { code, message } => {
                m.insert("code".into(), json!(code));
                m.insert("message".into(), json!(message));
            }
            Reply::Expired | Reply::Cancelled => {}
            Reply::Issued { grant, caveats } => {
                m.insert("grant".into(), json!(grant));
                m.insert("caveats".into(), caveats.clone());
            }
            Reply::Status { request, state } => {
                m.insert("request".into(), json!(request));
                m.insert("state".into(), json!(state.as_str()));
            }
            Reply::Error { code, message } => {
                m.insert("code".into(), json!(code.as_str()));
                m.insert("message".into(), json!(message));
            }
        }
        Value::Object(m)
    }
}

/// Why a reply frame from custody is not a valid protocol v1 reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The frame is not a JSON object.
    #[error("a reply must be a JSON object")]
    NotObject,
    /// `custody` is missing or not 1.
    #[error("the reply's `custody` is {0}, not 1: custody speaks another protocol version than this client (v1); upgrade the older one")]
    Version(String),
    /// `re` is neither a string nor `null`.
    #[error("the reply's `re` must be a request id string or null")]
    Re,
    /// `kind` is missing or not a string.
    #[error("the reply has no `kind` string")]
    Kind,
    /// A `kind` protocol v1 does not define.
    #[error(
        "unknown reply kind {0}: custody speaks a newer protocol than this client; upgrade it"
    )]
    UnknownKind(String),
    /// A field the kind requires is absent (or `null`).
    #[error("{kind} reply without `{field}`")]
    Missing {
        /// The reply kind.
        kind: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field has the wrong type or an unknown value.
    #[error("{kind} reply: `{field}` must be {expected}")]
    Invalid {
        /// The reply kind.
        kind: &'static str,
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
}

/// A parsed reply frame: which request it answers, and the reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyFrame {
    /// The `re` of the frame: the request id, or `None` when custody could
    /// not tie it to a request (a refused connection, an unreadable line).
    pub re: Option<String>,
    /// The reply.
    pub reply: Reply,
}

/// Reads a reply frame (the inverse of [`Reply::to_frame`]). Unknown fields
/// are ignored; a missing or ill-typed field of a known kind, or an unknown
/// kind, is an error naming it.
pub fn parse_reply(frame: &Value) -> Result<ReplyFrame, ReplyError> {
    let obj = frame.as_object().ok_or(ReplyError::NotObject)?;
    match obj.get("custody") {
        Some(v) if v.as_u64() == Some(VERSION) => {}
        Some(v) => {
            return Err(ReplyError::Version(quote(
                &serde_json::to_string(v).unwrap_or_default(),
            )))
        }
        None => return Err(ReplyError::Version("missing".into())),
    }
    let re = match obj.get("re") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ReplyError::Re),
    };
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .ok_or(ReplyError::Kind)?;
    let f = Fields { obj, kind: "" };
    let reply = match kind {
        "HELLO" => {
            let f = f.of("HELLO");
            Reply::Hello {
                version: f.uint("version")?,
                principals: f.principals()?,
            }
        }
        "PENDING" => {
            let f = f.of("PENDING");
            Reply::Pending {
                request: f.string("request")?,
                position: f.optional_uint("position")?,
            }
        }
        "APPROVED" => {
            let f = f.of("APPROVED");
            Reply::Approved {
                grant: f.string("grant")?,
                for_a_while: f.for_a_while()?,
            }
        }
        "DENIED" => Reply::Denied {
            reason: f.of("DENIED").optional_string("reason")?,
        },
        "REJECTED" => {
            let f = f.of("REJECTED");
            Reply::Rejected {
                code: f.string("code")?,
                message: f.string("message")?,
            }
        }
        "EXPIRED" => Reply::Expired,
        "ISSUED" => {
            let f = f.of("ISSUED");
            Reply::Issued {
                grant: f.string("grant")?,
                caveats: f.array("caveats")?,
            }
        }
        "STATUS" => {
            let f = f.of("STATUS");
            Reply::Status {
                request: f.string("request")?,
                state: f.state("state")?,
            }
        }
        "CANCELLED" => Reply::Cancelled,
        "ERROR" => {
            let f = f.of("ERROR");
            Reply::Error {
                code: f.error_code("code")?,
                message: f.string("message")?,
            }
        }
        other => return Err(ReplyError::UnknownKind(quote(other))),
    };
    Ok(ReplyFrame { re, reply })
}

/// Typed access to the fields of one reply kind.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    kind: &'static str,
}

impl<'a> Fields<'a> {
    fn of(&self, kind: &'static str) -> Fields<'a> {
        Fields {
            obj: self.obj,
            kind,
        }
    }

    fn get(&self, field: &'static str) -> Option<&'a Value> {
        self.obj.get(field).filter(|v| !v.is_null())
    }

    fn required(&self, field: &'static str) -> Result<&'a Value, ReplyError> {
        self.get(field).ok_or(ReplyError::Missing {
            kind: self.kind,
            field,
        })
    }

    fn invalid(&self, field: &'static str, expected: &'static str) -> ReplyError {
        ReplyError::Invalid {
            kind: self.kind,
            field,
            expected,
        }
    }

    fn string(&self, field: &'static str) -> Result<String, ReplyError> {
        self.required(field)?
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| self.invalid(field, "a string"))
    }

    fn optional_string(&self, field: &'static str) -> Result<Option<String>, ReplyError> {
        self.get(field)
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| self.invalid(field, "a string"))
            })
            .transpose()
    }

    fn uint(&self, field: &'static str) -> Result<u64, ReplyError> {
        self.required(field)?
            .as_u64()
            .ok_or_else(|| self.invalid(field, "a non-negative integer"))
    }

    fn optional_uint(&self, field: &'static str) -> Result<Option<u64>, ReplyError> {
        self.get(field)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.invalid(field, "a non-negative integer"))
            })
            .transpose()
    }

    /// `for_a_while`: absent, or `{grant: string, caveats: array}`.
    fn for_a_while(&self) -> Result<Option<ForAWhileGrant>, ReplyError> {
        const EXPECTED: &str = "{grant: string, caveats: array}";
        let Some(v) = self.get("for_a_while") else {
            return Ok(None);
        };
        let grant = v["grant"].as_str();
        match (grant, &v["caveats"]) {
            (Some(g), c @ Value::Array(_)) => Ok(Some(ForAWhileGrant {
                grant: g.to_owned(),
                caveats: c.clone(),
            })),
            _ => Err(self.invalid("for_a_while", EXPECTED)),
        }
    }

    fn array(&self, field: &'static str) -> Result<Value, ReplyError> {
        match self.required(field)? {
            v @ Value::Array(_) => Ok(v.clone()),
            _ => Err(self.invalid(field, "an array")),
        }
    }

    fn principals(&self) -> Result<Vec<Principal>, ReplyError> {
        const EXPECTED: &str = "a list of {key, label} objects";
        let list = self
            .required("principals")?
            .as_array()
            .ok_or_else(|| self.invalid("principals", EXPECTED))?;
        list.iter()
            .map(|p| {
                let key = p.get("key").and_then(Value::as_str);
                let label = match p.get("label") {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(_) => Err(self.invalid("principals", EXPECTED)),
                };
                match key {
                    Some(key) => Ok(Principal {
                        key: key.to_owned(),
                        label: label?,
                    }),
                    None => Err(self.invalid("principals", EXPECTED)),
                }
            })
            .collect()
    }

    fn state(&self, field: &'static str) -> Result<RequestState, ReplyError> {
        serde_json::from_value(self.required(field)?.clone()).map_err(|_| {
            self.invalid(
                field,
                "one of pending, approved, issued, denied, rejected, expired, cancelled, unknown",
            )
        })
    }

    fn error_code(&self, field: &'static str) -> Result<ErrorCode, ReplyError> {
        serde_json::from_value(self.required(field)?.clone()).map_err(|_| {
            self.invalid(
                field,
                "one of bad_frame, unknown_op, invalid, forbidden_peer, rate_limited, busy, internal",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_replies() -> Vec<Reply> {
        vec![
            Reply::Hello {
                version: 1,
                principals: vec![
                    Principal {
                        key: "ed25519:K".into(),
                        label: Some("me".into()),
                    },
                    Principal {
                        key: "ed25519:L".into(),
                        label: None,
                    },
                ],
            },
            Reply::Pending {
                request: "r".into(),
                position: Some(2),
            },
            Reply::Pending {
                request: "r".into(),
                position: None,
            },
            Reply::Approved {
                grant: "pg1.x".into(),
                for_a_while: None,
            },
            Reply::Approved {
                grant: "pg1.x".into(),
                for_a_while: Some(ForAWhileGrant {
                    grant: "pg1.w".into(),
                    caveats: json!([{"svc": ["shop.example"]}, {"exp": 5}]),
                }),
            },
            Reply::Denied {
                reason: Some("no".into()),
            },
            Reply::Denied { reason: None },
            Reply::Rejected {
                code: "hash_mismatch".into(),
                message: "m".into(),
            },
            Reply::Expired,
            Reply::Issued {
                grant: "pg1.y".into(),
                caveats: json!([{"exp": 5}]),
            },
            Reply::Status {
                request: "q".into(),
                state: RequestState::Cancelled,
            },
            Reply::Cancelled,
            Reply::error(ErrorCode::ForbiddenPeer, "go away"),
        ]
    }

    #[test]
    fn a_reply_in_words_is_a_sentence_not_a_debug_value() {
        let denied = Reply::Denied {
            reason: Some("too much\u{1b}[2J\nCOST 1.00 USD".into()),
        };
        let s = denied.sentence();
        assert!(s.starts_with("the human denied it: too much"), "{s}");
        assert!(!s.contains('\u{1b}') && !s.contains('\n'), "{s:?}");
        assert!(!s.contains("Denied {"), "{s}");
        let approved = Reply::Approved {
            grant: format!("pg1.{}", "A".repeat(300)),
            for_a_while: None,
        };
        assert!(approved.sentence().chars().count() < 60);
        assert_eq!(
            Reply::Expired.sentence(),
            "nobody decided before the request expired"
        );
    }

    #[test]
    fn reply_frames_have_the_documented_shape() {
        let hello = Reply::Hello {
            version: 1,
            principals: vec![Principal {
                key: "ed25519:K".into(),
                label: Some("me".into()),
            }],
        };
        assert_eq!(
            serde_json::to_string(&hello.to_frame(Some("1"))).unwrap(),
            r#"{"custody":1,"re":"1","kind":"HELLO","version":1,"principals":[{"key":"ed25519:K","label":"me"}]}"#
        );
        let pending = Reply::Pending {
            request: "2".into(),
            position: None,
        };
        assert!(!pending.is_final());
        assert_eq!(
            serde_json::to_string(&pending.to_frame(Some("2"))).unwrap(),
            r#"{"custody":1,"re":"2","kind":"PENDING","request":"2"}"#
        );
        let cases = [
            (
                Reply::Approved {
                    grant: "pg1.x".into(),
                    for_a_while: None,
                },
                r#"{"custody":1,"re":"r","kind":"APPROVED","grant":"pg1.x"}"#,
            ),
            (
                Reply::Denied { reason: None },
                r#"{"custody":1,"re":"r","kind":"DENIED"}"#,
            ),
            (
                Reply::Rejected {
                    code: "hash_mismatch".into(),
                    message: "m".into(),
                },
                r#"{"custody":1,"re":"r","kind":"REJECTED","code":"hash_mismatch","message":"m"}"#,
            ),
            (Reply::Expired, r#"{"custody":1,"re":"r","kind":"EXPIRED"}"#),
            (
                Reply::Issued {
                    grant: "pg1.y".into(),
                    caveats: json!([{"exp":5}]),
                },
                r#"{"custody":1,"re":"r","kind":"ISSUED","grant":"pg1.y","caveats":[{"exp":5}]}"#,
            ),
            (
                Reply::Status {
                    request: "q".into(),
                    state: RequestState::Pending,
                },
                r#"{"custody":1,"re":"r","kind":"STATUS","request":"q","state":"pending"}"#,
            ),
            (
                Reply::Cancelled,
                r#"{"custody":1,"re":"r","kind":"CANCELLED"}"#,
            ),
            (
                Reply::error(ErrorCode::RateLimited, "slow down"),
                r#"{"custody":1,"re":"r","kind":"ERROR","code":"rate_limited","message":"slow down"}"#,
            ),
        ];
        for (reply, want) in cases {
            assert!(reply.is_final());
            assert_eq!(
                serde_json::to_string(&reply.to_frame(Some("r"))).unwrap(),
                want
            );
        }
    }

    #[test]
    fn parse_reply_inverts_to_frame_for_every_kind() {
        for reply in all_replies() {
            for re in [Some("r-1"), None] {
                let parsed = parse_reply(&reply.to_frame(re)).unwrap();
                assert_eq!(parsed.reply, reply);
                assert_eq!(parsed.re.as_deref(), re);
            }
        }
    }

    #[test]
    fn parse_reply_names_what_is_wrong() {
        let cases: [(Value, ReplyError); 9] = [
            (json!([1]), ReplyError::NotObject),
            (
                json!({"re":"1","kind":"EXPIRED"}),
                ReplyError::Version("missing".into()),
            ),
            (
                json!({"custody":2,"re":"1","kind":"EXPIRED"}),
                ReplyError::Version("\"2\"".into()),
            ),
            (json!({"custody":1,"re":7,"kind":"EXPIRED"}), ReplyError::Re),
            (json!({"custody":1,"re":"1"}), ReplyError::Kind),
            (
                json!({"custody":1,"re":"1","kind":"SIGNED"}),
                ReplyError::UnknownKind("\"SIGNED\"".into()),
            ),
            (
                json!({"custody":1,"re":"1","kind":"APPROVED"}),
                ReplyError::Missing {
                    kind: "APPROVED",
                    field: "grant",
                },
            ),
            (
                json!({"custody":1,"re":"1","kind":"STATUS","request":"a","state":"weird"}),
                ReplyError::Invalid {
                    kind: "STATUS",
                    field: "state",
                    expected: "one of pending, approved, issued, denied, rejected, expired, cancelled, unknown",
                },
            ),
            (
                json!({"custody":1,"re":"1","kind":"HELLO","version":1,"principals":[{"label":"x"}]}),
                ReplyError::Invalid {
                    kind: "HELLO",
                    field: "principals",
                    expected: "a list of {key, label} objects",
                },
            ),
        ];
        for (frame, want) in cases {
            assert_eq!(parse_reply(&frame).unwrap_err(), want, "{frame}");
        }
        // Unknown fields are ignored.
        let extra = json!({"custody":1,"re":"1","kind":"EXPIRED","future":{"x":1}});
        assert_eq!(parse_reply(&extra).unwrap().reply, Reply::Expired);
    }
}
