//! The UI channel's messages (docs/ui-channel.md), as types: what this
//! process writes (hello, calls, window reports) and what it reads (the
//! service's hello or refusal, answers, events). Parsing is strict where a
//! wrong shape means the service and this process disagree (the line is
//! refused and the UI exits: it shows nothing it cannot back up), and lenient
//! only for events it does not know yet (logged and ignored), so a newer
//! service can add some.

use crate::windows::{OpenTarget, TargetError};
use serde::Serialize;
use serde_json::{Map, Value};

/// What this process calls itself in its hello.
pub const UI_NAME: &str = "parley-custody-ui";
/// What the service calls itself in its hello.
pub const SERVICE_NAME: &str = "parley-custodyd";
/// How much of a service's text (a refusal, an unknown event's name) this
/// process repeats in its log or on stderr.
const MAX_ECHO: usize = 300;

/// A line the service sent that this process cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// Not JSON, or not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// An object that is neither an answer nor an event (nor a hello where one is due).
    #[error("neither an answer nor an event")]
    Unrecognised,
    /// A known message with a field missing or of the wrong type.
    #[error("{0}")]
    Field(&'static str),
}

/// The first line this process writes.
pub fn hello(version: &str, pid: u32) -> Value {
    serde_json::json!({ "hello": { "ui": UI_NAME, "version": version, "pid": pid } })
}

/// The service's answer to the hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloReply {
    /// The service serves this process; its version.
    Accepted {
        /// The service's version.
        version: String,
    },
    /// The service refused, and why (display-safe, bounded).
    Refused(String),
}

/// Reads the service's hello line.
pub fn parse_hello_reply(line: &[u8]) -> Result<HelloReply, ProtocolError> {
    let obj = object(line)?;
    if let Some(why) = obj.get("refused") {
        let why = why
            .as_str()
            .ok_or(ProtocolError::Field("refused: not a string"))?;
        return Ok(HelloReply::Refused(echo(why)));
    }
    let hello = obj
        .get("hello")
        .and_then(Value::as_object)
        .ok_or(ProtocolError::Unrecognised)?;
    if hello.get("service").and_then(Value::as_str) != Some(SERVICE_NAME) {
        return Err(ProtocolError::Field("hello: not from parley-custodyd"));
    }
    let version = hello
        .get("version")
        .and_then(Value::as_str)
        .ok_or(ProtocolError::Field("hello: no version"))?;
    Ok(HelloReply::Accepted {
        version: echo(version),
    })
}

/// A call a page made, for the service.
#[derive(Debug, Serialize)]
pub struct Call<'a> {
    /// Matches the answer to the call.
    pub id: u64,
    /// The label of the calling window (from Tauri, never from the page).
    pub window: &'a str,
    /// The call's name (`status`, `review_decide`, …).
    pub call: &'a str,
    /// Its arguments, exactly as the page sent them.
    pub args: &'a Value,
}

/// What happened to a window, for the service's anti-clickjacking timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Note {
    /// The window was created.
    Shown,
    /// It gained focus.
    Focused,
    /// It lost focus.
    Blurred,
    /// It is gone.
    Closed,
}

/// A window report line.
#[derive(Debug, Serialize)]
pub struct WindowNote<'a> {
    /// The window's label.
    pub window: &'a str,
    /// What happened.
    pub note: Note,
}

/// Why a call was refused, as the page receives it: custody's `code` (see
/// `parley_custody::desktop::calls::ErrorCode`: `bad_request`,
/// `not_permitted`, `gone`, `busy`, `timeout`, `not_running`, `refused`) and
/// its sentence for the human. This process uses the same codes for what
/// it finds itself (custody gone: `not_running`; no answer: `timeout`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallError {
    /// What kind of refusal: a page acts on this, never on the sentence.
    pub code: String,
    /// What happened, for the human.
    pub message: String,
}

impl CallError {
    /// A refusal of kind `code`.
    pub fn new(code: &str, message: impl Into<String>) -> CallError {
        CallError {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

/// Something the service sent after the hello.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to call `id`: its value or the service's sentence.
    Answer {
        /// The call's id.
        id: u64,
        /// Its result.
        result: Result<Value, CallError>,
    },
    /// An event.
    Event(Event),
}

/// An event from the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The pending requests changed (Tauri event `pending-changed`).
    PendingChanged,
    /// The paused agents changed (`pauses-changed`).
    PausesChanged,
    /// The status changed (`status-changed`).
    StatusChanged,
    /// Request `id` was withdrawn (`pending-withdrawn`, payload the id).
    PendingWithdrawn(String),
    /// Open or focus a window.
    Open(OpenTarget),
    /// Close the window with this label.
    Close(String),
    /// Close everything and exit.
    Quit,
    /// An event this process does not know or cannot act on, and why (logged, ignored).
    Ignored(String),
}

/// Reads one line from the service after the hello.
pub fn parse_incoming(line: &[u8]) -> Result<Incoming, ProtocolError> {
    let obj = object(line)?;
    // An event first: `pending-withdrawn` has an `id` too (a request's).
    let Some(name) = obj.get("event") else {
        let Some(id) = obj.get("id") else {
            return Err(ProtocolError::Unrecognised);
        };
        let id = id
            .as_u64()
            .ok_or(ProtocolError::Field("answer: id is not a u64"))?;
        let result = match (obj.get("ok"), obj.get("err")) {
            (Some(ok), None) => Ok(ok.clone()),
            (None, Some(err)) => {
                let text = |key| err.get(key).and_then(Value::as_str);
                match (text("code"), text("message")) {
                    (Some(code), Some(message)) => Err(CallError::new(code, message)),
                    _ => {
                        return Err(ProtocolError::Field(
                            "answer: err is not {code, message} strings",
                        ))
                    }
                }
            }
            _ => {
                return Err(ProtocolError::Field(
                    "answer: needs exactly one of ok and err",
                ))
            }
        };
        return Ok(Incoming::Answer { id, result });
    };
    let name = name
        .as_str()
        .ok_or(ProtocolError::Field("event: not a string"))?;
    let string = |key: &'static str, missing: &'static str| {
        obj.get(key)
            .and_then(Value::as_str)
            .ok_or(ProtocolError::Field(missing))
    };
    Ok(Incoming::Event(match name {
        "pending-changed" => Event::PendingChanged,
        "pauses-changed" => Event::PausesChanged,
        "status-changed" => Event::StatusChanged,
        "pending-withdrawn" => {
            Event::PendingWithdrawn(string("id", "pending-withdrawn: no id")?.to_string())
        }
        "close" => Event::Close(string("window", "close: no window")?.to_string()),
        "quit" => Event::Quit,
        "open" => {
            let window = string("window", "open: no window")?;
            let fragment = match obj.get("fragment") {
                None | Some(Value::Null) => None,
                Some(Value::String(f)) => Some(f.as_str()),
                Some(_) => return Err(ProtocolError::Field("open: fragment is not a string")),
            };
            let target: Result<OpenTarget, TargetError> = if window == "main" {
                let view = match obj.get("view") {
                    None | Some(Value::Null) => "home",
                    Some(Value::String(v)) => v.as_str(),
                    Some(_) => return Err(ProtocolError::Field("open: view is not a string")),
                };
                OpenTarget::main(view, fragment)
            } else {
                OpenTarget::window(window)
            };
            match target {
                Ok(t) => Event::Open(t),
                Err(e) => Event::Ignored(format!("open {}: {e}", echo(window))),
            }
        }
        other => Event::Ignored(format!("unknown event {}", echo(other))),
    }))
}

fn object(line: &[u8]) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ProtocolError::NotAnObject),
    }
}

/// `s` fit for a log line or a terminal: control and format characters
/// replaced, at most [`MAX_ECHO`] characters.
pub fn echo(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_ECHO)
        .map(|c| {
            if c.is_control() || is_format_char(c) {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    if s.chars().nth(MAX_ECHO).is_some() {
        out.push('…');
    }
    out
}

/// Bidirectional overrides, zero-width characters and the like: invisible,
/// and able to make a line read differently from what it says.
fn is_format_char(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::windows::GrantFor;
    use serde_json::json;

    fn event(v: Value) -> Result<Event, ProtocolError> {
        match parse_incoming(v.to_string().as_bytes())? {
            Incoming::Event(e) => Ok(e),
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn hello_lines() {
        assert_eq!(
            hello("0.1.0", 42),
            json!({"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": 42}})
        );
        assert_eq!(
            parse_hello_reply(br#"{"hello":{"service":"parley-custodyd","version":"0.2.0"}}"#),
            Ok(HelloReply::Accepted {
                version: "0.2.0".into()
            })
        );
        assert_eq!(
            parse_hello_reply(br#"{"refused":"too many windows\u001b[2J"}"#),
            Ok(HelloReply::Refused("too many windows\u{FFFD}[2J".into()))
        );
        for bad in [
            &br#"{"hello":{"service":"something-else","version":"1"}}"#[..],
            br#"{"hello":{"service":"parley-custodyd"}}"#,
            br#"{"refused":7}"#,
            br#"{"id":1,"ok":null}"#,
            b"[]",
            b"hello",
        ] {
            assert!(
                parse_hello_reply(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn outgoing_lines() {
        let args = json!({"id": "q7", "approve": true});
        let call = Call {
            id: 3,
            window: "review-q7",
            call: "review_decide",
            args: &args,
        };
        assert_eq!(
            serde_json::to_value(&call).unwrap(),
            json!({"id": 3, "window": "review-q7", "call": "review_decide", "args": {"id": "q7", "approve": true}})
        );
        for (note, word) in [
            (Note::Shown, "shown"),
            (Note::Focused, "focused"),
            (Note::Blurred, "blurred"),
            (Note::Closed, "closed"),
        ] {
            assert_eq!(
                serde_json::to_value(WindowNote {
                    window: "main",
                    note
                })
                .unwrap(),
                json!({"window": "main", "note": word})
            );
        }
    }

    #[test]
    fn answers() {
        assert_eq!(
            parse_incoming(br#"{"id":9,"ok":null}"#),
            Ok(Incoming::Answer {
                id: 9,
                result: Ok(Value::Null)
            })
        );
        assert_eq!(
            parse_incoming(br#"{"id":9,"ok":{"pending":2}}"#),
            Ok(Incoming::Answer {
                id: 9,
                result: Ok(json!({"pending": 2}))
            })
        );
        assert_eq!(
            parse_incoming(
                br#"{"id":10,"err":{"code":"not_permitted","message":"Not allowed from this window."}}"#
            ),
            Ok(Incoming::Answer {
                id: 10,
                result: Err(CallError::new(
                    "not_permitted",
                    "Not allowed from this window."
                ))
            })
        );
        for bad in [
            &br#"{"id":-1,"ok":1}"#[..],
            br#"{"id":"1","ok":1}"#,
            br#"{"id":1}"#,
            br#"{"id":1,"ok":1,"err":"x"}"#,
            br#"{"id":1,"err":{"message":"x"}}"#,
            br#"{"id":1,"err":"a bare sentence"}"#,
            br#"{"id":1,"err":{"code":1,"message":"x"}}"#,
        ] {
            assert!(
                matches!(parse_incoming(bad), Err(ProtocolError::Field(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn events() {
        assert_eq!(
            event(json!({"event": "pending-changed"})),
            Ok(Event::PendingChanged)
        );
        assert_eq!(
            event(json!({"event": "pauses-changed"})),
            Ok(Event::PausesChanged)
        );
        assert_eq!(
            event(json!({"event": "status-changed"})),
            Ok(Event::StatusChanged)
        );
        assert_eq!(
            event(json!({"event": "pending-withdrawn", "id": "q7"})),
            Ok(Event::PendingWithdrawn("q7".into()))
        );
        assert_eq!(event(json!({"event": "quit"})), Ok(Event::Quit));
        assert_eq!(
            event(json!({"event": "close", "window": "review-q7"})),
            Ok(Event::Close("review-q7".into()))
        );
        assert_eq!(
            event(json!({"event": "open", "window": "main", "view": "home", "fragment": null})),
            Ok(Event::Open(OpenTarget::Home))
        );
        assert_eq!(
            event(json!({"event": "open", "window": "main"})),
            Ok(Event::Open(OpenTarget::Home))
        );
        assert_eq!(
            event(
                json!({"event": "open", "window": "main", "view": "grant", "fragment": "request=q7"})
            ),
            Ok(Event::Open(OpenTarget::Grant(GrantFor::Request(
                "q7".into()
            ))))
        );
        assert_eq!(
            event(json!({"event": "open", "window": "main", "view": "audit", "fragment": null})),
            Ok(Event::Open(OpenTarget::Audit))
        );
        assert_eq!(
            event(json!({"event": "open", "window": "review-q7"})),
            Ok(Event::Open(OpenTarget::Review("q7".into())))
        );
        // Unknown or unusable: logged and ignored, not fatal.
        for v in [
            json!({"event": "tray-moved"}),
            json!({"event": "open", "window": "main", "view": "pauses"}),
            json!({"event": "open", "window": "review-../x"}),
            json!({"event": "open", "window": "main", "view": "grant", "fragment": "agent=x"}),
        ] {
            assert!(matches!(event(v.clone()), Ok(Event::Ignored(_))), "{v}");
        }
        // Known events of the wrong shape, and lines that are no message: refused.
        for v in [
            json!({"event": "pending-withdrawn"}),
            json!({"event": "pending-withdrawn", "id": 7}),
            json!({"event": "close"}),
            json!({"event": "open"}),
            json!({"event": "open", "window": "main", "view": 3}),
            json!({"event": "open", "window": "main", "fragment": 3}),
            json!({"event": 1}),
            json!({"hello": {}}),
            json!([1]),
        ] {
            assert!(event_err(&v), "{v}");
        }
        assert_eq!(
            parse_incoming(b"{\"event\":"),
            Err(ProtocolError::NotAnObject)
        );
    }

    fn event_err(v: &Value) -> bool {
        parse_incoming(v.to_string().as_bytes()).is_err()
    }

    #[test]
    fn echo_is_bounded_and_visible() {
        assert_eq!(echo("ok"), "ok");
        assert_eq!(echo("a\nb\u{202E}c"), "a\u{FFFD}b\u{FFFD}c");
        let long = "x".repeat(MAX_ECHO + 10);
        assert_eq!(echo(&long).chars().count(), MAX_ECHO + 1);
    }
}
