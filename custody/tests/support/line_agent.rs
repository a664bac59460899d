//! An agent on custody's socket as a plain client of the line protocol
//! (one JSON request a line, no frame library), its connection kept open
//! for as long as the test holds it: closing it would withdraw the request.

use super::lines::{final_within, json_lines};
use serde_json::Value;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// How long the first reply (`PENDING`) may take.
const FIRST_REPLY: Duration = Duration::from_secs(60);

/// A request in flight on its own connection.
pub struct Agent {
    rx: mpsc::Receiver<Value>,
    _conn: UnixStream,
}

impl Agent {
    /// Sends `request` on a new connection to `sock`; custody's first
    /// reply must be `PENDING` (the request waits for the human).
    pub fn ask(sock: &Path, request: &Value) -> Agent {
        let mut conn = UnixStream::connect(sock).expect("connect as an agent");
        conn.write_all(format!("{request}\n").as_bytes())
            .expect("send the request");
        let rx = json_lines(conn.try_clone().expect("a second handle"), None);
        let a = Agent { rx, _conn: conn };
        let first = a.rx.recv_timeout(FIRST_REPLY).expect("a first reply");
        assert_eq!(first["kind"], "PENDING", "{first}");
        a
    }

    /// The final reply, if one came within `wait`.
    pub fn final_within(&self, wait: Duration) -> Option<Value> {
        final_within(&self.rx, wait)
    }
}
