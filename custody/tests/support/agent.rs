//! A raw agent on custody's socket: frames in, frames out, nothing checked,
//! so that a test can send what a real client never would and read every
//! reply as it came.

use parley_custody::ipc::frame::{FrameReader, FrameWriter};
use parley_custody::ipc::socket::{connect, SocketStream as Stream};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// How long a test waits for one reply before it fails (a loaded CI machine
/// is slow, a hung custody never answers).
pub const REPLY_WAIT: Duration = Duration::from_secs(90);

pub struct Agent {
    pub r: FrameReader<tokio::io::ReadHalf<Stream>>,
    pub w: FrameWriter<tokio::io::WriteHalf<Stream>>,
    /// Final replies read while waiting for another id: replies to requests
    /// in flight on one connection may come in any order (a cancel's own
    /// answer and the cancelled request's answer race).
    early: Vec<Value>,
}

impl Agent {
    pub async fn connect(path: &Path) -> Agent {
        let (r, w) = tokio::io::split(connect(path).await.expect("connect to custody"));
        Agent {
            r: FrameReader::new(r),
            w: FrameWriter::new(w),
            early: Vec::new(),
        }
    }

    /// Sends one frame (a `Value` or a reference to one).
    pub async fn send(&mut self, v: impl std::borrow::Borrow<Value>) {
        self.w.send(v.borrow()).await.expect("send a frame");
    }

    /// The next frame, or `None` when custody closed the connection.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        tokio::time::timeout(wait, self.r.next_frame())
            .await
            .expect("a reply or end of stream in time")
            .ok()
            .flatten()
            .map(|f| f.value)
    }

    /// The next frame; the connection must still be open.
    pub async fn recv(&mut self) -> Value {
        let f = tokio::time::timeout(REPLY_WAIT, self.r.next_frame())
            .await
            .expect("reply in time");
        f.expect("a readable frame").expect("a frame").value
    }

    /// Reads until the final reply to `id` and returns it (PENDING events
    /// skipped, other final replies kept for their own `final_for`).
    pub async fn final_for(&mut self, id: &str) -> Value {
        if let Some(i) = self.early.iter().position(|v| v["re"] == id) {
            return self.early.remove(i);
        }
        loop {
            let v = self.recv().await;
            if v["kind"] == "PENDING" {
                continue;
            }
            if v["re"] == id {
                return v;
            }
            self.early.push(v);
        }
    }

    /// Sends `req` and returns its final reply, or says what went wrong
    /// (for tests that expect custody to close or refuse).
    pub async fn ask(&mut self, req: &Value, wait: Duration) -> Result<Value, String> {
        self.w.send(req).await.map_err(|e| format!("send: {e}"))?;
        let id = &req["id"];
        loop {
            let frame = tokio::time::timeout(wait, self.r.next_frame())
                .await
                .map_err(|_| format!("no reply within {} s", wait.as_secs()))?
                .map_err(|e| format!("read: {e}"))?
                .ok_or("the connection closed")?;
            if &frame.value["re"] == id && frame.value["kind"] != "PENDING" {
                return Ok(frame.value);
            }
        }
    }
}
