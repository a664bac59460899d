//! The life of `parley-custodyd --approver desktop`: find out whether a
//! service already runs, start one (engine and agents' socket, tray, UI
//! channel), open what was asked for, wait for Quit or a signal, stop, and
//! start again when the human asked for a restart.
//!
//! Order: UI channel bound first (it is how a second start finds this one),
//! then the engine and the agents' socket ([`super::service::start`]), then
//! the tray; the channel serves only once the state it dispatches to exists.

use super::approver::DesktopApprover;
use super::channel;
use super::events::{OpenTarget, UiEvent, View};
use super::hub::UiHub;
use super::service::{self, Desktop, StartOptions};
use super::tray::Tray;
use super::ui_process::Opener;
use crate::ipc::socket::SocketError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Set for the new service after a restart asked from Settings: it opens
/// Settings again, where the human was.
const REOPEN_ENV: &str = "PARLEY_CUSTODY_REOPEN";

/// How the desktop service runs.
#[derive(Debug, Clone, Default)]
pub struct DesktopOptions {
    /// The custody service's own options (socket, data, keychain namespace).
    pub start: StartOptions,
    /// `--ui-socket`: the UI channel.
    pub ui_socket: Option<PathBuf>,
    /// `--hidden`: open no window at start (start at login).
    pub hidden: bool,
}

/// How long a stop waits for the decisions running: longer than custody's
/// own limit on one (OS authentication, signing, the answer).
const STOP_WAIT: Duration = Duration::from_secs(180);
const _: () = assert!(STOP_WAIT.as_secs() > super::calls::DECIDE_TIMEOUT.as_secs());

/// What [`run`] ended with.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Quit, or a signal.
    Stopped,
    /// Another service was running: it was asked to show its window.
    HandedOver,
    /// The human asked for a restart: start again (the caller re-executes).
    Restart,
}

/// Runs the desktop service until it is stopped.
pub async fn run(opts: DesktopOptions) -> Result<Ended, String> {
    let ui_socket = channel::resolve_ui_socket(opts.ui_socket.as_deref());
    let listener = match channel::bind(&ui_socket) {
        Ok(l) => l,
        Err(SocketError::AlreadyRunning(_)) => {
            // One custody per user: show the running one's window.
            if !opts.hidden {
                hand_over(&ui_socket)?;
            }
            return Ok(Ended::HandedOver);
        }
        Err(e) => return Err(format!("the UI channel: {e}")),
    };
    tracing::info!(ui_socket = %ui_socket.display(), "UI channel listening");
    let hub = UiHub::new();
    let (opener, started_uis) = Opener::new(hub.clone());
    let approver = Arc::new(DesktopApprover::new(
        tokio::runtime::Handle::current(),
        hub.clone(),
    ));
    let desktop =
        Arc::new(service::start(&opts.start, hub.clone(), opener, approver.clone()).await);
    approver.attach(&desktop);
    match &desktop.core {
        Ok(core) => tracing::info!(
            socket = %core.socket.path,
            listening = core.socket.listening,
            data = %core.data_dir.display(),
            "Parley Custody started"
        ),
        Err(e) => tracing::error!("custody could not start: {e}"),
    }
    match Tray::spawn(&desktop).await {
        Ok(t) => {
            let _ = desktop.tray.set(t);
            desktop.refresh_tray();
        }
        Err(e) => tracing::warn!("{e}; requests open their review window directly"),
    }
    // The tray and the windows follow a freeze, whoever made it (the
    // human's `parley custody freeze` included).
    let _freeze_watch = desktop.core().ok().map(|core| {
        let engine = core.engine.clone();
        let d = desktop.clone();
        AbortOnDrop(tokio::spawn(async move {
            engine
                .watch_freeze(move |frozen| {
                    if let Some(t) = d.tray.get() {
                        t.show_frozen(frozen);
                    }
                    d.hub.send(UiEvent::StatusChanged);
                    d.hub.send(UiEvent::PendingChanged);
                })
                .await;
        }))
    });
    // The session's lock and sleep (crate::session): followed into the
    // engine's gate; the windows hear of each change (disarmed while
    // locked, armed from the start on unlock).
    let _session_watch = desktop.core().ok().map(|core| {
        let gate = core.engine.session().clone();
        let mut changes = gate.subscribe();
        let d = desktop.clone();
        let follow = AbortOnDrop(tokio::spawn(crate::session::follow(gate)));
        let tell = AbortOnDrop(tokio::spawn(async move {
            let is_locked = |s: &crate::session::SessionState| s.locked_hint || s.screensaver;
            // The tray says so while locked or going to sleep.
            let show_held = |held| {
                if let Some(t) = d.tray.get() {
                    t.show_held(held);
                }
            };
            let mut was_locked = is_locked(&changes.borrow());
            show_held(changes.borrow().hold());
            while changes.changed().await.is_ok() {
                let now = *changes.borrow_and_update();
                show_held(now.hold());
                let locked = is_locked(&now);
                if locked && !was_locked {
                    // Approve-for-a-while grants end on lock (a setting, on
                    // by default); SQLite and the keystore block.
                    let ending = d.clone();
                    let _ = tokio::task::spawn_blocking(move || ending.end_short_grants_on_lock())
                        .await;
                }
                was_locked = locked;
                d.hub.send(UiEvent::StatusChanged);
            }
        }));
        (follow, tell)
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(channel::serve(
        listener,
        desktop.clone(),
        started_uis,
        async {
            let _ = stop_rx.await;
        },
    ));
    let reopen = std::env::var(REOPEN_ENV).ok();
    std::env::remove_var(REOPEN_ENV);
    if reopen.as_deref() == Some("settings") {
        desktop.opener.open(OpenTarget::Main {
            view: View::Settings,
            fragment: None,
        });
    } else if !opts.hidden {
        desktop.opener.open(OpenTarget::Main {
            view: View::Home,
            fragment: None,
        });
    }
    wait_for_stop(&desktop).await;
    let restart = desktop.restart.load(std::sync::atomic::Ordering::SeqCst);
    tracing::info!(restart, "Parley Custody stopping");
    // Agents first: from now on nothing new is queued, and an agent that
    // connects meanwhile reaches the next service, not this one going away.
    desktop.stop_socket().await;
    // No decision is cut in half: new ones are refused from now on, and the
    // ones running (a password being typed, a signature) finish and hand
    // their answers to the agents' connections, which outlive the listener.
    let running = desktop.decisions.running();
    if running > 0 {
        tracing::info!(running, "waiting for the decisions being carried out");
    }
    if !desktop.decisions.stop_and_wait(STOP_WAIT).await {
        tracing::error!(
            "a decision did not finish within {} s; stopping anyway",
            STOP_WAIT.as_secs()
        );
    }
    // Then the UI channel's listener, so that a UI starting now finds no
    // service and starts the next one; the connected UIs still read Quit.
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(2), served).await;
    desktop.hub.send(UiEvent::Quit);
    // A moment for the UIs to read Quit before the process ends.
    tokio::time::sleep(Duration::from_millis(200)).await;
    if restart {
        std::env::set_var(REOPEN_ENV, "settings");
        return Ok(Ended::Restart);
    }
    Ok(Ended::Stopped)
}

async fn wait_for_stop(desktop: &Desktop) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM: {e}");
            desktop.stop.notified().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = desktop.stop.notified() => {}
    }
}

/// Shows the main window of the service already running: asks it at its
/// channel's door ([`channel::knock`]); it shows the window in its UI, or
/// starts one.
fn hand_over(ui_socket: &std::path::Path) -> Result<(), String> {
    channel::knock(ui_socket)
}

/// Aborts a task when dropped (the freeze watcher ends with the service).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
