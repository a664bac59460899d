//! A Parley connection over TCP from the agent's side (§2.1–§2.3): send a
//! request frame, read frames until its final reply (EVENTs before it are
//! collected; replies to other ids are skipped), with a deadline.
//!
//! The service is not trusted: its frames go through the same bounded,
//! strict reader the service uses (at most 1 MiB, no duplicate keys), and a
//! reply must at least have a string `kind`.

use parley_custody_client::frame::{FrameError, FrameReader, FrameWriter};
use serde_json::Value;
use std::time::Duration;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// How long a service may take to answer one request.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a request got no usable reply.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    /// Nothing listens at the address.
    #[error("cannot connect to the Parley service at {addr}: {source} (is `parley-playground serve` running?)")]
    Connect {
        /// The address.
        addr: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The connection failed or a frame could not be sent.
    #[error("connection to {addr} failed: {source}")]
    Frame {
        /// The address.
        addr: String,
        /// What failed.
        #[source]
        source: FrameError,
    },
    /// The service closed the connection before answering.
    #[error("{addr} closed the connection before answering request {id}")]
    Closed {
        /// The address.
        addr: String,
        /// The request id.
        id: String,
    },
    /// No final reply in time.
    #[error("{addr} did not answer request {id} within {} s", REPLY_TIMEOUT.as_secs())]
    Timeout {
        /// The address.
        addr: String,
        /// The request id.
        id: String,
    },
    /// A reply that is not a Parley reply.
    #[error("{addr} sent a frame that is not a Parley reply: {why}")]
    Malformed {
        /// The address.
        addr: String,
        /// What is wrong.
        why: String,
    },
}

/// One request's replies.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The EVENTs, in order.
    pub events: Vec<Value>,
    /// The final reply.
    pub reply: Value,
}

/// A connection to one service.
#[derive(Debug)]
pub struct Conn {
    addr: String,
    reader: FrameReader<OwnedReadHalf>,
    writer: FrameWriter<OwnedWriteHalf>,
}

impl Conn {
    /// Connects to `addr` (`host:port`, or `parley://host:port`).
    pub async fn connect(addr: &str) -> Result<Conn, ConnError> {
        let host = addr.strip_prefix("parley://").unwrap_or(addr).to_string();
        let stream = tokio::time::timeout(REPLY_TIMEOUT, TcpStream::connect(&host))
            .await
            .map_err(|_| ConnError::Connect {
                addr: host.clone(),
                source: std::io::ErrorKind::TimedOut.into(),
            })?
            .map_err(|source| ConnError::Connect {
                addr: host.clone(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        let (r, w) = stream.into_split();
        Ok(Conn {
            addr: host,
            reader: FrameReader::new(r),
            writer: FrameWriter::new(w),
        })
    }

    /// The address connected to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends `frame` (which has an `id`) and returns its EVENTs and final reply.
    pub async fn request(&mut self, frame: &Value) -> Result<Exchange, ConnError> {
        let id = frame
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.writer
            .send(frame)
            .await
            .map_err(|source| ConnError::Frame {
                addr: self.addr.clone(),
                source,
            })?;
        let deadline = tokio::time::Instant::now() + REPLY_TIMEOUT;
        let mut events = Vec::new();
        loop {
            let next = tokio::time::timeout_at(deadline, self.reader.next_frame())
                .await
                .map_err(|_| ConnError::Timeout {
                    addr: self.addr.clone(),
                    id: id.clone(),
                })?;
            let frame = match next {
                Ok(Some(f)) => f.value,
                Ok(None) => {
                    return Err(ConnError::Closed {
                        addr: self.addr.clone(),
                        id,
                    })
                }
                Err(source) => {
                    return Err(ConnError::Frame {
                        addr: self.addr.clone(),
                        source,
                    })
                }
            };
            let Some(kind) = frame.get("kind").and_then(Value::as_str) else {
                return Err(ConnError::Malformed {
                    addr: self.addr.clone(),
                    why: "no `kind`".into(),
                });
            };
            let re = frame.get("re").and_then(Value::as_str);
            if re == Some(id.as_str()) {
                if kind == "EVENT" {
                    events.push(frame);
                    continue;
                }
                return Ok(Exchange {
                    events,
                    reply: frame,
                });
            }
            // `re: null` is the service failing to read our line: the only
            // line in flight is ours.
            if re.is_none() && kind == "ERROR" {
                return Ok(Exchange {
                    events,
                    reply: frame,
                });
            }
        }
    }
}
