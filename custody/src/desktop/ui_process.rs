//! Showing a window: over the channel when a UI is connected, else by
//! starting the UI process (`parley-custody --open <target>`), at most one at
//! a time. The UI holds no key: starting it costs memory only while a window
//! is open, and it exits with its last window.
//!
//! The UI process gets its channel at birth: one end of a socket pair as its
//! standard input, [`UI_FD_ENV`]`=0` saying so; the other end goes to the
//! channel ([`StartedUi`]). No other process can connect in its place, so a
//! process that connects to the socket path first gets neither its windows
//! nor its calls (docs/ui-channel.md).

use super::channel::StartedUi;
use super::events::{OpenTarget, UiEvent};
use super::hub::UiHub;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The environment variable naming the UI binary (tests, unusual installs).
pub const UI_BIN_ENV: &str = "PARLEY_CUSTODY_UI";
/// The environment variable that tells the UI where the channel's door is
/// (a UI started from the menu knocks there; it is never the UI's channel).
pub const UI_SOCKET_ENV: &str = "PARLEY_CUSTODY_UI_SOCKET";
/// The environment variable that tells a UI this service started which of
/// its file descriptors is its channel: always `0`, its standard input.
pub const UI_FD_ENV: &str = "PARLEY_CUSTODY_UI_FD";
/// How long a UI that was started may take to say hello before another is tried.
const START_GRACE: Duration = Duration::from_secs(15);
/// Targets kept for a UI that is starting (more: the oldest are dropped,
/// they are all in the pending list anyway).
const MAX_QUEUED: usize = 32;

/// The UI binary the service starts: `$PARLEY_CUSTODY_UI` (tests put a
/// stand-in there), else [`app_binary`].
pub fn ui_binary() -> std::io::Result<PathBuf> {
    if let Some(p) = std::env::var_os(UI_BIN_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    app_binary()
}

/// The app itself, as a person starts it (the autostart entry names it):
/// `parley-custody` next to this service's executable, else
/// `/usr/bin/parley-custody`. Never a stand-in from the environment.
pub fn app_binary() -> std::io::Result<PathBuf> {
    let me = std::env::current_exe()?;
    if let Some(dir) = me.parent() {
        let sibling = dir.join("parley-custody");
        if sibling.is_file() {
            return Ok(sibling);
        }
    }
    let installed = PathBuf::from("/usr/bin/parley-custody");
    if installed.is_file() {
        return Ok(installed);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!(
            "the app (parley-custody) is not next to {} nor in /usr/bin",
            me.display()
        ),
    ))
}

#[derive(Default)]
struct Starting {
    /// The UI process started last, while it runs.
    pid: Option<u32>,
    /// When it was started.
    at: Option<Instant>,
    /// What it was started to show, until it says hello (a UI that dies
    /// before that, as when GTK cannot start, gives it back to the queue).
    opening: Option<OpenTarget>,
    /// What it should show besides its `--open`, once it says hello.
    queued: Vec<OpenTarget>,
    /// A second handle on the service's end of its channel, until it says
    /// hello: if the process exits with its end still open, it handed the
    /// channel on (as a launcher does) and may yet say hello. Dropped at
    /// hello, so that when the service closes a UI's connection the UI
    /// sees it closed.
    watch: Option<UnixStream>,
}

/// Opens windows (cheap to clone).
#[derive(Clone)]
pub struct Opener {
    hub: UiHub,
    /// Where the channel of each UI started goes ([`super::channel::serve`]).
    started: mpsc::UnboundedSender<StartedUi>,
    starting: Arc<Mutex<Starting>>,
}

impl Opener {
    /// An opener that tells the UIs on `hub`, and starts a UI when none is
    /// connected; the channel of each UI it starts comes out of the receiver
    /// (for [`super::channel::serve`]).
    pub fn new(hub: UiHub) -> (Opener, mpsc::UnboundedReceiver<StartedUi>) {
        let (started, rx) = mpsc::unbounded_channel();
        let opener = Opener {
            hub,
            started,
            starting: Arc::new(Mutex::new(Starting::default())),
        };
        (opener, rx)
    }

    /// Shows `target`; never blocks and never fails (a UI that cannot be
    /// started is logged; the tray and the notification still show the request).
    pub fn open(&self, target: OpenTarget) {
        if self.hub.connected() {
            self.hub.send(UiEvent::Open(target));
            return;
        }
        let Ok(mut s) = self.starting.lock() else {
            return;
        };
        // A UI is on its way: started, not yet said hello, within its grace.
        // (One that said hello and has disconnected is not: it is closing,
        // and a window asked for now needs a new UI.)
        let on_its_way = s.pid.is_some()
            && s.opening.is_some()
            && s.at.is_some_and(|t| t.elapsed() < START_GRACE);
        if on_its_way {
            if s.queued.len() == MAX_QUEUED {
                s.queued.remove(0);
            }
            s.queued.push(target);
            return;
        }
        match self.start(&target) {
            Ok((pid, watch)) => {
                s.pid = Some(pid);
                s.at = Some(Instant::now());
                s.opening = Some(target);
                s.watch = watch;
            }
            Err(e) => tracing::error!("cannot start the Parley Custody window: {e}"),
        }
    }

    /// For the channel, when the UI this service started said hello: what it
    /// should also show (never given to a connection on the path).
    pub fn take_queued(&self) -> Vec<OpenTarget> {
        self.starting
            .lock()
            .map(|mut s| {
                s.opening = None;
                s.watch = None;
                std::mem::take(&mut s.queued)
            })
            .unwrap_or_default()
    }

    /// Starts the UI with its channel as standard input; the service's end
    /// (close-on-exec, so no other child inherits it) goes to the channel.
    /// Returns its pid and the watch handle on its channel ([`Starting::watch`]).
    fn start(&self, target: &OpenTarget) -> std::io::Result<(u32, Option<UnixStream>)> {
        let bin = ui_binary()?;
        let (ours, theirs) = UnixStream::pair()?;
        let mut cmd = Command::new(&bin);
        // The service's allocator settings are its own; the UI and its web
        // engine keep glibc's defaults (or what the human set).
        match crate::allocator::tunables_for_children() {
            Some(v) => cmd.env(crate::allocator::TUNABLES_VAR, v),
            None => cmd.env_remove(crate::allocator::TUNABLES_VAR),
        };
        let mut child = cmd
            .arg("--open")
            .arg(target.as_arg())
            .env(UI_FD_ENV, "0")
            .env_remove(UI_SOCKET_ENV)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .spawn()
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", bin.display())))?;
        let pid = child.id();
        tracing::info!(pid, window = %target.as_arg(), "started the UI");
        let watch = ours.try_clone();
        if self.started.send(StartedUi { stream: ours, pid }).is_err() {
            tracing::warn!(
                pid,
                "the UI channel is no longer served: the UI will find it closed"
            );
        }
        let starting = self.starting.clone();
        // Reaped on its own thread; the slot frees when it exits.
        let _ = std::thread::Builder::new()
            .name("ui-process".into())
            .spawn(move || {
                let status = child.wait();
                tracing::info!(pid, ?status, "the UI exited");
                if let Ok(mut s) = starting.lock() {
                    if s.pid == Some(pid) {
                        // Its end still open: it handed the channel on.
                        let handed_on = s.watch.take().is_some_and(|w| !peer_closed(&w));
                        s.pid = None;
                        s.at = None;
                        // It never said hello: its window goes to the next UI.
                        if let Some(t) = s.opening.take_if(|_| !handed_on) {
                            tracing::error!(pid, window = %t.as_arg(), "the UI exited before it connected; the window opens with the next UI (the request waits in the tray and the home window)");
                            if s.queued.len() == MAX_QUEUED {
                                s.queued.remove(0);
                            }
                            s.queued.insert(0, t);
                        }
                    }
                }
            });
        Ok((pid, watch.ok()))
    }
}

/// Whether the other end of `ours` is closed (no process holds it any more).
fn peer_closed(ours: &UnixStream) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(ours.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR)),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ui_that_dies_before_hello_gives_its_window_back_to_the_queue() {
        // The UI binary is `false`: it exits at once, as a UI whose GTK
        // cannot start does. (No other test here reads this variable.)
        std::env::set_var(UI_BIN_ENV, "/bin/false");
        let (opener, _channels) = Opener::new(UiHub::new());
        opener.open(OpenTarget::Review("q1".into()));
        let deadline = Instant::now() + Duration::from_secs(10);
        let back = loop {
            let exited = opener.starting.lock().unwrap().pid.is_none();
            if exited {
                break opener.take_queued();
            }
            assert!(Instant::now() < deadline, "the UI did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(back, vec![OpenTarget::Review("q1".into())]);
        assert!(opener.take_queued().is_empty(), "given back once");
    }
}
