//! Request frames (§2.1, §3): the envelope and the common fields, read
//! strictly enough that nothing later has to guess.
//!
//! A frame is already a strictly parsed JSON object (no duplicate keys,
//! bounded depth and size) when it gets here. Unknown fields are ignored
//! (§2.1). What is refused, with `bad_frame`: no `"parley": 1`, no string
//! `id` (or an absurdly long one), an unknown verb, and common fields of the
//! wrong type (`budget`, `grants`, `proof`, `auto`).

use super::error::ParleyError;
use parley_core::Dialect;
use serde_json::{Map, Value};

/// The budget when a request names none (§3).
pub const DEFAULT_BUDGET: usize = 2000;
/// The largest budget taken as asked; larger ones are treated as this.
pub const MAX_BUDGET: usize = 1_000_000;
/// The most grants one request may present (§6.6 allows several).
pub const MAX_GRANTS: usize = 8;
/// The longest request id accepted, in bytes. Ids are echoed in `re` and
/// kept in the auto-commit replay memory (§4.3.1), so they are bounded.
pub const MAX_ID: usize = 256;

/// The request verbs (§4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// §4.1
    Hello,
    /// §4.2
    Ask,
    /// §4.3
    Intent,
    /// §4.4
    Commit,
    /// §4.5
    Undo,
    /// §4.6
    Expand,
}

impl Verb {
    /// The wire name, as caveats (§6.3 `verbs`) and proofs (§6.5) spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Hello => "HELLO",
            Verb::Ask => "ASK",
            Verb::Intent => "INTENT",
            Verb::Commit => "COMMIT",
            Verb::Undo => "UNDO",
            Verb::Expand => "EXPAND",
        }
    }

    fn parse(s: &str) -> Option<Verb> {
        Some(match s {
            "HELLO" => Verb::Hello,
            "ASK" => Verb::Ask,
            "INTENT" => Verb::Intent,
            "COMMIT" => Verb::Commit,
            "UNDO" => Verb::Undo,
            "EXPAND" => Verb::Expand,
            _ => return None,
        })
    }
}

/// A request whose envelope and common fields are well formed.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id; replies name it in `re`.
    pub id: String,
    /// The verb.
    pub verb: Verb,
    /// The token budget for the reply's Lens (§3, §8).
    pub budget: usize,
    /// Grant tokens (§6), as sent.
    pub grants: Vec<String>,
    /// The proof of possession (§6.5), unparsed.
    pub proof: Option<Value>,
    /// `auto` (§4.3.1); only meaningful on INTENT.
    pub auto: bool,
    /// The whole frame, for the verb's own fields.
    pub frame: Map<String, Value>,
}

/// Why a frame is not a request: the error, and the id to answer with if
/// the frame had a usable one.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The `re` of the error reply.
    pub re: Option<String>,
    /// The error (`bad_frame`).
    pub error: ParleyError,
}

impl Request {
    /// Reads the envelope and common fields of a frame sent to a service
    /// speaking `dialect`: the frame must carry that dialect's marker
    /// (`"parley": 1` or `"yea": 1`, §2.1), and no other.
    pub fn parse(frame: &Value, dialect: Dialect) -> Result<Request, Rejected> {
        let reject = |re: Option<String>, msg: String| Rejected {
            re,
            error: ParleyError::bad_frame(msg),
        };
        let Some(obj) = frame.as_object() else {
            return Err(reject(None, "a frame is a JSON object".into()));
        };
        let id = match obj.get("id") {
            Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_ID => s.clone(),
            Some(Value::String(_)) => {
                return Err(reject(
                    None,
                    format!("the frame id must be 1 to {MAX_ID} bytes"),
                ))
            }
            _ => {
                return Err(reject(
                    None,
                    "every frame needs an \"id\" string (§2.1)".into(),
                ))
            }
        };
        let re = Some(id.clone());
        if Dialect::of_frame(frame) != dialect
            || obj.get(dialect.marker()).and_then(Value::as_u64) != Some(1)
        {
            return Err(reject(
                re,
                format!(
                    "every frame needs \"{}\": 1 (this service speaks {dialect})",
                    dialect.marker()
                ),
            ));
        }
        if obj.contains_key("kind") && !obj.contains_key("verb") {
            return Err(reject(
                re,
                "this is a reply frame; a service takes requests (frames with a \"verb\")".into(),
            ));
        }
        let verb = match obj.get("verb") {
            Some(Value::String(v)) => Verb::parse(v).ok_or_else(|| {
                let shown: String = v.chars().take(40).collect();
                reject(
                    re.clone(),
                    format!(
                        "unknown verb {shown:?}; use HELLO, ASK, INTENT, COMMIT, UNDO or EXPAND"
                    ),
                )
            })?,
            _ => return Err(reject(re, "a request needs a \"verb\" string".into())),
        };
        let budget = match obj.get("budget") {
            None | Some(Value::Null) => DEFAULT_BUDGET,
            Some(v) => match v.as_u64() {
                Some(b) if b > 0 => usize::try_from(b).unwrap_or(MAX_BUDGET).min(MAX_BUDGET),
                _ => {
                    return Err(reject(
                        re,
                        "budget must be a positive integer (estimated tokens, §8)".into(),
                    ))
                }
            },
        };
        let grants = match obj.get("grants") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) if list.len() <= MAX_GRANTS => {
                let mut grants = Vec::with_capacity(list.len());
                for g in list {
                    match g {
                        Value::String(s) => grants.push(s.clone()),
                        _ => {
                            return Err(reject(re, "grants must be a list of token strings".into()))
                        }
                    }
                }
                grants
            }
            Some(Value::Array(_)) => {
                return Err(reject(
                    re,
                    format!("at most {MAX_GRANTS} grants per request"),
                ))
            }
            Some(_) => return Err(reject(re, "grants must be a list of token strings".into())),
        };
        let proof = match obj.get("proof") {
            None | Some(Value::Null) => None,
            Some(p @ Value::Object(_)) => Some(p.clone()),
            Some(_) => {
                return Err(reject(
                    re,
                    "proof must be an object {key, ts, sig} (§6.5)".into(),
                ))
            }
        };
        let auto = match obj.get("auto") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(reject(re, "auto must be true or false (§4.3.1)".into())),
        };
        Ok(Request {
            id,
            verb,
            budget,
            grants,
            proof,
            auto,
            frame: obj.clone(),
        })
    }

    /// A required string field of the verb (`capability`, `proposal`, `hash`,
    /// `receipt`, `handle`); its absence is a `bad_frame`.
    pub fn field(&self, name: &str) -> Result<&str, ParleyError> {
        match self.frame.get(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s),
            _ => Err(ParleyError::bad_frame(format!(
                "{} needs a \"{name}\" string",
                self.verb.as_str()
            ))),
        }
    }

    /// The capability's params: an object, `{}` when absent.
    pub fn params(&self) -> Result<Map<String, Value>, ParleyError> {
        match self.frame.get("params") {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(ParleyError::invalid_params("params must be an object")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code_and_re(v: Value) -> (String, Option<String>) {
        let r = Request::parse(&v, Dialect::ParleyV1).unwrap_err();
        (r.error.code.as_str().to_string(), r.re)
    }

    #[test]
    fn envelope_rules() {
        let ok = Request::parse(
            &json!({"parley": 1, "id": "1", "verb": "HELLO", "extra": [1]}),
            Dialect::ParleyV1,
        )
        .unwrap();
        assert_eq!((ok.verb, ok.budget), (Verb::Hello, DEFAULT_BUDGET));
        assert_eq!(
            code_and_re(json!({"parley": 1, "verb": "HELLO"})),
            ("bad_frame".into(), None)
        );
        assert_eq!(
            code_and_re(json!({"parley": 2, "id": "x", "verb": "HELLO"})),
            ("bad_frame".into(), Some("x".into()))
        );
        assert_eq!(
            code_and_re(json!({"parley": 1, "id": "x", "verb": "DELETE"})),
            ("bad_frame".into(), Some("x".into()))
        );
        for bad in [
            json!({"parley": 1, "id": "x", "verb": "ASK", "budget": 0}),
            json!({"parley": 1, "id": "x", "verb": "ASK", "budget": 1.5}),
            json!({"parley": 1, "id": "x", "verb": "ASK", "grants": "pg1.x"}),
            json!({"parley": 1, "id": "x", "verb": "ASK", "grants": [1]}),
            json!({"parley": 1, "id": "x", "verb": "ASK", "proof": "sig"}),
            json!({"parley": 1, "id": "x", "verb": "INTENT", "auto": "yes"}),
            json!({"parley": 1, "id": "x", "re": "y", "kind": "ANSWER"}),
        ] {
            assert_eq!(code_and_re(bad.clone()).0, "bad_frame", "{bad}");
        }
        // A service speaks one dialect: the other marker is refused, both are too.
        let yea = json!({"yea": 1, "id": "y", "verb": "HELLO"});
        assert!(Request::parse(&yea, Dialect::YeaV1).is_ok());
        assert_eq!(code_and_re(yea).0, "bad_frame");
        let parley = json!({"parley": 1, "id": "p", "verb": "HELLO"});
        let e = Request::parse(&parley, Dialect::YeaV1).unwrap_err();
        assert!(
            e.error.message.contains("\"yea\": 1"),
            "{}",
            e.error.message
        );
        let both = json!({"yea": 1, "parley": 1, "id": "b", "verb": "HELLO"});
        assert!(Request::parse(&both, Dialect::YeaV1).is_err());
        let long = "i".repeat(MAX_ID + 1);
        assert_eq!(
            code_and_re(json!({"parley": 1, "id": long, "verb": "HELLO"})).1,
            None
        );
    }
}
