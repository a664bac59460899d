//! The session's lock and sleep (issue 30, item 2): while the human's
//! session is locked, or the computer is going to sleep, custody signs
//! nothing and starts no OS authentication.
//!
//! - **Lock**: logind's `LockedHint` on custody's session
//!   (`org.freedesktop.login1.Session`, read on the system bus and followed
//!   by `PropertiesChanged`), or, where no login1 session is found, the
//!   desktop's screensaver on the session bus (`org.freedesktop.ScreenSaver`
//!   or `org.gnome.ScreenSaver`: `GetActive`, `ActiveChanged`).
//! - **Sleep**: logind's `PrepareForSleep(true)`. Custody holds a *delay*
//!   inhibitor (`Inhibit("sleep", …, "delay")`) while idle, so that logind
//!   waits for it: on the signal the [`SessionGate`] closes (a step-up in
//!   flight is cancelled, nothing is signed), then the inhibitor is
//!   released. After resume (`PrepareForSleep(false)`) a new one is taken.
//!
//! Which session: `$XDG_SESSION_ID` (the session custody was started in:
//! the desktop's own, for the app started at login or from the menu), else
//! `GetSessionByPID` of custody's process, else the user's display session
//! (`User.Display`: custody run as a systemd user service is in no session,
//! but the windows it opens show on the user's graphical one, and that is
//! the one whose lock matters).
//!
//! What it stops: someone at a locked (or sleeping) desk getting anything
//! approved, and an OS prompt left open behind a lock screen or across a
//! suspend. What it does not stop: anything while the session is unlocked;
//! a desktop that neither sets `LockedHint` nor offers a screensaver
//! interface (custody then sees the session as unlocked, and says so in its
//! log once).
//!
//! `$PARLEY_CUSTODY_LOGIN1_BUS` ([`LOGIN1_BUS_ENV`]) is a test and debug
//! knob: a D-Bus address where login1 is looked for instead of the system
//! bus (the tests run a private bus with a login1 of their own there).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Test and debug knob: the D-Bus address where `org.freedesktop.login1`
/// is looked for instead of the system bus.
pub const LOGIN1_BUS_ENV: &str = "PARLEY_CUSTODY_LOGIN1_BUS";

/// How long custody lets logind wait before sleep while it cancels a step-up
/// in flight (logind's own limit, `InhibitDelayMaxSec`, is 5 s by default).
pub const SLEEP_SETTLE: Duration = Duration::from_secs(2);

/// How long after losing the bus custody looks for login1 again; doubled
/// after each try that finds neither login1 nor a screensaver, up to
/// [`RETRY_AT_MOST`] (a system without them rarely grows one).
const RETRY_AFTER: Duration = Duration::from_secs(5);
const RETRY_AT_MOST: Duration = Duration::from_secs(300);

/// Why custody signs nothing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The session is locked.
    Locked,
    /// The computer is going to sleep.
    Asleep,
}

impl Hold {
    /// The sentence a human reads (review window, terminal prompt, log).
    pub fn sentence(self) -> &'static str {
        match self {
            Hold::Locked => {
                "Approve is off while the screen is locked: unlock it, then approve again. Nothing was signed."
            }
            Hold::Asleep => {
                "Approve is off while the computer goes to sleep: approve again after it wakes up. Nothing was signed."
            }
        }
    }

    /// A short tag for the audit log and the UI (`locked`, `asleep`).
    pub fn tag(self) -> &'static str {
        match self {
            Hold::Locked => "locked",
            Hold::Asleep => "asleep",
        }
    }
}

impl std::fmt::Display for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.sentence())
    }
}

/// The session as custody knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionState {
    /// logind's `LockedHint` of custody's session.
    pub locked_hint: bool,
    /// The desktop's screensaver is active (where logind has no session).
    pub screensaver: bool,
    /// Between `PrepareForSleep(true)` and `PrepareForSleep(false)`.
    pub asleep: bool,
    /// When the session last became unlocked and awake again; `None` if it
    /// never was locked or asleep since custody started. Windows arm again
    /// from this instant (the full arming delay).
    pub open_since: Option<Instant>,
}

impl SessionState {
    /// Why nothing may be signed now, if so (sleep first: it is the stronger).
    pub fn hold(&self) -> Option<Hold> {
        if self.asleep {
            Some(Hold::Asleep)
        } else if self.locked_hint || self.screensaver {
            Some(Hold::Locked)
        } else {
            None
        }
    }
}

/// The session's lock and sleep, shared by the engine (which refuses to
/// sign or to start OS authentication while it is closed) and the desktop
/// (windows disarmed, notifications without details). Cheap to clone.
/// A new gate is open: a system without logind never closes it.
#[derive(Debug, Clone)]
pub struct SessionGate {
    tx: Arc<watch::Sender<SessionState>>,
    checks: Arc<AtomicUsize>,
}

impl Default for SessionGate {
    fn default() -> Self {
        SessionGate::new()
    }
}

/// An OS authentication in flight, counted until dropped (sleep waits for
/// none to be left, within [`SLEEP_SETTLE`]).
pub struct CheckInFlight(Arc<AtomicUsize>);

impl Drop for CheckInFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl SessionGate {
    /// An open gate (unlocked, awake).
    pub fn new() -> SessionGate {
        SessionGate {
            tx: Arc::new(watch::Sender::new(SessionState::default())),
            checks: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn update(&self, f: impl FnOnce(&mut SessionState)) {
        self.tx.send_if_modified(|s| {
            let before = *s;
            f(s);
            if before.hold().is_some() && s.hold().is_none() {
                s.open_since = Some(Instant::now());
            }
            *s != before
        });
    }

    /// logind's `LockedHint` changed.
    pub fn set_locked(&self, locked: bool) {
        self.update(|s| s.locked_hint = locked);
    }

    /// The desktop's screensaver became (in)active.
    pub fn set_screensaver(&self, active: bool) {
        self.update(|s| s.screensaver = active);
    }

    /// `PrepareForSleep(start)`.
    pub fn set_asleep(&self, asleep: bool) {
        self.update(|s| s.asleep = asleep);
    }

    /// The state now.
    pub fn state(&self) -> SessionState {
        *self.tx.borrow()
    }

    /// Why nothing may be signed now, if so.
    pub fn hold(&self) -> Option<Hold> {
        self.state().hold()
    }

    /// Whether a window that has been armed for `armed_for` has also been
    /// so since the session was last unlocked and awake, for at least
    /// `delay`: on unlock every window arms from the start.
    pub fn armed_since_open(&self, delay: Duration) -> bool {
        let s = self.state();
        s.hold().is_none() && s.open_since.is_none_or(|t| t.elapsed() >= delay)
    }

    /// Every change, for those who show the state (tray, windows).
    pub fn subscribe(&self) -> watch::Receiver<SessionState> {
        self.tx.subscribe()
    }

    /// Resolves once the gate is closed (at once if it is).
    pub async fn closed(&self) -> Hold {
        let mut rx = self.tx.subscribe();
        loop {
            if let Some(h) = rx.borrow_and_update().hold() {
                return h;
            }
            if rx.changed().await.is_err() {
                // The gate lives as long as any clone: not reached.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Counts an OS authentication in flight until the guard is dropped.
    pub fn check_in_flight(&self) -> CheckInFlight {
        self.checks.fetch_add(1, Ordering::AcqRel);
        CheckInFlight(self.checks.clone())
    }

    /// Waits until no OS authentication is in flight, at most `max`.
    pub async fn settled(&self, max: Duration) -> bool {
        let end = Instant::now() + max;
        while self.checks.load(Ordering::Acquire) > 0 {
            if Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}

/// Follows login1 (and, without a login1 session, the desktop's
/// screensaver) into `gate` for as long as it runs; looks again after the
/// bus goes away. Never returns.
pub async fn follow(gate: SessionGate) {
    let mut told = false;
    let mut wait = RETRY_AFTER;
    loop {
        match linux::follow_login1(&gate).await {
            Ok(()) => {
                tracing::warn!("login1 went away; looking for it again");
                wait = RETRY_AFTER;
            }
            Err(e) => {
                if !told {
                    tracing::warn!(
                        "custody cannot follow the session's lock and sleep through login1 \
                         ({e}); trying the desktop's screensaver"
                    );
                }
                match linux::follow_screensaver(&gate).await {
                    Ok(()) => wait = RETRY_AFTER,
                    Err(e2) if !told => tracing::warn!(
                        "custody cannot see whether the screen is locked (login1: {e}; \
                         screensaver: {e2}): approvals are not held while it is locked"
                    ),
                    Err(_) => {}
                }
                told = true;
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(RETRY_AT_MOST);
    }
}

mod linux {
    use super::{SessionGate, LOGIN1_BUS_ENV, SLEEP_SETTLE};
    use futures_util::StreamExt;
    use zbus::wire::OwnedObjectPath;

    #[zbus::proxy(
        interface = "org.freedesktop.login1.Manager",
        default_service = "org.freedesktop.login1",
        default_path = "/org/freedesktop/login1"
    )]
    trait Manager {
        fn get_session(&self, session_id: &str) -> zbus::Result<OwnedObjectPath>;
        #[zbus(name = "GetSessionByPID")]
        fn get_session_by_pid(&self, pid: u32) -> zbus::Result<OwnedObjectPath>;
        fn get_user(&self, uid: u32) -> zbus::Result<OwnedObjectPath>;
        fn inhibit(
            &self,
            what: &str,
            who: &str,
            why: &str,
            mode: &str,
        ) -> zbus::Result<zbus::OwnedFd>;
        #[zbus(signal)]
        fn prepare_for_sleep(&self, start: bool) -> zbus::Result<()>;
    }

    #[zbus::proxy(
        interface = "org.freedesktop.login1.Session",
        default_service = "org.freedesktop.login1"
    )]
    trait Session {
        #[zbus(property)]
        fn locked_hint(&self) -> zbus::Result<bool>;
    }

    #[zbus::proxy(
        interface = "org.freedesktop.login1.User",
        default_service = "org.freedesktop.login1"
    )]
    trait User {
        #[zbus(property)]
        fn display(&self) -> zbus::Result<(String, OwnedObjectPath)>;
    }

    /// The bus login1 is on: [`LOGIN1_BUS_ENV`], else the system bus.
    async fn login1_bus() -> zbus::Result<zbus::Connection> {
        match std::env::var(LOGIN1_BUS_ENV).ok().filter(|a| !a.is_empty()) {
            Some(addr) => {
                zbus::connection::Builder::address(addr.as_str())
                    .build()
                    .await
            }
            None => zbus::Connection::system().await,
        }
    }

    /// Custody's session (see the module's doc for the order and why).
    async fn find_session(
        conn: &zbus::Connection,
        m: &ManagerProxy<'_>,
    ) -> Result<OwnedObjectPath, String> {
        if let Some(id) = std::env::var("XDG_SESSION_ID")
            .ok()
            .filter(|s| !s.is_empty())
        {
            match m.get_session(&id).await {
                Ok(p) => return Ok(p),
                Err(e) => tracing::debug!("login1 session {id:?}: {e}"),
            }
        }
        if let Ok(p) = m.get_session_by_pid(std::process::id()).await {
            return Ok(p);
        }
        let uid = nix::unistd::Uid::current().as_raw();
        let user = m
            .get_user(uid)
            .await
            .map_err(|e| format!("login1 knows no user {uid}: {e}"))?;
        let (id, path) = UserProxy::builder(conn)
            .path(user)
            .build()
            .await
            .map_err(|e| e.to_string())?
            .display()
            .await
            .map_err(|e| e.to_string())?;
        if id.is_empty() {
            return Err(
                "custody is in no login1 session and the user has no display session".into(),
            );
        }
        Ok(path)
    }

    const WHY: &str = "Cancels an OS authentication in flight so that nothing is signed \
                       across sleep";

    async fn inhibit(m: &ManagerProxy<'_>) -> Option<zbus::OwnedFd> {
        match m.inhibit("sleep", "Parley Custody", WHY, "delay").await {
            Ok(fd) => Some(fd),
            Err(e) => {
                tracing::warn!("custody could not take logind's sleep delay: {e}");
                None
            }
        }
    }

    /// Follows login1 until the bus goes away (`Ok`), or `Err` when login1
    /// is not there at all. Without a login1 session for custody, the lock
    /// is read from the desktop's screensaver meanwhile; sleep is followed
    /// either way.
    pub(super) async fn follow_login1(gate: &SessionGate) -> Result<(), String> {
        let conn = login1_bus().await.map_err(|e| format!("no bus: {e}"))?;
        let bus = zbus::fdo::DBusProxy::new(&conn)
            .await
            .map_err(|e| e.to_string())?;
        let name =
            zbus::names::BusName::try_from("org.freedesktop.login1").map_err(|e| e.to_string())?;
        if !bus.name_has_owner(name).await.map_err(|e| e.to_string())? {
            return Err("login1 is not running".into());
        }
        let m = ManagerProxy::new(&conn).await.map_err(|e| e.to_string())?;
        let mut sleep = m
            .receive_prepare_for_sleep()
            .await
            .map_err(|e| e.to_string())?;
        let session = match find_session(&conn, &m).await {
            Ok(path) => Some(
                SessionProxy::builder(&conn)
                    .path(path)
                    .build()
                    .await
                    .map_err(|e| e.to_string())?,
            ),
            Err(e) => {
                tracing::warn!(
                    "custody found no login1 session ({e}); it reads the lock from the \
                     desktop's screensaver, and follows sleep through login1"
                );
                None
            }
        };
        let mut locks = match &session {
            Some(s) => {
                let changes = s.receive_locked_hint_changed().await;
                let locked = s
                    .locked_hint()
                    .await
                    .map_err(|e| format!("the session's LockedHint: {e}"))?;
                gate.set_locked(locked);
                tracing::info!(session = %s.inner().path().as_str(), locked, "following the session's lock and sleep");
                Some(changes)
            }
            None => None,
        };
        let screensaver = async {
            if session.is_none() {
                if let Err(e) = follow_screensaver(gate).await {
                    tracing::warn!(
                        "custody cannot see whether the screen is locked (no login1 session; \
                         screensaver: {e}): approvals are not held while it is locked"
                    );
                }
            }
            std::future::pending::<()>().await
        };
        tokio::pin!(screensaver);
        let mut inhibitor = inhibit(&m).await;
        loop {
            tokio::select! {
                change = async {
                    match locks.as_mut() {
                        Some(l) => l.next().await,
                        None => std::future::pending().await,
                    }
                } => match change {
                    Some(c) => match c.get().await {
                        Ok(locked) => {
                            tracing::info!(locked, "the session's lock changed");
                            gate.set_locked(locked);
                        }
                        Err(e) => tracing::warn!("the session's LockedHint: {e}"),
                    },
                    None => return Ok(()),
                },
                _ = &mut screensaver => {}
                signal = sleep.next() => match signal.map(|s| s.args().map(|a| a.start)) {
                    Some(Ok(true)) => {
                        tracing::info!("going to sleep: custody signs nothing until it wakes");
                        gate.set_asleep(true);
                        if !gate.settled(SLEEP_SETTLE).await {
                            tracing::warn!("an OS authentication was still being cancelled when sleep went ahead");
                        }
                        drop(inhibitor.take());
                    }
                    Some(Ok(false)) => {
                        tracing::info!("woke up");
                        gate.set_asleep(false);
                        if inhibitor.is_none() {
                            inhibitor = inhibit(&m).await;
                        }
                    }
                    Some(Err(e)) => tracing::warn!("login1's PrepareForSleep: {e}"),
                    None => return Ok(()),
                },
            }
        }
    }

    /// The screensaver interfaces custody knows, in order.
    const SCREENSAVERS: [(&str, &str); 2] = [
        (
            "org.freedesktop.ScreenSaver",
            "/org/freedesktop/ScreenSaver",
        ),
        ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver"),
    ];

    /// Follows the desktop's screensaver on the session bus until the bus
    /// goes away (`Ok`), or `Err` when none answers.
    pub(super) async fn follow_screensaver(gate: &SessionGate) -> Result<(), String> {
        let conn = zbus::Connection::session()
            .await
            .map_err(|e| format!("no session bus: {e}"))?;
        let mut last = String::from("none found");
        for (name, path) in SCREENSAVERS {
            let proxy = match zbus::Proxy::new(&conn, name, path, name).await {
                Ok(p) => p,
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            let mut changes = match proxy.receive_signal("ActiveChanged").await {
                Ok(s) => s,
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            let active: bool = match proxy.call("GetActive", &()).await {
                Ok(a) => a,
                Err(e) => {
                    last = format!("{name}: {e}");
                    continue;
                }
            };
            gate.set_screensaver(active);
            tracing::info!(screensaver = name, active, "following the screensaver");
            while let Some(msg) = changes.next().await {
                if let Ok(active) = msg.body().deserialize::<bool>() {
                    gate.set_screensaver(active);
                }
            }
            return Ok(());
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_gate_is_open_and_armed() {
        let g = SessionGate::new();
        assert_eq!(g.hold(), None);
        assert!(g.armed_since_open(Duration::from_secs(3600)));
    }

    #[test]
    fn lock_and_sleep_close_it_and_unlock_arms_again_from_the_start() {
        let g = SessionGate::new();
        g.set_locked(true);
        assert_eq!(g.hold(), Some(Hold::Locked));
        assert!(!g.armed_since_open(Duration::ZERO));
        g.set_asleep(true);
        assert_eq!(g.hold(), Some(Hold::Asleep), "sleep says more");
        g.set_asleep(false);
        assert_eq!(g.hold(), Some(Hold::Locked), "still locked after waking");
        g.set_locked(false);
        assert_eq!(g.hold(), None);
        assert!(g.state().open_since.is_some());
        assert!(
            !g.armed_since_open(Duration::from_secs(60)),
            "the full delay again after unlock"
        );
        assert!(g.armed_since_open(Duration::ZERO));
        g.set_screensaver(true);
        assert_eq!(g.hold(), Some(Hold::Locked));
        assert!(Hold::Locked.sentence().contains("screen is locked"));
        assert!(Hold::Asleep.sentence().contains("Nothing was signed"));
    }

    #[tokio::test]
    async fn closed_resolves_on_lock_and_settled_waits_for_checks() {
        let g = SessionGate::new();
        let g2 = g.clone();
        let waiter = tokio::spawn(async move { g2.closed().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        g.set_asleep(true);
        assert_eq!(waiter.await.unwrap(), Hold::Asleep);
        let check = g.check_in_flight();
        assert!(!g.settled(Duration::from_millis(60)).await);
        drop(check);
        assert!(g.settled(Duration::from_millis(60)).await);
    }
}
