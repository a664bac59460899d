//! Settings, restarting the service, start at login, and letting another
//! OS user's agents connect.

use super::{blocking, change_auth, R};
use super::{refused, CallError};
use crate::audit::{EventKind, NewEvent};
use crate::desktop::autostart::Autostart;
use crate::desktop::events::UiEvent;
use crate::desktop::loosening::{self, loosenings, Loosening};
use crate::desktop::service::{Core, Desktop, PolicyView, SocketStatus};
use crate::desktop::settings::Settings;
use crate::engine::unix_now;
use serde::Serialize;
use std::time::Duration;

/// The settings view.
#[derive(Debug, Serialize)]
pub struct SettingsView {
    /// As saved.
    pub settings: Settings,
    /// Start at login (not in settings.json: the autostart entry is the truth).
    pub autostart: AutostartView,
    /// In force (the socket was started with these).
    pub running: Option<Settings>,
    /// Saved changes that wait for a restart.
    pub restart_needed: Vec<&'static str>,
    /// The data directory (settings.json is there).
    pub data_dir: Option<String>,
    /// The socket.
    pub socket: Option<SocketStatus>,
    /// The peer policy in force.
    pub policy: Option<PolicyView>,
    /// Custody runs as root: OS authentication protects nothing, and why
    /// (shown next to the step-up rule).
    pub step_up_root: Option<&'static str>,
    /// The OS prompt cannot name the decision for custody's user (not an
    /// owner of its polkit actions): one sentence, next to a button that
    /// runs the administrator's step (`prompt_owner_apply`).
    pub prompt_unnamed: Option<String>,
}

fn settings_view(state: &Desktop) -> SettingsView {
    let settings = state.settings.lock().map(|s| s.clone()).unwrap_or_default();
    let core = state.core.as_ref().ok();
    SettingsView {
        restart_needed: core
            .map(|c| settings.restart_needed(&c.running))
            .unwrap_or_default(),
        running: core.map(|c| c.running.clone()),
        data_dir: core.map(|c| c.data_dir.display().to_string()),
        socket: core.map(|c| c.socket.clone()),
        policy: core.map(|c| c.policy.clone()),
        autostart: autostart_view(state),
        step_up_root: crate::stepup::as_root_warning(
            crate::ipc::peer::PeerPolicy::own_user_only().own_uid,
        ),
        prompt_unnamed: crate::prompt_owners::unnamed_here().map(|u| u.words),
        settings,
    }
}

/// The settings.
pub async fn settings_get(state: &Desktop) -> R<SettingsView> {
    Ok(settings_view(state))
}

/// The saved settings (what custody runs with from its next start).
fn saved(state: &Desktop) -> R<Settings> {
    state
        .settings
        .lock()
        .map(|s| s.clone())
        .map_err(|_| "settings unavailable".into())
}

/// Saves the settings; the view says which changes wait for a restart.
///
/// A change that loosens custody compared with the saved settings
/// ([`loosenings`]) is saved only once the OS authenticated the human for
/// it, and is then recorded (`settings_loosened`). The saved settings, not
/// the ones in force, are the baseline: they are what custody runs with
/// next, and every change to them went through here (or through the file,
/// edited while custody was stopped).
pub async fn settings_save(state: &Desktop, settings: Settings) -> R<SettingsView> {
    let core = state.core()?;
    let current = saved(state)?;
    // Agent labels are changed one at a time (agent_label_set), never by a
    // settings form that may have been open since before a label was added.
    let mut settings = settings;
    settings.agent_labels = current.agent_labels.clone();
    // Changed only by autostart_set, like the labels.
    settings.autostart_offered = current.autostart_offered;
    settings.validate().map_err(refused)?;
    let confirmed = authenticate_loosenings(state, core, &current, &settings).await?;
    persist(state, core, settings).await?;
    state.hub.send(UiEvent::StatusChanged);
    if let Some(row) = confirmed {
        record_loosened(core, row).await?;
    }
    Ok(settings_view(state))
}

/// Which changes from the saved settings to `settings` loosen custody, so
/// that saving them asks for OS authentication first: what the Settings
/// page shows before Save. Nothing is saved; `settings_save` decides again.
pub async fn settings_loosenings(state: &Desktop, settings: Settings) -> R<Vec<Loosening>> {
    let current = saved(state)?;
    Ok(loosenings(&current, &settings))
}

/// The audit row of settings saved after OS authentication.
struct LoosenedRow {
    changes: Vec<Loosening>,
    confirmed_by: &'static str,
}

/// Asks the OS for the changes from `current` to `next` that loosen
/// custody, if any; `None` when there are none. Refuses when the saved
/// settings changed meanwhile in a way the human did not authenticate.
async fn authenticate_loosenings(
    state: &Desktop,
    core: &Core,
    current: &Settings,
    next: &Settings,
) -> R<Option<LoosenedRow>> {
    let changes = loosenings(current, next);
    if changes.is_empty() {
        return Ok(None);
    }
    let without = format!(
        "quit Parley Custody and edit {} as yourself",
        core.data_dir.join(crate::desktop::settings::FILE).display()
    );
    let confirmed_by =
        change_auth::authenticate(&core.engine, &loosening::prompt(&changes), &without).await?;
    // The prompt may have waited a while: what is saved now must not make
    // this save loosen anything the human did not just authenticate.
    let now = loosenings(&saved(state)?, next);
    if now.iter().any(|c| !changes.contains(c)) {
        return Err("the settings changed while you authenticated: nothing was saved; open Settings and save again".into());
    }
    Ok(Some(LoosenedRow {
        changes,
        confirmed_by,
    }))
}

/// Writes the `settings_loosened` row of settings just saved. A row that
/// cannot be written leaves the settings saved, and says so.
async fn record_loosened(core: &Core, row: LoosenedRow) -> R<()> {
    let words: Vec<String> = row.changes.into_iter().map(|c| c.words).collect();
    let ev = NewEvent {
        reason: Some(words.join("; ")),
        confirmed_by: Some(row.confirmed_by.to_string()),
        ..NewEvent::new(EventKind::SettingsLoosened, unix_now())
    };
    let e = core.engine.clone();
    blocking("recording the settings change", move || {
        e.with_audit(|a| a.append(&ev)).map(drop).map_err(|err| {
            refuse!("the settings were saved, but the audit log could not record the change ({err}); the change stands: note it yourself")
        })
    })
    .await
}

/// Restarts the custody service so that saved settings take effect
/// (pending requests are dropped; their agents see the connection close and
/// may ask again). The UI loses its channel and closes; the new service
/// opens the settings view again. Refused while a decision is carried out
/// (`in_flight`): its answer must reach the agent first.
pub async fn app_restart(state: &Desktop) -> R<()> {
    state.decisions.may_restart().map_err(refused)?;
    state.request_stop(true);
    Ok(())
}

/// Quits Parley Custody (the service and its windows), as the tray's Quit
/// does: the main window's way to it where no tray host shows the icon.
/// Pending requests are dropped (their agents see the connection close).
/// Refused while a decision is carried out (`in_flight`), like a restart.
pub async fn app_quit(state: &Desktop) -> R<()> {
    state.decisions.may_restart().map_err(refused)?;
    state.request_stop(false);
    Ok(())
}

/// Start at login: whether it is on, whether the home window has offered it.
#[derive(Debug, Clone, Serialize)]
pub struct AutostartView {
    /// The autostart entry exists and starts this binary hidden.
    pub enabled: bool,
    /// The human has answered the first-run offer (either way).
    pub offered: bool,
    /// Where the entry is (or why it cannot be made).
    pub entry: String,
    /// Why start-at-login cannot be offered here, if it cannot.
    pub error: Option<String>,
}

pub(super) fn autostart_view(state: &Desktop) -> AutostartView {
    let offered = state
        .settings
        .lock()
        .map(|s| s.autostart_offered)
        .unwrap_or(true);
    match Autostart::for_this_app() {
        Ok(a) => AutostartView {
            enabled: a.is_enabled(),
            offered,
            entry: a.path().display().to_string(),
            error: None,
        },
        Err(e) => AutostartView {
            enabled: false,
            offered,
            entry: String::new(),
            error: Some(e.to_string()),
        },
    }
}

/// Turns start-at-login on or off (the human's answer to the first-run
/// offer too: either answer means it is not offered again).
pub async fn autostart_set(state: &Desktop, enabled: bool) -> R<AutostartView> {
    let core = state.core()?;
    blocking("changing start at login", move || {
        let a = Autostart::for_this_app().map_err(refused)?;
        if enabled { a.enable() } else { a.disable() }.map_err(refused)
    })
    .await?;
    let mut next = state
        .settings
        .lock()
        .map(|s| s.clone())
        .map_err(|_| "settings unavailable".to_string())?;
    if !next.autostart_offered {
        next.autostart_offered = true;
        persist(state, core, next).await?;
    }
    state.hub.send(UiEvent::StatusChanged);
    Ok(autostart_view(state))
}

/// What letting another OS user's agents connect would change, for the human
/// to read before the administrator's password is asked.
#[derive(Debug, Clone, Serialize)]
pub struct AgentUserPlanView {
    /// The agents' OS user, as checked.
    pub user: String,
    /// The agents group.
    pub group: String,
    /// Every change, one per line (or that nothing needs to change).
    pub steps: Vec<String>,
    /// The socket custody then listens on.
    pub socket: String,
}

fn agent_user_plan_for(user: &str) -> R<crate::agent_access::Plan> {
    use crate::agent_access::{self, Request};
    let custody_user = nix::unistd::User::from_uid(nix::unistd::Uid::current())
        .ok()
        .flatten()
        .map(|u| u.name)
        .ok_or_else(|| "cannot tell which OS user runs custody".to_string())?;
    agent_access::plan(
        Request {
            agent_user: user.trim().to_string(),
            custody_user,
            group: agent_access::DEFAULT_GROUP.to_string(),
            socket_dir: None,
        },
        None,
    )
    .map_err(refused)
}

fn plan_view(plan: &crate::agent_access::Plan) -> AgentUserPlanView {
    AgentUserPlanView {
        user: plan.request.agent_user.clone(),
        group: plan.request.group.clone(),
        steps: plan.describe().lines().map(str::to_string).collect(),
        socket: plan.socket_path().display().to_string(),
    }
}

/// Plans "let USER's agents connect" (no change yet).
pub async fn agent_user_plan(user: String) -> R<AgentUserPlanView> {
    blocking("planning", move || {
        agent_user_plan_for(&user).map(|p| plan_view(&p))
    })
    .await
}

/// Carries it out: plans again (nothing the window sent is trusted beyond
/// the user name), runs the privileged helper through polkit, then saves the
/// agents group and the socket path; the view says a restart switches to it.
pub async fn agent_user_apply(
    state: &Desktop,
    user: String,
    shown: Vec<String>,
) -> R<SettingsView> {
    let core = state.core()?;
    let plan = blocking("planning", move || agent_user_plan_for(&user)).await?;
    if plan_view(&plan).steps != shown {
        return Err("what would change is no longer what you were shown: read it again".into());
    }
    let current = saved(state)?;
    let mut next = current.clone();
    next.agents_group = Some(plan.request.group.clone());
    next.socket_path = Some(plan.socket_path().display().to_string());
    // A new agents group lets its members ask: the OS authenticates the
    // human for that before anything changes (the helper's own password
    // prompt is the administrator's, for the system's groups).
    let confirmed = authenticate_loosenings(state, core, &current, &next).await?;
    if !plan.steps.is_empty() {
        let p = plan.clone();
        blocking("waiting for the administrator's password", move || {
            run_helper(&p)
        })
        .await?;
    }
    persist(state, core, next).await?;
    state.hub.send(UiEvent::StatusChanged);
    if let Some(row) = confirmed {
        record_loosened(core, row).await?;
    }
    Ok(settings_view(state))
}

/// Lets the OS prompt name the decision: runs `parley-custody-setup
/// prompt-owner` through pkexec (an administrator's password), which names
/// custody's own user (pkexec's caller, nothing the window sent) as an owner
/// of custody's polkit actions. The view says whether it now can.
pub async fn prompt_owner_apply(state: &Desktop) -> R<SettingsView> {
    if let Some(u) = crate::prompt_owners::unnamed_here() {
        blocking("waiting for the administrator's password", move || {
            let helper = crate::agent_access::helper_path();
            let mut cmd = std::process::Command::new("pkexec");
            cmd.arg(&helper).arg("prompt-owner");
            // Without the package (a source tree), pkexec knows no action
            // for this helper: the sentence says what root runs instead.
            run_privileged(cmd, &helper).map_err(|e| {
                CallError::new(
                    e.code,
                    format!(
                        "{} An administrator can also run, as root: {}",
                        e.message,
                        crate::prompt_owners::root_command(&u.user)
                    ),
                )
            })
        })
        .await?;
    }
    state.hub.send(UiEvent::StatusChanged);
    Ok(settings_view(state))
}

/// How long the helper may wait at polkit's password dialog (within the
/// command layer's own limit); then it is stopped and nothing more changes.
const HELPER_WAIT: Duration = Duration::from_secs(120);

fn run_helper(plan: &crate::agent_access::Plan) -> R<()> {
    let helper = crate::agent_access::helper_path();
    let root = nix::unistd::Uid::effective().is_root();
    run_privileged(
        crate::agent_access::helper_command(plan, &helper, root),
        &helper,
    )
}

/// Runs the helper's command (through pkexec), bounded by [`HELPER_WAIT`],
/// and turns pkexec's and the helper's failures into sentences.
fn run_privileged(mut cmd: std::process::Command, helper: &std::path::Path) -> R<()> {
    use std::io::Read;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run {} through pkexec: {e}", helper.display()))?;
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < HELPER_WAIT => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(refuse!(
                    "no answer at the password dialog within {} s: nothing more was changed",
                    HELPER_WAIT.as_secs()
                ));
            }
            Err(e) => return Err(refuse!("waiting for the set-up helper failed: {e}")),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.by_ref().take(4096).read_to_string(&mut said);
    }
    Err(CallError::from(match status.code() {
        Some(126) => "the administrator's password was not given: nothing changed".to_string(),
        Some(127) => "polkit refused (no authentication agent, or not authorized): nothing changed"
            .to_string(),
        _ => format!(
            "the set-up helper failed: {}",
            crate::display::bounded(said.trim(), 400)
        ),
    }))
}

/// Saves the settings file (off the async threads) and then makes it the
/// settings in force for the commands: the one way every command changes them.
async fn persist(state: &Desktop, core: &Core, next: Settings) -> R<()> {
    let dir = core.data_dir.clone();
    let s = next.clone();
    blocking("saving the settings", move || s.save(&dir).map_err(refused)).await?;
    if let Ok(mut cur) = state.settings.lock() {
        *cur = next;
    }
    Ok(())
}
