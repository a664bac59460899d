//! A small async client for the custody protocol v1, for everything that asks
//! custody for something: the `parley` CLI, the desktop app's helpers, agents
//! written in Rust, and the end-to-end tests (`docs/custody-protocol.md` is the
//! wire reference).
//!
//! ```no_run
//! # async fn demo() -> Result<(), parley_custody_client::client::ClientError> {
//! use parley_custody_client::client::Client;
//! let mut client = Client::connect(None).await?; // flag, else $PARLEY_CUSTODY_SOCKET, else the default
//! let hello = client.hello().await?;
//! let reply = client
//!     .approve_code("pc1.…", "ed25519:…", |pending| eprintln!("waiting: {pending:?}"))
//!     .await?;
//! # let _ = (hello, reply); Ok(()) }
//! ```
//!
//! Design decisions:
//! - **One request at a time per [`Client`].** Every method takes `&mut self`
//!   and returns only after the request's final reply, so the borrow checker
//!   enforces it. The protocol allows multiplexing; a caller that needs
//!   several requests in flight opens several clients (custody allows 8
//!   connections per user). Replies whose `re` is not the current request's
//!   id (for example the late `CANCELLED` of a request we gave up on) are
//!   skipped, so a connection stays usable after a timeout.
//! - **Every wait is bounded.** Connecting: [`CONNECT_TIMEOUT`]. Requests
//!   custody answers by itself (`hello`, `status`, `cancel`):
//!   [`REPLY_TIMEOUT`]. Requests that wait for a human (`consent`,
//!   `approve_code`, `grant`): a deadline the caller chooses
//!   ([`Timeouts::human`], default [`DEFAULT_HUMAN_DEADLINE`]); `PENDING`
//!   events do not extend it. When it passes, the client sends a best-effort
//!   `cancel` so the review does not stay on the human's screen for nobody.
//! - **The server's frames are checked like a peer's**: at most 1 MiB, strict
//!   JSON ([`FrameReader`]), and a reply of a known `kind` with the fields
//!   that kind must carry ([`parse_reply`]). Anything else is an error, never
//!   a guess. Unknown extra fields are ignored (forward compatibility).
//! - An `ERROR` whose `re` is `null` concerns the connection (custody refused
//!   our OS user, is too busy, or could not read our line); since a client
//!   sends one request at a time, it ends the current request as
//!   [`ClientError::Refused`].
//! - Tests point the client at any socket with `Client::connect(Some(path))`,
//!   or at any byte stream with [`Client::from_stream`].

use crate::frame::{FrameError, FrameReader, FrameWriter, MAX_FRAME};
use crate::protocol::{self, ErrorCode, Principal, Reply, RequestState, VERSION};
use parley_core::Dialect;
use serde_json::{json, Map, Value};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

/// How long connecting to the socket may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long custody may take to answer a request no human decides
/// (`hello`, `status`, `cancel`), and to take a request we send.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a request that waits for the human may take by default. Long
/// enough to notice a notification and read a review; short enough that a
/// forgotten terminal does not keep a request open all day.
pub const DEFAULT_HUMAN_DEADLINE: Duration = Duration::from_secs(15 * 60);

/// How long the best-effort `cancel` after a missed deadline may take to send.
const CANCEL_SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// How long to look for custody's explanation after our write failed (it
/// sends one `ERROR` line, then closes, when it refuses a peer).
const REFUSAL_READ_TIMEOUT: Duration = Duration::from_secs(1);

/// The time limits of a [`Client`]; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Connecting to the socket.
    pub connect: Duration,
    /// A request custody answers by itself, and sending any request.
    pub reply: Duration,
    /// A request that waits for the human, from sending it to its final reply.
    pub human: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: CONNECT_TIMEOUT,
            reply: REPLY_TIMEOUT,
            human: DEFAULT_HUMAN_DEADLINE,
        }
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
            return Err(ReplyError::Version(protocol::quote(
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
        "APPROVED" => Reply::Approved {
            grant: f.of("APPROVED").string("grant")?,
        },
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
        other => return Err(ReplyError::UnknownKind(protocol::quote(other))),
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

/// Why a request could not be completed. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens at the socket path.
    #[error("custody daemon is not running at {} (start parley-custodyd or the Parley Custody app; if it listens elsewhere, pass --socket or set PARLEY_CUSTODY_SOCKET)", path.display())]
    NotRunning {
        /// The socket path.
        path: PathBuf,
        /// The OS error (not found, connection refused).
        #[source]
        source: io::Error,
    },
    /// The OS refused us the socket (or a directory above it).
    #[error("permission denied on {}: your user is not in the agents group (ask custody's owner to add it with `gpasswd -a USER GROUP`, then log in again)", path.display())]
    PermissionDenied {
        /// The socket path.
        path: PathBuf,
    },
    /// Any other connect failure.
    #[error("cannot connect to custody at {}: {source}", path.display())]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The connection was not accepted in time.
    #[error("custody at {} did not accept the connection within {} s: it may be hung; restart parley-custodyd or the Parley Custody app", path.display(), after.as_secs())]
    ConnectTimeout {
        /// The socket path.
        path: PathBuf,
        /// The limit.
        after: Duration,
    },
    /// Custody did not answer a request it answers by itself in time.
    #[error("custody did not answer the {op} request {id} within {} s: it may be overloaded or hung; try again, or restart it", after.as_secs())]
    Timeout {
        /// The op.
        op: &'static str,
        /// The request id.
        id: String,
        /// The limit.
        after: Duration,
    },
    /// Nobody decided a request that waits for the human in time.
    #[error("no decision on request {id} within {}: it was withdrawn; ask again when the human is at the Parley Custody app, or allow a longer wait", human_duration(*after))]
    HumanTimeout {
        /// The request id.
        id: String,
        /// The deadline.
        after: Duration,
    },
    /// Custody refused the connection or the line (an `ERROR` with `re: null`).
    #[error("custody refused: {code}: {message}")]
    Refused {
        /// The error code (`forbidden_peer`, `busy`, `bad_frame`, …).
        code: ErrorCode,
        /// Custody's explanation.
        message: String,
    },
    /// The connection ended before the final reply.
    #[error("custody closed the connection before answering request {id}: it may have stopped or restarted; check it is running and try again")]
    Closed {
        /// The request id.
        id: String,
    },
    /// A frame from custody broke the framing rules (over 1 MiB, not UTF-8,
    /// not a JSON object, cut off).
    #[error("custody sent an unreadable frame: {0}; is something other than Parley Custody listening on this socket?")]
    BadFrame(FrameError),
    /// A frame that is JSON but not a valid reply.
    #[error("custody sent an invalid reply: {0}")]
    BadReply(#[from] ReplyError),
    /// Our request is too large to send (custody would refuse it).
    #[error(
        "the request is {size} bytes, over the {limit}-byte frame limit: send a smaller proposal"
    )]
    RequestTooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        limit: usize,
    },
    /// Reading or writing the connection failed.
    #[error("the connection to custody failed: {0}; check custody is running and try again")]
    Io(#[source] io::Error),
}

impl ClientError {
    /// Whether the problem is reaching custody at all (not running, no
    /// permission, hung): the CLI reports these as bad setup (exit 2).
    pub fn is_connection_problem(&self) -> bool {
        matches!(
            self,
            ClientError::NotRunning { .. }
                | ClientError::PermissionDenied { .. }
                | ClientError::Connect { .. }
                | ClientError::ConnectTimeout { .. }
                | ClientError::Closed { .. }
                | ClientError::Io(_)
        )
    }

    fn from_connect(path: &Path, source: io::Error) -> ClientError {
        let path = path.to_path_buf();
        match source.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning { path, source }
            }
            io::ErrorKind::PermissionDenied => ClientError::PermissionDenied { path },
            _ => ClientError::Connect { path, source },
        }
    }
}

/// `15m`, `90s`, `1h30m`: a deadline in the unit a person would say.
fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        return format!("{}ms", d.as_millis());
    }
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

/// Whether a request is answered by custody or waits for the human.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Custody,
    Human,
}

/// A connection to custody. One request at a time (module docs).
pub struct Client {
    reader: FrameReader<BoxRead>,
    writer: FrameWriter<BoxWrite>,
    path: PathBuf,
    timeouts: Timeouts,
    counter: u64,
    suffix: String,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("path", &self.path)
            .field("timeouts", &self.timeouts)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects with the default [`Timeouts`]. `path`: an explicit socket
    /// (the `--socket` flag), else `$PARLEY_CUSTODY_SOCKET`, else the default
    /// of `docs/custody-protocol.md` §1.1, computed for this process's user.
    pub async fn connect(path: Option<&Path>) -> Result<Client, ClientError> {
        Client::connect_with(path, Timeouts::default()).await
    }

    /// Connects with explicit time limits.
    pub async fn connect_with(
        path: Option<&Path>,
        timeouts: Timeouts,
    ) -> Result<Client, ClientError> {
        let path = crate::socket::resolve_socket_path(path).path;
        let stream =
            match tokio::time::timeout(timeouts.connect, crate::socket::connect(&path)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => return Err(ClientError::from_connect(&path, e)),
                Err(_) => {
                    return Err(ClientError::ConnectTimeout {
                        path,
                        after: timeouts.connect,
                    })
                }
            };
        Ok(Client::from_stream(stream, path, timeouts))
    }

    /// A client over any byte stream (tests use an in-memory pipe); `path` is
    /// only used in messages.
    pub fn from_stream<S>(stream: S, path: impl Into<PathBuf>, timeouts: Timeouts) -> Client
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (r, w) = tokio::io::split(stream);
        Client {
            reader: FrameReader::new(Box::new(r) as BoxRead),
            writer: FrameWriter::new(Box::new(w) as BoxWrite),
            path: path.into(),
            timeouts,
            counter: 0,
            suffix: random_suffix(),
        }
    }

    /// The socket this client is connected to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The time limits in force.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Changes how long the next requests may wait for the human.
    pub fn set_human_deadline(&mut self, deadline: Duration) {
        self.timeouts.human = deadline;
    }

    /// `hello`: the protocol version and the principals custody holds
    /// (a [`Reply::Hello`], or [`Reply::Error`]).
    pub async fn hello(&mut self) -> Result<Reply, ClientError> {
        self.request("hello", Map::new(), Wait::Custody, &mut |_| {})
            .await
    }

    /// `consent`: asks the human to approve one exact proposal (Parley §6.6).
    /// `consent` is the object from the service's `ERROR consent_required`,
    /// `proposal` the proposal as received (with `hash`), `service` the id
    /// learned at the service's `HELLO`, `agent` the holder key used on
    /// `INTENT`. `on_pending` sees every `PENDING`. Final reply:
    /// `APPROVED`, `DENIED`, `REJECTED`, `EXPIRED`, `CANCELLED` or `ERROR`.
    pub async fn consent(
        &mut self,
        consent: Value,
        proposal: Value,
        service: &str,
        agent: &str,
        on_pending: impl FnMut(&Reply),
    ) -> Result<Reply, ClientError> {
        self.consent_in(
            consent,
            proposal,
            service,
            agent,
            Dialect::ParleyV1,
            on_pending,
        )
        .await
    }

    /// [`Client::consent`] for a proposal in `dialect`. The request names a
    /// dialect only when it is not Parley v1, so Parley requests stay
    /// byte-for-byte what they were (and older custody reads them).
    pub async fn consent_in(
        &mut self,
        consent: Value,
        proposal: Value,
        service: &str,
        agent: &str,
        dialect: Dialect,
        mut on_pending: impl FnMut(&Reply),
    ) -> Result<Reply, ClientError> {
        let mut body = Map::new();
        body.insert("consent".into(), consent);
        body.insert("proposal".into(), proposal);
        body.insert("service".into(), json!(service));
        body.insert("agent".into(), json!(agent));
        name_dialect(&mut body, dialect);
        self.request("consent", body, Wait::Human, &mut on_pending)
            .await
    }

    /// `approve_code`: asks the human to approve an upstream `pc1.` code.
    /// Replies as [`Client::consent`].
    pub async fn approve_code(
        &mut self,
        code: &str,
        agent: &str,
        on_pending: impl FnMut(&Reply),
    ) -> Result<Reply, ClientError> {
        self.approve_code_in(code, agent, Dialect::ParleyV1, on_pending)
            .await
    }

    /// [`Client::approve_code`] for a code whose proposal is in `dialect`
    /// (the YEA tooling's codes are YEA v1).
    pub async fn approve_code_in(
        &mut self,
        code: &str,
        agent: &str,
        dialect: Dialect,
        mut on_pending: impl FnMut(&Reply),
    ) -> Result<Reply, ClientError> {
        let mut body = Map::new();
        body.insert("code".into(), json!(code));
        body.insert("agent".into(), json!(agent));
        name_dialect(&mut body, dialect);
        self.request("approve_code", body, Wait::Human, &mut on_pending)
            .await
    }

    /// `grant`: asks the human for a grant to `agent` with the requested
    /// `caveats` (a JSON array). Final reply: `ISSUED {grant, caveats}` (the
    /// human may have narrowed the caveats), `DENIED`, `EXPIRED`,
    /// `CANCELLED` or `ERROR`.
    pub async fn grant(
        &mut self,
        agent: &str,
        caveats: Value,
        label: Option<&str>,
        reason: Option<&str>,
        mut on_pending: impl FnMut(&Reply),
    ) -> Result<Reply, ClientError> {
        let mut body = Map::new();
        body.insert("agent".into(), json!(agent));
        body.insert("caveats".into(), caveats);
        if let Some(label) = label {
            body.insert("label".into(), json!(label));
        }
        if let Some(reason) = reason {
            body.insert("reason".into(), json!(reason));
        }
        self.request("grant", body, Wait::Human, &mut on_pending)
            .await
    }

    /// `status`: the state of an earlier request of this peer (`STATUS`).
    pub async fn status(&mut self, request: &str) -> Result<Reply, ClientError> {
        let mut body = Map::new();
        body.insert("request".into(), json!(request));
        self.request("status", body, Wait::Custody, &mut |_| {})
            .await
    }

    /// `cancel`: withdraws an earlier request that is still pending
    /// (`CANCELLED`, or `STATUS` with its final state if it had finished).
    pub async fn cancel(&mut self, request: &str) -> Result<Reply, ClientError> {
        let mut body = Map::new();
        body.insert("request".into(), json!(request));
        self.request("cancel", body, Wait::Custody, &mut |_| {})
            .await
    }

    /// A fresh request id: a counter (unique on this connection) and a random
    /// suffix (so ids from different connections and processes are told apart
    /// in custody's log).
    fn next_id(&mut self) -> String {
        self.counter += 1;
        format!("{}-{}", self.counter, self.suffix)
    }

    async fn request(
        &mut self,
        op: &'static str,
        body: Map<String, Value>,
        wait: Wait,
        on_pending: &mut dyn FnMut(&Reply),
    ) -> Result<Reply, ClientError> {
        let id = self.next_id();
        let mut frame = Map::new();
        frame.insert("custody".into(), json!(VERSION));
        frame.insert("id".into(), json!(id));
        frame.insert("op".into(), json!(op));
        frame.extend(body);
        self.send(op, &id, &Value::Object(frame)).await?;

        let limit = match wait {
            Wait::Custody => self.timeouts.reply,
            Wait::Human => self.timeouts.human,
        };
        let deadline = Instant::now() + limit;
        loop {
            let next = match tokio::time::timeout_at(deadline, self.reader.next_frame()).await {
                Ok(next) => next,
                Err(_) => {
                    return Err(match wait {
                        Wait::Custody => ClientError::Timeout {
                            op,
                            id,
                            after: limit,
                        },
                        Wait::Human => {
                            self.withdraw(&id).await;
                            ClientError::HumanTimeout { id, after: limit }
                        }
                    });
                }
            };
            let frame = match next {
                Ok(Some(frame)) => frame.value,
                Ok(None) => return Err(ClientError::Closed { id }),
                Err(FrameError::Io(e)) => return Err(ClientError::Io(e)),
                Err(e) => return Err(ClientError::BadFrame(e)),
            };
            let parsed = match parse_reply(&frame) {
                Ok(parsed) => parsed,
                // Someone else's reply we cannot read is not our problem…
                Err(_) if is_for_other(&frame, &id) => continue,
                // …ours (or one we cannot attribute) is.
                Err(e) => return Err(ClientError::BadReply(e)),
            };
            match (parsed.re.as_deref(), parsed.reply) {
                (Some(re), reply) if re == id => {
                    if reply.is_final() {
                        return Ok(reply);
                    }
                    on_pending(&reply);
                }
                (None, Reply::Error { code, message }) => {
                    return Err(ClientError::Refused { code, message })
                }
                // A late reply to an earlier request (one we gave up on).
                _ => continue,
            }
        }
    }

    /// Sends one request frame, bounded in time. If the write fails because
    /// custody closed the connection, looks for the one line custody sends
    /// before closing on a refused peer, to report why.
    async fn send(&mut self, op: &'static str, id: &str, frame: &Value) -> Result<(), ClientError> {
        let sent = tokio::time::timeout(self.timeouts.reply, self.writer.send(frame)).await;
        let err = match sent {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(FrameError::TooLarge { size, .. })) => {
                return Err(ClientError::RequestTooLarge {
                    size,
                    limit: MAX_FRAME,
                })
            }
            Ok(Err(FrameError::Io(e))) => e,
            Ok(Err(other)) => return Err(ClientError::BadFrame(other)),
            Err(_) => {
                return Err(ClientError::Timeout {
                    op,
                    id: id.to_owned(),
                    after: self.timeouts.reply,
                })
            }
        };
        if let Ok(Ok(Some(f))) =
            tokio::time::timeout(REFUSAL_READ_TIMEOUT, self.reader.next_frame()).await
        {
            if let Ok(ReplyFrame {
                re: None,
                reply: Reply::Error { code, message },
            }) = parse_reply(&f.value)
            {
                return Err(ClientError::Refused { code, message });
            }
        }
        Err(ClientError::Io(err))
    }

    /// Best effort: tells custody we stopped waiting, so the human is not
    /// asked about a request nobody will use. The answer is not awaited; it
    /// is skipped like any reply to an old id.
    async fn withdraw(&mut self, request: &str) {
        let id = self.next_id();
        let frame = json!({"custody": VERSION, "id": id, "op": "cancel", "request": request});
        let _ = tokio::time::timeout(CANCEL_SEND_TIMEOUT, self.writer.send(&frame)).await;
    }
}

/// Whether a frame names, in `re`, a request other than `id`.
fn is_for_other(frame: &Value, id: &str) -> bool {
    matches!(frame.get("re"), Some(Value::String(re)) if re != id)
}

/// 8 random b64url characters; if the OS random source fails, the process
/// id and the time (the counter alone already keeps ids unique).
fn random_suffix() -> String {
    let mut bytes = [0u8; 6];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => parley_core::b64::encode(bytes),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            format!("p{}t{nanos}", std::process::id())
        }
    }
}

/// `"dialect"` in a request body, for every dialect but the default.
fn name_dialect(body: &mut Map<String, Value>, dialect: Dialect) {
    if dialect != Dialect::ParleyV1 {
        body.insert("dialect".into(), json!(dialect.name()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

    /// The custody side of an in-memory connection.
    struct FakeCustody {
        lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
        out: tokio::io::WriteHalf<DuplexStream>,
    }

    impl FakeCustody {
        async fn request(&mut self) -> Value {
            let line = self.lines.next_line().await.unwrap().expect("a request");
            serde_json::from_str(&line).unwrap()
        }

        async fn send_raw(&mut self, bytes: &[u8]) {
            self.out.write_all(bytes).await.unwrap();
        }

        async fn reply(&mut self, re: Option<&str>, reply: Reply) {
            let mut line = serde_json::to_vec(&reply.to_frame(re)).unwrap();
            line.push(b'\n');
            self.send_raw(&line).await;
        }
    }

    fn fast() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(5),
            reply: Duration::from_secs(5),
            human: Duration::from_secs(5),
        }
    }

    fn pair(timeouts: Timeouts) -> (Client, FakeCustody) {
        let (a, b) = tokio::io::duplex(4 * MAX_FRAME);
        let (r, w) = tokio::io::split(b);
        let client = Client::from_stream(a, "/test/custody.sock", timeouts);
        (
            client,
            FakeCustody {
                lines: BufReader::new(r).lines(),
                out: w,
            },
        )
    }

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

    #[tokio::test]
    async fn ids_are_unique_and_carry_a_per_connection_suffix() {
        let (mut a, _) = pair(fast());
        let (mut b, _) = pair(fast());
        let ids: Vec<String> = (0..3).map(|_| a.next_id()).collect();
        assert_eq!(ids.len(), 3);
        assert!(ids[0] != ids[1] && ids[1] != ids[2]);
        assert!(ids[0].starts_with("1-") && ids[2].starts_with("3-"));
        let suffix = |id: String| id.split_once('-').map(|(_, s)| s.to_owned());
        assert_ne!(suffix(a.next_id()), suffix(b.next_id()));
        assert!(ids[0].len() <= protocol::MAX_ID_CHARS);
    }

    #[tokio::test]
    async fn consent_reports_pending_skips_foreign_replies_and_returns_the_final_one() {
        let (mut client, mut custody) = pair(fast());
        let server = tokio::spawn(async move {
            let req = custody.request().await;
            assert_eq!(req["custody"], 1);
            assert_eq!(req["op"], "consent");
            assert_eq!(req["service"], "shop.example");
            assert_eq!(req["agent"], "ed25519:A");
            assert_eq!(req["proposal"]["id"], "p");
            // The request is valid for custody's own parser.
            let parsed = protocol::Request::from_value(&req).unwrap();
            let id = parsed.id;
            let pending = |p| Reply::Pending {
                request: id.clone(),
                position: Some(p),
            };
            custody.reply(Some(&id), pending(2)).await;
            custody.reply(Some("someone-else"), Reply::Expired).await;
            custody
                .send_raw(b"{\"custody\":1,\"re\":\"someone-else\",\"kind\":\"NEW\"}\n")
                .await;
            custody.reply(Some(&id), pending(1)).await;
            custody
                .reply(
                    Some(&id),
                    Reply::Approved {
                        grant: "pg1.token".into(),
                    },
                )
                .await;
            custody
        });
        let mut seen = Vec::new();
        let reply = client
            .consent(
                json!({"hash": "h"}),
                json!({"id": "p", "hash": "h"}),
                "shop.example",
                "ed25519:A",
                |p| seen.push(p.clone()),
            )
            .await
            .unwrap();
        assert_eq!(
            reply,
            Reply::Approved {
                grant: "pg1.token".into()
            }
        );
        assert_eq!(seen.len(), 2);
        assert!(matches!(
            seen[1],
            Reply::Pending {
                position: Some(1),
                ..
            }
        ));
        server.await.unwrap();
    }

    #[tokio::test]
    async fn every_op_sends_a_request_custody_accepts() {
        let (mut client, mut custody) = pair(fast());
        let server = tokio::spawn(async move {
            let mut ops = Vec::new();
            for _ in 0..5 {
                let req = custody.request().await;
                let parsed = protocol::Request::from_value(&req).unwrap();
                ops.push(parsed.op.clone());
                custody.reply(Some(&parsed.id), Reply::Cancelled).await;
            }
            ops
        });
        client.hello().await.unwrap();
        client
            .approve_code("pc1.x", "ed25519:A", |_| {})
            .await
            .unwrap();
        client
            .grant("ed25519:A", json!([{"exp": 9}]), Some("l"), None, |_| {})
            .await
            .unwrap();
        client.status("1-x").await.unwrap();
        client.cancel("1-x").await.unwrap();
        let ops = server.await.unwrap();
        assert_eq!(ops[0], protocol::Op::Hello);
        assert_eq!(
            ops[1],
            protocol::Op::ApproveCode {
                code: "pc1.x".into(),
                agent: "ed25519:A".into(),
                dialect: parley_core::Dialect::ParleyV1,
            }
        );
        assert_eq!(
            ops[2],
            protocol::Op::Grant {
                agent: "ed25519:A".into(),
                caveats: json!([{"exp": 9}]),
                label: Some("l".into()),
                reason: None
            }
        );
        assert_eq!(
            ops[3],
            protocol::Op::Status {
                request: "1-x".into()
            }
        );
        assert_eq!(
            ops[4],
            protocol::Op::Cancel {
                request: "1-x".into()
            }
        );
    }

    #[tokio::test]
    async fn an_error_with_null_re_ends_the_request_as_refused() {
        let (mut client, mut custody) = pair(fast());
        let server = tokio::spawn(async move {
            custody.request().await;
            custody
                .reply(None, Reply::error(ErrorCode::Busy, "too many"))
                .await;
            custody
        });
        let err = client.hello().await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Refused { code: ErrorCode::Busy, message } if message == "too many"),
            "{err}"
        );
        server.await.unwrap();
    }

    #[tokio::test]
    async fn an_error_for_our_id_is_the_final_reply() {
        let (mut client, mut custody) = pair(fast());
        let server = tokio::spawn(async move {
            let req = custody.request().await;
            let id = req["id"].as_str().unwrap().to_owned();
            custody
                .reply(Some(&id), Reply::error(ErrorCode::Invalid, "`agent` bad"))
                .await;
            custody
        });
        let reply = client.approve_code("pc1.x", "k", |_| {}).await.unwrap();
        assert_eq!(reply, Reply::error(ErrorCode::Invalid, "`agent` bad"));
        server.await.unwrap();
    }

    #[tokio::test]
    async fn oversized_or_malformed_frames_from_custody_are_errors() {
        let (mut client, mut custody) = pair(fast());
        let server = tokio::spawn(async move {
            custody.request().await;
            let mut big = vec![b'x'; MAX_FRAME + 1];
            big.push(b'\n');
            custody.send_raw(&big).await;
            custody.request().await;
            custody
                .send_raw(b"{\"custody\":1,\"re\":null,\"re\":1}\n")
                .await;
            let req = custody.request().await;
            let id = req["id"].as_str().unwrap().to_owned();
            custody
                .send_raw(
                    format!("{{\"custody\":1,\"re\":\"{id}\",\"kind\":\"APPROVED\"}}\n").as_bytes(),
                )
                .await;
            custody
        });
        let err = client.hello().await.unwrap_err();
        assert!(
            matches!(err, ClientError::BadFrame(FrameError::TooLarge { .. })),
            "{err}"
        );
        let err = client.hello().await.unwrap_err();
        assert!(
            matches!(err, ClientError::BadFrame(FrameError::Invalid(_))),
            "{err}"
        );
        let err = client.approve_code("pc1.x", "k", |_| {}).await.unwrap_err();
        assert!(
            matches!(
                err,
                ClientError::BadReply(ReplyError::Missing {
                    kind: "APPROVED",
                    field: "grant"
                })
            ),
            "{err}"
        );
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_closed_connection_ends_the_request() {
        let (mut client, mut custody) = pair(fast());
        let server = tokio::spawn(async move {
            custody.request().await;
            drop(custody);
        });
        let err = client.hello().await.unwrap_err();
        assert!(matches!(err, ClientError::Closed { .. }), "{err}");
        assert!(err.is_connection_problem());
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_missed_human_deadline_withdraws_the_request() {
        let mut t = fast();
        t.human = Duration::from_millis(200);
        let (mut client, mut custody) = pair(t);
        let server = tokio::spawn(async move {
            let req = custody.request().await;
            let id = req["id"].as_str().unwrap().to_owned();
            custody
                .reply(
                    Some(&id),
                    Reply::Pending {
                        request: id.clone(),
                        position: None,
                    },
                )
                .await;
            let cancel = custody.request().await;
            assert_eq!(cancel["op"], "cancel");
            assert_eq!(cancel["request"], id.as_str());
            // Late replies to both: the next request must skip them.
            custody.reply(Some(&id), Reply::Cancelled).await;
            let cancel_id = cancel["id"].as_str().unwrap().to_owned();
            custody.reply(Some(&cancel_id), Reply::Cancelled).await;
            let hello = custody.request().await;
            let hello_id = hello["id"].as_str().unwrap().to_owned();
            custody
                .reply(
                    Some(&hello_id),
                    Reply::Hello {
                        version: 1,
                        principals: vec![],
                    },
                )
                .await;
            custody
        });
        let mut pendings = 0;
        let err = client
            .grant("ed25519:A", json!([]), None, None, |_| pendings += 1)
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::HumanTimeout { .. }), "{err}");
        assert!(err.to_string().contains("within 200ms"), "{err}");
        assert_eq!(pendings, 1);
        assert!(!err.is_connection_problem());
        let hello = client.hello().await.unwrap();
        assert!(matches!(hello, Reply::Hello { .. }));
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_silent_custody_times_out() {
        let mut t = fast();
        t.reply = Duration::from_millis(100);
        let (mut client, custody) = pair(t);
        let err = client.status("x").await.unwrap_err();
        assert!(
            matches!(err, ClientError::Timeout { op: "status", .. }),
            "{err}"
        );
        drop(custody);
    }

    #[test]
    fn connect_errors_say_what_to_do() {
        let p = Path::new("/run/x/custody.sock");
        let e = ClientError::from_connect(p, io::ErrorKind::NotFound.into());
        assert_eq!(
            e.to_string(),
            "custody daemon is not running at /run/x/custody.sock (start parley-custodyd or the Parley Custody app; if it listens elsewhere, pass --socket or set PARLEY_CUSTODY_SOCKET)"
        );
        let e = ClientError::from_connect(p, io::ErrorKind::ConnectionRefused.into());
        assert!(matches!(e, ClientError::NotRunning { .. }));
        let e = ClientError::from_connect(p, io::ErrorKind::PermissionDenied.into());
        assert!(e.to_string().starts_with(
            "permission denied on /run/x/custody.sock: your user is not in the agents group"
        ));
        assert_eq!(human_duration(Duration::from_secs(900)), "15m");
        assert_eq!(human_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(human_duration(Duration::from_secs(45)), "45s");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn connect_to_a_missing_socket_says_custody_is_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.sock");
        let err = Client::connect(Some(&path)).await.unwrap_err();
        assert!(matches!(err, ClientError::NotRunning { .. }), "{err}");
        assert!(err.to_string().contains(&path.display().to_string()));
    }
}
