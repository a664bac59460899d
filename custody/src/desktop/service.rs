//! The desktop custody service as it runs: the engine, the socket for
//! agents, the saved settings, and what the approver and the UI calls share
//! (notifications, tray, labels, the hub to the UI, the opener).
//!
//! Start-up: data directory → settings → audit log → keychain → peer policy
//! → engine → socket. A failure before the engine exists is fatal for custody
//! but not for the service: the home view shows it, so the human learns why
//! instead of seeing nothing. A socket that cannot be bound (another custody
//! already listens) leaves the engine usable for the human's own work (grant
//! form, audit, keys) and is shown as such.

use super::approver::DesktopApprover;
use super::calls::{CallError, ErrorCode};
use super::hub::UiHub;
use super::in_flight::InFlight;
use super::notify::Notifier;
use super::settings::Settings;
use super::tray::Tray;
use super::ui_process::Opener;
use crate::approver::PendingView;
use crate::audit::Audit;
use crate::engine::{Engine, EngineConfig};
use crate::ipc::socket::{resolve_socket_path, SOCKET_ENV};
use crate::keystore::{Keystore, StoreKind};
use crate::paths;
use crate::startup::{self, Custody, CustodyConfig};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// What the desktop service is started with (the flags of
/// `parley-custodyd --approver desktop`; the app passes its own through).
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// `--socket`.
    pub socket: Option<PathBuf>,
    /// `--data-dir`.
    pub data_dir: Option<PathBuf>,
    /// `--agents-group` (overrides the settings).
    pub agents_group: Option<String>,
    /// `--allow-uid` (added to the settings' users).
    pub allow_uid: Vec<u32>,
    /// `--namespace`: the keychain namespace.
    pub namespace: Option<String>,
}

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
    served: Mutex<Option<JoinHandle<()>>>,
}

/// The desktop service's shared state, reached by every UI call and by the
/// approver.
pub struct Desktop {
    /// Custody, or why it could not start.
    pub core: Result<Core, String>,
    /// The saved settings (may differ from [`Core::running`] until a restart).
    pub settings: Mutex<Settings>,
    /// Problems found at start-up that the home view should show.
    pub warnings: Vec<String>,
    /// Desktop notifications.
    pub notifier: Arc<Notifier>,
    /// The tray icon, once it runs.
    pub tray: OnceLock<Tray>,
    /// Seed files imported in this run, which may be shredded on request.
    pub imported: Mutex<HashMap<PathBuf, String>>,
    /// The human's agent labels as custody keeps them (display-safe; the
    /// audit file is the truth, this is read once and after each change).
    pub labels: Mutex<BTreeMap<String, String>>,
    /// Every connected UI.
    pub hub: UiHub,
    /// Shows windows: over the channel, or by starting the UI.
    pub opener: Opener,
    /// Asked to stop (Quit in the tray, a restart): the daemon's main waits on it.
    pub stop: tokio::sync::Notify,
    /// Set when the stop is a restart (the daemon then starts itself again).
    pub restart: std::sync::atomic::AtomicBool,
    /// The decisions being carried out (a stop waits for them).
    pub decisions: Arc<InFlight>,
}

impl Desktop {
    /// Custody, or why it is not running.
    pub fn core(&self) -> Result<&Core, CallError> {
        self.core.as_ref().map_err(|e| {
            CallError::new(
                ErrorCode::NotRunning,
                format!("custody is not running: {e}"),
            )
        })
    }

    /// The human's label for an agent key, display-safe.
    pub fn agent_label(&self, key: &str) -> Option<String> {
        self.labels.lock().ok().and_then(|l| l.get(key).cloned())
    }

    /// The human's agent labels now (key → label).
    pub fn agent_labels(&self) -> BTreeMap<String, String> {
        self.labels.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Reads the labels again from custody (after a change).
    pub fn reload_labels(&self) -> Result<(), CallError> {
        let fresh = self.core()?.engine.agent_labels()?;
        if let Ok(mut l) = self.labels.lock() {
            *l = fresh.into_iter().collect();
        }
        Ok(())
    }

    /// Shows a review with the label the agent has now (it may have been
    /// named, renamed or unnamed since the request arrived).
    pub fn label(&self, mut p: PendingView) -> PendingView {
        let label = self.agent_label(&p.review.agent.key);
        p.review.agent.relabel(label.as_deref());
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

    /// Shows the current queue in the tray (if there is one).
    pub fn refresh_tray(&self) {
        if let Some(t) = self.tray.get() {
            t.show(&self.pending_labelled());
        }
    }

    /// Stops accepting agents' connections, waiting at most 2 s.
    pub async fn stop_socket(&self) {
        let Ok(core) = self.core.as_ref() else {
            return;
        };
        if let Some(tx) = core.shutdown.lock().ok().and_then(|mut s| s.take()) {
            let _ = tx.send(());
        }
        let task = core.served.lock().ok().and_then(|mut s| s.take());
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
    }

    /// Asks the daemon to stop (and, with `restart`, to start again).
    pub fn request_stop(&self, restart: bool) {
        if restart {
            self.restart
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.stop.notify_one();
    }
}

fn user_to_uid(name: &str) -> Result<u32, String> {
    if let Ok(uid) = name.parse::<u32>() {
        return Ok(uid);
    }
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        Ok(None) => Err(format!("no user named {name:?}")),
        Err(e) => Err(format!("cannot look up user {name:?}: {e}")),
    }
}

/// Starts custody for the desktop. Never fails: problems are in the state.
/// `approver` is the engine's approver; it reaches the returned state once
/// [`DesktopApprover::attach`] is called with it.
pub async fn start(
    opts: &StartOptions,
    hub: UiHub,
    opener: Opener,
    approver: Arc<DesktopApprover>,
) -> Desktop {
    let mut warnings = Vec::new();
    let data = paths::data_dir_or(opts.data_dir.as_deref());
    let base = |core: Result<Core, String>, settings: Settings, warnings: Vec<String>| Desktop {
        core,
        settings: Mutex::new(settings),
        warnings,
        notifier: approver.notifier(),
        tray: OnceLock::new(),
        imported: Mutex::new(HashMap::new()),
        labels: Mutex::new(BTreeMap::new()),
        hub: hub.clone(),
        opener: opener.clone(),
        stop: tokio::sync::Notify::new(),
        restart: std::sync::atomic::AtomicBool::new(false),
        decisions: Arc::new(InFlight::default()),
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
    match start_core(opts, &data, &settings, approver.clone(), &mut warnings).await {
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

async fn start_core(
    opts: &StartOptions,
    data: &Path,
    settings: &Settings,
    approver: Arc<DesktopApprover>,
    warnings: &mut Vec<String>,
) -> Result<Core, String> {
    let audit = Audit::open(&paths::audit_path(data)).map_err(|e| e.to_string())?;
    let keystore = match &opts.namespace {
        Some(ns) => Keystore::keychain_namespaced(Some(ns)),
        None => Keystore::keychain(),
    }
    .map_err(|e| e.to_string())?;
    let store = keystore.kind();
    let group = opts
        .agents_group
        .clone()
        .or_else(|| settings.agents_group.clone());
    let mut extra_uids = opts.allow_uid.clone();
    for u in &settings.extra_users {
        match user_to_uid(u) {
            Ok(uid) => extra_uids.push(uid),
            Err(e) => warnings.push(format!("Allowed users: {e}; ignored")),
        }
    }
    let policy = startup::peer_policy(group.as_deref(), extra_uids).map_err(|e| e.to_string())?;
    let mut config = EngineConfig::default();
    config.review.max_consent_horizon = settings.max_consent_horizon_secs;
    config.review.max_grant_lifetime = settings.max_grant_lifetime_secs;
    config.queue.total = settings.queue_size;
    config.queue.per_minute = settings.rate_per_minute;
    config.step_up = settings.step_up.clone();
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
    let flag = opts
        .socket
        .clone()
        .or(if env_set { None } else { from_settings });
    let path = resolve_socket_path(flag.as_deref());
    let shown_path = path.path.display().to_string();
    let custody = Custody::start(
        audit,
        keystore,
        approver,
        CustodyConfig::new(config, path, policy),
    )
    .await;
    let engine = custody.engine.clone();
    let unreachable = custody
        .socket
        .as_ref()
        .ok()
        .and_then(|l| l.unreachable_for_agents())
        .map(|d| d.display().to_string());
    let (socket, shutdown, served) = match custody.spawn() {
        Ok(serving) => (
            SocketStatus {
                path: shown_path,
                listening: true,
                error: None,
                unreachable_for_agents: unreachable,
            },
            Some(serving.stop),
            Some(serving.task),
        ),
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
