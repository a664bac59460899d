//! The UI channel: how the keyless UI process talks to the service
//! (docs/ui-channel.md).
//!
//! Two kinds of connection, told apart by how they were made, never by what
//! they say:
//!
//! - **The UI**: the UI process this service started gets one end of a
//!   socket pair as its standard input ([`super::ui_process`]); the other
//!   end reaches [`serve`] through [`StartedUi`]. No other process holds
//!   either end, so none can take its place. Only such a connection gets
//!   windows (the queued ones included), events, and every call of the
//!   permission table.
//! - **A door**: a connection on the socket path (the app started from the
//!   menu, a second `parley-custodyd`, anything of the same user). It may
//!   say hello and ask for one thing, the main window at a view
//!   ([`door_may_ask`]); it is closed after the answer, after
//!   [`DOOR_HELLO_TIMEOUT`] without a hello, or [`DOOR_LIFETIME`] after it.
//!   The listener's [`MAX_DOORS`] limit applies to doors only: a crowd of
//!   idle doors cannot keep the UI out, it never goes through the listener.
//!
//! The path's listener is the custody socket's own ([`Listener`] with
//! [`PeerPolicy::own_user_only`]: the peer's credentials are read from the
//! kernel before a byte is read; any other uid is refused, logged and
//! closed), in a directory that must be custody's user's own (checked as
//! the agents' socket's is), stale sockets replaced and live ones never.
//! Lines are read by the custody protocol's bounded [`FrameReader`] (at
//! most [`MAX_LINE`] bytes, strict JSON objects); a line that is too long or
//! not a message of the channel closes that connection with a logged reason.
//!
//! Every call is checked by [`super::permissions`] and run by
//! [`super::calls`]; the window label comes from the UI, which takes it from
//! Tauri's window object, and each UI connection keeps its own window state,
//! so one UI cannot arm another's window.

use super::calls::{self, CallError, Caller, ErrorCode, WindowAgents};
use super::events::UiEvent;
use super::permissions::{Note, WindowKind, Windows};
use super::service::Desktop;
use super::ui_process::UI_SOCKET_ENV;
use crate::display;
use crate::ipc::frame::{FrameError, FrameReader, FrameWriter};
use crate::ipc::peer::PeerPolicy;
use crate::ipc::socket::{BindOptions, ConnLimits, Listener, PathSource, SocketError, SocketPath};
use serde_json::{json, Value};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc, Semaphore};

/// The longest line either side sends (a review with many effects is far
/// below it; an audit page of 5000 rows fits).
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// Door connections on the path at once (the UI is not one of them).
pub const MAX_DOORS: usize = 8;
/// Calls one UI may have running at once.
const MAX_CALLS: usize = 32;
/// How long the UI this service started may take to say hello (it says it
/// before its windows start).
const HELLO_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a door may take to say hello.
pub const DOOR_HELLO_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a door may stay connected in all (it asks one thing).
pub const DOOR_LIFETIME: Duration = Duration::from_secs(5);
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

/// Binds the channel's door at `path`. Its directory is custody's own,
/// whatever the path: created 0700 if missing; an existing one must be a
/// real directory (not a symbolic link) owned by custody's user, and is set
/// to 0700 (the agents' socket's own directory is checked the same way,
/// `crate::ipc::socket`), so another user cannot have prepared it to
/// intercept the door.
pub fn bind(path: &Path) -> Result<Listener, SocketError> {
    Listener::bind(BindOptions {
        path: SocketPath {
            path: path.to_path_buf(),
            // "Custody's own directory": the rule that checks the owner.
            source: PathSource::XdgRuntime,
        },
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits {
            per_uid: MAX_DOORS,
            total: MAX_DOORS,
        },
    })
}

/// The service's end of the socket pair whose other end a UI process it
/// started holds ([`super::ui_process::Opener`]).
#[derive(Debug)]
pub struct StartedUi {
    /// The service's end.
    pub stream: std::os::unix::net::UnixStream,
    /// The UI process.
    pub pid: u32,
}

/// Serves the UIs this service starts (`started`) and doors on the path
/// until `shutdown` resolves.
pub async fn serve(
    listener: Listener,
    desktop: Arc<Desktop>,
    mut started: mpsc::UnboundedReceiver<StartedUi>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(ui) = started.recv() => {
                let pid = ui.pid;
                let stream = ui
                    .stream
                    .set_nonblocking(true)
                    .and_then(|()| tokio::net::UnixStream::from_std(ui.stream));
                match stream {
                    Ok(stream) => {
                        let d = desktop.clone();
                        tokio::spawn(async move {
                            connection(stream, d.clone()).await;
                            tracing::info!(pid, "the UI disconnected");
                            // The session's buffers are all dropped now.
                            if let Ok(core) = &d.core {
                                let engine = core.engine.clone();
                                let _ = tokio::task::spawn_blocking(move || engine.give_back_memory()).await;
                            }
                        });
                    }
                    Err(e) => tracing::error!(pid, "the UI's channel cannot be used: {e}"),
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let d = desktop.clone();
                    tokio::spawn(async move {
                        door(stream, d).await;
                        tracing::debug!(pid = ?peer.pid, "a door connection ended");
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

/// What a door may ask: `open_window` for the main window at a view, with
/// nothing else (no request, no agent). `Err` says what it may do instead.
pub fn door_may_ask(call: &str, args: &Value) -> Result<(), &'static str> {
    const ONLY: &str = "only the window process custody started itself may do this; \
         another program can only ask custody to show its main window";
    if call != "open_window" {
        return Err(ONLY);
    }
    let kind = args.get("kind").and_then(Value::as_str);
    let extra = ["id", "agent"]
        .iter()
        .any(|k| args.get(k).is_some_and(|v| !v.is_null()));
    match kind {
        Some("main" | "grant" | "audit" | "settings") if !extra => Ok(()),
        _ => Err(ONLY),
    }
}

/// A connection on the path: a hello within [`DOOR_HELLO_TIMEOUT`], then at
/// most one call ([`door_may_ask`]) within [`DOOR_LIFETIME`], answered;
/// then it is closed. It gets no windows, no events and decides nothing.
async fn door<S: AsyncRead + AsyncWrite>(stream: S, desktop: Arc<Desktop>) {
    let (rd, wr) = tokio::io::split(stream);
    let mut reader = FrameReader::with_max_frame(rd, MAX_LINE);
    let mut writer = FrameWriter::new(wr);
    let Some(first) = first_frame(
        &mut reader,
        &mut writer,
        DOOR_HELLO_TIMEOUT,
        "closed a connection on the path that sent no hello",
    )
    .await
    else {
        return;
    };
    if let Err(why) = hello(&first) {
        tracing::warn!("UI channel: refused a connection: {why}");
        let _ = send(&mut writer, &json!({"refused": why})).await;
        return;
    }
    let me = json!({"hello": {"service": "parley-custodyd", "version": env!("CARGO_PKG_VERSION"), "door": true}});
    if !send(&mut writer, &me).await {
        return;
    }
    let asked = match tokio::time::timeout(DOOR_LIFETIME, reader.next_frame()).await {
        Ok(Ok(Some(f))) => f.value,
        Ok(Ok(None)) | Ok(Err(_)) => return,
        Err(_) => {
            tracing::info!(
                "UI channel: closed a connection on the path that stayed idle for {} s",
                DOOR_LIFETIME.as_secs()
            );
            return;
        }
    };
    let Ok(FromUi::Call { id, call, args, .. }) = parse(asked) else {
        tracing::warn!(
            "UI channel: closed a connection on the path that sent neither a call nor its end"
        );
        return;
    };
    let args = if args.is_null() { json!({}) } else { args };
    let answer = match door_may_ask(&call, &args) {
        Ok(()) => {
            // The main window's call, run as the main window would: it only
            // shows a view (in the UI, or by starting one).
            let caller = Caller::new("main", Arc::default(), Arc::default());
            match calls::dispatch(&desktop, &caller, &call, args).await {
                Ok(v) => json!({"id": id, "ok": v}),
                Err(e) => json!({"id": id, "err": e}),
            }
        }
        Err(why) => {
            tracing::warn!(call = %display::for_log(&call), "UI channel: refused a call on the path: {why}");
            json!({"id": id, "err": CallError::new(ErrorCode::NotPermitted, why)})
        }
    };
    let _ = tokio::time::timeout(DOOR_LIFETIME, send(&mut writer, &answer)).await;
}

/// Asks the service whose door is at `path` to show its main window (what a
/// second `parley-custodyd` does): hello, `open_window`, its answer.
pub fn knock(path: &Path) -> Result<(), String> {
    use std::io::{BufRead, BufReader, Read, Write};
    let fail = |e: std::io::Error| format!("the running custody's door at {}: {e}", path.display());
    let mut s = std::os::unix::net::UnixStream::connect(path).map_err(fail)?;
    s.set_read_timeout(Some(DOOR_LIFETIME)).map_err(fail)?;
    s.set_write_timeout(Some(DOOR_LIFETIME)).map_err(fail)?;
    let hello = json!({"hello": {"ui": "parley-custody-ui", "version": env!("CARGO_PKG_VERSION"), "pid": std::process::id()}});
    let ask = json!({"id": 1, "window": "main", "call": "open_window", "args": {"kind": "main"}});
    s.write_all(format!("{hello}\n{ask}\n").as_bytes())
        .map_err(fail)?;
    let mut lines = BufReader::new(s.take(64 * 1024)).lines();
    let mut next = || -> Result<Value, String> {
        let line = lines
            .next()
            .ok_or("the running custody closed its door without answering")?
            .map_err(fail)?;
        serde_json::from_str(&line).map_err(|e| format!("the running custody's answer: {e}"))
    };
    let greeting = next()?;
    if let Some(why) = greeting.get("refused").and_then(Value::as_str) {
        return Err(format!(
            "the running custody refused: {}",
            display::for_log(why)
        ));
    }
    let answer = next()?;
    match answer.get("err") {
        None => Ok(()),
        Some(e) => Err(format!(
            "the running custody did not open its window: {}",
            display::for_log(
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason")
            )
        )),
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

/// A connection's first line within `limit`: `None` when it closed, sent
/// something that is not a frame (refused, with the reason, and logged) or
/// stayed silent (`silent` is logged with the limit).
async fn first_frame<R, W>(
    reader: &mut FrameReader<R>,
    writer: &mut FrameWriter<W>,
    limit: Duration,
    silent: &str,
) -> Option<Value>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match tokio::time::timeout(limit, reader.next_frame()).await {
        Ok(Ok(Some(f))) => Some(f.value),
        Ok(Ok(None)) => None,
        Ok(Err(e)) => {
            tracing::warn!(
                "UI channel: refused a connection: {}",
                display::for_log(&e.to_string())
            );
            let _ = send(writer, &json!({"refused": e.to_string()})).await;
            None
        }
        Err(_) => {
            tracing::info!("UI channel: {silent} in {} s", limit.as_secs());
            None
        }
    }
}

/// The UI this service started: hello, then calls, window reports and
/// events until either side closes.
async fn connection<S: AsyncRead + AsyncWrite>(stream: S, desktop: Arc<Desktop>) {
    let (rd, wr) = tokio::io::split(stream);
    let mut reader = FrameReader::with_max_frame(rd, MAX_LINE);
    let mut writer = FrameWriter::new(wr);
    let Some(first) = first_frame(
        &mut reader,
        &mut writer,
        HELLO_TIMEOUT,
        "the UI sent no hello",
    )
    .await
    else {
        return;
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
    let windows = Arc::new(match desktop.core() {
        Ok(core) => Windows::following(core.engine.session().clone()),
        Err(_) => Windows::default(),
    });
    let agents = Arc::new(WindowAgents::default());
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
                    Ok(FromUi::Note { window, note }) => {
                        windows.note(&window, note);
                        // A review closed mid-request is never silent (notify.rs).
                        if let (Note::Closed, Some(WindowKind::Review(id))) = (note, WindowKind::of(&window)) {
                            desktop.notifier.window_closed(&desktop, &id);
                        }
                    }
                    Ok(FromUi::Call { id, window, call, args }) => {
                        let Ok(permit) = running.clone().try_acquire_owned() else {
                            let busy = json!({"id": id, "err": CallError::new(ErrorCode::Busy, "custody is still busy with this window's earlier requests; try again")});
                            if !send(&mut writer, &busy).await { break; }
                            continue;
                        };
                        let (d, w, a, tx) = (desktop.clone(), windows.clone(), agents.clone(), answers_tx.clone());
                        tokio::spawn(async move {
                            let caller = Caller::new(&window, w, a);
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
    fn a_door_may_ask_only_for_a_main_window_view() {
        for kind in ["main", "grant", "audit", "settings"] {
            assert_eq!(door_may_ask("open_window", &json!({"kind": kind})), Ok(()));
        }
        for (call, args) in [
            ("open_window", json!({"kind": "review", "id": "q1"})),
            ("open_window", json!({"kind": "grant", "id": "q1"})),
            (
                "open_window",
                json!({"kind": "grant", "agent": "ed25519:x"}),
            ),
            ("open_window", json!({})),
            ("status", json!({})),
            ("review_decide", json!({"id": "q1", "approve": true})),
            ("settings_save", json!({"settings": {}})),
            ("app_restart", json!({})),
        ] {
            assert!(door_may_ask(call, &args).is_err(), "{call} {args}");
        }
    }

    #[tokio::test]
    async fn the_doors_directory_must_be_custodys_own() {
        let tmp = tempfile::tempdir().unwrap();
        // Missing: made, 0700.
        let fresh = tmp.path().join("fresh").join("ui.sock");
        let l = bind(&fresh).expect("a fresh directory");
        let mode = std::fs::metadata(fresh.parent().unwrap())
            .unwrap()
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );
        drop(l);
        // A symbolic link in its place: refused.
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(
            bind(&link.join("ui.sock")),
            Err(SocketError::UnsafeDir { .. })
        ));
        // Another user's directory (possible to set up only as root): refused.
        if nix::unistd::Uid::effective().is_root() {
            let theirs = tmp.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            match bind(&theirs.join("ui.sock")) {
                Err(SocketError::UnsafeDir { problem, .. }) => {
                    assert!(problem.contains("belongs to uid 65534"), "{problem}")
                }
                other => panic!("another user's directory was used: {:?}", other.map(|_| ())),
            }
        }
    }

    #[test]
    fn the_socket_path_follows_flag_then_env_then_runtime_dir() {
        assert_eq!(
            resolve_ui_socket(Some(Path::new("/x/ui.sock"))),
            PathBuf::from("/x/ui.sock")
        );
    }
}
