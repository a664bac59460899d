//! The custody service inside the app: the same engine, keystore, socket,
//! queue and audit log as `parley-custodyd`, with the GUI as its approver.
//!
//! Start-up mirrors the daemon's (`custody/src/bin/parley-custodyd.rs`):
//! data directory → settings → audit log → keychain → peer policy → engine →
//! socket. A failure before the engine exists is fatal for custody but not
//! for the app: the home window shows it. A socket that cannot be bound (for
//! example another custody already listens) leaves the engine usable for the
//! human's own work (grant form, audit, keys) and is shown as such.

use crate::notify::Notifier;
use crate::settings::Settings;
use crate::tray::Tray;
use crate::windows::Armed;
use crate::Args;
use parley_custody::approver::{Approver, PendingView};
use parley_custody::audit::Audit;
use parley_custody::engine::{Engine, EngineConfig};
use parley_custody::ipc::peer::PeerPolicy;
use parley_custody::ipc::socket::{
    resolve_socket_path, BindOptions, ConnLimits, Listener, SocketError, SOCKET_ENV,
};
use parley_custody::keystore::{Keystore, StoreKind};
use parley_custody::paths;
use parley_custody::server::{self, ServerLimits};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::oneshot;

/// The socket as it stands.
#[derive(Debug, Clone, Serialize)]
pub struct SocketStatus {
    /// Where it is (or would be).
    pub path: String,
    /// Whether agents can connect now.
    pub listening: bool,
    /// Why not.
    pub error: Option<String>,
    /// A directory above the socket that agents of the agents group cannot traverse.
    pub unreachable_for_agents: Option<String>,
}

/// Everything that exists once custody started.
pub struct Core {
    /// The engine (the broker between agents and the human).
    pub engine: Engine,
    /// The data directory (audit log, settings).
    pub data_dir: PathBuf,
    /// The settings in force since start (the socket and the engine were built from them).
    pub running: Settings,
    /// The socket.
    pub socket: SocketStatus,
    /// Which key store is in use.
    pub store: StoreKind,
    /// The peer policy in force, for the settings view.
    pub policy: PolicyView,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
    served: Mutex<Option<tauri::async_runtime::JoinHandle<()>>>,
}

/// The peer policy in force, described.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyView {
    /// Custody's own uid (always allowed).
    pub own_uid: u32,
    /// The agents group, if any.
    pub agents_group: Option<String>,
    /// Further allowed uids.
    pub extra_uids: Vec<u32>,
}

/// The app's shared state (managed by Tauri, reached by every command).
pub struct AppState {
    /// Custody, or why it could not start.
    pub core: Result<Core, String>,
    /// The saved settings (may differ from [`Core::running`] until a restart).
    pub settings: Mutex<Settings>,
    /// Problems found at start-up that the home window should show.
    pub warnings: Vec<String>,
    /// Review windows' anti-clickjacking timers.
    pub armed: Armed,
    /// Desktop notifications.
    pub notifier: Arc<Notifier>,
    /// The tray icon, once built.
    pub tray: Mutex<Option<Tray>>,
    /// Seed files imported in this session, which may be shredded on request.
    pub imported: Mutex<HashMap<PathBuf, String>>,
    /// The human's agent labels as custody keeps them (display-safe; the
    /// audit file is the truth, this is read once and after each change).
    pub labels: Mutex<BTreeMap<String, String>>,
}

impl AppState {
    /// Custody, or why it is not running.
    pub fn core(&self) -> Result<&Core, String> {
        self.core
            .as_ref()
            .map_err(|e| format!("custody is not running: {e}"))
    }

    /// The human's label for an agent key, display-safe.
    pub fn agent_label(&self, key: &str) -> Option<String> {
        self.labels.lock().ok().and_then(|l| l.get(key).cloned())
    }

    /// Every labelled agent key.
    pub fn labelled_agents(&self) -> Vec<String> {
        self.labels
            .lock()
            .map(|l| l.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Reads the labels again from custody (after a change).
    pub fn reload_labels(&self) -> Result<(), String> {
        let fresh = self.core()?.engine.agent_labels()?;
        if let Ok(mut l) = self.labels.lock() {
            *l = fresh.into_iter().collect();
        }
        Ok(())
    }

    /// Shows a review with the label the agent has now (it may have been
    /// named, renamed or unnamed since the request arrived).
    pub fn label(&self, mut p: PendingView) -> PendingView {
        p.review.agent.label = self.agent_label(&p.review.agent.key);
        p
    }

    /// The pending requests with labels, oldest first.
    pub fn pending_labelled(&self) -> Vec<PendingView> {
        match &self.core {
            Ok(c) => c
                .engine
                .pending()
                .into_iter()
                .map(|p| self.label(p))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Stops accepting connections; returns the server task to wait for.
    fn signal_stop(&self) -> Option<tauri::async_runtime::JoinHandle<()>> {
        let core = self.core.as_ref().ok()?;
        if let Some(tx) = core.shutdown.lock().ok().and_then(|mut s| s.take()) {
            let _ = tx.send(());
        }
        core.served.lock().ok().and_then(|mut s| s.take())
    }

    /// Stops the socket (on quit), waiting at most 2 s; for the main thread.
    pub fn stop_blocking(&self) {
        if let Some(task) = self.signal_stop() {
            let _ = tauri::async_runtime::block_on(async {
                tokio::time::timeout(Duration::from_secs(2), task).await
            });
        }
    }

    /// Stops the socket (before a restart), waiting at most 2 s.
    pub async fn stop(&self) {
        if let Some(task) = self.signal_stop() {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
    }
}

/// The approver of the desktop app: events for the windows, the tray count,
/// a notification. Calls return at once (the engine must not wait on the GUI).
pub struct GuiApprover {
    app: AppHandle,
}

impl Approver for GuiApprover {
    fn notify(&self, pending: &PendingView) {
        let app = self.app.clone();
        let p = match app.try_state::<AppState>() {
            Some(s) => s.label(pending.clone()),
            None => pending.clone(),
        };
        let _ = app.emit("pending-changed", ());
        tauri::async_runtime::spawn(async move {
            crate::tray::refresh(&app);
            if let Some(state) = app.try_state::<AppState>() {
                state.notifier.show(&app, &p);
            }
        });
    }

    fn withdrawn(&self, id: &str) {
        let app = self.app.clone();
        let _ = app.emit("pending-withdrawn", id);
        let _ = app.emit("pending-changed", ());
        let id = id.to_string();
        tauri::async_runtime::spawn(async move {
            crate::tray::refresh(&app);
            if let Some(state) = app.try_state::<AppState>() {
                state.notifier.withdrawn(&id);
            }
        });
    }
}

fn user_to_uid(name: &str) -> Result<u32, String> {
    if let Ok(uid) = name.parse::<u32>() {
        return Ok(uid);
    }
    #[cfg(unix)]
    {
        match nix::unistd::User::from_name(name) {
            Ok(Some(u)) => Ok(u.uid.as_raw()),
            Ok(None) => Err(format!("no user named {name:?}")),
            Err(e) => Err(format!("cannot look up user {name:?}: {e}")),
        }
    }
    #[cfg(not(unix))]
    Err(format!("user names are not supported here: {name:?}"))
}

/// Starts custody for the app. Never fails: problems are in the state.
pub fn start(app: &AppHandle, args: &Args) -> AppState {
    let mut warnings = Vec::new();
    let data = match &args.data_dir {
        Some(d) => paths::ensure_private_dir(d).map(|_| d.clone()),
        None => paths::data_dir(),
    };
    let base = |core: Result<Core, String>, settings: Settings, warnings: Vec<String>| AppState {
        core,
        settings: Mutex::new(settings),
        warnings,
        armed: Armed::default(),
        notifier: Arc::new(Notifier::default()),
        tray: Mutex::new(None),
        imported: Mutex::new(HashMap::new()),
        labels: Mutex::new(BTreeMap::new()),
    };
    let data = match data {
        Ok(d) => d,
        Err(e) => return base(Err(e.to_string()), Settings::default(), warnings),
    };
    let settings = match Settings::load(&data) {
        Ok(s) => s,
        Err(e) => {
            warnings.push(format!("Settings: {e}"));
            Settings::default()
        }
    };
    match start_core(app, args, &data, &settings, &mut warnings) {
        Ok(core) => {
            let settings = move_labels_to_custody(&core, &data, settings, &mut warnings);
            let state = base(Ok(core), settings, warnings);
            if let Err(e) = state.reload_labels() {
                tracing::error!("agent labels could not be read: {e}");
            }
            state
        }
        Err(e) => base(Err(e), settings, warnings),
    }
}

/// Labels saved by an earlier version in settings.json move into custody's
/// own store (the audit file), where the terminal approver and every view
/// read them; settings.json then no longer carries them.
fn move_labels_to_custody(
    core: &Core,
    data: &Path,
    mut settings: Settings,
    warnings: &mut Vec<String>,
) -> Settings {
    if settings.agent_labels.is_empty() {
        return settings;
    }
    let mut kept = BTreeMap::new();
    for (key, label) in std::mem::take(&mut settings.agent_labels) {
        if let Err(e) = core.engine.set_agent_label(&key, Some(&label)) {
            warnings.push(format!("Agent label for {key} could not be moved: {e}"));
            kept.insert(key, label);
        }
    }
    settings.agent_labels = kept;
    if let Err(e) = settings.save(data) {
        warnings.push(format!("Settings: {e}"));
    }
    settings
}

fn start_core(
    app: &AppHandle,
    args: &Args,
    data: &Path,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<Core, String> {
    let audit = Audit::open(&paths::audit_path(data)).map_err(|e| e.to_string())?;
    let keystore = match &args.namespace {
        Some(ns) => Keystore::keychain_namespaced(Some(ns)),
        None => Keystore::keychain(),
    }
    .map_err(|e| e.to_string())?;
    let store = keystore.kind();
    let group = args
        .agents_group
        .clone()
        .or_else(|| settings.agents_group.clone());
    let mut policy = PeerPolicy::new(group.as_deref()).map_err(|e| e.to_string())?;
    policy.extra_uids.extend(&args.allow_uid);
    for u in &settings.extra_users {
        match user_to_uid(u) {
            Ok(uid) => policy.extra_uids.push(uid),
            Err(e) => warnings.push(format!("Allowed users: {e}; ignored")),
        }
    }
    policy.extra_uids.sort_unstable();
    policy.extra_uids.dedup();
    let mut config = EngineConfig::default();
    config.review.max_consent_horizon = settings.max_consent_horizon_secs;
    config.review.max_grant_lifetime = settings.max_grant_lifetime_secs;
    config.queue.total = settings.queue_size;
    config.queue.per_minute = settings.rate_per_minute;
    config.step_up = settings.step_up.clone();
    let approver = Arc::new(GuiApprover { app: app.clone() });
    let engine = Engine::new(keystore, audit, approver, config);
    let policy_view = PolicyView {
        own_uid: policy.own_uid,
        agents_group: group,
        extra_uids: policy.extra_uids.clone(),
    };

    // Flag, then $PARLEY_CUSTODY_SOCKET, then the settings, then the default.
    let from_settings = settings
        .socket_path
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    let env_set = std::env::var_os(SOCKET_ENV).is_some_and(|v| !v.is_empty());
    let flag = args
        .socket
        .clone()
        .or(if env_set { None } else { from_settings });
    let path = resolve_socket_path(flag.as_deref());
    let shown_path = path.path.display().to_string();
    let opts = BindOptions {
        path,
        policy,
        limits: ConnLimits::default(),
    };
    // A restart may find the previous process still letting go of the socket.
    let bound = tauri::async_runtime::block_on(async move {
        let mut tries = 0;
        loop {
            match Listener::bind(opts.clone()) {
                Err(SocketError::AlreadyRunning(_)) if tries < 15 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => return other,
            }
        }
    });
    let (socket, shutdown, served) = match bound {
        Ok(listener) => {
            let unreachable = listener
                .unreachable_for_agents()
                .map(|d| d.display().to_string());
            let (tx, rx) = oneshot::channel::<()>();
            let e = engine.clone();
            let task = tauri::async_runtime::spawn(async move {
                server::serve(listener, e, ServerLimits::default(), async {
                    let _ = rx.await;
                })
                .await;
            });
            (
                SocketStatus {
                    path: shown_path,
                    listening: true,
                    error: None,
                    unreachable_for_agents: unreachable,
                },
                Some(tx),
                Some(task),
            )
        }
        Err(e) => {
            tracing::error!("socket: {e}");
            (
                SocketStatus {
                    path: shown_path,
                    listening: false,
                    error: Some(e.to_string()),
                    unreachable_for_agents: None,
                },
                None,
                None,
            )
        }
    };
    Ok(Core {
        engine,
        data_dir: data.to_path_buf(),
        running: settings.clone(),
        socket,
        store,
        policy: policy_view,
        shutdown: Mutex::new(shutdown),
        served: Mutex::new(served),
    })
}
