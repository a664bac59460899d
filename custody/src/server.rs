//! Serving the custody protocol on the local socket.
//!
//! One task reads frames, one writes replies; each request runs in its own
//! task, so replies interleave (multiplexing). Bounds: requests in flight
//! per connection, an idle timeout while nothing is in flight, a write
//! timeout for peers that stop reading. A per-line problem (oversized,
//! malformed, unknown op) is answered and logged and the connection stays
//! usable. When the peer closes its end, its waiting requests are withdrawn.

use crate::display::for_log;
use crate::engine::Engine;
use crate::ipc::frame::{FrameReader, FrameWriter};
use crate::ipc::peer::PeerInfo;
use crate::ipc::socket::{Listener, Stream};
use crate::protocol::{ErrorCode, Reply, Request};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Per-connection bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Requests one connection may have in flight.
    pub in_flight: usize,
    /// A connection with nothing in flight is closed after this long without a frame.
    pub idle: Duration,
    /// A reply that cannot be written within this long closes the connection.
    pub write: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            in_flight: 16,
            idle: Duration::from_secs(300),
            write: Duration::from_secs(10),
        }
    }
}

/// Accepts connections until `shutdown` completes.
pub async fn serve(
    listener: Listener,
    engine: Engine,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    // A freeze another process wrote (the human's `parley custody freeze`)
    // denies what is pending here too; the desktop also updates its tray.
    let watch = engine.clone();
    let _freeze_watch = AbortOnDrop(tokio::spawn(async move {
        watch.watch_freeze(|_| {}).await;
    }));
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Debug, not info: a client that polls (run.sh waits for a key
                    // with `parley whoami` every 2 s) would fill the log.
                    tracing::debug!(peer = %peer, "connection");
                    let engine = engine.clone();
                    tokio::spawn(connection(stream, peer, engine, limits));
                }
                Err(e) => {
                    tracing::warn!("connection refused: {}", for_log(&e.to_string()));
                    // Back off briefly on errors such as EMFILE.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
}

/// Aborts a task when dropped (the freeze watcher ends with serving).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves one connection.
pub async fn connection(stream: Stream, peer: PeerInfo, engine: Engine, limits: ServerLimits) {
    let mut reader = FrameReader::new(stream.clone());
    let (tx, mut rx) = mpsc::channel::<serde_json::Value>(64);
    let writer = tokio::spawn(async move {
        let mut w = FrameWriter::new(stream);
        while let Some(frame) = rx.recv().await {
            match tokio::time::timeout(limits.write, w.send(&frame)).await {
                Ok(Ok(())) => {}
                _ => break,
            }
        }
    });
    let in_flight = Arc::new(AtomicUsize::new(0));
    loop {
        let next = tokio::time::timeout(limits.idle, reader.next_frame()).await;
        let frame = match next {
            Err(_) if in_flight.load(Ordering::SeqCst) == 0 => {
                tracing::debug!(peer = %peer, "closing idle connection");
                break;
            }
            Err(_) => continue,
            Ok(Ok(Some(frame))) => frame,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                tracing::warn!(peer = %peer, "bad frame: {}", for_log(&e.to_string()));
                if let Some(reply) = e.to_reply() {
                    let _ = tx.send(reply).await;
                }
                if e.is_fatal() {
                    break;
                }
                continue;
            }
        };
        let req = match Request::from_value(&frame.value) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(peer = %peer, "refused request: {}", for_log(&e.message));
                let _ = tx.send(e.to_reply()).await;
                continue;
            }
        };
        if in_flight.load(Ordering::SeqCst) >= limits.in_flight {
            tracing::warn!(peer = %peer, "too many requests in flight");
            let busy = Reply::error(
                ErrorCode::Busy,
                "too many requests in flight on this connection; wait for replies",
            );
            let _ = tx.send(busy.to_frame(Some(&req.id))).await;
            continue;
        }
        in_flight.fetch_add(1, Ordering::SeqCst);
        let (engine, peer, tx, count) =
            (engine.clone(), peer.clone(), tx.clone(), in_flight.clone());
        tokio::spawn(async move {
            engine.handle(&peer, req, tx).await;
            count.fetch_sub(1, Ordering::SeqCst);
        });
    }
    // The peer is gone (or idle): stop writing, which tells waiting requests
    // to withdraw their prompts.
    writer.abort();
}
