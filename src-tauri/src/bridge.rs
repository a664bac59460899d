//! Between Tauri and the UI channel, both ways: the pages' one command
//! (`call`, forwarded with the calling window's label), the service's events
//! (Tauri events for the pages, windows to open or close, quit), and what
//! happens to the windows (reported to the service, which times approvals
//! from them). This process decides nothing: the service checks every call.

use crate::channel::{Channel, Ending, Reader};
use crate::protocol::{self, CallError, Event, Note};
use crate::windows::{self, OpenTarget};
use serde_json::Value;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use tauri::{AppHandle, Emitter, Manager, Runtime, State, Window, WindowEvent};

/// A page's call, for the service: `name` and `args` exactly as the page
/// sent them, with the label of the window that made the call (from Tauri,
/// never from the page).
#[tauri::command(rename_all = "snake_case")]
pub async fn call(
    window: Window,
    channel: State<'_, Arc<Channel>>,
    name: String,
    args: Value,
) -> Result<Value, CallError> {
    let answer = channel.call(window.label(), &name, &args).await;
    if decides(&name, &answer) {
        windows::decided(window.label());
    }
    answer
}

/// Whether a call's answer means its window's request is no longer being
/// decided: decided here, or gone (decided elsewhere, expired, withdrawn).
fn decides(name: &str, answer: &Result<Value, CallError>) -> bool {
    match answer {
        Ok(_) => matches!(name, "review_decide" | "review_deny_and_pause"),
        Err(e) => e.code == "gone",
    }
}

/// Closes the calling window (nothing to ask the service); a failure is a
/// refusal like custody's, `{code, message}`.
#[tauri::command(rename_all = "snake_case")]
pub async fn window_close(window: Window) -> Result<(), CallError> {
    window
        .close()
        .map_err(|e| CallError::new("refused", e.to_string()))
}

/// Opens (or focuses) `target`; a window created now is reported `shown`,
/// and a review window is titled after its request once custody described
/// it (the window asks `review_get` for its own request, as its page does).
pub fn open<R: Runtime>(app: &AppHandle<R>, target: &OpenTarget) -> Result<(), String> {
    if let Some(label) = windows::open(app, target)? {
        if let Some(channel) = app.try_state::<Arc<Channel>>() {
            let focused = app
                .get_webview_window(&label)
                .is_some_and(|w| w.is_focused().unwrap_or(false));
            channel.note(&label, shown(focused));
            if let OpenTarget::Review(id) = target {
                title_after_request(app.clone(), Arc::clone(&channel), label, id.clone());
            }
        }
    }
    Ok(())
}

/// Sets review window `label`'s title from custody's description of request `id`.
fn title_after_request<R: Runtime>(
    app: AppHandle<R>,
    channel: Arc<Channel>,
    label: String,
    id: String,
) {
    tauri::async_runtime::spawn(async move {
        let args = serde_json::json!({ "id": id });
        match channel.call(&label, "review_get", &args).await {
            Ok(view) => {
                let Some(review) = view.get("review") else {
                    return; // decided or gone meanwhile: the window closes
                };
                let title = windows::request_title(&id, review);
                if let Some(w) = app.get_webview_window(&label) {
                    if let Err(e) = w.set_title(&title) {
                        tracing::debug!("cannot title {label}: {e}");
                    }
                }
            }
            Err(e) => tracing::debug!("no title for {label}: {}", protocol::echo(&e.message)),
        }
    });
}

/// The Tauri event a service event becomes, with its payload (`None`: none).
fn page_event(e: &Event) -> Option<(&'static str, Option<&str>)> {
    Some(match e {
        Event::PendingChanged => ("pending-changed", None),
        Event::PausesChanged => ("pauses-changed", None),
        Event::StatusChanged => ("status-changed", None),
        Event::PendingWithdrawn(id) => ("pending-withdrawn", Some(id.as_str())),
        _ => return None,
    })
}

/// What a window of ours that is now on screen (`focused`: whether it has
/// the focus) means to the service, which counts `shown` as in front from
/// now on. A window is in front only with the focus, on X11 as on Wayland:
/// a review window opened beside the one being decided (unfocused, so that
/// a click meant for the first never lands in it) is `blurred` until the
/// window system gives it the focus and says so with a focus event. (On
/// Wayland the compositor alone decides: sway gives a new window the focus.)
fn shown(focused: bool) -> Note {
    if focused {
        Note::Shown
    } else {
        Note::Blurred
    }
}

/// What a window event means to the service, if anything.
fn note_for(e: &WindowEvent) -> Option<Note> {
    match e {
        WindowEvent::Focused(true) => Some(Note::Focused),
        WindowEvent::Focused(false) => Some(Note::Blurred),
        WindowEvent::Destroyed => Some(Note::Closed),
        _ => None,
    }
}

/// Reports `event` of `window` to the service (`Builder::on_window_event`).
pub fn on_window_event<R: Runtime>(window: &Window<R>, event: &WindowEvent) {
    if let WindowEvent::Destroyed = event {
        windows::forget(window.label());
    }
    if let Some(note) = note_for(event) {
        if let Some(channel) = window.try_state::<Arc<Channel>>() {
            channel.note(window.label(), note);
        }
    }
}

/// Reports a page of ours that finished loading as `shown`
/// (`Builder::on_page_load`): the main window changes view by loading
/// another page, and each view's approve delay starts from its own page
/// (a form that appeared under the pointer a moment ago must not count a
/// click meant for the page before it).
pub fn on_page_load<R: Runtime>(
    webview: &tauri::Webview<R>,
    payload: &tauri::webview::PageLoadPayload<'_>,
) {
    // WebKit falls back to no sandbox with only a warning: a page that
    // starts loading in a web process sharing our namespaces, before any of
    // its script runs, closes every window.
    if let Err(e) = crate::webkit::confirm() {
        for (_, w) in webview.app_handle().webview_windows() {
            let _ = w.destroy();
        }
        crate::webkit::refuse(&e);
        shut_down(webview.app_handle(), 3);
        return;
    }
    if payload.event() == tauri::webview::PageLoadEvent::Finished {
        if let Some(channel) = webview.try_state::<Arc<Channel>>() {
            let focused = webview.window().is_focused().unwrap_or(false);
            channel.note(webview.label(), shown(focused));
        }
    }
}

/// Acts on one service event.
fn handle<R: Runtime>(app: &AppHandle<R>, e: Event) {
    if let Event::PendingWithdrawn(id) = &e {
        windows::decided(&windows::review_label(id));
    }
    if let Some((name, payload)) = page_event(&e) {
        let sent = match payload {
            Some(id) => app.emit(name, id),
            None => app.emit(name, ()),
        };
        if let Err(err) = sent {
            tracing::warn!("cannot pass {name} to the windows: {err}");
        }
        return;
    }
    match e {
        Event::Open(target) => {
            if let Err(err) = open(app, &target) {
                tracing::warn!("cannot open {}: {err}", target.label());
            }
        }
        Event::Close(label) => match app.get_webview_window(&label) {
            Some(w) => {
                if let Err(err) = w.close() {
                    tracing::warn!("cannot close {}: {err}", protocol::echo(&label));
                }
            }
            None => tracing::debug!("no window {} to close", protocol::echo(&label)),
        },
        Event::Quit => {
            tracing::info!("custody asked the windows to quit");
            shut_down(app, 0);
        }
        Event::Ignored(why) => tracing::warn!("ignored from custody: {why}"),
        // Page events, handled above.
        Event::PendingChanged
        | Event::PausesChanged
        | Event::StatusChanged
        | Event::PendingWithdrawn(_) => {}
    }
}

/// The exit code [`shut_down`] chose: closing the last window may end the
/// event loop (with 0) before its exit request is read, so `main` asks here.
static EXIT_CODE: AtomicI32 = AtomicI32::new(0);

/// The exit code the service's `quit` or the channel's end chose (0 if neither).
pub fn exit_code() -> i32 {
    EXIT_CODE.load(Ordering::SeqCst)
}

/// Closes every window and exits with `code`.
fn shut_down<R: Runtime>(app: &AppHandle<R>, code: i32) {
    EXIT_CODE.store(code, Ordering::SeqCst);
    for (_, w) in app.webview_windows() {
        let _ = w.destroy();
    }
    app.exit(code);
}

/// Reads the service's events on a thread of its own until the channel
/// ends, then closes every window and exits: without the service there is
/// nothing this process could show and back up.
pub fn start_reader<R: Runtime>(app: AppHandle<R>, reader: Reader) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ui-channel".into())
        .spawn(move || {
            let ending = reader.run(|e| handle(&app, e));
            let code = match ending {
                Ending::Closed => {
                    tracing::info!("custody closed the UI channel: closing the windows");
                    0
                }
                Ending::Failed(e) => {
                    tracing::error!("{e}: closing the windows");
                    eprintln!("parley-custody: {e}; closing the windows");
                    1
                }
            };
            shut_down(&app, code);
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_events_become_the_page_events_the_app_always_sent() {
        assert_eq!(
            page_event(&Event::PendingChanged),
            Some(("pending-changed", None))
        );
        assert_eq!(
            page_event(&Event::PausesChanged),
            Some(("pauses-changed", None))
        );
        assert_eq!(
            page_event(&Event::StatusChanged),
            Some(("status-changed", None))
        );
        assert_eq!(
            page_event(&Event::PendingWithdrawn("q7".into())),
            Some(("pending-withdrawn", Some("q7")))
        );
        for e in [
            Event::Quit,
            Event::Close("main".into()),
            Event::Open(OpenTarget::Home),
            Event::Ignored("x".into()),
        ] {
            assert_eq!(page_event(&e), None, "{e:?}");
        }
    }

    #[test]
    fn a_decision_or_a_gone_request_ends_a_windows_deciding() {
        let ok = Ok(Value::Null);
        let gone = Err(CallError::new("gone", "decided elsewhere"));
        let refused = Err(CallError::new("refused", "too soon"));
        assert!(decides("review_decide", &ok));
        assert!(decides("review_deny_and_pause", &ok));
        assert!(decides("review_get", &gone));
        assert!(
            !decides("review_decide", &refused),
            "a refused approval is still being decided"
        );
        assert!(!decides("review_get", &ok));
        assert!(
            !decides("review_deny_alike", &ok),
            "denies the others, not this one"
        );
    }

    #[test]
    fn a_window_is_in_front_only_with_the_focus() {
        assert_eq!(shown(true), Note::Shown);
        assert_eq!(shown(false), Note::Blurred, "opened beside, unfocused");
    }

    #[test]
    fn window_events_become_notes() {
        assert_eq!(note_for(&WindowEvent::Focused(true)), Some(Note::Focused));
        assert_eq!(note_for(&WindowEvent::Focused(false)), Some(Note::Blurred));
        assert_eq!(note_for(&WindowEvent::Destroyed), Some(Note::Closed));
        assert_eq!(
            note_for(&WindowEvent::Moved(tauri::PhysicalPosition::new(0, 0))),
            None
        );
    }
}
