//! The UI channel: the private socket the keyless UI process talks to the
//! service over (docs/ui-channel.md).
//!
//! It is built from the same parts as the agents' socket, with a stricter
//! policy: [`Listener`] with [`PeerPolicy::own_user_only`] (the peer's
//! credentials are read from the kernel before a byte is read; any other
//! uid is refused, logged and closed), at most [`MAX_UIS`] connections, a
//! private directory, stale sockets replaced and live ones never. Lines are
//! read by the custody protocol's bounded [`FrameReader`] (at most
//! [`MAX_LINE`] bytes, strict JSON objects); a line that is too long or not
//! a message of the channel closes that connection with a logged reason.
//!
//! Every call is checked by [`super::permissions`] and run by
//! [`super::calls`]; the window label comes from the UI, which takes it from
//! Tauri's window object, and each UI connection keeps its own window state,
//! so one UI cannot arm another's window.

use super::calls::{self, CallError, Caller, ErrorCode};
use super::events::UiEvent;
use super::permissions::{Note, Windows};
use super::service::Desktop;
use super::ui_process::UI_SOCKET_ENV;
use crate::display;
use crate::ipc::frame::{FrameError, FrameReader, FrameWriter};
use crate::ipc::peer::PeerPolicy;
use crate::ipc::socket::{BindOptions, ConnLimits, Listener, SocketError, SocketPath, Stream};
use crate::paths;
use serde_json::{json, Value};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, Semaphore};

/// The longest line either side sends (a review with many effects is far
/// below it; an audit page of 5000 rows fits).
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// UI connections at once (one UI, and room for a test's or a restart's).
pub const MAX_UIS: usize = 4;
/// Calls one UI may have running at once.
const MAX_CALLS: usize = 32;
/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a UI may take to read what it was sent (a UI that stops
/// reading is closed, never let to pile up memory in the service).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the channel is: `flag`, else `$PARLEY_CUSTODY_UI_SOCKET`, else
/// `$XDG_RUNTIME_DIR/parley-custody-ui/ui.sock`, else
/// `/tmp/parley-custody-ui-<uid>/ui.sock`.
pub fn resolve_ui_socket(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os(UI_SOCKET_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    match std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        Some(run) => run.join("parley-custody-ui").join("ui.sock"),
        None => PathBuf::from(format!(
            "/tmp/parley-custody-ui-{}/ui.sock",
            nix::unistd::Uid::current().as_raw()
        )),
    }
}

/// Binds the channel at `path` (its directory made private, 0700).
pub fn bind(path: &Path) -> Result<Listener, SocketError> {
    if let Some(dir) = path.parent() {
        paths::ensure_private_dir(dir).map_err(|e| SocketError::Dir {
            dir: dir.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
    }
    Listener::bind(BindOptions {
        path: SocketPath::explicit(path),
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits {
            per_uid: MAX_UIS,
            total: MAX_UIS,
        },
    })
}

/// Serves UI connections until `shutdown` resolves.
pub async fn serve(listener: Listener, desktop: Arc<Desktop>, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let d = desktop.clone();
                    tokio::spawn(async move {
                        let pid = peer.pid;
                        connection(stream, d).await;
                        tracing::info!(?pid, "a UI disconnected");
                    });
                }
                Err(e) => {
                    tracing::warn!("UI channel: {}", display::for_log(&e.to_string()));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// What a UI sends after its hello.
#[derive(Debug, PartialEq)]
enum FromUi {
    Call {
        id: u64,
        window: String,
        call: String,
        args: Value,
    },
    Note {
        window: String,
        note: Note,
    },
}

/// Reads one message of the UI; `Err` says why the line is not one.
fn parse(v: Value) -> Result<FromUi, String> {
    let window = v
        .get("window")
        .and_then(Value::as_str)
        .filter(|w| w.len() <= 64)
        .ok_or("no window label")?
        .to_string();
    if let Some(call) = v.get("call") {
        let call = call
            .as_str()
            .filter(|c| c.len() <= 64)
            .ok_or("a call name is a short string")?
            .to_string();
        let id = v
            .get("id")
            .and_then(Value::as_u64)
            .ok_or("a call has an id")?;
        let args = v.get("args").cloned().unwrap_or(Value::Null);
        return Ok(FromUi::Call {
            id,
            window,
            call,
            args,
        });
    }
    if let Some(note) = v.get("note") {
        let note = note
            .as_str()
            .and_then(Note::parse)
            .ok_or("unknown window note")?;
        return Ok(FromUi::Note { window, note });
    }
    Err("neither a call nor a window note".into())
}

/// Checks the UI's hello; returns its pid for the log.
fn hello(v: &Value) -> Result<u64, String> {
    let h = v.get("hello").ok_or("the first line must be a hello")?;
    if h.get("ui").and_then(Value::as_str) != Some("parley-custody-ui") {
        return Err("this channel is for the Parley Custody UI only".into());
    }
    h.get("version")
        .and_then(Value::as_str)
        .ok_or("the hello carries the UI's version")?;
    h.get("pid")
        .and_then(Value::as_u64)
        .ok_or_else(|| "the hello carries the UI's pid".into())
}

async fn send<W: tokio::io::AsyncWrite + Unpin>(w: &mut FrameWriter<W>, v: &Value) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, w.send(v)).await,
        Ok(Ok(()))
    )
}

async fn connection(stream: Stream, desktop: Arc<Desktop>) {
    let (rd, wr) = tokio::io::split(stream);
    let mut reader = FrameReader::with_max_frame(rd, MAX_LINE);
    let mut writer = FrameWriter::new(wr);
    let first = match tokio::time::timeout(HELLO_TIMEOUT, reader.next_frame()).await {
        Ok(Ok(Some(f))) => f.value,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::warn!(
                "UI channel: refused a connection: {}",
                display::for_log(&e.to_string())
            );
            let _ = send(&mut writer, &json!({"refused": e.to_string()})).await;
            return;
        }
        Err(_) => {
            tracing::warn!("UI channel: refused a connection that sent no hello in 5 s");
            return;
        }
    };
    let pid = match hello(&first) {
        Ok(pid) => pid,
        Err(why) => {
            tracing::warn!("UI channel: refused a connection: {why}");
            let _ = send(&mut writer, &json!({"refused": why})).await;
            return;
        }
    };
    let me = json!({"hello": {"service": "parley-custodyd", "version": env!("CARGO_PKG_VERSION")}});
    if !send(&mut writer, &me).await {
        return;
    }
    tracing::info!(ui_pid = pid, "a UI connected");
    let (mut events, _attached) = desktop.hub.attach();
    for target in desktop.opener.take_queued() {
        if !send(&mut writer, &UiEvent::Open(target).to_value()).await {
            return;
        }
    }
    let windows = Arc::new(Windows::default());
    let running = Arc::new(Semaphore::new(MAX_CALLS));
    let (answers_tx, mut answers) = mpsc::channel::<Value>(MAX_CALLS);
    loop {
        tokio::select! {
            frame = reader.next_frame() => {
                let v = match frame {
                    Ok(Some(f)) => f.value,
                    Ok(None) => break,
                    Err(FrameError::Io(_)) => break,
                    Err(e) => {
                        tracing::warn!(ui_pid = pid, "UI channel: closed a connection: {}", display::for_log(&e.to_string()));
                        break;
                    }
                };
                match parse(v) {
                    Ok(FromUi::Note { window, note }) => windows.note(&window, note),
                    Ok(FromUi::Call { id, window, call, args }) => {
                        let Ok(permit) = running.clone().try_acquire_owned() else {
                            let busy = json!({"id": id, "err": CallError::new(ErrorCode::Busy, "custody is still busy with this window's earlier requests; try again")});
                            if !send(&mut writer, &busy).await { break; }
                            continue;
                        };
                        let (d, w, tx) = (desktop.clone(), windows.clone(), answers_tx.clone());
                        tokio::spawn(async move {
                            let caller = Caller::new(&window, w);
                            let answer = match calls::dispatch(&d, &caller, &call, args).await {
                                Ok(v) => json!({"id": id, "ok": v}),
                                Err(e) => {
                                    tracing::info!(window = %display::for_log(&window), call = %display::for_log(&call), "refused: {}", display::for_log(&e.to_string()));
                                    json!({"id": id, "err": e})
                                }
                            };
                            let _ = tx.send(answer).await;
                            drop(permit);
                        });
                    }
                    Err(why) => {
                        tracing::warn!(ui_pid = pid, "UI channel: closed a connection: {why}");
                        break;
                    }
                }
            }
            ev = events.recv() => {
                let v = match ev {
                    Ok(ev) => ev.to_value(),
                    // Fell behind: it reloads everything.
                    Err(broadcast::error::RecvError::Lagged(_)) => UiEvent::PendingChanged.to_value(),
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                if !send(&mut writer, &v).await { break; }
            }
            Some(answer) = answers.recv() => {
                if !send(&mut writer, &answer).await { break; }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_the_ui_are_calls_or_notes_and_nothing_else() {
        let call = parse(
            json!({"id": 3, "window": "review-q1", "call": "review_get", "args": {"id": "q1"}}),
        );
        assert_eq!(
            call,
            Ok(FromUi::Call {
                id: 3,
                window: "review-q1".into(),
                call: "review_get".into(),
                args: json!({"id": "q1"})
            })
        );
        assert_eq!(
            parse(json!({"window": "main", "note": "focused"})),
            Ok(FromUi::Note {
                window: "main".into(),
                note: Note::Focused
            })
        );
        for bad in [
            json!({"id": 1, "call": "status"}),
            json!({"window": "main", "call": "status"}),
            json!({"id": -1, "window": "main", "call": "status"}),
            json!({"window": "main", "note": "armed"}),
            json!({"window": "main"}),
            json!({"window": "x".repeat(65), "note": "shown"}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_our_ui_says_hello() {
        assert_eq!(
            hello(&json!({"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": 42}})),
            Ok(42)
        );
        assert!(hello(&json!({"hello": {"ui": "other", "version": "1", "pid": 1}})).is_err());
        assert!(hello(&json!({"custody": 1, "op": "hello"})).is_err());
    }

    #[test]
    fn the_socket_path_follows_flag_then_env_then_runtime_dir() {
        assert_eq!(
            resolve_ui_socket(Some(Path::new("/x/ui.sock"))),
            PathBuf::from("/x/ui.sock")
        );
    }
}
