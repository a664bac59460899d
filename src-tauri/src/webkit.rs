//! What the windows' web engine is told: its sandbox, and what keeps a
//! review window small.
//!
//! **The sandbox.** Our pages show text that agents and the services they
//! pay wrote. A bug in the web engine that such text reaches runs in
//! `WebKitWebProcess`; unsandboxed, that process is the desktop user with
//! their session bus, so it could ask the Secret Service for the principal
//! key (issue 27). WebKitGTK's own sandbox (bubblewrap, with
//! xdg-dbus-proxy in front of the buses) puts it in its own user, mount,
//! network, pid and IPC namespaces with a read-only view of the system and
//! no session bus. It is opt-in in the GTK3 API and must be on before the
//! web context's first web process; Tauri and wry create the context
//! themselves with no hook before the first page loads, so it is turned on
//! through WebKit's environment ([`before_windows`]). WebKit falls back to
//! running unsandboxed, with only a warning on stderr, when bubblewrap
//! cannot make namespaces; so this module also checks, before any window,
//! that it can ([`probe`]), and on each page load that the web processes
//! really run in namespaces of their own ([`confirm`]). Without the
//! sandbox no window opens ([`refuse`]).
//!
//! **Small.** This process shows a handful of local pages of ours, never a
//! browsing session, so WebKit's browser-sized caches, its GPU compositing
//! and its JavaScript JIT only cost memory while the human reads (issue 16:
//! one review window, everything included, under 250 MB; measured in
//! scripts/bench-app.sh).

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

/// Why the web engine's sandbox is not on: the windows refuse to show any
/// page without it (see `main.rs`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// `bwrap` is not installed.
    #[error("bubblewrap (/usr/bin/bwrap) is not installed: install the bubblewrap package")]
    NoBwrap,
    /// `xdg-dbus-proxy` is not installed.
    #[error("xdg-dbus-proxy is not installed: install the xdg-dbus-proxy package")]
    NoDbusProxy,
    /// bubblewrap runs but cannot make the namespaces WebKit asks for.
    #[error(
        "bubblewrap cannot create namespaces here ({0}): unprivileged user namespaces are off \
         (sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces, or an AppArmor \
         restriction) or this runs in a container that forbids them"
    )]
    NoNamespaces(String),
    /// A page loaded, yet no web process of ours could be found to check.
    #[error("no web process of this app could be found to check its sandbox")]
    NotFound,
    /// A web process has a session bus address in its environment.
    #[error("a web process (pid {pid}) was given the session bus")]
    SessionBus {
        /// The web process.
        pid: u32,
    },
    /// A web process runs in this process's own namespaces after all.
    #[error(
        "a web process (pid {pid}) runs outside the sandbox: its {ns} namespace is this process's"
    )]
    Escaped {
        /// The web process.
        pid: u32,
        /// The namespace it shares with this process (`user`, `mnt` or `net`).
        ns: &'static str,
    },
}

const BWRAP: &str = "/usr/bin/bwrap";
const DBUS_PROXY: &str = "/usr/bin/xdg-dbus-proxy";

/// Before any window: whether WebKit's sandbox can start here. The same
/// test WebKit makes (a bubblewrap with every namespace unshared), so a
/// machine where WebKit would silently fall back is refused instead.
pub fn probe() -> Result<(), SandboxError> {
    if !Path::new(BWRAP).exists() {
        return Err(SandboxError::NoBwrap);
    }
    if !Path::new(DBUS_PROXY).exists() {
        return Err(SandboxError::NoDbusProxy);
    }
    let out = std::process::Command::new(BWRAP)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--unshare-all",
            "true",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| SandboxError::NoNamespaces(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(SandboxError::NoNamespaces(
            said.trim().chars().take(200).collect::<String>(),
        ))
    }
}

/// What the human is told when the sandbox cannot start: the windows do
/// not open (a page of ours shows agents' text, and an unsandboxed web
/// engine is one exploit away from the session's keychain), and here is
/// how to fix it or decide requests without a web engine.
pub fn refusal(e: &SandboxError) -> String {
    format!(
        "Parley Custody will not open its windows: the web engine's sandbox cannot start.\n\n\
         {e}.\n\n\
         Without the sandbox, a flaw in the web engine that an agent's text reaches could read \
         your keychain, where the principal key is. Requests keep waiting until you decide \
         them; to decide them without windows, stop custody and run \
         `parley-custodyd --approver terminal` in a terminal."
    )
}

/// Says [`refusal`] on stderr, in the log and, where there is a display,
/// in a plain GTK dialog (no web engine), and returns when it is closed.
pub fn refuse(e: &SandboxError) {
    let text = refusal(e);
    tracing::error!("the web engine's sandbox cannot start: {e}");
    eprintln!("parley-custody: {text}");
    #[cfg(target_os = "linux")]
    {
        use gtk::prelude::{DialogExt, GtkWindowExt};
        if gtk::init().is_err() {
            return;
        }
        let dialog = gtk::MessageDialog::new(
            None::<&gtk::Window>,
            gtk::DialogFlags::MODAL,
            gtk::MessageType::Error,
            gtk::ButtonsType::Close,
            &text,
        );
        dialog.set_title("Parley Custody: no sandbox, no windows");
        dialog.run();
        dialog.close();
        while gtk::events_pending() {
            gtk::main_iteration();
        }
    }
}

/// Before any window (the web process inherits this environment):
/// JavaScriptCore interprets our few kilobytes of script instead of
/// compiling them. A JIT is the usual first step of a browser-engine
/// exploit, and it holds executable memory (about 15 MB measured) that
/// these pages never need.
///
/// And the sandbox: WebKit reads `WEBKIT_FORCE_SANDBOX` when a web context
/// is created, which is the only moment early enough (Tauri and wry create
/// the context themselves, and `webkit_web_context_set_sandbox_enabled`
/// after its first web process aborts the program). An inherited
/// `WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS` would override it: it is
/// removed, so nothing in the environment turns the sandbox off.
pub fn before_windows() {
    std::env::set_var("JSC_useJIT", "0");
    std::env::set_var("WEBKIT_FORCE_SANDBOX", "1");
    std::env::remove_var("WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS");
}

/// Before GTK and WebKit start (after this process may have started the
/// service, which keeps the real environment): WebKit binds the user's
/// whole cache directory into the sandbox, writable, and a web process that
/// could write there could leave files other programs of the user read
/// (shader and font caches among them). This process's cache directory
/// becomes a folder of its own, `<cache>/parley-custody/web` (0700), so the
/// sandbox sees that folder only. Unchanged when it cannot be made.
pub fn own_cache_dir() {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".cache"))
        });
    let Some(base) = base.filter(|b| b.is_absolute()) else {
        return;
    };
    let ours = base.join("parley-custody").join("web");
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&ours);
    match made {
        Ok(()) => std::env::set_var("XDG_CACHE_HOME", &ours),
        Err(e) => tracing::warn!("cannot make {}: {e}", ours.display()),
    }
}

/// After the plugins connected to the session bus and before the first
/// window: this process forgets the session bus's address. WebKit gives a
/// sandboxed web process a (filtered) proxy of the session bus, and its
/// address in the environment, only when this process has one; without
/// it, the web process has neither, and nothing on the session bus (the
/// Secret Service above all) is one filter rule away. Nothing in this
/// process needs the bus afterwards: the tray and the notifications are
/// the service's. (Unsetting leaves glibc's environment array in place,
/// so a concurrent read elsewhere sees the variable or not, never freed
/// memory.)
pub fn without_session_bus() {
    std::env::remove_var("DBUS_SESSION_BUS_ADDRESS");
}

/// Whether this process's windows are on a Wayland display (GTK started;
/// GNOME and KDE sessions default to Wayland). Windows there cannot read
/// or choose their own place, and the compositor decides which one has
/// the focus (`windows.rs`).
/// Known from [`for_the_display`] on (GTK's display is asked on its own
/// thread only); false before.
pub fn on_wayland() -> bool {
    WAYLAND.get().copied().unwrap_or(false)
}

static WAYLAND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

fn display_is_wayland() -> bool {
    #[cfg(target_os = "linux")]
    {
        use gtk::gdk::prelude::DisplayExtManual;
        gtk::gdk::Display::default().is_some_and(|d| d.backend().is_wayland())
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Before GTK starts (next to [`own_cache_dir`], where this process sets its
/// environment, not in Tauri's setup where other threads already read it):
/// where GTK will choose Wayland (`GDK_BACKEND` naming it first, or unset
/// with `WAYLAND_DISPLAY` set), the web engine is told through
/// `WEBKIT_DISABLE_COMPOSITING_MODE` what [`keep_small`] tells each web view
/// (which does not reach this), that our pages are drawn on the CPU.
/// Otherwise WebKitGTK (2.50, Debian 12) composites into DMA-BUF buffers for
/// the compositor, and where the GPU or the compositor cannot take them (no
/// GPU, weston, a VM) the sandboxed web process dies before its first frame:
/// blank windows (seen under weston, src-tauri/tests/e2e/wayland.e2e.mjs).
/// A value the human set is kept. Under X11 nothing changes.
pub fn compositing_for_the_display() {
    let backend = std::env::var("GDK_BACKEND").unwrap_or_default();
    let wayland_first = match backend.split(',').map(str::trim).find(|b| !b.is_empty()) {
        Some(first) => first == "wayland" || (first == "*" && wayland_display()),
        None => wayland_display(),
    };
    if wayland_first && std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
        tracing::info!(
            "on Wayland: the web engine draws without compositing (as on X11, on the CPU)"
        );
    }
}

fn wayland_display() -> bool {
    std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty())
}

/// After GTK started and before the first web view, on GTK's thread:
/// notes whether the display is Wayland ([`on_wayland`]).
pub fn for_the_display() {
    let _ = WAYLAND.set(display_is_wayland());
}

/// When a page of ours starts loading: every web process this process
/// started runs in mount and network namespaces that are not this
/// process's, in a user namespace of its own unless this process is root,
/// and with no session bus address (and there is one such process: the
/// page is in it).
///
/// As root there is no user namespace to check: bubblewrap makes one only
/// when it needs one to mount, and root does not, so WebKit's web process
/// stays root with root's capabilities inside its mount namespace. The bus
/// and the sockets are still out of its reach; a flaw that escapes the
/// mount namespace is not held back the way a user's would be. Said in
/// the log here; the windows say what root means for OS authentication.
pub fn confirm() -> Result<(), SandboxError> {
    let me = std::process::id();
    let root = is_root();
    let found = web_processes(me);
    if found.is_empty() {
        return Err(SandboxError::NotFound);
    }
    for pid in found {
        if let Err(e) = check_one(me, pid, root) {
            // A web process that ended between the listing and the reading
            // (a closed window's) holds nothing: what could not be read of
            // it fails closed only while it still runs.
            if running(pid) {
                return Err(e);
            }
            tracing::debug!(pid, "a web process ended while its sandbox was read");
        }
    }
    if root {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::warn!(
                "running as root: the web engine's sandbox has its own mount and network \
                 namespaces but no user namespace of its own, so its web process keeps root's \
                 capabilities; run Parley Custody as a normal desktop user"
            )
        });
    }
    Ok(())
}

/// One web process: namespaces of its own, and no session bus.
fn check_one(me: u32, pid: u32, root: bool) -> Result<(), SandboxError> {
    for name in ["user", "mnt", "net"] {
        if name == "user" && root {
            continue;
        }
        let theirs = ns(pid, name);
        if theirs.is_none() || theirs == ns(me, name) {
            return Err(SandboxError::Escaped { pid, ns: name });
        }
    }
    if has_session_bus(pid) {
        return Err(SandboxError::SessionBus { pid });
    }
    Ok(())
}

/// Whether `pid` still runs: it exists and is not a zombie (whose
/// namespaces and environment can no longer be read).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|close| stat.get(close + 1..))
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Whether `pid`'s environment names a session bus (unreadable counts as yes).
fn has_session_bus(pid: u32) -> bool {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) => env
            .split(|b| *b == 0)
            .any(|e| e.starts_with(b"DBUS_SESSION_BUS_ADDRESS=")),
        Err(_) => true,
    }
}

fn ns(pid: u32, name: &str) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/{name}")).ok()
}

/// The web engine's content process (its `comm` is cut to 15 bytes, so the
/// program is told by its command line).
const WEB_PROCESS: &str = "WebKitWebProcess";

/// The `WebKitWebProcess`es descended from `root` (under bubblewrap, its
/// children's children).
fn web_processes(root: u32) -> Vec<u32> {
    let mut all = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let Some(ppid) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent(&stat))
            else {
                continue;
            };
            let program = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| program(&c))
                .unwrap_or_default();
            all.push((pid, ppid, program));
        }
    }
    descendants_named(&all, root, WEB_PROCESS)
}

/// The parent pid from a `/proc/PID/stat` line (`pid (comm) state ppid …`;
/// comm may hold spaces and parentheses, so it ends at the last `)`).
fn parent(stat: &str) -> Option<u32> {
    let close = stat.rfind(')')?;
    stat.get(close + 1..)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The file name of the program in a `/proc/PID/cmdline` (its first argument).
fn program(cmdline: &[u8]) -> String {
    let first = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    first.rsplit('/').next().unwrap_or_default().to_string()
}

/// The pids named `name` among the descendants of `root` in `(pid, ppid, program)`.
fn descendants_named(all: &[(u32, u32, String)], root: u32, name: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    let mut seen = std::collections::HashSet::new();
    while let Some(parent) = frontier.pop() {
        for (pid, ppid, program) in all {
            if *ppid == parent && seen.insert(*pid) {
                if program == name {
                    found.push(*pid);
                }
                frontier.push(*pid);
            }
        }
    }
    found
}

/// Tunes the web engine behind `window` (its web context is shared by every
/// window of this process, so the first window sets it for all).
pub fn keep_small<R: tauri::Runtime>(window: &tauri::WebviewWindow<R>) {
    #[cfg(target_os = "linux")]
    if let Err(e) = window.with_webview(|webview| {
        use webkit2gtk::{SettingsExt, WebContextExt, WebViewExt};
        let view = webview.inner();
        if let Some(settings) = WebViewExt::settings(&view) {
            // Pages of text and buttons: drawn on the CPU, without a GL
            // context and its buffers in the web process (about 90 MB of
            // its memory measured under Xvfb).
            settings
                .set_hardware_acceleration_policy(webkit2gtk::HardwareAccelerationPolicy::Never);
        }
        if let Some(context) = view.context() {
            // "Disable the cache completely, which substantially reduces
            // memory usage. Useful for applications that only access a
            // single local file, with no navigation to other pages."
            context.set_cache_model(webkit2gtk::CacheModel::DocumentViewer);
        }
    }) {
        tracing::debug!("cannot tune the web view: {e}");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = window;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_lines() {
        assert_eq!(parent("42 (WebKitWebProces) S 17 42 42 0 -1"), Some(17));
        assert_eq!(parent("43 (a) b) (c) R 9 1 1"), Some(9));
        assert_eq!(parent("garbage"), None);
        assert_eq!(
            program(b"/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitWebProcess\x007\x0012\x00"),
            "WebKitWebProcess"
        );
        assert_eq!(program(b"bwrap\0--args\x0027\0"), "bwrap");
        assert_eq!(program(b""), "");
    }

    #[test]
    fn a_process_that_ended_is_not_running_and_this_one_is() {
        assert!(super::running(std::process::id()));
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        // Exited but not yet reaped: a zombie, whose namespaces cannot be read.
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!super::running(pid), "a zombie is not running");
        child.wait().expect("reap");
        assert!(!super::running(pid), "a reaped process is gone");
    }

    #[test]
    fn web_processes_are_found_under_their_sandbox_launchers() {
        let all = vec![
            (10, 1, "parley-custody".to_string()),
            (11, 10, "bwrap".to_string()),
            (12, 11, "bwrap".to_string()),
            (13, 12, "WebKitWebProcess".to_string()),
            (14, 10, "WebKitNetworkProcess".to_string()),
            (20, 1, "WebKitWebProcess".to_string()),
        ];
        assert_eq!(descendants_named(&all, 10, "WebKitWebProcess"), vec![13]);
        assert!(descendants_named(&all, 99, "WebKitWebProcess").is_empty());
    }
}
