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
use crate::protocol::{ErrorCode, Reply, VERSION};
// Where they were before replies and their validation moved next to each
// other in `protocol`; `parley_custody::client::parse_reply` keeps working.
pub use crate::protocol::{parse_reply, ReplyError, ReplyFrame};
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

mod connect;

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

/// `"dialect"` in a request body, for every dialect but the default.
fn name_dialect(body: &mut Map<String, Value>, dialect: Dialect) {
    if dialect != Dialect::ParleyV1 {
        body.insert("dialect".into(), json!(dialect.name()));
    }
}

#[cfg(test)]
mod tests;
