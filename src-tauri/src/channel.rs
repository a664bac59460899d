//! The UI channel's I/O: the hello, line framing, writing calls and window
//! reports, and the reader that routes each answer to the call waiting for
//! it (by id, in whatever order the service answers) and hands events on.
//!
//! Every line is bounded ([`MAX_LINE`]) both ways: the service closes a
//! connection that sends a longer one, and this process stops reading a
//! service that does (it shows nothing it cannot back up).
//!
//! The channel itself is inherited ([`take_inherited`]): the service that
//! starts this process gives it one end of a socket pair as its standard
//! input. A process that connects to the socket path instead is only let
//! ask for a window (`crate::door`).

use crate::protocol::{
    self, Call, CallError, Event, HelloReply, Incoming, Note, ProtocolError, WindowNote,
};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// The longest line either side may send, without its `\n`.
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// How long a call waits for its answer: longer than any page waits
/// (`DECIDE_WAIT_MS` in ui/src/custody-constants.ts, which is longer than
/// custody's own limit on a decision), so the page's own timeout is the one
/// a human sees, never this process's.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(240);
/// The environment variable by which the service that started this process
/// says its channel is inherited, and on which descriptor: always `0`.
pub const FD_ENV: &str = "PARLEY_CUSTODY_UI_FD";
/// How long the service has to answer the hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write may block (a service that stopped reading).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong on the channel.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// Reading or writing the socket failed.
    #[error("the UI channel failed: {0}")]
    Io(#[from] io::Error),
    /// The service sent a line over [`MAX_LINE`].
    #[error("custody sent a line longer than 4 MiB")]
    TooLong,
    /// The connection ended in the middle of a line.
    #[error("custody closed the channel in the middle of a line")]
    Truncated,
    /// A line this process cannot read.
    #[error("custody sent a line this window process cannot read: {0}")]
    Protocol(#[from] ProtocolError),
    /// The service closed the channel before answering the hello.
    #[error("custody closed the UI channel before answering")]
    NoHello,
    /// The service refused this process.
    #[error("custody refused this window process: {0}")]
    Refused(String),
    /// `PARLEY_CUSTODY_UI_FD` names something this process cannot use.
    #[error("the channel custody gave this window process is not usable: {0}")]
    Inherited(String),
}

/// The channel the custody service gave this process when it started it:
/// its standard input, when [`FD_ENV`] is `0` (`None` when the variable is
/// not set: this process was started some other way). The variable is
/// removed and standard input becomes `/dev/null`, so that nothing this
/// process starts (the web engine's processes) inherits the channel; the
/// returned stream is a close-on-exec copy.
pub fn take_inherited() -> Result<Option<UnixStream>, ChannelError> {
    let Some(value) = std::env::var_os(FD_ENV) else {
        return Ok(None);
    };
    std::env::remove_var(FD_ENV);
    if value != "0" {
        return Err(ChannelError::Inherited(format!(
            "{FD_ENV} is {value:?}; custody passes the channel as standard input (0)"
        )));
    }
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    let stream = UnixStream::from(fd);
    // Anything but a socket (a terminal, /dev/null) is refused here.
    stream
        .local_addr()
        .map_err(|e| ChannelError::Inherited(format!("standard input is not a socket ({e})")))?;
    let null = std::fs::File::open("/dev/null")?;
    nix::unistd::dup2(null.as_raw_fd(), io::stdin().as_raw_fd())
        .map_err(|e| ChannelError::Io(io::Error::from(e)))?;
    Ok(Some(stream))
}

/// Reads one line into `buf` (without its `\n`). `Ok(false)` at the end of
/// the stream; a line over [`MAX_LINE`] is refused without reading the rest.
pub fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<bool, ChannelError> {
    buf.clear();
    let n = r.take(MAX_LINE as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(false);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(true);
    }
    if buf.len() > MAX_LINE {
        Err(ChannelError::TooLong)
    } else {
        Err(ChannelError::Truncated)
    }
}

/// `value` as one line, or `None` if it would be over [`MAX_LINE`].
fn line(value: &impl serde::Serialize) -> Option<Vec<u8>> {
    let mut bytes = serde_json::to_vec(value).ok()?;
    if bytes.len() > MAX_LINE {
        return None;
    }
    bytes.push(b'\n');
    Some(bytes)
}

type Waiting = oneshot::Sender<Result<Value, CallError>>;

/// The writing half and the calls waiting for answers; shared by every
/// window's calls (Tauri state) and the reader.
pub struct Channel {
    writer: Mutex<UnixStream>,
    waiting: Mutex<HashMap<u64, Waiting>>,
    next_id: AtomicU64,
    closed: AtomicBool,
}

/// The reading half: [`Reader::run`] on its own thread.
pub struct Reader {
    stream: BufReader<UnixStream>,
    channel: Arc<Channel>,
}

/// How the reader stopped.
#[derive(Debug)]
pub enum Ending {
    /// The service closed the channel.
    Closed,
    /// A read failed or the service sent something unreadable.
    Failed(ChannelError),
}

impl Channel {
    /// Says hello on `stream` and reads the service's answer. On success the
    /// channel and its reader, with the service's version.
    pub fn handshake(
        stream: UnixStream,
        version: &str,
    ) -> Result<(Arc<Channel>, Reader, String), ChannelError> {
        stream.set_read_timeout(Some(HELLO_TIMEOUT))?;
        stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let mut writer = stream.try_clone()?;
        let hello = line(&protocol::hello(version, std::process::id()))
            .ok_or(ChannelError::Protocol(ProtocolError::Unrecognised))?;
        writer.write_all(&hello)?;
        let mut reader = BufReader::new(stream);
        let mut buf = Vec::new();
        if !read_line(&mut reader, &mut buf)? {
            return Err(ChannelError::NoHello);
        }
        let service_version = match protocol::parse_hello_reply(&buf)? {
            HelloReply::Accepted { version } => version,
            HelloReply::Refused(why) => return Err(ChannelError::Refused(why)),
        };
        reader.get_ref().set_read_timeout(None)?;
        let channel = Arc::new(Channel {
            writer: Mutex::new(writer),
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
        });
        let reader = Reader {
            stream: reader,
            channel: channel.clone(),
        };
        Ok((channel, reader, service_version))
    }

    /// Calls `name` with `args` for the window `window` and waits for the
    /// answer, at most [`CALL_TIMEOUT`]. Errors are sentences for the page.
    pub async fn call(&self, window: &str, name: &str, args: &Value) -> Result<Value, CallError> {
        self.call_within(window, name, args, CALL_TIMEOUT).await
    }

    async fn call_within(
        &self,
        window: &str,
        name: &str,
        args: &Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(gone());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let bytes = line(&Call {
            id,
            window,
            call: name,
            args,
        })
        .ok_or_else(|| {
            CallError::new(
                "bad_request",
                "This request is too large to send to custody.",
            )
        })?;
        let (tx, rx) = oneshot::channel();
        self.waiting_map().insert(id, tx);
        if let Err(e) = self.write(&bytes) {
            self.waiting_map().remove(&id);
            return Err(CallError::new(
                "not_running",
                format!("Cannot reach custody: {e}"),
            ));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(gone()),
            Err(_) => {
                self.waiting_map().remove(&id);
                Err(CallError::new("timeout", "custody did not answer"))
            }
        }
    }

    /// Reports what happened to window `window` (no answer comes). A channel
    /// that is gone is not an error here: the reader ends the process.
    pub fn note(&self, window: &str, note: Note) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        if let Some(bytes) = line(&WindowNote { window, note }) {
            if let Err(e) = self.write(&bytes) {
                tracing::debug!("cannot report {note:?} for a window: {e}");
            }
        }
    }

    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        let mut w = self
            .writer
            .lock()
            .map_err(|_| io::Error::other("the channel writer panicked"))?;
        w.write_all(bytes)
    }

    fn waiting_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        // A panic while holding the map leaves it consistent (inserts and
        // removes only), so a poisoned lock is still usable.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the channel gone and fails every call still waiting.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for (_, tx) in self.waiting_map().drain() {
            let _ = tx.send(Err(gone()));
        }
        if let Ok(w) = self.writer.lock() {
            let _ = w.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn gone() -> CallError {
    CallError::new("not_running", "Custody went away (the service stopped).")
}

impl Reader {
    /// Reads until the channel ends: answers go to their calls, events to
    /// `on_event`. When it returns, the channel is closed and every waiting
    /// call has failed.
    pub fn run(mut self, mut on_event: impl FnMut(Event)) -> Ending {
        let mut buf = Vec::new();
        let ending = loop {
            match read_line(&mut self.stream, &mut buf) {
                Ok(false) => break Ending::Closed,
                Ok(true) => {}
                Err(e) => break Ending::Failed(e),
            }
            match protocol::parse_incoming(&buf) {
                Ok(Incoming::Answer { id, result }) => {
                    match self.channel.waiting_map().remove(&id) {
                        Some(tx) => {
                            let _ = tx.send(result);
                        }
                        None => tracing::debug!(id, "an answer nobody waits for (timed out)"),
                    }
                }
                Ok(Incoming::Event(e)) => on_event(e),
                Err(e) => break Ending::Failed(e.into()),
            }
        };
        self.channel.close();
        ending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Cursor;

    fn lines_of(input: &[u8]) -> Vec<Result<Vec<u8>, String>> {
        let mut r = BufReader::new(Cursor::new(input.to_vec()));
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            match read_line(&mut r, &mut buf) {
                Ok(true) => out.push(Ok(buf.clone())),
                Ok(false) => return out,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }

    #[test]
    fn framing() {
        assert_eq!(
            lines_of(b"{\"a\":1}\n{}\n"),
            vec![Ok(b"{\"a\":1}".to_vec()), Ok(b"{}".to_vec())]
        );
        assert_eq!(
            lines_of(b"{}\n{\"cut"),
            vec![Ok(b"{}".to_vec()), Err(ChannelError::Truncated.to_string())]
        );
        // Exactly the limit passes; one byte more is refused.
        let mut at_limit = vec![b' '; MAX_LINE];
        at_limit.push(b'\n');
        assert_eq!(lines_of(&at_limit).len(), 1);
        assert!(lines_of(&at_limit)[0].is_ok());
        let mut over = vec![b' '; MAX_LINE + 1];
        over.push(b'\n');
        assert_eq!(
            lines_of(&over),
            vec![Err(ChannelError::TooLong.to_string())]
        );
        // Never reads past the limit looking for a newline.
        let endless = vec![b'x'; MAX_LINE * 2];
        assert_eq!(
            lines_of(&endless),
            vec![Err(ChannelError::TooLong.to_string())]
        );
    }

    #[test]
    fn this_process_waits_longer_than_any_page() {
        let ts = include_str!("../../ui/src/custody-constants.ts");
        let page_ms: u128 = ts
            .lines()
            .find_map(|l| l.strip_prefix("export const DECIDE_WAIT_MS = "))
            .and_then(|v| v.trim().parse().ok())
            .expect("DECIDE_WAIT_MS in ui/src/custody-constants.ts");
        assert!(
            CALL_TIMEOUT.as_millis() > page_ms,
            "the UI process gives up ({CALL_TIMEOUT:?}) before the page ({page_ms} ms)"
        );
    }

    #[test]
    fn outgoing_lines_are_bounded() {
        assert!(line(&json!({"a": "x".repeat(100)})).is_some());
        assert!(line(&json!({"a": "x".repeat(MAX_LINE)})).is_none());
    }

    /// A fake service on the other end of a socket pair: answers the hello,
    /// then runs `serve` on the lines the UI sends.
    fn fake_service(
        serve: impl FnOnce(&mut BufReader<UnixStream>, &mut UnixStream) + Send + 'static,
    ) -> (UnixStream, std::thread::JoinHandle<()>) {
        let (ui, service) = UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || {
            let mut w = service.try_clone().unwrap();
            let mut r = BufReader::new(service);
            let mut buf = Vec::new();
            assert!(read_line(&mut r, &mut buf).unwrap());
            let hello: Value = serde_json::from_slice(&buf).unwrap();
            assert_eq!(hello["hello"]["ui"], "parley-custody-ui");
            assert_eq!(hello["hello"]["pid"], std::process::id());
            w.write_all(b"{\"hello\":{\"service\":\"parley-custodyd\",\"version\":\"9.9.9\"}}\n")
                .unwrap();
            serve(&mut r, &mut w);
        });
        (ui, t)
    }

    fn read_json(r: &mut BufReader<UnixStream>) -> Value {
        let mut buf = Vec::new();
        assert!(read_line(r, &mut buf).unwrap());
        serde_json::from_slice(&buf).unwrap()
    }

    #[test]
    fn answers_reach_their_calls_whatever_the_order() {
        let (ui, service) = fake_service(|r, w| {
            let first = read_json(r);
            let second = read_json(r);
            assert_eq!(first["window"], "main");
            assert_eq!(first["call"], "status");
            assert_eq!(second["window"], "review-q7");
            assert_eq!(second["call"], "review_get");
            assert_eq!(second["args"], json!({"id": "q7"}));
            // An event first, then the second call's answer, then the first's.
            w.write_all(b"{\"event\":\"pending-withdrawn\",\"id\":\"q3\"}\n")
                .unwrap();
            let a2 = json!({"id": second["id"], "err": {"code": "busy", "message": "Not now."}});
            let a1 = json!({"id": first["id"], "ok": {"running": true}});
            w.write_all(format!("{a2}\n{a1}\n").as_bytes()).unwrap();
            // Then the service goes away.
        });
        let (channel, reader, version) = Channel::handshake(ui, "0.1.0").unwrap();
        assert_eq!(version, "9.9.9");
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        let reading = std::thread::spawn(move || reader.run(|e| seen.lock().unwrap().push(e)));
        let (first, second) = tauri::async_runtime::block_on(async {
            let c1 = channel.clone();
            let first =
                tauri::async_runtime::spawn(
                    async move { c1.call("main", "status", &json!({})).await },
                );
            // The first call's line goes out before the second's.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let second = channel
                .call("review-q7", "review_get", &json!({"id": "q7"}))
                .await;
            (first.await.unwrap(), second)
        });
        assert_eq!(first, Ok(json!({"running": true})));
        assert_eq!(second, Err(CallError::new("busy", "Not now.")));
        service.join().unwrap();
        assert!(matches!(reading.join().unwrap(), Ending::Closed));
        assert_eq!(
            *events.lock().unwrap(),
            vec![Event::PendingWithdrawn("q3".into())]
        );
        // Once the service is gone, calls fail at once.
        let after = tauri::async_runtime::block_on(channel.call("main", "status", &json!({})));
        assert_eq!(after, Err(gone()));
    }

    #[test]
    fn a_waiting_call_fails_when_the_service_goes_away_and_a_late_answer_is_dropped() {
        let (ui, service) = fake_service(|r, w| {
            let slow = read_json(r);
            assert_eq!(read_json(r), json!({"window": "main", "note": "focused"}));
            let lost = read_json(r);
            assert_eq!(lost["call"], "status");
            // Too late for `slow` (timed out), then malformed: the reader stops.
            w.write_all(format!("{}\n", json!({"id": slow["id"], "ok": 1})).as_bytes())
                .unwrap();
            w.write_all(b"not json\n").unwrap();
        });
        let (channel, reader, _) = Channel::handshake(ui, "0.1.0").unwrap();
        let c = channel.clone();
        let out = tauri::async_runtime::block_on(async move {
            let slow = c
                .call_within("main", "audit_query", &json!({}), Duration::from_millis(50))
                .await;
            c.note("main", Note::Focused);
            let c2 = c.clone();
            let lost =
                tauri::async_runtime::spawn(
                    async move { c2.call("main", "status", &json!({})).await },
                );
            (slow, lost)
        });
        let ending = reader.run(|e| panic!("no events expected: {e:?}"));
        assert!(matches!(
            ending,
            Ending::Failed(ChannelError::Protocol(ProtocolError::NotAnObject))
        ));
        let (slow, lost) = out;
        assert_eq!(
            slow,
            Err(CallError::new("timeout", "custody did not answer"))
        );
        let lost = tauri::async_runtime::block_on(lost).unwrap();
        assert_eq!(lost, Err(gone()));
        service.join().unwrap();
    }

    #[test]
    fn a_refusal_is_reported() {
        let (ui, service) = UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || {
            let mut r = BufReader::new(service.try_clone().unwrap());
            let mut buf = Vec::new();
            read_line(&mut r, &mut buf).unwrap();
            (&service)
                .write_all(b"{\"refused\":\"another user\"}\n")
                .unwrap();
        });
        match Channel::handshake(ui, "0.1.0") {
            Err(ChannelError::Refused(why)) => assert_eq!(why, "another user"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        t.join().unwrap();
    }

    #[test]
    fn a_service_that_hangs_up_before_hello() {
        let (ui, service) = UnixStream::pair().unwrap();
        drop(service);
        assert!(matches!(
            Channel::handshake(ui, "0.1.0"),
            Err(ChannelError::NoHello | ChannelError::Io(_))
        ));
    }
}
