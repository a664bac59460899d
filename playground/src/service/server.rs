//! Parley over TCP (§2.3: `parley://host:port`): NDJSON frames, at most
//! 1 MiB each (§2.1), requests multiplexed on a connection (§2.2).
//!
//! Framing uses the bounded reader custody and agents share
//! (`parley_custody_client::frame`), which never buffers an over-long line
//! whole: it skips to the next `\n` and reports it, so the connection stays
//! usable after a rejected frame.
//! Every per-line problem — too large, not UTF-8, not strict JSON (duplicate
//! keys, depth), not an object — is answered `ERROR bad_frame` with
//! `"re": null` (the line's id cannot be known), and reading goes on.
//!
//! Each request runs in its own task (at most [`MAX_IN_FLIGHT`] per
//! connection; reading pauses when that many are running), so a slow
//! request never holds up the others and replies may come in any order,
//! correlated by `re`. One writer task stamps each reply with `"parley": 1`
//! and a fresh `id` and writes it; the EVENTs of a request always precede its
//! final reply. An id that is still in flight on the connection is refused
//! (`bad_frame`): its replies could not be told apart.

use super::error::ParleyError;
use super::{App, Handled, Service};
use parley_core::Dialect;
use parley_custody_client::frame::{FrameError, FrameReader, FrameWriter, MAX_FRAME};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

/// Requests handled at once on one connection.
pub const MAX_IN_FLIGHT: usize = 32;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 256;
/// A connection with no complete frame for this long is closed.
pub const IDLE: Duration = Duration::from_secs(600);

/// A reply on its way to the writer.
struct Outgoing {
    re: Option<String>,
    body: Value,
}

/// Binds `addr` (e.g. `127.0.0.1:7447`, port 0 for any free port).
pub async fn bind(addr: &str) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves `service` on `listener` until `shutdown` resolves.
pub async fn serve<A: App>(
    listener: TcpListener,
    service: Arc<Service<A>>,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => return,
            a = listener.accept() => a,
        };
        let (stream, _peer) = match accepted {
            Ok(a) => a,
            Err(_) => {
                // Out of descriptors and the like: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream, service.dialect()));
            continue;
        };
        let service = service.clone();
        tokio::spawn(async move {
            connection(stream, service).await;
            drop(permit);
        });
    }
}

/// Starts `serve` on a task; returns the bound address and a handle that
/// stops the server when dropped or when `stop` is called.
pub async fn spawn<A: App>(addr: &str, service: Arc<Service<A>>) -> std::io::Result<Running> {
    let listener = bind(addr).await?;
    let local = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, service, async move {
        let _ = rx.await;
    }));
    Ok(Running {
        addr: local,
        stop: Some(tx),
        task,
    })
}

/// A server started with [`spawn`].
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops accepting connections and waits for the accept loop to end.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

async fn refuse(stream: TcpStream, dialect: Dialect) {
    let mut w = FrameWriter::new(stream);
    let e = ParleyError::new(super::ErrorCode::Unavailable, "too many connections")
        .retry(5)
        .to_body();
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        w.send(&envelope(dialect, "s0", None, e)),
    )
    .await;
}

/// `{"parley": 1, "id": id, "re": re, ...body}`, or `"yea": 1` for a YEA
/// service: every frame carries its dialect's marker (§2.1).
fn envelope(dialect: Dialect, id: &str, re: Option<&str>, body: Value) -> Value {
    let mut frame = Map::new();
    frame.insert(dialect.marker().into(), json!(1));
    frame.insert("id".into(), json!(id));
    frame.insert("re".into(), re.map_or(Value::Null, |r| json!(r)));
    if let Value::Object(fields) = body {
        for (k, v) in fields {
            frame.insert(k, v);
        }
    }
    Value::Object(frame)
}

/// Serves one connection until the peer closes it, goes idle, or fails.
pub async fn connection<A: App>(stream: TcpStream, service: Arc<Service<A>>) {
    let _ = stream.set_nodelay(true);
    let (read, write) = stream.into_split();
    let mut reader = FrameReader::with_max_frame(read, MAX_FRAME);
    let (tx, rx) = mpsc::channel::<Outgoing>(MAX_IN_FLIGHT * 4);
    let writer = tokio::spawn(write_replies(
        FrameWriter::new(write),
        rx,
        service.dialect(),
    ));
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let ids: Arc<Mutex<HashSet<String>>> = Arc::default();
    loop {
        let next = match tokio::time::timeout(IDLE, reader.next_frame()).await {
            Ok(next) => next,
            Err(_) => break,
        };
        let frame = match next {
            Ok(Some(frame)) => frame.value,
            Ok(None) => break,
            Err(FrameError::Io(_)) => break,
            Err(e) => {
                let body = ParleyError::bad_frame(e.to_string()).to_body();
                if tx.send(Outgoing { re: None, body }).await.is_err() {
                    break;
                }
                continue;
            }
        };
        let id = frame.get("id").and_then(Value::as_str).map(str::to_string);
        if let Some(id) = &id {
            let fresh = ids
                .lock()
                .map(|mut s| s.insert(id.clone()))
                .unwrap_or(false);
            if !fresh {
                let body = ParleyError::bad_frame(format!(
                    "request id {id:?} is already in flight on this connection; ids must be unique (§2.1)"
                ))
                .to_body();
                if tx
                    .send(Outgoing {
                        re: Some(id.clone()),
                        body,
                    })
                    .await
                    .is_err()
                {
                    break;
                }
                continue;
            }
        }
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        let (service, tx, ids) = (service.clone(), tx.clone(), ids.clone());
        tokio::spawn(async move {
            let Handled { re, events, reply } = service.handle(&frame).await;
            for event in events {
                let _ = tx
                    .send(Outgoing {
                        re: re.clone(),
                        body: event,
                    })
                    .await;
            }
            let _ = tx.send(Outgoing { re, body: reply }).await;
            if let Some(id) = id {
                if let Ok(mut s) = ids.lock() {
                    s.remove(&id);
                }
            }
            drop(permit);
        });
    }
    drop(tx);
    let _ = writer.await;
}

async fn write_replies(
    mut w: FrameWriter<tokio::net::tcp::OwnedWriteHalf>,
    mut rx: mpsc::Receiver<Outgoing>,
    dialect: Dialect,
) {
    let mut n: u64 = 0;
    while let Some(out) = rx.recv().await {
        n += 1;
        let id = format!("s{n}");
        let frame = envelope(dialect, &id, out.re.as_deref(), out.body);
        match w.send(&frame).await {
            Ok(()) => {}
            Err(FrameError::TooLarge { .. }) => {
                let body = ParleyError::new(
                    super::ErrorCode::Limit,
                    "the reply is over the 1 MiB frame limit",
                )
                .fix("send the request again with a smaller budget")
                .to_body();
                if w.send(&envelope(dialect, &id, out.re.as_deref(), body))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}
