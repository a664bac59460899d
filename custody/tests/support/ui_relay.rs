//! The UI the service starts, played by a test: the service hands the UI
//! process it spawns its channel (a socket pair on standard input), and
//! nothing on the socket path can take that channel's place. To be that
//! UI, a test points `$PARLEY_CUSTODY_UI` at [`RELAY`], which passes the
//! inherited channel on, byte for byte, to the test.

#![allow(dead_code)]

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the service starts as its UI in these tests: a relay that passes
/// the channel it inherited (standard input, `PARLEY_CUSTODY_UI_FD=0`) on,
/// byte for byte, to the test listening at `$PARLEY_TEST_UI_RELAY`, after
/// one line saying how it was started. The test is then the UI the service
/// started, as the real app is (tests/e2e run the app itself).
pub const RELAY: &str = r#"#!/usr/bin/env python3
import json, os, socket, sys, threading
ch = socket.socket(fileno=os.dup(0))
t = socket.socket(socket.AF_UNIX)
t.connect(os.environ["PARLEY_TEST_UI_RELAY"])
t.sendall((json.dumps({"relay": {"pid": os.getpid(), "argv": sys.argv[1:],
    "fd": os.environ.get("PARLEY_CUSTODY_UI_FD"),
    "socket_env": os.environ.get("PARLEY_CUSTODY_UI_SOCKET")}}) + "\n").encode())
def pump(a, b):
    while True:
        try:
            d = a.recv(65536)
        except OSError:
            d = b""
        if not d:
            break
        b.sendall(d)
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
threading.Thread(target=pump, args=(t, ch), daemon=True).start()
pump(ch, t)
"#;

/// The relay installed in a scratch directory: the program to give the
/// service as `$PARLEY_CUSTODY_UI`, and the socket it reports to
/// (`$PARLEY_TEST_UI_RELAY`).
pub struct Relay {
    /// The relay program.
    pub program: PathBuf,
    /// Where the relay connects to.
    pub socket: PathBuf,
    listener: UnixListener,
}

impl Relay {
    /// Writes the relay into `dir` and listens for it.
    pub fn install(dir: &Path) -> Relay {
        let program = dir.join("ui-relay");
        std::fs::write(&program, RELAY).expect("write the relay");
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))
            .expect("make the relay executable");
        let socket = dir.join("relay.sock");
        let listener = UnixListener::bind(&socket).expect("the relay's socket");
        listener.set_nonblocking(true).expect("nonblocking");
        Relay {
            program,
            socket,
            listener,
        }
    }

    /// The next UI the service starts: its channel, and the line saying how
    /// it was started (`pid`, `argv`, `fd`, `socket_env`). Panics with
    /// `log()` after `wait`.
    pub fn next(&self, wait: Duration, log: impl Fn() -> String) -> (UnixStream, Value) {
        let end = Instant::now() + wait;
        let stream = loop {
            match self.listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(
                        Instant::now() < end,
                        "the service started no UI:\n{}",
                        log()
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("accepting the relay: {e}"),
            }
        };
        stream.set_nonblocking(false).expect("blocking");
        stream.set_read_timeout(Some(wait)).expect("a read timeout");
        let first = first_line(&stream).expect("the relay's first line");
        stream.set_read_timeout(None).expect("no read timeout");
        let started: Value = serde_json::from_str(first.trim()).expect("the relay's line is JSON");
        (stream, started["relay"].clone())
    }
}

/// Reads exactly one line, byte by byte, so that nothing after it is
/// buffered away from the stream's next reader.
fn first_line(mut s: &UnixStream) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    let mut one = [0u8; 1];
    loop {
        let n = std::io::Read::read(&mut s, &mut one)?;
        if n == 0 || one[0] == b'\n' {
            break;
        }
        bytes.push(one[0]);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
